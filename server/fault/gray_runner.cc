#include "server/fault/gray_runner.h"

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
std::string toolOutput(const std::string& text) { return common::sensitive(common::utf8Tail(trimmed(text), 2000)); }

// "nft: Error: No such file or directory" from `nft list tables` on a host whose kernel has no
// nf_tables is not "nothing left": it is a failure. An nft that ran and found no table of ours
// prints nothing.
bool nftMissing(const CommandOutput& out) {
  return out.exit_code == 127 || out.err.find("not found") != std::string::npos;
}

// `ip netns exec` of a namespace that is gone (a reboot, `lab down`): nothing of ours is in it.
bool netnsGone(const CommandOutput& out) {
  return out.exit_code != 0 && out.err.find("Cannot open network namespace") != std::string::npos;
}

// The argv builder could not find the place to run in: no namespace, the container stopped.
bool nothingThere(const Error& error) {
  return error.code == make_error_code(errc::not_present) || error.code == make_error_code(errc::invalid_state) ||
         error.code == make_error_code(errc::no_such_container);
}

// "<instance>_d<drill>" or "d<drill>" (no instance), as a name ends after its "kfaild_" or
// "kfaild_fill_" prefix; nullopt when it is not one of kfaild's names.
std::optional<std::pair<std::string, std::string>> instanceAndDrill(std::string_view rest) {
  std::string instance;
  if (const auto sep = rest.find("_d"); sep != std::string_view::npos && !rest.starts_with("d")) {
    instance = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 1);
  }
  if (!rest.starts_with("d")) return std::nullopt;
  const std::string drill(rest.substr(1));
  if (!nftTableName(instance, drill)) return std::nullopt;
  return std::make_pair(instance, drill);
}

// A table name as the journal holds it ("kfaild_<instance>_d<drill>"): its instance and drill,
// nullopt when it is not one of kfaild's (nothing else is ever deleted).
std::optional<std::pair<std::string, std::string>> parseTableName(const std::string& table) {
  constexpr std::string_view kPrefix = "kfaild_";
  if (!table.starts_with(kPrefix)) return std::nullopt;
  auto parts = instanceAndDrill(std::string_view(table).substr(kPrefix.size()));
  if (!parts || nftTableName(parts->first, parts->second) != table) return std::nullopt;
  return parts;
}

struct FillerPlace {
  std::string dir;
  std::string instance;
  std::string drill;
};

// A filler stem as the journal holds it ("<dir>/kfaild_fill_<instance>_d<drill>", fillerStem):
// its directory, instance and drill; nullopt when it is not one of kfaild's.
std::optional<FillerPlace> splitFiller(const std::string& path) {
  const auto slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash == std::string::npos) return std::nullopt;
  const auto name = path.substr(slash + 1);
  constexpr std::string_view kPrefix = "kfaild_fill_";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  auto parts = instanceAndDrill(std::string_view(name).substr(kPrefix.size()));
  if (!parts) return std::nullopt;
  FillerPlace place{slash == 0 ? std::string("/") : path.substr(0, slash), parts->first, parts->second};
  if (fillerStem(place.dir, place.instance, place.drill) != path) return std::nullopt;
  return place;
}

}  // namespace

std::optional<std::vector<std::string>> nftCheckArgv(std::vector<std::string> argv) {
  if (argv.size() >= 2 && argv[argv.size() - 2] == "nft") {
    argv.insert(argv.end() - 1, "--check");
    return argv;
  }
  const std::string sudo = "sudo -n nft ";
  if (!argv.empty() && argv.back().rfind(sudo, 0) == 0) {
    argv.back() = sudo + "--check " + argv.back().substr(sudo.size());
    return argv;
  }
  return std::nullopt;
}

std::string fillDirCheckScript(const std::string& fill_dir) {
  return "d=" + shellQuote(fill_dir) +
         "\n"
         "if [ ! -d \"$d\" ]; then echo \"fill_dir $d is not a directory\" >&2; exit 1; fi\n"
         "if [ ! -w \"$d\" ]; then echo \"fill_dir $d is not writable here\" >&2; exit 1; fi\n"
         "if [ \"$(stat -f -c %i \"$d\")\" = \"$(stat -f -c %i /)\" ] && "
         "[ \"$(stat -c %d \"$d\")\" = \"$(stat -c %d /)\" ]; then "
         "echo \"fill_dir $d is on the root filesystem: filling it would fill the host's\" >&2; exit 1; fi\n";
}

std::vector<std::string> localNftArgv(const std::string& netns, const std::string& script) {
  if (netns.empty()) return {"nft", script};
  return {"ip", "netns", "exec", netns, "nft", script};
}

std::vector<std::string> localShArgv(const std::string& script) { return {"sh", "-c", script}; }

std::vector<std::string> nsenterNftArgv(std::int64_t pid, const std::string& script) {
  return {"nsenter", "-t", std::to_string(pid), "-n", "nft", script};
}

std::string sudoNftCommand(const std::string& script) {
  if (script.find(kSessionPortToken) == std::string::npos) return "sudo -n nft " + shellQuote(script);
  const std::string token(kSessionPortToken);
  return "p=${SSH_CONNECTION##* }; case $p in ''|*[!0-9]*) e='/" + token + "/d';; *) e=\"s/" + token +
         "/$p/\";; esac; printf '%s' " + shellQuote(script) + " | sed \"$e\" | sudo -n nft -f -";
}

std::string sudoShCommand(const std::string& script) {
  return "sudo -n sh -c " + shellQuote(script);
}

std::string grayRefusal(const GrayRunner* runner, GrayFault fault, const std::string& unplaced) {
  if (fault == GrayFault::disk_slow) return diskSlowRefusalHere();
  return runner ? runner->refusal(fault) : unplaced;
}

Result<FaultRecord> grayHeal(GrayRunner* runner, const std::string& drill, const common::Clock& clock,
                             const std::string& unplaced) {
  if (runner) return runner->heal(drill);
  FaultRecord nothing;
  nothing.requested_at = clock.wallNow();
  nothing.detail = "no gray fault can have been injected: " + unplaced;
  return nothing;
}

Result<FaultRecord> grayHealPlaced(GrayRunner* runner, const GrayPlace& place, const common::Clock& clock,
                                   const std::string& unplaced, const ScriptArgv& nft) {
  if (runner) return runner->healPlaced(place, nft);
  if (!place.empty()) {
    // Placed by an earlier configuration of this node that had gray faults: without a way to the
    // node now, kfaild cannot tell whether the table or filler is still there.
    return faultError(errc::unsupported, "the journal places drill's gray fault at " + place.table + " " +
                                             place.filler + ", but this node has no way to it now: " + unplaced);
  }
  FaultRecord nothing;
  nothing.requested_at = clock.wallNow();
  nothing.detail = "no gray fault can have been injected: " + unplaced;
  return nothing;
}

Result<std::vector<std::string>> graySweep(GrayRunner* runner) {
  if (!runner) return std::vector<std::string>{};
  return runner->sweep();
}

Status grayCheck(GrayRunner* runner, const GrayAction& action, const std::string& unplaced) {
  if (!runner) return faultError(errc::unsupported, unplaced);
  return runner->check(action);
}

GrayRunner::GrayRunner(NodeShell shell, const common::Clock& clock, CommandRunner run)
    : shell_(std::move(shell)), clock_(clock), run_(std::move(run)) {}

std::string GrayRunner::refusal(GrayFault fault) const {
  switch (fault) {
    case GrayFault::isolate:
    case GrayFault::throttle:
      if (shell_.nft) return {};
      return shell_.nft_refusal.empty() ? "no way to run nft on this node" : shell_.nft_refusal;
    case GrayFault::disk_full:
      if (!shell_.sh)
        return shell_.sh_refusal.empty() ? "no way to run a shell on this node" : shell_.sh_refusal;
      if (shell_.fill_dir.empty())
        return "disk_full needs a directory on the broker's log filesystem to fill, and none is "
               "configured for this broker";
      return {};
    case GrayFault::disk_slow:
      return diskSlowRefusalHere();
  }
  return "unknown fault";
}

Result<CommandOutput> GrayRunner::runOn(const ScriptArgv& how, const std::string& script,
                                        std::string* detail) {
  auto argv = how(script);
  if (!argv.ok()) return argv.error();
  if (detail) *detail += (detail->empty() ? "" : "\n") + describeArgv(*argv);
  auto out = run_(*argv, shell_.timeout);
  if (!out.ok()) return out.error();
  if (out->exit_code != 0)
    return faultError(errc::command_failed, describeArgv(*argv) + " exited with " +
                                                std::to_string(out->exit_code) + ": " +
                                                toolOutput(out->err + out->out));
  return out;
}

Result<NftExceptions> GrayRunner::networkPlacement() const {
  if (shell_.network_placement) return shell_.network_placement();
  return shell_.keep;
}

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
  auto out = runOn(shell_.nft, nftIsolateScript(spec, *keep), &record.detail);
  if (!out.ok()) return out.error();
  record.fault_at = clock_.wallNow();
  record.fault_time_source = "local";
  return record;
}

Result<FaultRecord> GrayRunner::throttle(const ThrottleSpec& given) {
  if (auto why = refusal(GrayFault::throttle); !why.empty())
    return faultError(errc::unsupported, why);
  auto spec = given;
  spec.instance = shell_.instance;
  if (auto bad = invalidReason(spec); !bad.empty()) return faultError(errc::invalid_target, bad);
  // Where the rules go is settled before the fault's own clock starts.
  auto keep = networkPlacement();
  if (!keep.ok()) return keep.error();
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto out = runOn(shell_.nft, nftThrottleScript(spec, *keep), &record.detail);
  if (!out.ok()) return out.error();
  record.fault_at = clock_.wallNow();
  record.fault_time_source = "local";
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
  auto out = runOn(shell_.sh, diskFillScript(spec), &record.detail);
  if (!out.ok()) return out.error();
  record.fault_at = clock_.wallNow();
  record.fault_time_source = "local";
  record.detail += "\n" + toolOutput(out->out);
  return record;
}

GrayPlace GrayRunner::placeOf(const std::string& drill) const {
  GrayPlace place;
  const auto table = nftTableName(shell_.instance, drill);
  if (!table) return place;
  if (shell_.nft) place.table = *table;
  if (shell_.sh && !shell_.fill_dir.empty()) place.filler = fillerStem(shell_.fill_dir, shell_.instance, drill);
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
    if (auto out = runOn(shell_.sh, fillDirCheckScript(spec.fill_dir), nullptr); !out.ok()) return failed(out.error());
    return okStatus();
  }
  // The exact script the injection would run: this instance's names, the placement's exceptions.
  auto keep = networkPlacement();
  if (!keep.ok()) return failed(keep.error());
  std::string script;
  if (const auto* given = std::get_if<IsolateSpec>(&action)) {
    auto isolate = *given;
    isolate.instance = shell_.instance;
    if (auto bad = invalidReason(isolate); !bad.empty()) return faultError(errc::invalid_target, bad);
    script = nftIsolateScript(isolate, *keep);
  } else if (const auto* given_rate = std::get_if<ThrottleSpec>(&action)) {
    auto throttle = *given_rate;
    throttle.instance = shell_.instance;
    if (auto bad = invalidReason(throttle); !bad.empty()) return faultError(errc::invalid_target, bad);
    script = nftThrottleScript(throttle, *keep);
  } else {
    return faultError(errc::unsupported, refusal(fault));
  }
  const ScriptArgv checking = [this](const std::string& text) -> Result<std::vector<std::string>> {
    auto argv = shell_.nft(text);
    if (!argv.ok()) return argv.error();
    auto with_check = nftCheckArgv(*argv);
    if (!with_check) return faultError(errc::unsupported, "cannot run nft --check as " + describeArgv(*argv));
    return *with_check;
  };
  if (auto out = runOn(checking, script, nullptr); !out.ok()) return failed(out.error());
  return okStatus();
}

Result<FaultRecord> GrayRunner::heal(const std::string& drill) {
  if (!nftTableName(shell_.instance, drill)) return faultError(errc::invalid_target, "drill id '" + drill + "' is not valid");
  return healPlaced(placeOf(drill));
}

Result<FaultRecord> GrayRunner::healPlaced(const GrayPlace& place, const ScriptArgv& nft) {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  std::vector<std::string> done;    // each step's outcome, for the record
  std::vector<std::string> failed;  // the steps that could not run
  if (!place.table.empty()) {
    const auto& how = nft ? nft : shell_.nft;
    const bool ours = parseTableName(place.table).has_value();
    if (!ours) {
      failed.push_back("'" + place.table + "' is not a kfaild table");
    } else if (!how) {
      failed.push_back("table " + place.table + ": no way to run nft on this node now (" + shell_.nft_refusal + ")");
    } else {
      std::string detail;
      auto out = runOn(how, nftHealScript(place.table), &detail);
      if (out.ok()) {
        done.push_back(detail);
      } else if (nothingThere(out.error())) {
        done.push_back("no table " + place.table + " can be left: " + out.error().message);
      } else {
        failed.push_back(out.error().message);
      }
    }
  }
  if (!place.filler.empty()) {
    const auto filler = splitFiller(place.filler);
    if (!filler) {
      failed.push_back("'" + place.filler + "' is not a kfaild disk filler");
    } else if (!shell_.sh) {
      failed.push_back("filler " + place.filler + ": no shell on this node now (" + shell_.sh_refusal + ")");
    } else {
      std::string detail;
      auto out = runOn(shell_.sh, diskFreeScript(filler->dir, filler->instance, filler->drill), &detail);
      if (out.ok()) {
        done.push_back(detail);
      } else if (nothingThere(out.error())) {
        done.push_back("no filler " + place.filler + " can be left: " + out.error().message);
      } else {
        failed.push_back(out.error().message);
      }
    }
  }
  if (!failed.empty()) {
    return faultError(errc::command_failed,
                      join(failed, "; ") + (done.empty() ? "" : " (done all the same: " + join(done, "; ") + ")"));
  }
  record.detail = done.empty() ? "nothing to heal: no gray fault is placed on this node" : join(done, "\n");
  record.fault_at = clock_.wallNow();
  record.fault_time_source = "local";
  return record;
}

Result<std::vector<std::string>> GrayRunner::sweep() {
  std::vector<std::string> removed;
  std::vector<std::string> failed;
  if (shell_.nft) {
    auto listing = shell_.nft("list tables");
    if (!listing.ok()) {
      if (!nothingThere(listing.error())) failed.push_back(listing.error().message);
    } else if (auto out = run_(*listing, shell_.timeout); !out.ok()) {
      failed.push_back(out.error().message);
    } else if (netnsGone(*out)) {
      // Nothing to sweep there.
    } else if (out->exit_code != 0 || nftMissing(*out)) {
      failed.push_back(describeArgv(*listing) + " exited with " + std::to_string(out->exit_code) + ": " +
                       toolOutput(out->err));
    } else if (const auto tables = kfaildTables(out->out, shell_.instance); !tables.empty()) {
      if (auto deleted = runOn(shell_.nft, nftSweepScript(tables), nullptr); !deleted.ok()) {
        failed.push_back(deleted.error().message);
      } else {
        for (const auto& t : tables) removed.push_back("nft table " + t);
      }
    }
  }
  if (shell_.sh && !shell_.fill_dir.empty()) {
    if (auto out = runOn(shell_.sh, diskSweepScript(shell_.fill_dir, shell_.instance), nullptr); !out.ok()) {
      failed.push_back(out.error().message);
    } else {
      std::istringstream lines(out->out);
      for (std::string line; std::getline(lines, line);)
        if (!line.empty()) removed.push_back("disk filler " + line);
    }
  }
  if (!failed.empty()) {
    return faultError(errc::command_failed,
                      join(failed, "; ") + (removed.empty() ? "" : " (removed all the same: " + join(removed, "; ") + ")"));
  }
  return removed;
}

}  // namespace kfaild::fault
