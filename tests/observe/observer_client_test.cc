// The metadata poller and the drill engine's admin calls share one librdkafka client per cluster
// (observe::makeObserverClient), against librdkafka's mock cluster.

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <catch2/catch.hpp>

#include "server/common/clock.h"
#include "server/drill/live_seams.h"
#include "server/kafka/client.h"
#include "server/observe/metadata_poller.h"
#include "storage/sqlite_store.h"
#include "tests/support/kafka_doubles.h"
#include "tests/support/temp_dir.h"

namespace observer_client_test {

using namespace kfaild;
using kfaild::testing::MockCluster;

TEST_CASE("the metadata poller and the drill engine's admin calls use one observer client",
          "[integration][observe]") {
  MockCluster mock(2);
  REQUIRE(rd_kafka_mock_topic_create(mock.cluster, "probe", 2, 2) == RD_KAFKA_RESP_ERR_NO_ERROR);
  testing::TempDir dir;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(store);
  auto cluster_id = (*store)->ensureCluster("mock", mock.bootstrap());
  REQUIRE(cluster_id);
  config::ClusterConfig cluster;
  cluster.name = "mock";
  cluster.bootstrap = mock.bootstrap();
  cluster.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};
  common::SystemClock clock;

  auto observer = observe::makeObserverClient(cluster);
  observe::MetadataPoller poller(cluster, *cluster_id, **store, clock, observer.get());
  drill::KafkaClusterAdmin admin(cluster, *observer);
  REQUIRE(admin.connect());

  poller.pollOnce();
  const auto seen = poller.latest();
  REQUIRE(seen.reachable);
  REQUIRE(seen.snapshot);
  CHECK(seen.snapshot->brokers.size() == 2);
  auto described = admin.describeCluster();
  REQUIRE(described);
  CHECK(described->topic("probe") != nullptr);

  // One handle for both: created once, named as the observer.
  auto first = observer->get();
  auto second = observer->get();
  REQUIRE(first);
  REQUIRE(second);
  CHECK(*first == *second);
  CHECK(std::string(rd_kafka_name(*first)).find("kfaild-mock-observer") == 0);
}

TEST_CASE(
    "a shared handle names the client property librdkafka refuses, and tries again on the "
    "next call",
    "[unit][kafka]") {
  kafka::ClientOptions options;
  options.bootstrap = "127.0.0.1:1";
  options.properties = {{"socket.timeout.ms", "not a number"}};
  kafka::SharedHandle shared(RD_KAFKA_PRODUCER, options);
  auto h = shared.get();
  REQUIRE_FALSE(h);
  CHECK(h.error().describe().find("socket.timeout.ms") != std::string::npos);
  REQUIRE_FALSE(shared.get());
}

}  // namespace observer_client_test
