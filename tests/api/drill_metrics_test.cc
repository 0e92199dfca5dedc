// The kfaild_last_drill_* families: drill rows written to a real SQLite file, read back with
// DrillStore::lastDrills as /metrics does, and rendered.

#include "api/drill_metrics.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "storage/sqlite.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/api/api_test_support.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace kfaild::api::drill_metrics_test {
namespace {

using kfaild::testing::TempDir;
using nlohmann::json;

constexpr std::int64_t kBase = 1'760'000'000'000'000;

json partition(int p, const std::string& role, json ack, json receive,
               json phases = json::object()) {
  return {{"topic", "orders"},
          {"partition", p},
          {"role", role},
          {"ack", std::move(ack)},
          {"receive", std::move(receive)},
          {"phases", std::move(phases)},
          {"lost", 0},
          {"failed", 0},
          {"duplicated", 0},
          {"unresolved", 0}};
}

json stall(std::int64_t us) {
  return {{"outcome", "stall"},
          {"stall",
           {{"start_us", kBase}, {"end_us", kBase + us}, {"duration_us", us}, {"open", false}}}};
}

json none() {
  return {{"outcome", "none"}, {"stall", nullptr}};
}

json inconclusive() {
  return {{"outcome", "inconclusive"}, {"stall", nullptr}};
}

json runOf(json partitions) {
  return {{"run", 1}, {"state", "done"}, {"analysis", {{"partitions", std::move(partitions)}}}};
}

struct DrillDb {
  TempDir dir;
  std::string path = (dir / "kfaild.db").string();
  std::unique_ptr<storage::SqliteStore> store;
  std::unique_ptr<storage::SqliteDrillStore> drills;
  storage::ClusterId lab = 0;
  storage::ClusterId prod = 0;
  storage::ClusterId retired = 0;

  DrillDb() {
    auto opened = storage::SqliteStore::open(path);
    REQUIRE(opened.ok());
    store = std::move(*opened);
    auto drill_store = storage::SqliteDrillStore::open(path);
    REQUIRE(drill_store.ok());
    drills = std::move(*drill_store);
    lab = *store->ensureCluster("lab", "k1:9092");
    prod = *store->ensureCluster("prod", "p1:9092");
    retired = *store->ensureCluster("retired", "r1:9092");
  }

  std::int64_t add(storage::ClusterId cluster, const std::string& fault, const std::string& state,
                   std::int64_t finished_us, const json& result) {
    storage::DrillRecord d;
    d.cluster = cluster;
    d.fault = fault;
    d.target = R"({"broker":1})";
    d.options = "{}";
    d.state = state;
    d.created_us = finished_us - 60'000'000;
    d.started_us = d.created_us;
    d.finished_us = finished_us;
    d.result = result.dump();
    auto id = drills->createDrill(d);
    REQUIRE(id.ok());
    return *id;
  }

  std::string metrics() {
    auto last = drills->lastDrills(kAnalysedDrillState);
    REQUIRE(last.ok());
    PrometheusText out;
    renderLastDrills(out, *last, {{lab, "lab"}, {prod, "prod"}});
    return out.text();
  }
};

void requireLines(const std::string& text, const std::vector<std::string>& lines) {
  for (const auto& line : lines) {
    INFO("expected line: " << line << "\nin:\n" << text);
    CHECK(text.find(line + "\n") != std::string::npos);
  }
}

TEST_CASE(
    "the last analysed drill of each cluster and fault gives its verdict, stalls by role and "
    "phases",
    "[integration][api]") {
  DrillDb db;
  // An older kill that passed: replaced by the newer one below.
  db.add(db.lab, "kill", "done", kBase,
         {{"verdict", {{"verdict", "pass"}, {"checks", json::array()}}},
          {"runs", json::array({runOf(json::array(
                       {partition(0, "leader", stall(1'000'000), stall(1'000'000))}))})}});
  // The last analysed kill: failed its objectives and regressed; two runs, the longest counts.
  const auto kill = db.add(
      db.lab, "kill", "done", kBase + 3'600'000'000,
      {{"verdict",
        {{"verdict", "fail"},
         {"checks", json::array()},
         {"regressions", json::array({{{"kind", "ack"}, {"role", "leader"}, {"factor", 2.5}}})}}},
       {"runs", json::array({
                    runOf(json::array({
                        partition(0, "leader", stall(9'400'000), stall(9'900'000),
                                  {{"detection_us", 8'270'000},
                                   {"election_us", 60'000},
                                   {"discovery_us", nullptr},
                                   {"resume_us", 400'000}}),
                        partition(1, "follower", stall(8'500'000), inconclusive()),
                        partition(2, "follower", none(), none()),
                    })),
                    runOf(json::array({
                        partition(0, "leader", stall(10'240'000), stall(10'000'000),
                                  {{"detection_us", 8'890'000}, {"election_us", 600'000}}),
                        partition(1, "follower", stall(8'370'000), inconclusive()),
                    })),
                })}});
  // A kill after it that failed to run: not analysed, so not the last drill's figures.
  db.add(db.lab, "kill", "failed", kBase + 7'200'000'000, json::object());
  // A stop drill from before verdicts existed: verdict "none", no regression flag.
  db.add(db.lab, "stop", "done", kBase + 1'800'000'000,
         {{"runs",
           json::array({runOf(json::array({partition(0, "leader", stall(1'100'000), none())}))})}});
  // A cluster no longer configured still reports, labelled by its id.
  db.add(db.retired, "kill", "done", kBase, {{"verdict", {{"verdict", "inconclusive"}}}});

  const auto text = db.metrics();
  const std::string retired = std::to_string(db.retired);
  requireLines(
      text,
      {
          "# TYPE kfaild_last_drill_verdict gauge",
          R"(kfaild_last_drill_verdict{cluster="lab",fault="kill",verdict="fail"} 1)",
          R"(kfaild_last_drill_verdict{cluster="lab",fault="kill",verdict="pass"} 0)",
          R"(kfaild_last_drill_verdict{cluster="lab",fault="kill",verdict="inconclusive"} 0)",
          R"(kfaild_last_drill_verdict{cluster="lab",fault="kill",verdict="none"} 0)",
          R"(kfaild_last_drill_verdict{cluster="lab",fault="stop",verdict="none"} 1)",
          R"(kfaild_last_drill_verdict{cluster="lab",fault="stop",verdict="pass"} 0)",
          "kfaild_last_drill_verdict{cluster=\"" + retired +
              "\",fault=\"kill\",verdict=\"inconclusive\"} 1",
          R"(kfaild_last_drill_id{cluster="lab",fault="kill"} )" + std::to_string(kill),
          R"(kfaild_last_drill_timestamp_seconds{cluster="lab",fault="kill"} 1760003600)",
          R"(kfaild_last_drill_timestamp_seconds{cluster="lab",fault="stop"} 1760001800)",
          R"(kfaild_drill_last_done_timestamp_seconds{cluster="lab"} 1760003600)",
          R"(kfaild_drill_last_done_timestamp_seconds{cluster="prod"} 0)",
          R"(kfaild_last_drill_regressed{cluster="lab",fault="kill"} 1)",
          R"(kfaild_last_drill_regressed{cluster="lab",fault="stop"} 0)",
          R"(kfaild_last_drill_ack_stall_seconds{cluster="lab",fault="kill",topic="orders",partition="0",role="leader"} 10.24)",
          R"(kfaild_last_drill_ack_stall_seconds{cluster="lab",fault="kill",topic="orders",partition="1",role="follower"} 8.5)",
          R"(kfaild_last_drill_ack_stall_seconds{cluster="lab",fault="kill",topic="orders",partition="2",role="follower"} 0)",
          R"(kfaild_last_drill_receive_stall_seconds{cluster="lab",fault="kill",topic="orders",partition="0",role="leader"} 10)",
          R"(kfaild_last_drill_ack_stall_seconds{cluster="lab",fault="stop",topic="orders",partition="0",role="leader"} 1.1)",
          R"(kfaild_last_drill_phase_seconds{cluster="lab",fault="kill",phase="detection"} 8.89)",
          R"(kfaild_last_drill_phase_seconds{cluster="lab",fault="kill",phase="election"} 0.6)",
          R"(kfaild_last_drill_phase_seconds{cluster="lab",fault="kill",phase="resume"} 0.4)",
          R"(kfaild_last_drill_messages{cluster="lab",fault="kill",fate="lost"} 0)",
      });
  // Inconclusive receive stalls and unobserved phases have no sample rather than a made-up 0.
  CHECK(
      text.find(
          R"(kfaild_last_drill_receive_stall_seconds{cluster="lab",fault="kill",topic="orders",partition="1")") ==
      std::string::npos);
  CHECK(text.find(R"(phase="discovery")") == std::string::npos);
  // The older passing kill is not reported at all.
  CHECK(
      text.find(
          R"(kfaild_last_drill_ack_stall_seconds{cluster="lab",fault="kill",topic="orders",partition="0",role="leader"} 1)"
          "\n") == std::string::npos);
  // One HELP/TYPE per family, all its samples after it.
  CHECK(text.find("# TYPE kfaild_last_drill_verdict") ==
        text.rfind("# TYPE kfaild_last_drill_verdict"));
  CHECK(text.find("kfaild_last_drill_verdict{", text.find("# TYPE kfaild_last_drill_id")) ==
        std::string::npos);
}

TEST_CASE("a drill result that is not JSON reads as a drill without a verdict, not a failed scrape",
          "[integration][api]") {
  DrillDb db;
  storage::DrillRecord d;
  d.cluster = db.lab;
  d.fault = "kill";
  d.target = "{}";
  d.options = "{}";
  d.state = "done";
  d.created_us = kBase;
  d.finished_us = kBase;
  d.result = "{not json";
  REQUIRE(db.drills->createDrill(d).ok());
  const auto text = db.metrics();
  requireLines(text, {R"(kfaild_last_drill_verdict{cluster="lab",fault="kill",verdict="none"} 1)",
                      R"(kfaild_last_drill_regressed{cluster="lab",fault="kill"} 0)"});
}

TEST_CASE("the last drills are found in the outcome index, reading only their own rows",
          "[integration][storage]") {
  DrillDb db;
  auto raw = storage::sqlite::Database::open(db.path);
  REQUIRE(raw.ok());
  // The query SqliteDrillStore::lastDrills runs.
  auto plan = (*raw)->prepare(
      "EXPLAIN QUERY PLAN SELECT id, result FROM drills WHERE id IN (SELECT max(id) FROM drills "
      "WHERE state = 'done' GROUP BY cluster_id, fault) ORDER BY cluster_id, fault");
  REQUIRE(plan.ok());
  std::string steps;
  for (auto step = plan->step(); step.ok() && *step; step = plan->step())
    steps += plan->columnText(3) + "; ";
  CHECK_THAT(steps, Catch::Contains("SEARCH drills USING INTEGER PRIMARY KEY"));
  CHECK_THAT(steps, Catch::Contains("COVERING INDEX drills_by_outcome"));
}

TEST_CASE(
    "metrics expose per-message ack and end-to-end latency histograms, the probe's skipped ticks "
    "and its "
    "replaced clients",
    "[integration][api]") {
  testing::ApiHarness api;
  api.live().update([](std::vector<ClusterLive>& clusters) {
    auto& p0 = clusters[0].probe.partitions[0];
    for (const std::int64_t us : {3'000, 4'000, 9'400'000}) p0.ack_latency.add(us);
    p0.receive_latency.add(9'900'000);
    clusters[0].probe.skipped_ticks = 12;
    clusters[0].probe.consumer_recreations = 2;
    clusters[0].probe.max_send_lateness_us = 250'000;
  });
  const auto reply = api.get("/metrics");
  REQUIRE(reply.status == 200);
  requireLines(
      reply.body,
      {
          "# TYPE kfaild_probe_ack_latency_seconds histogram",
          R"(kfaild_probe_ack_latency_seconds_bucket{cluster="lab",topic="orders",partition="0",le="0.001"} 0)",
          R"(kfaild_probe_ack_latency_seconds_bucket{cluster="lab",topic="orders",partition="0",le="0.005"} 2)",
          R"(kfaild_probe_ack_latency_seconds_bucket{cluster="lab",topic="orders",partition="0",le="10"} 3)",
          R"(kfaild_probe_ack_latency_seconds_bucket{cluster="lab",topic="orders",partition="0",le="+Inf"} 3)",
          R"(kfaild_probe_ack_latency_seconds_sum{cluster="lab",topic="orders",partition="0"} 9.407)",
          R"(kfaild_probe_ack_latency_seconds_count{cluster="lab",topic="orders",partition="0"} 3)",
          R"(kfaild_probe_end_to_end_latency_seconds_bucket{cluster="lab",topic="orders",partition="0",le="5"} 0)",
          R"(kfaild_probe_end_to_end_latency_seconds_bucket{cluster="lab",topic="orders",partition="0",le="10"} 1)",
          R"(kfaild_probe_end_to_end_latency_seconds_count{cluster="lab",topic="orders",partition="1"} 0)",
          R"(kfaild_probe_ack_interval_seconds_bucket{cluster="lab",topic="orders",partition="0",le="0.025"} 0)",
          R"(kfaild_probe_ticks_total{cluster="lab"} 5000)",
          R"(kfaild_probe_skipped_ticks_total{cluster="lab"} 12)",
          "# TYPE kfaild_probe_client_recreations_total counter",
          R"(kfaild_probe_client_recreations_total{cluster="lab",client="producer"} 0)",
          R"(kfaild_probe_client_recreations_total{cluster="lab",client="consumer"} 2)",
          R"(kfaild_probe_max_send_lateness_seconds{cluster="lab"} 0.25)",
      });
}

}  // namespace
}  // namespace kfaild::api::drill_metrics_test

namespace kfaild::api::drill_metrics_test {
namespace {

// promtool's linter (names, units, HELP/TYPE) over what a scrape returns, the last drill's
// families included.
TEST_CASE("promtool finds nothing to lint in kfaild's metrics, the last drill's families included",
          "[integration][api]") {
  DrillDb db;
  db.add(
      db.lab, "kill", "done", kBase,
      {{"verdict", {{"verdict", "pass"}}},
       {"runs",
        json::array({runOf(json::array({partition(0, "leader", stall(9'400'000), stall(9'900'000),
                                                  {{"detection_us", 8'270'000}})}))})}});
  testing::ApiHarness api;
  const auto reply = api.get("/metrics");
  REQUIRE(reply.status == 200);
  const auto lint = [&db](const std::string& text) {
    const auto path = db.dir / "metrics.txt";
    std::ofstream(path) << text;
    const auto ran =
        kfaild::testing::run("promtool check metrics < " + kfaild::testing::quoted(path));
    return std::pair{ran.status, ran.output};
  };
  const auto [status, output] = lint(reply.body + db.metrics());
  INFO(output);
  CHECK(status == 0);
  CHECK(output.empty());
  // The linter does complain: a counter named without _total.
  const auto [broken_status, broken_output] = lint(
      reply.body +
      "# HELP kfaild_broken Not a counter name.\n# TYPE kfaild_broken counter\nkfaild_broken 1\n");
  INFO(broken_output);
  CHECK(broken_status != 0);
  CHECK_THAT(broken_output, Catch::Contains("kfaild_broken"));
}

}  // namespace
}  // namespace kfaild::api::drill_metrics_test
