// Recovery of gray faults on a simulated cluster and a manual clock: a heal that finds nothing
// there is a heal, a heal that keeps failing does not keep a stopped broker down, a failed
// injection is not healed, the journal's place is what recovery heals (whatever the node's
// configuration says now), a drill that cannot inject is refused at preflight, and the journal's
// replay at start runs on the engine's thread while an operator can resolve its entry.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "server/drill/drill_state.h"
#include "server/drill/errc.h"
#include "server/fault/gray_runner.h"
#include "tests/drill/engine_harness.h"

namespace gray_recovery_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kSecond = 1'000'000;

// A drill a kfaild that died left in `state`, and its journal entry for `node` (gray faults placed
// in `netns`), as inject() wrote them.
struct LeftBehind {
  std::int64_t drill_id = 0;
  std::int64_t entry_id = 0;
};

LeftBehind leftBehind(EngineHarness& h, const std::string& fault, std::int32_t node,
                      const std::string& action, const std::string& injection,
                      const std::string& netns) {
  storage::DrillRecord drill;
  drill.cluster = h.id;
  drill.fault = fault;
  drill.target = R"({"broker":)" + std::to_string(node) + "}";
  drill.options = R"({"duration_s":30})";
  drill.state = "observe";
  drill.created_us = h.clock.wallNow();
  auto drill_id = h.drills->createDrill(drill);
  REQUIRE(drill_id);
  storage::RecoveryEntry entry;
  entry.drill_id = *drill_id;
  entry.cluster = h.id;
  entry.node = node;
  entry.action = action;
  entry.phase = "observe";
  entry.created_us = h.clock.wallNow();
  entry.injection = injection;
  if (action == "heal") {
    entry.place_netns = netns;
    entry.place_table = "kfaild_d" + std::to_string(*drill_id);
  }
  auto entry_id = h.drills->addRecovery(entry);
  REQUIRE(entry_id);
  return {*drill_id, *entry_id};
}

Result<int> replay(EngineHarness& h, std::chrono::seconds timeout) {
  auto replaying =
      std::async(std::launch::async, [&] { return h.runner->recoverPending(timeout); });
  while (replaying.wait_for(0ms) != std::future_status::ready) h.clock.advanceToNextDeadline(50ms);
  return replaying.get();
}

template <typename Pred>
bool advanceUntil(EngineHarness& h, Pred pred) {
  for (int i = 0; i < 200'000 && !pred(); ++i) {
    h.clock.advanceToNextDeadline(50ms, 5 * kSecond);
    std::this_thread::yield();
  }
  return pred();
}

}  // namespace

TEST_CASE(
    "a heal that finds nothing there (the container stopped) still starts the broker and closes "
    "the entry",
    "[unit][drill]") {
  EngineHarness h;
  const auto left = leftBehind(h, "disk_full", 1, "heal", "done", "ns-1");
  h.cluster.down(1, false);
  // The real heal on a container that is not running: no namespace to enter, so nothing of the
  // drill's can be left in one.
  fault::NodeShell shell;
  shell.nft = [](const std::vector<std::string>&) -> Result<std::vector<std::string>> {
    return fault::faultError(fault::errc::invalid_state,
                             "container kbf-k1-1 is not running: no netns to enter");
  };
  int commands = 0;
  h.injectors[1]->real_heal = std::make_unique<fault::GrayRunner>(
      shell, h.clock,
      [&](const std::vector<std::string>&,
          std::chrono::milliseconds) -> Result<fault::CommandOutput> {
        ++commands;
        return fault::CommandOutput{0, "", ""};
      });

  const auto recovered = replay(h, 600s);
  REQUIRE(recovered);
  CHECK(*recovered == 1);
  CHECK(h.injectors[1]->count("heal") == 1);
  CHECK(h.injectors[1]->count("start") == 1);
  CHECK(commands == 0);
  CHECK(h.cluster.available(1));
  CHECK(h.openRecoveries().empty());
  const auto healed = h.events("healed");
  REQUIRE(healed.size() == 1);
  CHECK(nlohmann::json::parse(healed[0].detail)["detail"] ==
        "no table kfaild_d" + std::to_string(left.drill_id) +
            " can be left: container kbf-k1-1 is not running: no netns to enter");
}

TEST_CASE(
    "a heal that keeps failing does not keep a stopped broker down, and its entry stays open "
    "naming it",
    "[unit][drill]") {
  EngineHarness h;
  leftBehind(h, "disk_full", 1, "heal", "done", "ns-1");
  h.cluster.down(1, false);
  h.injectors[1]->heal_failures = -1;

  const auto recovered = replay(h, 60s);
  REQUIRE(recovered);
  CHECK(*recovered == 0);
  CHECK(h.injectors[1]->count("heal") >= 2);  // retried
  CHECK(h.injectors[1]->count("start") == 1);
  CHECK(h.cluster.available(1));
  const auto open = h.openRecoveries();
  REQUIRE(open.size() == 1);
  CHECK(open[0].last_error.find("its gray fault is not healed") != std::string::npos);
  CHECK(open[0].last_error.find("the fake nft refused to heal") != std::string::npos);
}

TEST_CASE(
    "recovery after a failed injection heals nothing, since nothing was placed, and closes the "
    "entry",
    "[unit][drill]") {
  EngineHarness h;
  h.injectors[2]->inject_failures = 1;
  // As on a host where the injection cannot run: the heal, on the same path, could not either.
  h.injectors[2]->heal_failures = -1;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"isolate","target":{"broker":2},"options":{"from":"brokers","duration_s":5}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK(d.reason.find("injecting isolate into node 2 failed: ") == 0);
  CHECK(d.reason.find("not back") == std::string::npos);
  CHECK(h.injectors[2]->count("isolate") == 1);
  CHECK(h.injectors[2]->count("heal") == 0);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE(
    "the journal records where a gray fault went, and recovery heals there after the node's netns "
    "changed",
    "[unit][drill]") {
  SECTION("the run's entry holds the place and the injection's outcome") {
    EngineHarness h;
    h.injectors[2]->netns = "kfl25000-n2";
    h.runner->start();
    std::optional<storage::RecoveryEntry> seen;
    h.drills->on_state = [&](const storage::DrillRecord& d) {
      if (d.state != "observe") return;
      auto open = h.drills->pendingRecoveries();
      if (open && !open->empty()) seen = open->front();
    };
    auto id = h.runner->submit(EngineHarness::spec(
        R"({"fault":"isolate","target":{"broker":2},"options":{"from":"brokers","duration_s":5}})"));
    REQUIRE(id);
    CHECK(h.runToEnd(*id).state == "done");
    REQUIRE(seen);
    CHECK(seen->injection == "done");
    CHECK(seen->place_netns == "kfl25000-n2");
    CHECK(seen->place_table == "kfaild_d" + std::to_string(*id));
  }
  SECTION("a kfaild restarted with another netns for the node heals the old one") {
    EngineHarness h;
    const auto left = leftBehind(h, "isolate", 2, "heal", "pending", "kfl25000-n2");
    h.injectors[2]->netns = "kfl26000-n2";
    h.injectors[2]->leaveGray(std::to_string(left.drill_id), "kfl25000-n2");
    // The sweep looks where the configuration says now; only the journal knows the old place.
    const auto recovered = replay(h, 600s);
    REQUIRE(recovered);
    CHECK(*recovered == 1);
    const auto at = h.injectors[2]->healedAt();
    REQUIRE(at.size() == 1);
    CHECK(at[0].netns == "kfl25000-n2");
    CHECK(at[0].table == "kfaild_d" + std::to_string(left.drill_id));
    CHECK(h.openRecoveries().empty());
  }
}

TEST_CASE(
    "a gray drill whose injection cannot run is refused at preflight with the reason, the node "
    "untouched",
    "[unit][drill]") {
  EngineHarness h;
  h.injectors[1]->check_problem =
      "ip netns exec kfl25000-n1 nft --check ... exited with 1: Error: Could not process rule: "
      "Operation not permitted";
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"isolate","target":{"broker":1},"options":{"from":"all","duration_s":5}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK(d.reason ==
        "refused: fake node 1 cannot inject isolate: ip netns exec kfl25000-n1 nft --check ... "
        "exited with 1: Error: "
        "Could not process rule: Operation not permitted");
  CHECK(h.injectors[1]->count("check") == 1);
  CHECK(h.injectors[1]->count("isolate") == 0);
  CHECK(h.injectors[1]->count("heal") == 0);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE(
    "the journal's replay at start runs on the engine's thread, and an entry resolved meanwhile "
    "stays resolved",
    "[unit][drill]") {
  EngineHarness h;
  const auto left = leftBehind(h, "kill", 1, "start", "done", "");
  h.cluster.down(1, false);
  h.injectors[1]->start_failures = -1;

  // Returns at once: the daemon goes on to start the probe and serve HTTP.
  h.runner->start(600s);
  REQUIRE(advanceUntil(h, [&] { return h.injectors[1]->count("start") >= 2; }));
  auto refused = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":2}})"));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("node 1 left down by drill " +
                                     std::to_string(left.drill_id)) == 0);

  auto resolved =
      storage::resolveRecovery(*h.drills, left.entry_id, "brought back by hand", h.clock.wallNow());
  REQUIRE(resolved);
  REQUIRE(*resolved);
  // The replay gives the entry up at its next wait, and does not reopen it.
  const auto starts = h.injectors[1]->count("start");
  for (int i = 0; i < 20; ++i) h.clock.advanceToNextDeadline(50ms, 5 * kSecond);
  CHECK(h.injectors[1]->count("start") <= starts + 1);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE(
    "a disk filler of a node that has left the inventory is freed where the journal placed it",
    "[unit][drill]") {
  EngineHarness h;
  const auto fill = h.dir / "fill";
  std::filesystem::create_directories(fill);
  storage::DrillRecord drill;
  drill.cluster = h.id;
  drill.fault = "disk_full";
  drill.target = R"({"broker":7})";
  drill.options = "{}";
  drill.state = "observe";
  drill.created_us = h.clock.wallNow();
  auto drill_id = h.drills->createDrill(drill);
  REQUIRE(drill_id);
  const auto name = "kfaild_fill_d" + std::to_string(*drill_id);
  storage::RecoveryEntry entry;
  entry.drill_id = *drill_id;
  entry.cluster = h.id;
  entry.node = 7;  // no longer in the inventory
  entry.action = "heal";
  entry.phase = "observe";
  entry.created_us = h.clock.wallNow();
  entry.injection = "done";
  entry.place_filler = (fill / name).string();
  REQUIRE(h.drills->addRecovery(entry));
  // The journal holds the fillers' stem; each run's filler is the stem and mktemp's suffix.
  std::ofstream(fill / (name + ".Ab12Cd")) << "filler of run 1";
  std::ofstream(fill / (name + ".Xy34Zw")) << "filler of run 2";
  std::ofstream(fill / "kafka-data") << "not ours";

  REQUIRE(replay(h, 60s));
  CHECK_FALSE(std::filesystem::exists(fill / (name + ".Ab12Cd")));
  CHECK_FALSE(std::filesystem::exists(fill / (name + ".Xy34Zw")));
  CHECK(std::filesystem::exists(fill / "kafka-data"));
  // The node itself cannot be brought back without its injector: the operator resolves the entry.
  CHECK(h.openRecoveries().size() == 1);
  CHECK(h.events("healed").size() == 1);
}

}  // namespace gray_recovery_test
