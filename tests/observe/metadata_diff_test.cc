#include "server/observe/metadata_diff.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

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

  const auto events = observe::diffSnapshots(before, after, 1, 42);
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
  const auto events = observe::diffSnapshots(before, after, 1, 0);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == "isr_expand");
  CHECK(*events[0].broker == 1);
}

TEST_CASE("identical snapshots make no events", "[unit][observe]") {
  CHECK(observe::diffSnapshots(articleCluster(), articleCluster(), 1, 0).empty());
}
