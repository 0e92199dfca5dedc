// A drill's analysis when its observation ended on observe_timeout_s, when kfaild's wall clock
// stepped inside the window, and for a partition the fault leaves below min.insync.replicas, on
// synthetic probe streams.

#include <catch2/catch.hpp>

#include "server/analysis/drill_analysis.h"

namespace observation_end_test {

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000;
constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kInterval = 20'000;

storage::ProbeSample sample(std::int64_t seq, std::int64_t send, std::int64_t ack) {
  storage::ProbeSample s;
  s.topic = "orders";
  s.partition = 0;
  s.seq = seq;
  s.send_us = send;
  s.ack_us = ack;
  s.receive_us = ack + 1'000;
  return s;
}

// orders-0 acks steadily for 5 s, then nothing from the fault until `resume`, when every message
// held since the fault is acked at once, then steadily again until `until`.
AnalysisInput stalledUntil(std::int64_t resume, std::int64_t until) {
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.interval_us = kInterval;
  in.partitions = {{"orders", 0, 2, {2, 1}, {2, 1}}};
  std::int64_t seq = 0;
  for (std::int64_t t = in.window_start_us; t < kT0; t += kInterval)
    in.samples.push_back(sample(seq++, t, t + 3'000));
  for (std::int64_t t = kT0; t < resume; t += kInterval)
    in.samples.push_back(sample(seq++, t, resume));
  for (std::int64_t t = resume; t < until; t += kInterval)
    in.samples.push_back(sample(seq++, t, t + 3'000));
  return in;
}

}  // namespace

TEST_CASE(
    "a gap still open when observation timed out stays open although an ack after the node's "
    "restart closed it",
    "[unit]") {
  // Observation gave up after 120 s; kfaild then brought the node back and the partition acked
  // again 5 s later: that ack is kfaild's doing, not the end of a stall the cluster ended.
  auto in = stalledUntil(kT0 + 125 * kSecond, kT0 + 130 * kSecond);
  in.observe_end_us = kT0 + 120 * kSecond;
  in.recovered_us = kT0 + 124 * kSecond;
  in.window_end_us = in.observe_end_us;
  in.observe_timed_out = true;
  const auto a = analyse(in);
  const auto& p = a.partitions[0];
  CHECK(p.ack.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p.ack.stall);
  CHECK_FALSE(p.ack.ended_by);
  REQUIRE(p.ack.longest_gap);
  CHECK(p.ack.longest_gap->open);
  CHECK(p.ack.longest_gap->end_us == in.observe_end_us);
  CHECK_THAT(p.ack.reason, Catch::StartsWith("still stalled when observation ended") &&
                               Catch::Contains("on observe_timeout_s") &&
                               Catch::Contains("after kfaild brought the node back"));
  CHECK(p.receive.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p.phases.resume_us);
  CHECK_FALSE(a.conclusive);

  SECTION(
      "the same stream with an observation that ended on the partition's resumption is a stall") {
    in.observe_timed_out = false;
    const auto b = analyse(in);
    CHECK(b.partitions[0].ack.outcome == Outcome::kStall);
    CHECK(b.partitions[0].ack.ended_by);
  }
}

TEST_CASE("a clear stall in a window the wall clock stepped in is inconclusive with the reason",
          "[unit]") {
  auto in = stalledUntil(kT0 + 8 * kSecond, kT0 + 15 * kSecond);
  in.observe_end_us = kT0 + 15 * kSecond;
  in.window_end_us = in.observe_end_us;
  REQUIRE(analyse(in).partitions[0].ack.outcome == Outcome::kStall);
  in.clock_steps = 1;
  const auto a = analyse(in);
  const auto& p = a.partitions[0];
  for (const auto* k : {&p.ack, &p.receive}) {
    CHECK(k->outcome == Outcome::kInconclusive);
    CHECK_FALSE(k->stall);
    CHECK(
        k->reason ==
        "kfaild's wall clock stepped 1 time(s) during the run: times across a step do not line up");
  }
  CHECK_FALSE(a.conclusive);
}

TEST_CASE("a partition whose ISR without the target is below min.insync.replicas has its own role",
          "[unit]") {
  CHECK(roleOf(1, {"orders", 0, 1, {1, 2}, {1, 2}, 2}) == Role::kBelowMinIsr);
  CHECK(roleOf(1, {"orders", 0, 2, {2, 1}, {2, 1}, 2}) == Role::kBelowMinIsr);
  CHECK(roleOf(1, {"orders", 0, 1, {1, 2, 3}, {1, 2, 3}, 2}) == Role::kLeader);
  CHECK(roleOf(1, {"orders", 0, 2, {2, 1}, {2}, 2}) ==
        Role::kFollowerOutOfIsr);  // not in the ISR: nothing changes
  CHECK(roleOf(1, {"orders", 0, 1, {1, 2}, {1, 2}}) == Role::kLeader);  // min.insync unknown
  CHECK(roleOf(1, {"single", 0, 1, {1}, {1}, 1}) == Role::kSoleReplica);
  CHECK(std::string(toString(Role::kBelowMinIsr)) == "below_min_isr");
}

TEST_CASE(
    "a partition below min.insync.replicas is observed until the node is back, like a sole replica",
    "[unit]") {
  // Writes fail from the fault until the node is back at +20 s; the first ack comes at +21 s,
  // after observation of the other partitions ended at +7 s.
  auto in = stalledUntil(kT0 + 21 * kSecond, kT0 + 25 * kSecond);
  in.partitions = {{"orders", 0, 2, {2, 1}, {2, 1}, 2}};
  in.observe_end_us = kT0 + 7 * kSecond;
  in.recovered_us = kT0 + 20 * kSecond;
  in.window_end_us = kT0 + 25 * kSecond;
  const auto a = analyse(in);
  const auto& p = a.partitions[0];
  CHECK(p.role == Role::kBelowMinIsr);
  CHECK(p.ack.outcome == Outcome::kStall);
  REQUIRE(p.ack.stall);
  CHECK(p.ack.stall->end_us == kT0 + 21 * kSecond);
  CHECK(p.phases.node_back_us == 20 * kSecond);
  CHECK(p.phases.resume_us == kSecond);
  CHECK(toJson(a)["partitions"][0]["role"] == "below_min_isr");
}

}  // namespace observation_end_test
