// Compound drills (DrillSpec::then) on the simulated cluster: the second fault `after_s` after the
// first, resolved and guarded at its moment, both nodes brought back with the controllers first
// (whichever went down first), a second fault refused by its guards leaving the first node
// recovered and the second untouched, and a journal with both entries replayed in that order.

#include <catch2/catch.hpp>
#include <future>

#include "server/drill/errc.h"
#include "server/drill/node_recovery.h"
#include "tests/drill/engine_harness.h"

namespace compound_drill_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using namespace std::chrono_literals;

namespace {

// The nodes in the order the engine started them.
std::vector<std::int32_t> startOrder(EngineHarness& h) {
  std::vector<std::int32_t> out;
  for (const auto& e : h.events("recovered")) out.push_back(*e.broker);
  return out;
}

}  // namespace

TEST_CASE("recoveryOrder brings controllers back first, each group in the order it went down",
          "[unit][drill]") {
  std::vector<config::NodeConfig> inventory;
  for (std::int32_t id : {1, 2, 3, 100, 101, 102}) {
    config::NodeConfig n;
    n.id = id;
    n.role = id >= 100 ? common::NodeRole::kController : common::NodeRole::kBroker;
    inventory.push_back(n);
  }
  CHECK(drill::recoveryOrder({100, 1}, inventory) == std::vector<std::int32_t>{100, 1});
  CHECK(drill::recoveryOrder({1, 100}, inventory) == std::vector<std::int32_t>{100, 1});
  CHECK(drill::recoveryOrder({2, 1}, inventory) == std::vector<std::int32_t>{2, 1});
  CHECK(drill::recoveryOrder({3, 101, 100, 3}, inventory) ==
        std::vector<std::int32_t>{101, 100, 3});
  CHECK(drill::recoveryOrder({}, inventory).empty());
}

TEST_CASE(
    "a broker killed 2 s after the active controller is guarded then, and both come back, the "
    "controller "
    "first",
    "[unit][drill]") {
  EngineHarness h({101, 102});
  h.cluster.quorum_voters = {100, 101, 102};
  h.runner->start();
  const auto leader = h.cluster.leaderOf(0);
  auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"controller":true},
      "then":{"fault":"kill","target":{"leader_of":{"topic":"probe","partition":0}},"after_s":2}})"));
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  CHECK(
      nlohmann::json::parse(d.second_fault) ==
      nlohmann::json::parse(
          R"({"fault":"kill","target":{"leader_of":{"topic":"probe","partition":0}},"after_s":2})"));
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["target"] == 100);
  const auto& second = run["second_fault"];
  CHECK(second["state"] == "injected");
  CHECK(second["preflight_target"] == leader);
  CHECK(second["target"] == leader);
  CHECK_THAT(second["how"].get<std::string>(), Catch::Contains("leader of probe-0"));
  const auto apart = second["fault_us"].get<std::int64_t>() - run["fault_us"].get<std::int64_t>();
  CHECK(apart >= 2'000'000);
  CHECK(apart < 2'500'000);
  // The observation waits for the probes after the second fault (the fake's failover: 6 s).
  CHECK(run["observe_end_us"].get<std::int64_t>() - second["fault_us"].get<std::int64_t>() >=
        6'000'000);
  CHECK(h.injectors[100]->count("kill") == 1);
  CHECK(h.injectors[leader]->count("kill") == 1);
  CHECK(run["recovery_order"] == nlohmann::json::array({100, leader}));
  CHECK(startOrder(h) == std::vector<std::int32_t>{100, leader});
  CHECK(second["recovery"]["attempts"] == 1);
  CHECK(second["recovered_us"].get<std::int64_t>() >= run["recovered_us"].get<std::int64_t>());
  // The run's analysis is the second fault's: its target leads p0; the first's ends at the second.
  REQUIRE(run.contains("analysis"));
  CHECK(run["analysis"]["target"] == leader);
  CHECK(run["analysis"]["fault_us"] == second["fault_us"]);
  REQUIRE(second.contains("first_analysis"));
  CHECK(second["first_analysis"]["target"] == 100);
  CHECK(h.events("fault").size() == 2);
  CHECK(h.openRecoveries().empty());
  for (std::int32_t node : {1, 2, 3, 100}) CHECK(h.cluster.available(node));
  // The control probe routed around the controller from before its kill, around both from before
  // the broker's, and around none once the run ended.
  const auto steered = h.probe.steered();
  REQUIRE(steered.size() == 3);
  CHECK(steered[0].nodes == std::vector<std::int32_t>{100});
  CHECK(steered[0].running == std::vector<std::int32_t>{100});
  CHECK(steered[1].nodes == std::vector<std::int32_t>{100, leader});
  CHECK(steered[1].running == std::vector<std::int32_t>{leader});
  CHECK(steered[2].nodes.empty());
}

TEST_CASE("a compound drill whose broker goes down first still brings the controller back first",
          "[unit][drill]") {
  EngineHarness h({101, 102});
  h.cluster.quorum_voters = {100, 101, 102};
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"stop","target":{"broker":1},
      "then":{"fault":"kill","target":{"controller":true},"after_s":3}})"));
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["second_fault"]["target"] == 100);
  CHECK(run["recovery_order"] == nlohmann::json::array({100, 1}));
  CHECK(startOrder(h) == std::vector<std::int32_t>{100, 1});
  CHECK(h.openRecoveries().empty());
}

TEST_CASE("a second fault its guards refuse leaves its node untouched and the first node recovered",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  // Broker 2 with broker 1 down: every partition below min.insync.replicas (2).
  auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":1},
      "then":{"fault":"kill","target":{"broker":2},"after_s":2}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK_THAT(d.reason,
             Catch::StartsWith(
                 "the second fault was refused: losing broker 2 with node 1 down would leave "
                 "3 partition(s) below min.insync.replicas"));
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["second_fault"]["state"] == "refused");
  CHECK(run["second_fault"]["target"] == 2);
  CHECK(h.injectors[2]->count("kill") == 0);
  CHECK(h.injectors[1]->count("start") == 1);
  CHECK(h.cluster.available(1));
  CHECK(h.cluster.available(2));
  CHECK(h.openRecoveries().empty());
  CHECK(h.events("second_fault_refused").size() == 1);
}

TEST_CASE("a compound drill whose second target is the first's is refused at submission",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  const auto leader = h.cluster.leaderOf(0);
  auto refused = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"leader_of":{"topic":"probe","partition":0}},
          "then":{"fault":"kill","target":{"broker":)" +
      std::to_string(leader) + R"(},"after_s":1}})"));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == make_error_code(drill::errc::guard_refused));
  CHECK(refused.error().message == "then: the second fault's target names node " +
                                       std::to_string(leader) +
                                       ", which the first fault takes down");
}

TEST_CASE("a journal left with a broker and a controller down replays the controller first",
          "[unit][drill]") {
  EngineHarness h({101, 102});
  h.cluster.quorum_voters = {100, 101, 102};
  storage::DrillRecord drill;
  drill.cluster = h.id;
  drill.fault = "kill";
  drill.target = R"({"broker":1})";
  drill.options = "{}";
  drill.second_fault = R"({"fault":"kill","target":{"controller":true},"after_s":2})";
  drill.state = "observe";
  drill.created_us = h.clock.wallNow();
  auto drill_id = h.drills->createDrill(drill);
  REQUIRE(drill_id);
  for (std::int32_t node : {1, 100}) {
    storage::RecoveryEntry entry;
    entry.drill_id = *drill_id;
    entry.cluster = h.id;
    entry.node = node;
    entry.action = "start";
    entry.phase = "observe";
    entry.created_us = h.clock.wallNow();
    REQUIRE(h.drills->addRecovery(entry));
    h.cluster.down(node, false);
  }
  auto replay = std::async(std::launch::async, [&] { return h.runner->recoverPending(600s); });
  while (replay.wait_for(0ms) != std::future_status::ready) h.clock.advanceToNextDeadline(50ms);
  const auto recovered = replay.get();
  REQUIRE(recovered);
  CHECK(*recovered == 2);
  std::vector<std::int32_t> order;
  for (const auto& e : h.events("recovered_after_restart")) order.push_back(*e.broker);
  CHECK(order == std::vector<std::int32_t>{100, 1});
  CHECK(h.openRecoveries().empty());
  CHECK(h.record(*drill_id).second_fault == drill.second_fault);
}

}  // namespace compound_drill_test
