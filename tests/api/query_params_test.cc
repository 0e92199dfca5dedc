#include "api/query_params.h"

#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "api/errc.h"

namespace kfaild::api::query_params_test {
namespace {

constexpr std::int64_t kNow = 1'700'000'000'000'000;
constexpr std::int64_t kHour = 3600LL * 1'000'000;

TEST_CASE("a parameter the endpoint does not take is an error naming it", "[unit][api]") {
  const QueryParams params = {{"limit", "5"}, {"colour", "red"}};
  const auto reader = QueryReader::create(params, {"limit", "from"});
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().code == errc::unknown_parameter);
  CHECK(reader.error().message.find("\"colour\"") != std::string::npos);
  CHECK(reader.error().message.find("limit, from") != std::string::npos);
}

TEST_CASE("a parameter given twice is an error", "[unit][api]") {
  const QueryParams params = {{"limit", "5"}, {"limit", "6"}};
  const auto reader = QueryReader::create(params, {"limit"});
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().code == errc::invalid_parameter);
  CHECK(reader.error().message == "limit: given more than once");
}

TEST_CASE("integers are parsed strictly and range-checked", "[unit][api]") {
  for (const std::string bad :
       {"", "0", "10001", "1.0", "+5", " 5", "5 ", "0x10", "five", "99999999999999999999", "-1"}) {
    INFO("limit=\"" << bad << "\"");
    const QueryParams params = {{"limit", bad}};
    const auto reader = QueryReader::create(params, {"limit"});
    REQUIRE(reader.ok());
    const auto limit = reader->integer("limit", 1, 10000);
    REQUIRE_FALSE(limit.ok());
    CHECK(limit.error().code == errc::invalid_parameter);
    CHECK(limit.error().message.rfind("limit: must be an integer between 1 and 10000, got", 0) ==
          0);
  }
  const QueryParams good = {{"limit", "10000"}};
  const auto reader = QueryReader::create(good, {"limit"});
  REQUIRE(reader.ok());
  CHECK(reader->integer("limit", 1, 10000).value() == 10000);
  CHECK_FALSE(reader->integer("partition", 0, 10).value().has_value());
}

TEST_CASE("the time range defaults to a window ending now", "[unit][api]") {
  const QueryParams none;
  const auto reader = QueryReader::create(none, {"from", "to"});
  REQUIRE(reader.ok());
  const auto range = reader->range(kNow, 24 * kHour, std::nullopt);
  REQUIRE(range.ok());
  CHECK(range->from_us == kNow - 24 * kHour);
  CHECK(range->to_us == kNow);
}

TEST_CASE("from and to take RFC 3339 times with any offset", "[unit][api]") {
  const QueryParams params = {{"from", "2023-11-14T22:13:20+01:00"},
                              {"to", "2023-11-14T22:13:20.5Z"}};
  const auto reader = QueryReader::create(params, {"from", "to"});
  REQUIRE(reader.ok());
  const auto range = reader->range(kNow, kHour, std::nullopt);
  REQUIRE(range.ok());
  CHECK(range->from_us == kNow - kHour);
  CHECK(range->to_us == kNow + 500'000);
}

TEST_CASE("bad times and too long ranges are errors naming the parameter", "[unit][api]") {
  SECTION("not a time") {
    const QueryParams params = {{"from", "yesterday"}};
    const auto range =
        QueryReader::create(params, {"from", "to"})->range(kNow, kHour, std::nullopt);
    REQUIRE_FALSE(range.ok());
    CHECK(range.error().message.rfind("from: must be an RFC 3339 date-time", 0) == 0);
  }
  SECTION("no offset") {
    const QueryParams params = {{"to", "2023-11-14T22:13:20"}};
    const auto range =
        QueryReader::create(params, {"from", "to"})->range(kNow, kHour, std::nullopt);
    REQUIRE_FALSE(range.ok());
    CHECK(range.error().message.rfind("to: ", 0) == 0);
  }
  SECTION("longer than allowed") {
    const QueryParams params = {{"from", "2023-11-13T22:13:19Z"}, {"to", "2023-11-14T22:13:20Z"}};
    const auto range = QueryReader::create(params, {"from", "to"})->range(kNow, kHour, 24 * kHour);
    REQUIRE_FALSE(range.ok());
    CHECK(range.error().message.find("spans 86401 s, more than the 86400 s allowed") !=
          std::string::npos);
  }
}

TEST_CASE("from at or after to is the empty range, not an error", "[unit][api]") {
  const QueryParams params = {{"from", "2023-11-14T22:13:20Z"}, {"to", "2023-11-14T22:13:20Z"}};
  const auto range = QueryReader::create(params, {"from", "to"})->range(kNow, kHour, 24 * kHour);
  REQUIRE(range.ok());
  CHECK(range->from_us == kNow);
  CHECK(range->to_us == kNow);
  // A missing `to` is now: `from` at now is the same empty range.
  const QueryParams at_now = {{"from", "2023-11-14T22:13:20Z"}};
  const auto defaulted =
      QueryReader::create(at_now, {"from", "to"})->range(kNow, kHour, std::nullopt);
  REQUIRE(defaulted.ok());
  CHECK(defaulted->from_us == defaulted->to_us);
  // `from` after `to`, given or defaulted to now, is as empty.
  const QueryParams after = {{"from", "2023-11-14T22:13:21Z"}};
  const auto inverted = QueryReader::create(after, {"from", "to"})->range(kNow, kHour, 24 * kHour);
  REQUIRE(inverted.ok());
  CHECK(inverted->from_us == kNow + 1'000'000);
  CHECK(inverted->to_us == kNow);
}

TEST_CASE("a day the month does not have is not a date", "[unit][api]") {
  const QueryParams bad = {{"from", "2023-02-29T00:00:00Z"}};
  CHECK_FALSE(QueryReader::create(bad, {"from"})->time("from").ok());
  const QueryParams april = {{"from", "2023-04-31T00:00:00Z"}};
  CHECK_FALSE(QueryReader::create(april, {"from"})->time("from").ok());
  const QueryParams leap = {{"from", "2024-02-29T00:00:00Z"}};
  CHECK(QueryReader::create(leap, {"from"})->time("from").ok());
}

TEST_CASE("topic names follow Kafka's rules", "[unit][api]") {
  CHECK(isTopicName("orders"));
  CHECK(isTopicName("a.b_c-D9"));
  CHECK(isTopicName(std::string(249, 'x')));
  CHECK_FALSE(isTopicName(std::string(250, 'x')));
  CHECK_FALSE(isTopicName(""));
  CHECK_FALSE(isTopicName("."));
  CHECK_FALSE(isTopicName(".."));
  CHECK_FALSE(isTopicName("a b"));
  CHECK_FALSE(isTopicName("a/b"));
}

TEST_CASE("enumerations and identifiers accept only their values", "[unit][api]") {
  const QueryParams params = {{"kind", "ACK"}, {"source", "metadata"}, {"event", "leader_change"}};
  const auto reader = QueryReader::create(params, {"kind", "source", "event"});
  REQUIRE(reader.ok());
  const auto kind = reader->oneOf("kind", {"ack", "receive"});
  REQUIRE_FALSE(kind.ok());
  CHECK(kind.error().message == "kind: must be one of ack, receive, got \"ACK\"");
  CHECK(reader->oneOf("source", {"metadata", "client"}).value() == "metadata");
  CHECK(reader->identifier("event").value() == "leader_change");
  CHECK_FALSE(reader->identifier("kind").ok());
}

}  // namespace
}  // namespace kfaild::api::query_params_test
