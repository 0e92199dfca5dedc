// What the engine asks of a gray fault before and at its injection (server/drill/fault_action.h):
// refusals of a node whose network namespace another node shares, and the broker's log.dirs for
// a disk filler.

#include "server/drill/fault_action.h"

#include <catch2/catch.hpp>

#include "tests/drill/engine_harness.h"
#include "tests/drill/fake_cluster.h"
#include "tests/support/manual_clock.h"

namespace fault_action_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;

namespace {

config::NodeConfig localNode(std::int32_t id, const std::string& netns) {
  config::NodeConfig n;
  n.id = id;
  n.local = config::LocalTarget{"/run/kafka" + std::to_string(id) + ".pid", {"true"}, ""};
  n.netns = netns;
  return n;
}

config::NodeConfig sshNode(std::int32_t id, const std::string& host) {
  config::NodeConfig n;
  n.id = id;
  n.ssh = config::SshTarget{};
  n.ssh->host = host;
  return n;
}

}  // namespace

TEST_CASE("an isolate or throttle of a node whose namespace or host another node shares is refused",
          "[unit][drill]") {
  kfaild::testing::ManualClock clock;
  kfaild::testing::FakeCluster cluster(clock);
  kfaild::testing::FakeInjector injector(cluster, 1, clock);
  const auto isolate = EngineHarness::spec(
      R"({"fault":"isolate","target":{"broker":1},"options":{"from":"all","duration_s":20}})");
  const auto throttle = EngineHarness::spec(
      R"({"fault":"throttle","target":{"broker":1},"options":{"rate":8000,"duration_s":20}})");
  const auto disk = EngineHarness::spec(
      R"({"fault":"disk_full","target":{"broker":1},"options":{"duration_s":20}})");

  SECTION("local: the same netns") {
    const std::vector<config::NodeConfig> inventory = {localNode(1, "n1"), localNode(2, "n1"),
                                                       localNode(3, "n3")};
    const drill::NodeAddresses addresses = {
        {1, {"10.0.0.1"}}, {2, {"10.0.0.1"}}, {3, {"10.0.0.3"}}};
    CHECK(drill::faultRefusal(isolate, inventory[0], injector, inventory, addresses) ==
          "isolate of node 1 is refused: node 2 shares its network namespace 'n1', so the rules "
          "would cut it "
          "too, and the drill's guards count only node 1");
    CHECK(drill::faultRefusal(throttle, inventory[0], injector, inventory, addresses)
              .find("node 2 shares") != std::string::npos);
    CHECK(drill::faultRefusal(isolate, inventory[2], injector, inventory, addresses).empty());
  }
  SECTION("ssh: the same host, by name or by address") {
    const std::vector<config::NodeConfig> inventory = {
        sshNode(1, "K1.example"), sshNode(2, "k1.example"), sshNode(3, "k3"), sshNode(4, "k4")};
    const drill::NodeAddresses addresses = {
        {1, {"10.0.0.1"}}, {2, {"10.0.0.1"}}, {3, {"10.0.0.3"}}, {4, {"10.0.0.3"}}};
    CHECK(drill::faultRefusal(isolate, inventory[0], injector, inventory, addresses)
              .find("node 2 shares its host") != std::string::npos);
    CHECK(drill::faultRefusal(isolate, inventory[2], injector, inventory, addresses)
              .find("node 4 shares its host") != std::string::npos);
    // A disk filler cuts no one's traffic.
    CHECK(drill::faultRefusal(disk, inventory[0], injector, inventory, addresses).empty());
  }
  SECTION("ssh: one of the addresses a host name resolves to") {
    const std::vector<config::NodeConfig> inventory = {sshNode(1, "k1"), sshNode(2, "k2")};
    const drill::NodeAddresses addresses = {{1, {"10.0.0.1", "fd00::1"}},
                                            {2, {"10.0.0.2", "fd00::1"}}};
    CHECK(drill::faultRefusal(isolate, inventory[0], injector, inventory, addresses)
              .find("node 2 shares its host") != std::string::npos);
  }
  SECTION("ssh nodes on hosts of their own") {
    const std::vector<config::NodeConfig> inventory = {sshNode(1, "k1"), sshNode(2, "k2")};
    const drill::NodeAddresses addresses = {{1, {"10.0.0.1"}}, {2, {"10.0.0.2"}}};
    CHECK(drill::faultRefusal(isolate, inventory[0], injector, inventory, addresses).empty());
  }
}

TEST_CASE("a disk filler is given the broker's log.dirs as it reports them", "[unit][drill]") {
  kfaild::testing::ManualClock clock;
  kfaild::testing::FakeCluster cluster(clock);
  kfaild::testing::FakeAdmin admin(cluster);
  kfaild::testing::FakeInjector injector(cluster, 1, clock);
  const auto disk = EngineHarness::spec(
      R"({"fault":"disk_full","target":{"broker":1},"options":{"duration_s":20}})");
  const auto kill = EngineHarness::spec(R"({"fault":"kill","target":{"broker":1}})");
  admin.broker_configs[1] = {{"log.dirs", {"/srv/disk1/kafka,/srv/disk2/kafka", 5}},
                             {"log.dir", {"/tmp/kafka-logs", 5}}};
  admin.broker_configs[2] = {{"log.dirs", {std::nullopt, 5}}, {"log.dir", {"/srv/k2", 5}}};
  CHECK(drill::logDirsFor(disk, admin, 1) ==
        std::vector<std::string>{"/srv/disk1/kafka", "/srv/disk2/kafka"});
  CHECK(drill::logDirsFor(disk, admin, 2) == std::vector<std::string>{"/srv/k2"});
  CHECK(drill::logDirsFor(disk, admin, 3).empty());
  CHECK(drill::logDirsFor(kill, admin, 1).empty());

  REQUIRE(drill::injectFault(injector, disk, 7, {}, drill::logDirsFor(disk, admin, 1)));
  const auto filled = injector.lastFill();
  REQUIRE(filled);
  CHECK(filled->drill == "7");
  CHECK(filled->log_dirs == std::vector<std::string>{"/srv/disk1/kafka", "/srv/disk2/kafka"});
}

TEST_CASE(
    "a pause is injected with its drill and pause_s, so that it expires by itself, and resumed by "
    "that drill",
    "[unit][drill]") {
  kfaild::testing::ManualClock clock;
  kfaild::testing::FakeCluster cluster(clock);
  kfaild::testing::FakeInjector injector(cluster, 1, clock);
  const auto pause =
      EngineHarness::spec(R"({"fault":"pause","target":{"broker":1},"options":{"pause_s":12}})");
  REQUIRE(drill::injectFault(injector, pause, 7, {}));
  const auto asked = injector.lastPause();
  REQUIRE(asked);
  CHECK(asked->drill == "7");
  CHECK(asked->duration == std::chrono::seconds(12));
  CHECK(asked->expiresAfter() == std::chrono::seconds(17));  // pause_s + kExpiryMargin
  REQUIRE(drill::undoFault(injector, pause, 7));
  CHECK(injector.resumedDrills() == std::vector<std::string>{"7"});
}

}  // namespace fault_action_test
