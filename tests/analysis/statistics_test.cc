#include "server/analysis/statistics.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace statistics_test {

using namespace kfaild::analysis;
using nlohmann::json;

namespace {

json partition(int p, const char* role, json ack_stall, json phases = json::object()) {
  return {{"topic", "orders"},
          {"partition", p},
          {"role", role},
          {"ack", {{"outcome", ack_stall.is_null() ? "none" : "stall"}, {"stall", ack_stall}}},
          {"receive", {{"outcome", "none"}, {"stall", nullptr}}},
          {"phases", phases}};
}

json stall(std::int64_t us, bool open = false) {
  return {{"start_us", 0}, {"end_us", us}, {"duration_us", us}, {"open", open}};
}

StoredDrill drill(std::int64_t id, const char* fault, std::vector<json> runs) {
  return {id, "lab", fault, id * 1'000'000, json{{"runs", runs}}};
}

json run(int n, std::int64_t fault_us, std::vector<json> partitions, const char* state = "done") {
  return {{"run", n},
          {"state", state},
          {"fault_us", fault_us},
          {"analysis", {{"partitions", partitions}}}};
}

}  // namespace

TEST_CASE("statistics group runs by partition role and fault and keep each trend oldest first",
          "[unit][analysis]") {
  const std::vector<StoredDrill> drills = {
      drill(1, "kill",
            {run(1, 100,
                 {partition(0, "leader", stall(9'400'000), {{"detection_us", 8'300'000}}),
                  partition(1, "follower", stall(8'600'000))})}),
      drill(2, "kill",
            {run(1, 200,
                 {partition(0, "leader", stall(10'200'000), {{"detection_us", 8'900'000}}),
                  partition(1, "follower", stall(8'400'000))})}),
      drill(3, "stop",
            {run(1, 300,
                 {partition(0, "leader", stall(300'000)), partition(1, "follower", nullptr)})}),
  };
  const auto stats = statisticsOf(drills, {});
  CHECK(stats.runs_used == 3);
  REQUIRE(stats.groups.size() == 4);
  const auto& kill_leader = stats.groups[0];  // (lab, orders, 0, leader, kill) sorts first
  CHECK(kill_leader.fault == "kill");
  CHECK(kill_leader.role == "leader");
  CHECK(kill_leader.ack == std::vector<std::int64_t>{9'400'000, 10'200'000});
  CHECK(kill_leader.detection == std::vector<std::int64_t>{8'300'000, 8'900'000});
  REQUIRE(kill_leader.trend.size() == 2);
  CHECK(kill_leader.trend[0].drill == 1);
  CHECK(kill_leader.trend[1].at_us == 200);
  // A follower of a graceful stop whose longest gap was noise: a trend point without a stall.
  const auto& stop_follower = stats.groups[3];
  CHECK(stop_follower.fault == "stop");
  CHECK(stop_follower.ack.empty());
  REQUIRE(stop_follower.trend.size() == 1);
  CHECK_FALSE(stop_follower.trend[0].ack_stall_us);
}

TEST_CASE("statistics leave out open stalls runs not done and partitions the filter excludes",
          "[unit][analysis]") {
  const std::vector<StoredDrill> drills = {
      drill(1, "kill",
            {run(1, 100, {partition(0, "sole_replica", stall(120'000'000, true))}),
             run(2, 200, {partition(0, "leader", stall(9'000'000))}, "failed")}),
      drill(2, "kill",
            {run(1, 300,
                 {partition(0, "leader", stall(9'500'000)),
                  partition(2, "follower", stall(8'000'000))})}),
      {4, "lab", "kill", 0, json("not an object")},
  };
  StatisticsFilter filter;
  filter.role = "leader";
  const auto leaders = statisticsOf(drills, filter);
  REQUIRE(leaders.groups.size() == 1);
  CHECK(leaders.groups[0].ack == std::vector<std::int64_t>{9'500'000});
  CHECK(leaders.runs_used == 1);
  const auto all = statisticsOf(drills, {});
  const auto sole = std::find_if(all.groups.begin(), all.groups.end(),
                                 [](const auto& g) { return g.role == "sole_replica"; });
  REQUIRE(sole != all.groups.end());
  CHECK(sole->ack.empty());  // an open stall is a lower bound, not a figure
  CHECK(sole->trend.size() == 1);
}

TEST_CASE("statistics group each client profile's view apart, the primary's named by the run",
          "[unit][analysis]") {
  auto one = run(1, 100, {partition(0, "leader", stall(8'300'000))});
  one["profile"] = "librdkafka";
  one["profiles"] =
      json::array({{{"profile", "java"},
                    {"client", "java"},
                    {"analysis", {{"partitions", {partition(0, "leader", stall(9'100'000))}}}}},
                   {{"profile", "broken"}, {"client", "java"}, {"problem", "not analysed"}}});
  auto old = run(1, 50, {partition(0, "leader", stall(8'000'000))});  // before profiles
  const auto stats = statisticsOf({drill(1, "kill", {old}), drill(2, "kill", {one})}, {});
  CHECK(stats.runs_used == 2);
  REQUIRE(stats.groups.size() == 3);
  CHECK(stats.groups[0].profile.empty());
  CHECK(stats.groups[0].ack == std::vector<std::int64_t>{8'000'000});
  CHECK(stats.groups[1].profile == "java");
  CHECK(stats.groups[1].ack == std::vector<std::int64_t>{9'100'000});
  CHECK(stats.groups[2].profile == "librdkafka");
  CHECK(stats.groups[2].ack == std::vector<std::int64_t>{8'300'000});
}

TEST_CASE("a distribution gives nearest-rank percentiles", "[unit][analysis]") {
  CHECK_FALSE(distributionOf({}));
  const auto d =
      distributionOf({5, 1, 4, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20});
  REQUIRE(d);
  CHECK(d->min == 1);
  CHECK(d->median == 10);
  CHECK(d->p95 == 19);
  CHECK(d->max == 20);
  CHECK(d->count == 20);
}

TEST_CASE("statistics never take a phase negative and leave out one the fault time could not tell",
          "[unit][analysis]") {
  const std::vector<StoredDrill> drills = {
      // Stored before phases below their resolution were reported as such.
      drill(1, "kill",
            {run(1, 100,
                 {partition(0, "leader", stall(9'400'000),
                            {{"detection_us", 8'300'000}, {"discovery_us", -43'000}})})}),
      drill(2, "kill",
            {run(1, 200,
                 {partition(0, "leader", stall(9'300'000),
                            {{"detection_us", 300'000},
                             {"discovery_us", 20'000},
                             {"inconclusive", {{"detection", "the fault time is uncertain"}}}})})}),
  };
  const auto stats = statisticsOf(drills, {});
  REQUIRE(stats.groups.size() == 1);
  CHECK(stats.groups[0].discovery == std::vector<std::int64_t>{0, 20'000});
  CHECK(stats.groups[0].detection == std::vector<std::int64_t>{8'300'000});
}

}  // namespace statistics_test
