// What heal, the start-up sweep and the preflight's check of a gray fault do through a node's
// shell: the nft step and the disk step each run and succeed on their own, "nothing there" is a
// heal, and the check runs the exact script under `nft --check` and the fill dir's test.

#include <catch2/catch.hpp>

#include <filesystem>

#include "server/common/clock.h"
#include "server/fault/command.h"
#include "server/fault/errc.h"
#include "server/fault/gray_runner.h"
#include "tests/support/manual_clock.h"

using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

using Ran = std::vector<std::vector<std::string>>;

// Commands as a node answers them: nft fails with `nft_error` (exit 1) when it is set, the shell
// succeeds printing `sh_out`.
CommandRunner node(Ran& ran, std::string nft_error, std::string sh_out = "") {
  return [&ran, nft_error, sh_out](const std::vector<std::string>& argv,
                                   std::chrono::milliseconds) -> kfaild::Result<CommandOutput> {
    ran.push_back(argv);
    const bool nft = std::find(argv.begin(), argv.end(), "nft") != argv.end();
    if (nft && !nft_error.empty()) return CommandOutput{1, "", nft_error};
    return CommandOutput{0, nft ? "" : sh_out, ""};
  };
}

NodeShell shellIn(const std::string& netns, const std::string& fill_dir) {
  NodeShell shell;
  shell.nft = [netns](const std::string& script) -> kfaild::Result<std::vector<std::string>> {
    return localNftArgv(netns, script);
  };
  shell.sh = [](const std::string& script) -> kfaild::Result<std::vector<std::string>> {
    return localShArgv(script);
  };
  shell.fill_dir = fill_dir;
  return shell;
}

bool ranSh(const Ran& ran, const std::string& script) {
  return std::find(ran.begin(), ran.end(), localShArgv(script)) != ran.end();
}

}  // namespace

TEST_CASE("heal frees the disk filler even when nft fails, and says which step failed", "[unit]") {
  kfaild::testing::ManualClock clock;
  Ran ran;
  GrayRunner runner(shellIn("kfl25000-n1", "/srv/fill"), clock, node(ran, "sudo: nft: command not found"));
  auto healed = runner.heal("42");
  REQUIRE_FALSE(healed.ok());
  CHECK(healed.error().code == make_error_code(errc::command_failed));
  // What nft said is the operator's only (marked sensitive).
  CHECK(healed.error().message.find("exited with 1: ") != std::string::npos);
  CHECK(healed.error().message.find("sudo: nft: command not found") != std::string::npos);
  CHECK(healed.error().message.find("(done all the same: ") != std::string::npos);
  CHECK(ranSh(ran, diskFreeScript("/srv/fill", "", "42")));
}

TEST_CASE("heal of a place with no namespace left is a heal: nothing of the drill's can be there", "[unit]") {
  kfaild::testing::ManualClock clock;
  Ran ran;
  GrayRunner runner(shellIn("kfl25000-n1", "/srv/fill"), clock, node(ran, ""));
  const ScriptArgv gone = [](const std::string&) -> kfaild::Result<std::vector<std::string>> {
    return faultError(errc::not_present, "no network namespace kfl25000-n1");
  };
  const GrayPlace place{"", "kfl25000-n1", "net:[4026532417]", "kfaild_d42", "/srv/old-fill/kfaild_fill_d42"};
  auto healed = runner.healPlaced(place, gone);
  REQUIRE(healed.ok());
  CHECK(healed->detail.find("no table kfaild_d42 can be left: no network namespace kfl25000-n1") == 0);
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
  CHECK(healed.error().message == "'filter' is not a kfaild table; '/etc/sudoers' is not a kfaild disk filler");
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
  CHECK(swept.error().message.find("(removed all the same: disk filler /srv/fill/kfaild_fill_d7)") !=
        std::string::npos);
  CHECK(ranSh(ran, diskSweepScript("/srv/fill", "")));

  SECTION("and a container that is not running has no table to sweep") {
    NodeShell stopped;
    stopped.nft = [](const std::string&) -> kfaild::Result<std::vector<std::string>> {
      return faultError(errc::invalid_state, "container kbf-k1-1 is not running: no netns to enter");
    };
    GrayRunner none(stopped, clock, node(ran, ""));
    auto nothing = none.sweep();
    REQUIRE(nothing.ok());
    CHECK(nothing->empty());
  }
}

TEST_CASE("the preflight's check runs the exact script under nft --check, and tests the fill dir", "[unit]") {
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
    CHECK(ran[0] == std::vector<std::string>{"ip", "netns", "exec", "kfl25000-n1", "nft", "--check",
                                             nftIsolateScript(spec, {})});
  }
  SECTION("a refusal says why") {
    Ran ran;
    GrayRunner runner(shellIn("kfl25000-n1", ""), clock, node(ran, "Error: Could not process rule: Operation not permitted"));
    auto checked = runner.check(spec);
    REQUIRE_FALSE(checked.ok());
    CHECK(checked.error().code == make_error_code(errc::unsupported));
    CHECK(checked.error().message.find("Operation not permitted") != std::string::npos);
  }
  SECTION("over ssh, through sudo -n") {
    CHECK(nftCheckArgv({"ssh", "k1", "--", sudoNftCommand("list tables")}) ==
          std::vector<std::string>{"ssh", "k1", "--", "sudo -n nft --check 'list tables'"});
    CHECK(nftCheckArgv({"sh", "-c", "x"}) == std::nullopt);
  }
  SECTION("the fill dir, by a real shell") {
    auto run = [](const std::string& dir) { return runCommand(localShArgv(fillDirCheckScript(dir)), 5000ms); };
    auto missing = run("/nonexistent/kfaild-fill");
    REQUIRE(missing.ok());
    CHECK(missing->exit_code == 1);
    CHECK(missing->err == "fill_dir /nonexistent/kfaild-fill is not a directory\n");
    auto root = run("/");
    REQUIRE(root.ok());
    CHECK(root->exit_code == 1);
    if (std::filesystem::is_directory("/dev/shm")) {
      auto shm = run("/dev/shm");
      REQUIRE(shm.ok());
      CHECK(shm->exit_code == 0);
    }
  }
}
