// The coordinator probes against librdkafka's mock cluster: commits answered while the cluster
// is up, commits that follow their coordinator when its broker leaves the cluster, and a stop that
// returns when every broker is gone.

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <thread>

#include "server/common/clock.h"
#include "server/probe/coordinator_probe.h"
#include "storage/sqlite_store.h"
#include "tests/support/kafka_doubles.h"
#include "tests/support/temp_dir.h"

namespace coordinator_probe_mock_test {

using namespace kfaild;
using namespace std::chrono_literals;
using kfaild::testing::MockCluster;

namespace {

constexpr const char* kGroup = "kfaild-probe-mock";

// A coordinator probe on a three-broker mock cluster whose offset commits have been answered.
struct CommittingProbe {
  MockCluster mock{3};
  testing::TempDir dir;
  std::unique_ptr<storage::SqliteStore> store;
  common::SystemClock clock;
  std::unique_ptr<probe::CoordinatorProbe> probe;

  explicit CommittingProbe(std::map<std::string, std::string> client = {},
                           std::int64_t timeout_us = 1'000'000) {
    REQUIRE(rd_kafka_mock_topic_create(mock.cluster, "probe", 3, 3) == RD_KAFKA_RESP_ERR_NO_ERROR);
    REQUIRE(rd_kafka_mock_coordinator_set(mock.cluster, "group", kGroup, 1) ==
            RD_KAFKA_RESP_ERR_NO_ERROR);
    auto opened = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
    REQUIRE(opened);
    store = std::move(*opened);
    auto cluster_id = store->ensureCluster("mock", mock.bootstrap());
    REQUIRE(cluster_id);
    config::ClusterConfig cluster;
    cluster.name = "mock";
    cluster.bootstrap = mock.bootstrap();
    cluster.client = std::move(client);
    cluster.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};
    cluster.probe.coordinators.group = kGroup;
    cluster.probe.coordinators.commit_interval_us = 100'000;
    cluster.probe.coordinators.timeout_us = timeout_us;
    probe = std::make_unique<probe::CoordinatorProbe>(cluster, *cluster_id, *store, clock);
    REQUIRE(probe->start());
    REQUIRE(committedAfter(common::Instant{0, 0}, 30s));
  }
  ~CommittingProbe() { probe->stop(); }

  // Whether a commit is answered after `after` within `within`.
  bool committedAfter(common::Instant after, std::chrono::seconds within) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto s = probe->status();
      if (s.commits && s.commits->last_ok && s.commits->last_ok->wall > after.wall) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
};

}  // namespace

TEST_CASE("the coordinator probes stop at once with every broker gone", "[integration][probe]") {
  // With the test's 1 s commit timeout and with the default 5 s (what bounds the committer's
  // destruction while a commit waits for a coordinator).
  const auto timeout_us = GENERATE(std::int64_t{1'000'000}, std::int64_t{5'000'000});
  CommittingProbe p({}, timeout_us);
  for (int b = 1; b <= 3; ++b)
    REQUIRE(rd_kafka_mock_broker_set_down(p.mock.cluster, b) == RD_KAFKA_RESP_ERR_NO_ERROR);
  std::this_thread::sleep_for(2s);  // commits fail; the committer has no coordinator any more
  auto stopped = std::async(std::launch::async, [&] { p.probe->stop(); });
  REQUIRE(stopped.wait_for(15s) == std::future_status::ready);
}

// A broker that leaves the metadata is decommissioned by librdkafka. The admin API's coordinator
// cache kept such a broker as the group's coordinator and waited for it to come back
// (librdkafka#5511): on the three-controller lab kfaild's commits never resumed after their
// coordinator's broker was killed, though FindCoordinator named another broker.
TEST_CASE("offset commits follow their coordinator off a broker that left the cluster",
          "[integration][probe]") {
  // Metadata refreshed every second, so that the client learns of the departure at once.
  CommittingProbe p(
      std::map<std::string, std::string>{{"topic.metadata.refresh.interval.ms", "1000"}});
  REQUIRE(rd_kafka_mock_broker_set_down(p.mock.cluster, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  // Commits fail while FindCoordinator still names the broker that is down, as until a killed
  // broker's session times out; then the coordinator moves and the broker leaves the metadata.
  std::this_thread::sleep_for(3s);
  REQUIRE(rd_kafka_mock_coordinator_set(p.mock.cluster, "group", kGroup, 2) ==
          RD_KAFKA_RESP_ERR_NO_ERROR);
  REQUIRE(rd_kafka_mock_broker_decommission(p.mock.cluster, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  const auto moved = p.clock.now();
  const bool resumed = p.committedAfter(moved, 15s);
  const auto status = p.probe->status();
  INFO("last error: " << (status.commits ? status.commits->last_error : "no commits"));
  CHECK(resumed);
}

}  // namespace coordinator_probe_mock_test
