#pragma once

// One long-running loop on its own thread that always wakes on stop. stop() raises the stop flag
// and then wakes the loop's wait under the very mutex the loop waits with, so a stop lands either
// before the loop checks it (and is seen) or while the loop waits (and wakes it): no stop is lost
// between a check and a wait, and stop() never waits for a sleeping loop to time out.
// (Waits on a std::stop_token, condition_variable_any's and then a std::stop_callback of ours
// notifying under the mutex, both lost such stops under this type's test with libstdc++ 12, a few
// times in a thousand; this form has not.)
//
// Timed waits go through a common::Clock (the system's unless one is given), so a test clock can
// drive a worker's loop.
//
// A loop that throws (a library throwing on input nobody expected: it is a bug, but one pass's)
// does not end kfaild: the exception is logged, the loop's `failed` hook fails what the pass was
// doing, and the loop runs again after kRestartDelay unless a stop was requested, so the
// daemon's other threads and the recovery this loop may run stay alive.
//
// Threading: start() and stop() from the owner (stop() is idempotent and joins; the destructor
// stops). The waits (wait, waitFor, waitUntil, sleepFor) from the loop's thread only: one waiter.
// wake() and stopRequested() from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "server/common/clock.h"

namespace kfaild::common {

// Names the calling thread (the first 15 bytes of `name`, Linux's limit).
void nameThisThread(const std::string& name);

class Worker {
 public:
  Worker() : clock_(systemClock()) {}
  explicit Worker(const Clock& clock) : clock_(clock) {}
  ~Worker() { stop(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // A throwing loop's next run starts this long after the throw (on the worker's clock).
  static constexpr std::chrono::seconds kRestartDelay{1};
  // Told a throwing loop's exception message, on the loop's thread, before the loop runs again.
  using Failed = std::function<void(const std::string& what)>;

  // Runs `loop` on a new thread named `name` (what top -H, ps -L and /proc/<pid>/task/*/comm
  // show; Linux keeps the first 15 bytes); the loop returns once stopRequested() (or earlier).
  // If it throws, see the header's comment: `failed` (if any) is called and the loop runs again.
  void start(std::string name, std::function<void()> loop, Failed failed = {}) {
    stop();
    stopping_ = false;
    thread_ = std::thread(
        [this, name = std::move(name), loop = std::move(loop), failed = std::move(failed)] {
          nameThisThread(name);
          runGuarded(name, loop, failed);
        });
  }

  void stop() {
    if (!thread_.joinable()) return;
    requestStop();
    thread_.join();
  }

  // Raises the stop flag and wakes the loop without waiting for it to end (callable from the
  // loop's own thread too); stop() still joins.
  void requestStop() {
    stopping_ = true;
    std::lock_guard registry(registry_mutex_);
    if (waiter_mutex_ != nullptr) {
      std::lock_guard guard(*waiter_mutex_);
      wake_.notify_all();
    }
  }

  bool stopRequested() const { return stopping_.load(); }

  // Waits with `lock` (held on entry and on return) until `ready()`, a stop request or the
  // deadline; returns ready() as evaluated last, under the lock. A thread that changes what
  // `ready` reads does so under the same mutex and then calls wake().
  // `deadline` is on the clock's monotonic time (Clock::monoNow()).
  template <typename Ready>
  bool waitUntil(std::unique_lock<std::mutex>& lock, MonoMicros deadline, Ready ready) {
    return waitWithStop(
        lock, [&](auto& pred) { clock_.waitUntil(lock, wake_, deadline, pred); }, ready);
  }
  // A deadline on the system's steady clock, for loops that keep their times there.
  template <typename Ready>
  bool waitUntil(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline,
                 Ready ready) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    return waitFor(lock, left, std::move(ready));
  }
  template <typename Ready>
  bool waitFor(std::unique_lock<std::mutex>& lock, std::chrono::microseconds timeout, Ready ready) {
    return waitUntil(lock, clock_.monoNow() + timeout.count(), std::move(ready));
  }
  // Without a deadline: until ready() or a stop request.
  template <typename Ready>
  bool wait(std::unique_lock<std::mutex>& lock, Ready ready) {
    return waitWithStop(lock, [&](auto& pred) { wake_.wait(lock, pred); }, ready);
  }

  // Sleeps up to `duration`; false when a stop was requested (at once, whenever it comes).
  bool sleepFor(std::chrono::microseconds duration) {
    std::unique_lock lock(sleep_mutex_);
    waitFor(lock, duration, [] { return false; });
    return !stopRequested();
  }

  void wake() { wake_.notify_all(); }

 private:
  void runGuarded(const std::string& name, const std::function<void()>& loop, const Failed& failed);

  template <typename Wait, typename Ready>
  bool waitWithStop(std::unique_lock<std::mutex>& lock, Wait wait, Ready& ready) {
    // The waiter's mutex is registered (and removed) with the lock released: stop() holds the
    // registry while it takes that mutex, so holding both here in the other order could deadlock.
    lock.unlock();
    setWaiter(lock.mutex());
    lock.lock();
    std::function<bool()> pred = [&] { return stopping_.load() || ready(); };
    wait(pred);
    const bool is_ready = ready();
    lock.unlock();
    setWaiter(nullptr);
    lock.lock();
    return is_ready;
  }

  static const Clock& systemClock() {
    static const SystemClock clock;
    return clock;
  }

  void setWaiter(std::mutex* mutex) {
    std::lock_guard registry(registry_mutex_);
    waiter_mutex_ = mutex;
  }

  const Clock& clock_;
  std::atomic<bool> stopping_{false};
  std::condition_variable wake_;
  std::mutex registry_mutex_;
  std::mutex* waiter_mutex_ = nullptr;  // guarded by registry_mutex_: the loop's wait's mutex
  std::mutex sleep_mutex_;
  std::thread thread_;  // last: joined before the members above go
};

}  // namespace kfaild::common
