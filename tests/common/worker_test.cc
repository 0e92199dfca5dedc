#include "server/common/worker.h"

#include <pthread.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <future>
#include <stdexcept>
#include <string>

#include "tests/support/manual_clock.h"

namespace worker_test {

using kfaild::common::Worker;
using namespace std::chrono_literals;

TEST_CASE("a worker sleeping for an hour stops at once, at any moment, every time",
          "[unit][common]") {
  for (int i = 0; i < 300; ++i) {
    Worker worker;
    std::atomic<int> rounds{0};
    worker.start("kfaild:test", [&] {
      while (!worker.stopRequested()) {
        ++rounds;
        worker.sleepFor(std::chrono::hours(1));
      }
    });
    if (i % 3 == 1) std::this_thread::yield();
    if (i % 3 == 2) std::this_thread::sleep_for(std::chrono::microseconds(50));
    auto stopped = std::async(std::launch::async, [&worker] { worker.stop(); });
    INFO("iteration " << i);
    REQUIRE(stopped.wait_for(5s) == std::future_status::ready);
    CHECK(rounds <= 1);
  }
}

TEST_CASE("a worker waiting for work without a timeout is woken by work and by stop",
          "[unit][common]") {
  Worker worker;
  std::mutex mutex;
  std::deque<int> queue;  // guarded by mutex
  std::vector<int> done;  // worker thread only until stopped
  worker.start("kfaild:test", [&] {
    while (true) {
      std::unique_lock lock(mutex);
      if (!worker.wait(lock, [&] { return !queue.empty(); })) return;  // stop requested
      done.push_back(queue.front());
      queue.pop_front();
    }
  });
  for (int n = 0; n < 3; ++n) {
    {
      std::lock_guard lock(mutex);
      queue.push_back(n);
    }
    worker.wake();
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::lock_guard lock(mutex);
    if (queue.empty()) break;
  }
  auto stopped = std::async(std::launch::async, [&worker] { worker.stop(); });
  REQUIRE(stopped.wait_for(5s) == std::future_status::ready);
  CHECK(done == std::vector<int>{0, 1, 2});
  CHECK(worker.stopRequested());
}

TEST_CASE("a worker's thread carries its name, cut to Linux's 15 bytes", "[unit][common]") {
  auto name_of = [](std::string name) {
    Worker worker;
    std::promise<std::string> seen;
    worker.start(std::move(name), [&seen] {
      char buffer[32] = {};
      pthread_getname_np(pthread_self(), buffer, sizeof buffer);
      seen.set_value(buffer);
    });
    return seen.get_future().get();
  };
  CHECK(name_of("kfaild:send") == "kfaild:send");
  CHECK(name_of("kfaild:a-very-long-name") == "kfaild:a-very-l");
}

TEST_CASE("a worker whose loop throws reports what it was doing as failed and runs the loop again",
          "[unit][common]") {
  kfaild::testing::ManualClock clock;
  Worker worker(clock);
  std::atomic<int> runs{0};
  std::promise<std::string> failed;
  std::promise<void> second_run;
  worker.start(
      "kfaild:test",
      [&] {
        if (++runs == 1) throw std::runtime_error("invalid UTF-8 byte");
        second_run.set_value();
        while (worker.sleepFor(std::chrono::hours(1))) {
        }
      },
      [&failed](const std::string& what) { failed.set_value(what); });
  auto what = failed.get_future();
  REQUIRE(what.wait_for(5s) == std::future_status::ready);
  CHECK(what.get() == "invalid UTF-8 byte");
  // Not at once (a loop that throws every time would spin): after Worker::kRestartDelay.
  const auto started = clock.monoNow();
  auto again = second_run.get_future();
  while (again.wait_for(1ms) != std::future_status::ready) REQUIRE(clock.advanceToNextDeadline());
  CHECK(clock.monoNow() - started == std::chrono::microseconds(Worker::kRestartDelay).count());
  CHECK(runs == 2);
  auto stopped = std::async(std::launch::async, [&worker] { worker.stop(); });
  REQUIRE(stopped.wait_for(5s) == std::future_status::ready);
}

TEST_CASE(
    "a worker whose loop throws every time, with a failure hook that throws too, still stops at "
    "once",
    "[unit][common]") {
  Worker worker;
  std::atomic<int> runs{0};
  worker.start(
      "kfaild:test",
      [&runs] {
        ++runs;
        throw 42;  // not a std::exception
      },
      [](const std::string&) { throw std::logic_error("failing threw"); });
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (runs == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  auto stopped = std::async(std::launch::async, [&worker] { worker.stop(); });
  REQUIRE(stopped.wait_for(5s) == std::future_status::ready);
  CHECK(runs == 1);  // stopped within the restart delay
}

}  // namespace worker_test
