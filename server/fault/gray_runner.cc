#include "server/fault/gray_runner.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>
#include <variant>

#include "server/common/sensitive.h"
#include "server/common/utf8.h"
#include "server/fault/errc.h"

namespace kfaild::fault {
namespace {

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// A tool's words, the operator's only (nft echoes the failing rule with peer addresses; ssh and
// sudo name hosts and users), cut to their end as command.cc cuts stderr.
std::string toolOutput(const std::string& text) {
  return common::sensitive(common::utf8Tail(trimmed(text), 2000));
}

// The output without kfaild-gray's window line, for the record.
std::string withoutWindow(const std::string& out) {
  std::istringstream lines(out);
  std::string kept;
  for (std::string line; std::getline(lines, line);)
    if (!line.starts_with(kHelperWindowKey)) kept += line + "\n";
  return trimmed(kept);
}

// The argv builder could not find the place to run in (no namespace, the container stopped), or
// kfaild-gray found it gone: nothing of ours can be there.
bool nothingThere(const Error& error) {
  return error.code == make_error_code(errc::not_present) ||
         error.code == make_error_code(errc::invalid_state) ||
         error.code == make_error_code(errc::no_such_container);
}

// A word as the remote shell must see it: bare when it has nothing a shell reads, else quoted.
std::string shellWord(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./:=@%+,-") == std::string::npos;
  return plain ? word : shellQuote(word);
}

std::vector<std::string> plus(std::vector<std::string> words, std::string_view last) {
  words.emplace_back(last);
  return words;
}

}  // namespace

std::vector<std::string> defaultLocalGrayHelper() {
  std::error_code ec;
  const auto beside =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "kfaild-gray";
  std::string path(kGrayHelperPath);
  if (const char* chosen = std::getenv("KFAILD_GRAY_HELPER"); chosen != nullptr && *chosen == '/') {
    path = chosen;
  } else if (!ec && ::access(beside.c_str(), X_OK) == 0) {
    path = beside.string();
  }
  if (::geteuid() == 0) return {path};
  return {"sudo", "-n", path};
}

std::vector<std::string> defaultSshGrayHelper() {
  return {"sudo", "-n", std::string(kGrayHelperPath)};
}

std::vector<std::string> localHelperArgv(const std::vector<std::string>& helper,
                                         const std::string& netns, std::int64_t pid,
                                         const std::vector<std::string>& words,
                                         std::int64_t expect_pid) {
  auto argv = helper;
  if (!netns.empty()) argv.insert(argv.end(), {"--netns", netns});
  if (!netns.empty() && expect_pid > 0)
    argv.insert(argv.end(), {"--expect-pid", std::to_string(expect_pid)});
  if (pid > 0) argv.insert(argv.end(), {"--pid", std::to_string(pid)});
  for (const auto& w : words)
    if (w != kSessionPortWord) argv.push_back(w);  // no ssh session here
  return argv;
}

std::string remoteHelperCommand(const std::vector<std::string>& helper,
                                const std::vector<std::string>& words) {
  std::string line;
  bool session = false;
  for (const auto& w : helper) line += (line.empty() ? "" : " ") + shellWord(w);
  for (const auto& w : words) {
    if (w == kSessionPortWord) {
      session = true;
      continue;
    }
    line += " " + shellWord(w);
  }
  if (!session) return line;
  // The port this session reached on the node (behind a NAT not ssh's own), digits only.
  return "p=${SSH_CONNECTION##* }; case $p in ''|*[!0-9]*) p=;; esac; " + line +
         " ${p:+--keep-port \"$p\"}";
}

GrayRunner::GrayRunner(NodeShell shell, const common::Clock& clock, CommandRunner run)
    : shell_(std::move(shell)), clock_(clock), run_(std::move(run)) {}

std::string GrayRunner::refusal(GrayFault fault) const {
  switch (fault) {
    case GrayFault::isolate:
    case GrayFault::throttle:
      if (shell_.nft) return {};
      return shell_.nft_refusal.empty() ? "no way to run kfaild-gray for this node's network"
                                        : shell_.nft_refusal;
    case GrayFault::disk_full:
      if (!shell_.sh)
        return shell_.sh_refusal.empty() ? "no way to run kfaild-gray on this node's filesystem"
                                         : shell_.sh_refusal;
      if (shell_.fill_dir.empty())
        return "disk_full needs a directory on the broker's log filesystem to fill, and none is "
               "configured for this broker";
      return {};
    case GrayFault::disk_slow:
      return diskSlowRefusalHere();
  }
  return "unknown fault";
}

Result<CommandOutput> GrayRunner::runOn(const HelperArgv& how, const HelperRequest& request,
                                        std::string* detail, bool keep_session) {
  auto words = helperWords(request);
  if (keep_session) words = plus(std::move(words), kSessionPortWord);
  auto argv = how(words);
  if (!argv.ok()) return argv.error();
  if (detail) *detail += (detail->empty() ? "" : "\n") + describeArgv(*argv);
  auto out =
      run_(*argv, request.op == HelperOp::fill ? kFillTimeout + shell_.timeout - kShellTimeout
                                               : shell_.timeout);
  if (!out.ok()) return out.error();
  if (out->exit_code == kHelperNothingThere)
    return faultError(errc::not_present, describeArgv(*argv) + ": " + toolOutput(out->err));
  if (out->exit_code != 0)
    return faultError(errc::command_failed, describeArgv(*argv) + " exited with " +
                                                std::to_string(out->exit_code) + ": " +
                                                toolOutput(out->err + out->out));
  return out;
}

void GrayRunner::placeInTime(FaultRecord& record, const CommandOutput& out,
                             const std::string& what) {
  const auto returned = clock_.wallNow();
  const auto window = helperWindow(out.out);
  if (!window) {
    // An older kfaild-gray, or a fake: the fault took effect somewhere in the call.
    const auto half = (returned - record.requested_at + 1) / 2;
    placeFault(record, record.requested_at + half, {0, half}, "kfaild:call");
    return;
  }
  const auto half = (window->end_us - window->start_us + 1) / 2;
  ClockOffset offset;
  std::string source = "kfaild-gray:local-clock";
  if (shell_.clock_offset) {
    auto measured = shell_.clock_offset();
    if (!measured.ok()) {
      // Without the node's clock kfaild's own bracket of the call is what is left.
      const auto call = (returned - record.requested_at + 1) / 2;
      placeFault(record, record.requested_at + call, {0, call}, "kfaild:call");
      record.detail += "\n" + what + ": the node's clock offset is unknown (" +
                       measured.error().message + "), so its time is the call's";
      return;
    }
    offset = *measured;
    source = "kfaild-gray:remote-clock";
  }
  placeFault(record, window->start_us + half, {offset.offset_us, offset.uncertainty_us + half},
             source);
}

Result<NftExceptions> GrayRunner::networkPlacement() const {
  if (shell_.network_placement) return shell_.network_placement();
  return shell_.keep;
}

namespace {

HelperRequest isolateRequest(IsolateSpec spec, const NftExceptions& keep, bool check) {
  HelperRequest r;
  r.op = HelperOp::isolate;
  r.isolate = std::move(spec);
  r.keep = keep;
  r.keep.keep_session_port = false;
  r.check = check;
  return r;
}

HelperRequest throttleRequest(ThrottleSpec spec, const NftExceptions& keep, bool check) {
  HelperRequest r;
  r.op = HelperOp::throttle;
  r.throttle = std::move(spec);
  r.keep = keep;
  r.keep.keep_session_port = false;
  r.check = check;
  return r;
}

HelperRequest diskRequest(DiskFullSpec spec, HelperOp op) {
  HelperRequest r;
  r.op = op;
  r.disk = std::move(spec);
  return r;
}

}  // namespace

Result<FaultRecord> GrayRunner::isolate(const IsolateSpec& given) {
  if (auto why = refusal(GrayFault::isolate); !why.empty())
    return faultError(errc::unsupported, why);
  auto spec = given;
  spec.instance = shell_.instance;
  if (auto bad = invalidReason(spec); !bad.empty()) return faultError(errc::invalid_target, bad);
  // Where the rules go is settled before the fault's own clock starts.
  auto keep = networkPlacement();
  if (!keep.ok()) return keep.error();
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto out = runOn(shell_.nft, isolateRequest(spec, *keep, false), &record.detail,
                   keep->keep_session_port);
  if (!out.ok()) return out.error();
  placeInTime(record, *out, "isolate");
  return record;
}

Result<FaultRecord> GrayRunner::throttle(const ThrottleSpec& given) {
  if (auto why = refusal(GrayFault::throttle); !why.empty())
    return faultError(errc::unsupported, why);
  auto spec = given;
  spec.instance = shell_.instance;
  if (auto bad = invalidReason(spec); !bad.empty()) return faultError(errc::invalid_target, bad);
  auto keep = networkPlacement();
  if (!keep.ok()) return keep.error();
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto out = runOn(shell_.nft, throttleRequest(spec, *keep, false), &record.detail,
                   keep->keep_session_port);
  if (!out.ok()) return out.error();
  placeInTime(record, *out, "throttle");
  return record;
}

Result<FaultRecord> GrayRunner::fillDisk(const DiskFullSpec& given) {
  if (auto why = refusal(GrayFault::disk_full); !why.empty())
    return faultError(errc::unsupported, why);
  auto spec = given;
  spec.instance = shell_.instance;
  if (spec.fill_dir.empty()) spec.fill_dir = shell_.fill_dir;
  if (auto bad = invalidReason(spec); !bad.empty()) return faultError(errc::invalid_target, bad);
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto out = runOn(shell_.sh, diskRequest(spec, HelperOp::fill), &record.detail);
  if (!out.ok()) return out.error();
  placeInTime(record, *out, "disk_full");
  record.detail += "\n" + toolOutput(withoutWindow(out->out));
  return record;
}

GrayPlace GrayRunner::placeOf(const std::string& drill) const {
  GrayPlace place;
  const auto table = nftTableName(shell_.instance, drill);
  if (!table) return place;
  if (shell_.nft) place.table = *table;
  if (shell_.sh && !shell_.fill_dir.empty())
    place.filler = fillerStem(shell_.fill_dir, shell_.instance, drill);
  return place;
}

Status GrayRunner::check(const GrayAction& action) {
  const auto fault = grayFaultOf(action);
  if (auto why = refusal(fault); !why.empty()) return faultError(errc::unsupported, why);
  const auto failed = [](const Error& e) { return faultError(errc::unsupported, e.message); };
  if (const auto* disk = std::get_if<DiskFullSpec>(&action)) {
    auto spec = *disk;
    spec.instance = shell_.instance;
    if (spec.fill_dir.empty()) spec.fill_dir = shell_.fill_dir;
    if (auto bad = invalidReason(spec); !bad.empty()) return faultError(errc::invalid_target, bad);
    if (auto out = runOn(shell_.sh, diskRequest(spec, HelperOp::fill_check), nullptr); !out.ok())
      return failed(out.error());
    return okStatus();
  }
  // The exact request the injection would send, with --check: kfaild-gray builds the same script
  // and nft parses it and the kernel validates the batch without committing it.
  auto keep = networkPlacement();
  if (!keep.ok()) return failed(keep.error());
  HelperRequest request;
  if (const auto* given = std::get_if<IsolateSpec>(&action)) {
    auto isolate = *given;
    isolate.instance = shell_.instance;
    if (auto bad = invalidReason(isolate); !bad.empty())
      return faultError(errc::invalid_target, bad);
    request = isolateRequest(isolate, *keep, true);
  } else if (const auto* given_rate = std::get_if<ThrottleSpec>(&action)) {
    auto throttle = *given_rate;
    throttle.instance = shell_.instance;
    if (auto bad = invalidReason(throttle); !bad.empty())
      return faultError(errc::invalid_target, bad);
    request = throttleRequest(throttle, *keep, true);
  } else {
    return faultError(errc::unsupported, refusal(fault));
  }
  if (auto out = runOn(shell_.nft, request, nullptr, keep->keep_session_port); !out.ok())
    return failed(out.error());
  return okStatus();
}

Result<FaultRecord> GrayRunner::heal(const std::string& drill) {
  if (!nftTableName(shell_.instance, drill))
    return faultError(errc::invalid_target, "drill id '" + drill + "' is not valid");
  return healPlaced(placeOf(drill));
}

Result<FaultRecord> GrayRunner::healPlaced(const GrayPlace& place, const HelperArgv& nft) {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  std::vector<std::string> done;       // each step's outcome, for the record
  std::vector<std::string> failed;     // the steps that could not run
  std::optional<CommandOutput> timed;  // the step whose window dates the heal
  const auto step = [&](const HelperArgv& how, const HelperRequest& request,
                        const std::string& what) {
    std::string detail;
    auto out = runOn(how, request, &detail);
    if (out.ok()) {
      done.push_back(detail);
      if (!timed) timed = *out;
    } else if (nothingThere(out.error())) {
      done.push_back("no " + what + " can be left: " + out.error().message);
    } else {
      failed.push_back(out.error().message);
    }
  };
  if (!place.table.empty()) {
    const auto& how = nft ? nft : shell_.nft;
    if (!parseTableName(place.table)) {
      failed.push_back("'" + place.table + "' is not a kfaild table");
    } else if (!how) {
      failed.push_back("table " + place.table +
                       ": no way to run kfaild-gray on this node's network now (" +
                       shell_.nft_refusal + ")");
    } else {
      HelperRequest heal;
      heal.op = HelperOp::heal;
      heal.table = place.table;
      step(how, heal, "table " + place.table);
    }
  }
  if (!place.filler.empty()) {
    if (!parseFillerStem(place.filler)) {
      failed.push_back("'" + place.filler + "' is not a kfaild disk filler");
    } else if (!shell_.sh) {
      failed.push_back("filler " + place.filler +
                       ": no way to run kfaild-gray on this node's filesystem now (" +
                       shell_.sh_refusal + ")");
    } else {
      HelperRequest free;
      free.op = HelperOp::free;
      free.filler = place.filler;
      step(shell_.sh, free, "filler " + place.filler);
    }
  }
  if (!failed.empty()) {
    return faultError(errc::command_failed,
                      join(failed, "; ") +
                          (done.empty() ? "" : " (done all the same: " + join(done, "; ") + ")"));
  }
  record.detail =
      done.empty() ? "nothing to heal: no gray fault is placed on this node" : join(done, "\n");
  if (timed) {
    placeInTime(record, *timed, "heal");
  } else {
    placeFault(record, clock_.wallNow(), {}, "local");
  }
  return record;
}

Result<std::vector<std::string>> GrayRunner::sweep() {
  std::vector<std::string> removed;
  std::vector<std::string> failed;
  const auto collect = [&](const HelperArgv& how, const HelperRequest& request,
                           const std::string& kind) {
    auto out = runOn(how, request, nullptr);
    if (!out.ok()) {
      if (!nothingThere(out.error())) failed.push_back(out.error().message);
      return;
    }
    std::istringstream lines(withoutWindow(out->out));
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) removed.push_back(kind + line);
  };
  if (shell_.nft) {
    HelperRequest tables;
    tables.op = HelperOp::sweep;
    tables.instance = shell_.instance;
    collect(shell_.nft, tables, "");
  }
  if (shell_.sh && !shell_.fill_dir.empty()) {
    HelperRequest fillers;
    fillers.op = HelperOp::fill_sweep;
    fillers.instance = shell_.instance;
    fillers.fill_dir = shell_.fill_dir;
    collect(shell_.sh, fillers, "disk filler ");
  }
  if (!failed.empty()) {
    return faultError(
        errc::command_failed,
        join(failed, "; ") +
            (removed.empty() ? "" : " (removed all the same: " + join(removed, "; ") + ")"));
  }
  return removed;
}

}  // namespace kfaild::fault
