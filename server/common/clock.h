#pragma once

// Time seam. Every recorded event carries a wall-clock time (CLOCK_REALTIME, microseconds since
// the Unix epoch) so it lines up with broker logs; every duration inside one process is measured
// on a monotonic clock (microseconds since an arbitrary origin) so a clock step cannot fake a gap.
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

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallMicros wallNow() const = 0;
  virtual MonoMicros monoNow() const = 0;
  Instant now() const { return {wallNow(), monoNow()}; }
};

class SystemClock final : public Clock {
 public:
  WallMicros wallNow() const override;
  MonoMicros monoNow() const override;
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
