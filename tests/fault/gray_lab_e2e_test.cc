// Gray faults through the local injector on the namespaced lab (KFAILD_LAB_NETNS=1,
// deploy/lab/README.md). On a lab in the default mode (127.0.0.1) there is nothing to cut one node
// off with: the test runs on the `lab_netns` fixture's lab (tests/CMakeLists.txt).

#include <sys/statvfs.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include "server/common/clock.h"
#include "server/common/sensitive.h"
#include "server/fault/command.h"
#include "server/fault/local_injector.h"
#include "tests/support/lab.h"

using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

// "ok", "timeout" or "refused": a TCP connect from this host (kfaild's place) to the node.
std::string connectFromHost(const std::string& address, int port) {
  const std::string code =
      "import socket\n"
      "try:\n"
      "  socket.create_connection(('" + address + "', " + std::to_string(port) +
      "), timeout=2).close(); print('ok')\n"
      "except socket.timeout:\n  print('timeout')\n"
      "except (ConnectionRefusedError, ConnectionResetError):\n  print('refused')\n"
      "except OSError as e:\n  print('error', e)\n";
  auto out = runCommand({"python3", "-c", code}, 10s);
  if (!out.ok()) return "runCommand failed";
  auto text = out->out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::size_t fencings(int broker) {
  const auto log = kfaild::testing::labOutput("logs 100 controller.log");
  const auto needle = "Fencing broker " + std::to_string(broker) + " at epoch";
  std::size_t n = 0;
  for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

std::uint64_t freeBytes(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.f_bfree) * st.f_frsize;
}

}  // namespace

TEST_CASE("on the namespaced lab a broker cut off from clients refuses them, one cut off from the quorum is fenced, a full log disk is freed, and heal restores each",
          "[e2e][netns]") {
  kfaild::testing::NamespacedLabEnv lab_env;
  const auto b1 = kfaild::testing::labNode(1);
  const auto b2 = kfaild::testing::labNode(2);
  const auto b3 = kfaild::testing::labNode(3);
  const auto controller = kfaild::testing::labNode(100);
  REQUIRE(b1);
  REQUIRE(b2);
  REQUIRE(b3);
  REQUIRE(controller);
  REQUIRE_FALSE(b1->netns.empty());
  kfaild::common::SystemClock clock;
  LocalInjector injector({b1->pid_file, {}, ""}, LogZone::utc, clock);
  injector.placeGrayFaults({b1->netns, b1->fill_dir});
  CHECK(injector.refusal(GrayFault::isolate).empty());
  CHECK(injector.refusal(GrayFault::disk_full).empty());
  CHECK_FALSE(injector.refusal(GrayFault::disk_slow).empty());
  REQUIRE(connectFromHost(b1->address, b1->port) == "ok");

  IsolateSpec spec;
  spec.drill = "e2e1";
  spec.duration = 60s;
  spec.peers.quorum = {controller->address};
  spec.peers.brokers = {b2->address, b3->address};

  SECTION("from clients, reject") {
    spec.from = IsolateFrom::clients;
    spec.mode = IsolateMode::reject;
    auto record = injector.isolate(spec);
    REQUIRE(record.ok());
    // The command line is operator-only text (common::sensitive: marked for redaction).
    CHECK(record->detail.rfind(std::string(kfaild::common::kSensitiveOpen) + "ip netns exec " + b1->netns + " nft ", 0) == 0);
    CHECK(connectFromHost(b1->address, b1->port) == "refused");
    CHECK(connectFromHost(b2->address, b2->port) == "ok");
    REQUIRE(injector.heal("e2e1").ok());
    CHECK(connectFromHost(b1->address, b1->port) == "ok");
  }

  SECTION("from the quorum, drop: the controller fences it while clients still reach it") {
    spec.from = IsolateFrom::quorum;
    spec.mode = IsolateMode::drop;
    const auto before = fencings(1);
    REQUIRE(injector.isolate(spec).ok());
    const auto t0 = std::chrono::steady_clock::now();
    while (fencings(1) == before && std::chrono::steady_clock::now() - t0 < 30s)
      std::this_thread::sleep_for(500ms);
    CHECK(fencings(1) > before);
    CHECK(connectFromHost(b1->address, b1->port) == "ok");
    REQUIRE(injector.heal("e2e1").ok());
    CHECK(kfaild::testing::lab("wait --timeout 60") == 0);
  }

  SECTION("disk_full fills the broker's log filesystem, Kafka stops the broker, heal frees it") {
    DiskFullSpec disk;
    disk.drill = "e2e1";
    disk.duration = 60s;
    // The broker's log outlives its restarts: only what it wrote after the fill counts. (Its
    // fill_dir is <node dir>/disk, its log <node dir>/logs/server.log.)
    const auto server_log = std::filesystem::path(b1->fill_dir).parent_path() / "logs" / "server.log";
    const auto logged_before = std::filesystem::file_size(server_log);
    auto filled = injector.fillDisk(disk);
    REQUIRE(filled.ok());
    // The df line the filler printed right after filling: "dev size used avail pct mount". (A
    // broker that stops trims its preallocated index files, so statvfs later shows a few MB.)
    const auto df = filled->detail.substr(filled->detail.rfind('\n') + 1);
    std::istringstream fields(df);
    std::string dev;
    std::uint64_t size = 0, used = 0, avail = 1;
    fields >> dev >> size >> used >> avail;
    CHECK(size > 0);
    CHECK(avail < 64 * 1024);
    // Its only log dir failed, and the broker goes. How depends on the first write that fails: a
    // topic partition's ("Shutdown broker because all log dirs in ... have failed") or, as often,
    // the metadata log's, which is in the same dir ("Error while appending records to
    // __cluster_metadata-0", then the JVM halts without another line). Both name the cause.
    const auto t0 = std::chrono::steady_clock::now();
    while (connectFromHost(b1->address, b1->port) == "ok" &&
           std::chrono::steady_clock::now() - t0 < 30s)
      std::this_thread::sleep_for(500ms);
    CHECK(connectFromHost(b1->address, b1->port) != "ok");
    std::ifstream in(server_log);
    in.seekg(static_cast<std::streamoff>(logged_before));
    const std::string log{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(log.find("java.io.IOException: No space left on device") != std::string::npos);
    CHECK((log.find("because all log dirs in") != std::string::npos ||
           log.find("Error while appending records to __cluster_metadata-0") != std::string::npos));
    REQUIRE(injector.heal("e2e1").ok());
    CHECK(freeBytes(b1->fill_dir) > 100u * 1024 * 1024);
    CHECK(kfaild::testing::lab("start 1 --wait --timeout 120") == 0);
  }

  auto swept = injector.sweep();
  REQUIRE(swept.ok());
  CHECK(swept->empty());
}
