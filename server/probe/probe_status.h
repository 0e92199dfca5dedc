#pragma once

// What the probe reports of itself, as plain data: per partition its counters, last ack and
// receipt, interval histograms and what is outstanding; for the whole probe its phase and pacing.
// No librdkafka here: the API uses these types without linking the probe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/clock.h"

namespace kfaild::probe {

struct PartitionCounters {
  std::uint64_t sent = 0;
  std::uint64_t send_failed = 0;  // refused by the client or delivery report with an error
  std::uint64_t acked = 0;
  std::uint64_t received = 0;
  std::uint64_t lost = 0;        // acked but never received within the loss timeout
  std::uint64_t duplicated = 0;  // received again
  std::uint64_t reordered = 0;   // received after a higher sequence
  std::uint64_t late = 0;        // received after it had been given up on
  std::uint64_t gaps = 0;        // gaps over the threshold, ack and receive
  std::uint64_t held_ticks = 0;  // ticks the probe did not send because of the bound
};

// Intervals between consecutive acks (or receipts) of a partition, in buckets for Prometheus:
// counts[i] holds intervals ≤ kGapBucketsUs[i] and above the previous bound; the last counts
// those above every bound.
inline constexpr std::array<std::int64_t, 10> kGapBucketsUs = {
    25'000,    50'000,    100'000,   250'000,    500'000,
    1'000'000, 2'500'000, 5'000'000, 10'000'000, 30'000'000};

// Latencies of single messages (send → ack, send → first receipt). Finer at the low end than the
// gap buckets: an ack normally takes a few milliseconds, a stall's messages wait seconds.
inline constexpr std::array<std::int64_t, 14> kLatencyBucketsUs = {
    1'000,   2'500,   5'000,     10'000,    25'000,    50'000,     100'000,
    250'000, 500'000, 1'000'000, 2'500'000, 5'000'000, 10'000'000, 30'000'000};

// Durations in the buckets `Bounds` (µs, ascending): counts[i] holds those ≤ Bounds[i] and above
// the previous bound; the last counts those above every bound.
template <const auto& Bounds>
struct BucketHistogram {
  static constexpr const auto& kBounds = Bounds;
  std::array<std::uint64_t, Bounds.size() + 1> counts{};
  std::uint64_t count = 0;
  std::int64_t sum_us = 0;
  void add(std::int64_t duration_us) {
    std::size_t bucket = 0;
    while (bucket < Bounds.size() && duration_us > Bounds[bucket]) ++bucket;
    ++counts[bucket];
    ++count;
    sum_us += duration_us;
  }
};

using GapHistogram = BucketHistogram<kGapBucketsUs>;
using LatencyHistogram = BucketHistogram<kLatencyBucketsUs>;

struct PartitionStatus {
  std::string topic;
  std::int32_t partition = 0;
  PartitionCounters counters;
  std::optional<common::Instant> last_ack;
  std::optional<common::Instant> last_receive;
  std::int64_t longest_ack_gap_us = 0;
  std::int64_t longest_receive_gap_us = 0;
  GapHistogram ack_intervals;
  GapHistogram receive_intervals;
  LatencyHistogram ack_latency;      // send → ack (delivery report without error)
  LatencyHistogram receive_latency;  // send → first receipt, of messages not given up on
  std::size_t in_flight = 0;         // not finished: no report, or acked and not received
  std::size_t outstanding = 0;       // no delivery report yet
  std::optional<common::Instant> oldest_outstanding_sent;
  std::optional<common::Instant> holding_since;   // set while sends are held back
  std::optional<common::Instant> refusing_since;  // set while the client refuses every send
};

// The store's name of the control-plane probe's stream (the topic of its samples and gaps; no
// Kafka topic name contains ':').
inline constexpr std::string_view kControlStream = "kfaild:control";
// The coordinator probes' streams: offset commits and transactions.
inline constexpr std::string_view kCommitStream = "kfaild:commit";
inline constexpr std::string_view kTransactionStream = "kfaild:txn";
// Whether `name` is one of kfaild's own streams (not a Kafka topic).
inline bool isOwnStream(std::string_view name) {
  return name == kControlStream || name == kCommitStream || name == kTransactionStream;
}
// The ack_error of a control operation that got no answer (RD_KAFKA_RESP_ERR__TIMED_OUT).
inline constexpr std::int32_t kControlNoAnswer = -185;

// The KRaft quorum's leader as the control probe last saw it answer (DescribeQuorum).
struct QuorumLeaderSeen {
  std::int32_t leader = -1;
  std::int32_t epoch = -1;
  common::WallMicros first_us = 0;  // its first answer in this epoch
  common::WallMicros last_us = 0;   // its latest answer
  std::string answered_by;          // host:port of the voter that answered
};

// A stream of operations that only one part of the cluster completes (the active controller, a
// group or transaction coordinator), one at a time, every interval: what its ledger counts.
struct OperationStatus {
  std::int64_t interval_us = 0;
  std::uint64_t ops = 0;
  std::uint64_t failures = 0;
  std::uint64_t gaps = 0;  // gaps over the stream's gap threshold
  std::optional<common::Instant> last_ok;
  std::optional<common::Instant> failing_since;  // the first failure after the last success
  std::int64_t last_latency_us = 0;
  std::int64_t longest_gap_us = 0;
  LatencyHistogram latency;  // of the operations that succeeded
  std::string last_error;
};

// The control-plane probe (server/probe/control_probe.h): one metadata operation only the active
// controller completes, every interval, and a watch of the quorum's leader.
struct ControlStatus : OperationStatus {
  std::optional<QuorumLeaderSeen> quorum;
  std::string quorum_error;  // why the last watch found no leader ("" when it found one)
  std::uint64_t leader_changes = 0;
  // The broker the client sends its controller requests to (its metadata's controller id; under
  // KRaft any live broker, which forwards to the active controller); -1 before it knows one.
  std::int32_t requests_via = -1;
};

// A coordinator as the coordinator probe's FindCoordinator watch last saw it.
struct CoordinatorSeen {
  std::int32_t node = -1;
  // The internal topic's partition whose leader the coordinator is ("__consumer_offsets-17"),
  // once kfaild has read how many partitions the topic has; empty before.
  std::string partition;
  common::WallMicros since_us = 0;  // its first answer naming this node
  common::WallMicros last_us = 0;   // the latest answer naming it
};

// The coordinator probes (server/probe/coordinator_probe.h): offset commits to a kfaild-owned
// group and, when configured, transactions of a kfaild-owned transactional id.
struct CoordinatorStatus {
  std::string group;
  std::optional<OperationStatus> commits;
  std::optional<CoordinatorSeen> group_coordinator;
  std::string transactional_id;  // empty: no transaction probe
  std::optional<OperationStatus> transactions;
  std::optional<CoordinatorSeen> transaction_coordinator;
  std::string watch_error;  // why the last FindCoordinator failed ("" when it answered)
  std::uint64_t moves = 0;  // coordinator moves seen
};

enum class ProbePhase { kStarting, kSettingUp, kProbing, kStopped };
const char* toString(ProbePhase phase);

struct ProbeStatus {
  ProbePhase phase = ProbePhase::kStarting;
  std::string problem;  // why set-up is not done yet (topic missing, cluster unreachable)
  std::uint64_t run_id = 0;
  std::int64_t interval_us = 0;
  std::uint64_t ticks = 0;
  std::uint64_t skipped_ticks = 0;
  std::int64_t max_send_lateness_us = 0;
  std::string
      sender_scheduling;  // what the sender thread got, e.g. "SCHED_FIFO 1"; "" before it started
  std::uint64_t held_ticks = 0;            // partition ticks held back at the outstanding bound
  std::uint64_t producer_recreations = 0;  // producers replaced after a fatal error
  std::uint64_t consumer_recreations =
      0;  // consumers replaced when a seek did not free their reading
  // probe.client java: how often its child process was started again after it died
  std::optional<std::uint64_t> client_restarts;
  std::map<std::string, std::string> client_settings;  // the producer's, as librdkafka has them
  std::vector<PartitionStatus> partitions;
  std::optional<ControlStatus> control;           // nullopt: the control probe is off
  std::optional<CoordinatorStatus> coordinators;  // nullopt: the coordinator probes are off
};

}  // namespace kfaild::probe
