#pragma once

// The accounting of one probe partition: which messages were sent, acked, received; the ack
// gaps and receive gaps that exceed the threshold; loss, duplicates and reordering by sequence.
//
// Not thread-safe: the probe serialises calls per partition. Outputs (finished samples, gaps) are
// appended to a LedgerOutput for the caller to hand to the store outside its lock.
//
// Time: every call takes an Instant; gap durations use its monotonic part, stored times its wall
// part, so a wall-clock step never appears as (or hides) a gap.
//
// Honesty: the ledger bounds what the partition may have outstanding (sent, no delivery report)
// by count and by the age of the oldest such message; holdReason() tells the sender to skip a
// tick at either bound, and holdTick() records it. The stretches in which the probe held back, and
// those in which nothing at all was outstanding for longer than the idle tolerance (so a gap
// there would be the probe's, not the cluster's), are reported as ProbeStretch outputs. So are
// the stretches in which the client refused the probe's sends locally (queue full, a fatal
// producer error): each refusal fails its message at once, so "outstanding" drops to 0 and back
// every tick and such a stretch never shows as idle, yet the cluster was not asked.

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/probe/probe_status.h"
#include "storage/records.h"

namespace kfaild::probe {

// librdkafka's RD_KAFKA_RESP_ERR__TIMED_OUT: used for a message that never got a delivery
// report within the unacked timeout.
inline constexpr std::int32_t kNoDeliveryReport = -185;
// Not a librdkafka code (its own run from -200 up to -137, and -100: none is -101): the probe's
// client process (probe.client java) is down. A send refused with it opens a refused stretch, and
// what was outstanding at its death fails with it, so a gap across its absence is the probe's own
// (inconclusive), never the cluster's.
inline constexpr std::int32_t kClientDown = -101;

struct LedgerOptions {
  std::int64_t gap_threshold_us = 100'000;
  std::int64_t loss_timeout_us = 60'000'000;        // acked, not received after this → lost
  std::int64_t unacked_timeout_us = 900'000'000;    // no delivery report after this → failed
  std::int64_t receive_window = 1 << 16;            // sequences remembered for duplicate detection
  std::int64_t max_outstanding = 200;               // held back at this many without a report
  std::int64_t max_outstanding_age_us = 2'000'000;  // or when the oldest is this old
  std::int64_t idle_tolerance_us = 40'000;  // shorter idle stretches are the probe's spacing
};

enum class HoldReason { kNone, kOutstandingCount, kOutstandingAge };
const char* toString(HoldReason reason);

// A stretch of the probe's own behaviour: "held_back" (sends skipped at the bound; `ticks`,
// `reason`), "idle" (nothing outstanding of `gap_kind`: no message awaiting an ack, or none
// awaiting receipt) or "refused" (every send refused by the client from `start` until the
// first send it accepted at `end`; `ticks` sends, the last refusal's client `error`).
struct ProbeStretch {
  std::string kind;
  std::string topic;
  std::int32_t partition = 0;
  common::WallMicros start = 0;
  common::WallMicros end = 0;
  std::int64_t ticks = 0;
  std::string reason;
  storage::GapKind gap_kind = storage::GapKind::kAck;
  std::int32_t error = 0;
};

// A message that broke the stream's order: kind "duplicate", "reordered", "lost" or "late".
struct Anomaly {
  std::string kind;
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t seq = 0;
  common::WallMicros at = 0;
};

struct LedgerOutput {
  std::vector<storage::ProbeSample> samples;
  std::vector<storage::Gap> gaps;
  std::vector<Anomaly> anomalies;
  std::vector<ProbeStretch> stretches;
};

class PartitionLedger {
 public:
  PartitionLedger(storage::ClusterId cluster, std::string topic, std::int32_t partition,
                  LedgerOptions options);

  // Whether a send now would exceed the bound on outstanding messages.
  HoldReason holdReason(common::Instant now);
  // The sender skipped this partition's tick for `reason`.
  void holdTick(common::Instant at, HoldReason reason);
  // Allocates the next sequence number for a message sent now. Closes a hold, and reports an
  // idle stretch that ends here.
  std::int64_t beginSend(common::Instant at, LedgerOutput& out);
  // The client refused the message at once (queue full, unknown partition, fatal error, ...):
  // the message fails, and a refused stretch starts (or goes on).
  void sendRefused(std::int64_t seq, common::Instant at, std::int32_t error, LedgerOutput& out);
  // The client accepted the message sent at `at`: a refused stretch ends there.
  void sendAccepted(common::Instant at, LedgerOutput& out);
  bool refusing() const { return refused_since_.has_value(); }
  // Delivery report: error 0 is an ack (acks=all satisfied) at `offset`.
  void deliveryReport(std::int64_t seq, common::Instant at, std::int32_t error,
                      std::optional<std::int64_t> offset, LedgerOutput& out);
  // The consumer read the message.
  void received(std::int64_t seq, common::Instant at, LedgerOutput& out);
  // Gives up on messages past their timeouts (lost or never reported).
  void expire(common::Instant now, LedgerOutput& out);
  // Every message still without a delivery report fails now with `error`: their producer is
  // gone (recreated after a fatal error) and will never report them.
  void failOutstanding(common::Instant at, std::int32_t error, LedgerOutput& out);

  PartitionStatus status();
  // A message acked at least `after_us` ago and not read back, while nothing at all was read for
  // as long: the cluster acks, so the consumer should have read it, and may be stuck (librdkafka's
  // consumer has been seen reading nothing from one partition for minutes after every broker
  // came back). Its offset, where reading resumes, and how long ago it was acked.
  struct Unread {
    std::int64_t offset = 0;
    std::int64_t acked_ago_us = 0;
  };
  std::optional<Unread> unread(common::Instant now, std::int64_t after_us) const;
  // Messages sent in [from, to] (wall) whose fate is still open: no delivery report, or acked
  // and not received. For the analysis of a window that is not settled.
  std::vector<storage::ProbeSample> pending(common::WallMicros from, common::WallMicros to) const;
  const std::string& topic() const { return topic_; }
  std::int32_t partition() const { return partition_; }

 private:
  struct InFlight {
    common::Instant sent{};
    std::optional<common::Instant> report;
    std::int32_t error = 0;
    std::optional<std::int64_t> offset;
    std::optional<common::WallMicros> receive_wall;
    bool finished = false;
  };

  InFlight* find(std::int64_t seq);
  InFlight* entryAt(std::int64_t seq);    // finished entries included
  void reported(common::Instant at);      // an outstanding message got its report
  void unreceivable(common::Instant at);  // one fewer message that may still be received
  const InFlight* oldestOutstanding();
  storage::ProbeSample sampleOf(std::int64_t seq, const InFlight& entry) const;
  void finish(std::int64_t seq, InFlight& entry, LedgerOutput& out);
  void popFinished();
  void noteGap(storage::GapKind kind, std::optional<common::Instant>& last, std::int64_t& last_seq,
               std::int64_t& longest, GapHistogram& histogram, std::int64_t seq, common::Instant at,
               LedgerOutput& out);
  bool receivedFlag(std::int64_t seq) const;
  void setReceivedFlag(std::int64_t seq, bool seen);

  storage::ClusterId cluster_;
  std::string topic_;
  std::int32_t partition_;
  LedgerOptions options_;

  std::int64_t next_seq_ = 0;
  std::int64_t base_seq_ = 0;  // sequence of in_flight_.front()
  std::deque<InFlight> in_flight_;
  // Received flags, one bit per sequence, indexed by seq % receive_window (a bit, not a byte:
  // at 1,000 partitions the default window's bytes were 64 MiB of the probe's memory).
  std::vector<std::uint64_t> received_ring_;
  std::int64_t max_received_seq_ = -1;

  std::int64_t outstanding_ = 0;             // no report yet
  std::int64_t oldest_outstanding_seq_ = 0;  // no entry before it is outstanding
  std::int64_t awaiting_receive_ = 0;        // may still be received (not failed, not given up on)
  std::optional<common::Instant> ack_idle_since_;      // outstanding_ dropped to 0
  std::optional<common::Instant> receive_idle_since_;  // awaiting_receive_ dropped to 0
  std::optional<common::Instant> hold_since_;
  std::int64_t hold_ticks_ = 0;
  HoldReason hold_reason_ = HoldReason::kNone;
  std::optional<common::Instant> refused_since_;
  std::int64_t refused_sends_ = 0;
  std::int32_t refused_error_ = 0;

  PartitionCounters counters_;
  std::optional<common::Instant> last_ack_;
  std::int64_t last_ack_seq_ = -1;
  std::optional<common::Instant> last_receive_;
  std::int64_t last_receive_seq_ = -1;
  std::int64_t longest_ack_gap_us_ = 0;
  std::int64_t longest_receive_gap_us_ = 0;
  GapHistogram ack_intervals_;
  GapHistogram receive_intervals_;
  LatencyHistogram ack_latency_;
  LatencyHistogram receive_latency_;
};

}  // namespace kfaild::probe
