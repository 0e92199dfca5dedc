#pragma once

// Time seam. Every recorded event carries a wall-clock time (microseconds since the Unix epoch)
// so it lines up with broker logs; every duration inside one process is measured on a monotonic
// clock (microseconds since an arbitrary origin) so a clock step cannot fake a gap.
//
// One timebase: SystemClock's wall time is the monotonic clock plus an offset taken from
// CLOCK_REALTIME, so the difference of two wall times kfaild records is a monotonic duration
// (NTP slews both clocks alike). Only when CLOCK_REALTIME steps away by more than kClockStepUs is
// the offset taken again; steps() counts those, and an analysis spanning one is told so.
// Implementations are thread-safe.

#include <atomic>
#include <cstdint>

namespace kfaild::common {

using WallMicros = std::int64_t;  // µs since 1970-01-01T00:00:00Z
using MonoMicros = std::int64_t;  // µs on CLOCK_MONOTONIC

struct Instant {
  WallMicros wall;
  MonoMicros mono;
};

inline constexpr std::int64_t kClockStepUs = 1'000'000;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallMicros wallNow() const = 0;
  virtual MonoMicros monoNow() const = 0;
  // Both parts of one reading.
  virtual Instant now() const { return {wallNow(), monoNow()}; }
  // How often the wall-clock offset was taken again after a step (0 for clocks that never step).
  virtual std::uint64_t steps() const { return 0; }
};

class SystemClock final : public Clock {
 public:
  SystemClock();
  WallMicros wallNow() const override { return now().wall; }
  MonoMicros monoNow() const override;
  Instant now() const override;
  std::uint64_t steps() const override { return steps_.load(); }

 private:
  mutable std::atomic<std::int64_t> offset_us_;  // wall = mono + offset
  mutable std::atomic<std::uint64_t> steps_{0};
};

// A clock that moves only when a test tells it to. Wall and monotonic time advance together
// unless stepWall() simulates an NTP step.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(WallMicros wall_start = 1'700'000'000'000'000, MonoMicros mono_start = 0)
      : wall_(wall_start), mono_(mono_start) {}
  WallMicros wallNow() const override { return wall_.load(); }
  MonoMicros monoNow() const override { return mono_.load(); }
  void advance(std::int64_t micros) {
    wall_ += micros;
    mono_ += micros;
  }
  void stepWall(std::int64_t micros) { wall_ += micros; }

 private:
  std::atomic<WallMicros> wall_;
  std::atomic<MonoMicros> mono_;
};

}  // namespace kfaild::common
