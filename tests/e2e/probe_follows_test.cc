// The probe on the lab keeps measuring through what happens to the probe itself: a partition added
// to its topic (issue 25, item 6) and a fatal error of its idempotent producer (item 9).

#include <librdkafka/rdkafka.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "server/common/clock.h"
#include "server/kafka/client.h"
#include "server/probe/probe_runner.h"
#include "storage/sqlite_store.h"
#include "tests/e2e/e2e_support.h"

namespace kfaild::e2e::probe_follows_test {
namespace {

// Grows `topic` to `partitions` with the admin API (CreatePartitions), as an operator would.
void addPartitions(const std::string& topic, int partitions) {
  kafka::ClientOptions options;
  options.bootstrap = testing::labBootstrap();
  auto client = kafka::createClient(RD_KAFKA_PRODUCER, options);
  REQUIRE(client.ok());
  char error[512] = "";
  rd_kafka_NewPartitions_t* grow =
      rd_kafka_NewPartitions_new(topic.c_str(), partitions, error, sizeof error);
  REQUIRE(grow != nullptr);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(client->get());
  rd_kafka_CreatePartitions(client->get(), &grow, 1, nullptr, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 30'000);
  REQUIRE(event != nullptr);
  const auto* result = rd_kafka_event_CreatePartitions_result(event);
  REQUIRE(result != nullptr);
  std::size_t count = 0;
  const rd_kafka_topic_result_t** topics = rd_kafka_CreatePartitions_result_topics(result, &count);
  REQUIRE(count == 1);
  INFO(rd_kafka_topic_result_error_string(topics[0]));
  CHECK(rd_kafka_topic_result_error(topics[0]) == RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_event_destroy(event);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewPartitions_destroy(grow);
}

template <typename Pred>
bool eventually(std::chrono::seconds limit, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(200ms);
  }
  return pred();
}

}  // namespace

TEST_CASE(
    "a partition added to the probe topic is probed within a poll and a kill drill after it is "
    "not made inconclusive by it",
    "[e2e][probe]") {
  Lab lab;
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  addPartitions(lab.topic, 4);
  // Probed: its samples reach the database, and the probe says when it took it up.
  REQUIRE(eventually(60s, [&] { return storedSamples(lab.db, lab.topic, 3).size() >= 50; }));
  const auto added_at = sqlValue(lab.db,
                                 "SELECT t_us FROM events WHERE source = 'probe' AND kind = "
                                 "'partition_added' AND topic = '" +
                                     lab.topic + "' AND partition = 3");
  INFO("kfaild log:\n" << tail(readAll(kfaild.log)));
  REQUIRE_FALSE(added_at.empty());
  // The consumer reads it from its beginning: every probe message is read back.
  const auto samples = storedSamples(lab.db, lab.topic, 3);
  std::size_t received = 0;
  for (const auto& s : samples) received += s.receive_us ? 1 : 0;
  CHECK(received == samples.size());

  const auto id =
      startDrill(kfaild, R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2}})");
  const auto drill = kfaild.waitForState(id, finished, 600s);
  INFO("drill: " << drill.dump().substr(0, 8000) << "\nkfaild log:\n" << tail(readAll(kfaild.log)));
  REQUIRE(drill["state"] == "done");
  const auto& analysis = drill["runs"][0]["analysis"];
  // Partition 3 is either analysed with its own baseline or left out with the reason; it never
  // makes the run inconclusive (before: no samples at all, "no acks in the window").
  bool excluded = false;
  for (const auto& x : analysis["excluded"]) {
    if (x["topic"] == lab.topic && x["partition"] == 3) {
      excluded = true;
      CHECK(x["reason"].get<std::string>().find("no baseline") != std::string::npos);
    }
  }
  if (!excluded) {
    const auto& p3 = partitionOf(analysis, lab.topic, 3);
    CHECK(p3["ack"]["outcome"] != "inconclusive");
    CHECK(p3["sent"].get<int>() > 0);
  }
  for (const auto& p : analysis["partitions"]) {
    INFO(p.dump());
    CHECK(p["ack"]["outcome"] != "inconclusive");
  }
  CHECK(drill["verdict"] != "inconclusive");
}

TEST_CASE(
    "a fatal error of the probe's idempotent producer on the lab is followed by a new producer "
    "that acks on every partition",
    "[e2e][probe]") {
  testing::TempDir dir;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(store);
  auto cluster_id = (*store)->ensureCluster("lab", testing::labBootstrap());
  REQUIRE(cluster_id);
  config::ClusterConfig cluster;
  cluster.name = "lab";
  cluster.bootstrap = testing::labBootstrap();
  cluster.observe.client_debug = "";
  cluster.probe.interval_us = 20'000;
  config::ProbeTopic topic;
  topic.name = "e2e-fatal-" + std::to_string(std::random_device{}() % 1'000'000);
  topic.create = config::TopicCreation{};
  topic.create->partitions = 3;
  topic.create->replica_assignment = {{1, 2, 3}, {2, 3, 1}, {3, 1, 2}};
  topic.create->configs = {{"min.insync.replicas", "2"}};
  cluster.probe.topics = {topic};

  common::SystemClock clock;
  probe::ProbeRunner runner(cluster, *cluster_id, **store, clock, {});
  REQUIRE(runner.start());
  REQUIRE(eventually(120s, [&] {
    const auto s = runner.status();
    if (s.phase != probe::ProbePhase::kProbing || s.partitions.size() != 3) return false;
    for (const auto& p : s.partitions) {
      if (p.counters.received < 100) return false;
    }
    return true;
  }));

  runner.raiseFatalErrorForTest("e2e: sequence state lost");
  REQUIRE(eventually(60s, [&] { return runner.status().producer_recreations == 1; }));
  std::vector<std::uint64_t> acked;
  for (const auto& p : runner.status().partitions) acked.push_back(p.counters.acked);
  REQUIRE(eventually(60s, [&] {
    const auto s = runner.status();
    for (std::size_t i = 0; i < s.partitions.size(); ++i) {
      if (s.partitions[i].counters.acked < acked[i] + 100) return false;
      if (s.partitions[i].counters.received < acked[i] + 100) return false;
    }
    return true;
  }));
  CHECK(runner.status().phase == probe::ProbePhase::kProbing);
  runner.stop();
  (*store)->flush();

  storage::EventQuery q;
  q.cluster = *cluster_id;
  q.source = "probe";
  q.kind = "producer_recreated";
  auto events = (*store)->events(q);
  REQUIRE(events);
  REQUIRE(events->size() == 1);
  CHECK(events->front().detail.find("e2e: sequence state lost") != std::string::npos);
  for (const auto& p : runner.status().partitions) {
    CHECK(p.counters.duplicated == 0);
    CHECK(p.counters.lost == 0);
  }
}

}  // namespace kfaild::e2e::probe_follows_test
