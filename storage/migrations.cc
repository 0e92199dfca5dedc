#include "storage/migrations.h"

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "storage/sample_block.h"

namespace kfaild::storage {
namespace {

constexpr std::string_view kInitialSchema = R"sql(
CREATE TABLE clusters (
  id         INTEGER PRIMARY KEY,
  name       TEXT    NOT NULL UNIQUE,
  bootstrap  TEXT    NOT NULL,
  created_us INTEGER NOT NULL
);

-- One row per probed (cluster, topic, partition), so a sample carries a small integer instead of
-- three columns and the topic text.
CREATE TABLE probe_partitions (
  id         INTEGER PRIMARY KEY,
  cluster_id INTEGER NOT NULL REFERENCES clusters (id),
  topic      TEXT    NOT NULL,
  partition  INTEGER NOT NULL,
  UNIQUE (cluster_id, topic, partition)
);

-- Clustered on (partition, send time): "this partition between t1 and t2" and pruning by time
-- are range scans of the table itself, and there is no second b-tree to update per insert.
-- Ack and receive times are stored relative to send_us: a few bytes instead of eight.
CREATE TABLE probe_samples (
  partition_id     INTEGER NOT NULL REFERENCES probe_partitions (id),
  send_us          INTEGER NOT NULL,
  seq              INTEGER NOT NULL,
  ack_delay_us     INTEGER,
  ack_error        INTEGER NOT NULL DEFAULT 0,
  offset           INTEGER,
  receive_delay_us INTEGER,
  PRIMARY KEY (partition_id, send_us, seq)
) WITHOUT ROWID;

CREATE VIEW probe_samples_expanded AS
SELECT p.cluster_id, p.topic, p.partition, s.seq, s.send_us,
       s.send_us + s.ack_delay_us AS ack_us, s.ack_error, s.offset,
       s.send_us + s.receive_delay_us AS receive_us
FROM probe_samples AS s JOIN probe_partitions AS p ON p.id = s.partition_id;

CREATE TABLE gaps (
  id          INTEGER PRIMARY KEY,
  cluster_id  INTEGER NOT NULL REFERENCES clusters (id),
  topic       TEXT    NOT NULL,
  partition   INTEGER NOT NULL,
  kind        TEXT    NOT NULL CHECK (kind IN ('ack', 'receive')),
  start_us    INTEGER NOT NULL,
  end_us      INTEGER NOT NULL,
  duration_us INTEGER NOT NULL,
  seq_before  INTEGER NOT NULL,
  seq_after   INTEGER NOT NULL
);
CREATE INDEX gaps_by_end ON gaps (end_us, duration_us);
CREATE INDEX gaps_by_partition ON gaps (cluster_id, topic, partition, end_us);

CREATE TABLE events (
  id         INTEGER PRIMARY KEY,
  cluster_id INTEGER NOT NULL REFERENCES clusters (id),
  t_us       INTEGER NOT NULL,
  source     TEXT    NOT NULL,
  kind       TEXT    NOT NULL,
  broker     INTEGER,
  topic      TEXT,
  partition  INTEGER,
  detail     TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_cluster_time ON events (cluster_id, t_us);
CREATE INDEX events_by_time ON events (t_us);
)sql";

// Drills (one row per request; runs and analyses in `result`), the recovery journal that must
// outlive a crash of kfaild, and cron schedules.
constexpr std::string_view kDrillSchema = R"sql(
CREATE TABLE drills (
  id          INTEGER PRIMARY KEY,
  cluster_id  INTEGER NOT NULL REFERENCES clusters (id),
  fault       TEXT    NOT NULL,
  target      TEXT    NOT NULL,
  options     TEXT    NOT NULL,
  state       TEXT    NOT NULL,
  reason      TEXT    NOT NULL DEFAULT '',
  schedule_id INTEGER,
  created_us  INTEGER NOT NULL,
  started_us  INTEGER,
  finished_us INTEGER,
  result      TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX drills_by_cluster ON drills (cluster_id, id);

CREATE TABLE recovery_journal (
  id         INTEGER PRIMARY KEY,
  drill_id   INTEGER NOT NULL REFERENCES drills (id),
  cluster_id INTEGER NOT NULL REFERENCES clusters (id),
  node       INTEGER NOT NULL,
  action     TEXT    NOT NULL CHECK (action IN ('start', 'resume')),
  phase      TEXT    NOT NULL,
  created_us INTEGER NOT NULL,
  done_us    INTEGER,
  attempts   INTEGER NOT NULL DEFAULT 0,
  last_error TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX recovery_pending ON recovery_journal (id) WHERE done_us IS NULL;

CREATE TABLE schedules (
  id           INTEGER PRIMARY KEY,
  cluster_id   INTEGER NOT NULL REFERENCES clusters (id),
  name         TEXT    NOT NULL,
  cron         TEXT    NOT NULL,
  jitter_s     INTEGER NOT NULL DEFAULT 0,
  enabled      INTEGER NOT NULL DEFAULT 1,
  drill        TEXT    NOT NULL,
  last_run_us  INTEGER,
  next_run_us  INTEGER,
  last_outcome TEXT    NOT NULL DEFAULT '',
  created_us   INTEGER NOT NULL
);
)sql";

// Every mutating API request, refused or not (api/router.h): who, from where, what, the result.
constexpr std::string_view kAuditSchema = R"sql(
CREATE TABLE audit_log (
  id          INTEGER PRIMARY KEY,
  time_us     INTEGER NOT NULL,
  role        TEXT    NOT NULL,
  remote      TEXT    NOT NULL,
  method      TEXT    NOT NULL,
  route       TEXT    NOT NULL,
  body_sha256 TEXT    NOT NULL,
  body_bytes  INTEGER NOT NULL,
  status      INTEGER NOT NULL,
  problem     TEXT    NOT NULL DEFAULT ''
);
)sql";

// Refused anonymous requests, counted per minute instead of one row each (api/audit_endpoints.h):
// whoever can reach the port must not be able to grow the audit log by a row per request.
constexpr std::string_view kAuditRefusals = R"sql(
CREATE TABLE audit_refusals (
  minute_us   INTEGER NOT NULL,
  remote      TEXT    NOT NULL,
  route_class TEXT    NOT NULL,
  status      INTEGER NOT NULL,
  count       INTEGER NOT NULL,
  PRIMARY KEY (minute_us, remote, route_class, status)
) WITHOUT ROWID;
)sql";

// Refused requests with a token past the first few of a minute (api/audit_endpoints.h): one row
// per minute, role, method, route class and status with their count, found again by the unique
// index when a later flush of the same minute adds to it.
constexpr std::string_view kAuditAggregates = R"sql(
ALTER TABLE audit_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE audit_log ADD COLUMN aggregated INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX audit_log_aggregates ON audit_log (time_us, role, method, route, status) WHERE aggregated = 1;
)sql";

// /metrics counts drills per (cluster, fault, state) on every scrape: with this index that is a
// scan of a few bytes per drill instead of every drill's row with its result JSON.
constexpr std::string_view kDrillOutcomeIndex = R"sql(
CREATE INDEX drills_by_outcome ON drills (cluster_id, fault, state);
)sql";

// Probe samples in blocks (storage/sample_block.h): one row per run of up to 96 samples of one
// partition sent within 2 s, instead of one row per sample. The rowid table grows at its end, so
// its pages stay full; the index finds a partition's blocks by time.
constexpr std::string_view kSampleBlocksTable = R"sql(
CREATE TABLE IF NOT EXISTS probe_sample_blocks (
  id            INTEGER PRIMARY KEY,
  partition_id  INTEGER NOT NULL REFERENCES probe_partitions (id),
  first_send_us INTEGER NOT NULL,
  samples       INTEGER NOT NULL,
  data          BLOB    NOT NULL
);
CREATE INDEX IF NOT EXISTS probe_sample_blocks_by_time
  ON probe_sample_blocks (partition_id, first_send_us);
)sql";

// Runs in the transaction of convertSampleRows's last batch, which created probe_sample_blocks:
// the old table is empty when it is dropped. Nothing reads the view (it could not show blocks).
constexpr std::string_view kSampleBlocksStep = R"sql(
DROP VIEW IF EXISTS probe_samples_expanded;
DROP TABLE probe_samples;
)sql";

// Rows moved per transaction: a few MB of blocks, a second or two of work.
constexpr std::int64_t kConvertRowsPerTransaction = 50'000;

// Moves the oldest rows of probe_samples (in key order) into blocks and deletes them.
Result<bool> convertSampleRows(sqlite::Database& db) {
  if (auto created = db.exec(kSampleBlocksTable); !created) return created.error();
  auto select = db.prepare(R"sql(
SELECT partition_id, send_us, seq, ack_delay_us, ack_error, offset, receive_delay_us
FROM probe_samples ORDER BY partition_id, send_us, seq LIMIT ?1)sql");
  if (!select) return select.error();
  auto insert = db.prepare(
      "INSERT INTO probe_sample_blocks (partition_id, first_send_us, samples, data) "
      "VALUES (?1, ?2, ?3, ?4)");
  if (!insert) return insert.error();
  select->bindInt(1, kConvertRowsPerTransaction);

  std::int64_t rows = 0;
  std::int64_t partition = 0;
  std::int64_t last_send = 0;
  std::int64_t last_seq = 0;
  std::vector<BlockSample> run;
  const auto writeRun = [&]() -> Status {
    for (const auto& block : packSampleBlocks(run)) {
      insert->bindInt(1, partition);
      insert->bindInt(2, block.first_send_us);
      insert->bindInt(3, static_cast<std::int64_t>(block.samples));
      insert->bindBlob(4, block.data);
      auto done = insert->run();
      insert->reset();
      if (!done) return done.error();
    }
    run.clear();
    return okStatus();
  };
  const auto absolute = [](std::int64_t send_us, std::optional<std::int64_t> delay) {
    return delay ? std::optional<std::int64_t>(send_us + *delay) : std::nullopt;
  };
  for (;;) {
    auto row = select->step();
    if (!row) return row.error();
    if (!*row) break;
    const auto id = select->columnInt(0);
    if (rows > 0 && id != partition) {
      if (auto written = writeRun(); !written) return written.error();
    }
    partition = id;
    BlockSample& sample = run.emplace_back();
    sample.send_us = select->columnInt(1);
    sample.seq = select->columnInt(2);
    sample.ack_us = absolute(sample.send_us, select->columnOptionalInt(3));
    sample.ack_error = static_cast<std::int32_t>(select->columnInt(4));
    sample.offset = select->columnOptionalInt(5);
    sample.receive_us = absolute(sample.send_us, select->columnOptionalInt(6));
    last_send = sample.send_us;
    last_seq = sample.seq;
    ++rows;
  }
  select->reset();
  if (rows == 0) return false;
  if (auto written = writeRun(); !written) return written.error();
  auto erase =
      db.prepare("DELETE FROM probe_samples WHERE (partition_id, send_us, seq) <= (?1, ?2, ?3)");
  if (!erase) return erase.error();
  erase->bindInt(1, partition);
  erase->bindInt(2, last_send);
  erase->bindInt(3, last_seq);
  if (auto done = erase->run(); !done) return done.error();
  return rows == kConvertRowsPerTransaction;
}

// The notification queue (server/notify): one row per (receiver, event), the payload rendered
// when queued. UNIQUE (receiver, dedup_key) is what keeps a repeated listener call, an incident
// seen by two scans or a restart from sending twice.
constexpr std::string_view kNotificationSchema = R"sql(
CREATE TABLE notifications (
  id              INTEGER PRIMARY KEY,
  receiver        TEXT    NOT NULL,
  event           TEXT    NOT NULL,
  dedup_key       TEXT    NOT NULL,
  payload         TEXT    NOT NULL,
  state           TEXT    NOT NULL CHECK (state IN ('queued', 'delivering', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_us INTEGER NOT NULL,
  last_error      TEXT    NOT NULL DEFAULT '',
  created_us      INTEGER NOT NULL,
  delivered_us    INTEGER,
  UNIQUE (receiver, dedup_key)
);
CREATE INDEX notifications_due ON notifications (next_attempt_us) WHERE state IN ('queued', 'delivering');
)sql";

// A drill's verdict and regression flag beside its result (which holds the details), so that
// lists, statistics and metrics can filter and count them in SQL; and the request's objectives.
constexpr std::string_view kDrillVerdict = R"sql(
ALTER TABLE drills ADD COLUMN verdict TEXT CHECK (verdict IN ('pass', 'fail', 'inconclusive'));
ALTER TABLE drills ADD COLUMN regressed INTEGER;
ALTER TABLE drills ADD COLUMN expect TEXT NOT NULL DEFAULT '';
CREATE INDEX drills_by_verdict ON drills (cluster_id, verdict);
)sql";

// Gray faults (issue 26): a journal entry that heals the node's fault (then starts it if it is
// down). SQLite cannot change a CHECK in place: the table is rebuilt with its rows and index.
constexpr std::string_view kRecoveryHeal = R"sql(
CREATE TABLE recovery_journal_new (
  id         INTEGER PRIMARY KEY,
  drill_id   INTEGER NOT NULL REFERENCES drills (id),
  cluster_id INTEGER NOT NULL REFERENCES clusters (id),
  node       INTEGER NOT NULL,
  action     TEXT    NOT NULL CHECK (action IN ('start', 'resume', 'heal')),
  phase      TEXT    NOT NULL,
  created_us INTEGER NOT NULL,
  done_us    INTEGER,
  attempts   INTEGER NOT NULL DEFAULT 0,
  last_error TEXT    NOT NULL DEFAULT ''
);
INSERT INTO recovery_journal_new SELECT id, drill_id, cluster_id, node, action, phase, created_us, done_us, attempts,
                                        last_error FROM recovery_journal;
DROP TABLE recovery_journal;
ALTER TABLE recovery_journal_new RENAME TO recovery_journal;
CREATE INDEX recovery_pending ON recovery_journal (id) WHERE done_us IS NULL;
)sql";

// Compound drills (issue 27): the request's second fault (`then`), as JSON; empty for one fault.
constexpr std::string_view kSecondFault = R"sql(
ALTER TABLE drills ADD COLUMN second_fault TEXT NOT NULL DEFAULT '';
)sql";

// Planned-maintenance windows (issue 28, server/maintenance): one row per window, closed early
// or not, kept; and per window and Alertmanager receiver, the silence kfaild keeps there and the
// state of creating and expiring it (retried on the notifications' backoff).
constexpr std::string_view kMaintenanceWindows = R"sql(
CREATE TABLE maintenance_windows (
  id         INTEGER PRIMARY KEY,
  cluster_id INTEGER NOT NULL REFERENCES clusters (id),
  reason     TEXT    NOT NULL,
  opened_by  TEXT    NOT NULL,
  started_us INTEGER NOT NULL,
  ends_us    INTEGER NOT NULL,
  closed_us  INTEGER,
  closed_by  TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX maintenance_by_cluster ON maintenance_windows (cluster_id, ends_us);
CREATE TABLE maintenance_silences (
  window_id       INTEGER NOT NULL REFERENCES maintenance_windows (id),
  receiver        TEXT    NOT NULL,
  silence_id      TEXT    NOT NULL DEFAULT '',
  state           TEXT    NOT NULL CHECK (state IN ('creating', 'active', 'expiring', 'ended', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  created_us      INTEGER NOT NULL,
  next_attempt_us INTEGER NOT NULL,
  last_error      TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (window_id, receiver)
);
CREATE INDEX maintenance_silences_due ON maintenance_silences (next_attempt_us) WHERE state IN ('creating', 'expiring');
)sql";

// Where a gray fault was placed and whether the injection ran, so recovery undoes exactly that.
constexpr std::string_view kRecoveryPlace = R"sql(
ALTER TABLE recovery_journal ADD COLUMN injection TEXT NOT NULL DEFAULT ''
  CHECK (injection IN ('', 'pending', 'done', 'failed'));
ALTER TABLE recovery_journal ADD COLUMN place_host TEXT NOT NULL DEFAULT '';
ALTER TABLE recovery_journal ADD COLUMN place_netns TEXT NOT NULL DEFAULT '';
ALTER TABLE recovery_journal ADD COLUMN place_netns_id TEXT NOT NULL DEFAULT '';
ALTER TABLE recovery_journal ADD COLUMN place_table TEXT NOT NULL DEFAULT '';
ALTER TABLE recovery_journal ADD COLUMN place_filler TEXT NOT NULL DEFAULT '';
)sql";

// A client profile's stream (probe.profiles): a row of clusters under its cluster, named
// "<cluster>/<profile>" ('/' is in no cluster's name), whose id keys the profile's probe
// partitions, gaps and probe events as a cluster's do. Listing clusters leaves them out.
constexpr std::string_view kProfileStreams = R"sql(
ALTER TABLE clusters ADD COLUMN parent_id INTEGER REFERENCES clusters (id);
ALTER TABLE clusters ADD COLUMN profile TEXT NOT NULL DEFAULT '';
CREATE INDEX clusters_by_parent ON clusters (parent_id) WHERE parent_id IS NOT NULL;
)sql";

constexpr std::array kMigrations = {
    Migration{"clusters, probe samples, gaps, events", kInitialSchema},
    Migration{"drills, recovery journal, schedules", kDrillSchema},
    Migration{"audit log", kAuditSchema},
    Migration{"drills counted by outcome", kDrillOutcomeIndex},
    Migration{"probe samples in blocks", kSampleBlocksStep, convertSampleRows},
    Migration{"notification queue", kNotificationSchema},
    Migration{"drill verdicts and regressions", kDrillVerdict},
    Migration{"refused anonymous requests counted per minute", kAuditRefusals},
    Migration{"recovery journal entries that heal a gray fault", kRecoveryHeal},
    Migration{"compound drills' second fault", kSecondFault},
    Migration{"planned-maintenance windows and their Alertmanager silences", kMaintenanceWindows},
    Migration{"refused requests with a token counted per minute past the first few",
              kAuditAggregates},
    Migration{"where a recovery journal entry's gray fault was placed", kRecoveryPlace},
    Migration{"client profiles' streams", kProfileStreams},
};

}  // namespace

std::span<const Migration> schemaMigrations() {
  return kMigrations;
}

int latestSchemaVersion() {
  return static_cast<int>(kMigrations.size());
}

Result<int> schemaVersion(sqlite::Database& db) {
  auto version = db.queryInt("PRAGMA user_version");
  if (!version) return version.error();
  return static_cast<int>(*version);
}

namespace {

Error newerSchema(const sqlite::Database& db, int found, std::size_t known) {
  return Error{errc::newer_schema, db.path() + " has schema version " + std::to_string(found) +
                                       ", this kfaild knows " + std::to_string(known) +
                                       "; it was written by a newer kfaild (upgrade kfaild or "
                                       "use another database file)"};
}

}  // namespace

Status migrate(sqlite::Database& db, std::span<const Migration> steps) {
  const auto known = steps.size();
  // Checked before taking the write lock so a newer file is refused without being written to.
  auto current = schemaVersion(db);
  if (!current) return current.error();
  if (*current < 0 || static_cast<std::size_t>(*current) > known) {
    return newerSchema(db, *current, known);
  }

  for (;;) {
    // IMMEDIATE: the version read below cannot change until this step commits.
    if (auto begun = db.exec("BEGIN IMMEDIATE"); !begun) return begun.error();
    auto version = schemaVersion(db);
    if (!version) {
      db.rollbackQuietly();
      return version.error();
    }
    const auto at = static_cast<std::size_t>(*version);
    if (*version < 0 || at > known) {
      db.rollbackQuietly();
      return newerSchema(db, *version, known);
    }
    if (at == known) return db.exec("COMMIT");

    const Migration& step = steps[at];
    const auto failed = [&](const Error& cause) {
      db.rollbackQuietly();
      return Error{errc::migration_failed, "migration " + std::to_string(at + 1) + " (" +
                                               std::string(step.description) + ") of " + db.path() +
                                               ": " + cause.describe()};
    };
    if (step.convert != nullptr) {
      auto more = step.convert(db);
      if (!more) return failed(more.error());
      if (*more) {
        // A batch moved and more remain: commit it, and take the next in a new transaction.
        if (auto committed = db.exec("COMMIT"); !committed) return failed(committed.error());
        continue;
      }
    }
    if (auto applied = db.exec(step.sql, errc::migration_failed); !applied) {
      return failed(applied.error());
    }
    if (auto stamped = db.exec("PRAGMA user_version = " + std::to_string(at + 1)); !stamped) {
      return failed(stamped.error());
    }
    if (auto committed = db.exec("COMMIT"); !committed) return failed(committed.error());
  }
}

Status requireLatestSchema(sqlite::Database& db, const std::string& path) {
  auto version = schemaVersion(db);
  if (!version) return version.error();
  if (*version != latestSchemaVersion()) {
    return Error{errc::migration_failed,
                 path + " is at schema version " + std::to_string(*version) + ", expected " +
                     std::to_string(latestSchemaVersion()) + " (open it with SqliteStore first)"};
  }
  return okStatus();
}

Result<std::unique_ptr<sqlite::Database>> openAtLatestSchema(const std::string& path) {
  auto db = sqlite::Database::open(path);
  if (!db) return db.error();
  (*db)->setBusyTimeout(std::chrono::milliseconds(10000));
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"}) {
    if (auto s = (*db)->exec(pragma); !s) return s.error();
  }
  if (auto latest = requireLatestSchema(**db, path); !latest) return latest.error();
  return db;
}

}  // namespace kfaild::storage
