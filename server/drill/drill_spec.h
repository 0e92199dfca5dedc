#pragma once

// A drill request: which fault, on which node, with which options. Parsed from JSON (the REST
// API and schedules use the same form) with every field validated; an error names the field.
//
//   {"fault":"kill", "target":{"broker":1}, "options":{"repeats":3}}
//   {"fault":"stop", "target":{"leader_of":{"topic":"orders","partition":0}}}
//   {"fault":"pause","target":{"random":true}, "options":{"pause_s":12}}
//   {"fault":"kill", "target":{"controller":true}}
//   {"fault":"kill", "target":{"coordinator_of":{"group":"billing"}}}
//   {"fault":"kill", "target":{"coordinator_of":"group"}}          (kfaild's own group)
//   {"fault":"kill", "target":{"coordinator_of":"transaction"}}    (kfaild's own transactional id)
//   {"fault":"kill", "target":{"broker":1}, "expect":{"max_ack_stall_s":1}}
//   {"fault":"isolate", "target":{"broker":2}, "options":{"from":"brokers","duration_s":30}}
//   {"fault":"throttle", "target":{"broker":2}, "options":{"rate":"1mbit","duration_s":30}}
//   {"fault":"disk_full", "target":{"broker":2}, "options":{"duration_s":30}}
//   {"fault":"rolling_restart", "options":{"between_s":10}}          (every broker, one at a time)
//   {"fault":"rolling_restart", "target":{"nodes":[3,1,2]}, "options":{"kill":true}}
//   {"fault":"kill", "target":{"controller":true},                 (a compound drill)
//    "then":{"fault":"kill", "target":{"leader_of":{"topic":"orders","partition":0}}, "after_s":2}}
//
// Gray faults (isolate, throttle, disk_full, disk_slow; server/fault/gray_fault.h) stay in force
// `duration_s`, then kfaild heals them; `from` and `mode` are isolate's, `rate` throttle's.
//
// A rolling restart (rolling_restart) restarts a set of nodes one at a time, each step a restart
// drill's run (RollingStep: stop, or kill with `kill`, then start; the guards before it; back in
// every ISR and preferred leaders after it), `between_s` apart. Its target is absent or
// {"every_broker":true} (every broker of the inventory, then with `include_controllers` the
// controllers, the active one last: rolling_plan.h), or {"nodes":[...]} in the order given.
//
// An observed drill (observed) injects nothing: it takes a baseline, then waits up to `window_s`
// for a fault someone else injects (marked through the API, or found from the cluster: a
// departure, analysis/departures.h) and analyses each departure as a drill of its own
// (observed_run.h). It has no target; its options are baseline_s, observe_min_s,
// settle_timeout_s, window_s and quiet_s (the cluster whole and the probe steady that long, with
// no new departure, ends it):
//   {"fault":"observed", "options":{"window_s":600}}
//
// `expect`: objectives of this request, on top of the cluster's (analysis/objectives.h).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/analysis/objectives.h"
#include "server/common/result.h"
#include "server/fault/gray_fault.h"

namespace kfaild::drill {

enum class FaultType {
  kKill,
  kStop,
  kPause,
  kRestart,
  kIsolate,
  kThrottle,
  kDiskFull,
  kDiskSlow,
  kRollingRestart,
  kObserved
};
const char* toString(FaultType fault);
std::optional<FaultType> faultFromString(const std::string& text);
// Every fault kind's spelling, in the enum's order: the one list the request parser, the API's
// `fault` filters and their error messages read.
const std::vector<std::string_view>& faultNames();
// isolate, throttle, disk_full, disk_slow (server/fault/gray_fault.h).
bool isGrayFault(FaultType fault);

enum class TargetKind { kBroker, kLeaderOf, kController, kRandom, kCoordinatorOf, kNodes };

struct Target {
  TargetKind kind = TargetKind::kBroker;
  std::int32_t broker = -1;  // kBroker
  std::string topic;         // kLeaderOf
  std::int32_t partition = 0;
  // kCoordinatorOf: the coordinator of a consumer group, or of a transactional id; an empty key
  // is kfaild's own (probe.coordinators.group / transactional_id).
  bool transactional = false;
  std::string coordinator_key;
  // kNodes (a rolling restart's): these nodes in this order; empty for every broker (then the
  // controllers with include_controllers).
  std::vector<std::int32_t> nodes;
};

// An observed drill's window_s: at least long enough for a fencing (the session timeout) and a
// return, at most a day (a provider's patching window).
inline constexpr std::int32_t kMinWindowS = 10;
inline constexpr std::int32_t kMaxWindowS = 86'400;

struct DrillOptions {
  std::int32_t repeats = 1;              // runs, with recovery in between
  std::int32_t baseline_s = 5;           // normal probing before the fault
  std::int32_t observe_min_s = 5;        // observe at least this long after the fault
  std::int32_t observe_timeout_s = 120;  // give up waiting for the probes to resume
  std::int32_t grace_s = 30;             // stop: SIGTERM → SIGKILL after this (docker stop -t)
  std::int32_t pause_s = 10;             // pause: freeze for this long
  std::int32_t recover_timeout_s = 180;  // start → back in every ISR
  // After recovery, the analysis waits up to this long for every message of the run's window to
  // have a fate (acked and received, failed, or given up on); what is still open is unresolved.
  std::int32_t settle_timeout_s = 90;
  bool preferred_election = true;  // afterwards, give leadership back to preferred leaders
  // Before the baseline, move leadership to the preferred replicas when it is elsewhere, so that
  // every run starts from the roles the topic was designed with.
  bool preflight_election = true;
  bool allow_unavailable = false;  // allow a fault that takes a partition offline / below min ISR
  // Allow a fault on a KRaft voter that leaves the quorum without a majority of caught-up voters
  // (with a single controller, any fault on it): the cluster has no controller until it is back.
  bool allow_quorum_loss = false;
  // Gray faults: how long the fault stays in force before kfaild heals it.
  std::int32_t duration_s = 30;
  fault::IsolateFrom from = fault::IsolateFrom::all;  // isolate: whom the node is cut off from
  fault::IsolateMode mode = fault::IsolateMode::drop;
  // throttle: bytes per second each way. The request spells it as an integer (bytes/s) or a
  // string with a unit: "500kbit", "10mbit", "1gbit" (bits/s, ×1000) or "64kbytes", "2mbytes"
  // (bytes/s, ×1024), as tc and nft spell them.
  std::uint64_t rate_bytes_per_second = 0;
  // restart, rolling_restart: SIGKILL instead of the graceful stop before the start.
  bool kill = false;
  // rolling_restart: the pause between one step's end (back in every ISR, preferred leaders
  // restored, the probe settled) and the next step's start; and whether the default plan
  // includes the controllers.
  std::int32_t between_s = 10;
  bool include_controllers = false;
  // observed: how long to wait for a fault after the baseline, and how long the cluster must be
  // whole with the probe steady and no new departure before the drill ends.
  std::int32_t window_s = 600;
  std::int32_t quiet_s = 15;
};

// A compound drill's second fault: injected `after_s` after the first, on its own target
// (resolved and guarded at that moment), and recovered with the first. Both faults are kill or
// stop: a fault held and undone in between (pause, the gray faults) is not combined.
struct SecondFault {
  FaultType fault = FaultType::kKill;
  Target target;
  std::int32_t after_s = 2;
};

struct DrillSpec {
  FaultType fault = FaultType::kKill;
  Target target;
  DrillOptions options;
  std::optional<analysis::Objectives> expect;
  std::optional<SecondFault> then;
};

// The second fault as a drill of its own (its fault and target, the request's options), for the
// guards, the injector and the journal.
DrillSpec secondSpec(const DrillSpec& spec);

// A rolling restart's step on `node`: a restart (kill or stop, then start) of that node with the
// rehearsal's options.
DrillSpec rollingStep(const DrillSpec& rolling, std::int32_t node);

// "10mbit" → 1'250'000 bytes/s (see DrillOptions::rate_bytes_per_second); nullopt when not a
// rate or outside 1 kbit/s .. 100 gbit/s. Pure.
std::optional<std::uint64_t> parseRate(const std::string& text);

// A valid Kafka topic name: 1 to 249 characters of [a-zA-Z0-9._-], neither "." nor "..". Pure.
bool isValidTopicName(const std::string& name);

// Parses and validates; unknown fields are errors. Error::message names the field, e.g.
// "options.pause_s: must be between 1 and 3600, got 0".
Result<DrillSpec> parseDrillSpec(const nlohmann::json& body);

nlohmann::json toJson(const Target& target);
// Only `fault`'s own options (duration_s, from, mode, rate) with the common ones.
nlohmann::json toJson(const DrillOptions& options, FaultType fault);
nlohmann::json toJson(const SecondFault& then);
nlohmann::json toJson(const DrillSpec& spec);

}  // namespace kfaild::drill
