#pragma once

// Notifications over HTTP, and their block of /metrics.
//
//   GET /api/v1/notifications   filters state, receiver, event; cursor pagination, newest first
//                               (like GET /api/v1/audit). Readable like drills (the viewer when
//                               read_auth is on); redacted for non-operators, since a payload or
//                               an error may name a receiver's host (a Slack webhook URL is a
//                               secret). Receivers' URLs and headers are never listed.
//
// appendNotificationMetrics writes kfaild_notifications_total{receiver,event,outcome},
// kfaild_notification_attempts_total{receiver,result}, kfaild_notifications_queued{receiver} and
// kfaild_notification_delivery_seconds (sum and count of the successful attempts).

#include <cstdint>

#include "api/http_message.h"
#include "api/prometheus_text.h"
#include "api/router.h"
#include "server/notify/notification_status.h"
#include "storage/notification_queue.h"

namespace kfaild::api {

inline constexpr std::int64_t kNotificationsMaxLimit = 500;
inline constexpr std::int64_t kNotificationsDefaultLimit = 50;

class NotificationEndpoints {
 public:
  explicit NotificationEndpoints(const storage::NotificationQueue& queue) : queue_(queue) {}
  void registerOn(Router& router);
  Response list(const Request& request) const;

 private:
  const storage::NotificationQueue& queue_;
};

void appendNotificationMetrics(PrometheusText& out, const notify::NotificationMetrics& metrics);

}  // namespace kfaild::api
