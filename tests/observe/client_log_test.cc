#include "server/observe/client_log.h"

#include <catch2/catch.hpp>

namespace client_log_test {

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
  const auto u =
      parseLeaderUpdate("LEADER", "orders [0]: applying leader-id update 1 -> 2 (epoch 7)");
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

TEST_CASE(
    "a leader librdkafka forgot before naming the new one is the update's from, per client and "
    "partition",
    "[unit][observe]") {
  // The producer's lines of a kill of broker 1 on the lab: broker 1 named at start, then, after
  // "broker is down: re-query", the new leader named from -1.
  ClientLeaderMemory memory;
  const auto line = [&](std::string_view client, std::string_view text, bool* restored = nullptr) {
    auto u = parseLeaderUpdate("BROKER", text);
    REQUIRE(u);
    return memory.apply(client, *u, restored);
  };
  bool restored = true;
  auto first = line("kfaild-lab#producer-3",
                    "[thrd:main]: t [0]: leader -1 epoch -1 -> leader 1 epoch 0", &restored);
  CHECK(first.from_leader == -1);  // nothing named before: -1 stands
  CHECK_FALSE(restored);
  line("kfaild-lab#producer-3", "[thrd:main]: t [1]: leader -1 epoch -1 -> leader 2 epoch 0");
  line("kfaild-lab#consumer-4", "[thrd:main]: t [0]: leader -1 epoch -1 -> leader 1 epoch 0");

  const auto moved = line("kfaild-lab#producer-3",
                          "[thrd:main]: t [0]: leader -1 epoch -1 -> leader 2 epoch 1", &restored);
  CHECK(restored);
  CHECK(moved.from_leader == 1);
  CHECK(moved.from_epoch == 0);
  CHECK(moved.to_leader == 2);
  CHECK(moved.to_epoch == 1);

  // The consumer keeps its own memory: its line says the old leader itself.
  const auto consumer = line("kfaild-lab#consumer-4",
                             "[thrd:main]: t [0]: leader 1 epoch 0 -> leader 2 epoch 1", &restored);
  CHECK_FALSE(restored);
  CHECK(consumer.from_leader == 1);

  // Back to the leader it last named: -1 stands (no change to report as one).
  line("kfaild-lab#producer-3", "[thrd:main]: t [1]: leader 2 epoch 0 -> leader -1 epoch -1");
  const auto same = line("kfaild-lab#producer-3",
                         "[thrd:main]: t [1]: leader -1 epoch -1 -> leader 2 epoch 1", &restored);
  CHECK_FALSE(restored);
  CHECK(same.from_leader == -1);
}

TEST_CASE("the client role is read from librdkafka's handle name", "[unit][observe]") {
  CHECK(clientRole("kfaild-lab#producer-1") == "producer");
  CHECK(clientRole("kfaild-lab#consumer-2") == "consumer");
  CHECK(clientRole("plain") == "plain");
}

TEST_CASE("librdkafka's request timeout line names the broker, the request and how long it waited",
          "[unit]") {
  // librdkafka's request timeout scan logs it at NOTICE
  // (facility REQTMOUT) with the broker handle's name "host:port/ID" after the thread prefix.
  const auto t = parseRequestTimeout(
      "REQTMOUT",
      "[thrd:10.77.0.11:9092/1]: 10.77.0.11:9092/1: Timed out ProduceRequest in flight (after "
      "30004ms, timeout #0)");
  REQUIRE(t);
  CHECK(t->broker == 1);
  CHECK(t->request == "Produce");
  CHECK(t->after_ms == 30004);
  const auto queued = parseRequestTimeout(
      "REQTMOUT",
      "127.0.0.1:29092/2: Timed out MetadataRequest in output queue (after 60001ms, timeout #1)");
  REQUIRE(queued);
  CHECK(queued->broker == 2);
  CHECK(queued->request == "Metadata");
}

TEST_CASE(
    "request timeout summaries, bootstrap handles and other facilities are not broker timeouts",
    "[unit]") {
  CHECK_FALSE(parseRequestTimeout(
      "REQTMOUT", "[thrd:10.77.0.11:9092/1]: 10.77.0.11:9092/1: Timed out 1+0+0 requests"));
  CHECK_FALSE(parseRequestTimeout("REQTMOUT",
                                  "10.77.0.11:9092/bootstrap: Timed out ApiVersionRequest in "
                                  "flight (after 10001ms, timeout #0)"));
  CHECK_FALSE(parseRequestTimeout(
      "FAIL", "10.77.0.11:9092/1: Timed out ProduceRequest in flight (after 30004ms, timeout #0)"));
}

}  // namespace client_log_test
