#include "api/audit_endpoints.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "api/query_params.h"
#include "api/resources.h"
#include "server/common/time_format.h"

namespace kfaild::api {

using nlohmann::json;

void AuditRecorder::operator()(const AuditEntry& entry) {
  storage::AuditRecord record;
  record.time_us = clock_.wallNow();
  record.role = roleName(entry.role);
  record.remote = entry.remote_address;
  record.method = entry.method;
  record.route = entry.route;
  record.body_sha256 = entry.body_sha256;
  record.body_bytes = static_cast<std::int64_t>(entry.body_bytes);
  record.status = entry.status;
  record.problem = entry.problem;
  if (auto appended = log_.append(record); !appended) {
    failed_.fetch_add(1);
    spdlog::warn("audit: cannot record {} {} ({}): {}", record.method, record.route, record.status,
                 appended.error().describe());
    return;
  }
  written_.fetch_add(1);
}

void AuditEndpoints::registerOn(Router& router) {
  router.add("GET", "/api/v1/audit", [this](const Request& request) { return list(request); },
             RouteOptions{RouteAccess::kOperator, false});
}

Response AuditEndpoints::list(const Request& request) const {
  auto query = QueryReader::create(request.query, {"from", "to", "limit", "cursor"});
  if (!query) return badRequest(request, query.error());
  storage::AuditQuery q;
  auto from = query->time("from");
  if (!from) return badRequest(request, from.error());
  q.from_us = *from;
  auto to = query->time("to");
  if (!to) return badRequest(request, to.error());
  q.to_us = *to;
  if (*from && *to && **from >= **to) {
    return problem(ProblemType::kInvalidParameter, "from: must be before to", request.path);
  }
  auto limit = query->integer("limit", 1, kAuditMaxLimit);
  if (!limit) return badRequest(request, limit.error());
  auto cursor = query->integer("cursor", 1, std::numeric_limits<std::int64_t>::max());
  if (!cursor) return badRequest(request, cursor.error());
  q.before_id = *cursor;
  const auto wanted = static_cast<std::size_t>(limit->value_or(kAuditDefaultLimit));
  q.limit = wanted + 1;
  auto rows = log_.records(q);
  if (!rows) return storeFailure(request, rows.error());
  const bool more = rows->size() > wanted;
  if (more) rows->resize(wanted);
  json items = json::array();
  for (const auto& r : *rows) {
    items.push_back({{"id", r.id},
                     {"time", common::formatRfc3339(r.time_us)},
                     {"time_us", r.time_us},
                     {"role", r.role},
                     {"remote_address", r.remote},
                     {"method", r.method},
                     {"route", r.route},
                     {"body_sha256", r.body_sha256},
                     {"body_bytes", r.body_bytes},
                     {"status", r.status},
                     {"problem", r.problem.empty() ? json(nullptr) : json(r.problem)}});
  }
  return jsonResponse(200, {{"items", std::move(items)},
                            {"count", rows->size()},
                            {"next_cursor", more ? json(std::to_string(rows->back().id)) : json(nullptr)}});
}

}  // namespace kfaild::api
