#include "server/probe/pacer.h"

#include <algorithm>

namespace kfaild::probe {

Pacer::Pacer(std::int64_t interval_us, common::MonoMicros start)
    : interval_us_(interval_us), deadline_(start) {}

std::int64_t Pacer::fire(common::MonoMicros now) {
  const std::int64_t late = std::max<std::int64_t>(0, now - deadline_);
  const std::int64_t missed = late / interval_us_;
  max_lateness_us_ = std::max(max_lateness_us_, late - missed * interval_us_);
  deadline_ += (missed + 1) * interval_us_;
  ++fired_;
  skipped_ += static_cast<std::uint64_t>(missed);
  return missed;
}

}  // namespace kfaild::probe
