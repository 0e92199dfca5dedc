#pragma once

// Runs gray faults (gray_fault.h) on one node through a NodeShell: how an nft script or a sh
// script reaches that node. The injectors own one each:
//
//   local   nft: ip netns exec <netns> nft '<script>'       sh: sh -c '<script>'
//   ssh     nft: ssh ... sudo -n nft '<script>'             sh: ssh ... sudo -n sh -c '<script>'
//           (iptables where nft is missing is not done: refused with that reason)
//   docker  nft: nsenter -t <container pid> -n nft '<script>' (kfaild beside the engine)
//
// Every command and its output goes into FaultRecord::detail. Blocks; not thread-safe (one
// per injector, used by the drill runner's thread).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/fault/command.h"
#include "server/fault/gray_fault.h"
#include "server/fault/injector.h"

namespace kfaild::fault {

// argv for one script on the node; an Error when the node cannot be reached that way now
// (e.g. a container that is not running has no netns to enter).
using ScriptArgv = std::function<Result<std::vector<std::string>>(const std::string& script)>;

struct NodeShell {
  ScriptArgv nft;  // empty: this injector cannot run nft on the node (network faults refused)
  ScriptArgv sh;   // empty: no shell on the node's filesystem (disk_full refused)
  std::string nft_refusal;  // why nft is empty
  std::string sh_refusal;   // why sh is empty
  NftExceptions keep;
  // When set, asked before every isolate or throttle for what the rules keep open (instead of
  // `keep`: ssh's port from `ssh -G`), after checking that rules placed where `nft` runs reach
  // the broker (its network namespace); an error refuses the injection with the reason.
  std::function<Result<NftExceptions>()> network_placement;
  std::string fill_dir;  // disk_full: a dir on the log dir's filesystem; empty: refused
  std::string instance;  // the kfaild instance's id in every name (gray_fault.h, Names)
  std::chrono::milliseconds timeout{20'000};
};

// A node's script timeout: kShellTimeout, plus the time ssh may take to connect.
inline constexpr std::chrono::milliseconds kShellTimeout{20'000};

// Where a node's gray faults go, as configured for it (phase 2: config keys per node).
struct GrayPlacement {
  std::string netns;     // local: the node's network namespace (`ip netns` name)
  std::string fill_dir;  // local, ssh: a dir on the node's log filesystem for disk_full
  std::string instance;  // the kfaild instance's id (gray_fault.h, Names)
};

// argv builders, pure: exactly what runs.
std::vector<std::string> localNftArgv(const std::string& netns, const std::string& script);
std::vector<std::string> localShArgv(const std::string& script);
std::vector<std::string> nsenterNftArgv(std::int64_t pid, const std::string& script);
// The remote command line ssh hands to the remote shell (argv[..] of ssh's last argument).
// A script holding kSessionPortToken gets it replaced on the node by the port of $SSH_CONNECTION
// (the line dropped when that has none) and goes to `sudo -n nft -f -` in one transaction.
std::string sudoNftCommand(const std::string& script);
std::string sudoShCommand(const std::string& script);

// Runs a command for the gray faults: runCommand, by default.
using CommandRunner = std::function<Result<CommandOutput>(const std::vector<std::string>& argv,
                                                         std::chrono::milliseconds timeout)>;

class GrayRunner;

// The Injector's gray-fault methods for an injector that holds `runner` (null: refused with
// `unplaced`).
std::string grayRefusal(const GrayRunner* runner, GrayFault fault, const std::string& unplaced);
// heal and sweep for such an injector: with no runner nothing can have been injected, so both
// succeed with nothing done (heal's record says why, from `unplaced`). `nft` as healPlaced's.
Result<FaultRecord> grayHeal(GrayRunner* runner, const std::string& drill, const common::Clock& clock,
                             const std::string& unplaced);
Result<FaultRecord> grayHealPlaced(GrayRunner* runner, const GrayPlace& place, const common::Clock& clock,
                                   const std::string& unplaced, const ScriptArgv& nft = {});
Result<std::vector<std::string>> graySweep(GrayRunner* runner);
Status grayCheck(GrayRunner* runner, const GrayAction& action, const std::string& unplaced);

// `argv` (an nft call as a NodeShell builds it: "... nft <script>", or ssh's remote
// "sudo -n nft <script>") with nft's --check: nft parses the script and the kernel validates the
// batch without committing it. nullopt when argv is neither.
std::optional<std::vector<std::string>> nftCheckArgv(std::vector<std::string> argv);

// The sh script that checks a disk filler's directory: an existing directory kfaild may write
// to, on a filesystem other than the root's (filling `/` would take the host down with the broker).
std::string fillDirCheckScript(const std::string& fill_dir);

class GrayRunner {
 public:
  GrayRunner(NodeShell shell, const common::Clock& clock, CommandRunner run = runCommand);

  std::string refusal(GrayFault fault) const;  // empty when this node can do it
  // Injector::checkGray through this node's shell: `nft --check` of the exact script, or the fill
  // dir's check; runs nothing that changes the node.
  Status check(const GrayAction& action);
  Result<FaultRecord> isolate(const IsolateSpec& spec);
  Result<FaultRecord> throttle(const ThrottleSpec& spec);
  Result<FaultRecord> fillDisk(const DiskFullSpec& spec);
  // Where `drill`'s fault goes through this shell: its table when nft can run, its filler when a
  // fill dir is configured (the injector adds host and namespace).
  GrayPlace placeOf(const std::string& drill) const;
  Result<FaultRecord> heal(const std::string& drill);
  // Injector::healPlaced. `nft` is the way into the namespace the place names (empty: this
  // shell's own); an error from it with errc::not_present or errc::invalid_state (no namespace,
  // the container stopped) means nothing of ours can be left there.
  Result<FaultRecord> healPlaced(const GrayPlace& place, const ScriptArgv& nft = {});
  Result<std::vector<std::string>> sweep();

 private:
  Result<CommandOutput> runOn(const ScriptArgv& how, const std::string& script,
                              std::string* detail);
  Result<NftExceptions> networkPlacement() const;

  NodeShell shell_;
  const common::Clock& clock_;
  CommandRunner run_;
};

}  // namespace kfaild::fault
