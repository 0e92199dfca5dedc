#include "server/maintenance/alert_silences.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "server/common/clock.h"
#include "server/common/time_format.h"
#include "server/notify/events.h"
#include "server/notify/http_post.h"
#include "tests/support/alertmanager.h"
#include "tests/support/paths.h"
#include "tests/support/prometheus.h"

namespace alert_silences_test {

using namespace kfaild;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// Alertmanager's reading of a regex matcher: the whole label value must match.
bool silencedName(const std::string& alertname) {
  return std::regex_match(alertname, std::regex("(?:" + maintenance::silencedAlertsRegex() + ")"));
}

// The alertname of every kind of alert kfaild sends to Alertmanager (notify/events.h).
std::set<std::string> alertnamesKfaildSends() {
  std::set<std::string> out;
  const notify::PayloadContext context{"http://k", 0};
  notify::NotificationEvent e;
  e.cluster = "lab";
  for (const auto* kind : {notify::kDrillFailed, notify::kRegression, notify::kIncident}) {
    e.kind = kind;
    out.insert(
        notify::alertmanagerPayload(e, context, 0)[0]["labels"]["alertname"].get<std::string>());
  }
  e.kind = notify::kDrillFinished;
  for (const auto* verdict : {"fail", "inconclusive"}) {
    e.verdict = verdict;
    out.insert(
        notify::alertmanagerPayload(e, context, 0)[0]["labels"]["alertname"].get<std::string>());
  }
  return out;
}

}  // namespace

TEST_CASE(
    "a maintenance silence matches the alerts the shipped rules silence and every alert kfaild "
    "sends, "
    "never KfaildProbeNoAck or KfaildClusterUnreachable",
    "[unit][maintenance]") {
  const auto rules = testing::ruleExpressions(std::string(KFAILD_SOURCE_DIR) +
                                              "/deploy/prometheus/kfaild-rules.yml");
  std::set<std::string> alerts;
  for (const auto& rule : rules) {
    if (!rule.where.starts_with("alert ")) continue;
    const auto name = rule.where.substr(6);
    alerts.insert(name);
    // The silence and the rules agree: a rule that honours kfaild_maintenance_active is silenced,
    // the others (the outage alerts, those about kfaild itself) are not.
    INFO(name << ": " << rule.expr);
    CHECK(silencedName(name) == (rule.expr.find("kfaild_maintenance_active") != std::string::npos));
  }
  REQUIRE(alerts.count("KfaildProbeNoAck") == 1);
  REQUIRE(alerts.count("KfaildClusterUnreachable") == 1);
  CHECK_FALSE(silencedName("KfaildProbeNoAck"));
  CHECK_FALSE(silencedName("KfaildClusterUnreachable"));
  CHECK(silencedName("KfaildProbeStalled"));
  // Whole names only: a longer name that starts with a silenced one is not silenced.
  CHECK_FALSE(silencedName("KfaildProbeStalledLong"));

  const auto sent = alertnamesKfaildSends();
  CHECK(sent.size() == 5);
  for (const auto& name : sent) {
    INFO(name);
    CHECK(silencedName(name));
  }
}

TEST_CASE(
    "a maintenance window's silence in a real Alertmanager suppresses the cluster's stall alert "
    "but not "
    "KfaildProbeNoAck or KfaildClusterUnreachable",
    "[integration][maintenance][alertmanager]") {
  testing::Alertmanager am;
  common::SystemClock clock;
  config::ReceiverConfig r;
  r.name = "oncall";
  r.type = "alertmanager";
  r.url = am.url();
  r.timeout_ms = 5'000;
  maintenance::AlertmanagerSilences silences(r);
  const auto now = clock.wallNow();
  auto silence_id = silences.create(
      {"lab", 1, "rolling restart (drill 7) of 3 node(s)", now, now + 3'600'000'000});
  REQUIRE(silence_id);

  // The alerts of the shipped rules as Prometheus sends them, for the cluster in maintenance.
  json alerts = json::array();
  for (const auto* name : {"KfaildProbeStalled", "KfaildProbeNoAck", "KfaildClusterUnreachable"}) {
    alerts.push_back(
        {{"labels", {{"alertname", name}, {"cluster", "lab"}, {"severity", "critical"}}},
         {"startsAt", common::formatRfc3339(now)}});
  }
  auto url = notify::parseReceiverUrl(am.url() + "/api/v2/alerts");
  REQUIRE(url);
  auto posted = notify::postJson(*url, alerts.dump(), {}, {}, 5s);
  REQUIRE(posted);
  REQUIRE(posted->status == 200);

  std::map<std::string, json> state_of;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  const auto settled = [&] {
    if (state_of.size() < 3) return false;
    for (const auto& [name, status] : state_of) {
      if (status["state"] == "unprocessed") return false;
    }
    return true;
  };
  while (!settled() && std::chrono::steady_clock::now() < deadline) {
    state_of.clear();
    for (const auto& a : am.alerts())
      state_of[a["labels"]["alertname"].get<std::string>()] = a["status"];
    if (!settled()) std::this_thread::sleep_for(200ms);
  }
  REQUIRE(settled());
  CHECK(state_of["KfaildProbeStalled"]["state"] == "suppressed");
  CHECK(state_of["KfaildProbeStalled"]["silencedBy"] == json::array({*silence_id}));
  CHECK(state_of["KfaildProbeNoAck"]["state"] == "active");
  CHECK(state_of["KfaildClusterUnreachable"]["state"] == "active");
}

}  // namespace alert_silences_test
