#include "api/audit_endpoints.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "api/query_params.h"
#include "api/resources.h"
#include "server/common/time_format.h"

namespace kfaild::api {

using nlohmann::json;

namespace {
constexpr std::int64_t kMinuteUs = 60'000'000;
constexpr const char* kOverflowPeer = "(overflow)";
constexpr const char* kSeveralPeers = "(several)";
}  // namespace

AuditRecorder::AuditRecorder(storage::AuditLog& log, const common::Clock& clock,
                             AuditRecorderOptions options)
    : log_(log), clock_(clock), options_(options) {}

void AuditRecorder::start() {
  worker_.start("kfaild:audit", [this] {
    while (worker_.sleepFor(
        std::chrono::duration_cast<std::chrono::microseconds>(options_.flush_interval))) {
      flush();
    }
  });
}

void AuditRecorder::stop() {
  worker_.stop();
  flush();
}

void AuditRecorder::flush() {
  commit(std::nullopt);
}

bool AuditRecorder::commit(std::optional<storage::AuditRecord> accepted) {
  std::lock_guard flushing(flush_mutex_);
  std::vector<storage::AuditRecord> rows;
  std::map<CountKey, std::int64_t> counts;
  {
    std::lock_guard lock(queue_mutex_);
    rows.swap(queued_);
    counts.swap(counts_);
    for (auto& [key, row] : aggregated_) rows.push_back(std::move(row));
    aggregated_.clear();
  }
  // After the refusals queued before it: ids follow the order of the answers.
  if (accepted) rows.push_back(std::move(*accepted));
  if (rows.empty() && counts.empty()) return true;
  std::vector<storage::AuditRefusal> refusals;
  refusals.reserve(counts.size());
  for (auto& [key, count] : counts) {
    refusals.push_back(
        {std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), count});
  }
  if (auto done = log_.appendBatch(rows, refusals); !done) {
    failed_.fetch_add(rows.size() + refusals.size());
    spdlog::warn("audit: cannot record {} requests and {} counts of refused anonymous requests: {}",
                 rows.size(), refusals.size(), done.error().describe());
    return false;
  }
  written_.fetch_add(rows.size());
  return true;
}

void AuditRecorder::operator()(const AuditEntry& entry) {
  const auto now = clock_.wallNow();
  storage::AuditRecord record{0,
                              now,
                              roleName(entry.role),
                              entry.remote_address,
                              entry.method,
                              entry.route,
                              entry.body_sha256,
                              static_cast<std::int64_t>(entry.body_bytes),
                              entry.status,
                              entry.problem,
                              1,
                              false};
  if (entry.status < 400) {
    // Committed before the answer leaves: the change it records has not been acknowledged yet.
    commit(std::move(record));
    return;
  }
  const auto minute = now - now % kMinuteUs;
  const std::string route_class = entry.matched ? entry.route : std::string("unmatched");
  std::lock_guard lock(queue_mutex_);
  if (entry.role != Role::kAnonymous && queueTokenRefusal(std::move(record), minute, route_class))
    return;
  CountKey key{minute, entry.remote_address, route_class, entry.status};
  auto it = counts_.find(key);
  if (it == counts_.end() && counts_.size() >= options_.max_counts) {
    key = CountKey{minute, kOverflowPeer, "(any)", entry.status};
    it = counts_.find(key);
  }
  if (it == counts_.end()) it = counts_.emplace(std::move(key), 0).first;
  ++it->second;
  counted_.fetch_add(1);
}

bool AuditRecorder::queueTokenRefusal(storage::AuditRecord record, std::int64_t minute,
                                      const std::string& route_class) {
  if (minute != token_minute_) {
    token_minute_ = minute;
    rows_this_minute_.clear();
  }
  TokenKey key{record.role, record.method, route_class, record.status};
  const auto given = rows_this_minute_.find(key);
  const bool known = given != rows_this_minute_.end();
  if ((known || rows_this_minute_.size() < options_.max_counts) &&
      queued_.size() < options_.max_queued &&
      (!known || given->second < options_.refusal_rows_per_minute)) {
    ++rows_this_minute_[key];
    queued_.push_back(std::move(record));
    return true;
  }
  auto row = aggregated_.find(key);
  if (row == aggregated_.end() || row->second.time_us != minute) {
    // A minute's row is flushed before the next minute's takes its place.
    if (row != aggregated_.end()) queued_.push_back(std::move(row->second));
    if (row == aggregated_.end() && aggregated_.size() >= options_.max_counts) return false;
    storage::AuditRecord first = std::move(record);
    first.time_us = minute;
    first.route = route_class;
    first.body_sha256.clear();
    first.count = 1;
    first.aggregated = true;
    aggregated_.insert_or_assign(std::move(key), std::move(first));
  } else {
    auto& sum = row->second;
    ++sum.count;
    sum.body_bytes += record.body_bytes;
    if (sum.remote != record.remote) sum.remote = kSeveralPeers;
  }
  counted_.fetch_add(1);
  return true;
}

void AuditEndpoints::registerOn(Router& router) {
  router.add(
      "GET", "/api/v1/audit", [this](const Request& request) { return list(request); },
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
                     {"count", r.count},
                     {"problem", r.problem.empty() ? json(nullptr) : json(r.problem)}});
  }
  return jsonResponse(
      200, {{"items", std::move(items)},
            {"count", rows->size()},
            {"next_cursor", more ? json(std::to_string(rows->back().id)) : json(nullptr)}});
}

}  // namespace kfaild::api
