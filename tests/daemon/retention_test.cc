// The retention task: each kind of record by its own retention (or forever), drill-window samples
// longer than raw ones, a pass at every start and then on the clock, the size bound held under a
// fast writer, and failures logged and counted.

#include "server/daemon/retention.h"

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "storage/sqlite.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace kfaild::daemon::retention_test {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kMinute = 60 * kSecond;
constexpr std::int64_t kHour = 60 * kMinute;
constexpr std::int64_t kDay = 24 * kHour;

// Nothing expires unless a test says so.
RetentionPolicy keepAll() {
  return RetentionPolicy{.samples_us = std::nullopt,
                         .drill_samples_us = std::nullopt,
                         .gaps_us = std::nullopt,
                         .events_us = std::nullopt};
}

// A database file with one cluster, and what a test puts in it.
class Db {
 public:
  explicit Db(storage::SqliteStoreOptions options = {}) {
    auto store = storage::SqliteStore::open(path(), options);
    REQUIRE(store.ok());
    store_ = std::move(*store);
    auto drills = storage::SqliteDrillStore::open(path());
    REQUIRE(drills.ok());
    drills_ = std::move(*drills);
    cluster_ = *store_->ensureCluster("c", "127.0.0.1:1");
  }

  std::string path() const { return (dir_ / "kfaild.db").string(); }
  storage::ClusterId cluster() const { return cluster_; }
  storage::SqliteStore& store() { return *store_; }
  storage::SqliteDrillStore& drills() { return *drills_; }

  void sample(std::int64_t send_us, std::int32_t partition = 0) {
    storage::ProbeSample s;
    s.cluster = cluster_;
    s.topic = "probe";
    s.partition = partition;
    s.seq = ++seq_;
    s.send_us = send_us;
    s.ack_us = send_us + 1000;
    s.offset = seq_;
    s.receive_us = send_us + 2000;
    store_->addSample(s);
  }
  void gap(std::int64_t end_us) {
    storage::Gap g;
    g.cluster = cluster_;
    g.topic = "probe";
    g.start_us = end_us - 2 * kSecond;
    g.end_us = end_us;
    g.duration_us = 2 * kSecond;
    store_->addGap(g);
  }
  void event(std::int64_t t_us) {
    storage::Event e;
    e.cluster = cluster_;
    e.t_us = t_us;
    e.source = "metadata";
    e.kind = "leader_change";
    e.detail = R"({"note":"padding the row a little, as real events are"})";
    store_->addEvent(e);
  }
  // A drill from `started_us` to `finished_us` (nullopt: still running).
  void drill(std::int64_t started_us, std::optional<std::int64_t> finished_us) {
    storage::DrillRecord d;
    d.cluster = cluster_;
    d.fault = "kill";
    d.target = R"({"broker":1})";
    d.options = "{}";
    d.state = finished_us ? "done" : "observe";
    d.created_us = started_us - kSecond;
    d.started_us = started_us;
    d.finished_us = finished_us;
    REQUIRE(drills_->createDrill(d).ok());
  }

  std::int64_t count(const std::string& table) {
    store_->flush();
    auto db = storage::sqlite::Database::open(path());
    REQUIRE(db.ok());
    // Samples are kept in blocks (storage/README.md): "probe_samples" counts the samples in them.
    auto n = (*db)->queryInt(
        table == "probe_samples"
            ? std::string("SELECT coalesce(sum(samples), 0) FROM probe_sample_blocks")
            : "SELECT count(*) FROM " + table);
    REQUIRE(n.ok());
    return *n;
  }
  bool hasSampleAt(std::int64_t send_us) {
    store_->flush();
    storage::SampleQuery q;
    q.cluster = cluster_;
    q.topic = "probe";
    q.range = {send_us, send_us + 1};
    auto found = store_->samples(q);
    REQUIRE(found.ok());
    return !found->empty();
  }
  std::string integrity() {
    auto db = storage::sqlite::Database::open(path());
    REQUIRE(db.ok());
    auto check = (*db)->prepare("PRAGMA integrity_check");
    REQUIRE(check.ok());
    REQUIRE(check->step().ok());
    return check->columnText(0);
  }

 private:
  kfaild::testing::TempDir dir_;
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<storage::SqliteDrillStore> drills_;
  storage::ClusterId cluster_ = 0;
  std::int64_t seq_ = 0;
};

// Waits (in real time) until the task has finished `passes` passes.
bool awaitPasses(const RetentionTask& task, std::uint64_t passes) {
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (task.retentionReport().passes < passes) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST_CASE("each kind is pruned by its own retention, and forever keeps it", "[unit][daemon]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  Db db;
  const auto now = clock.wallNow();
  db.drill(now - 72 * kHour, now - 72 * kHour + 2 * kMinute);
  db.sample(now - 10 * kDay);             // raw
  db.sample(now - 2 * kDay);              // raw
  db.sample(now - kHour);                 // raw, recent
  db.sample(now - 72 * kHour + kMinute);  // inside the drill
  db.gap(now - 40 * kDay);
  db.gap(now - kDay);
  db.event(now - 40 * kDay);
  db.event(now - 10 * kDay);
  db.event(now - kDay);
  db.store().flush();

  SECTION("by age") {
    auto policy = keepAll();
    policy.samples_us = 24 * kHour;
    policy.drill_samples_us = 48 * kHour;
    policy.gaps_us = 30 * kDay;
    policy.events_us = 7 * kDay;
    RetentionTask retention(db.store(), db.drills(), clock, policy);
    const auto pass = retention.prune();
    CHECK(pass.ok);
    CHECK(pass.samples == 2);
    CHECK(pass.drill_samples == 1);
    CHECK(pass.gaps == 1);
    CHECK(pass.events == 2);
    CHECK(db.count("probe_samples") == 1);
    CHECK(db.hasSampleAt(now - kHour));
    CHECK(db.count("gaps") == 1);
    CHECK(db.count("events") == 1);
    CHECK(db.count("drills") == 1);
    const auto report = retention.retentionReport();
    CHECK(report.pruned_samples == 2);
    CHECK(report.pruned_drill_samples == 1);
    CHECK(report.pruned_gaps == 1);
    CHECK(report.pruned_events == 2);
    CHECK(report.failures == 0);
    CHECK(report.passes == 1);
    CHECK(report.last_success_us == now);
    CHECK_FALSE(report.max_bytes);
  }
  SECTION("forever") {
    RetentionTask retention(db.store(), db.drills(), clock, keepAll());
    const auto pass = retention.prune();
    CHECK(pass.ok);
    CHECK(pass.samples + pass.drill_samples + pass.gaps + pass.events == 0);
    CHECK(db.count("probe_samples") == 4);
    CHECK(db.count("gaps") == 2);
    CHECK(db.count("events") == 3);
    CHECK(retention.retentionReport().last_success_us == now);
  }
  SECTION("raw samples forever, the rest by age") {
    auto policy = keepAll();
    policy.drill_samples_us = 48 * kHour;
    policy.gaps_us = 30 * kDay;
    RetentionTask retention(db.store(), db.drills(), clock, policy);
    const auto pass = retention.prune();
    CHECK(pass.samples == 0);
    CHECK(pass.drill_samples == 1);
    CHECK(pass.gaps == 1);
    CHECK(pass.events == 0);
    CHECK(db.count("probe_samples") == 3);
  }
}

TEST_CASE("samples around a drill are kept longer than raw samples, then go too",
          "[unit][daemon]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  Db db;
  const auto now = clock.wallNow();
  const auto started = now - 72 * kHour;
  const auto finished = started + 2 * kMinute;
  db.drill(started, finished);
  const auto running_since = now - 30 * kMinute;
  db.drill(running_since, std::nullopt);
  db.sample(now - 96 * kHour);         // raw: pruned
  db.sample(started - 90 * kSecond);   // more than a minute before the drill: raw
  db.sample(started - 30 * kSecond);   // within a minute before the drill: kept
  db.sample(started + kMinute);        // during the drill: kept
  db.sample(finished + 50 * kSecond);  // within a minute after it: kept
  db.sample(finished + 90 * kSecond);  // 90 s after it: raw
  db.sample(running_since + kMinute);  // the running drill, newer than the raw cutoff
  db.sample(now - kHour);              // recent raw: kept
  db.store().flush();

  auto policy = keepAll();
  policy.samples_us = 24 * kHour;
  policy.drill_samples_us = 30 * kDay;
  {
    RetentionTask retention(db.store(), db.drills(), clock, policy);
    const auto pass = retention.prune();
    CHECK(pass.samples == 3);
    CHECK(pass.drill_samples == 0);
    CHECK(db.count("probe_samples") == 5);
    CHECK(db.hasSampleAt(started - 30 * kSecond));
    CHECK(db.hasSampleAt(finished + 50 * kSecond));
    CHECK_FALSE(db.hasSampleAt(finished + 90 * kSecond));
  }
  // A month later the drill's samples are past their own retention, and so is the one of the
  // drill that still runs (its window reaches to now).
  clock.advance(31 * kDay);
  RetentionTask retention(db.store(), db.drills(), clock, policy);
  const auto pass = retention.prune();
  CHECK(pass.drill_samples == 3 + 1);
  CHECK(pass.samples == 1);
  CHECK(db.count("probe_samples") == 0);
}

TEST_CASE("a kfaild restarted every few minutes still prunes at every start", "[unit][daemon]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  Db db;
  auto policy = keepAll();
  policy.samples_us = kHour;
  policy.interval_us = 10 * kMinute;
  for (int restart = 0; restart < 6; ++restart) {
    INFO("restart " << restart);
    const auto now = clock.wallNow();
    db.sample(now - 2 * kHour);
    db.sample(now - 2 * kMinute);
    db.store().flush();
    RetentionTask retention(db.store(), db.drills(), clock, policy);
    retention.start();
    REQUIRE(awaitPasses(retention, 1));
    CHECK(retention.retentionReport().pruned_samples == 1);
    CHECK_FALSE(db.hasSampleAt(now - 2 * kHour));
    CHECK(db.hasSampleAt(now - 2 * kMinute));
    retention.stop();
    // Up again three minutes later: never as long as one interval.
    clock.advance(3 * kMinute);
  }
}

TEST_CASE("after its first pass the retention task prunes again every interval", "[unit][daemon]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  Db db;
  auto policy = keepAll();
  policy.samples_us = kHour;
  policy.interval_us = 10 * kMinute;
  RetentionTask retention(db.store(), db.drills(), clock, policy);
  const auto started = clock.monoNow();
  retention.start();
  REQUIRE(awaitPasses(retention, 1));
  for (std::uint64_t pass = 2; pass <= 4; ++pass) {
    INFO("pass " << pass);
    const auto now = clock.wallNow();
    db.sample(now - kHour + 5 * kMinute);  // expires before the next pass
    db.store().flush();
    REQUIRE(clock.advanceToNextDeadline());
    CHECK(clock.monoNow() == started + static_cast<std::int64_t>(pass - 1) * policy.interval_us);
    REQUIRE(awaitPasses(retention, pass));
    CHECK(db.count("probe_samples") == 0);
  }
  CHECK(retention.retentionReport().pruned_samples == 3);
}

TEST_CASE("the retention task stops at once while it waits for its next pass", "[unit][daemon]") {
  kfaild::testing::ManualClock clock;
  Db db;
  for (int i = 0; i < 50; ++i) {
    RetentionTask retention(db.store(), db.drills(), clock, RetentionPolicy{});
    retention.start();
    auto stopped = std::async(std::launch::async, [&] { retention.stop(); });
    REQUIRE(stopped.wait_for(10s) == std::future_status::ready);
  }
}

// Holds a write lock on the database from another connection, as another process could.
class WriteLock {
 public:
  explicit WriteLock(const std::string& path) {
    auto db = storage::sqlite::Database::open(path);
    REQUIRE(db.ok());
    db_ = std::move(*db);
    REQUIRE(db_->exec("BEGIN EXCLUSIVE").ok());
  }
  void release() { REQUIRE(db_->exec("COMMIT").ok()); }

 private:
  std::unique_ptr<storage::sqlite::Database> db_;
};

TEST_CASE(
    "a prune that fails is logged with the database's error and counted, and the next one "
    "succeeds",
    "[integration][daemon]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  storage::SqliteStoreOptions options;
  options.busy_timeout = 20ms;
  Db db(options);
  const auto now = clock.wallNow();
  db.sample(now - 2 * kDay);
  db.gap(now - 2 * kDay);
  db.event(now - 2 * kDay);
  db.store().flush();
  auto policy = keepAll();
  policy.samples_us = kDay;
  policy.gaps_us = kDay;
  policy.events_us = kDay;
  RetentionTask retention(db.store(), db.drills(), clock, policy);

  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  auto previous = spdlog::default_logger();
  const auto previous_level = spdlog::get_level();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("retention-test", ring));
  spdlog::set_level(spdlog::level::info);
  WriteLock lock(db.path());
  const auto failed = retention.prune();
  spdlog::set_default_logger(previous);
  spdlog::set_level(previous_level);

  CHECK_FALSE(failed.ok);
  auto report = retention.retentionReport();
  CHECK(report.failures == 3);  // raw samples, gaps, events
  CHECK(report.passes == 1);
  CHECK_FALSE(report.last_success_us);
  int warnings = 0;
  for (const auto& line : ring->last_formatted()) {
    if (line.find("[warning]") != std::string::npos &&
        line.find("retention could not prune") != std::string::npos &&
        line.find("database is locked") != std::string::npos) {
      ++warnings;
    }
  }
  CHECK(warnings == 3);

  lock.release();
  clock.advance(10 * kMinute);
  const auto pass = retention.prune();
  CHECK(pass.ok);
  CHECK(pass.samples == 1);
  CHECK(pass.gaps == 1);
  CHECK(pass.events == 1);
  report = retention.retentionReport();
  CHECK(report.failures == 3);
  CHECK(report.last_success_us == clock.wallNow());
}

TEST_CASE(
    "storage.max_bytes holds under a fast writer, raw samples going first and the file "
    "not growing",
    "[integration][daemon][reliability]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  Db db;
  // About a third of what the 12 rounds write (samples are kept in blocks of about 7 bytes a
  // sample: storage/README.md).
  constexpr std::int64_t kMaxBytes = 2LL * 1024 * 1024;
  auto policy = keepAll();
  policy.max_bytes = kMaxBytes;
  RetentionTask retention(db.store(), db.drills(), clock, policy);

  // Three probe partitions at 20 ms, 400 s of probing per round: 60,000 samples, a gap and an
  // event every 10 s. A drill in the first round.
  constexpr std::int64_t kInterval = 20'000;
  constexpr std::int64_t kRoundUs = 400 * kSecond;
  const auto start = clock.wallNow();
  db.drill(start + 100 * kSecond, start + 150 * kSecond);
  std::int64_t drill_window_samples = 0;
  std::int64_t slack = 0;  // what one round writes
  for (int round = 0; round < 12; ++round) {
    INFO("round " << round);
    const auto from = start + round * kRoundUs;
    for (std::int64_t t = from; t < from + kRoundUs; t += kInterval) {
      for (std::int32_t p = 0; p < 3; ++p) db.sample(t, p);
      if (t >= start + 40 * kSecond && t < start + 210 * kSecond) drill_window_samples += 3;
      if ((t - from) % (10 * kSecond) == 0) {
        db.gap(t);
        db.event(t);
      }
    }
    db.store().flush();
    clock.advance(kRoundUs);
    auto written = db.store().databaseSize();
    REQUIRE(written.ok());
    if (round == 0) slack = written->usedBytes();
    CHECK(written->fileBytes() <= kMaxBytes + slack);

    const auto pass = retention.prune();
    CHECK(pass.ok);
    auto held = db.store().databaseSize();
    REQUIRE(held.ok());
    CHECK(held->usedBytes() <= kMaxBytes);
    CHECK(held->fileBytes() <= kMaxBytes);
    CHECK(std::filesystem::file_size(db.path()) <= static_cast<std::uintmax_t>(kMaxBytes + slack));
    CHECK(db.integrity() == "ok");
  }
  const auto report = retention.retentionReport();
  CHECK(report.failures == 0);
  CHECK(report.max_bytes == kMaxBytes);
  // Raw samples went first: 720,000 were written, the bound holds about a third of them, and
  // every drill-window sample, gap and event is still there.
  CHECK(report.pruned_samples > 400'000);
  CHECK(report.pruned_drill_samples == 0);
  CHECK(report.pruned_gaps + report.pruned_events == 0);
  CHECK(db.count("probe_samples") == 720'000 - static_cast<std::int64_t>(report.pruned_samples));
  storage::SampleQuery in_drill;
  in_drill.cluster = db.cluster();
  in_drill.topic = "probe";
  in_drill.range = {start + 40 * kSecond, start + 210 * kSecond};
  for (std::int32_t p = 0; p < 3; ++p) {
    in_drill.partition = p;
    auto kept = db.store().samples(in_drill);
    REQUIRE(kept.ok());
    CHECK(static_cast<std::int64_t>(kept->size()) == drill_window_samples / 3);
  }
}

TEST_CASE("the size bound deletes only what it must when the newest records are days old",
          "[integration][daemon]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  Db db;
  const auto start = clock.wallNow();
  for (std::int64_t t = start; t < start + 2 * kHour; t += 20'000) db.sample(t);
  db.store().flush();
  const auto written = db.store().databaseSize();
  REQUIRE(written.ok());
  // kfaild was down for ten days; the bound is half of what the file holds.
  clock.advance(10 * kDay);
  auto policy = keepAll();
  policy.max_bytes = written->usedBytes() / 2;
  RetentionTask retention(db.store(), db.drills(), clock, policy);
  const auto pass = retention.prune();
  CHECK(pass.ok);
  const auto held = db.store().databaseSize();
  REQUIRE(held.ok());
  CHECK(held->usedBytes() <= *policy.max_bytes);
  // Down to 90 % of the bound, not to nothing: about half the samples are left.
  CHECK(held->usedBytes() > *policy.max_bytes / 2);
  CHECK(db.count("probe_samples") > 360'000 / 4);
  CHECK(db.hasSampleAt(start + 2 * kHour - 20'000));
}

// Not run by default (hidden tag): the figures in storage/README.md come from
//   build/tests/kfaild_tests "[retention-bench]"
TEST_CASE("retention prune throughput and the size the bound holds", "[.][retention-bench]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  Db db;
  constexpr std::int64_t kInterval = 20'000;
  constexpr std::int64_t kSamples = 2'000'000;
  const auto start = clock.wallNow();
  const auto span = kSamples / 3 * kInterval;
  const auto fill = [&](std::int64_t from) {
    for (std::int64_t t = from; t < from + span; t += kInterval) {
      for (std::int32_t p = 0; p < 3; ++p) db.sample(t, p);
      if ((t - from) / kInterval % 100'000 == 0) db.store().flush();  // the queue never drops
    }
    db.store().flush();
    REQUIRE(db.store().writerStats().dropped_samples == 0);
  };
  fill(start);
  clock.advance(span);
  const auto before = db.store().databaseSize();
  REQUIRE(before.ok());

  auto by_age = keepAll();
  by_age.samples_us = kHour;
  RetentionTask aged(db.store(), db.drills(), clock, by_age);
  auto t0 = std::chrono::steady_clock::now();
  const auto pass = aged.prune();
  const double age_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(pass.ok);
  REQUIRE(pass.samples > 1'000'000);

  // Refill, then hold 16 MiB by size alone.
  fill(start + span);
  clock.advance(span);
  const auto rows_before = db.count("probe_samples");
  constexpr std::int64_t kMaxBytes = 16LL * 1024 * 1024;
  auto by_size = keepAll();
  by_size.max_bytes = kMaxBytes;
  RetentionTask bounded(db.store(), db.drills(), clock, by_size);
  const auto full = db.store().databaseSize();
  t0 = std::chrono::steady_clock::now();
  const auto held_pass = bounded.prune();
  const double size_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(held_pass.ok);
  const auto held = db.store().databaseSize();
  REQUIRE(held.ok());
  CHECK(held->usedBytes() <= kMaxBytes);
  CHECK(db.integrity() == "ok");
  std::printf("written: %lld samples, %lld bytes used\n", static_cast<long long>(kSamples),
              static_cast<long long>(before->usedBytes()));
  std::printf("by age: %lld samples pruned in %.2f s: %.0f rows/s\n",
              static_cast<long long>(pass.samples), age_s,
              static_cast<double>(pass.samples) / age_s);
  std::printf(
      "by size: from %lld bytes used, %lld samples pruned in %.2f s (%.0f rows/s); holds %lld "
      "bytes used, "
      "file %lld bytes (max_bytes %lld)\n",
      static_cast<long long>(full->usedBytes()), static_cast<long long>(held_pass.samples), size_s,
      static_cast<double>(held_pass.samples) / size_s, static_cast<long long>(held->usedBytes()),
      static_cast<long long>(held->fileBytes()), static_cast<long long>(kMaxBytes));
  std::printf("by size: %lld of %lld samples left\n",
              static_cast<long long>(db.count("probe_samples")),
              static_cast<long long>(rows_before));
}

}  // namespace
}  // namespace kfaild::daemon::retention_test

namespace kfaild::daemon::retention_test {
namespace {

storage::AuditRecord auditRow(std::int64_t time_us) {
  return {0,
          time_us,
          "viewer",
          "192.0.2.7",
          "POST",
          "/api/v1/clusters/{cluster}/drills",
          std::string(64, 'a'),
          20,
          403,
          "forbidden",
          1,
          false};
}

TEST_CASE(
    "the audit log is held to its own budget and retention before any measurement data is pruned",
    "[unit][daemon]") {
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  Db db;
  const auto now = clock.wallNow();
  for (int i = 0; i < 2000; ++i) db.sample(now - kHour + i * 1000);
  db.store().flush();
  auto audit = storage::AuditLog::open(db.path());
  REQUIRE(audit.ok());
  // A year and a day old, then 40,000 recent rows: about 5 MB, far over a 1 MiB budget.
  REQUIRE((*audit)->append(auditRow(now - 366 * kDay)).ok());
  std::vector<storage::AuditRecord> rows;
  for (int i = 0; i < 40'000; ++i) rows.push_back(auditRow(now - kHour + i));
  REQUIRE(
      (*audit)->appendBatch(rows, {{now - kMinute, "192.0.2.8", "unmatched", 404, 12345}}).ok());
  const auto before = (*audit)->bytes();
  REQUIRE(before.ok());
  REQUIRE(*before > 4 * 1024 * 1024);

  auto policy = keepAll();
  policy.audit_us = 365 * kDay;
  policy.max_bytes = 16LL * 1024 * 1024;
  policy.audit_max_bytes = 1024 * 1024;
  RetentionTask retention(db.store(), db.drills(), audit->get(), clock, policy);
  const auto pass = retention.prune();
  CHECK(pass.ok);
  const auto after = (*audit)->bytes();
  REQUIRE(after.ok());
  CHECK(*after <= 1024 * 1024);
  CHECK(*after > 512 * 1024);  // down to about 90 % of the budget, not emptied
  CHECK(pass.audit == 40'001 + 1 - db.count("audit_log") - db.count("audit_refusals"));
  // The newest rows stay, the year-old one went by retention, the count of refusals first.
  storage::AuditQuery newest_first;
  newest_first.limit = 1;
  const auto newest = (*audit)->records(newest_first);
  REQUIRE(newest.ok());
  CHECK(newest->front().time_us == now - kHour + 39'999);
  CHECK(db.count("audit_refusals") == 0);
  CHECK(db.count("probe_samples") == 2000);
  CHECK(pass.samples == 0);
}

}  // namespace
}  // namespace kfaild::daemon::retention_test
