#pragma once

// Gray faults (issue 26): a node cut off from some of its peers (`isolate`), its bandwidth
// limited (`throttle`), its log filesystem full (`disk_full`), its disk slowed (`disk_slow`).
//
// This header has the fault specs and the pure builders of the exact nft scripts and shell
// scripts that inject, heal and sweep them. Only kfaild-gray (gray_helper.h) runs them, on the
// node, built there from the words kfaild sends; kfaild itself builds them only to show them.
//
// Names. Every name kfaild leaves on a node carries the kfaild instance's id and the drill's:
// the nft table `inet kfaild_<instance>_d<drill>`, the fillers
// `kfaild_fill_<instance>_d<drill>.XXXXXX` (mktemp: one per injection, so each run of a drill with
// `repeats` has its own) and their timers `kfaild-expiry-<instance>-d<drill>-XXXXXX`. A sweep
// removes only its own instance's, so a second kfaild on the same hosts (staging beside production,
// a blue/green upgrade) never removes the first one's live fault. The instance id is `i` and 8 hex
// digits of a hash of kfaild's host name and its state database's absolute path (grayInstanceId):
// stable across restarts of the same kfaild, different for another one. Empty (tests): the names
// have no instance part (`kfaild_d<drill>`).
//
// Self-expiry. Every network fault lives in such an nftables table. Its rules match the
// addresses in named sets with `flags timeout`, and the elements are added with
// `timeout <duration + kExpiryMargin>`: when they expire the rules match nothing, so the fault
// ends by itself even if kfaild never comes back. The empty table stays until heal or the next
// start's sweep, matching nothing. A full disk is freed by a timer started before the disk is
// filled and checked to be running: `systemd-run --on-active` where systemd runs (outside
// kfaild's cgroup and ssh's session, so neither a stop of kfaild nor logind's
// KillUserProcesses ends it), else a detached `setsid` shell. So a fault outlives kfaild by at
// most duration + kExpiryMargin (docs/SECURITY.md), except a disk filler whose host reboots
// before its timer fires (the file stays until kfaild's sweep or a person deletes it).
//
// Pure functions, thread-safe.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kfaild::fault {

// How long past duration_s an expiring fault may still hold, if nobody heals it.
inline constexpr std::chrono::seconds kExpiryMargin{5};

// A disk_full injection has taken effect when less than this is free (to the broker's user) on
// the broker's log filesystem after filling: less than one record batch of Kafka's default
// message.max.bytes (1 MiB) fits.
inline constexpr std::uint64_t kDiskFullThresholdBytes = 1'048'576;

// A throttle's token bucket holds one second's worth at its rate, but never less than one
// packet of a full Ethernet MTU (a packet larger than the bucket never passes) nor more than the
// largest packet the hook sees (a 64 KiB GSO segment). More would let seconds of traffic through
// at full speed before the limit bites (65536 at 8,000 B/s was 8 s).
inline constexpr std::uint64_t kMtuBytes = 1'500;
inline constexpr std::uint64_t kLargestPacketBytes = 65'536;
std::uint64_t throttleBurst(std::uint64_t bytes_per_second);

enum class IsolateFrom {
  quorum,   // the KRaft controllers
  brokers,  // the other brokers (replication)
  clients,  // everyone except the controllers and brokers (kfaild's probe, poller, admin)
  all,      // everyone
};

enum class IsolateMode {
  drop,    // packets vanish: peers wait for their own timeouts
  reject,  // TCP gets a reset, everything else an ICMP admin-prohibited, at once
};

enum class GrayFault { isolate, throttle, disk_full, disk_slow };

std::string toString(GrayFault fault);
std::string toString(IsolateFrom from);
std::string toString(IsolateMode mode);
std::optional<IsolateFrom> parseIsolateFrom(std::string_view text);
std::optional<IsolateMode> parseIsolateMode(std::string_view text);

// Addresses (IPv4 or IPv6 literals, no names) as the target node sees its peers. The engine
// (server/drill/peer_addresses.h) takes the brokers from the Metadata answer and the controllers
// from DescribeQuorum v2's voter endpoints (the inventory's controllers when those are not
// known), every address each host resolves to, with each node's inventory `address` added; none
// is the target's own. A node that is both a broker and a voter is in both lists.
struct Peers {
  std::vector<std::string> quorum;   // the controllers, not the target itself
  std::vector<std::string> brokers;  // the other brokers, not the target itself
};

struct IsolateSpec {
  std::string drill;     // the drill's id: [A-Za-z0-9_] only, names the table
  std::string instance;  // the kfaild instance's id (see Names); set by the GrayRunner
  IsolateFrom from = IsolateFrom::all;
  IsolateMode mode = IsolateMode::drop;
  std::chrono::seconds duration{0};
  Peers peers;
};

struct ThrottleSpec {
  std::string drill;
  std::string instance;
  std::uint64_t bytes_per_second = 0;  // per direction, token bucket (nft `limit rate over`)
  std::chrono::seconds duration{0};
  std::vector<std::string> toward;  // peers whose traffic is limited; empty: everyone
};

struct DiskFullSpec {
  std::string drill;
  std::string instance;
  std::chrono::seconds duration{0};
  std::string fill_dir;  // a directory on the log dir's filesystem, outside log.dirs itself, not /
  // The broker's log.dirs as it reports them (DescribeConfigs); the fill must bring one of them
  // on fill_dir's filesystem below kDiskFullThresholdBytes free. Empty (unknown): only fill_dir's
  // own filesystem is checked, and only a root-owned fill_dir is accepted.
  std::vector<std::string> log_dirs;
};

struct DiskSlowSpec {
  std::string drill;
  std::chrono::seconds duration{0};
  std::uint64_t bytes_per_second = 0;
};

// What the nft scripts never cut: the loopback interface, ICMPv6 neighbour discovery (without
// it IPv6 neighbours become unreachable, kfaild's own ssh included), and TCP to/from these local
// ports (an SSH injector keeps the port ssh connects to, or healing would cut itself off), held
// in the table's set `keep`.
struct NftExceptions {
  std::vector<std::uint16_t> keep_tcp_ports;
  // Also keep the port the injecting ssh session reached on the node (the last field of the
  // remote $SSH_CONNECTION, which differs from ssh's port behind a NAT): the script then ends
  // with an element line holding kSessionPortToken, which sudoNftCommand replaces on the node.
  bool keep_session_port = false;
};
inline constexpr std::string_view kSessionPortToken = "@KFAILD_SESSION_PORT@";

// `items` with `sep` between them.
std::string join(const std::vector<std::string>& items, const std::string& sep);

// Whether `instance` can name things on a node: empty, or `i` and 1 to 15 of [0-9a-z].
bool validInstance(std::string_view instance);

// "i" and 8 hex digits of a hash (FNV-1a) of `host` and `state_path`: a kfaild's instance id.
// Pure. grayInstanceHere: of this host's name and `state_path` (storage.path) made absolute.
std::string grayInstanceId(std::string_view host, std::string_view state_path);
std::string grayInstanceHere(const std::string& state_path);

// `inet kfaild_<instance>_d<drill>`'s name (`kfaild_d<drill>` for an empty instance), or nullopt
// when `drill` has characters other than [A-Za-z0-9_] or is empty or longer than 48, or the
// instance is not valid (so nothing from a request reaches nft's parser).
std::optional<std::string> nftTableName(std::string_view instance, std::string_view drill);

// Why a spec cannot be injected as given (empty when it can): a bad drill id, a zero duration,
// an address that is not an IP literal, `from: quorum` with no controller address, `from:
// brokers` with no other broker, a zero rate, an empty or relative fill dir, or `/`.
std::string invalidReason(const IsolateSpec& spec);
std::string invalidReason(const ThrottleSpec& spec);
std::string invalidReason(const DiskFullSpec& spec);

// One nft batch (a single `nft '<script>'` call is one transaction): re-creates the drill's
// table with its chains and sets, then adds the expiring elements. Precondition: invalidReason
// is empty.
std::string nftIsolateScript(const IsolateSpec& spec, const NftExceptions& keep);
std::string nftThrottleScript(const ThrottleSpec& spec, const NftExceptions& keep);

// Deletes the drill's table; succeeds also when it is already gone.
std::string nftHealScript(std::string_view table);

// `instance`'s tables in `nft list tables` output, as "inet kfaild_i1a2b3c4d_d12" (family and
// name); another instance's are not listed.
std::vector<std::string> kfaildTables(std::string_view nft_list_tables_output,
                                      std::string_view instance);

// `delete table inet kfaild_d12; ...` for the given tables; empty when there are none.
std::string nftSweepScript(const std::vector<std::string>& tables);

// POSIX sh scripts for the disk filler (GNU coreutils' stat, util-linux' fallocate). Fill, each
// step failing the script with its reason on stderr:
//   1. refuse fill_dir when it resolves to `/`, when it is on none of log.dirs' filesystems, or
//      when its owner is neither root nor the broker's user (the owner of that log dir);
//   2. create the filler with mktemp (O_EXCL, a name nobody can plant a symlink under) and
//      open it once, checking the open file is that new empty file (not a symlink swapped in);
//   3. start the expiry timer and check it runs (systemctl is-active / kill -0);
//   4. fill through the open file: fallocate what the broker's user may use (%a; %f for a
//      broker running as root) but 1 MiB, then dd that many blocks more;
//   5. check less than kDiskFullThresholdBytes is free to the broker on the log dir's
//      filesystem; if not, remove the filler and the timer and fail.
// It prints "kfaild-filler=<path>", "kfaild-timer=<how>" and `df` of the dir.
// Free: remove the drill's fillers and stop their systemd timers (a setsid timer ends when its
// filler is gone). Sweep: the same for every filler of the instance, printing each path removed.
std::string diskFillScript(const DiskFullSpec& spec);
// Step 1 of the fill alone, changing nothing: the preflight's check of a fill dir.
std::string diskFillCheckScript(const DiskFullSpec& spec);
std::string diskFreeScript(const std::string& fill_dir, std::string_view instance,
                           std::string_view drill);
std::string diskSweepScript(const std::string& fill_dir, std::string_view instance);
// "<fill_dir>/kfaild_fill_<instance>_d<drill>": the fillers' names, before mktemp's suffix.
std::string fillerStem(const std::string& fill_dir, std::string_view instance,
                       std::string_view drill);

// Why this host cannot slow a disk, from what it shows: the contents of
// /sys/fs/cgroup/cgroup.controllers (nullopt when missing: no cgroup v2 at the root) and of
// /proc/misc (device-mapper's minor is listed when dm is available). Empty when cgroup v2's `io`
// controller is there. disk_slow is refused with this text.
std::string diskSlowRefusal(const std::optional<std::string>& cgroup2_controllers,
                            const std::optional<std::string>& proc_misc);

// The same, read from this host's files.
std::string diskSlowRefusalHere();

}  // namespace kfaild::fault
