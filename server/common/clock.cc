#include "server/common/clock.h"

#include <chrono>
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

}  // namespace

bool Clock::waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, MonoMicros deadline,
                      const std::function<bool()>& ready) const {
  return cv.wait_until(lock, steadyAt(deadline), ready);
}

void Clock::sleepUntil(MonoMicros deadline) const { std::this_thread::sleep_until(steadyAt(deadline)); }

SystemClock::SystemClock()
    : offset_us_(readMicros(CLOCK_REALTIME) - readMicros(CLOCK_MONOTONIC)) {}

MonoMicros SystemClock::monoNow() const { return readMicros(CLOCK_MONOTONIC); }

Instant SystemClock::now() const {
  const MonoMicros mono = readMicros(CLOCK_MONOTONIC);
  const WallMicros real = readMicros(CLOCK_REALTIME);
  std::int64_t offset = offset_us_.load(std::memory_order_relaxed);
  const std::int64_t drift = real - (mono + offset);
  if (drift > kClockStepUs || drift < -kClockStepUs) {
    // A step of the system clock (an operator or NTP setting it): follow it so recorded times
    // still line up with broker logs, and count it.
    if (offset_us_.compare_exchange_strong(offset, real - mono)) ++steps_;
    offset = offset_us_.load(std::memory_order_relaxed);
  }
  return {mono + offset, mono};
}

}  // namespace kfaild::common
