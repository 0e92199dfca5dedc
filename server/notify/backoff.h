#pragma once

// The retry schedule of a notification (pure). After the n-th failed attempt (n >= 1) the next
// one waits min(max, initial × 2^(n-1)) scaled by a jitter factor in [0.5, 1] ("equal jitter"),
// so receivers that come back are not hit by every kfaild at the same instant yet no wait is
// shorter than half the nominal one. A notification is given up (state failed) after
// max_attempts attempts, or when the next attempt would come later than max_age after it was
// queued.

#include <cstdint>

#include "server/config/config.h"

namespace kfaild::notify {

// `jitter` in [0, 1] (0: half the nominal delay, 1: all of it).
std::int64_t retryDelayUs(const config::RetryConfig& retry, std::int64_t failed_attempts,
                          double jitter);

bool giveUp(const config::RetryConfig& retry, std::int64_t failed_attempts, std::int64_t created_us,
            std::int64_t next_attempt_us);

}  // namespace kfaild::notify
