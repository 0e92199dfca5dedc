// Whom a drill's fault lands on, and what a partition left below min.insync.replicas measures, on
// the lab: a leader_of drill after a broker lost its leadership kills the partition's leader once
// the preflight election has given leadership back; a kill that leaves an RF-2 topic with
// min.insync.replicas 2 below it observes that partition to the node's return. (A controller
// target resolved from the KRaft quorum: tests/drill/drill_e2e_test.cc.)

#include "tests/e2e/e2e_support.h"

namespace drill_target_test {

using namespace kfaild;
using namespace kfaild::e2e;
using nlohmann::json;

namespace {

// The drill's one run (runDrillToDone: asked again if kfaild refused it for its probe).
json runDrill(Kfaild& kfaild, const std::string& body) {
  return runDrillToDone(kfaild, body)["runs"][0];
}

// The leader of topic-partition in the drill's metadata at the fault.
int leaderAtFault(const json& run, const std::string& topic, int partition) {
  for (const auto& p : run["leadership_at_fault"]["partitions"]) {
    if (p["topic"] == topic && p["partition"] == partition) return p["leader"].get<int>();
  }
  FAIL("no leadership at the fault for " << topic << "-" << partition);
  return -1;
}

}  // namespace

TEST_CASE(
    "a leader_of drill after a broker lost its leadership kills the leader the preflight election "
    "settled on",
    "[e2e][drill]") {
  Lab lab;
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);
  // Broker 2 is partition 1's preferred leader (1:2:3,2:3:1,3:1:2). A graceful stop hands its
  // leadership to broker 3 at once; started again, it is a follower until an election.
  REQUIRE(testing::lab("stop 2") == 0);
  REQUIRE(testing::lab("start 2 --wait") == 0);
  // Unfenced is not caught up: until broker 2 is back in every ISR (the topics earlier tests left
  // included), killing the leader would leave some partition below min.insync.replicas and the
  // guards refuse it (a CI run met this).
  waitFullIsr();
  kfaild.waitSteady(lab.topic);
  const auto before = kfaild.get("/api/v1/clusters/lab");
  int led_before = -1;
  for (const auto& t : before["topics"]) {
    if (t["name"] != lab.topic) continue;
    for (const auto& p : t["partitions"]) {
      if (p["partition"] == 1) led_before = p["leader"].get<int>();
    }
  }
  WARN("before the drill " << lab.topic << "-1 is led by broker " << led_before);

  const auto run =
      runDrill(kfaild, R"({"fault":"kill","target":{"leader_of":{"topic":")" + lab.topic +
                           R"(","partition":1}},"options":{"baseline_s":3}})");
  INFO("run: " << run.dump().substr(0, 8000));
  const int killed = run["target"].get<int>();
  // The broker killed is the one that led the partition at the fault, and the analysis says so.
  CHECK(killed == leaderAtFault(run, lab.topic, 1));
  CHECK(partitionOf(run["analysis"], lab.topic, 1)["role"] == "leader");
  CHECK(run["target_resolution"]["at_fault"] == killed);
  CHECK(run["target_resolution"]["how"] == "the leader of " + lab.topic + "-1 in the metadata");
  if (run.contains("preflight_election")) {
    // Leadership was not preferred: resolved again after the election, on broker 2.
    CHECK(run["target_resolution"]["preflight"] == led_before);
    CHECK(run["target_resolution"]["after_election"] == 2);
    CHECK(killed == 2);
  } else {
    // The controller's automatic rebalance, or the election of an attempt refused for its probe
    // and asked again, gave leadership back before this drill.
    WARN("leadership was preferred already when the drill started");
  }
  REQUIRE(testing::lab("wait") == 0);
}

TEST_CASE(
    "a kill that leaves a partition below min.insync.replicas observes it to the node's return as "
    "below_min_isr",
    "[e2e][drill]") {
  LabOptions options;
  options.pair = true;
  Lab lab(options);
  DeleteTopicAtEnd drop_pair{lab.pair};
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);
  const auto run = runDrill(
      kfaild,
      R"({"fault":"kill","target":{"broker":1},"options":{"allow_unavailable":true,"baseline_s":5}})");
  INFO("run: " << run.dump().substr(0, 8000));
  CHECK_FALSE(run.value("observe_timed_out", false));
  const auto& pair = partitionOf(run["analysis"], lab.pair, 0);
  CHECK(pair["role"] == "below_min_isr");
  // acks=all writes fail while broker 1 is down: the stall ends with an ack after it is back.
  const auto recovered = run["recovered_us"].get<std::int64_t>();
  CHECK(run["window_end_us"].get<std::int64_t>() >= recovered);
  REQUIRE(pair["phases"]["node_back_us"].is_number());
  const auto back_us =
      run["fault_us"].get<std::int64_t>() + pair["phases"]["node_back_us"].get<std::int64_t>();
  CHECK(pair["ack"]["outcome"] == "stall");
  if (pair["ack"]["stall"].is_object())
    CHECK(pair["ack"]["stall"]["end_us"].get<std::int64_t>() >= back_us);
  // The orders-style topic's partitions keep their roles.
  CHECK(partitionOf(run["analysis"], lab.topic, 0)["role"] == "leader");
  REQUIRE(testing::lab("wait") == 0);
}

}  // namespace drill_target_test
