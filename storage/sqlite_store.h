#pragma once

// SqliteStore: the Store on one SQLite file (schema: storage/README.md).
//
// Connections, and who uses them:
//   - one write connection, owned by the BatchWriter's thread. Every write goes through it:
//     sample/gap/event batches, and also ensureCluster() and each chunk of a prune, which
//     run on the writer thread between two batches (BatchWriter::runOnWriter). One writer means
//     kfaild never contends with itself for SQLite's write lock: a long prune cannot make a
//     batch wait out the busy timeout and fail, and it cannot starve the probe's writes either,
//     because batches and prune chunks take turns.
//   - read connections in a pool guarded by a mutex: a query borrows one (opening a new one when
//     none is idle) and returns it, so concurrent queries each have their own connection and, in
//     WAL mode, never wait for the writer. At most `max_idle_readers` stay open between queries.
//
// Thread-safety: every method may be called from any thread.
// Errors (errc.h): open() fails with open_failed, newer_schema or migration_failed; queries with
// query_failed, io_error or busy; writes that fail are retried by the writer (see batch_writer.h)
// and show in writerStats(): failed_batches and last_error ("database or disk is full: ...").
// Times are wall-clock microseconds since the Unix epoch; TimeRange is [from_us, to_us).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "storage/store.h"

namespace kfaild::storage {

namespace sqlite {
class Database;
}

class BatchWriter;
class SqliteBatchSink;

struct SqliteStoreOptions {
  // Records waiting for the writer; beyond it samples are dropped first (batch_writer.h).
  std::size_t max_queued_records = 1'000'000;
  // Pause before retrying a failed batch.
  std::chrono::milliseconds retry_interval{1000};
  // A batch is written this long after its first record was queued (or once it holds
  // linger_max_records). Each batch stores a partition's samples as one block (or a few), so
  // the linger sets both how long a sample takes to become visible to queries (flush() cuts it
  // short) and how many samples a block holds: at 1 s, a probe at 20 ms fills blocks of about 50
  // samples. See storage/README.md, "Writing".
  std::chrono::milliseconds linger{1000};
  std::size_t linger_max_records = 100'000;
  // How long a connection waits for a lock held by another process (or a test) before failing.
  std::chrono::milliseconds busy_timeout{5000};
  // Rows deleted per prune transaction; bounds how long a batch waits behind a prune.
  std::int64_t prune_chunk_rows = 10'000;
  std::size_t max_idle_readers = 4;
  // Caps the file at this many pages (4 KiB each) on the write connection: a way to see
  // "disk full" without filling a disk. Unset: SQLite's own maximum.
  std::optional<std::int64_t> max_page_count;
  // For clusters.created_us. Not owned; must outlive the store. Null: the system clock.
  const common::Clock* clock = nullptr;
};

class SqliteStore final : public Store {
 public:
  // Opens or creates the database at `path` (a file; its directory must exist), upgrades its
  // schema, and starts the writer thread.
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path,
                                                   SqliteStoreOptions options = {});
  // Writes what is queued (one last attempt), then closes every connection.
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  void addSample(ProbeSample sample) override;
  void addGap(Gap gap) override;
  void addEvent(Event event) override;
  void flush() override;
  WriterStats writerStats() const override;

  // Runs on the writer thread, so it waits for the batch being written (if any).
  Result<ClusterId> ensureCluster(const std::string& name, const std::string& bootstrap) override;
  Result<std::vector<Cluster>> clusters() const override;
  Result<ClusterId> ensureProfileStream(ClusterId cluster, const std::string& profile) override;
  Result<std::map<std::string, ClusterId>> profileStreams(ClusterId cluster) const override;

  Result<std::vector<ProbeSample>> samples(const SampleQuery& query) const override;
  // Gaps ordered by end_us, events by t_us (ties by id, i.e. arrival).
  Result<std::vector<Gap>> gaps(const GapQuery& query) const override;
  Result<std::vector<Event>> events(const EventQuery& query) const override;

  Result<std::vector<std::vector<Event>>> eventsInWindows(ClusterId cluster,
                                                          const std::vector<TimeRange>& windows,
                                                          std::size_t limit_each) const override;

  // Prunes run in chunks of at most prune_chunk_rows rows (incremental_vacuum: 4096 pages), one
  // transaction each, on the writer thread between batches. If a chunk fails, the rows deleted
  // so far stay deleted and the error is returned. Samples are deleted partition by partition,
  // oldest first within each.
  Result<std::int64_t> pruneSamples(const SamplePrune& prune) override;
  Result<std::int64_t> pruneGaps(std::int64_t before_us, std::int64_t max_rows) override;
  Result<std::int64_t> pruneEvents(std::int64_t before_us, std::int64_t max_rows) override;
  Result<DatabaseSize> databaseSize() const override;
  Result<RecordSpans> recordSpans() const override;
  Result<std::int64_t> releaseFreePages(std::int64_t max_pages) override;

  // Changes the page cap of options.max_page_count (nullopt lifts it); applied before the
  // writer's next transaction.
  void setMaxPageCount(std::optional<std::int64_t> pages);

  const std::string& path() const { return path_; }

 private:
  class ReaderPool;

  SqliteStore(std::string path, SqliteStoreOptions options);
  // Runs `read(sqlite::Database&)` on a pooled read connection.
  template <typename F>
  auto withReader(F&& read) const;
  // Runs `chunk(rows)` on the writer until it deletes fewer than asked or max_rows are done.
  template <typename Chunk>
  Result<std::int64_t> pruneChunked(std::int64_t max_rows, Chunk chunk);

  std::string path_;
  SqliteStoreOptions options_;
  common::SystemClock system_clock_;
  const common::Clock& clock_;
  std::unique_ptr<ReaderPool> readers_;
  // Destroyed in reverse order: the writer thread stops before the sink and its connection go.
  std::unique_ptr<SqliteBatchSink> sink_;
  std::unique_ptr<BatchWriter> writer_;
};

}  // namespace kfaild::storage
