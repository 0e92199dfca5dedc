#include "server/drill/drill_spec.h"

#include <catch2/catch.hpp>

using namespace kfaild::drill;
using nlohmann::json;

TEST_CASE("a drill request parses with defaults and round-trips", "[unit][drill]") {
  auto spec = parseDrillSpec(json::parse(R"({"fault":"pause","target":{"leader_of":{"topic":"orders","partition":0}},
                                              "options":{"pause_s":12,"repeats":3}})"));
  REQUIRE(spec);
  CHECK(spec->fault == FaultType::kPause);
  CHECK(spec->target.kind == TargetKind::kLeaderOf);
  CHECK(spec->target.topic == "orders");
  CHECK(spec->options.pause_s == 12);
  CHECK(spec->options.repeats == 3);
  CHECK(spec->options.grace_s == 30);
  CHECK(spec->options.preferred_election);
  auto again = parseDrillSpec(toJson(*spec));
  REQUIRE(again);
  CHECK(toJson(*again) == toJson(*spec));
}

TEST_CASE("a bad drill request names the field that is wrong", "[unit][drill]") {
  auto error = [](const char* text) {
    auto r = parseDrillSpec(json::parse(text));
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK_THAT(error(R"({"fault":"nuke","target":{"broker":1}})"), Catch::StartsWith("fault:"));
  CHECK_THAT(error(R"({"fault":"kill"})"), Catch::StartsWith("target:"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":"1; rm -rf /"}})"), Catch::StartsWith("target.broker:"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1,"random":true}})"), Catch::StartsWith("target:"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":-1}})"), Catch::StartsWith("target.broker:"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"options":{"pause_s":0}})"),
             Catch::Contains("options.pause_s: must be between 1 and 3600, got 0"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"options":{"repeat":2}})"),
             Catch::Contains("options.repeat: unknown field"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"extra":1})"), Catch::Contains("extra: unknown field"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"options":{"allow_unavailable":"yes"}})"),
             Catch::Contains("options.allow_unavailable: must be true or false"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"options":{"repeats":1e12}})"),
             Catch::Contains("options.repeats"));
}
