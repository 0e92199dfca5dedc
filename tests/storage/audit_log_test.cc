// The audit log's table: appended rows come back newest first, filtered by time and paged by id.

#include "storage/audit_log.h"

#include <catch2/catch.hpp>

#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace kfaild::storage {
namespace {

TEST_CASE("the audit log keeps every row and pages newest first", "[integration][storage][security]") {
  kfaild::testing::TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  auto store = SqliteStore::open(path, SqliteStoreOptions{});
  REQUIRE(store.ok());
  auto log = AuditLog::open(path);
  REQUIRE(log.ok());
  for (int i = 0; i < 25; ++i) {
    AuditRecord r;
    r.time_us = 1'000'000 * i;
    r.role = i % 2 == 0 ? "operator" : "anonymous";
    r.remote = "127.0.0.1";
    r.method = "POST";
    r.route = "/api/v1/clusters/{cluster}/drills";
    r.body_sha256 = std::string(64, 'a');
    r.body_bytes = i;
    r.status = i % 2 == 0 ? 202 : 401;
    r.problem = i % 2 == 0 ? "" : "unauthorized";
    auto id = (*log)->append(r);
    REQUIRE(id.ok());
    CHECK(*id == i + 1);
  }
  AuditQuery all;
  all.limit = 100;
  auto rows = (*log)->records(all);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 25);
  CHECK(rows->front().id == 25);
  CHECK(rows->front().body_bytes == 24);
  CHECK(rows->back().problem.empty());
  CHECK((*rows)[1].problem == "unauthorized");

  AuditQuery page;
  page.before_id = 10;
  page.from_us = 3'000'000;
  page.to_us = 8'000'000;
  page.limit = 3;
  rows = (*log)->records(page);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  CHECK(rows->at(0).id == 8);
  CHECK(rows->at(2).id == 6);

  // A second connection (the API reads while the server writes) sees the rows too.
  auto reader = AuditLog::open(path);
  REQUIRE(reader.ok());
  CHECK((*reader)->records(all)->size() == 25);
}

}  // namespace
}  // namespace kfaild::storage
