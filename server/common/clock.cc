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

WallMicros SystemClock::wallNow() const { return readMicros(CLOCK_REALTIME); }
MonoMicros SystemClock::monoNow() const { return readMicros(CLOCK_MONOTONIC); }

}  // namespace kfaild::common
