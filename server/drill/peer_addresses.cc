#include "server/drill/peer_addresses.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>

namespace kfaild::drill {

using common::NodeRole;

namespace {

using Hosts = std::vector<std::pair<std::string, int>>;
using Voters = std::vector<kafka::QuorumReplica>;

void addNew(std::vector<std::string>& to, const std::vector<std::string>& addresses) {
  for (const auto& a : addresses) {
    if (std::find(to.begin(), to.end(), a) == to.end()) to.push_back(a);
  }
}

bool isController(const config::NodeConfig& node) {
  return node.role == NodeRole::kController;
}

// One node as a list names it.
struct ListedNode {
  std::int32_t id = -1;
  std::vector<std::string> hosts;      // "host:port", as the cluster lists it
  std::vector<std::string> addresses;  // those hosts resolved, and its inventory addresses
  std::string no_host;                 // why `hosts` is empty, when it is
};

// A node's ListedNode: its hosts resolved, its inventory addresses added.
class NodeLookup {
 public:
  NodeLookup(const NodeAddresses& inventory, const HostResolver& resolve)
      : inventory_(inventory), resolve_(resolve) {}

  ListedNode operator()(std::int32_t id, const Hosts& hosts, std::string no_host = {}) const {
    ListedNode n{id, {}, {}, std::move(no_host)};
    for (const auto& [host, port] : hosts) {
      n.hosts.push_back(host + ":" + std::to_string(port));
      addNew(n.addresses, resolve_(host));
    }
    if (const auto own = inventory_.find(id); own != inventory_.end()) {
      addNew(n.addresses, own->second);
    }
    return n;
  }

 private:
  const NodeAddresses& inventory_;
  const HostResolver& resolve_;
};

std::string whyUnaddressed(const ListedNode& n, std::int32_t target) {
  if (!n.addresses.empty()) {
    return "its addresses " + fault::join(n.addresses, ", ") + " are node " +
           std::to_string(target) + "'s own";
  }
  if (n.hosts.empty()) return n.no_host;
  return fault::join(n.hosts, ", ") + (n.hosts.size() > 1 ? " do" : " does") +
         " not resolve and the inventory has no address for it";
}

// Each node's addresses but the target's (`own`) into `list`; a node left with none into
// `unaddressed`.
void fill(const std::vector<ListedNode>& nodes, const std::vector<std::string>& own,
          std::int32_t target, std::vector<std::string>& list,
          std::vector<std::string>& unaddressed) {
  for (const auto& n : nodes) {
    std::vector<std::string> theirs;
    for (const auto& a : n.addresses) {
      if (std::find(own.begin(), own.end(), a) == own.end()) theirs.push_back(a);
    }
    if (theirs.empty()) {
      unaddressed.push_back("node " + std::to_string(n.id) + " (" + whyUnaddressed(n, target) +
                            ")");
    }
    addNew(list, theirs);
  }
}

Hosts endpointsOf(const kafka::QuorumInfo& quorum, std::int32_t id) {
  Hosts hosts;
  if (const auto listed = quorum.endpoints.find(id); listed != quorum.endpoints.end()) {
    for (const auto& e : listed->second) hosts.emplace_back(e.host, e.port);
  }
  return hosts;
}

// Why the inventory's controllers stand in for the quorum's endpoints; empty when they do not.
std::string fallbackReason(const PeerSources& cluster) {
  if (!cluster.quorum) {
    return "the KRaft quorum is not described: " +
           (cluster.quorum_problem.empty() ? std::string("no answer yet") : cluster.quorum_problem);
  }
  if (cluster.quorum->endpoints.empty()) {
    return "DescribeQuorum v" + std::to_string(cluster.quorum->api_version) + " lists no endpoints";
  }
  return {};
}

}  // namespace

std::vector<std::string> resolveHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return {};
  std::vector<std::string> out;
  for (const auto* a = found; a != nullptr; a = a->ai_next) {
    const void* raw = nullptr;
    if (a->ai_family == AF_INET) {
      raw = &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
    } else if (a->ai_family == AF_INET6) {
      raw = &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
    }
    char text[INET6_ADDRSTRLEN] = {};
    if (raw != nullptr && inet_ntop(a->ai_family, raw, text, sizeof text) != nullptr) {
      addNew(out, {text});
    }
  }
  freeaddrinfo(found);
  return out;
}

NodeAddresses resolveNodeAddresses(const std::vector<config::NodeConfig>& inventory,
                                   const HostResolver& resolve) {
  NodeAddresses out;
  for (const auto& node : inventory) {
    if (node.address.empty()) continue;
    if (auto addresses = resolve(node.address); !addresses.empty()) {
      out[node.id] = std::move(addresses);
    } else {
      spdlog::error(
          "inventory node {}: address '{}' does not resolve; an isolate naming the node "
          "is refused unless the cluster gives it an address",
          node.id, node.address);
    }
  }
  return out;
}

PeerAddresses peersOf(std::int32_t target, const PeerSources& cluster,
                      const std::vector<config::NodeConfig>& inventory,
                      const NodeAddresses& inventory_addresses, const HostResolver& resolve) {
  PeerAddresses out;
  out.quorum_fallback = fallbackReason(cluster);
  const bool by_endpoints = out.quorum_fallback.empty();
  const NodeLookup look(inventory_addresses, resolve);

  Hosts target_hosts;
  for (const auto& b : cluster.brokers) {
    if (b.id == target) target_hosts.emplace_back(b.host, b.port);
  }
  if (by_endpoints) {
    for (auto& host : endpointsOf(*cluster.quorum, target)) target_hosts.push_back(host);
  }
  const auto own = look(target, target_hosts).addresses;

  std::vector<ListedNode> brokers;
  std::set<std::int32_t> listed_brokers;
  for (const auto& b : cluster.brokers) {
    listed_brokers.insert(b.id);
    if (b.id != target) brokers.push_back(look(b.id, {{b.host, b.port}}));
  }
  // Without endpoints the voters still count: one the inventory has no address for is a hole.
  std::vector<ListedNode> quorum;
  std::set<std::int32_t> voters;
  const auto voter_without = by_endpoints ? std::string("DescribeQuorum lists no endpoint for it")
                                          : "a voter; " + out.quorum_fallback;
  for (const auto& v : cluster.quorum ? cluster.quorum->voters : Voters{}) {
    voters.insert(v.replica_id);
    if (v.replica_id == target) continue;
    const auto hosts = by_endpoints ? endpointsOf(*cluster.quorum, v.replica_id) : Hosts{};
    quorum.push_back(
        look(v.replica_id, hosts, voter_without + " and the inventory has no address for it"));
  }
  // The inventory's nodes the cluster does not list now, by their inventory addresses. One
  // without any matters only as a controller while the voters are not known.
  for (const auto& n : inventory) {
    const bool controller = isController(n);
    if (n.id == target || (controller ? voters : listed_brokers).count(n.id)) continue;
    if (!inventory_addresses.count(n.id) && (!controller || cluster.quorum)) continue;
    const auto without = "an inventory controller without an address; " + out.quorum_fallback;
    (controller ? quorum : brokers).push_back(look(n.id, {}, controller ? without : ""));
  }
  fill(brokers, own, target, out.peers.brokers, out.brokers_unaddressed);
  fill(quorum, own, target, out.peers.quorum, out.quorum_unaddressed);
  return out;
}

std::string peerRefusal(const DrillSpec& spec, std::int32_t target, const PeerAddresses& found) {
  if (spec.fault != FaultType::kIsolate) return {};
  const auto from = spec.options.from;
  // from: clients names both lists too: it spares them, so a peer left out would be cut.
  const bool clients = from == fault::IsolateFrom::clients;
  const bool names_quorum = clients || from == fault::IsolateFrom::quorum;
  const bool names_brokers = clients || from == fault::IsolateFrom::brokers;
  std::vector<std::string> holes;
  if (names_quorum) addNew(holes, found.quorum_unaddressed);
  if (names_brokers) addNew(holes, found.brokers_unaddressed);
  const auto head = "isolate from: " + fault::toString(from) + " on node " +
                    std::to_string(target) + " is refused: ";
  if (!holes.empty()) {
    return head + "kfaild has no address for " + fault::join(holes, "; ") +
           ", which its rules must name (set inventory[].address, or make the name resolve where "
           "kfaild runs)";
  }
  if (names_quorum && found.peers.quorum.empty() && !found.quorum_fallback.empty()) {
    return head + found.quorum_fallback + ", and no inventory controller has an address";
  }
  return {};
}

}  // namespace kfaild::drill
