#pragma once

// What /metrics shows of notifications (api/endpoints.cc), without the API depending on the
// notifier: deliveries by outcome since kfaild started, attempts, and the queue as it stands.
// Implementations are thread-safe.

#include <cstdint>
#include <string>
#include <vector>

namespace kfaild::notify {

struct NotificationMetrics {
  struct Outcome {
    std::string receiver;
    std::string event;
    std::string outcome;  // delivered | failed (given up)
    std::uint64_t count = 0;
  };
  struct Attempts {
    std::string receiver;
    std::string result;  // ok | error
    std::uint64_t count = 0;
  };
  struct Queued {
    std::string receiver;
    std::int64_t count = 0;  // rows queued or delivering
  };
  std::vector<Outcome> outcomes;
  std::vector<Attempts> attempts;
  std::vector<Queued> queued;       // one per configured receiver, 0 included
  double delivery_seconds_sum = 0;  // time spent in successful deliveries' last attempt
  std::uint64_t delivery_seconds_count = 0;
};

class NotificationStatus {
 public:
  virtual ~NotificationStatus() = default;
  virtual NotificationMetrics notificationMetrics() const = 0;
};

}  // namespace kfaild::notify
