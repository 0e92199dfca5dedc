// The drill engine when something it runs misbehaves in a way no result type reports: text that
// is not UTF-8 in a fault's output, and an exception thrown on the engine's thread. kfaild keeps
// running and the node the drill took down comes back either way.

#include <catch2/catch.hpp>
#include <stdexcept>

#include "server/drill/drill_state.h"
#include "tests/drill/engine_harness.h"

namespace engine_failure_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using namespace std::chrono_literals;

namespace {

constexpr const char* kKillBroker1 = R"({"fault":"kill","target":{"broker":1}})";
constexpr const char* kHalfEuroSign = "\xE2\x82";     // the first two of U+20AC's three bytes
constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

TEST_CASE(
    "a fault whose stderr ends in half a UTF-8 character neither ends kfaild nor leaves the node "
    "down",
    "[unit][drill]") {
  EngineHarness h;
  h.injectors[1]->fault_output = std::string("; stderr: kill: warning ") + kHalfEuroSign;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  CHECK(d.state == "done");
  CHECK(h.injectors[1]->count("start") == 1);
  CHECK(h.cluster.available(1));
  CHECK(h.openRecoveries().empty());
  // The output is kept as far as it is text; the broken character is written as U+FFFD.
  const auto faults = h.events("fault");
  REQUIRE(faults.size() == 1);
  const auto detail = nlohmann::json::parse(faults[0].detail)["detail"].get<std::string>();
  CHECK(detail.find(std::string("kill: warning ") + kReplacement) != std::string::npos);
  CHECK(nlohmann::json::parse(d.result)["runs"][0]["fault_detail"] == detail);
}

TEST_CASE(
    "a drill whose engine throws with the node down is failed, the node comes back and drills run "
    "again",
    "[unit][drill]") {
  EngineHarness h;
  bool thrown = false;  // the engine's thread only
  h.injectors[1]->after_fault = [&thrown] {
    if (thrown) return;
    thrown = true;
    throw std::runtime_error("a bug in the engine");
  };
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(kKillBroker1));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK(d.reason.find("kfaild's drill engine failed during inject (a bug in the engine)") !=
        std::string::npos);
  // The journal written before the fault brings the node back, without waiting for a restart.
  for (int i = 0; i < 10'000 && !h.openRecoveries().empty(); ++i)
    h.clock.advanceToNextDeadline(50ms);
  CHECK(h.openRecoveries().empty());
  CHECK(h.cluster.available(1));
  CHECK(h.injectors[1]->count("start") == 1);
  // The engine still runs drills.
  auto next = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"));
  REQUIRE(next);
  CHECK(h.runToEnd(*next).state == "done");
  CHECK(h.cluster.available(2));
}

}  // namespace engine_failure_test
