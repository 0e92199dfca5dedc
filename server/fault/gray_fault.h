#pragma once

// Gray faults (issue 26): a node cut off from some of its peers (`isolate`), its bandwidth
// limited (`throttle`), its log filesystem full (`disk_full`), its disk slowed (`disk_slow`).
//
// This header has what every injector shares: the fault specs, and the pure builders of the
// exact nft scripts and shell scripts that inject, heal and sweep them. An injector only decides
// how a script reaches the node (its own netns, ssh + sudo, nsenter into a container's netns).
//
// Self-expiry. Every network fault lives in an nftables table that kfaild owns and names after
// the drill (`inet kfaild_d<drill>`). Its rules match the addresses in named sets with
// `flags timeout`, and the elements are added with `timeout <duration + kExpiryMargin>`: when they
// expire the rules match nothing, so the fault ends by itself even if kfaild never comes back.
// The empty table stays until heal or the next start's sweep, matching nothing. A full disk is
// freed by a detached `sleep; rm` started with the filler. So a fault outlives kfaild by at most
// duration + kExpiryMargin (docs/SECURITY.md), except a disk filler whose host reboots before
// its timer fires (the file stays until kfaild's sweep or a person deletes it).
//
// Pure functions, thread-safe.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfaild::fault {

// How long past duration_s an expiring fault may still hold, if nobody heals it.
inline constexpr std::chrono::seconds kExpiryMargin{5};

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
// resolves them from the cluster's metadata (brokers) and DescribeCluster (controllers).
struct Peers {
  std::vector<std::string> quorum;
  std::vector<std::string> brokers;  // the other brokers, not the target itself
};

struct IsolateSpec {
  std::string drill;  // the drill's id: [A-Za-z0-9_] only, names the table
  IsolateFrom from = IsolateFrom::all;
  IsolateMode mode = IsolateMode::drop;
  std::chrono::seconds duration{0};
  Peers peers;
};

struct ThrottleSpec {
  std::string drill;
  std::uint64_t bytes_per_second = 0;  // per direction, token bucket (nft `limit rate over`)
  std::chrono::seconds duration{0};
  std::vector<std::string> toward;  // peers whose traffic is limited; empty: everyone
};

struct DiskFullSpec {
  std::string drill;
  std::chrono::seconds duration{0};
  std::string fill_dir;  // a directory on the log dir's filesystem, outside log.dirs itself
};

struct DiskSlowSpec {
  std::string drill;
  std::chrono::seconds duration{0};
  std::uint64_t bytes_per_second = 0;
};

// What the nft scripts never cut: the loopback interface, and TCP to/from these local ports
// (an SSH injector keeps its own port 22, or healing would cut itself off).
struct NftExceptions {
  std::vector<std::uint16_t> keep_tcp_ports;
};

// `inet kfaild_d<drill>`'s name, or nullopt when `drill` has characters other than
// [A-Za-z0-9_] or is empty or longer than 48 (so nothing from a request reaches nft's parser).
std::optional<std::string> nftTableName(std::string_view drill);

// Why a spec cannot be injected as given (empty when it can): a bad drill id, a zero duration,
// an address that is not an IP literal, `from: quorum` with no controller address, `from:
// brokers` with no other broker, a zero rate, an empty fill dir.
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

// The kfaild_* tables in `nft list tables` output, as "inet kfaild_d12" (family and name).
std::vector<std::string> kfaildTables(std::string_view nft_list_tables_output);

// `delete table inet kfaild_d12; ...` for the given tables; empty when there are none.
std::string nftSweepScript(const std::vector<std::string>& tables);

// POSIX sh scripts for the disk filler. Fill: fallocate the free space but 1 MiB, dd the rest,
// start the detached expiry timer, print `df` of the dir. Free: remove the drill's filler.
// Sweep: remove every kfaild filler in the dir, printing each path removed on its own line.
std::string diskFillScript(const DiskFullSpec& spec);
std::string diskFreeScript(const std::string& fill_dir, std::string_view drill);
std::string diskSweepScript(const std::string& fill_dir);
std::string fillerPath(const std::string& fill_dir, std::string_view drill);

// Why this host cannot slow a disk, from what it shows: the contents of
// /sys/fs/cgroup/cgroup.controllers (nullopt when missing: no cgroup v2 at the root) and of
// /proc/misc (device-mapper's minor is listed when dm is available). Empty when cgroup v2's `io`
// controller is there. disk_slow is refused with this text.
std::string diskSlowRefusal(const std::optional<std::string>& cgroup2_controllers,
                            const std::optional<std::string>& proc_misc);

// The same, read from this host's files.
std::string diskSlowRefusalHere();

}  // namespace kfaild::fault
