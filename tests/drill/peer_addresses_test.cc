// The peers an isolate names (server/drill/peer_addresses.h): the cluster's brokers and voters by
// every address their hosts resolve to, the inventory's addresses beside them, never the
// target's own, and a refusal naming a node the rules would need an address for.

#include "server/drill/peer_addresses.h"

#include <catch2/catch.hpp>
#include <map>

#include "server/fault/gray_fault.h"
#include "tests/drill/engine_harness.h"

namespace peer_addresses_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using Addresses = std::vector<std::string>;

namespace {

// A name service answering from `names` only.
drill::HostResolver resolverOf(std::map<std::string, Addresses> names) {
  return [names = std::move(names)](const std::string& host) {
    const auto found = names.find(host);
    return found == names.end() ? Addresses{} : found->second;
  };
}

config::NodeConfig node(std::int32_t id, common::NodeRole role = common::NodeRole::kBroker) {
  config::NodeConfig n;
  n.id = id;
  n.role = role;
  return n;
}

kafka::QuorumInfo quorumOf(const std::map<std::int32_t, std::string>& voters) {
  kafka::QuorumInfo q;
  q.api_version = 2;
  q.leader_id = voters.begin()->first;
  for (const auto& [id, host] : voters) {
    kafka::QuorumReplica r;
    r.replica_id = id;
    q.voters.push_back(r);
    q.endpoints[id] = {{"CONTROLLER", host, 9093}};
  }
  return q;
}

const std::vector<kafka::BrokerInfo> kBrokers = {{1, "b1", 9092}, {2, "b2", 9092}, {3, "b3", 9092}};

drill::DrillSpec isolateFrom(const std::string& from) {
  return EngineHarness::spec(R"({"fault":"isolate","target":{"broker":1},"options":{"from":")" +
                             from + R"("}})");
}

}  // namespace

TEST_CASE("a broker whose name resolves to two addresses is named by both", "[unit][drill]") {
  const auto resolve =
      resolverOf({{"b1", {"10.8.0.1"}}, {"b2", {"10.8.0.2", "fd00::2"}}, {"b3", {"10.8.0.3"}}});
  const auto found = drill::peersOf(1, {kBrokers, std::nullopt, "timed out"}, {}, {}, resolve);
  CHECK(found.peers.brokers == Addresses{"10.8.0.2", "fd00::2", "10.8.0.3"});
  CHECK(found.brokers_unaddressed.empty());
}

TEST_CASE("the active controller the inventory does not list is a quorum peer by its endpoint",
          "[unit][drill]") {
  const auto resolve = resolverOf({{"b1", {"10.8.0.1"}},
                                   {"b2", {"10.8.0.2"}},
                                   {"b3", {"10.8.0.3"}},
                                   {"c100", {"10.8.0.100"}},
                                   {"c101", {"10.8.0.101"}}});
  const std::vector<config::NodeConfig> inventory = {node(1), node(2), node(3),
                                                     node(100, common::NodeRole::kController)};
  const drill::NodeAddresses addresses = {{100, {"10.9.0.100"}}};
  auto quorum = quorumOf({{100, "c100"}, {101, "c101"}});
  quorum.leader_id = 101;
  const auto found = drill::peersOf(1, {kBrokers, quorum, ""}, inventory, addresses, resolve);
  CHECK(found.peers.quorum == Addresses{"10.8.0.100", "10.9.0.100", "10.8.0.101"});
  CHECK(found.quorum_fallback.empty());
  CHECK(drill::peerRefusal(isolateFrom("quorum"), 1, found).empty());
}

TEST_CASE("a broker on a data interface other than its inventory address is spared by from clients",
          "[unit][drill]") {
  // The inventory names the brokers by their management interface (an ssh node's default); they
  // replicate on the interface Metadata lists.
  const auto resolve = resolverOf(
      {{"b1", {"10.8.0.1"}}, {"b2", {"10.8.0.2"}}, {"b3", {"10.8.0.3"}}, {"c100", {"10.8.0.100"}}});
  const std::vector<config::NodeConfig> inventory = {node(1), node(2), node(3)};
  const drill::NodeAddresses addresses = {
      {1, {"192.168.5.1"}}, {2, {"192.168.5.2"}}, {3, {"192.168.5.3"}}};
  const auto found =
      drill::peersOf(1, {kBrokers, quorumOf({{100, "c100"}}), ""}, inventory, addresses, resolve);
  REQUIRE(drill::peerRefusal(isolateFrom("clients"), 1, found).empty());
  fault::IsolateSpec spec;
  spec.drill = "7";
  spec.from = fault::IsolateFrom::clients;
  spec.duration = std::chrono::seconds(20);
  spec.peers = found.peers;
  REQUIRE(fault::invalidReason(spec).empty());
  const auto script = fault::nftIsolateScript(spec, {});
  CHECK(script.find(
            "add element inet kfaild_d7 spare4 { 10.8.0.100, 10.8.0.2, 192.168.5.2, 10.8.0.3, "
            "192.168.5.3 }\n") != std::string::npos);
}

TEST_CASE("the target's own addresses are never a peer's", "[unit][drill]") {
  // Node 1 is a broker and a voter (combined mode); node 2 shares its name's addresses with it.
  const auto resolve = resolverOf({{"b1", {"10.8.0.1", "fd00::1"}},
                                   {"c1", {"10.7.0.1"}},
                                   {"b2", {"10.8.0.1"}},
                                   {"b3", {"10.8.0.3"}},
                                   {"c100", {"10.8.0.100"}}});
  const drill::NodeAddresses addresses = {{1, {"192.168.5.1"}}};
  const auto found = drill::peersOf(1, {kBrokers, quorumOf({{1, "c1"}, {100, "c100"}}), ""},
                                    {node(1)}, addresses, resolve);
  CHECK(found.peers.brokers == Addresses{"10.8.0.3"});
  CHECK(found.peers.quorum == Addresses{"10.8.0.100"});
  REQUIRE(found.brokers_unaddressed.size() == 1);
  CHECK(found.brokers_unaddressed[0] == "node 2 (its addresses 10.8.0.1 are node 1's own)");
}

TEST_CASE(
    "a node the cluster lists without an address refuses an isolate whose rules name its list",
    "[unit][drill]") {
  const auto resolve =
      resolverOf({{"b1", {"10.8.0.1"}}, {"b2", {"10.8.0.2"}}, {"c100", {"10.8.0.100"}}});
  // b3 does not resolve, and the inventory has no address for node 3; voter 101 is listed without
  // an endpoint.
  auto quorum = quorumOf({{100, "c100"}, {101, "c101"}});
  quorum.endpoints.erase(101);
  const std::vector<config::NodeConfig> inventory = {node(1), node(2), node(3)};
  const auto found = drill::peersOf(1, {kBrokers, quorum, ""}, inventory, {}, resolve);
  CHECK(found.brokers_unaddressed ==
        Addresses{"node 3 (b3:9092 does not resolve and the inventory has no address for it)"});
  CHECK(found.quorum_unaddressed == Addresses{"node 101 (DescribeQuorum lists no endpoint for it "
                                              "and the inventory has no address for it)"});
  CHECK(drill::peerRefusal(isolateFrom("brokers"), 1, found) ==
        "isolate from: brokers on node 1 is refused: kfaild has no address for node 3 (b3:9092 "
        "does not resolve "
        "and the inventory has no address for it), which its rules must name (set "
        "inventory[].address, or make "
        "the name resolve where kfaild runs)");
  CHECK_THAT(drill::peerRefusal(isolateFrom("quorum"), 1, found),
             Catch::Contains("node 101 (DescribeQuorum"));
  // from: clients spares both lists: a node left out of them would be cut as a client.
  const auto clients = drill::peerRefusal(isolateFrom("clients"), 1, found);
  CHECK_THAT(clients, Catch::Contains("node 3 (") && Catch::Contains("node 101 ("));
  // from: all names no peer; a throttle limits everyone.
  CHECK(drill::peerRefusal(isolateFrom("all"), 1, found).empty());
  const auto throttle =
      EngineHarness::spec(R"({"fault":"throttle","target":{"broker":1},"options":{"rate":1000}})");
  CHECK(drill::peerRefusal(throttle, 1, found).empty());

  SECTION("an inventory address stands in for a name that does not resolve") {
    const drill::NodeAddresses addresses = {{3, {"10.9.0.3"}}};
    const auto with = drill::peersOf(1, {kBrokers, quorum, ""}, inventory, addresses, resolve);
    CHECK(with.brokers_unaddressed.empty());
    CHECK(with.peers.brokers == Addresses{"10.8.0.2", "10.9.0.3"});
    CHECK(drill::peerRefusal(isolateFrom("brokers"), 1, with).empty());
  }
}

TEST_CASE(
    "without the quorum's endpoints the inventory's controllers stand in and an isolate says why "
    "when none "
    "has an address",
    "[unit][drill]") {
  const auto resolve =
      resolverOf({{"b1", {"10.8.0.1"}}, {"b2", {"10.8.0.2"}}, {"b3", {"10.8.0.3"}}});
  const std::vector<config::NodeConfig> inventory = {
      node(1), node(100, common::NodeRole::kController), node(101, common::NodeRole::kController)};
  const drill::NodeAddresses addresses = {{100, {"10.9.0.100"}}, {101, {"10.9.0.101"}}};

  SECTION("DescribeQuorum v1: the voters without endpoints") {
    auto quorum = quorumOf({{100, "c100"}, {101, "c101"}, {102, "c102"}});
    quorum.api_version = 1;
    quorum.endpoints.clear();
    const auto found = drill::peersOf(1, {kBrokers, quorum, ""}, inventory, addresses, resolve);
    CHECK(found.peers.quorum == Addresses{"10.9.0.100", "10.9.0.101"});
    CHECK(found.quorum_fallback == "DescribeQuorum v1 lists no endpoints");
    // Voter 102 is in neither the answer's endpoints nor the inventory.
    CHECK(found.quorum_unaddressed == Addresses{"node 102 (a voter; DescribeQuorum v1 lists no "
                                                "endpoints and the inventory has no address for "
                                                "it)"});
  }
  SECTION("the quorum not described") {
    const auto found = drill::peersOf(1, {kBrokers, std::nullopt, "DescribeQuorum timed out"},
                                      inventory, addresses, resolve);
    CHECK(found.peers.quorum == Addresses{"10.9.0.100", "10.9.0.101"});
    CHECK(found.quorum_fallback == "the KRaft quorum is not described: DescribeQuorum timed out");
    CHECK(drill::peerRefusal(isolateFrom("quorum"), 1, found).empty());
  }
  SECTION("the quorum not described and no controller in the inventory") {
    const auto found = drill::peersOf(1, {kBrokers, std::nullopt, "DescribeQuorum timed out"},
                                      {node(1)}, {}, resolve);
    CHECK(found.peers.quorum.empty());
    CHECK(drill::peerRefusal(isolateFrom("quorum"), 1, found) ==
          "isolate from: quorum on node 1 is refused: the KRaft quorum is not described: "
          "DescribeQuorum timed out, "
          "and no inventory controller has an address");
    CHECK(drill::peerRefusal(isolateFrom("brokers"), 1, found).empty());
  }
}

TEST_CASE("the inventory's addresses are every address each name resolves to", "[unit][drill]") {
  auto a = node(1);
  a.address = "k1.example";
  auto b = node(2);
  b.address = "nowhere.example";
  const auto addresses = drill::resolveNodeAddresses(
      {a, b, node(3)}, resolverOf({{"k1.example", {"10.0.0.1", "fd00::1"}}}));
  CHECK(addresses == drill::NodeAddresses{{1, {"10.0.0.1", "fd00::1"}}});
}

TEST_CASE("the system's resolver gives an IP literal as itself", "[unit][drill]") {
  CHECK(drill::resolveHost("10.1.2.3") == Addresses{"10.1.2.3"});
  CHECK(drill::resolveHost("fd00::7") == Addresses{"fd00::7"});
}

}  // namespace peer_addresses_test
