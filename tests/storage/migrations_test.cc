#include "storage/migrations.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "storage/errc.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "tests/storage/store_test_support.h"
#include "tests/support/temp_dir.h"

namespace kfaild::storage::migrations_test {
namespace {

using kfaild::testing::TempDir;

std::unique_ptr<sqlite::Database> openRaw(const std::string& path) {
  auto db = sqlite::Database::open(path);
  REQUIRE(db.ok());
  return std::move(*db);
}

std::int64_t queryInt(sqlite::Database& db, const std::string& sql) {
  auto value = db.queryInt(sql);
  REQUIRE(value.ok());
  return *value;
}

bool hasTable(sqlite::Database& db, const std::string& name) {
  return queryInt(db, "SELECT count(*) FROM sqlite_master WHERE name = '" + name + "'") == 1;
}

TEST_CASE("a fresh database gets the latest schema version and every table",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  {
    auto store = SqliteStore::open(path);
    REQUIRE(store.ok());
  }
  auto db = openRaw(path);
  CHECK(queryInt(*db, "PRAGMA user_version") == latestSchemaVersion());
  CHECK(latestSchemaVersion() == static_cast<int>(schemaMigrations().size()));
  for (const auto* table :
       {"clusters", "probe_partitions", "probe_sample_blocks", "gaps", "events"}) {
    INFO(table);
    CHECK(hasTable(*db, table));
  }
  auto mode = db->prepare("PRAGMA journal_mode");
  REQUIRE(mode.ok());
  REQUIRE(mode->step().ok());
  CHECK(mode->columnText(0) == "wal");
}

TEST_CASE("reopening a database at the latest version changes neither schema nor data",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  std::int64_t schema_cookie = 0;
  ClusterId id = 0;
  {
    auto store = SqliteStore::open(path);
    REQUIRE(store.ok());
    auto cluster = (*store)->ensureCluster("lab", "k1:9092");
    REQUIRE(cluster.ok());
    id = *cluster;
  }
  {
    auto db = openRaw(path);
    schema_cookie = queryInt(*db, "PRAGMA schema_version");
  }
  {
    auto store = SqliteStore::open(path);
    REQUIRE(store.ok());
    auto clusters = (*store)->clusters();
    REQUIRE(clusters.ok());
    REQUIRE(clusters->size() == 1);
    CHECK(clusters->front().id == id);
  }
  auto db = openRaw(path);
  CHECK(queryInt(*db, "PRAGMA schema_version") == schema_cookie);
  CHECK(queryInt(*db, "PRAGMA user_version") == latestSchemaVersion());
}

TEST_CASE("a database stamped by a newer kfaild is refused and left untouched",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  const auto future = latestSchemaVersion() + 1;
  {
    auto db = openRaw(path);
    REQUIRE(db->exec("PRAGMA user_version = " + std::to_string(future)).ok());
  }

  auto store = SqliteStore::open(path);
  REQUIRE_FALSE(store.ok());
  CHECK(store.error().code == errc::newer_schema);
  CHECK_THAT(store.error().message,
             Catch::Contains(std::to_string(future)) && Catch::Contains("newer kfaild"));

  auto db = openRaw(path);
  CHECK(queryInt(*db, "PRAGMA user_version") == future);
  CHECK(queryInt(*db, "SELECT count(*) FROM sqlite_master") == 0);
}

TEST_CASE("an older database is upgraded by the steps it lacks, keeping its data",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  const std::vector<Migration> steps = {
      {"first", "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (7);"},
      {"second", "CREATE TABLE b (y INTEGER); INSERT INTO b SELECT x * 2 FROM a;"},
  };
  auto db = openRaw(path);
  REQUIRE(migrate(*db, std::span(steps).first(1)).ok());
  CHECK(queryInt(*db, "PRAGMA user_version") == 1);
  CHECK_FALSE(hasTable(*db, "b"));

  REQUIRE(migrate(*db, steps).ok());
  CHECK(queryInt(*db, "PRAGMA user_version") == 2);
  CHECK(queryInt(*db, "SELECT x FROM a") == 7);
  CHECK(queryInt(*db, "SELECT y FROM b") == 14);

  // Already at the last step: nothing runs again (a second INSERT would make count(*) 2).
  REQUIRE(migrate(*db, steps).ok());
  CHECK(queryInt(*db, "SELECT count(*) FROM b") == 1);
}

TEST_CASE("a failing migration step leaves the database at the previous version",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  const std::vector<Migration> steps = {
      {"first", "CREATE TABLE a (x INTEGER);"},
      {"broken", "CREATE TABLE b (y INTEGER); INSERT INTO no_such_table VALUES (1);"},
  };
  auto db = openRaw(path);
  const auto migrated = migrate(*db, steps);
  REQUIRE_FALSE(migrated.ok());
  CHECK(migrated.error().code == errc::migration_failed);
  CHECK_THAT(migrated.error().message,
             Catch::Contains("migration 2 (broken)") && Catch::Contains("no_such_table"));
  CHECK(queryInt(*db, "PRAGMA user_version") == 1);
  CHECK(hasTable(*db, "a"));
  CHECK_FALSE(hasTable(*db, "b"));
  CHECK_FALSE(db->inTransaction());
}

TEST_CASE("a file that is not a database is refused with open_failed", "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "notes.txt").string();
  std::ofstream(path) << std::string(8192, 'x');
  auto store = SqliteStore::open(path);
  REQUIRE_FALSE(store.ok());
  CHECK(store.error().code == errc::open_failed);
  CHECK_THAT(store.error().message, Catch::Contains("not a database"));
}

TEST_CASE("a database in a missing directory is refused with open_failed",
          "[integration][storage]") {
  TempDir dir;
  auto store = SqliteStore::open((dir / "missing" / "kfaild.db").string());
  REQUIRE_FALSE(store.ok());
  CHECK(store.error().code == errc::open_failed);
  CHECK_THAT(store.error().message, Catch::Contains("missing/kfaild.db"));
}

// For the conversion tests: a step's convert function moves rows of `a` to `b` two at a time.
int g_convert_calls = 0;
int g_convert_fail_on = 0;  // the call that fails (0: none)

Result<bool> moveTwoRows(sqlite::Database& db) {
  ++g_convert_calls;
  if (g_convert_calls == g_convert_fail_on) return Error{errc::io_error, "disk went away"};
  if (auto moved = db.exec("INSERT INTO b SELECT x FROM a ORDER BY x LIMIT 2; "
                           "DELETE FROM a WHERE x IN (SELECT x FROM a ORDER BY x LIMIT 2);");
      !moved) {
    return moved.error();
  }
  auto left = db.queryInt("SELECT count(*) FROM a");
  if (!left) return left.error();
  return *left > 0;
}

TEST_CASE("a step's conversion runs in bounded transactions and resumes after a failure",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  const std::vector<Migration> steps = {
      {"first",
       "CREATE TABLE a (x INTEGER); CREATE TABLE b (x INTEGER); "
       "INSERT INTO a VALUES (1), (2), (3), (4), (5), (6), (7);"},
      {"convert", "DROP TABLE a;", moveTwoRows},
  };
  auto db = openRaw(path);
  g_convert_calls = 0;
  g_convert_fail_on = 3;
  const auto failed = migrate(*db, steps);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code == errc::migration_failed);
  CHECK_THAT(failed.error().message,
             Catch::Contains("migration 2 (convert)") && Catch::Contains("disk went away"));
  // The two batches before the failure stay converted; the step itself is not done.
  CHECK(queryInt(*db, "PRAGMA user_version") == 1);
  CHECK(queryInt(*db, "SELECT count(*) FROM b") == 4);
  CHECK(queryInt(*db, "SELECT count(*) FROM a") == 3);
  CHECK_FALSE(db->inTransaction());

  g_convert_calls = 0;
  g_convert_fail_on = 0;
  REQUIRE(migrate(*db, steps).ok());
  CHECK(g_convert_calls == 2);  // 5, 6; then 7 with the step's own SQL in one transaction
  CHECK(queryInt(*db, "PRAGMA user_version") == 2);
  CHECK_FALSE(hasTable(*db, "a"));
  CHECK(queryInt(*db, "SELECT count(*) FROM b") == 7);
  CHECK(queryInt(*db, "SELECT sum(x) FROM b") == 28);
}

// The SQL kfaild wrote samples with before they were kept in blocks.
constexpr std::string_view kOldInsertSample = R"sql(
INSERT OR REPLACE INTO probe_samples
  (partition_id, send_us, seq, ack_delay_us, ack_error, offset, receive_delay_us)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7))sql";

TEST_CASE("a database with one row per sample is converted to blocks and reads the same samples",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  const auto all = schemaMigrations();
  const auto blocks_step = std::find_if(all.begin(), all.end(), [](const Migration& m) {
    return m.description == "probe samples in blocks";
  });
  REQUIRE(blocks_step != all.end());
  const auto before_blocks = static_cast<std::size_t>(blocks_step - all.begin());

  // Three partitions, 130,000 samples: more than two of the conversion's batches (50,000 rows).
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> roll(0, 99);
  std::uniform_int_distribution<std::int64_t> delay(300, 40'000);
  std::vector<std::vector<ProbeSample>> want(3);
  {
    auto db = openRaw(path);
    REQUIRE(db->exec("PRAGMA journal_mode = WAL").ok());
    REQUIRE(migrate(*db, all.first(before_blocks)).ok());
    REQUIRE(db->exec("INSERT INTO clusters (name, bootstrap, created_us) VALUES ('lab', 'k1', 1);"
                     "INSERT INTO probe_partitions (cluster_id, topic, partition) VALUES "
                     "(1, 'orders', 0), (1, 'orders', 1), (1, 'single', 0);")
                .ok());
    REQUIRE(db->exec("BEGIN").ok());
    auto insert = db->prepare(kOldInsertSample);
    REQUIRE(insert.ok());
    const std::int64_t t0 = 1'764'000'000'000'000;
    for (int i = 0; i < 130'000; ++i) {
      const int p = i % 3;
      ProbeSample s;
      s.cluster = 1;
      s.topic = p == 2 ? "single" : "orders";
      s.partition = p == 1 ? 1 : 0;
      s.seq = i / 3;
      s.send_us = t0 + (i / 3) * 20'000 + roll(rng) * 7;
      const int r = roll(rng);
      if (r >= 2) s.ack_us = s.send_us + delay(rng);
      if (r == 2) s.ack_error = -192;
      if (r >= 3) s.offset = 5'000 + i / 3 - (r == 50 ? 7 : 0);
      if (r >= 4) s.receive_us = *s.ack_us + delay(rng);
      insert->bindInt(1, p + 1);
      insert->bindInt(2, s.send_us);
      insert->bindInt(3, s.seq);
      insert->bindOptionalInt(4, s.ack_us ? std::optional(*s.ack_us - s.send_us) : std::nullopt);
      insert->bindInt(5, s.ack_error);
      insert->bindOptionalInt(6, s.offset);
      insert->bindOptionalInt(
          7, s.receive_us ? std::optional(*s.receive_us - s.send_us) : std::nullopt);
      REQUIRE(insert->run().ok());
      insert->reset();
      want[static_cast<std::size_t>(p)].push_back(s);
    }
    REQUIRE(db->exec("COMMIT").ok());
  }

  auto store = SqliteStore::open(path);
  REQUIRE(store.ok());
  {
    auto db = openRaw(path);
    CHECK(queryInt(*db, "PRAGMA user_version") == latestSchemaVersion());
    CHECK_FALSE(hasTable(*db, "probe_samples"));
    CHECK_FALSE(hasTable(*db, "probe_samples_expanded"));
    CHECK(queryInt(*db, "SELECT sum(samples) FROM probe_sample_blocks") == 130'000);
  }
  for (auto& partition : want) {
    std::sort(partition.begin(), partition.end(), [](const ProbeSample& a, const ProbeSample& b) {
      return a.send_us != b.send_us ? a.send_us < b.send_us : a.seq < b.seq;
    });
    SampleQuery query;
    query.cluster = 1;
    query.topic = partition.front().topic;
    query.partition = partition.front().partition;
    query.limit = 1'000'000;
    auto got = (*store)->samples(query);
    REQUIRE(got.ok());
    REQUIRE(got->size() == partition.size());
    for (std::size_t i = 0; i < got->size(); ++i) {
      INFO("got " << testing::describe((*got)[i]) << ", want " << testing::describe(partition[i]));
      REQUIRE(testing::sameRecord((*got)[i], partition[i]));
    }
  }
}

}  // namespace
}  // namespace kfaild::storage::migrations_test
