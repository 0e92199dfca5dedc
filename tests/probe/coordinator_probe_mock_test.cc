// The coordinator probes against librdkafka's mock cluster: commits answered while the cluster
// is up, and a stop that returns when every broker is gone (the offset committer's consumer close
// used to wait for a coordinator without a bound: kfaild's SIGTERM never returned).

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "server/common/clock.h"
#include "server/probe/coordinator_probe.h"
#include "storage/sqlite_store.h"
#include "tests/support/kafka_doubles.h"
#include "tests/support/temp_dir.h"

using namespace kfaild;
using namespace std::chrono_literals;
using kfaild::testing::MockCluster;

TEST_CASE("the coordinator probes stop at once with every broker gone", "[integration][probe]") {
  MockCluster mock(3);
  REQUIRE(rd_kafka_mock_topic_create(mock.cluster, "probe", 3, 3) == RD_KAFKA_RESP_ERR_NO_ERROR);
  testing::TempDir dir;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(store);
  auto cluster_id = (*store)->ensureCluster("mock", mock.bootstrap());
  REQUIRE(cluster_id);

  config::ClusterConfig cluster;
  cluster.name = "mock";
  cluster.bootstrap = mock.bootstrap();
  cluster.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};
  cluster.probe.coordinators.group = "kfaild-probe-mock";
  cluster.probe.coordinators.commit_interval_us = 100'000;
  cluster.probe.coordinators.timeout_us = 1'000'000;

  common::SystemClock clock;
  probe::CoordinatorProbe probe(cluster, *cluster_id, **store, clock);
  REQUIRE(probe.start());
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto s = probe.status();
    if (s.commits && s.commits->last_ok) break;
    std::this_thread::sleep_for(100ms);
  }
  const auto before = probe.status();
  REQUIRE(before.commits);
  REQUIRE(before.commits->last_ok);

  for (int b = 1; b <= 3; ++b) REQUIRE(rd_kafka_mock_broker_set_down(mock.cluster, b) == RD_KAFKA_RESP_ERR_NO_ERROR);
  std::this_thread::sleep_for(2s);  // commits fail; the committer has no coordinator any more
  auto stopped = std::async(std::launch::async, [&] { probe.stop(); });
  REQUIRE(stopped.wait_for(15s) == std::future_status::ready);
}
