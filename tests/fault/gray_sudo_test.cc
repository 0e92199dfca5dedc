// kfaild unprivileged, kfaild-gray through the one sudoers line deploy/sudoers/kfaild-gray ships:
// that line lets the user run kfaild-gray and nothing else as root, and a GrayRunner whose helper
// prefix is that user's `sudo -n` places, checks, heals and sweeps a fault in a real namespace.
// Needs root (to make the user, the namespace and the sudoers file), sudo, nft, runuser.

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "server/common/clock.h"
#include "server/fault/command.h"
#include "server/fault/gray_helper.h"
#include "server/fault/gray_runner.h"
#include "tests/support/paths.h"
#include "tests/support/shell.h"

namespace gray_sudo_test {

using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

constexpr const char* kUser = "kfaild-gray-test";
constexpr const char* kNetns = "kfgs-n1";
const std::string kSudoers = "/etc/sudoers.d/kfaild-gray-test";
const std::string kHelper = KFAILD_BINARY_DIR "/server/kfaild-gray";

CommandOutput run(const std::vector<std::string>& argv) {
  auto out = runCommand(argv, 20s);
  return out.ok() ? *out : CommandOutput{-1, "", out.error().message};
}

bool have(const std::string& program) {
  return kfaild::testing::havePath(program);
}

// The shipped line, with the test's user and this build's helper in place of the packaged ones.
std::string sudoersLine() {
  std::ifstream in(KFAILD_SOURCE_DIR "/deploy/sudoers/kfaild-gray");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string line;
  for (auto at = text.find("\nkfaild "); at != std::string::npos;) {
    line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
    break;
  }
  line.replace(0, std::string("kfaild").size(), kUser);
  line.replace(line.find(kGrayHelperPath), kGrayHelperPath.size(), kHelper);
  return line;
}

// The user, the sudoers file and the namespace, removed again on destruction.
struct Setup {
  Setup() {
    teardown();
    if (run({"id", kUser}).exit_code != 0) run({"useradd", "--system", "--no-create-home", kUser});
    std::ofstream(kSudoers) << sudoersLine() << "\n";
    std::filesystem::permissions(
        kSudoers, std::filesystem::perms::owner_read | std::filesystem::perms::group_read);
    run({"ip", "netns", "add", kNetns});
  }
  ~Setup() { teardown(); }
  static void teardown() {
    std::filesystem::remove(kSudoers);
    run({"ip", "netns", "delete", kNetns});
  }
};

std::vector<std::string> asUser(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"runuser", "-u", kUser, "--"});
  return argv;
}

}  // namespace

TEST_CASE("the shipped sudoers line lets kfaild's user run kfaild-gray as root and nothing else",
          "[integration][security]") {
  if (::geteuid() != 0 || !have("sudo") || !have("visudo") || !have("nft") || !have("runuser")) {
    WARN("not run: needs root, sudo, visudo, nft and runuser");
    return;
  }
  const auto check = run({"visudo", "-cf", KFAILD_SOURCE_DIR "/deploy/sudoers/kfaild-gray"});
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
  CHECK(sudoersLine() == std::string(kUser) + " ALL=(root) NOPASSWD: " + kHelper);
  Setup setup;
  // Nothing but the helper: not nft, not a shell.
  CHECK(run(asUser({"sudo", "-n", "nft", "list", "tables"})).exit_code != 0);
  CHECK(run(asUser({"sudo", "-n", "sh", "-c", "id"})).exit_code != 0);
  CHECK(run(asUser({"nft", "list", "tables"})).exit_code != 0);  // and the user alone cannot
  // An ssh host's check that the broker is not in a container, through the same line.
  CHECK(run(asUser(
                {"sudo", "-n", kHelper, "--expect-pid", std::to_string(::getpid()), "netns-check"}))
            .exit_code == 0);
  const auto elsewhere = run(asUser({"sudo", "-n", kHelper, "--netns", kNetns, "--expect-pid",
                                     std::to_string(::getpid()), "netns-check"}));
  CHECK(elsewhere.exit_code == kHelperRefused);
  CHECK(elsewhere.err.find("is not in network namespace kfgs-n1") != std::string::npos);

  const kfaild::common::SystemClock clock;
  NodeShell shell;
  const std::vector<std::string> helper = asUser({"sudo", "-n", kHelper});
  shell.nft =
      [helper](const std::vector<std::string>& words) -> kfaild::Result<std::vector<std::string>> {
    return localHelperArgv(helper, kNetns, 0, words);
  };
  shell.instance = "i0000beef";
  GrayRunner runner(shell, clock);
  IsolateSpec spec;
  spec.drill = "91";
  spec.from = IsolateFrom::brokers;
  spec.duration = 60s;
  spec.peers.brokers = {"10.79.9.2"};
  REQUIRE(runner.check(spec).ok());
  CHECK(run({"ip", "netns", "exec", kNetns, "nft", "list", "tables"}).out.find("kfaild_") ==
        std::string::npos);
  const auto before = clock.wallNow();
  auto isolated = runner.isolate(spec);
  INFO((isolated.ok() ? isolated->detail : isolated.error().describe()));
  REQUIRE(isolated.ok());
  // The helper's own window, on this host's clock, inside kfaild's bracket of the call.
  CHECK(isolated->fault_time_source == "kfaild-gray:local-clock");
  CHECK(isolated->faultTime() >= before);
  CHECK(isolated->faultTime() <= clock.wallNow());
  CHECK(isolated->uncertainty_us < 1'000'000);
  CHECK(run({"ip", "netns", "exec", kNetns, "nft", "list", "tables"})
            .out.find("kfaild_i0000beef_d91") != std::string::npos);
  auto healed = runner.heal("91");
  REQUIRE(healed.ok());
  CHECK(run({"ip", "netns", "exec", kNetns, "nft", "list", "tables"}).out.find("kfaild_") ==
        std::string::npos);
  REQUIRE(runner.isolate(spec).ok());
  auto swept = runner.sweep();
  REQUIRE(swept.ok());
  CHECK(*swept == std::vector<std::string>{"nft table inet kfaild_i0000beef_d91"});
}

TEST_CASE("kfaild-gray places rules only when the broker it is given runs in the namespace",
          "[integration][security]") {
  if (::geteuid() != 0 || !have("nft")) {
    WARN("not run: needs root and nft");
    return;
  }
  Setup setup;
  const std::vector<std::string> words = {"isolate", "--instance", "",     "--drill",
                                          "5",       "--duration", "30",   "--from",
                                          "all",     "--mode",     "drop", "--check"};
  auto with = [&](std::int64_t pid) {
    return run(localHelperArgv({kHelper}, kNetns, 0, words, pid));
  };
  // This test's own process runs in the root namespace, not in kNetns.
  const auto elsewhere = with(::getpid());
  CHECK(elsewhere.exit_code == kHelperRefused);
  CHECK(elsewhere.err.find("is not in network namespace kfgs-n1") != std::string::npos);
  auto inside =
      runCommand({"sh", "-c", std::string("ip netns exec ") + kNetns + " sleep 30 & echo $!"}, 10s);
  REQUIRE(inside.ok());
  const auto pid = std::stoll(inside->out);
  // $! is `ip`'s pid, in the root namespace until it has entered kNetns and exec'd sleep.
  const auto inode = [](const std::string& path) {
    struct stat st{};
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  };
  for (int i = 0; i < 100 && inode("/proc/" + std::to_string(pid) + "/ns/net") !=
                                 inode(std::string("/run/netns/") + kNetns);
       ++i) {
    ::usleep(50'000);
  }
  const auto there = with(pid);
  INFO(there.err);
  CHECK(there.exit_code == 0);
  run({"kill", std::to_string(pid)});
}

}  // namespace gray_sudo_test
