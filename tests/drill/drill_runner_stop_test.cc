// Stopping a drill runner always wakes its thread: the flag is set under the mutex the loop
// waits on, so a stop that lands between the loop's check and its wait is not lost (it used to
// be, and the daemon then hung in join and reported a drill that had not recovered its node).

#include <catch2/catch.hpp>

#include <chrono>
#include <future>

#include "server/drill/drill_runner.h"
#include "server/fault/injector_factory.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

using namespace kfaild;
using namespace std::chrono_literals;

TEST_CASE("a drill runner stopped while idle stops at once every time", "[integration][drill]") {
  testing::TempDir dir;
  common::SystemClock clock;
  config::ClusterConfig cluster;
  cluster.name = "idle";
  cluster.bootstrap = "127.0.0.1:1";  // never contacted: no drill is submitted
  cluster.probe.topics = {config::ProbeTopic{"orders", std::nullopt}};
  config::NodeConfig node;
  node.id = 1;
  node.local = config::LocalTarget{(dir / "kafka.pid").string(), {"/bin/true"}, (dir / "logs").string()};
  cluster.inventory.push_back(node);

  auto store = storage::SqliteStore::open((dir / "kfaild.db").string());
  REQUIRE(store);
  auto drills = storage::SqliteDrillStore::open((dir / "kfaild.db").string());
  REQUIRE(drills);
  auto id = (*store)->ensureCluster(cluster.name, cluster.bootstrap);
  REQUIRE(id);
  observe::MetadataPoller poller(cluster, *id, **store, clock);
  probe::ProbeRunner probe(cluster, *id, **store, clock, {});

  for (int i = 0; i < 200; ++i) {
    std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors;
    injectors[1] = fault::makeInjector(node, clock);
    drill::DrillRunner runner(cluster, *id, **store, **drills, clock, poller, probe, std::move(injectors));
    REQUIRE(runner.start());
    // Stop right away (the thread may not even have reached its wait yet) or a little later.
    if (i % 2 == 1) std::this_thread::sleep_for(std::chrono::microseconds(i * 10));
    auto stopped = std::async(std::launch::async, [&runner] { runner.stop(); });
    INFO("iteration " << i);
    REQUIRE(stopped.wait_for(10s) == std::future_status::ready);
  }
}
