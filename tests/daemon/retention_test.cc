// The retention task prunes samples older than the retention, keeps those around drills, and
// stops at once although it sleeps an hour between passes.

#include <catch2/catch.hpp>

#include <future>

#include "server/daemon/retention.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

using namespace kfaild;
using namespace std::chrono_literals;

TEST_CASE("retention prunes old samples but keeps a minute either side of every drill", "[unit][daemon]") {
  testing::TempDir dir;
  testing::ManualClock clock(1'800'000'000'000'000);
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string());
  REQUIRE(store);
  auto drills = storage::SqliteDrillStore::open((dir / "kfaild.db").string());
  REQUIRE(drills);
  const auto cluster = *(*store)->ensureCluster("c", "127.0.0.1:1");
  constexpr std::int64_t kHour = 3'600'000'000;
  const auto now = clock.wallNow();
  // A drill three days ago, from its start to its end.
  storage::DrillRecord d;
  d.cluster = cluster;
  d.fault = "kill";
  d.target = R"({"broker":1})";
  d.options = "{}";
  d.state = "done";
  d.created_us = now - 72 * kHour;
  d.started_us = d.created_us;
  d.finished_us = d.created_us + 120'000'000;
  REQUIRE((*drills)->createDrill(d));
  std::int64_t seq = 0;
  auto sample = [&](std::int64_t at) {
    storage::ProbeSample s;
    s.cluster = cluster;
    s.topic = "probe";
    s.seq = ++seq;
    s.send_us = at;
    s.ack_us = at + 1000;
    (*store)->addSample(s);
  };
  sample(now - 96 * kHour);                        // old: pruned
  sample(*d.started_us - 30'000'000);              // within a minute before the drill: kept
  sample(*d.started_us + 60'000'000);              // during the drill: kept
  sample(*d.finished_us + 90'000'000);             // 90 s after it: pruned
  sample(now - kHour);                             // recent: kept
  (*store)->flush();

  daemon::RetentionTask retention(**store, **drills, clock, 24 * kHour);
  CHECK(retention.prune() == 2);
  storage::SampleQuery q;
  q.cluster = cluster;
  q.topic = "probe";
  auto left = (*store)->samples(q);
  REQUIRE(left);
  CHECK(left->size() == 3);
}

TEST_CASE("the retention task stops at once while it sleeps its hour", "[unit][daemon]") {
  testing::TempDir dir;
  testing::ManualClock clock;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string());
  REQUIRE(store);
  auto drills = storage::SqliteDrillStore::open((dir / "kfaild.db").string());
  REQUIRE(drills);
  for (int i = 0; i < 50; ++i) {
    daemon::RetentionTask retention(**store, **drills, clock, 1'000'000);
    retention.start();
    auto stopped = std::async(std::launch::async, [&] { retention.stop(); });
    REQUIRE(stopped.wait_for(10s) == std::future_status::ready);
  }
}
