// Observed drills on the lab: the test injects the faults itself (lab/lab kill, stop, start), as a
// chaos tool or an operator would, and kfaild only watches. A kill is found as a fencing and
// measured as a kfaild kill drill is (tests/e2e/api_drill_test.cc's bounds), a graceful stop as a
// controlled shutdown, and a restart of every broker one after another as one step per broker.

#include <set>

#include "tests/e2e/e2e_support.h"
#include "tests/support/lab.h"

namespace e2e_observed_drill_test {

using namespace kfaild;
using namespace kfaild::e2e;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kLab = std::string(KFAILD_SOURCE_DIR) + "/lab/lab";

// Waits until the drill waits for a fault.
void awaitObserving(Kfaild& kfaild, std::int64_t id) {
  const auto drill =
      kfaild.waitForState(id, [](const std::string& s) { return s == "observe"; }, 120s);
  REQUIRE(drill["state"] == "observe");
}

// Waits until the drill has seen a fault (the metadata showed the broker gone: for a kill, its
// fencing a session timeout later).
void awaitFaultSeen(Kfaild& kfaild, std::int64_t id) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto drill = kfaild.get("/api/v1/drills/" + std::to_string(id));
    if (drill["reason"].is_string() &&
        drill["reason"].get<std::string>().find("fault(s) seen") != std::string::npos)
      return;
    std::this_thread::sleep_for(200ms);
  }
  FAIL("drill " << id << " never saw the fault");
}

// Leadership back on the preferred replicas, as the test's "operator" would have it before a
// fault (kfaild elects nothing in an observed drill): broker 1 leads partition 0 again.
void electPreferred(const Lab& lab) {
  kafka::ClientOptions options;
  options.bootstrap = testing::labBootstrap();
  options.client_id = "kfaild-e2e-elect";
  auto admin =
      kafka::createClient(RD_KAFKA_PRODUCER, options, {{"allow.auto.create.topics", "false"}});
  REQUIRE(admin);
  std::vector<kafka::TopicPartition> partitions;
  for (int p = 0; p < 3; ++p) partitions.push_back({lab.topic, p});
  REQUIRE(kafka::electPreferredLeaders(admin->get(), partitions, 10'000));
}

json awaitEnd(Kfaild& kfaild, std::int64_t id) {
  auto drill = kfaild.waitForState(id, finished, 400s);
  INFO("drill: " << drill.dump().substr(0, 12000) << "\nkfaild log:\n"
                 << tail(readAll(kfaild.log)));
  REQUIRE(drill["state"] == "done");
  REQUIRE(drill["observed"].is_object());
  CHECK(drill["observed"]["whole_again"] == true);
  return drill;
}

}  // namespace

TEST_CASE(
    "an observed drill measures faults the test injects itself: a kill as a fenced departure in "
    "a kill drill's ranges, a graceful stop as a controlled shutdown, a rolling restart as one "
    "step per broker",
    "[e2e][api][observed]") {
  Lab lab;
  Kfaild kfaild(lab, "kfaild");
  electPreferred(lab);
  kfaild.waitSteady(lab.topic);
  const std::string request =
      R"({"fault":"observed","options":{"baseline_s":3,"window_s":300,"quiet_s":5}})";

  // The kill: nobody tells kfaild; the fencing does.
  auto id = startDrill(kfaild, request);
  awaitObserving(kfaild, id);
  REQUIRE(testing::lab("kill 1") == 0);
  awaitFaultSeen(kfaild, id);
  REQUIRE(testing::lab("start 1") == 0);
  const auto kill = awaitEnd(kfaild, id);
  REQUIRE(kill["runs"].size() == 1);
  const auto& run = kill["runs"][0];
  const auto& fault = run["observed_fault"];
  CHECK(fault["departure"]["kind"] == "fenced");
  CHECK(fault["judged_as"] == "kill");
  CHECK(fault["broker"] == 1);
  CHECK(fault["mark"].is_null());
  const auto& analysis = run["analysis"];
  CHECK(analysis["departure"] == "fenced");
  const auto fenced_at = analysis["departure_at_us"].get<std::int64_t>();
  const auto& p0 = partitionOf(analysis, lab.topic, 0);
  CHECK(p0["role"] == "leader");
  CHECK(partitionOf(analysis, lab.topic, 1)["role"] == "follower");
  CHECK(partitionOf(analysis, lab.topic, 2)["role"] == "follower");
  for (int p = 0; p < 3; ++p) {
    const auto& part = partitionOf(analysis, lab.topic, p);
    INFO("partition " << p << ": " << part.dump());
    // As a kfaild kill drill on this lab: stalled until the fencing at least (the detection,
    // session timeout minus up to a heartbeat), and not much longer.
    CHECK(ackStallEnd(part) >= fenced_at);
    CHECK(ackStall(part) >= kSessionTimeoutUs - kHeartbeatUs - 1'000'000);
    CHECK(ackStall(part) <= kSessionTimeoutUs + 5'000'000);
    CHECK(part["lost"] == 0);
    WARN("observed kill: " << lab.topic << "-" << p << " " << part["role"].get<std::string>()
                           << " ack stall " << ackStall(part) / 1e6 << " s");
  }
  CHECK(ackStall(p0) + 100'000 >= std::max(ackStall(partitionOf(analysis, lab.topic, 1)),
                                           ackStall(partitionOf(analysis, lab.topic, 2))));
  CHECK(kill["verdict"] == "pass");
  waitFullIsr();
  electPreferred(lab);
  kfaild.waitSteady(lab.topic);

  // The graceful stop, marked as a chaos tool would, a moment before it.
  // kfailctl runs the stop and the start as the fault, marked at its start, and exits with the
  // verdict's status.
  const auto [code, out] =
      kfailctl(kfaild, lab,
               "observe lab --for 5m --baseline 3 --quiet 5 --broker 1 --by 'e2e test' --json "
               "-- sh -c '" +
                   kLab + " stop 1 && " + kLab + " start 1'");
  INFO("kfailctl: " << out.substr(0, 3000));
  CHECK(code == 0);
  const auto stop = json::parse(out);
  REQUIRE(stop["state"] == "done");
  CHECK(stop["observed"]["whole_again"] == true);
  REQUIRE(stop["runs"].size() == 1);
  const auto& stopped = stop["runs"][0];
  CHECK(stopped["observed_fault"]["departure"]["kind"] == "controlled_shutdown");
  CHECK(stopped["observed_fault"]["judged_as"] == "stop");
  CHECK(stopped["observed_fault"]["time_source"] == "mark");
  CHECK(stopped["observed_fault"]["mark"]["by"] == "e2e test");
  CHECK(stopped["analysis"]["departure"] == "controlled_shutdown");
  for (int p = 0; p < 3; ++p) {
    const auto& part = partitionOf(stopped["analysis"], lab.topic, p);
    INFO("partition " << p << ": " << part.dump());
    CHECK(ackStall(part) < kGracefulStallLimitUs);
    CHECK(part["lost"] == 0);
    WARN("observed stop: " << lab.topic << "-" << p << " ack " << part["ack"]["outcome"]
                           << ", longest gap "
                           << part["ack"]["longest_gap"]["duration_us"].get<double>() / 1e6
                           << " s");
  }
  waitFullIsr();
  electPreferred(lab);
  kfaild.waitSteady(lab.topic);

  // An operator's rolling restart: every broker stopped and started, one after another, each
  // back in every ISR before the next.
  // quiet_s above the pause between two steps, so the drill waits for the next.
  id = startDrill(kfaild,
                  R"({"fault":"observed","options":{"baseline_s":3,"window_s":300,"quiet_s":20}})");
  awaitObserving(kfaild, id);
  for (int broker : {1, 2, 3}) {
    REQUIRE(testing::lab("stop " + std::to_string(broker)) == 0);
    REQUIRE(testing::lab("start " + std::to_string(broker)) == 0);
    waitFullIsr();
    electPreferred(lab);
  }
  const auto rolling = awaitEnd(kfaild, id);
  REQUIRE(rolling["runs"].size() == 3);
  // A stall is one step's: the next step's observation starts where the last one's ended.
  std::set<std::pair<std::int64_t, std::int64_t>> stalls;
  for (int step = 0; step < 3; ++step) {
    for (const auto& part : rolling["runs"][step]["analysis"]["partitions"]) {
      const auto& stall = part["ack"]["stall"];
      if (!stall.is_object()) continue;
      INFO("step " << step + 1 << " " << part.dump());
      CHECK(
          stalls.emplace(stall["start_us"].get<std::int64_t>(), stall["end_us"].get<std::int64_t>())
              .second);
    }
  }
  for (int step = 0; step < 3; ++step) {
    const auto& r = rolling["runs"][step];
    INFO("step " << step + 1);
    CHECK(r["step"] == step + 1);
    CHECK(r["target"] == step + 1);
    CHECK(r["observed_fault"]["departure"]["kind"] == "controlled_shutdown");
    CHECK(r["analysis"]["partitions"].size() >= 3);
    for (int p = 0; p < 3; ++p) {
      const auto& part = partitionOf(r["analysis"], lab.topic, p);
      // Each step's stall is its own: it ends after the step's fault.
      if (part["receive"]["stall"].is_object()) {
        CHECK(part["receive"]["stall"]["end_us"].get<std::int64_t>() >=
              r["fault_us"].get<std::int64_t>());
      }
      WARN("observed rolling step "
           << step + 1 << ": " << lab.topic << "-" << p << " " << part["role"].get<std::string>()
           << " ack " << part["ack"]["outcome"] << " " << part["ack"]["longest_gap"].dump()
           << ", receive " << part["receive"]["outcome"] << " "
           << part["receive"]["longest_gap"].dump() << ", fault_us " << r["fault_us"]);
    }
  }
  REQUIRE(rolling["rolling_restart"].is_object());
  CHECK(rolling["rolling_restart"]["plan"] == json{1, 2, 3});
  CHECK(rolling["rolling_restart"]["by"] == "observed");
  CHECK(rolling["rolling_restart"]["steps"].size() == 3);
  WARN("observed rolling restart: " << rolling["rolling_restart"].dump());
}

}  // namespace e2e_observed_drill_test
