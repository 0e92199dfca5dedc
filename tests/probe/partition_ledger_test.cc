#include "server/probe/partition_ledger.h"

#include <catch2/catch.hpp>

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
  std::int64_t send() { return ledger.beginSend(now); }
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

TEST_CASE("a message acked but never received is counted lost after the loss timeout", "[unit][probe]") {
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

TEST_CASE("a receive that arrives before its delivery report completes the sample", "[unit][probe]") {
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

TEST_CASE("duplicates, reorders and losses are reported as anomalies with their sequence", "[unit][probe]") {
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
