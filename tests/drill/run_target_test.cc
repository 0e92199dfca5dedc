// Whom a drill's fault lands on, on a simulated cluster and a manual clock: a leader_of target
// resolved after the preflight election moved leadership, a controller target resolved from the
// KRaft quorum's leader, and a target that moves between preflight and the fault refused.

#include <algorithm>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "tests/drill/engine_harness.h"

namespace run_target_test {

using namespace kfaild;
using kfaild::testing::EngineHarness;
using kfaild::testing::FakeCluster;

TEST_CASE(
    "a leader_of drill kills the broker that leads the partition after the preflight election",
    "[unit][drill]") {
  EngineHarness h;
  // As after a restart of the cluster: broker 1 leads everything; probe-1's preferred leader is 2.
  h.cluster.moveLeadershipTo(1);
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"leader_of":{"topic":"probe","partition":1}}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  REQUIRE(run.contains("preflight_election"));
  CHECK(run["target"] == 2);
  CHECK(run["target_resolution"]["preflight"] == 1);
  CHECK(run["target_resolution"]["after_election"] == 2);
  CHECK(run["target_resolution"]["at_fault"] == 2);
  CHECK(run["target_resolution"]["how"] == "the leader of probe-1 in the metadata");
  CHECK(h.injectors[2]->count("kill") == 1);
  CHECK(h.injectors[1]->count("kill") == 0);
  bool seen = false;
  for (const auto& p : run["leadership_at_fault"]["partitions"]) {
    if (p["partition"] == 1) {
      CHECK(p["leader"] == 2);
      seen = true;
    }
  }
  CHECK(seen);
  for (const auto& p : run["analysis"]["partitions"]) {
    if (p["partition"] == 1) CHECK(p["role"] == "leader");
  }
}

TEST_CASE(
    "a leader_of target whose leader moves between preflight and the fault is refused without "
    "touching a node",
    "[unit][drill]") {
  EngineHarness h;
  h.drills->on_state = [&](const storage::DrillRecord& d) {
    if (d.state == "baseline") h.cluster.moveLeader(1, 3);
  };
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"leader_of":{"topic":"probe","partition":1}}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK_THAT(d.reason,
             Catch::StartsWith("refused at the fault: the target moved from node 2 to node 3") &&
                 Catch::EndsWith("the node was not touched"));
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["target_resolution"]["preflight"] == 2);
  CHECK(run["target_resolution"]["at_fault"] == 3);
  for (std::int32_t node : {1, 2, 3}) CHECK(h.injectors[node]->count("kill") == 0);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE("a controller target is the KRaft quorum's leader, not the inventory's first controller",
          "[unit][drill]") {
  EngineHarness h({101, 102});
  h.cluster.quorum_voters = {100, 101, 102};
  h.cluster.setQuorumLeader(101);
  h.runner->start();
  auto id =
      h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"controller":true}})"));
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["target"] == 101);
  CHECK(run["target_resolution"]["preflight"] == 101);
  CHECK(run["target_resolution"]["at_fault"] == 101);
  CHECK_THAT(run["target_resolution"]["how"].get<std::string>(),
             Catch::StartsWith("the KRaft quorum's leader (DescribeQuorum, epoch "));
  CHECK(h.injectors[101]->count("kill") == 1);
  CHECK(h.injectors[100]->count("kill") == 0);
  CHECK(h.openRecoveries().empty());
}

TEST_CASE("a controller target whose quorum leadership moves before the fault is refused",
          "[unit][drill]") {
  EngineHarness h({101, 102});
  h.cluster.quorum_voters = {100, 101, 102};
  h.cluster.setQuorumLeader(101);
  h.drills->on_state = [&](const storage::DrillRecord& d) {
    if (d.state == "baseline") h.cluster.setQuorumLeader(102);
  };
  h.runner->start();
  auto id =
      h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"controller":true}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK_THAT(d.reason,
             Catch::StartsWith("refused at the fault: the target moved from node 101 to node 102"));
  for (std::int32_t node : {100, 101, 102}) CHECK(h.injectors[node]->count("kill") == 0);
}

TEST_CASE("a controller target is refused while the KRaft quorum cannot be described",
          "[unit][drill]") {
  EngineHarness h;
  h.cluster.quorum_answers = false;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"controller":true},"options":{"allow_quorum_loss":true}})"));
  REQUIRE_FALSE(id);
  CHECK_THAT(id.error().message, Catch::StartsWith("the active controller cannot be told"));
}

TEST_CASE(
    "a drill on the active controller observes until the control plane answers again, and reports "
    "it",
    "[unit][drill]") {
  EngineHarness h({101, 102});
  h.cluster.quorum_voters = {100, 101, 102};
  h.cluster.setQuorumLeader(101);
  h.cluster.control_probe = true;
  h.cluster.control_failover_us = 20 * FakeCluster::kSecond;  // well past observe_min_s (5 s)
  h.runner->start();
  auto id =
      h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"controller":true}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["target"] == 101);
  const auto observed =
      run["observe_end_us"].get<std::int64_t>() - run["fault_us"].get<std::int64_t>();
  CHECK(observed >= 20 * FakeCluster::kSecond);
  CHECK(observed < 21 * FakeCluster::kSecond);
  // The run reports its control plane (the fake stores no control samples: no figure, and why).
  REQUIRE(run.contains("control_plane"));
  CHECK(run["control_plane"]["outcome"] == "inconclusive");
  CHECK(run["control_plane"]["quorum"]["watched"] == false);
}

TEST_CASE(
    "a kill of the only controller does not wait for the control plane it took down, and measures "
    "it to its "
    "first answer after the controller is back",
    "[unit][drill]") {
  EngineHarness h;
  h.cluster.control_probe = true;
  h.cluster.control_failover_us = FakeCluster::kSecond;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(
      R"({"fault":"kill","target":{"controller":true},"options":{"allow_quorum_loss":true,"observe_timeout_s":120}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["target"] == 100);
  const auto fault_us = run["fault_us"].get<std::int64_t>();
  // Brought back after the observation's minimum, not after observe_timeout_s of no controller.
  CHECK(run["observe_end_us"].get<std::int64_t>() - fault_us < 15 * FakeCluster::kSecond);
  const auto recovered_us = run["recovered_us"].get<std::int64_t>();
  CHECK(recovered_us - fault_us < 30 * FakeCluster::kSecond);
  // The window reaches the control plane's first answer after the controller is back.
  CHECK(run["window_end_us"].get<std::int64_t>() > recovered_us);
  CHECK(run["window_end_us"].get<std::int64_t>() - recovered_us < 5 * FakeCluster::kSecond);
  CHECK(h.cluster.available(100));
}

TEST_CASE(
    "a kill of a controller that leaves the quorum a majority still waits for the control plane",
    "[unit][drill]") {
  EngineHarness h({101, 102});
  h.cluster.quorum_voters = {100, 101, 102};
  h.cluster.setQuorumLeader(100);
  h.cluster.control_probe = true;
  h.cluster.control_failover_us = 20 * FakeCluster::kSecond;
  h.runner->start();
  auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":100}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["observe_end_us"].get<std::int64_t>() - run["fault_us"].get<std::int64_t>() >=
        20 * FakeCluster::kSecond);
}

TEST_CASE("a drill on a broker does not wait for the control plane", "[unit][drill]") {
  EngineHarness h;
  h.cluster.control_probe = true;
  h.cluster.control_failover_us = 60 * FakeCluster::kSecond;
  h.runner->start();
  // The controller 100 leads; killing broker 1 leaves it answering.
  auto id = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":1}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["observe_end_us"].get<std::int64_t>() - run["fault_us"].get<std::int64_t>() <
        15 * FakeCluster::kSecond);
}

TEST_CASE(
    "a coordinator_of target is the broker FindCoordinator names, resolved again at the fault",
    "[unit][drill]") {
  EngineHarness h;
  h.cluster.coordinator = 3;
  h.runner->start();
  auto id = h.runner->submit(
      EngineHarness::spec(R"({"fault":"kill","target":{"coordinator_of":{"group":"billing"}}})"));
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["target"] == 3);
  CHECK(run["target_resolution"]["how"] == "the coordinator of group billing (FindCoordinator)");
  CHECK(run["target_resolution"]["at_fault"] == 3);
  CHECK(h.injectors[3]->count("kill") == 1);
  CHECK(h.admin.find_coordinator_calls >= 3);  // submission, preflight, fault
}

TEST_CASE(
    "a coordinator_of target whose coordinator moves before the fault is refused, and one "
    "FindCoordinator "
    "cannot tell is refused at submission",
    "[unit][drill]") {
  EngineHarness h;
  h.cluster.coordinator = 3;
  h.drills->on_state = [&](const storage::DrillRecord& d) {
    if (d.state == "baseline") h.cluster.coordinator = 1;
  };
  h.runner->start();
  auto id = h.runner->submit(
      EngineHarness::spec(R"({"fault":"kill","target":{"coordinator_of":"transaction"}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  CHECK(d.state == "failed");
  CHECK_THAT(d.reason,
             Catch::StartsWith("refused at the fault: the target moved from node 3 to node 1"));
  for (std::int32_t node : {1, 2, 3}) CHECK(h.injectors[node]->count("kill") == 0);

  h.cluster.coordinator = -1;
  auto refused = h.runner->submit(
      EngineHarness::spec(R"({"fault":"kill","target":{"coordinator_of":"group"}})"));
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::StartsWith("the coordinator of group kfaild-probe-"));
  CHECK_THAT(refused.error().message, Catch::Contains("COORDINATOR_NOT_AVAILABLE"));
}

TEST_CASE("a submission asks FindCoordinator on the engine's thread, never on the submitting one",
          "[unit][drill]") {
  // FindCoordinator is an admin call that a slow or hostile broker can hold (a SCRAM exchange,
  // a timeout per broker): an HTTP thread holding the submission lock must not make it.
  EngineHarness h;
  h.cluster.coordinator = 3;
  h.runner->start();
  const auto submitter = std::this_thread::get_id();
  const auto callsOn = [&](std::thread::id thread) {
    std::lock_guard lock(h.admin.mutex_);
    return std::count(h.admin.find_coordinator_threads.begin(),
                      h.admin.find_coordinator_threads.end(), thread);
  };
  auto id = h.runner->submit(
      EngineHarness::spec(R"({"fault":"kill","target":{"coordinator_of":{"group":"billing"}}})"));
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id);
  CHECK(h.admin.find_coordinator_calls >= 1);  // asked before the drill was accepted
  CHECK(callsOn(submitter) == 0);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  CHECK(EngineHarness::onlyRun(d)["target"] == 3);

  // A compound drill's second target too; and the refusal of one FindCoordinator cannot tell
  // still comes back to the submitter.
  auto compound = h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"broker":1},
      "then":{"fault":"kill","target":{"coordinator_of":"transaction"},"after_s":1}})"));
  INFO((compound ? std::string() : compound.error().message));
  REQUIRE(compound);
  // Broker 3 with broker 1 down leaves partitions below min.insync.replicas: the run refuses it.
  CHECK(EngineHarness::onlyRun(h.runToEnd(*compound))["second_fault"]["target"] == 3);
  h.cluster.coordinator = -1;
  auto refused = h.runner->submit(
      EngineHarness::spec(R"({"fault":"kill","target":{"coordinator_of":"group"}})"));
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("COORDINATOR_NOT_AVAILABLE"));
  CHECK(callsOn(submitter) == 0);
}

TEST_CASE(
    "a kill of the group's coordinator is observed until the coordinator watch has answered after "
    "the commits "
    "resumed, so the move it sees lies in the window",
    "[unit][drill]") {
  EngineHarness h;
  h.cluster.coordinator_probe = true;
  h.cluster.coordinator = 3;
  // The watch answers every 2 s: the commits resume (the coordinator moves at the failover, 6 s
  // after the kill) up to 2 s before it names the new coordinator.
  h.cluster.watch_interval_us = 2 * FakeCluster::kSecond;
  h.runner->start();
  auto id =
      h.runner->submit(EngineHarness::spec(R"({"fault":"kill","target":{"coordinator_of":"group"},
      "options":{"observe_min_s":1}})"));
  REQUIRE(id);
  const auto d = h.runToEnd(*id);
  INFO(d.reason);
  REQUIRE(d.state == "done");
  const auto run = EngineHarness::onlyRun(d);
  CHECK(run["target"] == 3);
  const auto seen = h.probe.status().coordinators->group_coordinator;
  REQUIRE(seen);
  CHECK(seen->node != 3);
  const auto fault_us = run["fault_us"].get<std::int64_t>();
  const auto observe_end_us = run["observe_end_us"].get<std::int64_t>();
  INFO("the watch named node " << seen->node << " from " << (seen->since_us - fault_us) / 1000
                               << " ms after the kill; the observation ended at "
                               << (observe_end_us - fault_us) / 1000 << " ms");
  CHECK(seen->since_us > fault_us + 6 * FakeCluster::kSecond);
  CHECK(seen->since_us <= observe_end_us);
}

}  // namespace run_target_test
