#include "server/fault/gray_helper.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "server/fault/errc.h"

namespace kfaild::fault {
namespace {

constexpr std::pair<HelperOp, std::string_view> kOps[] = {
    {HelperOp::isolate, "isolate"},
    {HelperOp::throttle, "throttle"},
    {HelperOp::heal, "heal"},
    {HelperOp::sweep, "sweep"},
    {HelperOp::netns_check, "netns-check"},
    {HelperOp::fill, "fill"},
    {HelperOp::fill_check, "fill-check"},
    {HelperOp::free, "free"},
    {HelperOp::fill_sweep, "fill-sweep"},
};

Error refused(const std::string& why) {
  return faultError(errc::invalid_target, why);
}

std::optional<std::int64_t> number(std::string_view text) {
  std::int64_t value = 0;
  if (text.empty() || text.size() > 18) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// An absolute path a root process may act on: no `..`, no empty or `.` components, no control
// characters; `/` itself is refused by the specs' own checks.
bool plainAbsolute(const std::string& path) {
  if (path.empty() || path.front() != '/' || path.size() > 4096) return false;
  if (std::any_of(path.begin(), path.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
    return false;
  std::size_t at = 1;
  while (at <= path.size()) {
    const auto next = std::min(path.find('/', at), path.size());
    const auto part = std::string_view(path).substr(at, next - at);
    if ((part.empty() && next != path.size()) || part == "." || part == "..") return false;
    at = next + 1;
  }
  return true;
}

bool netnsName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

// The options after the operation: each "--name value" (or a bare flag) once, or repeated where
// the name is a list.
struct Options {
  std::multimap<std::string, std::string> values;
  bool check = false;

  std::optional<std::string> one(const std::string& name) const {
    const auto [first, last] = values.equal_range(name);
    if (first == last || std::next(first) != last) return std::nullopt;
    return first->second;
  }
  std::vector<std::string> all(const std::string& name) const {
    std::vector<std::string> out;
    for (auto [it, end] = values.equal_range(name); it != end; ++it) out.push_back(it->second);
    return out;
  }
};

constexpr std::string_view kListOptions[] = {"--quorum", "--broker", "--toward", "--keep-port",
                                             "--log-dir"};
constexpr std::string_view kOneOptions[] = {"--instance", "--drill",    "--duration",
                                            "--from",     "--mode",     "--rate",
                                            "--table",    "--fill-dir", "--filler"};

Result<Options> readOptions(const std::vector<std::string>& words, std::size_t from) {
  Options options;
  for (auto i = from; i < words.size(); ++i) {
    const auto& name = words[i];
    if (name == "--check") {
      options.check = true;
      continue;
    }
    const bool list =
        std::find(std::begin(kListOptions), std::end(kListOptions), name) != std::end(kListOptions);
    const bool single =
        std::find(std::begin(kOneOptions), std::end(kOneOptions), name) != std::end(kOneOptions);
    if (!list && !single) return refused("unknown word '" + name + "'");
    if (i + 1 == words.size()) return refused(name + " needs a value");
    if (single && options.values.count(name)) return refused(name + " given twice");
    options.values.emplace(name, words[++i]);
  }
  return options;
}

Result<std::string> required(const Options& options, const std::string& name) {
  auto value = options.one(name);
  if (!value) return refused("missing " + name);
  return *value;
}

Result<std::chrono::seconds> duration(const Options& options) {
  auto text = required(options, "--duration");
  if (!text.ok()) return text.error();
  const auto value = number(*text);
  if (!value || *value < 1 || *value > kHelperMaxDuration.count())
    return refused("--duration must be 1 to " + std::to_string(kHelperMaxDuration.count()) +
                   " seconds");
  return std::chrono::seconds(*value);
}

Result<NftExceptions> keptPorts(const Options& options) {
  NftExceptions keep;
  for (const auto& text : options.all("--keep-port")) {
    const auto port = number(text);
    if (!port || *port < 1 || *port > 65535)
      return refused("--keep-port '" + text + "' is not a TCP port");
    keep.keep_tcp_ports.push_back(static_cast<std::uint16_t>(*port));
  }
  return keep;
}

// --instance, --drill, --duration: what every fault names itself by.
Status ids(const Options& options, std::string& instance, std::string& drill,
           std::chrono::seconds& length) {
  auto i = required(options, "--instance");
  auto d = required(options, "--drill");
  auto s = duration(options);
  if (!i.ok()) return i.error();
  if (!d.ok()) return d.error();
  if (!s.ok()) return s.error();
  instance = *i;
  drill = *d;
  length = *s;
  return okStatus();
}

Status isolateFrom(const Options& options, HelperRequest& r) {
  auto& spec = r.isolate;
  if (auto s = ids(options, spec.instance, spec.drill, spec.duration); !s.ok()) return s;
  auto from = required(options, "--from");
  auto mode = required(options, "--mode");
  if (!from.ok()) return from.error();
  if (!mode.ok()) return mode.error();
  const auto f = parseIsolateFrom(*from);
  const auto m = parseIsolateMode(*mode);
  if (!f) return refused("--from '" + *from + "' is not quorum, brokers, clients or all");
  if (!m) return refused("--mode '" + *mode + "' is not drop or reject");
  spec.from = *f;
  spec.mode = *m;
  spec.peers.quorum = options.all("--quorum");
  spec.peers.brokers = options.all("--broker");
  if (auto why = invalidReason(spec); !why.empty()) return refused(why);
  return okStatus();
}

Status throttleFrom(const Options& options, HelperRequest& r) {
  auto& spec = r.throttle;
  if (auto s = ids(options, spec.instance, spec.drill, spec.duration); !s.ok()) return s;
  auto rate = required(options, "--rate");
  if (!rate.ok()) return rate.error();
  const auto bytes = number(*rate);
  if (!bytes || *bytes < 1)
    return refused("--rate '" + *rate + "' is not a positive number of bytes per second");
  spec.bytes_per_second = static_cast<std::uint64_t>(*bytes);
  spec.toward = options.all("--toward");
  if (auto why = invalidReason(spec); !why.empty()) return refused(why);
  return okStatus();
}

Status diskFrom(const Options& options, HelperRequest& r) {
  auto& spec = r.disk;
  if (auto s = ids(options, spec.instance, spec.drill, spec.duration); !s.ok()) return s;
  auto dir = required(options, "--fill-dir");
  if (!dir.ok()) return dir.error();
  spec.fill_dir = *dir;
  spec.log_dirs = options.all("--log-dir");
  if (!plainAbsolute(spec.fill_dir))
    return refused("--fill-dir '" + spec.fill_dir + "' is not a plain absolute path");
  for (const auto& d : spec.log_dirs)
    if (!plainAbsolute(d)) return refused("--log-dir '" + d + "' is not a plain absolute path");
  if (auto why = invalidReason(spec); !why.empty()) return refused(why);
  return okStatus();
}

Status instanceFrom(const Options& options, HelperRequest& r) {
  auto instance = required(options, "--instance");
  if (!instance.ok()) return instance.error();
  if (!validInstance(*instance)) return refused("--instance '" + *instance + "' is not valid");
  r.instance = *instance;
  if (r.op == HelperOp::fill_sweep) {
    auto dir = required(options, "--fill-dir");
    if (!dir.ok()) return dir.error();
    if (!plainAbsolute(*dir) || dir->find_first_not_of('/') == std::string::npos)
      return refused("--fill-dir '" + *dir + "' is not a plain absolute path other than /");
    r.fill_dir = *dir;
  }
  return okStatus();
}

Status bodyFrom(const Options& options, HelperRequest& r) {
  switch (r.op) {
    case HelperOp::isolate:
      return isolateFrom(options, r);
    case HelperOp::throttle:
      return throttleFrom(options, r);
    case HelperOp::fill:
    case HelperOp::fill_check:
      return diskFrom(options, r);
    case HelperOp::sweep:
    case HelperOp::fill_sweep:
      return instanceFrom(options, r);
    case HelperOp::netns_check:
      return okStatus();
    case HelperOp::heal: {
      auto table = required(options, "--table");
      if (!table.ok()) return table.error();
      if (!parseTableName(*table)) return refused("--table '" + *table + "' is not a kfaild table");
      r.table = *table;
      return okStatus();
    }
    case HelperOp::free: {
      auto filler = required(options, "--filler");
      if (!filler.ok()) return filler.error();
      if (!plainAbsolute(*filler) || !parseFillerStem(*filler))
        return refused("--filler '" + *filler + "' is not a kfaild disk filler");
      r.filler = *filler;
      return okStatus();
    }
  }
  return refused("unknown operation");
}

// The options each operation may carry: anything else is refused, so no word is silently ignored.
std::vector<std::string_view> allowed(HelperOp op) {
  switch (op) {
    case HelperOp::isolate:
      return {"--instance", "--drill",  "--duration", "--from",
              "--mode",     "--quorum", "--broker",   "--keep-port"};
    case HelperOp::throttle:
      return {"--instance", "--drill", "--duration", "--rate", "--toward", "--keep-port"};
    case HelperOp::fill:
    case HelperOp::fill_check:
      return {"--instance", "--drill", "--duration", "--fill-dir", "--log-dir"};
    case HelperOp::sweep:
      return {"--instance"};
    case HelperOp::netns_check:
      return {};
    case HelperOp::fill_sweep:
      return {"--instance", "--fill-dir"};
    case HelperOp::heal:
      return {"--table"};
    case HelperOp::free:
      return {"--filler"};
  }
  return {};
}

void add(std::vector<std::string>& words, const std::string& name, const std::string& value) {
  words.push_back(name);
  words.push_back(value);
}

void addAll(std::vector<std::string>& words, const std::string& name,
            const std::vector<std::string>& values) {
  for (const auto& v : values) add(words, name, v);
}

void addIds(std::vector<std::string>& words, const std::string& instance, const std::string& drill,
            std::chrono::seconds length) {
  add(words, "--instance", instance);
  add(words, "--drill", drill);
  add(words, "--duration", std::to_string(length.count()));
}

void addKeep(std::vector<std::string>& words, const NftExceptions& keep) {
  for (auto port : keep.keep_tcp_ports) add(words, "--keep-port", std::to_string(port));
}

// "<instance>_d<drill>" or "d<drill>", as a name ends after its "kfaild_" or "kfaild_fill_".
std::optional<PlacedName> instanceAndDrill(std::string_view rest) {
  PlacedName name;
  if (const auto sep = rest.find("_d"); sep != std::string_view::npos && !rest.starts_with("d")) {
    name.instance = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 1);
  }
  if (!rest.starts_with("d")) return std::nullopt;
  name.drill = std::string(rest.substr(1));
  if (!nftTableName(name.instance, name.drill)) return std::nullopt;
  return name;
}

}  // namespace

std::string toString(HelperOp op) {
  for (const auto& [o, name] : kOps)
    if (o == op) return std::string(name);
  return "heal";
}

std::optional<PlacedName> parseTableName(const std::string& table) {
  constexpr std::string_view kPrefix = "kfaild_";
  if (!table.starts_with(kPrefix)) return std::nullopt;
  auto parts = instanceAndDrill(std::string_view(table).substr(kPrefix.size()));
  if (!parts || nftTableName(parts->instance, parts->drill) != table) return std::nullopt;
  return parts;
}

std::optional<PlacedName> parseFillerStem(const std::string& path) {
  const auto slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash == std::string::npos) return std::nullopt;
  const auto name = path.substr(slash + 1);
  constexpr std::string_view kPrefix = "kfaild_fill_";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  auto parts = instanceAndDrill(std::string_view(name).substr(kPrefix.size()));
  if (!parts) return std::nullopt;
  parts->dir = slash == 0 ? std::string("/") : path.substr(0, slash);
  if (fillerStem(parts->dir, parts->instance, parts->drill) != path) return std::nullopt;
  return parts;
}

std::vector<std::string> helperWords(const HelperRequest& r) {
  std::vector<std::string> words;
  if (!r.netns.empty()) add(words, "--netns", r.netns);
  if (r.pid > 0) add(words, "--pid", std::to_string(r.pid));
  if (r.expect_pid > 0) add(words, "--expect-pid", std::to_string(r.expect_pid));
  words.push_back(toString(r.op));
  switch (r.op) {
    case HelperOp::isolate:
      addIds(words, r.isolate.instance, r.isolate.drill, r.isolate.duration);
      add(words, "--from", toString(r.isolate.from));
      add(words, "--mode", toString(r.isolate.mode));
      addAll(words, "--quorum", r.isolate.peers.quorum);
      addAll(words, "--broker", r.isolate.peers.brokers);
      addKeep(words, r.keep);
      break;
    case HelperOp::throttle:
      addIds(words, r.throttle.instance, r.throttle.drill, r.throttle.duration);
      add(words, "--rate", std::to_string(r.throttle.bytes_per_second));
      addAll(words, "--toward", r.throttle.toward);
      addKeep(words, r.keep);
      break;
    case HelperOp::fill:
    case HelperOp::fill_check:
      addIds(words, r.disk.instance, r.disk.drill, r.disk.duration);
      add(words, "--fill-dir", r.disk.fill_dir);
      addAll(words, "--log-dir", r.disk.log_dirs);
      break;
    case HelperOp::heal:
      add(words, "--table", r.table);
      break;
    case HelperOp::netns_check:
      break;
    case HelperOp::sweep:
      add(words, "--instance", r.instance);
      break;
    case HelperOp::fill_sweep:
      add(words, "--instance", r.instance);
      add(words, "--fill-dir", r.fill_dir);
      break;
    case HelperOp::free:
      add(words, "--filler", r.filler);
      break;
  }
  if (r.check) words.push_back("--check");
  return words;
}

Result<HelperRequest> parseHelperWords(const std::vector<std::string>& words) {
  HelperRequest r;
  std::size_t at = 0;
  // The place first: at most one of --netns and --pid.
  while (at + 1 < words.size() &&
         (words[at] == "--netns" || words[at] == "--pid" || words[at] == "--expect-pid")) {
    if (words[at] == "--expect-pid") {
      const auto pid = number(words[at + 1]);
      if (r.expect_pid > 0) return refused("--expect-pid given twice");
      if (!pid || *pid < 2)
        return refused("--expect-pid '" + words[at + 1] + "' is not a process id");
      r.expect_pid = *pid;
      at += 2;
      continue;
    }
    if (!r.netns.empty() || r.pid > 0) return refused("--netns and --pid: only one place");
    if (words[at] == "--netns") {
      if (!netnsName(words[at + 1]))
        return refused("--netns '" + words[at + 1] + "' is not a namespace name");
      r.netns = words[at + 1];
    } else {
      const auto pid = number(words[at + 1]);
      if (!pid || *pid < 2) return refused("--pid '" + words[at + 1] + "' is not a process id");
      r.pid = *pid;
    }
    at += 2;
  }
  if (at == words.size()) return refused("no operation given");
  const auto op = std::find_if(std::begin(kOps), std::end(kOps),
                               [&](const auto& o) { return o.second == words[at]; });
  if (op == std::end(kOps)) return refused("unknown operation '" + words[at] + "'");
  r.op = op->first;
  if (!r.network() && (!r.netns.empty() || r.pid > 0))
    return refused(words[at] + " acts on a filesystem, not in a network namespace");
  if (r.expect_pid > 0 && r.op != HelperOp::isolate && r.op != HelperOp::throttle &&
      r.op != HelperOp::netns_check)
    return refused("--expect-pid goes only with isolate, throttle and netns-check");
  if (r.op == HelperOp::netns_check && r.expect_pid == 0)
    return refused("netns-check needs --expect-pid");
  auto options = readOptions(words, at + 1);
  if (!options.ok()) return options.error();
  const auto may = allowed(r.op);
  for (const auto& [name, value] : options->values)
    if (std::find(may.begin(), may.end(), name) == may.end())
      return refused(name + " does not go with " + words[at]);
  if (options->check && r.op != HelperOp::isolate && r.op != HelperOp::throttle)
    return refused("--check goes only with isolate and throttle");
  r.check = options->check;
  if (auto s = bodyFrom(*options, r); !s.ok()) return s.error();
  if (r.op == HelperOp::isolate || r.op == HelperOp::throttle) {
    auto keep = keptPorts(*options);
    if (!keep.ok()) return keep.error();
    r.keep = *keep;
  }
  return r;
}

std::string helperScript(const HelperRequest& r) {
  switch (r.op) {
    case HelperOp::isolate:
      return nftIsolateScript(r.isolate, r.keep);
    case HelperOp::throttle:
      return nftThrottleScript(r.throttle, r.keep);
    case HelperOp::heal:
      return nftHealScript(r.table);
    case HelperOp::fill:
      return diskFillScript(r.disk);
    case HelperOp::fill_check:
      return diskFillCheckScript(r.disk);
    case HelperOp::free: {
      const auto name = *parseFillerStem(r.filler);
      return diskFreeScript(name.dir, name.instance, name.drill);
    }
    case HelperOp::fill_sweep:
      return diskSweepScript(r.fill_dir, r.instance);
    case HelperOp::sweep:
      return "list tables";
    case HelperOp::netns_check:
      return {};
  }
  return {};
}

std::string helperWindowLine(std::int64_t start_us, std::int64_t end_us) {
  return std::string(kHelperWindowKey) + std::to_string(start_us) + " " + std::to_string(end_us);
}

std::optional<HelperWindow> helperWindow(std::string_view output) {
  const auto at = output.rfind(kHelperWindowKey);
  if (at == std::string_view::npos) return std::nullopt;
  auto rest = output.substr(at + kHelperWindowKey.size());
  rest = rest.substr(0, rest.find('\n'));
  const auto space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto start = number(rest.substr(0, space));
  const auto end = number(rest.substr(space + 1));
  if (!start || !end || *end < *start) return std::nullopt;
  return HelperWindow{*start, *end};
}

}  // namespace kfaild::fault
