#pragma once

// A clock that moves only when a test moves it. Wall and monotonic time advance together unless
// stepWall() simulates an NTP step.
//
// Waits through it (Clock::waitUntil, sleepUntil) block until what they wait for is ready or a
// test has moved the time past their deadline. A test drives code that waits with
// advanceToNextDeadline(): it waits (in real time) for a thread to wait on this clock and moves
// the time to that wait's deadline, the way a discrete-event simulation does; a whole drill then
// runs in milliseconds. Meant for one thread under test that waits on the clock; with several,
// time jumps to the earliest deadline among those waiting at that moment.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "server/common/clock.h"

namespace kfaild::testing {

class ManualClock final : public common::Clock {
 public:
  explicit ManualClock(common::WallMicros wall_start = 1'700'000'000'000'000,
                       common::MonoMicros mono_start = 0)
      : wall_(wall_start), mono_(mono_start) {}

  common::WallMicros wallNow() const override { return wall_.load(); }
  common::MonoMicros monoNow() const override { return mono_.load(); }
  common::Instant now() const override {
    std::lock_guard time(time_mutex_);  // both parts of one moment
    return {wall_.load(), mono_.load()};
  }

  void advance(std::int64_t micros) {
    {
      std::lock_guard time(time_mutex_);
      wall_ += micros;
      mono_ += micros;
    }
    wakeWaiters();
  }
  // Moves the wall clock alone, as an NTP step does; counted in steps() as SystemClock counts
  // the steps it sees.
  void stepWall(std::int64_t micros) {
    std::lock_guard time(time_mutex_);
    wall_ += micros;
    ++steps_;
  }
  std::uint64_t steps() const override { return steps_.load(); }

  // Waits up to `real_timeout` for a thread to be waiting on this clock with a deadline still
  // ahead, then moves the time to the earliest such deadline. False when none came. With
  // `max_jump_us`, a deadline further ahead than that is not one: a test that advances until its
  // thread has done something, and must not carry it past the long wait that follows (a fault
  // held for minutes), sets it below that wait.
  bool advanceToNextDeadline(
      std::chrono::milliseconds real_timeout = std::chrono::milliseconds(2000),
      std::optional<std::int64_t> max_jump_us = std::nullopt) {
    const auto give_up = std::chrono::steady_clock::now() + real_timeout;
    while (true) {
      std::optional<common::MonoMicros> next;
      {
        std::lock_guard registry(registry_mutex_);
        const auto now = mono_.load();
        for (const auto& w : waiters_) {
          if (max_jump_us && w.deadline - now > *max_jump_us) continue;
          if (w.deadline > now && (!next || w.deadline < *next)) next = w.deadline;
        }
        if (next) {
          std::lock_guard time(time_mutex_);
          wall_ += *next - mono_.load();
          mono_ = *next;
        }
      }
      if (next) {
        wakeWaiters();
        return true;
      }
      if (std::chrono::steady_clock::now() >= give_up) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // How many threads wait on this clock now.
  std::size_t waiting() const {
    std::lock_guard registry(registry_mutex_);
    return waiters_.size();
  }

  bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 common::MonoMicros deadline, const std::function<bool()>& ready) const override {
    if (ready()) return true;
    // Registered with the lock released: wakeWaiters() holds the registry while it takes the
    // waiter's mutex, so holding both here in the other order could deadlock.
    lock.unlock();
    std::list<Waiter>::iterator self;
    {
      std::lock_guard registry(registry_mutex_);
      self = waiters_.insert(waiters_.end(), Waiter{lock.mutex(), &cv, deadline});
    }
    lock.lock();
    cv.wait(lock, [&] { return ready() || mono_.load() >= deadline; });
    const bool is_ready = ready();
    lock.unlock();
    {
      std::lock_guard registry(registry_mutex_);
      waiters_.erase(self);
    }
    lock.lock();
    return is_ready;
  }

  void sleepUntil(common::MonoMicros deadline) const override {
    std::mutex mutex;
    std::condition_variable cv;
    std::unique_lock lock(mutex);
    waitUntil(lock, cv, deadline, [] { return false; });
  }

 private:
  struct Waiter {
    std::mutex* mutex;
    std::condition_variable* cv;
    common::MonoMicros deadline;
  };

  void wakeWaiters() const {
    std::lock_guard registry(registry_mutex_);
    for (const auto& w : waiters_) {
      std::lock_guard guard(*w.mutex);
      w.cv->notify_all();
    }
  }

  std::atomic<common::WallMicros> wall_;
  std::atomic<common::MonoMicros> mono_;
  std::atomic<std::uint64_t> steps_{0};
  // Lock order: registry, then a waiter's mutex or the time. Reading the time takes only
  // time_mutex_, so a thread may read it while holding its own mutex.
  mutable std::mutex time_mutex_;
  mutable std::mutex registry_mutex_;
  mutable std::list<Waiter> waiters_;  // guarded by registry_mutex_
};

}  // namespace kfaild::testing
