// probe.client java: its child's clock, its refusal of settings at start, and its supervision
// (a fake child that dies mid-line, on librdkafka's mock cluster for set-up).

#include "server/probe/java_probe_client.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/common/clock.h"
#include "server/probe/java_protocol.h"
#include "server/probe/probe_runner.h"
#include "storage/sqlite_store.h"
#include "tests/support/kafka_doubles.h"
#include "tests/support/temp_dir.h"

namespace java_probe_client_test {

using namespace kfaild;
using namespace std::chrono_literals;

namespace {

template <typename Pred>
bool eventually(std::chrono::seconds limit, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

std::int64_t steadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A stand-in for the Java child speaking its protocol (java_protocol.h): acks every send at
// once; on its first life (no marker file yet) it writes half a line after `die_after` sends and
// exits; refuses `refuse` at --check.
std::string writeFakeChild(const testing::TempDir& dir, int die_after, const std::string& refuse) {
  const auto path = (dir / "fake-java").string();
  std::ofstream(path) << R"(#!/usr/bin/env python3
import os, sys, time
marker = ")" << (dir / "lived").string()
                      << R"("
check = "--check" in sys.argv
for line in sys.stdin:
    if line.strip() == "go":
        break
if check:
    print("refused )" << refuse
                      << R"( not wanted" if ")" << refuse << R"(" else "ok", flush=True)
    sys.exit(2 if ")" << refuse
                      << R"(" else 0)
first = not os.path.exists(marker)
open(marker, "a").close()
print("hello 1 %d" % time.monotonic_ns(), flush=True)
sends = 0
offsets = {}
for line in sys.stdin:
    w = line.split()
    if w[0] == "send":
        sends += 1
        if first and sends == )"
                      << die_after << R"(:
            sys.stdout.write("ack %s %s" % (w[1], w[2]))
            sys.stdout.flush()
            os._exit(1)
        slot = w[1]
        offsets[slot] = offsets.get(slot, 0) + 1
        t = time.monotonic_ns()
        print("ack %s %s %d %d" % (slot, w[2], t, offsets[slot]), flush=True)
        print("recv %s %d %d %s" % (slot, t, offsets[slot], w[3][:w[3].index(":", w[3].index(":", w[3].index(":", 5) + 1) + 1) + 1]), flush=True)
    elif w[0] == "quit":
        break
)";
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace

TEST_CASE("Java's System.nanoTime is kfaild's monotonic clock", "[integration][probe]") {
  auto runtime = probe::findJavaRuntime({});
  REQUIRE(runtime);
  // The child's hello carries its nanoTime; it must lie between a steady_clock reading before
  // the JVM started and one after its line was read (common::SystemClock reads CLOCK_MONOTONIC,
  // which steady_clock is on Linux: checked beside it).
  common::SystemClock clock;
  const auto before = steadyMicros();
  const auto before_kfaild = clock.monoNow();
  const std::string command = "printf 'config bootstrap.servers localhost:1\\ngo\\n' | '" +
                              runtime->java + "' -jar '" + runtime->jar + "'";
  FILE* child = ::popen(command.c_str(), "r");
  REQUIRE(child);
  char line[256] = {};
  REQUIRE(std::fgets(line, sizeof line, child) != nullptr);
  const auto after = steadyMicros();
  const auto after_kfaild = clock.monoNow();
  ::pclose(child);
  std::string text(line);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  const auto hello = probe::java::parseReport(text);
  REQUIRE(hello);
  REQUIRE(hello->kind == probe::java::ReportKind::kHello);
  INFO("before " << before << " µs, nanoTime " << hello->t_ns << " ns, after " << after << " µs");
  CHECK(probe::java::sameClock(hello->t_ns, before, after));
  CHECK(probe::java::sameClock(hello->t_ns, before_kfaild, after_kfaild));
}

TEST_CASE("a setting kafka-clients refuses stops the java probe at start, naming the key",
          "[integration][probe]") {
  auto runtime = probe::findJavaRuntime({});
  REQUIRE(runtime);
  config::ClusterConfig cluster;
  cluster.name = "c";
  cluster.bootstrap = "localhost:1";
  auto refused = probe::checkJavaSettings(cluster, {{"linger.ms", "soon"}}, *runtime);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message,
             Catch::StartsWith("probe.java.settings.linger.ms: kafka-clients refuses it"));
  auto unknown = probe::checkJavaSettings(cluster, {{"lingering.ms", "0"}}, *runtime);
  REQUIRE_FALSE(unknown);
  CHECK_THAT(unknown.error().message, Catch::Contains("probe.java.settings.lingering.ms"));
  auto fine = probe::checkJavaSettings(cluster, {{"linger.ms", "0"}}, *runtime);
  REQUIRE(fine);
  CHECK(fine->settings.at("linger.ms") == "0");
  CHECK(fine->settings.at("bootstrap.servers") == "localhost:1");

  config::JavaProbeConfig missing;
  missing.runtime = "/nonexistent/java";
  auto none = probe::findJavaRuntime(missing);
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message, Catch::StartsWith("probe.java.runtime:"));
}

TEST_CASE("a java child that dies mid-line is restarted, its gap the probe's own",
          "[integration][probe]") {
  testing::MockCluster mock(1);
  REQUIRE(rd_kafka_mock_topic_create(mock.cluster, "probe", 1, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  testing::TempDir dir;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(store);
  auto cluster_id = (*store)->ensureCluster("mock", mock.bootstrap());
  REQUIRE(cluster_id);

  config::ClusterConfig cluster;
  cluster.name = "mock";
  cluster.bootstrap = mock.bootstrap();
  cluster.observe.client_debug = "";
  cluster.probe.interval_us = 20'000;
  cluster.probe.gap_threshold_us = 200'000;
  cluster.probe.client = config::ProbeClient::kJava;
  cluster.probe.java.runtime = writeFakeChild(dir, 40, "");
  cluster.probe.java.jar = cluster.probe.java.runtime;  // the fake ignores it
  cluster.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};

  common::SystemClock clock;
  probe::ProbeRunner runner(cluster, *cluster_id, **store, clock, {});
  REQUIRE(runner.start());
  // It dies after 40 sends (0.8 s), is started again 1 s later, and acks from then on.
  REQUIRE(eventually(30s, [&] {
    const auto s = runner.status();
    return s.client_restarts == 1u && !s.partitions.empty() && s.partitions[0].counters.acked > 100;
  }));
  runner.stop();
  (*store)->flush();

  storage::EventQuery query;
  query.cluster = *cluster_id;
  auto events = (*store)->events(query);
  REQUIRE(events);
  int exited = 0, restarted = 0, refused = 0;
  for (const auto& e : *events) {
    const auto detail = nlohmann::json::parse(e.detail, nullptr, false);
    if (e.kind == "client_exited") {
      ++exited;
      CHECK_THAT(detail.value("reason", ""), Catch::StartsWith("died mid-line (\"ack 0 39\")"));
    } else if (e.kind == "client_restarted") {
      ++restarted;
    } else if (e.kind == "refused") {
      ++refused;
      CHECK(detail.value("error", "") == "client_down");
      // From the death (a tick after the last ack) to the restart after 1 s of backoff.
      CHECK(detail.value("end_us", std::int64_t{0}) - e.t_us >= 900'000);
    }
  }
  CHECK(exited == 1);
  CHECK(restarted == 1);
  CHECK(refused == 1);
}

TEST_CASE("a java settings refusal at --check stops the probe's start", "[integration][probe]") {
  testing::TempDir dir;
  auto store = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(store);
  config::ClusterConfig cluster;
  cluster.name = "c";
  cluster.bootstrap = "localhost:1";
  cluster.probe.client = config::ProbeClient::kJava;
  cluster.probe.java.runtime = writeFakeChild(dir, 0, "acks.x");
  cluster.probe.java.jar = cluster.probe.java.runtime;
  cluster.probe.java.settings = {{"acks.x", "1"}};
  cluster.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};
  common::SystemClock clock;
  probe::ProbeRunner runner(cluster, 1, **store, clock, {});
  auto started = runner.start();
  REQUIRE_FALSE(started);
  CHECK_THAT(started.error().message, Catch::StartsWith("probe.java.settings.acks.x:"));
}

}  // namespace java_probe_client_test
