#pragma once

// Paces the probe's sends on a fixed grid of deadlines (start + k × interval) of the monotonic
// clock. A sender that wakes late sends once and skips the ticks it missed instead of sending
// them in a burst, and the grid never drifts. Not thread-safe: owned by the sender thread.

#include <cstdint>

#include "server/common/clock.h"

namespace kfaild::probe {

class Pacer {
 public:
  Pacer(std::int64_t interval_us, common::MonoMicros start);

  common::MonoMicros deadline() const { return deadline_; }
  std::int64_t interval() const { return interval_us_; }

  // The sender woke at `now` (>= deadline()) and sends once. Advances the deadline to the next
  // grid point after `now` and returns how many grid points were skipped.
  std::int64_t fire(common::MonoMicros now);

  std::uint64_t fired() const { return fired_; }
  std::uint64_t skipped() const { return skipped_; }
  // Worst lateness of a send against its deadline, µs.
  std::int64_t maxLateness() const { return max_lateness_us_; }

 private:
  std::int64_t interval_us_;
  common::MonoMicros deadline_;
  std::uint64_t fired_ = 0;
  std::uint64_t skipped_ = 0;
  std::int64_t max_lateness_us_ = 0;
};

}  // namespace kfaild::probe
