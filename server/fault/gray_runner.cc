#include "server/fault/gray_runner.h"

#include <sstream>

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

}  // namespace

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

Result<std::vector<std::string>> graySweep(GrayRunner* runner) {
  if (!runner) return std::vector<std::string>{};
  return runner->sweep();
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

Result<FaultRecord> GrayRunner::heal(const std::string& drill) {
  const auto table = nftTableName(shell_.instance, drill);
  if (!table) return faultError(errc::invalid_target, "drill id '" + drill + "' is not valid");
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  if (shell_.nft) {
    auto out = runOn(shell_.nft, nftHealScript(*table), &record.detail);
    if (!out.ok()) return out.error();
  }
  if (shell_.sh && !shell_.fill_dir.empty()) {
    auto out = runOn(shell_.sh, diskFreeScript(shell_.fill_dir, shell_.instance, drill), &record.detail);
    if (!out.ok()) return out.error();
  }
  record.fault_at = clock_.wallNow();
  record.fault_time_source = "local";
  return record;
}

Result<std::vector<std::string>> GrayRunner::sweep() {
  std::vector<std::string> removed;
  if (shell_.nft) {
    auto listing = shell_.nft("list tables");
    if (!listing.ok()) return listing.error();
    auto out = run_(*listing, shell_.timeout);
    if (!out.ok()) return out.error();
    if (out->exit_code != 0 || nftMissing(*out))
      return faultError(errc::command_failed, describeArgv(*listing) + " exited with " +
                                                  std::to_string(out->exit_code) + ": " +
                                                  toolOutput(out->err));
    const auto tables = kfaildTables(out->out, shell_.instance);
    if (!tables.empty()) {
      auto deleted = runOn(shell_.nft, nftSweepScript(tables), nullptr);
      if (!deleted.ok()) return deleted.error();
      for (const auto& t : tables) removed.push_back("nft table " + t);
    }
  }
  if (shell_.sh && !shell_.fill_dir.empty()) {
    auto out = runOn(shell_.sh, diskSweepScript(shell_.fill_dir, shell_.instance), nullptr);
    if (!out.ok()) return out.error();
    std::istringstream lines(out->out);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) removed.push_back("disk filler " + line);
  }
  return removed;
}

}  // namespace kfaild::fault
