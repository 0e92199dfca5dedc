// The metadata poller against the lab: per-topic answers stamped as they arrive, and the KRaft
// quorum described beside the metadata, its leader the dedicated controller 100 that no metadata
// answer lists.

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "server/observe/metadata_poller.h"
#include "storage/sqlite_store.h"
#include "tests/support/lab.h"
#include "tests/support/temp_dir.h"

namespace metadata_poller_e2e_test {

using namespace kfaild;

TEST_CASE("the poller stamps each topic's answer and sees controller 100 lead the quorum",
          "[e2e][observe]") {
  REQUIRE(testing::lab("status") == 0);
  testing::TempDir dir;
  const common::SystemClock clock;
  storage::SqliteStoreOptions store_options;
  store_options.clock = &clock;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), store_options);
  REQUIRE(store.ok());
  auto cluster_id = (*store)->ensureCluster("lab", testing::labBootstrap());
  REQUIRE(cluster_id.ok());

  config::ClusterConfig cluster;
  cluster.name = "lab";
  cluster.bootstrap = testing::labBootstrap();
  // Topics that do not exist still get one answer each (UNKNOWN_TOPIC_OR_PART), and the poller
  // must not create them.
  const auto suffix = std::to_string(std::random_device{}() % 1'000'000);
  for (const auto* name : {"e2e-absent-a-", "e2e-absent-b-"}) {
    config::ProbeTopic topic;
    topic.name = name + suffix;
    cluster.probe.topics.push_back(topic);
  }
  observe::MetadataPoller poller(cluster, *cluster_id, **store, clock);

  const auto before = clock.wallNow();
  poller.pollOnce();
  poller.describeQuorumOnce();
  const auto after = clock.wallNow();

  const auto observed = poller.latest();
  REQUIRE(observed.reachable);
  REQUIRE(observed.snapshot.has_value());
  const auto& topics = observed.snapshot->topics;
  REQUIRE(topics.size() == 2);
  CHECK(topics[0].error == "UNKNOWN_TOPIC_OR_PART");
  CHECK(topics[0].answered_at_us >= before);
  CHECK(topics[1].answered_at_us >= topics[0].answered_at_us);
  CHECK(topics[1].answered_at_us <= observed.snapshot_at);
  CHECK(observed.snapshot->brokers_at_us == topics[0].answered_at_us);
  CHECK(observed.snapshot->brokers.size() == 3);

  INFO(observed.quorum_error);
  REQUIRE(observed.quorum.has_value());
  CHECK(observed.quorum_error.empty());
  CHECK(observed.quorum->leader_id == 100);
  CHECK(observed.quorum->isVoter(100));
  CHECK_FALSE(observed.snapshot->hasBroker(100));
  CHECK(observed.quorum_at >= observed.snapshot_at);
  CHECK(observed.quorum_at <= after);
}

}  // namespace metadata_poller_e2e_test
