#include "api/drill_endpoints.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/query_params.h"
#include "api/resources.h"
#include "server/analysis/incidents.h"
#include "server/analysis/statistics.h"
#include "server/common/event_types.h"
#include "server/common/json_text.h"
#include "server/common/time_format.h"
#include "server/drill/cron.h"
#include "server/drill/drill_spec.h"
#include "server/drill/drill_state.h"
#include "server/drill/errc.h"

namespace kfaild::api {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxId = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMaxPartition = std::numeric_limits<std::int32_t>::max();
const std::vector<std::string_view> kVerdicts = {"pass", "fail", "inconclusive"};
const std::vector<std::string_view> kRoles = common::partitionRoleNames();

Response invalidBody(const Request& request, std::string detail) {
  return problem(ProblemType::kInvalidBody, std::move(detail), request.path);
}

// The body as a JSON object, or the 400 that says why it is not one.
std::variant<json, Response> jsonObjectBody(const Request& request) {
  if (request.body.empty()) return invalidBody(request, "the request needs a JSON object body");
  json body = json::parse(request.body, nullptr, false);
  if (body.is_discarded()) return invalidBody(request, "the body is not valid JSON");
  if (!body.is_object()) return invalidBody(request, "the body must be a JSON object");
  return body;
}

json parsedOr(const std::string& text, json fallback) {
  json value = json::parse(text, nullptr, false);
  return value.is_discarded() ? std::move(fallback) : value;
}

json drillJson(const storage::DrillRecord& d,
               const std::map<storage::ClusterId, std::string>& names) {
  json runs = json::array();
  const json result = parsedOr(d.result, json::object());
  if (result.contains("runs") && result["runs"].is_array()) {
    for (json run : result["runs"]) {
      if (run.contains("fault_us") && run["fault_us"].is_number_integer()) {
        run["fault_at"] = common::formatRfc3339(run["fault_us"].get<std::int64_t>());
      }
      runs.push_back(std::move(run));
    }
  }
  const auto name = names.find(d.cluster);
  return {
      {"id", d.id},
      {"cluster", name == names.end() ? json(nullptr) : json(name->second)},
      {"fault", d.fault},
      {"target", parsedOr(d.target, json::object())},
      {"options", parsedOr(d.options, json::object())},
      {"state", d.state},
      {"reason", d.reason.empty() ? json(nullptr) : json(d.reason)},
      {"schedule_id", intOrNull(d.schedule_id)},
      {"created", common::formatRfc3339(d.created_us)},
      {"created_us", d.created_us},
      {"started", timeOrNull(d.started_us)},
      {"started_us", intOrNull(d.started_us)},
      {"finished", timeOrNull(d.finished_us)},
      {"finished_us", intOrNull(d.finished_us)},
      {"runs", std::move(runs)},
      {"expect", d.expect.empty() ? json(nullptr) : parsedOr(d.expect, json(nullptr))},
      {"then", d.second_fault.empty() ? json(nullptr) : parsedOr(d.second_fault, json(nullptr))},
      {"verdict", d.verdict ? json(*d.verdict) : json(nullptr)},
      {"regressed", d.regressed ? json(*d.regressed) : json(nullptr)},
      {"verdict_detail", result.contains("verdict") ? result["verdict"] : json(nullptr)},
      {"rolling_restart",
       result.contains("rolling_restart") ? result["rolling_restart"] : json(nullptr)},
      {"observed", result.contains("observed") ? result["observed"] : json(nullptr)},
  };
}

json recoveryJson(const storage::RecoveryEntry& e,
                  const std::map<storage::ClusterId, std::string>& names) {
  const auto name = names.find(e.cluster);
  return {{"id", e.id},
          {"drill_id", e.drill_id},
          {"cluster", name == names.end() ? json(nullptr) : json(name->second)},
          {"node", e.node},
          {"action", e.action},
          {"phase", e.phase},
          {"created_us", e.created_us},
          {"done_us", intOrNull(e.done_us)},
          {"attempts", e.attempts},
          {"last_error", e.last_error.empty() ? json(nullptr) : json(e.last_error)},
          {"injection", e.injection.empty() ? json(nullptr) : json(e.injection)},
          {"placed", e.place_table.empty() && e.place_filler.empty()
                         ? json(nullptr)
                         : json{{"host", e.place_host},
                                {"netns", e.place_netns},
                                {"netns_id", e.place_netns_id},
                                {"table", e.place_table},
                                {"filler", e.place_filler}}}};
}

json scheduleJson(const storage::ScheduleRecord& s,
                  const std::map<storage::ClusterId, std::string>& names) {
  const auto name = names.find(s.cluster);
  return {
      {"id", s.id},
      {"cluster", name == names.end() ? json(nullptr) : json(name->second)},
      {"name", s.name},
      {"cron", s.cron},
      {"jitter_s", s.jitter_s},
      {"enabled", s.enabled},
      {"drill", parsedOr(s.drill, json::object())},
      {"last_run", timeOrNull(s.last_run_us)},
      {"last_run_us", intOrNull(s.last_run_us)},
      {"next_run", timeOrNull(s.next_run_us)},
      {"next_run_us", intOrNull(s.next_run_us)},
      {"last_outcome", s.last_outcome.empty() ? json(nullptr) : json(s.last_outcome)},
      {"created", common::formatRfc3339(s.created_us)},
      {"created_us", s.created_us},
  };
}

json summary(const std::vector<std::int64_t>& values) {
  const auto d = analysis::distributionOf(values);
  if (!d) return nullptr;
  return {{"min", d->min},
          {"median", d->median},
          {"p95", d->p95},
          {"max", d->max},
          {"count", d->count}};
}

std::optional<std::int64_t> intAt(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer()) {
    return std::nullopt;
  }
  return object[key].get<std::int64_t>();
}

// A schedule body's fields, validated; `partial` for PATCH (every field optional).
struct ScheduleFields {
  std::optional<std::string> cluster;
  std::optional<std::string> name;
  std::optional<std::string> cron;
  std::optional<std::int64_t> jitter_s;
  std::optional<bool> enabled;
  std::optional<json> drill;
};

std::variant<ScheduleFields, std::string> readScheduleFields(const json& body, bool partial) {
  static const std::set<std::string> kCreate = {"cluster",  "name",    "cron",
                                                "jitter_s", "enabled", "drill"};
  static const std::set<std::string> kUpdate = {"name", "cron", "jitter_s", "enabled", "drill"};
  const auto& known = partial ? kUpdate : kCreate;
  for (const auto& item : body.items()) {
    if (!known.contains(item.key())) {
      return item.key() + ": unknown field" +
             (partial && item.key() == "cluster" ? " (a schedule cannot move to another cluster)"
                                                 : "");
    }
  }
  ScheduleFields out;
  if (body.contains("cluster")) {
    if (!body["cluster"].is_string()) return std::string("cluster: must be a string");
    out.cluster = body["cluster"].get<std::string>();
  } else if (!partial) {
    return std::string("cluster: required");
  }
  if (body.contains("name")) {
    if (!body["name"].is_string()) return std::string("name: must be a string");
    const auto name = body["name"].get<std::string>();
    if (name.empty() || name.size() > kScheduleNameMax) {
      return "name: must be 1 to " + std::to_string(kScheduleNameMax) + " bytes long";
    }
    for (const unsigned char c : name) {
      if (c < 0x20 || c == 0x7f) return std::string("name: must not contain control characters");
    }
    out.name = name;
  } else if (!partial) {
    return std::string("name: required");
  }
  if (body.contains("cron")) {
    if (!body["cron"].is_string()) return std::string("cron: must be a string");
    auto cron = drill::CronSchedule::parse(body["cron"].get<std::string>());
    if (!cron) return "cron: " + cron.error().message;
    out.cron = cron->text();
  } else if (!partial) {
    return std::string("cron: required (5 fields, UTC, e.g. \"0 3 * * mon\")");
  }
  if (body.contains("jitter_s")) {
    const auto& v = body["jitter_s"];
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<std::uint64_t>() > kScheduleMaxJitterS)) {
      return "jitter_s: must be an integer between 0 and " + std::to_string(kScheduleMaxJitterS);
    }
    const auto jitter = v.get<std::int64_t>();
    if (jitter < 0 || jitter > kScheduleMaxJitterS) {
      return "jitter_s: must be between 0 and " + std::to_string(kScheduleMaxJitterS) + ", got " +
             std::to_string(jitter);
    }
    out.jitter_s = jitter;
  }
  if (body.contains("enabled")) {
    if (!body["enabled"].is_boolean()) return std::string("enabled: must be true or false");
    out.enabled = body["enabled"].get<bool>();
  }
  if (body.contains("drill")) {
    auto spec = drill::parseDrillSpec(body["drill"]);
    if (!spec) return "drill." + spec.error().message;
    out.drill = drill::toJson(*spec);
  } else if (!partial) {
    return std::string("drill: required (the drill request it starts: fault, target, options)");
  }
  return out;
}

}  // namespace

DrillEndpoints::DrillEndpoints(const LiveClusters& live, const storage::Store& store,
                               storage::DrillStore& drills, DrillControl& control,
                               const common::Clock& clock)
    : live_(live), store_(store), drills_(drills), control_(control), clock_(clock) {}

void DrillEndpoints::registerOn(Router& router) {
  const auto bind = [this](auto handler) {
    return [this, handler](const Request& request) { return (this->*handler)(request); };
  };
  // Drill reasons, events, outcomes and recovery errors carry command lines and hosts.
  const RouteOptions redacted{RouteAccess::kDefault, true};
  router.add("POST", "/api/v1/clusters/{cluster}/drills", bind(&DrillEndpoints::startDrill));
  router.add("GET", "/api/v1/clusters/{cluster}/drills/last", bind(&DrillEndpoints::lastDrill),
             redacted);
  router.add("GET", "/api/v1/clusters/{cluster}/incidents", bind(&DrillEndpoints::incidents),
             redacted);
  router.add("GET", "/api/v1/drills", bind(&DrillEndpoints::listDrills), redacted);
  router.add("GET", "/api/v1/drills/{id}", bind(&DrillEndpoints::getDrill), redacted);
  router.add("GET", "/api/v1/drills/{id}/timeline", bind(&DrillEndpoints::timeline), redacted);
  router.add("POST", "/api/v1/drills/{id}/abort", bind(&DrillEndpoints::abortDrill));
  router.add("POST", "/api/v1/drills/{id}/mark", bind(&DrillEndpoints::markDrill));
  router.add("GET", "/api/v1/statistics", bind(&DrillEndpoints::statistics));
  router.add("GET", "/api/v1/recoveries", bind(&DrillEndpoints::listRecoveries), redacted);
  router.add("POST", "/api/v1/recoveries/{id}/resolve", bind(&DrillEndpoints::resolveRecovery));
  router.add("GET", "/api/v1/schedules", bind(&DrillEndpoints::listSchedules), redacted);
  router.add("POST", "/api/v1/schedules", bind(&DrillEndpoints::createSchedule));
  router.add("GET", "/api/v1/schedules/{id}", bind(&DrillEndpoints::getSchedule), redacted);
  router.add("PATCH", "/api/v1/schedules/{id}", bind(&DrillEndpoints::updateSchedule));
  router.add("DELETE", "/api/v1/schedules/{id}", bind(&DrillEndpoints::deleteSchedule));
}

std::variant<std::map<storage::ClusterId, std::string>, Response> DrillEndpoints::clusterNames(
    const Request& request) const {
  std::map<storage::ClusterId, std::string> names;
  auto stored = store_.clusters();
  if (!stored) return storeFailure(request, stored.error());
  for (const auto& cluster : *stored) names[cluster.id] = cluster.name;
  for (const auto& cluster : live_.clusters()) names[cluster.id] = cluster.name;
  return names;
}

std::variant<storage::DrillRecord, Response> DrillEndpoints::drillOfPath(
    const Request& request) const {
  auto id = parseInteger("id", request.params.at("id"), 1, kMaxId);
  if (!id) return badRequest(request, id.error());
  auto drill = drills_.drill(*id);
  if (!drill) return storeFailure(request, drill.error());
  if (!*drill) {
    return problem(ProblemType::kUnknownDrill, "no drill has id " + std::to_string(*id),
                   request.path);
  }
  return std::move(**drill);
}

std::variant<storage::ScheduleRecord, Response> DrillEndpoints::scheduleOfPath(
    const Request& request) const {
  auto id = parseInteger("id", request.params.at("id"), 1, kMaxId);
  if (!id) return badRequest(request, id.error());
  auto schedule = drills_.schedule(*id);
  if (!schedule) return storeFailure(request, schedule.error());
  if (!*schedule) {
    return problem(ProblemType::kUnknownSchedule, "no schedule has id " + std::to_string(*id),
                   request.path);
  }
  return std::move(**schedule);
}

Response DrillEndpoints::startDrill(const Request& request) {
  auto cluster = findCluster(request, live_, store_, request.params.at("cluster"),
                             ProblemType::kUnknownCluster);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  const auto cluster_id = std::get<storage::ClusterId>(cluster);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  auto body = jsonObjectBody(request);
  if (auto* failure = std::get_if<Response>(&body)) return std::move(*failure);
  auto spec = drill::parseDrillSpec(std::get<json>(body));
  if (!spec) return invalidBody(request, spec.error().message);
  if (spec->fault == drill::FaultType::kObserved ? !control_.observable(cluster_id)
                                                 : !control_.drillsEnabled(cluster_id)) {
    return problem(ProblemType::kDrillsDisabled,
                   "cluster " + printable(request.params.at("cluster"), 100) +
                       " has no inventory in kfaild's configuration, so kfaild cannot reach its "
                       "nodes to inject faults (an observed drill, fault observed, needs none)",
                   request.path);
  }
  auto id = control_.submit(cluster_id, *spec);
  if (!id) {
    if (id.error().code == drill::errc::guard_refused ||
        id.error().code == drill::errc::invalid_request) {
      return problem(ProblemType::kDrillRefused, id.error().message, request.path,
                     {{"reason", id.error().message}});
    }
    return storeFailure(request, id.error());
  }
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  auto drill = drills_.drill(*id);
  if (!drill || !*drill) {
    return storeFailure(request, drill ? Error{make_error_code(drill::errc::drill_not_found),
                                               "drill " + std::to_string(*id) + " vanished"}
                                       : drill.error());
  }
  auto response = jsonResponse(202, drillJson(**drill, std::get<0>(names)));
  response.headers.emplace_back("Location", "/api/v1/drills/" + std::to_string(*id));
  return response;
}

Response DrillEndpoints::lastDrill(const Request& request) const {
  auto cluster = findCluster(request, live_, store_, request.params.at("cluster"),
                             ProblemType::kUnknownCluster);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  auto query = QueryReader::create(request.query, {"fault"});
  if (!query) return badRequest(request, query.error());
  auto fault = query->oneOf("fault", drill::faultNames());
  if (!fault) return badRequest(request, fault.error());
  storage::DrillQuery q;
  q.cluster = std::get<storage::ClusterId>(cluster);
  q.state = "done";
  q.fault = *fault;
  q.limit = 1;
  auto rows = drills_.drills(q);
  if (!rows) return storeFailure(request, rows.error());
  if (rows->empty()) {
    return problem(ProblemType::kNoDrill,
                   "cluster " + printable(request.params.at("cluster"), 100) +
                       " has no completed drill" + (*fault ? " of kind " + **fault : std::string()),
                   request.path);
  }
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  return jsonResponse(200, drillJson(rows->front(), std::get<0>(names)));
}

Response DrillEndpoints::listDrills(const Request& request) const {
  auto query = QueryReader::create(
      request.query, {"cluster", "state", "fault", "verdict", "from", "to", "limit", "cursor"});
  if (!query) return badRequest(request, query.error());
  storage::DrillQuery q;
  if (auto name = query->raw("cluster")) {
    auto cluster =
        findCluster(request, live_, store_, std::string(*name), ProblemType::kUnknownCluster);
    if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
    q.cluster = std::get<storage::ClusterId>(cluster);
  }
  auto state = query->oneOf("state", drill::drillStateNames());
  if (!state) return badRequest(request, state.error());
  q.state = *state;
  auto fault = query->oneOf("fault", drill::faultNames());
  if (!fault) return badRequest(request, fault.error());
  q.fault = *fault;
  auto verdict = query->oneOf("verdict", kVerdicts);
  if (!verdict) return badRequest(request, verdict.error());
  q.verdict = *verdict;
  auto from = query->time("from");
  if (!from) return badRequest(request, from.error());
  q.created_from_us = *from;
  auto to = query->time("to");
  if (!to) return badRequest(request, to.error());
  q.created_to_us = *to;
  auto limit = query->integer("limit", 1, kDrillsMaxLimit);
  if (!limit) return badRequest(request, limit.error());
  auto cursor = query->integer("cursor", 1, kMaxId);
  if (!cursor) return badRequest(request, cursor.error());
  q.before_id = *cursor;
  const auto wanted = static_cast<std::size_t>(limit->value_or(kDrillsDefaultLimit));
  q.limit = wanted + 1;
  auto rows = drills_.drills(q);
  if (!rows) return storeFailure(request, rows.error());
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  BoundedArray items;
  std::size_t taken = 0;
  while (taken < rows->size() && taken < wanted &&
         items.add(drillJson((*rows)[taken], std::get<0>(names))))
    ++taken;
  const bool more = taken < rows->size();
  Response response;
  const auto next_cursor =
      more && taken > 0 ? json(std::to_string((*rows)[taken - 1].id)) : json(nullptr);
  response.body = "{\"items\":" + items.text() + ",\"count\":" + std::to_string(taken) +
                  ",\"next_cursor\":" + common::jsonText(next_cursor) + "}";
  return response;
}

Response DrillEndpoints::getDrill(const Request& request) const {
  auto drill = drillOfPath(request);
  if (auto* failure = std::get_if<Response>(&drill)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  return jsonResponse(200, drillJson(std::get<storage::DrillRecord>(drill), std::get<0>(names)));
}

Response DrillEndpoints::timeline(const Request& request) const {
  auto found = drillOfPath(request);
  if (auto* failure = std::get_if<Response>(&found)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  const auto& drill = std::get<storage::DrillRecord>(found);
  // The window: from the first baseline to the last recovery (or now, while it runs), with a
  // margin for events stamped by other clocks (broker logs).
  const json result = parsedOr(drill.result, json::object());
  std::optional<std::int64_t> first_fault;
  std::int64_t from = drill.started_us.value_or(drill.created_us);
  std::int64_t to = drill.finished_us.value_or(clock_.wallNow());
  struct RunWindow {
    std::int64_t run, from, to;
  };
  std::vector<RunWindow> runs;
  if (result.contains("runs") && result["runs"].is_array()) {
    for (const auto& run : result["runs"]) {
      const auto fault = intAt(run, "fault_us");
      if (fault && !first_fault) first_fault = *fault;
      const auto start = intAt(run, "baseline_start_us").value_or(fault.value_or(from));
      const auto end =
          intAt(run, "recovered_us").value_or(intAt(run, "observe_end_us").value_or(to));
      runs.push_back({intAt(run, "run").value_or(0), start, end});
      from = std::min(from, start);
      to = std::max(to, end);
    }
  }
  storage::EventQuery q;
  q.cluster = drill.cluster;
  q.range = {from - 1'000'000, to + 5'000'000};
  q.limit = kTimelineMaxEvents + 1;
  auto events = store_.events(q);
  if (!events) return storeFailure(request, events.error());
  const bool truncated = events->size() > static_cast<std::size_t>(kTimelineMaxEvents);
  if (truncated) events->resize(kTimelineMaxEvents);
  std::sort(events->begin(), events->end(), [](const storage::Event& a, const storage::Event& b) {
    return std::tie(a.t_us, a.id) < std::tie(b.t_us, b.id);
  });
  json items = json::array();
  for (const auto& event : *events) {
    json item = eventJson(event);
    item["relative_s"] =
        first_fault ? json(static_cast<double>(event.t_us - *first_fault) / 1e6) : json(nullptr);
    json run = nullptr;
    for (const auto& w : runs) {
      if (event.t_us >= w.from - 1'000'000 && event.t_us <= w.to + 5'000'000) run = w.run;
    }
    item["run"] = run;
    items.push_back(std::move(item));
  }
  return jsonResponse(200, {{"drill", drill.id},
                            {"fault_us", intOrNull(first_fault)},
                            {"from", common::formatRfc3339(q.range.from_us)},
                            {"from_us", q.range.from_us},
                            {"to", common::formatRfc3339(q.range.to_us)},
                            {"to_us", q.range.to_us},
                            {"count", items.size()},
                            {"truncated", truncated},
                            {"items", std::move(items)}});
}

Response DrillEndpoints::listRecoveries(const Request& request) const {
  if (auto query = QueryReader::create(request.query, {}); !query)
    return badRequest(request, query.error());
  auto pending = drills_.pendingRecoveries();
  if (!pending) return storeFailure(request, pending.error());
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  json items = json::array();
  for (const auto& e : *pending) items.push_back(recoveryJson(e, std::get<0>(names)));
  return jsonResponse(200, {{"items", std::move(items)}});
}

Response DrillEndpoints::resolveRecovery(const Request& request) {
  auto id = parseInteger("id", request.params.at("id"), 1, kMaxId);
  if (!id) return badRequest(request, id.error());
  if (auto query = QueryReader::create(request.query, {}); !query)
    return badRequest(request, query.error());
  std::string note;
  if (!request.body.empty()) {
    auto body = jsonObjectBody(request);
    if (auto* failure = std::get_if<Response>(&body)) return std::move(*failure);
    const auto& b = std::get<json>(body);
    for (const auto& [key, value] : b.items()) {
      if (key != "note") return invalidBody(request, key + ": unknown field");
    }
    if (b.contains("note")) {
      if (!b["note"].is_string() || b["note"].get<std::string>().size() > kRecoveryNoteMax) {
        return invalidBody(request, "note: must be a string of at most " +
                                        std::to_string(kRecoveryNoteMax) + " characters");
      }
      note = b["note"].get<std::string>();
    }
  }
  auto pending = drills_.pendingRecoveries();
  if (!pending) return storeFailure(request, pending.error());
  const auto entry =
      std::find_if(pending->begin(), pending->end(), [&](const auto& e) { return e.id == *id; });
  if (entry == pending->end()) {
    return problem(ProblemType::kUnknownRecovery, "no open recovery has id " + std::to_string(*id),
                   request.path);
  }
  // While its drill runs, the engine itself is bringing the node back.
  auto drill = drills_.drill(entry->drill_id);
  if (!drill) return storeFailure(request, drill.error());
  if (*drill && !drill::isTerminal((*drill)->state)) {
    return problem(ProblemType::kRecoveryInProgress,
                   "drill " + std::to_string(entry->drill_id) + " is still " + (*drill)->state +
                       ": it brings node " + std::to_string(entry->node) + " back itself",
                   request.path);
  }
  auto resolved = storage::resolveRecovery(drills_, *id, note, clock_.wallNow());
  if (!resolved) return storeFailure(request, resolved.error());
  if (!*resolved) {
    return problem(ProblemType::kUnknownRecovery, "no open recovery has id " + std::to_string(*id),
                   request.path);
  }
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  return jsonResponse(200, recoveryJson(**resolved, std::get<0>(names)));
}

Response DrillEndpoints::abortDrill(const Request& request) {
  auto found = drillOfPath(request);
  if (auto* failure = std::get_if<Response>(&found)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  const auto& drill = std::get<storage::DrillRecord>(found);
  const auto drillFinished = [&request, &drill]() {
    return problem(ProblemType::kDrillFinished,
                   "drill " + std::to_string(drill.id) + " is already " + drill.state, request.path,
                   {{"state", drill.state}});
  };
  if (drill::isTerminal(drill.state)) return drillFinished();
  if (auto s = control_.abort(drill.cluster, drill.id); !s) {
    if (s.error().code == drill::errc::drill_not_found) {
      // It finished between the read and the abort, or no runner of this process owns it.
      auto again = drills_.drill(drill.id);
      if (again && *again && drill::isTerminal((*again)->state)) {
        auto latest = **again;
        return problem(ProblemType::kDrillFinished,
                       "drill " + std::to_string(latest.id) + " is already " + latest.state,
                       request.path, {{"state", latest.state}});
      }
      return problem(
          ProblemType::kDrillFinished,
          "drill " + std::to_string(drill.id) + " is not queued or running in this kfaild",
          request.path, {{"state", drill.state}});
    }
    return storeFailure(request, s.error());
  }
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  auto latest = drills_.drill(drill.id);
  const auto& record = latest && *latest ? **latest : drill;
  auto response = jsonResponse(202, drillJson(record, std::get<0>(names)));
  response.headers.emplace_back("Location", "/api/v1/drills/" + std::to_string(drill.id));
  return response;
}

namespace {

// A mark's body: {"at": RFC 3339, "broker": id, "by": text}, every field optional.
struct MarkBody {
  std::optional<std::int64_t> at_us;
  std::optional<std::int32_t> broker;
  std::string by;
};

std::variant<MarkBody, std::string> parseMark(const json& b) {
  MarkBody mark;
  for (const auto& [key, value] : b.items()) {
    if (key != "at" && key != "broker" && key != "by") return key + ": unknown field";
  }
  if (b.contains("at")) {
    const auto at =
        b["at"].is_string() ? common::parseRfc3339(b["at"].get<std::string>()) : std::nullopt;
    if (!at) return std::string("at: must be an RFC 3339 time, e.g. 2026-12-06T12:00:00.250Z");
    mark.at_us = *at;
  }
  if (b.contains("broker")) {
    const auto& v = b["broker"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
        v.get<std::int64_t>() > 2'147'483'647) {
      return std::string("broker: must be a node id (an integer from 0)");
    }
    mark.broker = static_cast<std::int32_t>(v.get<std::int64_t>());
  }
  if (b.contains("by")) {
    if (!b["by"].is_string() || b["by"].get<std::string>().size() > kMarkByMax) {
      return "by: must be a string of at most " + std::to_string(kMarkByMax) + " characters";
    }
    mark.by = b["by"].get<std::string>();
  }
  return mark;
}

}  // namespace

Response DrillEndpoints::markDrill(const Request& request) {
  auto found = drillOfPath(request);
  if (auto* failure = std::get_if<Response>(&found)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  const auto& drill = std::get<storage::DrillRecord>(found);
  MarkBody mark;
  if (!request.body.empty()) {
    auto body = jsonObjectBody(request);
    if (auto* failure = std::get_if<Response>(&body)) return std::move(*failure);
    auto parsed = parseMark(std::get<json>(body));
    if (auto* error = std::get_if<std::string>(&parsed)) return invalidBody(request, *error);
    mark = std::get<MarkBody>(parsed);
  }
  if (drill.fault != drill::toString(drill::FaultType::kObserved)) {
    return problem(ProblemType::kDrillRefused,
                   "drill " + std::to_string(drill.id) + " is a " + drill.fault +
                       " drill: only an observed drill takes a mark",
                   request.path, {{"reason", "not an observed drill"}});
  }
  const auto finished = [&](const storage::DrillRecord& d, const std::string& detail) {
    return problem(ProblemType::kDrillFinished, detail, request.path, {{"state", d.state}});
  };
  if (drill::isTerminal(drill.state)) {
    return finished(drill, "drill " + std::to_string(drill.id) + " is already " + drill.state);
  }
  auto at = control_.mark(drill.cluster, drill.id, mark.at_us, mark.broker, mark.by);
  if (!at) {
    if (at.error().code == drill::errc::invalid_request) {
      return invalidBody(request, at.error().message);
    }
    if (at.error().code == drill::errc::drill_not_found ||
        at.error().code == drill::errc::not_observed) {
      auto again = drills_.drill(drill.id);
      const auto& latest = again && *again ? **again : drill;
      return finished(latest, at.error().message);
    }
    return storeFailure(request, at.error());
  }
  return jsonResponse(200, {{"drill", drill.id},
                            {"at", common::formatRfc3339(*at)},
                            {"at_us", *at},
                            {"broker", mark.broker ? json(*mark.broker) : json(nullptr)},
                            {"by", mark.by}});
}

Response DrillEndpoints::statistics(const Request& request) const {
  auto query = QueryReader::create(
      request.query, {"cluster", "fault", "topic", "partition", "role", "from", "to"});
  if (!query) return badRequest(request, query.error());
  storage::DrillQuery q;
  q.state = "done";
  q.limit = kStatisticsMaxDrills;
  if (auto name = query->raw("cluster")) {
    auto cluster =
        findCluster(request, live_, store_, std::string(*name), ProblemType::kUnknownCluster);
    if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
    q.cluster = std::get<storage::ClusterId>(cluster);
  }
  auto fault = query->oneOf("fault", drill::faultNames());
  if (!fault) return badRequest(request, fault.error());
  q.fault = *fault;
  auto topic = query->topic("topic");
  if (!topic) return badRequest(request, topic.error());
  auto partition = query->integer("partition", 0, kMaxPartition);
  if (!partition) return badRequest(request, partition.error());
  auto role = query->oneOf("role", kRoles);
  if (!role) return badRequest(request, role.error());
  auto from = query->time("from");
  if (!from) return badRequest(request, from.error());
  q.created_from_us = *from;
  auto to = query->time("to");
  if (!to) return badRequest(request, to.error());
  q.created_to_us = *to;
  auto rows = drills_.drills(q);
  if (!rows) return storeFailure(request, rows.error());
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);

  std::vector<analysis::StoredDrill> stored;
  stored.reserve(rows->size());
  for (auto it = rows->rbegin(); it != rows->rend(); ++it) {  // oldest first
    const auto& names_by_id = std::get<0>(names);
    stored.push_back(
        {it->id,
         names_by_id.count(it->cluster) ? names_by_id.at(it->cluster) : std::to_string(it->cluster),
         it->fault, it->created_us, parsedOr(it->result, json::object())});
  }
  analysis::StatisticsFilter filter;
  if (*topic) filter.topic = std::string(**topic);
  if (*partition) filter.partition = static_cast<std::int32_t>(**partition);
  if (*role) filter.role = std::string(**role);
  const auto stats = analysis::statisticsOf(stored, filter);
  const auto runs_used = stats.runs_used;
  json out = json::array();
  for (const auto& g : stats.groups) {
    json trend = json::array();
    for (const auto& t : g.trend) {
      trend.push_back({{"drill", t.drill},
                       {"run", t.run},
                       {"at", common::formatRfc3339(t.at_us)},
                       {"at_us", t.at_us},
                       {"ack_stall_us", intOrNull(t.ack_stall_us)},
                       {"receive_stall_us", intOrNull(t.receive_stall_us)},
                       {"ack_regressed", t.ack_regressed},
                       {"receive_regressed", t.receive_regressed}});
    }
    out.push_back({{"cluster", g.cluster},
                   {"profile", g.profile.empty() ? json(nullptr) : json(g.profile)},
                   {"topic", g.topic},
                   {"partition", g.partition},
                   {"role", g.role},
                   {"fault", g.fault},
                   {"count", g.trend.size()},
                   {"regressions", g.regressions},
                   {"ack_stall_us", summary(g.ack)},
                   {"receive_stall_us", summary(g.receive)},
                   {"detection_us", summary(g.detection)},
                   {"election_us", summary(g.election)},
                   {"discovery_us", summary(g.discovery)},
                   {"resume_us", summary(g.resume)},
                   {"trend", std::move(trend)}});
  }
  Response response = jsonResponse(
      200, {{"drills", rows->size()},
            {"runs", runs_used},
            {"truncated", rows->size() >= static_cast<std::size_t>(kStatisticsMaxDrills)},
            {"groups", std::move(out)}});
  if (response.body.size() > kMaxResponseBytes) {
    return problem(ProblemType::kInvalidParameter,
                   "the statistics of this query take " + std::to_string(response.body.size()) +
                       " bytes, over the limit of " + std::to_string(kMaxResponseBytes) +
                       "; narrow it with cluster, fault, topic, partition, role, from or to",
                   request.path);
  }
  return response;
}

Response DrillEndpoints::incidents(const Request& request) const {
  auto cluster = findCluster(request, live_, store_, request.params.at("cluster"),
                             ProblemType::kUnknownCluster);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  const auto cluster_id = std::get<storage::ClusterId>(cluster);
  auto query = QueryReader::create(request.query, {"from", "to", "min_ms"});
  if (!query) return badRequest(request, query.error());
  auto range = query->range(clock_.wallNow(), kIncidentsDefaultWindowUs, std::nullopt);
  if (!range) return badRequest(request, range.error());
  auto min_ms = query->integer("min_ms", 1, 31'536'000'000);
  if (!min_ms) return badRequest(request, min_ms.error());

  storage::GapQuery gq;
  gq.cluster = cluster_id;
  gq.range = *range;
  gq.min_duration_us = min_ms->value_or(kIncidentsDefaultMinMs) * 1000;
  gq.limit = kIncidentsMaxGaps + 1;
  auto gaps = store_.gaps(gq);
  if (!gaps) return storeFailure(request, gaps.error());
  const bool truncated = gaps->size() > static_cast<std::size_t>(kIncidentsMaxGaps);
  if (truncated) gaps->resize(kIncidentsMaxGaps);

  // Drill windows: from the drill's start to its end (or now) plus a second, so a drill's own
  // stalls are not incidents. Only the spans of drills that can overlap one of the gaps are read
  // (a gap may start before the range it was selected by), never the drills' rows.
  std::vector<analysis::DrillWindow> windows;
  if (!gaps->empty()) {
    const auto extent = analysis::extentOf(*gaps);
    constexpr std::int64_t kAfterDrillUs = 1'000'000;
    auto spans = drills_.drillSpans(cluster_id, {extent.from_us - kAfterDrillUs, extent.to_us});
    if (!spans) return storeFailure(request, spans.error());
    for (const auto& d : *spans) {
      windows.push_back({d.from_us, d.to_us.value_or(clock_.wallNow()) + kAfterDrillUs});
    }
  }
  std::vector<analysis::MaintenanceSpan> planned;
  if (maintenance_ != nullptr && !gaps->empty()) {
    const auto extent = analysis::extentOf(*gaps);
    auto found = maintenance_->windows(cluster_id, extent.from_us, extent.to_us + 1, 10'000);
    if (!found) return storeFailure(request, found.error());
    planned = analysis::spansOf(*found);
  }
  const auto merged = analysis::incidentsOf(std::move(*gaps), windows, planned);
  // The events around every incident of the page in one query.
  std::vector<storage::TimeRange> around;
  around.reserve(merged.size());
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) {  // newest first
    around.push_back({it->start_us - kIncidentEventsBeforeUs, it->end_us + kIncidentEventsAfterUs});
  }
  auto events_around = store_.eventsInWindows(cluster_id, around, 200);
  if (!events_around) return storeFailure(request, events_around.error());
  BoundedArray items;
  std::optional<std::int64_t> next_to;  // the start of the oldest incident in this answer
  std::size_t index = 0;
  for (auto it = merged.rbegin(); it != merged.rend(); ++it, ++index) {  // newest first
    json partitions = json::array();
    for (const auto& g : it->gaps) {
      partitions.push_back({{"topic", g.topic},
                            {"partition", g.partition},
                            {"kind", storage::toString(g.kind)},
                            {"start_us", g.start_us},
                            {"end_us", g.end_us},
                            {"duration_us", g.duration_us}});
    }
    json event_items = json::array();
    for (const auto& e : (*events_around)[index]) {
      // The gaps themselves, already listed.
      if (storage::sourceOf(e) == common::EventSource::kProbe) continue;
      event_items.push_back(eventJson(e));
    }
    const bool added = items.add({{"start", common::formatRfc3339(it->start_us)},
                                  {"start_us", it->start_us},
                                  {"end", common::formatRfc3339(it->end_us)},
                                  {"end_us", it->end_us},
                                  {"duration_us", it->end_us - it->start_us},
                                  {"partitions", std::move(partitions)},
                                  {"events", std::move(event_items)}});
    if (!added) {
      // The older incidents: their gaps all end before this answer's oldest incident starts.
      next_to = items.count() > 0 ? std::prev(it)->start_us : it->start_us;
      break;
    }
  }
  json next = nullptr;
  if (next_to) {
    std::string target = request.path +
                         "?from=" + percentEncode(common::formatRfc3339(range->from_us)) +
                         "&to=" + percentEncode(common::formatRfc3339(*next_to));
    for (const auto& [name, value] : request.query) {
      if (name != "from" && name != "to")
        target += "&" + percentEncode(name) + "=" + percentEncode(value);
    }
    next = target;
  }
  Response response;
  response.body = "{\"items\":" + items.text() + ",\"count\":" + std::to_string(items.count()) +
                  ",\"truncated\":" + (truncated || next_to ? "true" : "false") +
                  ",\"next\":" + common::jsonText(next) +
                  ",\"from\":" + common::jsonText(json(common::formatRfc3339(range->from_us))) +
                  ",\"to\":" + common::jsonText(json(common::formatRfc3339(range->to_us))) + "}";
  return response;
}

Response DrillEndpoints::listSchedules(const Request& request) const {
  auto query = QueryReader::create(request.query, {"cluster"});
  if (!query) return badRequest(request, query.error());
  std::optional<storage::ClusterId> cluster_id;
  if (auto name = query->raw("cluster")) {
    auto cluster =
        findCluster(request, live_, store_, std::string(*name), ProblemType::kUnknownCluster);
    if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
    cluster_id = std::get<storage::ClusterId>(cluster);
  }
  auto rows = drills_.schedules(cluster_id);
  if (!rows) return storeFailure(request, rows.error());
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  json items = json::array();
  for (const auto& row : *rows) items.push_back(scheduleJson(row, std::get<0>(names)));
  const auto count = items.size();
  return jsonResponse(200, {{"items", std::move(items)}, {"count", count}});
}

Response DrillEndpoints::createSchedule(const Request& request) {
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  auto body = jsonObjectBody(request);
  if (auto* failure = std::get_if<Response>(&body)) return std::move(*failure);
  auto fields = readScheduleFields(std::get<json>(body), false);
  if (auto* message = std::get_if<std::string>(&fields)) return invalidBody(request, *message);
  auto& f = std::get<ScheduleFields>(fields);
  auto cluster = findCluster(request, live_, store_, *f.cluster, ProblemType::kInvalidBody);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  const auto cluster_id = std::get<storage::ClusterId>(cluster);
  if (!control_.drillsEnabled(cluster_id)) {
    return problem(ProblemType::kDrillsDisabled,
                   "cluster " + printable(*f.cluster, 100) +
                       " has no inventory in kfaild's configuration, so its schedules could never "
                       "run a drill",
                   request.path);
  }
  storage::ScheduleRecord s;
  s.cluster = cluster_id;
  s.name = *f.name;
  s.cron = *f.cron;
  s.jitter_s = f.jitter_s.value_or(0);
  s.enabled = f.enabled.value_or(true);
  s.drill = common::jsonText(*f.drill);
  s.created_us = clock_.wallNow();
  if (s.enabled) {
    const auto next = drill::nextScheduledRun(s.cron, s.jitter_s, s.created_us);
    if (next >= 0) s.next_run_us = next;
  }
  auto id = drills_.createSchedule(s);
  if (!id) return storeFailure(request, id.error());
  s.id = *id;
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  auto response = jsonResponse(201, scheduleJson(s, std::get<0>(names)));
  response.headers.emplace_back("Location", "/api/v1/schedules/" + std::to_string(s.id));
  return response;
}

Response DrillEndpoints::getSchedule(const Request& request) const {
  auto found = scheduleOfPath(request);
  if (auto* failure = std::get_if<Response>(&found)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  return jsonResponse(200,
                      scheduleJson(std::get<storage::ScheduleRecord>(found), std::get<0>(names)));
}

Response DrillEndpoints::updateSchedule(const Request& request) {
  auto found = scheduleOfPath(request);
  if (auto* failure = std::get_if<Response>(&found)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  auto body = jsonObjectBody(request);
  if (auto* failure = std::get_if<Response>(&body)) return std::move(*failure);
  auto fields = readScheduleFields(std::get<json>(body), true);
  if (auto* message = std::get_if<std::string>(&fields)) return invalidBody(request, *message);
  const auto& f = std::get<ScheduleFields>(fields);
  auto s = std::get<storage::ScheduleRecord>(found);
  const bool timing_changed = (f.cron && *f.cron != s.cron) ||
                              (f.jitter_s && *f.jitter_s != s.jitter_s) ||
                              (f.enabled && *f.enabled != s.enabled);
  if (f.name) s.name = *f.name;
  if (f.cron) s.cron = *f.cron;
  if (f.jitter_s) s.jitter_s = *f.jitter_s;
  if (f.enabled) s.enabled = *f.enabled;
  if (f.drill) s.drill = common::jsonText(*f.drill);
  if (timing_changed) {
    s.next_run_us.reset();
    if (s.enabled) {
      const auto next = drill::nextScheduledRun(s.cron, s.jitter_s, clock_.wallNow());
      if (next >= 0) s.next_run_us = next;
    }
  }
  if (auto st = drills_.updateSchedule(s); !st) return storeFailure(request, st.error());
  auto names = clusterNames(request);
  if (auto* failure = std::get_if<Response>(&names)) return std::move(*failure);
  return jsonResponse(200, scheduleJson(s, std::get<0>(names)));
}

Response DrillEndpoints::deleteSchedule(const Request& request) {
  auto found = scheduleOfPath(request);
  if (auto* failure = std::get_if<Response>(&found)) return std::move(*failure);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  auto deleted = drills_.deleteSchedule(std::get<storage::ScheduleRecord>(found).id);
  if (!deleted) return storeFailure(request, deleted.error());
  Response response;
  response.status = 204;
  response.content_type.clear();
  return response;
}

}  // namespace kfaild::api
