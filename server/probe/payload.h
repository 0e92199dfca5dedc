#pragma once

// The probe message body: "kfp1:<run id, 16 hex>:<seq>:<send wall µs>:" padded with '.' to the
// configured size. The run id tells this process's messages from those of an earlier run or of
// another kfaild probing the same topic.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kfaild::probe {

struct ProbePayload {
  std::uint64_t run_id = 0;
  std::int64_t seq = 0;
  std::int64_t send_wall_us = 0;
};

std::string encodePayload(const ProbePayload& payload, std::size_t size);
std::optional<ProbePayload> decodePayload(std::string_view bytes);

}  // namespace kfaild::probe
