#include "server/fault/gray_fault.h"

#include <catch2/catch.hpp>

#include "server/common/clock.h"
#include "server/fault/errc.h"
#include "server/fault/gray_runner.h"
#include "tests/support/manual_clock.h"

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

TEST_CASE("an isolation from the quorum with drop cuts exactly the controllers, expiring after duration plus the margin",
          "[unit]") {
  const auto script = nftIsolateScript(isolateSpec(IsolateFrom::quorum, IsolateMode::drop), {});
  CHECK(script ==
        "add table inet kfaild_d42\n"
        "delete table inet kfaild_d42\n"
        "table inet kfaild_d42 {\n"
        "  set cut4 { type ipv4_addr; flags timeout; }\n"
        "  set cut6 { type ipv6_addr; flags timeout; }\n"
        "  chain input { type filter hook input priority -10; policy accept; iif \"lo\" accept; "
        "ip saddr @cut4 drop; ip6 saddr @cut6 drop; }\n"
        "  chain output { type filter hook output priority -10; policy accept; oif \"lo\" accept; "
        "ip daddr @cut4 drop; ip6 daddr @cut6 drop; }\n"
        "}\n"
        "add element inet kfaild_d42 cut4 { 10.77.25.100 timeout 35s }\n");
}

TEST_CASE("an isolation from the other brokers with reject resets TCP and answers the rest with ICMP",
          "[unit]") {
  const auto script = nftIsolateScript(isolateSpec(IsolateFrom::brokers, IsolateMode::reject), {});
  CHECK(script.find("ip saddr @cut4 meta l4proto tcp reject with tcp reset; ip saddr @cut4 reject "
                    "with icmpx type admin-prohibited; ") != std::string::npos);
  CHECK(script.find("oif \"lo\" accept; tcp flags & rst == rst accept; meta l4proto { icmp, "
                    "ipv6-icmp } accept; ip daddr @cut4 meta l4proto tcp reject with tcp reset; ") !=
        std::string::npos);
  CHECK(script.find("add element inet kfaild_d42 cut4 { 10.77.25.2 timeout 35s, 10.77.25.3 "
                    "timeout 35s }\n") != std::string::npos);
  CHECK(script.find("10.77.25.100") == std::string::npos);
  CHECK(script.find(" drop;") == std::string::npos);
}

TEST_CASE("an isolation from clients cuts everyone but the controllers and brokers, whose accept comes first",
          "[unit]") {
  const auto script = nftIsolateScript(isolateSpec(IsolateFrom::clients, IsolateMode::drop), {});
  CHECK(script.find("set cut4 { type ipv4_addr; flags interval,timeout; }") != std::string::npos);
  CHECK(script.find("set spare4 { type ipv4_addr; flags interval; }") != std::string::npos);
  const auto spare = script.find("ip saddr @spare4 accept;");
  const auto cut = script.find("ip saddr @cut4 drop;");
  REQUIRE(spare != std::string::npos);
  REQUIRE(cut != std::string::npos);
  CHECK(spare < cut);
  CHECK(script.find("add element inet kfaild_d42 spare4 { 10.77.25.100, 10.77.25.2, 10.77.25.3 }\n") !=
        std::string::npos);
  CHECK(script.find("add element inet kfaild_d42 cut4 { 0.0.0.0/0 timeout 35s }\n") !=
        std::string::npos);
  CHECK(script.find("add element inet kfaild_d42 cut6 { ::/0 timeout 35s }\n") != std::string::npos);
}

TEST_CASE("an isolation from all spares only loopback and the kept ssh port", "[unit]") {
  NftExceptions keep;
  keep.keep_tcp_ports = {22};
  const auto script = nftIsolateScript(isolateSpec(IsolateFrom::all, IsolateMode::drop), keep);
  CHECK(script.find("iif \"lo\" accept; tcp dport { 22 } accept; ip saddr @cut4 drop;") !=
        std::string::npos);
  CHECK(script.find("oif \"lo\" accept; tcp sport { 22 } accept; ip daddr @cut4 drop;") !=
        std::string::npos);
  CHECK(script.find("spare") == std::string::npos);
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

TEST_CASE("a spec with anything but an IP literal or a plain drill id is invalid before any script is built",
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
  CHECK(nftTableName("d-1") == std::nullopt);
  CHECK(nftTableName(std::string(49, 'a')) == std::nullopt);
  CHECK(nftTableName("run_7") == "kfaild_drun_7");
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
        "ip saddr @slow4 limit rate over 1000000 bytes/second burst 1000000 bytes drop; "
        "ip6 saddr @slow6 limit rate over 1000000 bytes/second burst 1000000 bytes drop; }\n"
        "  chain output { type filter hook output priority -10; policy accept; oif \"lo\" accept; "
        "ip daddr @slow4 limit rate over 1000000 bytes/second burst 1000000 bytes drop; "
        "ip6 daddr @slow6 limit rate over 1000000 bytes/second burst 1000000 bytes drop; }\n"
        "}\n"
        "add element inet kfaild_d7 slow4 { 10.77.25.1 timeout 65s }\n");
  spec.toward.clear();
  spec.bytes_per_second = 1000;
  const auto everyone = nftThrottleScript(spec, {});
  CHECK(everyone.find("slow4 { 0.0.0.0/0 timeout 65s }") != std::string::npos);
  CHECK(everyone.find("burst 65536 bytes") != std::string::npos);
}

TEST_CASE("heal deletes the drill's table and succeeds when it is already gone", "[unit]") {
  CHECK(nftHealScript("kfaild_d42") == "add table inet kfaild_d42\ndelete table inet kfaild_d42\n");
}

TEST_CASE("the sweep finds only kfaild's own tables in nft's listing", "[unit]") {
  const auto tables = kfaildTables(
      "table inet filter\ntable inet kfaild_d42\ntable ip nat\ntable ip kfaild_d7\n"
      "table inet kfaild_\ntable inet kfaildx\ntable inet kfaild_d1;x\n");
  CHECK(tables == std::vector<std::string>{"inet kfaild_d42", "ip kfaild_d7"});
  CHECK(nftSweepScript(tables) == "delete table inet kfaild_d42\ndelete table ip kfaild_d7\n");
  CHECK(nftSweepScript({}).empty());
}

TEST_CASE("the disk filler script quotes its paths and starts a detached timer that frees the disk",
          "[unit]") {
  DiskFullSpec spec;
  spec.drill = "9";
  spec.duration = 20s;
  spec.fill_dir = "/srv/it's/disk/";
  const auto script = diskFillScript(spec);
  CHECK(fillerPath(spec.fill_dir, "9") == "/srv/it's/disk/kfaild_fill_d9");
  CHECK(script ==
        "set -e\n"
        "d='/srv/it'\\''s/disk/'\n"
        "f='/srv/it'\\''s/disk/kfaild_fill_d9'\n"
        "s=$(stat -f -c %S \"$d\")\n"
        "n=$(( $(stat -f -c %f \"$d\") * s - 1048576 ))\n"
        "if [ \"$n\" -gt 0 ]; then fallocate -l \"$n\" \"$f\" || :; fi\n"
        "dd if=/dev/zero of=\"$f.tail\" bs=\"$s\" 2>/dev/null || :\n"
        "setsid sh -c 'sleep \"$1\"; rm -f \"$2.tail\" \"$2\"' kfaild-expiry 25 \"$f\" "
        "</dev/null >/dev/null 2>&1 &\n"
        "df -P -B1 \"$d\" | tail -n 1\n");
  CHECK(diskFreeScript(spec.fill_dir, "9") ==
        "rm -f '/srv/it'\\''s/disk/kfaild_fill_d9.tail' '/srv/it'\\''s/disk/kfaild_fill_d9'\n");
  CHECK(diskSweepScript("/srv/d") ==
        "for f in '/srv/d'/kfaild_fill_d*; do if [ -e \"$f\" ]; then rm -f -- \"$f\" && echo "
        "\"$f\"; fi; done\n");
}

TEST_CASE("disk_slow is refused with what the host lacks", "[unit]") {
  const auto v1 = diskSlowRefusal(std::nullopt, std::string(" 60 cpu_dma_latency\n183 hw_random\n"));
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

TEST_CASE("the injectors' argv reach the node's netns, sudo or the container's netns exactly",
          "[unit]") {
  CHECK(localNftArgv("kfl25000-n1", "list tables") ==
        std::vector<std::string>{"ip", "netns", "exec", "kfl25000-n1", "nft", "list tables"});
  CHECK(localShArgv("rm -f x") == std::vector<std::string>{"sh", "-c", "rm -f x"});
  CHECK(nsenterNftArgv(4242, "list tables") ==
        std::vector<std::string>{"nsenter", "-t", "4242", "-n", "nft", "list tables"});
  CHECK(sudoNftCommand("add element inet t s { 10.0.0.1 timeout 5s }\n") ==
        "sudo -n nft 'add element inet t s { 10.0.0.1 timeout 5s }\n'");
  CHECK(sudoShCommand("rm -f 'a b'") == "sudo -n sh -c 'rm -f '\\''a b'\\'''");
}

TEST_CASE("a gray runner refuses what its node cannot do before running anything", "[unit]") {
  kfaild::testing::ManualClock clock;
  int runs = 0;
  auto counting = [&](const std::vector<std::string>&, std::chrono::milliseconds)
      -> kfaild::Result<CommandOutput> {
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
  auto fake = [&](const std::vector<std::string>& argv, std::chrono::milliseconds)
      -> kfaild::Result<CommandOutput> {
    ran.push_back(argv);
    if (argv.back() == "list tables") return CommandOutput{0, "table inet kfaild_d3\n", ""};
    return CommandOutput{0, "", ""};
  };
  NodeShell shell;
  shell.nft = [](const std::string& script) -> kfaild::Result<std::vector<std::string>> {
    return localNftArgv("ns1", script);
  };
  GrayRunner runner(shell, clock, fake);
  const auto spec = isolateSpec(IsolateFrom::quorum, IsolateMode::drop);
  auto record = runner.isolate(spec);
  REQUIRE(record.ok());
  REQUIRE(ran.size() == 1);
  CHECK(ran[0] == localNftArgv("ns1", nftIsolateScript(spec, {})));
  CHECK(record->detail == describeArgv(ran[0]));
  auto healed = runner.heal("42");
  REQUIRE(healed.ok());
  CHECK(ran.back() == localNftArgv("ns1", nftHealScript("kfaild_d42")));
  auto swept = runner.sweep();
  REQUIRE(swept.ok());
  CHECK(*swept == std::vector<std::string>{"nft table inet kfaild_d3"});
  CHECK(ran.back() == localNftArgv("ns1", "delete table inet kfaild_d3\n"));
}

TEST_CASE("a failing nft command is an error with its exit code and stderr", "[unit]") {
  kfaild::testing::ManualClock clock;
  auto failing = [](const std::vector<std::string>&, std::chrono::milliseconds)
      -> kfaild::Result<CommandOutput> {
    return CommandOutput{1, "", "Error: Could not process rule: Operation not permitted\n"};
  };
  NodeShell shell;
  shell.nft = [](const std::string& script) -> kfaild::Result<std::vector<std::string>> {
    return localNftArgv("ns1", script);
  };
  GrayRunner runner(shell, clock, failing);
  auto record = runner.isolate(isolateSpec(IsolateFrom::all, IsolateMode::reject));
  REQUIRE(!record.ok());
  CHECK(record.error().code == make_error_code(errc::command_failed));
  CHECK(record.error().message.find("exited with 1: ") != std::string::npos);
  CHECK(record.error().message.find("Error: Could not process rule: Operation not permitted") != std::string::npos);
}
