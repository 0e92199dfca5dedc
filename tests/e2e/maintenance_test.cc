// Planned maintenance on the lab: a window opened over the API silences the cluster's kfaild
// alerts in a real Alertmanager (0.25) and closing it expires the silence; broker 1 frozen
// (SIGSTOP, as a GC pause or a node being worked on) inside the window stalls the probe, and the
// stall is recorded as planned with no incident and no notification; the same freeze after the
// window is an incident, told to the webhook and to Alertmanager, where it is not silenced.

#include <csignal>

#include "api/http_message.h"
#include "server/common/clock.h"
#include "server/common/time_format.h"
#include "tests/e2e/e2e_support.h"
#include "tests/support/alertmanager.h"
#include "tests/support/eventually.h"
#include "tests/support/http_receiver.h"
#include "tests/support/lab.h"
#include "tests/support/paths.h"

namespace maintenance_test {

using namespace kfaild;
using namespace kfaild::e2e;
using nlohmann::json;
using testing::eventually;

namespace {

// Broker 1 frozen for `how_long`, then resumed: shorter than the session timeout (9 s), so it is
// never fenced and every partition's stall is the freeze.
void freezeBroker1(std::chrono::milliseconds how_long) {
  const auto node = testing::labNode(1);
  REQUIRE(node);
  const auto pid = std::stoi(readAll(node->pid_file));
  REQUIRE(::kill(pid, SIGSTOP) == 0);
  std::this_thread::sleep_for(how_long);
  REQUIRE(::kill(pid, SIGCONT) == 0);
}

// Ack gaps of the probe's topic at least 3 s long that ended after `after_us`.
std::vector<json> longGaps(Kfaild& kfaild, const std::string& topic, std::int64_t after_us) {
  const auto gaps = kfaild.get("/api/v1/clusters/lab/gaps?kind=ack&min_ms=3000&topic=" + topic +
                               "&from=" + api::percentEncode(common::formatRfc3339(after_us)));
  return {gaps["items"].begin(), gaps["items"].end()};
}

}  // namespace

TEST_CASE(
    "a maintenance window silences the lab in Alertmanager, and a stall inside it raises no "
    "incident "
    "while one after it raises both",
    "[e2e][maintenance][notify]") {
  testing::Alertmanager alertmanager;
  testing::HttpReceiver webhook;
  webhook.start();
  LabOptions options;
  options.inventory = false;  // no drill here: the freeze is done by the test
  options.extra_yaml =
      "notifications:\n"
      "  receivers:\n"
      "    - {name: oncall, type: alertmanager, url: \"" +
      alertmanager.url() +
      "\", events: [incident]}\n"
      "    - {name: hook, type: webhook, url: \"" +
      webhook.url() +
      "\", events: [incident]}\n"
      "  retry: {initial_s: 1, max_s: 5}\n"
      "  incidents: {min_stall_s: 3, scan_interval_s: 1, lookback_h: 1}\n";
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);
  INFO("kfaild log:\n" << tail(readAll(kfaild.log)));

  // Open: 201, active, and the silence made in Alertmanager for cluster=lab.
  auto opened = kfaild.post("/api/v1/clusters/lab/maintenance",
                            R"({"reason":"broker 1 kernel update","duration_s":900})");
  INFO(opened.body);
  REQUIRE(opened.status == 201);
  const auto id = opened.json()["id"].get<std::int64_t>();
  const auto window_path = "/api/v1/clusters/lab/maintenance/" + std::to_string(id);
  json window;
  REQUIRE(eventually(
      [&] {
        window = kfaild.get(window_path);
        return window["silences"].size() == 1 && window["silences"][0]["state"] == "active";
      },
      30s));
  const auto silence_id = window["silences"][0]["silence_id"].get<std::string>();
  auto silence = alertmanager.silence(silence_id);
  REQUIRE(silence);
  CHECK((*silence)["status"]["state"] == "active");
  CHECK((*silence)["createdBy"] == "kfaild");
  bool cluster_matcher = false;
  for (const auto& m : (*silence)["matchers"]) {
    cluster_matcher =
        cluster_matcher || (m["name"] == "cluster" && m["value"] == "lab" && m["isRegex"] == false);
  }
  CHECK(cluster_matcher);
  const auto metrics = api::testing::httpGet(kfaild.port, "/metrics").body;
  CHECK(metrics.find("kfaild_maintenance_active{cluster=\"lab\"} 1\n") != std::string::npos);

  // A freeze inside the window: planned, no incident, nothing told.
  const auto before_first = common::SystemClock().wallNow();
  freezeBroker1(8s);
  REQUIRE(eventually([&] { return !longGaps(kfaild, lab.topic, before_first).empty(); }, 60s));
  std::this_thread::sleep_for(5s);  // several incident scans
  for (const auto& g : longGaps(kfaild, lab.topic, before_first)) {
    INFO(g.dump());
    CHECK(g["planned"] == true);
    CHECK(g["maintenance_id"] == id);
  }
  const auto from = api::percentEncode(common::formatRfc3339(before_first - 60'000'000));
  CHECK(kfaild.get("/api/v1/clusters/lab/incidents?min_ms=3000&from=" + from)["items"].empty());
  CHECK(webhook.requests().empty());

  // Close early: the silence is expired in Alertmanager.
  auto closed = kfaild.post(window_path + "/close", "");
  INFO(closed.body);
  REQUIRE(closed.status == 200);
  CHECK(closed.json()["active"] == false);
  const auto closed_us = closed.json()["closed_us"].get<std::int64_t>();
  REQUIRE(
      eventually([&] { return kfaild.get(window_path)["silences"][0]["state"] == "ended"; }, 30s));
  silence = alertmanager.silence(silence_id);
  REQUIRE(silence);
  CHECK((*silence)["status"]["state"] == "expired");
  CHECK(api::testing::httpGet(kfaild.port, "/metrics")
            .body.find("kfaild_maintenance_active{cluster=\"lab\"} 0\n") != std::string::npos);
  CHECK(webhook.requests().empty());  // the planned stall is not told after the window either

  // The same freeze after the window: an incident, told to the webhook and to Alertmanager.
  kfaild.waitSteady(lab.topic);
  const auto before_second = common::SystemClock().wallNow();
  freezeBroker1(8s);
  REQUIRE(webhook.waitForRequests(1, 60s));
  // The first incident told may be another stream's (the commit probe's coordinator can be broker
  // 1): the probe topic's ack gap is stored once acks resume, which can come after it.
  std::vector<json> unplanned;
  CHECK(eventually(
      [&] {
        unplanned.clear();
        for (const auto& g : longGaps(kfaild, lab.topic, before_second)) {
          if (g["planned"] == false) unplanned.push_back(g);
        }
        return !unplanned.empty();
      },
      30s));
  const auto incidents =
      kfaild.get("/api/v1/clusters/lab/incidents?min_ms=3000&from=" + from)["items"];
  REQUIRE_FALSE(incidents.empty());
  for (const auto& incident : incidents)
    CHECK(incident["start_us"].get<std::int64_t>() > closed_us);
  for (const auto& request : webhook.requests()) {
    const auto payload = json::parse(request.body);
    CHECK(payload["event"] == "incident");
    CHECK(payload["incident"]["start_us"].get<std::int64_t>() > closed_us);
  }
  const auto alert = alertmanager.waitForAlert("KfaildIncident", 60s);
  REQUIRE(alert);
  CHECK((*alert)["labels"]["cluster"] == "lab");
  CHECK((*alert)["status"]["state"] == "active");  // not silenced: the window is over
}

}  // namespace maintenance_test
