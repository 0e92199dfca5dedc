#include "server/probe/pacer.h"

#include <catch2/catch.hpp>

namespace pacer_test {

using kfaild::probe::Pacer;

TEST_CASE("the pacer keeps a fixed grid of deadlines when the sender wakes on time",
          "[unit][probe]") {
  Pacer pacer(20'000, 1'000'000);
  for (int k = 0; k < 100; ++k) {
    REQUIRE(pacer.deadline() == 1'000'000 + k * 20'000);
    REQUIRE(pacer.fire(pacer.deadline() + 300) == 0);  // a little late, within the interval
  }
  CHECK(pacer.fired() == 100);
  CHECK(pacer.skipped() == 0);
  CHECK(pacer.maxLateness() == 300);
}

TEST_CASE("a sender that wakes late skips the missed ticks instead of sending a burst",
          "[unit][probe]") {
  Pacer pacer(20'000, 0);
  pacer.fire(0);
  REQUIRE(pacer.deadline() == 20'000);
  // The sender was descheduled for 1.005 s: 50 deadlines passed.
  const auto skipped = pacer.fire(1'025'000);
  CHECK(skipped == 50);
  // The next deadline is the next grid point, not now + interval: no drift.
  CHECK(pacer.deadline() == 1'040'000);
  CHECK(pacer.fire(1'040'000) == 0);
  CHECK(pacer.deadline() == 1'060'000);
  CHECK(pacer.skipped() == 50);
}

}  // namespace pacer_test
