// The drill store's aggregates: drill spans for retention and incidents, and drill counts for
// /metrics, answered by SQL instead of reading every drill.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "storage/sqlite.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace kfaild::storage::drill_store_test {
namespace {

using kfaild::testing::TempDir;

constexpr std::int64_t kBase = 1'760'000'000'000'000;
constexpr std::int64_t kSecond = 1'000'000;

struct Drills {
  TempDir dir;
  std::string path = (dir / "kfaild.db").string();
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<SqliteDrillStore> drills;
  ClusterId lab = 0;
  ClusterId prod = 0;

  Drills() {
    auto opened = SqliteStore::open(path);
    REQUIRE(opened.ok());
    store = std::move(*opened);
    auto drill_store = SqliteDrillStore::open(path);
    REQUIRE(drill_store.ok());
    drills = std::move(*drill_store);
    lab = *store->ensureCluster("lab", "k1:9092");
    prod = *store->ensureCluster("prod", "p1:9092");
  }

  std::int64_t add(ClusterId cluster, const std::string& fault, const std::string& state,
                   std::int64_t created_us, std::optional<std::int64_t> started_us,
                   std::optional<std::int64_t> finished_us) {
    DrillRecord d;
    d.cluster = cluster;
    d.fault = fault;
    d.target = R"({"broker":1})";
    d.options = "{}";
    d.state = state;
    d.created_us = created_us;
    d.started_us = started_us;
    d.finished_us = finished_us;
    d.result =
        R"({"runs":[)" + std::string(2'000, ' ') + "]}";  // a result that spills to overflow pages
    auto id = drills->createDrill(d);
    REQUIRE(id.ok());
    return *id;
  }
};

std::vector<std::int64_t> idsOf(const std::vector<DrillSpan>& spans) {
  std::vector<std::int64_t> ids;
  for (const auto& s : spans) ids.push_back(s.id);
  return ids;
}

TEST_CASE("drill spans are the drills that overlap a range, open while they run",
          "[integration][storage]") {
  Drills db;
  const auto done = db.add(db.lab, "kill", "done", kBase, kBase + kSecond, kBase + 100 * kSecond);
  const auto queued =
      db.add(db.lab, "stop", "queued", kBase + 500 * kSecond, std::nullopt, std::nullopt);
  const auto running =
      db.add(db.lab, "kill", "observe", kBase + 200 * kSecond, kBase + 201 * kSecond, std::nullopt);
  const auto other = db.add(db.prod, "kill", "done", kBase, kBase + kSecond, kBase + 50 * kSecond);

  auto all = db.drills->drillSpans(std::nullopt, {});
  REQUIRE(all.ok());
  REQUIRE(all->size() == 4);
  CHECK(idsOf(*all) == std::vector<std::int64_t>{done, queued, running, other});
  const auto& first = all->front();
  CHECK(first.cluster == db.lab);
  CHECK(first.from_us == kBase + kSecond);
  CHECK(first.to_us == kBase + 100 * kSecond);
  CHECK((*all)[1].from_us == kBase + 500 * kSecond);  // not started: from its request
  CHECK_FALSE((*all)[1].to_us);
  CHECK_FALSE((*all)[2].to_us);

  // Overlap: began before the range ends, not finished before it starts.
  auto lab_after_done =
      db.drills->drillSpans(db.lab, {kBase + 100 * kSecond + 1, kBase + 300 * kSecond});
  REQUIRE(lab_after_done.ok());
  CHECK(idsOf(*lab_after_done) == std::vector<std::int64_t>{running});
  auto lab_touching =
      db.drills->drillSpans(db.lab, {kBase + 100 * kSecond, kBase + 200 * kSecond + kSecond + 1});
  REQUIRE(lab_touching.ok());
  CHECK(idsOf(*lab_touching) == std::vector<std::int64_t>{done, running});
  auto before_all = db.drills->drillSpans(std::nullopt, {kBase - 10 * kSecond, kBase + kSecond});
  REQUIRE(before_all.ok());
  CHECK(before_all->empty());
}

TEST_CASE("drills are counted per cluster, fault and state over an index, not their rows",
          "[integration][storage]") {
  Drills db;
  for (int i = 0; i < 5; ++i) db.add(db.lab, "kill", "done", kBase + i, kBase + i, kBase + i + 1);
  db.add(db.lab, "kill", "failed", kBase, kBase, kBase + 1);
  db.add(db.lab, "stop", "aborted", kBase, std::nullopt, kBase + 1);
  db.add(db.prod, "kill", "done", kBase, kBase, kBase + 1);

  auto counts = db.drills->drillCounts();
  REQUIRE(counts.ok());
  REQUIRE(counts->size() == 4);
  const auto row = [&](std::size_t i) {
    const auto& c = (*counts)[i];
    return std::tuple{c.cluster, c.fault, c.state, c.count};
  };
  CHECK(row(0) == std::tuple{db.lab, std::string("kill"), std::string("done"), std::int64_t{5}});
  CHECK(row(1) == std::tuple{db.lab, std::string("kill"), std::string("failed"), std::int64_t{1}});
  CHECK(row(2) == std::tuple{db.lab, std::string("stop"), std::string("aborted"), std::int64_t{1}});
  CHECK(row(3) == std::tuple{db.prod, std::string("kill"), std::string("done"), std::int64_t{1}});

  auto raw = sqlite::Database::open(db.path);
  REQUIRE(raw.ok());
  auto plan = (*raw)->prepare(
      "EXPLAIN QUERY PLAN SELECT cluster_id, fault, state, count(*) FROM drills "
      "GROUP BY cluster_id, fault, state ORDER BY cluster_id, fault, state");
  REQUIRE(plan.ok());
  std::string steps;
  for (auto step = plan->step(); step.ok() && *step; step = plan->step())
    steps += plan->columnText(3) + "; ";
  CHECK_THAT(steps, Catch::Contains("COVERING INDEX drills_by_outcome"));
}

}  // namespace
}  // namespace kfaild::storage::drill_store_test

namespace kfaild::storage::drill_store_test {

TEST_CASE("a drill's verdict, regression flag and expect are stored, read back and filtered on",
          "[integration][storage][verdict]") {
  Drills f;
  const auto judged = f.add(f.lab, "kill", "analyse", kBase, kBase + kSecond, std::nullopt);
  const auto running =
      f.add(f.lab, "kill", "observe", kBase + 10 * kSecond, kBase + 11 * kSecond, std::nullopt);
  auto row = f.drills->drill(judged);
  REQUIRE(row.ok());
  auto d = **row;
  CHECK_FALSE(d.verdict);
  CHECK_FALSE(d.regressed);
  CHECK(d.expect.empty());
  d.state = "done";
  d.verdict = "fail";
  d.regressed = true;
  REQUIRE(f.drills->updateDrill(d).ok());

  DrillRecord with_expect;
  with_expect.cluster = f.lab;
  with_expect.fault = "stop";
  with_expect.state = "queued";
  with_expect.expect = R"({"max_ack_stall_s":1.0})";
  with_expect.created_us = kBase + 20 * kSecond;
  const auto queued = f.drills->createDrill(with_expect);
  REQUIRE(queued.ok());

  const auto back = **f.drills->drill(judged);
  CHECK(back.verdict == "fail");
  CHECK(back.regressed == true);
  CHECK((*f.drills->drill(*queued))->expect == R"({"max_ack_stall_s":1.0})");
  CHECK_FALSE((*f.drills->drill(running))->verdict);

  DrillQuery q;
  q.verdict = "fail";
  auto fails = f.drills->drills(q);
  REQUIRE(fails.ok());
  REQUIRE(fails->size() == 1);
  CHECK(fails->front().id == judged);
  q.verdict = "pass";
  CHECK(f.drills->drills(q)->empty());

  // A verdict outside pass | fail | inconclusive is refused by the schema.
  d.verdict = "maybe";
  CHECK_FALSE(f.drills->updateDrill(d).ok());
}

}  // namespace kfaild::storage::drill_store_test

namespace kfaild::storage::drill_store_test {

TEST_CASE(
    "a journal entry keeps whether and where its gray fault was placed, and no update reopens a "
    "resolved one",
    "[unit][storage]") {
  Drills d;
  RecoveryEntry entry;
  entry.drill_id = d.add(d.lab, "isolate", "inject", kBase, std::nullopt, std::nullopt);
  entry.cluster = d.lab;
  entry.node = 2;
  entry.action = "heal";
  entry.phase = "inject";
  entry.created_us = kBase;
  entry.injection = "pending";
  entry.place_host = "k2.example";
  entry.place_netns = "kfl25000-n2";
  entry.place_netns_id = "net:[4026532417]";
  entry.place_table = "kfaild_d7";
  entry.place_filler = "/srv/kafka/fill/kfaild_fill_d7";
  auto id = d.drills->addRecovery(entry);
  REQUIRE(id.ok());
  entry.id = *id;
  entry.injection = "done";
  entry.phase = "observe";
  REQUIRE(d.drills->updateRecovery(entry).ok());

  auto pending = d.drills->pendingRecoveries();
  REQUIRE(pending.ok());
  REQUIRE(pending->size() == 1);
  const auto& read = pending->front();
  CHECK(read.injection == "done");
  CHECK(read.phase == "observe");
  CHECK(read.place_host == "k2.example");
  CHECK(read.place_netns == "kfl25000-n2");
  CHECK(read.place_netns_id == "net:[4026532417]");
  CHECK(read.place_table == "kfaild_d7");
  CHECK(read.place_filler == "/srv/kafka/fill/kfaild_fill_d7");

  // An operator resolves it while a retry runs; the retry's save after it changes nothing.
  auto resolved = resolveRecovery(*d.drills, entry.id, "healed by hand", kBase + kSecond);
  REQUIRE(resolved.ok());
  REQUIRE(resolved->has_value());
  entry.attempts = 3;
  entry.last_error = "heal failed";
  REQUIRE(d.drills->updateRecovery(entry).ok());
  pending = d.drills->pendingRecoveries();
  REQUIRE(pending.ok());
  CHECK(pending->empty());
}

}  // namespace kfaild::storage::drill_store_test
