#include "server/common/clock.h"

#include <ctime>

namespace kfaild::common {
namespace {

std::int64_t readMicros(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1'000;
}

}  // namespace

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
