#include "server/fault/gray_fault.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "server/fault/command.h"
#include "server/fault/pause_expiry.h"

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
  for (const auto& i : items)
    out += (out.empty() ? "" : ", ") + i + " timeout " + timeoutOf(duration);
  return "{ " + out + " }";
}

// ICMPv6 neighbour discovery: IPv6's ARP. Cut, the node's neighbours' entries go stale and
// nothing over IPv6 reaches it, the kept ssh port included.
constexpr std::string_view kNeighbourDiscovery =
    "icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, "
    "nd-neighbor-advert, nd-redirect } accept; ";

bool keepsPorts(const NftExceptions& keep) {
  return !keep.keep_tcp_ports.empty() || keep.keep_session_port;
}

// The head of both chains: what is never cut.
std::string exceptions(bool input, const NftExceptions& keep) {
  std::string out = input ? "iif \"lo\" accept; " : "oif \"lo\" accept; ";
  out += kNeighbourDiscovery;
  if (keepsPorts(keep))
    out += std::string("tcp ") + (input ? "dport" : "sport") + " @keep accept; ";
  return out;
}

std::string keepSet(const NftExceptions& keep) {
  return keepsPorts(keep) ? "  set keep { type inet_service; }\n" : "";
}

std::string keepElements(const std::string& table, const NftExceptions& keep) {
  std::string out;
  if (!keep.keep_tcp_ports.empty()) {
    std::vector<std::string> ports;
    for (auto p : keep.keep_tcp_ports) ports.push_back(std::to_string(p));
    out += "add element inet " + table + " keep { " + join(ports, ", ") + " }\n";
  }
  if (keep.keep_session_port)
    out += "add element inet " + table + " keep { " + std::string(kSessionPortToken) + " }\n";
  return out;
}

bool isLowerHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
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

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

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

std::string toString(IsolateMode mode) {
  return mode == IsolateMode::drop ? "drop" : "reject";
}

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

bool validInstance(std::string_view instance) {
  if (instance.empty()) return true;
  if (instance.size() > 16 || instance.front() != 'i') return false;
  return std::all_of(instance.begin() + 1, instance.end(), isLowerHex) && instance.size() > 1;
}

std::string grayInstanceId(std::string_view host, std::string_view state_path) {
  std::uint32_t hash = 2166136261u;
  const auto mix = [&](std::string_view text) {
    for (const char c : text) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 16777619u;
    }
  };
  mix(host);
  mix(std::string_view("\0", 1));
  mix(state_path);
  char text[16];
  std::snprintf(text, sizeof text, "i%08x", hash);
  return text;
}

std::string grayInstanceHere(const std::string& state_path) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(state_path, ec);
  return grayInstanceId(host, ec ? state_path : absolute.string());
}

std::uint64_t throttleBurst(std::uint64_t bytes_per_second) {
  return std::clamp(bytes_per_second, kMtuBytes, kLargestPacketBytes);
}

std::optional<std::string> nftTableName(std::string_view instance, std::string_view drill) {
  if (!validInstance(instance)) return std::nullopt;
  if (drill.empty() || drill.size() > kMaxDrillId) return std::nullopt;
  for (char c : drill) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return std::nullopt;
  }
  return "kfaild_" + (instance.empty() ? std::string() : std::string(instance) + "_") + "d" +
         std::string(drill);
}

std::string invalidReason(const IsolateSpec& spec) {
  if (!validInstance(spec.instance)) return "instance id '" + spec.instance + "' is not valid";
  if (!nftTableName(spec.instance, spec.drill))
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
  if (!validInstance(spec.instance)) return "instance id '" + spec.instance + "' is not valid";
  if (!nftTableName(spec.instance, spec.drill))
    return "drill id '" + spec.drill + "' is not 1 to 48 of [A-Za-z0-9_]";
  if (spec.duration.count() <= 0) return "duration_s must be positive";
  if (spec.bytes_per_second == 0) return "the rate must be positive";
  if (auto bad = badAddress(spec.toward); !bad.empty()) return "toward: " + bad;
  return {};
}

std::string invalidReason(const DiskFullSpec& spec) {
  if (!validInstance(spec.instance)) return "instance id '" + spec.instance + "' is not valid";
  if (!nftTableName(spec.instance, spec.drill))
    return "drill id '" + spec.drill + "' is not 1 to 48 of [A-Za-z0-9_]";
  if (spec.duration.count() <= 0) return "duration_s must be positive";
  if (spec.fill_dir.empty() || spec.fill_dir.front() != '/')
    return "no absolute directory on the log dir's filesystem to fill is configured";
  if (spec.fill_dir.find_first_not_of('/') == std::string::npos)
    return "fill_dir / is refused: filling the root filesystem hits every process on the host";
  for (const auto& dir : spec.log_dirs)
    if (dir.empty() || dir.front() != '/') return "log.dirs entry '" + dir + "' is not absolute";
  return {};
}

std::string nftIsolateScript(const IsolateSpec& spec, const NftExceptions& keep) {
  const auto table = *nftTableName(spec.instance, spec.drill);
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
  std::string body = keepSet(keep) + sets("cut", everyone ? "interval,timeout" : "timeout");
  if (!spared.empty()) body += sets("spare", "interval");
  for (const bool input : {true, false}) {
    const std::string dir = input ? "saddr" : "daddr";
    std::string chain = chainHead(input ? "input" : "output") + exceptions(input, keep);
    // The reset or ICMP error that the input chain's reject sends leaves through the output
    // hook: rejecting that too would turn a reject into a drop.
    if (!input && spec.mode == IsolateMode::reject)
      chain += "tcp flags & rst == rst accept; meta l4proto { icmp, ipv6-icmp } accept; ";
    if (!spared.empty()) chain += "ip " + dir + " @spare4 accept; ip6 " + dir + " @spare6 accept; ";
    chain += verdicts("ip " + dir + " @cut4") + verdicts("ip6 " + dir + " @cut6");
    body += "  " + chain + "}\n";
  }
  return freshTable(table, body) + keepElements(table, keep) +
         addKeep(table, "spare4", sparedv.v4) + addKeep(table, "spare6", sparedv.v6) +
         addElements(table, "cut4", cutv.v4, spec.duration) +
         addElements(table, "cut6", cutv.v6, spec.duration);
}

std::string nftThrottleScript(const ThrottleSpec& spec, const NftExceptions& keep) {
  const auto table = *nftTableName(spec.instance, spec.drill);
  const std::vector<std::string> toward =
      spec.toward.empty() ? std::vector<std::string>{"0.0.0.0/0", "::/0"} : spec.toward;
  const auto v = byFamily(toward);
  const auto burst = throttleBurst(spec.bytes_per_second);
  const std::string limit = " limit rate over " + std::to_string(spec.bytes_per_second) +
                            " bytes/second burst " + std::to_string(burst) + " bytes drop; ";
  std::string body = keepSet(keep) + sets("slow", "interval,timeout");
  for (const bool input : {true, false}) {
    const std::string dir = input ? "saddr" : "daddr";
    body += "  " + chainHead(input ? "input" : "output") + exceptions(input, keep) + "ip " + dir +
            " @slow4" + limit + "ip6 " + dir + " @slow6" + limit + "}\n";
  }
  return freshTable(table, body) + keepElements(table, keep) +
         addElements(table, "slow4", v.v4, spec.duration) +
         addElements(table, "slow6", v.v6, spec.duration);
}

std::string nftHealScript(std::string_view table) {
  const std::string t(table);
  return "add table inet " + t + "\ndelete table inet " + t + "\n";
}

std::vector<std::string> kfaildTables(std::string_view output, std::string_view instance) {
  std::vector<std::string> out;
  if (!validInstance(instance)) return out;
  const auto stem = *nftTableName(instance, "x");
  const auto prefix = stem.substr(0, stem.size() - 1);  // "kfaild_<instance>_d"
  std::istringstream in{std::string(output)};
  std::string word, family, name;
  while (in >> word) {
    if (word != "table" || !(in >> family >> name)) continue;
    if (name.rfind(prefix, 0) == 0 && nftTableName(instance, name.substr(prefix.size())) == name)
      out.push_back(family + " " + name);
  }
  return out;
}

std::string nftSweepScript(const std::vector<std::string>& tables) {
  std::string out;
  for (const auto& t : tables) out += "delete table " + t + "\n";
  return out;
}

std::string fillerStem(const std::string& fill_dir, std::string_view instance,
                       std::string_view drill) {
  auto dir = fill_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/kfaild_fill_" + (instance.empty() ? "" : std::string(instance) + "_") + "d" +
         std::string(drill);
}

namespace {

// "kfaild-expiry-<instance>-d<drill>": the stem of the fillers' systemd timer units.
std::string timerStem(std::string_view instance, std::string_view drill) {
  return "kfaild-expiry-" + (instance.empty() ? "" : std::string(instance) + "-") + "d" +
         std::string(drill);
}

std::string stopTimers(const std::string& pattern) {
  return "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then "
         "systemctl stop " +
         shellQuote(pattern) + " >/dev/null 2>&1 || :; fi\n";
}

}  // namespace

namespace {

// Step 1 of the fill (diskFillScript): the fill dir's checks. Leaves $r (the dir, resolved), $l
// (the log dir on its filesystem), $u (the broker's uid), $e (the expiry) and $t (the threshold).
std::string fillDirChecks(const DiskFullSpec& spec) {
  std::string log_dirs;
  for (const auto& dir : spec.log_dirs) log_dirs += " " + shellQuote(dir);
  const auto expiry = std::to_string((spec.duration + kExpiryMargin).count());
  return "set -e\n"
         "fail() { echo \"kfaild: $*\" >&2; exit 1; }\n"
         "d=" +
         shellQuote(spec.fill_dir) +
         "\n"
         "e=" +
         expiry +
         "\n"
         "t=" +
         std::to_string(kDiskFullThresholdBytes) +
         "\n"
         "r=$(cd \"$d\" && pwd -P) || fail \"cannot enter the fill dir $d\"\n"
         "[ \"$r\" != / ] || fail \"the fill dir $d is / : refusing to fill the root filesystem\"\n"
         "v=$(stat -c %d \"$r\"); o=$(stat -c %u \"$r\")\n"
         "[ \"$v\" != \"$(stat -c %d /)\" ] || fail \"the fill dir $d is on the root filesystem: "
         "filling it "
         "would fill the host's\"\n"
         // The log dir on the fill dir's filesystem, and the broker's user: that dir's owner.
         "l=; u=0\n" +
         (spec.log_dirs.empty()
              ? std::string("l=$r\n")
              : "for x in" + log_dirs +
                    "; do if [ \"$(stat -c %d \"$x\" 2>/dev/null)\" = \"$v\" ]; "
                    "then l=$x; u=$(stat -c %u \"$x\"); break; fi; done\n"
                    "[ -n \"$l\" ] || fail \"the fill dir $d is on none of the filesystems of the "
                    "broker's log.dirs (\"" +
                    shellQuote(join(spec.log_dirs, ", ")) + "\")\"\n") +
         "[ \"$o\" = 0 ] || [ \"$o\" = \"$u\" ] || fail \"the fill dir $d is owned by uid $o, "
         "neither root nor the broker's user (uid $u)\"\n";
}

}  // namespace

std::string diskFillCheckScript(const DiskFullSpec& spec) {
  return fillDirChecks(spec) + "echo \"kfaild: fill dir $r can fill $l (uid $u)\"\n";
}

std::string diskFillScript(const DiskFullSpec& spec) {
  const auto stem = fillerStem(spec.fill_dir, spec.instance, spec.drill);
  const auto name = stem.substr(stem.rfind('/') + 1);
  // The timer removes the filler at the expiry, or as soon as heal has removed it: a setsid
  // timer polls for its file, a systemd one is stopped by name. Its file is only its own
  // (mktemp's name), so run 1's timer never removes run 2's filler.
  // In nanoseconds and polled every 0.2 s: whole seconds (date +%s) freed the disk up to 1 s
  // before duration + kExpiryMargin when the timer started late in a second.
  const std::string setsid_timer =
      "end=$(( $(date +%s%N) + $1 * 1000000000 )); while [ -e \"$2\" ] && [ \"$(date +%s%N)\" -lt "
      "\"$end\" ]; "
      "do sleep 0.2; done; rm -f -- \"$2\"";
  return fillDirChecks(spec) + std::string(kOwnSessionFn) +
         // What the broker may use: %a, unless it runs as root and may use the root reserve too.
         "if [ \"$u\" = 0 ]; then k=%f; else k=%a; fi\n"
         "f=$(mktemp \"$r/" +
         name +
         ".XXXXXX\") || fail \"cannot create a file in $d\"\n"
         "exec 3<>\"$f\"\n"
         "[ \"$(stat -L -c %d:%i:%h:%s /proc/self/fd/3)\" = \"$(stat -c %d:%i:1:0 \"$f\")\" ] || "
         "fail \"$f changed under kfaild before it was filled (a link put in its place?)\"\n"
         "x=${f##*.}; w=" +
         shellQuote(timerStem(spec.instance, spec.drill)) +
         "-$x\n"
         "if [ -d /run/systemd/system ] && command -v systemd-run >/dev/null 2>&1 && "
         "systemd-run --quiet --collect --unit=\"$w\" --on-active=\"$e\" rm -f -- \"$f\" "
         ">/dev/null 2>&1 && systemctl is-active --quiet \"$w.timer\"; then\n"
         "  z=\"systemd-run $w.timer\"\n"
         "  cancel() { systemctl stop \"$w.timer\" >/dev/null 2>&1 || :; rm -f -- \"$f\"; }\n"
         "else\n"
         "  command -v setsid >/dev/null 2>&1 || { rm -f -- \"$f\"; fail \"neither systemd-run "
         "nor setsid is there to start the timer that frees the disk by itself\"; }\n"
         // Not holding the filler open (3>&-): a deleted filler's space is freed at once.
         "  setsid sh -c '" +
         setsid_timer +
         "' kfaild-expiry \"$e\" \"$f\" </dev/null "
         ">/dev/null 2>&1 3>&- &\n"
         "  z=\"setsid pid $!\"\n"
         "  own_session \"$!\" || { rm -f -- \"$f\"; fail \"the expiry timer did not start in "
         "a session of its own\"; }\n"
         "  cancel() { rm -f -- \"$f\"; }\n"
         "fi\n"
         "s=$(stat -f -c %S \"$r\")\n"
         "n=$(( $(stat -f -c \"$k\" \"$r\") * s - 1048576 ))\n"
         // ext4 may fail a large fallocate for lack of room for its extent tree but keep what it
         // allocated; dd writes the rest. Their failures are judged by the free space after.
         "if [ \"$n\" -gt 0 ]; then fallocate -l \"$n\" /proc/self/fd/3 2>/dev/null || :; fi\n"
         "dd if=/dev/zero of=/proc/self/fd/3 bs=\"$s\" count=\"$(stat -f -c \"$k\" \"$r\")\" "
         "oflag=append conv=notrunc 2>/dev/null || :\n"
         "exec 3>&-\n"
         "echo \"kfaild-filled-at=$(date +%s%6N)\"\n"
         // Judged by what a process without the root reserve may still write (%a): a root
         // filler that may use the reserve has filled it too, and one that may not (no
         // CAP_SYS_RESOURCE) leaves exactly the reserve, which a broker running alike cannot use
         // either. A broker that could still write there shows no full-disk event, and the
         // analysis then calls the run inconclusive ("the fault did not take effect").
         "a=$(( $(stat -f -c %a \"$l\") * $(stat -f -c %S \"$l\") ))\n"
         "if [ \"$a\" -ge \"$t\" ]; then cancel; fail \"after filling, $l still has $a bytes "
         "free, not below $t: the fill did not take effect\"; fi\n"
         "echo \"kfaild-filler=$f\"\n"
         "echo \"kfaild-timer=$z\"\n"
         "df -P -B1 \"$r\" | tail -n 1\n";
}

std::string diskFreeScript(const std::string& fill_dir, std::string_view instance,
                           std::string_view drill) {
  const auto stem = fillerStem(fill_dir, instance, drill);
  const auto dir = stem.substr(0, stem.rfind('/'));
  const auto name = stem.substr(stem.rfind('/') + 1);
  return "for f in " + shellQuote(dir) + "/" + name +
         ".*; do if [ -e \"$f\" ] || [ -L \"$f\" ]; then rm -f -- \"$f\"; fi; done\n" +
         stopTimers(timerStem(instance, drill) + "-*.timer");
}

std::string diskSweepScript(const std::string& fill_dir, std::string_view instance) {
  const auto stem = fillerStem(fill_dir, instance, "");
  const auto dir = stem.substr(0, stem.rfind('/'));
  const auto name = stem.substr(stem.rfind('/') + 1);
  return "for f in " + shellQuote(dir) + "/" + name +
         "*; do if [ -e \"$f\" ] || [ -L \"$f\" ]; then rm -f -- \"$f\" && echo \"$f\"; fi; "
         "done\n" +
         stopTimers(timerStem(instance, "") + "*.timer");
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
