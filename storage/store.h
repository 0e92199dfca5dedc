#pragma once

// The store seam: everything kfaild keeps, behind one interface. SqliteStore implements it.
//
// Threading: writes go through a BatchWriter (one writer thread, one transaction per batch) and
// never block their caller; every query method is safe to call from any thread concurrently
// (each thread gets its own read connection in WAL mode).

#include <cstdint>
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
};

struct SampleQuery {
  ClusterId cluster = 0;
  std::string topic;
  std::int32_t partition = 0;
  TimeRange range;  // on send_us
  std::size_t limit = 100000;
};

struct WriterStats {
  std::uint64_t queued = 0;            // records waiting for the writer now
  std::uint64_t written = 0;           // records committed since start
  std::uint64_t dropped_samples = 0;   // raw samples dropped because the writer fell behind
  std::uint64_t dropped_other = 0;     // gaps/events dropped (only when the queue is full of them)
  std::uint64_t failed_batches = 0;    // transactions that failed (disk full, read-only, ...)
  std::string last_error;              // message of the last failure, empty when healthy
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
  virtual Result<ClusterId> ensureCluster(const std::string& name, const std::string& bootstrap) = 0;
  virtual Result<std::vector<Cluster>> clusters() const = 0;

  virtual Result<std::vector<ProbeSample>> samples(const SampleQuery& query) const = 0;
  virtual Result<std::vector<Gap>> gaps(const GapQuery& query) const = 0;
  virtual Result<std::vector<Event>> events(const EventQuery& query) const = 0;

  // Deletes raw samples sent before `cutoff_us`, except those inside any of `keep` (drill
  // windows). Returns the number of rows deleted. Gaps and events are never deleted.
  virtual Result<std::int64_t> pruneSamples(std::int64_t cutoff_us,
                                            const std::vector<TimeRange>& keep) = 0;
};

}  // namespace kfaild::storage
