#pragma once

// kfaild-gray: the one program that changes a node for a gray fault, and its command line.
//
// kfaild never hands a script to a privileged process. It runs kfaild-gray (through sudo on an
// SSH host or on kfaild's own host, or directly where kfaild-gray holds the capabilities) with
// words only: the operation, the drill and instance ids, a duration, a mode, a rate, peer
// addresses, kept ports, a fill directory. kfaild-gray checks every word itself (the same
// invalidReason kfaild checks with), builds the nft script or the filler's sh script from
// gray_fault.h's builders, runs it with a fixed PATH and an empty environment, and prints when it
// took effect on its host's clock. So one sudoers line can allow exactly it
// (docs/SECURITY.md), and whoever holds kfaild's key can do on a broker host what a drill does
// and nothing else: cut or slow its traffic and fill a log filesystem, each for at most 3,600 s +
// kExpiryMargin, and undo that.
//
//   kfaild-gray [--netns NAME [--expect-pid PID] | --pid PID] isolate --instance I --drill D
//   --duration S
//               --from quorum|brokers|clients|all --mode drop|reject [--quorum IP]...
//               [--broker IP]... [--keep-port PORT]... [--check]
//   kfaild-gray [--netns NAME | --pid PID] throttle --instance I --drill D --duration S --rate B
//               [--toward IP]... [--keep-port PORT]... [--check]
//   kfaild-gray [--netns NAME | --pid PID] heal --table kfaild_<instance>_d<drill>
//   kfaild-gray [--netns NAME | --pid PID] sweep --instance I
//   kfaild-gray [--netns NAME | --pid PID] --expect-pid PID netns-check
//   kfaild-gray fill --instance I --drill D --duration S --fill-dir DIR [--log-dir DIR]...
//   kfaild-gray fill-check --instance I --drill D --duration S --fill-dir DIR [--log-dir DIR]...
//   kfaild-gray free --filler DIR/kfaild_fill_<instance>_d<drill>
//   kfaild-gray fill-sweep --instance I --fill-dir DIR
//
// --netns: a network namespace under /run/netns (`ip netns`); --pid: the network namespace of
// that process (a container's); neither: the helper's own. --expect-pid: refuse (exit 2) unless
// that process (the broker) is in that namespace, checked by the helper as root just before it
// places the rules (an unprivileged kfaild cannot read a root broker's /proc/<pid>/ns/net);
// netns-check does only that check (an ssh host's: the broker is not in a container there). Exit
// status: 0 done, 1 the tool failed (its stderr follows), 2 the request was refused (why on
// stderr), 3 the place is gone (no such namespace or process: nothing of ours can be there).
//
// Pure functions here; the program is tools/kfaild-gray/main.cc.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/fault/gray_fault.h"

namespace kfaild::fault {

// Where the Debian package installs it; the sudoers line names this path.
inline constexpr std::string_view kGrayHelperPath = "/usr/lib/kfaild/kfaild-gray";

inline constexpr int kHelperFailed = 1;
inline constexpr int kHelperRefused = 2;
inline constexpr int kHelperNothingThere = 3;

// The longest fault the helper places, as the API's duration_s allows.
inline constexpr std::chrono::seconds kHelperMaxDuration{3600};

enum class HelperOp {
  isolate,
  throttle,
  heal,
  sweep,
  netns_check,
  fill,
  fill_check,
  free,
  fill_sweep
};

std::string toString(HelperOp op);

struct HelperRequest {
  HelperOp op = HelperOp::heal;
  std::string netns;            // a name under /run/netns; empty: not a named namespace
  std::int64_t pid = 0;         // a process whose network namespace to enter; 0: none
  std::int64_t expect_pid = 0;  // the broker that must be in the place's namespace; 0: not checked
  bool check = false;           // isolate, throttle: nft --check (nothing changes)
  IsolateSpec isolate;          // isolate
  ThrottleSpec throttle;        // throttle
  DiskFullSpec disk;            // fill, fill_check
  // isolate, throttle: ports the rules keep open. keep_session_port never reaches the helper:
  // the ssh injector's remote command turns it into a --keep-port of $SSH_CONNECTION's port.
  NftExceptions keep;
  std::string table;     // heal
  std::string instance;  // sweep, fill_sweep
  std::string fill_dir;  // fill_sweep
  std::string filler;    // free: a filler stem (fillerStem)
  bool network() const {
    return op == HelperOp::isolate || op == HelperOp::throttle || op == HelperOp::heal ||
           op == HelperOp::sweep || op == HelperOp::netns_check;
  }
};

// The words after the program's name, in the order parseHelperWords reads them.
std::vector<std::string> helperWords(const HelperRequest& request);

// The request the words ask for, every value checked: ids, durations (1..3,600 s), addresses (IP
// literals), ports, rates, absolute directories without `..`, table and filler names that are
// kfaild's. An error (errc::invalid_target) names the first bad word.
Result<HelperRequest> parseHelperWords(const std::vector<std::string>& words);

// What the helper runs for a request (not for sweep, which lists first): the nft script for
// isolate, throttle and heal, the sh script for the disk operations.
std::string helperScript(const HelperRequest& request);

// The line the helper prints when a change took effect, on its host's clock: the moments just
// before it started the tool and just after the tool finished (µs since the epoch). A fill's
// window starts when its disk was full.
inline constexpr std::string_view kHelperWindowKey = "kfaild-gray-window=";
std::string helperWindowLine(std::int64_t start_us, std::int64_t end_us);
struct HelperWindow {
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
};
std::optional<HelperWindow> helperWindow(std::string_view output);

// A filler stem or table name kfaild made, split (nullopt when it is not one of kfaild's).
struct PlacedName {
  std::string dir;  // fillers only
  std::string instance;
  std::string drill;
};
std::optional<PlacedName> parseTableName(const std::string& table);
std::optional<PlacedName> parseFillerStem(const std::string& path);

}  // namespace kfaild::fault
