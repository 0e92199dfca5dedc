#include "storage/sqlite_drill_store.h"

#include "storage/migrations.h"
#include "storage/sqlite.h"

namespace kfaild::storage {
namespace {

constexpr const char* kDrillColumns =
    "id, cluster_id, fault, target, options, state, reason, schedule_id, created_us, started_us, "
    "finished_us, result, expect, verdict, regressed, second_fault";

DrillRecord readDrill(const sqlite::Statement& s) {
  DrillRecord d;
  d.id = s.columnInt(0);
  d.cluster = s.columnInt(1);
  d.fault = s.columnText(2);
  d.target = s.columnText(3);
  d.options = s.columnText(4);
  d.state = s.columnText(5);
  d.reason = s.columnText(6);
  d.schedule_id = s.columnOptionalInt(7);
  d.created_us = s.columnInt(8);
  d.started_us = s.columnOptionalInt(9);
  d.finished_us = s.columnOptionalInt(10);
  d.result = s.columnText(11);
  d.expect = s.columnText(12);
  d.verdict = s.columnOptionalText(13);
  if (auto r = s.columnOptionalInt(14)) d.regressed = *r != 0;
  d.second_fault = s.columnText(15);
  return d;
}

constexpr const char* kScheduleColumns =
    "id, cluster_id, name, cron, jitter_s, enabled, drill, last_run_us, next_run_us, last_outcome, "
    "created_us";

ScheduleRecord readSchedule(const sqlite::Statement& s) {
  ScheduleRecord r;
  r.id = s.columnInt(0);
  r.cluster = s.columnInt(1);
  r.name = s.columnText(2);
  r.cron = s.columnText(3);
  r.jitter_s = s.columnInt(4);
  r.enabled = s.columnInt(5) != 0;
  r.drill = s.columnText(6);
  r.last_run_us = s.columnOptionalInt(7);
  r.next_run_us = s.columnOptionalInt(8);
  r.last_outcome = s.columnText(9);
  r.created_us = s.columnInt(10);
  return r;
}

void bindSchedule(sqlite::Statement& s, const ScheduleRecord& r) {
  s.bindInt(1, r.cluster);
  s.bindText(2, r.name);
  s.bindText(3, r.cron);
  s.bindInt(4, r.jitter_s);
  s.bindInt(5, r.enabled ? 1 : 0);
  s.bindText(6, r.drill);
  s.bindOptionalInt(7, r.last_run_us);
  s.bindOptionalInt(8, r.next_run_us);
  s.bindText(9, r.last_outcome);
  s.bindInt(10, r.created_us);
}

}  // namespace

SqliteDrillStore::SqliteDrillStore(std::unique_ptr<sqlite::Database> db) : db_(std::move(db)) {}
SqliteDrillStore::~SqliteDrillStore() = default;

Result<std::unique_ptr<SqliteDrillStore>> SqliteDrillStore::open(const std::string& path) {
  auto db = sqlite::Database::open(path);
  if (!db) return db.error();
  (*db)->setBusyTimeout(std::chrono::milliseconds(10000));
  for (const char* pragma :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
    if (auto s = (*db)->exec(pragma); !s) return s.error();
  }
  if (auto latest = requireLatestSchema(**db, path); !latest) return latest.error();
  return std::unique_ptr<SqliteDrillStore>(new SqliteDrillStore(std::move(*db)));
}

Result<std::int64_t> SqliteDrillStore::createDrill(const DrillRecord& d) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "INSERT INTO drills (cluster_id, fault, target, options, state, reason, schedule_id, "
      "created_us, "
      "started_us, finished_us, result, expect, verdict, regressed, second_fault)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  if (!s) return s.error();
  s->bindInt(1, d.cluster);
  s->bindText(2, d.fault);
  s->bindText(3, d.target);
  s->bindText(4, d.options);
  s->bindText(5, d.state);
  s->bindText(6, d.reason);
  s->bindOptionalInt(7, d.schedule_id);
  s->bindInt(8, d.created_us);
  s->bindOptionalInt(9, d.started_us);
  s->bindOptionalInt(10, d.finished_us);
  s->bindText(11, d.result);
  s->bindText(12, d.expect);
  s->bindOptionalText(13, d.verdict);
  s->bindOptionalInt(
      14, d.regressed ? std::optional<std::int64_t>(*d.regressed ? 1 : 0) : std::nullopt);
  s->bindText(15, d.second_fault);
  if (auto r = s->run(); !r) return r.error();
  return db_->queryInt("SELECT last_insert_rowid()");
}

Status SqliteDrillStore::updateDrill(const DrillRecord& d) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "UPDATE drills SET state = ?2, reason = ?3, started_us = ?4, finished_us = ?5, result = ?6, "
      "verdict = ?7,"
      " regressed = ?8 WHERE id = ?1");
  if (!s) return s.error();
  s->bindInt(1, d.id);
  s->bindText(2, d.state);
  s->bindText(3, d.reason);
  s->bindOptionalInt(4, d.started_us);
  s->bindOptionalInt(5, d.finished_us);
  s->bindText(6, d.result);
  s->bindOptionalText(7, d.verdict);
  s->bindOptionalInt(
      8, d.regressed ? std::optional<std::int64_t>(*d.regressed ? 1 : 0) : std::nullopt);
  return s->run();
}

Result<std::optional<DrillRecord>> SqliteDrillStore::drill(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(std::string("SELECT ") + kDrillColumns + " FROM drills WHERE id = ?1");
  if (!s) return s.error();
  s->bindInt(1, id);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<DrillRecord>();
  return std::optional<DrillRecord>(readDrill(*s));
}

Result<std::vector<DrillRecord>> SqliteDrillStore::drills(const DrillQuery& q) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      std::string("SELECT ") + kDrillColumns +
      " FROM drills WHERE (?1 IS NULL OR cluster_id = ?1) AND (?2 IS NULL OR state = ?2)"
      " AND (?3 IS NULL OR fault = ?3) AND (?4 IS NULL OR created_us >= ?4)"
      " AND (?5 IS NULL OR created_us < ?5) AND (?6 IS NULL OR id < ?6)"
      " AND (?8 IS NULL OR verdict = ?8) ORDER BY id DESC LIMIT ?7");
  if (!s) return s.error();
  s->bindOptionalInt(1, q.cluster);
  s->bindOptionalText(2, q.state);
  s->bindOptionalText(3, q.fault);
  s->bindOptionalInt(4, q.created_from_us);
  s->bindOptionalInt(5, q.created_to_us);
  s->bindOptionalInt(6, q.before_id);
  s->bindInt(7, static_cast<std::int64_t>(q.limit));
  s->bindOptionalText(8, q.verdict);
  std::vector<DrillRecord> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(readDrill(*s));
  }
  return out;
}

Result<std::vector<DrillSpan>> SqliteDrillStore::drillSpans(std::optional<ClusterId> cluster,
                                                            TimeRange range) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "SELECT id, cluster_id, coalesce(started_us, created_us), finished_us FROM drills"
      " WHERE (?1 IS NULL OR cluster_id = ?1) AND coalesce(started_us, created_us) < ?3"
      " AND (finished_us IS NULL OR finished_us >= ?2) ORDER BY id");
  if (!s) return s.error();
  s->bindOptionalInt(1, cluster);
  s->bindInt(2, range.from_us);
  s->bindInt(3, range.to_us);
  std::vector<DrillSpan> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(DrillSpan{.id = s->columnInt(0),
                            .cluster = s->columnInt(1),
                            .from_us = s->columnInt(2),
                            .to_us = s->columnOptionalInt(3)});
  }
  return out;
}

Result<std::vector<DrillCount>> SqliteDrillStore::drillCounts() const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "SELECT cluster_id, fault, state, count(*) FROM drills GROUP BY cluster_id, fault, state"
      " ORDER BY cluster_id, fault, state");
  if (!s) return s.error();
  std::vector<DrillCount> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(DrillCount{.cluster = s->columnInt(0),
                             .fault = s->columnText(1),
                             .state = s->columnText(2),
                             .count = s->columnInt(3)});
  }
  return out;
}

Result<std::vector<DrillRecord>> SqliteDrillStore::lastDrills(const std::string& state) const {
  std::lock_guard lock(mutex_);
  // The subquery reads only the covering index drills_by_outcome (its entries end in the rowid).
  auto s = db_->prepare(std::string("SELECT ") + kDrillColumns +
                        " FROM drills WHERE id IN (SELECT max(id) FROM drills WHERE state = ?1"
                        " GROUP BY cluster_id, fault) ORDER BY cluster_id, fault");
  if (!s) return s.error();
  s->bindText(1, state);
  std::vector<DrillRecord> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(readDrill(*s));
  }
  return out;
}

Result<std::int64_t> SqliteDrillStore::addRecovery(const RecoveryEntry& e) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "INSERT INTO recovery_journal (drill_id, cluster_id, node, action, phase, created_us, "
      "done_us, attempts, "
      "last_error, injection, place_host, place_netns, place_netns_id, place_table, place_filler) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  if (!s) return s.error();
  s->bindInt(1, e.drill_id);
  s->bindInt(2, e.cluster);
  s->bindInt(3, e.node);
  s->bindText(4, e.action);
  s->bindText(5, e.phase);
  s->bindInt(6, e.created_us);
  s->bindOptionalInt(7, e.done_us);
  s->bindInt(8, e.attempts);
  s->bindText(9, e.last_error);
  s->bindText(10, e.injection);
  s->bindText(11, e.place_host);
  s->bindText(12, e.place_netns);
  s->bindText(13, e.place_netns_id);
  s->bindText(14, e.place_table);
  s->bindText(15, e.place_filler);
  if (auto r = s->run(); !r) return r.error();
  return db_->queryInt("SELECT last_insert_rowid()");
}

Status SqliteDrillStore::updateRecovery(const RecoveryEntry& e) {
  std::lock_guard lock(mutex_);
  // Only an open entry: a retry that ends after an operator resolved the entry must not reopen it.
  auto s = db_->prepare(
      "UPDATE recovery_journal SET phase = ?2, done_us = ?3, attempts = ?4, last_error = ?5, "
      "injection = ?6 "
      "WHERE id = ?1 AND done_us IS NULL");
  if (!s) return s.error();
  s->bindInt(1, e.id);
  s->bindText(2, e.phase);
  s->bindOptionalInt(3, e.done_us);
  s->bindInt(4, e.attempts);
  s->bindText(5, e.last_error);
  s->bindText(6, e.injection);
  return s->run();
}

Result<std::vector<RecoveryEntry>> SqliteDrillStore::pendingRecoveries() const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "SELECT id, drill_id, cluster_id, node, action, phase, created_us, done_us, attempts, "
      "last_error, injection, "
      "place_host, place_netns, place_netns_id, place_table, place_filler "
      "FROM recovery_journal WHERE done_us IS NULL ORDER BY id");
  if (!s) return s.error();
  std::vector<RecoveryEntry> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    RecoveryEntry e;
    e.id = s->columnInt(0);
    e.drill_id = s->columnInt(1);
    e.cluster = s->columnInt(2);
    e.node = static_cast<std::int32_t>(s->columnInt(3));
    e.action = s->columnText(4);
    e.phase = s->columnText(5);
    e.created_us = s->columnInt(6);
    e.done_us = s->columnOptionalInt(7);
    e.attempts = static_cast<std::int32_t>(s->columnInt(8));
    e.last_error = s->columnText(9);
    e.injection = s->columnText(10);
    e.place_host = s->columnText(11);
    e.place_netns = s->columnText(12);
    e.place_netns_id = s->columnText(13);
    e.place_table = s->columnText(14);
    e.place_filler = s->columnText(15);
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::int64_t> SqliteDrillStore::createSchedule(const ScheduleRecord& r) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "INSERT INTO schedules (cluster_id, name, cron, jitter_s, enabled, drill, last_run_us, "
      "next_run_us, "
      "last_outcome, created_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  if (!s) return s.error();
  bindSchedule(*s, r);
  if (auto res = s->run(); !res) return res.error();
  return db_->queryInt("SELECT last_insert_rowid()");
}

Status SqliteDrillStore::updateSchedule(const ScheduleRecord& r) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "UPDATE schedules SET cluster_id = ?1, name = ?2, cron = ?3, jitter_s = ?4, enabled = ?5, "
      "drill = ?6, "
      "last_run_us = ?7, next_run_us = ?8, last_outcome = ?9, created_us = ?10 WHERE id = ?11");
  if (!s) return s.error();
  bindSchedule(*s, r);
  s->bindInt(11, r.id);
  return s->run();
}

Status SqliteDrillStore::recordScheduleRun(const ScheduleRecord& r) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(
      "UPDATE schedules SET last_run_us = ?1, next_run_us = ?2, last_outcome = ?3 WHERE id = ?4");
  if (!s) return s.error();
  s->bindOptionalInt(1, r.last_run_us);
  s->bindOptionalInt(2, r.next_run_us);
  s->bindText(3, r.last_outcome);
  s->bindInt(4, r.id);
  return s->run();
}

Result<bool> SqliteDrillStore::deleteSchedule(std::int64_t id) {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare("DELETE FROM schedules WHERE id = ?1");
  if (!s) return s.error();
  s->bindInt(1, id);
  if (auto r = s->run(); !r) return r.error();
  return db_->changes() > 0;
}

Result<std::optional<ScheduleRecord>> SqliteDrillStore::schedule(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  auto s =
      db_->prepare(std::string("SELECT ") + kScheduleColumns + " FROM schedules WHERE id = ?1");
  if (!s) return s.error();
  s->bindInt(1, id);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<ScheduleRecord>();
  return std::optional<ScheduleRecord>(readSchedule(*s));
}

Result<std::vector<ScheduleRecord>> SqliteDrillStore::schedules(
    std::optional<ClusterId> cluster) const {
  std::lock_guard lock(mutex_);
  auto s = db_->prepare(std::string("SELECT ") + kScheduleColumns +
                        " FROM schedules WHERE (?1 IS NULL OR cluster_id = ?1) ORDER BY id");
  if (!s) return s.error();
  s->bindOptionalInt(1, cluster);
  std::vector<ScheduleRecord> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(readSchedule(*s));
  }
  return out;
}

}  // namespace kfaild::storage
