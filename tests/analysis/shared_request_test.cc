#include "server/analysis/shared_request.h"

#include <catch2/catch.hpp>
#include <string>

#include "server/analysis/drill_analysis.h"
#include "server/analysis/verdict.h"

namespace shared_request_test {

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

// The article's topics with broker 2 as the target: orders-0 led by 1 (2 in its ISR), orders-1
// led by 2, orders-2 led by 3 (2 in its ISR), and single-0 on broker 1 alone, which broker 2
// holds no replica of. One message per 20 ms; each partition's stall is what the test says.
constexpr std::int64_t kT0 = 1'700'000'000'000'000;
constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kMs = 1'000;
constexpr std::int64_t kInterval = 20'000;

// What the leader held: everything sent in [from, until) is acked at `until` (received 1 ms
// later); the rest 3 ms after it was sent.
struct Held {
  std::int64_t from = kT0;
  std::int64_t until = kT0;
};

void stream(AnalysisInput& in, const std::string& topic, int partition, Held held) {
  std::int64_t seq = 0;
  for (std::int64_t t = in.window_start_us; t < in.observe_end_us; t += kInterval) {
    storage::ProbeSample s;
    s.topic = topic;
    s.partition = partition;
    s.seq = seq++;
    s.send_us = t;
    s.ack_us = t >= held.from && t < held.until ? held.until : t + 3 * kMs;
    s.receive_us = *s.ack_us + kMs;
    in.samples.push_back(s);
  }
}

// A kill of broker 2, fenced at 8.5 s: orders-0 and orders-2 wait for the ISR shrink, orders-1
// for its new leader; single-0 stalls as `single` says (nullopt: not at all).
AnalysisInput killOfBroker2(std::optional<Held> single, std::int64_t orders0_until) {
  AnalysisInput in;
  in.fault = "kill";
  in.killed = true;
  in.target = 2;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 15 * kSecond;
  in.recovered_us = kT0 + 16 * kSecond;
  in.window_end_us = kT0 + 20 * kSecond;
  in.partitions = {{"orders", 0, 1, {1, 2, 3}, {1, 2, 3}},
                   {"orders", 1, 2, {2, 3, 1}, {2, 3, 1}},
                   {"orders", 2, 3, {3, 1, 2}, {3, 1, 2}},
                   {"single", 0, 1, {1}, {1}}};
  stream(in, "orders", 0, {kT0, orders0_until});
  stream(in, "orders", 1, {kT0, kT0 + 9'400 * kMs});
  stream(in, "orders", 2, {kT0, kT0 + 8'560 * kMs});
  stream(in, "single", 0, single.value_or(Held{}));
  return in;
}

const PartitionResult& partition(const RunAnalysis& a, const std::string& topic, int p) {
  for (const auto& r : a.partitions) {
    if (r.topic == topic && r.partition == p) return r;
  }
  FAIL("no partition " << topic << "-" << p);
  return a.partitions.front();
}

const Check* ackCheckOf(const Verdict& v, const std::string& topic, int p) {
  for (const auto& c : v.checks) {
    if (c.objective == "max_ack_stall_s" && c.topic == topic && c.partition == p) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE(
    "a partition the target does not replicate that stalls with a partition of the same leader "
    "waiting on the target is shared_request, and the cluster's stall is 0",
    "[unit][analysis]") {
  // single's batches rode in orders-0's requests to broker 1: acked in the same answer, 2 ms on.
  const std::int64_t resume = kT0 + 8'550 * kMs;
  const auto in = killOfBroker2(Held{kT0, resume + 2 * kMs}, resume);
  const auto a = analyse(in);

  const auto& single = partition(a, "single", 0);
  CHECK(single.role == Role::kNotAReplica);
  REQUIRE(single.ack.outcome == Outcome::kStall);
  REQUIRE(single.mechanism.has_value());
  const auto& m = *single.mechanism;
  CHECK(m.mechanism == Mechanism::kSharedRequest);
  CHECK(m.explained);
  REQUIRE(m.waited_on.has_value());
  CHECK(m.waited_on->topic == "orders");
  CHECK(m.waited_on->partition == 0);
  CHECK(m.cluster_stall_us == std::optional<std::int64_t>(0));
  CHECK(m.client_stall_us == single.ack.stall->duration_us());
  CHECK(m.expected_us == partition(a, "orders", 0).ack.stall->duration_us());
  CHECK(a.conclusive);
  // Under a kill the others name no mechanism: only shared_request is claimed for any fault.
  CHECK_FALSE(partition(a, "orders", 0).mechanism.has_value());

  const auto json = toJson(a);
  const auto& wire = json["partitions"][3]["mechanism"];
  CHECK(wire["name"] == "shared_request");
  CHECK(wire["waited_on"] == nlohmann::json{{"topic", "orders"}, {"partition", 0}});
  CHECK(wire["cluster_stall_us"] == 0);
  CHECK(wire["client_stall_us"] == m.client_stall_us);
  // The other mechanisms' JSON is as it was: no shared_request fields.
  CHECK_FALSE(toJson(MechanismResult{}).contains("waited_on"));

  // The verdict judges the cluster's figure and states the client's.
  Objectives o;
  o.stall.max_ack_stall_s = 5.0;
  const auto v = evaluate({a}, o, "kill", {}, RegressionPolicy{});
  const auto* check = ackCheckOf(v, "single", 0);
  REQUIRE(check != nullptr);
  CHECK(check->status == CheckStatus::kPass);
  CHECK(check->measured == Approx(0.0));
  CHECK_THAT(check->reason, Catch::Contains("shared_request") && Catch::Contains("orders-0") &&
                                Catch::Contains("8.569"));
  // orders-0's own stall is the cluster's, and fails the 5 s limit.
  CHECK(ackCheckOf(v, "orders", 0)->status == CheckStatus::kFail);
}

TEST_CASE("a shared_request stall's cluster figure is not known when its own leader or ISR moved",
          "[unit][analysis]") {
  const std::int64_t resume = kT0 + 8'550 * kMs;
  auto in = killOfBroker2(Held{kT0, resume}, resume);
  storage::Event moved;
  moved.t_us = kT0 + 3 * kSecond;
  moved.source = "metadata";
  moved.kind = "isr_expand";
  moved.broker = 3;
  moved.topic = "single";
  moved.partition = 0;
  moved.detail = "{}";
  in.events.push_back(moved);
  const auto a = analyse(in);
  const auto& m = *partition(a, "single", 0).mechanism;
  CHECK(m.mechanism == Mechanism::kSharedRequest);
  CHECK_FALSE(m.cluster_stall_us.has_value());
  CHECK(toJson(a)["partitions"][3]["mechanism"]["cluster_stall_us"].is_null());

  // Then the verdict judges the client's stall, as for any stall.
  Objectives o;
  o.stall.max_ack_stall_s = 5.0;
  const auto v = evaluate({a}, o, "kill", {}, RegressionPolicy{});
  CHECK(ackCheckOf(v, "single", 0)->status == CheckStatus::kFail);
}

TEST_CASE(
    "a stall of a partition the target does not replicate that no other partition's stall covers "
    "names no mechanism",
    "[unit][analysis]") {
  // single stalls 3 s of its own, long after orders-0 acked again.
  const auto in = killOfBroker2(Held{kT0 + 10 * kSecond, kT0 + 13 * kSecond}, kT0 + 8'550 * kMs);
  const auto a = analyse(in);
  const auto& single = partition(a, "single", 0);
  CHECK(single.ack.outcome == Outcome::kStall);
  CHECK_FALSE(single.mechanism.has_value());

  Objectives o;
  o.stall.max_ack_stall_s = 2.0;
  const auto v = evaluate({a}, o, "kill", {}, RegressionPolicy{});
  const auto* check = ackCheckOf(v, "single", 0);
  REQUIRE(check != nullptr);
  CHECK(check->status == CheckStatus::kFail);
  CHECK(check->measured == Approx(3.0).margin(0.03));
}

TEST_CASE(
    "a partition of the same leader whose stall ends more than an interval away from this one's, "
    "or began well after it, is not what it waited on",
    "[unit][analysis]") {
  const std::int64_t resume = kT0 + 8'550 * kMs;
  // 60 ms later: beyond one 20 ms interval and the 10 ms resolution.
  const auto in = killOfBroker2(Held{kT0, resume + 60 * kMs}, resume);
  const auto a = analyse(in);
  const auto& single = partition(a, "single", 0);
  CHECK(single.ack.outcome == Outcome::kStall);
  CHECK_FALSE(single.mechanism.has_value());

  // Within the tolerance it is claimed.
  const auto near = analyse(killOfBroker2(Held{kT0, resume + 20 * kMs}, resume));
  REQUIRE(partition(near, "single", 0).mechanism.has_value());
  CHECK(partition(near, "single", 0).mechanism->waited_on->partition == 0);
  // So is one whose last ack before the hold came a tick before orders-0's.
  const auto tick_before = analyse(killOfBroker2(Held{kT0 - kInterval, resume}, resume));
  REQUIRE(partition(tick_before, "single", 0).mechanism.has_value());
  // Not one that began 2 s before orders-0's, though both end together.
  const auto earlier = analyse(killOfBroker2(Held{kT0 - 2 * kSecond, resume}, resume));
  CHECK(partition(earlier, "single", 0).ack.outcome == Outcome::kStall);
  CHECK_FALSE(partition(earlier, "single", 0).mechanism.has_value());
}

TEST_CASE(
    "of two partitions of the same leader that could have held this one's batches, the one whose "
    "stall ended nearest to this one's is named",
    "[unit][analysis]") {
  const std::int64_t resume = kT0 + 8'550 * kMs;
  auto in = killOfBroker2(Held{kT0, resume + 2 * kMs}, resume + 15 * kMs);
  // orders-3, also led by broker 1 with broker 2 in its ISR, acked 1 ms before single.
  in.partitions.push_back({"orders", 3, 1, {1, 2, 3}, {1, 2, 3}});
  stream(in, "orders", 3, {kT0, resume + kMs});
  const auto a = analyse(in);
  const auto& m = *partition(a, "single", 0).mechanism;
  CHECK(m.mechanism == Mechanism::kSharedRequest);
  CHECK(m.waited_on->topic == "orders");
  CHECK(m.waited_on->partition == 3);
}

TEST_CASE(
    "under a gray fault a coupled stall of a partition the target does not replicate is "
    "shared_request, not an unexplained stall",
    "[unit][analysis]") {
  // Broker 2 throttled: orders-0's leader waits for it until the ISR shrink at 30 s.
  const std::int64_t shrink = kT0 + 30 * kSecond;
  AnalysisInput in;
  in.fault = "throttle";
  in.gray =
      GrayFaultInput{common::GrayFault::kThrottle, "", "", 1'000, 60 * kSecond, kT0 + 60 * kSecond};
  in.target = 2;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 40 * kSecond;
  in.window_end_us = kT0 + 45 * kSecond;
  in.partitions = {{"orders", 0, 1, {1, 2, 3}, {1, 2, 3}}, {"single", 0, 1, {1}, {1}}};
  stream(in, "orders", 0, {kT0, shrink + 20 * kMs});
  stream(in, "single", 0, {kT0, shrink + 21 * kMs});
  storage::Event e;
  e.t_us = shrink;
  e.source = "broker_log";
  e.kind = "isr_shrink";
  e.broker = 2;
  e.topic = "orders";
  e.partition = 0;
  e.detail = "{}";
  in.events.push_back(e);
  const auto a = analyse(in);

  REQUIRE(partition(a, "orders", 0).mechanism.has_value());
  CHECK(partition(a, "orders", 0).mechanism->mechanism == Mechanism::kIsrShrink);
  CHECK(partition(a, "orders", 0).mechanism->explained);
  const auto& single = partition(a, "single", 0);
  CHECK(single.ack.outcome == Outcome::kStall);
  REQUIRE(single.mechanism.has_value());
  CHECK(single.mechanism->mechanism == Mechanism::kSharedRequest);
  CHECK(single.mechanism->cluster_stall_us == std::optional<std::int64_t>(0));

  // Without orders-0's stall to explain it, it stays a stall no mechanism explains.
  in.samples.clear();
  stream(in, "orders", 0, {});
  stream(in, "single", 0, {kT0, shrink + 21 * kMs});
  const auto alone = analyse(in);
  const auto& unexplained = partition(alone, "single", 0);
  CHECK(unexplained.ack.outcome == Outcome::kInconclusive);
  REQUIRE(unexplained.mechanism.has_value());
  CHECK(unexplained.mechanism->mechanism == Mechanism::kNone);
}

}  // namespace shared_request_test
