#pragma once

// What a drill did to the control plane and to the coordinators. The control plane: whether the
// cluster could change its metadata (the
// control probe's operations, server/probe/control_probe.h) and what the KRaft quorum's
// leadership went through (the control probe's quorum_leader_elected events).
//
// The stall is the interval from the last answered operation at or before the fault to the first
// answered after it. As with the data probe, a figure is the cluster's only when the event that
// ended it is named (the answering operation) and the probe was probing when the fault came (an
// answer within the last few intervals before it); otherwise the outcome is inconclusive with
// the reason. Pure: synthetic streams in the unit tests.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/analysis/drill_analysis.h"
#include "storage/records.h"

namespace kfaild::analysis {

struct ControlPlaneInput {
  std::int64_t interval_us = 500'000;  // the control probe's
  std::int64_t gap_threshold_us = 1'500'000;
  std::int64_t fault_us = 0;
  std::int64_t fault_time_uncertainty_us = 0;
  std::int64_t window_start_us = 0;  // baseline start
  std::int64_t window_end_us = 0;    // end of the control plane's observation
  // The control probe's samples in the window (stream kfaild:control), any order.
  std::vector<storage::ProbeSample> samples;
  // Whether the quorum was watched (kfaild's DescribeQuorum client can speak the cluster's
  // protocol and saw a leader); without it, no election figure is given.
  bool quorum_watched = false;
  std::string quorum_unwatched_reason;
  std::uint64_t clock_steps = 0;
};

// One operation stream (the control plane's, the commits', the transactions') around a fault.
struct StreamInput {
  std::int64_t interval_us = 500'000;
  std::int64_t gap_threshold_us = 1'500'000;
  std::int64_t fault_us = 0;
  std::int64_t fault_time_uncertainty_us = 0;
  std::int64_t window_start_us = 0;
  std::int64_t window_end_us = 0;
  const std::vector<storage::ProbeSample>* samples = nullptr;  // the stream's, any order
  std::uint64_t clock_steps = 0;
};

struct StreamResult {
  Outcome outcome = Outcome::kInconclusive;
  std::optional<Interval> stall;         // set when outcome == kStall
  std::optional<Interval> longest_gap;   // the candidate, whatever the outcome
  std::optional<EndedBy> ended_by;       // the operation whose answer ended the candidate
  std::int64_t baseline_longest_us = 0;  // longest interval between answers before the fault
  std::int64_t significant_us = 0;       // a candidate above this is a stall
  std::int64_t resolution_us = 0;        // ± of the stall: the stream's interval
  std::string reason;
  std::int64_t operations = 0;
  std::int64_t failed = 0;  // operations in the window without an answer
};

// The stall of a stream: its last answered operation at or before the fault to the first after.
// An answer that may have come before the fault (within the fault time's uncertainty after it, or
// to an operation sent before it within one interval after it) counts as before it.
StreamResult analyseStream(const StreamInput& input);
void toJson(const StreamResult& r, nlohmann::json& out);

struct QuorumElection {
  std::int64_t at_us = 0;  // the new leader's first answer
  std::int32_t leader = -1;
  std::int32_t epoch = -1;
  std::int32_t previous_leader = -1;
  std::int32_t previous_epoch = -1;
  std::int64_t leaderless_us = 0;  // the old leader's last answer → this one
  std::int64_t resolution_us = 0;  // ± of leaderless_us: the watch's period around it
};

struct ControlPlaneResult : StreamResult {
  // The quorum: elections in the window (quorum_leader_elected events), in order.
  bool quorum_watched = false;
  std::string quorum_reason;  // why there are no quorum figures, when there are none
  std::vector<QuorumElection> elections;
  std::int64_t epoch_increments = 0;  // over all elections: how many elections the quorum held
  std::optional<std::int64_t> leaderless_us;  // first election's (the fault's)
};

// `events`: the window's events (any source; only control/quorum_leader_elected are read).
ControlPlaneResult analyseControlPlane(const ControlPlaneInput& input,
                                       const std::vector<storage::Event>& events);

nlohmann::json toJson(const ControlPlaneResult& result);

// What a drill did to the coordinators: the commits' and the transactions' streams, and the
// coordinators' moves (coordinator/coordinator_moved events from the fault to the end of the
// observation).
struct CoordinatorMove {
  std::int64_t at_us = 0;  // the new coordinator's first FindCoordinator answer
  std::string type;        // "group" | "transaction"
  std::string key;
  std::int32_t from = -1;
  std::int32_t to = -1;
  std::string
      partition;  // the internal topic's partition that moved ("__consumer_offsets-17"), when known
};

struct CoordinatorsInput {
  std::int32_t target = -1;  // the drill's node: a move away from it is the fault's
  StreamInput commits;
  std::optional<StreamInput> transactions;
  bool watched = false;
  std::string unwatched_reason;
};

struct CoordinatorsResult {
  StreamResult commits;
  std::optional<StreamResult> transactions;
  bool watched = false;
  std::string reason;  // why there are no moves, when the coordinators were not watched
  std::vector<CoordinatorMove> moves;
  // Phases: fault → a coordinator moved off the target (its new coordinator answered
  // FindCoordinator) → the first commit (transaction) answered after the fault.
  std::optional<std::int64_t> coordinator_moved_us;
  std::optional<std::int64_t> first_commit_us;
  std::optional<std::int64_t> first_transaction_us;
};

CoordinatorsResult analyseCoordinators(const CoordinatorsInput& input,
                                       const std::vector<storage::Event>& events);
nlohmann::json toJson(const CoordinatorsResult& result);

}  // namespace kfaild::analysis
