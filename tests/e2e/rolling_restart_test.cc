// Rolling restarts on the lab: kfailctl rehearses a restart of the three brokers, one at a time;
// each step's graceful stop moves leadership before the broker goes (a short leader stall), and the
// rehearsal ends with every broker up, every ISR full and the preferred leaders back. kfaild
// SIGKILLed in the middle of a step brings that step's broker back at its next start and starts
// no later step.

#include <catch2/catch.hpp>
#include <csignal>
#include <regex>

#include "tests/e2e/e2e_support.h"

namespace e2e_rolling_restart_test {

using namespace kfaild::e2e;
using namespace std::chrono_literals;

namespace {

// Every probe partition led by its preferred replica with its whole replica set in sync.
void checkWhole(Kfaild& kfaild, const std::string& topic) {
  const auto cluster = kfaild.get("/api/v1/clusters/lab");
  CHECK(cluster["brokers"].size() == 3);
  bool found = false;
  for (const auto& t : cluster["topics"]) {
    if (t["name"] != topic) continue;
    found = true;
    for (const auto& p : t["partitions"]) {
      INFO(p.dump());
      CHECK(p["leader"] == p["replicas"][0]);
      CHECK(p["isr"].size() == p["replicas"].size());
    }
  }
  CHECK(found);
}

}  // namespace

TEST_CASE(
    "kfailctl rehearses a rolling restart of the three brokers, a short leader stall per step, and "
    "the "
    "cluster ends whole with its preferred leaders",
    "[e2e][rolling]") {
  Lab lab;
  Kfaild kfaild(lab, "kfaild");
  waitFullIsr();
  kfaild.waitSteady(lab.topic);
  auto [code, out] = kfailctl(
      kfaild, lab, "drill lab --fault rolling_restart --between 3 --baseline 3 --timeout 900");
  // A step refused because the probe was behind on a loaded host (the node not touched: a full
  // run of 6 December saw "1.0 s behind" at step 2) is asked again once.
  if (code == 1 && out.find("refused at the fault: the probe") != std::string::npos) {
    WARN("asked again: " << out.substr(0, 400));
    kfaild.waitSteady(lab.topic);
    std::tie(code, out) = kfailctl(
        kfaild, lab, "drill lab --fault rolling_restart --between 3 --baseline 3 --timeout 900");
  }
  INFO("kfailctl:\n" << out);
  // Exit 0 (pass), 5 (fail) or 6 (inconclusive): the rehearsal finished.
  CHECK((code == 0 || code == 5 || code == 6));
  CHECK_THAT(out, Catch::Contains("rolling restart by stop of nodes [1,2,3], 3 s apart"));
  for (const char* row : {"\n  1     1 ", "\n  2     2 ", "\n  3     3 "})
    CHECK_THAT(out, Catch::Contains(row));
  const auto drill = kfaild.get("/api/v1/clusters/lab/drills/last");
  INFO("drill: " << drill.dump().substr(0, 6000));
  REQUIRE(drill["fault"] == "rolling_restart");
  REQUIRE(drill["state"] == "done");
  const auto& runs = drill["runs"];
  REQUIRE(runs.size() == 3);
  const auto& summary = drill["rolling_restart"];
  CHECK(summary["plan"] == json::array({1, 2, 3}));
  // The rehearsal held a planned-maintenance window open, and closed it at its end.
  REQUIRE(summary["maintenance_window"].is_number());
  const auto by = "drill " + drill["id"].dump();
  const auto window =
      kfaild.get("/api/v1/clusters/lab/maintenance/" + summary["maintenance_window"].dump());
  CHECK(window["opened_by"] == by);
  CHECK(window["closed_by"] == by);
  CHECK(window["active"] == false);
  CHECK(window["started_us"].get<std::int64_t>() <=
        runs[0]["baseline_start_us"].get<std::int64_t>());
  CHECK(window["closed_us"].get<std::int64_t>() >= runs[2]["recovered_us"].get<std::int64_t>());
  REQUIRE(summary["steps"].size() == 3);
  for (int i = 0; i < 3; ++i) {
    const auto& run = runs[i];
    INFO("step " << i + 1);
    CHECK(run["step"] == i + 1);
    CHECK(run["target"] == i + 1);
    CHECK(run["state"] == "done");
    CHECK(run["preferred_leaders_restored"] == true);
    const auto& analysis = run["analysis"];
    // A graceful stop: the broker hands its leadership over before it goes.
    CHECK(analysis["departure"] == "controlled_shutdown");
    double worst = 0;
    for (int p = 0; p < 3; ++p) {
      const auto& part = partitionOf(analysis, lab.topic, p);
      INFO("orders-" << p);
      CHECK(part["ack"]["outcome"] != "inconclusive");
      const auto gap = part["ack"]["longest_gap"]["duration_us"].get<std::int64_t>();
      CHECK(gap < kGracefulStallLimitUs);
      worst = std::max(worst, gap / 1e6);
      CHECK(part["lost"] == 0);
    }
    const auto& step = summary["steps"][i];
    WARN("rolling restart step "
         << i + 1 << " (broker " << i + 1 << "): longest ack gap " << worst << " s, "
         << step["ack_partition_seconds"] << " ack partition-s, " << step["stalled_partitions"]
         << " partition(s) stalled, verdict " << step["verdict"] << ", recovered after "
         << (run["recovered_us"].get<std::int64_t>() - run["fault_us"].get<std::int64_t>()) / 1e6
         << " s");
  }
  // One at a time: each step began after the previous broker was back.
  for (int i = 1; i < 3; ++i) {
    CHECK(runs[i]["fault_us"].get<std::int64_t>() >
          runs[i - 1]["recovered_us"].get<std::int64_t>() + 3'000'000);
  }
  WARN("rolling restart total: " << summary["ack_partition_seconds"] << " ack partition-s, "
                                 << summary["receive_partition_seconds"]
                                 << " receive partition-s, worst " << summary["worst_stall"].dump()
                                 << ", verdict " << summary["verdict"]);
  checkWhole(kfaild, lab.topic);
}

TEST_CASE(
    "kfaild SIGKILLed in the middle of a rolling restart brings that step's broker back at its "
    "next start "
    "and starts no later step",
    "[e2e][rolling][reliability]") {
  Lab lab;
  waitFullIsr();
  std::int64_t id = 0;
  {
    Kfaild first(lab, "first");
    first.waitSteady(lab.topic);
    // kfaild dies while the second step, its broker killed and started again, waits for the
    // probe to resume and the broker to rejoin.
    const auto reply = first.post(
        "/api/v1/clusters/lab/drills",
        R"({"fault":"rolling_restart","options":{"between_s":1,"baseline_s":2,"kill":true}})");
    INFO(reply.body);
    REQUIRE(reply.status == 202);
    id = reply.json()["id"].get<std::int64_t>();
    // The second step's kill is in: its run is stored with a fault time.
    const auto deadline = std::chrono::steady_clock::now() + 300s;
    bool second_in = false;
    while (!second_in && std::chrono::steady_clock::now() < deadline) {
      const auto d = first.get("/api/v1/drills/" + std::to_string(id));
      REQUIRE(d["state"] != "done");
      const auto state = d["state"].get<std::string>();
      second_in = d["runs"].size() == 1 && (state == "observe" || state == "recover");
      if (!second_in) std::this_thread::sleep_for(100ms);
    }
    REQUIRE(second_in);
    REQUIRE(first.process.stop(SIGKILL, 10'000) == -1);
  }
  Kfaild second(lab, "second");  // brings broker 2 back before it listens
  const auto drill = second.get("/api/v1/drills/" + std::to_string(id));
  INFO("drill: " << drill.dump().substr(0, 4000));
  CHECK(drill["state"] == "aborted");
  CHECK_THAT(drill["reason"].get<std::string>(), Catch::StartsWith("kfaild stopped during "));
  CHECK(drill["runs"].size() == 1);  // the second step never finished, and no third began
  // Broker 3 was never touched: no fault event names it since the drill began.
  const auto faults =
      second.get("/api/v1/clusters/lab/events?source=injector&kind=fault&limit=1000");
  for (const auto& e : faults["items"]) {
    if (e["detail"].is_object() && e["detail"].value("drill", std::int64_t{0}) == id)
      CHECK(e["broker"] != 3);
  }
  const std::regex all_alive(
      R"(\n1 +broker +\S+ +\S+ +yes[\s\S]*\n2 +broker +\S+ +\S+ +yes[\s\S]*\n3 +broker +\S+ +\S+ +yes)");
  CHECK(std::regex_search(kfaild::testing::labOutput("status"), all_alive));
  waitFullIsr();
}

}  // namespace e2e_rolling_restart_test
