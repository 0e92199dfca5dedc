#include "tests/support/lab.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "tests/support/paths.h"

namespace kfaild::testing {
namespace {

std::string labCommand(const std::string& args) {
  return std::string(KFAILD_SOURCE_DIR) + "/lab/lab " + args;
}

}  // namespace

int lab(const std::string& args) {
  const int status = std::system(labCommand(args).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string labOutput(const std::string& args) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(labCommand(args).c_str(), "r"), pclose);
  if (!pipe) return out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe.get()) != nullptr) out += buf.data();
  return out;
}

bool refusedForProbe(const std::string& reason) {
  const bool refused = reason.rfind("refused: ", 0) == 0 ||
                       reason.rfind("refused at the fault: ", 0) == 0 ||
                       reason.rfind("refused after the preflight election: ", 0) == 0;
  return refused && (reason.find(": probe partition ") != std::string::npos ||
                     reason.find(": the probe of ") != std::string::npos ||
                     reason.find(": the probe is not probing") != std::string::npos);
}

std::string labBootstrap() {
  auto out = labOutput("bootstrap");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string labStateDir() {
  const char* dir = std::getenv("KFAILD_LAB_DIR");
  return dir != nullptr && *dir != '\0' ? std::string(dir)
                                        : std::string(KFAILD_SOURCE_DIR) + "/.lab";
}

std::optional<LabNode> labNode(int id) {
  const auto json = nlohmann::json::parse(labOutput("status --json"), nullptr, false);
  if (json.is_discarded() || !json.contains("nodes")) return std::nullopt;
  for (const auto& n : json["nodes"]) {
    if (n.value("node", -1) != id) continue;
    LabNode node;
    node.id = id;
    node.port = n.value("port", 0);
    node.address = n.value("address", "127.0.0.1");
    if (n.contains("netns_name") && n["netns_name"].is_string()) node.netns = n["netns_name"];
    if (n.contains("fill_dir") && n["fill_dir"].is_string()) node.fill_dir = n["fill_dir"];
    node.pid_file = n.value("pid_file", "");
    return node;
  }
  return std::nullopt;
}

namespace {

bool envIs(const char* name, const char* value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::string(set) == value;
}

}  // namespace

LabEnv::LabEnv(const std::vector<std::pair<std::string, std::optional<std::string>>>& values) {
  for (const auto& [name, value] : values) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old == nullptr ? std::nullopt : std::optional<std::string>(old));
    if (value) {
      setenv(name.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
}

LabEnv::~LabEnv() {
  for (const auto& [name, value] : saved_) {
    if (value) {
      setenv(name.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
}

NamespacedLabEnv::NamespacedLabEnv()
    : LabEnv(envIs("KFAILD_LAB_NETNS", "1")
                 ? std::vector<std::pair<std::string, std::optional<std::string>>>{}
                 : std::vector<std::pair<std::string, std::optional<std::string>>>{
                       {"KFAILD_LAB_NETNS", "1"},
                       {"KFAILD_LAB_PORT_BASE", "29000"},
                       {"KFAILD_LAB_DIR", KFAILD_BINARY_DIR "/lab-netns"}}) {}

QuorumLabEnv::QuorumLabEnv()
    : LabEnv(envIs("KFAILD_LAB_CONTROLLERS", "3")
                 ? std::vector<std::pair<std::string, std::optional<std::string>>>{}
                 : std::vector<std::pair<std::string, std::optional<std::string>>>{
                       {"KFAILD_LAB_CONTROLLERS", "3"},
                       {"KFAILD_LAB_NETNS", std::nullopt},
                       {"KFAILD_LAB_PORT_BASE", "27000"},
                       {"KFAILD_LAB_DIR", KFAILD_BINARY_DIR "/lab-quorum"}}) {}

SecuredLabEnv::SecuredLabEnv(const std::string& mode)
    : LabEnv(std::getenv("KFAILD_LAB_SECURITY") != nullptr &&
                     *std::getenv("KFAILD_LAB_SECURITY") != '\0'
                 ? std::vector<
                       std::pair<std::string, std::optional<std::string>>>{{"KFAILD_LAB_SECURITY",
                                                                            mode}}
                 : std::vector<std::pair<std::string, std::optional<std::string>>>{
                       {"KFAILD_LAB_SECURITY", mode},
                       {"KFAILD_LAB_NETNS", std::nullopt},
                       {"KFAILD_LAB_CONTROLLERS", std::nullopt},
                       {"KFAILD_LAB_PORT_BASE", "26000"},
                       {"KFAILD_LAB_DIR", KFAILD_BINARY_DIR "/lab-secured"}}) {}

bool setLabSecurity(const std::string& mode) {
  const auto status = nlohmann::json::parse(labOutput("status --json"), nullptr, false);
  const bool other =
      !status.is_discarded() && status.value("security", std::string("plaintext")) != mode;
  if (other && lab("down") != 0) return false;
  return lab("up") == 0;
}

}  // namespace kfaild::testing
