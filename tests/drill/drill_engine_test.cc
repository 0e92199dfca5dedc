// The drill engine on a simulated cluster and a manual clock: every phase, abort and stop in
// each, recovery retries, a node that does not come back, the journal replayed after a crash,
// an orphaned journal entry, guard refusals at submission, preflight and the fault, the quorum
// guard on controller drills and a controller's recovery waiting for it to rejoin the quorum, the
// scheduler, and stopping the engine idle and mid-drill many times.

#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "server/drill/drill_state.h"
#include "server/drill/errc.h"
#include "server/drill/guards.h"
#include "server/drill/scheduler.h"
#include "tests/drill/engine_harness.h"

namespace drill_engine_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using namespace std::chrono_literals;

namespace {

constexpr const char* kKillBroker1 = R"({"fault":"kill","target":{"broker":1}})";

nlohmann::json firstRun(const storage::DrillRecord& d) {
  auto result = nlohmann::json::parse(d.result.empty() ? "{}" : d.result);
  REQUIRE(result.contains("runs"));
  REQUIRE(!result["runs"].empty());
  return result["runs"][0];
}

}  // namespace

TEST_CASE("a kill drill goes through every phase to done on a simulated cluster", "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  CHECK(h.drills->states(*id) == std::vector<std::string>{"queued", "preflight", "baseline",
                                                          "inject", "observe", "recover", "elect",
                                                          "analyse", "done"});
  const auto run = firstRun(d);
  CHECK(run["target"] == 1);
  CHECK(run["state"] == "done");
  CHECK_FALSE(run.contains("reason"));
  // The baseline lasted its 5 s, the fault came after it, observation ended after the failover
  // (6 s) and observe_min_s (5 s), recovery after it.
  CHECK(run["fault_us"].get<std::int64_t>() - run["baseline_start_us"].get<std::int64_t>() >=
        5'000'000);
  CHECK(run["observe_end_us"].get<std::int64_t>() - run["fault_us"].get<std::int64_t>() >=
        6'000'000);
  CHECK(run["recovered_us"].get<std::int64_t>() > run["observe_end_us"].get<std::int64_t>());
  CHECK(run["recovery"]["attempts"] == 1);
  CHECK(run["leadership_at_fault"]["partitions"].size() == 3);
  CHECK(run["preferred_leaders_restored"] == true);
  CHECK(run.contains("analysis"));
  CHECK(h.injectors[1]->count("kill") == 1);
  CHECK(h.injectors[1]->count("start") == 1);
  CHECK(h.cluster.available(1));
  CHECK(h.openRecoveries().empty());
  CHECK(h.cluster.leaderOf(0) == 1);  // the preferred election gave it back
  // The control probe routed around broker 1 from the start of the baseline (still running
  // then: a check in flight at the kill must not be one through it) to the end of the run.
  const auto steered = h.probe.steered();
  REQUIRE(steered.size() == 2);
  CHECK(steered[0].nodes == std::vector<std::int32_t>{1});
  CHECK(steered[0].running == std::vector<std::int32_t>{1});
  CHECK(steered[0].at_us <= run["baseline_start_us"].get<std::int64_t>());
  CHECK(steered[1].nodes.empty());
}

TEST_CASE(
    "an abort in any phase ends the drill aborted with the node running and the journal closed",
    "[unit][drill]") {
  for (const std::string phase :
       {"preflight", "baseline", "inject", "observe", "recover", "elect", "analyse"}) {
    DYNAMIC_SECTION("abort during " << phase) {
      EngineHarness h;
      h.drills->on_state = [&](const storage::DrillRecord& d) {
        if (d.state == phase) REQUIRE(h.runner->abort(d.id));
      };
      h.runner->start();
      auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
      REQUIRE(id);
      const auto d = h.runToEnd(*id);
      CHECK(d.state == "aborted");
      CHECK(d.reason.find("aborted on request during") != std::string::npos);
      CHECK(h.cluster.available(1));
      CHECK(h.openRecoveries().empty());
      const bool before_fault = phase == "preflight" || phase == "baseline" || phase == "inject";
      CHECK(h.injectors[1]->count("kill") == (before_fault ? 0 : 1));
      if (phase == "inject") CHECK(d.reason.find("the node was not touched") != std::string::npos);
      if (phase == "observe") CHECK(d.reason == "aborted on request during observe");
    }
  }
}

TEST_CASE("kfaild stopping in any phase brings the node back and closes the journal first",
          "[unit][drill]") {
  for (const std::string phase :
       {"preflight", "baseline", "inject", "observe", "recover", "elect", "analyse"}) {
    DYNAMIC_SECTION("stop during " << phase) {
      EngineHarness h;
      h.drills->on_state = [&](const storage::DrillRecord& d) {
        if (d.state == phase) h.runner->requestStop();
      };
      h.runner->start();
      auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
      REQUIRE(id);
      const auto d = h.runToEnd(*id);
      CHECK(d.state == "aborted");
      CHECK(d.reason.find("kfaild stopped during") != std::string::npos);
      CHECK(h.cluster.available(1));
      CHECK(h.openRecoveries().empty());
      h.runner->stop();
    }
  }
}

TEST_CASE("a journal left open by a kfaild that died mid-drill is replayed at the next start",
          "[unit][drill]") {
  for (const std::string phase : {"inject", "observe", "recover"}) {
    DYNAMIC_SECTION("died during " << phase) {
      EngineHarness h;
      // What a kfaild killed in that phase leaves behind: the drill in its state, the node down,
      // the journal entry open.
      storage::DrillRecord drill;
      drill.cluster = h.id;
      drill.fault = "kill";
      drill.target = R"({"broker":2})";
      drill.options = "{}";
      drill.state = phase;
      drill.created_us = h.clock.wallNow();
      auto drill_id = h.drills->createDrill(drill);
      REQUIRE(drill_id);
      storage::RecoveryEntry entry;
      entry.drill_id = *drill_id;
      entry.cluster = h.id;
      entry.node = 2;
      entry.action = "start";
      entry.phase = phase;
      entry.created_us = h.clock.wallNow();
      REQUIRE(h.drills->addRecovery(entry));
      h.cluster.down(2, false);

      auto replay = std::async(std::launch::async, [&] { return h.runner->recoverPending(600s); });
      while (replay.wait_for(0ms) != std::future_status::ready) h.clock.advanceToNextDeadline(50ms);
      const auto recovered = replay.get();
      REQUIRE(recovered);
      CHECK(*recovered == 1);
      CHECK(h.cluster.available(2));
      CHECK(h.openRecoveries().empty());
      const auto d = h.record(*drill_id);
      CHECK(d.state == "aborted");
      CHECK(d.reason == "kfaild stopped during " + phase);
      CHECK(h.events("recovered_after_restart").size() == 1);
    }
  }
}

TEST_CASE("a failed start is retried with a doubling backoff and reported", "[unit][drill]") {
  EngineHarness h;
  h.injectors[1]->start_failures = 3;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  REQUIRE(d.state == "done");
  const auto run = firstRun(d);
  CHECK(run["recovery"]["attempts"] == 4);
  REQUIRE(run["recovery"]["errors"].size() == 3);
  const auto retries = h.events("recovery_retry");
  REQUIRE(retries.size() == 3);
  std::vector<double> waits;
  for (const auto& e : retries)
    waits.push_back(nlohmann::json::parse(e.detail)["retry_in_s"].get<double>());
  CHECK(waits == std::vector<double>{1.0, 2.0, 4.0});
  CHECK(h.cluster.available(1));
  CHECK(h.openRecoveries().empty());
}

TEST_CASE("a node that does not come back fails the drill, blocks drills, and is recovered late",
          "[unit][drill]") {
  EngineHarness h;
  h.injectors[1]->start_failures = -1;
  h.runner->start();
  auto spec = EngineHarness::spec(
      R"({"fault":"kill","target":{"broker":1},"options":{"recover_timeout_s":20}})");
  auto id = h.runner->submit(spec);
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK(d.reason.find("not back within 20 s") != std::string::npos);
  CHECK_FALSE(h.cluster.running(1));
  REQUIRE(h.openRecoveries().size() == 1);

  // Drills on the cluster are refused while the node is down.
  auto refused = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == make_error_code(drill::errc::guard_refused));
  CHECK(refused.error().message.find("node 1 left down by drill") != std::string::npos);

  // The engine keeps trying between drills; once the node starts again it is recovered late.
  h.injectors[1]->start_failures = 0;
  for (int i = 0; i < 10'000 && !h.openRecoveries().empty(); ++i)
    h.clock.advanceToNextDeadline(50ms);
  CHECK(h.openRecoveries().empty());
  h.runner->stop();  // the event follows the journal's close on the engine's thread
  h.runner->start();
  CHECK(h.cluster.available(1));
  CHECK(h.events("recovered_late").size() == 1);
  auto accepted =
      h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"));
  CHECK(accepted);
}

TEST_CASE(
    "kfaild stopping while it retries a node left down stops at once and leaves the entry for its "
    "next start",
    "[unit][drill]") {
  EngineHarness h;
  h.injectors[1]->start_failures = -1;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"broker":1},"options":{"recover_timeout_s":10}})"));
  REQUIRE(id);
  REQUIRE(h.runToEnd(*id).state == "failed");
  REQUIRE(h.openRecoveries().size() == 1);
  const auto after_drill = h.openRecoveries().front().attempts;
  // Time moves until a background try has failed at least once and waits for its next one.
  for (int i = 0; i < 10'000 && h.openRecoveries().front().attempts <= after_drill; ++i) {
    h.clock.advanceToNextDeadline(50ms);
  }
  REQUIRE(h.openRecoveries().front().attempts > after_drill);
  // Nothing moves the clock now: only the stop can end that wait.
  auto stopping = std::async(std::launch::async, [&] { h.runner->stop(); });
  REQUIRE(stopping.wait_for(10s) == std::future_status::ready);
  REQUIRE(h.openRecoveries().size() == 1);
  CHECK_FALSE(h.openRecoveries().front().done_us);
  CHECK(h.events("recovered_late").empty());
}

TEST_CASE("a journal entry for a node no longer in the inventory is reported and can be resolved",
          "[unit][drill]") {
  EngineHarness h;
  storage::DrillRecord drill;
  drill.cluster = h.id;
  drill.fault = "kill";
  drill.target = R"({"broker":9})";
  drill.options = "{}";
  drill.state = "failed";
  drill.created_us = h.clock.wallNow();
  auto drill_id = h.drills->createDrill(drill);
  REQUIRE(drill_id);
  storage::RecoveryEntry entry;
  entry.drill_id = *drill_id;
  entry.cluster = h.id;
  entry.node = 9;
  entry.action = "start";
  entry.phase = "observe";
  entry.created_us = h.clock.wallNow();
  auto entry_id = h.drills->addRecovery(entry);
  REQUIRE(entry_id);
  auto recovered = h.runner->recoverPending(60s);
  REQUIRE(recovered);
  CHECK(*recovered == 0);
  CHECK(h.events("recovery_orphaned").size() == 1);
  h.runner->start();
  auto refused = h.runner->submit(EngineHarness::spec(kKillBroker1));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("no longer in the inventory") != std::string::npos);
  CHECK(refused.error().message.find("POST /api/v1/recoveries/" + std::to_string(*entry_id) +
                                     "/resolve") != std::string::npos);

  auto resolved =
      storage::resolveRecovery(*h.drills, *entry_id, "node 9 retired", h.clock.wallNow());
  REQUIRE(resolved);
  REQUIRE(*resolved);
  CHECK((*resolved)->phase == "resolved");
  CHECK((*resolved)->last_error == "resolved by an operator: node 9 retired");
  CHECK(h.openRecoveries().empty());
  CHECK(h.runner->submit(EngineHarness::spec(kKillBroker1)));
}

TEST_CASE(
    "the guards refuse at submission, at preflight and at the fault without touching the node",
    "[unit][drill]") {
  SECTION("at submission: the controller does not answer") {
    EngineHarness h;
    h.cluster.controller_answers = false;
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
    REQUIRE_FALSE(id);
    CHECK(id.error().message.find("KRaft controller does not answer") != std::string::npos);
  }
  SECTION("at preflight: the controller stopped answering after the submission") {
    EngineHarness h;
    h.drills->on_state = [&](const storage::DrillRecord& d) {
      if (d.state == "preflight") h.cluster.controller_answers = false;
    };
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK(d.reason.find("refused: the KRaft controller does not answer") == 0);
    CHECK(h.injectors[1]->count("kill") == 0);
  }
  SECTION("at the fault: the probe lags") {
    EngineHarness h;
    h.drills->on_state = [&](const storage::DrillRecord& d) {
      if (d.state == "baseline") h.cluster.probe_backlog_us = 3'000'000;
    };
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK(d.reason.find("refused at the fault: ") == 0);
    CHECK(d.reason.find("the node was not touched") != std::string::npos);
    CHECK(h.injectors[1]->count("kill") == 0);
    CHECK(h.openRecoveries().empty());
  }
  SECTION("at preflight: the node cannot be reached") {
    EngineHarness h;
    h.injectors[1]->unreachable = true;
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK(d.reason.find("node 1 cannot be reached") == 0);
  }
}

TEST_CASE("a drill while another runs is refused, a scheduled one queues up to the queue bound",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto first = h.runner->submit(EngineHarness::spec(kKillBroker1));
  REQUIRE(first);
  auto refused = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("is running on cluster fake") != std::string::npos);
  std::vector<std::int64_t> queued;
  for (std::size_t i = 0; i < drill::DrillQueue::kCapacity; ++i) {
    auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"),
                               {std::nullopt, true});
    if (id) queued.push_back(*id);
  }
  // The first may already have left the queue to run: at most one more fits than the bound.
  CHECK(queued.size() >= drill::DrillQueue::kCapacity - 1);
  auto over = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"),
                               {std::nullopt, true});
  REQUIRE_FALSE(over);
  CHECK(over.error().message.find("already waiting") != std::string::npos);
  CHECK(h.runToEnd(*first).state == "done");
  CHECK(h.runToEnd(queued.front()).state == "done");
  for (auto id : queued) {
    const bool open = !drill::isTerminal(h.record(id).state);
    const bool taken = h.runner->abort(id).ok();
    // Refused only for a drill that has ended, also one that ended between the two calls.
    if (!open) CHECK_FALSE(taken);
    if (!taken) CHECK(drill::isTerminal(h.record(id).state));
  }
}

TEST_CASE(
    "the scheduler fires a due schedule, records a missed one, and queues behind a running drill",
    "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  drill::Scheduler scheduler(*h.drills, h.clock, {{h.id, h.runner.get()}});
  storage::ScheduleRecord s;
  s.cluster = h.id;
  s.name = "hourly";
  s.cron = "0 * * * *";
  s.drill = kKillBroker1;
  s.enabled = true;
  s.created_us = h.clock.wallNow();
  auto sid = h.drills->createSchedule(s);
  REQUIRE(sid);
  auto load = [&] {
    auto r = h.drills->schedule(*sid);
    REQUIRE(r);
    REQUIRE(*r);
    return **r;
  };

  scheduler.tick();  // sets the next run
  const auto next = load().next_run_us;
  REQUIRE(next);
  CHECK(*next > h.clock.wallNow());
  CHECK(*next % 3'600'000'000 == 0);

  SECTION("due: it fires a drill that runs") {
    h.clock.advance(*next - h.clock.wallNow() + 1'000'000);
    scheduler.tick();
    const auto fired = load();
    REQUIRE(fired.last_outcome.rfind("started drill ", 0) == 0);
    const auto drill_id = std::stoll(fired.last_outcome.substr(14));
    CHECK(h.record(drill_id).schedule_id == *sid);
    CHECK(*fired.next_run_us == *next + 3'600'000'000);
    CHECK(h.runToEnd(drill_id).state == "done");
  }
  SECTION("found more than a minute late: missed, never fired late") {
    h.clock.advance(*next - h.clock.wallNow() + drill::Scheduler::kMissedAfterUs + 1'000'000);
    scheduler.tick();
    CHECK(load().last_outcome == "missed");
    storage::DrillQuery q;
    q.cluster = h.id;
    CHECK(h.drills->drills(q)->empty());
  }
  SECTION("while a drill runs: it queues behind it") {
    auto running =
        h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"));
    REQUIRE(running);
    h.clock.advance(*next - h.clock.wallNow() + 1'000'000);
    scheduler.tick();
    const auto fired = load();
    REQUIRE(fired.last_outcome.rfind("started drill ", 0) == 0);
    const auto drill_id = std::stoll(fired.last_outcome.substr(14));
    CHECK(h.record(drill_id).state == "queued");
    CHECK(h.runToEnd(*running).state == "done");
    CHECK(h.runToEnd(drill_id).state == "done");
  }
}

TEST_CASE("the engine stops at once while idle and mid-drill, every time", "[unit][drill]") {
  for (int i = 0; i < 200; ++i) {
    EngineHarness h;
    h.runner->start();
    if (i % 2 == 1) {
      // Mid-drill: a few steps in, in whatever phase that is.
      auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
      if (!id) FAIL("submission " << i << " refused: " << id.error().describe());
      for (int step = 0; step < i && !drill::isTerminal(h.record(*id).state); ++step) {
        h.clock.advanceToNextDeadline(20ms);
      }
    }
    auto stopped = std::async(std::launch::async, [&h] { h.runner->stop(); });
    // A drill past its fault recovers its node first, on the manual clock.
    while (stopped.wait_for(1ms) != std::future_status::ready) h.clock.advanceToNextDeadline(1ms);
    INFO("iteration " << i);
    CHECK(h.cluster.available(1));
    CHECK(h.openRecoveries().empty());
  }
}

TEST_CASE(
    "a drill on the only controller is refused for the quorum, and with allow_quorum_loss it runs "
    "and "
    "recovers only once the controller leads the quorum again",
    "[unit][drill]") {
  EngineHarness h;
  h.cluster.rejoin_us = 4 * testing::FakeCluster::kSecond;
  h.runner->start();
  auto refused =
      h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"controller":true}})"));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == make_error_code(drill::errc::guard_refused));
  CHECK_THAT(
      refused.error().message,
      Catch::StartsWith("losing controller 100 would leave the KRaft quorum without a majority") &&
          Catch::EndsWith("set options.allow_quorum_loss to run it anyway"));
  auto stored = h.drills->drills({});
  REQUIRE(stored);
  CHECK(stored->empty());

  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"controller":true},"options":{"allow_quorum_loss":true}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = firstRun(d);
  CHECK(run["target"] == 100);
  CHECK(h.injectors[100]->count("kill") == 1);
  // Started at once, back only when it leads the quorum again, rejoin_us (4 s) after its start.
  const auto started = h.events("started");
  REQUIRE(started.size() == 1);
  CHECK(run["recovered_us"].get<std::int64_t>() - started[0].t_us >= 4'000'000);
  auto quorum = h.admin.describeQuorum();
  REQUIRE(quorum);
  CHECK(quorum->leader_id == 100);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE(
    "a drill on one of three controllers goes ahead while the other two are caught up, and is "
    "refused when "
    "one of them is behind",
    "[unit][drill]") {
  EngineHarness h;
  h.cluster.quorum_voters = {100, 101, 102};
  h.cluster.rejoin_us = 3 * testing::FakeCluster::kSecond;
  h.cluster.setVotersBehind({101});
  h.runner->start();
  const auto kill_controller =
      EngineHarness::spec(R"({"fault":"kill","target":{"controller":true}})");
  auto refused = h.runner->submit(kill_controller);
  REQUIRE_FALSE(refused);
  CHECK_THAT(
      refused.error().message,
      Catch::Contains(
          "1 of its 3 voter(s) (100, 101, 102) up and caught up without it (102), 2 needed"));

  h.cluster.setVotersBehind({});
  h.clock.advance(1000);  // a submission is checked on facts read at or after it
  auto id = h.runner->submit(kill_controller);
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  // Leadership moved to 101 while 100 was down; 100 counts as back once it has caught up with it.
  auto quorum = h.admin.describeQuorum();
  REQUIRE(quorum);
  CHECK(quorum->leader_id == 101);
  const auto started = h.events("started");
  REQUIRE(started.size() == 1);
  CHECK(firstRun(d)["recovered_us"].get<std::int64_t>() - started[0].t_us >= 3'000'000);
  CHECK(drill::voterCaughtUp(*quorum, quorum->voters[0]));
}

TEST_CASE(
    "a controller that does not rejoin the quorum fails its recovery with the reason and is "
    "recovered late",
    "[unit][drill]") {
  SECTION("three voters: it never catches up with the new leader") {
    EngineHarness h;
    h.cluster.quorum_voters = {100, 101, 102};
    h.cluster.controller_catches_up = false;
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"kill","target":{"controller":true},"options":{"recover_timeout_s":10}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK_THAT(d.reason, Catch::StartsWith(
                             "node 100 not back within 10 s: controller 100 has not caught up with "
                             "the KRaft quorum's leader 101 since its start (log end offset "));
    CHECK(h.cluster.running(100));  // started, but not back
    REQUIRE(h.openRecoveries().size() == 1);

    h.cluster.controller_catches_up = true;
    for (int i = 0; i < 10'000 && !h.openRecoveries().empty(); ++i)
      h.clock.advanceToNextDeadline(50ms);
    CHECK(h.openRecoveries().empty());
  }
  SECTION("the only voter: the quorum has no leader") {
    EngineHarness h;
    h.cluster.controller_catches_up = false;
    h.runner->start();
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"stop","target":{"broker":100},"options":{"recover_timeout_s":10,"allow_quorum_loss":true}})"));
    REQUIRE(id);
    const auto d = h.runToEnd(*id);
    CHECK(d.state == "failed");
    CHECK_THAT(d.reason,
               Catch::StartsWith("node 100 not back within 10 s: the KRaft quorum has no leader"));
    h.cluster.controller_catches_up = true;
    for (int i = 0; i < 10'000 && !h.openRecoveries().empty(); ++i)
      h.clock.advanceToNextDeadline(50ms);
    CHECK(h.openRecoveries().empty());
  }
}

}  // namespace drill_engine_test
