// Rolling restarts (fault rolling_restart): the plan and its order, the request's form, and whole
// rehearsals on the simulated cluster — every broker restarted once, one at a time, `between_s`
// apart, the steps summed up; a step refused or aborted ends the rehearsal with every node up and
// no later step started; a kfaild that died mid-step recovers that node and starts no other.

#include <catch2/catch.hpp>
#include <future>

#include "server/analysis/rolling.h"
#include "server/drill/errc.h"
#include "server/drill/rolling_plan.h"
#include "storage/maintenance_store.h"
#include "tests/drill/engine_harness.h"
#include "tests/support/eventually.h"

namespace drill_rolling_restart_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using namespace std::chrono_literals;

namespace {

std::vector<config::NodeConfig> inventory(std::initializer_list<std::int32_t> ids) {
  std::vector<config::NodeConfig> out;
  for (auto id : ids) {
    config::NodeConfig n;
    n.id = id;
    n.role = id >= 100 ? common::NodeRole::kController : common::NodeRole::kBroker;
    out.push_back(n);
  }
  return out;
}

drill::DrillSpec rolling(const std::string& json) {
  return EngineHarness::spec(json);
}

std::vector<std::int32_t> plan(const std::string& json, std::optional<std::int32_t> active) {
  auto p = drill::rollingPlan(rolling(json), inventory({3, 1, 101, 2, 100, 102}), active);
  REQUIRE(p);
  return *p;
}

// The runs of a drill's result, as stored.
nlohmann::json runsOf(const storage::DrillRecord& d) {
  return nlohmann::json::parse(d.result)["runs"];
}

}  // namespace

TEST_CASE(
    "a rolling restart restarts the brokers in id order, then the controllers with the active one "
    "last",
    "[unit][drill]") {
  CHECK(plan(R"({"fault":"rolling_restart"})", 100) == std::vector<std::int32_t>{1, 2, 3});
  CHECK(plan(R"({"fault":"rolling_restart","options":{"include_controllers":true}})", 100) ==
        std::vector<std::int32_t>{1, 2, 3, 101, 102, 100});
  CHECK(plan(R"({"fault":"rolling_restart","options":{"include_controllers":true}})", 102) ==
        std::vector<std::int32_t>{1, 2, 3, 100, 101, 102});
  // The quorum not described: the controllers in id order.
  CHECK(plan(R"({"fault":"rolling_restart","options":{"include_controllers":true}})",
             std::nullopt) == std::vector<std::int32_t>{1, 2, 3, 100, 101, 102});
  // Named nodes: in the order given, the active controller wherever it was put.
  CHECK(plan(R"({"fault":"rolling_restart","target":{"nodes":[100,3,1]}})", 100) ==
        std::vector<std::int32_t>{100, 3, 1});
  auto unknown =
      drill::rollingPlan(rolling(R"({"fault":"rolling_restart","target":{"nodes":[1,7]}})"),
                         inventory({1, 2, 3}), std::nullopt);
  REQUIRE(!unknown);
  CHECK(unknown.error().message == "target.nodes: node 7 is not in the inventory");
  auto none =
      drill::rollingPlan(rolling(R"({"fault":"rolling_restart"})"), inventory({100}), std::nullopt);
  REQUIRE(!none);
  CHECK_THAT(none.error().message, Catch::Contains("no broker in the inventory"));
  // Before a controller's step the active one goes behind the others left, if it moved there.
  const auto spec =
      rolling(R"({"fault":"rolling_restart","options":{"include_controllers":true}})");
  CHECK(drill::activeControllerLast(spec, {101, 102, 100}, inventory({100, 101, 102}), 101) ==
        std::vector<std::int32_t>{102, 100, 101});
  CHECK(drill::activeControllerLast(spec, {101, 102, 100}, inventory({100, 101, 102}),
                                    std::nullopt) == std::vector<std::int32_t>{101, 102, 100});
}

TEST_CASE("a rolling restart's request parses, round-trips, and refuses what does not apply to it",
          "[unit][drill]") {
  const auto defaults = rolling(R"({"fault":"rolling_restart"})");
  CHECK(defaults.fault == drill::FaultType::kRollingRestart);
  CHECK(defaults.target.kind == drill::TargetKind::kNodes);
  CHECK(defaults.target.nodes.empty());
  CHECK(defaults.options.between_s == 10);
  CHECK_FALSE(defaults.options.kill);
  CHECK(drill::toJson(defaults)["target"] == nlohmann::json{{"every_broker", true}});
  const auto spec = rolling(
      R"({"fault":"rolling_restart","target":{"nodes":[2,1]},"options":{"kill":true,"between_s":0,"grace_s":5}})");
  const auto again = drill::parseDrillSpec(drill::toJson(spec));
  REQUIRE(again);
  CHECK(again->target.nodes == std::vector<std::int32_t>{2, 1});
  CHECK(again->options.kill);
  CHECK(again->options.between_s == 0);
  const auto step = drill::rollingStep(spec, 2);
  CHECK(step.fault == drill::FaultType::kRestart);
  CHECK(step.target.kind == drill::TargetKind::kBroker);
  CHECK(step.target.broker == 2);
  CHECK(step.options.kill);
  const auto error = [](const std::string& json) {
    auto parsed = drill::parseDrillSpec(nlohmann::json::parse(json));
    REQUIRE(!parsed);
    return parsed.error().message;
  };
  CHECK_THAT(error(R"({"fault":"rolling_restart","options":{"repeats":2}})"),
             Catch::StartsWith("options.repeats: "));
  CHECK_THAT(error(R"({"fault":"rolling_restart","target":{"broker":1}})"),
             Catch::StartsWith("target.broker: "));
  CHECK_THAT(error(R"({"fault":"rolling_restart","target":{"nodes":[1,1]}})"),
             Catch::Contains("node 1 is named twice"));
  CHECK_THAT(error(R"({"fault":"rolling_restart","target":{"nodes":[]}})"),
             Catch::StartsWith("target.nodes: "));
  CHECK_THAT(
      error(
          R"({"fault":"rolling_restart","target":{"nodes":[1]},"options":{"include_controllers":true}})"),
      Catch::StartsWith("options.include_controllers: "));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"options":{"kill":true}})"),
             Catch::StartsWith("options.kill: only for restart, rolling_restart"));
  CHECK_THAT(error(R"({"fault":"stop","target":{"broker":1},"options":{"between_s":3}})"),
             Catch::StartsWith("options.between_s: only for rolling_restart"));
  CHECK_THAT(
      error(
          R"({"fault":"rolling_restart","then":{"fault":"kill","target":{"broker":2},"after_s":1}})"),
      Catch::StartsWith("then: "));
}

TEST_CASE(
    "the steps of a rolling restart sum up to its partition-seconds, worst stall and verdicts",
    "[unit][drill]") {
  const auto partition = [](std::int32_t p, double ack_s,
                            analysis::Outcome receive = analysis::Outcome::kNone) {
    analysis::PartitionResult r;
    r.topic = "orders";
    r.partition = p;
    r.role = analysis::Role::kLeader;
    if (ack_s > 0) {
      r.ack.outcome = analysis::Outcome::kStall;
      r.ack.stall =
          analysis::Interval{1'000'000, 1'000'000 + static_cast<std::int64_t>(ack_s * 1e6), false};
    } else {
      r.ack.outcome = analysis::Outcome::kNone;
    }
    r.receive.outcome = receive;
    return r;
  };
  analysis::RunAnalysis one, two;
  one.partitions = {partition(0, 0.5), partition(1, 0)};
  two.partitions = {partition(0, 0), partition(1, 2.25),
                    partition(2, 0.25, analysis::Outcome::kInconclusive)};
  analysis::Verdict verdict;
  verdict.verdict = analysis::CheckStatus::kFail;
  verdict.checks = {
      analysis::Check{
          "max_ack_stall_s", "", 1, 0.5, "s", analysis::CheckStatus::kPass, 1, {}, {}, {}, "", {}},
      analysis::Check{
          "max_ack_stall_s", "", 1, 2.25, "s", analysis::CheckStatus::kFail, 2, {}, {}, {}, "", {}},
      analysis::Check{"max_receive_stall_s",
                      "",
                      1,
                      {},
                      "s",
                      analysis::CheckStatus::kInconclusive,
                      2,
                      {},
                      {},
                      {},
                      "",
                      {}}};
  const auto s = analysis::summariseRolling({one, two}, {3, 1}, verdict);
  REQUIRE(s.steps.size() == 2);
  CHECK(s.steps[0].node == 3);
  CHECK(s.steps[0].verdict == analysis::CheckStatus::kPass);
  CHECK(s.steps[0].ack_partition_seconds == Approx(0.5));
  CHECK(s.steps[0].stalled_partitions == 1);
  CHECK(s.steps[1].verdict == analysis::CheckStatus::kFail);
  CHECK(s.steps[1].ack_partition_seconds == Approx(2.5));
  CHECK(s.steps[1].inconclusive_partitions == 1);
  CHECK(s.ack_partition_seconds == Approx(3.0));
  REQUIRE(s.worst);
  CHECK(s.worst->step == 2);
  CHECK(s.worst->node == 1);
  CHECK(s.worst->partition == 1);
  CHECK(s.worst->seconds == Approx(2.25));
  CHECK(s.verdict == analysis::CheckStatus::kFail);
  CHECK(analysis::stepVerdict(verdict.checks, 3) == analysis::CheckStatus::kNotApplicable);
}

TEST_CASE(
    "a rolling restart stops and starts each broker once, one at a time, between_s apart, and sums "
    "up the steps",
    "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(rolling(R"({"fault":"rolling_restart","options":{"between_s":7}})"));
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  CHECK(d.fault == "rolling_restart");
  CHECK(nlohmann::json::parse(d.target) == nlohmann::json{{"every_broker", true}});
  const auto runs = runsOf(d);
  REQUIRE(runs.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(runs[i]["step"] == i + 1);
    CHECK(runs[i]["target"] == i + 1);
    CHECK(runs[i]["state"] == "done");
    CHECK(h.injectors[i + 1]->count("stop") == 1);
    CHECK(h.injectors[i + 1]->count("start") >= 1);
    CHECK(h.injectors[i + 1]->count("kill") == 0);
  }
  CHECK(h.injectors[100]->count("stop") == 0);
  // One at a time: a step starts after the previous one recovered its node, between_s later.
  for (int i = 1; i < 3; ++i) {
    const auto previous_end = runs[i - 1]["window_end_us"].get<std::int64_t>();
    CHECK(runs[i]["fault_us"].get<std::int64_t>() - previous_end >= 7'000'000);
    CHECK(runs[i]["baseline_start_us"].get<std::int64_t>() >
          runs[i - 1]["recovered_us"].get<std::int64_t>());
  }
  const auto result = nlohmann::json::parse(d.result);
  const auto& summary = result["rolling_restart"];
  CHECK(summary["plan"] == nlohmann::json::array({1, 2, 3}));
  CHECK(summary["by"] == "stop");
  REQUIRE(summary["steps"].size() == 3);
  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    const auto& step = summary["steps"][i];
    CHECK(step["step"] == i + 1);
    CHECK(step["node"] == i + 1);
    // The step's figures are its run's analysis.
    double stalled = 0;
    for (const auto& p : runs[i]["analysis"]["partitions"]) {
      if (p["ack"]["outcome"] == "stall") stalled += p["ack"]["stall"]["duration_s"].get<double>();
    }
    CHECK(step["ack_partition_seconds"].get<double>() == Approx(stalled));
    CHECK(step["verdict"].is_string());
    sum += step["ack_partition_seconds"].get<double>();
  }
  CHECK(summary["ack_partition_seconds"].get<double>() == Approx(sum));
  CHECK(summary["verdict"] == result["verdict"]["verdict"]);
  CHECK(d.reason.empty());
  for (std::int32_t node : {1, 2, 3, 100}) CHECK(h.cluster.available(node));
  CHECK(h.openRecoveries().empty());
  CHECK(h.cluster.leaderOf(0) == 1);  // preferred leaders given back after every step
}

TEST_CASE("a rolling restart with kill kills instead of stopping", "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(rolling(
      R"({"fault":"rolling_restart","target":{"nodes":[2,1]},"options":{"kill":true,"between_s":0}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto runs = runsOf(d);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0]["target"] == 2);
  CHECK(runs[1]["target"] == 1);
  CHECK(h.injectors[2]->count("kill") == 1);
  CHECK(h.injectors[1]->count("kill") == 1);
  CHECK(h.injectors[1]->count("stop") == 0);
  CHECK(h.injectors[3]->count("kill") == 0);
  CHECK(nlohmann::json::parse(d.result)["rolling_restart"]["by"] == "kill");
}

TEST_CASE(
    "a rolling restart aborted between steps or refused at a step ends with every node up and no "
    "later step",
    "[unit][drill]") {
  SECTION("aborted between two steps") {
    EngineHarness h;
    h.drills->on_state = [&](const storage::DrillRecord& d) {
      if (d.reason.rfind("step 1 of 3 done", 0) == 0) REQUIRE(h.runner->abort(d.id));
    };
    h.runner->start();
    auto id =
        h.runner->submit(rolling(R"({"fault":"rolling_restart","options":{"between_s":30}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "aborted");
    CHECK(d.reason == "aborted on request between step 1 and the next");
    CHECK(runsOf(d).size() == 1);
    CHECK(h.injectors[2]->count("stop") == 0);
    CHECK(h.injectors[3]->count("stop") == 0);
    const auto summary = nlohmann::json::parse(d.result)["rolling_restart"];
    CHECK(summary["steps"].size() == 1);
    CHECK(summary["ended_at_step"] == 2);
    CHECK(d.verdict == std::optional<std::string>("inconclusive"));
    for (std::int32_t node : {1, 2, 3}) CHECK(h.cluster.available(node));
    CHECK(h.openRecoveries().empty());
  }
  SECTION("aborted in the middle of a step") {
    EngineHarness h;
    std::atomic<bool> asked{false};
    h.drills->on_state = [&](const storage::DrillRecord& d) {
      if (d.state == "observe" && h.injectors[2]->count("stop") == 1 && !asked.exchange(true)) {
        REQUIRE(h.runner->abort(d.id));
      }
    };
    h.runner->start();
    auto id = h.runner->submit(rolling(R"({"fault":"rolling_restart","options":{"between_s":0}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "aborted");
    CHECK_THAT(d.reason, Catch::StartsWith("step 2 (node 2): "));
    CHECK(runsOf(d).size() == 2);
    CHECK(h.injectors[2]->count("start") >= 1);
    CHECK(h.injectors[3]->count("stop") == 0);
    CHECK(nlohmann::json::parse(d.result)["rolling_restart"]["ended_at_step"] == 2);
    for (std::int32_t node : {1, 2, 3}) CHECK(h.cluster.available(node));
    CHECK(h.openRecoveries().empty());
  }
  SECTION("a step that cannot reach its node") {
    EngineHarness h;
    h.injectors[2]->unreachable = true;
    h.runner->start();
    auto id = h.runner->submit(rolling(R"({"fault":"rolling_restart","options":{"between_s":1}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK_THAT(d.reason, Catch::StartsWith("step 2 (node 2): node 2 cannot be reached"));
    CHECK(h.injectors[1]->count("stop") == 1);
    CHECK(h.injectors[2]->count("stop") == 0);
    CHECK(h.injectors[3]->count("stop") == 0);
    for (std::int32_t node : {1, 2, 3}) CHECK(h.cluster.available(node));
    CHECK(h.openRecoveries().empty());
  }
  SECTION("a step whose node does not come back") {
    EngineHarness h;
    h.drills->on_state = [&](const storage::DrillRecord& d) {
      // Every start of node 2 fails from its step on: the restart's own, then the recovery's
      // tries until its timeout.
      if (d.state == "inject" && h.injectors[1]->count("stop") == 1)
        h.injectors[2]->start_failures = -1;
    };
    h.runner->start();
    auto id = h.runner->submit(
        rolling(R"({"fault":"rolling_restart","options":{"between_s":0,"recover_timeout_s":10}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK_THAT(d.reason, Catch::StartsWith("step 2 (node 2): "));
    CHECK(h.injectors[3]->count("stop") == 0);
    CHECK(runsOf(d).size() == 2);
  }
}

TEST_CASE("kfaild stopping mid-rehearsal brings that step's node back and starts no later step",
          "[unit][drill]") {
  EngineHarness h;
  std::atomic<bool> stopped{false};
  h.drills->on_state = [&](const storage::DrillRecord& d) {
    if (d.state == "observe" && h.injectors[2]->count("stop") == 1 && !stopped.exchange(true))
      h.runner->requestStop();
  };
  h.runner->start();
  auto id = h.runner->submit(rolling(R"({"fault":"rolling_restart","options":{"between_s":0}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "aborted");
  CHECK_THAT(d.reason, Catch::StartsWith("step 2 (node 2): kfaild stopped during"));
  CHECK(h.injectors[3]->count("stop") == 0);
  CHECK(h.cluster.available(2));
  CHECK(h.openRecoveries().empty());
}

TEST_CASE(
    "a rehearsal kfaild died in is ended at the next start, its node brought back and no later "
    "step run",
    "[unit][drill]") {
  EngineHarness h;
  // As a SIGKILLed kfaild leaves it: the rehearsal in its second step's observation, that step's
  // node down and its journal entry open.
  storage::DrillRecord drill;
  drill.cluster = h.id;
  drill.fault = "rolling_restart";
  drill.target = R"({"every_broker":true})";
  drill.options = R"({"between_s":0})";
  drill.state = "observe";
  drill.result = R"({"runs":[{"run":1,"step":1,"target":1,"state":"done"}]})";
  drill.created_us = h.clock.wallNow();
  auto drill_id = h.drills->createDrill(drill);
  REQUIRE(drill_id);
  storage::RecoveryEntry entry;
  entry.drill_id = *drill_id;
  entry.cluster = h.id;
  entry.node = 2;
  entry.action = "start";
  entry.phase = "observe";
  entry.created_us = h.clock.wallNow();
  REQUIRE(h.drills->addRecovery(entry));
  h.cluster.down(2, false);
  auto replay = std::async(std::launch::async, [&] { return h.runner->recoverPending(600s); });
  while (replay.wait_for(0ms) != std::future_status::ready) h.clock.advanceToNextDeadline(50ms);
  const auto recovered = replay.get();
  REQUIRE(recovered);
  CHECK(*recovered == 1);
  h.runner->start();
  for (int i = 0; i < 100; ++i) h.clock.advanceToNextDeadline(50ms);
  const auto d = h.record(*drill_id);
  CHECK(d.state == "aborted");
  CHECK(d.reason == "kfaild stopped during observe");
  CHECK(h.cluster.available(2));
  CHECK(h.injectors[2]->count("start") == 1);
  CHECK(h.injectors[3]->count("stop") == 0);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE(
    "a rolling restart holds a planned-maintenance window open while it runs and closes it however "
    "it ends",
    "[unit][drill]") {
  EngineHarness h;
  auto store = storage::MaintenanceStore::open((h.dir / "kfaild.db").string());
  REQUIRE(store);
  maintenance::MaintenanceWindows windows(**store, h.clock, {}, config::RetryConfig{});
  h.maintenance = &windows;
  h.makeRunner();
  std::optional<storage::MaintenanceWindowRecord> during;
  h.drills->on_state = [&](const storage::DrillRecord& d) {
    if (d.state == "observe" && !during) {
      auto active = windows.active(h.id, h.clock.wallNow());
      REQUIRE(active);
      during = *active;
    }
  };
  SECTION("done") {
    h.runner->start();
    auto id = h.runner->submit(rolling(R"({"fault":"rolling_restart","options":{"between_s":1}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    REQUIRE(d.state == "done");
    REQUIRE(during);
    CHECK(during->opened_by == "drill " + std::to_string(*id));
    CHECK_THAT(during->reason, Catch::StartsWith("rolling restart (drill " + std::to_string(*id) +
                                                 ") of 3 node(s)"));
    CHECK(nlohmann::json::parse(d.result)["rolling_restart"]["maintenance_window"] == during->id);
    auto after = windows.window(during->id);
    REQUIRE(after);
    REQUIRE(*after);
    CHECK((*after)->closed_us.has_value());
    CHECK((*after)->closed_by == "drill " + std::to_string(*id));
    auto active = windows.active(h.id, h.clock.wallNow());
    REQUIRE(active);
    CHECK_FALSE(*active);
    CHECK(h.events("maintenance_opened").size() == 1);
    // The runner closes the window after it records the drill's end: wait for it.
    CHECK(kfaild::testing::eventually([&] { return h.events("maintenance_closed").size() == 1; },
                                      std::chrono::seconds(5), std::chrono::milliseconds(10)));
  }
  SECTION("aborted between steps") {
    h.drills->on_state = [&](const storage::DrillRecord& d) {
      if (d.reason.rfind("step 1 of 3 done", 0) == 0) REQUIRE(h.runner->abort(d.id));
    };
    h.runner->start();
    auto id =
        h.runner->submit(rolling(R"({"fault":"rolling_restart","options":{"between_s":30}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "aborted");
    auto active = windows.active(h.id, h.clock.wallNow());
    REQUIRE(active);
    CHECK_FALSE(*active);
    // The runner closes the window after it records the drill's end: wait for it.
    CHECK(kfaild::testing::eventually([&] { return h.events("maintenance_closed").size() == 1; },
                                      std::chrono::seconds(5), std::chrono::milliseconds(10)));
  }
  SECTION("failed at a step that cannot reach its node") {
    h.injectors[2]->unreachable = true;
    h.runner->start();
    auto id = h.runner->submit(rolling(R"({"fault":"rolling_restart","options":{"between_s":1}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    REQUIRE(during);
    CHECK(kfaild::testing::eventually([&] { return h.events("maintenance_closed").size() == 1; },
                                      std::chrono::seconds(5), std::chrono::milliseconds(10)));
    auto after = windows.window(during->id);
    REQUIRE(after);
    REQUIRE(*after);
    CHECK((*after)->closed_by == "drill " + std::to_string(*id));
    auto active = windows.active(h.id, h.clock.wallNow());
    REQUIRE(active);
    CHECK_FALSE(*active);
  }
  SECTION("failed at a step whose node does not come back") {
    // The node stays down (its recovery retried between drills): the window must not keep the
    // cluster's alerts silent for the rest of its day.
    h.drills->on_state = [&](const storage::DrillRecord& d) {
      if (d.state == "observe" && !during) {
        auto active = windows.active(h.id, h.clock.wallNow());
        REQUIRE(active);
        during = *active;
      }
      if (d.state == "inject" && h.injectors[1]->count("stop") == 1)
        h.injectors[2]->start_failures = -1;
    };
    h.runner->start();
    auto id = h.runner->submit(
        rolling(R"({"fault":"rolling_restart","options":{"between_s":0,"recover_timeout_s":10}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    REQUIRE(during);
    CHECK(kfaild::testing::eventually([&] { return h.events("maintenance_closed").size() == 1; },
                                      std::chrono::seconds(5), std::chrono::milliseconds(10)));
    auto active = windows.active(h.id, h.clock.wallNow());
    REQUIRE(active);
    CHECK_FALSE(*active);
  }
}

TEST_CASE("the window of a rehearsal kfaild died in is closed at the next start", "[unit][drill]") {
  EngineHarness h;
  auto store = storage::MaintenanceStore::open((h.dir / "kfaild.db").string());
  REQUIRE(store);
  maintenance::MaintenanceWindows windows(**store, h.clock, {}, config::RetryConfig{});
  h.maintenance = &windows;
  h.makeRunner();
  storage::DrillRecord drill;
  drill.cluster = h.id;
  drill.fault = "rolling_restart";
  drill.target = R"({"every_broker":true})";
  drill.options = "{}";
  drill.state = "baseline";
  drill.created_us = h.clock.wallNow();
  auto drill_id = h.drills->createDrill(drill);
  REQUIRE(drill_id);
  const auto by = "drill " + std::to_string(*drill_id);
  auto window = windows.open(h.id, "rolling restart", h.clock.wallNow() + 3'600'000'000, by);
  REQUIRE(window);
  // Another window, opened by an operator, stays.
  auto operators =
      windows.open(h.id, "upgrade", h.clock.wallNow() + 3'600'000'000, "operator (api)");
  REQUIRE(operators);
  auto replay = std::async(std::launch::async, [&] { return h.runner->recoverPending(600s); });
  while (replay.wait_for(0ms) != std::future_status::ready) h.clock.advanceToNextDeadline(50ms);
  REQUIRE(replay.get());
  CHECK(h.record(*drill_id).state == "aborted");
  auto closed = windows.window(*window);
  REQUIRE(closed);
  REQUIRE(*closed);
  CHECK((*closed)->closed_by == by);
  auto kept = windows.window(*operators);
  REQUIRE(kept);
  REQUIRE(*kept);
  CHECK_FALSE((*kept)->closed_us.has_value());
}

}  // namespace drill_rolling_restart_test
