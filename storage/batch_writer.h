#pragma once

// BatchWriter: the store's write path. Producers (probe, observers) hand it records and never
// wait; one writer thread takes everything queued, gives it to a BatchSink as one batch (one
// transaction), and repeats.
//
// Memory: at most `max_queued_records` records wait in the queue, plus the one batch being
// written. When the queue is full, raw samples go first: a new sample is refused, a new gap or
// event evicts the oldest queued sample. Gaps and events are refused only when the queue holds
// nothing else. Every drop is counted in WriterStats.
//
// Failures: a batch the sink could not commit (disk full, read-only, I/O error, locked) is
// counted, logged once per distinct error, and put back at the front of the queue, to be retried
// after `retry_interval`, or at once by flush(). If it no longer fits, the failed batch's samples
// are dropped first (oldest first). Nothing else is lost, and writing resumes by itself when the
// cause goes away. Records the sink rejects one by one (say, an unknown cluster id) are not
// retried; they are counted as dropped and logged once per distinct reason.
//
// Thread-safety: every public method may be called from any thread. The sink and the tasks given
// to runOnWriter() run on the writer thread (a common::Worker) only, one at a time. Its waits (for
// work, the end of a linger, a retry pause) wake at once when the writer is destroyed.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/common/worker.h"
#include "storage/errc.h"
#include "storage/records.h"
#include "storage/store.h"

namespace kfaild::storage {

struct WriteBatch {
  std::deque<ProbeSample> samples;
  std::deque<Gap> gaps;
  std::deque<Event> events;

  std::size_t size() const { return samples.size() + gaps.size() + events.size(); }
  bool empty() const { return size() == 0; }
};

// What a sink did with a batch it committed.
struct BatchOutcome {
  std::uint64_t rejected_samples = 0;
  std::uint64_t rejected_other = 0;
  std::string reject_reason;  // the first rejection's error, for the log
};

class BatchSink {
 public:
  virtual ~BatchSink() = default;
  // Writes the batch atomically: every record not rejected is committed, or nothing is and an
  // Error says why.
  virtual Result<BatchOutcome> write(const WriteBatch& batch) = 0;
};

struct BatchWriterOptions {
  std::size_t max_queued_records = 1'000'000;
  std::chrono::milliseconds retry_interval{1000};  // pause after a failed batch
  // A batch is written this long after its first record was queued, or as soon as it holds
  // linger_max_records, whichever comes first (flush() and stopping do not wait): one
  // transaction per linger instead of one per record keeps the writer's CPU per sample small
  // (the current figure: docs/PERFORMANCE.md, "Store"). 0: write at once.
  std::chrono::milliseconds linger{100};
  std::size_t linger_max_records = 20'000;
};

class BatchWriter {
 public:
  // Starts the writer thread. `sink` must outlive the writer.
  BatchWriter(BatchSink& sink, BatchWriterOptions options);
  // Makes one last attempt to write what is queued, then stops the thread. What that attempt
  // could not write is logged as lost.
  ~BatchWriter();
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  void addSample(ProbeSample sample);
  void addGap(Gap gap);
  void addEvent(Event event);

  // Returns once the writer has made one attempt at everything queued before the call, including
  // failed batches waiting for their retry (so it also cuts a retry pause short).
  void flush();
  WriterStats stats() const;

  // Runs `task` on the writer thread between two batches and returns its result, blocking the
  // caller until then: for writes that must not interleave with a batch's transaction. Fails with
  // shutting_down once the writer is stopping.
  template <typename T>
  Result<T> runOnWriter(std::function<Result<T>()> task) {
    // Shared, so the promise outlives set_value() even if the caller wakes and returns first.
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    if (!post([promise, task = std::move(task)] { promise->set_value(task()); })) {
      return Error{errc::shutting_down, "the store's writer has stopped"};
    }
    return future.get();
  }

 private:
  // What the writer is to do now: whether it has a round to do (records to write, a flush, a
  // task, or stop) and whether that round writes the queue (a failed batch waits out its retry
  // pause unless stopping or flushing).
  struct Due {
    bool round = false;
    bool write = false;
  };

  bool post(std::function<void()> task);
  void run();
  Due dueLocked(bool stopping, std::chrono::steady_clock::time_point now) const;
  // When the writer, with nothing due, stops waiting by itself (the end of a linger or a retry
  // pause); nullopt: only a record, a flush, a task or stop wakes it.
  std::optional<std::chrono::steady_clock::time_point> pauseEndLocked() const;
  std::size_t queuedLocked() const;
  void recordSuccessLocked(const WriteBatch& batch, const BatchOutcome& outcome);
  void recordFailureLocked(WriteBatch& batch, const Error& error);

  BatchSink& sink_;
  const BatchWriterOptions options_;

  // Queues a gap or an event: when the queue is full, the oldest raw sample makes room; false
  // when the queue holds nothing but gaps and events (the record is dropped and counted).
  template <typename Record>
  bool queueOtherLocked(std::deque<Record>& into, Record record);
  // Whether the writer must be woken for the record just queued.
  bool wakeWriterLocked() const;

  // The writer waits with mutex_; whoever changes the state below so that it may have a round to
  // do calls writer_.wake() afterwards.
  mutable std::mutex mutex_;
  std::condition_variable flushed_;  // for flush(): a round finished
  // Guarded by mutex_:
  WriteBatch queue_;
  std::chrono::steady_clock::time_point first_queued_;  // when queue_ last became non-empty
  std::vector<std::function<void()>> tasks_;
  bool exited_ = false;
  std::uint64_t flush_requested_ = 0;  // tickets handed out by flush()
  std::uint64_t flush_done_ = 0;       // the highest ticket whose round has finished
  std::optional<std::chrono::steady_clock::time_point> retry_at_;  // set while failing
  std::uint64_t written_ = 0;
  std::uint64_t dropped_samples_ = 0;
  std::uint64_t dropped_other_ = 0;
  std::uint64_t failed_batches_ = 0;
  std::uint64_t failures_in_a_row_ = 0;
  std::string last_error_;
  std::string last_logged_error_;
  std::string last_logged_reject_;

  common::Worker writer_;  // last: stopped (and joined) before anything above goes
};

}  // namespace kfaild::storage
