#include "api/maintenance_endpoints.h"

#include <limits>
#include <variant>

#include "api/query_params.h"
#include "api/resources.h"
#include "server/common/time_format.h"
#include "server/maintenance/errc.h"

namespace kfaild::api {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxId = std::numeric_limits<std::int64_t>::max();

Response invalidBody(const Request& request, std::string detail) {
  return problem(ProblemType::kInvalidBody, std::move(detail), request.path);
}

std::string actor(const Request& request) {
  return std::string(roleName(request.role)) + " (api, " + request.remote_address + ")";
}

// The end a body asks for: `until` (RFC 3339) or `duration_s` from now, exactly one of them.
std::variant<std::int64_t, std::string> requestedEnd(const json& body, std::int64_t now_us) {
  const bool until = body.contains("until"), duration = body.contains("duration_s");
  if (until == duration) return std::string("give exactly one of until (RFC 3339) and duration_s");
  if (until) {
    if (!body["until"].is_string())
      return std::string("until: must be an RFC 3339 date-time string");
    const auto parsed = common::parseRfc3339(body["until"].get<std::string>());
    if (!parsed)
      return std::string(
          "until: must be an RFC 3339 date-time with an offset, e.g. 2026-11-30T04:00:00Z");
    return *parsed;
  }
  const auto& d = body["duration_s"];
  const auto max_s = maintenance::kMaxWindowUs / 1'000'000;
  if (!d.is_number_integer() ||
      (d.is_number_unsigned() && d.get<std::uint64_t>() > static_cast<std::uint64_t>(max_s)) ||
      d.get<std::int64_t>() < 1 || d.get<std::int64_t>() > max_s) {
    return "duration_s: must be an integer between 1 and " + std::to_string(max_s);
  }
  return now_us + d.get<std::int64_t>() * 1'000'000;
}

}  // namespace

json maintenanceWindowJson(const maintenance::MaintenanceWindow& w, std::int64_t now_us) {
  json silences = json::array();
  for (const auto& s : w.silences) {
    silences.push_back({{"receiver", s.receiver},
                        {"state", s.state},
                        {"silence_id", s.silence_id.empty() ? json(nullptr) : json(s.silence_id)},
                        {"attempts", s.attempts},
                        {"error", s.last_error.empty() ? json(nullptr) : json(s.last_error)}});
  }
  return {{"id", w.id},
          {"cluster", w.cluster_name},
          {"reason", w.reason},
          {"opened_by", w.opened_by},
          {"started", common::formatRfc3339(w.started_us)},
          {"started_us", w.started_us},
          {"ends", common::formatRfc3339(w.ends_us)},
          {"ends_us", w.ends_us},
          {"closed", timeOrNull(w.closed_us)},
          {"closed_us", intOrNull(w.closed_us)},
          {"closed_by", w.closed_us ? json(w.closed_by) : json(nullptr)},
          {"active", w.activeAt(now_us)},
          {"silences", std::move(silences)}};
}

MaintenanceEndpoints::MaintenanceEndpoints(const LiveClusters& live, const storage::Store& store,
                                           maintenance::MaintenanceWindows& windows,
                                           const common::Clock& clock)
    : live_(live), store_(store), windows_(windows), clock_(clock) {}

void MaintenanceEndpoints::registerOn(Router& router) {
  const auto bind = [this](auto handler) {
    return [this, handler](const Request& request) { return (this->*handler)(request); };
  };
  const RouteOptions redacted{RouteAccess::kDefault, true};
  router.add("POST", "/api/v1/clusters/{cluster}/maintenance",
             bind(&MaintenanceEndpoints::openWindow));
  router.add("GET", "/api/v1/clusters/{cluster}/maintenance",
             bind(&MaintenanceEndpoints::listWindows), redacted);
  router.add("GET", "/api/v1/clusters/{cluster}/maintenance/{id}",
             bind(&MaintenanceEndpoints::getWindow), redacted);
  router.add("POST", "/api/v1/clusters/{cluster}/maintenance/{id}/close",
             bind(&MaintenanceEndpoints::closeWindow));
}

Response MaintenanceEndpoints::openWindow(const Request& request) {
  auto cluster = findCluster(request, live_, store_, request.params.at("cluster"),
                             ProblemType::kUnknownCluster);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query)
    return badRequest(request, query.error());
  if (request.body.empty()) return invalidBody(request, "the request needs a JSON object body");
  const json body = json::parse(request.body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return invalidBody(request, "the body must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    if (key != "reason" && key != "until" && key != "duration_s")
      return invalidBody(request, key + ": unknown field");
  }
  if (!body.contains("reason") || !body["reason"].is_string()) {
    return invalidBody(request, "reason: required, a string (what the planned work is)");
  }
  const auto now = clock_.wallNow();
  const auto end = requestedEnd(body, now);
  if (const auto* wrong = std::get_if<std::string>(&end)) return invalidBody(request, *wrong);
  auto id = windows_.open(std::get<storage::ClusterId>(cluster), body["reason"].get<std::string>(),
                          std::get<std::int64_t>(end), actor(request));
  if (!id) {
    if (id.error().code == maintenance::errc::invalid_window)
      return invalidBody(request, id.error().message);
    return storeFailure(request, id.error());
  }
  auto response = windowResponse(request, *id, 201);
  if (response.status != 201) return response;
  response.headers.emplace_back("Location", "/api/v1/clusters/" +
                                                percentEncode(request.params.at("cluster")) +
                                                "/maintenance/" + std::to_string(*id));
  return response;
}

Response MaintenanceEndpoints::listWindows(const Request& request) const {
  auto cluster = findCluster(request, live_, store_, request.params.at("cluster"),
                             ProblemType::kUnknownCluster);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  auto query = QueryReader::create(request.query, {"from", "to", "limit"});
  if (!query) return badRequest(request, query.error());
  const auto now = clock_.wallNow();
  // Up to now and the windows still running: a window never starts after the moment it opened.
  auto range = query->range(now + 1, kMaintenanceDefaultWindowUs, std::nullopt);
  if (!range) return badRequest(request, range.error());
  auto limit = query->integer("limit", 1, kMaintenanceMaxLimit);
  if (!limit) return badRequest(request, limit.error());
  const auto wanted = static_cast<std::size_t>(limit->value_or(kMaintenanceDefaultLimit));
  // Oldest first from the store; the newest `wanted` are the answer, newest first.
  auto found = windows_.windows(std::get<storage::ClusterId>(cluster), range->from_us, range->to_us,
                                static_cast<std::size_t>(kMaintenanceMaxLimit) * 20);
  if (!found) return storeFailure(request, found.error());
  json items = json::array();
  json active = nullptr;
  for (const auto& w : *found) {
    if (w.activeAt(now)) {
      active = w.id;  // the earliest opened, as MaintenanceWindows::active
      break;
    }
  }
  for (auto it = found->rbegin(); it != found->rend() && items.size() < wanted; ++it) {
    items.push_back(maintenanceWindowJson(*it, now));
  }
  return jsonResponse(200, {{"items", std::move(items)},
                            {"count", std::min(found->size(), wanted)},
                            {"active", active},
                            {"from", common::formatRfc3339(range->from_us)},
                            {"to", common::formatRfc3339(range->to_us)}});
}

Response MaintenanceEndpoints::getWindow(const Request& request) const {
  auto cluster = findCluster(request, live_, store_, request.params.at("cluster"),
                             ProblemType::kUnknownCluster);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query)
    return badRequest(request, query.error());
  auto id = parseInteger("id", request.params.at("id"), 1, kMaxId);
  if (!id) return badRequest(request, id.error());
  auto found = windows_.window(*id);
  if (!found) return storeFailure(request, found.error());
  if (!*found || (*found)->cluster != std::get<storage::ClusterId>(cluster)) {
    return problem(ProblemType::kUnknownMaintenance,
                   "cluster " + printable(request.params.at("cluster")) +
                       " has no maintenance window " + std::to_string(*id),
                   request.path);
  }
  return jsonResponse(200, maintenanceWindowJson(**found, clock_.wallNow()));
}

Response MaintenanceEndpoints::closeWindow(const Request& request) {
  auto cluster = findCluster(request, live_, store_, request.params.at("cluster"),
                             ProblemType::kUnknownCluster);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query)
    return badRequest(request, query.error());
  auto id = parseInteger("id", request.params.at("id"), 1, kMaxId);
  if (!id) return badRequest(request, id.error());
  if (!request.body.empty()) {
    const json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.empty()) {
      return invalidBody(request, "close takes no body, or an empty JSON object");
    }
  }
  const auto unknown = [&] {
    return problem(ProblemType::kUnknownMaintenance,
                   "cluster " + printable(request.params.at("cluster")) +
                       " has no maintenance window " + std::to_string(*id),
                   request.path);
  };
  auto found = windows_.window(*id);
  if (!found) return storeFailure(request, found.error());
  if (!*found || (*found)->cluster != std::get<storage::ClusterId>(cluster)) return unknown();
  if (auto closed = windows_.close(*id, actor(request)); !closed) {
    if (closed.error().code == maintenance::errc::unknown_window) return unknown();
    if (closed.error().code == maintenance::errc::window_over) {
      return problem(ProblemType::kMaintenanceOver, closed.error().message, request.path);
    }
    return storeFailure(request, closed.error());
  }
  return windowResponse(request, *id, 200);
}

Response MaintenanceEndpoints::windowResponse(const Request& request, std::int64_t id,
                                              int status) const {
  auto found = windows_.window(id);
  if (!found) return storeFailure(request, found.error());
  // Windows are never deleted: one that was just written and is gone is a bug.
  if (!*found)
    return problem(ProblemType::kInternal,
                   "maintenance window " + std::to_string(id) + " was not read back", request.path);
  return jsonResponse(status, maintenanceWindowJson(**found, clock_.wallNow()));
}

void appendMaintenanceMetrics(PrometheusText& out,
                              const std::vector<MaintenanceCluster>& clusters) {
  out.family("kfaild_maintenance_active", "gauge",
             "1 while the cluster has an active planned-maintenance window (its gaps are planned, "
             "its incident "
             "notifications held), else 0.");
  for (const auto& c : clusters) {
    out.sample("kfaild_maintenance_active", {{"cluster", c.name}}, std::int64_t{c.active ? 1 : 0});
  }
}

}  // namespace kfaild::api
