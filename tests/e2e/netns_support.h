#pragma once

// The namespaced lab (KFAILD_LAB_NETNS=1) for the gray-fault end-to-end tests: whether the lab in
// the environment is one, kfaild's inventory for it (each node's address, network namespace and
// fill dir), and looks into a node's namespace (its nft tables, whether a peer reaches it).

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/e2e/e2e_support.h"

namespace kfaild::e2e {

inline bool namespacedLab() {
  const auto status = nlohmann::json::parse(testing::labOutput("status --json"), nullptr, false);
  return !status.is_discarded() && status.value("netns", false);
}

// kfaild's configuration for the namespaced lab: the default probe topic (broker 1 leads p0 and
// follows p1, p2; broker 3 follows p0 and p1 and leads p2) and every node with its address,
// network namespace and fill dir as `lab status --json` gives them.
inline void addNetnsInventory(const Lab& lab) {
  std::ofstream c(lab.config, std::ios::app);
  c << "    inventory:\n";
  for (int id : {1, 2, 3, 100}) {
    const auto node = testing::labNode(id);
    REQUIRE(node);
    REQUIRE(!node->netns.empty());
    const auto dir = std::filesystem::path(node->pid_file).parent_path().string();
    c << "      - id: " << id << "\n"
      << (id == 100 ? "        role: controller\n" : "") << "        address: " << node->address
      << "\n"
      << "        gray_faults: true\n"
      << "        netns: " << node->netns << "\n"
      << "        fill_dir: " << node->fill_dir << "\n"
      << "        local: {pid_file: " << node->pid_file << ", start_command: [" << KFAILD_SOURCE_DIR
      << "/lab/lab, start, \"" << id << "\"], log_dir: " << dir << "/logs}\n";
  }
}

inline std::string netnsOf(int id) {
  const auto node = testing::labNode(id);
  REQUIRE(node);
  return node->netns;
}

// `nft list tables` in the node's namespace.
inline std::string nftTables(int id) {
  return run("ip netns exec " + netnsOf(id) + " nft list tables 2>&1").second;
}

inline bool brokerReachable(const std::string& from_netns, int id) {
  const auto node = testing::labNode(id);
  REQUIRE(node);
  // bash's /dev/tcp from inside the namespace: a connect that the isolation drops times out.
  return run("ip netns exec " + from_netns + " timeout 2 bash -c 'exec 3<>/dev/tcp/" +
             node->address + "/" + std::to_string(node->port) + "' 2>/dev/null")
             .first == 0;
}

// A kfaild probing the namespaced lab with every node in its inventory, steady: what each
// gray-fault drill test starts from. The environment names the namespaced lab first.
struct NetnsKfaild {
  testing::NamespacedLabEnv env;
  Lab lab;
  Kfaild kfaild;

  explicit NetnsKfaild(const std::string& name, const LabOptions& options = Lab::options("", false))
      : lab(checked(options)), kfaild(withInventory(lab), name) {
    kfaild.waitSteady(lab.topic);
  }

 private:
  static const LabOptions& checked(const LabOptions& options) {
    REQUIRE(namespacedLab());
    return options;
  }
  static const Lab& withInventory(const Lab& lab) {
    addNetnsInventory(lab);
    return lab;
  }
};

}  // namespace kfaild::e2e
