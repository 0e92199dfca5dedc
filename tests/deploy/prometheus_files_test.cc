// deploy/prometheus and deploy/grafana checked by the tools that read them: promtool checks the
// rules and the example configuration and runs the rules' unit tests; each check also runs on a
// broken copy, to show that it can fail. The dashboard's PromQL is extracted here (the e2e in
// tests/e2e/prometheus_e2e_test.cc evaluates it on a real Prometheus), and every kfaild metric the
// dashboard and the rules use must be documented in docs/METRICS.md.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/paths.h"
#include "tests/support/prometheus.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace prometheus_files_test {

namespace fs = std::filesystem;
using kfaild::testing::quoted;
using kfaild::testing::readFile;
using kfaild::testing::replacedOnce;
using kfaild::testing::run;
using kfaild::testing::TempDir;

namespace {

const fs::path kSource = KFAILD_SOURCE_DIR;
const fs::path kRules = kSource / "deploy/prometheus/kfaild-rules.yml";
// The rules' unit tests: those of minutes, and those of days evaluated every 30 minutes.
const std::vector<fs::path> kRuleTests = {kSource / "deploy/prometheus/kfaild-rules.test.yml",
                                          kSource / "deploy/prometheus/kfaild-rules.week.test.yml"};

std::string ruleTestNames() {
  std::string names;
  for (const auto& file : kRuleTests) names += " " + quoted(file.filename());
  return names;
}
const fs::path kPrometheusConfig = kSource / "deploy/prometheus/prometheus.yml";
const fs::path kDashboard = kSource / "deploy/grafana/kfaild.json";

// kfaild metric names in `text`, histogram series by their family's name; recording rules' names
// (level:metric:operation) are not metrics kfaild exports, so a name after ':' is skipped.
std::set<std::string> kfaildMetricNames(const std::string& text) {
  std::set<std::string> out;
  const std::regex name(R"((^|[^:a-z_])(kfaild_[a-z_]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator();
       ++it) {
    // Histogram series: kfaild's histograms are all in seconds.
    const auto metric =
        std::regex_replace((*it)[2].str(), std::regex("_seconds_(bucket|sum|count)$"), "_seconds");
    out.insert(metric);
  }
  return out;
}

}  // namespace

TEST_CASE("promtool accepts kfaild's rules and refuses a copy with a broken expression",
          "[integration][deploy]") {
  const auto checked = run("promtool check rules " + quoted(kRules));
  INFO(checked.output);
  CHECK(checked.status == 0);
  CHECK_THAT(checked.output, Catch::Contains("SUCCESS"));

  TempDir dir;
  std::ofstream(dir / "kfaild-rules.yml")
      << replacedOnce(readFile(kRules), "expr: kfaild_last_drill_regressed == 1",
                      "expr: kfaild_last_drill_regressed ==");
  const auto broken = run("promtool check rules " + quoted(dir / "kfaild-rules.yml"));
  INFO(broken.output);
  CHECK(broken.status != 0);
}

TEST_CASE(
    "every alert rule has promtool unit tests that see it fire and stay quiet, and they fail "
    "when the rule changes",
    "[integration][deploy]") {
  const auto tested = run("cd " + quoted(kRuleTests.front().parent_path()) +
                          " && promtool test rules" + ruleTestNames());
  INFO(tested.output);
  CHECK(tested.status == 0);

  std::set<std::string> alerts;
  for (const auto& found : kfaild::testing::ruleExpressions(kRules.string())) {
    if (found.where.starts_with("alert ")) alerts.insert(found.where.substr(6));
  }
  REQUIRE(alerts.size() >= 9);
  std::set<std::string> firing;
  std::set<std::string> quiet;
  for (const auto& file : kRuleTests) {
    for (const auto& test : YAML::LoadFile(file.string())["tests"]) {
      for (const auto& check : test["alert_rule_test"]) {
        const auto name = check["alertname"].as<std::string>();
        (check["exp_alerts"].size() > 0 ? firing : quiet).insert(name);
      }
    }
  }
  CHECK(firing == alerts);
  CHECK(quiet == alerts);

  // Each change breaks the test that sees its alert fire: the probe-stall threshold raised from 5 s
  // to 15 s (a 12 s stall), a drill's week raised to eight days (a test of the week file), and an
  // outage silenced by a maintenance window.
  const std::string in_maintenance = " unless on (cluster) (kfaild_maintenance_active == 1)\n";
  const std::vector<std::tuple<std::string, std::string, std::string>> changes = {
      {"max by (cluster, topic, partition) (kfaild_probe_current_ack_gap_seconds) > 5",
       "max by (cluster, topic, partition) (kfaild_probe_current_ack_gap_seconds) > 15",
       "KfaildProbeStalled"},
      {"expr: kfaild_probe_current_ack_gap_seconds > 60\n",
       "expr: kfaild_probe_current_ack_gap_seconds > 60" + in_maintenance, "KfaildProbeNoAck"},
      {"expr: kfaild_cluster_reachable == 0\n",
       "expr: kfaild_cluster_reachable == 0" + in_maintenance, "KfaildClusterUnreachable"},
      {"time() - kfaild_drill_last_done_timestamp_seconds > 7 * 86400",
       "time() - kfaild_drill_last_done_timestamp_seconds > 8 * 86400", "KfaildNoRecentDrill"}};
  for (const auto& [from, to, alert] : changes) {
    TempDir dir;
    std::ofstream(dir / "kfaild-rules.yml") << replacedOnce(readFile(kRules), from, to);
    for (const auto& file : kRuleTests) fs::copy_file(file, dir / file.filename());
    const auto broken =
        run("cd " + quoted(dir.path()) + " && promtool test rules" + ruleTestNames());
    INFO(broken.output);
    CHECK(broken.status != 0);
    CHECK_THAT(broken.output, Catch::Contains(alert));
  }
}

TEST_CASE("promtool accepts the example prometheus.yml with its rules and refuses a broken copy",
          "[integration][deploy]") {
  const auto checked = run("promtool check config " + quoted(kPrometheusConfig));
  INFO(checked.output);
  CHECK(checked.status == 0);
  CHECK_THAT(checked.output, Catch::Contains("1 rule files found"));

  TempDir dir;
  fs::copy_file(kRules, dir / "kfaild-rules.yml");
  std::ofstream(dir / "prometheus.yml") << replacedOnce(
      readFile(kPrometheusConfig), "scrape_interval: 5s", "scrape_interval: 5 seconds");
  const auto broken = run("promtool check config " + quoted(dir / "prometheus.yml"));
  INFO(broken.output);
  CHECK(broken.status != 0);
}

TEST_CASE(
    "the Grafana dashboard parses, chooses its data source by variable, and every panel "
    "target has PromQL over documented kfaild metrics",
    "[unit][deploy]") {
  const auto dashboard = nlohmann::json::parse(readFile(kDashboard));
  CHECK(dashboard["schemaVersion"].get<int>() >= 36);
  CHECK(dashboard["uid"] == "kfaild");
  bool datasource_variable = false;
  std::set<std::string> variables;
  for (const auto& v : dashboard["templating"]["list"]) {
    variables.insert(v["name"].get<std::string>());
    if (v["type"] == "datasource" && v["query"] == "prometheus") datasource_variable = true;
  }
  CHECK(datasource_variable);
  CHECK(variables.count("cluster") == 1);

  std::size_t targets = 0;
  for (const auto& p : dashboard["panels"]) {
    if (p["type"] == "row") continue;
    INFO("panel " << p["title"]);
    CHECK(p["datasource"]["uid"] == "${datasource}");
    CHECK_FALSE(p["targets"].empty());
    targets += p["targets"].size();
  }
  const auto expressions = kfaild::testing::dashboardExpressions(dashboard);
  CHECK(expressions.size() == targets);
  REQUIRE(expressions.size() >= 20);

  // Only the variables the dashboard defines and Grafana's own are used.
  const std::regex variable(R"(\$\{?([A-Za-z_]+))");
  for (const auto& e : expressions) {
    for (auto it = std::sregex_iterator(e.expr.begin(), e.expr.end(), variable);
         it != std::sregex_iterator(); ++it) {
      const auto name = (*it)[1].str();
      INFO(e.where << ": " << e.expr);
      CHECK((variables.count(name) == 1 || name.starts_with("__")));
    }
  }

  // Every kfaild metric the dashboard and the rules use is in the metrics table of the docs.
  std::string all;
  for (const auto& e : expressions) all += e.expr + "\n";
  for (const auto& e : kfaild::testing::ruleExpressions(kRules.string())) all += e.expr + "\n";
  const auto used = kfaildMetricNames(all);
  const auto documented = kfaildMetricNames(readFile(kSource / "docs/METRICS.md"));
  CHECK(used.count("kfaild_last_drill_verdict") == 1);
  CHECK(used.count("kfaild_probe_ack_latency_seconds") == 1);
  for (const auto& name : used) {
    INFO(name << " is used in deploy/ but not in docs/METRICS.md");
    CHECK(documented.count(name) == 1);
  }
}

}  // namespace prometheus_files_test
