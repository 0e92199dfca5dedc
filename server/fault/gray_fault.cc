#include "server/fault/gray_fault.h"

#include <arpa/inet.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "server/fault/command.h"

namespace kfaild::fault {
namespace {

constexpr std::size_t kMaxDrillId = 48;
// nft's own priority for filter chains is 0; ours run just before so an accept elsewhere does
// not matter (a drop is final in any chain).
constexpr int kChainPriority = -10;

bool isIpv4(const std::string& text) {
  in_addr a{};
  return ::inet_pton(AF_INET, text.c_str(), &a) == 1;
}

bool isIpv6(const std::string& text) {
  in6_addr a{};
  return ::inet_pton(AF_INET6, text.c_str(), &a) == 1;
}

std::string badAddress(const std::vector<std::string>& addresses) {
  for (const auto& a : addresses)
    if (!isIpv4(a) && !isIpv6(a)) return "'" + a + "' is not an IPv4 or IPv6 address";
  return {};
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

struct Split {
  std::vector<std::string> v4, v6;
};

Split byFamily(const std::vector<std::string>& addresses) {
  Split s;
  // By the colon, not inet_pton: "0.0.0.0/0" is a prefix, not an address.
  for (const auto& a : addresses) (a.find(':') == std::string::npos ? s.v4 : s.v6).push_back(a);
  return s;
}

std::string timeoutOf(std::chrono::seconds duration) {
  return std::to_string((duration + kExpiryMargin).count()) + "s";
}

// The elements with their timeout: "{ 10.0.0.1 timeout 35s, 10.0.0.2 timeout 35s }".
std::string expiring(const std::vector<std::string>& items, std::chrono::seconds duration) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i + " timeout " + timeoutOf(duration);
  return "{ " + out + " }";
}

// The head of both chains: what is never cut.
std::string exceptions(bool input, const NftExceptions& keep) {
  std::string out = input ? "iif \"lo\" accept; " : "oif \"lo\" accept; ";
  if (!keep.keep_tcp_ports.empty()) {
    std::vector<std::string> ports;
    for (auto p : keep.keep_tcp_ports) ports.push_back(std::to_string(p));
    out += std::string("tcp ") + (input ? "dport" : "sport") + " { " + join(ports, ", ") +
           " } accept; ";
  }
  return out;
}

std::string chainHead(const std::string& name) {
  return "chain " + name + " { type filter hook " + name + " priority " +
         std::to_string(kChainPriority) + "; policy accept; ";
}

// "table inet T { ... }" preceded by add+delete, so a table left from an earlier attempt of
// the same drill is replaced, not merged.
std::string freshTable(const std::string& table, const std::string& body) {
  return "add table inet " + table + "\ndelete table inet " + table + "\ntable inet " + table +
         " {\n" + body + "}\n";
}

std::string sets(const std::string& stem, const char* flags) {
  return "  set " + stem + "4 { type ipv4_addr; flags " + flags + "; }\n" + "  set " + stem +
         "6 { type ipv6_addr; flags " + flags + "; }\n";
}

std::string addElements(const std::string& table, const std::string& set,
                        const std::vector<std::string>& items, std::chrono::seconds duration) {
  if (items.empty()) return {};
  return "add element inet " + table + " " + set + " " + expiring(items, duration) + "\n";
}

std::string addKeep(const std::string& table, const std::string& set,
                    const std::vector<std::string>& items) {
  if (items.empty()) return {};
  return "add element inet " + table + " " + set + " { " + join(items, ", ") + " }\n";
}

}  // namespace

std::string toString(GrayFault fault) {
  switch (fault) {
    case GrayFault::isolate:
      return "isolate";
    case GrayFault::throttle:
      return "throttle";
    case GrayFault::disk_full:
      return "disk_full";
    case GrayFault::disk_slow:
      return "disk_slow";
  }
  return "isolate";
}

std::string toString(IsolateFrom from) {
  switch (from) {
    case IsolateFrom::quorum:
      return "quorum";
    case IsolateFrom::brokers:
      return "brokers";
    case IsolateFrom::clients:
      return "clients";
    case IsolateFrom::all:
      return "all";
  }
  return "all";
}

std::string toString(IsolateMode mode) { return mode == IsolateMode::drop ? "drop" : "reject"; }

std::optional<IsolateFrom> parseIsolateFrom(std::string_view text) {
  for (auto f : {IsolateFrom::quorum, IsolateFrom::brokers, IsolateFrom::clients, IsolateFrom::all})
    if (text == toString(f)) return f;
  return std::nullopt;
}

std::optional<IsolateMode> parseIsolateMode(std::string_view text) {
  if (text == "drop") return IsolateMode::drop;
  if (text == "reject") return IsolateMode::reject;
  return std::nullopt;
}

std::optional<std::string> nftTableName(std::string_view drill) {
  if (drill.empty() || drill.size() > kMaxDrillId) return std::nullopt;
  for (char c : drill) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_';
    if (!ok) return std::nullopt;
  }
  return "kfaild_d" + std::string(drill);
}

std::string invalidReason(const IsolateSpec& spec) {
  if (!nftTableName(spec.drill))
    return "drill id '" + spec.drill + "' is not 1 to 48 of [A-Za-z0-9_]";
  if (spec.duration.count() <= 0) return "duration_s must be positive";
  if (auto bad = badAddress(spec.peers.quorum); !bad.empty()) return "quorum: " + bad;
  if (auto bad = badAddress(spec.peers.brokers); !bad.empty()) return "brokers: " + bad;
  if (spec.from == IsolateFrom::quorum && spec.peers.quorum.empty())
    return "isolate from quorum: no controller address is known";
  if (spec.from == IsolateFrom::brokers && spec.peers.brokers.empty())
    return "isolate from brokers: the target has no other broker";
  return {};
}

std::string invalidReason(const ThrottleSpec& spec) {
  if (!nftTableName(spec.drill))
    return "drill id '" + spec.drill + "' is not 1 to 48 of [A-Za-z0-9_]";
  if (spec.duration.count() <= 0) return "duration_s must be positive";
  if (spec.bytes_per_second == 0) return "the rate must be positive";
  if (auto bad = badAddress(spec.toward); !bad.empty()) return "toward: " + bad;
  return {};
}

std::string invalidReason(const DiskFullSpec& spec) {
  if (!nftTableName(spec.drill))
    return "drill id '" + spec.drill + "' is not 1 to 48 of [A-Za-z0-9_]";
  if (spec.duration.count() <= 0) return "duration_s must be positive";
  if (spec.fill_dir.empty() || spec.fill_dir.front() != '/')
    return "no absolute directory on the log dir's filesystem to fill is configured";
  return {};
}

std::string nftIsolateScript(const IsolateSpec& spec, const NftExceptions& keep) {
  const auto table = *nftTableName(spec.drill);
  const bool everyone = spec.from == IsolateFrom::clients || spec.from == IsolateFrom::all;
  std::vector<std::string> cut;
  std::vector<std::string> spared;
  switch (spec.from) {
    case IsolateFrom::quorum:
      cut = spec.peers.quorum;
      break;
    case IsolateFrom::brokers:
      cut = spec.peers.brokers;
      break;
    case IsolateFrom::clients:
      cut = {"0.0.0.0/0", "::/0"};
      spared = spec.peers.quorum;
      spared.insert(spared.end(), spec.peers.brokers.begin(), spec.peers.brokers.end());
      break;
    case IsolateFrom::all:
      cut = {"0.0.0.0/0", "::/0"};
      break;
  }
  const auto cutv = byFamily(cut);
  const auto sparedv = byFamily(spared);

  // Reject answers TCP with a reset and the rest with ICMP admin-prohibited; a drop says nothing.
  auto verdicts = [&](const std::string& match) {
    if (spec.mode == IsolateMode::drop) return match + " drop; ";
    return match + " meta l4proto tcp reject with tcp reset; " + match +
           " reject with icmpx type admin-prohibited; ";
  };
  std::string body = sets("cut", everyone ? "interval,timeout" : "timeout");
  if (!spared.empty()) body += sets("spare", "interval");
  for (const bool input : {true, false}) {
    const std::string dir = input ? "saddr" : "daddr";
    std::string chain = chainHead(input ? "input" : "output") + exceptions(input, keep);
    // The reset or ICMP error that the input chain's reject sends leaves through the output
    // hook: rejecting that too would turn a reject into a drop.
    if (!input && spec.mode == IsolateMode::reject)
      chain += "tcp flags & rst == rst accept; meta l4proto { icmp, ipv6-icmp } accept; ";
    if (!spared.empty())
      chain += "ip " + dir + " @spare4 accept; ip6 " + dir + " @spare6 accept; ";
    chain += verdicts("ip " + dir + " @cut4") + verdicts("ip6 " + dir + " @cut6");
    body += "  " + chain + "}\n";
  }
  return freshTable(table, body) + addKeep(table, "spare4", sparedv.v4) +
         addKeep(table, "spare6", sparedv.v6) + addElements(table, "cut4", cutv.v4, spec.duration) +
         addElements(table, "cut6", cutv.v6, spec.duration);
}

std::string nftThrottleScript(const ThrottleSpec& spec, const NftExceptions& keep) {
  const auto table = *nftTableName(spec.drill);
  const std::vector<std::string> toward =
      spec.toward.empty() ? std::vector<std::string>{"0.0.0.0/0", "::/0"} : spec.toward;
  const auto v = byFamily(toward);
  // One second's worth of burst: short enough that the rate holds over a fetch, long enough that
  // a single maximum-size TCP segment always fits.
  const auto burst = std::max<std::uint64_t>(spec.bytes_per_second, 65536);
  const std::string limit = " limit rate over " + std::to_string(spec.bytes_per_second) +
                            " bytes/second burst " + std::to_string(burst) + " bytes drop; ";
  std::string body = sets("slow", "interval,timeout");
  for (const bool input : {true, false}) {
    const std::string dir = input ? "saddr" : "daddr";
    body += "  " + chainHead(input ? "input" : "output") + exceptions(input, keep) + "ip " + dir +
            " @slow4" + limit + "ip6 " + dir + " @slow6" + limit + "}\n";
  }
  return freshTable(table, body) + addElements(table, "slow4", v.v4, spec.duration) +
         addElements(table, "slow6", v.v6, spec.duration);
}

std::string nftHealScript(std::string_view table) {
  const std::string t(table);
  return "add table inet " + t + "\ndelete table inet " + t + "\n";
}

std::vector<std::string> kfaildTables(std::string_view output) {
  std::vector<std::string> out;
  std::istringstream in{std::string(output)};
  std::string word, family, name;
  while (in >> word) {
    if (word != "table" || !(in >> family >> name)) continue;
    if (name.rfind("kfaild_", 0) == 0 && nftTableName(name.substr(7)).has_value())
      out.push_back(family + " " + name);
  }
  return out;
}

std::string nftSweepScript(const std::vector<std::string>& tables) {
  std::string out;
  for (const auto& t : tables) out += "delete table " + t + "\n";
  return out;
}

std::string fillerPath(const std::string& fill_dir, std::string_view drill) {
  auto dir = fill_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/kfaild_fill_d" + std::string(drill);
}

std::string diskFillScript(const DiskFullSpec& spec) {
  const auto d = shellQuote(spec.fill_dir);
  const auto f = shellQuote(fillerPath(spec.fill_dir, spec.drill));
  const auto expiry = std::to_string((spec.duration + kExpiryMargin).count());
  // fallocate is instant even for a large disk; it needs some room for its own metadata, so it
  // leaves 1 MiB that dd then writes out block by block. Free blocks (%f) include the root
  // reserve, which a broker running as root could otherwise still use. On ext4 a fallocate that
  // runs out of room for its extent tree fails but keeps what it allocated: dd fills the rest.
  // The expiry removes the tail before the filler, so that the filler's name, gone last, means
  // the disk is whole again (a test that wrote as soon as it was gone once met the tail left).
  return "set -e\n"
         "d=" + d + "\nf=" + f + "\n"
         "s=$(stat -f -c %S \"$d\")\n"
         "n=$(( $(stat -f -c %f \"$d\") * s - 1048576 ))\n"
         "if [ \"$n\" -gt 0 ]; then fallocate -l \"$n\" \"$f\" || :; fi\n"
         "dd if=/dev/zero of=\"$f.tail\" bs=\"$s\" 2>/dev/null || :\n"
         "setsid sh -c 'sleep \"$1\"; rm -f \"$2.tail\" \"$2\"' kfaild-expiry " + expiry +
         " \"$f\" </dev/null >/dev/null 2>&1 &\n"
         "df -P -B1 \"$d\" | tail -n 1\n";
}

std::string diskFreeScript(const std::string& fill_dir, std::string_view drill) {
  // The tail first: the filler's own name, gone last, says the disk is whole again.
  const auto f = fillerPath(fill_dir, drill);
  return "rm -f " + shellQuote(f + ".tail") + " " + shellQuote(f) + "\n";
}

std::string diskSweepScript(const std::string& fill_dir) {
  return "for f in " + shellQuote(fill_dir) +
         "/kfaild_fill_d*; do if [ -e \"$f\" ]; then rm -f -- \"$f\" && echo \"$f\"; fi; done\n";
}

std::string diskSlowRefusal(const std::optional<std::string>& cgroup2_controllers,
                            const std::optional<std::string>& proc_misc) {
  const bool dm = proc_misc && proc_misc->find("device-mapper") != std::string::npos;
  bool io = false;
  if (cgroup2_controllers) {
    std::istringstream in(*cgroup2_controllers);
    std::string c;
    while (in >> c) io = io || c == "io";
  }
  std::string why;
  if (!io)
    why = cgroup2_controllers
              ? "cgroup v2 is mounted but its 'io' controller is not enabled (no io.max)"
              : "no cgroup v2 hierarchy at /sys/fs/cgroup (no io.max); cgroup v1 blkio throttles "
                "only direct and fsync'd I/O, not the page-cache writeback that carries Kafka's "
                "log appends";
  else
    why = "cgroup v2 io.max is available but kfaild does not drive it yet";
  why += dm ? "; device-mapper is present but kfaild does not build a dm-delay target yet"
            : "; no device-mapper in the kernel (/proc/misc lists none), so no dm-delay";
  return "disk_slow is refused on this host: " + why;
}

std::string diskSlowRefusalHere() {
  auto read = [](const char* path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  return diskSlowRefusal(read("/sys/fs/cgroup/cgroup.controllers"), read("/proc/misc"));
}

}  // namespace kfaild::fault
