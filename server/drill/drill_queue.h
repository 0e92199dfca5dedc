#pragma once

// The drills of one cluster waiting to run, and the one running. Bounded: a request beyond
// kCapacity (API requests are refused while anything runs anyway; schedules with
// `queue_if_busy` queue) is refused. The engine's thread waits on it through its Worker, whose
// stop always wakes that wait.
//
// Threading: every member is thread-safe.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "server/common/clock.h"
#include "server/common/worker.h"

namespace kfaild::drill {

class DrillQueue {
 public:
  static constexpr std::size_t kCapacity = 16;

  explicit DrillQueue(common::Worker& worker) : worker_(worker) {}

  // Queues `id` behind the others; false when kCapacity drills are already waiting.
  bool push(std::int64_t id);
  // The running drill, else the first waiting one.
  std::optional<std::int64_t> busyWith() const;
  std::optional<std::int64_t> active() const;
  std::size_t waiting() const;
  enum class AbortTaken { kNotFound, kRemoved, kRequested };
  // Aborts `id` wherever it is, in one step: a waiting drill is taken out of the queue
  // (kRemoved: it never runs), the running one is asked to stop (kRequested). Under the one
  // lock `next` takes a drill with, so a drill moving from the queue to running meanwhile cannot
  // slip between the two looks.
  AbortTaken abort(std::int64_t id);
  bool abortRequested() const;

  // The engine's thread: waits until a drill is waiting, the worker stops, `wake_wanted()` or
  // `until` (monotonic, if any) passes; takes the first waiting drill as the running one.
  template <typename Wanted>
  std::optional<std::int64_t> next(std::optional<common::MonoMicros> until, Wanted wake_wanted) {
    std::unique_lock lock(mutex_);
    const auto ready = [&] { return !queue_.empty() || wake_wanted(); };
    if (until) {
      worker_.waitUntil(lock, *until, ready);
    } else {
      worker_.wait(lock, ready);
    }
    if (worker_.stopRequested() || queue_.empty()) return std::nullopt;
    active_ = queue_.front();
    queue_.pop_front();
    abort_request_.reset();
    return active_;
  }
  // The running drill has ended.
  void finished();
  // The engine's thread: sleeps up to `micros`; false when the running drill was aborted or the
  // worker is stopping.
  bool sleep(std::int64_t micros);
  // Wakes the engine's thread (after something `next`'s `wake_wanted` reads changed). The queue's
  // mutex is taken first: `wake_wanted` reads state under another mutex, and without this a wake
  // could fall between `next` evaluating it (false) and starting to wait, and be lost (a
  // submission then waited GuardInputs::kReadWait for a read that never came).
  void wake() {
    {
      std::lock_guard lock(mutex_);
    }
    worker_.wake();
  }

 private:
  bool abortedLocked() const { return abort_request_ && active_ && *abort_request_ == *active_; }

  common::Worker& worker_;
  mutable std::mutex mutex_;
  std::deque<std::int64_t> queue_;             // guarded by mutex_
  std::optional<std::int64_t> active_;         // guarded by mutex_
  std::optional<std::int64_t> abort_request_;  // guarded by mutex_
};

}  // namespace kfaild::drill
