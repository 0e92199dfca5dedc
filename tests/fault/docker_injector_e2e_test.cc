// The Docker injector against a real Docker Engine API — Podman's compatible service started by
// scripts/drill-env/podman-up — with the lab's broker 1 running in a container
// (`lab start 1 --container`), so kill, stop, start, pause and logs act as `docker ...` would.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "server/fault/docker_injector.h"
#include "server/fault/errc.h"
#include "server/fault/kafka_log.h"
#include "tests/fault/lab_broker.h"
#include "tests/support/paths.h"

namespace docker_injector_e2e_test {

using namespace kfaild;
using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

std::string podmanUp(const std::string& key) {
  std::string out;
  REQUIRE(testing::shellCommand(std::string(KFAILD_SOURCE_DIR) + "/scripts/drill-env/podman-up",
                                &out) == 0);
  const auto value = testing::assignment(out, key);
  REQUIRE_FALSE(value.empty());
  return value;
}

std::string podmanEndpoint() {
  return "unix://" + podmanUp("KFAILD_PODMAN_SOCKET");
}

// A container of this test's own that only sleeps, removed on destruction.
class SleepingContainer {
 public:
  explicit SleepingContainer(const std::string& name) : name_(name) {
    REQUIRE(testing::shellCommand("podman run --detach --replace --name " + name_ +
                                  " --network host --rootfs " + podmanUp("KFAILD_PODMAN_ROOTFS") +
                                  " sleep 600 >/dev/null") == 0);
  }
  ~SleepingContainer() {
    testing::shellCommand("podman rm --force --time 0 " + name_ + " >/dev/null 2>&1");
  }

 private:
  std::string name_;
};

}  // namespace

TEST_CASE(
    "through the Docker API broker 1's container is killed and stopped and started and "
    "paused with the engine's own times",
    "[e2e][fault][podman]") {
  const auto endpoint = podmanEndpoint();
  testing::LabBrokerOne broker(testing::LabBrokerOne::Mode::container);
  const auto container = testing::trimmedOutput(testing::labOutput("container 1"));
  const common::SystemClock clock;
  // The container's stdout is Kafka's root logger; controller.log and state-change.log are read
  // with grep through the exec API, in the node's log dir (mounted at the same path inside).
  DockerInjector injector({endpoint, container}, LogZone::local, clock, testing::labLogDir(1));

  const auto version = injector.apiVersion();
  REQUIRE(version);
  CHECK(*version == "1.41");
  const auto running = injector.inspect();
  REQUIRE(running);
  REQUIRE(running->running);
  CHECK_FALSE(running->paused);
  REQUIRE(running->pid);
  CHECK(*running->pid == broker.status().value("pid", 0));  // the JVM as the host sees it
  CHECK_FALSE(running->finished_at);

  {
    INFO("kill: FinishedAt is the fault time, within 2 s of the request");
    const auto killed = injector.kill();
    REQUIRE(killed);
    REQUIRE(killed->fault_at);
    CHECK(killed->fault_time_source == "docker:State.FinishedAt");
    const auto delta = *killed->fault_at - killed->requested_at;
    INFO("FinishedAt - requested_at = " << delta << " µs");
    CHECK(delta >= 0);
    CHECK(delta < 2'000'000);
    const auto dead = injector.inspect();
    REQUIRE(dead);
    CHECK_FALSE(dead->running);
    CHECK(dead->finished_at == killed->fault_at);
    CHECK(dead->detail == "exited (exit code 137)");

    const auto again = injector.kill();
    REQUIRE_FALSE(again);
    CHECK(again.error().code == errc::invalid_state);
    const auto pause_dead = injector.pause({"docker_e2e", 60s});
    REQUIRE_FALSE(pause_dead);
    CHECK(pause_dead.error().code == errc::invalid_state);

    // Podman may still be cleaning up the killed container for a while (seen: "write child:
    // broken pipe" three times in a row, one second apart); the drill runner's recovery retries a
    // refused start with backoff (1, 2, 4 ... s), and so does this test, for up to 31 s.
    auto started = injector.start();
    for (int attempt = 2, wait_s = 1; attempt <= 6 && !started; ++attempt, wait_s *= 2) {
      WARN("start refused, retrying in " << wait_s << " s: " << started.error().describe());
      std::this_thread::sleep_for(std::chrono::seconds(wait_s));
      started = injector.start();
    }
    INFO("start: " << (started ? std::string("ok") : started.error().describe()));
    REQUIRE(started);
    REQUIRE(started->fault_at);
    CHECK(started->fault_time_source == "docker:State.StartedAt");
    CHECK(*started->fault_at >= started->requested_at - 1'000'000);
    const auto back = injector.inspect();
    REQUIRE(back);
    CHECK(back->running);
    CHECK(back->pid != running->pid);
    const auto twice = injector.start();
    REQUIRE(twice);
    CHECK(twice->detail.rfind("already running", 0) == 0);
    REQUIRE(testing::lab("wait --timeout 180") == 0);
    CHECK(broker.waitInIsr(120s));
  }

  {
    INFO("stop: Kafka's SIGTERM line in the container log is the fault time");
    const auto stopped = injector.stop(30s);
    REQUIRE(stopped);
    INFO(stopped->detail);
    REQUIRE(stopped->fault_at);
    CHECK(stopped->fault_time_source == "docker:logs");
    CHECK(*stopped->fault_at >= stopped->requested_at - 1'000);  // ms in the log line
    CHECK(*stopped->fault_at - stopped->requested_at < 2'000'000);
    CHECK(stopped->detail.find("exit code 143") != std::string::npos);  // JVM's exit on SIGTERM

    const auto sigterm = injector.logLines("server.log", stopped->requested_at - 1'000'000,
                                           {std::string(kSigtermLine)});
    REQUIRE(sigterm);
    REQUIRE(sigterm->size() == 1);
    CHECK(sigterm->front().t == *stopped->fault_at);
    const auto again = injector.stop(5s);
    REQUIRE_FALSE(again);
    CHECK(again.error().code == errc::invalid_state);

    REQUIRE(injector.start());
    REQUIRE(testing::lab("wait --timeout 180") == 0);
    // Through exec: the broker's state-change.log has the leader epochs it started with.
    const auto leaders =
        injector.logLines("state-change.log", stopped->requested_at, {"starts at leader epoch"});
    REQUIRE(leaders);
    CHECK_FALSE(leaders->empty());
    const auto nofile = injector.logLines("no-such.log", 0, {"x"});
    REQUIRE_FALSE(nofile);
    CHECK(nofile.error().message.find("No such file or directory") != std::string::npos);
    CHECK(broker.waitInIsr(120s));
  }

  {
    INFO("pause freezes the container and unpause thaws the same JVM");
    const auto paused = injector.pause({"docker_e2e", 60s});
    REQUIRE(paused);
    INFO(paused->detail);
    // podman-up installs curl: the engine is on this host's unix socket, so the pause expires.
    CHECK(paused->detail.find("thaws by itself 65 s after (") != std::string::npos);
    const auto frozen = injector.inspect();
    REQUIRE(frozen);
    CHECK(frozen->paused);
    CHECK(frozen->running);
    CHECK(broker.status().value("paused", false));
    std::this_thread::sleep_for(3s);
    const auto twice = injector.pause({"docker_e2e", 60s});
    REQUIRE_FALSE(twice);
    CHECK(twice.error().code == errc::invalid_state);
    const auto resumed = injector.resume("docker_e2e");
    REQUIRE(resumed);
    CHECK(resumed->detail.find("; its expiry timer cancelled (") != std::string::npos);
    const auto thawed = injector.inspect();
    REQUIRE(thawed);
    CHECK_FALSE(thawed->paused);
    CHECK(thawed->pid == frozen->pid);
    CHECK(broker.waitInIsr(60s));
  }
}

TEST_CASE("through the Docker API a container that does not exist is no_such_container",
          "[e2e][fault][podman]") {
  const common::SystemClock clock;
  DockerInjector injector({podmanEndpoint(), "kfaild-no-such-container"}, LogZone::utc, clock);
  for (const auto& r : {injector.kill(), injector.start(), injector.pause({"docker_e2e", 60s})}) {
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::no_such_container);
    CHECK(r.error().message.find("kfaild-no-such-container") != std::string::npos);
  }
  const auto state = injector.inspect();
  REQUIRE_FALSE(state);
  CHECK(state.error().code == errc::no_such_container);
}

TEST_CASE(
    "through the Docker API a paused container thaws by itself at its expiry, and resume cancels "
    "its timer",
    "[e2e][fault][podman]") {
  const auto endpoint = podmanEndpoint();
  const auto name = "kfaild-pause-expiry-" + std::to_string(::getpid());
  const SleepingContainer container(name);
  const common::SystemClock clock;
  DockerInjector injector({endpoint, name}, LogZone::utc, clock);

  const PauseSpec expiring{"docker_expiry_" + std::to_string(::getpid()), 1s, 1s};
  const auto paused = injector.pause(expiring);
  REQUIRE(paused);
  INFO(paused->detail);
  CHECK(paused->detail.rfind("froze container " + name + "; thaws by itself 2 s after (", 0) == 0);
  CHECK(injector.inspect()->paused);
  // Nothing of kfaild's unpauses it: its timer on this host does, through the engine's socket.
  REQUIRE(testing::eventually(8s, [&] { return !injector.inspect()->paused; }));
  CHECK(injector.inspect()->running);

  const PauseSpec held{"docker_cancel_" + std::to_string(::getpid()), 1s, 1s};
  REQUIRE(injector.pause(held));
  const auto resumed = injector.resume(held.drill);
  REQUIRE(resumed);
  INFO(resumed->detail);
  CHECK(resumed->detail.rfind("thawed container " + name + "; its expiry timer cancelled (", 0) ==
        0);
  // Paused again by hand past the cancelled timer's expiry: it stays paused.
  REQUIRE(testing::shellCommand("podman pause " + name + " >/dev/null") == 0);
  std::this_thread::sleep_for(2500ms);
  CHECK(injector.inspect()->paused);
  testing::shellCommand("podman unpause " + name + " >/dev/null 2>&1");
}

}  // namespace docker_injector_e2e_test
