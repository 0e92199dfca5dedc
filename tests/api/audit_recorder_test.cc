// The audit recorder: accepted mutations committed before their answer, refused requests with a
// token kept as rows, refused anonymous ones counted per minute, and a flood of them over a
// socket leaving the database and the probe's samples as they were.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "api/audit_endpoints.h"
#include "api/http_server.h"
#include "server/daemon/retention.h"
#include "storage/sqlite.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace kfaild::api::audit_recorder_test {
namespace {

constexpr std::int64_t kMinuteUs = 60'000'000;

std::int64_t count(const std::string& path, const std::string& sql) {
  auto db = storage::sqlite::Database::open(path);
  REQUIRE(db.ok());
  auto n = (*db)->queryInt(sql);
  REQUIRE(n.ok());
  return *n;
}

// A migrated database file and its audit log.
struct AuditDb {
  AuditDb() {
    auto store = storage::SqliteStore::open(path());
    REQUIRE(store.ok());
    store_ = std::move(*store);
    auto log = storage::AuditLog::open(path());
    REQUIRE(log.ok());
    log_ = std::move(*log);
  }
  std::string path() const { return (dir_ / "kfaild.db").string(); }
  std::int64_t rows() const { return count(path(), "SELECT count(*) FROM audit_log"); }

  kfaild::testing::TempDir dir_;
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<storage::AuditLog> log_;
};

AuditEntry entry(Role role, int status, std::string route = "/api/v1/clusters/{cluster}/drills",
                 bool matched = true, std::string remote = "192.0.2.1") {
  AuditEntry e;
  e.role = role;
  e.remote_address = std::move(remote);
  e.method = "POST";
  e.route = std::move(route);
  e.matched = matched;
  e.status = status;
  return e;
}

TEST_CASE("an accepted mutation's audit row is committed before the sink returns", "[unit][api]") {
  AuditDb db;
  kfaild::testing::ManualClock clock;
  AuditRecorder recorder(*db.log_, clock);  // no thread, no flush
  recorder(entry(Role::kOperator, 202));
  CHECK(db.rows() == 1);
  CHECK(recorder.written() == 1);
}

TEST_CASE("refused requests with a token are kept as rows and anonymous ones counted per minute",
          "[unit][api]") {
  AuditDb db;
  kfaild::testing::ManualClock clock(1'800'000'000'000'000 + 5'000'000);
  AuditRecorder recorder(*db.log_, clock);
  recorder(entry(Role::kViewer, 403));
  for (int i = 0; i < 500; ++i) recorder(entry(Role::kAnonymous, 401));
  for (int i = 0; i < 300; ++i)
    recorder(entry(Role::kAnonymous, 404, "/" + std::string(190, 'x'), false));
  clock.advance(kMinuteUs);
  recorder(entry(Role::kAnonymous, 401));
  CHECK(db.rows() == 0);  // refused requests wait for the recorder's thread or stop()
  recorder.stop();
  CHECK(db.rows() == 1);
  const auto counts = db.log_->refusals(100);
  REQUIRE(counts.ok());
  const auto minute = 1'800'000'000'000'000 - 1'800'000'000'000'000 % kMinuteUs;
  using R = storage::AuditRefusal;
  const auto same = [](const R& a, const R& b) {
    return a.minute_us == b.minute_us && a.remote == b.remote && a.route_class == b.route_class &&
           a.status == b.status && a.count == b.count;
  };
  REQUIRE(counts->size() == 3);
  CHECK(same((*counts)[0], R{minute, "192.0.2.1", "/api/v1/clusters/{cluster}/drills", 401, 500}));
  CHECK(same((*counts)[1], R{minute, "192.0.2.1", "unmatched", 404, 300}));
  CHECK(same((*counts)[2],
             R{minute + kMinuteUs, "192.0.2.1", "/api/v1/clusters/{cluster}/drills", 401, 1}));
}

TEST_CASE("the recorder's queue is bounded: beyond it refused requests are counted",
          "[unit][api]") {
  AuditDb db;
  kfaild::testing::ManualClock clock;
  AuditRecorder recorder(
      *db.log_, clock,
      {.flush_interval = std::chrono::milliseconds(1000), .max_queued = 10, .max_counts = 3});
  for (int i = 0; i < 25; ++i) recorder(entry(Role::kViewer, 403));
  for (int i = 0; i < 20; ++i)
    recorder(entry(Role::kAnonymous, 401, "/r", true, "198.51.100." + std::to_string(i)));
  recorder.flush();
  // Ten rows of their own, the other 15 in one aggregated row (the threshold is 10 a minute).
  CHECK(db.rows() == 11);
  CHECK(count(db.path(), "SELECT count FROM audit_log WHERE aggregated = 1") == 15);
  CHECK(count(db.path(), "SELECT count(*) FROM audit_refusals") <= 3 + 1);
  CHECK(count(db.path(), "SELECT sum(count) FROM audit_refusals") == 20);
}

TEST_CASE(
    "refused requests with one token past the first 10 of a minute share one row with their count",
    "[unit][api][security]") {
  AuditDb db;
  kfaild::testing::ManualClock clock(1'800'000'000'000'000 + 5'000'000);
  AuditRecorder recorder(*db.log_, clock);
  for (int i = 0; i < 1'000; ++i) {
    auto e = entry(Role::kViewer, 403, "/api/v1/clusters/{cluster}/drills", true,
                   i % 2 == 0 ? "192.0.2.1" : "192.0.2.2");
    e.body_bytes = 10;
    recorder(e);
    if (i == 500) recorder.flush();  // a later flush adds to the row the first one wrote
  }
  recorder(entry(Role::kOperator, 409));  // another role and status: a row of its own
  clock.advance(kMinuteUs);
  for (int i = 0; i < 3; ++i) recorder(entry(Role::kViewer, 403));
  recorder.stop();
  CHECK(recorder.counted() == 990);

  AuditEndpoints endpoints(*db.log_);
  Request request;
  request.path = "/api/v1/audit";
  request.query = {{"limit", "100"}};
  const auto answer = endpoints.list(request);
  REQUIRE(answer.status == 200);
  const auto items = nlohmann::json::parse(answer.body)["items"];
  REQUIRE(items.size() == 3 + 1 + 10 + 1);
  const auto minute = 1'800'000'000'000'000 - 1'800'000'000'000'000 % kMinuteUs;
  std::int64_t total = 0;
  int aggregated = 0;
  for (const auto& item : items) {
    total += item["count"].get<std::int64_t>();
    if (item["count"] == 1) continue;
    ++aggregated;
    CHECK(item["count"] == 990);
    CHECK(item["time_us"] == minute);
    CHECK(item["role"] == "viewer");
    CHECK(item["status"] == 403);
    CHECK(item["remote_address"] == "(several)");
    CHECK(item["body_sha256"] == "");
    CHECK(item["body_bytes"] == 9'900);
    CHECK(item["problem"] == nullptr);
  }
  CHECK(aggregated == 1);
  CHECK(total == 1'000 + 1 + 3);
}

TEST_CASE("the recorder's thread commits refused requests within its flush interval",
          "[unit][api]") {
  AuditDb db;
  const common::SystemClock clock;
  AuditRecorder recorder(*db.log_, clock, {.flush_interval = std::chrono::milliseconds(20)});
  recorder.start();
  recorder(entry(Role::kViewer, 403));
  for (int i = 0; i < 200 && db.rows() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(db.rows() == 1);
}

TEST_CASE("100,000 viewer-token refusals leave every accepted mutation's row in the audit log",
          "[unit][api][security]") {
  AuditDb db;
  auto drills = storage::SqliteDrillStore::open(db.path());
  REQUIRE(drills.ok());
  kfaild::testing::ManualClock clock(1'800'000'000'000'000);
  AuditRecorder recorder(*db.log_, clock);
  // 100 seconds: each an operator's drill among 1,000 refusals of the viewer's token (a guessed
  // route, a change the viewer may not make, three routes and two statuses).
  const std::vector<std::string> routes = {"/api/v1/clusters/{cluster}/drills", "/api/v1/schedules",
                                           "/api/v1/drills/{id}/abort"};
  for (int second = 0; second < 100; ++second) {
    recorder(entry(Role::kOperator, 202));
    for (int i = 0; i < 1'000; ++i) {
      const auto& route = routes[static_cast<std::size_t>(i) % routes.size()];
      recorder(entry(Role::kViewer, i % 2 == 0 ? 403 : 404, route, i % 2 == 0,
                     "2001:db8::" + std::to_string(i % 7)));
    }
    clock.advance(1'000'000);
    recorder.flush();
  }
  recorder.stop();

  daemon::RetentionPolicy policy{.samples_us = std::nullopt,
                                 .drill_samples_us = std::nullopt,
                                 .gaps_us = std::nullopt,
                                 .events_us = std::nullopt,
                                 .max_bytes = std::nullopt,
                                 .audit_max_bytes = 1024 * 1024};
  daemon::RetentionTask retention(*db.store_, **drills, db.log_.get(), clock, policy);
  const auto pass = retention.prune();
  CHECK(pass.ok);
  CHECK(count(db.path(), "SELECT count(*) FROM audit_log WHERE status < 400") == 100);
  CHECK(count(db.path(),
              "SELECT count(*) FROM audit_log WHERE status = 202 AND role = 'operator'") == 100);
  // Every refusal is still accounted for, in a few rows a minute.
  CHECK(count(db.path(), "SELECT sum(count) FROM audit_log WHERE status >= 400") == 100'000);
  CHECK(count(db.path(), "SELECT count(*) FROM audit_log WHERE status >= 400") <= 2 * (4 * 10 + 4));
}

// Sends `requests` pipelined on one connection and counts the answers with `status`.
int flood(std::uint16_t port, const std::string& request, int requests, const std::string& status) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  timeval timeout{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::thread sender([&] {
    std::string batch;
    for (int i = 0; i < 1000; ++i) batch += request;
    for (int sent = 0; sent < requests; sent += 1000) {
      std::string_view left = batch;
      while (!left.empty()) {
        const auto n = ::send(fd, left.data(), left.size(), MSG_NOSIGNAL);
        if (n <= 0) return;
        left.remove_prefix(static_cast<std::size_t>(n));
      }
    }
  });
  const std::string marker = "HTTP/1.1 " + status + " ";
  int answered = 0;
  std::string carry;
  char chunk[64 * 1024];
  while (answered < requests) {
    const auto got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0) break;
    std::string data = carry + std::string(chunk, static_cast<std::size_t>(got));
    for (auto at = data.find(marker); at != std::string::npos; at = data.find(marker, at + 1))
      ++answered;
    carry = data.size() >= marker.size() ? data.substr(data.size() - marker.size() + 1) : data;
  }
  sender.join();
  ::close(fd);
  return answered;
}

std::int64_t fileBytes(const std::string& path) {
  std::int64_t total = 0;
  for (const auto& suffix : {"", "-wal"}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path + suffix, ec);
    if (!ec) total += static_cast<std::int64_t>(size);
  }
  return total;
}

TEST_CASE(
    "100,000 refused anonymous requests leave the database size and the probe's samples within "
    "bounds",
    "[integration][api]") {
  kfaild::testing::TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  const common::SystemClock clock;
  auto store = storage::SqliteStore::open(path);
  REQUIRE(store.ok());
  auto drills = storage::SqliteDrillStore::open(path);
  REQUIRE(drills.ok());
  const auto cluster = (*store)->ensureCluster("lab", "127.0.0.1:1");
  REQUIRE(cluster.ok());
  // Ten minutes of one partition's samples at 20 ms.
  const auto now = clock.wallNow();
  constexpr int kSamples = 30'000;
  for (int i = 0; i < kSamples; ++i) {
    const std::int64_t send = now - 600'000'000 + i * 20'000;
    (*store)->addSample({*cluster, "probe", 0, i, send, send + 3000, 0, i, send + 5000});
  }
  (*store)->flush();
  auto log = storage::AuditLog::open(path);
  REQUIRE(log.ok());
  AuditRecorder recorder(**log, clock);
  recorder.start();

  AccessOptions access;
  access.operator_token = "operator-token-0123456789";
  Router router;
  router.setAccess(AccessPolicy(access));
  router.add("POST", "/api/v1/echo", [](const Request&) { return jsonResponse(200, {}); });
  router.setAuditSink([&recorder](const AuditEntry& e) { recorder(e); });
  ServerOptions options;
  options.port = 0;
  HttpServer server(options, router);
  REQUIRE(server.start().ok());
  const auto size_before = fileBytes(path);

  // Half to a 190-character path no route has (404), half to a route without a token (401).
  const std::string unknown = "POST /" + std::string(190, 'u') +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              "Content-Length: 2\r\n\r\n{}";
  const std::string tokenless =
      "POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 2\r\n\r\n{}";
  int answered_404 = 0;
  int answered_401 = 0;
  std::thread a([&] { answered_404 = flood(server.port(), unknown, 50'000, "404"); });
  std::thread b([&] { answered_401 = flood(server.port(), tokenless, 50'000, "401"); });
  a.join();
  b.join();
  server.stop();
  recorder.stop();
  CHECK(answered_404 == 50'000);
  CHECK(answered_401 == 50'000);

  // No row per request: a count per minute, peer, route class and status.
  CHECK(count(path, "SELECT count(*) FROM audit_log") == 0);
  CHECK(count(path, "SELECT sum(count) FROM audit_refusals") == 100'000);
  CHECK(count(path, "SELECT count(*) FROM audit_refusals") <=
        2 * 3);  // 2 classes, at most 3 minutes
  const auto growth = fileBytes(path) - size_before;
  INFO("the database grew by " << growth << " bytes");
  CHECK(growth < 256 * 1024);

  // And a size bound at its minimum never takes the samples for the audit log.
  daemon::RetentionPolicy policy{.samples_us = std::nullopt,
                                 .drill_samples_us = std::nullopt,
                                 .gaps_us = std::nullopt,
                                 .events_us = std::nullopt,
                                 .max_bytes = 16LL * 1024 * 1024};
  daemon::RetentionTask retention(**store, **drills, log->get(), clock, policy);
  const auto pass = retention.prune();
  CHECK(pass.samples == 0);
  CHECK(count(path, "SELECT coalesce(sum(samples), 0) FROM probe_sample_blocks") == kSamples);
}

}  // namespace
}  // namespace kfaild::api::audit_recorder_test
