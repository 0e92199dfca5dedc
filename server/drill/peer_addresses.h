#pragma once

// The addresses an isolate's rules name the target's peers by (fault::Peers), taken from the
// cluster as kfaild sees it, not from the inventory (the processes drills may target):
// - brokers: every broker the Metadata answer lists (KRaft: registered and unfenced), by its host;
// - quorum: every voter DescribeQuorum v2 lists, by the host of each of its endpoints (the
//   controllers' listeners). When the quorum is not described, or its answer lists no endpoints
//   (v0, v1), the inventory's controllers (`role: controller`) stand in, and quorum_fallback
//   says why.
// Every host is resolved to every address it has (IPv4 and IPv6), without duplicates. A node's
// inventory `address` (every address it resolves to) is added to what the cluster lists: an
// interface the cluster does not advertise (the inter-broker listener's, when clients reach the
// brokers on another), or the only address of a node the cluster does not list now (a broker
// down). The target's own addresses (its host, its endpoints, its `address`) are never a peer's.
//
// A node the cluster lists without an address (its host does not resolve and it has no inventory
// `address`, or every address it has is the target's) would be a hole in an isolation naming its
// list: peerRefusal refuses the drill naming it.
//
// Pure but resolveHost (getaddrinfo, blocking for as long as the system's resolver does) and
// resolveNodeAddresses with it; thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/config/config.h"
#include "server/drill/drill_spec.h"
#include "server/fault/gray_fault.h"
#include "server/kafka/cluster_types.h"

namespace kfaild::drill {

// Every address `host` (a name or an IP literal) resolves to, as IP literals without
// duplicates, in the resolver's order; empty when it does not resolve.
using HostResolver = std::function<std::vector<std::string>(const std::string& host)>;
// getaddrinfo's every answer, IPv4 and IPv6.
std::vector<std::string> resolveHost(const std::string& host);

// Each inventory node's addresses (inventory[].address, every one it resolves to), resolved once
// at start. A node without one (none configured, or a name that does not resolve) is absent.
using NodeAddresses = std::map<std::int32_t, std::vector<std::string>>;
// Logs each address that does not resolve.
NodeAddresses resolveNodeAddresses(const std::vector<config::NodeConfig>& inventory,
                                   const HostResolver& resolve);

// The cluster the peers are read from: Metadata's brokers, and the KRaft quorum (nullopt when it
// could not be described, `quorum_problem` saying why).
struct PeerSources {
  std::vector<kafka::BrokerInfo> brokers;
  std::optional<kafka::QuorumInfo> quorum;
  std::string quorum_problem;
};

struct PeerAddresses {
  fault::Peers peers;
  // The nodes of each list that have no address, each as "node 3 (<why>)".
  std::vector<std::string> quorum_unaddressed;
  std::vector<std::string> brokers_unaddressed;
  // Why the quorum is the inventory's controllers ("the KRaft quorum is not described: <why>",
  // "DescribeQuorum v1 lists no endpoints"); empty when it is DescribeQuorum's voters.
  std::string quorum_fallback;
};

// `target`'s peers on `cluster`, with the inventory's addresses (resolveNodeAddresses) added and
// `resolve` for the cluster's hosts.
PeerAddresses peersOf(std::int32_t target, const PeerSources& cluster,
                      const std::vector<config::NodeConfig>& inventory,
                      const NodeAddresses& inventory_addresses, const HostResolver& resolve);

// Why `spec` cannot be done on `target` with `found` (empty when it can): an isolate whose rules
// name a list (from: quorum the quorum, brokers the brokers, clients both: it spares them) with a
// node of it without an address, or with no quorum at all when the inventory stood in for it.
// `from: all` names no peer; other faults none either.
std::string peerRefusal(const DrillSpec& spec, std::int32_t target, const PeerAddresses& found);

}  // namespace kfaild::drill
