#pragma once

// The per-peer connection cap of the HTTP server (api/http_server.h): which peers count as one,
// and how many connections each has open.
//
// A peer is its IPv4 address, or the /64 of its IPv6 address: an IPv6 host is usually given a
// whole /64 and can take any address in it, so counting per address would let one host hold
// every slot. An IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack listener sees of an
// IPv4 client) is that IPv4 address. A link-local address keeps its zone (fe80::/64%eth0).
//
// PeerConnections is not thread-safe: the server calls it under its sessions mutex.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kfaild::api {

// "192.0.2.1" → "192.0.2.1"; "::ffff:192.0.2.1" → "192.0.2.1"; "2001:db8:1:2:a::5" →
// "2001:db8:1:2::/64". Text that is no IP address comes back as it is.
std::string peerBucket(std::string_view address);

class PeerConnections {
 public:
  explicit PeerConnections(std::size_t max_per_peer) : max_per_peer_(max_per_peer) {}

  // One more connection from `address`: its bucket, or nullopt when that bucket is full.
  std::optional<std::string> admit(std::string_view address);
  // A connection admitted under `bucket` ended.
  void release(const std::string& bucket);
  // Connections open in the bucket of `address`.
  std::size_t open(std::string_view address) const;

 private:
  std::size_t max_per_peer_;
  std::unordered_map<std::string, std::size_t> open_;  // by bucket; no zero entries
};

}  // namespace kfaild::api
