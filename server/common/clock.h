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
//
// The clock also does the waiting: every timed wait and sleep of the drill engine goes through
// it, so a test clock (tests/support) can run a whole drill in milliseconds. Deadlines are on
// the monotonic clock.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

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

  // Waits on `cv` with `lock` (held on entry and on return) until `ready()` or the monotonic
  // time reaches `deadline`; returns ready() as evaluated last. Whoever changes what `ready`
  // reads does so under the lock's mutex and notifies `cv`. This one waits on the system's
  // steady clock, which is CLOCK_MONOTONIC, the clock monoNow() reads in SystemClock.
  virtual bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, MonoMicros deadline,
                         const std::function<bool()>& ready) const;
  // Sleeps until the monotonic time reaches `deadline`; nothing wakes it early.
  virtual void sleepUntil(MonoMicros deadline) const;
  void sleepFor(std::int64_t micros) const { sleepUntil(monoNow() + micros); }
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

}  // namespace kfaild::common
