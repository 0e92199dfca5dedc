#include "api/notification_endpoints.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "api/errc.h"
#include "api/query_params.h"
#include "api/resources.h"
#include "server/common/time_format.h"

namespace kfaild::api {

using nlohmann::json;

void NotificationEndpoints::registerOn(Router& router) {
  router.add(
      "GET", "/api/v1/notifications", [this](const Request& request) { return list(request); },
      RouteOptions{RouteAccess::kDefault, true});
}

Response NotificationEndpoints::list(const Request& request) const {
  auto query =
      QueryReader::create(request.query, {"state", "receiver", "event", "limit", "cursor"});
  if (!query) return badRequest(request, query.error());
  storage::NotificationQuery q;
  auto state = query->oneOf("state", {"queued", "delivering", "delivered", "failed"});
  if (!state) return badRequest(request, state.error());
  q.state = *state;
  auto event = query->oneOf("event", {"drill_finished", "drill_failed", "regression", "incident"});
  if (!event) return badRequest(request, event.error());
  q.event = *event;
  if (auto receiver = query->raw("receiver")) {
    if (receiver->empty())
      return badRequest(request, Error{make_error_code(api::errc::invalid_parameter),
                                       "receiver: must not be empty"});
    q.receiver = std::string(*receiver);
  }
  auto limit = query->integer("limit", 1, kNotificationsMaxLimit);
  if (!limit) return badRequest(request, limit.error());
  auto cursor = query->integer("cursor", 1, std::numeric_limits<std::int64_t>::max());
  if (!cursor) return badRequest(request, cursor.error());
  q.before_id = *cursor;
  const auto wanted = static_cast<std::size_t>(limit->value_or(kNotificationsDefaultLimit));
  q.limit = wanted + 1;
  auto rows = queue_.notifications(q);
  if (!rows) return storeFailure(request, rows.error());
  const bool more = rows->size() > wanted;
  if (more) rows->resize(wanted);
  json items = json::array();
  for (const auto& r : *rows) {
    json payload = json::parse(r.payload, nullptr, false);
    items.push_back({{"id", r.id},
                     {"receiver", r.receiver},
                     {"event", r.event},
                     {"dedup_key", r.dedup_key},
                     {"state", r.state},
                     {"attempts", r.attempts},
                     {"next_attempt", common::formatRfc3339(r.next_attempt_us)},
                     {"next_attempt_us", r.next_attempt_us},
                     {"last_error", r.last_error.empty() ? json(nullptr) : json(r.last_error)},
                     {"created", common::formatRfc3339(r.created_us)},
                     {"created_us", r.created_us},
                     {"delivered", timeOrNull(r.delivered_us)},
                     {"delivered_us", intOrNull(r.delivered_us)},
                     {"payload", payload.is_discarded() ? json(r.payload) : payload}});
  }
  return jsonResponse(
      200, {{"items", std::move(items)},
            {"count", rows->size()},
            {"next_cursor", more ? json(std::to_string(rows->back().id)) : json(nullptr)}});
}

void appendNotificationMetrics(PrometheusText& out, const notify::NotificationMetrics& m) {
  out.family("kfaild_notifications_total", "counter",
             "Notifications that reached a final state since kfaild started, by receiver, event "
             "and outcome "
             "(delivered, or failed: given up).");
  for (const auto& o : m.outcomes) {
    out.sample("kfaild_notifications_total",
               {{"receiver", o.receiver}, {"event", o.event}, {"outcome", o.outcome}}, o.count);
  }
  out.family("kfaild_notification_attempts_total", "counter",
             "Delivery attempts since kfaild started, by receiver and result (ok: 2xx; error: "
             "anything else).");
  for (const auto& a : m.attempts) {
    out.sample("kfaild_notification_attempts_total",
               {{"receiver", a.receiver}, {"result", a.result}}, a.count);
  }
  out.family("kfaild_notifications_queued", "gauge",
             "Notifications waiting for delivery (queued or being delivered).");
  for (const auto& q : m.queued)
    out.sample("kfaild_notifications_queued", {{"receiver", q.receiver}}, q.count);
  out.family("kfaild_notification_delivery_seconds", "summary",
             "Duration of successful delivery attempts.");
  out.sample("kfaild_notification_delivery_seconds_sum", {}, m.delivery_seconds_sum);
  out.sample("kfaild_notification_delivery_seconds_count", {}, m.delivery_seconds_count);
}

}  // namespace kfaild::api
