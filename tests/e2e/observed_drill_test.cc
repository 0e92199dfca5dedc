// Observed drills on the lab: the test injects the faults itself (lab/lab kill, stop, start), as a
// chaos tool or an operator would, and kfaild only watches. A kill is found as a fencing and
// measured as a kfaild kill drill is (tests/e2e/api_drill_test.cc's bounds), a graceful stop as a
// controlled shutdown, and a restart of every broker one after another as one step per broker.

#include "tests/e2e/e2e_support.h"
#include "tests/support/lab.h"

namespace e2e_observed_drill_test {

using namespace kfaild;
using namespace kfaild::e2e;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// Waits until the drill waits for a fault.
void awaitObserving(Kfaild& kfaild, std::int64_t id) {
  const auto drill =
      kfaild.waitForState(id, [](const std::string& s) { return s == "observe"; }, 120s);
  REQUIRE(drill["state"] == "observe");
}

// Waits until the metadata shows `broker` gone (the cluster's own view of the fault).
void awaitGone(Kfaild& kfaild, int broker) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    bool present = false;
    for (const auto& b : kfaild.get("/api/v1/clusters/lab")["brokers"])
      present = present || b["id"] == broker;
    if (!present) return;
    std::this_thread::sleep_for(200ms);
  }
  FAIL("broker " << broker << " never left the metadata");
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
  kfaild.waitSteady(lab.topic);
  const std::string request =
      R"({"fault":"observed","options":{"baseline_s":3,"window_s":300,"quiet_s":5}})";

  // The kill: nobody tells kfaild; the fencing does.
  auto id = startDrill(kfaild, request);
  awaitObserving(kfaild, id);
  REQUIRE(testing::lab("kill 1") == 0);
  awaitGone(kfaild, 1);
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
  CHECK(ackStall(p0) + 100'000 >=
        std::max(ackStall(partitionOf(analysis, lab.topic, 1)),
                 ackStall(partitionOf(analysis, lab.topic, 2))));
  CHECK(kill["verdict"] == "pass");
  waitFullIsr();
  kfaild.waitSteady(lab.topic);

  // The graceful stop, marked as a chaos tool would, a moment before it.
  id = startDrill(kfaild, request);
  awaitObserving(kfaild, id);
  const auto marked = kfaild.post("/api/v1/drills/" + std::to_string(id) + "/mark",
                                  R"({"broker":1,"by":"e2e test"})");
  REQUIRE(marked.status == 200);
  REQUIRE(testing::lab("stop 1") == 0);
  REQUIRE(testing::lab("start 1") == 0);
  const auto stop = awaitEnd(kfaild, id);
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
    WARN("observed stop: " << lab.topic << "-" << p << " ack stall " << ackStall(part) / 1e6
                           << " s");
  }
  waitFullIsr();
  kfaild.waitSteady(lab.topic);

  // An operator's rolling restart: every broker stopped and started, one after another, each
  // back in every ISR before the next.
  id = startDrill(kfaild, request);
  awaitObserving(kfaild, id);
  for (int broker : {1, 2, 3}) {
    REQUIRE(testing::lab("stop " + std::to_string(broker)) == 0);
    REQUIRE(testing::lab("start " + std::to_string(broker)) == 0);
    waitFullIsr();
  }
  const auto rolling = awaitEnd(kfaild, id);
  REQUIRE(rolling["runs"].size() == 3);
  for (int step = 0; step < 3; ++step) {
    const auto& r = rolling["runs"][step];
    INFO("step " << step + 1);
    CHECK(r["step"] == step + 1);
    CHECK(r["target"] == step + 1);
    CHECK(r["observed_fault"]["departure"]["kind"] == "controlled_shutdown");
    CHECK(r["analysis"]["partitions"].size() >= 3);
  }
  REQUIRE(rolling["rolling_restart"].is_object());
  CHECK(rolling["rolling_restart"]["plan"] == json{1, 2, 3});
  CHECK(rolling["rolling_restart"]["by"] == "observed");
  CHECK(rolling["rolling_restart"]["steps"].size() == 3);
  WARN("observed rolling restart: " << rolling["rolling_restart"].dump());
}

}  // namespace e2e_observed_drill_test
