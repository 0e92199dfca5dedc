#include "server/probe/payload.h"

#include <charconv>
#include <cstdio>

namespace kfaild::probe {
namespace {

constexpr std::string_view kMagic = "kfp1:";

bool readField(std::string_view& rest, std::int64_t& out, int base = 10) {
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + colon, out, base);
  if (ec != std::errc{} || ptr != rest.data() + colon) return false;
  rest.remove_prefix(colon + 1);
  return true;
}

}  // namespace

std::string encodePayload(const ProbePayload& payload, std::size_t size) {
  char head[96];
  const int n = std::snprintf(
      head, sizeof head, "kfp1:%016llx:%lld:%lld:", static_cast<unsigned long long>(payload.run_id),
      static_cast<long long>(payload.seq), static_cast<long long>(payload.send_wall_us));
  std::string out(head, static_cast<std::size_t>(n));
  if (out.size() < size) out.append(size - out.size(), '.');
  return out;
}

std::optional<ProbePayload> decodePayload(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  bytes.remove_prefix(kMagic.size());
  if (bytes.size() < 17 || bytes[16] != ':') return std::nullopt;
  ProbePayload p;
  auto [ptr, ec] = std::from_chars(bytes.data(), bytes.data() + 16, p.run_id, 16);
  if (ec != std::errc{} || ptr != bytes.data() + 16) return std::nullopt;
  bytes.remove_prefix(17);
  if (!readField(bytes, p.seq) || !readField(bytes, p.send_wall_us)) return std::nullopt;
  return p;
}

}  // namespace kfaild::probe
