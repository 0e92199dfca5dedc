// The probe against librdkafka's mock cluster: a leader that goes away shows up as a gap of the
// right length on its partition and nowhere else, and every gap reaches the store.

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "server/common/clock.h"
#include "server/kafka/client.h"
#include "server/probe/probe_runner.h"
#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

using namespace kfaild;
using namespace std::chrono_literals;

namespace {

struct MockCluster {
  kafka::Handle owner;
  rd_kafka_mock_cluster_t* cluster = nullptr;

  explicit MockCluster(int brokers) {
    kafka::ClientOptions options;
    options.bootstrap = "";
    auto handle = kafka::createClient(RD_KAFKA_PRODUCER, options);
    REQUIRE(handle);
    owner = std::move(*handle);
    cluster = rd_kafka_mock_cluster_new(owner.get(), brokers);
    REQUIRE(cluster != nullptr);
  }
  ~MockCluster() { rd_kafka_mock_cluster_destroy(cluster); }
  std::string bootstrap() const { return rd_kafka_mock_cluster_bootstraps(cluster); }
};

template <typename Pred>
bool eventually(std::chrono::seconds limit, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

}  // namespace

TEST_CASE("a mock broker going down stalls only the partition it leads, for as long as it is down",
          "[integration][probe]") {
  MockCluster mock(3);
  REQUIRE(rd_kafka_mock_topic_create(mock.cluster, "probe", 3, 3) == RD_KAFKA_RESP_ERR_NO_ERROR);
  for (int p = 0; p < 3; ++p) {
    REQUIRE(rd_kafka_mock_partition_set_leader(mock.cluster, "probe", p, p + 1) ==
            RD_KAFKA_RESP_ERR_NO_ERROR);
  }

  testing::TempDir dir;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(store);
  auto cluster_id = (*store)->ensureCluster("mock", mock.bootstrap());
  REQUIRE(cluster_id);

  config::ClusterConfig cluster;
  cluster.name = "mock";
  cluster.bootstrap = mock.bootstrap();
  cluster.observe.client_debug = "";
  cluster.probe.interval_us = 20'000;
  cluster.probe.gap_threshold_us = 250'000;
  cluster.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};

  common::SystemClock clock;
  probe::ProbeRunner runner(cluster, *cluster_id, **store, clock, {});
  REQUIRE(runner.start());
  REQUIRE(eventually(30s, [&] {
    const auto s = runner.status();
    if (s.phase != probe::ProbePhase::kProbing || s.partitions.size() != 3) return false;
    for (const auto& p : s.partitions) {
      if (p.counters.received < 50) return false;
    }
    return true;
  }));

  constexpr auto kDown = 3s;
  REQUIRE(rd_kafka_mock_broker_set_down(mock.cluster, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  std::this_thread::sleep_for(kDown);
  REQUIRE(rd_kafka_mock_broker_set_up(mock.cluster, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);

  // Wait until partition 0 acks again, then a little more for steady state.
  std::uint64_t acked_before = runner.status().partitions[0].counters.acked;
  REQUIRE(eventually(30s, [&] { return runner.status().partitions[0].counters.acked > acked_before + 50; }));
  runner.stop();
  (*store)->flush();

  const auto status = runner.status();
  CHECK(status.partitions[0].longest_ack_gap_us >= 2'900'000);
  CHECK(status.partitions[0].longest_ack_gap_us < 14'000'000);
  CHECK(status.partitions[1].longest_ack_gap_us < 250'000);
  CHECK(status.partitions[2].longest_ack_gap_us < 250'000);
  for (const auto& p : status.partitions) {
    CHECK(p.counters.lost == 0);
    CHECK(p.counters.duplicated == 0);
  }

  storage::GapQuery query;
  query.cluster = *cluster_id;
  query.kind = storage::GapKind::kAck;
  auto gaps = (*store)->gaps(query);
  REQUIRE(gaps);
  REQUIRE(gaps->size() >= 1);
  for (const auto& g : *gaps) CHECK(g.partition == 0);
  CHECK(std::max_element(gaps->begin(), gaps->end(), [](const auto& a, const auto& b) {
          return a.duration_us < b.duration_us;
        })->duration_us == status.partitions[0].longest_ack_gap_us);

  storage::SampleQuery samples;
  samples.cluster = *cluster_id;
  samples.topic = "probe";
  samples.partition = 1;
  auto rows = (*store)->samples(samples);
  REQUIRE(rows);
  CHECK(rows->size() >= 100);
  CHECK(rows->front().receive_us.has_value());
}
