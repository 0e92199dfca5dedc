#include "server/config/command_target.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "server/config/config.h"
#include "tests/support/temp_dir.h"

namespace command_target_test {

using namespace kfaild::config;

namespace {

// A cluster whose node 1 is reached through `command` (YAML at the node's indentation + 2).
std::string withCommand(const std::string& command, const std::string& node_extra = "") {
  return R"(
storage: {path: /tmp/k.db}
clusters:
  - name: lab
    bootstrap: 127.0.0.1:19091
    probe:
      topics: [orders]
    inventory:
      - id: 1
)" + node_extra +
         "        command:\n" + command;
}

const std::string kKillStop =
    "          kill: [kubectl, delete, pod, 'kafka-{id}', --grace-period=0, --force]\n"
    "          stop: [kubectl, delete, pod, 'kafka-{id}']\n";

std::string errorOf(const std::string& yaml) {
  try {
    parseConfig(yaml, "test.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A directory on PATH with a `kubectl` that does nothing, for the length of a test.
struct FakeKubectl {
  kfaild::testing::TempDir dir;
  std::string old_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  FakeKubectl() {
    const auto path = dir / "kubectl";
    std::ofstream(path) << "#!/bin/sh\nexit 0\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    std::ofstream(dir / "not-executable") << "#!/bin/sh\n";
    setenv("PATH", (dir.path().string() + ":" + old_path).c_str(), 1);
  }
  ~FakeKubectl() { setenv("PATH", old_path.c_str(), 1); }
};

}  // namespace

TEST_CASE("a node reached through commands reads each as an argv with its timeout",
          "[unit][config]") {
  const FakeKubectl kubectl;
  const auto c = parseConfig(withCommand(
      kKillStop +
          "          start: []\n"
          "          pause: {argv: [kubectl, exec, 'kafka-{id}', --, kill, -STOP, '1'], "
          "timeout_s: 5}\n"
          "          resume: [kubectl, exec, 'kafka-{id}', --, kill, -CONT, '1']\n"
          "          alive: [kubectl, get, pod, 'kafka-{id}', -o, 'jsonpath={.status.phase}']\n"
          "          alive_output: Running\n"
          "          timeout_s: 90\n"
          "          log_dir: /var/log/kafka\n",
      "        address: 10.0.0.1\n"));
  const auto& node = c.clusters[0].inventory[0];
  REQUIRE(node.command);
  const auto& t = *node.command;
  CHECK(t.kill.argv.size() == 6);
  CHECK(t.kill.timeout == std::chrono::seconds(90));
  CHECK(t.pause.timeout == std::chrono::seconds(5));
  CHECK(t.start.argv.empty());
  CHECK(t.alive.argv.back() == "jsonpath={.status.phase}");
  CHECK(t.alive_output == "Running");
  CHECK(t.log_dir == "/var/log/kafka");
  CHECK_FALSE(node.local);
  // Without timeout_s: a minute.
  CHECK(parseConfig(withCommand(kKillStop)).clusters[0].inventory[0].command->stop.timeout ==
        CommandTarget::kDefaultTimeout);
}

TEST_CASE("a command node's mistakes stop kfaild at start naming the key", "[unit][config]") {
  const FakeKubectl kubectl;
  const std::string key = "clusters[0].inventory[0].command";
  const std::string stop = "          stop: [kubectl, delete, pod, 'kafka-{id}']\n";
  const std::string kill = "          kill: [kubectl, delete, pod, 'kafka-{id}']\n";
  CHECK_THAT(errorOf(withCommand(stop)), Catch::Contains(key + ".kill: required"));
  CHECK_THAT(errorOf(withCommand(kill)), Catch::Contains(key + ".stop: required"));
  CHECK_THAT(errorOf(withCommand(kill + "          stop: []\n")),
             Catch::Contains(key + ".stop: required"));
  CHECK_THAT(errorOf(withCommand(kill + "          stop: kubectl delete pod kafka-1\n")),
             Catch::Contains(key + ".stop: must be a list of strings"));
  CHECK_THAT(errorOf(withCommand(kill + "          stop: [kubectl, delete, pod, 'kafka-{ID}']\n")),
             Catch::Contains(key + ".stop[3]: {ID} is not a placeholder"));
  CHECK_THAT(errorOf(withCommand(kill + "          stop: [kubectl, delete, '{host}']\n")),
             Catch::Contains(key + ".stop[2]: {host} needs the node's address"));
  CHECK_THAT(errorOf(withCommand(kill + "          stop: [kubectl, annotate, 'd={drill}']\n")),
             Catch::Contains(key + ".stop[2]: {drill} is known only in pause and resume"));
  CHECK_THAT(errorOf(withCommand(kill + "          stop: [kubectl-nowhere-to-be-found, x]\n")),
             Catch::Contains(key + ".stop[0]: kubectl-nowhere-to-be-found is not found on PATH"));
  CHECK_THAT(errorOf(withCommand(kill + "          stop: [" +
                                 (kubectl.dir / "not-executable").string() + "]\n")),
             Catch::Contains(key + ".stop[0]: ") && Catch::Contains("is not an executable file"));
  CHECK_THAT(errorOf(withCommand(kill + "          stop: ['kubectl-{id}']\n")),
             Catch::Contains(key + ".stop[0]: the program is named plainly"));
  CHECK_THAT(errorOf(withCommand(kKillStop + "          pause: [kubectl, pause]\n")),
             Catch::Contains(key + ".resume: pause and resume come together"));
  CHECK_THAT(errorOf(withCommand(kKillStop + "          timeout_s: 0\n")),
             Catch::Contains(key + ".timeout_s: must be between 1 and 3600"));
  CHECK_THAT(errorOf(withCommand(kKillStop + "          start: {argv: [kubectl], timeout: 5}\n")),
             Catch::Contains(key + ".start.timeout: unknown key"));
  CHECK_THAT(errorOf(withCommand(kKillStop + "          restart: [kubectl]\n")),
             Catch::Contains(key + ".restart: unknown key"));
  CHECK_THAT(errorOf(withCommand(kKillStop + "          alive_output: Running\n")),
             Catch::Contains(key + ".alive_output: only with alive"));
  CHECK_THAT(errorOf(withCommand(kKillStop, "        local: {pid_file: x, start_command: [y]}\n")),
             Catch::Contains("clusters[0].inventory[0]: needs exactly one of docker, ssh, local, "
                             "command"));
  CHECK_THAT(errorOf(withCommand(kKillStop, "        gray_faults: true\n")),
             Catch::Contains("clusters[0].inventory[0].gray_faults: not for a command node"));
  CHECK_THAT(errorOf(withCommand(kKillStop, "        fill_dir: /tmp\n        gray_faults: true\n")),
             Catch::Contains("clusters[0].inventory[0].fill_dir: not for a command node"));
}

}  // namespace command_target_test
