#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tools/kfailctl/client.h"
#include "tools/kfailctl/summary.h"

namespace kfailctl_test {

using nlohmann::json;

TEST_CASE("kfailctl prints a drill as a table with a row per partition", "[unit][kfailctl]") {
  const json drill = json::parse(R"({
    "id": 7, "cluster": "lab", "fault": "kill", "target": {"broker": 1}, "state": "done", "reason": null,
    "runs": [{"run": 1, "state": "done", "fault_at": "2026-11-30T08:31:10.756000Z", "fault_time_source": "local",
              "preferred_leaders_restored": true,
              "analysis": {"fault_us": 1000000, "departure": "fenced", "departure_at_us": 9850000,
                "partitions": [
                  {"topic": "orders", "partition": 0, "role": "leader",
                   "ack": {"stall": {"duration_us": 11290000}}, "receive": {"stall": {"duration_us": 10300000}},
                   "failed": 0, "lost": 0,
                   "phases": {"detection_us": 8850000, "election_us": 66000, "discovery_us": 100000, "resume_us": null}},
                  {"topic": "orders", "partition": 1, "role": "follower",
                   "ack": {"stall": null}, "receive": {"stall": null}, "failed": 2, "lost": 0, "phases": {}}]}}]})");
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK(text.find("drill 7 on lab: kill of node 1 — done\n") == 0);
  CHECK(text.find("node left: fenced after 8.850 s, preferred leaders restored") !=
        std::string::npos);
  CHECK(text.find("orders[0]        leader                 11.290 s   10.300 s    8.850 s    0.066 "
                  "s    0.100 s          -") != std::string::npos);
  CHECK(text.find("orders[1]        follower                      -          -") !=
        std::string::npos);
}

TEST_CASE("kfailctl prints none for noise and n/a with the reason for an inconclusive stall",
          "[unit][kfailctl]") {
  const json drill = json::parse(R"({
    "id": 8, "cluster": "lab", "fault": "stop", "target": {"broker": 1}, "state": "done", "reason": null,
    "runs": [{"run": 1, "state": "done",
              "analysis": {"fault_us": 1000000, "departure": "controlled_shutdown", "departure_at_us": 1050000,
                "partitions": [
                  {"topic": "orders", "partition": 1, "role": "follower",
                   "ack": {"outcome": "none", "stall": null, "longest_gap": {"duration_us": 57000}, "reason": "within the noise"},
                   "receive": {"outcome": "none", "stall": null, "reason": "within the noise"},
                   "failed": 0, "lost": 0, "unresolved": 0, "phases": {}},
                  {"topic": "single", "partition": 0, "role": "sole_replica",
                   "ack": {"outcome": "stall", "stall": {"duration_us": 31200000}, "reason": ""},
                   "receive": {"outcome": "inconclusive", "stall": null, "reason": "still stalled when observation ended"},
                   "failed": 0, "lost": 0, "unresolved": 3, "phases": {}}]}}]})");
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK(text.find("orders[1]        follower                   none       none") !=
        std::string::npos);
  CHECK(text.find("single[0]        sole_replica           31.200 s        n/a") !=
        std::string::npos);
  CHECK(text.find("n/a: single[0] receive: still stalled when observation ended") !=
        std::string::npos);
  CHECK(text.find("57") == std::string::npos);  // noise is not shown as a stall
}

TEST_CASE(
    "kfailctl says which lost messages were acked before kfaild restarted its consumer's reading",
    "[unit][kfailctl]") {
  const json drill = json::parse(R"({
    "id": 9, "cluster": "lab", "fault": "kill", "target": {"broker": 1}, "state": "done", "reason": null,
    "runs": [{"run": 1, "state": "done",
              "analysis": {"fault_us": 1000000, "departure": "fenced", "departure_at_us": 9850000,
                "partitions": [
                  {"topic": "orders", "partition": 0, "role": "leader", "ack": {"stall": null}, "receive": {"stall": null},
                   "failed": 0, "lost": 42, "lost_consumer_stuck": 40, "unresolved": 0, "phases": {}},
                  {"topic": "orders", "partition": 1, "role": "follower", "ack": {"stall": null}, "receive": {"stall": null},
                   "failed": 0, "lost": 3, "unresolved": 0, "phases": {}}]}}]})");
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK(text.find("lost: orders[0]: 40 of 42 acked before kfaild restarted its consumer's reading "
                  "of the partition; "
                  "not known to be the cluster's\n") != std::string::npos);
  CHECK(text.find("lost: orders[1]") == std::string::npos);
}

TEST_CASE("kfailctl reads a drill still running and a failed one without inventing figures",
          "[unit][kfailctl]") {
  const auto running = kfaild::ctl::formatDrill(json::parse(
      R"({"id": 3, "cluster": "lab", "fault": "stop", "target": {"leader_of": {"topic": "orders", "partition": 0}},
          "state": "observe", "reason": null, "runs": []})"));
  CHECK(running == "drill 3 on lab: stop of the leader of orders[0] — observe\n");
  const auto failed = kfaild::ctl::formatDrill(json::parse(
      R"({"id": 4, "cluster": "lab", "fault": "kill", "target": {"broker": 9}, "state": "failed",
          "reason": "refused: node 9 is not in the cluster's inventory", "runs": []})"));
  CHECK(failed ==
        "drill 4 on lab: kill of node 9 — failed (refused: node 9 is not in the cluster's "
        "inventory)\n");
  CHECK(kfaild::ctl::isFinished("aborted"));
  CHECK_FALSE(kfaild::ctl::isFinished("recover"));
  CHECK(kfaild::ctl::formatSeconds(json(nullptr)) == "-");
}

TEST_CASE("kfailctl's --url takes http:// or https://host:port and nothing else",
          "[unit][kfailctl]") {
  auto ok = kfaild::ctl::parseUrl("http://127.0.0.1:8080/");
  REQUIRE(ok);
  CHECK(ok->host == "127.0.0.1");
  CHECK(ok->port == "8080");
  CHECK_FALSE(ok->tls);
  auto v6 = kfaild::ctl::parseUrl("http://[::1]:9000");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  auto tls = kfaild::ctl::parseUrl("https://kfaild:8443");
  REQUIRE(tls);
  CHECK(tls->tls);
  CHECK(tls->host == "kfaild");
  CHECK(tls->port == "8443");
  CHECK(kfaild::ctl::parseUrl("https://kfaild")->port == "443");
  CHECK(kfaild::ctl::parseUrl("http://kfaild")->port == "80");
  CHECK_FALSE(kfaild::ctl::parseUrl("ftp://kfaild:8080"));
  CHECK_FALSE(kfaild::ctl::parseUrl("https://kfaild:8080/api"));
  CHECK_FALSE(kfaild::ctl::parseUrl("http://kfaild:8080/api"));
  CHECK_FALSE(kfaild::ctl::parseUrl("http://kfaild:99999"));
  CHECK_FALSE(kfaild::ctl::parseUrl("http://:8080"));
}

TEST_CASE(
    "kfailctl prints the verdict first, with every check that did not pass and the regressions",
    "[unit][kfailctl][verdict]") {
  const json drill = {{"id", 9},
                      {"cluster", "lab"},
                      {"fault", "kill"},
                      {"target", {{"broker", 1}}},
                      {"state", "done"},
                      {"reason", nullptr},
                      {"runs", json::array()},
                      {"verdict", "fail"},
                      {"regressed", true},
                      {"verdict_detail",
                       {{"verdict", "fail"},
                        {"checks",
                         {{{"objective", "max_ack_stall_s"},
                           {"source", "max_ack_stall_s"},
                           {"threshold", 1.0},
                           {"measured", 9.41},
                           {"unit", "s"},
                           {"status", "fail"},
                           {"run", 1},
                           {"topic", "orders"},
                           {"partition", 0},
                           {"role", "leader"},
                           {"reason", ""}},
                          {{"objective", "max_lost"},
                           {"source", "max_lost"},
                           {"threshold", 0.0},
                           {"measured", 0.0},
                           {"unit", "messages"},
                           {"status", "pass"},
                           {"run", 1},
                           {"topic", "orders"},
                           {"partition", 0},
                           {"role", "leader"},
                           {"reason", ""}},
                          {{"objective", "max_recovery_s"},
                           {"source", "max_recovery_s"},
                           {"threshold", 120.0},
                           {"measured", nullptr},
                           {"unit", "s"},
                           {"status", "inconclusive"},
                           {"run", 1},
                           {"topic", nullptr},
                           {"partition", nullptr},
                           {"role", nullptr},
                           {"reason", "the node was not seen back in its ISRs"}}}},
                        {"regressions",
                         {{{"kind", "ack"},
                           {"role", "leader"},
                           {"topic", "orders"},
                           {"partition", 0},
                           {"run", 1},
                           {"stall_s", 9.41},
                           {"median_s", 5.2},
                           {"factor", 1.81},
                           {"previous", 4}}}}}}};
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK(text.find("verdict: fail (3 checks: 1 failed, 1 inconclusive)\n") == 0);
  CHECK(text.find("max_ack_stall_s        run 1 orders[0] leader: 9.410 s (limit 1.000 s, "
                  "max_ack_stall_s)") != std::string::npos);
  CHECK(text.find("max_recovery_s         run 1: n/a s (limit 120.000 s, max_recovery_s) — the "
                  "node was not seen") != std::string::npos);
  CHECK(text.find("max_lost") == std::string::npos);  // passed checks are not listed
  CHECK(text.find("regression   ack stall run 1 orders[0] leader: 9.410 s, 1.8 × the median 5.200 "
                  "s of 4 earlier") != std::string::npos);
  CHECK(text.find("drill 9 on lab: kill of node 1 — done\n") != std::string::npos);
  // A drill without a verdict (running, or from an older kfaild) prints none.
  CHECK(kfaild::ctl::formatVerdict(json{{"state", "observe"}}).empty());
}

TEST_CASE(
    "kfailctl never prints a phase negative: below its resolution it reads as at most the "
    "resolution",
    "[unit][kfailctl]") {
  const json drill = json::parse(R"({
    "id": 11, "cluster": "lab", "fault": "kill", "target": {"broker": 1}, "state": "done", "reason": null,
    "runs": [{"run": 1, "state": "done", "fault_at": "2026-11-30T08:31:10.756000Z",
              "fault_time_source": "ssh:remote-clock", "fault_time_uncertainty_us": 42000,
              "analysis": {"fault_us": 1000000, "departure": "fenced", "departure_at_us": 9850000,
                "partitions": [
                  {"topic": "orders", "partition": 0, "role": "leader",
                   "ack": {"outcome": "stall", "stall": {"duration_us": 9290000}},
                   "receive": {"outcome": "stall", "stall": {"duration_us": 9300000}}, "failed": 0, "lost": 0,
                   "phases": {"detection_us": 8850000, "election_us": 66000, "discovery_us": 0, "resume_us": 120000,
                              "detection_resolution_us": 43000, "election_resolution_us": 1000,
                              "discovery_resolution_us": 100000, "resume_resolution_us": 1000,
                              "below_resolution": ["discovery"], "inconclusive": {}}},
                  {"topic": "orders", "partition": 1, "role": "leader",
                   "ack": {"outcome": "stall", "stall": {"duration_us": 9290000}},
                   "receive": {"outcome": "stall", "stall": {"duration_us": 9300000}}, "failed": 0, "lost": 0,
                   "phases": {"detection_us": 8850000, "election_us": 66000, "discovery_us": -43000,
                              "resume_us": 120000, "discovery_resolution_us": 100000}},
                  {"topic": "orders", "partition": 2, "role": "leader",
                   "ack": {"outcome": "stall", "stall": {"duration_us": 9290000}},
                   "receive": {"outcome": "stall", "stall": {"duration_us": 9300000}}, "failed": 0, "lost": 0,
                   "phases": {"detection_us": 8850000, "election_us": 66000, "discovery_us": 20000,
                              "resume_us": 120000, "inconclusive": {"detection": "the fault time is uncertain"}}}]}}]})");
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK(text.find("-0.043") == std::string::npos);
  CHECK(text.find("(ssh:remote-clock ± 0.042 s)") != std::string::npos);
  const auto row = [&](const std::string& name) {
    const auto at = text.find(name + "  ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  // A value below its resolution (and a negative one stored before the rule) reads "≤ resolution".
  CHECK(row("orders[0]").find("8.850 s    0.066 s") != std::string::npos);
  CHECK(row("orders[0]").find(" ≤0.100 s    0.120 s") != std::string::npos);
  CHECK(row("orders[1]").find(" ≤0.100 s    0.120 s") != std::string::npos);
  CHECK(row("orders[2]").find("9.300 s        n/a    0.066 s    0.020 s") != std::string::npos);
  CHECK(text.find("n/a: orders[2] detection: the fault time is uncertain") != std::string::npos);
}

TEST_CASE("kfailctl counts and lists a not applicable check apart, with its reason",
          "[unit][kfailctl][verdict]") {
  const json drill = {
      {"id", 12},
      {"cluster", "lab"},
      {"fault", "pause"},
      {"target", {{"broker", 2}}},
      {"state", "done"},
      {"reason", nullptr},
      {"runs", json::array()},
      {"verdict", "pass"},
      {"regressed", false},
      {"verdict_detail",
       {{"verdict", "pass"},
        {"checks",
         {{{"objective", "max_detection_s"},
           {"source", "max_detection_s"},
           {"threshold", 12.0},
           {"measured", nullptr},
           {"unit", "s"},
           {"status", "not_applicable"},
           {"run", 1},
           {"topic", nullptr},
           {"partition", nullptr},
           {"role", nullptr},
           {"reason", "a pause of 3.0 s is shorter than the session timeout (9.0 s)"}}}},
        {"regressions", json::array()}}}};
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK(text.find("verdict: pass (1 checks: 0 failed, 0 inconclusive, 1 not applicable)\n") == 0);
  CHECK(text.find("not_applicable max_detection_s") != std::string::npos);
  CHECK(text.find("— a pause of 3.0 s is shorter than the session timeout (9.0 s)") !=
        std::string::npos);
}

TEST_CASE("kfailctl prints a gray fault's mechanism with the event that ended each step",
          "[unit]") {
  const json drill = json::parse(R"({
    "id": 9, "cluster": "lab", "fault": "isolate", "target": {"broker": 1}, "state": "done", "reason": null,
    "runs": [{"run": 1, "state": "done",
              "analysis": {"fault_us": 1000000, "departure": null, "departure_at_us": null,
                "partitions": [
                  {"topic": "orders", "partition": 1, "role": "isolated_follower",
                   "ack": {"outcome": "stall", "stall": {"duration_us": 30200000}, "reason": ""},
                   "receive": {"outcome": "stall", "stall": {"duration_us": 30200000}, "reason": ""},
                   "failed": 0, "lost": 0, "unresolved": 0, "phases": {},
                   "mechanism": {"name": "isr_shrink", "setting": "replica.lag.time.max.ms", "expected_us": 30000000,
                                 "explained": true, "ended_by": "isr_shrink", "reason": "",
                                 "phases": [{"name": "isr_shrink", "duration_us": 30100000, "ended_by": "isr_shrink"},
                                            {"name": "resume", "duration_us": 100000, "ended_by": "ack"}]}},
                  {"topic": "orders", "partition": 2, "role": "not_a_replica",
                   "ack": {"outcome": "none", "stall": null, "reason": "within the noise"},
                   "receive": {"outcome": "none", "stall": null, "reason": "within the noise"},
                   "failed": 0, "lost": 0, "unresolved": 0, "phases": {},
                   "mechanism": {"name": "none", "setting": null, "expected_us": 0, "explained": false,
                                 "ended_by": null, "reason": "", "phases": []}}]}}]})");
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK(text.find("orders[1]        isolated_follower") != std::string::npos);
  CHECK(text.find("mechanism: orders[1]: isr_shrink (replica.lag.time.max.ms, expected 30.000 s): "
                  "isr_shrink 30.100 s → isr_shrink, resume 0.100 s → ack\n") != std::string::npos);
  CHECK(text.find("mechanism: orders[2]") == std::string::npos);
}

TEST_CASE("kfailctl prints a compound drill's second fault, when it came and the recovery order",
          "[unit][kfailctl]") {
  const auto drill = json::parse(
      R"({"id":9,"cluster":"lab","fault":"kill","target":{"controller":true},"state":"done",
      "runs":[{"run":1,"state":"done","fault_us":1000000,"recovery_order":[100,1],
               "second_fault":{"fault":"kill","after_s":2,"state":"injected","target":1,"fault_us":3004000}},
              {"run":2,"state":"failed","reason":"the second fault was refused: x","fault_us":1000000,
               "second_fault":{"fault":"kill","after_s":2,"state":"refused","target":2,"reason":"x"}}]})");
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK_THAT(
      text, Catch::Contains(
                "  then kill of node 1 after 2 s: injected (2.004 s after the first); recovered in "
                "order [100,1]; the analysis below is the second fault's\n"));
  CHECK_THAT(text, Catch::Contains("  then kill of node 2 after 2 s: refused — x\n"));
}

TEST_CASE("kfailctl prints a rolling restart as a row per step with its totals",
          "[unit][kfailctl]") {
  const auto drill = nlohmann::json::parse(R"({"id":9,"cluster":"lab","fault":"rolling_restart",
    "target":{"every_broker":true},"state":"done","runs":[],
    "rolling_restart":{"plan":[1,2,3],"by":"stop","between_s":10,
      "steps":[{"step":1,"node":1,"verdict":"pass","ack_partition_seconds":0.412,"receive_partition_seconds":0.5,
                "stalled_partitions":1,"inconclusive_partitions":0,
                "worst_stall":{"step":1,"node":1,"topic":"orders","partition":0,"role":"leader","kind":"receive","seconds":0.5}},
               {"step":2,"node":2,"verdict":"fail","ack_partition_seconds":2.25,"receive_partition_seconds":0,
                "stalled_partitions":1,"inconclusive_partitions":0,
                "worst_stall":{"step":2,"node":2,"topic":"orders","partition":1,"role":"leader","kind":"ack","seconds":2.25}}],
      "ack_partition_seconds":2.662,"receive_partition_seconds":0.5,
      "worst_stall":{"step":2,"node":2,"topic":"orders","partition":1,"role":"leader","kind":"ack","seconds":2.25},
      "verdict":"fail","ended_at_step":3}})");
  const auto text = kfaild::ctl::formatDrill(drill);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("drill 9 on lab: rolling_restart of every broker — done"));
  CHECK_THAT(text, Catch::Contains("rolling restart by stop of nodes [1,2,3], 10 s apart"));
  CHECK_THAT(text, Catch::Contains("  1     1      pass                0.412 s        0.500 s      "
                                   "  1  0.500 s orders[0] leader receive"));
  CHECK_THAT(text, Catch::Contains("  2     2      fail                2.250 s        0.000 s      "
                                   "  1  2.250 s orders[1] leader ack"));
  CHECK_THAT(
      text,
      Catch::Contains(
          "total: 2.662 s ack, 0.500 s receive partition-seconds; worst stall 2.250 s orders[1] "
          "leader ack (step 2); verdict fail"));
  CHECK_THAT(text, Catch::Contains("ended at step 3: no later step ran"));
}

TEST_CASE("kfailctl says who injected an observed drill's faults and what was missing",
          "[unit][kfailctl]") {
  const auto drill = nlohmann::json::parse(R"j({"id":12,"cluster":"lab","fault":"observed",
    "target":{"every_broker":true},"state":"done","verdict":"inconclusive","runs":[],
    "observed":{"window_s":600,"marks":[],"missing":"broker 3 is not registered (fenced or down)",
    "faults":[
      {"broker":1,"judged_as":"kill","departure":{"broker":1,"kind":"fenced"},"mark":null},
      {"broker":3,"judged_as":"stop","departure":{"broker":3,"kind":"controlled_shutdown"},
       "mark":{"at_us":1,"broker":3,"by":"chaos toolkit"}}]}})j");
  const auto text = kfaild::ctl::formatDrill(drill);
  CHECK_THAT(text, Catch::Contains("observed: found by kfaild: broker 1 fenced, judged as kill"));
  CHECK_THAT(text, Catch::Contains("observed: injected by chaos toolkit (broker 3 "
                                   "controlled_shutdown), judged as stop"));
  CHECK_THAT(text, Catch::Contains("not whole again at the window's end: broker 3 is not"));
  auto nothing = drill;
  nothing["observed"]["faults"] = nlohmann::json::array();
  CHECK_THAT(kfaild::ctl::formatDrill(nothing),
             Catch::Contains("no fault was marked or seen in the window"));
}

}  // namespace kfailctl_test
