#include "server/drill/guards.h"

#include <catch2/catch.hpp>

using namespace kfaild;
using namespace kfaild::drill;

namespace {

kafka::ClusterSnapshot article() {
  kafka::ClusterSnapshot s;
  s.brokers = {{1, "h", 1}, {2, "h", 2}, {3, "h", 3}};
  kafka::TopicInfo orders{"orders", "", {{0, 1, {1, 2, 3}, {1, 2, 3}, ""},
                                         {1, 2, {2, 3, 1}, {2, 3, 1}, ""},
                                         {2, 3, {3, 1, 2}, {3, 1, 2}, ""}}};
  s.topics = {orders};
  return s;
}

GuardInput input(const kafka::ClusterSnapshot& s) {
  GuardInput in;
  in.target = 1;
  in.inventory = {1, 2, 3, 100};
  in.inventory_brokers = {1, 2, 3};
  in.cluster = &s;
  in.probe_topics = {"orders"};
  in.min_insync = {{"orders", 2}};
  for (std::int32_t p = 0; p < 3; ++p) in.probe.push_back({"orders", p, 20'000, false, 15'000, 18'000});
  in.gap_threshold_us = 100'000;
  return in;
}

}  // namespace

TEST_CASE("a healthy article cluster lets a drill of broker 1 go ahead", "[unit][drill]") {
  const auto s = article();
  CHECK_FALSE(checkGuards(input(s)));
}

TEST_CASE("each guard refuses with its own reason", "[unit][drill][reliability]") {
  auto s = article();
  auto in = input(s);
  in.active_drill = 12;
  CHECK(*checkGuards(in) == "drill 12 is running on this cluster");

  in = input(s);
  in.target = 7;
  CHECK(*checkGuards(in) == "node 7 is not in the cluster's inventory");

  auto fenced = article();
  fenced.brokers.pop_back();
  in = input(fenced);
  CHECK(*checkGuards(in) == "broker 3 is not registered (fenced or down)");

  auto shrunk = article();
  shrunk.topics[0].partitions[2].isr = {3, 2};
  in = input(shrunk);
  CHECK(*checkGuards(in) == "probe partition orders-2 is under-replicated (ISR 2 of 3)");

  auto single = article();
  single.topics.push_back({"single", "", {{0, 1, {1}, {1}, ""}}});
  in = input(single);
  CHECK_THAT(*checkGuards(in), Catch::Contains("would take 1 partition(s) offline (single-0)"));
  in.allow_unavailable = true;
  CHECK_FALSE(checkGuards(in));

  auto two = article();
  two.topics.push_back({"pairs", "", {{0, 1, {1, 2}, {1, 2}, ""}}});
  in = input(two);
  in.min_insync["pairs"] = 2;
  CHECK_THAT(*checkGuards(in), Catch::Contains("below min.insync.replicas (pairs-0)"));

  in = input(s);
  in.cluster_problem = "the cluster's metadata is unavailable";
  CHECK(*checkGuards(in) == "the cluster's metadata is unavailable");
}

TEST_CASE("a probe that is not measuring normally refuses the drill", "[unit][drill]") {
  const auto s = article();
  auto in = input(s);
  in.probe_problem = "setting_up (topic orders missing)";
  CHECK(*checkGuards(in) == "the probe is not probing: setting_up (topic orders missing)");

  in = input(s);
  in.probe[1].last_ack_age_us.reset();
  CHECK(*checkGuards(in) == "probe partition orders-1 has had no ack yet");

  in = input(s);
  in.probe[2].last_ack_age_us = 4'500'000;
  CHECK(*checkGuards(in) == "probe partition orders-2 has had no ack for 4.5 s: it is stalled already");

  // Acks come back but the consumer reads nothing: it is behind.
  in = input(s);
  in.probe[2].last_receive_age_us = 3'000'000;
  CHECK(*checkGuards(in) == "probe partition orders-2 has read nothing back for 3.0 s: its consumer is behind");
  in.probe[2].last_receive_age_us.reset();
  CHECK(*checkGuards(in) == "probe partition orders-2 has read nothing back yet");

  // The oldest message without an ack was sent 56 s ago: the acks seen now are of old messages.
  in = input(s);
  in.probe[0].backlog_us = 56'000'000;
  const auto reason = checkGuards(in);
  REQUIRE(reason);
  CHECK(reason->find("the probe of orders-0 is 56.0 s behind") == 0);

  // Holding back sends at the outstanding bound: behind, whatever the age.
  in = input(s);
  in.probe[1].holding = true;
  const auto holding = checkGuards(in);
  REQUIRE(holding);
  CHECK(holding->find("the probe of orders-1 is 0.0 s behind (oldest message without an ack, sends held back)") == 0);

  // Up to the limit is fine.
  in = input(s);
  in.probe[0].backlog_us = kMaxProbeBacklogUs;
  in.probe[0].last_ack_age_us = 900'000;
  CHECK_FALSE(checkGuards(in));
}
