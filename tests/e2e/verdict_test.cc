// A verdict on the lab: a kill drill run by kfailctl with an objective no kill can meet (an ack
// stall of at most 1 s, against the ~9 s detection) ends `fail`, names the killed leader's
// partition, and kfailctl exits 5 — the CI-pipeline use. The same drill is told to a real
// Alertmanager (0.25), a generic webhook and a Slack-style receiver, as kfaild's configuration
// says.

#include "tests/e2e/e2e_support.h"
#include "tests/support/alertmanager.h"
#include "tests/support/http_receiver.h"
#include "tests/support/paths.h"

namespace e2e_verdict_test {

using namespace kfaild;
using namespace kfaild::e2e;
using nlohmann::json;

TEST_CASE(
    "a kill drill expected to stall at most 1 s fails on the killed leader's partition and "
    "kfailctl "
    "exits 5",
    "[e2e][api][verdict][notify]") {
  testing::Alertmanager alertmanager;
  testing::HttpReceiver webhook;
  testing::HttpReceiver slack;
  webhook.start();
  slack.start();
  LabOptions options;
  options.extra_yaml =
      "notifications:\n"
      "  receivers:\n"
      "    - {name: oncall, type: alertmanager, url: \"" +
      alertmanager.url() +
      "\"}\n"
      "    - {name: ci-hook, type: webhook, url: \"" +
      webhook.url() +
      "\"}\n"
      "    - {name: chat, type: slack, url: \"" +
      slack.url("/services/T0/B0/x") +
      "\"}\n"
      "  retry: {initial_s: 1, max_s: 5}\n";
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  auto [code, out] = kfailctl(kfaild, lab,
                              "drill lab --broker 1 --fault kill --baseline 2 --json --timeout 600 "
                              "--expect max_ack_stall_s=1");
  INFO("kfailctl: " << out.substr(0, 6000) << "\nkfaild log:\n" << tail(readAll(kfaild.log)));
  const json drill = json::parse(out);
  REQUIRE(drill["state"] == "done");
  CHECK(code == 5);
  CHECK(drill["verdict"] == "fail");
  CHECK(drill["expect"] == json{{"max_ack_stall_s", 1.0}});
  const auto& detail = drill["verdict_detail"];
  CHECK(detail["verdict"] == "fail");
  CHECK(detail["objectives"]["max_ack_stall_s"] == 1.0);

  // The partition broker 1 led at the fault (the analysis' role), and the check on it.
  const auto& analysis = drill["runs"][0]["analysis"];
  std::optional<int> led;
  for (const auto& p : analysis["partitions"]) {
    if (p["topic"] == lab.topic && p["role"] == "leader") led = p["partition"].get<int>();
  }
  REQUIRE(led);
  const json* leader_check = nullptr;
  for (const auto& c : detail["checks"]) {
    if (c["objective"] == "max_ack_stall_s" && c["topic"] == lab.topic && c["partition"] == *led)
      leader_check = &c;
  }
  REQUIRE(leader_check != nullptr);
  CHECK((*leader_check)["status"] == "fail");
  CHECK((*leader_check)["role"] == "leader");
  CHECK((*leader_check)["threshold"] == 1.0);
  CHECK((*leader_check)["run"] == 1);
  CHECK((*leader_check)["measured"].get<double>() * 1e6 ==
        Approx(static_cast<double>(ackStall(partitionOf(analysis, lab.topic, *led)))).margin(1));
  CHECK((*leader_check)["measured"].get<double>() >
        5.0);  // the session timeout's detection, not noise
  // The other objectives are the defaults', which a kill on the lab meets: only ack stalls fail.
  for (const auto& c : detail["checks"]) {
    INFO(c.dump());
    if (c["status"] == "fail") CHECK(c["objective"] == "max_ack_stall_s");
  }

  // The row's columns, the list filter and the human summary agree.
  const auto id = drill["id"].get<std::int64_t>();
  CHECK(sqlValue(lab.db, "SELECT verdict FROM drills WHERE id = " + std::to_string(id)) == "fail");
  bool listed = false;
  const auto failed = kfaild.get("/api/v1/drills?verdict=fail&cluster=lab");
  for (const auto& d : failed["items"]) listed = listed || d["id"] == id;
  CHECK(listed);
  std::tie(code, out) = kfailctl(kfaild, lab, "show " + std::to_string(id));
  CHECK(code == 5);
  CHECK(out.rfind("verdict: fail", 0) == 0);
  CHECK(out.find("max_ack_stall_s") != std::string::npos);
  CHECK(out.find(lab.topic + "[" + std::to_string(*led) + "] leader") != std::string::npos);

  // Alertmanager received the alert with the drill's labels (read back through its own API).
  const auto alert = alertmanager.waitForAlert("KfaildDrillFailed", 60s);
  INFO("alertmanager: " << alertmanager.alerts().dump() << "\nkfaild log:\n"
                        << tail(readAll(kfaild.log)));
  REQUIRE(alert);
  const auto& labels = (*alert)["labels"];
  CHECK(labels["cluster"] == "lab");
  CHECK(labels["fault"] == "kill");
  CHECK(labels["verdict"] == "fail");
  CHECK(labels["drill_id"] == std::to_string(id));
  CHECK(labels["severity"] == "critical");
  CHECK((*alert)["status"]["state"] == "active");
  CHECK((*alert)["annotations"]["failed_checks"].get<std::string>().find("max_ack_stall_s") !=
        std::string::npos);
  WARN("Alertmanager received: " << alert->dump());

  // The generic webhook and the Slack-style receiver got one payload each for this drill.
  REQUIRE(webhook.waitForRequests(1, 30s));
  REQUIRE(slack.waitForRequests(1, 30s));
  std::this_thread::sleep_for(3s);  // a duplicate would come within the retry delay
  const auto hooks = webhook.requests();
  REQUIRE(hooks.size() == 1);
  CHECK(hooks[0].content_type.find("application/json") == 0);
  const auto payload = json::parse(hooks[0].body);
  CHECK(payload["event"] == "drill_finished");
  CHECK(payload["cluster"] == "lab");
  CHECK(payload["drill"]["id"] == id);
  CHECK(payload["drill"]["verdict"] == "fail");
  CHECK(!payload["drill"]["failed_checks"].empty());
  const auto chats = slack.requests();
  REQUIRE(chats.size() == 1);
  const auto message = json::parse(chats[0].body);
  CHECK(message["text"].get<std::string>().find("fail") != std::string::npos);
  CHECK(message["blocks"].is_array());

  // kfaild lists the three deliveries.
  const auto listed_notifications = kfaild.get("/api/v1/notifications?state=delivered");
  std::size_t delivered = 0;
  for (const auto& n : listed_notifications["items"])
    delivered += n["event"] == "drill_finished" ? 1 : 0;
  CHECK(delivered == 3);
}

}  // namespace e2e_verdict_test
