#pragma once

// What one run of a drill found, typed. It becomes JSON only where it is stored (the drill's
// `result.runs[]`, served as is by the API): toJson() is that edge, and the spelling of every
// key is the API's (openapi.yaml, DrillRun).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/analysis/control_plane.h"
#include "server/analysis/drill_analysis.h"
#include "server/drill/cluster_settings.h"
#include "server/drill/drill_spec.h"
#include "server/drill/drill_state.h"

namespace kfaild::drill {

struct ElectionOutcome {
  std::vector<std::string> partitions;  // "topic-partition"
  bool preferred = false;               // the metadata shows every preferred leader leading
  std::optional<std::string> error;     // the election request failed
};

struct ProbeSnapshotAtFault {
  std::vector<analysis::ProbeAtFault> partitions;
  std::uint64_t skipped_ticks = 0;
  std::int64_t max_send_lateness_us = 0;
  std::uint64_t clock_steps = 0;
};

struct LeadershipAtFault {
  std::int64_t observed_at_us = 0;  // when the poller's snapshot was taken
  std::vector<analysis::PartitionAtFault> partitions;
};

struct FaultInjected {
  std::int64_t requested_us = 0;
  std::int64_t fault_us = 0;
  std::string
      time_source;  // where fault_us comes from ("requested" when only the request time is known)
  std::string detail;
  std::int64_t uncertainty_us = 0;   // ± of fault_us on kfaild's clock (fault::FaultRecord)
  std::int64_t clock_offset_us = 0;  // the source's clock − kfaild's, as estimated
};

// How the request's target became a node, at each moment it was resolved: at preflight, again
// after the preflight election (leadership may have moved), and at the fault. A target that
// names another node at the fault than the one the run was prepared on refuses the run.
struct TargetResolution {
  std::string how;  // resolveTargetOn's words for the last resolution
  std::int32_t preflight = -1;
  std::optional<std::int32_t> after_election;
  std::optional<std::int32_t> at_fault;
};

struct RecoveryAttempt {
  int attempt = 0;
  std::int64_t t_us = 0;
  std::string error;
};

struct RecoveryReport {
  int attempts = 0;
  std::vector<RecoveryAttempt> errors;  // the first 20 failed attempts
};

// A compound drill's second fault (DrillSpec::then): whom it hit and when, or why it was not
// injected, and what the run saw at its moment.
struct SecondFaultOutcome {
  FaultType fault = FaultType::kKill;
  std::int32_t after_s = 0;
  // injected | refused (its guards, its target; the first node is still recovered) | not_reached
  // (the run ended before its moment)
  std::string state = "not_reached";
  std::string reason;                            // refused, not_reached: why
  std::optional<std::int32_t> preflight_target;  // the target resolved at preflight
  std::optional<std::int32_t> target;            // and at its moment
  std::string how;                               // resolveTargetOn's words at its moment
  std::optional<FaultInjected> fault_injected;
  std::optional<LeadershipAtFault>
      leadership_at_fault;  // the first fault's node out of every ISR when it went down
  std::optional<ProbeSnapshotAtFault> probe_at_fault;
  std::optional<RecoveryReport> recovery;
  std::optional<std::int64_t> recovered_us;
  // The first fault alone: its target's roles, from its moment to the second's (a stall still
  // open then is inconclusive). The run's `analysis` is the second fault's.
  std::optional<analysis::RunAnalysis> first_analysis;
};

// A client profile beside the primary (ProfileProbe): its own view of the run, analysed as the
// primary's is, from its own stream. Unset analysis: `problem` says why.
struct ProfileOutcome {
  std::string profile;
  std::string client;  // librdkafka | wire | java
  std::optional<ProbeSnapshotAtFault> probe_at_fault;
  std::optional<std::map<std::string, std::string>> probe_client;
  std::optional<analysis::RunAnalysis> analysis;
  std::string problem;
};

struct RunOutcome {
  int run = 0;
  std::string profile;         // the primary profile's name: whose view `analysis` is
  std::string profile_client;  // and its client
  FaultType fault = FaultType::kKill;
  DrillState state = DrillState::kFailed;  // done, failed or aborted
  std::string reason;                      // why not done
  std::optional<std::int32_t> target;
  std::optional<TargetResolution> target_resolution;
  std::optional<ElectionOutcome> preflight_election;
  std::optional<std::int64_t> baseline_start_us;
  std::optional<ProbeSnapshotAtFault> probe_at_fault;
  std::optional<std::map<std::string, std::string>> probe_client;
  // The broker settings the expectations used, read at preflight (cluster_settings.h).
  std::optional<ClusterSettings> cluster_settings;
  std::optional<LeadershipAtFault> leadership_at_fault;
  std::optional<FaultInjected> fault_injected;
  bool observe_timed_out = false;
  std::optional<std::int64_t> observe_end_us;
  std::optional<RecoveryReport> recovery;
  std::optional<std::int64_t> recovered_us;
  bool offline_timed_out = false;
  std::optional<std::int64_t> window_end_us;
  // Steps of kfaild's wall clock between the baseline's start and the end of the window.
  std::optional<std::uint64_t> clock_steps_in_window;
  // The largest drift of the system clock from kfaild's timebase in the window, in µs (steps below
  // kClockStepUs; broker-log times are placed back by it).
  std::int64_t clock_drift_us = 0;
  std::optional<std::string> election_error;
  std::optional<bool> preferred_leaders_restored;
  std::optional<std::int64_t> settle_us;
  std::optional<analysis::RunAnalysis> analysis;
  // What the run did to the control plane (the control probe's operations and the quorum's
  // elections); unset with probe.control: off.
  std::optional<analysis::ControlPlaneResult> control_plane;
  // What the run did to the coordinators (the commits, the transactions, their coordinators'
  // moves); unset with probe.coordinators: off.
  std::optional<analysis::CoordinatorsResult> coordinators;
  // A compound drill's second fault, and the order its nodes were brought back in (recoveryOrder).
  std::optional<SecondFaultOutcome> second_fault;
  std::vector<std::int32_t> recovery_order;
  // The other client profiles' views of the same run, in probe.profiles' order.
  std::vector<ProfileOutcome> profiles;
};

nlohmann::json toJson(const RunOutcome& outcome);

}  // namespace kfaild::drill
