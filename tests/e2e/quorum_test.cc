// Controller drills on the three-controller lab (KFAILD_LAB_CONTROLLERS=3: voters 100, 101, 102;
// the `lab_quorum` fixture): the active controller killed or stopped, a standby voter killed, the
// coordinators' brokers killed, and a compound drill (a partition's leader killed 2 s after the
// active controller).
// The data probe must show no stall the quorum's outage explains (checkDataPlaneQuiet); the
// control-plane probe shows the control plane's stall and the quorum's election, asserted against
// what the lab's own DescribeQuorum (`lab quorum`) says.

#include <algorithm>

#include "tests/e2e/e2e_support.h"

namespace e2e_quorum_test {

using namespace kfaild;
using namespace kfaild::e2e;
using nlohmann::json;

namespace {

json labQuorum() {
  auto quorum = json::parse(testing::labOutput("quorum"), nullptr, false);
  REQUIRE(quorum.is_object());
  return quorum;
}

int labQuorumLeader() {
  for (int i = 0; i < 120; ++i) {
    const auto leader = labQuorum().value("leader", -1);
    if (leader >= 0) return leader;
    std::this_thread::sleep_for(500ms);
  }
  FAIL("the lab's quorum has no leader");
  return -1;
}

struct QuorumKfaild {
  testing::QuorumLabEnv env;
  Lab lab;
  Kfaild kfaild;

  explicit QuorumKfaild(const std::string& name, const std::string& probe_yaml = "")
      : lab(options(probe_yaml)), kfaild(withInventory(lab), name) {
    kfaild.waitSteady(lab.topic);
    // The control probe's watch has seen the quorum's leader.
    for (int i = 0; i < 60; ++i) {
      const auto control = kfaild.get("/api/v1/clusters/lab")["control_plane"];
      if (control.is_object() && control["quorum"].is_object() && control["last_ok_us"].is_number())
        return;
      std::this_thread::sleep_for(500ms);
    }
    FAIL("the control-plane probe saw no quorum leader: "
         << kfaild.get("/api/v1/clusters/lab")["control_plane"].dump());
  }

 private:
  // `probe_yaml`: more keys of the probe (indented by 6), after its topics.
  static LabOptions options(const std::string& probe_yaml) {
    auto o = Lab::options("", false);
    o.cluster_yaml = probe_yaml;
    return o;
  }
  static const Lab& withInventory(const Lab& lab) {
    addLabInventory(lab, {1, 2, 3, 100, 101, 102});
    return lab;
  }
};

json runDrill(Kfaild& kfaild, const std::string& body) {
  return runDrillToDone(kfaild, body)["runs"][0];
}

// The data plane does not need the controller: no probe partition's ack stall is above `limit_s`,
// or it is shorter than the quorum was leaderless (its partition acked again while no controller
// led). A partition that waited for the new quorum leader would stall at least that long. The
// second bound is for a loaded machine: a CI run at load average 37 saw one partition stall 1.29 s
// while the quorum was leaderless for longer.
void checkDataPlaneQuiet(const json& run, double limit_s) {
  const auto& quorum = run["control_plane"]["quorum"];
  const double leaderless_s =
      quorum["leaderless_s"].is_number() ? quorum["leaderless_s"].get<double>() : 0.0;
  for (const auto& p : run["analysis"]["partitions"]) {
    INFO(p["topic"] << "-" << p["partition"] << ": " << p["ack"].dump() << ", quorum leaderless "
                    << leaderless_s << " s");
    CHECK(p["ack"]["outcome"] != "inconclusive");
    if (p["ack"]["stall"].is_object()) {
      CHECK(p["ack"]["stall"]["duration_us"].get<double>() / 1e6 < std::max(limit_s, leaderless_s));
    }
  }
}

}  // namespace

TEST_CASE(
    "on a three-controller lab the active controller killed stalls the control plane, not the data "
    "plane, "
    "and the new quorum leader is reported",
    "[e2e][quorum]") {
  QuorumKfaild q("kfaild");
  const int leader = labQuorumLeader();
  const auto epoch_before = labQuorum()["epoch"].get<int>();
  const auto run = runDrill(
      q.kfaild, R"({"fault":"kill","target":{"controller":true},"options":{"baseline_s":3}})");
  INFO("run: " << run.dump().substr(0, 12000));
  CHECK(run["target"] == leader);
  const auto& control = run["control_plane"];
  CHECK(control["outcome"] == "stall");
  CHECK(control["ended_by"].is_object());
  const auto& quorum = control["quorum"];
  CHECK(quorum["watched"] == true);
  REQUIRE(quorum["new_leader"].is_number());
  const int new_leader = quorum["new_leader"].get<int>();
  CHECK(new_leader != leader);
  CHECK((new_leader == 100 || new_leader == 101 || new_leader == 102));
  CHECK(quorum["epoch_increments"].get<int>() >= 1);
  CHECK(quorum["leaderless_s"].get<double>() > 0);
  // The stall covers the leaderless time: the quorum answered before the control plane did.
  CHECK(control["stall"]["duration_s"].get<double>() + control["resolution_s"].get<double>() >=
        quorum["leaderless_s"].get<double>() -
            quorum["elections"][0]["resolution_s"].get<double>());
  checkDataPlaneQuiet(run, 1.0);
  // The lab's own DescribeQuorum agrees on the new leader (the killed one is back as a follower).
  const auto now = labQuorum();
  CHECK(now["leader"] == new_leader);
  CHECK(now["epoch"].get<int>() > epoch_before);
  WARN("active controller " << leader << " killed: control plane stalled "
                            << control["stall"]["duration_s"] << " s, leaderless "
                            << quorum["leaderless_s"] << " s, new leader " << new_leader
                            << ", elections " << quorum["epoch_increments"]);
  REQUIRE(testing::lab("wait") == 0);
}

TEST_CASE(
    "on a three-controller lab a standby voter killed leaves the control plane answering and the "
    "quorum's "
    "leader in place",
    "[e2e][quorum]") {
  QuorumKfaild q("kfaild");
  const int leader = labQuorumLeader();
  const int standby = leader == 100 ? 101 : 100;
  const auto run =
      runDrill(q.kfaild, R"({"fault":"kill","target":{"broker":)" + std::to_string(standby) +
                             R"(},"options":{"baseline_s":3,"observe_min_s":5}})");
  INFO("run: " << run.dump().substr(0, 12000));
  const auto& control = run["control_plane"];
  CHECK(control["outcome"] == "none");
  CHECK(control["quorum"]["elections"].empty());
  CHECK(control["quorum"]["epoch_increments"] == 0);
  // The quorum never lost its leader, so a partition that waited on the control plane would have
  // waited for a fencing (broker.session.timeout.ms, 9 s in the lab). 3 s tells that apart from
  // the machine's own noise: a CI run with five labs starting beside it (load average 18) saw one
  // partition stall 1.29 s here.
  checkDataPlaneQuiet(run, 3.0);
  CHECK(labQuorum()["leader"] == leader);
  REQUIRE(testing::lab("wait") == 0);
}

TEST_CASE(
    "the broker that coordinates kfaild's group, then its transactional id, killed stalls the "
    "commits and the "
    "transactions until FindCoordinator names another broker, and the run reports the move",
    "[e2e][quorum]") {
  QuorumKfaild q("kfaild", "      coordinators: {transactions: {interval_ms: 500}}\n");
  // The transaction probe has initialised and committed once, and both coordinators are known.
  json coordinators;
  for (int i = 0; i < 120; ++i) {
    coordinators = q.kfaild.get("/api/v1/clusters/lab")["coordinators"];
    if (coordinators["group_coordinator"].is_object() &&
        coordinators["transaction_coordinator"].is_object() &&
        coordinators["transactions"]["last_ok_us"].is_number()) {
      break;
    }
    std::this_thread::sleep_for(500ms);
  }
  INFO("coordinators: " << coordinators.dump());
  REQUIRE(coordinators["transactions"]["last_ok_us"].is_number());
  for (const char* which : {"group", "transaction"}) {
    const auto kind = std::string(which);
    const auto before = q.kfaild.get("/api/v1/clusters/lab")["coordinators"];
    const int coordinator =
        before[kind == "group" ? "group_coordinator" : "transaction_coordinator"]["node"]
            .get<int>();
    REQUIRE(testing::lab("wait") == 0);
    waitFullIsr();
    q.kfaild.waitSteady(q.lab.topic);
    const auto run = runDrill(q.kfaild, R"({"fault":"kill","target":{"coordinator_of":")" + kind +
                                            R"("},"options":{"baseline_s":3}})");
    INFO("run: " << run.dump().substr(0, 12000));
    CHECK(run["target"] == coordinator);
    CHECK_THAT(run["target_resolution"]["how"].get<std::string>(),
               Catch::StartsWith("the coordinator of "));
    const auto& c = run["coordinators"];
    const auto& stream = kind == "group" ? c["commits"] : c["transactions"];
    CHECK(stream["outcome"] == "stall");
    CHECK(stream["ended_by"].is_object());
    // The watch saw the coordinator move off the killed broker.
    bool moved = false;
    const auto seen = before[kind == "group" ? "group_coordinator" : "transaction_coordinator"];
    const auto topic =
        std::string(kind == "group" ? "__consumer_offsets-" : "__transaction_state-");
    REQUIRE(seen["partition"].is_string());
    CHECK_THAT(seen["partition"].get<std::string>(), Catch::StartsWith(topic));
    for (const auto& m : c["moves"]) {
      if (m["type"] != kind || m["from"] != coordinator || m["to"] == coordinator) continue;
      moved = true;
      // The partition that moved is the one the key hashes to.
      CHECK(m["partition"] == seen["partition"]);
    }
    CHECK(moved);
    if (kind == "group") {
      CHECK(c["phases"]["coordinator_moved_s"].is_number());
      CHECK(c["phases"]["first_commit_s"].is_number());
    }
    // FindCoordinator names another broker now.
    const auto after = q.kfaild.get("/api/v1/clusters/lab")["coordinators"];
    CHECK(after[kind == "group" ? "group_coordinator" : "transaction_coordinator"]["node"] !=
          coordinator);
    WARN(kind << " coordinator " << coordinator
              << " killed: " << (kind == "group" ? "commits" : "transactions") << " stalled "
              << (stream["stall"].is_object() ? stream["stall"]["duration_s"].dump() : "-")
              << " s, moved after " << c["phases"]["coordinator_moved_s"]
              << " s, first commit after " << c["phases"]["first_commit_s"] << " s");
  }
  REQUIRE(testing::lab("wait") == 0);
}

TEST_CASE(
    "a partition's leader killed 2 s after the active controller stalls it until the new "
    "controller fences "
    "it, and both nodes come back, the controller first",
    "[e2e][quorum]") {
  QuorumKfaild q("kfaild");
  const int controller = labQuorumLeader();
  const auto run =
      runDrill(q.kfaild, R"({"fault":"kill","target":{"controller":true},"options":{"baseline_s":3},
      "then":{"fault":"kill","target":{"leader_of":{"topic":")" +
                             q.lab.topic + R"(","partition":0}},"after_s":2}})");
  INFO("run: " << run.dump().substr(0, 16000));
  CHECK(run["target"] == controller);
  const auto& second = run["second_fault"];
  REQUIRE(second["state"] == "injected");
  const int broker = second["target"].get<int>();
  CHECK((broker >= 1 && broker <= 3));
  const auto apart_s = (second["fault_us"].get<double>() - run["fault_us"].get<double>()) / 1e6;
  CHECK(apart_s >= 2.0);
  CHECK(apart_s < 3.0);
  // The control plane stalled from the first fault, and a new quorum leader was elected.
  const auto& control = run["control_plane"];
  CHECK(control["outcome"] == "stall");
  REQUIRE(control["quorum"]["new_leader"].is_number());
  CHECK(control["quorum"]["new_leader"] != controller);
  // The run's analysis is the second fault's: the partitions the broker led stalled, each stall
  // ended by an ack, longer than the 2 s between the faults would explain by itself.
  const auto& analysis = run["analysis"];
  CHECK(analysis["target"] == broker);
  int led = 0;
  double worst_s = 0;
  for (const auto& p : analysis["partitions"]) {
    INFO(p["topic"] << "-" << p["partition"] << " " << p["role"] << ": " << p["ack"].dump());
    if (p["role"] != "leader") continue;
    ++led;
    CHECK(p["ack"]["outcome"] == "stall");
    if (p["ack"]["stall"].is_object())
      worst_s = std::max(worst_s, p["ack"]["stall"]["duration_us"].get<double>() / 1e6);
  }
  CHECK(led >= 1);
  CHECK(worst_s > 1.0);
  // The first fault alone, up to the second: no data stall of note.
  REQUIRE(second["first_analysis"].is_object());
  CHECK(second["first_analysis"]["target"] == controller);
  // Both back, the controller first.
  CHECK(run["recovery_order"] == json::array({controller, broker}));
  CHECK(second["recovered_us"].get<double>() >= run["recovered_us"].get<double>());
  WARN("active controller " << controller << " killed, then broker " << broker << " (leader of p0) "
                            << apart_s << " s later: its partitions' worst ack stall " << worst_s
                            << " s, control plane " << control["stall"]["duration_s"]
                            << " s, leaderless " << control["quorum"]["leaderless_s"] << " s");
  REQUIRE(testing::lab("wait") == 0);
}

}  // namespace e2e_quorum_test
