#include "server/common/clock.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <thread>

namespace kfaild::common {
namespace {

std::int64_t readMicros(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1'000;
}

std::chrono::steady_clock::time_point steadyAt(MonoMicros deadline) {
  return std::chrono::steady_clock::time_point(std::chrono::microseconds(deadline));
}

// realtime − monotonic from the narrowest of `tries` realtime reads each bracketed by monotonic
// ones, and that bracket's width. Two plain reads are off by however long the thread was
// preempted between them: milliseconds on a busy machine.
struct Bracketed {
  std::int64_t offset = 0;
  std::int64_t width = -1;
};

Bracketed narrowestOffset(const TimeSource& source, int tries) {
  Bracketed best;
  for (int i = 0; i < tries && best.width != 0; ++i) {
    const auto before = source.monotonicMicros();
    const auto real = source.realtimeMicros();
    const auto after = source.monotonicMicros();
    if (best.width < 0 || after - before < best.width)
      best = {real - (before + (after - before) / 2), after - before};
  }
  return best;
}

class KernelTime final : public TimeSource {
 public:
  std::int64_t monotonicMicros() const override { return readMicros(CLOCK_MONOTONIC); }
  std::int64_t realtimeMicros() const override { return readMicros(CLOCK_REALTIME); }
};

// A function's static: another translation unit's static clock may be made before this one's.
const TimeSource& kernelTime() {
  static const KernelTime time;
  return time;
}

}  // namespace

bool Clock::waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                      MonoMicros deadline, const std::function<bool()>& ready) const {
  return cv.wait_until(lock, steadyAt(deadline), ready);
}

void Clock::sleepUntil(MonoMicros deadline) const {
  std::this_thread::sleep_until(steadyAt(deadline));
}

SystemClock::SystemClock() : SystemClock(kernelTime()) {}

// The offset from a careful reading: taken from two plain reads, a preemption between them at
// kfaild's start would put every time it records off the system clock, for good.
SystemClock::SystemClock(const TimeSource& source)
    : source_(source), offset_us_(narrowestOffset(source, 5).offset) {}

MonoMicros SystemClock::monoNow() const {
  return source_.monotonicMicros();
}

Instant SystemClock::now() const {
  const MonoMicros mono = source_.monotonicMicros();
  const WallMicros real = source_.realtimeMicros();
  std::int64_t offset = offset_us_.load(std::memory_order_relaxed);
  const std::int64_t drift = real - (mono + offset);
  if (drift > kClockStepUs || drift < -kClockStepUs) {
    // A step of the system clock (an operator or NTP setting it): follow it so recorded times
    // still line up with broker logs, and count it. The drift starts again from 0.
    if (offset_us_.compare_exchange_strong(offset, real - mono)) {
      ++steps_;
      noteDrift(mono, real - mono, 0);
    }
    offset = offset_us_.load(std::memory_order_relaxed);
  } else if (const auto moved = drift - drift_us_.load(std::memory_order_relaxed);
             moved > kDriftSlackUs || moved < -kDriftSlackUs) {
    // A smaller step, or only this thread preempted between the two reads: read again with care.
    if (const auto measured = carefulDrift(offset)) noteDrift(mono, offset, *measured);
  }
  return {mono + offset, mono};
}

std::optional<std::int64_t> SystemClock::carefulDrift(std::int64_t offset) const {
  // A bracket of 20 µs is tight enough: the drift matters to a log line's millisecond.
  constexpr std::int64_t kWidestBracketUs = 20;
  const auto b = narrowestOffset(source_, 3);
  if (b.width > kWidestBracketUs) return std::nullopt;
  return b.offset - offset;
}

void SystemClock::noteDrift(MonoMicros mono, std::int64_t offset, std::int64_t measured) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto last = history_.empty() ? std::int64_t{0} : history_.back().drift;
  const auto moved = measured - last;
  if (std::llabs(moved) <= kDriftSlackUs) {  // another thread recorded it, or a wide read
    drift_us_.store(last, std::memory_order_relaxed);
    return;
  }
  history_.push_back({mono + offset, measured});
  while (history_.size() > kDriftHistory) history_.pop_front();
  drift_us_.store(measured, std::memory_order_relaxed);
}

std::int64_t SystemClock::driftAt(std::int64_t at, bool on_system_clock) const {
  // The last change that started at or before `at`, its start on this clock's timebase or, for a
  // time read on the system clock, as that clock read it (from + drift).
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    if (it->from + (on_system_clock ? it->drift : 0) <= at) return it->drift;
  }
  return 0;
}

WallMicros SystemClock::fromSystem(WallMicros system) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return system - driftAt(system, true);
}

WallMicros SystemClock::toSystem(WallMicros wall) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return wall + driftAt(wall, false);
}

std::int64_t SystemClock::largestDrift(WallMicros from, WallMicros to) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::int64_t largest = driftAt(from, false);
  for (const auto& p : history_) {
    if (p.from > from && p.from <= to && std::llabs(p.drift) > std::llabs(largest))
      largest = p.drift;
  }
  return largest;
}

}  // namespace kfaild::common
