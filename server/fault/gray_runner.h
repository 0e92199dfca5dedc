#pragma once

// Runs gray faults (gray_fault.h) on one node through kfaild-gray (gray_helper.h), the only
// program that changes the node: kfaild sends it words, never a script. How it reaches the node
// is the injector's NodeShell:
//
//   local   [sudo -n] kfaild-gray --netns <netns> isolate ...     (gray_helper, default below)
//   ssh     ssh ... sudo -n /usr/lib/kfaild/kfaild-gray isolate ...
//   docker  [sudo -n] kfaild-gray --pid <container pid> isolate ... (kfaild beside the engine)
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
#include "server/fault/gray_helper.h"
#include "server/fault/injector.h"

namespace kfaild::fault {

// argv that runs kfaild-gray with `words` on the node, placed where the injector puts the fault
// (--netns, --pid); an Error when the node cannot be reached that way now (a container that is
// not running has no netns to enter: errc::invalid_state).
using HelperArgv =
    std::function<Result<std::vector<std::string>>(const std::vector<std::string>& words)>;

// The last word of a network request whose rules keep the injecting ssh session's port: the ssh
// injector's remote command replaces it by `--keep-port <$SSH_CONNECTION's port>` on the node.
inline constexpr std::string_view kSessionPortWord = "--keep-session-port";

struct NodeShell {
  HelperArgv nft;           // network requests; empty: this node cannot take them (refused)
  HelperArgv sh;            // disk requests; empty: no filesystem of the node's to fill (refused)
  std::string nft_refusal;  // why nft is empty
  std::string sh_refusal;   // why sh is empty
  NftExceptions keep;
  // When set, asked before every isolate or throttle for what the rules keep open (instead of
  // `keep`: ssh's port from `ssh -G`), after checking that rules placed where `nft` runs reach
  // the broker (its network namespace); an error refuses the injection with the reason.
  std::function<Result<NftExceptions>()> network_placement;
  // The node's clock against kfaild's, for the times kfaild-gray reports; empty: kfaild's host.
  std::function<Result<ClockOffset>()> clock_offset;
  std::string fill_dir;  // disk_full: a dir on the log dir's filesystem; empty: refused
  std::string instance;  // the kfaild instance's id in every name (gray_fault.h, Names)
  std::chrono::milliseconds timeout{20'000};
};

// A node's script timeout: kShellTimeout, plus the time ssh may take to connect.
inline constexpr std::chrono::milliseconds kShellTimeout{20'000};
// A fill's: dd may write for a while on a large filesystem (its expiry timer runs meanwhile).
inline constexpr std::chrono::milliseconds kFillTimeout{120'000};

// Where a node's gray faults go, as configured for it.
struct GrayPlacement {
  std::string netns;     // local: the node's network namespace (`ip netns` name)
  std::string fill_dir;  // local, ssh: a dir on the node's log filesystem for disk_full
  std::string instance;  // the kfaild instance's id (gray_fault.h, Names)
  // How kfaild-gray is run on the node: the argv before its words (gray_helper in the
  // inventory; defaultGrayHelper when that is empty).
  std::vector<std::string> helper;
};

// kfaild-gray on kfaild's own host: $KFAILD_GRAY_HELPER when it is an absolute path, else the
// one beside kfaild's executable when there is one (a build tree), else kGrayHelperPath; through
// `sudo -n` unless kfaild runs as root.
std::vector<std::string> defaultLocalGrayHelper();
// On an ssh host: sudo -n kGrayHelperPath.
std::vector<std::string> defaultSshGrayHelper();

// argv builders, pure: exactly what runs. `helper` is the argv prefix (GrayPlacement::helper).
// `expect_pid`: with a netns, the broker kfaild-gray checks is in it (--expect-pid).
std::vector<std::string> localHelperArgv(const std::vector<std::string>& helper,
                                         const std::string& netns, std::int64_t pid,
                                         const std::vector<std::string>& words,
                                         std::int64_t expect_pid = 0);
// The remote command line ssh hands to the node's shell. A request ending in kSessionPortWord
// gets `--keep-port <port>` of $SSH_CONNECTION there instead (nothing when that has none).
std::string remoteHelperCommand(const std::vector<std::string>& helper,
                                const std::vector<std::string>& words);

// Runs a command for the gray faults: runCommand, by default.
using CommandRunner = std::function<Result<CommandOutput>(const std::vector<std::string>& argv,
                                                          std::chrono::milliseconds timeout)>;

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
  // the container stopped), or kfaild-gray's "nothing there", means nothing of ours is left.
  Result<FaultRecord> healPlaced(const GrayPlace& place, const HelperArgv& nft = {});
  Result<std::vector<std::string>> sweep();

 private:
  Result<CommandOutput> runOn(const HelperArgv& how, const HelperRequest& request,
                              std::string* detail, bool keep_session = false);
  // requested_at, and the fault's time from the window kfaild-gray printed in `out` (bracketed
  // by the call when it printed none), as record fields.
  void placeInTime(FaultRecord& record, const CommandOutput& out, const std::string& what);
  Result<NftExceptions> networkPlacement() const;

  NodeShell shell_;
  const common::Clock& clock_;
  CommandRunner run_;
};

}  // namespace kfaild::fault
