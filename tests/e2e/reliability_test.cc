// kfaild survives what it inflicts (issue #8): killed or stopped in each drill phase, the whole
// cluster or its controller gone, the way to a broker (sshd) gone in the middle of a drill, a
// burst of simultaneous drill requests, and read load during a kill. Each test writes what it
// measured to <build>/reliability/ for docs/RELIABILITY.md (scripts/reliability-report).

#include <algorithm>
#include <array>
#include <atomic>
#include <set>
#include <vector>

#include "tests/e2e/e2e_support.h"
#include "tests/fault/lab_broker.h"
#include "tests/support/paths.h"

namespace reliability_test {

using namespace kfaild;
using namespace kfaild::e2e;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::int64_t wallNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string drillRow(const Lab& lab, std::int64_t id) {
  return sqlValue(lab.db,
                  "SELECT state || '|' || reason FROM drills WHERE id = " + std::to_string(id));
}

std::int64_t sampleCount(const Lab& lab,
                         std::int64_t before_us = std::numeric_limits<std::int64_t>::max()) {
  const auto samples = storedSamples(lab.db);
  return std::count_if(samples.begin(), samples.end(),
                       [&](const auto& s) { return s.send_us <= before_us; });
}

// Waits for the store's writer (100 ms linger) to commit an event of this kind.
json eventsOf(Kfaild& kfaild, const std::string& source, const std::string& kind,
              std::size_t at_least = 1) {
  json events;
  for (int i = 0; i < 100; ++i) {
    events = kfaild.get("/api/v1/clusters/lab/events?source=" + source + "&kind=" + kind);
    if (events["count"].get<std::size_t>() >= at_least) break;
    std::this_thread::sleep_for(200ms);
  }
  return events;
}

}  // namespace

TEST_CASE(
    "kfaild SIGKILLed in baseline and in recovery, and SIGTERMed in observe, leaves the broker "
    "running, the drill aborted with its phase and the stored data intact",
    "[e2e][reliability]") {
  Record record("stopped-in-each-phase");
  LabOptions options;
  options.shutdown_grace_s = 180;
  Lab lab(options);

  // SIGKILL in baseline: nothing was injected yet.
  std::int64_t baseline_id = 0;
  std::int64_t killed_us = 0;
  {
    Kfaild first(lab, "baseline");
    first.waitSteady(lab.topic);
    baseline_id =
        startDrill(first, R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":120}})");
    first.waitForState(baseline_id, [](const std::string& s) { return s == "baseline"; }, 120s);
    std::this_thread::sleep_for(2s);
    REQUIRE(first.process.stop(SIGKILL, 10'000) == -1);
    killed_us = wallNowUs();
    checkTokenNotLogged(first);
  }
  CHECK(labAlive() == std::map<int, bool>{{1, true}, {2, true}, {3, true}, {100, true}});
  CHECK(sqlValue(lab.db, "PRAGMA integrity_check") == "ok");
  const auto rows_at_kill = sampleCount(lab);
  record["baseline_sigkill"] = {{"samples_at_kill", rows_at_kill}};

  // SIGKILL in recovery: broker 1 may be half-started.
  std::int64_t recover_id = 0;
  {
    Kfaild second(lab, "recover");
    CHECK(drillRow(lab, baseline_id) == "aborted|kfaild stopped during baseline");
    second.waitSteady(lab.topic);
    // Every row the first kfaild wrote is still there, none rewritten.
    CHECK(sampleCount(lab, killed_us) == rows_at_kill);
    recover_id = startDrill(
        second,
        R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2,"observe_min_s":2}})");
    second.waitForState(
        recover_id, [](const std::string& s) { return s == "recover" || finished(s); }, 300s);
    REQUIRE(second.process.stop(SIGKILL, 10'000) == -1);
    killed_us = wallNowUs();
    checkTokenNotLogged(second);
  }
  CHECK(sqlValue(lab.db, "PRAGMA integrity_check") == "ok");
  const auto rows_at_second_kill = sampleCount(lab);
  CHECK(sqlValue(lab.db, "SELECT count(*) FROM recovery_journal WHERE done_us IS NULL") == "1");
  record["recover_sigkill"] = {{"samples_at_kill", rows_at_second_kill},
                               {"broker1_alive_at_kill", labAlive()[1]}};

  // SIGTERM in observe: kfaild brings broker 1 back, then exits 0.
  {
    const auto started = std::chrono::steady_clock::now();
    Kfaild third(lab, "sigterm");  // recovers broker 1 before it listens
    record["restart_recovery_s"] = secondsSince(started);
    CHECK(drillRow(lab, recover_id) == "aborted|kfaild stopped during recover");
    const auto recovered = eventsOf(third, "kfaild", "recovered_after_restart");
    REQUIRE(recovered["count"] == 1);
    CHECK(recovered["items"][0]["detail"]["phase"] == "recover");
    CHECK(sampleCount(lab, killed_us) == rows_at_second_kill);
    CHECK(labAlive()[1]);

    third.waitSteady(lab.topic);
    const auto id = startDrill(
        third,
        R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2,"observe_min_s":120,"observe_timeout_s":300}})");
    third.waitForState(id, [](const std::string& s) { return s == "observe"; }, 120s);
    std::this_thread::sleep_for(2s);
    CHECK_FALSE(labAlive()[1]);
    const auto term = std::chrono::steady_clock::now();
    const int code = third.process.stop(SIGTERM, 180'000);
    record["sigterm_to_exit_s"] = secondsSince(term);
    INFO("kfaild log:\n" << tail(readAll(third.log)));
    CHECK(code == 0);
    CHECK(labAlive()[1]);  // back before kfaild exited
    CHECK(drillRow(lab, id) == "aborted|kfaild stopped during observe");
    CHECK(sqlValue(lab.db, "SELECT count(*) FROM recovery_journal WHERE done_us IS NULL") == "0");
    CHECK(sqlValue(lab.db, "PRAGMA integrity_check") == "ok");
    checkTokenNotLogged(third);
  }
  record["samples_stored"] = sampleCount(lab);
  record["nodes_left_down"] = 0;
  record.completed();
}

TEST_CASE(
    "with the controller gone drills are refused with the reason, and with all three brokers gone "
    "for "
    "longer than the probe's message timeout kfaild serves on, records the outage and resumes "
    "probing by itself",
    "[e2e][reliability]") {
  Record record("cluster-outages");
  // Every message sent as the brokers went has its fate (a timeout) before they are back. The
  // probe's message timeout is 20 s instead of its default 60 s, so that the outage need last
  // only 25 s (kOutage), not over a minute.
  constexpr auto kOutage = 25s;
  LabOptions options;
  options.probe_yaml = "      message_timeout_ms: 20000\n";
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  // The controller.
  REQUIRE(testing::lab("kill 100") == 0);
  const auto asked = std::chrono::steady_clock::now();
  const auto refused =
      kfaild.post("/api/v1/clusters/lab/drills", R"({"fault":"kill","target":{"broker":1}})");
  record["controller_refusal_s"] = secondsSince(asked);
  INFO(refused.body);
  CHECK(refused.status == 409);
  const auto reason = refused.json().value("reason", "");
  CHECK(reason.find("controller does not answer") != std::string::npos);
  record["controller_refusal"] = reason;
  CHECK(labAlive() == std::map<int, bool>{{1, true}, {2, true}, {3, true}, {100, false}});
  std::this_thread::sleep_for(3s);
  CHECK(kfaild.get("/api/v1/clusters/lab")["probe"]["phase"] == "probing");  // brokers serve on
  REQUIRE(testing::lab("start 100") == 0);
  REQUIRE(testing::lab("wait") == 0);
  kfaild.waitSteady(lab.topic);

  // All three brokers: the first alone until the controller fences it and the poller sees it leave
  // the metadata (a broker killed stays in it for broker.session.timeout.ms; killed together, no
  // live broker would ever answer without the others), then the other two.
  REQUIRE(testing::lab("kill 1") == 0);
  const auto first_down = std::chrono::steady_clock::now();
  while (eventsOf(kfaild, "metadata", "broker_gone")["count"].get<int>() < 1 &&
         secondsSince(first_down) < 30) {
    std::this_thread::sleep_for(200ms);
  }
  record["broker_gone_after_s"] = secondsSince(first_down);
  for (const char* node : {"kill 2", "kill 3"}) REQUIRE(testing::lab(node) == 0);
  // From here no broker serves: a gap across the outage starts before this (a partition whose
  // acks had not resumed since the first kill has its gap from then). Taken after the kills
  // return, as acks go on until the last broker is dead (on a loaded machine `lab kill` takes a
  // second).
  const auto down_us = wallNowUs();
  const auto down = std::chrono::steady_clock::now();
  int served = 0, failed = 0;
  while (secondsSince(down) < std::chrono::duration<double>(kOutage).count()) {
    for (const char* target :
         {"/healthz", "/api/v1/clusters/lab", "/api/v1/clusters/lab/gaps?limit=10"}) {
      (api::testing::httpGet(kfaild.port, target).status == 200 ? served : failed) += 1;
    }
    const auto refusal =
        kfaild.post("/api/v1/clusters/lab/drills", R"({"fault":"kill","target":{"broker":2}})");
    (refusal.status == 409 ? served : failed) += 1;
    std::this_thread::sleep_for(2s);
  }
  record["requests_during_outage"] = served + failed;
  record["failed_requests_during_outage"] = failed;
  CHECK(failed == 0);
  CHECK(kfaild.process.running());
  const auto up_from = std::chrono::steady_clock::now();
  REQUIRE(testing::lab("up") == 0);
  record["outage_s"] = std::chrono::duration<double>(up_from - down).count();
  // Probing resumes by itself: every partition acks again. (The lab needs a while longer to
  // have every replica back in sync; the next test's wait for a steady probe covers that.)
  bool acking = false;
  const auto resume_deadline = std::chrono::steady_clock::now() + 240s;
  while (!acking && std::chrono::steady_clock::now() < resume_deadline) {
    std::this_thread::sleep_for(500ms);
    int fresh = 0;
    const auto cluster = kfaild.get("/api/v1/clusters/lab");
    for (const auto& t : cluster["topics"]) {
      if (t["name"] != lab.topic) continue;
      for (const auto& p : t["partitions"]) {
        const auto& gap = p["probe"]["current_ack_gap_seconds"];
        fresh += gap.is_number() && gap.get<double>() < 1.0 ? 1 : 0;
      }
    }
    acking = fresh == 3;
  }
  CHECK(acking);
  record["acks_resumed_after_lab_up_s"] = secondsSince(up_from);
  // The probe kept at most max_outstanding_ms of messages outstanding through the outage, so it
  // is steady (nothing old outstanding, no sends held back: the guards' probe checks) within
  // seconds of acks resuming, not minutes.
  const auto acks_back = std::chrono::steady_clock::now();
  bool steady = false;
  while (!steady && secondsSince(acks_back) < 60) {
    int good = 0;
    const auto cluster = kfaild.get("/api/v1/clusters/lab");
    for (const auto& t : cluster["topics"]) {
      if (t["name"] != lab.topic) continue;
      for (const auto& p : t["partitions"]) {
        const auto& probe = p["probe"];
        const auto& age = probe["oldest_outstanding_age_seconds"];
        good += probe["holding_since_us"].is_null() && (age.is_null() || age.get<double>() < 1.0) &&
                        probe["current_ack_gap_seconds"].get<double>() < 0.5 &&
                        probe["current_receive_gap_seconds"].get<double>() < 1.0
                    ? 1
                    : 0;
      }
    }
    steady = good == 3;
    if (!steady) std::this_thread::sleep_for(250ms);
  }
  record["probe_steady_after_acks_resumed_s"] = secondsSince(acks_back);
  // A consumer that read nothing while acks flowed had its fetch restarted
  // (probe.consumer_restart_ms): two CI runs saw one partition read nothing back for five minutes
  // after this outage.
  record["consumer_restarts"] = eventsOf(kfaild, "probe", "consumer_restarted", 0)["count"];
  record["consumer_recreations"] = eventsOf(kfaild, "probe", "consumer_recreated", 0)["count"];
  {
    // Two CI runs lost the kfaild log that would have told what the consumer was doing.
    INFO("kfaild log:\n" << tail(readAll(kfaild.log)));
    CHECK(steady);
  }
  CHECK(secondsSince(acks_back) <= 10.5);
  // A drill is accepted once the replicas are back in sync (the guard refuses an
  // under-replicated probe partition, not a lagging probe); it is aborted at once.
  api::testing::HttpReply accepted;
  while (secondsSince(acks_back) < 240) {
    accepted =
        kfaild.post("/api/v1/clusters/lab/drills", R"({"fault":"kill","target":{"broker":2}})");
    if (accepted.status == 202) break;
    record["last_refusal_before_acceptance"] = accepted.json().value("reason", "");
    std::this_thread::sleep_for(1s);
  }
  INFO(accepted.body);
  REQUIRE(accepted.status == 202);
  record["drill_accepted_after_acks_resumed_s"] = secondsSince(acks_back);
  const auto drill_id = accepted.json()["id"].get<std::int64_t>();
  kfaild.post("/api/v1/drills/" + std::to_string(drill_id) + "/abort", "");
  kfaild.waitForState(drill_id, finished, 300s);

  // The outage is in the store: one ack gap per partition spanning it, and the brokers' going
  // and coming back as metadata events.
  json gaps;
  std::set<int> covered;
  for (int i = 0; i < 50 && covered.size() < 3; ++i) {
    gaps = kfaild.get("/api/v1/clusters/lab/gaps?kind=ack&min_ms=" +
                      std::to_string(std::chrono::milliseconds(kOutage).count() - 5000) +
                      "&limit=100");
    covered.clear();
    for (const auto& g : gaps["items"]) {
      if (g["topic"] == lab.topic && g["start_us"].get<std::int64_t>() <= down_us + 500'000) {
        covered.insert(g["partition"].get<int>());
        record["ack_gap_s"][std::to_string(g["partition"].get<int>())] =
            g["duration_us"].get<double>() / 1e6;
      }
    }
    if (covered.size() < 3) std::this_thread::sleep_for(200ms);
  }
  INFO("gaps: " << gaps.dump().substr(0, 3000) << "\nall brokers down from " << down_us);
  CHECK(covered == std::set<int>{0, 1, 2});
  // The poller saw the first broker go; with none left nobody answers for metadata at all.
  const auto gone = eventsOf(kfaild, "metadata", "broker_gone");
  const auto dark = eventsOf(kfaild, "metadata", "metadata_unavailable");
  const auto light = eventsOf(kfaild, "metadata", "metadata_available");
  CHECK(gone["count"].get<int>() >= 1);
  CHECK(dark["count"].get<int>() >= 1);
  CHECK(light["count"].get<int>() >= 1);
  record["events"] = {{"broker_gone", gone["count"]},
                      {"metadata_unavailable", dark["count"]},
                      {"metadata_available", light["count"]}};
  CHECK(kfaild.get("/api/v1/clusters/lab")["probe"]["phase"] == "probing");
  checkTokenNotLogged(kfaild);
  record.completed();
}

TEST_CASE(
    "sshd unreachable: a drill fails at preflight with the reason and touches nothing, and when "
    "sshd is lost in the "
    "middle of a drill, recovery is retried with backoff and reported until sshd is back",
    "[e2e][reliability][sshd]") {
  Record record("sshd-unreachable");
  std::string out;
  const std::string sshd_up = std::string(KFAILD_SOURCE_DIR) + "/scripts/drill-env/sshd-up";
  REQUIRE(testing::shellCommand(sshd_up, &out) == 0);
  const auto identity = testing::assignment(out, "KFAILD_SSHD_IDENTITY");
  const auto known_hosts = testing::assignment(out, "KFAILD_SSHD_KNOWN_HOSTS");
  const auto sshd_pid_file = std::filesystem::path(identity).parent_path() / "sshd.pid";
  const auto sshd_down = [&] {
    REQUIRE(testing::shellCommand("kill $(cat " + sshd_pid_file.string() + ") && sleep 0.5") == 0);
  };
  LabOptions options;
  options.node1_ssh =
      "{host: " + testing::assignment(out, "KFAILD_SSHD_HOST") +
      ", user: " + testing::assignment(out, "KFAILD_SSHD_USER") +
      ", port: " + testing::assignment(out, "KFAILD_SSHD_PORT") + ", identity_file: " + identity +
      ", connect_timeout_s: 3, options: [StrictHostKeyChecking=yes, \"UserKnownHostsFile=" +
      known_hosts + "\"], pid_command: \"cat " + testing::labPidFile(1) + "\", start_command: \"" +
      testing::labEnvironment() + testing::labScript() +
      " start 1\", log_dir: " + testing::labLogDir(1) + "}";
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  // Unreachable before the fault: the drill fails at preflight, broker 1 untouched.
  sshd_down();
  auto drill = runDrillToEnd(
      kfaild, R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2}})", 120s);
  CHECK(drill["state"] == "failed");
  const auto reason = drill["reason"].get<std::string>();
  INFO("reason: " << reason);
  CHECK(reason.find("node 1 cannot be reached (ssh") != std::string::npos);
  record["preflight_failure"] = reason;
  CHECK(labAlive()[1]);

  // Lost after the kill: recovery retries until sshd answers again.
  REQUIRE(testing::shellCommand(sshd_up) == 0);
  kfaild.waitSteady(lab.topic);
  const std::string body =
      R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":2,"observe_min_s":2}})";
  auto id = startDrill(kfaild, body);
  auto reached = kfaild.waitForState(
      id, [](const std::string& s) { return s == "observe" || finished(s); }, 120s);
  // sshd is up again: a preflight that could not reach it is the loaded machine's (a CI run at its
  // 11th test saw ssh exit 255 there, with sshd answering before and after), asked again.
  for (int again = 0;
       again < 2 && reached["state"] == "failed" && reached["reason"].is_string() &&
       reached["reason"].get<std::string>().find("cannot be reached") != std::string::npos;
       ++again) {
    WARN("drill " << id << " asked again: " << reached["reason"].get<std::string>());
    REQUIRE(testing::shellCommand(sshd_up) == 0);
    std::this_thread::sleep_for(2s);
    id = startDrill(kfaild, body);
    reached = kfaild.waitForState(
        id, [](const std::string& s) { return s == "observe" || finished(s); }, 120s);
  }
  sshd_down();
  const auto lost = std::chrono::steady_clock::now();
  // Retried with backoff (1, 2, 4 s ...), each failure in the drill's reason and as an event.
  drill = kfaild.waitForState(id, [&](const std::string& s) { return s != "observe"; }, 120s);
  json retries;
  for (int i = 0; i < 120; ++i) {
    retries = kfaild.get("/api/v1/clusters/lab/events?source=kfaild&kind=recovery_retry");
    if (retries["count"].get<int>() >= 3) break;
    std::this_thread::sleep_for(250ms);
  }
  const auto while_down = kfaild.get("/api/v1/drills/" + std::to_string(id));
  CHECK(while_down["state"] == "recover");
  CHECK(while_down["reason"].get<std::string>().find("recovering node 1: attempt") !=
        std::string::npos);
  CHECK(retries["count"].get<int>() >= 3);
  // No other drill while node 1 is being brought back.
  const auto second =
      kfaild.post("/api/v1/clusters/lab/drills", R"({"fault":"kill","target":{"broker":2}})");
  CHECK(second.status == 409);
  record["sshd_down_s"] = secondsSince(lost);
  REQUIRE(testing::shellCommand(sshd_up) == 0);
  const auto back = std::chrono::steady_clock::now();
  drill = kfaild.waitForState(id, finished, 300s);
  record["recovered_after_sshd_back_s"] = secondsSince(back);
  INFO("drill: " << drill.dump().substr(0, 3000));
  CHECK(drill["state"] == "done");
  const auto& recovery = drill["runs"][0]["recovery"];
  CHECK(recovery["attempts"].get<int>() >= 4);
  CHECK(recovery["errors"][0]["error"].get<std::string>().find("ssh") != std::string::npos);
  record["recovery_attempts"] = recovery["attempts"];
  record["retry_events"] = retries["count"];
  // The measurement itself still holds: the kill stalled partition 0 for at least the detection.
  CHECK(ackStall(partitionOf(drill["runs"][0]["analysis"], lab.topic, 0)) > 5'000'000);
  CHECK(labAlive()[1]);
  checkTokenNotLogged(kfaild);
  record.completed();
}

TEST_CASE(
    "twenty simultaneous drill requests on one cluster: one runs, the others are refused, and "
    "never "
    "two brokers are down at once",
    "[e2e][reliability]") {
  Record record("simultaneous-drills");
  Lab lab;
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  constexpr int kRequests = 20;
  std::vector<api::testing::HttpReply> replies(kRequests);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      api::testing::HttpConnection connection(kfaild.port);
      const auto body = R"({"fault":"kill","target":{"broker":)" + std::to_string(1 + i % 3) +
                        R"(},"options":{"baseline_s":1,"observe_min_s":2}})";
      ready.fetch_add(1);
      while (ready.load() < kRequests) std::this_thread::yield();
      replies[i] = connection.request({"POST",
                                       "/api/v1/clusters/lab/drills",
                                       body,
                                       {{"Authorization", std::string("Bearer ") + kToken},
                                        {"Content-Type", "application/json"}}});
    });
  }
  for (auto& t : threads) t.join();
  int accepted = 0, refused = 0, running_refusals = 0;
  std::int64_t id = 0;
  for (const auto& r : replies) {
    INFO(r.status << " " << r.body);
    CHECK(r.body.find(kToken) == std::string::npos);
    if (r.status == 202) {
      ++accepted;
      id = r.json()["id"].get<std::int64_t>();
    } else if (r.status == 409) {
      ++refused;
      // Mostly "drill N is running on cluster lab"; a target whose loss a guard forbids (another
      // test's single-replica topic on it) is refused for that instead.
      const auto reason = r.json().value("reason", "");
      CHECK_FALSE(reason.empty());
      running_refusals += reason.find("is running on cluster lab") != std::string::npos ? 1 : 0;
    }
  }
  record["requests"] = kRequests;
  record["accepted"] = accepted;
  record["refused_409"] = refused;
  record["refused_as_another_runs"] = running_refusals;
  REQUIRE(accepted == 1);
  CHECK(refused == kRequests - 1);
  CHECK(running_refusals >= kRequests / 2);
  CHECK(kfaild.get("/api/v1/drills")["count"] == 1);

  // While it runs, at most one broker is down at any look.
  int most_down = 0, looks = 0;
  json drill;
  const auto deadline = std::chrono::steady_clock::now() + 300s;
  while (std::chrono::steady_clock::now() < deadline) {
    int down = 0;
    for (const auto& [node, alive] : labAlive()) down += alive ? 0 : 1;
    most_down = std::max(most_down, down);
    ++looks;
    drill = kfaild.get("/api/v1/drills/" + std::to_string(id));
    if (finished(drill["state"].get<std::string>())) break;
    std::this_thread::sleep_for(200ms);
  }
  record["status_looks"] = looks;
  record["most_brokers_down"] = most_down;
  INFO("the drill: " << drill.dump());
  CHECK(drill["state"] == "done");
  CHECK(most_down == 1);
  checkTokenNotLogged(kfaild);
  record.completed();
}

namespace {

struct WrkSummary {
  long requests = 0, socket_errors = 0, non_2xx = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0, duration_s = 0;
};

// wrk's pause between one connection's requests when paced: 16 connections, about 800 requests/s.
constexpr int kWrkPauseMs = 20;

// wrk for `seconds` on 16 connections; `delay_ms` > 0 paces each connection (16 connections
// with 20 ms pauses: about 800 requests/s, a wall of dashboards), 0 sends as fast as it can.
// `drills_ran`: false leaves out the last drill's path (404 on a kfaild that ran none).
WrkSummary wrk(std::uint16_t port, int seconds, int delay_ms, bool drills_ran = true) {
  // Niced: wrk stands in for clients on other hosts, and this machine has two cores for four
  // JVMs, kfaild and the load generator.
  const auto [code, out] =
      run(std::string(drills_ran ? "" : "WRK_NO_DRILL=1 ") +
          "WRK_DELAY_MS=" + std::to_string(delay_ms) + " nice -n 19 wrk -t2 -c16 -d" +
          std::to_string(seconds) + "s --latency -s " + std::string(KFAILD_SOURCE_DIR) +
          "/tests/e2e/read-load.lua http://127.0.0.1:" + std::to_string(port) + "/ 2>&1");
  INFO("wrk: " << out);
  REQUIRE(code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(
      out, m,
      std::regex(R"(KFAILD_WRK requests=(\d+) socket_errors=(\d+) non_2xx=(\d+) )"
                 R"(p50_ms=([0-9.]+) p99_ms=([0-9.]+) max_ms=([0-9.]+) duration_s=([0-9.]+))")));
  return {std::stol(m[1]), std::stol(m[2]), std::stol(m[3]), std::stod(m[4]),
          std::stod(m[5]), std::stod(m[6]), std::stod(m[7])};
}

json toJson(const WrkSummary& w) {
  return {{"requests", w.requests},
          {"requests_per_s", w.requests / std::max(w.duration_s, 1e-3)},
          {"socket_errors", w.socket_errors},
          {"non_2xx", w.non_2xx},
          {"p50_ms", w.p50_ms},
          {"p99_ms", w.p99_ms},
          {"max_ms", w.max_ms}};
}

// A span of wall-clock time (µs).
struct Window {
  std::int64_t from_us = 0, to_us = 0;
};

// The 99th percentile and the longest of the times between consecutive acks of one probe
// partition, for messages sent in any of `windows` (each window's intervals its own: none spans
// two).
std::pair<std::int64_t, std::int64_t> ackIntervals(const Lab& lab, int partition,
                                                   const std::vector<Window>& windows) {
  // Samples are stored once their fate is final and the writer has flushed its batch (up to ~1 s
  // later, storage/README.md): wait for the last window's samples for up to 15 s.
  std::vector<std::int64_t> intervals;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (true) {
    const auto samples = storedSamples(lab.db, lab.topic, partition);
    intervals.clear();
    bool last_stored = false;
    for (const auto& w : windows) {
      std::vector<std::int64_t> acks;
      for (const auto& s : samples) {
        if (s.ack_us && s.send_us >= w.from_us && s.send_us <= w.to_us) acks.push_back(*s.ack_us);
      }
      std::sort(acks.begin(), acks.end());
      for (std::size_t i = 1; i < acks.size(); ++i) intervals.push_back(acks[i] - acks[i - 1]);
      last_stored = acks.size() > 1;
    }
    if (last_stored || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(500ms);
  }
  INFO("partition " << partition << ": " << intervals.size() << " ack intervals in "
                    << windows.size() << " windows");
  REQUIRE_FALSE(intervals.empty());
  std::sort(intervals.begin(), intervals.end());
  const auto p99 =
      intervals[static_cast<std::size_t>(static_cast<double>(intervals.size()) * 0.99)];
  return {p99, intervals.back()};
}

// A kill drill of broker 1: detection, each partition's ack stall, p0's time from the producer
// learning the new leader to its first ack, messages lost.
json killDrill(Kfaild& kfaild, const Lab& lab) {
  const auto id = startDrill(
      kfaild,
      R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":3,"observe_min_s":2}})");
  const auto drill = kfaild.waitForState(id, finished, 400s);
  INFO("drill: " << drill.dump().substr(0, 3000));
  REQUIRE(drill["state"] == "done");
  const auto& analysis = drill["runs"][0]["analysis"];
  const auto& p0 = partitionOf(analysis, lab.topic, 0);
  REQUIRE(p0["phases"]["client_update_at_us"].is_number());
  const auto after_update = p0["ack"]["stall"]["end_us"].get<std::int64_t>() -
                            p0["phases"]["client_update_at_us"].get<std::int64_t>();
  json figures = {{"detection_s", p0["phases"]["detection_us"].get<double>() / 1e6},
                  {"p0_after_client_update_ms", after_update / 1e3},
                  {"lost", 0}};
  for (int p = 0; p < 3; ++p) {
    const auto& part = partitionOf(analysis, lab.topic, p);
    figures["ack_stall_s"][std::to_string(p)] = ackStall(part) / 1e6;
    figures["ack_stall_end_after_fence_ms"][std::to_string(p)] =
        (ackStallEnd(part) - analysis["departure_at_us"].get<std::int64_t>()) / 1e3;
    figures["lost"] = figures["lost"].get<int>() + part["lost"].get<int>();
  }
  return figures;
}

}  // namespace

// The only test that runs alone: it compares the probe's timing with and without load on the
// API, so nothing else may load the machine meanwhile. Each of its seconds costs every ctest lane;
// the kill drills under load are the next test, beside the others. Its kfaild runs no drill, so
// its wrk leaves out the last drill's path (the next test's loads it).
TEST_CASE(
    "read endpoints under wrk load while probing: errors and p99 recorded, the probe's timing "
    "undisturbed",
    "[e2e][reliability][load]") {
  Record record("read-load");
  REQUIRE(run("command -v wrk").first == 0);    // scripts/setup installs it
  constexpr std::int64_t kIntervalUs = 20'000;  // kfaild's default: the timing users get
  LabOptions options;
  options.interval_ms = kIntervalUs / 1000;
  Lab lab(options);
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);

  // Quiet probing and paced load while probing, in turns of 5 s: quiet, loaded, quiet, loaded
  // (1,000 intervals of each in all, enough for a 99th percentile). In turns, so that what the
  // lab does meanwhile (a broker restarted by an earlier test compiling and catching up: a CI run
  // measured quiet p99 31-41 ms, then loaded 67-90 ms in one window, yet a loaded p99 below the
  // quiet one on a settled lab) falls on both alike. Under load the probe's timing may move by
  // at most two intervals, the most the load could then add to a stall the probe measures.
  std::vector<Window> quiet_windows, paced_windows;
  WrkSummary
      probing;  // both turns: their requests and errors summed, their latencies the larger one's
  for (int turn = 0; turn < 2; ++turn) {
    auto from = wallNowUs();
    std::this_thread::sleep_for(5s);
    quiet_windows.push_back({from, wallNowUs()});
    from = wallNowUs();
    const auto paced = wrk(kfaild.port, 5, kWrkPauseMs, false);
    paced_windows.push_back({from, wallNowUs()});
    CHECK(paced.socket_errors == 0);
    CHECK(paced.non_2xx == 0);
    probing.requests += paced.requests;
    probing.socket_errors += paced.socket_errors;
    probing.non_2xx += paced.non_2xx;
    probing.p50_ms = std::max(probing.p50_ms, paced.p50_ms);
    probing.p99_ms = std::max(probing.p99_ms, paced.p99_ms);
    probing.max_ms = std::max(probing.max_ms, paced.max_ms);
    probing.duration_s += paced.duration_s;
  }
  std::this_thread::sleep_for(500ms);  // the writer's linger
  record["wrk_paced_while_probing"] = toJson(probing);
  CHECK(probing.requests > 1000);
  for (int p = 0; p < 3; ++p) {
    const auto quiet = ackIntervals(lab, p, quiet_windows);
    const auto loaded = ackIntervals(lab, p, paced_windows);
    record["ack_interval_quiet_ms"][std::to_string(p)] = {{"p99", quiet.first / 1e3},
                                                          {"max", quiet.second / 1e3}};
    record["ack_interval_paced_ms"][std::to_string(p)] = {{"p99", loaded.first / 1e3},
                                                          {"max", loaded.second / 1e3}};
    INFO("partition " << p << ": p99 quiet " << quiet.first << " us, loaded " << loaded.first
                      << " us");
    CHECK(loaded.first <= quiet.first + 2 * kIntervalUs);
  }

  // Then as fast as wrk can: the API's throughput and latency on this machine, and what
  // saturating both cores does to the probe (reported, not bounded: the brokers starve too).
  const auto from = wallNowUs();
  const auto saturated = wrk(kfaild.port, 10, 0, false);
  const auto to = wallNowUs();
  record["wrk_saturating"] = toJson(saturated);
  CHECK(saturated.socket_errors == 0);
  CHECK(saturated.non_2xx == 0);
  for (int p = 0; p < 3; ++p) {
    const auto loaded = ackIntervals(lab, p, {{from, to}});
    record["ack_interval_saturated_ms"][std::to_string(p)] = {{"p99", loaded.first / 1e3},
                                                              {"max", loaded.second / 1e3}};
  }
  CHECK(kfaild.process.running());
  checkTokenNotLogged(kfaild);
  record.completed();
}

TEST_CASE(
    "a kill drill under paced wrk load on the read endpoints keeps the structure of one without, "
    "loses "
    "nothing, and every request is answered",
    "[e2e][reliability]") {
  Record record("read-load-drill");
  REQUIRE(run("command -v wrk").first == 0);  // scripts/setup installs it
  Lab lab;
  Kfaild kfaild(lab, "kfaild");
  kfaild.waitSteady(lab.topic);
  const auto unloaded = killDrill(kfaild, lab);
  record["drill_unloaded"] = unloaded;

  kfaild.waitSteady(lab.topic);
  WrkSummary during;
  std::thread load([&] { during = wrk(kfaild.port, 50, kWrkPauseMs); });
  std::this_thread::sleep_for(2s);
  const auto loaded = killDrill(kfaild, lab);
  load.join();
  record["drill_loaded"] = loaded;
  record["wrk_paced_during_drill"] = toJson(during);
  CHECK(during.socket_errors == 0);
  CHECK(during.non_2xx == 0);
  CHECK(during.requests > 1000);
  for (const auto& [partition, after_fence] : loaded["ack_stall_end_after_fence_ms"].items()) {
    INFO("partition " << partition);
    CHECK(after_fence.get<double>() >= 0);
  }
  CHECK(unloaded["lost"] == 0);
  CHECK(loaded["lost"] == 0);
  // How much the stalls moved between the two drills, for the report. Not a bound: the
  // cluster's own failover (when in the heartbeat cycle the broker died, the election, the
  // producer's metadata refresh) differs by seconds from one kill to the next.
  for (const auto& [partition, stall] : loaded["ack_stall_s"].items()) {
    record["ack_stall_difference_s"][partition] =
        stall.get<double>() - unloaded["ack_stall_s"][partition].get<double>();
  }
  CHECK(kfaild.process.running());
  checkTokenNotLogged(kfaild);
  record.completed();
}

}  // namespace reliability_test
