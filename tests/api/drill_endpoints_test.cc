#include "api/drill_endpoints.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "api/audit_endpoints.h"
#include "api/endpoints.h"
#include "server/analysis/verdict.h"
#include "server/common/time_format.h"
#include "server/drill/errc.h"
#include "storage/audit_log.h"
#include "storage/sqlite_drill_store.h"
#include "tests/api/api_test_support.h"
#include "tests/support/manual_clock.h"

namespace kfaild::api::drill_endpoints_test {
namespace {

using nlohmann::json;
using testing::HttpReply;
using testing::kHour;
using testing::kNow;
using testing::kSecond;

constexpr const char* kToken = "drill-endpoints-test-token-1234";
constexpr const char* kViewerToken = "drill-endpoints-viewer-token-5678";

// Stands in for the drill runners: queues a drill row the way DrillRunner::submit does, or
// refuses with the configured reason; abort marks a queued drill aborted.
class FakeDrillControl final : public DrillControl {
 public:
  FakeDrillControl(storage::DrillStore& drills, const common::Clock& clock)
      : drills_(drills), clock_(clock) {}

  bool drillsEnabled(storage::ClusterId cluster) const override {
    return enabled_.contains(cluster);
  }
  bool observable(storage::ClusterId cluster) const override {
    return enabled_.contains(cluster) || observable_only.contains(cluster);
  }

  Result<std::int64_t> submit(storage::ClusterId cluster, const drill::DrillSpec& spec) override {
    std::lock_guard lock(mutex_);
    if (!refusal.empty()) return Error{make_error_code(drill::errc::guard_refused), refusal};
    storage::DrillRecord d;
    d.cluster = cluster;
    d.fault = drill::toString(spec.fault);
    d.target = drill::toJson(spec.target).dump();
    d.options = drill::toJson(spec.options, spec.fault).dump();
    if (spec.expect) d.expect = analysis::toJson(*spec.expect).dump();
    d.state = "queued";
    d.created_us = clock_.wallNow();
    auto id = drills_.createDrill(d);
    if (id) submitted.push_back(*id);
    return id;
  }

  Status abort(storage::ClusterId, std::int64_t drill_id) override {
    auto d = drills_.drill(drill_id);
    if (!d || !*d || (*d)->state != "queued") {
      return Error{make_error_code(drill::errc::drill_not_found), "not queued or running"};
    }
    auto record = **d;
    record.state = "aborted";
    record.reason = "aborted on request before it started";
    record.finished_us = clock_.wallNow();
    return drills_.updateDrill(record);
  }

  Result<std::int64_t> mark(storage::ClusterId, std::int64_t drill_id,
                            std::optional<std::int64_t> at_us, std::optional<std::int32_t> broker,
                            const std::string& by) override {
    std::lock_guard lock(mutex_);
    if (mark_error) return *mark_error;
    marks.push_back({drill_id, at_us, broker, by});
    return at_us.value_or(clock_.wallNow());
  }

  void enable(storage::ClusterId cluster) { enabled_.insert(cluster); }

  struct Mark {
    std::int64_t drill;
    std::optional<std::int64_t> at_us;
    std::optional<std::int32_t> broker;
    std::string by;
  };
  std::vector<Mark> marks;
  std::set<storage::ClusterId> observable_only;  // a cluster without an inventory
  std::optional<Error> mark_error;
  std::string refusal;
  std::vector<std::int64_t> submitted;

 private:
  storage::DrillStore& drills_;
  const common::Clock& clock_;
  std::set<storage::ClusterId> enabled_;
  std::mutex mutex_;
};

// One run's analysis as the drill runner stores it: p0 led by the target, p1 and p2 followers.
json runResult(int run, std::int64_t fault_us, std::int64_t p0_stall_us,
               std::int64_t detection_us) {
  json partitions = json::array();
  for (int p = 0; p < 3; ++p) {
    const std::int64_t stall = p == 0 ? p0_stall_us : detection_us + 200'000;
    partitions.push_back({{"topic", "orders"},
                          {"partition", p},
                          {"role", p == 0 ? "leader" : "follower"},
                          {"ack",
                           {{"stall",
                             {{"start_us", fault_us - 10'000},
                              {"end_us", fault_us + stall},
                              {"duration_us", stall}}},
                            {"baseline", nullptr},
                            {"count", 500}}},
                          {"receive",
                           {{"stall",
                             {{"start_us", fault_us},
                              {"end_us", fault_us + stall + 5'000},
                              {"duration_us", stall + 5'000}}},
                            {"baseline", nullptr},
                            {"count", 500}}},
                          {"sent", 500},
                          {"failed", 0},
                          {"lost", 0},
                          {"unresolved", 0},
                          {"duplicated", 0},
                          {"reordered", 0},
                          {"phases",
                           {{"detection_us", detection_us},
                            {"election_us", 70'000},
                            {"discovery_us", p == 0 ? json(100'000) : json(nullptr)},
                            {"resume_us", 20'000},
                            {"fenced_at_us", fault_us + detection_us},
                            {"new_leader_at_us", nullptr},
                            {"client_update_at_us", nullptr},
                            {"new_leader", p == 0 ? json(2) : json(nullptr)}}}});
  }
  return {{"run", run},
          {"fault", "kill"},
          {"state", "done"},
          {"target", 1},
          {"baseline_start_us", fault_us - 5 * kSecond},
          {"fault_us", fault_us},
          {"fault_time_source", "local"},
          {"observe_end_us", fault_us + 20 * kSecond},
          {"recovered_us", fault_us + 40 * kSecond},
          {"analysis",
           {{"fault", "kill"},
            {"target", 1},
            {"fault_us", fault_us},
            {"departure", "fenced"},
            {"departure_at_us", fault_us + detection_us},
            {"partitions", partitions}}}};
}

// What the retention task would report, set by a test.
class FixedRetention final : public storage::RetentionStatus {
 public:
  storage::RetentionReport retentionReport() const override {
    std::lock_guard lock(mutex_);
    return report_;
  }
  void set(const storage::RetentionReport& report) {
    std::lock_guard lock(mutex_);
    report_ = report;
  }

 private:
  mutable std::mutex mutex_;
  storage::RetentionReport report_;  // guarded by mutex_
};

class DrillApi {
 public:
  DrillApi() : clock_(kNow, 5'000'000'000) {
    storage::SqliteStoreOptions store_options;
    store_options.clock = &clock_;
    const auto path = (dir_ / "kfaild.db").string();
    auto store = storage::SqliteStore::open(path, store_options);
    REQUIRE(store.ok());
    store_ = std::move(*store);
    auto drills = storage::SqliteDrillStore::open(path);
    REQUIRE(drills.ok());
    drills_ = std::move(*drills);
    lab_ = *store_->ensureCluster("lab", "127.0.0.1:19091");
    idle_ = *store_->ensureCluster("idle", "127.0.0.1:29091");
    live_.set({testing::labCluster(lab_, clock_)});
    control_ = std::make_unique<FakeDrillControl>(*drills_, clock_);
    control_->enable(lab_);
    endpoints_ = std::make_unique<Endpoints>(live_, *store_, clock_);
    endpoints_->setDrillStore(drills_.get());
    endpoints_->setRetentionStatus(&retention_);
    endpoints_->registerOn(router_);
    drill_endpoints_ =
        std::make_unique<DrillEndpoints>(live_, *store_, *drills_, *control_, clock_);
    drill_endpoints_->registerOn(router_);
    AccessOptions access;
    access.operator_token = kToken;
    access.viewer_token = kViewerToken;
    router_.setAccess(AccessPolicy(access));
    router_.setRedactor(common::Redactor({"127.0.0.1:19091"}));
    auto audit = storage::AuditLog::open(path);
    REQUIRE(audit.ok());
    audit_ = std::move(*audit);
    recorder_ = std::make_unique<AuditRecorder>(*audit_, clock_);
    router_.setAuditSink([this](const AuditEntry& entry) { (*recorder_)(entry); });
    audit_endpoints_ = std::make_unique<AuditEndpoints>(*audit_);
    audit_endpoints_->registerOn(router_);
    ServerOptions options;
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, router_);
    const auto started = server_->start();
    if (!started.ok()) FAIL(started.error().describe());
  }

  HttpReply get(const std::string& target) { return testing::httpGet(server_->port(), target); }
  std::uint16_t port() const { return server_->port(); }
  HttpReply send(const std::string& method, const std::string& target, const std::string& body = "",
                 bool with_token = true) {
    return sendAs(method, target, body, with_token ? kToken : "");
  }
  // `token` empty: no Authorization header.
  HttpReply sendAs(const std::string& method, const std::string& target, const std::string& body,
                   const std::string& token,
                   std::vector<std::pair<std::string, std::string>> headers = {}) {
    return testing::sendWithToken(server_->port(), method, target, body, token, std::move(headers));
  }
  HttpReply getAs(const std::string& target, const std::string& token) {
    testing::HttpConnection connection(server_->port());
    testing::HttpRequestSpec spec;
    spec.method = "GET";
    spec.target = target;
    if (!token.empty()) spec.headers.emplace_back("Authorization", "Bearer " + token);
    return connection.request(spec);
  }

  // A finished drill with `runs` runs whose p0 stalls are given, created at `created_us`.
  std::int64_t seedDrill(const std::string& fault, const std::string& state,
                         std::int64_t created_us, const std::vector<std::int64_t>& p0_stalls,
                         storage::ClusterId cluster = 0) {
    storage::DrillRecord d;
    d.cluster = cluster == 0 ? lab_ : cluster;
    d.fault = fault;
    d.target = R"({"broker":1})";
    d.options = drill::toJson(drill::DrillOptions{}, drill::FaultType::kKill).dump();
    d.state = state;
    d.created_us = created_us;
    d.started_us = created_us + 100'000;
    d.finished_us = created_us + 120 * kSecond;
    json runs = json::array();
    for (std::size_t i = 0; i < p0_stalls.size(); ++i) {
      runs.push_back(
          runResult(static_cast<int>(i) + 1,
                    created_us + 10 * kSecond + static_cast<std::int64_t>(i) * 50 * kSecond,
                    p0_stalls[i], 8'800'000));
    }
    d.result = json{{"runs", runs}}.dump();
    auto id = drills_->createDrill(d);
    REQUIRE(id.ok());
    return *id;
  }

  storage::SqliteStore& store() { return *store_; }
  storage::SqliteDrillStore& drills() { return *drills_; }
  FakeDrillControl& control() { return *control_; }
  AuditRecorder& recorder() { return *recorder_; }
  storage::AuditLog& audit() { return *audit_; }
  kfaild::testing::ManualClock& clock() { return clock_; }
  FixedRetention& retention() { return retention_; }
  storage::ClusterId lab() const { return lab_; }
  storage::ClusterId idle() const { return idle_; }

 private:
  kfaild::testing::TempDir dir_;
  kfaild::testing::ManualClock clock_;
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<storage::SqliteDrillStore> drills_;
  storage::ClusterId lab_ = 0;
  storage::ClusterId idle_ = 0;
  testing::FixedLiveClusters live_;
  std::unique_ptr<FakeDrillControl> control_;
  FixedRetention retention_;
  Router router_;
  std::unique_ptr<Endpoints> endpoints_;
  std::unique_ptr<DrillEndpoints> drill_endpoints_;
  std::unique_ptr<storage::AuditLog> audit_;
  std::unique_ptr<AuditRecorder> recorder_;
  std::unique_ptr<AuditEndpoints> audit_endpoints_;
  std::unique_ptr<HttpServer> server_;  // last: stopped before the parts its handlers use
};

using testing::problemOf;

TEST_CASE("POST a drill: 202 with Location, the drill queued as asked", "[integration][api]") {
  DrillApi api;
  const auto reply =
      api.send("POST", "/api/v1/clusters/lab/drills",
               R"({"fault":"stop","target":{"broker":1},"options":{"repeats":3,"grace_s":20}})");
  REQUIRE(reply.status == 202);
  const auto drill = reply.json();
  REQUIRE(api.control().submitted.size() == 1);
  CHECK(drill["id"] == api.control().submitted[0]);
  CHECK(reply.header("Location") == "/api/v1/drills/" + std::to_string(api.control().submitted[0]));
  CHECK(drill["cluster"] == "lab");
  CHECK(drill["fault"] == "stop");
  CHECK(drill["target"] == json{{"broker", 1}});
  CHECK(drill["options"]["repeats"] == 3);
  CHECK(drill["options"]["grace_s"] == 20);
  CHECK(drill["options"]["preferred_election"] == true);
  CHECK(drill["state"] == "queued");
  CHECK(drill["runs"] == json::array());
  CHECK(drill["created"] == common::formatRfc3339(kNow));

  const auto again = api.get(reply.header("Location"));
  CHECK(again.status == 200);
  CHECK(again.json()["id"] == drill["id"]);
}

TEST_CASE("a cluster without an inventory takes observed drills and refuses injected ones",
          "[integration][api]") {
  DrillApi api;
  const std::string ok = R"({"fault":"kill","target":{"broker":1}})";
  // A managed service: kfaild cannot inject there, but it can observe.
  problemOf(api.send("POST", "/api/v1/clusters/idle/drills", R"({"fault":"observed"})"), 409,
            "drills-disabled");
  api.control().observable_only.insert(api.idle());
  CHECK(api.send("POST", "/api/v1/clusters/idle/drills", R"({"fault":"observed"})").status == 202);
  CHECK(problemOf(api.send("POST", "/api/v1/clusters/idle/drills", ok), 409,
                  "drills-disabled")["detail"]
            .get<std::string>()
            .find("an observed drill, fault observed, needs none") != std::string::npos);
}

TEST_CASE("POST a drill is refused without the token, on bad bodies and by the guards",
          "[integration][api][reliability]") {
  DrillApi api;
  const std::string ok = R"({"fault":"kill","target":{"broker":1}})";
  problemOf(api.send("POST", "/api/v1/clusters/lab/drills", ok, false), 401, "unauthorized");

  CHECK(problemOf(api.send("POST", "/api/v1/clusters/lab/drills", "{\"fault\":"), 400,
                  "invalid-body")["detail"] == "the body is not valid JSON");
  CHECK(problemOf(api.send("POST", "/api/v1/clusters/lab/drills", "[1,2]"), 400,
                  "invalid-body")["detail"] == "the body must be a JSON object");
  CHECK(problemOf(api.send("POST", "/api/v1/clusters/lab/drills",
                           R"({"fault":"kill","target":{"broker":1},"x":1})"),
                  400, "invalid-body")["detail"] == "x: unknown field");
  CHECK(problemOf(api.send("POST", "/api/v1/clusters/lab/drills",
                           R"({"fault":"pause","target":{"broker":1},"options":{"pause_s":0}})"),
                  400, "invalid-body")["detail"] ==
        "options.pause_s: must be between 1 and 3600, got 0");
  CHECK(problemOf(api.send("POST", "/api/v1/clusters/lab/drills",
                           R"({"fault":"kill","target":{"broker":1; rm -rf /}})"),
                  400, "invalid-body")["detail"] == "the body is not valid JSON");
  CHECK(problemOf(api.send("POST", "/api/v1/clusters/lab/drills",
                           R"j({"fault":"kill","target":{"broker":"1; $(reboot)"}})j"),
                  400, "invalid-body")["detail"] == "target.broker: must be an integer");
  problemOf(api.send("POST", "/api/v1/clusters/nowhere/drills", ok), 404, "unknown-cluster");
  problemOf(api.send("POST", "/api/v1/clusters/idle/drills", ok), 409, "drills-disabled");
  problemOf(api.send("POST", "/api/v1/clusters/lab/drills?force=1", ok), 400, "unknown-parameter");

  api.control().refusal = "drill 4 is running on cluster lab";
  const auto refused =
      problemOf(api.send("POST", "/api/v1/clusters/lab/drills", ok), 409, "drill-refused");
  CHECK(refused["detail"] == "drill 4 is running on cluster lab");
  CHECK(refused["reason"] == "drill 4 is running on cluster lab");
  CHECK(api.control().submitted.empty());
  auto none = api.drills().drills({});
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("the drill list pages with a cursor, newest first, and filters", "[integration][api]") {
  DrillApi api;
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(api.seedDrill(i % 2 ? "stop" : "kill", i == 4 ? "failed" : "done",
                                kNow - (10 - i) * kHour, {9'000'000}));
  }
  auto page = api.get("/api/v1/drills?limit=2").json();
  CHECK(page["count"] == 2);
  CHECK(page["items"][0]["id"] == ids[4]);
  CHECK(page["items"][1]["id"] == ids[3]);
  REQUIRE(page["next_cursor"].is_string());
  page = api.get("/api/v1/drills?limit=2&cursor=" + page["next_cursor"].get<std::string>()).json();
  CHECK(page["items"][0]["id"] == ids[2]);
  page = api.get("/api/v1/drills?limit=2&cursor=" + page["next_cursor"].get<std::string>()).json();
  CHECK(page["count"] == 1);
  CHECK(page["items"][0]["id"] == ids[0]);
  CHECK(page["next_cursor"].is_null());

  CHECK(api.get("/api/v1/drills?fault=stop").json()["count"] == 2);
  CHECK(api.get("/api/v1/drills?state=failed").json()["items"][0]["id"] == ids[4]);
  CHECK(api.get("/api/v1/drills?cluster=idle").json()["count"] == 0);
  CHECK(api.get("/api/v1/drills?from=" + common::formatRfc3339(kNow - 7 * kHour)).json()["count"] ==
        2);
  problemOf(api.get("/api/v1/drills?cursor=0"), 400, "invalid-parameter");
  problemOf(api.get("/api/v1/drills?state=sleeping"), 400, "invalid-parameter");
  problemOf(api.get("/api/v1/drills?cluster=nowhere"), 404, "unknown-cluster");
  problemOf(api.get("/api/v1/drills/999"), 404, "unknown-drill");
  problemOf(api.get("/api/v1/drills/abc"), 400, "invalid-parameter");
}

TEST_CASE("a drill carries its runs' analyses, and the last completed one is the on-call view",
          "[integration][api]") {
  DrillApi api;
  const auto older = api.seedDrill("kill", "done", kNow - 3 * kHour, {11'300'000});
  const auto newer = api.seedDrill("kill", "done", kNow - 2 * kHour, {10'900'000, 11'100'000});
  api.seedDrill("kill", "failed", kNow - kHour, {});
  const auto last = api.get("/api/v1/clusters/lab/drills/last");
  REQUIRE(last.status == 200);
  const auto body = last.json();
  CHECK(body["id"] == newer);
  REQUIRE(body["runs"].size() == 2);
  const auto& run = body["runs"][1];
  CHECK(run["fault_at"] == common::formatRfc3339(run["fault_us"].get<std::int64_t>()));
  CHECK(run["analysis"]["partitions"][0]["role"] == "leader");
  CHECK(run["analysis"]["partitions"][0]["ack"]["stall"]["duration_us"] == 11'100'000);
  CHECK(api.get("/api/v1/drills/" + std::to_string(older)).json()["runs"].size() == 1);
  problemOf(api.get("/api/v1/clusters/lab/drills/last?fault=stop"), 404, "no-drill");
  problemOf(api.get("/api/v1/clusters/idle/drills/last"), 404, "no-drill");
}

TEST_CASE("statistics summarise stalls and phases per partition and role across drills",
          "[integration][api]") {
  DrillApi api;
  api.seedDrill("kill", "done", kNow - 5 * kHour, {11'000'000, 12'000'000});
  api.seedDrill("kill", "done", kNow - 4 * kHour, {10'000'000});
  api.seedDrill("kill", "failed", kNow - 3 * kHour, {30'000'000});  // not completed: left out
  api.seedDrill("stop", "done", kNow - 2 * kHour, {300'000});

  const auto stats = api.get("/api/v1/statistics?fault=kill&topic=orders").json();
  CHECK(stats["drills"] == 2);
  CHECK(stats["runs"] == 3);
  REQUIRE(stats["groups"].size() == 3);
  const auto& p0 = stats["groups"][0];
  CHECK(p0["partition"] == 0);
  CHECK(p0["role"] == "leader");
  CHECK(p0["count"] == 3);
  CHECK(p0["ack_stall_us"] == json{{"min", 10'000'000},
                                   {"median", 11'000'000},
                                   {"p95", 12'000'000},
                                   {"max", 12'000'000},
                                   {"count", 3}});
  CHECK(p0["detection_us"]["median"] == 8'800'000);
  CHECK(p0["discovery_us"]["max"] == 100'000);
  REQUIRE(p0["trend"].size() == 3);
  CHECK(p0["trend"][0]["ack_stall_us"] == 11'000'000);  // oldest first
  CHECK(p0["trend"][2]["ack_stall_us"] == 10'000'000);
  CHECK(stats["groups"][1]["discovery_us"].is_null());

  const auto followers = api.get("/api/v1/statistics?role=follower&partition=2").json();
  REQUIRE(followers["groups"].size() == 2);  // kill and stop
  CHECK(followers["groups"][0]["fault"] == "kill");
  CHECK(followers["groups"][0]["ack_stall_us"]["max"] == 9'000'000);
  CHECK(api.get("/api/v1/statistics?cluster=idle").json()["groups"].empty());
  problemOf(api.get("/api/v1/statistics?role=boss"), 400, "invalid-parameter");
}

TEST_CASE(
    "every fault kind of the schema filters the drill list, the last drill and the statistics",
    "[integration][api]") {
  DrillApi api;
  // openapi.yaml's Fault (the contract test in contract_schema_test.cc holds it to the drill spec).
  const std::vector<std::string> kinds = {"kill",      "stop",      "pause",
                                          "restart",   "isolate",   "throttle",
                                          "disk_full", "disk_slow", "rolling_restart"};
  std::map<std::string, std::int64_t> ids;
  std::map<std::string, std::int64_t> stalls;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    stalls[kinds[i]] = 1'000'000 + static_cast<std::int64_t>(i) * 100'000;
    ids[kinds[i]] = api.seedDrill(
        kinds[i], "done", kNow - static_cast<std::int64_t>(20 - i) * kHour, {stalls[kinds[i]]});
  }
  for (const auto& kind : kinds) {
    INFO("fault=" << kind);
    const auto list = api.get("/api/v1/drills?fault=" + kind);
    INFO(list.body);
    REQUIRE(list.status == 200);
    CHECK(list.json()["count"] == 1);
    CHECK(list.json()["items"][0]["id"] == ids[kind]);

    const auto last = api.get("/api/v1/clusters/lab/drills/last?fault=" + kind);
    INFO(last.body);
    REQUIRE(last.status == 200);
    CHECK(last.json()["id"] == ids[kind]);
    CHECK(last.json()["fault"] == kind);

    const auto stats = api.get("/api/v1/statistics?fault=" + kind + "&partition=0");
    INFO(stats.body);
    REQUIRE(stats.status == 200);
    CHECK(stats.json()["drills"] == 1);
    REQUIRE(stats.json()["groups"].size() == 1);
    CHECK(stats.json()["groups"][0]["fault"] == kind);
    CHECK(stats.json()["groups"][0]["ack_stall_us"]["max"] == stalls[kind]);
  }
  // A kind of no drill is still a kind: 404 on the on-call view, an empty list and no statistics.
  const auto unknown =
      problemOf(api.get("/api/v1/statistics?fault=reboot"), 400, "invalid-parameter");
  CHECK(unknown["detail"] ==
        "fault: must be one of kill, stop, pause, restart, isolate, throttle, disk_full, "
        "disk_slow, rolling_restart, observed, "
        "got \"reboot\"");
  problemOf(api.get("/api/v1/clusters/idle/drills/last?fault=disk_slow"), 404, "no-drill");
  CHECK(api.get("/api/v1/drills?cluster=idle&fault=rolling_restart").json()["count"] == 0);
}

TEST_CASE(
    "from at or after to is an empty answer on drills, statistics, incidents and the audit log, "
    "not a 400",
    "[integration][api]") {
  DrillApi api;
  const auto created = kNow - 2 * kHour;
  api.seedDrill("kill", "done", created, {11'000'000});
  api.store().addGap(
      testing::makeGap(api.lab(), "orders", 1, storage::GapKind::kAck, kNow - kHour, 6'000'000));
  api.store().flush();
  // An audited change at kNow.
  REQUIRE(
      api.send("POST", "/api/v1/clusters/lab/drills", R"({"fault":"kill","target":{"broker":1}})")
          .status == 202);
  api.recorder().flush();

  const auto range = [](std::int64_t from_us, std::int64_t to_us) {
    return "from=" + common::formatRfc3339(from_us) + "&to=" + common::formatRfc3339(to_us);
  };
  // The audit log is the operator's to read.
  const auto read = [&api](const std::string& target) { return api.getAs(target, kToken); };
  // Each range [t, t) holds the instant the row is at, which a half-open range leaves out; the
  // range one microsecond longer finds it.
  struct Case {
    std::string path;
    std::int64_t t;
  };
  for (const auto& c :
       {Case{"/api/v1/drills?", created}, Case{"/api/v1/clusters/lab/incidents?", kNow - kHour},
        Case{"/api/v1/audit?", kNow}}) {
    INFO(c.path);
    const auto none = read(c.path + range(c.t, c.t));
    INFO(none.body);
    REQUIRE(none.status == 200);
    CHECK(none.json()["items"].empty());
    CHECK(read(c.path + range(c.t, c.t + 1)).json()["items"].size() == 1);
    const auto inverted = read(c.path + range(c.t + 1, c.t));
    REQUIRE(inverted.status == 200);
    CHECK(inverted.json()["items"].empty());
  }
  const auto stats = read("/api/v1/statistics?" + range(created, created));
  REQUIRE(stats.status == 200);
  CHECK(stats.json()["drills"] == 0);
  CHECK(stats.json()["groups"].empty());
  CHECK(read("/api/v1/statistics?" + range(created, created + 1)).json()["drills"] == 1);
  CHECK(read("/api/v1/statistics?" + range(created + 1, created)).json()["drills"] == 0);
}

TEST_CASE("a drill's timeline lists the events of its window relative to the fault",
          "[integration][api]") {
  DrillApi api;
  const auto created = kNow - kHour;
  const auto id = api.seedDrill("kill", "done", created, {11'000'000});
  const auto fault = created + 10 * kSecond;
  const auto event = [&](std::int64_t t, const std::string& source, const std::string& kind) {
    storage::Event e;
    e.cluster = api.lab();
    e.t_us = t;
    e.source = source;
    e.kind = kind;
    e.broker = 1;
    e.detail = "{}";
    api.store().addEvent(e);
  };
  event(fault + 8'800'000, "broker_log", "fenced");
  event(fault, "injector", "fault");
  event(fault + 8'900'000, "metadata", "leader_change");
  event(fault - 10 * kHour, "metadata", "broker_gone");  // long before: not in the window
  api.store().flush();
  const auto timeline = api.get("/api/v1/drills/" + std::to_string(id) + "/timeline").json();
  REQUIRE(timeline["count"] == 3);
  CHECK(timeline["items"][0]["kind"] == "fault");
  CHECK(timeline["items"][0]["relative_s"] == 0.0);
  CHECK(timeline["items"][1]["kind"] == "fenced");
  CHECK(timeline["items"][1]["relative_s"].get<double>() == Approx(8.8));
  CHECK(timeline["items"][2]["kind"] == "leader_change");
  CHECK(timeline["items"][2]["run"] == 1);
  CHECK(timeline["fault_us"] == fault);
}

TEST_CASE("abort: a queued drill is aborted, a finished one is a 409", "[integration][api]") {
  DrillApi api;
  const auto queued =
      api.send("POST", "/api/v1/clusters/lab/drills", R"({"fault":"kill","target":{"broker":2}})");
  REQUIRE(queued.status == 202);
  const auto id = std::to_string(queued.json()["id"].get<std::int64_t>());
  problemOf(api.send("POST", "/api/v1/drills/" + id + "/abort", "", false), 401, "unauthorized");
  const auto aborted = api.send("POST", "/api/v1/drills/" + id + "/abort");
  REQUIRE(aborted.status == 202);
  CHECK(aborted.json()["state"] == "aborted");
  const auto again =
      problemOf(api.send("POST", "/api/v1/drills/" + id + "/abort"), 409, "drill-finished");
  CHECK(again["state"] == "aborted");
  problemOf(api.send("POST", "/api/v1/drills/424242/abort"), 404, "unknown-drill");
}

TEST_CASE("mark: an observed drill takes a mark with its time, broker and author",
          "[integration][api]") {
  DrillApi api;
  const auto started = api.send("POST", "/api/v1/clusters/lab/drills",
                                R"({"fault":"observed","options":{"window_s":600}})");
  REQUIRE(started.status == 202);
  CHECK(started.json()["fault"] == "observed");
  const auto id = started.json()["id"].get<std::int64_t>();
  const auto path = "/api/v1/drills/" + std::to_string(id) + "/mark";
  problemOf(api.send("POST", path, "", false), 401, "unauthorized");
  const auto marked = api.send(
      "POST", path, R"({"at":"2023-11-14T22:13:20.250Z","broker":1,"by":"chaos toolkit"})");
  REQUIRE(marked.status == 200);
  CHECK(marked.json()["drill"] == id);
  CHECK(marked.json()["at_us"] == 1'700'000'000'250'000);
  CHECK(marked.json()["broker"] == 1);
  CHECK(marked.json()["by"] == "chaos toolkit");
  // No body: now, no broker.
  const auto now = api.send("POST", path);
  REQUIRE(now.status == 200);
  CHECK(now.json()["broker"].is_null());
  REQUIRE(api.control().marks.size() == 2);
  CHECK(api.control().marks[0].broker == 1);
  CHECK(api.control().marks[0].by == "chaos toolkit");
  CHECK_FALSE(api.control().marks[1].at_us);
}

TEST_CASE("mark: a bad body, a drill not observed or closed, and the engine's refusals",
          "[integration][api]") {
  DrillApi api;
  const auto started = api.send("POST", "/api/v1/clusters/lab/drills",
                                R"({"fault":"observed","options":{"window_s":60}})");
  REQUIRE(started.status == 202);
  const auto path =
      "/api/v1/drills/" + std::to_string(started.json()["id"].get<std::int64_t>()) + "/mark";
  for (const auto* body : {R"({"at":"yesterday"})", R"({"broker":-1})", R"({"broker":"1"})",
                           R"({"when":1})", R"({"by":7})", "[]"}) {
    INFO(body);
    problemOf(api.send("POST", path, body), 400, "invalid-body");
  }
  // What only the engine can tell: the time against its clock and the drill, the broker against
  // the inventory.
  api.control().mark_error =
      Error{make_error_code(drill::errc::invalid_request), "at: in the future"};
  CHECK(problemOf(api.send("POST", path), 400, "invalid-body")["detail"] == "at: in the future");
  api.control().mark_error =
      Error{make_error_code(drill::errc::drill_not_found), "drill is not running"};
  problemOf(api.send("POST", path), 409, "drill-finished");

  const auto kill =
      api.send("POST", "/api/v1/clusters/lab/drills", R"({"fault":"kill","target":{"broker":2}})");
  REQUIRE(kill.status == 202);
  problemOf(api.send("POST", "/api/v1/drills/" +
                                 std::to_string(kill.json()["id"].get<std::int64_t>()) + "/mark"),
            409, "drill-refused");
  const auto ended = api.seedDrill("observed", "done", kNow - 600 * kSecond, {});
  problemOf(api.send("POST", "/api/v1/drills/" + std::to_string(ended) + "/mark"), 409,
            "drill-finished");
  problemOf(api.send("POST", "/api/v1/drills/424242/mark"), 404, "unknown-drill");
}

TEST_CASE("an observed drill's window out of range, a target or an injection option is a 400",
          "[integration][api]") {
  DrillApi api;
  for (const auto* body : {R"({"fault":"observed","options":{"window_s":9}})",
                           R"({"fault":"observed","options":{"window_s":86401}})",
                           R"({"fault":"observed","target":{"broker":1}})",
                           R"({"fault":"observed","options":{"grace_s":5}})",
                           R"({"fault":"kill","target":{"broker":1},"options":{"window_s":60}})"}) {
    INFO(body);
    problemOf(api.send("POST", "/api/v1/clusters/lab/drills", body), 400, "invalid-body");
  }
}

TEST_CASE("recoveries: the open ones are listed, an operator resolves one whose drill has ended",
          "[integration][api]") {
  DrillApi api;
  const auto ended = api.seedDrill("kill", "failed", kNow - 600 * kSecond, {});
  storage::DrillRecord running;
  running.cluster = api.lab();
  running.fault = "kill";
  running.target = R"({"broker":2})";
  running.options = "{}";
  running.state = "recover";
  running.created_us = kNow - 60 * kSecond;
  const auto running_id = *api.drills().createDrill(running);
  storage::RecoveryEntry orphan;
  orphan.drill_id = ended;
  orphan.cluster = api.lab();
  orphan.node = 9;
  orphan.action = "start";
  orphan.phase = "recover";
  orphan.created_us = kNow - 590 * kSecond;
  orphan.attempts = 3;
  orphan.last_error = "no such container";
  const auto orphan_id = *api.drills().addRecovery(orphan);
  auto busy = orphan;
  busy.drill_id = running_id;
  busy.node = 2;
  const auto busy_id = *api.drills().addRecovery(busy);

  const auto list = api.get("/api/v1/recoveries");
  REQUIRE(list.status == 200);
  REQUIRE(list.json()["items"].size() == 2);
  CHECK(list.json()["items"][0]["node"] == 9);
  CHECK(list.json()["items"][0]["cluster"] == "lab");
  CHECK(list.json()["items"][0]["done_us"].is_null());

  const auto path = "/api/v1/recoveries/" + std::to_string(orphan_id) + "/resolve";
  problemOf(api.send("POST", path, R"({"note":"retired"})", false), 401, "unauthorized");
  problemOf(api.send("POST", path, R"({"reason":"x"})"), 400, "invalid-body");
  problemOf(api.send("POST", "/api/v1/recoveries/" + std::to_string(busy_id) + "/resolve"), 409,
            "recovery-in-progress");
  const auto resolved = api.send("POST", path, R"({"note":"node 9 retired"})");
  REQUIRE(resolved.status == 200);
  CHECK(resolved.json()["phase"] == "resolved");
  CHECK(resolved.json()["done_us"] == kNow);
  CHECK(resolved.json()["last_error"] ==
        "resolved by an operator: node 9 retired (last error: no such container)");
  problemOf(api.send("POST", path), 404, "unknown-recovery");
  CHECK(api.get("/api/v1/recoveries").json()["items"].size() == 1);
}

TEST_CASE("schedules: create, read, disable, change, delete", "[integration][api]") {
  DrillApi api;
  const std::string body =
      R"({"cluster":"lab","name":"weekly kill","cron":"0 3 * * MON","jitter_s":0,"drill":{"fault":"kill","target":{"broker":1}}})";
  problemOf(api.send("POST", "/api/v1/schedules", body, false), 401, "unauthorized");
  const auto created = api.send("POST", "/api/v1/schedules", body);
  REQUIRE(created.status == 201);
  auto schedule = created.json();
  CHECK(schedule["cron"] == "0 3 * * mon");
  CHECK(schedule["enabled"] == true);
  // kNow is Tuesday 2023-11-14 22:13:20Z: the next Monday 03:00 is the 20th.
  CHECK(schedule["next_run"] == "2023-11-20T03:00:00.000000Z");
  CHECK(schedule["drill"]["options"]["repeats"] == 1);
  const auto location = created.header("Location");
  CHECK(api.get(location).json() == schedule);
  CHECK(api.get("/api/v1/schedules").json()["count"] == 1);

  auto disabled = api.send("PATCH", location, R"({"enabled":false})");
  REQUIRE(disabled.status == 200);
  CHECK(disabled.json()["enabled"] == false);
  CHECK(disabled.json()["next_run"].is_null());
  auto changed = api.send("PATCH", location, R"({"enabled":true,"cron":"*/30 * * * *"})");
  CHECK(changed.json()["next_run"] == "2023-11-14T22:30:00.000000Z");

  CHECK(problemOf(api.send("PATCH", location, R"({"cron":"61 * * * *"})"), 400,
                  "invalid-body")["detail"] == "cron: field 1 (minute): 61 is out of range 0-59");
  CHECK(problemOf(api.send("PATCH", location, R"({"cluster":"idle"})"), 400,
                  "invalid-body")["detail"] ==
        "cluster: unknown field (a schedule cannot move to another cluster)");
  CHECK(
      problemOf(
          api.send(
              "POST", "/api/v1/schedules",
              R"({"cluster":"lab","name":"x","cron":"@reboot","drill":{"fault":"kill","target":{"broker":1}}})"),
          400, "invalid-body")["detail"]
          .get<std::string>()
          .rfind("cron: ", 0) == 0);
  CHECK(
      problemOf(
          api.send(
              "POST", "/api/v1/schedules",
              R"({"cluster":"lab","name":"x","cron":"@daily","drill":{"fault":"nap","target":{"broker":1}}})"),
          400, "invalid-body")["detail"] ==
      "drill.fault: must be one of kill, stop, pause, restart, isolate, throttle, disk_full, "
      "disk_slow, rolling_restart, observed");
  CHECK(
      problemOf(
          api.send(
              "POST", "/api/v1/schedules",
              R"({"cluster":"lab","name":"x","cron":"@daily","jitter_s":-1,"drill":{"fault":"kill","target":{"broker":1}}})"),
          400, "invalid-body")["detail"] == "jitter_s: must be between 0 and 86400, got -1");
  problemOf(
      api.send(
          "POST", "/api/v1/schedules",
          R"({"cluster":"idle","name":"x","cron":"@daily","drill":{"fault":"kill","target":{"broker":1}}})"),
      409, "drills-disabled");

  const auto deleted = api.send("DELETE", location);
  CHECK(deleted.status == 204);
  CHECK(deleted.body.empty());
  problemOf(api.get(location), 404, "unknown-schedule");
  problemOf(api.send("DELETE", location), 404, "unknown-schedule");
}

TEST_CASE("incidents are stalls outside drills, merged across partitions, with their events",
          "[integration][api]") {
  DrillApi api;
  using storage::GapKind;
  // A drill two hours ago with its own stalls: not an incident.
  const auto drill_at = kNow - 2 * kHour;
  api.seedDrill("kill", "done", drill_at, {11'000'000});
  api.store().addGap(
      testing::makeGap(api.lab(), "orders", 0, GapKind::kAck, drill_at + 21 * kSecond, 11'000'000));
  // A real incident an hour ago on two partitions, and a short blip that is below min_ms.
  const auto incident_end = kNow - kHour;
  api.store().addGap(
      testing::makeGap(api.lab(), "orders", 1, GapKind::kAck, incident_end, 6'000'000));
  api.store().addGap(testing::makeGap(api.lab(), "orders", 2, GapKind::kReceive,
                                      incident_end + 500'000, 5'000'000));
  api.store().addGap(
      testing::makeGap(api.lab(), "orders", 0, GapKind::kAck, kNow - 10 * 60 * kSecond, 300'000));
  storage::Event gone;
  gone.cluster = api.lab();
  gone.t_us = incident_end - 5 * kSecond;
  gone.source = "metadata";
  gone.kind = "broker_gone";
  gone.broker = 3;
  gone.detail = "{}";
  api.store().addEvent(gone);
  api.store().flush();

  const auto list = api.get("/api/v1/clusters/lab/incidents").json();
  REQUIRE(list["count"] == 1);
  const auto& incident = list["items"][0];
  CHECK(incident["start_us"] == incident_end - 6'000'000);
  CHECK(incident["end_us"] == incident_end + 500'000);
  CHECK(incident["partitions"].size() == 2);
  REQUIRE(incident["events"].size() == 1);
  CHECK(incident["events"][0]["kind"] == "broker_gone");
  CHECK(api.get("/api/v1/clusters/lab/incidents?min_ms=100").json()["count"] == 2);
  problemOf(api.get("/api/v1/clusters/lab/incidents?min_ms=0"), 400, "invalid-parameter");
}

TEST_CASE("metrics count drills by outcome and give the probe's interval histograms",
          "[integration][api]") {
  DrillApi api;
  api.seedDrill("kill", "done", kNow - 3 * kHour, {11'000'000});
  api.seedDrill("kill", "done", kNow - 2 * kHour, {11'000'000});
  api.seedDrill("stop", "aborted", kNow - kHour, {});
  const auto text = api.get("/metrics").body;
  CHECK(text.find("# TYPE kfaild_drills gauge\n") != std::string::npos);
  CHECK(text.find("kfaild_drills{cluster=\"lab\",fault=\"kill\",state=\"done\"} 2\n") !=
        std::string::npos);
  CHECK(text.find("kfaild_drills{cluster=\"lab\",fault=\"stop\",state=\"aborted\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("# TYPE kfaild_probe_ack_interval_seconds histogram\n") != std::string::npos);
  CHECK(text.find("kfaild_probe_ack_interval_seconds_bucket{cluster=\"lab\",topic=\"orders\","
                  "partition=\"0\",le=\"0.025\"} 0\n") != std::string::npos);
  CHECK(text.find("kfaild_probe_ack_interval_seconds_bucket{cluster=\"lab\",topic=\"orders\","
                  "partition=\"0\",le=\"+Inf\"} 0\n") != std::string::npos);
  CHECK(text.find("kfaild_probe_ack_interval_seconds_count{cluster=\"lab\",topic=\"orders\","
                  "partition=\"2\"} 0\n") != std::string::npos);
}

TEST_CASE(
    "each incident gets its own events, cut at 200 before probe events are left out, from one "
    "query",
    "[integration][api]") {
  DrillApi api;
  using storage::GapKind;
  const auto addEvent = [&](std::int64_t t_us, const std::string& source, const std::string& kind) {
    storage::Event e;
    e.cluster = api.lab();
    e.t_us = t_us;
    e.source = source;
    e.kind = kind;
    e.detail = "{}";
    api.store().addEvent(e);
  };
  // Incident B three hours ago, with 250 events around it, every tenth from the probe.
  const auto b_end = kNow - 3 * kHour;
  api.store().addGap(testing::makeGap(api.lab(), "orders", 0, GapKind::kAck, b_end, 5 * kSecond));
  for (int i = 0; i < 250; ++i) {
    addEvent(b_end - 5 * kSecond - kIncidentEventsBeforeUs + i * 100'000,
             i % 10 == 0 ? "probe" : "metadata", "b" + std::to_string(i));
  }
  // Incident C two hours ago with two events, and an event between B and C that is near neither.
  const auto c_end = kNow - 2 * kHour;
  api.store().addGap(
      testing::makeGap(api.lab(), "orders", 1, GapKind::kReceive, c_end, 3 * kSecond));
  addEvent(c_end - 3 * kSecond - kIncidentEventsBeforeUs, "client", "c-first");
  addEvent(c_end + kIncidentEventsAfterUs - 1, "broker_log", "c-last");
  addEvent(c_end + kIncidentEventsAfterUs, "broker_log", "just-after-c");
  addEvent(kNow - 150 * 60 * kSecond, "metadata", "between");
  // A two-hour gap that ends an hour into the default 7-day range but began before it, during a
  // drill that finished before the range: the drill's own stall, not an incident.
  const auto range_from = kNow - 7 * 24 * kHour;
  api.seedDrill("kill", "done", range_from - 30 * 60 * kSecond, {});
  api.store().addGap(
      testing::makeGap(api.lab(), "orders", 2, GapKind::kAck, range_from + kHour, 2 * kHour));
  api.store().flush();

  const auto list = api.get("/api/v1/clusters/lab/incidents").json();
  REQUIRE(list["count"] == 2);
  const auto& c = list["items"][0];
  CHECK(c["end_us"] == c_end);
  REQUIRE(c["events"].size() == 2);
  CHECK(c["events"][0]["kind"] == "c-first");
  CHECK(c["events"][1]["kind"] == "c-last");
  const auto& b = list["items"][1];
  CHECK(b["end_us"] == b_end);
  // The first 200 events by time, then the 20 of them from the probe left out.
  REQUIRE(b["events"].size() == 180);
  CHECK(b["events"][0]["kind"] == "b1");
  CHECK(b["events"][179]["kind"] == "b199");
  for (const auto& e : b["events"]) CHECK(e["source"] != "probe");
}

TEST_CASE("metrics report the database's size and what retention pruned", "[integration][api]") {
  DrillApi api;
  storage::RetentionReport report;
  report.pruned_samples = (std::uint64_t{1} << 53) + 1;
  report.pruned_drill_samples = 7;
  report.pruned_gaps = 3;
  report.pruned_events = 11;
  report.passes = 5;
  report.failures = 2;
  api.retention().set(report);
  auto text = api.get("/metrics").body;
  const auto size = api.store().databaseSize();
  REQUIRE(size.ok());
  const std::vector<std::string> expected = {
      "# TYPE kfaild_storage_database_bytes gauge\n",
      "kfaild_storage_database_bytes " + std::to_string(size->fileBytes()) + "\n",
      "# TYPE kfaild_storage_used_bytes gauge\n",
      "kfaild_storage_used_bytes " + std::to_string(size->usedBytes()) + "\n",
      "# TYPE kfaild_storage_pruned_rows_total counter\n",
      "kfaild_storage_pruned_rows_total{kind=\"samples\"} 9007199254740993\n",
      "kfaild_storage_pruned_rows_total{kind=\"drill_samples\"} 7\n",
      "kfaild_storage_pruned_rows_total{kind=\"gaps\"} 3\n",
      "kfaild_storage_pruned_rows_total{kind=\"events\"} 11\n",
      "# TYPE kfaild_storage_retention_passes_total counter\n",
      "kfaild_storage_retention_passes_total 5\n",
      "# TYPE kfaild_storage_prune_failures_total counter\n",
      "kfaild_storage_prune_failures_total 2\n",
  };
  for (const auto& line : expected) {
    INFO(line);
    CHECK(text.find(line) != std::string::npos);
  }
  // Neither a bound nor a successful pass yet: those families are absent, not zero.
  CHECK(text.find("kfaild_storage_max_bytes") == std::string::npos);
  CHECK(text.find("kfaild_storage_last_prune_timestamp_seconds") == std::string::npos);

  report.max_bytes = 1LL << 30;
  report.last_success_us = kNow - 1'500'000;
  api.retention().set(report);
  text = api.get("/metrics").body;
  CHECK(text.find("# TYPE kfaild_storage_max_bytes gauge\nkfaild_storage_max_bytes 1073741824\n") !=
        std::string::npos);
  CHECK(text.find("# TYPE kfaild_storage_last_prune_timestamp_seconds gauge\n"
                  "kfaild_storage_last_prune_timestamp_seconds 1699999998.5\n") !=
        std::string::npos);
}

TEST_CASE("metrics count many drills by outcome, as many as there are", "[integration][api]") {
  DrillApi api;
  // More than one page of any listing, in three outcomes and two clusters.
  for (int i = 0; i < 120; ++i) {
    api.seedDrill(i % 3 == 0 ? "stop" : "kill", i % 4 == 0 ? "failed" : "done",
                  kNow - (200 - i) * kHour, {}, i % 5 == 0 ? api.idle() : api.lab());
  }
  std::map<std::string, int> want;
  for (int i = 0; i < 120; ++i) {
    const std::string cluster = i % 5 == 0 ? "idle" : "lab";
    ++want["kfaild_drills{cluster=\"" + (cluster == "idle" ? std::to_string(api.idle()) : cluster) +
           "\",fault=\"" + (i % 3 == 0 ? "stop" : "kill") + "\",state=\"" +
           (i % 4 == 0 ? "failed" : "done") + "\"} "];
  }
  const auto text = api.get("/metrics").body;
  int total = 0;
  for (const auto& [prefix, count] : want) {
    INFO(prefix);
    CHECK(text.find(prefix + std::to_string(count) + "\n") != std::string::npos);
    total += count;
  }
  CHECK(total == 120);
  CHECK(want.size() == 8);
}

}  // namespace
}  // namespace kfaild::api::drill_endpoints_test

namespace kfaild::api::drill_endpoints_test {
namespace {

// Every mutating route of the API, with a body it accepts from the operator.
struct MutatingRoute {
  std::string method, target, body;
};

std::vector<MutatingRoute> mutatingRoutes(DrillApi& api) {
  const auto finished = api.seedDrill("kill", "done", kNow - 600 * kSecond, {8'000'000});
  storage::RecoveryEntry entry;
  entry.drill_id = finished;
  entry.cluster = api.lab();
  entry.node = 9;
  entry.action = "start";
  entry.phase = "recover";
  entry.created_us = kNow - 590 * kSecond;
  const auto recovery = *api.drills().addRecovery(entry);
  storage::ScheduleRecord schedule;
  schedule.cluster = api.lab();
  schedule.name = "nightly";
  schedule.cron = "0 3 * * *";
  schedule.drill = R"({"fault":"kill","target":{"broker":1}})";
  schedule.created_us = kNow;
  const auto schedule_id = std::to_string(*api.drills().createSchedule(schedule));
  return {
      {"POST", "/api/v1/clusters/lab/drills", R"({"fault":"kill","target":{"broker":1}})"},
      {"POST",
       "/api/v1/drills/" + std::to_string(api.seedDrill("kill", "queued", kNow, {})) + "/abort",
       ""},
      {"POST", "/api/v1/recoveries/" + std::to_string(recovery) + "/resolve",
       R"({"note":"retired"})"},
      {"POST", "/api/v1/schedules",
       R"({"cluster":"lab","name":"weekly","cron":"0 3 * * MON","drill":{"fault":"kill","target":{"broker":1}}})"},
      {"PATCH", "/api/v1/schedules/" + schedule_id, R"({"enabled":false})"},
      {"DELETE", "/api/v1/schedules/" + schedule_id, ""},
  };
}

TEST_CASE(
    "every mutating route: the viewer token is 403, no token 401, a foreign Origin or a text/plain "
    "body "
    "403/415, a foreign Host 421, and the operator succeeds, every attempt in the audit log "
    "(anonymous "
    "ones counted)",
    "[integration][api][security]") {
  DrillApi api;
  const auto routes = mutatingRoutes(api);
  int attempts = 0;   // with a token: a row each
  int anonymous = 0;  // 401 and 421: counted per minute, peer, route and status
  for (const auto& route : routes) {
    INFO(route.method << " " << route.target);
    problemOf(api.sendAs(route.method, route.target, route.body, kViewerToken), 403, "forbidden");
    problemOf(api.sendAs(route.method, route.target, route.body, ""), 401, "unauthorized");
    problemOf(api.sendAs(route.method, route.target, route.body, kToken,
                         {{"Origin", "http://evil.example"}}),
              403, "cross-site-request");
    problemOf(api.sendAs(route.method, route.target, route.body, kToken,
                         {{"Sec-Fetch-Site", "cross-site"}}),
              403, "cross-site-request");
    problemOf(api.sendAs(route.method, route.target, route.body, kToken,
                         {{"Host", "rebound.evil.example"}}),
              421, "unknown-host");
    if (!route.body.empty()) {
      testing::HttpConnection connection(api.port());
      const auto plain = connection.request(
          {route.method,
           route.target,
           route.body,
           {{"Authorization", std::string("Bearer ") + kToken}, {"Content-Type", "text/plain"}}});
      problemOf(plain, 415, "unsupported-media-type");
      ++attempts;
    }
    const auto done = api.sendAs(route.method, route.target, route.body, kToken,
                                 {{"Host", "127.0.0.1:" + std::to_string(api.port())},
                                  {"Origin", "http://127.0.0.1:" + std::to_string(api.port())},
                                  {"Sec-Fetch-Site", "same-origin"}});
    CHECK(done.status < 300);
    attempts += 4;
    anonymous += 2;
  }
  CHECK(api.control().submitted.size() == 1);  // only the operator's drill
  api.recorder().flush();
  const auto counts = api.audit().refusals(1000);
  REQUIRE(counts.ok());
  std::int64_t counted = 0;
  std::set<int> counted_statuses;
  for (const auto& count : *counts) {
    counted += count.count;
    counted_statuses.insert(count.status);
  }
  CHECK(counted == anonymous);
  CHECK(counted_statuses == std::set<int>{401, 421});

  // The audit log: operator only, newest first, paged.
  problemOf(api.getAs("/api/v1/audit", kViewerToken), 403, "forbidden");
  problemOf(api.getAs("/api/v1/audit", ""), 401, "unauthorized");
  std::vector<json> rows;
  std::string cursor;
  for (int page = 0; page < 20; ++page) {
    const auto reply =
        api.getAs("/api/v1/audit?limit=7" + (cursor.empty() ? "" : "&cursor=" + cursor), kToken);
    REQUIRE(reply.status == 200);
    const auto page_json = reply.json();
    for (const auto& item : page_json["items"]) rows.push_back(item);
    if (page_json["next_cursor"].is_null()) break;
    cursor = page_json["next_cursor"].get<std::string>();
  }
  CHECK(static_cast<int>(rows.size()) == attempts);
  const auto& newest = rows.front();  // the operator's DELETE of the schedule
  CHECK(newest["method"] == "DELETE");
  CHECK(newest["route"] == "/api/v1/schedules/{id}");
  CHECK(newest["role"] == "operator");
  CHECK(newest["remote_address"] == "127.0.0.1");
  CHECK(newest["status"] == 204);
  CHECK(newest["problem"].is_null());
  CHECK(newest["body_sha256"] ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(newest["time"] == common::formatRfc3339(kNow));
  std::set<std::string> problems;
  std::set<std::string> roles;
  for (const auto& row : rows) {
    if (!row["problem"].is_null()) problems.insert(row["problem"].get<std::string>());
    roles.insert(row["role"].get<std::string>());
  }
  CHECK(problems ==
        std::set<std::string>{"forbidden", "cross-site-request", "unsupported-media-type"});
  CHECK(roles == std::set<std::string>{"viewer", "operator"});
  // The drill's body, hashed: the log proves what was sent without keeping it.
  const auto drill_post = std::find_if(rows.begin(), rows.end(), [](const json& row) {
    return row["route"] == "/api/v1/clusters/{cluster}/drills" && row["status"] == 202;
  });
  REQUIRE(drill_post != rows.end());
  CHECK((*drill_post)["body_sha256"] ==
        "708939e0b8e216fbe201e65fd472eb046a0c153599e015dea56707cc14d6ff58");
}

TEST_CASE("a reader without the operator token sees drill reasons and cluster addresses redacted",
          "[integration][api][security]") {
  DrillApi api;
  storage::DrillRecord failed;
  failed.cluster = api.lab();
  failed.fault = "kill";
  failed.target = R"({"broker":1})";
  failed.options = "{}";
  failed.state = "failed";
  failed.reason =
      "kill of broker 1 failed: ssh_failed: root@kafka-1.internal: Permission denied (publickey)";
  failed.created_us = kNow;
  const auto id = std::to_string(*api.drills().createDrill(failed));
  const std::string redacted =
      "kill of broker 1 failed: ssh_failed: [redacted]: Permission denied (publickey)";
  CHECK(api.getAs("/api/v1/drills/" + id, "").json()["reason"] == redacted);
  CHECK(api.getAs("/api/v1/drills/" + id, kViewerToken).json()["reason"] == redacted);
  CHECK(api.getAs("/api/v1/drills/" + id, kToken).json()["reason"] == failed.reason);
  CHECK(api.getAs("/api/v1/drills", "").json()["items"][0]["reason"] == redacted);

  const auto anonymous = api.getAs("/api/v1/clusters/lab", "").body;
  const auto operator_view = api.getAs("/api/v1/clusters/lab", kToken).body;
  CHECK(anonymous.find("127.0.0.1:19091") == std::string::npos);
  CHECK(operator_view.find("127.0.0.1:19091") != std::string::npos);
}

TEST_CASE("every answer carries the dashboard's security headers", "[integration][api][security]") {
  DrillApi api;
  for (const auto& reply :
       {api.get("/api/v1/drills"), api.get("/no/such/path"), api.getAs("/api/v1/audit", "")}) {
    const auto csp = reply.header("Content-Security-Policy");
    CHECK(csp.find("script-src 'self'") != std::string::npos);
    CHECK(csp.find("frame-ancestors 'none'") != std::string::npos);
    CHECK(csp.find("unsafe-inline") == std::string::npos);
    CHECK(reply.header("X-Content-Type-Options") == "nosniff");
    CHECK(reply.header("Referrer-Policy") == "no-referrer");
  }
}

}  // namespace
}  // namespace kfaild::api::drill_endpoints_test

namespace kfaild::api::drill_endpoints_test {
namespace {

// A stored verdict as the engine writes it: one failing ack check on p0 of run `run` and, when
// `regressed`, a regression of that stall.
void setVerdict(storage::SqliteDrillStore& drills, std::int64_t id, analysis::CheckStatus status,
                bool regressed) {
  auto row = drills.drill(id);
  REQUIRE(row.ok());
  REQUIRE(row->has_value());
  auto d = **row;
  analysis::Verdict v;
  v.verdict = status;
  v.objectives = analysis::defaultObjectives();
  analysis::Check c;
  c.objective = c.source = "max_ack_stall_s";
  c.threshold = 1;
  c.measured = 9.0;
  c.unit = "s";
  c.status = status;
  c.run = 1;
  c.topic = "orders";
  c.partition = 0;
  c.role = "leader";
  v.checks.push_back(c);
  if (regressed)
    v.regressions.push_back(
        {analysis::StallKind::kAck, "leader", "orders", 0, 1, 9.0, 4.0, 2.25, 3});
  auto result = json::parse(d.result);
  result["verdict"] = analysis::toJson(v);
  d.result = result.dump();
  d.verdict = analysis::toString(status);
  d.regressed = regressed;
  REQUIRE(drills.updateDrill(d).ok());
}

}  // namespace

TEST_CASE(
    "a drill request's expect is kept with the drill, and an unknown objective is a 400 naming it",
    "[integration][api][verdict]") {
  DrillApi api;
  const auto reply =
      api.send("POST", "/api/v1/clusters/lab/drills",
               R"({"fault":"kill","target":{"broker":1},"expect":{"max_ack_stall_s":1}})");
  REQUIRE(reply.status == 202);
  const auto drill = reply.json();
  CHECK(drill["expect"] == json{{"max_ack_stall_s", 1.0}});
  CHECK(drill["verdict"].is_null());
  CHECK(drill["regressed"].is_null());
  CHECK(drill["verdict_detail"].is_null());
  auto stored = api.drills().drill(drill["id"].get<std::int64_t>());
  REQUIRE(stored.ok());
  CHECK(json::parse((*stored)->expect) == json{{"max_ack_stall_s", 1.0}});

  CHECK(
      problemOf(api.send("POST", "/api/v1/clusters/lab/drills",
                         R"({"fault":"kill","target":{"broker":1},"expect":{"max_ack_stall":1}})"),
                400, "invalid-body")["detail"]
          .get<std::string>()
          .starts_with("expect.max_ack_stall: unknown key"));
  CHECK(
      problemOf(
          api.send(
              "POST", "/api/v1/clusters/lab/drills",
              R"({"fault":"kill","target":{"broker":1},"expect":{"by_fault":{"kill":{"max_ack_stall_s":-2}}}})"),
          400, "invalid-body")["detail"]
          .get<std::string>()
          .starts_with("expect.by_fault.kill.max_ack_stall_s: must be between"));
}

TEST_CASE("a drill's verdict and regression are served, filtered and counted in the statistics",
          "[integration][api][verdict]") {
  DrillApi api;
  const auto passed = api.seedDrill("kill", "done", kNow - 3 * kHour, {9'000'000});
  const auto failed = api.seedDrill("kill", "done", kNow - 2 * kHour, {9'000'000});
  const auto unjudged = api.seedDrill("kill", "done", kNow - kHour, {9'000'000});
  setVerdict(api.drills(), passed, analysis::CheckStatus::kPass, false);
  setVerdict(api.drills(), failed, analysis::CheckStatus::kFail, true);

  const auto body = api.get("/api/v1/drills/" + std::to_string(failed)).json();
  CHECK(body["verdict"] == "fail");
  CHECK(body["regressed"] == true);
  CHECK(body["verdict_detail"]["verdict"] == "fail");
  REQUIRE(body["verdict_detail"]["checks"].size() == 1);
  CHECK(body["verdict_detail"]["checks"][0]["partition"] == 0);
  CHECK(body["verdict_detail"]["checks"][0]["measured"] == 9.0);
  CHECK(body["verdict_detail"]["regressions"][0]["median_s"] == 4.0);
  CHECK(api.get("/api/v1/drills/" + std::to_string(unjudged)).json()["verdict"].is_null());

  const auto fails = api.get("/api/v1/drills?verdict=fail").json();
  REQUIRE(fails["count"] == 1);
  CHECK(fails["items"][0]["id"] == failed);
  CHECK(api.get("/api/v1/drills?verdict=pass").json()["items"][0]["id"] == passed);
  CHECK(api.get("/api/v1/drills?verdict=inconclusive").json()["count"] == 0);
  problemOf(api.get("/api/v1/drills?verdict=maybe"), 400, "invalid-parameter");

  const auto stats = api.get("/api/v1/statistics?fault=kill&partition=0").json();
  REQUIRE(stats["groups"].size() == 1);
  const auto& p0 = stats["groups"][0];
  CHECK(p0["regressions"] == 1);
  REQUIRE(p0["trend"].size() == 3);
  CHECK(p0["trend"][0]["ack_regressed"] == false);
  CHECK(p0["trend"][1]["ack_regressed"] == true);
  CHECK(p0["trend"][1]["receive_regressed"] == false);
  CHECK(p0["trend"][2]["ack_regressed"] == false);
}

}  // namespace kfaild::api::drill_endpoints_test
