#include "server/drill/drill_spec.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "server/drill/errc.h"

namespace drill_spec_test {

using namespace kfaild::drill;
using nlohmann::json;

TEST_CASE("a drill request parses with defaults and round-trips", "[unit][drill]") {
  auto spec = parseDrillSpec(
      json::parse(R"({"fault":"pause","target":{"leader_of":{"topic":"orders","partition":0}},
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
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":"1; rm -rf /"}})"),
             Catch::StartsWith("target.broker:"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1,"random":true}})"),
             Catch::StartsWith("target:"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":-1}})"),
             Catch::StartsWith("target.broker:"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"options":{"pause_s":0}})"),
             Catch::Contains("options.pause_s: must be between 1 and 3600, got 0"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"options":{"repeat":2}})"),
             Catch::Contains("options.repeat: unknown field"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"extra":1})"),
             Catch::Contains("extra: unknown field"));
  CHECK_THAT(
      error(R"({"fault":"kill","target":{"broker":1},"options":{"allow_unavailable":"yes"}})"),
      Catch::Contains("options.allow_unavailable: must be true or false"));
  CHECK_THAT(error(R"({"fault":"kill","target":{"broker":1},"options":{"repeats":1e12}})"),
             Catch::Contains("options.repeats"));
}

TEST_CASE("leader_of.topic must be a Kafka topic name", "[unit][drill]") {
  auto topic = [](const std::string& name) {
    return parseDrillSpec(
        json{{"fault", "kill"}, {"target", {{"leader_of", {{"topic", name}, {"partition", 0}}}}}});
  };
  const std::vector<std::string> good_names{"orders",       "a",   "__consumer_offsets",
                                            "my.topic-1_x", "...", std::string(249, 'x')};
  for (const auto& good : good_names) {
    INFO(good);
    CHECK(topic(good));
  }
  const std::vector<std::string> bad_names{".",        "..",        std::string(250, 'x'),
                                           "orders/0", "orders 1",  "ordérs",
                                           "o\nrders", "$(reboot)", std::string("orders\0x", 8)};
  for (const auto& bad : bad_names) {
    INFO(bad);
    const auto r = topic(bad);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message,
               Catch::StartsWith("target.leader_of.topic: not a Kafka topic name"));
  }
  const auto empty = topic("");
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.error().message, Catch::StartsWith("target.leader_of.topic: required"));
  CHECK(isValidTopicName("orders"));
  CHECK_FALSE(isValidTopicName(".."));
}

TEST_CASE("allow_quorum_loss is off by default, parsed, and stored with the request",
          "[unit][drill]") {
  auto plain = parseDrillSpec(json::parse(R"({"fault":"kill","target":{"controller":true}})"));
  REQUIRE(plain);
  CHECK_FALSE(plain->options.allow_quorum_loss);
  auto allowed = parseDrillSpec(json::parse(
      R"({"fault":"kill","target":{"broker":100},"options":{"allow_quorum_loss":true}})"));
  REQUIRE(allowed);
  CHECK(allowed->options.allow_quorum_loss);
  CHECK(toJson(*allowed)["options"]["allow_quorum_loss"] == true);
  auto again = parseDrillSpec(toJson(*allowed));
  REQUIRE(again);
  CHECK(again->options.allow_quorum_loss);
  auto wrong = parseDrillSpec(
      json::parse(R"({"fault":"kill","target":{"broker":100},"options":{"allow_quorum_loss":1}})"));
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().message == "options.allow_quorum_loss: must be true or false");
}

TEST_CASE("a drill request's expect parses, round-trips, and names an unknown objective",
          "[unit][drill][verdict]") {
  auto spec = parseDrillSpec(json::parse(
      R"({"fault":"kill","target":{"broker":1},"expect":{"max_ack_stall_s":1,"by_role":{"leader":{"max_receive_stall_s":2.5}}}})"));
  REQUIRE(spec);
  REQUIRE(spec->expect);
  CHECK(spec->expect->stall.max_ack_stall_s == 1.0);
  CHECK(spec->expect->by_role.at("leader").max_receive_stall_s == 2.5);
  auto again = parseDrillSpec(toJson(*spec));
  REQUIRE(again);
  CHECK(toJson(*again) == toJson(*spec));
  CHECK_FALSE(toJson(*parseDrillSpec(json::parse(R"({"fault":"kill","target":{"broker":1}})")))
                  .contains("expect"));

  auto bad = parseDrillSpec(
      json::parse(R"({"fault":"kill","target":{"broker":1},"expect":{"max_ack":1}})"));
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::StartsWith("expect.max_ack: unknown key"));
  CHECK(bad.error().code == make_error_code(errc::invalid_request));
}

TEST_CASE("a gray fault request parses its own options, round-trips, and refuses another fault's",
          "[unit][drill]") {
  auto isolate = parseDrillSpec(json::parse(
      R"({"fault":"isolate","target":{"broker":2},"options":{"from":"brokers","mode":"reject","duration_s":40}})"));
  REQUIRE(isolate);
  CHECK(isolate->fault == FaultType::kIsolate);
  CHECK(isolate->options.from == kfaild::fault::IsolateFrom::brokers);
  CHECK(isolate->options.mode == kfaild::fault::IsolateMode::reject);
  CHECK(isolate->options.duration_s == 40);
  auto again = parseDrillSpec(toJson(*isolate));
  REQUIRE(again);
  CHECK(toJson(*again) == toJson(*isolate));
  CHECK_FALSE(toJson(*isolate)["options"].contains("rate"));

  auto defaults = parseDrillSpec(json::parse(R"({"fault":"isolate","target":{"broker":2}})"));
  REQUIRE(defaults);
  CHECK(defaults->options.from == kfaild::fault::IsolateFrom::all);
  CHECK(defaults->options.mode == kfaild::fault::IsolateMode::drop);
  CHECK(defaults->options.duration_s == 30);

  auto throttle = parseDrillSpec(
      json::parse(R"({"fault":"throttle","target":{"broker":2},"options":{"rate":"10mbit"}})"));
  REQUIRE(throttle);
  CHECK(throttle->options.rate_bytes_per_second == 1'250'000);
  CHECK(parseDrillSpec(toJson(*throttle))->options.rate_bytes_per_second == 1'250'000);
  // A kill stored before gray faults existed still parses: no gray option is written for it.
  auto kill = parseDrillSpec(json::parse(R"({"fault":"kill","target":{"broker":1}})"));
  REQUIRE(kill);
  CHECK_FALSE(toJson(*kill)["options"].contains("duration_s"));
  REQUIRE(parseDrillSpec(toJson(*kill)));

  auto error = [](const char* text) {
    auto r = parseDrillSpec(json::parse(text));
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK(error(R"({"fault":"kill","target":{"broker":1},"options":{"duration_s":5}})") ==
        "options.duration_s: only for isolate, throttle, disk_full, disk_slow");
  CHECK(
      error(
          R"({"fault":"throttle","target":{"broker":1},"options":{"from":"all","rate":100000}})") ==
      "options.from: only for isolate");
  CHECK(error(R"({"fault":"throttle","target":{"broker":1}})").find("options.rate: required") == 0);
  CHECK(error(R"({"fault":"isolate","target":{"broker":1},"options":{"from":"zookeeper"}})") ==
        "options.from: must be one of quorum, brokers, clients, all");
  CHECK(error(R"({"fault":"isolate","target":{"broker":1},"options":{"mode":"slow"}})") ==
        "options.mode: must be drop or reject");
  CHECK(error(R"({"fault":"isolate","target":{"broker":1},"options":{"duration_s":0}})") ==
        "options.duration_s: must be between 1 and 3600, got 0");
  CHECK(error(R"({"fault":"throttle","target":{"broker":1},"options":{"rate":"fast"}})")
            .find("options.rate: ") == 0);
}

TEST_CASE("a throttle rate reads as bytes per second, kbit, mbit, gbit, kbytes and mbytes",
          "[unit][drill]") {
  CHECK(parseRate("125000") == 125'000u);
  CHECK(parseRate("500kbit") == 62'500u);
  CHECK(parseRate("10mbit") == 1'250'000u);
  CHECK(parseRate("1gbit") == 125'000'000u);
  CHECK(parseRate("64kbytes") == 65'536u);
  CHECK(parseRate("2mbytes") == 2'097'152u);
  CHECK_FALSE(parseRate("100"));  // below 1 kbit/s
  CHECK_FALSE(parseRate("10 mbit"));
  CHECK_FALSE(parseRate("mbit"));
  CHECK_FALSE(parseRate("1tbit"));
  CHECK_FALSE(parseRate("999999999999999"));
}

TEST_CASE("a throttle rate too large to compute is refused, not wrapped to a small one",
          "[unit][drill]") {
  // 18446744074 gbit × 10^9 is just past 2^64: wrapped, it was ~36 MB/s and passed the range check.
  CHECK_FALSE(parseRate("18446744074gbit"));
  CHECK_FALSE(parseRate("999999999999gbit"));
  CHECK_FALSE(parseRate("999999999999mbytes"));
  CHECK_FALSE(parseRate("101gbit"));  // just past 100 gbit/s, no wrap involved
  CHECK(parseRate("100gbit") == 12'500'000'000u);
  const auto spec =
      R"({"fault":"throttle","target":{"broker":1},"options":{"rate":"18446744074gbit"}})";
  CHECK_FALSE(parseDrillSpec(json::parse(spec)));
}

TEST_CASE("a compound drill's then parses, round-trips, and names what is wrong in it",
          "[unit][drill]") {
  auto spec = parseDrillSpec(json::parse(R"({"fault":"kill","target":{"controller":true},
      "then":{"fault":"stop","target":{"leader_of":{"topic":"orders","partition":2}},"after_s":2}})"));
  REQUIRE(spec);
  REQUIRE(spec->then);
  CHECK(spec->then->fault == FaultType::kStop);
  CHECK(spec->then->target.kind == TargetKind::kLeaderOf);
  CHECK(spec->then->target.partition == 2);
  CHECK(spec->then->after_s == 2);
  auto again = parseDrillSpec(toJson(*spec));
  REQUIRE(again);
  CHECK(toJson(*again) == toJson(*spec));
  CHECK(toJson(*spec)["then"] ==
        json::parse(R"({"fault":"stop","target":{"leader_of":{"topic":"orders","partition":2}},
                                                  "after_s":2})"));
  // The second fault as a drill of its own: its fault and target, the request's options.
  const auto second = secondSpec(*spec);
  CHECK(second.fault == FaultType::kStop);
  CHECK(second.target.kind == TargetKind::kLeaderOf);
  CHECK_FALSE(second.then);
  CHECK(second.options.grace_s == spec->options.grace_s);
  CHECK_FALSE(parseDrillSpec(json::parse(R"({"fault":"kill","target":{"broker":1}})"))->then);

  auto error = [](const char* text) {
    auto r = parseDrillSpec(json::parse(text));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == make_error_code(errc::invalid_request));
    return r.error().message;
  };
  CHECK(
      error(
          R"({"fault":"kill","target":{"broker":1},"then":{"fault":"kill","target":{"broker":2}}})") ==
      "then.after_s: required: seconds after the first fault");
  CHECK(
      error(
          R"({"fault":"kill","target":{"broker":1},"then":{"fault":"pause","target":{"broker":2},"after_s":1}})") ==
      "then.fault: required: kill or stop");
  CHECK(
      error(
          R"({"fault":"pause","target":{"broker":1},"then":{"fault":"kill","target":{"broker":2},"after_s":1}})") ==
      "then: only after a kill or a stop (a fault held and undone in between is not combined)");
  CHECK(
      error(
          R"({"fault":"kill","target":{"broker":1},"then":{"fault":"kill","target":{"brokr":2},"after_s":1}})") ==
      "then.target.brokr: unknown field");
  CHECK(error(R"({"fault":"kill","target":{"broker":1},"then":{"fault":"kill","after_s":1}})") ==
        "then.target: required: an object with exactly one of broker, leader_of, controller, "
        "random, coordinator_of");
  CHECK(
      error(
          R"({"fault":"kill","target":{"broker":1},"then":{"fault":"kill","target":{"broker":2},"after_s":-1}})") ==
      "then.after_s: must be between 0 and 600, got -1");
  CHECK(error(R"({"fault":"kill","target":{"broker":1},"options":{"observe_timeout_s":10},
                  "then":{"fault":"kill","target":{"broker":2},"after_s":10}})") ==
        "then.after_s: must be below options.observe_timeout_s (10)");
  CHECK(
      error(
          R"({"fault":"kill","target":{"broker":1},"then":{"fault":"kill","target":{"broker":2},"after_s":1,"x":1}})") ==
      "then.x: unknown field");
}

}  // namespace drill_spec_test
