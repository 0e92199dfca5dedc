#include "server/observe/metadata_diff.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace metadata_diff_test {

using namespace kfaild;

namespace {

kafka::ClusterSnapshot articleCluster() {
  kafka::ClusterSnapshot s;
  s.brokers = {{1, "127.0.0.1", 19091}, {2, "127.0.0.1", 19092}, {3, "127.0.0.1", 19093}};
  kafka::TopicInfo orders;
  orders.name = "orders";
  orders.partitions = {{0, 1, {1, 2, 3}, {1, 2, 3}, ""},
                       {1, 2, {2, 3, 1}, {2, 3, 1}, ""},
                       {2, 3, {3, 1, 2}, {3, 1, 2}, ""}};
  s.topics.push_back(orders);
  return s;
}

}  // namespace

TEST_CASE("fencing broker 1 shows as broker gone, a leader change on p0 and ISR shrinks everywhere",
          "[unit][observe]") {
  const auto before = articleCluster();
  auto after = before;
  after.brokers.erase(after.brokers.begin());
  after.topics[0].partitions[0] = {0, 2, {1, 2, 3}, {2, 3}, ""};
  after.topics[0].partitions[1] = {1, 2, {2, 3, 1}, {2, 3}, ""};
  after.topics[0].partitions[2] = {2, 3, {3, 1, 2}, {3, 2}, ""};
  after.brokers_at_us = 42;
  after.topics[0].answered_at_us = 42;

  const auto events = observe::diffSnapshots(before, after, 1);
  REQUIRE(events.size() == 5);
  CHECK(events[0].kind == "broker_gone");
  CHECK(*events[0].broker == 1);
  CHECK(events[1].kind == "leader_change");
  CHECK(*events[1].partition == 0);
  CHECK(*events[1].broker == 2);
  const auto detail = nlohmann::json::parse(events[1].detail);
  CHECK(detail["from"] == 1);
  CHECK(detail["to"] == 2);
  for (std::size_t i = 2; i < 5; ++i) {
    CHECK(events[i].kind == "isr_shrink");
    CHECK(*events[i].broker == 1);
    CHECK(events[i].t_us == 42);
    CHECK(events[i].source == "metadata");
  }
}

TEST_CASE("a broker rejoining the ISR is an ISR expansion, the leader stays", "[unit][observe]") {
  auto before = articleCluster();
  before.topics[0].partitions[0] = {0, 2, {1, 2, 3}, {2, 3}, ""};
  auto after = before;
  after.topics[0].partitions[0].isr = {2, 3, 1};
  const auto events = observe::diffSnapshots(before, after, 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == "isr_expand");
  CHECK(*events[0].broker == 1);
}

TEST_CASE("identical snapshots make no events", "[unit][observe]") {
  CHECK(observe::diffSnapshots(articleCluster(), articleCluster(), 1).empty());
}

TEST_CASE("two topics answered at different times give their events different times",
          "[unit][observe]") {
  auto before = articleCluster();
  auto payments = before.topics[0];
  payments.name = "payments";
  before.topics.push_back(payments);
  auto after = before;
  // Broker 1 is fenced between the two per-topic answers of one poll: the first answer (orders,
  // at 1000) still lists it, the second (payments, 900 ms later) no longer does.
  after.brokers.erase(after.brokers.begin());
  after.brokers_at_us = 901'000;
  after.topics[0].answered_at_us = 1'000;
  after.topics[0].partitions[0].leader = 2;
  after.topics[1].answered_at_us = 901'000;
  after.topics[1].partitions[0] = {0, 2, {1, 2, 3}, {2, 3}, ""};

  const auto events = observe::diffSnapshots(before, after, 1);
  REQUIRE(events.size() == 4);
  CHECK(events[0].kind == "broker_gone");
  CHECK(events[0].t_us == 901'000);
  CHECK(events[1].kind == "leader_change");
  CHECK(*events[1].topic == "orders");
  CHECK(events[1].t_us == 1'000);
  CHECK(events[2].kind == "leader_change");
  CHECK(*events[2].topic == "payments");
  CHECK(events[2].t_us == 901'000);
  CHECK(events[3].kind == "isr_shrink");
  CHECK(*events[3].topic == "payments");
  CHECK(events[3].t_us == 901'000);
}

TEST_CASE("a new active controller is a controller change with the new leader epoch",
          "[unit][observe]") {
  kafka::QuorumInfo before;
  before.leader_id = 100;
  before.leader_epoch = 3;
  before.voters = {{100, 50, -1, 0}, {101, 50, 0, 0}};
  auto after = before;
  after.leader_id = 101;
  after.leader_epoch = 4;

  const auto event = observe::diffQuorum(before, after, 7, 5'000);
  REQUIRE(event.has_value());
  CHECK(event->kind == "controller_change");
  CHECK(event->source == "metadata");
  CHECK(event->cluster == 7);
  CHECK(event->t_us == 5'000);
  CHECK(*event->broker == 101);
  CHECK(nlohmann::json::parse(event->detail) ==
        nlohmann::json{{"from", 100}, {"to", 101}, {"epoch", 4}});
}

TEST_CASE("the same controller elected again in a new epoch is a controller change too",
          "[unit][observe]") {
  kafka::QuorumInfo before;
  before.leader_id = 100;
  before.leader_epoch = 3;
  auto after = before;
  after.high_watermark = 99;
  CHECK_FALSE(observe::diffQuorum(before, after, 1, 0).has_value());

  after.leader_epoch = 4;
  const auto again = observe::diffQuorum(before, after, 1, 0);
  REQUIRE(again.has_value());
  CHECK(nlohmann::json::parse(again->detail) ==
        nlohmann::json{{"from", 100}, {"to", 100}, {"epoch", 4}});

  auto leaderless = before;
  leaderless.leader_id = -1;
  leaderless.leader_epoch = 4;
  const auto lost = observe::diffQuorum(before, leaderless, 1, 0);
  REQUIRE(lost.has_value());
  CHECK_FALSE(lost->broker.has_value());
  CHECK(nlohmann::json::parse(lost->detail)["to"] == -1);
}

}  // namespace metadata_diff_test
