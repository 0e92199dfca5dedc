#include "storage/batch_writer.h"

#include <spdlog/spdlog.h>

#include <iterator>
#include <utility>

namespace kfaild::storage {

BatchWriter::BatchWriter(BatchSink& sink, BatchWriterOptions options)
    : sink_(sink), options_(options) {
  writer_.start("kfaild:writer", [this] { run(); });
}

// The stop wakes the writer wherever it waits; its last round writes what is queued.
BatchWriter::~BatchWriter() {
  writer_.stop();
}

std::size_t BatchWriter::queuedLocked() const {
  return queue_.size();
}

bool BatchWriter::wakeWriterLocked() const {
  // The first record starts the linger; a full batch ends it. In between the writer sleeps.
  return queue_.size() == 1 || queue_.size() >= options_.linger_max_records ||
         options_.linger.count() == 0;
}

void BatchWriter::addSample(ProbeSample sample) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (queuedLocked() >= options_.max_queued_records) {
      ++dropped_samples_;
      return;
    }
    if (queue_.empty()) first_queued_ = std::chrono::steady_clock::now();
    queue_.samples.push_back(std::move(sample));
    wake = wakeWriterLocked();
  }
  if (wake) writer_.wake();
}

template <typename Record>
bool BatchWriter::queueOtherLocked(std::deque<Record>& into, Record record) {
  if (queuedLocked() >= options_.max_queued_records) {
    if (queue_.samples.empty()) {
      ++dropped_other_;
      return false;
    }
    queue_.samples.pop_front();
    ++dropped_samples_;
  }
  if (queue_.empty()) first_queued_ = std::chrono::steady_clock::now();
  into.push_back(std::move(record));
  return wakeWriterLocked();
}

void BatchWriter::addGap(Gap gap) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    wake = queueOtherLocked(queue_.gaps, std::move(gap));
  }
  if (wake) writer_.wake();
}

void BatchWriter::addEvent(Event event) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    wake = queueOtherLocked(queue_.events, std::move(event));
  }
  if (wake) writer_.wake();
}

void BatchWriter::flush() {
  std::unique_lock lock(mutex_);
  if (exited_) return;
  const auto ticket = ++flush_requested_;
  writer_.wake();
  flushed_.wait(lock, [&] { return flush_done_ >= ticket || exited_; });
}

WriterStats BatchWriter::stats() const {
  std::lock_guard lock(mutex_);
  return WriterStats{
      .queued = queuedLocked(),
      .written = written_,
      .dropped_samples = dropped_samples_,
      .dropped_other = dropped_other_,
      .failed_batches = failed_batches_,
      .last_error = last_error_,
  };
}

bool BatchWriter::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    // Read under mutex_, as the writer reads it before it takes the tasks: a task queued here is
    // taken by a later round, at the latest by the last one.
    if (writer_.stopRequested()) return false;
    tasks_.push_back(std::move(task));
  }
  writer_.wake();
  return true;
}

BatchWriter::Due BatchWriter::dueLocked(bool stopping,
                                        std::chrono::steady_clock::time_point now) const {
  const bool flush_pending = flush_requested_ > flush_done_;
  const bool write = stopping || flush_pending || !retry_at_ || now >= *retry_at_;
  const bool lingering = !stopping && !flush_pending && !retry_at_ && !queue_.empty() &&
                         queue_.size() < options_.linger_max_records &&
                         now < first_queued_ + options_.linger;
  return Due{
      .round = !tasks_.empty() ||
               (write && !lingering && (!queue_.empty() || stopping || flush_pending)),
      .write = write,
  };
}

std::optional<std::chrono::steady_clock::time_point> BatchWriter::pauseEndLocked() const {
  if (queue_.empty()) return std::nullopt;
  if (retry_at_) return *retry_at_;
  return first_queued_ + options_.linger;
}

void BatchWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    bool stopping = false;
    Due due;
    for (;;) {
      // The stop flag is read once per decision: the round decided on is the round done.
      stopping = writer_.stopRequested();
      due = dueLocked(stopping, std::chrono::steady_clock::now());
      if (due.round) break;
      // The wait also ends when its own end moves: the first record into an empty queue starts
      // a linger that a wait without a deadline would never see end.
      const auto until = pauseEndLocked();
      const auto decide_again = [&] {
        return dueLocked(writer_.stopRequested(), std::chrono::steady_clock::now()).round ||
               pauseEndLocked() != until;
      };
      if (until) {
        writer_.waitUntil(lock, *until, decide_again);
      } else {
        writer_.wait(lock, decide_again);
      }
    }
    const auto ticket = flush_requested_;
    // A task (a prune chunk, say) does not cut a retry pause short: retrying a large failed
    // batch before every chunk would make a prune crawl while the disk is full.
    WriteBatch batch = due.write ? std::exchange(queue_, {}) : WriteBatch{};
    auto tasks = std::exchange(tasks_, {});
    lock.unlock();

    std::optional<Result<BatchOutcome>> outcome;
    if (!batch.empty()) outcome.emplace(sink_.write(batch));
    for (auto& task : tasks) task();

    lock.lock();
    if (outcome) {
      if (outcome->ok()) {
        recordSuccessLocked(batch, outcome->value());
      } else {
        recordFailureLocked(batch, outcome->error());
      }
    }
    flush_done_ = ticket;
    if (stopping) break;
    flushed_.notify_all();
  }

  if (!queue_.empty()) {
    spdlog::error("storage: shutting down with {} samples, {} gaps and {} events not written: {}",
                  queue_.samples.size(), queue_.gaps.size(), queue_.events.size(), last_error_);
  }
  exited_ = true;
  flushed_.notify_all();
}

void BatchWriter::recordSuccessLocked(const WriteBatch& batch, const BatchOutcome& outcome) {
  const auto rejected = outcome.rejected_samples + outcome.rejected_other;
  written_ += batch.size() - rejected;
  dropped_samples_ += outcome.rejected_samples;
  dropped_other_ += outcome.rejected_other;
  if (rejected > 0 && outcome.reject_reason != last_logged_reject_) {
    spdlog::warn("storage: dropped {} samples and {} gaps/events the database refused: {}",
                 outcome.rejected_samples, outcome.rejected_other, outcome.reject_reason);
    last_logged_reject_ = outcome.reject_reason;
  }
  if (failures_in_a_row_ > 0) {
    spdlog::info("storage: writing again after {} failed batches", failures_in_a_row_);
  }
  failures_in_a_row_ = 0;
  retry_at_.reset();
  last_error_.clear();
  last_logged_error_.clear();
}

namespace {

template <typename T>
void putInFront(std::deque<T>& failed, std::deque<T>& queue) {
  failed.insert(failed.end(), std::make_move_iterator(queue.begin()),
                std::make_move_iterator(queue.end()));
  queue = std::move(failed);
}

}  // namespace

void BatchWriter::recordFailureLocked(WriteBatch& batch, const Error& error) {
  ++failed_batches_;
  ++failures_in_a_row_;
  last_error_ = error.describe();
  retry_at_ = std::chrono::steady_clock::now() + options_.retry_interval;

  // The failed records are older than what arrived meanwhile, so they go first, and when the
  // queue is over its bound the oldest samples are the first to go.
  putInFront(batch.samples, queue_.samples);
  putInFront(batch.gaps, queue_.gaps);
  putInFront(batch.events, queue_.events);
  std::uint64_t dropped_now = 0;
  while (queuedLocked() > options_.max_queued_records && !queue_.samples.empty()) {
    queue_.samples.pop_front();
    ++dropped_now;
  }
  dropped_samples_ += dropped_now;
  // Only when gaps and events alone exceed the bound: the newest are refused, as they would have
  // been on arrival.
  while (queuedLocked() > options_.max_queued_records && !queue_.events.empty()) {
    queue_.events.pop_back();
    ++dropped_other_;
  }
  while (queuedLocked() > options_.max_queued_records && !queue_.gaps.empty()) {
    queue_.gaps.pop_back();
    ++dropped_other_;
  }

  if (last_error_ != last_logged_error_) {
    spdlog::error(
        "storage: writing a batch failed, retrying every {} ms: {} (kept {} gaps, {} events, {} "
        "samples; dropped {} samples)",
        options_.retry_interval.count(), last_error_, queue_.gaps.size(), queue_.events.size(),
        queue_.samples.size(), dropped_now);
    last_logged_error_ = last_error_;
  }
}

}  // namespace kfaild::storage
