// Gaps the probe made itself: sends the client refused locally, and a producer recreated after a
// fatal error. Neither is the cluster's, so neither may be reported as a stall.

#include <catch2/catch.hpp>
#include <string>

#include "server/analysis/drill_analysis.h"

namespace probe_own_gaps_test {

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000;
constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kInterval = 20'000;
constexpr std::int32_t kQueueFull = -184;  // librdkafka's RD_KAFKA_RESP_ERR__QUEUE_FULL
constexpr std::int32_t kFatal = -150;      // RD_KAFKA_RESP_ERR__FATAL

storage::ProbeSample sample(std::int64_t seq, std::int64_t send, std::int32_t error = 0) {
  storage::ProbeSample s;
  s.topic = "orders";
  s.partition = 0;
  s.seq = seq;
  s.send_us = send;
  s.ack_error = error;
  if (error == 0) {
    s.ack_us = send + 3'000;
    s.receive_us = send + 4'000;
  } else {
    s.ack_us = send;  // refused at once
  }
  return s;
}

storage::Event probeEvent(std::int64_t t, const char* kind, const std::string& detail) {
  storage::Event e;
  e.t_us = t;
  e.source = "probe";
  e.kind = kind;
  e.topic = "orders";
  e.partition = 0;
  e.detail = detail;
  return e;
}

// orders-0 led by broker 2 (the target, 1, is a follower): steady from 5 s before the fault,
// then every send from 1 s after the fault refused by the client for 3 s with `error`, then
// steady again until observation ends 10 s after the fault.
AnalysisInput refusedAfterFault(std::int32_t error) {
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 10 * kSecond;
  in.window_end_us = in.observe_end_us;
  in.partitions = {{"orders", 0, 2, {2, 3, 1}, {2, 3, 1}}};
  std::int64_t seq = 0;
  for (std::int64_t t = in.window_start_us; t < in.observe_end_us; t += kInterval) {
    const bool refused = t >= kT0 + kSecond && t < kT0 + 4 * kSecond;
    in.samples.push_back(sample(seq++, t, refused ? error : 0));
  }
  return in;
}

}  // namespace

TEST_CASE("sends the client refused for most of a gap make it inconclusive, not a stall",
          "[unit]") {
  auto in = refusedAfterFault(kQueueFull);
  // Without knowing of the refusals, the same stream reads as a 3 s stall of the cluster (what
  // the analysis concluded before refused sends were recorded).
  const auto blind = analyse(in);
  REQUIRE(blind.partitions[0].ack.outcome == Outcome::kStall);

  in.events.push_back(probeEvent(kT0 + kSecond, "refused",
                                 R"({"end_us":)" + std::to_string(kT0 + 4 * kSecond) +
                                     R"(,"sends":150,"error":"_QUEUE_FULL"})"));
  probeRefusalsFromEvents(in.events, in.refusals);
  REQUIRE(in.refusals.size() == 1);
  CHECK(in.refusals[0].sends == 150);
  CHECK(in.refusals[0].error == "_QUEUE_FULL");

  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.ack.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p0.ack.stall);
  CHECK(p0.ack.probe_refused_us >= 3 * kSecond - kInterval);
  CHECK(p0.ack.reason.find("refused the probe's sends") != std::string::npos);
  CHECK(p0.ack.reason.find("_QUEUE_FULL") != std::string::npos);
  CHECK(p0.receive.outcome == Outcome::kInconclusive);
  CHECK(p0.failed == 150);
  CHECK_FALSE(a.conclusive);
  CHECK(toJson(a)["partitions"][0]["ack"]["probe_refused_us"] == p0.ack.probe_refused_us);
}

TEST_CASE("a refusal still open when analysed counts up to the end of the gap", "[unit]") {
  auto in = refusedAfterFault(kQueueFull);
  in.refusals.push_back({"orders", 0, kT0 + kSecond, std::nullopt, 0, "open"});
  const auto a = analyse(in);
  CHECK(a.partitions[0].ack.outcome == Outcome::kInconclusive);
  CHECK(a.partitions[0].ack.probe_refused_us >= 3 * kSecond - kInterval);
}

TEST_CASE("a refusal of one tick inside a real stall leaves it a stall", "[unit]") {
  // The probe's own spacing: one refused send is within the tolerance of two intervals.
  auto in = refusedAfterFault(kQueueFull);
  in.refusals.push_back(
      {"orders", 0, kT0 + 2 * kSecond, kT0 + 2 * kSecond + kInterval, 1, "_QUEUE_FULL"});
  const auto a = analyse(in);
  CHECK(a.partitions[0].ack.outcome == Outcome::kStall);
  CHECK(a.partitions[0].ack.probe_refused_us == kInterval);
}

TEST_CASE("a gap that spans a recreation of the probe's producer is attributed to it", "[unit]") {
  auto in = refusedAfterFault(kFatal);
  in.events.push_back(probeEvent(kT0 + 4 * kSecond - 5'000, "producer_recreated",
                                 R"({"error":"Local: Fatal error: test_fatal_error: boom"})"));
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.ack.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p0.ack.stall);
  REQUIRE(p0.ack.probe_cause);
  CHECK(p0.ack.probe_cause->at_us == kT0 + 4 * kSecond - 5'000);
  CHECK(p0.ack.probe_cause->error == "Local: Fatal error: test_fatal_error: boom");
  CHECK(p0.ack.reason.find("producer was recreated") != std::string::npos);
  CHECK(p0.ack.reason.find("not the cluster's") != std::string::npos);
  // ended_by still names the ack that ended it: the first of the new producer.
  REQUIRE(p0.ack.ended_by);
  CHECK(p0.receive.probe_cause);
  const auto json = toJson(a)["partitions"][0]["ack"]["probe_cause"];
  CHECK(json["kind"] == "producer_recreated");
  CHECK(json["at_us"] == kT0 + 4 * kSecond - 5'000);
}

TEST_CASE("a producer recreation outside a partition's gap does not touch its figure", "[unit]") {
  auto in = refusedAfterFault(kQueueFull);
  in.events.push_back(probeEvent(kT0 - 3 * kSecond, "producer_recreated", R"({"error":"x"})"));
  const auto a = analyse(in);
  CHECK(a.partitions[0].ack.outcome == Outcome::kStall);
  CHECK_FALSE(a.partitions[0].ack.probe_cause);
}

namespace {

// orders-0 acked every 20 ms throughout, but its consumer reads nothing sent from 1 s after the
// fault until kfaild restarts its fetch 11 s after the fault; then it reads the backlog at once.
AnalysisInput consumerStuckAfterFault(std::int32_t restarted_partition) {
  auto in = refusedAfterFault(0);
  in.observe_end_us = kT0 + 14 * kSecond;
  in.window_end_us = in.observe_end_us;
  in.samples.clear();
  std::int64_t seq = 0;
  for (std::int64_t t = in.window_start_us; t < in.observe_end_us; t += kInterval) {
    auto s = sample(seq++, t);
    if (t >= kT0 + kSecond && t < kT0 + 11 * kSecond) s.receive_us = kT0 + 11 * kSecond + 5'000;
    in.samples.push_back(s);
  }
  auto restart =
      probeEvent(kT0 + 11 * kSecond, "consumer_restarted",
                 R"({"offset":300,"acked_ago_us":10000000,"restart_after_us":10000000})");
  restart.partition = restarted_partition;
  in.events.push_back(restart);
  return in;
}

}  // namespace

TEST_CASE(
    "a receive gap that spans a restart of the consumer's fetch of its partition is the "
    "consumer's, and the acks keep their figure",
    "[unit]") {
  const auto a = analyse(consumerStuckAfterFault(0));
  const auto& p0 = a.partitions[0];
  CHECK(p0.receive.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p0.receive.stall);
  REQUIRE(p0.receive.probe_cause);
  CHECK(p0.receive.probe_cause->kind == kfaild::common::EventKind::kConsumerRestarted);
  CHECK(p0.receive.probe_cause->waited_us == 10 * kSecond);
  CHECK(p0.receive.reason.find("restarted the probe consumer's fetch") != std::string::npos);
  CHECK(p0.receive.reason.find("not the cluster's") != std::string::npos);
  CHECK_FALSE(p0.ack.probe_cause);
  CHECK(p0.ack.outcome != Outcome::kInconclusive);
  CHECK(p0.lost == 0);
  CHECK(toJson(a)["partitions"][0]["receive"]["probe_cause"]["kind"] == "consumer_restarted");

  // The same restart of another partition's fetch says nothing of this one's gap.
  const auto other = analyse(consumerStuckAfterFault(1));
  CHECK_FALSE(other.partitions[0].receive.probe_cause);
  CHECK(other.partitions[0].receive.outcome != Outcome::kNone);
}

TEST_CASE(
    "a recreation of the consumer makes every partition's receive gap across it the consumer's, "
    "and one that "
    "failed changes nothing",
    "[unit]") {
  // Partition 1's fetch was the stuck one; partition 0's gap spans the recreation only.
  auto in = consumerStuckAfterFault(1);
  storage::Event recreated =
      probeEvent(kT0 + 11 * kSecond, "consumer_recreated",
                 R"({"partitions":2,"stuck":1,"in_row":2,"took_us":40000,"error":""})");
  recreated.topic.reset();
  recreated.partition.reset();
  in.events.push_back(recreated);
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.receive.outcome == Outcome::kInconclusive);
  REQUIRE(p0.receive.probe_cause);
  CHECK(p0.receive.probe_cause->kind == kfaild::common::EventKind::kConsumerRecreated);
  CHECK(p0.receive.reason.find("recreated the probe's consumer") != std::string::npos);
  CHECK_FALSE(p0.ack.probe_cause);
  CHECK(toJson(a)["partitions"][0]["receive"]["probe_cause"]["kind"] == "consumer_recreated");

  in.events.back().detail =
      R"({"partitions":0,"stuck":1,"in_row":2,"took_us":40000,"error":"assigning: x"})";
  const auto failed = analyse(in);
  CHECK_FALSE(failed.partitions[0].receive.probe_cause);
  CHECK(failed.partitions[0].receive.outcome != Outcome::kInconclusive);
}

TEST_CASE(
    "a message acked and never read before kfaild restarted the consumer's reading of its "
    "partition is "
    "counted lost apart, and one lost after the restart is the cluster's",
    "[unit]") {
  auto in = consumerStuckAfterFault(0);
  // Two acked messages never read: one before the restart at fault + 11 s, one after it.
  for (auto& s : in.samples) {
    if (s.send_us == kT0 + 2 * kSecond || s.send_us == kT0 + 12 * kSecond) s.receive_us.reset();
  }
  const auto a = analyse(in);
  CHECK(a.partitions[0].lost == 2);
  CHECK(a.partitions[0].lost_consumer_stuck == 1);
  CHECK(toJson(a)["partitions"][0]["lost_consumer_stuck"] == 1);

  // Restarted another partition only: both are this partition's losses.
  auto other = consumerStuckAfterFault(1);
  for (auto& s : other.samples) {
    if (s.send_us == kT0 + 2 * kSecond) s.receive_us.reset();
  }
  const auto b = analyse(other);
  CHECK(b.partitions[0].lost == 1);
  CHECK(b.partitions[0].lost_consumer_stuck == 0);
}

}  // namespace probe_own_gaps_test
