#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/drill/errc.h"
#include "tests/drill/engine_harness.h"

namespace observed_drill_test {

using kfaild::testing::EngineHarness;
namespace drill = kfaild::drill;

namespace {

constexpr std::int64_t kSecond = 1'000'000;
constexpr const char* kObserved = R"({"fault":"observed","options":{"window_s":120,"quiet_s":5}})";

// What the metadata poller would write when it sees `broker` leave or come back.
void metadataEvent(EngineHarness& h, const char* kind, std::int32_t broker) {
  kfaild::storage::Event e;
  e.cluster = h.id;
  e.t_us = h.clock.wallNow();
  e.source = "metadata";
  e.kind = kind;
  e.broker = broker;
  e.detail = "{}";
  h.store->addEvent(e);
}

// Someone else's fault, as the test plays it: when the drill first waits for a fault, `before`
// runs (a mark, say), broker `broker` goes down; `down_s` later it comes back (never with
// down_s < 0). Runs the drill to its end.
kfaild::storage::DrillRecord runWithFault(EngineHarness& h, std::int64_t id, std::int32_t broker,
                                          std::int64_t down_s,
                                          const std::function<void()>& before = {}) {
  std::optional<std::int64_t> down_at;
  bool up = false;
  for (int i = 0; i < 200'000; ++i) {
    auto d = h.record(id);
    if (drill::isTerminal(d.state)) {
      h.waitUntilReleased(id);
      return h.record(id);
    }
    if (!down_at && d.state == "observe" && broker > 0) {
      if (before) before();
      h.cluster.down(broker, false);
      metadataEvent(h, "broker_gone", broker);
      down_at = h.clock.wallNow();
    }
    if (down_at && !up && down_s >= 0 && h.clock.wallNow() >= *down_at + down_s * kSecond) {
      h.cluster.up(broker);
      metadataEvent(h, "broker_back", broker);
      up = true;
    }
    h.clock.advanceToNextDeadline(std::chrono::milliseconds(50));
  }
  FAIL("drill " << id << " did not end");
  return {};
}

nlohmann::json resultOf(const kfaild::storage::DrillRecord& d) {
  return nlohmann::json::parse(d.result.empty() ? "{}" : d.result);
}

void checkNothingTouched(EngineHarness& h) {
  for (const auto& [node, injector] : h.injectors) {
    for (const char* action : {"kill", "stop", "start", "pause", "resume"}) {
      INFO("node " << node << " " << action);
      CHECK(injector->count(action) == 0);
    }
  }
  CHECK(h.openRecoveries().empty());
}

}  // namespace

TEST_CASE("an observed drill analyses a broker someone else took down, found by kfaild itself",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(kObserved));
  REQUIRE(id);
  const auto d = runWithFault(h, *id, 1, 20);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  CHECK(h.drills->states(*id) ==
        std::vector<std::string>{"queued", "preflight", "baseline", "observe", "analyse", "done"});
  const auto result = resultOf(d);
  REQUIRE(result["runs"].size() == 1);
  const auto& run = result["runs"][0];
  CHECK(run["target"] == 1);
  CHECK(run["observed_fault"]["time_source"] == "departure:unregistered");
  CHECK(run["observed_fault"]["departure"]["kind"] == "unregistered");
  CHECK(run["observed_fault"]["judged_as"] == "observed");
  CHECK(run["observed_fault"]["mark"].is_null());
  CHECK(run["leadership_at_fault"]["partitions"].size() == 3);
  CHECK(run.contains("analysis"));
  CHECK(result["observed"]["whole_again"] == true);
  CHECK(d.verdict.has_value());
  // kfaild neither injected, nor restarted, nor elected: broker 1 leads nothing it lost.
  checkNothingTouched(h);
  CHECK(h.cluster.leaderOf(0) != 1);
}

TEST_CASE("a mark places an observed drill's fault at the marked time, on the marked broker",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(kObserved));
  REQUIRE(id);
  std::int64_t marked_at = 0;
  const auto d = runWithFault(h, *id, 2, 15, [&] {
    marked_at = h.clock.wallNow() - 200'000;
    auto mark = h.runner->mark(*id, marked_at, 2, "chaos tool");
    REQUIRE(mark);
  });
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto result = resultOf(d);
  REQUIRE(result["runs"].size() == 1);
  const auto& fault = result["runs"][0]["observed_fault"];
  CHECK(fault["time_source"] == "mark");
  CHECK(fault["fault_us"] == marked_at);
  CHECK(fault["broker"] == 2);
  CHECK(fault["mark"]["by"] == "chaos tool");
  CHECK(fault["departure"]["broker"] == 2);
  CHECK(result["runs"][0]["fault_detail"] == "marked by chaos tool");
  CHECK(result["runs"][0]["fault_time_source"] == "mark");
  REQUIRE(h.events("fault").size() == 1);
  checkNothingTouched(h);
}

TEST_CASE("an observed drill with no fault in its window is done with nothing to judge",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id =
      h.runner->submit(EngineHarness::spec(R"({"fault":"observed","options":{"window_s":10}})"));
  REQUIRE(id);
  const auto d = runWithFault(h, *id, -1, -1);
  REQUIRE(d.state == "done");
  CHECK(d.verdict == "inconclusive");
  const auto result = resultOf(d);
  CHECK(result["runs"].empty());
  CHECK(result["observed"]["faults"].empty());
  CHECK(result["verdict"]["reason"].get<std::string>().find("no fault was marked or seen") !=
        std::string::npos);
  checkNothingTouched(h);
}

TEST_CASE("an observed drill whose broker does not come back ends at its window saying so",
          "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto id =
      h.runner->submit(EngineHarness::spec(R"({"fault":"observed","options":{"window_s":30}})"));
  REQUIRE(id);
  const auto d = runWithFault(h, *id, 3, -1);
  REQUIRE(d.state == "done");
  const auto result = resultOf(d);
  CHECK(result["observed"]["whole_again"] == false);
  CHECK(result["observed"]["missing"].get<std::string>().find("broker 3") != std::string::npos);
  CHECK(d.verdict != "pass");
  REQUIRE(result["runs"].size() == 1);
  CHECK(result["runs"][0]["observe_timed_out"] == true);
  // kfaild left it down: the platform's to bring back, not kfaild's.
  CHECK_FALSE(h.cluster.running(3));
  checkNothingTouched(h);
}

TEST_CASE("an observed drill aborted while it waits ends aborted without touching a node",
          "[unit][drill]") {
  EngineHarness h;
  h.drills->on_state = [&](const kfaild::storage::DrillRecord& d) {
    if (d.state == "observe") REQUIRE(h.runner->abort(d.id));
  };
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(kObserved));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "aborted");
  CHECK(d.verdict == "inconclusive");
  checkNothingTouched(h);
}

TEST_CASE(
    "a mark is refused on a drill that is not observed, in the future, before the drill or "
    "on an unknown broker",
    "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto kill = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":1}})"));
  REQUIRE(kill);
  auto refused = h.runner->mark(*kill, std::nullopt, std::nullopt, "");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == drill::errc::not_observed);
  h.runToEnd(*kill);

  auto id = h.runner->submit(EngineHarness::spec(kObserved));
  REQUIRE(id);
  bool checked = false;
  const auto d = runWithFault(h, *id, 1, 10, [&] {
    const auto now = h.clock.wallNow();
    auto future = h.runner->mark(*id, now + kSecond, std::nullopt, "");
    REQUIRE_FALSE(future);
    CHECK(future.error().code == drill::errc::invalid_request);
    auto early = h.runner->mark(*id, now - 3600 * kSecond, std::nullopt, "");
    REQUIRE_FALSE(early);
    CHECK(early.error().message.find("before the drill began") != std::string::npos);
    auto unknown = h.runner->mark(*id, std::nullopt, 7, "");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().message.find("broker: 7") != std::string::npos);
    auto controller = h.runner->mark(*id, std::nullopt, 100, "");
    CHECK_FALSE(controller);
    checked = true;
  });
  CHECK(checked);
  CHECK(d.state == "done");
  auto closed = h.runner->mark(*id, std::nullopt, std::nullopt, "");
  REQUIRE_FALSE(closed);
  CHECK(closed.error().code == drill::errc::drill_not_found);
}

TEST_CASE("a second observed drill on the cluster is refused while one runs", "[unit][drill]") {
  EngineHarness h;
  h.runner->start();
  auto first = h.runner->submit(EngineHarness::spec(kObserved));
  REQUIRE(first);
  auto second = h.runner->submit(EngineHarness::spec(kObserved));
  REQUIRE_FALSE(second);
  CHECK(second.error().code == drill::errc::guard_refused);
  REQUIRE(h.runner->abort(*first));
  h.runToEnd(*first);
}

}  // namespace observed_drill_test
