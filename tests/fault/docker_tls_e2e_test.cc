// The Docker injector over TLS, as to an engine set up with --tlsverify: Podman's Docker API
// (scripts/drill-env/podman-up) behind stunnel, which presents a certificate of the test's CA and
// requires a client certificate of the same CA. The injector inspects, kills and starts a small
// container of the test's own; it needs no Kafka lab.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "server/common/clock.h"
#include "server/fault/docker_injector.h"
#include "server/fault/errc.h"
#include "tests/fault/lab_broker.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certs.h"

namespace docker_tls_e2e_test {

using namespace kfaild;
using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

std::uint16_t freePort() {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

bool accepts(std::uint16_t port) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket socket(ioc);
  boost::system::error_code ec;
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
  return !ec;
}

// A container running `sleep 600` on the rootfs podman-up builds, removed with the object.
class SleepingContainer {
 public:
  explicit SleepingContainer(const std::string& rootfs)
      : name_("kfaild-tls-test-" + std::to_string(getpid()) + "-" +
              std::to_string(std::random_device()() % 100000)) {
    std::string out;
    const int code =
        testing::shellCommand("podman run --detach --name " + name_ + " --network host --rootfs " +
                                  rootfs + " /usr/bin/sleep 600 2>&1",
                              &out);
    INFO(out);
    REQUIRE(code == 0);
  }
  ~SleepingContainer() {
    testing::shellCommand("podman rm --force --time 0 " + name_ + " >/dev/null 2>&1");
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

}  // namespace

TEST_CASE(
    "over TLS with a client certificate the Docker injector inspects, kills and starts a "
    "container, and the engine's terminator refuses a client without one",
    "[e2e][fault][podman]") {
  std::string env;
  REQUIRE(testing::shellCommand(std::string(KFAILD_SOURCE_DIR) + "/scripts/drill-env/podman-up",
                                &env) == 0);
  const auto socket = testing::assignment(env, "KFAILD_PODMAN_SOCKET");
  const auto rootfs = testing::assignment(env, "KFAILD_PODMAN_ROOTFS");
  REQUIRE_FALSE(socket.empty());
  REQUIRE_FALSE(rootfs.empty());

  testing::TempDir dir;
  const testing::TestCertificates certs(dir / "certs");
  const auto port = freePort();
  const auto conf = dir / "stunnel.conf";
  std::ofstream(conf) << "foreground = yes\n"
                         "pid =\n"
                         "debug = info\n"
                         "[docker]\n"
                         "accept = 127.0.0.1:"
                      << port
                      << "\n"
                         "connect = "
                      << socket
                      << "\n"
                         "cert = "
                      << certs.serverCert()
                      << "\n"
                         "key = "
                      << certs.serverKey()
                      << "\n"
                         "CAfile = "
                      << certs.ca()
                      << "\n"
                         "verifyChain = yes\n"
                         "requireCert = yes\n"
                         "sslVersionMin = TLSv1.2\n";
  const auto log = (dir / "stunnel.log").string();
  testing::ChildProcess stunnel({"/usr/bin/stunnel4", conf.string()}, log);
  REQUIRE(testing::eventually(10s, [&] { return accepts(port); }));
  INFO("stunnel log: " << dir.path() / "stunnel.log");

  SleepingContainer container(rootfs);
  const common::SystemClock clock;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  config::DockerTarget target{endpoint, container.name()};
  target.tls = config::DockerTls{certs.ca(), certs.clientCert(), certs.clientKey()};
  DockerInjector injector(target, LogZone::utc, clock);

  const auto version = injector.apiVersion();
  REQUIRE(version);
  CHECK(*version == "1.41");
  const auto running = injector.inspect();
  REQUIRE(running);
  CHECK(running->running);
  REQUIRE(running->pid);

  const auto killed = injector.kill();
  REQUIRE(killed);
  CHECK(killed->fault_time_source == "docker:State.FinishedAt");
  const auto dead = injector.inspect();
  REQUIRE(dead);
  CHECK_FALSE(dead->running);
  CHECK(dead->detail == "exited (exit code 137)");

  // Podman may refuse a start right after a kill for a moment (see docker_injector_e2e_test).
  Result<FaultRecord> started = faultError(errc::engine_error, "not tried");
  for (int attempt = 0; attempt < 6 && !started; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::seconds(1 << (attempt - 1)));
    started = injector.start();
  }
  INFO((started ? std::string() : started.error().describe()));
  REQUIRE(started);
  const auto again = injector.inspect();
  REQUIRE(again);
  CHECK(again->running);
  CHECK(again->pid != running->pid);

  {
    INFO("no client certificate: the terminator refuses it");
    config::DockerTarget anonymous{endpoint, container.name()};
    anonymous.tls = config::DockerTls{certs.ca(), "", ""};
    DockerInjector refused(anonymous, LogZone::utc, clock);
    const auto answer = refused.inspect();
    REQUIRE_FALSE(answer);
    INFO(answer.error().message);
    CHECK(answer.error().code == errc::permission_denied);
    CHECK(answer.error().message.find("TLS with " + endpoint + ": ") == 0);
    // TLS 1.3: the terminator checks the certificate after the client's handshake ended; its
    // alert arrives on the first read, or its close already resets the request's write.
    const bool alert = answer.error().message.find("certificate required") != std::string::npos;
    const bool reset =
        answer.error().message.find("right after the handshake") != std::string::npos;
    CHECK((alert || reset));
  }
  {
    INFO("the engine's certificate is not signed by the CA given");
    config::DockerTarget wrong_ca{endpoint, container.name()};
    wrong_ca.tls = config::DockerTls{certs.otherCa(), certs.clientCert(), certs.clientKey()};
    DockerInjector refused(wrong_ca, LogZone::utc, clock);
    const auto answer = refused.inspect();
    REQUIRE_FALSE(answer);
    CHECK(answer.error().code == errc::permission_denied);
    INFO(answer.error().message);
    // OpenSSL's reason depends on whether the terminator sends its CA along ("self-signed
    // certificate in certificate chain", stunnel does) or not ("unable to get local issuer").
    CHECK(answer.error().message.find("TLS with " + endpoint +
                                      ": handshake: certificate verify failed (") == 0);
  }
  {
    INFO("plain HTTP to the TLS port gets no engine answer");
    config::DockerTarget plain{endpoint, container.name()};
    DockerInjector refused(plain, LogZone::utc, clock, {}, std::chrono::milliseconds(3000));
    CHECK_FALSE(refused.inspect());
  }
  CHECK(stunnel.running());
}

}  // namespace docker_tls_e2e_test
