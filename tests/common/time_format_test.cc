#include "server/common/time_format.h"

#include <catch2/catch.hpp>

namespace time_format_test {

using namespace kfaild::common;

TEST_CASE("timestamps are written as RFC 3339 UTC with microseconds and read back",
          "[unit][common]") {
  const WallMicros t = 1'764'476'310'123'456;  // 2025-11-30T04:18:30.123456Z
  CHECK(formatRfc3339(t) == "2025-11-30T04:18:30.123456Z");
  CHECK(parseRfc3339("2025-11-30T04:18:30.123456Z") == t);
  CHECK(parseRfc3339("2025-11-30T13:18:30.123456+09:00") == t);
  CHECK(parseRfc3339("2025-11-30T04:18:30Z") == t - 123'456);
  CHECK(formatRfc3339(0) == "1970-01-01T00:00:00.000000Z");
}

TEST_CASE("malformed timestamps are refused", "[unit][common]") {
  CHECK_FALSE(parseRfc3339("2025-11-30 04:18:30Z"));
  CHECK_FALSE(parseRfc3339("2025-13-30T04:18:30Z"));
  CHECK_FALSE(parseRfc3339("2025-11-30T04:18:30"));
  CHECK_FALSE(parseRfc3339("2025-11-30T04:18:30.Z"));
  CHECK_FALSE(parseRfc3339("yesterday"));
}

}  // namespace time_format_test
