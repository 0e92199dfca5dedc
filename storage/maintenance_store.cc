#include "storage/maintenance_store.h"

#include <map>

#include "storage/migrations.h"
#include "storage/sqlite.h"

namespace kfaild::storage {
namespace {

constexpr const char* kWindowColumns =
    "w.id, w.cluster_id, c.name, w.reason, w.opened_by, w.started_us, w.ends_us, w.closed_us, "
    "w.closed_by"
    " FROM maintenance_windows AS w JOIN clusters AS c ON c.id = w.cluster_id";
constexpr const char* kSilenceColumns =
    "window_id, receiver, silence_id, state, attempts, created_us, next_attempt_us, last_error "
    "FROM maintenance_silences";
// Where a window stops covering, in SQL (MaintenanceWindowRecord::endUs).
constexpr const char* kEnd = "MIN(w.ends_us, COALESCE(w.closed_us, w.ends_us))";

Result<std::vector<MaintenanceWindowRecord>> readWindows(sqlite::Statement& s) {
  std::vector<MaintenanceWindowRecord> out;
  for (;;) {
    auto row = s.step();
    if (!row) return row.error();
    if (!*row) break;
    MaintenanceWindowRecord w;
    w.id = s.columnInt(0);
    w.cluster = s.columnInt(1);
    w.cluster_name = s.columnText(2);
    w.reason = s.columnText(3);
    w.opened_by = s.columnText(4);
    w.started_us = s.columnInt(5);
    w.ends_us = s.columnInt(6);
    w.closed_us = s.columnOptionalInt(7);
    w.closed_by = s.columnText(8);
    out.push_back(std::move(w));
  }
  return out;
}

Result<std::vector<MaintenanceSilenceRecord>> readSilences(sqlite::Statement& s) {
  std::vector<MaintenanceSilenceRecord> out;
  for (;;) {
    auto row = s.step();
    if (!row) return row.error();
    if (!*row) break;
    MaintenanceSilenceRecord r;
    r.window_id = s.columnInt(0);
    r.receiver = s.columnText(1);
    r.silence_id = s.columnText(2);
    r.state = s.columnText(3);
    r.attempts = s.columnInt(4);
    r.created_us = s.columnInt(5);
    r.next_attempt_us = s.columnInt(6);
    r.last_error = s.columnText(7);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

MaintenanceStore::MaintenanceStore(std::unique_ptr<sqlite::Database> db) : db_(std::move(db)) {}
MaintenanceStore::~MaintenanceStore() = default;

Result<std::unique_ptr<MaintenanceStore>> MaintenanceStore::open(const std::string& path) {
  auto db = openAtLatestSchema(path);
  if (!db) return db.error();
  return std::unique_ptr<MaintenanceStore>(new MaintenanceStore(std::move(*db)));
}

Result<std::int64_t> MaintenanceStore::insert(const MaintenanceWindowRecord& w,
                                              const std::vector<std::string>& receivers) {
  std::lock_guard lock(mutex_);
  if (auto begun = db_->exec("BEGIN IMMEDIATE"); !begun) return begun.error();
  const auto failed = [this](const Error& e) -> Result<std::int64_t> {
    db_->rollbackQuietly();
    return e;
  };
  auto s = db_->prepare(
      "INSERT INTO maintenance_windows (cluster_id, reason, opened_by, started_us, ends_us) VALUES "
      "(?1, ?2, ?3, ?4, ?5)");
  if (!s) return failed(s.error());
  s->bindInt(1, w.cluster);
  s->bindText(2, w.reason);
  s->bindText(3, w.opened_by);
  s->bindInt(4, w.started_us);
  s->bindInt(5, w.ends_us);
  if (auto done = s->run(); !done) return failed(done.error());
  auto id = db_->queryInt("SELECT last_insert_rowid()");
  if (!id) return failed(id.error());
  auto silence = db_->prepare(
      "INSERT INTO maintenance_silences (window_id, receiver, state, created_us, next_attempt_us)"
      " VALUES (?1, ?2, 'creating', ?3, ?3)");
  if (!silence) return failed(silence.error());
  for (const auto& receiver : receivers) {
    silence->bindInt(1, *id);
    silence->bindText(2, receiver);
    silence->bindInt(3, w.started_us);
    if (auto done = silence->run(); !done) return failed(done.error());
    silence->reset();
  }
  if (auto committed = db_->exec("COMMIT"); !committed) return failed(committed.error());
  return *id;
}

Result<bool> MaintenanceStore::close(std::int64_t id, std::int64_t closed_us,
                                     const std::string& closed_by) {
  std::lock_guard lock(mutex_);
  if (auto begun = db_->exec("BEGIN IMMEDIATE"); !begun) return begun.error();
  const auto failed = [this](const Error& e) -> Result<bool> {
    db_->rollbackQuietly();
    return e;
  };
  auto s = db_->prepare(
      "UPDATE maintenance_windows SET closed_us = ?2, closed_by = ?3"
      " WHERE id = ?1 AND closed_us IS NULL AND ends_us > ?2");
  if (!s) return failed(s.error());
  s->bindInt(1, id);
  s->bindInt(2, closed_us);
  s->bindText(3, closed_by);
  if (auto done = s->run(); !done) return failed(done.error());
  if (db_->changes() == 0) {
    db_->rollbackQuietly();
    return false;
  }
  // A silence that exists is expired at once; one not created yet never will be.
  for (const char* sql :
       {"UPDATE maintenance_silences SET state = 'expiring', attempts = 0, created_us = ?2,"
        " next_attempt_us = ?2, last_error = '' WHERE window_id = ?1 AND state = 'active'",
        "UPDATE maintenance_silences SET state = 'ended', next_attempt_us = ?2"
        " WHERE window_id = ?1 AND state = 'creating'"}) {
    auto u = db_->prepare(sql);
    if (!u) return failed(u.error());
    u->bindInt(1, id);
    u->bindInt(2, closed_us);
    if (auto done = u->run(); !done) return failed(done.error());
  }
  if (auto committed = db_->exec("COMMIT"); !committed) return failed(committed.error());
  return true;
}

Status MaintenanceStore::attachSilences(std::vector<MaintenanceWindowRecord>& windows) const {
  if (windows.empty()) return okStatus();
  std::map<std::int64_t, MaintenanceWindowRecord*> by_id;
  std::int64_t low = windows.front().id, high = windows.front().id;
  for (auto& w : windows) {
    by_id[w.id] = &w;
    low = std::min(low, w.id);
    high = std::max(high, w.id);
  }
  auto s = db_->prepare(std::string("SELECT ") + kSilenceColumns +
                        " WHERE window_id BETWEEN ?1 AND ?2 ORDER BY window_id, receiver");
  if (!s) return s.error();
  s->bindInt(1, low);
  s->bindInt(2, high);
  auto rows = readSilences(*s);
  if (!rows) return rows.error();
  for (auto& r : *rows) {
    if (auto it = by_id.find(r.window_id); it != by_id.end())
      it->second->silences.push_back(std::move(r));
  }
  return okStatus();
}

Result<std::optional<MaintenanceWindowRecord>> MaintenanceStore::window(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(std::string("SELECT ") + kWindowColumns + " WHERE w.id = ?1");
  if (!s) return s.error();
  s->bindInt(1, id);
  auto rows = readWindows(*s);
  if (!rows) return rows.error();
  if (auto attached = attachSilences(*rows); !attached) return attached.error();
  if (rows->empty()) return std::optional<MaintenanceWindowRecord>{};
  return std::optional<MaintenanceWindowRecord>{std::move(rows->front())};
}

Result<std::vector<MaintenanceWindowRecord>> MaintenanceStore::windows(ClusterId cluster,
                                                                       std::int64_t from_us,
                                                                       std::int64_t to_us,
                                                                       std::size_t limit) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(std::string("SELECT ") + kWindowColumns +
                        " WHERE w.cluster_id = ?1 AND ?2 < ?3 AND w.started_us < ?3 AND " + kEnd +
                        " > ?2 ORDER BY w.started_us, w.id LIMIT ?4");
  if (!s) return s.error();
  s->bindInt(1, cluster);
  s->bindInt(2, from_us);
  s->bindInt(3, to_us);
  s->bindInt(4, static_cast<std::int64_t>(limit));
  auto rows = readWindows(*s);
  if (!rows) return rows.error();
  if (auto attached = attachSilences(*rows); !attached) return attached.error();
  return rows;
}

Result<std::vector<MaintenanceWindowRecord>> MaintenanceStore::activeAt(std::int64_t at_us) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(std::string("SELECT ") + kWindowColumns + " WHERE w.started_us <= ?1 AND " +
                        kEnd + " > ?1 ORDER BY w.started_us, w.id");
  if (!s) return s.error();
  s->bindInt(1, at_us);
  return readWindows(*s);
}

Result<std::vector<MaintenanceSilenceRecord>> MaintenanceStore::silencesDue(
    std::int64_t now_us) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(std::string("SELECT ") + kSilenceColumns +
                        " WHERE state IN ('creating', 'expiring') AND next_attempt_us <= ?1"
                        " ORDER BY next_attempt_us, window_id, receiver");
  if (!s) return s.error();
  s->bindInt(1, now_us);
  return readSilences(*s);
}

Result<std::optional<std::int64_t>> MaintenanceStore::nextSilenceDue() const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "SELECT MIN(next_attempt_us) FROM maintenance_silences WHERE state IN ('creating', "
      "'expiring')");
  if (!s) return s.error();
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<std::int64_t>{};
  return s->columnOptionalInt(0);
}

Status MaintenanceStore::updateSilence(const MaintenanceSilenceRecord& r) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "UPDATE maintenance_silences SET silence_id = ?3, state = ?4, attempts = ?5, created_us = ?6,"
      " next_attempt_us = ?7, last_error = ?8 WHERE window_id = ?1 AND receiver = ?2");
  if (!s) return s.error();
  s->bindInt(1, r.window_id);
  s->bindText(2, r.receiver);
  s->bindText(3, r.silence_id);
  s->bindText(4, r.state);
  s->bindInt(5, r.attempts);
  s->bindInt(6, r.created_us);
  s->bindInt(7, r.next_attempt_us);
  s->bindText(8, r.last_error);
  return s->run();
}

Result<std::int64_t> MaintenanceStore::endRunOutSilences(std::int64_t now_us) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "UPDATE maintenance_silences SET state = 'ended' WHERE state = 'active' AND window_id IN"
      " (SELECT id FROM maintenance_windows WHERE ends_us <= ?1)");
  if (!s) return s.error();
  s->bindInt(1, now_us);
  if (auto done = s->run(); !done) return done.error();
  return db_->changes();
}

}  // namespace kfaild::storage
