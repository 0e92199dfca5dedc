#include "server/probe/partition_ledger.h"

#include <catch2/catch.hpp>
#include <vector>

namespace partition_ledger_test {

using namespace kfaild::probe;
using kfaild::common::Instant;
using kfaild::storage::GapKind;

namespace {

struct Harness {
  LedgerOptions options = [] {
    LedgerOptions o;
    o.gap_threshold_us = 100'000;
    o.loss_timeout_us = 10'000'000;
    o.receive_window = 1024;
    return o;
  }();
  PartitionLedger ledger{7, "orders", 0, options};
  Instant now{1'700'000'000'000'000, 5'000'000};
  LedgerOutput out;

  void advance(std::int64_t us) {
    now.wall += us;
    now.mono += us;
  }
  std::int64_t send() { return ledger.beginSend(now, out); }
  void ack(std::int64_t seq) { ledger.deliveryReport(seq, now, 0, 1000 + seq, out); }
  void receive(std::int64_t seq) { ledger.received(seq, now, out); }
};

}  // namespace

TEST_CASE("steady acks every 20 ms record samples and no gap", "[unit][probe]") {
  Harness h;
  for (int i = 0; i < 50; ++i) {
    const auto seq = h.send();
    h.advance(3'000);
    h.ack(seq);
    h.advance(1'000);
    h.receive(seq);
    h.advance(16'000);
  }
  CHECK(h.out.gaps.empty());
  REQUIRE(h.out.samples.size() == 50);
  const auto& s = h.out.samples[10];
  CHECK(s.seq == 10);
  CHECK(s.cluster == 7);
  CHECK(*s.ack_us - s.send_us == 3'000);
  CHECK(*s.receive_us - s.send_us == 4'000);
  CHECK(*s.offset == 1010);
  const auto st = h.ledger.status();
  CHECK(st.counters.acked == 50);
  CHECK(st.counters.received == 50);
  CHECK(st.in_flight == 0);
  CHECK(st.longest_ack_gap_us == 20'000);
}

TEST_CASE("a stall produces one ack gap and one receive gap spanning it", "[unit][probe]") {
  Harness h;
  auto seq = h.send();
  h.ack(seq);
  h.receive(seq);
  const auto stall_start = h.now;
  // 9 s without acks while sends keep queueing every 20 ms.
  std::vector<std::int64_t> queued;
  for (int i = 0; i < 450; ++i) {
    h.advance(20'000);
    queued.push_back(h.send());
  }
  for (auto s : queued) h.ack(s);  // the backlog is acked in one burst
  for (auto s : queued) h.receive(s);
  REQUIRE(h.out.gaps.size() == 2);
  const auto& ack_gap = h.out.gaps[0];
  CHECK(ack_gap.kind == GapKind::kAck);
  CHECK(ack_gap.duration_us == 9'000'000);
  CHECK(ack_gap.start_us == stall_start.wall);
  CHECK(ack_gap.end_us == h.now.wall);
  CHECK(ack_gap.seq_before == 0);
  CHECK(ack_gap.seq_after == 1);
  CHECK(h.out.gaps[1].kind == GapKind::kReceive);
  CHECK(h.out.gaps[1].duration_us == 9'000'000);
  CHECK(h.ledger.status().counters.gaps == 2);
}

TEST_CASE("a wall-clock step neither fakes nor hides a gap", "[unit][probe]") {
  Harness h;
  auto a = h.send();
  h.ack(a);
  h.advance(20'000);
  h.now.wall += 30'000'000;  // NTP stepped the wall clock forward by 30 s
  auto b = h.send();
  h.ack(b);
  CHECK(h.out.gaps.empty());
}

TEST_CASE("a message acked but never received is counted lost after the loss timeout",
          "[unit][probe]") {
  Harness h;
  auto a = h.send();
  h.ack(a);
  auto b = h.send();
  h.ack(b);
  h.receive(b);
  h.advance(9'000'000);
  h.ledger.expire(h.now, h.out);
  CHECK(h.ledger.status().counters.lost == 0);
  h.advance(2'000'000);
  h.ledger.expire(h.now, h.out);
  CHECK(h.ledger.status().counters.lost == 1);
  REQUIRE(h.out.samples.size() == 2);
  // The lost message's sample has an ack and no receive time.
  const auto& lost = h.out.samples[1];
  CHECK(lost.seq == a);
  CHECK(lost.ack_us);
  CHECK_FALSE(lost.receive_us);
  CHECK(h.ledger.status().in_flight == 0);
  // If it shows up after all, it is late, not a second loss or a duplicate.
  h.receive(a);
  CHECK(h.ledger.status().counters.late == 1);
  CHECK(h.ledger.status().counters.duplicated == 0);
}

TEST_CASE("duplicates and reordering are counted by sequence", "[unit][probe]") {
  Harness h;
  std::vector<std::int64_t> seqs;
  for (int i = 0; i < 5; ++i) seqs.push_back(h.send());
  for (auto s : seqs) h.ack(s);
  h.receive(0);
  h.receive(2);
  h.receive(1);  // after 2: reordered
  h.receive(2);  // again: duplicate
  h.receive(3);
  h.receive(4);
  const auto c = h.ledger.status().counters;
  CHECK(c.received == 5);
  CHECK(c.reordered == 1);
  CHECK(c.duplicated == 1);
  CHECK(c.lost == 0);
}

TEST_CASE("a receive that arrives before its delivery report completes the sample",
          "[unit][probe]") {
  Harness h;
  auto s = h.send();
  h.advance(2'000);
  h.receive(s);
  CHECK(h.out.samples.empty());
  h.advance(500);
  h.ack(s);
  REQUIRE(h.out.samples.size() == 1);
  CHECK(*h.out.samples[0].receive_us < *h.out.samples[0].ack_us);
}

TEST_CASE("failed sends are recorded with their error and do not count as acks", "[unit][probe]") {
  Harness h;
  auto a = h.send();
  h.ack(a);
  h.advance(50'000);
  auto b = h.send();
  h.ledger.deliveryReport(b, h.now, -192 /* message timed out */, std::nullopt, h.out);
  h.advance(500'000);
  auto c = h.send();
  h.ack(c);
  const auto st = h.ledger.status();
  CHECK(st.counters.send_failed == 1);
  CHECK(st.counters.acked == 2);
  REQUIRE(h.out.samples.size() == 1);
  CHECK(h.out.samples[0].ack_error == -192);
  // The ack gap runs from a's ack to c's: the failed send does not break it.
  REQUIRE(h.out.gaps.size() == 1);
  CHECK(h.out.gaps[0].duration_us == 550'000);
}

TEST_CASE("messages from sequences this run never sent are ignored", "[unit][probe]") {
  Harness h;
  h.send();
  h.receive(42);
  h.receive(-1);
  CHECK(h.ledger.status().counters.received == 0);
}

TEST_CASE("duplicates, reorders and losses are reported as anomalies with their sequence",
          "[unit][probe]") {
  Harness h;
  for (int i = 0; i < 3; ++i) h.ack(h.send());
  h.receive(1);
  h.receive(0);  // reordered
  h.receive(0);  // duplicate
  h.advance(11'000'000);
  h.ledger.expire(h.now, h.out);  // 2 was never received: lost
  REQUIRE(h.out.anomalies.size() == 3);
  CHECK(h.out.anomalies[0].kind == "reordered");
  CHECK(h.out.anomalies[0].seq == 0);
  CHECK(h.out.anomalies[1].kind == "duplicate");
  CHECK(h.out.anomalies[2].kind == "lost");
  CHECK(h.out.anomalies[2].seq == 2);
  CHECK(h.out.anomalies[2].topic == "orders");
}

TEST_CASE("interval histogram buckets: each interval counted once, in the first bucket it fits",
          "[unit][probe]") {
  kfaild::probe::GapHistogram h;
  for (const std::int64_t us : {20'000, 25'000, 25'001, 9'400'000, 45'000'000}) h.add(us);
  CHECK(h.counts[0] == 2);   // ≤ 25 ms: the bound itself belongs to its bucket
  CHECK(h.counts[1] == 1);   // (25, 50] ms
  CHECK(h.counts[8] == 1);   // (5, 10] s: the article's stall
  CHECK(h.counts[10] == 1);  // above 30 s
  CHECK(h.count == 5);
  CHECK(h.sum_us == 20'000 + 25'000 + 25'001 + 9'400'000 + 45'000'000);
}

TEST_CASE("ack and end-to-end latencies are histogrammed per message, failed sends left out",
          "[unit][probe]") {
  Harness h;
  const auto quick = h.send();
  h.advance(3'000);
  h.ack(quick);  // 3 ms: (2.5, 5] ms
  h.advance(1'000);
  h.receive(quick);  // 4 ms after its send
  const auto slow = h.send();
  h.advance(9'400'000);
  h.receive(slow);  // read back before its delivery report was served
  h.advance(100'000);
  h.ack(slow);  // 9.5 s: (5, 10] s
  const auto failed = h.send();
  h.advance(1'000);
  h.ledger.deliveryReport(failed, h.now, -1, std::nullopt, h.out);

  const auto st = h.ledger.status();
  CHECK(st.ack_latency.count == 2);
  CHECK(st.ack_latency.sum_us == 3'000 + 9'500'000);
  CHECK(st.ack_latency.counts[2] == 1);
  CHECK(st.ack_latency.counts[12] == 1);
  CHECK(st.receive_latency.count == 2);
  CHECK(st.receive_latency.sum_us == 4'000 + 9'400'000);
  CHECK(st.receive_latency.counts[2] == 1);
  CHECK(st.receive_latency.counts[12] == 1);
}

namespace {

// The sender's decision for one tick, as ProbeRunner::sendTick makes it.
std::optional<std::int64_t> tick(Harness& h) {
  if (const auto hold = h.ledger.holdReason(h.now); hold != HoldReason::kNone) {
    h.ledger.holdTick(h.now, hold);
    return std::nullopt;
  }
  return h.send();
}

}  // namespace

TEST_CASE("during a long stall the probe holds back at the age bound and keeps what is outstanding",
          "[unit][probe]") {
  Harness h;  // defaults: at most 100 outstanding, none older than 2 s
  auto first = h.send();
  h.ack(first);
  h.receive(first);
  std::vector<std::int64_t> sent;
  for (int i = 0; i < 450; ++i) {  // 9 s of ticks without an ack
    h.advance(20'000);
    if (auto seq = tick(h)) sent.push_back(*seq);
  }
  // About 2 s worth were sent (the oldest then turned 2 s old), the rest of the ticks held.
  CHECK(sent.size() >= 99);
  CHECK(sent.size() <= 101);
  auto st = h.ledger.status();
  CHECK(st.counters.held_ticks == 450 - sent.size());
  CHECK(st.outstanding == sent.size());
  REQUIRE(st.holding_since);
  REQUIRE(st.oldest_outstanding_sent);
  CHECK(h.now.mono - st.oldest_outstanding_sent->mono == 8'980'000);
  // The cluster answers: the outstanding messages end the gap, the probe sends again, and the
  // hold is reported as one stretch with its ticks.
  for (auto s : sent) h.ack(s);
  CHECK(h.ledger.holdReason(h.now) == HoldReason::kNone);
  h.advance(20'000);
  REQUIRE(tick(h));
  REQUIRE(h.out.stretches.size() == 1);
  const auto& hold = h.out.stretches[0];
  CHECK(hold.kind == "held_back");
  CHECK(hold.reason == "outstanding_age");
  CHECK(hold.ticks == static_cast<std::int64_t>(450 - sent.size()));
  CHECK(hold.end == h.now.wall);
  CHECK_FALSE(h.ledger.status().holding_since);
  // The ack gap is the cluster's: 9 s, ended by the first outstanding message.
  REQUIRE_FALSE(h.out.gaps.empty());
  CHECK(h.out.gaps[0].duration_us == 9'000'000);
  CHECK(h.out.gaps[0].seq_after == sent.front());
}

TEST_CASE("the probe holds back at the count bound before the age bound when sends are fast",
          "[unit][probe]") {
  Harness h;
  h.options.max_outstanding = 5;
  PartitionLedger ledger{7, "orders", 0, h.options};
  int sent = 0;
  for (int i = 0; i < 20; ++i) {
    if (ledger.holdReason(h.now) == HoldReason::kNone) {
      ledger.beginSend(h.now, h.out);
      ++sent;
    } else {
      CHECK(ledger.holdReason(h.now) == HoldReason::kOutstandingCount);
      ledger.holdTick(h.now, HoldReason::kOutstandingCount);
    }
    h.advance(1'000);
  }
  CHECK(sent == 5);
  CHECK(ledger.status().counters.held_ticks == 15);
}

TEST_CASE("a stretch with nothing outstanding longer than the tolerance is reported as idle",
          "[unit][probe]") {
  Harness h;  // idle tolerance 40 ms by default
  auto a = h.send();
  h.advance(3'000);
  h.ack(a);
  h.advance(1'000);
  h.receive(a);
  h.advance(16'000);
  auto b = h.send();  // 16-19 ms idle: the probe's own spacing, not reported
  CHECK(h.out.stretches.empty());
  h.advance(3'000);
  h.ack(b);
  h.advance(1'000);
  h.receive(b);
  h.advance(500'000);  // the sender was late by half a second
  h.send();
  REQUIRE(h.out.stretches.size() == 2);
  CHECK(h.out.stretches[0].kind == "idle");
  CHECK(h.out.stretches[0].gap_kind == GapKind::kAck);
  CHECK(h.out.stretches[0].end - h.out.stretches[0].start == 501'000);
  CHECK(h.out.stretches[1].gap_kind == GapKind::kReceive);
  CHECK(h.out.stretches[1].end - h.out.stretches[1].start == 500'000);
}

TEST_CASE(
    "a failed send leaves nothing to wait for and the next idle stretch counts from its report",
    "[unit][probe]") {
  Harness h;
  auto a = h.send();
  h.advance(10'000);
  h.ledger.deliveryReport(a, h.now, -192, std::nullopt, h.out);  // message timed out
  h.advance(100'000);
  h.send();
  REQUIRE(h.out.stretches.size() == 2);
  CHECK(h.out.stretches[0].end - h.out.stretches[0].start == 100'000);
  CHECK(h.ledger.status().counters.send_failed == 1);
}

TEST_CASE("pending lists the window's messages whose fate is open and nothing finished",
          "[unit][probe]") {
  Harness h;
  const auto start = h.now.wall;
  auto a = h.send();
  h.advance(20'000);
  auto b = h.send();
  h.advance(20'000);
  auto c = h.send();
  h.ack(a);
  h.receive(a);  // finished
  h.ack(b);      // acked, awaiting its receipt
  const auto pending = h.ledger.pending(start, h.now.wall);
  REQUIRE(pending.size() == 2);
  CHECK(pending[0].seq == b);
  CHECK(pending[0].ack_us);
  CHECK_FALSE(pending[0].receive_us);
  CHECK(pending[1].seq == c);
  CHECK_FALSE(pending[1].ack_us);
  CHECK(h.ledger.pending(start, start + 10'000).size() == 0);
}

TEST_CASE(
    "duplicate detection remembers exactly the last receive_window sequences, also when "
    "the window is not a multiple of 64 and the ring wraps",
    "[unit][probe]") {
  Harness h;
  h.options.receive_window = 100;
  PartitionLedger ledger{7, "orders", 0, h.options};
  auto send_ack_receive = [&] {
    const auto seq = ledger.beginSend(h.now, h.out);
    ledger.deliveryReport(seq, h.now, 0, seq, h.out);
    ledger.received(seq, h.now, h.out);
    h.advance(20'000);
    return seq;
  };
  // Three and a half times round the ring: each slot is cleared for its new sequence.
  for (int i = 0; i < 350; ++i) send_ack_receive();
  CHECK(ledger.status().counters.received == 350);
  CHECK(ledger.status().counters.duplicated == 0);
  // Inside the window, every redelivery is seen as one, whichever bit of which word it is.
  for (std::int64_t seq : {250, 263, 264, 299, 349}) ledger.received(seq, h.now, h.out);
  CHECK(ledger.status().counters.duplicated == 5);
  CHECK(ledger.status().counters.received == 350);
  // A sequence sent but not yet received is not mistaken for a duplicate after the ring wrapped.
  const auto fresh = ledger.beginSend(h.now, h.out);
  ledger.received(fresh, h.now, h.out);
  CHECK(ledger.status().counters.received == 351);
  CHECK(ledger.status().counters.duplicated == 5);
}

TEST_CASE("sends refused tick after tick are one refused stretch, not a string of short idles",
          "[unit][probe]") {
  Harness h;
  const auto a = h.send();
  h.advance(3'000);
  h.ack(a);
  h.receive(a);
  h.advance(17'000);
  // 3 s of ticks, each refused by the client at once (its queue full): nothing is ever
  // outstanding for more than one tick, so no idle stretch exceeds the tolerance.
  const auto refused_from = h.now;
  for (int i = 0; i < 150; ++i) {
    const auto seq = h.send();
    h.ledger.sendRefused(seq, h.now, -184, h.out);
    h.advance(20'000);
  }
  CHECK(h.ledger.refusing());
  CHECK(h.ledger.status().refusing_since->wall == refused_from.wall);
  for (const auto& s : h.out.stretches) CHECK(s.kind != "refused");
  const auto accepted_at = h.now;
  const auto b = h.send();
  h.ledger.sendAccepted(accepted_at, h.out);
  h.advance(3'000);
  h.ack(b);

  std::vector<ProbeStretch> refused;
  for (const auto& s : h.out.stretches) {
    if (s.kind == "refused") refused.push_back(s);
    if (s.kind == "idle") CHECK(s.end - s.start <= 40'000);
  }
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].start == refused_from.wall);
  CHECK(refused[0].end == accepted_at.wall);
  CHECK(refused[0].ticks == 150);
  CHECK(refused[0].error == -184);
  CHECK_FALSE(h.ledger.refusing());
  CHECK_FALSE(h.ledger.status().refusing_since);
  CHECK(h.ledger.status().counters.send_failed == 150);
}

TEST_CASE("an accepted send with no refusal before it reports no refused stretch",
          "[unit][probe]") {
  Harness h;
  const auto a = h.send();
  h.ledger.sendAccepted(h.now, h.out);
  h.advance(3'000);
  h.ack(a);
  CHECK(h.out.stretches.empty());
}

TEST_CASE("messages of a producer that is gone fail at once, and the acked ones are untouched",
          "[unit][probe]") {
  Harness h;
  const auto a = h.send();
  const auto b = h.send();
  const auto c = h.send();
  h.advance(3'000);
  h.ack(b);
  h.ledger.failOutstanding(h.now, -150, h.out);
  const auto status = h.ledger.status();
  CHECK(status.outstanding == 0);
  CHECK(status.counters.send_failed == 2);
  CHECK(status.counters.acked == 1);
  std::vector<std::int64_t> failed;
  for (const auto& s : h.out.samples) {
    if (s.ack_error == -150) failed.push_back(s.seq);
  }
  CHECK(failed == std::vector<std::int64_t>{a, c});
  // A report of the old producer that comes after all is ignored.
  h.ledger.deliveryReport(a, h.now, 0, 5, h.out);
  CHECK(h.ledger.status().counters.acked == 1);
}

TEST_CASE(
    "a partition whose acked messages go unread while nothing is read names the oldest of "
    "them once the wait is over, and not while reads go on or the acks are recent",
    "[unit][probe]") {
  constexpr std::int64_t kWait = 3'000'000;
  Harness h;
  // Read back as they are acked, for a second.
  for (int i = 0; i < 50; ++i) {
    const auto seq = h.send();
    h.ack(seq);
    h.receive(seq);
    h.advance(20'000);
  }
  CHECK_FALSE(h.ledger.unread(h.now, kWait));
  // Then acked and never read: seq 50 (offset 1050) onward.
  std::int64_t first_unread = -1;
  for (int i = 0; i < 200; ++i) {
    const auto seq = h.send();
    if (first_unread < 0) first_unread = seq;
    h.ack(seq);
    h.advance(20'000);
    // Not before the last read is the wait old: it was at 5.98 s on the monotonic clock.
    if (h.now.mono < 8'900'000) CHECK_FALSE(h.ledger.unread(h.now, kWait));
  }
  const auto stuck = h.ledger.unread(h.now, kWait);
  REQUIRE(stuck);
  CHECK(stuck->offset == 1000 + first_unread);
  CHECK(stuck->acked_ago_us == 4'000'000);

  // One read, of the newest: the consumer reads, so it is not stuck, whatever is still unread.
  const auto newest = h.send();
  h.ack(newest);
  h.receive(newest);
  CHECK_FALSE(h.ledger.unread(h.now, kWait));
  h.advance(kWait);
  // Nothing read for the wait again, the oldest unread is still the same message.
  const auto again = h.ledger.unread(h.now, kWait);
  REQUIRE(again);
  CHECK(again->offset == 1000 + first_unread);

  // Once the consumer reads them all, nothing is unread.
  for (auto seq = first_unread; seq < newest; ++seq) h.receive(seq);
  CHECK_FALSE(h.ledger.unread(h.now, kWait));
}

TEST_CASE("messages acked recently, or not acked at all, are not the consumer's to read yet",
          "[unit][probe]") {
  Harness h;
  // Sent and never acked (the cluster stalls): nothing for the consumer to read.
  for (int i = 0; i < 100; ++i) {
    h.send();
    h.advance(50'000);
  }
  CHECK_FALSE(h.ledger.unread(h.now, 3'000'000));
  // Failed sends are not read either.
  const auto failed = h.send();
  h.ledger.deliveryReport(failed, h.now, -185, std::nullopt, h.out);
  h.advance(4'000'000);
  CHECK_FALSE(h.ledger.unread(h.now, 3'000'000));
}

}  // namespace partition_ledger_test
