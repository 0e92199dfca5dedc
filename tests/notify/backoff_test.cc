#include "server/notify/backoff.h"

#include <catch2/catch.hpp>

namespace backoff_test {

using namespace kfaild;

TEST_CASE("retry delays double from initial up to max, jittered between half and all of it",
          "[unit][notify]") {
  config::RetryConfig r;
  r.initial_us = 2'000'000;
  r.max_us = 30'000'000;
  CHECK(notify::retryDelayUs(r, 1, 1.0) == 2'000'000);
  CHECK(notify::retryDelayUs(r, 1, 0.0) == 1'000'000);
  CHECK(notify::retryDelayUs(r, 2, 1.0) == 4'000'000);
  CHECK(notify::retryDelayUs(r, 3, 1.0) == 8'000'000);
  CHECK(notify::retryDelayUs(r, 4, 1.0) == 16'000'000);
  CHECK(notify::retryDelayUs(r, 5, 1.0) == 30'000'000);
  CHECK(notify::retryDelayUs(r, 500, 1.0) == 30'000'000);  // no overflow after many attempts
  CHECK(notify::retryDelayUs(r, 500, 0.5) == 22'500'000);
}

TEST_CASE("a notification is given up after max_attempts or past max_age", "[unit][notify]") {
  config::RetryConfig r;
  r.max_attempts = 3;
  r.max_age_us = 60'000'000;
  CHECK_FALSE(notify::giveUp(r, 2, 0, 10'000'000));
  CHECK(notify::giveUp(r, 3, 0, 10'000'000));
  CHECK(notify::giveUp(r, 1, 0, 60'000'001));
  CHECK_FALSE(notify::giveUp(r, 1, 0, 60'000'000));
}

}  // namespace backoff_test
