// The probe on the Java client (probe.client: java) on the lab: a kill of broker 1 is measured
// with the article's structure, the leader's partition resuming after the Java client's own
// discovery of its new leader; a SIGKILLed child is started again, its absence the probe's own
// (refused: client_down); a SIGKILLed kfaild leaves no Java child behind.

#include <dirent.h>
#include <signal.h>

#include "tests/e2e/e2e_support.h"

namespace java_probe_test {

using namespace kfaild;
using namespace kfaild::e2e;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// The Java probe children of `parent` (0: of anyone), alive (zombies are not).
std::vector<pid_t> javaChildren(pid_t parent) {
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const auto* entry = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    const auto base = "/proc/" + std::string(entry->d_name);
    auto cmdline = readAll(base + "/cmdline");
    if (cmdline.find("kfaild-java-probe.jar") == std::string::npos) continue;
    const auto stat = readAll(base + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (state == 'Z' || (parent != 0 && ppid != parent)) continue;
    found.push_back(pid);
  }
  ::closedir(proc);
  return found;
}

template <typename Pred>
bool eventually(std::chrono::seconds limit, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return pred();
}

}  // namespace

TEST_CASE(
    "with the java client a kill of broker 1 stalls every partition it replicates, and the "
    "leader's partition resumes after the Java client's own discovery",
    "[e2e][probe][java]") {
  LabOptions options;
  options.probe_client = "java";
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);
  const auto settings = kfaild.get("/api/v1/clusters/lab")["probe"]["client_settings"];
  INFO("client settings: " << settings.dump());
  REQUIRE(settings["probe.client"] == "java");
  REQUIRE(settings["java.acks"] == "all");

  const auto drill = runDrillToDone(
      kfaild, R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":3}})");
  const auto& run = drill["runs"][0];
  const auto& analysis = run["analysis"];
  INFO("run: " << run.dump().substr(0, 12000));
  REQUIRE(analysis["departure"] == "fenced");
  const auto fault_us = analysis["fault_us"].get<std::int64_t>();
  const auto detection = analysis["departure_at_us"].get<std::int64_t>() - fault_us;
  const auto& p0 = partitionOf(analysis, lab.topic, 0);
  CHECK(p0["role"] == "leader");
  for (int p = 0; p < 3; ++p) {
    const auto& part = partitionOf(analysis, lab.topic, p);
    INFO("partition " << p);
    CHECK(part["ack"]["outcome"] == "stall");
    CHECK(part["receive"]["outcome"] == "stall");
    CHECK(ackStallEnd(part) >= analysis["departure_at_us"].get<std::int64_t>());
    CHECK(part["lost"] == 0);
  }
  // The leader's partition: the Java producer's own metadata names the new leader (its
  // client_leader_update), and the stall ends after it.
  const auto client_at = p0["phases"]["client_update_at_us"];
  REQUIRE(client_at.is_number());
  const auto resumed = p0["ack"]["stall"]["end_us"].get<std::int64_t>();
  CHECK(resumed >= client_at.get<std::int64_t>());
  WARN("java client, kill of broker 1: detection "
       << detection / 1000 << " ms; ack stalls p0 " << ackStall(p0) / 1000 << " ms, p1 "
       << ackStall(partitionOf(analysis, lab.topic, 1)) / 1000 << " ms, p2 "
       << ackStall(partitionOf(analysis, lab.topic, 2)) / 1000 << " ms; p0 discovery "
       << p0["phases"]["discovery_us"] << " µs, resume " << (resumed - client_at.get<std::int64_t>()) / 1000
       << " ms after it");
}

TEST_CASE(
    "a SIGKILLed java child is started again, its absence the probe's own, and a SIGKILLed "
    "kfaild leaves no java child",
    "[e2e][probe][java]") {
  LabOptions options;
  options.probe_client = "java";
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);
  const auto children = javaChildren(kfaild.process.pid());
  REQUIRE(children.size() == 1);
  REQUIRE(::kill(children[0], SIGKILL) == 0);
  std::vector<pid_t> again;
  REQUIRE(eventually(30s, [&] {
    again = javaChildren(kfaild.process.pid());
    return again.size() == 1 && again[0] != children[0];
  }));
  kfaild.waitSteady(lab.topic);
  // Every partition's sends were refused while no child ran (client_down), from its death to the
  // restart a second later: a gap across it is inconclusive, never the cluster's stall.
  REQUIRE(eventually(30s, [&] {
    return sqlValue(lab.db,
                    "SELECT count(*) FROM events WHERE kind = 'refused' AND "
                    "json_extract(detail, '$.error') = 'client_down' AND "
                    "json_extract(detail, '$.end_us') - t_us >= 900000") == "3";
  }));
  CHECK(sqlValue(lab.db, "SELECT count(*) FROM events WHERE kind = 'client_exited'") == "1");
  CHECK(sqlValue(lab.db, "SELECT json_extract(detail, '$.reason') FROM events WHERE kind = "
                         "'client_exited'") == "killed by signal 9");
  CHECK(sqlValue(lab.db, "SELECT count(*) FROM events WHERE kind = 'client_restarted'") == "1");
  const auto metrics = api::testing::httpGet(kfaild.port, "/metrics").body;
  CHECK_THAT(metrics, Catch::Contains(R"(client="java"} 1)"));

  kfaild.process.stop(SIGKILL, 5000);
  // Its child got SIGKILL from the kernel (PR_SET_DEATHSIG): gone, or a zombie for init to reap.
  const auto alive = [&] {
    const auto all = javaChildren(0);
    return std::find(all.begin(), all.end(), again[0]) != all.end();
  };
  CHECK(eventually(10s, [&] { return !alive(); }));
}

}  // namespace java_probe_test
