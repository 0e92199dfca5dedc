#include "server/notify/notifier.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <thread>

#include "api/notification_endpoints.h"
#include "api/router.h"
#include "server/common/sensitive.h"
#include "server/maintenance/maintenance_windows.h"
#include "storage/maintenance_store.h"
#include "storage/notification_queue.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/support/http_receiver.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certs.h"

namespace notifier_test {

using namespace kfaild;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// A database at the latest schema, with its queue.
struct QueueDb {
  testing::TempDir dir;
  std::string path = (dir / "kfaild.db").string();
  std::unique_ptr<storage::SqliteStore> store;
  std::unique_ptr<storage::NotificationQueue> queue;
  QueueDb() {
    auto s = storage::SqliteStore::open(path);
    REQUIRE(s);
    store = std::move(*s);
    auto q = storage::NotificationQueue::open(path);
    REQUIRE(q);
    queue = std::move(*q);
  }
  std::vector<storage::NotificationRecord> rows() const {
    storage::NotificationQuery q;
    q.limit = 1000;
    auto r = queue->notifications(q);
    REQUIRE(r);
    return *r;
  }
};

// A drill row as h/verdict leaves it: result.verdict with one failed check.
storage::DrillRecord drillRow(std::int64_t id, const std::string& verdict) {
  storage::DrillRecord d;
  d.id = id;
  d.cluster = 1;
  d.fault = "kill";
  d.target = R"({"broker":1})";
  d.state = "done";
  d.created_us = 1'700'000'000'000'000;
  d.started_us = d.created_us;
  d.finished_us = d.created_us + 30'000'000;
  d.result = json{{"runs", json::array()},
                  {"verdict",
                   {{"verdict", verdict},
                    {"checks",
                     {{{"objective", "max_ack_stall"},
                       {"threshold", 1.0},
                       {"measured", 9.4},
                       {"unit", "s"},
                       {"status", verdict == "pass" ? "pass" : "fail"},
                       {"run", 0},
                       {"topic", "orders"},
                       {"partition", 0},
                       {"role", "leader"},
                       {"reason", nullptr}}}},
                    {"regressions", json::array()}}}}
                 .dump();
  return d;
}

config::NotificationsConfig configFor(std::vector<config::ReceiverConfig> receivers) {
  config::NotificationsConfig c;
  c.receivers = std::move(receivers);
  c.retry.initial_us = 1'000'000;
  c.retry.max_us = 4'000'000;
  c.retry.max_attempts = 100;
  return c;
}

config::ReceiverConfig receiver(const std::string& name, const std::string& type,
                                const std::string& url) {
  config::ReceiverConfig r;
  r.name = name;
  r.type = type;
  r.url = url;
  r.timeout_ms = 3'000;
  return r;
}

// An ack gap of `orders` on `partition`.
storage::Gap ackGap(storage::ClusterId cluster, std::int64_t start_us, std::int64_t duration_us,
                    std::int32_t partition) {
  storage::Gap g;
  g.cluster = cluster;
  g.topic = "orders";
  g.partition = partition;
  g.kind = storage::GapKind::kAck;
  g.start_us = start_us;
  g.end_us = start_us + duration_us;
  g.duration_us = duration_us;
  g.seq_before = 1;
  g.seq_after = 2;
  return g;
}

common::SystemClock& systemClock() {
  static common::SystemClock clock;
  return clock;
}

template <typename Predicate>
bool eventually(Predicate ready, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return ready();
}

}  // namespace

TEST_CASE("a finished drill reaches a webhook and a Slack receiver once each, whatever the repeats",
          "[integration][notify]") {
  QueueDb db;
  testing::HttpReceiver hook;
  hook.start();
  auto hook_config = receiver("hook", "webhook", hook.url("/generic"));
  hook_config.headers["Authorization"] = "Bearer s3cret";
  notify::Notifier notifier(configFor({hook_config, receiver("chat", "slack", hook.url("/slack"))}),
                            "https://kfaild.example", common::Redactor(), *db.queue, systemClock());
  REQUIRE(notifier.start());

  notifier.drillFinished("lab", drillRow(7, "fail"));
  notifier.drillFinished("lab", drillRow(7, "fail"));  // the listener told twice: still one each
  REQUIRE(hook.waitForRequests(2, 10s));
  std::this_thread::sleep_for(1500ms);
  const auto got = hook.requests();
  REQUIRE(got.size() == 2);
  const auto& generic = got[0].target == "/generic" ? got[0] : got[1];
  const auto& slack = got[0].target == "/slack" ? got[0] : got[1];
  CHECK(generic.method == "POST");
  CHECK(generic.content_type == "application/json");
  CHECK(generic.authorization == "Bearer s3cret");
  const auto body = json::parse(generic.body);
  CHECK(body["event"] == "drill_finished");
  CHECK(body["drill"]["id"] == 7);
  CHECK(body["drill"]["verdict"] == "fail");
  CHECK(body["drill"]["failed_checks"][0]["objective"] == "max_ack_stall");
  CHECK(body["links"]["api"] == "https://kfaild.example/api/v1/drills/7");
  const auto slack_body = json::parse(slack.body);
  CHECK(slack_body["text"].get<std::string>().find(
            "drill 7 (kill of broker 1) on lab: verdict fail") != std::string::npos);
  CHECK(slack_body["blocks"].is_array());

  const auto rows = db.rows();
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) {
    CHECK(row.state == "delivered");
    CHECK(row.attempts == 1);
    CHECK(row.delivered_us);
  }
  const auto metrics = notifier.notificationMetrics();
  REQUIRE(metrics.outcomes.size() == 2);
  CHECK(metrics.outcomes[0].outcome == "delivered");
  CHECK(metrics.outcomes[0].count == 1);
  CHECK(metrics.delivery_seconds_count == 2);

  api::PrometheusText text;
  api::appendNotificationMetrics(text, metrics);
  CHECK(text.text().find("kfaild_notifications_total{receiver=\"chat\",event=\"drill_finished\","
                         "outcome=\"delivered\"} 1") != std::string::npos);
  CHECK(text.text().find("kfaild_notifications_queued{receiver=\"hook\"} 0") != std::string::npos);
}

TEST_CASE("a receiver down for 30 s gets the notification after it comes back, exactly once",
          "[integration][notify]") {
  QueueDb db;
  testing::HttpReceiver hook;
  hook.start();  // to learn a free port, then down: connections are refused
  hook.stop();
  notify::Notifier notifier(configFor({receiver("hook", "webhook", hook.url())}), "http://k",
                            common::Redactor(), *db.queue, systemClock());
  REQUIRE(notifier.start());
  notifier.drillFinished("lab", drillRow(8, "fail"));

  std::this_thread::sleep_for(30s);
  auto rows = db.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].state != "delivered");
  CHECK(rows[0].attempts >= 5);  // 1 s, 2 s, 4 s, 4 s, ... with jitter: at least 7 in 30 s
  CHECK(rows[0].last_error.find("Connection refused") != std::string::npos);
  CHECK(notifier.notificationMetrics().queued.at(0).count == 1);

  hook.start();
  const auto back = std::chrono::steady_clock::now();
  REQUIRE(hook.waitForRequests(1, 10s));
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - back);
  std::this_thread::sleep_for(6s);  // longer than the longest retry delay: a second send would show
  CHECK(hook.requests().size() == 1);
  CHECK(json::parse(hook.requests()[0].body)["drill"]["id"] == 8);
  CHECK(waited <= 5s);
  rows = db.rows();
  CHECK(rows[0].state == "delivered");
  CHECK(rows[0].last_error.empty());
}

TEST_CASE(
    "a new notifier over the same database resumes queued deliveries and never resends delivered "
    "ones",
    "[integration][notify]") {
  QueueDb db;
  testing::HttpReceiver hook;
  hook.start();
  const auto config = configFor({receiver("hook", "webhook", hook.url())});
  {
    notify::Notifier first(config, "http://k", common::Redactor(), *db.queue, systemClock());
    REQUIRE(first.start());
    first.drillFinished("lab", drillRow(1, "fail"));
    REQUIRE(hook.waitForRequests(1, 10s));
    REQUIRE(eventually([&] { return db.rows()[0].state == "delivered"; }, 5s));
    hook.stop();
    first.drillFinished("lab", drillRow(2, "inconclusive"));
    REQUIRE(eventually([&] { return db.rows()[0].attempts >= 1; }, 5s));
  }
  // A third row as a kfaild that died mid-delivery leaves it: claimed, never finished.
  storage::NotificationRecord row;
  row.receiver = "hook";
  row.event = "drill_finished";
  row.dedup_key = "drill_finished:drill:3";
  row.payload = R"({"event":"drill_finished","drill":{"id":3}})";
  row.next_attempt_us = 0;
  row.created_us = systemClock().wallNow();
  REQUIRE(db.queue->enqueue(row));
  auto claimed = db.queue->claimDue(systemClock().wallNow(), 10);
  REQUIRE(claimed);
  REQUIRE_FALSE(claimed->empty());
  CHECK(db.rows()[0].dedup_key == "drill_finished:drill:3");
  CHECK(db.rows()[0].state == "delivering");

  hook.start();
  notify::Notifier second(config, "http://k", common::Redactor(), *db.queue, systemClock());
  REQUIRE(second.start());
  second.drillFinished("lab", drillRow(1, "fail"));  // told again after the restart: not resent
  REQUIRE(hook.waitForRequests(3, 15s));
  std::this_thread::sleep_for(2s);
  const auto got = hook.requests();
  REQUIRE(got.size() == 3);
  std::vector<int> ids;
  for (const auto& r : got) ids.push_back(json::parse(r.body)["drill"]["id"].get<int>());
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<int>{1, 2, 3});
  for (const auto& r : db.rows()) CHECK(r.state == "delivered");
}

TEST_CASE("an HTTPS receiver is reached with the configured CA and refused with another",
          "[integration][notify]") {
  QueueDb db;
  testing::TempDir cert_dir;
  testing::TestCertificates certs(cert_dir.path());
  testing::HttpReceiver hook(testing::ReceiverTls{certs.serverCert(), certs.serverKey()});
  hook.start();
  auto good = receiver("good", "webhook", hook.url("/good"));
  good.tls.ca_file = certs.ca();
  auto wrong = receiver("wrong", "webhook", hook.url("/wrong"));
  wrong.tls.ca_file = certs.otherCa();
  auto config = configFor({good, wrong});
  notify::Notifier notifier(config, "http://k", common::Redactor(), *db.queue, systemClock());
  notifier.drillFinished("lab", drillRow(9, "fail"));
  CHECK(notifier.deliverDue() == 2);
  const auto got = hook.requests();
  REQUIRE(got.size() == 1);
  CHECK(got[0].target == "/good");
  CHECK(json::parse(got[0].body)["drill"]["id"] == 9);
  for (const auto& row : db.rows()) {
    if (row.receiver == "good") CHECK(row.state == "delivered");
    if (row.receiver == "wrong") {
      CHECK(row.state == "queued");
      CHECK(row.last_error.find("TLS") != std::string::npos);
      CHECK(row.last_error.find("certificate") != std::string::npos);
    }
  }
}

TEST_CASE("a receiver that answers 4xx is given up at once, and one that answers 5xx is retried",
          "[integration][notify]") {
  QueueDb db;
  testing::HttpReceiver hook;
  hook.start();
  hook.answerWith(400);
  notify::Notifier notifier(configFor({receiver("hook", "webhook", hook.url())}), "http://k",
                            common::Redactor(), *db.queue, systemClock());
  notifier.drillFinished("lab", drillRow(10, "fail"));
  CHECK(notifier.deliverDue() == 1);
  auto rows = db.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].state == "failed");
  CHECK(rows[0].last_error.find("HTTP 400") != std::string::npos);
  CHECK(notifier.deliverDue() == 0);

  hook.answerWith(503);
  notifier.drillFinished("lab", drillRow(11, "fail"));
  CHECK(notifier.deliverDue() == 1);
  rows = db.rows();
  CHECK(rows[0].state == "queued");
  CHECK(rows[0].last_error.find("HTTP 503") != std::string::npos);
  CHECK(rows[0].next_attempt_us > systemClock().wallNow());
  const auto metrics = notifier.notificationMetrics();
  REQUIRE(metrics.outcomes.size() == 1);
  CHECK(metrics.outcomes[0].outcome == "failed");
}

TEST_CASE("a stall outside drills is queued once as an incident, and stalls inside a drill are not",
          "[integration][notify]") {
  QueueDb db;
  auto drills = storage::SqliteDrillStore::open(db.path);
  REQUIRE(drills);
  auto cluster = db.store->ensureCluster("lab", "127.0.0.1:19091");
  REQUIRE(cluster);
  const auto now = systemClock().wallNow();
  storage::DrillRecord drill;
  drill.cluster = *cluster;
  drill.fault = "kill";
  drill.target = R"({"broker":1})";
  drill.options = "{}";
  drill.state = "done";
  drill.created_us = now - 600'000'000;
  drill.started_us = now - 600'000'000;
  drill.finished_us = now - 500'000'000;
  REQUIRE((*drills)->createDrill(drill));
  const auto gap = [&](std::int64_t end_us, std::int64_t duration_us, std::int32_t partition) {
    db.store->addGap(ackGap(*cluster, end_us - duration_us, duration_us, partition));
  };
  gap(now - 550'000'000, 9'000'000, 0);  // inside the drill
  gap(now - 60'000'000, 7'000'000, 1);   // outside: an incident
  gap(now - 30'000'000, 2'000'000, 2);   // outside but shorter than min_stall_s
  db.store->flush();

  testing::HttpReceiver hook;
  hook.start();
  auto config = configFor({receiver("hook", "webhook", hook.url())});
  config.incidents.min_stall_us = 5'000'000;
  notify::Notifier notifier(config, "http://k", common::Redactor(), *db.queue, systemClock());
  notifier.watchIncidents(*db.store, **drills, {{*cluster, "lab"}});
  auto queued = notifier.scanIncidents();
  REQUIRE(queued);
  CHECK(*queued == 1);
  queued = notifier.scanIncidents();
  REQUIRE(queued);
  CHECK(*queued == 0);  // the same stall seen again
  CHECK(notifier.deliverDue() == 1);
  REQUIRE(hook.requests().size() == 1);
  const auto body = json::parse(hook.requests()[0].body);
  CHECK(body["event"] == "incident");
  CHECK(body["incident"]["partitions"].size() == 1);
  CHECK(body["incident"]["partitions"][0]["partition"] == 1);
  CHECK(body["incident"]["duration_us"] == 7'000'000);
}

TEST_CASE(
    "a stall inside a maintenance window raises no incident, and incidents are held while one is "
    "active",
    "[integration][notify][maintenance]") {
  testing::ManualClock clock;
  storage::SqliteStoreOptions options;
  options.clock = &clock;
  testing::TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  auto store = storage::SqliteStore::open(path, options);
  REQUIRE(store);
  auto queue = storage::NotificationQueue::open(path);
  REQUIRE(queue);
  auto drills = storage::SqliteDrillStore::open(path);
  REQUIRE(drills);
  auto maintenance_store = storage::MaintenanceStore::open(path);
  REQUIRE(maintenance_store);
  auto cluster = (*store)->ensureCluster("lab", "127.0.0.1:19091");
  REQUIRE(cluster);
  maintenance::MaintenanceWindows windows(**maintenance_store, clock, {}, config::RetryConfig{});
  const auto gap = [&](std::int64_t start_us, std::int64_t duration_us, std::int32_t partition) {
    (*store)->addGap(ackGap(*cluster, start_us, duration_us, partition));
    (*store)->flush();
  };

  testing::HttpReceiver hook;
  hook.start();
  auto config = configFor({receiver("hook", "webhook", hook.url())});
  config.incidents.min_stall_us = 5'000'000;
  notify::Notifier notifier(config, "http://k", common::Redactor(), **queue, clock);
  notifier.watchIncidents(**store, **drills, {{*cluster, "lab"}}, maintenance_store->get());

  const auto t0 = clock.wallNow();
  gap(t0 - 120'000'000, 7'000'000, 0);  // before the window: an incident, but reported after it
  auto id = windows.open(*cluster, "rolling restart", t0 + 3'600'000'000, "drill 1");
  REQUIRE(id);
  clock.advance(30'000'000);
  gap(t0 + 10'000'000, 9'000'000, 1);  // a broker restarted inside the window: planned
  auto queued = notifier.scanIncidents();
  REQUIRE(queued);
  CHECK(*queued == 0);  // held while the window is active

  clock.advance(30'000'000);
  REQUIRE(windows.close(*id, "drill 1"));
  queued = notifier.scanIncidents();
  REQUIRE(queued);
  CHECK(*queued == 1);  // the stall before the window; the planned one never
  clock.advance(40'000'000);
  gap(clock.wallNow() - 10'000'000, 8'000'000, 2);  // after the window: an incident again
  queued = notifier.scanIncidents();
  REQUIRE(queued);
  CHECK(*queued == 1);

  CHECK(notifier.deliverDue() == 2);
  REQUIRE(hook.requests().size() == 2);
  std::set<int> partitions;
  for (const auto& request : hook.requests()) {
    const auto body = json::parse(request.body);
    CHECK(body["event"] == "incident");
    for (const auto& p : body["incident"]["partitions"])
      partitions.insert(p["partition"].get<int>());
  }
  CHECK(partitions == std::set<int>{0, 2});
}

TEST_CASE(
    "GET /api/v1/notifications filters and pages the queue, redacting receivers' hosts for viewers",
    "[integration][notify][api]") {
  QueueDb db;
  for (int i = 1; i <= 3; ++i) {
    storage::NotificationRecord row;
    row.receiver = i == 3 ? "chat" : "hook";
    row.event = "drill_finished";
    row.dedup_key = "drill_finished:drill:" + std::to_string(i);
    row.payload = json{{"drill", {{"id", i}}}}.dump();
    row.created_us = 1'700'000'000'000'000 + i;
    row.next_attempt_us = row.created_us;
    REQUIRE(db.queue->enqueue(row));
  }
  REQUIRE(db.queue->markRetry(1, 1'700'000'100'000'000,
                              "connect to hooks.example.com:443: Connection refused"));
  api::Router router;
  router.setRedactor(common::Redactor({"hooks.example.com"}));
  api::AccessOptions access;
  access.operator_token = "operator-token-0123456789";
  access.viewer_token = "viewer-token-0123456789";
  router.setAccess(api::AccessPolicy(access));
  api::NotificationEndpoints endpoints(*db.queue);
  endpoints.registerOn(router);
  const auto get = [&](const std::string& target, const std::string& token) {
    auto parsed = api::parseTarget(target);
    REQUIRE(parsed);
    api::Request request;
    request.method = "GET";
    request.path = parsed->path;
    request.segments = parsed->segments;
    request.query = parsed->query;
    request.headers.authorization = {"Bearer " + token};
    const auto response = router.dispatch(request);
    REQUIRE(response.status == 200);
    return json::parse(response.body);
  };
  auto page = get("/api/v1/notifications?receiver=hook&limit=1", "operator-token-0123456789");
  REQUIRE(page["items"].size() == 1);
  CHECK(page["items"][0]["id"] == 2);
  REQUIRE(page["next_cursor"] == "2");
  page = get("/api/v1/notifications?receiver=hook&limit=1&cursor=2", "operator-token-0123456789");
  CHECK(page["items"][0]["id"] == 1);
  CHECK(page["items"][0]["last_error"] == "connect to hooks.example.com:443: Connection refused");
  CHECK(page["next_cursor"].is_null());
  page = get("/api/v1/notifications?receiver=hook&cursor=2", "viewer-token-0123456789");
  CHECK(page["items"][0]["last_error"].get<std::string>().find("hooks.example.com") ==
        std::string::npos);
  CHECK(get("/api/v1/notifications?state=queued&event=drill_finished",
            "viewer-token-0123456789")["count"] == 3);
  CHECK(get("/api/v1/notifications?state=failed", "viewer-token-0123456789")["count"] == 0);
}

TEST_CASE(
    "a failed drill's operator-only reason is queued redacted for a receiver, and as it is for one "
    "that "
    "includes operator details",
    "[integration][notify]") {
  QueueDb db;
  auto ops = receiver("ops", "webhook", "http://127.0.0.1:1/ops");
  ops.include_operator_details = true;
  notify::Notifier notifier(configFor({receiver("chat", "slack", "http://127.0.0.1:1/chat"), ops}),
                            "http://k", common::Redactor({"kafka-1.internal"}), *db.queue,
                            systemClock());
  auto d = drillRow(12, "fail");
  d.state = "failed";
  d.reason =
      "stop of broker 1 failed: " + common::sensitive("ssh kafka-1.internal kill -STOP 4242") +
      ": " + common::sensitive("Permission denied (publickey)");
  notifier.drillFinished("lab", d);
  const auto rows = db.rows();
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) {
    INFO(row.receiver << ": " << row.payload);
    if (row.receiver == "chat") {
      CHECK_THAT(row.payload, Catch::Contains("stop of broker 1 failed: [redacted]: [redacted]"));
      CHECK_THAT(row.payload, !Catch::Contains("kafka-1.internal"));
      CHECK_THAT(row.payload, !Catch::Contains("Permission denied"));
    } else {
      CHECK_THAT(row.payload, Catch::Contains("ssh kafka-1.internal kill -STOP 4242"));
      CHECK_THAT(row.payload, Catch::Contains("Permission denied (publickey)"));
    }
  }
}

}  // namespace notifier_test
