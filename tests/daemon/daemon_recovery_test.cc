// kfaild started with a recovery-journal entry a previous kfaild left open, against librdkafka's
// mock cluster: the entry's node cannot be started (its start command fails), so the replay keeps
// retrying, and all the while the API answers and an operator resolves the entry through it.

#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "server/config/config.h"
#include "server/daemon/daemon.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/api/http_client.h"
#include "tests/support/kafka_doubles.h"
#include "tests/support/temp_dir.h"

namespace daemon_recovery_test {

using namespace kfaild;
using namespace std::chrono_literals;

namespace {

// A loopback port nobody listens on now (bound, read and released).
std::uint16_t freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

TEST_CASE(
    "kfaild serves its API while an open recovery entry replays, and the entry can be resolved "
    "meanwhile",
    "[integration][daemon]") {
  testing::MockCluster mock(3);
  REQUIRE(rd_kafka_mock_topic_create(mock.cluster, "orders", 3, 3) == RD_KAFKA_RESP_ERR_NO_ERROR);
  testing::TempDir dir;
  const auto db = (dir / "kfaild.db").string();

  // What a kfaild killed during a kill drill of node 1 left.
  std::int64_t entry_id = 0;
  {
    auto store = storage::SqliteStore::open(db);
    REQUIRE(store);
    auto cluster = (*store)->ensureCluster("mock", mock.bootstrap());
    REQUIRE(cluster);
    auto drills = storage::SqliteDrillStore::open(db);
    REQUIRE(drills);
    storage::DrillRecord drill;
    drill.cluster = *cluster;
    drill.fault = "kill";
    drill.target = R"({"broker":1})";
    drill.options = "{}";
    drill.state = "observe";
    drill.created_us = 1;
    auto drill_id = (*drills)->createDrill(drill);
    REQUIRE(drill_id);
    storage::RecoveryEntry entry;
    entry.drill_id = *drill_id;
    entry.cluster = *cluster;
    entry.node = 1;
    entry.action = "start";
    entry.phase = "observe";
    entry.created_us = 1;
    entry.injection = "done";
    auto id = (*drills)->addRecovery(entry);
    REQUIRE(id);
    entry_id = *id;
  }

  const auto port = freePort();
  const auto yaml =
      "storage: {path: " + db + "}\nhttp: {host: 127.0.0.1, port: " + std::to_string(port) +
      ", auth: none}\nclusters:\n  - name: mock\n    bootstrap: " + mock.bootstrap() +
      "\n    probe:\n      interval_ms: 50\n      topics: [orders]\n    inventory:\n      - id: 1\n"
      "        local: {pid_file: " +
      (dir / "none.pid").string() + ", start_command: [/bin/false]}\n";
  const auto config = config::parseConfig(yaml, "test.yaml");

  auto starting = std::async(std::launch::async, [&] { return daemon::Daemon::start(config, {}); });
  // The replay tries each entry for up to 600 s: start-up does not wait for it.
  REQUIRE(starting.wait_for(60s) == std::future_status::ready);
  auto started = starting.get();
  REQUIRE(std::holds_alternative<std::unique_ptr<daemon::Daemon>>(started));
  auto& kfaild = *std::get<std::unique_ptr<daemon::Daemon>>(started);

  // The entry, with the replay's failed attempts as they come.
  nlohmann::json listed;
  for (int i = 0; i < 100; ++i) {
    api::testing::HttpConnection http(port);
    const auto reply = http.get("/api/v1/recoveries");
    REQUIRE(reply.status == 200);
    listed = reply.json();
    const auto& items = listed["items"];
    if (!items.empty() && items[0]["attempts"].get<int>() > 0) break;
    std::this_thread::sleep_for(100ms);
  }
  INFO(listed.dump());
  const auto& entries = listed["items"];
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["id"] == entry_id);
  CHECK(entries[0]["attempts"].get<int>() > 0);
  CHECK(entries[0]["last_error"].get<std::string>().find("/bin/false") != std::string::npos);

  {
    api::testing::HttpConnection http(port);
    const auto resolved =
        http.request({"POST",
                      "/api/v1/recoveries/" + std::to_string(entry_id) + "/resolve",
                      R"({"note":"node 1 retired"})",
                      {{"Content-Type", "application/json"}}});
    CHECK(resolved.status == 200);
  }
  // The replay gives the entry up and leaves it resolved.
  std::this_thread::sleep_for(1500ms);
  auto drills = storage::SqliteDrillStore::open(db);
  REQUIRE(drills);
  auto pending = (*drills)->pendingRecoveries();
  REQUIRE(pending);
  CHECK(pending->empty());
  CHECK(kfaild.stop() == 0);
}

}  // namespace daemon_recovery_test
