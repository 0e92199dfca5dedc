#include "tests/support/alertmanager.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "server/notify/notifier.h"
#include "storage/notification_queue.h"
#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace alertmanager_test {

using namespace kfaild;
using namespace std::chrono_literals;
using nlohmann::json;

TEST_CASE("a failing drill reaches a real Alertmanager 0.25 as an alert with the drill's labels",
          "[integration][notify][alertmanager]") {
  testing::Alertmanager am;
  testing::TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  auto store = storage::SqliteStore::open(path);
  REQUIRE(store);
  auto queue = storage::NotificationQueue::open(path);
  REQUIRE(queue);

  config::NotificationsConfig config;
  config::ReceiverConfig r;
  r.name = "oncall";
  r.type = "alertmanager";
  r.url = am.url();
  config.receivers.push_back(r);
  common::SystemClock clock;
  notify::Notifier notifier(config, "https://kfaild.example", common::Redactor(), **queue, clock);

  storage::DrillRecord d;
  d.id = 31;
  d.cluster = 1;
  d.fault = "kill";
  d.target = R"({"broker":1})";
  d.state = "done";
  d.created_us = clock.wallNow() - 40'000'000;
  d.started_us = d.created_us;
  d.finished_us = clock.wallNow() - 1'000'000;
  d.result = json{{"verdict",
                   {{"verdict", "fail"},
                    {"checks",
                     {{{"objective", "max_ack_stall"},
                       {"threshold", 1.0},
                       {"measured", 9.6},
                       {"unit", "s"},
                       {"status", "fail"},
                       {"run", 0},
                       {"topic", "orders"},
                       {"partition", 0},
                       {"role", "leader"},
                       {"reason", nullptr}}}},
                    {"regressions", json::array()}}}}
                 .dump();
  notifier.drillFinished("lab", d);
  // A passing drill is nothing to page about: it is not sent at all.
  auto passing = d;
  passing.id = 32;
  passing.result = R"({"verdict":{"verdict":"pass","checks":[],"regressions":[]}})";
  notifier.drillFinished("lab", passing);
  CHECK(notifier.deliverDue() == 1);
  storage::NotificationQuery q;
  auto rows = (*queue)->notifications(q);
  REQUIRE(rows);
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].state == "delivered");
  INFO((*rows)[0].last_error);

  const auto alert = am.waitForAlert("KfaildDrillFailed", 15s);
  REQUIRE(alert);
  const auto& labels = (*alert)["labels"];
  CHECK(labels["cluster"] == "lab");
  CHECK(labels["fault"] == "kill");
  CHECK(labels["target"] == "broker 1");
  CHECK(labels["verdict"] == "fail");
  CHECK(labels["severity"] == "critical");
  CHECK(labels["drill_id"] == "31");
  CHECK((*alert)["annotations"]["failed_checks"].get<std::string>().find(
            "max_ack_stall leader orders/0") != std::string::npos);
  CHECK((*alert)["status"]["state"] == "active");
  CHECK((*alert)["generatorURL"] == "https://kfaild.example/#/drills/31");
  CHECK(am.alerts().size() == 1);
}

}  // namespace alertmanager_test
