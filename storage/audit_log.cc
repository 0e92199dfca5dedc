#include "storage/audit_log.h"

#include "storage/migrations.h"
#include "storage/sqlite.h"

namespace kfaild::storage {

AuditLog::AuditLog(std::unique_ptr<sqlite::Database> db) : db_(std::move(db)) {}
AuditLog::~AuditLog() = default;

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  auto db = openAtLatestSchema(path);
  if (!db) return db.error();
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(*db)));
}

Result<std::int64_t> AuditLog::append(const AuditRecord& r) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "INSERT INTO audit_log (time_us, role, remote, method, route, body_sha256, body_bytes, status, problem)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
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
  if (auto done = s->run(); !done) return done.error();
  return db_->queryInt("SELECT last_insert_rowid()");
}

Result<std::vector<AuditRecord>> AuditLog::records(const AuditQuery& q) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "SELECT id, time_us, role, remote, method, route, body_sha256, body_bytes, status, problem FROM audit_log"
      " WHERE (?1 IS NULL OR time_us >= ?1) AND (?2 IS NULL OR time_us < ?2) AND (?3 IS NULL OR id < ?3)"
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
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kfaild::storage
