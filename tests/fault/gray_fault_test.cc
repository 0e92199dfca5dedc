#include "server/fault/gray_fault.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "server/common/clock.h"
#include "server/fault/errc.h"
#include "server/fault/gray_runner.h"
#include "tests/support/gray_helper.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace fault_gray_fault_test {

using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

IsolateSpec isolateSpec(IsolateFrom from, IsolateMode mode) {
  IsolateSpec spec;
  spec.drill = "42";
  spec.from = from;
  spec.mode = mode;
  spec.duration = 30s;
  spec.peers.quorum = {"10.77.25.100"};
  spec.peers.brokers = {"10.77.25.2", "10.77.25.3"};
  return spec;
}

}  // namespace

TEST_CASE(
    "an isolation from the quorum with drop cuts exactly the controllers, expiring after duration "
    "plus the margin",
    "[unit]") {
  const auto script = nftIsolateScript(isolateSpec(IsolateFrom::quorum, IsolateMode::drop), {});
  CHECK(script ==
        "add table inet kfaild_d42\n"
        "delete table inet kfaild_d42\n"
        "table inet kfaild_d42 {\n"
        "  set cut4 { type ipv4_addr; flags timeout; }\n"
        "  set cut6 { type ipv6_addr; flags timeout; }\n"
        "  chain input { type filter hook input priority -10; policy accept; iif \"lo\" accept; "
        "icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, "
        "nd-neighbor-advert, nd-redirect } accept; "
        "ip saddr @cut4 drop; ip6 saddr @cut6 drop; }\n"
        "  chain output { type filter hook output priority -10; policy accept; oif \"lo\" accept; "
        "icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, "
        "nd-neighbor-advert, nd-redirect } accept; "
        "ip daddr @cut4 drop; ip6 daddr @cut6 drop; }\n"
        "}\n"
        "add element inet kfaild_d42 cut4 { 10.77.25.100 timeout 35s }\n");
}

TEST_CASE(
    "an isolation from the other brokers with reject resets TCP and answers the rest with ICMP",
    "[unit]") {
  const auto script = nftIsolateScript(isolateSpec(IsolateFrom::brokers, IsolateMode::reject), {});
  CHECK(script.find("ip saddr @cut4 meta l4proto tcp reject with tcp reset; ip saddr @cut4 reject "
                    "with icmpx type admin-prohibited; ") != std::string::npos);
  CHECK(
      script.find("nd-redirect } accept; tcp flags & rst == rst accept; meta l4proto { icmp, "
                  "ipv6-icmp } accept; ip daddr @cut4 meta l4proto tcp reject with tcp reset; ") !=
      std::string::npos);
  CHECK(script.find("add element inet kfaild_d42 cut4 { 10.77.25.2 timeout 35s, 10.77.25.3 "
                    "timeout 35s }\n") != std::string::npos);
  CHECK(script.find("10.77.25.100") == std::string::npos);
  CHECK(script.find(" drop;") == std::string::npos);
}

TEST_CASE(
    "an isolation from clients cuts everyone but the controllers and brokers, whose accept comes "
    "first",
    "[unit]") {
  const auto script = nftIsolateScript(isolateSpec(IsolateFrom::clients, IsolateMode::drop), {});
  CHECK(script.find("set cut4 { type ipv4_addr; flags interval,timeout; }") != std::string::npos);
  CHECK(script.find("set spare4 { type ipv4_addr; flags interval; }") != std::string::npos);
  const auto spare = script.find("ip saddr @spare4 accept;");
  const auto cut = script.find("ip saddr @cut4 drop;");
  REQUIRE(spare != std::string::npos);
  REQUIRE(cut != std::string::npos);
  CHECK(spare < cut);
  CHECK(script.find(
            "add element inet kfaild_d42 spare4 { 10.77.25.100, 10.77.25.2, 10.77.25.3 }\n") !=
        std::string::npos);
  CHECK(script.find("add element inet kfaild_d42 cut4 { 0.0.0.0/0 timeout 35s }\n") !=
        std::string::npos);
  CHECK(script.find("add element inet kfaild_d42 cut6 { ::/0 timeout 35s }\n") !=
        std::string::npos);
}

TEST_CASE("an isolation from all spares only loopback, neighbour discovery and the kept ssh ports",
          "[unit]") {
  NftExceptions keep;
  keep.keep_tcp_ports = {2200};
  keep.keep_session_port = true;
  const auto script = nftIsolateScript(isolateSpec(IsolateFrom::all, IsolateMode::drop), keep);
  CHECK(script.find("  set keep { type inet_service; }\n") != std::string::npos);
  CHECK(script.find("nd-redirect } accept; tcp dport @keep accept; ip saddr @cut4 drop;") !=
        std::string::npos);
  CHECK(script.find("nd-redirect } accept; tcp sport @keep accept; ip daddr @cut4 drop;") !=
        std::string::npos);
  // The ports are in the table before any address is cut, in the same transaction.
  const auto kept = script.find(
      "add element inet kfaild_d42 keep { 2200 }\n"
      "add element inet kfaild_d42 keep { @KFAILD_SESSION_PORT@ }\n");
  REQUIRE(kept != std::string::npos);
  CHECK(kept < script.find("add element inet kfaild_d42 cut4"));
  CHECK(script.find("spare") == std::string::npos);
}

TEST_CASE("ICMPv6 neighbour discovery passes every isolation and throttle in both directions",
          "[unit]") {
  const std::string nd =
      "icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, "
      "nd-neighbor-advert, nd-redirect } accept; ";
  for (const auto from :
       {IsolateFrom::quorum, IsolateFrom::brokers, IsolateFrom::clients, IsolateFrom::all}) {
    for (const auto mode : {IsolateMode::drop, IsolateMode::reject}) {
      const auto script = nftIsolateScript(isolateSpec(from, mode), {});
      INFO(toString(from) << " " << toString(mode));
      const auto input = script.find("chain input");
      const auto output = script.find("chain output");
      CHECK(script.find(nd, input) < script.find("@cut", input));
      CHECK(script.find(nd, output) < script.find("@cut", output));
    }
  }
  ThrottleSpec throttle;
  throttle.drill = "7";
  throttle.bytes_per_second = 8000;
  throttle.duration = std::chrono::seconds(60);
  const auto script = nftThrottleScript(throttle, {});
  CHECK(script.find(nd, script.find("chain input")) < script.find("@slow4"));
  CHECK(script.find(nd, script.find("chain output")) <
        script.find("@slow4", script.find("chain output")));
}

TEST_CASE(
    "the ssh session's port reaches kfaild-gray as a kept port, read from the node's own "
    "SSH_CONNECTION",
    "[unit]") {
  const std::vector<std::string> words = {"isolate", "--instance",
                                          "",        "--drill",
                                          "42",      "--duration",
                                          "30",      "--from",
                                          "all",     "--mode",
                                          "drop",    "--keep-port",
                                          "2200",    std::string(kSessionPortWord)};
  const auto command = remoteHelperCommand(defaultSshGrayHelper(), words);
  CHECK(command.find("sudo -n /usr/lib/kfaild/kfaild-gray isolate") != std::string::npos);
  // Run as the remote shell would, with a `sudo` that prints the words it was given.
  kfaild::testing::TempDir dir;
  const auto bin = (dir / "bin").string();
  std::filesystem::create_directories(bin);
  {
    std::ofstream sudo(bin + "/sudo");
    sudo << "#!/bin/sh\nfor w in \"$@\"; do printf '[%s]' \"$w\"; done\n";
  }
  std::filesystem::permissions(bin + "/sudo", std::filesystem::perms::owner_all);
  const auto path =
      bin + ":" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  auto behind_nat = runCommand(
      {"env", "PATH=" + path, "SSH_CONNECTION=10.0.0.9 50022 10.0.0.2 22", "sh", "-c", command},
      std::chrono::seconds(10));
  REQUIRE(behind_nat.ok());
  CHECK(behind_nat->exit_code == 0);
  CHECK(behind_nat->out.find("[--keep-port][2200][--keep-port][22]") != std::string::npos);
  CHECK(behind_nat->out.find("session") == std::string::npos);
  auto forged =
      runCommand({"env", "PATH=" + path, "SSH_CONNECTION=1 2 3 22;reboot", "sh", "-c", command},
                 std::chrono::seconds(10));
  REQUIRE(forged.ok());
  CHECK(forged->out.find("reboot") == std::string::npos);
  CHECK(forged->out.find("[2200]") != std::string::npos);
  auto no_session = runCommand({"env", "-u", "SSH_CONNECTION", "PATH=" + path, "sh", "-c", command},
                               std::chrono::seconds(10));
  REQUIRE(no_session.ok());
  CHECK(no_session->out.find("[--keep-port][2200]") != std::string::npos);
  CHECK(no_session->out.find("[--keep-port][22]") == std::string::npos);
  // A request without the session word goes as it is.
  CHECK(remoteHelperCommand({"sudo", "-n", "h"}, {"sweep", "--instance", "i1a"}) ==
        "sudo -n h sweep --instance i1a");
}

TEST_CASE("every name on a node carries the kfaild instance, and a sweep lists only its own",
          "[unit]") {
  CHECK(nftTableName("i0a1b2c3d", "12") == "kfaild_i0a1b2c3d_d12");
  CHECK(nftTableName("", "12") == "kfaild_d12");
  CHECK(nftTableName("d0a1b2c3", "12") == std::nullopt);  // would read as a drill id
  CHECK(nftTableName("i0A;", "12") == std::nullopt);
  CHECK(validInstance("i0a1b2c3d"));
  CHECK_FALSE(validInstance("i"));
  const std::string listing =
      "table inet kfaild_i0a1b2c3d_d12\ntable inet kfaild_i99999999_d12\ntable inet kfaild_d12\n";
  CHECK(kfaildTables(listing, "i0a1b2c3d") ==
        std::vector<std::string>{"inet kfaild_i0a1b2c3d_d12"});
  CHECK(kfaildTables(listing, "i99999999") ==
        std::vector<std::string>{"inet kfaild_i99999999_d12"});
  CHECK(fillerStem("/srv/d/", "i0a1b2c3d", "12") == "/srv/d/kfaild_fill_i0a1b2c3d_d12");
  const auto sweep = diskSweepScript("/srv/d", "i0a1b2c3d");
  CHECK(sweep.find("'/srv/d'/kfaild_fill_i0a1b2c3d_d*;") != std::string::npos);
  CHECK(sweep.find("systemctl stop 'kfaild-expiry-i0a1b2c3d-d*.timer'") != std::string::npos);
  const auto heal = diskFreeScript("/srv/d", "i0a1b2c3d", "12");
  CHECK(heal.find("'/srv/d'/kfaild_fill_i0a1b2c3d_d12.*;") != std::string::npos);
  CHECK(heal.find("systemctl stop 'kfaild-expiry-i0a1b2c3d-d12-*.timer'") != std::string::npos);

  kfaild::testing::ManualClock clock;
  std::vector<std::vector<std::string>> ran;
  auto fake = [&](const std::vector<std::string>& argv,
                  std::chrono::milliseconds) -> kfaild::Result<CommandOutput> {
    ran.push_back(argv);
    // kfaild-gray's sweep lists, picks its own instance's tables and prints those it deleted.
    const auto request = kfaild::testing::requestOf(argv);
    if (request.op == HelperOp::sweep) {
      std::string out;
      for (const auto& t : kfaildTables(listing, request.instance)) out += "nft table " + t + "\n";
      return CommandOutput{0, out, ""};
    }
    return CommandOutput{0, "", ""};
  };
  NodeShell shell;
  shell.nft = kfaild::testing::helperInNetns("ns1");
  shell.instance = "i0a1b2c3d";
  GrayRunner runner(shell, clock, fake);
  REQUIRE(runner.isolate(isolateSpec(IsolateFrom::quorum, IsolateMode::drop)).ok());
  CHECK(kfaild::testing::scriptOf(ran.back()).rfind("add table inet kfaild_i0a1b2c3d_d42\n", 0) ==
        0);
  REQUIRE(runner.heal("42").ok());
  CHECK(kfaild::testing::scriptOf(ran.back()) == nftHealScript("kfaild_i0a1b2c3d_d42"));
  auto swept = runner.sweep();
  REQUIRE(swept.ok());
  CHECK(*swept == std::vector<std::string>{"nft table inet kfaild_i0a1b2c3d_d12"});
}

TEST_CASE(
    "a gray runner asks where the rules go before every isolate and throttle, and refuses with the "
    "reason",
    "[unit]") {
  kfaild::testing::ManualClock clock;
  int runs = 0;
  auto counting = [&](const std::vector<std::string>&,
                      std::chrono::milliseconds) -> kfaild::Result<CommandOutput> {
    ++runs;
    return CommandOutput{0, "", ""};
  };
  NodeShell shell;
  shell.nft = kfaild::testing::helperInNetns("ns1");
  int asked = 0;
  shell.network_placement = [&]() -> kfaild::Result<NftExceptions> {
    ++asked;
    return faultError(errc::invalid_target, "the broker is in another namespace");
  };
  GrayRunner runner(shell, clock, counting);
  auto isolated = runner.isolate(isolateSpec(IsolateFrom::all, IsolateMode::drop));
  REQUIRE(!isolated.ok());
  CHECK(isolated.error().message == "the broker is in another namespace");
  ThrottleSpec throttle;
  throttle.drill = "7";
  throttle.bytes_per_second = 8000;
  throttle.duration = std::chrono::seconds(60);
  CHECK(!runner.throttle(throttle).ok());
  CHECK(asked == 2);
  CHECK(runs == 0);
  // Heal still runs: it must undo whatever is there.
  CHECK(runner.heal("42").ok());
  CHECK(runs == 1);
}

TEST_CASE("IPv6 peers go to the IPv6 set", "[unit]") {
  auto spec = isolateSpec(IsolateFrom::brokers, IsolateMode::drop);
  spec.peers.brokers = {"fd00::2", "10.0.0.3"};
  const auto script = nftIsolateScript(spec, {});
  CHECK(script.find("add element inet kfaild_d42 cut4 { 10.0.0.3 timeout 35s }\n") !=
        std::string::npos);
  CHECK(script.find("add element inet kfaild_d42 cut6 { fd00::2 timeout 35s }\n") !=
        std::string::npos);
}

TEST_CASE(
    "a spec with anything but an IP literal or a plain drill id is invalid before any script is "
    "built",
    "[unit]") {
  auto spec = isolateSpec(IsolateFrom::brokers, IsolateMode::drop);
  CHECK(invalidReason(spec).empty());
  spec.peers.brokers = {"10.0.0.2; flush ruleset"};
  CHECK(invalidReason(spec) == "brokers: '10.0.0.2; flush ruleset' is not an IPv4 or IPv6 address");
  spec = isolateSpec(IsolateFrom::brokers, IsolateMode::drop);
  spec.drill = "1 }; flush ruleset; {";
  CHECK(!invalidReason(spec).empty());
  spec = isolateSpec(IsolateFrom::quorum, IsolateMode::drop);
  spec.peers.quorum.clear();
  CHECK(invalidReason(spec) == "isolate from quorum: no controller address is known");
  spec = isolateSpec(IsolateFrom::all, IsolateMode::drop);
  spec.duration = 0s;
  CHECK(invalidReason(spec) == "duration_s must be positive");
  CHECK(nftTableName("", "d-1") == std::nullopt);
  CHECK(nftTableName("", std::string(49, 'a')) == std::nullopt);
  CHECK(nftTableName("", "run_7") == "kfaild_drun_7");
}

TEST_CASE("a throttle limits both directions with a token bucket on an expiring set", "[unit]") {
  ThrottleSpec spec;
  spec.drill = "7";
  spec.bytes_per_second = 1'000'000;
  spec.duration = 60s;
  spec.toward = {"10.77.25.1"};
  const auto script = nftThrottleScript(spec, {});
  CHECK(script ==
        "add table inet kfaild_d7\n"
        "delete table inet kfaild_d7\n"
        "table inet kfaild_d7 {\n"
        "  set slow4 { type ipv4_addr; flags interval,timeout; }\n"
        "  set slow6 { type ipv6_addr; flags interval,timeout; }\n"
        "  chain input { type filter hook input priority -10; policy accept; iif \"lo\" accept; "
        "icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, "
        "nd-neighbor-advert, nd-redirect } accept; "
        "ip saddr @slow4 limit rate over 1000000 bytes/second burst 65536 bytes drop; "
        "ip6 saddr @slow6 limit rate over 1000000 bytes/second burst 65536 bytes drop; }\n"
        "  chain output { type filter hook output priority -10; policy accept; oif \"lo\" accept; "
        "icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, "
        "nd-neighbor-advert, nd-redirect } accept; "
        "ip daddr @slow4 limit rate over 1000000 bytes/second burst 65536 bytes drop; "
        "ip6 daddr @slow6 limit rate over 1000000 bytes/second burst 65536 bytes drop; }\n"
        "}\n"
        "add element inet kfaild_d7 slow4 { 10.77.25.1 timeout 65s }\n");
  spec.toward.clear();
  spec.bytes_per_second = 1000;
  const auto everyone = nftThrottleScript(spec, {});
  CHECK(everyone.find("slow4 { 0.0.0.0/0 timeout 65s }") != std::string::npos);
  CHECK(everyone.find("burst 1500 bytes") != std::string::npos);
}

TEST_CASE("a throttle's burst is one second's worth, at least one MTU, at most one GSO segment",
          "[unit]") {
  // 65536 at docs/FAULTS.md's 8,000 B/s let 8 s through before the limit bit.
  CHECK(throttleBurst(8'000) == 8'000);
  CHECK(throttleBurst(100) == 1'500);
  CHECK(throttleBurst(10'000'000) == 65'536);
  ThrottleSpec spec;
  spec.drill = "7";
  spec.bytes_per_second = 8'000;
  spec.duration = std::chrono::seconds(60);
  CHECK(nftThrottleScript(spec, {}).find(
            "limit rate over 8000 bytes/second burst 8000 bytes drop;") != std::string::npos);
}

TEST_CASE("heal deletes the drill's table and succeeds when it is already gone", "[unit]") {
  CHECK(nftHealScript("kfaild_d42") == "add table inet kfaild_d42\ndelete table inet kfaild_d42\n");
}

TEST_CASE("the sweep finds only kfaild's own tables in nft's listing", "[unit]") {
  const auto tables = kfaildTables(
      "table inet filter\ntable inet kfaild_d42\ntable ip nat\ntable ip kfaild_d7\n"
      "table inet kfaild_\ntable inet kfaildx\ntable inet kfaild_d1;x\n",
      "");
  CHECK(tables == std::vector<std::string>{"inet kfaild_d42", "ip kfaild_d7"});
  CHECK(nftSweepScript(tables) == "delete table inet kfaild_d42\ndelete table ip kfaild_d7\n");
  CHECK(nftSweepScript({}).empty());
}

TEST_CASE(
    "the disk filler starts and checks its timer before it fills, and judges the fill by the free "
    "space",
    "[unit]") {
  DiskFullSpec spec;
  spec.drill = "9";
  spec.instance = "i0a1b2c3d";
  spec.duration = 20s;
  spec.fill_dir = "/srv/it's/disk/";
  spec.log_dirs = {"/srv/it's/disk/kafka"};
  const auto script = diskFillScript(spec);
  CHECK(script.find("d='/srv/it'\\''s/disk/'\n") != std::string::npos);
  CHECK(script.find("for x in '/srv/it'\\''s/disk/kafka'; do") != std::string::npos);
  CHECK(script.find("e=25\n") != std::string::npos);
  CHECK(script.find("t=1048576\n") != std::string::npos);
  const auto at = [&](const std::string& what) {
    const auto pos = script.find(what);
    INFO(what);
    CHECK(pos != std::string::npos);
    return pos;
  };
  // The order is the guarantee: a filler exists only once a checked timer will remove it.
  const auto root = at("[ \"$r\" != / ] || fail");
  const auto owner = at("[ \"$o\" = 0 ] || [ \"$o\" = \"$u\" ] || fail");
  const auto created = at("f=$(mktemp \"$r/kfaild_fill_i0a1b2c3d_d9.XXXXXX\")");
  const auto systemd =
      at("systemd-run --quiet --collect --unit=\"$w\" --on-active=\"$e\" rm -f -- \"$f\"");
  const auto checked = at("own_session \"$!\" || { rm -f -- \"$f\"; fail");
  const auto fallocate = at("fallocate -l \"$n\" /proc/self/fd/3");
  const auto judged = at("if [ \"$a\" -ge \"$t\" ]; then cancel; fail");
  CHECK(root < owner);
  CHECK(owner < created);
  CHECK(created < systemd);
  CHECK(systemd < checked);
  CHECK(checked < fallocate);
  CHECK(fallocate < judged);
  CHECK(script.find("w='kfaild-expiry-i0a1b2c3d-d9'-$x") != std::string::npos);
  // Sized by what the broker's user may use.
  CHECK(script.find("if [ \"$u\" = 0 ]; then k=%f; else k=%a; fi") != std::string::npos);
  // Nothing is written through a name: only through the file mktemp created, checked first.
  CHECK(script.find("of=\"$f") == std::string::npos);
  CHECK(script.find("stat -L -c %d:%i:%h:%s /proc/self/fd/3") != std::string::npos);
}

TEST_CASE("a disk filler for / or a relative dir is invalid before any script is built", "[unit]") {
  DiskFullSpec spec;
  spec.drill = "9";
  spec.duration = 20s;
  spec.fill_dir = "/srv/disk";
  CHECK(invalidReason(spec).empty());
  spec.fill_dir = "/";
  CHECK(invalidReason(spec).find("fill_dir / is refused") == 0);
  spec.fill_dir = "//";
  CHECK(!invalidReason(spec).empty());
  spec.fill_dir = "srv";
  CHECK(!invalidReason(spec).empty());
  spec.fill_dir = "/srv/disk";
  spec.log_dirs = {"kafka"};
  CHECK(invalidReason(spec) == "log.dirs entry 'kafka' is not absolute");
}

TEST_CASE("disk_slow is refused with what the host lacks", "[unit]") {
  const auto v1 =
      diskSlowRefusal(std::nullopt, std::string(" 60 cpu_dma_latency\n183 hw_random\n"));
  CHECK(v1 ==
        "disk_slow is refused on this host: no cgroup v2 hierarchy at /sys/fs/cgroup (no io.max); "
        "cgroup v1 blkio throttles only direct and fsync'd I/O, not the page-cache writeback "
        "that carries Kafka's log appends; no device-mapper in the kernel (/proc/misc lists "
        "none), so no dm-delay");
  const auto v2 = diskSlowRefusal(std::string("cpuset cpu io memory pids\n"),
                                  std::string("236 device-mapper\n"));
  CHECK(v2.find("cgroup v2 io.max is available") != std::string::npos);
  CHECK(v2.find("device-mapper is present") != std::string::npos);
}

TEST_CASE(
    "the injectors' argv run kfaild-gray in the node's netns, a container's, or through ssh "
    "exactly",
    "[unit]") {
  const std::vector<std::string> words = {"heal", "--table", "kfaild_d1"};
  CHECK(localHelperArgv({"sudo", "-n", "/usr/lib/kfaild/kfaild-gray"}, "kfl25000-n1", 0, words) ==
        std::vector<std::string>{"sudo", "-n", "/usr/lib/kfaild/kfaild-gray", "--netns",
                                 "kfl25000-n1", "heal", "--table", "kfaild_d1"});
  CHECK(localHelperArgv({"/opt/kfaild-gray"}, {}, 4242, words) ==
        std::vector<std::string>{"/opt/kfaild-gray", "--pid", "4242", "heal", "--table",
                                 "kfaild_d1"});
  // No ssh session on kfaild's own host: the session word is dropped, not sent.
  CHECK(localHelperArgv({"h"}, {}, 0, {"sweep", std::string(kSessionPortWord)}) ==
        std::vector<std::string>{"h", "sweep"});
  CHECK(remoteHelperCommand({"sudo", "-n", "/usr/lib/kfaild/kfaild-gray"},
                            {"free", "--filler", "/d/a b"}) ==
        "sudo -n /usr/lib/kfaild/kfaild-gray free --filler '/d/a b'");
}

TEST_CASE("a gray runner refuses what its node cannot do before running anything", "[unit]") {
  kfaild::testing::ManualClock clock;
  int runs = 0;
  auto counting = [&](const std::vector<std::string>&,
                      std::chrono::milliseconds) -> kfaild::Result<CommandOutput> {
    ++runs;
    return CommandOutput{0, "", ""};
  };
  NodeShell shell;
  shell.nft_refusal = "no netns";
  GrayRunner runner(shell, clock, counting);
  auto isolated = runner.isolate(isolateSpec(IsolateFrom::all, IsolateMode::drop));
  REQUIRE(!isolated.ok());
  CHECK(isolated.error().code == make_error_code(errc::unsupported));
  CHECK(isolated.error().message == "no netns");
  CHECK(runner.refusal(GrayFault::disk_full).empty() == false);
  CHECK(runs == 0);
}

TEST_CASE("a gray runner runs the exact nft batch, records it, and sweeps what it lists",
          "[unit]") {
  kfaild::testing::ManualClock clock;
  std::vector<std::vector<std::string>> ran;
  auto fake = [&](const std::vector<std::string>& argv,
                  std::chrono::milliseconds) -> kfaild::Result<CommandOutput> {
    ran.push_back(argv);
    if (kfaild::testing::requestOf(argv).op == HelperOp::sweep)
      return CommandOutput{0, "nft table inet kfaild_d3\n", ""};
    return CommandOutput{0, "", ""};
  };
  NodeShell shell;
  shell.nft = kfaild::testing::helperInNetns("ns1");
  GrayRunner runner(shell, clock, fake);
  const auto spec = isolateSpec(IsolateFrom::quorum, IsolateMode::drop);
  auto record = runner.isolate(spec);
  REQUIRE(record.ok());
  REQUIRE(ran.size() == 1);
  CHECK(ran[0].front() == "kfaild-gray");
  CHECK(kfaild::testing::requestOf(ran[0]).netns == "ns1");
  CHECK(kfaild::testing::scriptOf(ran[0]) == nftIsolateScript(spec, {}));
  CHECK(record->detail == describeArgv(ran[0]));
  auto healed = runner.heal("42");
  REQUIRE(healed.ok());
  CHECK(kfaild::testing::scriptOf(ran.back()) == nftHealScript("kfaild_d42"));
  auto swept = runner.sweep();
  REQUIRE(swept.ok());
  CHECK(*swept == std::vector<std::string>{"nft table inet kfaild_d3"});
  CHECK(kfaild::testing::requestOf(ran.back()).op == HelperOp::sweep);
}

TEST_CASE("a failing nft command is an error with its exit code and stderr", "[unit]") {
  kfaild::testing::ManualClock clock;
  auto failing = [](const std::vector<std::string>&,
                    std::chrono::milliseconds) -> kfaild::Result<CommandOutput> {
    return CommandOutput{1, "", "Error: Could not process rule: Operation not permitted\n"};
  };
  NodeShell shell;
  shell.nft = kfaild::testing::helperInNetns("ns1");
  GrayRunner runner(shell, clock, failing);
  auto record = runner.isolate(isolateSpec(IsolateFrom::all, IsolateMode::reject));
  REQUIRE(!record.ok());
  CHECK(record.error().code == make_error_code(errc::command_failed));
  CHECK(record.error().message.find("exited with 1: ") != std::string::npos);
  CHECK(record.error().message.find("Error: Could not process rule: Operation not permitted") !=
        std::string::npos);
}

TEST_CASE(
    "a kfaild's instance id comes from its host and its state database, stable across restarts",
    "[unit]") {
  const auto a = grayInstanceId("kfaild-a", "/var/lib/kfaild/kfaild.db");
  CHECK(a.size() == 9);
  CHECK(a.front() == 'i');
  CHECK(validInstance(a));
  CHECK(a == grayInstanceId("kfaild-a", "/var/lib/kfaild/kfaild.db"));
  CHECK(a != grayInstanceId("kfaild-b", "/var/lib/kfaild/kfaild.db"));
  CHECK(a != grayInstanceId("kfaild-a", "/var/lib/kfaild/staging.db"));
  CHECK(grayInstanceHere("kfaild.db") ==
        grayInstanceHere((std::filesystem::current_path() / "kfaild.db").string()));
}

}  // namespace fault_gray_fault_test
