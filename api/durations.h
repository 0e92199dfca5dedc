#pragma once

// Durations as the API reports them: in seconds, as doubles.

#include <algorithm>
#include <cstdint>
#include <optional>

#include "server/common/clock.h"

namespace kfaild::api {

inline double seconds(std::int64_t micros) {
  return static_cast<double>(micros) / 1e6;
}

// The time since `last` (monotonic), never negative; nothing without one.
inline std::optional<double> ageSeconds(const std::optional<common::Instant>& last,
                                        common::MonoMicros now) {
  if (!last) return std::nullopt;
  return seconds(std::max<std::int64_t>(0, now - last->mono));
}

}  // namespace kfaild::api
