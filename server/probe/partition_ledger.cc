#include "server/probe/partition_ledger.h"

#include <utility>

namespace kfaild::probe {

PartitionLedger::PartitionLedger(storage::ClusterId cluster, std::string topic,
                                 std::int32_t partition, LedgerOptions options)
    : cluster_(cluster),
      topic_(std::move(topic)),
      partition_(partition),
      options_(options),
      received_ring_((static_cast<std::size_t>(options.receive_window) + 63) / 64, 0) {}

const char* toString(HoldReason reason) {
  switch (reason) {
    case HoldReason::kNone:
      return "none";
    case HoldReason::kOutstandingCount:
      return "outstanding_count";
    case HoldReason::kOutstandingAge:
      return "outstanding_age";
  }
  return "unknown";
}

HoldReason PartitionLedger::holdReason(common::Instant now) {
  if (outstanding_ >= options_.max_outstanding) return HoldReason::kOutstandingCount;
  const InFlight* oldest = oldestOutstanding();
  if (oldest != nullptr && now.mono - oldest->sent.mono > options_.max_outstanding_age_us) {
    return HoldReason::kOutstandingAge;
  }
  return HoldReason::kNone;
}

void PartitionLedger::holdTick(common::Instant at, HoldReason reason) {
  if (!hold_since_) {
    hold_since_ = at;
    hold_ticks_ = 0;
    hold_reason_ = reason;
  }
  ++hold_ticks_;
  ++counters_.held_ticks;
}

std::int64_t PartitionLedger::beginSend(common::Instant at, LedgerOutput& out) {
  if (hold_since_) {
    out.stretches.push_back({"held_back", topic_, partition_, hold_since_->wall, at.wall,
                             hold_ticks_, toString(hold_reason_), storage::GapKind::kAck});
    hold_since_.reset();
    hold_ticks_ = 0;
  }
  auto idle = [&](std::optional<common::Instant>& since, storage::GapKind kind) {
    if (since && at.mono - since->mono > options_.idle_tolerance_us) {
      out.stretches.push_back({"idle", topic_, partition_, since->wall, at.wall, 0, "", kind});
    }
    since.reset();
  };
  if (outstanding_ == 0) idle(ack_idle_since_, storage::GapKind::kAck);
  if (awaiting_receive_ == 0) idle(receive_idle_since_, storage::GapKind::kReceive);

  const std::int64_t seq = next_seq_++;
  if (in_flight_.empty()) base_seq_ = seq;
  in_flight_.push_back(InFlight{at, std::nullopt, 0, std::nullopt, std::nullopt, false});
  setReceivedFlag(seq, false);
  ++counters_.sent;
  ++outstanding_;
  ++awaiting_receive_;
  return seq;
}

void PartitionLedger::reported(common::Instant at) {
  if (--outstanding_ == 0) ack_idle_since_ = at;
}

void PartitionLedger::unreceivable(common::Instant at) {
  if (--awaiting_receive_ == 0) receive_idle_since_ = at;
}

PartitionLedger::InFlight* PartitionLedger::entryAt(std::int64_t seq) {
  if (seq < base_seq_ || seq >= base_seq_ + static_cast<std::int64_t>(in_flight_.size())) {
    return nullptr;
  }
  return &in_flight_[static_cast<std::size_t>(seq - base_seq_)];
}

const PartitionLedger::InFlight* PartitionLedger::oldestOutstanding() {
  // Reports come mostly in order, so the cursor only moves forward: amortised O(1).
  while (oldest_outstanding_seq_ < next_seq_) {
    const InFlight* entry = entryAt(oldest_outstanding_seq_);
    if (entry != nullptr && !entry->report && !entry->finished) return entry;
    ++oldest_outstanding_seq_;
  }
  return nullptr;
}

bool PartitionLedger::receivedFlag(std::int64_t seq) const {
  const auto bit = static_cast<std::size_t>(seq % options_.receive_window);
  return (received_ring_[bit / 64] >> (bit % 64)) & 1U;
}

void PartitionLedger::setReceivedFlag(std::int64_t seq, bool seen) {
  const auto bit = static_cast<std::size_t>(seq % options_.receive_window);
  const auto mask = std::uint64_t{1} << (bit % 64);
  if (seen) {
    received_ring_[bit / 64] |= mask;
  } else {
    received_ring_[bit / 64] &= ~mask;
  }
}

PartitionLedger::InFlight* PartitionLedger::find(std::int64_t seq) {
  if (seq < base_seq_ || seq >= base_seq_ + static_cast<std::int64_t>(in_flight_.size())) {
    return nullptr;
  }
  auto& entry = in_flight_[static_cast<std::size_t>(seq - base_seq_)];
  return entry.finished ? nullptr : &entry;
}

void PartitionLedger::sendRefused(std::int64_t seq, common::Instant at, std::int32_t error,
                                  LedgerOutput& out) {
  if (!refused_since_) {
    // The stretch starts when the refused message was due, not when the refusal came back.
    const InFlight* entry = find(seq);
    refused_since_ = entry != nullptr ? entry->sent : at;
    refused_sends_ = 0;
  }
  ++refused_sends_;
  refused_error_ = error;
  deliveryReport(seq, at, error, std::nullopt, out);
}

void PartitionLedger::sendAccepted(common::Instant at, LedgerOutput& out) {
  if (!refused_since_) return;
  ProbeStretch stretch{"refused", topic_,         partition_, refused_since_->wall,
                       at.wall,   refused_sends_, "",         storage::GapKind::kAck};
  stretch.error = refused_error_;
  out.stretches.push_back(std::move(stretch));
  refused_since_.reset();
  refused_sends_ = 0;
}

void PartitionLedger::deliveryReport(std::int64_t seq, common::Instant at, std::int32_t error,
                                     std::optional<std::int64_t> offset, LedgerOutput& out) {
  InFlight* entry = find(seq);
  if (entry == nullptr || entry->report) return;  // already given up on, or a repeated report
  entry->report = at;
  entry->error = error;
  entry->offset = offset;
  reported(at);
  if (error != 0) {
    ++counters_.send_failed;
    if (!entry->receive_wall) unreceivable(at);
    finish(seq, *entry, out);
    popFinished();
    return;
  }
  ++counters_.acked;
  // Monotonic: a wall-clock step must not show as (or hide) latency.
  if (at.mono >= entry->sent.mono) ack_latency_.add(at.mono - entry->sent.mono);
  noteGap(storage::GapKind::kAck, last_ack_, last_ack_seq_, longest_ack_gap_us_, ack_intervals_,
          seq, at, out);
  // The consumer may have read the message before its delivery report was served.
  if (entry->receive_wall) {
    finish(seq, *entry, out);
    popFinished();
  }
}

void PartitionLedger::received(std::int64_t seq, common::Instant at, LedgerOutput& out) {
  if (seq < 0 || seq >= next_seq_) return;  // not ours (a sequence this run never sent)
  if (seq < next_seq_ - options_.receive_window) {
    // Too old to remember whether it was seen: a redelivery of something long finished.
    ++counters_.duplicated;
    out.anomalies.push_back({"duplicate", topic_, partition_, seq, at.wall});
    return;
  }
  if (receivedFlag(seq)) {
    ++counters_.duplicated;
    out.anomalies.push_back({"duplicate", topic_, partition_, seq, at.wall});
    return;
  }
  setReceivedFlag(seq, true);
  ++counters_.received;
  if (seq < max_received_seq_) {
    ++counters_.reordered;
    out.anomalies.push_back({"reordered", topic_, partition_, seq, at.wall});
  }
  if (seq > max_received_seq_) max_received_seq_ = seq;
  noteGap(storage::GapKind::kReceive, last_receive_, last_receive_seq_, longest_receive_gap_us_,
          receive_intervals_, seq, at, out);
  InFlight* entry = find(seq);
  if (entry == nullptr) {
    ++counters_.late;
    out.anomalies.push_back({"late", topic_, partition_, seq, at.wall});
    return;
  }
  entry->receive_wall = at.wall;
  if (at.mono >= entry->sent.mono) receive_latency_.add(at.mono - entry->sent.mono);
  unreceivable(at);
  if (entry->report) {
    finish(seq, *entry, out);
    popFinished();
  }
}

void PartitionLedger::expire(common::Instant now, LedgerOutput& out) {
  for (std::size_t i = 0; i < in_flight_.size(); ++i) {
    auto& entry = in_flight_[i];
    if (entry.finished) continue;
    const std::int64_t seq = base_seq_ + static_cast<std::int64_t>(i);
    if (entry.report && entry.error == 0 && !entry.receive_wall &&
        now.mono - entry.report->mono > options_.loss_timeout_us) {
      ++counters_.lost;
      out.anomalies.push_back({"lost", topic_, partition_, seq, now.wall});
      unreceivable(now);
      finish(seq, entry, out);
    } else if (!entry.report && now.mono - entry.sent.mono > options_.unacked_timeout_us) {
      entry.error = kNoDeliveryReport;
      ++counters_.send_failed;
      reported(now);
      if (!entry.receive_wall) unreceivable(now);
      finish(seq, entry, out);
    }
  }
  popFinished();
}

void PartitionLedger::failOutstanding(common::Instant at, std::int32_t error, LedgerOutput& out) {
  const auto first = base_seq_;
  const auto count = static_cast<std::int64_t>(in_flight_.size());
  for (std::int64_t seq = first; seq < first + count; ++seq) {
    if (const InFlight* entry = find(seq); entry != nullptr && !entry->report) {
      deliveryReport(seq, at, error, std::nullopt, out);
    }
  }
}

void PartitionLedger::finish(std::int64_t seq, InFlight& entry, LedgerOutput& out) {
  entry.finished = true;
  out.samples.push_back(sampleOf(seq, entry));
}

storage::ProbeSample PartitionLedger::sampleOf(std::int64_t seq, const InFlight& entry) const {
  storage::ProbeSample sample;
  sample.cluster = cluster_;
  sample.topic = topic_;
  sample.partition = partition_;
  sample.seq = seq;
  sample.send_us = entry.sent.wall;
  if (entry.report) sample.ack_us = entry.report->wall;
  sample.ack_error = entry.error;
  sample.offset = entry.offset;
  sample.receive_us = entry.receive_wall;
  return sample;
}

std::vector<storage::ProbeSample> PartitionLedger::pending(common::WallMicros from,
                                                           common::WallMicros to) const {
  std::vector<storage::ProbeSample> out;
  for (std::size_t i = 0; i < in_flight_.size(); ++i) {
    const auto& entry = in_flight_[i];
    if (entry.finished || entry.sent.wall < from || entry.sent.wall > to) continue;
    out.push_back(sampleOf(base_seq_ + static_cast<std::int64_t>(i), entry));
  }
  return out;
}

void PartitionLedger::popFinished() {
  while (!in_flight_.empty() && in_flight_.front().finished) {
    in_flight_.pop_front();
    ++base_seq_;
  }
  if (in_flight_.empty()) base_seq_ = next_seq_;
}

void PartitionLedger::noteGap(storage::GapKind kind, std::optional<common::Instant>& last,
                              std::int64_t& last_seq, std::int64_t& longest,
                              GapHistogram& histogram, std::int64_t seq, common::Instant at,
                              LedgerOutput& out) {
  if (last && at.mono < last->mono) return;  // an earlier event served late; not a new gap
  if (last) {
    const std::int64_t gap = at.mono - last->mono;
    if (gap > longest) longest = gap;
    histogram.add(gap);
    if (gap > options_.gap_threshold_us) {
      storage::Gap g;
      g.cluster = cluster_;
      g.topic = topic_;
      g.partition = partition_;
      g.kind = kind;
      g.start_us = last->wall;
      g.end_us = at.wall;
      g.duration_us = gap;
      g.seq_before = last_seq;
      g.seq_after = seq;
      out.gaps.push_back(std::move(g));
      ++counters_.gaps;
    }
  }
  last = at;
  last_seq = seq;
}

std::optional<PartitionLedger::Unread> PartitionLedger::unread(common::Instant now,
                                                               std::int64_t after_us) const {
  if (last_receive_ && now.mono - last_receive_->mono < after_us) return std::nullopt;
  for (const auto& entry : in_flight_) {
    if (entry.finished || !entry.report || entry.error != 0 || !entry.offset ||
        entry.receive_wall) {
      continue;
    }
    // The oldest acked message not read: reading resumes at it, and it decides.
    const auto ago = now.mono - entry.report->mono;
    if (ago < after_us) return std::nullopt;
    return Unread{*entry.offset, ago};
  }
  return std::nullopt;
}

PartitionStatus PartitionLedger::status() {
  PartitionStatus s;
  s.topic = topic_;
  s.partition = partition_;
  s.counters = counters_;
  s.last_ack = last_ack_;
  s.last_receive = last_receive_;
  s.longest_ack_gap_us = longest_ack_gap_us_;
  s.longest_receive_gap_us = longest_receive_gap_us_;
  s.ack_intervals = ack_intervals_;
  s.receive_intervals = receive_intervals_;
  s.ack_latency = ack_latency_;
  s.receive_latency = receive_latency_;
  s.in_flight = in_flight_.size();
  s.outstanding = static_cast<std::size_t>(outstanding_);
  if (const InFlight* oldest = oldestOutstanding()) s.oldest_outstanding_sent = oldest->sent;
  s.holding_since = hold_since_;
  s.refusing_since = refused_since_;
  return s;
}

}  // namespace kfaild::probe
