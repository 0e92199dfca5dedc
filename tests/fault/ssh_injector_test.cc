#include "server/fault/ssh_injector.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "server/fault/command.h"
#include "server/fault/errc.h"
#include "server/fault/injector_factory.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace ssh_injector_test {

using namespace kfaild::fault;

namespace {

kfaild::config::SshTarget labTarget() {
  kfaild::config::SshTarget t;
  t.host = "127.0.0.1";
  t.user = "root";
  t.port = 2222;
  t.identity_file = "/var/cache/kfaild drill/id ed25519";
  t.connect_timeout_s = 3;
  t.options = {"StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"};
  t.pid_command = "cat /work/main/.lab/node1/kafka.pid";
  t.start_command = "/work/main/lab/lab start 1";
  t.log_dir = "/work/main/.lab/node1/logs";
  return t;
}

}  // namespace

TEST_CASE(
    "ssh runs with a fixed argv where config values are single arguments and the command comes "
    "last",
    "[unit][fault]") {
  const kfaild::testing::ManualClock clock;
  const SshInjector injector(labTarget(), LogZone::utc, clock);
  const auto argv = injector.sshArgv("date");
  REQUIRE(argv);
  const std::vector<std::string> expected = {
      "ssh",
      "-o",
      "BatchMode=yes",
      "-o",
      "ConnectTimeout=3",
      "-p",
      "2222",
      "-i",
      "/var/cache/kfaild drill/id ed25519",  // a space in a path stays inside one argument
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      "UserKnownHostsFile=/dev/null",
      "root@127.0.0.1",
      "--",
      "date"};
  CHECK(*argv == expected);

  // The default port is not spelled out; no user means ssh's own default.
  auto t = labTarget();
  t.port = 22;
  t.user.clear();
  t.identity_file.clear();
  t.options.clear();
  const auto plain = SshInjector(t, LogZone::utc, clock).sshArgv("true");
  REQUIRE(plain);
  CHECK(*plain == std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
                                           "127.0.0.1", "--", "true"});
}

TEST_CASE("a host or user that ssh would read as an option or a shell would interpret is refused",
          "[unit][fault][reliability]") {
  const kfaild::testing::ManualClock clock;
  for (const std::string host :
       {"-oProxyCommand=touch /tmp/x", "k1;reboot", "k1 k2", "$(id)", "`id`", "k1|nc", ""}) {
    auto t = labTarget();
    t.host = host;
    const auto argv = SshInjector(t, LogZone::utc, clock).sshArgv("true");
    REQUIRE_FALSE(argv);
    CHECK(argv.error().code == errc::invalid_target);
  }
  auto t = labTarget();
  t.user = "-lroot";
  CHECK(SshInjector(t, LogZone::utc, clock).sshArgv("true").error().code == errc::invalid_target);
  t.user = "root@evil";
  CHECK(SshInjector(t, LogZone::utc, clock).sshArgv("true").error().code == errc::invalid_target);
  for (const std::string host : {"k1.example.com", "10.0.0.7", "fe80::1%eth0", "kafka_1"}) {
    t = labTarget();
    t.host = host;
    CHECK(SshInjector(t, LogZone::utc, clock).sshArgv("true"));
  }
}

TEST_CASE("the kill script is the pid check and the remote clock and the signal and nothing else",
          "[unit][fault][reliability]") {
  const std::string expected =
      "is_kafka() { if [ -r /proc/$1/cmdline ]; then tr '\\0' '\\n' </proc/$1/cmdline; else "
      "ps -ww -o args= -p $1 | tr ' ' '\\n'; fi | grep -qxF kafka.Kafka; }\n"
      "pid=$(\n"
      "cat /work/main/.lab/node1/kafka.pid\n"
      ")\n"
      "case $pid in ''|*[!0-9]*) echo \"kfaild: the pid command printed no pid: $pid\" >&2; "
      "exit 93;; esac\n"
      "case $(ps -o stat= -p $pid) in ''|Z*) echo \"kfaild: pid $pid is not running\" >&2; "
      "exit 94;; esac\n"
      "is_kafka $pid || { echo \"kfaild: pid $pid is not a Kafka broker JVM; refusing to "
      "signal it\" >&2; exit 95; }\n"
      "echo kfaild-pid=$pid\n"
      "echo kfaild-clock=$(date +%s%N)\n"
      "kill -KILL $pid\n";
  CHECK(ssh_script::signalCommand("cat /work/main/.lab/node1/kafka.pid", Signal::kill) == expected);

  const auto prelude_end = expected.find("echo kfaild-clock");
  CHECK(ssh_script::signalCommand("cat /work/main/.lab/node1/kafka.pid", Signal::stop)
            .substr(prelude_end) ==
        "echo kfaild-clock=$(date +%s%N)\n"
        "kill -STOP $pid\n"
        "n=0; while case $(ps -o stat= -p $pid) in T*) false;; esac && [ $n -lt 20 ]; do "
        "sleep 0.1; n=$((n+1)); done\n");
  CHECK(ssh_script::signalCommand("cat /work/main/.lab/node1/kafka.pid", Signal::cont)
            .substr(prelude_end) ==
        "echo kfaild-clock=$(date +%s%N)\n"
        "kill -CONT $pid\n"
        "n=0; while case $(ps -o stat= -p $pid) in T*) true;; *) false;; esac && [ $n -lt 20 ]; "
        "do sleep 0.1; n=$((n+1)); done\n");
}

TEST_CASE("the stop script's only number is the grace period", "[unit][fault]") {
  const auto script = ssh_script::stopCommand("cat /p", 30);
  const auto prelude_end = script.find("echo kfaild-pid=$pid\n") + 21;
  CHECK(script.substr(prelude_end) ==
        "echo kfaild-clock=$(date +%s%N)\n"
        "kill -TERM $pid\n"
        "kill -CONT $pid 2>/dev/null\n"
        "end=$(($(date +%s) + 30))\n"
        "how=exited\n"
        "while case $(ps -o stat= -p $pid) in ''|Z*) false;; esac; do\n"
        "if [ $how = exited ] && [ $(date +%s) -ge $end ]; then kill -KILL $pid 2>/dev/null; "
        "how=killed; end=$((end + 10)); fi\n"
        "if [ $how = killed ] && [ $(date +%s) -ge $end ]; then echo \"kfaild: pid $pid still "
        "alive 10 s after SIGKILL\" >&2; exit 96; fi\n"
        "sleep 0.1\n"
        "done\n"
        "echo kfaild-stop=$how\n");
}

TEST_CASE("log patterns and the log dir reach grep single-quoted", "[unit][fault]") {
  CHECK(shellQuote("it's $(here)") == "'it'\\''s $(here)'");
  const auto cmd = ssh_script::logsCommand("/var/log/kafka dir", "controller.log",
                                           {"Fencing broker 1", "it's `x`"}, 1'796'400'000'999'999);
  INFO(cmd);
  CHECK(cmd.find("for r in '/var/log/kafka dir'/'controller.log'.*; do\n") != std::string::npos);
  CHECK(cmd.find("-ge 1796400000 ]") != std::string::npos);
  CHECK(cmd.find("grep -h -F -e 'Fencing broker 1' -e 'it'\\''s `x`' -- \"$@\" '/var/log/kafka "
                 "dir'/'controller.log'\n") != std::string::npos);
  CHECK(ssh_script::logsCommand("/l", "server.log", {}, 0)
            .find("grep -h -F -e '' -- \"$@\" '/l'/'server.log'") != std::string::npos);
}

TEST_CASE("the remote clock is read in nanoseconds or in seconds where date has no %N",
          "[unit][fault]") {
  CHECK(parseRemoteClock("1796015337879312744") == 1'796'015'337'879'312);
  CHECK(parseRemoteClock("1796015337N") == 1'796'015'337'000'000);
  CHECK_FALSE(parseRemoteClock(""));
  CHECK_FALSE(parseRemoteClock("17960x5337879312744"));
  CHECK_FALSE(parseRemoteClock("N"));
}

TEST_CASE("a log file name that is a path is refused before anything runs", "[unit][fault]") {
  const kfaild::testing::ManualClock clock;
  SshInjector injector(labTarget(), LogZone::utc, clock, "/nonexistent/ssh");
  const auto lines = injector.logLines("../../etc/shadow", 0, {"x"});
  REQUIRE_FALSE(lines);
  CHECK(lines.error().code == errc::invalid_target);
}

namespace {

// A stand-in for ssh: `-G` prints a configuration whose port is not the target's (as a Port in
// ~/.ssh/config would), anything else appends the remote command to `log` and answers the
// host-namespace check with `netns_exit` (0: the host's). `delay` seconds before an nft call.
std::string fakeSsh(const kfaild::testing::TempDir& dir, int netns_exit, int delay = 0) {
  const auto program = (dir / "ssh").string();
  std::ofstream out(program);
  out << "#!/bin/sh\n"
         "for a; do last=$a; done\n"
         "case \" $* \" in *\" -G \"*) printf 'user root\\nhostname 10.9.9.9\\nport 2200\\n'; exit "
         "0;; esac\n"
         "printf '%s\\n--end--\\n' \"$last\" >> "
      << (dir / "log").string()
      << "\n"
         "case $last in *kfaild-netns=host*) if [ "
      << netns_exit
      << " != 0 ]; then echo 'kfaild: the broker (pid 7) runs in network namespace net:[2], not "
         "the "
         "host'\"'\"'s (net:[1])' >&2; exit "
      << netns_exit
      << "; fi; echo kfaild-pid=7; echo kfaild-netns=host;; esac\n"
         "case $last in *kfaild-gray*) sleep "
      << delay
      << ";; esac\n"
         "exit 0\n";
  out.close();
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  return program;
}

std::string fileText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

IsolateSpec isolateAll() {
  IsolateSpec spec;
  spec.drill = "5";
  spec.from = IsolateFrom::all;
  spec.duration = std::chrono::seconds(30);
  return spec;
}

}  // namespace

TEST_CASE("ssh -G's hostname and port are where ssh really connects", "[unit][fault]") {
  const auto parsed =
      parseSshConfig("user kafka\nhostname k1.internal\nport 2200\nbatchmode yes\n");
  REQUIRE(parsed);
  CHECK(parsed->hostname == "k1.internal");
  CHECK(parsed->port == 2200);
  CHECK_FALSE(parseSshConfig("hostname k1\n"));
  CHECK_FALSE(parseSshConfig("hostname k1\nport 70000\n"));
  const kfaild::testing::ManualClock clock;
  const auto argv = SshInjector(labTarget(), LogZone::utc, clock).sshConfigArgv();
  REQUIRE(argv);
  CHECK(*argv == std::vector<std::string>{
                     "ssh", "-G", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3", "-p", "2222",
                     "-i", "/var/cache/kfaild drill/id ed25519", "-o", "StrictHostKeyChecking=no",
                     "-o", "UserKnownHostsFile=/dev/null", "root@127.0.0.1"});
}

TEST_CASE("the host-namespace check asks kfaild-gray whether the broker is where its rules go",
          "[unit][fault]") {
  const auto script =
      ssh_script::hostNamespaceCommand("cat /run/kafka.pid", "sudo -n /usr/lib/kfaild/kfaild-gray");
  CHECK(script.find("cat /run/kafka.pid") != std::string::npos);
  // Through the one sudoers line: no `sudo sh`.
  CHECK(script.find("sudo -n /usr/lib/kfaild/kfaild-gray --expect-pid \"$pid\" netns-check || {") !=
        std::string::npos);
  CHECK(script.find("sudo -n sh") == std::string::npos);
  CHECK(script.find("exit 97") != std::string::npos);
}

TEST_CASE(
    "an ssh isolation keeps the port ssh -G connects to and the session's, after the "
    "host-namespace check",
    "[integration][fault]") {
  const kfaild::testing::TempDir dir;
  const kfaild::testing::ManualClock clock;
  SshInjector injector(labTarget(), LogZone::utc, clock, fakeSsh(dir, 0));
  injector.placeGrayFaults({});
  const auto isolated = injector.isolate(isolateAll());
  INFO(fileText((dir / "log").string()));
  REQUIRE(isolated);
  const auto log = fileText((dir / "log").string());
  const auto check = log.find("kfaild-netns=host");
  const auto nft = log.find("sudo -n /usr/lib/kfaild/kfaild-gray isolate");
  REQUIRE(check != std::string::npos);
  REQUIRE(nft != std::string::npos);
  CHECK(check < nft);
  // Words, no script: kfaild-gray builds the rules (with ICMPv6 neighbour discovery) on the host.
  CHECK(log.find("--keep-port 2200") != std::string::npos);
  CHECK(log.find("p=${SSH_CONNECTION##* }") != std::string::npos);
  CHECK(log.find("${p:+--keep-port \"$p\"}") != std::string::npos);
  CHECK(log.find("add element") == std::string::npos);
  CHECK(log.find("2222") == std::string::npos);
}

TEST_CASE(
    "a broker in a container on an ssh host is refused with the reason, and no rule is placed",
    "[integration][fault]") {
  const kfaild::testing::TempDir dir;
  const kfaild::testing::ManualClock clock;
  SshInjector injector(labTarget(), LogZone::utc, clock, fakeSsh(dir, 97));
  injector.placeGrayFaults({});
  const auto isolated = injector.isolate(isolateAll());
  REQUIRE_FALSE(isolated);
  CHECK(isolated.error().message.find("runs in network namespace net:[2]") != std::string::npos);
  CHECK(fileText((dir / "log").string()).find("kfaild-gray isolate") == std::string::npos);
}

TEST_CASE("an ssh node's gray-fault scripts wait for ssh's connect timeout on top of their own",
          "[integration][fault]") {
  const kfaild::testing::TempDir dir;
  const kfaild::testing::ManualClock clock;
  auto target = labTarget();
  target.connect_timeout_s = 5;
  // 21 s: past the fixed 20 s, within 20 s + connect_timeout_s.
  SshInjector injector(target, LogZone::utc, clock, fakeSsh(dir, 0, 21));
  injector.placeGrayFaults({});
  const auto isolated = injector.isolate(isolateAll());
  INFO((isolated ? std::string() : isolated.error().describe()));
  CHECK(isolated);
}

TEST_CASE(
    "a node that did not opt in to gray faults never runs kfaild-gray, not even the start-up sweep",
    "[integration][fault]") {
  const kfaild::testing::TempDir dir;
  const kfaild::testing::ManualClock clock;
  SshInjector injector(labTarget(), LogZone::utc, clock, fakeSsh(dir, 0));  // no placeGrayFaults
  const auto swept = injector.sweep();
  REQUIRE(swept);
  CHECK(swept->empty());
  const auto isolated = injector.isolate(isolateAll());
  REQUIRE_FALSE(isolated);
  CHECK(isolated.error().message ==
        "gray faults are off for this node: gray_faults: true in its inventory entry opts in");
  CHECK(injector.heal("5"));
  CHECK_FALSE(std::filesystem::exists(dir / "log"));

  kfaild::config::NodeConfig node;
  node.id = 2;
  node.ssh = labTarget();
  const auto made = makeInjector(node, clock);
  CHECK(made->refusal(GrayFault::disk_full).find("gray_faults: true") != std::string::npos);
  node.gray_faults = true;
  node.fill_dir = "/srv/fill";
  CHECK(makeInjector(node, clock)->refusal(GrayFault::disk_full).empty());
}

}  // namespace ssh_injector_test
