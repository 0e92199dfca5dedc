// kfaild itself, probing the lab, while broker 1 is SIGKILLed: the gaps, the cluster's events
// and the client's leader update all reach the database.

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "storage/sqlite_store.h"
#include "tests/support/lab.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace probe_kill_test {

using namespace kfaild;
using namespace std::chrono_literals;

TEST_CASE(
    "kfaild probing the lab records gaps on all three partitions and the failover events "
    "when broker 1 is killed",
    "[e2e][probe]") {
  testing::TempDir dir;
  const auto topic = "e2e-probe-" + std::to_string(std::random_device{}() % 1'000'000);
  const auto db = (dir / "kfaild.db").string();
  {
    std::ofstream config(dir / "kfaild.yaml");
    config << "log_level: info\n"
           << "storage:\n  path: " << db << "\n"
           << "clusters:\n"
           << "  - name: lab\n"
           << "    bootstrap: " << testing::labBootstrap() << "\n"
           << "    probe:\n"
           << "      interval_ms: 20\n"
           << "      topics:\n"
           << "        - name: " << topic << "\n"
           << "          create:\n"
           << "            replica_assignment: \"1:2:3,2:3:1,3:1:2\"\n"
           << "            configs: {min.insync.replicas: \"2\"}\n";
  }
  const auto log = (dir / "kfaild.log").string();
  testing::ChildProcess kfaild({testing::kfaildBinary(), "--config", (dir / "kfaild.yaml").string(),
                                "--client-log-dir", dir.path().string()},
                               log);
  auto store = storage::SqliteStore::open(db, {});
  REQUIRE(store);
  auto logTail = [&] {
    std::ifstream in(log);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return all.size() > 6000 ? all.substr(all.size() - 6000) : all;
  };

  // Wait for steady probing: every partition acked within 200 ms of sending during the last
  // second (a lab that has just started, on a busy machine, needs a while to warm up).
  auto steady = [&] {
    auto clusters = (*store)->clusters();
    if (!clusters || clusters->empty()) return false;
    const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (int p = 0; p < 3; ++p) {
      storage::SampleQuery q;
      q.cluster = clusters->front().id;
      q.topic = topic;
      q.partition = p;
      q.range = {now_us - 3'000'000, now_us};
      auto rows = (*store)->samples(q);
      if (!rows || rows->size() < 20) return false;
      for (auto it = rows->end() - 20; it != rows->end(); ++it) {
        if (!it->ack_us || *it->ack_us - it->send_us > 200'000) return false;
      }
    }
    return true;
  };
  const auto wait_until = std::chrono::steady_clock::now() + 120s;
  while (!steady() && std::chrono::steady_clock::now() < wait_until && kfaild.running()) {
    std::this_thread::sleep_for(500ms);
  }
  INFO("kfaild log:\n" << logTail());
  REQUIRE(kfaild.running());
  REQUIRE(steady());

  const auto killed_at = std::chrono::system_clock::now();
  REQUIRE(testing::lab("kill 1") == 0);
  std::this_thread::sleep_for(16s);  // the default session timeout is 9 s
  REQUIRE(testing::lab("start 1 --wait") == 0);
  std::this_thread::sleep_for(2s);
  REQUIRE(kfaild.stop(SIGTERM, 20000) == 0);
  INFO("kfaild log after the kill:\n" << logTail());

  auto clusters = (*store)->clusters();
  REQUIRE(clusters);
  REQUIRE(clusters->size() == 1);
  const auto cluster = clusters->front().id;
  const auto since =
      std::chrono::duration_cast<std::chrono::microseconds>(killed_at.time_since_epoch()).count();

  // Every partition had broker 1 as leader or in-ISR follower: all three stall (acks=all).
  for (int p = 0; p < 3; ++p) {
    storage::GapQuery q;
    q.cluster = cluster;
    q.topic = topic;
    q.partition = p;
    q.kind = storage::GapKind::kAck;
    q.min_duration_us = 3'000'000;
    q.range.from_us = since;
    auto gaps = (*store)->gaps(q);
    REQUIRE(gaps);
    INFO("partition " << p);
    REQUIRE(gaps->size() == 1);
    CHECK(gaps->front().duration_us < 30'000'000);
  }

  storage::EventQuery eq;
  eq.cluster = cluster;
  eq.range.from_us = since;
  auto events = (*store)->events(eq);
  REQUIRE(events);
  bool broker_gone = false, leader_moved = false, client_update = false;
  for (const auto& e : *events) {
    if (e.kind == "broker_gone" && e.broker == 1) broker_gone = true;
    if (e.kind == "leader_change" && e.topic == topic && e.partition == 0 &&
        nlohmann::json::parse(e.detail)["from"] == 1) {
      leader_moved = true;
    }
    if (e.kind == "client_leader_update" && e.topic == topic && e.partition == 0 &&
        nlohmann::json::parse(e.detail)["from"] == 1) {
      client_update = true;
    }
  }
  CHECK(broker_gone);
  CHECK(leader_moved);
  CHECK(client_update);
}

}  // namespace probe_kill_test
