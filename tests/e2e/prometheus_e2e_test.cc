// A real Prometheus scraping a real kfaild on the lab through a kill drill: every PromQL
// expression of the Grafana dashboard and of the rules file is evaluated through Prometheus' HTTP
// API and must succeed; those that a kill drill must give data to must return some, and the last
// drill's figures must be the drill's own.

#include <set>

#include "tests/e2e/e2e_support.h"
#include "tests/support/http_receiver.h"
#include "tests/support/paths.h"
#include "tests/support/prometheus.h"

namespace prometheus_e2e_test {

using namespace kfaild;
using namespace kfaild::e2e;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kRules = std::string(KFAILD_SOURCE_DIR) + "/deploy/prometheus/kfaild-rules.yml";
const std::string kDashboard = std::string(KFAILD_SOURCE_DIR) + "/deploy/grafana/kfaild.json";

// Expressions that may rightly return nothing right after one kill drill, and why. Everything
// else must return data.
const std::map<std::string, std::string> kAllowedEmpty = {
    // Alerts that must not fire on a healthy lab right after a drill.
    {"alert KfaildProbeStalled", "the probe acks again once the drill is over"},
    {"alert KfaildProbeNoAck", "no partition goes a minute without an ack in a kill drill"},
    {"alert KfaildClusterUnreachable", "the lab answers"},
    {"alert KfaildLastDrillFailed", "fires only on a verdict of fail"},
    {"alert KfaildLastDrillRegressed", "one drill has no earlier drills to regress from"},
    {"alert KfaildLastDrillInconclusive", "fires only on an inconclusive verdict"},
    {"alert KfaildNoRecentDrill", "a drill just finished"},
    {"alert KfaildProbeClientReplaced", "the probe replaces no client in a kill drill"},
    {"alert KfaildDown", "kfaild is up"},
    {"alert KfaildAbsent", "the target exists"},
    // The test's webhook receiver takes every delivery: none has failed.
    {"alert KfaildNotificationsFailing", "every delivery to the test's receiver succeeds"},
    {"record receiver:kfaild_notifications_failed:increase15m",
     "every delivery to the test's receiver succeeds"},
};

double scalarOf(const json& answer) {
  const auto& result = answer["data"]["result"];
  REQUIRE(result.size() == 1);
  return std::stod(result[0]["value"][1].get<std::string>());
}

std::string verdictOf(const json& drill) {
  const auto& verdict = drill.contains("verdict") ? drill["verdict"] : json();
  if (verdict.is_string()) return verdict.get<std::string>();
  if (verdict.is_object() && verdict.contains("verdict"))
    return verdict["verdict"].get<std::string>();
  return "none";
}

}  // namespace

TEST_CASE(
    "a real Prometheus scraping kfaild through a kill drill evaluates every expression of the "
    "dashboard and the rules without error, with data where a drill must give some",
    "[e2e][prometheus]") {
  // A receiver, so that the notifier's families have data: the drill's notification is delivered.
  testing::HttpReceiver webhook;
  webhook.start();
  LabOptions options;
  options.extra_yaml = "notifications:\n  receivers:\n    - {name: hook, type: webhook, url: \"" +
                       webhook.url() + "\"}\n";
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  testing::PrometheusServer prometheus(
      {.targets = {"127.0.0.1:" + std::to_string(kfaild.port)}, .rule_files = {kRules}},
      lab.dir / "prometheus");
  const auto target = "http://127.0.0.1:" + std::to_string(kfaild.port) + "/metrics";
  const auto up_deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < up_deadline &&
         prometheus.targetHealth()[target] != "up") {
    std::this_thread::sleep_for(250ms);
  }
  INFO("prometheus log:\n" << tail(prometheus.logText()));
  REQUIRE(prometheus.targetHealth() == std::map<std::string, std::string>{{target, "up"}});

  const auto id = startDrill(kfaild, R"({"fault":"kill","target":{"broker":1}})");
  const auto drill = kfaild.waitForState(id, finished, 600s);
  INFO("drill: " << drill.dump().substr(0, 4000));
  REQUIRE(drill["state"] == "done");
  // A few scrapes after the drill's row was written and its notification delivered.
  REQUIRE(webhook.waitForRequests(1, 30s));
  std::this_thread::sleep_for(4s);
  REQUIRE(prometheus.targetHealth()[target] == "up");

  // Prometheus saw the stall live: partition 0, led by the killed broker, went seconds without
  // an ack, and the last drill's leader stall is the one the drill's analysis measured.
  const auto partition0 = "cluster=\"lab\",topic=\"" + lab.topic + "\",partition=\"0\"";
  CHECK(scalarOf(prometheus.query("max_over_time(kfaild_probe_current_ack_gap_seconds{" +
                                  partition0 + "}[15m])")) > 5.0);
  const auto& analysis = drill["runs"][0]["analysis"];
  const auto& p0 = partitionOf(analysis, lab.topic, 0);
  REQUIRE(p0["role"] == "leader");
  CHECK(scalarOf(prometheus.query("kfaild_last_drill_ack_stall_seconds{" + partition0 +
                                  ",fault=\"kill\",role=\"leader\"}")) ==
        Approx(static_cast<double>(ackStall(p0)) / 1e6));
  CHECK(scalarOf(prometheus.query("kfaild_last_drill_id{cluster=\"lab\",fault=\"kill\"}")) ==
        static_cast<double>(id));
  CHECK(scalarOf(
            prometheus.query("kfaild_last_drill_verdict{cluster=\"lab\",fault=\"kill\",verdict=\"" +
                             verdictOf(drill) + "\"}")) == 1.0);
  CHECK(scalarOf(prometheus.query(
            "sum(kfaild_last_drill_verdict{cluster=\"lab\",fault=\"kill\"})")) == 1.0);
  CHECK(
      scalarOf(prometheus.query(
          "kfaild_last_drill_phase_seconds{cluster=\"lab\",fault=\"kill\",phase=\"detection\"}")) ==
      Approx(static_cast<double>(p0["phases"]["detection_us"].get<std::int64_t>()) / 1e6));
  const auto build = prometheus.query("kfaild_build_info");
  REQUIRE(build["data"]["result"].size() == 1);
  CHECK_FALSE(build["data"]["result"][0]["metric"]["version"].get<std::string>().empty());
  CHECK_FALSE(build["data"]["result"][0]["metric"]["librdkafka"].get<std::string>().empty());

  std::ifstream dashboard_file(kDashboard);
  const auto dashboard = json::parse(dashboard_file);
  auto expressions = testing::dashboardExpressions(dashboard);
  const auto rules = testing::ruleExpressions(kRules);
  expressions.insert(expressions.end(), rules.begin(), rules.end());
  REQUIRE(expressions.size() >= 40);
  std::set<std::string> empty;
  for (const auto& e : expressions) {
    const auto promql = testing::withGrafanaVariables(e.expr, {{"cluster", "lab"}});
    const auto answer = prometheus.query(promql);
    INFO(e.where << ": " << promql << "\n-> " << answer.dump().substr(0, 1000));
    CHECK(answer["status"] == "success");
    CHECK_FALSE(answer.contains("error"));
    CHECK(promql.find('$') == std::string::npos);
    const bool has_data = answer["data"]["result"].is_array() && !answer["data"]["result"].empty();
    if (!has_data) empty.insert(e.where);
    if (!has_data && kAllowedEmpty.count(e.where) == 0) FAIL_CHECK("no data from " << e.where);
  }
  std::string empty_list;
  for (const auto& where : empty) empty_list += "\n  " + where;
  INFO("without data (all allowed):" << empty_list);
  CHECK(empty.size() <= kAllowedEmpty.size());
  // Every allowed exception names an expression that exists.
  for (const auto& [where, why] : kAllowedEmpty) {
    INFO(where);
    CHECK(std::any_of(expressions.begin(), expressions.end(),
                      [&](const auto& e) { return e.where == where; }));
  }

  // The rules as Prometheus itself evaluates them every second: none has an evaluation error.
  const auto loaded = api::testing::httpGet(prometheus.port(), "/api/v1/rules").json();
  std::size_t evaluated = 0;
  for (const auto& group : loaded["data"]["groups"]) {
    for (const auto& rule : group["rules"]) {
      INFO(rule["name"] << ": " << rule.value("lastError", ""));
      CHECK(rule["health"] == "ok");
      ++evaluated;
    }
  }
  CHECK(evaluated == rules.size());
}

}  // namespace prometheus_e2e_test
