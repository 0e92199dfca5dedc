#include "server/common/pi_mutex.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace pi_mutex_test {

using kfaild::common::PiMutex;

namespace {

// The kernel's priority of a thread as it runs now (field 18 of /proc/self/task/<tid>/stat): 20 for
// an ordinary thread at nice 0, -2 for one at SCHED_FIFO 1, whether its own or inherited.
int runningPriority(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 18; ++i) fields >> field;  // fields 3..18
  return std::stoi(field);
}

struct Holder {
  int before = 0;           // the holder's priority before the real-time thread waited
  int while_waited = 1000;  // the lowest (most urgent) while it waited; 1000: no SCHED_FIFO here
};

// An ordinary thread holds `mutex`; a SCHED_FIFO 1 thread then waits for it.
template <typename Mutex>
Holder holderPriorityWhileARealtimeThreadWaits() {
  Mutex mutex;
  std::atomic<pid_t> holder_tid{0};
  std::atomic<bool> release{false};
  std::atomic<int> waiter_state{0};  // 1: about to lock, 2: locked, -1: no SCHED_FIFO
  std::thread holder([&] {
    std::lock_guard lock(mutex);
    holder_tid = gettid();
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (holder_tid == 0) std::this_thread::yield();
  Holder seen;
  seen.before = runningPriority(holder_tid);
  std::thread waiter([&] {
    sched_param param{};
    param.sched_priority = 1;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) != 0) {
      waiter_state = -1;
      return;
    }
    waiter_state = 1;
    std::lock_guard lock(mutex);
    waiter_state = 2;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (waiter_state != -1 && std::chrono::steady_clock::now() < until) {
    if (waiter_state == 1)
      seen.while_waited = std::min(seen.while_waited, runningPriority(holder_tid));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  release = true;
  holder.join();
  waiter.join();
  return seen;
}

}  // namespace

TEST_CASE("a PiMutex locks, refuses a second try_lock and unlocks", "[unit][common]") {
  PiMutex mutex;
  REQUIRE(mutex.try_lock());
  bool other = true;
  std::thread([&] { other = mutex.try_lock(); }).join();
  CHECK_FALSE(other);
  mutex.unlock();
  std::thread([&] {
    other = mutex.try_lock();
    if (other) mutex.unlock();
  }).join();
  CHECK(other);
  int counter = 0;
  std::thread a([&] {
    for (int i = 0; i < 100000; ++i) {
      std::lock_guard lock(mutex);
      ++counter;
    }
  });
  for (int i = 0; i < 100000; ++i) {
    std::lock_guard lock(mutex);
    ++counter;
  }
  a.join();
  CHECK(counter == 200000);
}

TEST_CASE(
    "an ordinary thread holding a PiMutex runs at the priority of the real-time thread waiting for "
    "it, "
    "one holding a std::mutex does not",
    "[unit][common]") {
  const auto with_pi = holderPriorityWhileARealtimeThreadWaits<PiMutex>();
  if (with_pi.while_waited == 1000) {
    WARN(
        "no SCHED_FIFO for this process (not root, no CAP_SYS_NICE): inheritance not observable "
        "here");
    return;
  }
  CHECK(with_pi.before >= 0);         // an ordinary thread: 20 at nice 0
  CHECK(with_pi.while_waited == -2);  // SCHED_FIFO 1: 99 - 1 - 100
  const auto plain = holderPriorityWhileARealtimeThreadWaits<std::mutex>();
  CHECK(plain.while_waited == plain.before);
}

}  // namespace pi_mutex_test
