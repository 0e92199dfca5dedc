// SystemClock against a scripted kernel: its wall time stays the monotonic clock plus one offset
// through a small step of the system clock, the step is measured as drift, and a time read on
// the system clock (a broker log line's) is placed on kfaild's timebase with the drift in force
// when it was read. (A CI run saw a follower's partition ack 3.3 ms before the controller's log
// line fencing the broker, whose records had to come first.)

#include "server/common/clock.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace clock_test {

using namespace kfaild::common;

namespace {

class ScriptedTime final : public TimeSource {
 public:
  std::int64_t monotonicMicros() const override { return mono.load(); }
  std::int64_t realtimeMicros() const override { return real.load(); }
  void advance(std::int64_t us) {
    mono += us;
    real += us;
  }
  std::atomic<std::int64_t> mono{5'000'000};
  std::atomic<std::int64_t> real{1'800'000'000'000'000};
};

}  // namespace

TEST_CASE(
    "a step of the system clock below a second is measured as drift and broker-log times are "
    "placed "
    "with it",
    "[unit][clock]") {
  ScriptedTime t;
  SystemClock clock(t);
  const auto start = clock.wallNow();
  CHECK(start == 1'800'000'000'000'000);
  t.advance(10'000'000);
  const auto before_step = clock.wallNow();
  CHECK(clock.fromSystem(t.real) == before_step);  // no drift yet

  // The system clock steps 4 ms forward: kfaild's timebase does not follow (durations stay
  // monotonic, no step counted) but records the drift at its next reading.
  t.real += 4'000;
  t.advance(1'000);
  const auto after_step = clock.now();
  CHECK(after_step.wall == before_step + 1'000);
  CHECK(clock.steps() == 0);

  // A log line written now on the system clock, and one written before the step.
  t.advance(2'000'000);
  const auto log_now = t.real.load();
  CHECK(clock.fromSystem(log_now) == clock.wallNow());
  CHECK(clock.fromSystem(before_step) == before_step);
  CHECK(clock.toSystem(clock.wallNow()) == log_now);
  CHECK(clock.toSystem(before_step) == before_step);
  CHECK(clock.largestDrift(start, clock.wallNow()) == 4'000);
  CHECK(clock.largestDrift(start, before_step) == 0);

  // Back by 6 ms: the drift is −2 ms from then on, and the 4 ms stays in the window's largest.
  t.real -= 6'000;
  t.advance(500);
  const auto back = clock.wallNow();
  CHECK(clock.fromSystem(t.real) == back);
  CHECK(clock.largestDrift(start, back) == 4'000);
  CHECK(clock.largestDrift(back, back + 1) == -2'000);
}

TEST_CASE("a drift smaller than the slack is not recorded, a step over a second still is a step",
          "[unit][clock]") {
  ScriptedTime t;
  SystemClock clock(t);
  t.real += kDriftSlackUs;  // within the slack
  t.advance(1'000);
  const auto at = clock.wallNow();
  CHECK(clock.fromSystem(t.real) == at + kDriftSlackUs);
  CHECK(clock.largestDrift(0, at) == 0);

  t.real += 2'000'000;
  t.advance(1'000);
  const auto stepped = clock.wallNow();
  CHECK(clock.steps() == 1);
  CHECK(stepped == t.real);  // the offset taken again: no drift after a step
  CHECK(clock.fromSystem(t.real) == stepped);
}

TEST_CASE("many threads reading the clock through a drift record it once", "[unit][clock]") {
  ScriptedTime t;
  SystemClock clock(t);
  t.real += 3'000;
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      for (int n = 0; n < 1000; ++n) clock.now();
    });
  }
  for (auto& r : readers) r.join();
  CHECK(clock.largestDrift(0, clock.wallNow()) == 3'000);
  CHECK(clock.fromSystem(t.real) == clock.wallNow());
  CHECK(clock.steps() == 0);
}

namespace {

// A kernel whose reader is preempted for 5 ms right after its first realtime read.
class PreemptedOnce final : public TimeSource {
 public:
  std::int64_t monotonicMicros() const override {
    if (preempt_next) mono += 5'000;
    preempt_next = false;
    return mono;
  }
  std::int64_t realtimeMicros() const override {
    preempt_next = ++real_reads == 1;
    return mono + 1'700'000'000'000'000;
  }
  mutable std::int64_t mono = 1'000'000;
  mutable int real_reads = 0;
  mutable bool preempt_next = false;
};

}  // namespace

TEST_CASE(
    "a preemption while the clock takes its offset at start does not put its times off the system "
    "clock",
    "[unit][clock]") {
  PreemptedOnce t;
  SystemClock clock(t);
  CHECK(clock.wallNow() == t.realtimeMicros());
  CHECK(clock.largestDrift(0, clock.wallNow()) == 0);
}

}  // namespace clock_test
