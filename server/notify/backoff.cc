#include "server/notify/backoff.h"

#include <algorithm>

namespace kfaild::notify {

std::int64_t retryDelayUs(const config::RetryConfig& retry, std::int64_t failed_attempts,
                          double jitter) {
  std::int64_t nominal = retry.initial_us;
  for (std::int64_t i = 1; i < failed_attempts && nominal < retry.max_us; ++i) nominal *= 2;
  nominal = std::min(nominal, retry.max_us);
  jitter = std::clamp(jitter, 0.0, 1.0);
  return nominal / 2 + static_cast<std::int64_t>(static_cast<double>(nominal / 2) * jitter);
}

bool giveUp(const config::RetryConfig& retry, std::int64_t failed_attempts, std::int64_t created_us,
            std::int64_t next_attempt_us) {
  return failed_attempts >= retry.max_attempts || next_attempt_us - created_us > retry.max_age_us;
}

}  // namespace kfaild::notify
