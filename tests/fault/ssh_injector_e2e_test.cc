// The SSH injector against a real sshd on 127.0.0.1 (scripts/drill-env/sshd-up) reaching the
// lab's broker 1 through its pid file, as kfaild would reach a broker on another host.

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/fault/errc.h"
#include "server/fault/kafka_log.h"
#include "server/fault/ssh_injector.h"
#include "tests/fault/lab_broker.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace ssh_injector_e2e_test {

using namespace kfaild;
using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

struct Sshd {
  std::string host, user, identity, known_hosts;
  int port = 0;
};

Sshd sshdUp() {
  std::string out;
  const int rc =
      testing::shellCommand(std::string(KFAILD_SOURCE_DIR) + "/scripts/drill-env/sshd-up", &out);
  REQUIRE(rc == 0);
  Sshd s;
  s.host = testing::assignment(out, "KFAILD_SSHD_HOST");
  s.user = testing::assignment(out, "KFAILD_SSHD_USER");
  s.identity = testing::assignment(out, "KFAILD_SSHD_IDENTITY");
  s.known_hosts = testing::assignment(out, "KFAILD_SSHD_KNOWN_HOSTS");
  s.port = std::stoi(testing::assignment(out, "KFAILD_SSHD_PORT"));
  REQUIRE_FALSE(s.identity.empty());
  return s;
}

config::SshTarget brokerOneOver(const Sshd& sshd) {
  config::SshTarget t;
  t.host = sshd.host;
  t.user = sshd.user;
  t.port = sshd.port;
  t.identity_file = sshd.identity;
  t.connect_timeout_s = 5;
  t.options = {"StrictHostKeyChecking=yes", "UserKnownHostsFile=" + sshd.known_hosts};
  t.pid_command = "cat " + testing::labPidFile(1);
  t.start_command = testing::labEnvironment() + testing::labScript() + " start 1";
  t.log_dir = testing::labLogDir(1);
  return t;
}

}  // namespace

TEST_CASE("over ssh kill takes the remote clock and start brings broker 1 back",
          "[e2e][fault][sshd]") {
  const auto sshd = sshdUp();
  testing::LabBrokerOne broker;
  const common::SystemClock clock;
  SshInjector injector(brokerOneOver(sshd), LogZone::local, clock);

  const auto before = injector.inspect();
  REQUIRE(before);
  REQUIRE(before->running);
  CHECK_FALSE(before->paused);
  REQUIRE(before->started_at);
  CHECK(*before->started_at <= clock.wallNow());

  const auto killed = injector.kill();
  REQUIRE(killed);
  REQUIRE(killed->fault_at);
  CHECK(killed->fault_time_source == "ssh:remote-clock");
  // The same host's clock, read after ssh connected: later than the request, within the
  // connection's set-up.
  const auto skew = *killed->fault_at - killed->requested_at;
  INFO("remote clock - local request: " << skew << " µs");
  CHECK(skew > 0);
  CHECK(skew < 5'000'000);
  CHECK(killed->detail == "SIGKILL to pid " + std::to_string(*before->pid) + " on 127.0.0.1");

  const auto gone = injector.inspect();
  REQUIRE(gone);
  CHECK_FALSE(gone->running);
  const auto again = injector.kill();
  REQUIRE_FALSE(again);
  CHECK(again.error().code == errc::no_such_process);

  const auto started = injector.start();
  REQUIRE(started);
  const auto after = injector.inspect();
  REQUIRE(after);
  CHECK(after->running);
  CHECK(after->pid != before->pid);
  CHECK(broker.waitInIsr(120s));
}

TEST_CASE("over ssh a graceful stop of broker 1 is read back from its log over ssh",
          "[e2e][fault][sshd]") {
  const auto sshd = sshdUp();
  testing::LabBrokerOne broker;
  const common::SystemClock clock;
  SshInjector injector(brokerOneOver(sshd), LogZone::local, clock);

  const auto stopped = injector.stop(30s);
  REQUIRE(stopped);
  INFO(stopped->detail);
  CHECK(stopped->detail.find(", exited") != std::string::npos);
  REQUIRE(stopped->fault_at);
  CHECK(stopped->fault_time_source == "ssh:remote-clock");

  const auto lines = injector.logLines("server.log", stopped->requested_at - 1'000'000,
                                       {std::string(kSigtermLine)});
  REQUIRE(lines);
  REQUIRE(lines->size() == 1);
  const auto& line = lines->front();
  // One host, one clock: the rounds over one session find it so, within their bracket, and the
  // bracket is a round trip over the session, not the connection's set-up.
  INFO("log clock offset " << line.clock_offset_us << " ± " << line.clock_uncertainty_us
                           << " µs, fault ± " << stopped->uncertainty_us << " µs");
  CHECK(std::abs(line.clock_offset_us) <= line.clock_uncertainty_us);
  CHECK(line.clock_uncertainty_us < 100'000);
  CHECK(stopped->uncertainty_us < 100'000);
  // Both on kfaild's clock: the line after the fault, within their uncertainties.
  const auto slack = stopped->uncertainty_us + line.clock_uncertainty_us + 1'000;
  CHECK(line.t >= stopped->faultTime() - slack);
  CHECK(line.t - stopped->faultTime() < 1'000'000);
  WARN("ssh clock offset of the log " << line.clock_offset_us << " ± " << line.clock_uncertainty_us
                                      << " µs; fault time ± " << stopped->uncertainty_us << " µs");
  const auto none = injector.logLines("server.log", stopped->requested_at, {"no such line, ever"});
  REQUIRE(none);
  CHECK(none->empty());

  REQUIRE(injector.start());
  CHECK(broker.waitInIsr(120s));
}

TEST_CASE("over ssh pause freezes broker 1 and resume thaws the same JVM", "[e2e][fault][sshd]") {
  const auto sshd = sshdUp();
  testing::LabBrokerOne broker;
  const common::SystemClock clock;
  SshInjector injector(brokerOneOver(sshd), LogZone::local, clock);
  const auto paused = injector.pause({"ssh_e2e", 60s});
  REQUIRE(paused);
  INFO(paused->detail);
  CHECK(paused->detail.find("thaws by itself 65 s after (") != std::string::npos);
  const auto frozen = injector.inspect();
  REQUIRE(frozen);
  CHECK(frozen->running);
  CHECK(frozen->paused);
  std::this_thread::sleep_for(2s);
  const auto resumed = injector.resume("ssh_e2e");
  REQUIRE(resumed);
  CHECK(resumed->detail.find("; its expiry timer cancelled (") != std::string::npos);
  const auto thawed = injector.inspect();
  REQUIRE(thawed);
  CHECK_FALSE(thawed->paused);
  CHECK(thawed->pid == frozen->pid);
  CHECK(broker.waitInIsr(60s));
}

namespace {

// The state letter of /proc/<pid>/stat ('T': stopped), 0 when it is gone.
char stateOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() ? text[close + 2] : 0;
}

}  // namespace

TEST_CASE(
    "over ssh a pause thaws by itself at its expiry after the session ended, and resume cancels "
    "its timer",
    "[e2e][fault][sshd]") {
  const auto sshd = sshdUp();
  const testing::TempDir dir;
  // A stand-in with a Kafka JVM's command line: the remote side's checks, without a JVM.
  const auto ready = (dir / "ready").string();
  testing::ChildProcess jvm(
      {"/bin/bash", "-c", "exec -a java /usr/bin/python3 -c \"$0\" kafka.Kafka \"$1\"",
       "import sys, time\nopen(sys.argv[2], 'w').close()\nwhile True: time.sleep(0.05)\n", ready},
      (dir / "jvm.log").string());
  REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
  const auto pid_file = (dir / "kafka.pid").string();
  std::ofstream(pid_file) << jvm.pid() << "\n";
  auto target = brokerOneOver(sshd);
  target.pid_command = "cat " + pid_file;
  const common::SystemClock clock;
  SshInjector injector(target, LogZone::local, clock);

  const PauseSpec expiring{"ssh_expiry_" + std::to_string(::getpid()), 1s, 1s};
  const auto paused = injector.pause(expiring);
  REQUIRE(paused);
  INFO(paused->detail);
  CHECK(paused->detail.rfind("SIGSTOP to pid " + std::to_string(jvm.pid()) +
                                 " on 127.0.0.1; thaws by itself 2 s after (",
                             0) == 0);
  CHECK(stateOf(jvm.pid()) == 'T');
  // The ssh session has ended; nothing of kfaild's resumes the broker, its timer on the host does.
  REQUIRE(testing::eventually(6s, [&] { return stateOf(jvm.pid()) != 'T'; }));

  const PauseSpec held{"ssh_cancel_" + std::to_string(::getpid()), 1s, 1s};
  REQUIRE(injector.pause(held));
  const auto resumed = injector.resume(held.drill);
  REQUIRE(resumed);
  INFO(resumed->detail);
  CHECK(resumed->detail.find("; its expiry timer cancelled (") != std::string::npos);
  // Frozen again by hand past the cancelled timer's expiry: it stays frozen.
  REQUIRE(::kill(jvm.pid(), SIGSTOP) == 0);
  std::this_thread::sleep_for(2500ms);
  CHECK(stateOf(jvm.pid()) == 'T');
  ::kill(jvm.pid(), SIGCONT);
}

TEST_CASE("over ssh a pid that is not a Kafka JVM is refused on the remote side",
          "[e2e][fault][sshd]") {
  auto target = brokerOneOver(sshdUp());
  target.pid_command = "echo $$";  // the remote shell itself: alive, but no broker
  const common::SystemClock clock;
  SshInjector injector(target, LogZone::local, clock);
  const auto r = injector.kill();
  REQUIRE_FALSE(r);
  CHECK(r.error().code == errc::not_a_broker);
  CHECK(r.error().message.find("refusing to signal it") != std::string::npos);

  target.pid_command = "cat /nonexistent/kafka.pid";
  const auto missing = SshInjector(target, LogZone::local, clock).stop(1s);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::no_such_process);
  CHECK(missing.error().message.find("No such file or directory") != std::string::npos);
}

TEST_CASE("an sshd that is down is ssh_failed with ssh's own message", "[integration][fault]") {
  config::SshTarget target;
  target.host = "127.0.0.1";
  target.port = 1;  // nothing listens on tcpmux
  target.connect_timeout_s = 3;
  target.pid_command = "cat /nonexistent";
  const common::SystemClock clock;
  SshInjector injector(target, LogZone::utc, clock);
  const auto r = injector.kill();
  REQUIRE_FALSE(r);
  CHECK(r.error().code == errc::ssh_failed);
  CHECK(r.error().message.find("connect to host 127.0.0.1 port 1: Connection refused") !=
        std::string::npos);
}

}  // namespace ssh_injector_e2e_test
