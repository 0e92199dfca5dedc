// Gray faults in the drill engine on a simulated cluster and a manual clock: the fault is
// injected through the node's injector with the peers the cluster lists (Metadata's brokers,
// DescribeQuorum's voters, the inventory's addresses added), held duration_s, healed (also at once
// on an abort), a disk_full node is healed and started by recovery, a journal entry a dead kfaild
// left heals the fault at the next start where every node is also swept, the refusals at
// submission (the injector's, a nonsensical isolate, a drill already running) and at preflight (a
// peer the cluster lists without an address).

#include <algorithm>
#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "server/drill/drill_state.h"
#include "server/drill/errc.h"
#include "tests/drill/engine_harness.h"

namespace gray_fault_engine_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kSecond = 1'000'000;

nlohmann::json firstRun(const storage::DrillRecord& d) {
  auto result = nlohmann::json::parse(d.result.empty() ? "{}" : d.result);
  REQUIRE(result.contains("runs"));
  REQUIRE(!result["runs"].empty());
  return result["runs"][0];
}

nlohmann::json detailOf(const storage::Event& e) {
  return nlohmann::json::parse(e.detail);
}

}  // namespace

TEST_CASE(
    "an isolate drill cuts the broker off from its peers for duration_s, then heals it and records "
    "both",
    "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"isolate","target":{"broker":2},"options":{"from":"brokers","mode":"reject","duration_s":20}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  auto& injector = *h.injectors[2];
  CHECK(injector.count("isolate") == 1);
  CHECK(injector.count("heal") >= 1);
  CHECK(injector.grayInForce().empty());
  const auto spec = injector.lastIsolate();
  REQUIRE(spec);
  CHECK(spec->drill == std::to_string(*id));
  CHECK(spec->from == fault::IsolateFrom::brokers);
  CHECK(spec->mode == fault::IsolateMode::reject);
  CHECK(spec->duration == 20s);
  // Each peer by the address the cluster lists it on, and the inventory's beside it.
  CHECK(spec->peers.brokers ==
        std::vector<std::string>{"10.8.0.1", "10.9.0.1", "10.8.0.3", "10.9.0.3"});
  CHECK(spec->peers.quorum == std::vector<std::string>{"10.8.0.100", "10.9.0.100"});

  const auto faults = h.events("fault");
  REQUIRE(faults.size() == 1);
  CHECK(detailOf(faults[0])["fault"] == "isolate");
  CHECK(detailOf(faults[0])["detail"].get<std::string>().find("nft") != std::string::npos);
  const auto healed = h.events("healed");
  REQUIRE(healed.size() >= 1);
  CHECK(detailOf(healed[0])["detail"] == "nft delete table inet kfaild_d" + std::to_string(*id));
  // Held its 20 s, not less, and healed right after.
  const auto held = healed[0].t_us - faults[0].t_us;
  CHECK(held >= 20 * kSecond);
  CHECK(held < 21 * kSecond);
  const auto run = firstRun(d);
  CHECK(run["observe_end_us"].get<std::int64_t>() >= healed[0].t_us);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE("a throttle drill passes its rate to the injector and heals after duration_s",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"throttle","target":{"broker":1},"options":{"rate":"8mbit","duration_s":10}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  CHECK(h.injectors[1]->count("throttle") == 1);
  CHECK(h.injectors[1]->lastRate() == 1'000'000);
  CHECK(h.injectors[1]->grayInForce().empty());
}

TEST_CASE("an abort while a gray fault holds heals it at once", "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"isolate","target":{"broker":2},"options":{"from":"all","duration_s":600}})"));
  REQUIRE(id);
  // Never to the 600 s hold's end: the runner may inject and start the hold between this loop's
  // look at the count and its advance (a CI run on a loaded machine aborted in observe).
  for (int i = 0; i < 100'000 && h.injectors[2]->count("isolate") == 0; ++i) {
    h.clock.advanceToNextDeadline(50ms, 300 * kSecond);
  }
  REQUIRE(h.injectors[2]->count("isolate") == 1);
  const auto aborted_at = h.clock.wallNow();
  REQUIRE(h.runner->abort(*id));
  // The runner heals on the abort in real time: the clock stays put until it has, or it would
  // carry the hold's wait to its end first.
  for (int i = 0; i < 1000 && !h.injectors[2]->grayInForce().empty(); ++i)
    std::this_thread::sleep_for(5ms);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "aborted");
  CHECK(d.reason == "aborted on request during the isolate");
  CHECK(h.injectors[2]->grayInForce().empty());
  const auto healed = h.events("healed");
  REQUIRE(!healed.empty());
  CHECK(healed[0].t_us - aborted_at < kSecond);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE("a failed heal fails the run and recovery heals the node before closing the journal",
          "[unit][drill]") {
  EngineHarness h;
  h.injectors[2]->heal_failures = 1;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"isolate","target":{"broker":2},"options":{"from":"quorum","duration_s":5}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK(d.reason.find("healing node 2 after the isolate failed: ") == 0);
  CHECK(h.injectors[2]->count("heal") == 2);
  CHECK(h.injectors[2]->grayInForce().empty());
  CHECK(h.events("heal_failed").size() == 1);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE("a disk_full drill takes the broker down, and recovery frees the disk and starts it",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"disk_full","target":{"broker":1},"options":{"duration_s":10}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  auto& injector = *h.injectors[1];
  CHECK(injector.count("fill_disk") == 1);
  CHECK(injector.count("heal") == 2);  // at the end of duration_s, and by recovery before the start
  CHECK(injector.count("start") == 1);
  CHECK(injector.grayInForce().empty());
  CHECK(h.cluster.available(1));
  CHECK(h.openRecoveries().empty());
}

TEST_CASE(
    "a gray fault a dead kfaild left in force is healed at the next start, and every node is swept",
    "[unit][drill]") {
  EngineHarness h;
  storage::DrillRecord drill;
  drill.cluster = h.id;
  drill.fault = "isolate";
  drill.target = R"({"broker":2})";
  drill.options = R"({"duration_s":30})";
  drill.state = "inject";
  drill.created_us = h.clock.wallNow();
  auto drill_id = h.drills->createDrill(drill);
  REQUIRE(drill_id);
  storage::RecoveryEntry entry;
  entry.drill_id = *drill_id;
  entry.cluster = h.id;
  entry.node = 2;
  entry.action = "heal";
  entry.phase = "inject";
  entry.created_us = h.clock.wallNow();
  REQUIRE(h.drills->addRecovery(entry));
  h.injectors[2]->leaveGray(std::to_string(*drill_id));
  h.injectors[3]->leaveGray("77");  // a table no journal entry knows of

  auto replay = std::async(std::launch::async, [&] { return h.runner->recoverPending(600s); });
  while (replay.wait_for(0ms) != std::future_status::ready) h.clock.advanceToNextDeadline(50ms);
  const auto recovered = replay.get();
  REQUIRE(recovered);
  CHECK(*recovered == 1);
  for (auto node : {1, 2, 3, 100}) {
    CHECK(h.injectors[node]->count("sweep") == 1);
    CHECK(h.injectors[node]->grayInForce().empty());
  }
  CHECK(h.injectors[2]->count("heal") == 1);
  CHECK(h.injectors[2]->count("start") == 0);  // isolated, never down
  CHECK(h.events("gray_swept").size() == 2);
  CHECK(h.openRecoveries().empty());
  CHECK(h.record(*drill_id).state == "aborted");
}

TEST_CASE("gray faults are refused at submission with the reason, without touching the node",
          "[unit][drill]") {
  SECTION("the injector cannot do it") {
    EngineHarness h;
    h.injectors[1]->gray_refusal = "the broker runs in kfaild's own network namespace";
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"isolate","target":{"broker":1}})"));
    REQUIRE_FALSE(id);
    CHECK(id.error().code == make_error_code(drill::errc::guard_refused));
    CHECK(id.error().message == "the broker runs in kfaild's own network namespace (isolate)");
    CHECK(h.injectors[1]->count("isolate") == 0);
  }
  SECTION("disk_slow, which no injector here can do") {
    EngineHarness h;
    h.runner->start();
    auto id =
        h.runner->submit(EngineHarness::spec(R"({"fault":"disk_slow","target":{"broker":1}})"));
    REQUIRE_FALSE(id);
    CHECK(id.error().message == "the fake node cannot slow its disk");
  }
  SECTION("from: quorum on a controller") {
    EngineHarness h;
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"isolate","target":{"broker":100},"options":{"from":"quorum","allow_quorum_loss":true}})"));
    REQUIRE_FALSE(id);
    CHECK(id.error().message.find("isolate from: quorum on controller 100 makes no sense") == 0);
  }
  SECTION("from: brokers on a controller") {
    EngineHarness h;
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"isolate","target":{"controller":true},"options":{"from":"brokers","allow_quorum_loss":true}})"));
    REQUIRE_FALSE(id);
    CHECK(id.error().message.find("isolate from: brokers on controller 100") == 0);
  }
  SECTION("a second gray fault while one is in force") {
    EngineHarness h;
    h.runner->start();
    auto first = h.runner->submit(EngineHarness::spec(
        R"({"fault":"isolate","target":{"broker":1},"options":{"duration_s":60}})"));
    REQUIRE(first);
    for (int i = 0; i < 100'000 && h.injectors[1]->count("isolate") == 0; ++i)
      h.clock.advanceToNextDeadline(50ms);
    auto second = h.runner->submit(EngineHarness::spec(
        R"({"fault":"throttle","target":{"broker":2},"options":{"rate":1000}})"));
    REQUIRE_FALSE(second);
    CHECK(second.error().message.find("is running on cluster fake") != std::string::npos);
    CHECK(h.runToEnd(*first).state == "done");
    CHECK(h.injectors[2]->count("throttle") == 0);
  }
}

TEST_CASE(
    "isolate from quorum cuts the active controller the inventory does not list by every address "
    "of its "
    "endpoint",
    "[unit][drill]") {
  EngineHarness h;
  h.cluster.quorum_voters = {100, 101, 102};
  h.cluster.setQuorumLeader(101);
  h.dns[h.cluster.hostOf(101)] = {"10.8.0.101", "fd00::101"};
  h.dns[h.cluster.hostOf(102)] = {"10.8.0.102"};
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"isolate","target":{"broker":2},"options":{"from":"quorum","duration_s":5}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto spec = h.injectors[2]->lastIsolate();
  REQUIRE(spec);
  CHECK(spec->peers.quorum == std::vector<std::string>{"10.8.0.100", "10.9.0.100", "10.8.0.101",
                                                       "fd00::101", "10.8.0.102"});
}

TEST_CASE(
    "isolate from clients spares the brokers on the interface the cluster lists them on and not "
    "only the "
    "inventory's",
    "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"isolate","target":{"broker":1},"options":{"from":"clients","duration_s":5}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto spec = h.injectors[1]->lastIsolate();
  REQUIRE(spec);
  const auto& brokers = spec->peers.brokers;
  CHECK(std::find(brokers.begin(), brokers.end(), "10.8.0.2") != brokers.end());
  CHECK(std::find(brokers.begin(), brokers.end(), "10.8.0.3") != brokers.end());
  // The target's own addresses are no peer's.
  CHECK(std::find(brokers.begin(), brokers.end(), "10.8.0.1") == brokers.end());
  CHECK(std::find(brokers.begin(), brokers.end(), "10.9.0.1") == brokers.end());
}

TEST_CASE(
    "an isolate fails at preflight naming the node when a broker the cluster lists has no address",
    "[unit][drill]") {
  EngineHarness h;
  h.config.inventory[2].address.clear();  // node 3: nothing in the inventory either
  h.dns.erase(h.cluster.hostOf(3));
  h.makeRunner();
  h.runner->start();
  SECTION("from brokers: a hole in the isolation") {
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"isolate","target":{"broker":1},"options":{"from":"brokers"}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK_THAT(d.reason, Catch::StartsWith("refused: isolate from: brokers on node 1 is refused"));
    CHECK_THAT(d.reason, Catch::Contains("node 3 (node3.fake:9003 does not resolve"));
    CHECK(h.injectors[1]->count("isolate") == 0);
  }
  SECTION("from quorum does not name the brokers") {
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"isolate","target":{"broker":1},"options":{"from":"quorum","duration_s":5}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    INFO(d.reason);
    CHECK(d.state == "done");
  }
}

TEST_CASE(
    "without the quorum's endpoints the inventory's controllers are the quorum and an isolate says "
    "why when "
    "there are none",
    "[unit][drill]") {
  EngineHarness h;
  SECTION("DescribeQuorum v1: no endpoints") {
    h.cluster.quorum_endpoints = false;
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"isolate","target":{"broker":2},"options":{"from":"quorum","duration_s":5}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    INFO(d.reason);
    REQUIRE(d.state == "done");
    const auto spec = h.injectors[2]->lastIsolate();
    REQUIRE(spec);
    CHECK(spec->peers.quorum == std::vector<std::string>{"10.9.0.100"});
  }
  SECTION("the quorum not described and no controller address") {
    h.cluster.quorum_answers = false;
    h.config.inventory[3].address.clear();  // node 100
    h.makeRunner();
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"isolate","target":{"broker":2},"options":{"from":"quorum","duration_s":5}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK_THAT(d.reason, Catch::Contains("node 100"));
    CHECK_THAT(d.reason, Catch::Contains("DescribeQuorum timed out"));
    CHECK(h.injectors[2]->count("isolate") == 0);
  }
}

}  // namespace gray_fault_engine_test
