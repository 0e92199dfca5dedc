// Stopping a metadata poller wakes both its threads wherever they wait: between metadata polls
// (against librdkafka's mock cluster) and inside a quorum describe that waits on a broker that
// never answers. Each wait here would last a minute without the wake; the bound of 30 s leaves
// room for a loaded machine and still tells the two apart.

#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "server/common/clock.h"
#include "server/kafka/client.h"
#include "server/observe/metadata_poller.h"
#include "storage/sqlite_store.h"
#include "tests/support/kafka_doubles.h"
#include "tests/support/temp_dir.h"

namespace metadata_poller_stop_test {

using namespace kfaild;
using kfaild::testing::MockCluster;
using kfaild::testing::SilentListener;
using namespace std::chrono_literals;

namespace {

template <typename Pred>
bool eventually(std::chrono::seconds limit, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

}  // namespace

TEST_CASE(
    "a metadata poller stopped while it polls or waits a minute for the next poll stops at "
    "once, every time",
    "[integration][observe]") {
  MockCluster mock(1);
  REQUIRE(rd_kafka_mock_topic_create(mock.cluster, "probe", 1, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  testing::TempDir dir;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(store);
  auto cluster_id = (*store)->ensureCluster("mock", mock.bootstrap());
  REQUIRE(cluster_id);
  config::ClusterConfig cluster;
  cluster.name = "mock";
  cluster.bootstrap = mock.bootstrap();
  cluster.observe.metadata_interval_us = 60'000'000;
  cluster.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};
  common::SystemClock clock;
  observe::MetadataPoller poller(cluster, *cluster_id, **store, clock);

  int stopped_waiting = 0;
  for (int i = 0; i < 200; ++i) {
    INFO("iteration " << i);
    const auto polls_before = poller.latest().polls;
    REQUIRE(poller.start());
    if (i % 3 == 1) std::this_thread::sleep_for(std::chrono::microseconds(i * 10));
    if (i % 3 == 2) {
      // One poll answered: the thread now waits a minute for the next.
      REQUIRE(eventually(30s, [&] { return poller.latest().polls > polls_before; }));
      ++stopped_waiting;
    }
    auto stopped = std::async(std::launch::async, [&poller] { poller.stop(); });
    REQUIRE(stopped.wait_for(30s) == std::future_status::ready);
    const auto latest = poller.latest();
    CHECK(latest.polls <= polls_before + 1);
    if (i % 3 == 2) CHECK(latest.reachable);
  }
  CHECK(stopped_waiting == 66);
}

TEST_CASE(
    "a metadata poller stopped while its quorum describe waits on a silent broker stops at "
    "once and records no failure",
    "[integration][observe]") {
  SilentListener silent;
  // 30 times the same silent broker: the describe tries each for 2 s, a minute in all.
  std::string bootstrap = silent.address();
  for (int i = 1; i < 30; ++i) bootstrap += "," + silent.address();
  testing::TempDir dir;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(store);
  auto cluster_id = (*store)->ensureCluster("silent", bootstrap);
  REQUIRE(cluster_id);
  config::ClusterConfig cluster;
  cluster.name = "silent";
  cluster.bootstrap = bootstrap;
  // A metadata request against the silent broker gives up after 1 s, the shortest timeout.
  cluster.observe.metadata_interval_us = 100'000;
  cluster.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};
  common::SystemClock clock;
  observe::MetadataPoller poller(cluster, *cluster_id, **store, clock);

  for (int i = 0; i < 20; ++i) {
    INFO("iteration " << i);
    REQUIRE(poller.start());
    // The quorum thread describes at once; let it get into its socket waits.
    std::this_thread::sleep_for(std::chrono::milliseconds(i * 20));
    auto stopped = std::async(std::launch::async, [&poller] { poller.stop(); });
    REQUIRE(stopped.wait_for(30s) == std::future_status::ready);
    // A describe cut short by stop is not a failure of the cluster.
    const auto latest = poller.latest();
    CHECK(latest.quorum_error.empty());
    CHECK_FALSE(latest.quorum);
  }
}

}  // namespace metadata_poller_stop_test
