#include "server/observe/client_log.h"

#include <catch2/catch.hpp>

using namespace kfaild::observe;

TEST_CASE("librdkafka 2.14.2's leader update line is recognised", "[unit][observe]") {
  // Exactly as the log callback receives it from rd_kafka_toppar_leader_update() (facility
  // BROKER, debug context topic, thread name prefix on by default).
  const auto u =
      parseLeaderUpdate("BROKER", "[thrd:main]: orders [0]: leader 1 epoch 0 -> leader 2 epoch 1");
  REQUIRE(u);
  CHECK(u->topic == "orders");
  CHECK(u->partition == 0);
  CHECK(u->from_leader == 1);
  CHECK(u->to_leader == 2);
  CHECK(u->from_epoch == 0);
  CHECK(u->to_epoch == 1);
  // The same line without the thread prefix (log.thread.name=false).
  CHECK(parseLeaderUpdate("BROKER", "orders [0]: leader 1 epoch 0 -> leader 2 epoch 1"));
}

TEST_CASE("the article's older 'applying leader-id update' line is recognised", "[unit][observe]") {
  const auto u = parseLeaderUpdate("LEADER", "orders [0]: applying leader-id update 1 -> 2 (epoch 7)");
  REQUIRE(u);
  CHECK(u->from_leader == 1);
  CHECK(u->to_leader == 2);
  CHECK(u->to_epoch == 7);
}

TEST_CASE("a metadata refresh that keeps the leader is not a leader update", "[unit][observe]") {
  CHECK_FALSE(parseLeaderUpdate("BROKER", "orders [2]: leader 3 epoch 4 -> leader 3 epoch 4"));
  CHECK_FALSE(parseLeaderUpdate("METADATA", "orders [0]: leader 1 epoch 0 -> leader 2 epoch 1"));
  CHECK_FALSE(parseLeaderUpdate("BROKER", "Topic orders [0]: migrating from broker 1 to 2"));
}

TEST_CASE("the client role is read from librdkafka's handle name", "[unit][observe]") {
  CHECK(clientRole("kfaild-lab#producer-1") == "producer");
  CHECK(clientRole("kfaild-lab#consumer-2") == "consumer");
  CHECK(clientRole("plain") == "plain");
}
