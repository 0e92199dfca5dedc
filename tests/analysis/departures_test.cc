#include "server/analysis/departures.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace departures_test {

using namespace kfaild::analysis;
using kfaild::storage::Event;

namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000;
constexpr std::int64_t kSecond = 1'000'000;

Event event(std::int64_t t, const char* source, const char* kind,
            std::optional<std::int32_t> broker, nlohmann::json detail = nlohmann::json::object()) {
  Event e;
  e.t_us = t;
  e.source = source;
  e.kind = kind;
  e.broker = broker;
  e.detail = detail.dump();
  return e;
}

Event leaderChange(std::int64_t t, std::int32_t partition, std::int32_t from, std::int32_t to) {
  auto e = event(t, "metadata", "leader_change", to,
                 {{"from", from}, {"to", to}, {"since_us", t - 100'000}});
  e.topic = "probe";
  e.partition = partition;
  return e;
}

DepartureRules rules() {
  DepartureRules r;
  r.from_us = kT0;
  r.to_us = kT0 + 600 * kSecond;
  r.metadata_interval_us = 200'000;
  r.brokers = {1, 2, 3};
  // probe-0 prefers 1, probe-1 prefers 2, probe-2 prefers 3.
  r.preferred_leaders = {{"probe-0", 1}, {"probe-1", 2}, {"probe-2", 3}};
  return r;
}

}  // namespace

TEST_CASE("a fenced broker is one departure, timed by its fencing's log line", "[unit][analysis]") {
  const std::vector<Event> events{
      event(kT0 + 19 * kSecond, "broker_log", "fenced", 1),
      event(kT0 + 19 * kSecond + 150'000, "metadata", "broker_gone", 1),
      leaderChange(kT0 + 19 * kSecond + 150'000, 0, 1, 2),
      event(kT0 + 40 * kSecond, "metadata", "broker_back", 1),
  };
  const auto found = findDepartures(events, rules());
  REQUIRE(found.size() == 1);
  CHECK(found[0].broker == 1);
  CHECK(found[0].kind == DepartureKind::kFenced);
  CHECK(std::string(toString(found[0].kind)) == "fenced");
  CHECK(found[0].at_us == kT0 + 19 * kSecond);
  CHECK(found[0].resolution_us == 1'000);
  CHECK(found[0].source == kfaild::common::EventSource::kBrokerLog);
  CHECK(found[0].back_at_us == kT0 + 40 * kSecond);
}

TEST_CASE("a controlled shutdown is named by its log line even after the metadata showed it",
          "[unit][analysis]") {
  // The log lines are read after the window: their events come in last, out of order.
  const std::vector<Event> events{
      leaderChange(kT0 + 10 * kSecond + 100'000, 1, 2, 3),
      event(kT0 + 11 * kSecond, "metadata", "broker_gone", 2),
      event(kT0 + 10 * kSecond, "broker_log", "controlled_shutdown", 2),
  };
  const auto found = findDepartures(events, rules());
  REQUIRE(found.size() == 1);
  CHECK(found[0].broker == 2);
  CHECK(found[0].kind == DepartureKind::kControlledShutdown);
  CHECK(found[0].at_us == kT0 + 10 * kSecond);
  CHECK(found[0].kind_at_us == kT0 + 10 * kSecond);
  CHECK_FALSE(found[0].back_at_us);
}

TEST_CASE(
    "a broker gone from the metadata without a log line is unregistered, at the poll's "
    "resolution",
    "[unit][analysis]") {
  const std::vector<Event> events{event(kT0 + 5 * kSecond, "metadata", "broker_gone", 3)};
  const auto found = findDepartures(events, rules());
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == DepartureKind::kUnregistered);
  CHECK(found[0].resolution_us == 200'000);
  CHECK(found[0].event == kfaild::common::EventKind::kBrokerGone);
}

TEST_CASE("two departures in one window are told apart by the broker's return",
          "[unit][analysis]") {
  const std::vector<Event> events{
      event(kT0 + 10 * kSecond, "broker_log", "controlled_shutdown", 1),
      event(kT0 + 11 * kSecond, "metadata", "broker_gone", 1),
      event(kT0 + 30 * kSecond, "metadata", "broker_back", 1),
      event(kT0 + 50 * kSecond, "broker_log", "controlled_shutdown", 2),
      event(kT0 + 51 * kSecond, "metadata", "broker_gone", 2),
      event(kT0 + 70 * kSecond, "metadata", "broker_back", 2),
      // Broker 1 again: a departure of its own, after it came back.
      event(kT0 + 90 * kSecond, "metadata", "broker_gone", 1),
  };
  const auto found = findDepartures(events, rules());
  REQUIRE(found.size() == 3);
  CHECK(found[0].broker == 1);
  CHECK(found[0].back_at_us == kT0 + 30 * kSecond);
  CHECK(found[1].broker == 2);
  CHECK(found[1].at_us == kT0 + 50 * kSecond);
  CHECK(found[2].broker == 1);
  CHECK(found[2].kind == DepartureKind::kUnregistered);
}

TEST_CASE(
    "a leader moved off a probe partition is a departure, a move back to the preferred "
    "leader is not",
    "[unit][analysis]") {
  const std::vector<Event> events{
      leaderChange(kT0 + 10 * kSecond, 0, 1, 2),  // 1 loses probe-0
      leaderChange(kT0 + 40 * kSecond, 0, 2, 1),  // back to its preferred leader: a rebalance
  };
  const auto found = findDepartures(events, rules());
  REQUIRE(found.size() == 1);
  CHECK(found[0].broker == 1);
  CHECK(found[0].kind == DepartureKind::kLeaderLost);
  CHECK(found[0].topic == "probe");
  CHECK(found[0].partition == 0);
  CHECK(found[0].resolution_us == 100'000);
}

TEST_CASE("a departure of a broker that leads no probe partition is still found",
          "[unit][analysis]") {
  auto r = rules();
  r.brokers = {1, 2, 3, 4};
  // Broker 4 holds no probe partition: only its unregistration and its fencing show it.
  const std::vector<Event> events{
      event(kT0 + 20 * kSecond, "metadata", "broker_gone", 4),
      event(kT0 + 20 * kSecond - 50'000, "broker_log", "fenced", 4),
      // Not a probe partition: no sign.
      [] {
        auto e = leaderChange(kT0 + 21 * kSecond, 0, 4, 2);
        e.topic = "orders";
        return e;
      }(),
  };
  const auto found = findDepartures(events, r);
  REQUIRE(found.size() == 1);
  CHECK(found[0].broker == 4);
  CHECK(found[0].kind == DepartureKind::kFenced);
  CHECK(found[0].at_us == kT0 + 20 * kSecond - 50'000);
}

TEST_CASE("a fencing a session timeout after a broker shut down at once does not make it a kill",
          "[unit][analysis]") {
  // Leading nothing, it was let go at once (the log's immediate shutdown, read as a controlled
  // one); the controller fenced it 9 s later all the same.
  const std::vector<Event> events{
      event(kT0 + 10 * kSecond + 50'000, "metadata", "broker_gone", 1),
      event(kT0 + 10 * kSecond, "broker_log", "controlled_shutdown", 1),
      event(kT0 + 19 * kSecond, "broker_log", "fenced", 1),
  };
  auto found = findDepartures(events, rules());
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == DepartureKind::kControlledShutdown);
  // Without the shutdown's line, the late fencing does not name it either.
  found = findDepartures({events[0], events[2]}, rules());
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == DepartureKind::kUnregistered);
  CHECK(found[0].at_us == kT0 + 10 * kSecond + 50'000);
}

TEST_CASE("signs outside the window or of brokers not counted are no departures",
          "[unit][analysis]") {
  const std::vector<Event> events{
      event(kT0 - kSecond, "metadata", "broker_gone", 1),
      event(kT0 + 700 * kSecond, "metadata", "broker_gone", 2),
      event(kT0 + 5 * kSecond, "metadata", "broker_gone", 100),
      event(kT0 + 5 * kSecond, "probe", "held_back", std::nullopt),
  };
  CHECK(findDepartures(events, rules()).empty());
}

}  // namespace departures_test
