#include "server/common/thread_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <thread>

namespace thread_priority_test {

using kfaild::common::raiseThisThreadPriority;
using kfaild::common::ThreadPriority;

namespace {

struct Seen {
  std::string described;
  int policy = -1;
  int nice = 0;
  int child_policy = -1;  // of a thread the raised thread then created
};

// On a thread of its own, so that the test process's threads keep their scheduling.
Seen raiseOnAThread(ThreadPriority wanted) {
  Seen seen;
  std::thread([&] {
    seen.described = raiseThisThreadPriority(wanted);
    seen.policy = sched_getscheduler(0);
    errno = 0;
    seen.nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
    std::thread([&] { seen.child_policy = sched_getscheduler(0); }).join();
  }).join();
  return seen;
}

}  // namespace

TEST_CASE(
    "a thread raised to realtime runs SCHED_FIFO, or says what it was refused and has the step "
    "below",
    "[unit]") {
  const auto seen = raiseOnAThread(ThreadPriority::kRealtime);
  INFO(seen.described);
  if (seen.described == "SCHED_FIFO 1") {
    CHECK(seen.policy == SCHED_FIFO);
    // What the sender creates afterwards would inherit it: the reason it raises itself last.
    CHECK(seen.child_policy == SCHED_FIFO);
  } else if (seen.described.rfind("nice -10 (SCHED_FIFO refused: ", 0) == 0) {
    CHECK(seen.policy == SCHED_OTHER);
    CHECK(seen.nice == -10);
  } else {
    CHECK_THAT(seen.described, Catch::StartsWith("normal (SCHED_FIFO refused: ") &&
                                   Catch::Contains(", nice -10 refused: "));
    CHECK(seen.policy == SCHED_OTHER);
    CHECK(seen.nice == getpriority(PRIO_PROCESS, 0));
  }
}

TEST_CASE("a thread raised to high gets nice -10 for itself alone, or says why not", "[unit]") {
  const int before = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  const auto seen = raiseOnAThread(ThreadPriority::kHigh);
  INFO(seen.described);
  CHECK(seen.policy == SCHED_OTHER);
  if (seen.described == "nice -10") {
    CHECK(seen.nice == -10);
  } else {
    CHECK_THAT(seen.described, Catch::StartsWith("normal (nice -10 refused: "));
    CHECK(seen.nice == before);
  }
  // The calling thread's own nice value is untouched.
  CHECK(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())) == before);
}

TEST_CASE("a thread left normal keeps its scheduling", "[unit]") {
  const auto seen = raiseOnAThread(ThreadPriority::kNormal);
  CHECK(seen.described == "normal");
  CHECK(seen.policy == SCHED_OTHER);
  CHECK(seen.nice == getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())));
}

}  // namespace thread_priority_test
