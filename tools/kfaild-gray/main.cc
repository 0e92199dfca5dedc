// kfaild-gray: places, checks and undoes one gray fault on this host (server/fault/gray_helper.h
// has its command line). Meant to run as root through one sudoers line, or with exactly the
// capabilities the operation needs (docs/SECURITY.md). It takes words only, checks each, builds
// the nft or sh script itself and runs it with a fixed PATH and nothing else of the caller's
// environment.

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/fault/command.h"
#include "server/fault/gray_fault.h"
#include "server/fault/gray_helper.h"

namespace {

using namespace kfaild::fault;
using namespace std::chrono_literals;

std::int64_t wallMicros() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1'000;
}

int say(int status, const std::string& text) {
  std::fprintf(stderr, "kfaild-gray: %s\n", text.c_str());
  return status;
}

bool exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

// Why the rules must not go where the request places them: the broker `r.expect_pid` is not in
// that network namespace (empty when it is).
std::string notTheBrokers(const HelperRequest& r) {
  struct stat ns{}, broker{};
  const auto pid = std::to_string(r.expect_pid);
  if (::stat(("/proc/" + pid + "/ns/net").c_str(), &broker) != 0)
    return "the broker (pid " + pid + ") is not running";
  const auto place = !r.netns.empty() ? "/run/netns/" + r.netns
                     : r.pid > 0      ? "/proc/" + std::to_string(r.pid) + "/ns/net"
                                      : std::string("/proc/self/ns/net");
  const auto name = !r.netns.empty() ? "network namespace " + r.netns
                    : r.pid > 0      ? "the network namespace of pid " + std::to_string(r.pid)
                                     : std::string("this host's network namespace");
  if (::stat(place.c_str(), &ns) != 0) return "no " + name;
  if (ns.st_dev == broker.st_dev && ns.st_ino == broker.st_ino) return {};
  return "the broker (pid " + pid + ") is not in " + name + " (inode " + std::to_string(ns.st_ino) +
         ") but in inode " + std::to_string(broker.st_ino) +
         " (a container, whose traffic passes FORWARD?): rules placed there would cut something "
         "else";
}

// nft with `script` (and --check) where the request places it.
std::vector<std::string> nftArgv(const HelperRequest& r, const std::string& script) {
  std::vector<std::string> nft = {"nft"};
  if (r.check) nft.push_back("--check");
  nft.push_back(script);
  std::vector<std::string> argv;
  if (!r.netns.empty()) argv = {"ip", "netns", "exec", r.netns};
  if (r.pid > 0) argv = {"nsenter", "-t", std::to_string(r.pid), "-n"};
  argv.insert(argv.end(), nft.begin(), nft.end());
  return argv;
}

struct Ran {
  int status = 0;
  CommandOutput out;
};

// Runs argv, passing its stderr through; an exit status of the helper's own when it failed.
Ran run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  auto out = runCommand(argv, timeout);
  if (!out.ok()) return {say(kHelperFailed, out.error().message), {}};
  std::fputs(out->err.c_str(), stderr);
  if (out->exit_code == 0) return {0, *out};
  // The namespace went between the check and the call: nothing of ours can be in it.
  if (out->err.find("Cannot open network namespace") != std::string::npos)
    return {kHelperNothingThere, *out};
  return {say(kHelperFailed, argv.front() + " exited with " + std::to_string(out->exit_code)),
          *out};
}

int sweepTables(const HelperRequest& r) {
  auto listed = run(nftArgv(r, "list tables"), 20s);
  if (listed.status != 0) return listed.status;
  const auto tables = kfaildTables(listed.out.out, r.instance);
  if (tables.empty()) return 0;
  auto deleted = run(nftArgv(r, nftSweepScript(tables)), 20s);
  if (deleted.status != 0) return deleted.status;
  for (const auto& t : tables) std::printf("nft table %s\n", t.c_str());
  return 0;
}

// A fill prints when its disk was full; the window starts there.
std::int64_t filledAt(const std::string& out, std::int64_t otherwise) {
  constexpr std::string_view kKey = "kfaild-filled-at=";
  const auto at = out.find(kKey);
  if (at == std::string::npos) return otherwise;
  const auto value = std::strtoll(out.c_str() + at + kKey.size(), nullptr, 10);
  return value > 0 ? value : otherwise;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> words(argv + 1, argv + argc);
  if (words.size() == 1 && words[0] == "--version") {
    std::printf("kfaild-gray %s\n", KFAILD_VERSION);
    return 0;
  }
  auto request = parseHelperWords(words);
  if (!request.ok()) return say(kHelperRefused, request.error().message);
  const auto& r = *request;
  ::clearenv();
  ::setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1);
  ::setenv("LC_ALL", "C", 1);
  ::umask(077);
  if (!r.netns.empty() && !exists("/run/netns/" + r.netns))
    return say(kHelperNothingThere, "no network namespace " + r.netns);
  if (r.pid > 0 && !exists("/proc/" + std::to_string(r.pid) + "/ns/net"))
    return say(kHelperNothingThere, "no process " + std::to_string(r.pid));
  if (r.expect_pid > 0) {
    if (const auto why = notTheBrokers(r); !why.empty()) return say(kHelperRefused, why);
  }
  if (r.op == HelperOp::netns_check) return 0;
  if (r.op == HelperOp::sweep) return sweepTables(r);

  const auto script = helperScript(r);
  const auto argv_run =
      r.network() ? nftArgv(r, script) : std::vector<std::string>{"sh", "-c", script};
  // A fill's dd may take a while on a large filesystem; its timer runs from before it starts.
  const auto timeout =
      r.op == HelperOp::fill ? std::chrono::milliseconds(600s) : std::chrono::milliseconds(20s);
  const auto start = wallMicros();
  auto ran = run(argv_run, timeout);
  const auto end = wallMicros();
  std::fputs(ran.out.out.c_str(), stdout);
  if (ran.status != 0) return ran.status;
  if (!r.check && r.op != HelperOp::fill_check && r.op != HelperOp::fill_sweep)
    std::printf("%s\n",
                helperWindowLine(r.op == HelperOp::fill ? filledAt(ran.out.out, start) : start, end)
                    .c_str());
  return 0;
}
