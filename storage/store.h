#pragma once

// The store seam: everything kfaild keeps, behind one interface. SqliteStore implements it.
//
// Threading: writes go through a BatchWriter (one writer thread, one transaction per batch) and
// never block their caller; every query method is safe to call from any thread concurrently
// (each thread gets its own read connection in WAL mode).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "storage/records.h"

namespace kfaild::storage {

// Half-open, [from_us, to_us), wall-clock µs: consecutive windows never share a record.
struct TimeRange {
  std::int64_t from_us = 0;
  std::int64_t to_us = INT64_MAX;
};

struct GapQuery {
  std::optional<ClusterId> cluster;
  std::optional<std::string> topic;
  std::optional<std::int32_t> partition;
  std::optional<GapKind> kind;
  std::int64_t min_duration_us = 0;
  TimeRange range;  // matches gaps whose end lies in the range
  std::size_t limit = 1000;
};

struct EventQuery {
  std::optional<ClusterId> cluster;
  std::optional<std::string> source;
  std::optional<std::string> kind;
  std::optional<std::string> topic;
  std::optional<std::int32_t> partition;
  TimeRange range;
  std::size_t limit = 10000;
  // Paging: with it, events at exactly range.from_us count only when their id is above it, so a
  // page that starts at the last (t_us, id) of the one before continues it without a repeat.
  std::optional<std::int64_t> after_id;
};

struct SampleQuery {
  ClusterId cluster = 0;
  std::string topic;
  std::int32_t partition = 0;
  TimeRange range;  // on send_us
  std::size_t limit = 100000;
};

// Which samples a prune deletes: those sent before `before_us` that lie outside every drill
// window (raw samples), or, with `inside_windows`, inside one of them (drill-window samples).
// Windows are [from_us, to_us) on send_us and may overlap.
struct SamplePrune {
  std::int64_t before_us = 0;
  std::vector<TimeRange> drill_windows{};
  bool inside_windows = false;
  // Stops after the chunk that reaches this many rows (so it may delete up to one chunk more):
  // a caller that loops over calls can stop in between.
  std::int64_t max_rows = INT64_MAX;
};

// The database file's pages (SQLite's own accounting, seen by a fresh read transaction).
struct DatabaseSize {
  std::int64_t page_size = 0;
  std::int64_t pages = 0;           // the file's length in pages (WAL content included)
  std::int64_t free_pages = 0;      // on SQLite's freelist: reused by later writes
  bool incremental_vacuum = false;  // auto_vacuum=INCREMENTAL: free pages can be given back

  std::int64_t fileBytes() const { return pages * page_size; }
  std::int64_t usedBytes() const { return (pages - free_pages) * page_size; }
};

// The oldest and the newest record of a kind.
struct TimeSpan {
  std::int64_t oldest_us = 0;
  std::int64_t newest_us = 0;
};

// Each prunable kind's span (samples by send_us, gaps by end_us, events by t_us); nullopt when
// there is none.
struct RecordSpans {
  std::optional<TimeSpan> samples;
  std::optional<TimeSpan> gaps;
  std::optional<TimeSpan> events;
};

struct WriterStats {
  std::uint64_t queued = 0;           // records waiting for the writer now
  std::uint64_t written = 0;          // records committed since start
  std::uint64_t dropped_samples = 0;  // raw samples dropped because the writer fell behind
  std::uint64_t dropped_other = 0;    // gaps/events dropped (only when the queue is full of them)
  std::uint64_t failed_batches = 0;   // transactions that failed (disk full, read-only, ...)
  std::string last_error;             // message of the last failure, empty when healthy
};

class Store {
 public:
  virtual ~Store() = default;

  // Writes: queued for the writer thread; never block, never fail (overflow is counted).
  virtual void addSample(ProbeSample sample) = 0;
  virtual void addGap(Gap gap) = 0;
  virtual void addEvent(Event event) = 0;
  // Blocks until everything queued before the call is committed (or failed). For shutdown and
  // tests.
  virtual void flush() = 0;
  virtual WriterStats writerStats() const = 0;

  // Synchronous: registers a cluster by name (idempotent) and returns its id.
  virtual Result<ClusterId> ensureCluster(const std::string& name,
                                          const std::string& bootstrap) = 0;
  // The clusters, without the profiles' streams.
  virtual Result<std::vector<Cluster>> clusters() const = 0;
  // Synchronous: the stream of client profile `profile` of `cluster` (idempotent): the id its
  // samples, gaps and probe events are stored under, as a cluster's are. The primary profile's
  // stream is the cluster's own id, never this.
  virtual Result<ClusterId> ensureProfileStream(ClusterId cluster, const std::string& profile) = 0;
  // The profile streams of `cluster` that have been made, by profile name.
  virtual Result<std::map<std::string, ClusterId>> profileStreams(ClusterId cluster) const = 0;

  virtual Result<std::vector<ProbeSample>> samples(const SampleQuery& query) const = 0;
  virtual Result<std::vector<Gap>> gaps(const GapQuery& query) const = 0;
  virtual Result<std::vector<Event>> events(const EventQuery& query) const = 0;

  // Events in each of `windows` (of one cluster), at most `limit_each` per window, by t_us then
  // id: one query for many windows. The result has one list per window, in the order given.
  virtual Result<std::vector<std::vector<Event>>> eventsInWindows(
      ClusterId cluster, const std::vector<TimeRange>& windows, std::size_t limit_each) const = 0;

  // Retention. Each deletes oldest first in bounded transactions that take turns with the
  // writer's batches, returns the number of rows deleted, and on failure leaves what it deleted
  // so far deleted. Clusters, probe partitions and the drill tables are never deleted.
  virtual Result<std::int64_t> pruneSamples(const SamplePrune& prune) = 0;
  // Gaps that ended before `before_us` / events that happened before it; at most about
  // `max_rows` (whole chunks).
  virtual Result<std::int64_t> pruneGaps(std::int64_t before_us, std::int64_t max_rows) = 0;
  virtual Result<std::int64_t> pruneEvents(std::int64_t before_us, std::int64_t max_rows) = 0;

  virtual Result<DatabaseSize> databaseSize() const = 0;
  virtual Result<RecordSpans> recordSpans() const = 0;
  // Gives up to `max_pages` free pages back to the file system (PRAGMA incremental_vacuum), in
  // bounded transactions; the number given back. 0 when the file is not in incremental
  // auto-vacuum mode (databases created before kfaild set it: see storage/README.md).
  virtual Result<std::int64_t> releaseFreePages(std::int64_t max_pages) = 0;
};

}  // namespace kfaild::storage
