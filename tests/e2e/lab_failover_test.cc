// The foundation's end-to-end check: the lab is a real Kafka cluster whose broker 1 can be
// killed, and the cluster reacts as Kafka does (leadership of partition 0 moves away).

#include <librdkafka/rdkafka.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <thread>

#include "server/kafka/admin.h"
#include "server/kafka/client.h"
#include "server/kafka/metadata.h"
#include "tests/support/lab.h"

namespace lab_failover_test {

using namespace kfaild;
using namespace std::chrono_literals;

namespace {

std::string uniqueTopic(const std::string& prefix) {
  std::random_device rd;
  return prefix + "-" + std::to_string(rd() % 1'000'000);
}

kafka::Handle client(rd_kafka_type_t type, std::map<std::string, std::string> extra = {}) {
  kafka::ClientOptions options;
  options.bootstrap = testing::labBootstrap();
  options.client_id = "kfaild-e2e";
  extra.emplace("allow.auto.create.topics", "false");
  auto handle = kafka::createClient(type, options, extra);
  REQUIRE(handle);
  return std::move(*handle);
}

template <typename Pred>
bool eventually(std::chrono::seconds limit, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return pred();
}

}  // namespace

TEST_CASE(
    "the lab runs the article's cluster and partition 0's leadership leaves a killed broker 1",
    "[e2e][lab]") {
  REQUIRE(testing::lab("status") == 0);
  auto admin = client(RD_KAFKA_PRODUCER);

  const auto topic = uniqueTopic("e2e-orders");
  kafka::NewTopic spec;
  spec.name = topic;
  spec.replica_assignment = {{1, 2, 3}, {2, 3, 1}, {3, 1, 2}};
  spec.configs = {{"min.insync.replicas", "2"}};
  auto created = kafka::createTopic(admin.get(), spec, 10000);
  REQUIRE(created);
  CHECK(*created == kafka::CreateOutcome::kCreated);

  REQUIRE(eventually(30s, [&] {
    auto md = kafka::fetchMetadata(admin.get(), {topic}, 2000);
    return md && md->topic(topic) && md->topic(topic)->partitions.size() == 3 &&
           md->topic(topic)->partitions[0].leader == 1;
  }));
  const auto before = kafka::fetchMetadata(admin.get(), {topic}, 2000);
  REQUIRE(before);
  CHECK(before->brokers.size() == 3);
  CHECK(before->topic(topic)->partitions[1].replicas == std::vector<std::int32_t>{2, 3, 1});

  // Produce with acks=all to every partition and read everything back.
  auto producer = client(RD_KAFKA_PRODUCER, {{"acks", "all"}});
  constexpr int kPerPartition = 20;
  for (int p = 0; p < 3; ++p) {
    for (int i = 0; i < kPerPartition; ++i) {
      const std::string value = "m-" + std::to_string(p) + "-" + std::to_string(i);
      REQUIRE(rd_kafka_producev(producer.get(), RD_KAFKA_V_TOPIC(topic.c_str()),
                                RD_KAFKA_V_PARTITION(p),
                                RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR);
    }
  }
  REQUIRE(rd_kafka_flush(producer.get(), 30000) == RD_KAFKA_RESP_ERR_NO_ERROR);

  auto consumer = client(RD_KAFKA_CONSUMER,
                         {{"group.id", "kfaild-e2e-" + topic}, {"enable.auto.commit", "false"}});
  rd_kafka_poll_set_consumer(consumer.get());
  auto* assignment = rd_kafka_topic_partition_list_new(3);
  for (int p = 0; p < 3; ++p) {
    rd_kafka_topic_partition_list_add(assignment, topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  REQUIRE(rd_kafka_assign(consumer.get(), assignment) == RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(assignment);
  std::set<std::string> seen;
  REQUIRE(eventually(30s, [&] {
    while (auto* msg = rd_kafka_consumer_poll(consumer.get(), 100)) {
      if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        seen.insert(std::string(static_cast<const char*>(msg->payload), msg->len));
      }
      rd_kafka_message_destroy(msg);
    }
    return seen.size() == 3 * kPerPartition;
  }));
  rd_kafka_consumer_close(consumer.get());

  // SIGKILL broker 1: after the session timeout the controller fences it and partition 0 gets
  // a new leader from its ISR.
  REQUIRE(testing::lab("kill 1") == 0);
  const auto killed_at = std::chrono::steady_clock::now();
  std::int32_t new_leader = -1;
  REQUIRE(eventually(60s, [&] {
    auto md = kafka::fetchMetadata(admin.get(), {topic}, 2000);
    if (!md || !md->topic(topic)) return false;
    new_leader = md->topic(topic)->partitions[0].leader;
    return new_leader != 1 && new_leader != -1 && !md->hasBroker(1);
  }));
  const auto took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  INFO("leadership moved after " << took << " s");
  CHECK((new_leader == 2 || new_leader == 3));
  CHECK(took > 1.0);  // fencing waits for the session timeout; it is never immediate

  REQUIRE(testing::lab("start 1 --wait") == 0);
  REQUIRE(eventually(60s, [&] {
    auto md = kafka::fetchMetadata(admin.get(), {topic}, 2000);
    return md && md->hasBroker(1) && md->topic(topic)->partitions[0].isr.size() == 3;
  }));
}

// `lab fetch` (scripts/setup) writes a class data sharing archive of Kafka's classes, and every
// node the lab starts maps it (lab/README.md): about 1.6 CPU-s less per node start.
TEST_CASE("every node of the lab maps the class data sharing archive that lab fetch wrote",
          "[e2e][lab]") {
  REQUIRE(testing::lab("status") == 0);
  for (int id : {100, 1, 2, 3}) {
    const auto node = testing::labNode(id);
    REQUIRE(node);
    std::ifstream pid_in(node->pid_file);
    int pid = 0;
    pid_in >> pid;
    REQUIRE(pid > 0);
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    const std::string text{std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>()};
    INFO("node " << id << " (pid " << pid << ")");
    CHECK(text.find("/kafka-classes-") != std::string::npos);
    CHECK(text.find(".jsa") != std::string::npos);
  }
}

}  // namespace lab_failover_test
