#include "storage/audit_log.h"

#include <algorithm>

#include "storage/migrations.h"
#include "storage/sqlite.h"

namespace kfaild::storage {
namespace {

// SQLite's cost of a row beyond its values: record header, rowid, cell pointer, index entry.
constexpr std::int64_t kRowOverhead = 40;

// One row, or an aggregated row added to the one already stored for its minute, role, method,
// route and status (the unique index audit_log_aggregates).
constexpr const char* kInsertRecord =
    "INSERT INTO audit_log (time_us, role, remote, method, route, body_sha256, body_bytes, status, "
    "problem, count,"
    " aggregated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    " ON CONFLICT (time_us, role, method, route, status) WHERE aggregated = 1 DO UPDATE SET"
    " count = count + excluded.count, body_bytes = body_bytes + excluded.body_bytes,"
    " remote = CASE WHEN remote = excluded.remote THEN remote ELSE '(several)' END";

// The oldest refused rows; accepted ones are kept for their retention.
constexpr const char* kDeleteOldestRefused =
    "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE status >= 400 ORDER BY id "
    "LIMIT ?1)";
constexpr const char* kDeleteOldestCounts =
    "DELETE FROM audit_refusals WHERE (minute_us, remote, route_class, status) IN (SELECT "
    "minute_us,"
    " remote, route_class, status FROM audit_refusals ORDER BY minute_us LIMIT ?1)";

Status insertRecord(sqlite::Database& db, const AuditRecord& r) {
  auto s = db.prepare(kInsertRecord);
  if (!s) return s.error();
  s->bindInt(1, r.time_us);
  s->bindText(2, r.role);
  s->bindText(3, r.remote);
  s->bindText(4, r.method);
  s->bindText(5, r.route);
  s->bindText(6, r.body_sha256);
  s->bindInt(7, r.body_bytes);
  s->bindInt(8, r.status);
  s->bindText(9, r.problem);
  s->bindInt(10, r.count);
  s->bindInt(11, r.aggregated ? 1 : 0);
  return s->run();
}

}  // namespace

AuditLog::AuditLog(std::unique_ptr<sqlite::Database> db) : db_(std::move(db)) {}
AuditLog::~AuditLog() = default;

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  auto db = openAtLatestSchema(path);
  if (!db) return db.error();
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(*db)));
}

Result<std::int64_t> AuditLog::append(const AuditRecord& r) {
  std::lock_guard lock(mutex_);
  if (auto done = insertRecord(*db_, r); !done) return done.error();
  return db_->queryInt("SELECT last_insert_rowid()");
}

Status AuditLog::appendBatch(const std::vector<AuditRecord>& records,
                             const std::vector<AuditRefusal>& refusals) {
  if (records.empty() && refusals.empty()) return okStatus();
  std::lock_guard lock(mutex_);
  if (auto begun = db_->exec("BEGIN IMMEDIATE"); !begun) return begun;
  const auto fail = [this](const Error& error) {
    db_->rollbackQuietly();
    return Status(error);
  };
  for (const auto& r : records) {
    if (auto done = insertRecord(*db_, r); !done) return fail(done.error());
  }
  for (const auto& r : refusals) {
    auto s = db_->prepare(
        "INSERT INTO audit_refusals (minute_us, remote, route_class, status, count) VALUES (?1, "
        "?2, ?3, ?4, ?5)"
        " ON CONFLICT (minute_us, remote, route_class, status) DO UPDATE SET count = count + "
        "excluded.count");
    if (!s) return fail(s.error());
    s->bindInt(1, r.minute_us);
    s->bindText(2, r.remote);
    s->bindText(3, r.route_class);
    s->bindInt(4, r.status);
    s->bindInt(5, r.count);
    if (auto done = s->run(); !done) return fail(done.error());
  }
  if (auto committed = db_->exec("COMMIT"); !committed) return fail(committed.error());
  return okStatus();
}

Result<std::vector<AuditRecord>> AuditLog::records(const AuditQuery& q) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "SELECT id, time_us, role, remote, method, route, body_sha256, body_bytes, status, problem, "
      "count, aggregated"
      " FROM audit_log"
      " WHERE (?1 IS NULL OR time_us >= ?1) AND (?2 IS NULL OR time_us < ?2) AND (?3 IS NULL OR id "
      "< ?3)"
      " ORDER BY id DESC LIMIT ?4");
  if (!s) return s.error();
  s->bindOptionalInt(1, q.from_us);
  s->bindOptionalInt(2, q.to_us);
  s->bindOptionalInt(3, q.before_id);
  s->bindInt(4, static_cast<std::int64_t>(q.limit));
  std::vector<AuditRecord> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    AuditRecord r;
    r.id = s->columnInt(0);
    r.time_us = s->columnInt(1);
    r.role = s->columnText(2);
    r.remote = s->columnText(3);
    r.method = s->columnText(4);
    r.route = s->columnText(5);
    r.body_sha256 = s->columnText(6);
    r.body_bytes = s->columnInt(7);
    r.status = static_cast<int>(s->columnInt(8));
    r.problem = s->columnText(9);
    r.count = s->columnInt(10);
    r.aggregated = s->columnInt(11) != 0;
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<AuditRefusal>> AuditLog::refusals(std::size_t limit) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "SELECT minute_us, remote, route_class, status, count FROM audit_refusals"
      " ORDER BY minute_us, remote, route_class, status LIMIT ?1");
  if (!s) return s.error();
  s->bindInt(1, static_cast<std::int64_t>(limit));
  std::vector<AuditRefusal> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({s->columnInt(0), s->columnText(1), s->columnText(2),
                   static_cast<int>(s->columnInt(3)), s->columnInt(4)});
  }
  return out;
}

Result<std::int64_t> AuditLog::bytesLocked() const {
  auto rows = db_->queryInt(
      "SELECT coalesce(sum(length(role) + length(remote) + length(method) + length(route) + "
      "length(body_sha256)"
      " + length(problem) + 32), 0) FROM audit_log");
  if (!rows) return rows.error();
  auto counts = db_->queryInt(
      "SELECT coalesce(sum(2 * (length(remote) + length(route_class)) + 24), 0) FROM "
      "audit_refusals");
  if (!counts) return counts.error();
  auto row_count = db_->queryInt(
      "SELECT (SELECT count(*) FROM audit_log) + (SELECT count(*) FROM audit_refusals)");
  if (!row_count) return row_count.error();
  return *rows + *counts + *row_count * kRowOverhead;
}

Result<std::int64_t> AuditLog::bytes() const {
  std::lock_guard lock(mutex_);
  return bytesLocked();
}

Result<std::int64_t> AuditLog::prune(std::int64_t before_us, std::int64_t max_rows) {
  std::lock_guard lock(mutex_);
  std::int64_t deleted = 0;
  for (const char* sql : {"DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE "
                          "time_us < ?1 ORDER BY id LIMIT ?2)",
                          "DELETE FROM audit_refusals WHERE (minute_us, remote, route_class, "
                          "status) IN (SELECT minute_us, remote,"
                          " route_class, status FROM audit_refusals WHERE minute_us < ?1 ORDER BY "
                          "minute_us LIMIT ?2)"}) {
    auto s = db_->prepare(sql);
    if (!s) return s.error();
    s->bindInt(1, before_us);
    s->bindInt(2, max_rows);
    if (auto done = s->run(); !done) return done.error();
    deleted += db_->changes();
  }
  return deleted;
}

Result<std::int64_t> AuditLog::pruneOldest(std::int64_t target_bytes) {
  std::lock_guard lock(mutex_);
  std::int64_t deleted = 0;
  // Counts of refusals go first: they say less than a row about one request. Then refused
  // rows: whoever can send requests must not be able to push an accepted change out.
  struct Kind {
    const char* count_sql;
    const char* delete_sql;
  };
  for (const Kind& kind :
       {Kind{"SELECT count(*) FROM audit_refusals", kDeleteOldestCounts},
        Kind{"SELECT count(*) FROM audit_log WHERE status >= 400", kDeleteOldestRefused}}) {
    auto bytes = bytesLocked();
    if (!bytes) return bytes.error();
    if (*bytes <= target_bytes) break;
    auto rows = db_->queryInt(kind.count_sql);
    if (!rows) return rows.error();
    if (*rows == 0) continue;
    auto total = db_->queryInt(
        "SELECT (SELECT count(*) FROM audit_log) + (SELECT count(*) FROM audit_refusals)");
    if (!total) return total.error();
    // Rows are of similar size: delete the share of them that is over the target.
    const auto average = std::max<std::int64_t>(1, *bytes / std::max<std::int64_t>(1, *total));
    const auto wanted = std::min(*rows, (*bytes - target_bytes + average - 1) / average);
    auto s = db_->prepare(kind.delete_sql);
    if (!s) return s.error();
    s->bindInt(1, wanted);
    if (auto done = s->run(); !done) return done.error();
    deleted += db_->changes();
  }
  return deleted;
}

}  // namespace kfaild::storage
