// What the SQLite store does when it cannot write: another process holds the lock, the disk is
// full. Real database files throughout; the "full disk" is SQLite's max_page_count, which fails
// writes with the same SQLITE_FULL a full file system gives.

#include <catch2/catch.hpp>
#include <string>

#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "tests/storage/store_test_support.h"
#include "tests/support/temp_dir.h"

namespace kfaild::storage::write_failures_test {
namespace {

using namespace std::chrono_literals;
using kfaild::testing::TempDir;
using testing::countRows;

constexpr std::int64_t kBase = 1'760'000'000'000'000;

ProbeSample sample(ClusterId cluster, std::int64_t seq) {
  ProbeSample s;
  s.cluster = cluster;
  s.topic = "orders";
  s.partition = static_cast<std::int32_t>(seq % 3);
  s.seq = seq;
  s.send_us = kBase + seq * 20'000;
  s.ack_us = s.send_us + 2'500;
  s.offset = seq;
  s.receive_us = s.send_us + 4'000;
  return s;
}

Gap gap(ClusterId cluster, std::int64_t seq) {
  Gap g;
  g.cluster = cluster;
  g.topic = "orders";
  g.partition = 0;
  g.kind = GapKind::kAck;
  g.start_us = kBase + seq * 1'000'000;
  g.end_us = g.start_us + 9'400'000;
  g.duration_us = 9'400'000;
  g.seq_before = seq;
  g.seq_after = seq + 470;
  return g;
}

Event event(ClusterId cluster, std::int64_t n) {
  Event e;
  e.cluster = cluster;
  e.t_us = kBase + n;
  e.source = "metadata";
  e.kind = "leader_change";
  e.broker = 2;
  e.topic = "orders";
  e.partition = 0;
  e.detail = R"({"from":1,"to":2})";
  return e;
}

// Another process's connection to the same file, holding the write lock until released.
class LockHolder {
 public:
  LockHolder(const std::string& path, const char* begin) {
    auto db = sqlite::Database::open(path);
    REQUIRE(db.ok());
    db_ = std::move(*db);
    REQUIRE(db_->exec(begin).ok());
  }
  void release() { REQUIRE(db_->exec("COMMIT").ok()); }

 private:
  std::unique_ptr<sqlite::Database> db_;
};

std::unique_ptr<SqliteStore> openStore(const std::string& path, SqliteStoreOptions options) {
  auto store = SqliteStore::open(path, options);
  if (!store.ok()) FAIL(store.error().describe());
  return std::move(*store);
}

TEST_CASE(
    "while another connection holds the write lock, samples overflow and are counted but "
    "gaps and events survive",
    "[integration][storage][reliability]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.max_queued_records = 100;
  options.busy_timeout = 60s;  // the writer waits for the lock rather than failing
  auto store = openStore(path, options);
  const auto lab = store->ensureCluster("lab", "k1:9092");
  REQUIRE(lab.ok());

  LockHolder other(path, "BEGIN IMMEDIATE");
  for (int seq = 0; seq < 1'000; ++seq) store->addSample(sample(*lab, seq));
  for (int n = 0; n < 10; ++n) {
    store->addGap(gap(*lab, n));
    store->addEvent(event(*lab, n));
  }
  // The writer can have taken at most one batch (≤ 100 records) before it blocked on the lock,
  // and at most 100 more wait in the queue.
  auto stats = store->writerStats();
  CHECK(stats.queued <= 100);
  CHECK(stats.dropped_samples >= 1'000 + 20 - 200);
  CHECK(stats.dropped_other == 0);
  CHECK(stats.written == 0);

  other.release();
  store->flush();
  stats = store->writerStats();
  CHECK(stats.failed_batches == 0);
  CHECK(stats.queued == 0);
  CHECK(stats.dropped_other == 0);
  CHECK(countRows(path, "gaps") == 10);
  CHECK(countRows(path, "events") == 10);
  CHECK(countRows(path, "probe_samples") + static_cast<std::int64_t>(stats.dropped_samples) ==
        1'000);
  CHECK(static_cast<std::int64_t>(stats.written) == 20 + countRows(path, "probe_samples"));
}

TEST_CASE("a writer locked out past its busy timeout fails the batch, keeps it, and resumes",
          "[integration][storage][reliability]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.busy_timeout = 20ms;
  options.retry_interval = 1h;  // only flush() retries, so the test decides when
  auto store = openStore(path, options);
  const auto lab = store->ensureCluster("lab", "k1:9092");
  REQUIRE(lab.ok());

  LockHolder other(path, "BEGIN EXCLUSIVE");
  for (int seq = 0; seq < 300; ++seq) store->addSample(sample(*lab, seq));
  store->addGap(gap(*lab, 1));
  store->addEvent(event(*lab, 1));
  store->flush();

  auto stats = store->writerStats();
  CHECK(stats.failed_batches >= 1);
  CHECK_THAT(stats.last_error, Catch::StartsWith("database is locked"));
  CHECK(stats.queued == 302);
  CHECK(stats.dropped_samples == 0);

  other.release();
  store->flush();
  stats = store->writerStats();
  CHECK(stats.last_error.empty());
  CHECK(stats.queued == 0);
  CHECK(countRows(path, "probe_samples") == 300);
  CHECK(countRows(path, "gaps") == 1);
  CHECK(countRows(path, "events") == 1);
}

TEST_CASE(
    "when the disk is full the writer says so, keeps earlier data, and resumes when space "
    "returns",
    "[integration][storage][reliability]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.retry_interval = 1h;
  auto store = openStore(path, options);
  const auto lab = store->ensureCluster("lab", "k1:9092");
  REQUIRE(lab.ok());
  for (int seq = 0; seq < 1'000; ++seq) store->addSample(sample(*lab, seq));
  for (int n = 0; n < 5; ++n) store->addGap(gap(*lab, n));
  store->flush();
  REQUIRE(store->writerStats().written == 1'005);

  // Capped at the current size (SQLite never caps below it): the next page needed fails.
  store->setMaxPageCount(1);
  for (int seq = 1'000; seq < 50'000; ++seq) store->addSample(sample(*lab, seq));
  for (int n = 5; n < 15; ++n) store->addGap(gap(*lab, n));
  for (int n = 0; n < 10; ++n) store->addEvent(event(*lab, n));
  store->flush();

  auto stats = store->writerStats();
  CHECK(stats.failed_batches >= 1);
  CHECK_THAT(stats.last_error, Catch::StartsWith("database or disk is full"));
  CHECK(stats.dropped_samples == 0);
  // A first small batch may still fit in the free space of pages the file has; the rest waits.
  const auto stored =
      countRows(path, "probe_samples") + countRows(path, "gaps") + countRows(path, "events");
  CHECK(stats.queued > 40'000);
  CHECK(static_cast<std::int64_t>(stats.queued) + stored == 50'000 + 15 + 10);
  auto cluster_still = store->ensureCluster("lab", "k1:9092");  // a write that needs no new page
  CHECK(cluster_still.ok());

  SampleQuery earlier;
  earlier.cluster = *lab;
  earlier.topic = "orders";
  earlier.partition = 1;
  earlier.range = {kBase, sample(*lab, 1'000).send_us};
  auto earlier_samples = store->samples(earlier);
  REQUIRE(earlier_samples.ok());
  CHECK(earlier_samples->size() == 333);
  GapQuery earlier_gaps;
  earlier_gaps.range = {0, gap(*lab, 5).end_us};
  auto gaps = store->gaps(earlier_gaps);
  REQUIRE(gaps.ok());
  CHECK(gaps->size() == 5);

  store->setMaxPageCount(std::nullopt);
  store->flush();
  stats = store->writerStats();
  CHECK(stats.last_error.empty());
  CHECK(stats.queued == 0);
  CHECK(countRows(path, "probe_samples") == 50'000);
  CHECK(countRows(path, "gaps") == 15);
  CHECK(countRows(path, "events") == 10);
}

TEST_CASE("a store configured with a page cap too small for its data reports a full disk",
          "[integration][storage][reliability]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.max_page_count = 1;
  options.retry_interval = 1h;
  auto store = openStore(path, options);
  // The cap is raised to the schema's own size; a cluster row fits on its page.
  const auto lab = store->ensureCluster("lab", "k1:9092");
  REQUIRE(lab.ok());
  for (int seq = 0; seq < 10'000; ++seq) store->addSample(sample(*lab, seq));
  store->flush();
  const auto stats = store->writerStats();
  CHECK(stats.failed_batches >= 1);
  CHECK_THAT(stats.last_error, Catch::StartsWith("database or disk is full"));
  // A first small batch may fit in the pages the schema already has; the rest waits.
  const auto stored = countRows(path, "probe_samples");
  CHECK(stored < 1'000);
  CHECK(static_cast<std::int64_t>(stats.queued) + stored == 10'000);
}

}  // namespace
}  // namespace kfaild::storage::write_failures_test
