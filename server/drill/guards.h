#pragma once

// The checks made before a fault is injected. Each refusal names its reason in words an operator
// can act on; the first failing check wins. Pure: the caller gathers the cluster's state.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/drill/drill_spec.h"
#include "server/kafka/cluster_types.h"
#include "server/kafka/metadata.h"

namespace kfaild::drill {

// What the probe looks like for one partition when the drill is asked for.
struct ProbeHealth {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t backlog_us = 0;                      // age of the oldest message without an ack
  bool holding = false;                             // sends held back at the outstanding bound
  std::optional<std::int64_t> last_ack_age_us;      // since the last ack; none before the first
  std::optional<std::int64_t> last_receive_age_us;  // since the last receipt; none before the first
};

// The most a probe may lag before a drill is refused: beyond it the acks a drill sees are those
// of messages sent long before the fault, so the stall would be measured on the backlog. The
// analysis calls a run inconclusive at the same bound (analysis::kLagAtFaultUs).
inline constexpr std::int64_t kMaxProbeBacklogUs = 1'000'000;

struct GuardInput {
  FaultType fault = FaultType::kKill;
  // The node the fault will hit; -1 for none (an observed drill: only the cluster's wholeness
  // and the probe's steadiness are checked).
  std::int32_t target = -1;
  bool allow_unavailable = false;
  bool allow_quorum_loss = false;
  std::set<std::int32_t> inventory;                 // node ids kfaild can reach
  std::set<std::int32_t> inventory_brokers;         // of which brokers
  std::set<std::int32_t> inventory_controllers;     // of which KRaft controllers
  std::optional<std::int64_t> active_drill;         // another drill running on this cluster
  const kafka::ClusterSnapshot* cluster = nullptr;  // every topic (fetchAllMetadata)
  std::vector<std::string> probe_topics;
  std::map<std::string, std::int32_t> min_insync;  // per topic; absent: 1
  // The KRaft quorum (DescribeQuorum); nullptr when it could not be described, quorum_problem
  // then says why.
  const kafka::QuorumInfo* quorum = nullptr;
  std::optional<std::string> quorum_problem;
  std::optional<std::string> cluster_problem;  // metadata unavailable, controller gone, ...
  std::optional<std::string> probe_problem;    // the probe is not probing (phase, why)
  std::vector<ProbeHealth> probe;
  std::int64_t gap_threshold_us = 100'000;  // the probe's gap threshold
};

// nullopt: the drill may go ahead; else the reason it may not.
std::optional<std::string> checkGuards(const GuardInput& in);

// The guards of a compound drill's second fault, at its moment, with the first fault in force on
// node `first`: only what the two do together. The cluster was whole at the first fault, so
// neither an under-replicated partition, nor a fenced broker, nor the probe's state (a partition
// the first fault stalled is inconclusive at the second, and said so) refuses it; a target that
// is `first`, a quorum left without a majority of caught-up voters with both nodes down (or
// without a leader, for a voter), and partitions it would take offline or below
// min.insync.replicas do. `in.cluster` must already have `first` out of every ISR when the first
// fault took it down (withoutNode): its departure may not be in the metadata yet.
std::optional<std::string> checkSecondFault(const GuardInput& in, std::int32_t first,
                                            bool first_down);

// `cluster` with `node` out of every ISR, and no partition led by it (leader -1). Pure.
kafka::ClusterSnapshot withoutNode(const kafka::ClusterSnapshot& cluster, std::int32_t node);

// Partitions (as "topic-partition") that would go offline or below min.insync.replicas if
// `broker` left every ISR now.
struct Impact {
  std::vector<std::string> offline;
  std::vector<std::string> below_min_isr;
};
Impact impactOfLosing(std::int32_t broker, const kafka::ClusterSnapshot& cluster,
                      const std::map<std::string, std::int32_t>& min_insync);

// A voter counts towards the quorum's majority when it leads it, or when, on the leader's clock
// (the leader's own entry: its "now" in Kafka 3.9 and later), it fetched from the leader and was
// caught up with the leader's log end within kVoterMaxAgeMs (controller.quorum.fetch.timeout.ms's
// default: a follower silent that long starts an election). Without timestamps (DescribeQuorum v0,
// or a leader that reports none) its log end offset must have reached the high watermark.
inline constexpr std::int64_t kVoterMaxAgeMs = 2000;
bool voterCaughtUp(const kafka::QuorumInfo& quorum, const kafka::QuorumReplica& voter);

// What losing `node` does to the KRaft quorum: voters up and caught up without it against the
// majority (floor(voters / 2) + 1). Only meaningful for a voter.
struct QuorumImpact {
  std::vector<std::int32_t> voters;
  std::vector<std::int32_t> caught_up_without;  // voters up and caught up, the target left out
  std::size_t majority = 0;
  bool keepsMajority() const { return caught_up_without.size() >= majority; }
};
QuorumImpact quorumImpactOfLosing(std::int32_t node, const kafka::QuorumInfo& quorum);

}  // namespace kfaild::drill
