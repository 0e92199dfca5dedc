#pragma once

// Time seam. Every recorded event carries a wall-clock time (microseconds since the Unix epoch)
// so it lines up with broker logs; every duration inside one process is measured on a monotonic
// clock (microseconds since an arbitrary origin) so a clock step cannot fake a gap.
//
// One timebase: SystemClock's wall time is the monotonic clock plus an offset taken from
// CLOCK_REALTIME, so the difference of two wall times kfaild records is a monotonic duration
// (NTP slews both clocks alike). Only when CLOCK_REALTIME steps away by more than kClockStepUs is
// the offset taken again; steps() counts those, and an analysis spanning one is told so.
// A smaller step (a VM's guest agent or chrony setting the time by a few milliseconds) leaves the
// offset alone, so kfaild's times would drift off the system clock that broker logs are written
// on, unseen. SystemClock measures that drift instead (the system clock less its wall time, read
// again whenever it moves by more than kDriftSlackUs) and keeps its history, and fromSystem()
// places a time read on the system clock on kfaild's timebase with the drift in force then.
// Implementations are thread-safe.
//
// The clock also does the waiting: every timed wait and sleep of the drill engine goes through
// it, so a test clock (tests/support) can run a whole drill in milliseconds. Deadlines are on
// the monotonic clock.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

namespace kfaild::common {

using WallMicros = std::int64_t;  // µs since 1970-01-01T00:00:00Z
using MonoMicros = std::int64_t;  // µs on CLOCK_MONOTONIC

struct Instant {
  WallMicros wall;
  MonoMicros mono;
};

inline constexpr std::int64_t kClockStepUs = 1'000'000;
// A move of the drift smaller than this is not recorded: a quarter of a log line's resolution.
inline constexpr std::int64_t kDriftSlackUs = 250;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallMicros wallNow() const = 0;
  virtual MonoMicros monoNow() const = 0;
  // Both parts of one reading.
  virtual Instant now() const { return {wallNow(), monoNow()}; }
  // How often the wall-clock offset was taken again after a step (0 for clocks that never step).
  virtual std::uint64_t steps() const { return 0; }
  // A time read on the system clock of this host (CLOCK_REALTIME: a broker log line's) on this
  // clock's timebase, less the drift in force at that time; toSystem() is the inverse. Identity
  // for clocks that never drift.
  virtual WallMicros fromSystem(WallMicros system) const { return system; }
  virtual WallMicros toSystem(WallMicros wall) const { return wall; }
  // The largest drift (either sign, in µs) in force at any time in [from, to] of this clock's
  // wall time.
  virtual std::int64_t largestDrift(WallMicros /*from*/, WallMicros /*to*/) const { return 0; }

  // Waits on `cv` with `lock` (held on entry and on return) until `ready()` or the monotonic
  // time reaches `deadline`; returns ready() as evaluated last. Whoever changes what `ready`
  // reads does so under the lock's mutex and notifies `cv`. This one waits on the system's
  // steady clock, which is CLOCK_MONOTONIC, the clock monoNow() reads in SystemClock.
  virtual bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         MonoMicros deadline, const std::function<bool()>& ready) const;
  // Sleeps until the monotonic time reaches `deadline`; nothing wakes it early.
  virtual void sleepUntil(MonoMicros deadline) const;
  void sleepFor(std::int64_t micros) const { sleepUntil(monoNow() + micros); }
};

// Where SystemClock reads the time; tests give their own.
class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual std::int64_t monotonicMicros() const = 0;
  virtual std::int64_t realtimeMicros() const = 0;
};

class SystemClock final : public Clock {
 public:
  SystemClock();
  // `source` outlives the clock.
  explicit SystemClock(const TimeSource& source);
  WallMicros wallNow() const override { return now().wall; }
  MonoMicros monoNow() const override;
  Instant now() const override;
  std::uint64_t steps() const override { return steps_.load(); }
  WallMicros fromSystem(WallMicros system) const override;
  WallMicros toSystem(WallMicros wall) const override;
  std::int64_t largestDrift(WallMicros from, WallMicros to) const override;

  // How many drift changes are kept; the oldest go first.
  static constexpr std::size_t kDriftHistory = 4096;

 private:
  struct DriftPoint {
    WallMicros from;     // on this clock's timebase
    std::int64_t drift;  // the system clock − this clock's wall time, from then on
  };
  // A reading of the drift that no preemption between the two clock reads can fake: the
  // narrowest of three realtime reads bracketed by monotonic ones. nullopt if all were wider
  // than 20 µs.
  std::optional<std::int64_t> carefulDrift(std::int64_t offset) const;
  void noteDrift(MonoMicros mono, std::int64_t offset, std::int64_t measured) const;
  // The drift in force at `at`: a time on this clock's timebase, or one the system clock read
  // (`on_system_clock`). With mutex_ held.
  std::int64_t driftAt(std::int64_t at, bool on_system_clock) const;

  const TimeSource& source_;
  mutable std::atomic<std::int64_t> offset_us_;  // wall = mono + offset
  mutable std::atomic<std::uint64_t> steps_{0};
  mutable std::atomic<std::int64_t> drift_us_{0};  // the last recorded drift
  mutable std::mutex mutex_;
  mutable std::deque<DriftPoint> history_;  // by `from`, ascending
};

}  // namespace kfaild::common
