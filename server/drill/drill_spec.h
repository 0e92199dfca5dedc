#pragma once

// A drill request: which fault, on which node, with which options. Parsed from JSON (the REST
// API and schedules use the same form) with every field validated; an error names the field.
//
//   {"fault":"kill", "target":{"broker":1}, "options":{"repeats":3}}
//   {"fault":"stop", "target":{"leader_of":{"topic":"orders","partition":0}}}
//   {"fault":"pause","target":{"random":true}, "options":{"pause_s":12}}
//   {"fault":"kill", "target":{"controller":true}}
//   {"fault":"kill", "target":{"broker":1}, "expect":{"max_ack_stall_s":1}}
//
// `expect`: objectives of this request, on top of the cluster's (analysis/objectives.h).

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/analysis/objectives.h"
#include "server/common/result.h"

namespace kfaild::drill {

enum class FaultType { kKill, kStop, kPause, kRestart };
const char* toString(FaultType fault);
std::optional<FaultType> faultFromString(const std::string& text);

enum class TargetKind { kBroker, kLeaderOf, kController, kRandom };

struct Target {
  TargetKind kind = TargetKind::kBroker;
  std::int32_t broker = -1;  // kBroker
  std::string topic;         // kLeaderOf
  std::int32_t partition = 0;
};

struct DrillOptions {
  std::int32_t repeats = 1;                // runs, with recovery in between
  std::int32_t baseline_s = 5;             // normal probing before the fault
  std::int32_t observe_min_s = 5;          // observe at least this long after the fault
  std::int32_t observe_timeout_s = 120;    // give up waiting for the probes to resume
  std::int32_t grace_s = 30;               // stop: SIGTERM → SIGKILL after this (docker stop -t)
  std::int32_t pause_s = 10;               // pause: freeze for this long
  std::int32_t recover_timeout_s = 180;    // start → back in every ISR
  // After recovery, the analysis waits up to this long for every message of the run's window to
  // have a fate (acked and received, failed, or given up on); what is still open is unresolved.
  std::int32_t settle_timeout_s = 90;
  bool preferred_election = true;          // afterwards, give leadership back to preferred leaders
  // Before the baseline, move leadership to the preferred replicas when it is elsewhere, so that
  // every run starts from the roles the topic was designed with.
  bool preflight_election = true;
  bool allow_unavailable = false;          // allow a fault that takes a partition offline / below min ISR
  // Allow a fault on a KRaft voter that leaves the quorum without a majority of caught-up voters
  // (with a single controller, any fault on it): the cluster has no controller until it is back.
  bool allow_quorum_loss = false;
};

struct DrillSpec {
  FaultType fault = FaultType::kKill;
  Target target;
  DrillOptions options;
  std::optional<analysis::Objectives> expect;
};

// A valid Kafka topic name: 1 to 249 characters of [a-zA-Z0-9._-], neither "." nor "..". Pure.
bool isValidTopicName(const std::string& name);

// Parses and validates; unknown fields are errors. Error::message names the field, e.g.
// "options.pause_s: must be between 1 and 3600, got 0".
Result<DrillSpec> parseDrillSpec(const nlohmann::json& body);

nlohmann::json toJson(const Target& target);
nlohmann::json toJson(const DrillOptions& options);
nlohmann::json toJson(const DrillSpec& spec);

}  // namespace kfaild::drill
