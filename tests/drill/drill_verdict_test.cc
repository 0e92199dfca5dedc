// The engine writes a drill's verdict with its terminal state (so the listener, told right after
// that write, sees it): a done drill is judged against the cluster's objectives with the request's
// on top, one that started and failed or was aborted is inconclusive with its reason, and one that
// never started has none.

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>

#include "server/analysis/verdict.h"
#include "server/drill/drill_state.h"
#include "tests/drill/engine_harness.h"

namespace drill_verdict_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using nlohmann::json;

namespace {

// The first write of a terminal state: what DrillRecords hands the listener, on the runner's
// thread right after the write that runToEnd() reads, so the test waits for it (a CI run on a
// loaded machine read it before the runner had set it).
class TerminalRow {
 public:
  void watch(EngineHarness& h, std::function<void(const storage::DrillRecord&)> also = {}) {
    h.drills->on_state = [this, also = std::move(also)](const storage::DrillRecord& d) {
      {
        std::lock_guard lock(mutex_);
        if (!row_ && drill::isTerminal(d.state)) row_ = d;
      }
      seen_.notify_all();
      if (also) also(d);
    };
  }
  std::optional<storage::DrillRecord> row() {
    std::unique_lock lock(mutex_);
    seen_.wait_for(lock, std::chrono::seconds(10), [&] { return row_.has_value(); });
    return row_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable seen_;
  std::optional<storage::DrillRecord> row_;
};

}  // namespace

TEST_CASE(
    "a finished drill's terminal row carries its verdict against the cluster's objectives and the "
    "request's",
    "[unit][drill][verdict]") {
  EngineHarness h;
  h.config.objectives = analysis::defaultObjectives();
  h.config.objectives.max_failed.reset();
  h.makeRunner();
  TerminalRow terminal;
  terminal.watch(h);
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"broker":1},"expect":{"max_ack_stall_s":0.5,"max_lost":3}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason << "\n" << d.result);
  REQUIRE(d.state == "done");
  const auto row = terminal.row();
  REQUIRE(row);
  CHECK(row->state == "done");
  REQUIRE(row->verdict);
  CHECK(row->verdict == d.verdict);
  CHECK(row->regressed == false);  // no earlier drill to compare with
  CHECK(json::parse(d.expect) == json{{"max_ack_stall_s", 0.5}, {"max_lost", 3}});

  const auto verdict = json::parse(row->result)["verdict"];
  CHECK(verdict["verdict"] == *d.verdict);
  // The effective objectives: the request's keys over the cluster's, the cluster's others kept.
  CHECK(verdict["objectives"]["max_ack_stall_s"] == 0.5);
  CHECK(verdict["objectives"]["max_lost"] == 3);
  CHECK(verdict["objectives"]["max_detection_s"] == 12.0);
  CHECK_FALSE(verdict["objectives"].contains("max_failed"));
  CHECK(verdict["regression"]["window"] == 5);
  // Every check of an ack stall is against the request's 0.5 s, whatever the role.
  int ack_checks = 0;
  for (const auto& c : verdict["checks"]) {
    if (c["objective"] != "max_ack_stall_s") continue;
    ++ack_checks;
    CHECK(c["threshold"] == 0.5);
    CHECK(c["source"] == "max_ack_stall_s");
  }
  CHECK(ack_checks > 0);
  // The verdict follows from the checks.
  bool any_fail = false, any_inconclusive = false;
  for (const auto& c : verdict["checks"]) {
    any_fail = any_fail || c["status"] == "fail";
    any_inconclusive = any_inconclusive || c["status"] == "inconclusive";
  }
  CHECK(*d.verdict == (any_fail ? "fail" : any_inconclusive ? "inconclusive" : "pass"));
}

TEST_CASE(
    "a drill aborted after it started is inconclusive with its reason, one that never ran has no "
    "verdict",
    "[unit][drill][verdict]") {
  EngineHarness h;
  TerminalRow terminal;
  terminal.watch(h, [&](const storage::DrillRecord& d) {
    if (d.state == "observe") REQUIRE(h.runner->abort(d.id));
  });
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":1}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  REQUIRE(d.state == "aborted");
  const auto terminal_row = terminal.row();
  REQUIRE(terminal_row);
  CHECK(terminal_row->verdict == "inconclusive");
  const auto verdict = json::parse(d.result)["verdict"];
  CHECK(verdict["verdict"] == "inconclusive");
  CHECK(verdict["reason"] == "the drill aborted: aborted on request during observe");
  CHECK(verdict["checks"].empty());

  // Rows a kfaild that died left behind: one that never ran gets no verdict, one mid-run is
  // inconclusive (the restarted engine aborts both).
  h.runner->stop();
  storage::DrillRecord row;
  row.cluster = h.id;
  row.fault = "kill";
  row.target = R"({"broker":1})";
  row.options = "{}";
  row.created_us = h.clock.wallNow();
  row.state = "queued";
  const auto queued = h.drills->createDrill(row);
  row.state = "observe";
  row.started_us = h.clock.wallNow();
  const auto midway = h.drills->createDrill(row);
  REQUIRE(queued);
  REQUIRE(midway);
  h.makeRunner();
  REQUIRE(h.runner->recoverPending(std::chrono::seconds(1)));
  const auto never = h.record(*queued);
  CHECK(never.state == "aborted");
  CHECK_FALSE(never.verdict);
  const auto cut = h.record(*midway);
  CHECK(cut.state == "aborted");
  CHECK(cut.verdict == "inconclusive");
  CHECK(json::parse(cut.result)["verdict"]["reason"] ==
        "the drill aborted: kfaild stopped during observe");
}

namespace {

const json* checkNamed(const json& verdict, const std::string& objective) {
  for (const auto& c : verdict["checks"]) {
    if (c["objective"] == objective && c["partition"].is_null()) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a pause shorter than the session timeout states its detection objective not applicable",
          "[unit][drill][verdict]") {
  EngineHarness h;  // the fake cluster fails a node over after 6 s: a 3 s pause fences nothing
  h.config.objectives = analysis::defaultObjectives();
  h.makeRunner();
  h.runner->start();
  auto id = h.runner->submit(
      EngineHarness::spec(R"({"fault":"pause","target":{"broker":1},"options":{"pause_s":3}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason << "\n" << d.result);
  REQUIRE(d.state == "done");
  const auto verdict = json::parse(d.result)["verdict"];
  const auto* detection = checkNamed(verdict, "max_detection_s");
  REQUIRE(detection);
  CHECK((*detection)["status"] == "not_applicable");
  CHECK((*detection)["reason"].get<std::string>().find("shorter than the session timeout") !=
        std::string::npos);
  // The stall limits of the defaults follow the pause: 3 s + 5 s.
  CHECK(verdict["objectives"]["by_fault"]["pause"]["max_ack_stall_s"] == 8.0);
}

TEST_CASE("a kill of a KRaft controller states its detection objective not applicable",
          "[unit][drill][verdict]") {
  EngineHarness h;
  h.config.objectives = analysis::defaultObjectives();
  h.makeRunner();
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"controller":true},"options":{"allow_quorum_loss":true}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason << "\n" << d.result);
  REQUIRE(d.state == "done");
  const auto verdict = json::parse(d.result)["verdict"];
  const auto* detection = checkNamed(verdict, "max_detection_s");
  REQUIRE(detection);
  CHECK((*detection)["status"] == "not_applicable");
  CHECK((*detection)["reason"].get<std::string>().find("controllers are never fenced") !=
        std::string::npos);
}

}  // namespace drill_verdict_test
