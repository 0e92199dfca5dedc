#include "server/notify/events.h"

#include <catch2/catch.hpp>

#include "server/common/sensitive.h"

namespace events_test {

using namespace kfaild;
using nlohmann::json;

namespace {

// A drill row as h/verdict writes it: result.verdict with checks and regressions.
storage::DrillRecord failingDrill() {
  storage::DrillRecord d;
  d.id = 42;
  d.cluster = 1;
  d.fault = "kill";
  d.target = R"({"broker":1})";
  d.state = "done";
  d.created_us = 1'700'000'000'000'000;
  d.started_us = 1'700'000'001'000'000;
  d.finished_us = 1'700'000'060'000'000;
  d.result = json{{"runs", json::array()},
                  {"verdict",
                   {{"verdict", "fail"},
                    {"checks",
                     {{{"objective", "max_ack_stall"},
                       {"threshold", 1.0},
                       {"measured", 9.8},
                       {"unit", "s"},
                       {"status", "fail"},
                       {"run", 0},
                       {"topic", "orders"},
                       {"partition", 0},
                       {"role", "leader"},
                       {"reason", nullptr}},
                      {{"objective", "max_lost"},
                       {"threshold", 0},
                       {"measured", 0},
                       {"unit", "messages"},
                       {"status", "pass"},
                       {"run", 0},
                       {"topic", "orders"},
                       {"partition", 0},
                       {"role", "leader"},
                       {"reason", nullptr}}}},
                    {"regressions",
                     {{{"kind", "ack"},
                       {"role", "leader"},
                       {"topic", "orders"},
                       {"partition", 0},
                       {"run", 0},
                       {"stall_s", 9.8},
                       {"median_s", 3.1},
                       {"factor", 3.16},
                       {"previous", {41, 40, 39}}}}}}}}
                 .dump();
  return d;
}

config::ReceiverConfig receiverOf(const std::string& type) {
  config::ReceiverConfig r;
  r.name = type;
  r.type = type;
  r.url = "http://127.0.0.1:1/";
  return r;
}

}  // namespace

TEST_CASE(
    "a done drill with a failing verdict and a regression makes a drill_finished and a regression "
    "event",
    "[unit][notify]") {
  const auto events = notify::drillEvents("lab", failingDrill());
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == "drill_finished");
  CHECK(events[0].verdict == std::optional<std::string>("fail"));
  REQUIRE(events[0].failed_checks.size() == 1);  // the passing check is left out
  CHECK(events[0].failed_checks[0]["objective"] == "max_ack_stall");
  CHECK(events[0].dedupKey() == "drill_finished:drill:42");
  CHECK(events[1].kind == "regression");
  CHECK(events[1].dedupKey() == "regression:drill:42");
}

TEST_CASE(
    "a drill without a verdict is a drill_finished with verdict none, and a failed one is "
    "drill_failed",
    "[unit][notify]") {
  auto d = failingDrill();
  d.result = R"({"runs":[]})";
  auto events = notify::drillEvents("lab", d);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == "drill_finished");
  CHECK_FALSE(events[0].verdict);
  CHECK(notify::webhookPayload(events[0], {"http://k", 0})["drill"]["verdict"].is_null());

  d.state = "failed";
  d.reason = "preflight: broker 2 is not in the ISR of orders/1";
  events = notify::drillEvents("lab", d);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == "drill_failed");
  d.state = "observe";
  CHECK(notify::drillEvents("lab", d).empty());
}

TEST_CASE("the generic webhook payload carries the verdict, the failed checks and links",
          "[unit][notify]") {
  const auto e = notify::drillEvents("lab", failingDrill())[0];
  const auto p = notify::webhookPayload(e, {"https://kfaild.example", 0});
  CHECK(p["version"] == 1);
  CHECK(p["event"] == "drill_finished");
  CHECK(p["cluster"] == "lab");
  CHECK(p["drill"]["id"] == 42);
  CHECK(p["drill"]["fault"] == "kill");
  CHECK(p["drill"]["target"] == json{{"broker", 1}});
  CHECK(p["drill"]["verdict"] == "fail");
  CHECK(p["drill"]["failed_checks"].size() == 1);
  CHECK(p["drill"]["regressions"].size() == 1);
  CHECK(p["links"]["api"] == "https://kfaild.example/api/v1/drills/42");
  CHECK(p["links"]["dashboard"] == "https://kfaild.example/#/drills/42");
  CHECK(p["summary"] == "kfaild: drill 42 (kill of broker 1) on lab: verdict fail");
}

TEST_CASE("the Slack payload has text and blocks naming the failed check", "[unit][notify]") {
  const auto e = notify::drillEvents("lab", failingDrill())[0];
  const auto p = notify::slackPayload(e, {"https://kfaild.example", 0});
  REQUIRE(p["text"].is_string());
  CHECK(p["text"].get<std::string>().find("verdict fail") != std::string::npos);
  CHECK(p["text"].get<std::string>().find("max_ack_stall leader orders/0") != std::string::npos);
  REQUIRE(p["blocks"].is_array());
  CHECK(p["blocks"][0]["type"] == "section");
  CHECK(p["blocks"].back()["elements"][0]["text"] ==
        "<https://kfaild.example/#/drills/42|open in kfaild>");
}

TEST_CASE("the Alertmanager payload is one alert with routable labels and an end",
          "[unit][notify]") {
  const auto events = notify::drillEvents("lab", failingDrill());
  const std::int64_t now = 1'700'000'070'000'000;
  const auto p =
      notify::alertmanagerPayload(events[0], {"https://kfaild.example", now}, 3600LL * 1'000'000);
  REQUIRE(p.is_array());
  REQUIRE(p.size() == 1);
  const auto& a = p[0];
  CHECK(a["labels"]["alertname"] == "KfaildDrillFailed");
  CHECK(a["labels"]["cluster"] == "lab");
  CHECK(a["labels"]["fault"] == "kill");
  CHECK(a["labels"]["target"] == "broker 1");
  CHECK(a["labels"]["verdict"] == "fail");
  CHECK(a["labels"]["severity"] == "critical");
  CHECK(a["labels"]["drill_id"] == "42");
  CHECK(a["annotations"]["failed_checks"].get<std::string>().find("max_ack_stall") !=
        std::string::npos);
  CHECK(a["startsAt"] == "2023-11-14T22:14:20.000000Z");
  CHECK(a["endsAt"] == "2023-11-14T23:14:30.000000Z");  // delivery time + resolve_after
  CHECK(a["generatorURL"] == "https://kfaild.example/#/drills/42");
  CHECK(notify::alertmanagerPayload(events[1], {"", now}, 1)[0]["labels"]["alertname"] ==
        "KfaildDrillRegressed");
}

TEST_CASE("receivers take only their events and verdicts, and Alertmanager never a pass",
          "[unit][notify]") {
  auto e = notify::drillEvents("lab", failingDrill())[0];
  auto hook = receiverOf("webhook");
  CHECK(notify::wants(hook, e));
  hook.verdicts = {"inconclusive"};
  CHECK_FALSE(notify::wants(hook, e));
  hook.verdicts = {"fail"};
  hook.events = {"incident"};
  CHECK_FALSE(notify::wants(hook, e));

  auto am = receiverOf("alertmanager");
  CHECK(notify::wants(am, e));
  e.verdict = "pass";
  CHECK_FALSE(notify::wants(am, e));
  CHECK(notify::wants(receiverOf("slack"), e));
}

TEST_CASE("an incident's dedup key is its first gap, whatever merged into it later",
          "[unit][notify]") {
  analysis::Incident incident;
  incident.start_us = 100;
  incident.end_us = 9'000'100;
  storage::Gap g;
  g.topic = "orders";
  g.partition = 2;
  g.kind = storage::GapKind::kReceive;
  g.start_us = 100;
  g.end_us = 9'000'100;
  g.duration_us = 9'000'000;
  incident.gaps.push_back(g);
  auto e = notify::incidentEvent("lab", incident);
  CHECK(e.dedupKey() == "incident:lab:orders:2:receive:100");
  const auto p = notify::webhookPayload(e, {"http://k", 0});
  CHECK(p["incident"]["duration_us"] == 9'000'000);
  CHECK(p["incident"]["partitions"][0]["topic"] == "orders");
  CHECK(notify::alertmanagerPayload(e, {"http://k", 0}, 1)[0]["labels"]["alertname"] ==
        "KfaildIncident");
  incident.gaps.push_back(g);
  incident.gaps.back().partition = 0;
  CHECK(notify::incidentEvent("lab", incident).dedupKey() == e.dedupKey());
}

TEST_CASE(
    "a drill's operator-only reason is redacted in Slack, webhook and Alertmanager payloads unless "
    "the "
    "receiver says include_operator_details",
    "[unit][notify]") {
  auto d = failingDrill();
  d.state = "failed";
  d.reason =
      "kill of broker 1 failed: ssh_failed: " +
      common::sensitive("ssh -i /etc/kfaild/id_ed25519 kafka@kafka-1.internal sudo kill -9 4242") +
      ": " + common::sensitive("sudo: a password is required");
  // An unfinished drill's checks carry its reason too (analysis::unfinishedVerdict).
  d.result = json{{"verdict",
                   {{"verdict", "inconclusive"},
                    {"checks",
                     {{{"objective", "max_ack_stall"},
                       {"threshold", 1.0},
                       {"measured", nullptr},
                       {"unit", "s"},
                       {"status", "inconclusive"},
                       {"topic", "orders"},
                       {"partition", 0},
                       {"role", "leader"},
                       {"reason", d.reason}}}},
                    {"regressions", json::array()}}}}
                 .dump();
  const auto events = notify::drillEvents("lab", d);
  REQUIRE(events.size() == 1);
  REQUIRE(events[0].kind == "drill_failed");
  // The daemon's redactor: the API's, with the inventory's hosts.
  notify::PayloadContext context{"https://kfaild.example", 0};
  context.redactor = common::Redactor({"kafka-1.internal"});
  for (const auto* type : {"slack", "webhook", "alertmanager"}) {
    INFO(type);
    auto receiver = receiverOf(type);
    REQUIRE(notify::wants(receiver, events[0]));
    const auto shown = notify::payloadFor(receiver, events[0], context).dump();
    INFO(shown);
    CHECK_THAT(shown,
               Catch::Contains("kill of broker 1 failed: ssh_failed: [redacted]: [redacted]"));
    CHECK_THAT(shown, Catch::Contains("max_ack_stall"));  // the check itself stays
    for (const auto* secret :
         {"kafka@", "kafka-1.internal", "kill -9", "password is required", "/etc/kfaild"}) {
      CHECK_THAT(shown, !Catch::Contains(secret));
    }
    receiver.include_operator_details = true;
    const auto full = notify::payloadFor(receiver, events[0], context).dump();
    INFO(full);
    CHECK_THAT(full, Catch::Contains("kafka@kafka-1.internal sudo kill -9 4242"));
    CHECK_THAT(full, Catch::Contains("sudo: a password is required"));
  }
}

}  // namespace events_test
