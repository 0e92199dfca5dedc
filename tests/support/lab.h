#pragma once

// Access to the lab cluster (lab/lab) for end-to-end tests. The ctest fixture `lab_up`
// starts it before the first e2e test; these helpers act on it.

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kfaild::testing {

// Runs `lab/lab <args>` and returns its exit code; output goes to the test log.
int lab(const std::string& args);
// Runs it and returns what it printed on stdout.
std::string labOutput(const std::string& args);
// "127.0.0.1:19091,127.0.0.1:19092,127.0.0.1:19093"
std::string labBootstrap();
// The state dir of the lab the environment names: KFAILD_LAB_DIR, else <repo>/.lab (the lab ctest
// gave the test, tests/main.cc).
std::string labStateDir();

// Whether a drill's failure reason is kfaild refusing it, at the preflight or at the fault, because
// its probe was not steady (no ack or receive for a while, or a backlog): the guard that keeps a
// drill from measuring an overloaded host. The node was not touched. On two cores shared by three
// labs a broker restarted by the previous drill can still lag, so an e2e test may ask again.
bool refusedForProbe(const std::string& reason);

// A node as `lab status --json` describes it; in namespaced mode (KFAILD_LAB_NETNS=1) with its
// own address, network namespace and fill dir (lab/README.md).
struct LabNode {
  int id = 0;
  int port = 0;
  std::string address;   // 127.0.0.1 in the default mode
  std::string netns;     // empty in the default mode
  std::string fill_dir;  // empty in the default mode
  std::string pid_file;
};
// nullopt when the lab does not answer or has no such node.
std::optional<LabNode> labNode(int id);

// Sets environment variables for the test's lifetime and restores them after: the lab that
// `lab/lab` (run by this test and by the kfaild it starts) acts on. nullopt unsets one.
class LabEnv {
 public:
  explicit LabEnv(const std::vector<std::pair<std::string, std::optional<std::string>>>& values);
  ~LabEnv();
  LabEnv(const LabEnv&) = delete;
  LabEnv& operator=(const LabEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// The namespaced lab: the one the environment names when KFAILD_LAB_NETNS=1 is set (a lab
// brought up by hand), else the `lab_netns` fixture's (tests/CMakeLists.txt: port base 29000,
// state in <build>/lab-netns).
class NamespacedLabEnv : public LabEnv {
 public:
  NamespacedLabEnv();
};

// The three-controller lab (KFAILD_LAB_CONTROLLERS=3): the one the environment names when that is
// set, else the `lab_quorum` fixture's (port base 27000, state in <build>/lab-quorum).
class QuorumLabEnv : public LabEnv {
 public:
  QuorumLabEnv();
};

// The secured lab (KFAILD_LAB_SECURITY=sasl_ssl or mtls, lab/README.md): the one the
// environment names when KFAILD_LAB_SECURITY is set, else the `lab_secured` fixture's (port base
// 26000, state in <build>/lab-secured). `mode` is what this test needs; setSecurity() switches
// the lab to it.
class SecuredLabEnv : public LabEnv {
 public:
  explicit SecuredLabEnv(const std::string& mode);
};

// Brings the lab that the environment names to `mode` (plaintext, sasl_ssl or mtls): down and up
// again when it runs in another one, up when it is down. False when `lab up` failed.
bool setLabSecurity(const std::string& mode);

}  // namespace kfaild::testing
