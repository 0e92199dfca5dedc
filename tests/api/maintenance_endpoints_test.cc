#include "api/maintenance_endpoints.h"

#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "api/audit_endpoints.h"
#include "api/drill_endpoints.h"
#include "api/endpoints.h"
#include "api/http_server.h"
#include "server/common/time_format.h"
#include "server/maintenance/errc.h"
#include "storage/audit_log.h"
#include "storage/sqlite_drill_store.h"
#include "tests/api/api_test_support.h"

namespace kfaild::api::maintenance_endpoints_test {
namespace {

using nlohmann::json;
using testing::HttpReply;
using testing::kHour;
using testing::kNow;
using testing::kSecond;
using testing::problemOf;

constexpr const char* kToken = "maintenance-endpoints-test-token-1234";
constexpr const char* kViewerToken = "maintenance-endpoints-viewer-token-5678";

// No drills here: the incidents endpoint only needs a control to be constructed.
class NoDrills final : public DrillControl {
 public:
  bool drillsEnabled(storage::ClusterId) const override { return false; }
  Result<std::int64_t> submit(storage::ClusterId, const drill::DrillSpec&) override {
    return Error{maintenance::errc::invalid_window, "no drills in this test"};
  }
  Status abort(storage::ClusterId, std::int64_t) override {
    return Error{maintenance::errc::invalid_window, "no drills in this test"};
  }
};

// An Alertmanager that cannot be reached, so the window's JSON shows the silence's error.
class UnreachableSilences final : public maintenance::AlertSilences {
 public:
  const std::string& receiver() const override { return name_; }
  Result<std::string> create(const maintenance::SilenceRequest&) override {
    return Error{maintenance::errc::silence_failed,
                 "connect to 127.0.0.1:9093: Connection refused"};
  }
  Status expire(const std::string&) override { return okStatus(); }

 private:
  std::string name_ = "oncall";
};

class MaintenanceApi {
 public:
  MaintenanceApi() : clock_(kNow, 5'000'000'000) {
    storage::SqliteStoreOptions store_options;
    store_options.clock = &clock_;
    const auto path = (dir_ / "kfaild.db").string();
    auto store = storage::SqliteStore::open(path, store_options);
    REQUIRE(store.ok());
    store_ = std::move(*store);
    auto drills = storage::SqliteDrillStore::open(path);
    REQUIRE(drills.ok());
    drills_ = std::move(*drills);
    auto maintenance_store = storage::MaintenanceStore::open(path);
    REQUIRE(maintenance_store.ok());
    maintenance_store_ = std::move(*maintenance_store);
    std::vector<std::unique_ptr<maintenance::AlertSilences>> silences;
    silences.push_back(std::make_unique<UnreachableSilences>());
    windows_ = std::make_unique<maintenance::MaintenanceWindows>(
        *maintenance_store_, clock_, std::move(silences), config::RetryConfig{});
    lab_ = *store_->ensureCluster("lab", "127.0.0.1:19091");
    other_ = *store_->ensureCluster("other", "127.0.0.1:29091");
    live_.set({testing::labCluster(lab_, clock_)});
    endpoints_ = std::make_unique<Endpoints>(live_, *store_, clock_);
    endpoints_->setMaintenance(windows_.get());
    endpoints_->registerOn(router_);
    drill_endpoints_ = std::make_unique<DrillEndpoints>(live_, *store_, *drills_, control_, clock_);
    drill_endpoints_->setMaintenance(windows_.get());
    drill_endpoints_->registerOn(router_);
    maintenance_endpoints_ =
        std::make_unique<MaintenanceEndpoints>(live_, *store_, *windows_, clock_);
    maintenance_endpoints_->registerOn(router_);
    AccessOptions access;
    access.operator_token = kToken;
    access.viewer_token = kViewerToken;
    router_.setAccess(AccessPolicy(access));
    auto audit = storage::AuditLog::open(path);
    REQUIRE(audit.ok());
    audit_ = std::move(*audit);
    recorder_ = std::make_unique<AuditRecorder>(*audit_, clock_);
    router_.setAuditSink([this](const AuditEntry& entry) { (*recorder_)(entry); });
    ServerOptions options;
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, router_);
    const auto started = server_->start();
    if (!started.ok()) FAIL(started.error().describe());
  }

  HttpReply send(const std::string& method, const std::string& target, const std::string& body = "",
                 const std::string& token = kToken) {
    return testing::sendWithToken(server_->port(), method, target, body, token);
  }
  HttpReply get(const std::string& target) { return send("GET", target); }

  void addGap(std::int64_t start_us, std::int64_t duration_us, std::int32_t partition) {
    store_->addGap(testing::makeGap(lab_, "orders", partition, storage::GapKind::kAck,
                                    start_us + duration_us, duration_us));
    store_->flush();
  }

  kfaild::testing::ManualClock& clock() { return clock_; }
  maintenance::MaintenanceWindows& windows() { return *windows_; }
  storage::AuditLog& audit() { return *audit_; }
  AuditRecorder& recorder() { return *recorder_; }
  storage::ClusterId lab() const { return lab_; }

 private:
  kfaild::testing::TempDir dir_;
  kfaild::testing::ManualClock clock_;
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<storage::SqliteDrillStore> drills_;
  std::unique_ptr<storage::MaintenanceStore> maintenance_store_;
  std::unique_ptr<maintenance::MaintenanceWindows> windows_;
  storage::ClusterId lab_ = 0;
  storage::ClusterId other_ = 0;
  testing::FixedLiveClusters live_;
  NoDrills control_;
  Router router_;
  std::unique_ptr<Endpoints> endpoints_;
  std::unique_ptr<DrillEndpoints> drill_endpoints_;
  std::unique_ptr<MaintenanceEndpoints> maintenance_endpoints_;
  std::unique_ptr<storage::AuditLog> audit_;
  std::unique_ptr<AuditRecorder> recorder_;
  std::unique_ptr<HttpServer> server_;  // last: stopped before the parts its handlers use
};

}  // namespace

TEST_CASE(
    "POST maintenance opens a window for the operator, GET lists it and close ends it early, each "
    "audited",
    "[integration][api][maintenance]") {
  MaintenanceApi api;
  const std::string base = "/api/v1/clusters/lab/maintenance";
  // The operator only, as every change.
  problemOf(api.send("POST", base, R"({"reason":"upgrade","duration_s":600})", ""), 401,
            "unauthorized");
  problemOf(api.send("POST", base, R"({"reason":"upgrade","duration_s":600})", kViewerToken), 403,
            "forbidden");

  auto opened = api.send("POST", base, R"({"reason":"broker 2 disk swap","duration_s":1800})");
  INFO(opened.body);
  REQUIRE(opened.status == 201);
  const auto window = opened.json();
  const auto id = window["id"].get<std::int64_t>();
  CHECK(opened.header("Location") == base + "/" + std::to_string(id));
  CHECK(window["cluster"] == "lab");
  CHECK(window["reason"] == "broker 2 disk swap");
  CHECK(window["opened_by"].get<std::string>().rfind("operator (api, 127.0.0.1", 0) == 0);
  CHECK(window["started_us"] == kNow);
  CHECK(window["started"] == common::formatRfc3339(kNow));
  CHECK(window["ends_us"] == kNow + 1800 * kSecond);
  CHECK(window["active"] == true);
  CHECK(window["closed"].is_null());
  CHECK(window["closed_by"].is_null());
  REQUIRE(window["silences"].size() == 1);
  CHECK(window["silences"][0]["receiver"] == "oncall");
  CHECK(window["silences"][0]["state"] == "creating");

  // The silence could not be made: the window stays, and its JSON says why.
  CHECK(api.windows().reconcileSilences() == 1);
  auto one = api.get(base + "/" + std::to_string(id));
  REQUIRE(one.status == 200);
  CHECK(one.json()["silences"][0]["state"] == "creating");
  CHECK_THAT(one.json()["silences"][0]["error"].get<std::string>(),
             Catch::Contains("Connection refused"));
  CHECK(one.json()["active"] == true);

  // `until` as RFC 3339 opens a second one.
  api.clock().advance(60 * kSecond);
  const auto until = common::formatRfc3339(kNow + 2 * kHour);
  auto second = api.send("POST", base, json{{"reason", "config change"}, {"until", until}}.dump());
  REQUIRE(second.status == 201);
  CHECK(second.json()["ends"] == until);
  const auto second_id = second.json()["id"].get<std::int64_t>();

  auto list = api.get(base);
  REQUIRE(list.status == 200);
  auto body = list.json();
  REQUIRE(body["items"].size() == 2);
  CHECK(body["items"][0]["id"] == second_id);  // newest first
  CHECK(body["items"][1]["id"] == id);
  CHECK(body["active"] == id);  // the earliest-opened active one
  CHECK(body["count"] == 2);
  // A viewer reads it too.
  CHECK(api.send("GET", base, "", kViewerToken).status == 200);

  auto closed = api.send("POST", base + "/" + std::to_string(id) + "/close");
  INFO(closed.body);
  REQUIRE(closed.status == 200);
  CHECK(closed.json()["active"] == false);
  CHECK(closed.json()["closed_us"] == kNow + 60 * kSecond);
  CHECK(closed.json()["closed_by"].get<std::string>().rfind("operator (api, ", 0) == 0);
  problemOf(api.send("POST", base + "/" + std::to_string(id) + "/close"), 409,
            "maintenance-window-over");
  problemOf(api.send("POST", base + "/999/close"), 404, "unknown-maintenance-window");
  problemOf(api.send("POST",
                     "/api/v1/clusters/other/maintenance/" + std::to_string(second_id) + "/close"),
            404, "unknown-maintenance-window");
  problemOf(api.get(base + "/999"), 404, "unknown-maintenance-window");
  problemOf(
      api.send("POST", "/api/v1/clusters/nope/maintenance", R"({"reason":"x","duration_s":5})"),
      404, "unknown-cluster");
  body = api.get(base).json();
  CHECK(body["active"] == second_id);
  CHECK(body["items"][1]["active"] == false);

  // Every change is in the audit log with its route, refusals included.
  api.recorder().flush();
  storage::AuditQuery q;
  q.limit = 100;
  auto rows = api.audit().records(q);
  REQUIRE(rows.ok());
  int opens = 0, closes = 0;
  for (const auto& r : *rows) {
    if (r.route == "/api/v1/clusters/{cluster}/maintenance" && r.status == 201) ++opens;
    if (r.route == "/api/v1/clusters/{cluster}/maintenance/{id}/close" && r.status == 200) ++closes;
  }
  CHECK(opens == 2);
  CHECK(closes == 1);
}

TEST_CASE(
    "POST maintenance refuses an end in the past, beyond 24 h, both or neither end, and a bad "
    "reason",
    "[integration][api][maintenance]") {
  MaintenanceApi api;
  const std::string base = "/api/v1/clusters/lab/maintenance";
  const auto past = common::formatRfc3339(kNow - kSecond);
  const auto far = common::formatRfc3339(kNow + 25 * kHour);
  for (const auto& body :
       {json{{"reason", "x"}, {"until", past}}.dump(), json{{"reason", "x"}, {"until", far}}.dump(),
        json{{"reason", "x"}, {"until", "tomorrow"}}.dump(),
        json{{"reason", "x"}, {"duration_s", 0}}.dump(),
        json{{"reason", "x"}, {"duration_s", 86'401}}.dump(),
        json{{"reason", "x"}, {"duration_s", 1.5}}.dump(),
        json{{"reason", "x"}, {"duration_s", 60}, {"until", far}}.dump(),
        json{{"reason", "x"}}.dump(), json{{"duration_s", 60}}.dump(),
        json{{"reason", ""}, {"duration_s", 60}}.dump(),
        json{{"reason", 5}, {"duration_s", 60}}.dump(),
        json{{"reason", "x"}, {"duration_s", 60}, {"by", "me"}}.dump(), std::string("[1]"),
        std::string("{")}) {
    INFO(body);
    const auto problem = problemOf(api.send("POST", base, body), 400, "invalid-body");
    CHECK_FALSE(problem["detail"].get<std::string>().empty());
  }
  const auto detail =
      api.send("POST", base, json{{"reason", "x"}, {"until", past}}.dump()).json()["detail"];
  CHECK_THAT(detail.get<std::string>(), Catch::Contains("not in the future"));
  CHECK(api.get(base).json()["items"].empty());
  CHECK(api.send("POST", base, json{{"reason", "x"}, {"duration_s", 86'400}}.dump()).status == 201);
}

TEST_CASE(
    "gaps inside a maintenance window are listed as planned and are no incidents, and the metric "
    "says "
    "when a window is active",
    "[integration][api][maintenance]") {
  MaintenanceApi api;
  api.addGap(kNow - 10 * kHour, 9 * kSecond, 0);  // before any window: an incident
  auto opened = api.windows().open(api.lab(), "rolling restart", kNow + kHour, "drill 3");
  REQUIRE(opened.ok());
  api.clock().advance(5 * 60 * kSecond);
  api.addGap(kNow + 60 * kSecond, 10 * kSecond, 1);  // inside: planned

  auto metrics = api.get("/metrics");
  REQUIRE(metrics.status == 200);
  CHECK_THAT(metrics.body, Catch::Contains("# TYPE kfaild_maintenance_active gauge"));
  CHECK_THAT(metrics.body, Catch::Contains("kfaild_maintenance_active{cluster=\"lab\"} 1\n"));

  const auto gaps =
      api.get("/api/v1/clusters/lab/gaps?from=" + common::formatRfc3339(kNow - 11 * kHour) +
              "&min_ms=5000");
  INFO(gaps.body);
  REQUIRE(gaps.status == 200);
  std::map<int, json> by_partition;
  const auto listed = gaps.json();
  for (const auto& g : listed["items"]) by_partition[g["partition"].get<int>()] = g;
  REQUIRE(by_partition.size() == 2);
  CHECK(by_partition[0]["planned"] == false);
  CHECK(by_partition[0]["maintenance_id"].is_null());
  CHECK(by_partition[1]["planned"] == true);
  CHECK(by_partition[1]["maintenance_id"] == *opened);

  const auto incidents =
      api.get("/api/v1/clusters/lab/incidents?from=" + common::formatRfc3339(kNow - 11 * kHour));
  REQUIRE(incidents.status == 200);
  const auto items = incidents.json()["items"];
  REQUIRE(items.size() == 1);
  CHECK(items[0]["partitions"][0]["partition"] == 0);

  REQUIRE(api.windows().close(*opened, "drill 3").ok());
  metrics = api.get("/metrics");
  CHECK_THAT(metrics.body, Catch::Contains("kfaild_maintenance_active{cluster=\"lab\"} 0\n"));
  // Closing does not make the planned gap an incident after the fact.
  api.clock().advance(kHour);
  CHECK(api.get("/api/v1/clusters/lab/incidents?from=" + common::formatRfc3339(kNow - 11 * kHour))
            .json()["items"]
            .size() == 1);
}

TEST_CASE("from at or after to lists no maintenance window, not even one in force at that instant",
          "[integration][api][maintenance]") {
  MaintenanceApi api;
  auto opened = api.windows().open(api.lab(), "broker 2 disk swap", kNow + kHour, "drill 3");
  REQUIRE(opened.ok());
  api.clock().advance(10 * 60 * kSecond);
  const std::string base = "/api/v1/clusters/lab/maintenance?";
  const auto range = [](std::int64_t from_us, std::int64_t to_us) {
    return "from=" + common::formatRfc3339(from_us) + "&to=" + common::formatRfc3339(to_us);
  };
  const std::int64_t inside = kNow + 5 * 60 * kSecond;
  const auto none = api.get(base + range(inside, inside));
  INFO(none.body);
  REQUIRE(none.status == 200);
  CHECK(none.json()["items"].empty());
  CHECK(none.json()["count"] == 0);
  CHECK(none.json()["from"] == common::formatRfc3339(inside));
  CHECK(none.json()["to"] == common::formatRfc3339(inside));
  const auto one = api.get(base + range(inside, inside + 1)).json();
  REQUIRE(one["items"].size() == 1);
  CHECK(one["items"][0]["id"] == *opened);
  const auto inverted = api.get(base + range(inside + 1, inside));
  REQUIRE(inverted.status == 200);
  CHECK(inverted.json()["items"].empty());
  // A `from` in the future, `to` left to default to now: also empty, not a 400.
  const auto future =
      api.get(base.substr(0, base.size() - 1) + "?from=" + common::formatRfc3339(kNow + 2 * kHour));
  REQUIRE(future.status == 200);
  CHECK(future.json()["items"].empty());
}

TEST_CASE("who opened a window from an IPv6 address is shown to the operator only",
          "[integration][api][maintenance][security]") {
  MaintenanceApi api;
  REQUIRE(api.windows().open(api.lab(), "upgrade", kNow + kHour, "operator (api, 2001:db8::5)"));
  REQUIRE(api.windows().open(api.lab(), "config change", kNow + kHour,
                             "operator (api, ::ffff:10.1.2.3)"));
  const std::string base = "/api/v1/clusters/lab/maintenance";
  const auto openers = [&api, &base](const std::string& token) {
    auto list = api.send("GET", base, "", token);
    REQUIRE(list.status == 200);
    const auto body = list.json();
    std::vector<std::string> out;
    for (const auto& w : body["items"]) out.push_back(w["opened_by"].get<std::string>());
    return out;
  };
  const std::vector<std::string> hidden{"operator (api, [redacted])", "operator (api, [redacted])"};
  CHECK(openers("") == hidden);  // anonymous, as reads are by default
  CHECK(openers(kViewerToken) == hidden);
  CHECK(openers(kToken) ==
        std::vector<std::string>{"operator (api, ::ffff:10.1.2.3)", "operator (api, 2001:db8::5)"});
}

}  // namespace kfaild::api::maintenance_endpoints_test
