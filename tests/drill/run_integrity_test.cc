// What keeps a drill's figures and verdict honest, on a simulated cluster and a manual clock: a
// resume or start that fails during the observation, a step of the wall clock inside the window,
// a later run's failure that must not erase an earlier run's verdict, and an abort that lands
// while the engine takes the drill from its queue.

#include <atomic>
#include <catch2/catch.hpp>
#include <random>
#include <thread>

#include "server/drill/errc.h"
#include "tests/drill/engine_harness.h"

namespace run_integrity_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using namespace std::chrono_literals;

namespace {

nlohmann::json resultOf(const storage::DrillRecord& d) {
  auto result = nlohmann::json::parse(d.result.empty() ? "{}" : d.result);
  REQUIRE(result.is_object());
  return result;
}

}  // namespace

TEST_CASE(
    "a pause whose resume fails is an event and fails the run, and its recovery resumes the node",
    "[unit][drill]") {
  EngineHarness h;
  h.injectors[2]->start_failures = 1;  // the observation's resume fails, the recovery's succeeds
  h.runner->start();
  auto id = h.runner->submit(
      EngineHarness::spec(R"({"fault":"pause","target":{"broker":2},"options":{"pause_s":3}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK_THAT(d.reason, Catch::StartsWith("resuming node 2 after the pause failed: "));
  const auto failed = h.events("resume_failed");
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].broker == 2);
  CHECK(h.injectors[2]->count("resume") == 2);
  // The pause's expiry timer is the drill's, cancelled by the run's resume and the recovery's.
  const auto drill = std::to_string(*id);
  REQUIRE(h.injectors[2]->lastPause());
  CHECK(h.injectors[2]->lastPause()->drill == drill);
  CHECK(h.injectors[2]->lastPause()->expiresAfter() == 3s + fault::kExpiryMargin);
  CHECK(h.injectors[2]->resumedDrills() == std::vector<std::string>{drill, drill});
  CHECK(h.cluster.available(2));
  CHECK(h.openRecoveries().empty());
  CHECK(d.verdict == "inconclusive");
  CHECK_FALSE(resultOf(d)["runs"][0].contains("analysis"));
}

TEST_CASE(
    "a restart whose start fails is an event and fails the run, and its recovery starts the node",
    "[unit][drill]") {
  EngineHarness h;
  h.injectors[3]->start_failures = 1;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"restart","target":{"broker":3}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK_THAT(d.reason, Catch::StartsWith("starting node 3 after the restart failed: "));
  CHECK(h.events("start_failed").size() == 1);
  CHECK(h.cluster.available(3));
  CHECK(h.openRecoveries().empty());
}

TEST_CASE(
    "a step of the wall clock inside a run's window makes the run inconclusive with the reason",
    "[unit][drill]") {
  for (const std::string phase : {"inject", "observe", "recover"}) {
    DYNAMIC_SECTION("a step during " << phase) {
      EngineHarness h;
      h.drills->on_state = [&](const storage::DrillRecord& d) {
        if (d.state == phase) h.clock.stepWall(-3'000'000);
      };
      h.runner->start();
      auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":1}})"));
      REQUIRE(id);
      const auto d = h.runToEnd(*id);
      INFO(d.reason);
      REQUIRE(d.state == "done");
      const auto run = resultOf(d)["runs"][0];
      CHECK(run["clock_steps_in_window"] == 1);
      CHECK(run["analysis"]["conclusive"] == false);
      for (const auto& p : run["analysis"]["partitions"]) {
        for (const char* kind : {"ack", "receive"}) {
          CHECK(p[kind]["outcome"] == "inconclusive");
          CHECK_THAT(p[kind]["reason"].get<std::string>(),
                     Catch::Contains("wall clock stepped 1 time(s)"));
        }
      }
      CHECK(d.verdict != "pass");
    }
  }
}

TEST_CASE("a run without a clock step says so", "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":1}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  REQUIRE(d.state == "done");
  CHECK(resultOf(d)["runs"][0]["clock_steps_in_window"] == 0);
}

TEST_CASE(
    "with repeats, a failed objective of a finished run fails the drill although a later run was "
    "refused",
    "[unit][drill]") {
  EngineHarness h;
  int baselines = 0;
  h.drills->on_state = [&](const storage::DrillRecord& d) {
    // The second run's fault is refused: the probe lags.
    if (d.state == "baseline" && ++baselines == 2) h.cluster.probe_backlog_us = 3'000'000;
  };
  h.runner->start();
  // Recovery takes longer than the failover (6 s): run 1 fails max_recovery_s.
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"broker":1},"options":{"repeats":2},"expect":{"max_recovery_s":1}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK_THAT(d.reason, Catch::StartsWith("refused at the fault: "));
  CHECK(d.verdict == "fail");
  const auto result = resultOf(d);
  REQUIRE(result["runs"].size() == 2);
  CHECK(result["runs"][0]["state"] == "done");
  const auto& verdict = result["verdict"];
  CHECK(verdict["verdict"] == "fail");
  CHECK_THAT(verdict["reason"].get<std::string>(),
             Catch::StartsWith("the drill failed: refused at the fault"));
  bool recovery_failed = false;
  for (const auto& c : verdict["checks"]) {
    if (c["objective"] == "max_recovery_s" && c["run"] == 1 && c["status"] == "fail")
      recovery_failed = true;
  }
  CHECK(recovery_failed);
}

TEST_CASE(
    "with repeats, finished runs that pass leave the drill inconclusive for the unfinished run, "
    "checks kept",
    "[unit][drill]") {
  EngineHarness h;
  int baselines = 0;
  h.drills->on_state = [&](const storage::DrillRecord& d) {
    if (d.state == "baseline" && ++baselines == 2) h.cluster.probe_backlog_us = 3'000'000;
  };
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"broker":1},"options":{"repeats":2},"expect":{"max_recovery_s":100}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK(d.verdict == "inconclusive");
  const auto verdict = resultOf(d)["verdict"];
  bool recovery_passed = false;
  for (const auto& c : verdict["checks"]) {
    if (c["objective"] == "max_recovery_s" && c["run"] == 1 && c["status"] == "pass")
      recovery_passed = true;
  }
  CHECK(recovery_passed);
  CHECK_THAT(verdict["reason"].get<std::string>(), Catch::StartsWith("the drill failed: "));
}

TEST_CASE("an abort that lands while the engine takes the drill from its queue is never lost",
          "[unit][drill]") {
  // The engine takes a submitted drill up within moments of its push; an abort sent right after
  // the submission races that take. Whatever the interleaving, the abort must find the drill
  // (queued or running) and the fault must never be injected.
  EngineHarness h;
  h.runner->start();
  std::mt19937 rng(42);
  int lost = 0;
  for (int i = 0; i < 400; ++i) {
    auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"));
    REQUIRE(id);
    // Spread the abort over the moment the engine wakes to take the drill.
    const auto spin_until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(rng() % 60);
    while (std::chrono::steady_clock::now() < spin_until) {
    }
    const auto aborted = h.runner->abort(*id);
    if (!aborted) ++lost;
    const auto d = h.runToEnd(*id);
    if (aborted) CHECK(d.state == "aborted");
    while (h.runner->active()) std::this_thread::sleep_for(100us);
  }
  CHECK(lost == 0);
  CHECK(h.injectors[2]->count("kill") == 0);
}

TEST_CASE(
    "partitions a kill leaves below min.insync.replicas are observed to the node's return with "
    "their own role",
    "[unit][drill]") {
  EngineHarness h;
  h.cluster.min_insync = 3;  // every partition of the probe topic loses writes with any broker
  h.runner->start();
  auto refused = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":1}})"));
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("below min.insync.replicas"));
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"broker":1},"options":{"allow_unavailable":true}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = resultOf(d)["runs"][0];
  for (const auto& p : run["leadership_at_fault"]["partitions"]) CHECK(p["min_insync"] == 3);
  REQUIRE(run["analysis"]["partitions"].size() == 3);
  for (const auto& p : run["analysis"]["partitions"]) CHECK(p["role"] == "below_min_isr");
  // Observed to the node's return, as an offline partition is, not waited for before it.
  CHECK(run["window_end_us"].get<std::int64_t>() >= run["recovered_us"].get<std::int64_t>());
  CHECK_FALSE(run.contains("observe_timed_out"));
  CHECK_FALSE(run.contains("offline_timed_out"));
}

}  // namespace run_integrity_test
