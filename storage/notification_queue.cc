#include "storage/notification_queue.h"

#include "storage/migrations.h"
#include "storage/sqlite.h"

namespace kfaild::storage {
namespace {

constexpr const char* kColumns =
    "id, receiver, event, dedup_key, payload, state, attempts, next_attempt_us, last_error, "
    "created_us, delivered_us";

NotificationRecord readRow(const sqlite::Statement& s) {
  NotificationRecord r;
  r.id = s.columnInt(0);
  r.receiver = s.columnText(1);
  r.event = s.columnText(2);
  r.dedup_key = s.columnText(3);
  r.payload = s.columnText(4);
  r.state = s.columnText(5);
  r.attempts = s.columnInt(6);
  r.next_attempt_us = s.columnInt(7);
  r.last_error = s.columnText(8);
  r.created_us = s.columnInt(9);
  r.delivered_us = s.columnOptionalInt(10);
  return r;
}

Result<std::vector<NotificationRecord>> readAll(sqlite::Statement& s) {
  std::vector<NotificationRecord> out;
  for (;;) {
    auto row = s.step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(readRow(s));
  }
  return out;
}

}  // namespace

NotificationQueue::NotificationQueue(std::unique_ptr<sqlite::Database> db) : db_(std::move(db)) {}
NotificationQueue::~NotificationQueue() = default;

Result<std::unique_ptr<NotificationQueue>> NotificationQueue::open(const std::string& path) {
  auto db = openAtLatestSchema(path);
  if (!db) return db.error();
  return std::unique_ptr<NotificationQueue>(new NotificationQueue(std::move(*db)));
}

Result<std::optional<std::int64_t>> NotificationQueue::enqueue(const NotificationRecord& r) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "INSERT INTO notifications (receiver, event, dedup_key, payload, state, attempts, "
      "next_attempt_us, created_us)"
      " VALUES (?1, ?2, ?3, ?4, 'queued', 0, ?5, ?6) ON CONFLICT (receiver, dedup_key) DO NOTHING");
  if (!s) return s.error();
  s->bindText(1, r.receiver);
  s->bindText(2, r.event);
  s->bindText(3, r.dedup_key);
  s->bindText(4, r.payload);
  s->bindInt(5, r.next_attempt_us);
  s->bindInt(6, r.created_us);
  if (auto done = s->run(); !done) return done.error();
  if (db_->changes() == 0) return std::optional<std::int64_t>{};
  auto id = db_->queryInt("SELECT last_insert_rowid()");
  if (!id) return id.error();
  return std::optional<std::int64_t>{*id};
}

Result<std::vector<NotificationRecord>> NotificationQueue::claimDue(std::int64_t now_us,
                                                                    std::size_t limit) {
  std::lock_guard lock(mutex_);
  if (auto begun = db_->exec("BEGIN IMMEDIATE"); !begun) return begun.error();
  auto s = db_->prepare(std::string("SELECT ") + kColumns +
                        " FROM notifications WHERE state = 'queued' AND next_attempt_us <= ?1 "
                        "ORDER BY next_attempt_us, id"
                        " LIMIT ?2");
  if (!s) {
    db_->rollbackQuietly();
    return s.error();
  }
  s->bindInt(1, now_us);
  s->bindInt(2, static_cast<std::int64_t>(limit));
  auto rows = readAll(*s);
  if (!rows) {
    db_->rollbackQuietly();
    return rows.error();
  }
  auto u = db_->prepare("UPDATE notifications SET state = 'delivering' WHERE id = ?1");
  if (!u) {
    db_->rollbackQuietly();
    return u.error();
  }
  for (auto& r : *rows) {
    u->bindInt(1, r.id);
    if (auto done = u->run(); !done) {
      db_->rollbackQuietly();
      return done.error();
    }
    u->reset();
    r.state = "delivering";
  }
  if (auto committed = db_->exec("COMMIT"); !committed) {
    db_->rollbackQuietly();
    return committed.error();
  }
  return rows;
}

Status NotificationQueue::finishAttempt(std::int64_t id, const std::string& state,
                                        std::optional<std::int64_t> next_us,
                                        std::optional<std::int64_t> delivered_us,
                                        const std::string& error) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "UPDATE notifications SET state = ?2, attempts = attempts + 1,"
      " next_attempt_us = COALESCE(?3, next_attempt_us), delivered_us = ?4, last_error = ?5 WHERE "
      "id = ?1");
  if (!s) return s.error();
  s->bindInt(1, id);
  s->bindText(2, state);
  s->bindOptionalInt(3, next_us);
  s->bindOptionalInt(4, delivered_us);
  s->bindText(5, error);
  return s->run();
}

Status NotificationQueue::markDelivered(std::int64_t id, std::int64_t now_us) {
  return finishAttempt(id, "delivered", std::nullopt, now_us, "");
}

Status NotificationQueue::markRetry(std::int64_t id, std::int64_t next_attempt_us,
                                    const std::string& error) {
  return finishAttempt(id, "queued", next_attempt_us, std::nullopt, error);
}

Status NotificationQueue::markFailed(std::int64_t id, const std::string& error) {
  return finishAttempt(id, "failed", std::nullopt, std::nullopt, error);
}

Result<std::int64_t> NotificationQueue::requeueInterrupted(std::int64_t now_us) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "UPDATE notifications SET state = 'queued', next_attempt_us = ?1 WHERE state = 'delivering'");
  if (!s) return s.error();
  s->bindInt(1, now_us);
  if (auto done = s->run(); !done) return done.error();
  return db_->changes();
}

Result<std::optional<std::int64_t>> NotificationQueue::nextDue() const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare("SELECT MIN(next_attempt_us) FROM notifications WHERE state = 'queued'");
  if (!s) return s.error();
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<std::int64_t>{};
  return s->columnOptionalInt(0);
}

Result<std::optional<NotificationRecord>> NotificationQueue::notification(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(std::string("SELECT ") + kColumns + " FROM notifications WHERE id = ?1");
  if (!s) return s.error();
  s->bindInt(1, id);
  auto rows = readAll(*s);
  if (!rows) return rows.error();
  if (rows->empty()) return std::optional<NotificationRecord>{};
  return std::optional<NotificationRecord>{std::move(rows->front())};
}

Result<std::vector<NotificationRecord>> NotificationQueue::notifications(
    const NotificationQuery& q) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      std::string("SELECT ") + kColumns +
      " FROM notifications WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR receiver = ?2)"
      " AND (?3 IS NULL OR event = ?3) AND (?4 IS NULL OR id < ?4) ORDER BY id DESC LIMIT ?5");
  if (!s) return s.error();
  s->bindOptionalText(1, q.state);
  s->bindOptionalText(2, q.receiver);
  s->bindOptionalText(3, q.event);
  s->bindOptionalInt(4, q.before_id);
  s->bindInt(5, static_cast<std::int64_t>(q.limit));
  return readAll(*s);
}

Result<std::vector<NotificationCount>> NotificationQueue::counts() const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "SELECT receiver, state, COUNT(*) FROM notifications GROUP BY receiver, state ORDER BY "
      "receiver, state");
  if (!s) return s.error();
  std::vector<NotificationCount> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({s->columnText(0), s->columnText(1), s->columnInt(2)});
  }
  return out;
}

}  // namespace kfaild::storage
