#pragma once

// RFC 3339 with microseconds, always UTC ("2026-11-30T04:38:30.123456Z"), and its inverse.

#include <optional>
#include <string>
#include <string_view>

#include "server/common/clock.h"

namespace kfaild::common {

std::string formatRfc3339(WallMicros t);

// Accepts "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)"; fraction up to 9 digits (truncated to µs).
// Returns nullopt on anything else.
std::optional<WallMicros> parseRfc3339(std::string_view text);

}  // namespace kfaild::common
