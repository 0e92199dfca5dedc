// The audit log's table: appended rows come back newest first, filtered by time and paged by id.

#include "storage/audit_log.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace kfaild::storage::audit_log_test {
namespace {

TEST_CASE("the audit log keeps every row and pages newest first",
          "[integration][storage][security]") {
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

AuditRecord row(std::int64_t time_us, const char* role, int status) {
  AuditRecord r;
  r.time_us = time_us;
  r.role = role;
  r.remote = "192.0.2.7";
  r.method = "POST";
  r.route = "/api/v1/clusters/{cluster}/drills";
  r.body_sha256 = std::string(64, 'b');
  r.body_bytes = 40;
  r.status = status;
  r.problem = status >= 400 ? "forbidden" : "";
  return r;
}

TEST_CASE(
    "over its budget the audit log deletes 100,000 refused rows and keeps every accepted change's "
    "row",
    "[integration][storage][security]") {
  kfaild::testing::TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  auto store = SqliteStore::open(path, SqliteStoreOptions{});
  REQUIRE(store.ok());
  auto log = AuditLog::open(path);
  REQUIRE(log.ok());
  // Twenty minutes, each with one drill started by the operator among 5,000 viewer refusals.
  constexpr std::int64_t kMinute = 60'000'000;
  std::vector<std::int64_t> accepted;
  for (int minute = 0; minute < 20; ++minute) {
    std::vector<AuditRecord> refusals;
    for (int i = 0; i < 5'000; ++i) refusals.push_back(row(minute * kMinute + i, "viewer", 403));
    REQUIRE((*log)->appendBatch(refusals, {}).ok());
    auto id = (*log)->append(row(minute * kMinute + 5'000, "operator", 202));
    REQUIRE(id.ok());
    accepted.push_back(*id);
  }
  const auto before = (*log)->bytes();
  REQUIRE(before.ok());
  REQUIRE(*before > 16 * 1024 * 1024);

  REQUIRE((*log)->pruneOldest(1024 * 1024).ok());
  const auto after = (*log)->bytes();
  REQUIRE(after.ok());
  CHECK(*after <= 1024 * 1024 + 64 * 1024);
  AuditQuery all;
  all.limit = 200'000;
  const auto rows = (*log)->records(all);
  REQUIRE(rows.ok());
  std::vector<std::int64_t> kept;
  for (const auto& r : *rows) {
    if (r.status < 400) kept.push_back(r.id);
  }
  std::reverse(kept.begin(), kept.end());
  CHECK(kept == accepted);
  // The newest refusals stay: it is the oldest that go.
  CHECK(rows->front().status == 202);
  CHECK(rows->at(1).time_us == 19 * kMinute + 4'999);
}

}  // namespace
}  // namespace kfaild::storage::audit_log_test
