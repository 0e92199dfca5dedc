#pragma once

// What a drill must achieve to pass: the objectives of a cluster (`clusters[].objectives` in the
// configuration) and of one request (`expect` in a drill request), and how drills are compared
// with earlier ones (`clusters[].regression`). Pure values; the same JSON shape is read from the
// configuration (YAML, converted) and from requests, so both say the same thing with the same keys.
//
//   max_ack_stall_s: 12            # seconds, floats; every key optional
//   max_receive_stall_s: 15
//   by_role:  {leader: {max_ack_stall_s: 15}, follower: {...}, sole_replica: {...}}
//   by_fault: {kill: {max_ack_stall_s: 15, by_role: {leader: {...}}}, stop: {...}}
//   max_lost: 0                    # counts, per partition and run
//   max_duplicated: 0
//   max_failed: 0
//   max_detection_s: 12
//   max_discovery_s: 2
//   max_recovery_s: 120
//   fail_on_regression: false      # a flagged regression fails the verdict too
//
// A stall limit for (fault, role, kind) is the most specific one set:
//   by_fault.F.by_role.R  >  by_role.R  >  by_fault.F  >  the top level.
// A role names the partition's role for the drill's target (analysis::Role's spelling).
//
// Layers (overlay): the request overrides the cluster's objectives key by key, and a stall key the
// request sets overrides the cluster's same key at that level and at every more specific level
// under it (a request's top-level max_ack_stall_s: 1 is the limit of every role and fault, whatever
// the cluster's by_fault / by_role say), so that an `expect` means what it says.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/common/result.h"

namespace kfaild::analysis {

struct StallLimits {
  std::optional<double> max_ack_stall_s;
  std::optional<double> max_receive_stall_s;
};

struct FaultObjectives {
  StallLimits stall;
  std::map<std::string, StallLimits> by_role;
};

struct Objectives {
  StallLimits stall;
  std::map<std::string, StallLimits> by_role;
  std::map<std::string, FaultObjectives> by_fault;
  std::optional<std::int64_t> max_lost;
  std::optional<std::int64_t> max_duplicated;
  std::optional<std::int64_t> max_failed;
  std::optional<double> max_detection_s;
  std::optional<double> max_discovery_s;
  std::optional<double> max_recovery_s;
  std::optional<bool> fail_on_regression;
  // Which limits still hold defaultObjectives()' values (no configuration or request named
  // them): only those are derived from a fault's mechanism (verdict.h, objectivesFor). Not part
  // of the JSON shape.
  struct Defaulted {
    bool stall = false;  // every stall limit
    bool max_discovery_s = false;
  } defaulted;
};

// How a run is compared with earlier ones: the median of the same cluster + topic + partition role
// + fault + kind over the last `window` finished drills; a stall is a regression when it exceeds
// factor × that median and the median by at least min_delta_s, once at least min_runs earlier
// values exist.
struct RegressionPolicy {
  std::int32_t window = 5;
  double factor = 1.5;
  std::int32_t min_runs = 3;
  double min_delta_s = 1.0;
};

enum class StallKind { kAck, kReceive };
const char* toString(StallKind kind);

// The defaults when a cluster's configuration names no objectives (docs/CONFIG.md says why).
Objectives defaultObjectives();

// Parses the JSON shape above. Unknown keys, wrong types and negative values are errors whose
// message names the key, prefixed with `where` ("clusters[0].objectives.by_role.leder: unknown
// key").
Result<Objectives> parseObjectives(const nlohmann::json& value, const std::string& where);
Result<RegressionPolicy> parseRegressionPolicy(const nlohmann::json& value,
                                               const std::string& where);

// `over` on top of `base` (see "Layers" above).
Objectives overlay(const Objectives& base, const Objectives& over);

// The limit for a stall of `kind` of a partition with `role` after `fault`, and the path of the key
// it comes from ("by_fault.kill.max_ack_stall_s"); nullopt when no key applies.
struct StallLimit {
  double seconds = 0;
  std::string source;
};
std::optional<StallLimit> stallLimit(const Objectives& objectives, const std::string& fault,
                                     const std::string& role, StallKind kind);

nlohmann::json toJson(const Objectives& objectives);
nlohmann::json toJson(const RegressionPolicy& policy);

}  // namespace kfaild::analysis
