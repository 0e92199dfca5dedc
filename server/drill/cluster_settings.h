#pragma once

// The broker settings a drill's expectations depend on, read from the cluster at preflight
// instead of assumed to be Kafka's defaults:
//   broker.session.timeout.ms    how long the controller waits for a silent broker's heartbeat
//                                before it fences it (the active controller's own value: only
//                                the controller applies it, and a broker's file may differ);
//   broker.heartbeat.interval.ms how often a broker heartbeats (the target broker's, or the
//                                first broker's for a controller target);
//   replica.lag.time.max.ms      how long a leader waits for a follower that stopped fetching
//                                before it drops it from the ISR (every broker's: each leader
//                                applies its own; the largest bounds the stall).
// A setting that could not be read is Kafka's default, and its source says why.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/analysis/gray_mechanism.h"
#include "server/analysis/verdict.h"
#include "server/drill/seams.h"

namespace kfaild::drill {

struct ClusterSetting {
  std::string name;
  std::int64_t value_ms = 0;
  std::string source;  // "controller 100: the node's properties file", "Kafka's default: ..."
  bool read = false;   // false: Kafka's default, assumed
};

struct ClusterSettings {
  ClusterSetting session_timeout{"broker.session.timeout.ms", 9'000, "Kafka's default", false};
  ClusterSetting heartbeat_interval{"broker.heartbeat.interval.ms", 2'000, "Kafka's default",
                                    false};
  ClusterSetting replica_lag_time_max{"replica.lag.time.max.ms", 30'000, "Kafka's default", false};
};

// Reads the three settings. `brokers`: the brokers to ask for replica.lag.time.max.ms (every
// registered broker), `heartbeat_from`: the broker whose heartbeat interval counts. Never fails:
// what cannot be read keeps its default with the reason in its source.
ClusterSettings readClusterSettings(ClusterAdmin& admin, const std::vector<std::int32_t>& brokers,
                                    std::int32_t heartbeat_from);

// The mechanisms' settings (client settings are applied on top by the caller).
analysis::MechanismSettings mechanismSettings(const ClusterSettings& settings);
// The pause objectives' session timeout and heartbeat interval, into `mechanism`.
void applyTo(const ClusterSettings& settings, analysis::FaultMechanism& mechanism);

nlohmann::json toJson(const ClusterSettings& settings);
// The stored form back (a drill's result.runs[].cluster_settings); nullopt when it is not one.
std::optional<ClusterSettings> clusterSettingsFromJson(const nlohmann::json& json);

}  // namespace kfaild::drill
