// The command injector on the lab: broker 1 reached only through the lab's own commands (`lab
// kill|stop|start {id}`, as an operator would name kubectl or systemctl), drilled by kfaild as a
// process. The lab runs Kafka's defaults (broker.session.timeout.ms 9000,
// broker.heartbeat.interval.ms 2000): detection in [9 − 2 − 1, 9 + 1.5] s, as the local
// injector's drills (tests/e2e/api_drill_test.cc).

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/e2e/e2e_support.h"
#include "tests/fault/lab_broker.h"
#include "tests/support/paths.h"

namespace e2e_command_injector_test {

using namespace kfaild;
using namespace kfaild::e2e;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kLab = std::string(KFAILD_SOURCE_DIR) + "/lab/lab";

LabOptions withoutInventory() {
  LabOptions options;
  options.inventory = false;
  return options;
}

// Broker 1 alone as the lab's inventory, reached through commands: `start_command` is the YAML
// of `start` ("[]" for the platform's).
void addCommandNode(const Lab& lab, const std::string& start_command) {
  const auto node = testing::labNode(1);
  REQUIRE(node);
  const auto logs = std::filesystem::path(node->pid_file).parent_path() / "logs";
  std::ofstream(lab.config, std::ios::app) << "    inventory:\n"
                                           << "      - id: 1\n"
                                           << "        command:\n"
                                           << "          kill: [" << kLab << ", kill, \"{id}\"]\n"
                                           << "          stop: [" << kLab << ", stop, \"{id}\"]\n"
                                           << "          start: " << start_command << "\n"
                                           << "          timeout_s: 120\n"
                                           << "          log_dir: " << logs.string() << "\n";
}

json eventsOf(Kfaild& kfaild, const std::string& source, const std::string& kind) {
  json events;
  for (int i = 0; i < 300; ++i) {
    events = kfaild.get("/api/v1/clusters/lab/events?source=" + source + "&kind=" + kind);
    if (events["count"] != 0) break;
    std::this_thread::sleep_for(200ms);
  }
  return events;
}

bool broker1Alive() {
  return labAlive()[1];
}

// Podman's service and container rootfs on this machine (scripts/drill-env/podman-up, as root).
void podmanUp() {
  REQUIRE(testing::shellCommand(std::string(KFAILD_SOURCE_DIR) +
                                "/scripts/drill-env/podman-up >/dev/null") == 0);
}

// Broker 1 as the Podman container `container`, reached through the podman CLI alone.
void addPodmanNode(const Lab& lab, const std::string& container) {
  const auto podman = "[podman, ";
  std::ofstream(lab.config, std::ios::app)
      << "    inventory:\n"
      << "      - id: 1\n"
      << "        command:\n"
      << "          kill: " << podman << "kill, " << container << "]\n"
      << "          stop: " << podman << "stop, -t, \"30\", " << container << "]\n"
      << "          start: " << podman << "start, " << container << "]\n"
      << "          pause: " << podman << "pause, " << container << "]\n"
      << "          resume: " << podman << "unpause, " << container << "]\n"
      << "          alive: " << podman << "inspect, -f, \"{{.State.Status}}\", " << container
      << "]\n"
      << "          alive_output: running\n"
      << "          timeout_s: 120\n"
      << "          log_dir: " << testing::labLogDir(1) << "\n";
}

// The figures of one drill's analysis, for the test's output.
std::string figures(const json& analysis, const std::string& topic) {
  std::string out =
      analysis.value("fault_time_source", std::string()) + " ± " +
      std::to_string(analysis["fault_time_uncertainty_us"].get<std::int64_t>() / 1000) +
      " ms, departure " + analysis["departure"].dump() + ", ack stalls";
  for (int p = 0; p < 3; ++p)
    out += " " + std::to_string(ackStall(partitionOf(analysis, topic, p)) / 1000) + " ms";
  return out;
}

}  // namespace

TEST_CASE(
    "a kill and a stop of broker 1 through the lab's own commands show the article's structure, "
    "the kill's fault time bracketed by its command and the stop's narrowed to Kafka's SIGTERM "
    "line",
    "[e2e][command]") {
  const Lab lab(withoutInventory());
  addCommandNode(lab, "[" + kLab + ", start, \"{id}\"]");
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  const auto kill = runDrillToDone(
      kfaild, R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2}})");
  const auto& analysis = kill["runs"][0]["analysis"];
  INFO("analysis: " << analysis.dump().substr(0, 6000));
  CHECK(analysis["fault_time_source"] == "command:bracket");
  // `lab kill` is a Python start-up and a kill(2): well under a second on its own, 2.28 s (± 1.14)
  // in a full test run beside three labs' drills (6 December).
  const auto uncertainty = analysis["fault_time_uncertainty_us"].get<std::int64_t>();
  CHECK(uncertainty > 0);
  CHECK(uncertainty < 2'500'000);
  REQUIRE(analysis["departure"] == "fenced");
  const auto detection =
      analysis["departure_at_us"].get<std::int64_t>() - analysis["fault_us"].get<std::int64_t>();
  CHECK(detection >= kSessionTimeoutUs - kHeartbeatUs - 1'000'000 - uncertainty);
  CHECK(detection <= kSessionTimeoutUs + 1'500'000 + uncertainty);
  json stalls = json::object();
  for (int p = 0; p < 3; ++p) {
    const auto& part = partitionOf(analysis, lab.topic, p);
    INFO("partition " << p);
    CHECK(part["role"] == (p == 0 ? "leader" : "follower"));
    // The fence's time is the controller's log line, to its millisecond, written as the fence
    // commits: a follower's leader may apply the ISR change and ack a moment before the line's
    // stamp, never a metadata interval (100 ms) before.
    CHECK(ackStallEnd(part) >= analysis["departure_at_us"].get<std::int64_t>() - 100'000);
    CHECK(part["lost"] == 0);
    stalls[std::to_string(p)] = ackStall(part) / 1e6;
  }
  CHECK(kill["verdict"] == "pass");
  const auto started = eventsOf(kfaild, "injector", "started");
  REQUIRE(started["count"] == 1);
  CHECK(started["items"][0]["detail"]["detail"].get<std::string>().find("ran ") == 0);
  std::printf("command kill: fault time ± %.3f s, detection %.3f s, ack stalls %s\n",
              uncertainty / 1e6, detection / 1e6, stalls.dump().c_str());

  kfaild.waitSteady(lab.topic);
  const auto stop = runDrillToDone(kfaild, R"({"fault":"stop","target":{"broker":1}})");
  const auto& stopped = stop["runs"][0]["analysis"];
  INFO("analysis: " << stopped.dump().substr(0, 6000));
  CHECK(stopped["fault_time_source"] == "command:log");
  CHECK(stopped["fault_time_uncertainty_us"] == 1'000);
  CHECK(stopped["departure"] == "controlled_shutdown");
  stalls = json::object();
  for (int p = 0; p < 3; ++p) {
    const auto& part = partitionOf(stopped, lab.topic, p);
    INFO("partition " << p);
    CHECK(part["phases"]["detection_us"].is_null());
    CHECK(ackStall(part) < kGracefulStallLimitUs);
    CHECK(part["lost"] == 0);
    stalls[std::to_string(p)] = ackStall(part) / 1e6;
  }
  CHECK(stop["verdict"] == "pass");
  std::printf("command stop: ack stalls %s\n", stalls.dump().c_str());

  // No pause and resume commands: a pause is refused at submission, nothing run.
  const auto pause = postRefused(kfaild, R"({"fault":"pause","target":{"broker":1}})");
  INFO(pause.status << " " << pause.body);
  CHECK(pause.status == 409);
  CHECK(pause.body.find("no pause and resume") != std::string::npos);
}

TEST_CASE(
    "a command node whose start is empty is brought back by the platform, here the test, and the "
    "drill waits for it to register and rejoin every ISR",
    "[e2e][command]") {
  const Lab lab(withoutInventory());
  addCommandNode(lab, "[]");
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  const auto id = startDrill(
      kfaild,
      R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2,"recover_timeout_s":120}})");
  kfaild.waitForState(id, [](const std::string& s) { return s == "recover" || finished(s); }, 300s);
  // The platform takes its time: kfaild must wait, not start anything itself.
  std::this_thread::sleep_for(3s);
  CHECK_FALSE(broker1Alive());
  const auto platform = std::chrono::steady_clock::now();
  REQUIRE(testing::lab("start 1") == 0);
  const auto drill = kfaild.waitForState(id, finished, 300s);
  INFO("drill: " << drill.dump().substr(0, 6000));
  CHECK(drill["state"] == "done");
  const auto started = eventsOf(kfaild, "injector", "started");
  REQUIRE(started["count"] == 1);
  CHECK(started["items"][0]["detail"]["detail"].get<std::string>().find(
            "brought back by the platform") != std::string::npos);
  std::printf("command platform start: lab start to drill done %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - platform).count());
}

TEST_CASE(
    "kfaild SIGKILLed while a command node is down in a drill runs its start command at the next "
    "start and marks the drill aborted",
    "[e2e][command][reliability]") {
  const Lab lab(withoutInventory());
  addCommandNode(lab, "[" + kLab + ", start, \"{id}\"]");
  std::int64_t id = 0;
  {
    Kfaild first(lab, "first");
    first.waitSteady(lab.topic);
    id = startDrill(
        first,
        R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2,"observe_min_s":120,"observe_timeout_s":300}})");
    first.waitForState(id, [](const std::string& s) { return s == "observe"; }, 120s);
    std::this_thread::sleep_for(2s);
    REQUIRE(first.process.stop(SIGKILL, 10'000) == -1);
  }
  CHECK_FALSE(broker1Alive());

  Kfaild second(lab, "second");
  const auto drill = second.get("/api/v1/drills/" + std::to_string(id));
  CHECK(drill["state"] == "aborted");
  CHECK(drill["reason"] == "kfaild stopped during observe");
  const auto recovered = eventsOf(second, "kfaild", "recovered_after_restart");
  REQUIRE(recovered["count"] == 1);
  CHECK(recovered["items"][0]["broker"] == 1);
  CHECK(broker1Alive());
  CHECK(sqlValue(lab.db, "SELECT count(*) FROM recovery_journal WHERE done_us IS NULL") == "0");
}

TEST_CASE(
    "through the podman CLI alone, broker 1's container is killed, stopped and paused by drills "
    "with the article's structure and brought back by its start and unpause",
    "[e2e][command][podman]") {
  podmanUp();
  testing::LabBrokerOne broker(testing::LabBrokerOne::Mode::container);
  const auto container = testing::trimmedOutput(testing::labOutput("container 1"));
  const Lab lab(withoutInventory());
  addPodmanNode(lab, container);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  const auto kill = runDrillToDone(
      kfaild, R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2}})");
  const auto& killed = kill["runs"][0]["analysis"];
  INFO("kill: " << killed.dump().substr(0, 4000));
  CHECK(killed["fault_time_source"] == "command:bracket");
  REQUIRE(killed["departure"] == "fenced");
  const auto detection =
      killed["departure_at_us"].get<std::int64_t>() - killed["fault_us"].get<std::int64_t>();
  const auto uncertainty = killed["fault_time_uncertainty_us"].get<std::int64_t>();
  CHECK(detection >= kSessionTimeoutUs - kHeartbeatUs - 1'000'000 - uncertainty);
  CHECK(detection <= kSessionTimeoutUs + 1'500'000 + uncertainty);
  CHECK(kill["verdict"] == "pass");
  std::printf("podman kill: %s, detection %.3f s\n", figures(killed, lab.topic).c_str(),
              detection / 1e6);

  kfaild.waitSteady(lab.topic);
  const auto stop = runDrillToDone(kfaild, R"({"fault":"stop","target":{"broker":1}})");
  const auto& stopped = stop["runs"][0]["analysis"];
  INFO("stop: " << stopped.dump().substr(0, 4000));
  CHECK(stopped["departure"] == "controlled_shutdown");
  for (int p = 0; p < 3; ++p)
    CHECK(ackStall(partitionOf(stopped, lab.topic, p)) < kGracefulStallLimitUs);
  CHECK(stop["verdict"] == "pass");
  std::printf("podman stop: %s\n", figures(stopped, lab.topic).c_str());

  // Frozen past the session timeout: the controller fences it as it would a dead broker.
  kfaild.waitSteady(lab.topic);
  const auto pause = runDrillToDone(
      kfaild, R"({"fault":"pause","target":{"broker":1},"options":{"baseline_s":2,"pause_s":12}})");
  const auto& paused = pause["runs"][0]["analysis"];
  INFO("pause: " << paused.dump().substr(0, 4000));
  CHECK(paused["fault_time_source"] == "command:bracket");
  CHECK(paused["departure"] == "fenced");
  std::printf("podman pause: %s\n", figures(paused, lab.topic).c_str());
  CHECK_FALSE(testing::LabBrokerOne::status().value("paused", true));
  CHECK(broker.waitInIsr(60s));
}

}  // namespace e2e_command_injector_test
