// What heal, the start-up sweep and the preflight's check of a gray fault do through a node's
// shell: the nft step and the disk step each run and succeed on their own, "nothing there" is a
// heal, and the check runs the exact script under `nft --check` and the fill dir's test.

#include <catch2/catch.hpp>
#include <filesystem>

#include "server/common/clock.h"
#include "server/fault/command.h"
#include "server/fault/errc.h"
#include "server/fault/gray_runner.h"
#include "tests/support/gray_helper.h"
#include "tests/support/manual_clock.h"
#include "tests/support/paths.h"

namespace gray_heal_test {

using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

using Ran = std::vector<std::vector<std::string>>;

// kfaild-gray as a node answers it: its network requests fail with `nft_error` (exit 1) when
// that is set, its disk requests succeed printing `sh_out`.
CommandRunner node(Ran& ran, std::string nft_error, std::string sh_out = "") {
  return [&ran, nft_error, sh_out](const std::vector<std::string>& argv,
                                   std::chrono::milliseconds) -> kfaild::Result<CommandOutput> {
    ran.push_back(argv);
    const bool nft = kfaild::testing::requestOf(argv).network();
    if (nft && !nft_error.empty()) return CommandOutput{1, "", nft_error};
    return CommandOutput{0, nft ? "" : sh_out, ""};
  };
}

NodeShell shellIn(const std::string& netns, const std::string& fill_dir) {
  NodeShell shell;
  shell.nft = kfaild::testing::helperInNetns(netns);
  shell.sh = kfaild::testing::helperOnHost();
  shell.fill_dir = fill_dir;
  return shell;
}

bool ranSh(const Ran& ran, const std::string& script) {
  return std::any_of(ran.begin(), ran.end(), [&](const auto& argv) {
    const auto request = kfaild::testing::requestOf(argv);
    return !request.network() && kfaild::fault::helperScript(request) == script;
  });
}

}  // namespace

TEST_CASE("heal frees the disk filler even when nft fails, and says which step failed", "[unit]") {
  kfaild::testing::ManualClock clock;
  Ran ran;
  GrayRunner runner(shellIn("kfl25000-n1", "/srv/fill"), clock,
                    node(ran, "sudo: nft: command not found"));
  auto healed = runner.heal("42");
  REQUIRE_FALSE(healed.ok());
  CHECK(healed.error().code == make_error_code(errc::command_failed));
  // What nft said is the operator's only (marked sensitive).
  CHECK(healed.error().message.find("exited with 1: ") != std::string::npos);
  CHECK(healed.error().message.find("sudo: nft: command not found") != std::string::npos);
  CHECK(healed.error().message.find("(done all the same: ") != std::string::npos);
  CHECK(ranSh(ran, diskFreeScript("/srv/fill", "", "42")));
}

TEST_CASE("heal of a place with no namespace left is a heal: nothing of the drill's can be there",
          "[unit]") {
  kfaild::testing::ManualClock clock;
  Ran ran;
  GrayRunner runner(shellIn("kfl25000-n1", "/srv/fill"), clock, node(ran, ""));
  const HelperArgv gone =
      [](const std::vector<std::string>&) -> kfaild::Result<std::vector<std::string>> {
    return faultError(errc::not_present, "no network namespace kfl25000-n1");
  };
  const GrayPlace place{"", "kfl25000-n1", "net:[4026532417]", "kfaild_d42",
                        "/srv/old-fill/kfaild_fill_d42"};
  auto healed = runner.healPlaced(place, gone);
  REQUIRE(healed.ok());
  CHECK(healed->detail.find("no table kfaild_d42 can be left: no network namespace kfl25000-n1") ==
        0);
  // The filler where the journal put it, not where the configuration says now.
  CHECK(ranSh(ran, diskFreeScript("/srv/old-fill", "", "42")));
  CHECK(ran.size() == 1);
}

TEST_CASE("heal touches nothing that is not kfaild's, whatever the journal says", "[unit]") {
  kfaild::testing::ManualClock clock;
  Ran ran;
  GrayRunner runner(shellIn("ns", "/srv/fill"), clock, node(ran, ""));
  auto healed = runner.healPlaced({"", "ns", "", "filter", "/etc/sudoers"});
  REQUIRE_FALSE(healed.ok());
  CHECK(healed.error().message ==
        "'filter' is not a kfaild table; '/etc/sudoers' is not a kfaild disk filler");
  CHECK(ran.empty());
}

TEST_CASE("the sweep frees disk fillers even when nft cannot list the tables", "[unit]") {
  kfaild::testing::ManualClock clock;
  Ran ran;
  GrayRunner runner(shellIn("ns", "/srv/fill"), clock,
                    node(ran, "Error: Operation not permitted", "/srv/fill/kfaild_fill_d7\n"));
  auto swept = runner.sweep();
  REQUIRE_FALSE(swept.ok());
  CHECK(swept.error().message.find("exited with 1: ") != std::string::npos);
  CHECK(swept.error().message.find("Error: Operation not permitted") != std::string::npos);
  CHECK(swept.error().message.find(
            "(removed all the same: disk filler /srv/fill/kfaild_fill_d7)") != std::string::npos);
  CHECK(ranSh(ran, diskSweepScript("/srv/fill", "")));

  SECTION("and a container that is not running has no table to sweep") {
    NodeShell stopped;
    stopped.nft = [](const std::vector<std::string>&) -> kfaild::Result<std::vector<std::string>> {
      return faultError(errc::invalid_state,
                        "container kbf-k1-1 is not running: no netns to enter");
    };
    GrayRunner none(stopped, clock, node(ran, ""));
    auto nothing = none.sweep();
    REQUIRE(nothing.ok());
    CHECK(nothing->empty());
  }
}

TEST_CASE(
    "the preflight's check asks kfaild-gray for nft --check of the exact request, and tests the "
    "fill dir",
    "[unit]") {
  kfaild::testing::ManualClock clock;
  IsolateSpec spec;
  spec.drill = "5";
  spec.from = IsolateFrom::brokers;
  spec.duration = 30s;
  spec.peers.brokers = {"10.0.0.2"};
  SECTION("nft --check through the namespace") {
    Ran ran;
    GrayRunner runner(shellIn("kfl25000-n1", ""), clock, node(ran, ""));
    REQUIRE(runner.check(spec).ok());
    REQUIRE(ran.size() == 1);
    const auto request = kfaild::testing::requestOf(ran[0]);
    CHECK(request.check);
    CHECK(request.netns == "kfl25000-n1");
    CHECK(helperScript(request) == nftIsolateScript(spec, {}));
  }
  SECTION("a refusal says why") {
    Ran ran;
    GrayRunner runner(shellIn("kfl25000-n1", ""), clock,
                      node(ran, "Error: Could not process rule: Operation not permitted"));
    auto checked = runner.check(spec);
    REQUIRE_FALSE(checked.ok());
    CHECK(checked.error().code == make_error_code(errc::unsupported));
    CHECK(checked.error().message.find("Operation not permitted") != std::string::npos);
  }
  SECTION("the fill dir, by the real kfaild-gray") {
    auto run = [](const std::string& dir) {
      return runCommand({KFAILD_BINARY_DIR "/server/kfaild-gray", "fill-check", "--instance", "",
                         "--drill", "5", "--duration", "30", "--fill-dir", dir},
                        5000ms);
    };
    auto missing = run("/nonexistent/kfaild-fill");
    REQUIRE(missing.ok());
    CHECK(missing->exit_code == 1);
    CHECK(missing->err.find("kfaild: cannot enter the fill dir /nonexistent/kfaild-fill") !=
          std::string::npos);
    auto root = run("/");
    REQUIRE(root.ok());
    CHECK(root->exit_code == kHelperRefused);
    if (std::filesystem::is_directory("/dev/shm")) {
      auto shm = run("/dev/shm");
      REQUIRE(shm.ok());
      CHECK(shm->exit_code == 0);
    }
  }
}

}  // namespace gray_heal_test
