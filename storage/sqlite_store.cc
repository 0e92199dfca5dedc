#include "storage/sqlite_store.h"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>

#include "storage/batch_writer.h"
#include "storage/errc.h"
#include "storage/migrations.h"
#include "storage/sample_block.h"
#include "storage/sqlite.h"

namespace kfaild::storage {
namespace {

constexpr std::int64_t kJournalSizeLimitBytes = 64 * 1024 * 1024;

constexpr std::string_view kUpsertPartition = R"sql(
INSERT INTO probe_partitions (cluster_id, topic, partition) VALUES (?1, ?2, ?3)
ON CONFLICT (cluster_id, topic, partition) DO UPDATE SET topic = excluded.topic
RETURNING id)sql";

// A profile's stream under its cluster: named "<cluster>/<profile>", bootstrap as the cluster's.
constexpr std::string_view kUpsertProfileStream = R"sql(
INSERT INTO clusters (name, bootstrap, created_us, parent_id, profile)
SELECT c.name || '/' || ?2, c.bootstrap, ?3, c.id, ?2 FROM clusters AS c WHERE c.id = ?1
ON CONFLICT (name) DO UPDATE SET bootstrap = excluded.bootstrap
RETURNING id)sql";

constexpr std::string_view kInsertBlock = R"sql(
INSERT INTO probe_sample_blocks (partition_id, first_send_us, samples, data)
VALUES (?1, ?2, ?3, ?4))sql";

constexpr std::string_view kInsertGap = R"sql(
INSERT INTO gaps (cluster_id, topic, partition, kind, start_us, end_us, duration_us, seq_before,
                  seq_after)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql";

constexpr std::string_view kInsertEvent = R"sql(
INSERT INTO events (cluster_id, t_us, source, kind, broker, topic, partition, detail)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))sql";

// A partition's blocks after the block (first_send_us ?2, id ?3) that start before ?4, in order.
constexpr std::string_view kPruneCandidates = R"sql(
SELECT id, first_send_us, data FROM probe_sample_blocks
WHERE partition_id = ?1 AND (first_send_us, id) > (?2, ?3) AND first_send_us < ?4
ORDER BY first_send_us, id LIMIT ?5)sql";

constexpr std::string_view kDeleteBlock = R"sql(
DELETE FROM probe_sample_blocks WHERE id = ?1)sql";

constexpr std::string_view kRewriteBlock = R"sql(
UPDATE probe_sample_blocks SET first_send_us = ?2, samples = ?3, data = ?4 WHERE id = ?1)sql";

// Blocks a prune chunk looks at per query.
constexpr std::int64_t kPruneCandidatesPerQuery = 64;

// Oldest first through the time indexes (gaps_by_end, events_by_time), which hold the rowid.
constexpr std::string_view kPruneGaps = R"sql(
DELETE FROM gaps WHERE id IN (SELECT id FROM gaps WHERE end_us < ?1 ORDER BY end_us LIMIT ?2))sql";

constexpr std::string_view kPruneEvents = R"sql(
DELETE FROM events WHERE id IN (SELECT id FROM events WHERE t_us < ?1 ORDER BY t_us LIMIT ?2))sql";

constexpr std::string_view kUpsertCluster = R"sql(
INSERT INTO clusters (name, bootstrap, created_us) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET bootstrap = excluded.bootstrap
RETURNING id)sql";

// Errors that belong to one record (its values), not to the database: the record is dropped and
// the rest of the batch is written. Anything else aborts the batch so it can be retried.
bool isRecordError(int code) {
  switch (code & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
      return true;
    default:
      return false;
  }
}

// The columns id, cluster_id, t_us, source, kind, broker, topic, partition, detail from `first`.
Event readEvent(const sqlite::Statement& row, int first) {
  const auto optionalInt32 = [](std::optional<std::int64_t> value) {
    return value ? std::optional<std::int32_t>(static_cast<std::int32_t>(*value)) : std::nullopt;
  };
  return Event{.id = row.columnInt(first),
               .cluster = row.columnInt(first + 1),
               .t_us = row.columnInt(first + 2),
               .source = row.columnText(first + 3),
               .kind = row.columnText(first + 4),
               .broker = optionalInt32(row.columnOptionalInt(first + 5)),
               .topic = row.columnOptionalText(first + 6),
               .partition = optionalInt32(row.columnOptionalInt(first + 7)),
               .detail = row.columnText(first + 8)};
}

std::int64_t sqlLimit(std::size_t limit) {
  return static_cast<std::int64_t>(
      std::min<std::size_t>(limit, std::numeric_limits<std::int64_t>::max()));
}

struct PartitionKeyView {
  ClusterId cluster;
  std::string_view topic;
  std::int32_t partition;
  bool operator==(const PartitionKeyView&) const = default;
};

struct PartitionKey {
  ClusterId cluster;
  std::string topic;
  std::int32_t partition;
  operator PartitionKeyView() const { return {cluster, topic, partition}; }  // NOLINT
};

// Transparent, so a lookup per sample does not copy the topic.
struct PartitionKeyHash {
  using is_transparent = void;
  std::size_t operator()(const PartitionKeyView& key) const {
    std::size_t hash = std::hash<std::string_view>{}(key.topic);
    hash ^= std::hash<std::int64_t>{}(key.cluster) + 0x9e3779b97f4a7c15ULL + (hash << 6);
    hash ^= std::hash<std::int32_t>{}(key.partition) + 0x9e3779b97f4a7c15ULL + (hash << 6);
    return hash;
  }
};

struct PartitionKeyEqual {
  using is_transparent = void;
  bool operator()(const PartitionKeyView& a, const PartitionKeyView& b) const { return a == b; }
};

// The lowest first_send_us a block holding a sample sent at `from_us` or later can have, minus
// one (saturating): such blocks have first_send_us > blocksFrom(from_us).
std::int64_t blocksFrom(std::int64_t from_us) {
  return from_us < std::numeric_limits<std::int64_t>::min() + kSampleBlockSpanUs
             ? std::numeric_limits<std::int64_t>::min()
             : from_us - kSampleBlockSpanUs;
}

// Where a prune of one partition's samples stands: the interval it is in and the block (by
// first_send_us, id) it continues after. Done when `interval` is past the last one.
struct SampleCursor {
  std::size_t interval = 0;
  std::int64_t after_first_us = 0;
  std::int64_t after_id = std::numeric_limits<std::int64_t>::max();

  static SampleCursor at(std::size_t interval, const std::vector<TimeRange>& intervals) {
    SampleCursor cursor{.interval = interval};
    if (interval < intervals.size())
      cursor.after_first_us = blocksFrom(intervals[interval].from_us);
    return cursor;
  }
};

struct SampleChunk {
  std::int64_t deleted = 0;
  SampleCursor next;
};

// Pages given back per incremental_vacuum transaction (16 MiB at 4 KiB pages): like a prune
// chunk, it bounds how long a batch waits behind it.
constexpr std::int64_t kVacuumChunkPages = 4096;

// A WHERE clause built from the filters a query sets, so SQLite sees only the conditions that
// matter and can pick an index for them.
class Conditions {
 public:
  void add(std::string_view condition, std::int64_t value) { push(condition, value); }
  void add(std::string_view condition, std::string value) { push(condition, std::move(value)); }
  // A condition with two parameters, bound in order.
  void add(std::string_view condition, std::int64_t first, std::int64_t second) {
    push(condition, first);
    values_.push_back(second);
  }

  std::string sql() const { return where_.empty() ? std::string() : " WHERE " + where_; }
  // Binds the values in order; returns the next free parameter index.
  int bind(sqlite::Statement& statement) const {
    int index = 1;
    for (const auto& value : values_) {
      if (const auto* number = std::get_if<std::int64_t>(&value)) {
        statement.bindInt(index++, *number);
      } else {
        statement.bindText(index++, std::get<std::string>(value));
      }
    }
    return index;
  }

 private:
  void push(std::string_view condition, std::variant<std::int64_t, std::string> value) {
    if (!where_.empty()) where_ += " AND ";
    where_ += condition;
    values_.push_back(std::move(value));
  }

  std::string where_;
  std::vector<std::variant<std::int64_t, std::string>> values_;
};

Status setUp(sqlite::Database& db, const std::string& path) {
  const auto failed = [&](const Error& cause) {
    return Error{errc::open_failed, "setting up " + path + ": " + cause.describe()};
  };
  // A new file is created in incremental auto-vacuum mode, so that pages freed by retention can
  // be given back when the file is over storage.max_bytes (releaseFreePages). It can only be
  // chosen before the first table exists, and before journal_mode=WAL writes the header.
  auto pages = db.queryInt("PRAGMA page_count");
  if (!pages) return failed(pages.error());
  if (*pages == 0) {
    if (auto set = db.exec("PRAGMA auto_vacuum = INCREMENTAL"); !set) return failed(set.error());
  }
  // WAL: readers never wait for the writer and the writer never waits for readers.
  auto mode = db.prepare("PRAGMA journal_mode = WAL");
  if (!mode) return failed(mode.error());
  auto row = mode->step();
  if (!row) return failed(row.error());
  if (const auto got = mode->columnText(0); got != "wal") {
    return Error{errc::open_failed,
                 path + ": cannot use write-ahead logging (journal mode is " + got + ")"};
  }
  // NORMAL in WAL mode: a power cut may lose the last commits but never corrupts the file; for
  // probe data that is the right price for not syncing every batch.
  if (auto set = db.exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"); !set) {
    return failed(set.error());
  }
  return okStatus();
}

}  // namespace

// The write connection and its statements. Used only on the writer thread, except
// setMaxPageCount().
class SqliteBatchSink final : public BatchSink {
 public:
  static Result<std::unique_ptr<SqliteBatchSink>> create(std::unique_ptr<sqlite::Database> db,
                                                         std::optional<std::int64_t> max_pages) {
    Statements statements{};
    for (const auto& [sql, statement] : {std::pair{kUpsertPartition, &statements.upsert_partition},
                                         std::pair{kInsertBlock, &statements.insert_block},
                                         std::pair{kInsertGap, &statements.insert_gap},
                                         std::pair{kInsertEvent, &statements.insert_event},
                                         std::pair{kPruneCandidates, &statements.prune_candidates},
                                         std::pair{kDeleteBlock, &statements.delete_block},
                                         std::pair{kRewriteBlock, &statements.rewrite_block},
                                         std::pair{kPruneGaps, &statements.prune_gaps},
                                         std::pair{kPruneEvents, &statements.prune_events}}) {
      auto prepared = db->prepare(sql);
      if (!prepared) return prepared.error();
      *statement = std::move(*prepared);
    }
    auto default_pages = db->queryInt("PRAGMA max_page_count");
    if (!default_pages) return default_pages.error();
    // Prunes would otherwise zero every freed page (Debian builds SQLite with SECURE_DELETE);
    // probe samples are not secrets.
    if (auto set = db->exec("PRAGMA cache_size = -65536; PRAGMA secure_delete = FAST; PRAGMA "
                            "journal_size_limit = " +
                            std::to_string(kJournalSizeLimitBytes));
        !set) {
      return set.error();
    }
    auto sink = std::unique_ptr<SqliteBatchSink>(
        new SqliteBatchSink(std::move(db), std::move(statements), *default_pages));
    sink->setMaxPageCount(max_pages);
    return sink;
  }

  void setMaxPageCount(std::optional<std::int64_t> pages) {
    wanted_max_pages_ = pages.value_or(0) > 0 ? *pages : 0;
  }

  Result<BatchOutcome> write(const WriteBatch& batch) override {
    if (auto limited = applyPageLimit(); !limited) return limited.error();
    if (auto begun = db_->exec("BEGIN IMMEDIATE"); !begun) return begun.error();
    BatchOutcome outcome;
    const auto abort = [&](Error error) {
      db_->rollbackQuietly();
      // Partitions registered in this transaction are gone again.
      partition_ids_.clear();
      return error;
    };

    // Each partition's samples of the batch become its blocks. The runs keep their capacity
    // from batch to batch: at 1,000 partitions that is 1,000 vectors not reallocated per batch.
    for (auto& run : runs_) run.samples.clear();
    std::size_t runs_used = 0;
    for (const auto& sample : batch.samples) {
      std::optional<std::int64_t> partition_id;
      if (auto failure = partitionId(sample, partition_id, outcome)) return abort(*failure);
      if (!partition_id) continue;
      auto [slot, added] = run_of_partition_.try_emplace(*partition_id, runs_used);
      if (added) {
        if (runs_used == runs_.size()) runs_.emplace_back();
        runs_[runs_used++].partition_id = *partition_id;
      }
      runs_[slot->second].samples.push_back(BlockSample{.seq = sample.seq,
                                                        .send_us = sample.send_us,
                                                        .ack_us = sample.ack_us,
                                                        .ack_error = sample.ack_error,
                                                        .offset = sample.offset,
                                                        .receive_us = sample.receive_us});
    }
    run_of_partition_.clear();
    for (std::size_t r = 0; r < runs_used; ++r) {
      for (const auto& block : packSampleBlocks(runs_[r].samples)) {
        insert_block_.bindInt(1, runs_[r].partition_id);
        insert_block_.bindInt(2, block.first_send_us);
        insert_block_.bindInt(3, static_cast<std::int64_t>(block.samples));
        insert_block_.bindBlob(4, block.data);
        std::uint64_t rejected_blocks = 0;
        if (auto failure = insert(insert_block_, rejected_blocks, outcome)) {
          return abort(*failure);
        }
        if (rejected_blocks > 0) outcome.rejected_samples += block.samples;
      }
    }
    for (const auto& gap : batch.gaps) {
      insert_gap_.bindInt(1, gap.cluster);
      insert_gap_.bindText(2, gap.topic);
      insert_gap_.bindInt(3, gap.partition);
      insert_gap_.bindText(4, toString(gap.kind));
      insert_gap_.bindInt(5, gap.start_us);
      insert_gap_.bindInt(6, gap.end_us);
      insert_gap_.bindInt(7, gap.duration_us);
      insert_gap_.bindInt(8, gap.seq_before);
      insert_gap_.bindInt(9, gap.seq_after);
      if (auto failure = insert(insert_gap_, outcome.rejected_other, outcome)) {
        return abort(*failure);
      }
    }
    for (const auto& event : batch.events) {
      insert_event_.bindInt(1, event.cluster);
      insert_event_.bindInt(2, event.t_us);
      insert_event_.bindText(3, event.source);
      insert_event_.bindText(4, event.kind);
      insert_event_.bindOptionalInt(5, event.broker);
      insert_event_.bindOptionalText(6, event.topic);
      insert_event_.bindOptionalInt(7, event.partition);
      insert_event_.bindText(8, event.detail.empty() ? std::string_view("{}") : event.detail);
      if (auto failure = insert(insert_event_, outcome.rejected_other, outcome)) {
        return abort(*failure);
      }
    }

    if (auto committed = db_->exec("COMMIT"); !committed) return abort(committed.error());
    return outcome;
  }

  Result<ClusterId> upsertProfileStream(ClusterId cluster, const std::string& profile,
                                        std::int64_t now_us) {
    if (auto limited = applyPageLimit(); !limited) return limited.error();
    auto upsert = db_->prepare(kUpsertProfileStream);
    if (!upsert) return upsert.error();
    upsert->bindInt(1, cluster);
    upsert->bindText(2, profile);
    upsert->bindInt(3, now_us);
    auto row = upsert->step();
    if (!row) return row.error();
    if (!*row) {
      return Error{make_error_code(errc::query_failed),
                   "no cluster with id " + std::to_string(cluster) + " for profile " + profile};
    }
    const ClusterId id = upsert->columnInt(0);
    if (auto done = upsert->run(); !done) return done.error();
    return id;
  }

  Result<ClusterId> upsertCluster(const std::string& name, const std::string& bootstrap,
                                  std::int64_t now_us) {
    if (auto limited = applyPageLimit(); !limited) return limited.error();
    auto upsert = db_->prepare(kUpsertCluster);
    if (!upsert) return upsert.error();
    upsert->bindText(1, name);
    upsert->bindText(2, bootstrap);
    upsert->bindInt(3, now_us);
    auto row = upsert->step();
    if (!row) return row.error();
    const ClusterId id = upsert->columnInt(0);
    if (auto done = upsert->run(); !done) return done.error();
    return id;
  }

  // Deletes up to `max_rows` samples of one partition with send_us in `intervals` (sorted,
  // disjoint), oldest first from `cursor`, in one transaction. A block whose samples all go is
  // deleted; a block an interval's edge (or the row budget) cuts through is rewritten with the
  // samples it keeps.
  Result<SampleChunk> pruneSampleChunk(std::int64_t partition_id,
                                       const std::vector<TimeRange>& intervals, SampleCursor cursor,
                                       std::int64_t max_rows) {
    if (auto limited = applyPageLimit(); !limited) return limited.error();
    if (auto begun = db_->exec("BEGIN IMMEDIATE"); !begun) return begun.error();
    SampleChunk chunk;
    const auto fail = [&](Error error) {
      db_->rollbackQuietly();
      prune_candidates_.reset();
      delete_block_.reset();
      rewrite_block_.reset();
      return error;
    };
    struct Candidate {
      std::int64_t id;
      std::int64_t first_send_us;
      std::string data;
    };
    std::vector<Candidate> candidates;
    std::vector<BlockSample> decoded;
    std::vector<BlockSample> kept;
    while (cursor.interval < intervals.size() && chunk.deleted < max_rows) {
      const auto& range = intervals[cursor.interval];
      // Read first, then change: the candidates are not read by a statement still stepping.
      candidates.clear();
      prune_candidates_.bindInt(1, partition_id);
      prune_candidates_.bindInt(2, cursor.after_first_us);
      prune_candidates_.bindInt(3, cursor.after_id);
      prune_candidates_.bindInt(4, range.to_us);
      prune_candidates_.bindInt(5, kPruneCandidatesPerQuery);
      for (;;) {
        auto row = prune_candidates_.step();
        if (!row) return fail(row.error());
        if (!*row) break;
        candidates.push_back({prune_candidates_.columnInt(0), prune_candidates_.columnInt(1),
                              std::string(prune_candidates_.columnBlob(2))});
      }
      prune_candidates_.reset();
      bool budget_spent = false;
      for (const auto& block : candidates) {
        if (chunk.deleted >= max_rows) {
          budget_spent = true;
          break;
        }
        decoded.clear();
        if (auto read = decodeSampleBlock(block.data, block.first_send_us, decoded); !read) {
          return fail(read.error());
        }
        // Oldest first within the block too, and no more than the budget: a prune's row count
        // is exact, as it was when a sample was a row.
        auto budget = max_rows - chunk.deleted;
        kept.clear();
        for (const auto& sample : decoded) {
          const bool inside = sample.send_us >= range.from_us && sample.send_us < range.to_us;
          if (inside && budget > 0) {
            --budget;
          } else {
            kept.push_back(sample);
          }
        }
        // A block the budget ran out in keeps samples to prune: the next chunk starts at it.
        if (budget > 0) {
          cursor.after_first_us = block.first_send_us;
          cursor.after_id = block.id;
        } else {
          budget_spent = true;
        }
        if (kept.size() == decoded.size()) continue;
        chunk.deleted += static_cast<std::int64_t>(decoded.size() - kept.size());
        Status done = okStatus();
        if (kept.empty()) {
          delete_block_.bindInt(1, block.id);
          done = delete_block_.run();
          delete_block_.reset();
        } else {
          // A subset of one block is one block again.
          const auto packed = packSampleBlocks(kept);
          rewrite_block_.bindInt(1, block.id);
          rewrite_block_.bindInt(2, packed.front().first_send_us);
          rewrite_block_.bindInt(3, static_cast<std::int64_t>(packed.front().samples));
          rewrite_block_.bindBlob(4, packed.front().data);
          done = rewrite_block_.run();
          rewrite_block_.reset();
        }
        if (!done) return fail(done.error());
        if (budget_spent) break;
      }
      if (static_cast<std::int64_t>(candidates.size()) < kPruneCandidatesPerQuery &&
          !budget_spent) {
        cursor = SampleCursor::at(cursor.interval + 1, intervals);
      }
    }
    if (auto committed = db_->exec("COMMIT"); !committed) return fail(committed.error());
    chunk.next = cursor;
    return chunk;
  }

  // Deletes up to `max_rows` of the oldest rows of `table` before `before_us` on its time
  // column, in one transaction (the statement's own).
  Result<std::int64_t> pruneByTime(sqlite::Statement& erase, std::int64_t before_us,
                                   std::int64_t max_rows) {
    if (auto limited = applyPageLimit(); !limited) return limited.error();
    erase.bindInt(1, before_us);
    erase.bindInt(2, std::max<std::int64_t>(max_rows, 1));
    auto done = erase.run();
    erase.reset();
    if (!done) return done.error();
    return db_->changes();
  }
  Result<std::int64_t> pruneGaps(std::int64_t before_us, std::int64_t max_rows) {
    return pruneByTime(prune_gaps_, before_us, max_rows);
  }
  Result<std::int64_t> pruneEvents(std::int64_t before_us, std::int64_t max_rows) {
    return pruneByTime(prune_events_, before_us, max_rows);
  }

  // Gives up to `pages` free pages back to the file system; how many it gave.
  Result<std::int64_t> incrementalVacuum(std::int64_t pages) {
    if (auto limited = applyPageLimit(); !limited) return limited.error();
    auto before = db_->queryInt("PRAGMA freelist_count");
    if (!before) return before.error();
    if (auto done = db_->exec("PRAGMA incremental_vacuum(" + std::to_string(pages) + ")"); !done) {
      return done.error();
    }
    auto after = db_->queryInt("PRAGMA freelist_count");
    if (!after) return after.error();
    return *before - *after;
  }

 private:
  struct Statements {
    sqlite::Statement upsert_partition;
    sqlite::Statement insert_block;
    sqlite::Statement insert_gap;
    sqlite::Statement insert_event;
    sqlite::Statement prune_candidates;
    sqlite::Statement delete_block;
    sqlite::Statement rewrite_block;
    sqlite::Statement prune_gaps;
    sqlite::Statement prune_events;
  };

  SqliteBatchSink(std::unique_ptr<sqlite::Database> db, Statements statements,
                  std::int64_t default_max_pages)
      : db_(std::move(db)),
        upsert_partition_(std::move(statements.upsert_partition)),
        insert_block_(std::move(statements.insert_block)),
        insert_gap_(std::move(statements.insert_gap)),
        insert_event_(std::move(statements.insert_event)),
        prune_candidates_(std::move(statements.prune_candidates)),
        delete_block_(std::move(statements.delete_block)),
        rewrite_block_(std::move(statements.rewrite_block)),
        prune_gaps_(std::move(statements.prune_gaps)),
        prune_events_(std::move(statements.prune_events)),
        default_max_pages_(default_max_pages) {}

  Status applyPageLimit() {
    const std::int64_t wanted = wanted_max_pages_;
    if (wanted == applied_max_pages_) return okStatus();
    const auto pages = wanted > 0 ? wanted : default_max_pages_;
    auto set = db_->queryInt("PRAGMA max_page_count = " + std::to_string(pages));
    if (!set) return set.error();
    applied_max_pages_ = wanted;
    return okStatus();
  }

  // Steps an INSERT bound for one record. A record error counts the record in `rejected`;
  // any other error is returned, for the caller to abort the batch.
  static std::optional<Error> insert(sqlite::Statement& statement, std::uint64_t& rejected,
                                     BatchOutcome& outcome) {
    const int code = statement.stepRaw();
    std::optional<Error> failure;
    if (code != SQLITE_DONE) {
      Error error = statement.error(code);
      if (isRecordError(code)) {
        ++rejected;
        if (outcome.reject_reason.empty()) outcome.reject_reason = error.describe();
      } else {
        failure = std::move(error);
      }
    }
    statement.reset();
    return failure;
  }

  // Finds (registering on first sight) the probe_partitions row of a sample. Leaves `id` unset
  // when the sample was rejected (its cluster is unknown).
  std::optional<Error> partitionId(const ProbeSample& sample, std::optional<std::int64_t>& id,
                                   BatchOutcome& outcome) {
    const PartitionKeyView key{sample.cluster, sample.topic, sample.partition};
    if (auto found = partition_ids_.find(key); found != partition_ids_.end()) {
      id = found->second;
      return std::nullopt;
    }
    upsert_partition_.bindInt(1, sample.cluster);
    upsert_partition_.bindText(2, sample.topic);
    upsert_partition_.bindInt(3, sample.partition);
    const int code = upsert_partition_.stepRaw();
    if (code != SQLITE_ROW) {
      // Put the code back through the same classification as a plain insert.
      std::optional<Error> failure;
      Error error = upsert_partition_.error(code);
      if (isRecordError(code)) {
        ++outcome.rejected_samples;
        if (outcome.reject_reason.empty()) outcome.reject_reason = error.describe();
      } else {
        failure = std::move(error);
      }
      upsert_partition_.reset();
      return failure;
    }
    id = upsert_partition_.columnInt(0);
    upsert_partition_.reset();
    partition_ids_.emplace(PartitionKey{sample.cluster, sample.topic, sample.partition}, *id);
    return std::nullopt;
  }

  // Statements are declared after the connection so they are finalised before it closes.
  std::unique_ptr<sqlite::Database> db_;
  sqlite::Statement upsert_partition_;
  sqlite::Statement insert_block_;
  sqlite::Statement insert_gap_;
  sqlite::Statement insert_event_;
  sqlite::Statement prune_candidates_;
  sqlite::Statement delete_block_;
  sqlite::Statement rewrite_block_;
  sqlite::Statement prune_gaps_;
  sqlite::Statement prune_events_;
  std::unordered_map<PartitionKey, std::int64_t, PartitionKeyHash, PartitionKeyEqual>
      partition_ids_;
  // A batch's samples per partition (write()); empty between batches.
  struct PartitionRun {
    std::int64_t partition_id = 0;
    std::vector<BlockSample> samples;
  };
  std::vector<PartitionRun> runs_;
  std::unordered_map<std::int64_t, std::size_t> run_of_partition_;
  const std::int64_t default_max_pages_;
  std::atomic<std::int64_t> wanted_max_pages_{0};  // 0: SQLite's default; set from any thread
  std::int64_t applied_max_pages_ = -1;
};

class SqliteStore::ReaderPool {
 public:
  ReaderPool(std::string path, std::chrono::milliseconds busy_timeout, std::size_t max_idle)
      : path_(std::move(path)), busy_timeout_(busy_timeout), max_idle_(max_idle) {}

  Result<std::unique_ptr<sqlite::Database>> acquire() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        auto db = std::move(idle_.back());
        idle_.pop_back();
        return db;
      }
    }
    auto db = sqlite::Database::open(path_);
    if (!db) return db.error();
    (*db)->setBusyTimeout(busy_timeout_);
    // A read connection that tried to write would be a bug; make it an error, not a write.
    if (auto set = (*db)->exec("PRAGMA query_only = ON"); !set) return set.error();
    return std::move(*db);
  }

  void release(std::unique_ptr<sqlite::Database> db) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(db));
  }

 private:
  const std::string path_;
  const std::chrono::milliseconds busy_timeout_;
  const std::size_t max_idle_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<sqlite::Database>> idle_;  // guarded by mutex_
};

template <typename F>
auto SqliteStore::withReader(F&& read) const {
  using R = std::invoke_result_t<F, sqlite::Database&>;
  auto db = readers_->acquire();
  if (!db) return R(db.error());
  R result = read(**db);
  readers_->release(std::move(*db));
  return result;
}

SqliteStore::SqliteStore(std::string path, SqliteStoreOptions options)
    : path_(std::move(path)),
      options_(options),
      clock_(options_.clock != nullptr ? *options_.clock : system_clock_) {}

SqliteStore::~SqliteStore() = default;

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path,
                                                       SqliteStoreOptions options) {
  auto db = sqlite::Database::open(path);
  if (!db) return db.error();
  (*db)->setBusyTimeout(options.busy_timeout);
  if (auto set = setUp(**db, path); !set) return set.error();
  if (auto migrated = migrate(**db, schemaMigrations()); !migrated) return migrated.error();

  auto sink = SqliteBatchSink::create(std::move(*db), options.max_page_count);
  if (!sink) {
    return Error{errc::open_failed,
                 "preparing statements on " + path + ": " + sink.error().describe()};
  }
  auto store = std::unique_ptr<SqliteStore>(new SqliteStore(path, options));
  store->readers_ =
      std::make_unique<ReaderPool>(path, options.busy_timeout, options.max_idle_readers);
  store->sink_ = std::move(*sink);
  store->writer_ = std::make_unique<BatchWriter>(
      *store->sink_,
      BatchWriterOptions{.max_queued_records = options.max_queued_records,
                         .retry_interval = options.retry_interval,
                         .linger = options.linger,
                         // A lingering batch must never fill the queue: it would
                         // refuse samples while waiting to be written.
                         .linger_max_records =
                             std::min(options.linger_max_records,
                                      std::max<std::size_t>(options.max_queued_records / 2, 1))});
  spdlog::info("storage: opened {} (schema version {})", path, latestSchemaVersion());
  return store;
}

void SqliteStore::addSample(ProbeSample sample) {
  writer_->addSample(std::move(sample));
}

void SqliteStore::addGap(Gap gap) {
  writer_->addGap(std::move(gap));
}

void SqliteStore::addEvent(Event event) {
  writer_->addEvent(std::move(event));
}

void SqliteStore::flush() {
  writer_->flush();
}

WriterStats SqliteStore::writerStats() const {
  return writer_->stats();
}

void SqliteStore::setMaxPageCount(std::optional<std::int64_t> pages) {
  sink_->setMaxPageCount(pages);
}

Result<ClusterId> SqliteStore::ensureCluster(const std::string& name,
                                             const std::string& bootstrap) {
  const auto now_us = clock_.wallNow();
  return writer_->runOnWriter<ClusterId>([this, name, bootstrap, now_us]() -> Result<ClusterId> {
    return sink_->upsertCluster(name, bootstrap, now_us);
  });
}

Result<ClusterId> SqliteStore::ensureProfileStream(ClusterId cluster, const std::string& profile) {
  const auto now_us = clock_.wallNow();
  return writer_->runOnWriter<ClusterId>([this, cluster, profile, now_us]() -> Result<ClusterId> {
    return sink_->upsertProfileStream(cluster, profile, now_us);
  });
}

Result<std::map<std::string, ClusterId>> SqliteStore::profileStreams(ClusterId cluster) const {
  return withReader([cluster](sqlite::Database& db) -> Result<std::map<std::string, ClusterId>> {
    auto select =
        db.prepare("SELECT profile, id FROM clusters WHERE parent_id = ?1 ORDER BY profile");
    if (!select) return select.error();
    select->bindInt(1, cluster);
    std::map<std::string, ClusterId> found;
    for (;;) {
      auto row = select->step();
      if (!row) return row.error();
      if (!*row) return found;
      found[select->columnText(0)] = select->columnInt(1);
    }
  });
}

Result<std::vector<Cluster>> SqliteStore::clusters() const {
  return withReader([](sqlite::Database& db) -> Result<std::vector<Cluster>> {
    auto select = db.prepare(
        "SELECT id, name, bootstrap, created_us FROM clusters WHERE parent_id IS NULL ORDER BY id");
    if (!select) return select.error();
    std::vector<Cluster> found;
    for (;;) {
      auto row = select->step();
      if (!row) return row.error();
      if (!*row) return found;
      found.push_back(Cluster{.id = select->columnInt(0),
                              .name = select->columnText(1),
                              .bootstrap = select->columnText(2),
                              .created_us = select->columnInt(3)});
    }
  });
}

Result<std::vector<ProbeSample>> SqliteStore::samples(const SampleQuery& query) const {
  return withReader([&query](sqlite::Database& db) -> Result<std::vector<ProbeSample>> {
    auto select = db.prepare(R"sql(
SELECT b.id, b.first_send_us, b.data
FROM probe_partitions AS p JOIN probe_sample_blocks AS b ON b.partition_id = p.id
WHERE p.cluster_id = ?1 AND p.topic = ?2 AND p.partition = ?3
  AND b.first_send_us > ?4 AND b.first_send_us < ?5
ORDER BY b.first_send_us, b.id)sql");
    if (!select) return select.error();
    select->bindInt(1, query.cluster);
    select->bindText(2, query.topic);
    select->bindInt(3, query.partition);
    select->bindInt(4, blocksFrom(query.range.from_us));
    select->bindInt(5, query.range.to_us);

    // Blocks come by first send time, and each holds samples sent within the span after it, so
    // blocks may overlap (a late sample, a second write of a message): the samples in range are
    // gathered with their block's id, then sorted, and of one (send_us, seq) the later write wins.
    struct Found {
      BlockSample sample;
      std::int64_t block;
    };
    std::vector<Found> found;
    std::vector<BlockSample> decoded;
    std::int64_t newest_found = std::numeric_limits<std::int64_t>::min();
    const auto before = [](const Found& a, const Found& b) {
      if (a.sample.send_us != b.sample.send_us) return a.sample.send_us < b.sample.send_us;
      if (a.sample.seq != b.sample.seq) return a.sample.seq < b.sample.seq;
      return a.block < b.block;
    };
    // Sorted, and of each (send_us, seq) only the copy from the block written last.
    const auto settle = [&] {
      if (!std::is_sorted(found.begin(), found.end(), before)) {
        std::sort(found.begin(), found.end(), before);
      }
      std::size_t kept = 0;
      for (std::size_t i = 0; i < found.size(); ++i) {
        if (i + 1 < found.size() && found[i + 1].sample.send_us == found[i].sample.send_us &&
            found[i + 1].sample.seq == found[i].sample.seq) {
          continue;
        }
        if (kept != i) found[kept] = std::move(found[i]);
        ++kept;
      }
      found.resize(kept);
    };
    for (;;) {
      auto row = select->step();
      if (!row) return row.error();
      if (!*row) break;
      const auto block = select->columnInt(0);
      const auto first_send_us = select->columnInt(1);
      // Every sample still to come was sent at first_send_us or later: once `limit` samples
      // sent before it are in hand, nothing later can be among the first `limit`.
      if (found.size() >= query.limit && newest_found < first_send_us) {
        settle();
        if (found.size() >= query.limit) break;
      }
      decoded.clear();
      if (auto read = decodeSampleBlock(select->columnBlob(2), first_send_us, decoded); !read) {
        return read.error();
      }
      for (auto& sample : decoded) {
        if (sample.send_us < query.range.from_us || sample.send_us >= query.range.to_us) continue;
        newest_found = std::max(newest_found, sample.send_us);
        found.push_back({std::move(sample), block});
      }
    }
    settle();
    std::vector<ProbeSample> samples;
    samples.reserve(std::min(found.size(), query.limit));
    for (std::size_t i = 0; i < found.size() && samples.size() < query.limit; ++i) {
      const auto& s = found[i].sample;
      samples.push_back(ProbeSample{.cluster = query.cluster,
                                    .topic = query.topic,
                                    .partition = query.partition,
                                    .seq = s.seq,
                                    .send_us = s.send_us,
                                    .ack_us = s.ack_us,
                                    .ack_error = s.ack_error,
                                    .offset = s.offset,
                                    .receive_us = s.receive_us});
    }
    return samples;
  });
}

Result<std::vector<Gap>> SqliteStore::gaps(const GapQuery& query) const {
  Conditions where;
  where.add("end_us >= ?", query.range.from_us);
  where.add("end_us < ?", query.range.to_us);
  if (query.cluster) where.add("cluster_id = ?", *query.cluster);
  if (query.topic) where.add("topic = ?", *query.topic);
  if (query.partition) where.add("partition = ?", std::int64_t{*query.partition});
  if (query.kind) where.add("kind = ?", std::string(toString(*query.kind)));
  if (query.min_duration_us > 0) where.add("duration_us >= ?", query.min_duration_us);
  const std::string sql =
      "SELECT id, cluster_id, topic, partition, kind, start_us, end_us, duration_us, seq_before, "
      "seq_after FROM gaps" +
      where.sql() + " ORDER BY end_us, id LIMIT ?";

  return withReader([&](sqlite::Database& db) -> Result<std::vector<Gap>> {
    auto select = db.prepare(sql);
    if (!select) return select.error();
    select->bindInt(where.bind(*select), sqlLimit(query.limit));
    std::vector<Gap> found;
    for (;;) {
      auto row = select->step();
      if (!row) return row.error();
      if (!*row) return found;
      const auto kind = gapKindFromString(select->columnText(4));
      if (!kind) {
        return Error{errc::query_failed, "gap " + std::to_string(select->columnInt(0)) +
                                             " has unknown kind \"" + select->columnText(4) + "\""};
      }
      found.push_back(Gap{.id = select->columnInt(0),
                          .cluster = select->columnInt(1),
                          .topic = select->columnText(2),
                          .partition = static_cast<std::int32_t>(select->columnInt(3)),
                          .kind = *kind,
                          .start_us = select->columnInt(5),
                          .end_us = select->columnInt(6),
                          .duration_us = select->columnInt(7),
                          .seq_before = select->columnInt(8),
                          .seq_after = select->columnInt(9)});
    }
  });
}

Result<std::vector<Event>> SqliteStore::events(const EventQuery& query) const {
  Conditions where;
  where.add("t_us >= ?", query.range.from_us);
  if (query.after_id) where.add("(t_us > ? OR id > ?)", query.range.from_us, *query.after_id);
  where.add("t_us < ?", query.range.to_us);
  if (query.cluster) where.add("cluster_id = ?", *query.cluster);
  if (query.source) where.add("source = ?", *query.source);
  if (query.kind) where.add("kind = ?", *query.kind);
  if (query.topic) where.add("topic = ?", *query.topic);
  if (query.partition) where.add("partition = ?", std::int64_t{*query.partition});
  const std::string sql =
      "SELECT id, cluster_id, t_us, source, kind, broker, topic, partition, detail FROM events" +
      where.sql() + " ORDER BY t_us, id LIMIT ?";

  return withReader([&](sqlite::Database& db) -> Result<std::vector<Event>> {
    auto select = db.prepare(sql);
    if (!select) return select.error();
    select->bindInt(where.bind(*select), sqlLimit(query.limit));
    std::vector<Event> found;
    for (;;) {
      auto row = select->step();
      if (!row) return row.error();
      if (!*row) return found;
      found.push_back(readEvent(*select, 0));
    }
  });
}

Result<std::vector<std::vector<Event>>> SqliteStore::eventsInWindows(
    ClusterId cluster, const std::vector<TimeRange>& windows, std::size_t limit_each) const {
  std::vector<std::vector<Event>> found(windows.size());
  if (windows.empty()) return found;
  // The windows go in as one JSON parameter, however many there are. For each window the
  // subquery walks events_by_cluster_time from the window's start and stops at its limit.
  std::string json = "[";
  for (const auto& w : windows) {
    if (json.size() > 1) json += ',';
    json += '[' + std::to_string(w.from_us) + ',' + std::to_string(w.to_us) + ']';
  }
  json += ']';
  return withReader([&](sqlite::Database& db) -> Result<std::vector<std::vector<Event>>> {
    auto select = db.prepare(R"sql(
WITH w (idx, from_us, to_us) AS (
  SELECT key, json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1))
SELECT w.idx, e.id, e.cluster_id, e.t_us, e.source, e.kind, e.broker, e.topic, e.partition,
       e.detail
FROM w JOIN events AS e ON e.id IN (
  SELECT id FROM events WHERE cluster_id = ?2 AND t_us >= w.from_us AND t_us < w.to_us
  ORDER BY t_us, id LIMIT ?3)
ORDER BY w.idx, e.t_us, e.id)sql");
    if (!select) return select.error();
    select->bindText(1, json);
    select->bindInt(2, cluster);
    select->bindInt(3, sqlLimit(limit_each));
    for (;;) {
      auto row = select->step();
      if (!row) return row.error();
      if (!*row) return std::move(found);
      found.at(static_cast<std::size_t>(select->columnInt(0))).push_back(readEvent(*select, 1));
    }
  });
}

namespace {

// The windows sorted and merged, empty ones left out.
std::vector<TimeRange> merged(std::vector<TimeRange> windows) {
  std::erase_if(windows, [](const TimeRange& r) { return r.to_us <= r.from_us; });
  std::sort(windows.begin(), windows.end(),
            [](const TimeRange& a, const TimeRange& b) { return a.from_us < b.from_us; });
  std::vector<TimeRange> out;
  for (const auto& range : windows) {
    if (!out.empty() && range.from_us <= out.back().to_us) {
      out.back().to_us = std::max(out.back().to_us, range.to_us);
    } else {
      out.push_back(range);
    }
  }
  return out;
}

// The send-time intervals a prune deletes, sorted and disjoint: [INT64_MIN, before) minus the
// windows, or within them.
std::vector<TimeRange> sampleIntervals(const SamplePrune& prune) {
  const auto windows = merged(prune.drill_windows);
  const auto before = prune.before_us;
  std::vector<TimeRange> intervals;
  if (prune.inside_windows) {
    for (const auto& w : windows) {
      if (w.from_us >= before) break;
      intervals.push_back({w.from_us, std::min(w.to_us, before)});
    }
    return intervals;
  }
  std::int64_t cursor = std::numeric_limits<std::int64_t>::min();
  for (const auto& w : windows) {
    if (cursor >= before) break;
    if (w.from_us > cursor) intervals.push_back({cursor, std::min(w.from_us, before)});
    cursor = std::max(cursor, w.to_us);
  }
  if (cursor < before) intervals.push_back({cursor, before});
  return intervals;
}

}  // namespace

Result<std::int64_t> SqliteStore::pruneSamples(const SamplePrune& prune) {
  const auto intervals = sampleIntervals(prune);
  if (intervals.empty() || prune.max_rows <= 0) return std::int64_t{0};
  auto partition_ids = withReader([](sqlite::Database& db) -> Result<std::vector<std::int64_t>> {
    auto select = db.prepare("SELECT id FROM probe_partitions ORDER BY id");
    if (!select) return select.error();
    std::vector<std::int64_t> ids;
    for (;;) {
      auto row = select->step();
      if (!row) return row.error();
      if (!*row) return ids;
      ids.push_back(select->columnInt(0));
    }
  });
  if (!partition_ids) return partition_ids.error();

  std::int64_t deleted = 0;
  for (const auto partition_id : *partition_ids) {
    auto cursor = SampleCursor::at(0, intervals);
    while (cursor.interval < intervals.size() && deleted < prune.max_rows) {
      const auto rows = std::min(options_.prune_chunk_rows, prune.max_rows - deleted);
      auto chunk =
          writer_->runOnWriter<SampleChunk>([this, partition_id, &intervals, cursor, rows] {
            return sink_->pruneSampleChunk(partition_id, intervals, cursor, rows);
          });
      if (!chunk) return chunk.error();
      deleted += chunk->deleted;
      cursor = chunk->next;
    }
  }
  return deleted;
}

template <typename Chunk>
Result<std::int64_t> SqliteStore::pruneChunked(std::int64_t max_rows, Chunk chunk) {
  std::int64_t deleted = 0;
  while (deleted < max_rows) {
    const auto rows = std::min(options_.prune_chunk_rows, max_rows - deleted);
    auto done = writer_->runOnWriter<std::int64_t>([&chunk, rows] { return chunk(rows); });
    if (!done) return done.error();
    deleted += *done;
    if (*done < rows) break;
  }
  return deleted;
}

Result<std::int64_t> SqliteStore::pruneGaps(std::int64_t before_us, std::int64_t max_rows) {
  return pruneChunked(
      max_rows, [this, before_us](std::int64_t rows) { return sink_->pruneGaps(before_us, rows); });
}

Result<std::int64_t> SqliteStore::pruneEvents(std::int64_t before_us, std::int64_t max_rows) {
  return pruneChunked(max_rows, [this, before_us](std::int64_t rows) {
    return sink_->pruneEvents(before_us, rows);
  });
}

Result<DatabaseSize> SqliteStore::databaseSize() const {
  return withReader([](sqlite::Database& db) -> Result<DatabaseSize> {
    // One read transaction, so the page count and the free pages are of the same moment.
    if (auto begun = db.exec("BEGIN"); !begun) return begun.error();
    DatabaseSize size;
    for (const auto& [pragma, into] : {std::pair{"PRAGMA page_size", &size.page_size},
                                       std::pair{"PRAGMA page_count", &size.pages},
                                       std::pair{"PRAGMA freelist_count", &size.free_pages}}) {
      auto value = db.queryInt(pragma);
      if (!value) {
        db.rollbackQuietly();
        return value.error();
      }
      *into = *value;
    }
    auto mode = db.queryInt("PRAGMA auto_vacuum");
    db.rollbackQuietly();
    if (!mode) return mode.error();
    size.incremental_vacuum = *mode == 2;
    return size;
  });
}

Result<RecordSpans> SqliteStore::recordSpans() const {
  return withReader([](sqlite::Database& db) -> Result<RecordSpans> {
    // Each an index seek: per partition on probe_sample_blocks_by_time, and on the gaps' and
    // events' time indexes. A block's first_send_us is its oldest sample; its newest is within
    // the span after the newest block start, so only those last blocks are decoded.
    auto select = db.prepare(R"sql(
WITH per_partition (oldest, newest) AS (
  SELECT (SELECT min(first_send_us) FROM probe_sample_blocks WHERE partition_id = p.id),
         (SELECT max(first_send_us) FROM probe_sample_blocks WHERE partition_id = p.id)
  FROM probe_partitions AS p)
SELECT (SELECT min(end_us) FROM gaps), (SELECT max(end_us) FROM gaps),
       (SELECT min(t_us) FROM events), (SELECT max(t_us) FROM events),
       (SELECT min(oldest) FROM per_partition))sql");
    if (!select) return select.error();
    auto row = select->step();
    if (!row) return row.error();
    const auto span = [&](int first) -> std::optional<TimeSpan> {
      const auto oldest = select->columnOptionalInt(first);
      const auto newest = select->columnOptionalInt(first + 1);
      if (!oldest || !newest) return std::nullopt;
      return TimeSpan{.oldest_us = *oldest, .newest_us = *newest};
    };
    RecordSpans spans{.samples = std::nullopt, .gaps = span(0), .events = span(2)};
    const auto oldest_sample = select->columnOptionalInt(4);
    select->reset();
    if (!oldest_sample) return spans;

    auto last_blocks = db.prepare(R"sql(
SELECT b.first_send_us, b.data
FROM probe_partitions AS p JOIN probe_sample_blocks AS b ON b.partition_id = p.id
WHERE b.first_send_us > (SELECT max(first_send_us) FROM probe_sample_blocks
                         WHERE partition_id = p.id) - ?1)sql");
    if (!last_blocks) return last_blocks.error();
    last_blocks->bindInt(1, kSampleBlockSpanUs);
    std::int64_t newest = *oldest_sample;
    std::vector<BlockSample> decoded;
    for (;;) {
      auto block = last_blocks->step();
      if (!block) return block.error();
      if (!*block) break;
      decoded.clear();
      const auto first_send_us = last_blocks->columnInt(0);
      if (auto read = decodeSampleBlock(last_blocks->columnBlob(1), first_send_us, decoded);
          !read) {
        return read.error();
      }
      for (const auto& sample : decoded) newest = std::max(newest, sample.send_us);
    }
    spans.samples = TimeSpan{.oldest_us = *oldest_sample, .newest_us = newest};
    return spans;
  });
}

Result<std::int64_t> SqliteStore::releaseFreePages(std::int64_t max_pages) {
  auto size = databaseSize();
  if (!size) return size.error();
  if (!size->incremental_vacuum) return std::int64_t{0};
  std::int64_t released = 0;
  while (released < max_pages) {
    const auto pages = std::min(kVacuumChunkPages, max_pages - released);
    auto done = writer_->runOnWriter<std::int64_t>(
        [this, pages] { return sink_->incrementalVacuum(pages); });
    if (!done) return done.error();
    released += *done;
    if (*done < pages) break;
  }
  return released;
}

}  // namespace kfaild::storage
