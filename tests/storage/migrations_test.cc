#include "storage/migrations.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "storage/errc.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace kfaild::storage {
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
  for (const auto* table : {"clusters", "probe_partitions", "probe_samples", "gaps", "events",
                            "probe_samples_expanded"}) {
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

}  // namespace
}  // namespace kfaild::storage
