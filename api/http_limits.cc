#include "api/http_limits.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace kfaild::api {

std::string peerBucket(std::string_view address) {
  const auto percent = address.find('%');
  const std::string host(address.substr(0, percent));
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return std::string(address);
  char text[INET6_ADDRSTRLEN] = {};
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    in_addr v4{};
    std::memcpy(&v4, &v6.s6_addr[12], sizeof v4);
    inet_ntop(AF_INET, &v4, text, sizeof text);
    return text;
  }
  std::memset(&v6.s6_addr[8], 0, 8);
  inet_ntop(AF_INET6, &v6, text, sizeof text);
  std::string bucket = std::string(text) + "/64";
  if (percent != std::string_view::npos) bucket += address.substr(percent);
  return bucket;
}

std::optional<std::string> PeerConnections::admit(std::string_view address) {
  std::string bucket = peerBucket(address);
  auto& open = open_[bucket];
  if (open >= max_per_peer_) {
    if (open == 0) open_.erase(bucket);
    return std::nullopt;
  }
  ++open;
  return bucket;
}

void PeerConnections::release(const std::string& bucket) {
  const auto it = open_.find(bucket);
  if (it != open_.end() && --it->second == 0) open_.erase(it);
}

std::size_t PeerConnections::open(std::string_view address) const {
  const auto it = open_.find(peerBucket(address));
  return it == open_.end() ? 0 : it->second;
}

}  // namespace kfaild::api
