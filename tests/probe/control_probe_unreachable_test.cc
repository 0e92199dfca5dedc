// The control probe against a cluster none of whose bootstrap servers accepts a connection. A
// librdkafka admin request waiting for its controller's broker reconnects at once on every broker
// state change, past reconnect.backoff.ms (librdkafka 2.14.2): with every broker gone, each
// check kept a core busy for its whole timeout, one check after another. After a failed check the
// probe now asks librdkafka again only once a bootstrap server accepts a TCP connection.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "server/common/clock.h"
#include "server/kafka/quorum.h"
#include "server/probe/control_probe.h"
#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace control_probe_unreachable_test {

using namespace kfaild;
using namespace std::chrono_literals;

namespace {

// A listening TCP socket on an ephemeral loopback port that the kernel accepts connections on
// (nothing reads them: no Kafka behind it). close() makes the port refuse again.
struct Listener {
  int fd = -1;
  std::uint16_t port = 0;

  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port = ntohs(address.sin_port);
  }
  void listen() const { REQUIRE(::listen(fd, 64) == 0); }
  ~Listener() {
    if (fd >= 0) ::close(fd);
  }
};

// A port bound but not listening refuses connections, and stays ours for the test.
std::string refusingBootstrap(const Listener& l) {
  return "127.0.0.1:" + std::to_string(l.port);
}

}  // namespace

TEST_CASE(
    "a bootstrap list splits into host and port, and only a listening server accepts a connection",
    "[integration][probe]") {
  std::string error;
  const auto servers = kafka::bootstrapServers(" PLAINTEXT://a:9092, [::1]:9093,,b:1", &error);
  REQUIRE(servers.size() == 3);
  CHECK(servers[0].host == "a");
  CHECK(servers[0].port == "9092");
  CHECK(servers[1].host == "::1");
  CHECK(servers[1].port == "9093");
  CHECK(error.empty());
  CHECK(kafka::bootstrapServers("nohostport", &error).empty());
  CHECK(error == "bootstrap server \"nohostport\" is not host:port");
  CHECK(kafka::bootstrapServers("", &error).empty());
  CHECK(error == "no bootstrap server given");

  Listener refusing, accepting;
  accepting.listen();
  const auto none = kafka::anyServerAccepts(
      kafka::bootstrapServers(refusingBootstrap(refusing), nullptr), 1000, nullptr);
  REQUIRE_FALSE(none);
  CHECK(none.error().message.find(
            "no bootstrap server accepts a connection (127.0.0.1:" + std::to_string(refusing.port) +
            ": connect: Connection refused)") != std::string::npos);
  CHECK(kafka::anyServerAccepts(
      kafka::bootstrapServers(
          refusingBootstrap(refusing) + ",127.0.0.1:" + std::to_string(accepting.port), nullptr),
      1000, nullptr));
}

TEST_CASE(
    "with no bootstrap server accepting connections the control probe fails each check at once at "
    "its interval, "
    "and asks librdkafka again once one accepts",
    "[integration][probe]") {
  Listener broker;  // bound, not listening: refuses
  testing::TempDir dir;
  auto opened = storage::SqliteStore::open((dir / "kfaild.db").string(), {});
  REQUIRE(opened);
  std::unique_ptr<storage::SqliteStore> store = std::move(*opened);
  const auto bootstrap = refusingBootstrap(broker);
  auto cluster_id = store->ensureCluster("gone", bootstrap);
  REQUIRE(cluster_id);
  config::ClusterConfig cluster;
  cluster.name = "gone";
  cluster.bootstrap = bootstrap;
  cluster.probe.control.interval_us = 100'000;
  cluster.probe.control.gap_threshold_us = 300'000;
  cluster.probe.control.timeout_us = 1'000'000;
  common::SystemClock clock;
  probe::ControlProbe control(cluster, *cluster_id, *store, clock);
  REQUIRE(control.start());

  // The first check is librdkafka's and fails by its 1 s timeout; every later one is refused by
  // the gate within milliseconds, ten to a second. Without the gate each took the whole timeout.
  const auto started = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(3500ms);
  const auto gated = control.status();
  INFO("last error: " << gated.last_error << ", checks " << gated.ops);
  CHECK(gated.failures == gated.ops);
  // About 25 on an idle machine; 14 in a CI run at a load average above 30. Without the gate: 3.
  CHECK(gated.ops >= 8);
  CHECK(gated.last_error.find("no bootstrap server accepts a connection") != std::string::npos);
  CHECK(gated.last_latency_us < 500'000);

  // A server that accepts: the next check is librdkafka's again (it fails too: nothing speaks
  // Kafka behind the socket), so the checks slow to one per timeout.
  broker.listen();
  std::this_thread::sleep_for(500ms);
  const auto before = control.status().ops;
  std::this_thread::sleep_for(2500ms);
  const auto asked = control.status();
  INFO("last error: "
       << asked.last_error << ", checks " << asked.ops - before << " in 2.5 s, "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
       << " s in all");
  CHECK(asked.last_error.find("no bootstrap server accepts a connection") == std::string::npos);
  CHECK(asked.ops - before <= 4);
  control.stop();
}

}  // namespace control_probe_unreachable_test
