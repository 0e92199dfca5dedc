#include "server/maintenance/maintenance_windows.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/common/time_format.h"
#include "server/maintenance/errc.h"
#include "server/notify/notifier.h"
#include "storage/notification_queue.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/support/alertmanager.h"
#include "tests/support/http_receiver.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace maintenance_windows_test {

using namespace kfaild;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kHour = 3600 * kSecond;

// A database at the latest schema with cluster "lab", and its maintenance store.
struct WindowsDb {
  testing::TempDir dir;
  std::string path = (dir / "kfaild.db").string();
  std::unique_ptr<storage::SqliteStore> store;
  std::unique_ptr<storage::MaintenanceStore> maintenance;
  storage::ClusterId lab = 0;
  explicit WindowsDb(const common::Clock& clock) {
    storage::SqliteStoreOptions options;
    options.clock = &clock;
    auto s = storage::SqliteStore::open(path, options);
    REQUIRE(s);
    store = std::move(*s);
    auto id = store->ensureCluster("lab", "127.0.0.1:19091");
    REQUIRE(id);
    lab = *id;
    reopen();
  }
  void reopen() {
    maintenance.reset();
    auto m = storage::MaintenanceStore::open(path);
    REQUIRE(m);
    maintenance = std::move(*m);
  }
};

// Stands in for Alertmanager where the test needs it to fail on demand; records what it was asked.
class ScriptedSilences final : public maintenance::AlertSilences {
 public:
  const std::string& receiver() const override { return name_; }
  Result<std::string> create(const maintenance::SilenceRequest& request) override {
    std::lock_guard lock(mutex_);
    created.push_back(request);
    if (!failure.empty()) return Error{maintenance::errc::silence_failed, failure};
    return "5ilence-" + std::to_string(created.size());
  }
  Status expire(const std::string& id) override {
    std::lock_guard lock(mutex_);
    if (!failure.empty()) return Error{maintenance::errc::silence_failed, failure};
    expired.push_back(id);
    return okStatus();
  }
  std::string failure;  // non-empty: every call fails with it
  std::vector<maintenance::SilenceRequest> created;
  std::vector<std::string> expired;

 private:
  std::string name_ = "pager";
  std::mutex mutex_;
};

config::RetryConfig quickRetry() {
  config::RetryConfig r;
  r.initial_us = 2 * kSecond;
  r.max_us = 8 * kSecond;
  r.max_attempts = 3;
  return r;
}

}  // namespace

TEST_CASE(
    "a maintenance window is active until its end, survives a restart, and closes early only once",
    "[integration][maintenance]") {
  testing::ManualClock clock;
  WindowsDb db(clock);
  const auto opened_at = clock.wallNow();
  std::int64_t id = 0;
  {
    maintenance::MaintenanceWindows windows(*db.maintenance, clock, {}, quickRetry());
    auto opened =
        windows.open(db.lab, "broker 2 disk swap", opened_at + kHour, "operator (api, 10.0.0.5)");
    REQUIRE(opened);
    id = *opened;
    auto active = windows.active(db.lab, clock.wallNow());
    REQUIRE(active);
    REQUIRE(*active);
    CHECK((*active)->id == id);
    CHECK((*active)->cluster_name == "lab");
    CHECK((*active)->reason == "broker 2 disk swap");
    CHECK((*active)->opened_by == "operator (api, 10.0.0.5)");
    CHECK((*active)->started_us == opened_at);
    CHECK((*active)->ends_us == opened_at + kHour);
    // Not active for another cluster, nor before it was opened.
    auto other = db.store->ensureCluster("prod", "10.0.0.1:9092");
    REQUIRE(other);
    CHECK_FALSE(*windows.active(*other, clock.wallNow()));
    CHECK_FALSE(*windows.active(db.lab, opened_at - 1));
  }
  // A new kfaild over the same file still sees it; an expired window is simply not active.
  db.reopen();
  maintenance::MaintenanceWindows windows(*db.maintenance, clock, {}, quickRetry());
  clock.advance(30 * 60 * kSecond);
  auto still = windows.active(db.lab, clock.wallNow());
  REQUIRE(still);
  REQUIRE(*still);
  CHECK((*still)->id == id);
  CHECK_FALSE(*windows.active(db.lab, opened_at + kHour));
  auto listed = windows.activeWindows(clock.wallNow());
  REQUIRE(listed);
  REQUIRE(listed->size() == 1);

  REQUIRE(windows.close(id, "drill 42"));
  CHECK_FALSE(*windows.active(db.lab, clock.wallNow()));
  auto closed = windows.window(id);
  REQUIRE(closed);
  REQUIRE(*closed);
  CHECK((*closed)->closed_us == clock.wallNow());
  CHECK((*closed)->closed_by == "drill 42");
  const auto again = windows.close(id, "drill 42");
  REQUIRE_FALSE(again);
  CHECK(again.error().code == maintenance::errc::window_over);
  CHECK_THAT(again.error().message, Catch::Contains("closed by drill 42"));
  const auto unknown = windows.close(id + 100, "drill 42");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == maintenance::errc::unknown_window);

  // A window that ran out cannot be closed either.
  auto short_one =
      windows.open(db.lab, "config change", clock.wallNow() + 10 * kSecond, "drill 43");
  REQUIRE(short_one);
  clock.advance(11 * kSecond);
  const auto late = windows.close(*short_one, "drill 43");
  REQUIRE_FALSE(late);
  CHECK(late.error().code == maintenance::errc::window_over);
  CHECK_THAT(late.error().message, Catch::Contains("ended at"));
}

TEST_CASE(
    "opening a maintenance window refuses an end in the past, one beyond 24 h and an empty reason",
    "[integration][maintenance]") {
  testing::ManualClock clock;
  WindowsDb db(clock);
  maintenance::MaintenanceWindows windows(*db.maintenance, clock, {}, quickRetry());
  const auto now = clock.wallNow();
  for (const auto& [reason, until] :
       {std::pair<std::string, std::int64_t>{"upgrade", now},
        {"upgrade", now - kSecond},
        {"upgrade", now + maintenance::kMaxWindowUs + 1},
        {"", now + kHour},
        {std::string(maintenance::kMaxReasonChars + 1, 'x'), now + kHour}}) {
    INFO(reason.size() << " " << until - now);
    const auto refused = windows.open(db.lab, reason, until, "operator");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == maintenance::errc::invalid_window);
  }
  CHECK(windows.open(db.lab, "upgrade", now + maintenance::kMaxWindowUs, "operator"));
  auto all = windows.windows(db.lab, 0, now + 1, 100);
  REQUIRE(all);
  CHECK(all->size() == 1);
}

TEST_CASE(
    "a silence Alertmanager refuses is retried on the backoff with its error kept, and an early "
    "close "
    "expires the one made",
    "[integration][maintenance]") {
  testing::ManualClock clock;
  WindowsDb db(clock);
  auto scripted = std::make_unique<ScriptedSilences>();
  auto& am = *scripted;
  std::vector<std::unique_ptr<maintenance::AlertSilences>> silences;
  silences.push_back(std::move(scripted));
  maintenance::MaintenanceWindows windows(*db.maintenance, clock, std::move(silences),
                                          quickRetry());

  am.failure = "HTTP 503: alertmanager starting";
  auto id = windows.open(db.lab, "rolling restart", clock.wallNow() + kHour, "drill 7");
  REQUIRE(id);  // the window does not depend on Alertmanager
  CHECK(windows.reconcileSilences() == 1);
  auto w = *windows.window(*id);
  REQUIRE(w);
  REQUIRE(w->silences.size() == 1);
  CHECK(w->silences[0].receiver == "pager");
  CHECK(w->silences[0].state == "creating");
  CHECK(w->silences[0].attempts == 1);
  CHECK_THAT(w->silences[0].last_error, Catch::Contains("alertmanager starting"));
  // Not due again before the backoff's delay (at least half of initial_s).
  CHECK(windows.reconcileSilences() == 0);
  clock.advance(2 * kSecond);
  am.failure.clear();
  CHECK(windows.reconcileSilences() == 1);
  w = *windows.window(*id);
  CHECK(w->silences[0].state == "active");
  CHECK(w->silences[0].silence_id == "5ilence-2");
  CHECK(w->silences[0].last_error.empty());
  REQUIRE(am.created.size() == 2);
  CHECK(am.created[1].cluster == "lab");
  CHECK(am.created[1].window_id == *id);
  CHECK(am.created[1].reason == "rolling restart");
  CHECK(am.created[1].ends_us == w->ends_us);

  REQUIRE(windows.close(*id, "drill 7"));
  CHECK((*windows.window(*id))->silences[0].state == "expiring");
  CHECK(windows.reconcileSilences() == 1);
  CHECK((*windows.window(*id))->silences[0].state == "ended");
  REQUIRE(am.expired.size() == 1);
  CHECK(am.expired[0] == "5ilence-2");

  // Given up after max_attempts: failed, with the error; the window itself is unaffected.
  am.failure = "connect to 127.0.0.1:9093: Connection refused";
  auto second = windows.open(db.lab, "second", clock.wallNow() + kHour, "drill 8");
  REQUIRE(second);
  for (int i = 0; i < 3; ++i) {
    CHECK(windows.reconcileSilences() == 1);
    clock.advance(10 * kSecond);
  }
  const auto failed = *windows.window(*second);
  CHECK(failed->silences[0].state == "failed");
  CHECK(failed->silences[0].attempts == 3);
  CHECK_THAT(failed->silences[0].last_error, Catch::Contains("Connection refused"));
  CHECK(*windows.active(db.lab, clock.wallNow()));
  CHECK(windows.reconcileSilences() == 0);
}

TEST_CASE(
    "a maintenance window silences the cluster's kfaild alerts in a real Alertmanager and an early "
    "close "
    "expires the silence",
    "[integration][maintenance][alertmanager]") {
  testing::Alertmanager am;
  common::SystemClock clock;
  WindowsDb db(clock);
  config::ReceiverConfig r;
  r.name = "oncall";
  r.type = "alertmanager";
  r.url = am.url() + "/api/v2/alerts";  // the form a receiver may be configured with
  r.timeout_ms = 5'000;
  std::vector<std::unique_ptr<maintenance::AlertSilences>> silences;
  silences.push_back(std::make_unique<maintenance::AlertmanagerSilences>(r));
  maintenance::MaintenanceWindows windows(*db.maintenance, clock, std::move(silences),
                                          quickRetry());

  auto id = windows.open(db.lab, "broker upgrade", clock.wallNow() + kHour, "operator");
  REQUIRE(id);
  CHECK(windows.reconcileSilences() == 1);
  const auto opened = *windows.window(*id);
  REQUIRE(opened);
  REQUIRE(opened->silences.size() == 1);
  INFO(opened->silences[0].last_error);
  REQUIRE(opened->silences[0].state == "active");
  const auto silence_id = opened->silences[0].silence_id;
  const auto silence = am.silence(silence_id);
  REQUIRE(silence);
  CHECK((*silence)["status"]["state"] == "active");
  CHECK((*silence)["createdBy"] == "kfaild");
  CHECK_THAT((*silence)["comment"].get<std::string>(),
             Catch::Contains("window " + std::to_string(*id) + " on lab: broker upgrade"));
  const auto ends = common::parseRfc3339((*silence)["endsAt"].get<std::string>());
  REQUIRE(ends);
  CHECK(std::abs(*ends - opened->ends_us) < 1'000);  // Alertmanager keeps milliseconds

  // Alerts kfaild sends for the cluster are suppressed by it; another cluster's are not.
  config::NotificationsConfig nc;
  nc.receivers.push_back(r);
  auto queue = storage::NotificationQueue::open(db.path);
  REQUIRE(queue);
  notify::Notifier notifier(nc, "http://kfaild", common::Redactor(), **queue, clock);
  for (const auto* cluster : {"lab", "prod"}) {
    notify::NotificationEvent incident;
    incident.kind = notify::kIncident;
    incident.cluster = cluster;
    incident.at_us = clock.wallNow() - 10 * kSecond;
    incident.end_us = clock.wallNow();
    incident.incident_id = std::string("orders:0:ack:") + cluster;
    REQUIRE(notifier.notify(incident));
  }
  CHECK(notifier.deliverDue() == 2);
  std::map<std::string, json> state_of;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (state_of.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    for (const auto& a : am.alerts())
      state_of[a["labels"]["cluster"].get<std::string>()] = a["status"];
    if (state_of.size() < 2) std::this_thread::sleep_for(200ms);
  }
  REQUIRE(state_of.size() == 2);
  CHECK(state_of["lab"]["state"] == "suppressed");
  CHECK(state_of["lab"]["silencedBy"] == json::array({silence_id}));
  CHECK(state_of["prod"]["state"] == "active");

  REQUIRE(windows.close(*id, "operator"));
  CHECK(windows.reconcileSilences() == 1);
  const auto closed = *windows.window(*id);
  CHECK(closed->silences[0].state == "ended");
  CHECK(closed->silences[0].last_error.empty());
  const auto after = am.silence(silence_id);
  REQUIRE(after);
  CHECK((*after)["status"]["state"] == "expired");
  // Expiring one Alertmanager already expired is not an error (it answers as for any other).
  maintenance::AlertmanagerSilences again(r);
  CHECK(again.expire(silence_id));
  CHECK_FALSE(again.expire("../alerts"));
}

}  // namespace maintenance_windows_test
