#include "server/drill/fault_action.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "server/fault/errc.h"

namespace kfaild::drill {

using common::NodeRole;

namespace {

bool isController(const config::NodeConfig& node) {
  return node.role == NodeRole::kController;
}

std::string lowered(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Another inventory node in the network namespace `node`'s rules would go into, or nullopt.
std::optional<std::int32_t> namespaceSharer(const config::NodeConfig& node,
                                            const std::vector<config::NodeConfig>& inventory,
                                            const NodeAddresses& addresses) {
  const auto address = addresses.find(node.id);
  const auto shares = [&](const std::vector<std::string>& others) {
    return std::any_of(others.begin(), others.end(), [&](const std::string& a) {
      return std::find(address->second.begin(), address->second.end(), a) != address->second.end();
    });
  };
  for (const auto& n : inventory) {
    if (n.id == node.id) continue;
    if (node.local && n.local && !node.netns.empty() && n.netns == node.netns) return n.id;
    if (node.ssh && n.ssh && lowered(n.ssh->host) == lowered(node.ssh->host)) return n.id;
    if (node.ssh && address != addresses.end()) {
      const auto other = addresses.find(n.id);
      if (other != addresses.end() && shares(other->second)) return n.id;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string recoveryAction(FaultType fault) {
  if (fault == FaultType::kPause) return "resume";
  return isGrayFault(fault) ? "heal" : "start";
}

bool nodeGoesDown(FaultType fault) {
  return fault == FaultType::kKill || fault == FaultType::kStop || fault == FaultType::kDiskFull;
}

std::int64_t holdUs(const DrillSpec& spec) {
  constexpr std::int64_t kSecond = 1'000'000;
  if (spec.fault == FaultType::kPause) return spec.options.pause_s * kSecond;
  if (isGrayFault(spec.fault)) return spec.options.duration_s * kSecond;
  return 0;
}

std::string grayDrillName(std::int64_t drill_id) {
  return std::to_string(drill_id);
}

std::string faultRefusal(const DrillSpec& spec, const config::NodeConfig& node,
                         const fault::Injector& injector,
                         const std::vector<config::NodeConfig>& inventory,
                         const NodeAddresses& addresses) {
  if (spec.fault == FaultType::kPause && node.command && node.command->pause.argv.empty()) {
    return "pause of node " + std::to_string(node.id) +
           " is refused: its commands have no pause and resume (command.pause, command.resume)";
  }
  if (!isGrayFault(spec.fault)) return {};
  const auto gray = spec.fault == FaultType::kIsolate    ? fault::GrayFault::isolate
                    : spec.fault == FaultType::kThrottle ? fault::GrayFault::throttle
                    : spec.fault == FaultType::kDiskFull ? fault::GrayFault::disk_full
                                                         : fault::GrayFault::disk_slow;
  if (auto reason = injector.refusal(gray); !reason.empty()) return reason;
  if (spec.fault != FaultType::kIsolate && spec.fault != FaultType::kThrottle) return {};
  const auto name = "node " + std::to_string(node.id);
  if (const auto sharer = namespaceSharer(node, inventory, addresses)) {
    return std::string(toString(spec.fault)) + " of " + name + " is refused: node " +
           std::to_string(*sharer) + " shares its " +
           (node.local ? "network namespace '" + node.netns + "'" : std::string("host")) +
           ", so the rules would cut it too, and the drill's guards count only " + name;
  }
  const auto from = spec.options.from;
  if (spec.fault == FaultType::kIsolate && isController(node)) {
    // A controller-only node talks to the other controllers and is fetched from by the brokers:
    // "quorum" from a controller is the rest of the quorum, which is what `all` cuts too.
    if (from == fault::IsolateFrom::quorum) {
      return "isolate from: quorum on controller " + std::to_string(node.id) +
             " makes no sense: it is itself the quorum (use from: brokers on a broker, or from: "
             "all)";
    }
    if (from == fault::IsolateFrom::brokers) {
      return "isolate from: brokers on controller " + std::to_string(node.id) +
             " is not a replication fault (the controller replicates no partition); use from: all";
    }
  }
  return {};
}

std::vector<std::string> logDirsFor(const DrillSpec& spec, ClusterAdmin& admin, std::int32_t node) {
  if (spec.fault != FaultType::kDiskFull) return {};
  auto answer = admin.brokerConfig(node, {"log.dirs", "log.dir"});
  if (!answer) {
    spdlog::warn(
        "node {}: cannot read log.dirs ({}); its disk filler checks only its own filesystem", node,
        answer.error().describe());
    return {};
  }
  for (const auto* key : {"log.dirs", "log.dir"}) {
    const auto found = answer->find(key);
    if (found == answer->end() || !found->second.value || found->second.value->empty()) continue;
    std::vector<std::string> dirs;
    std::string dir;
    for (const char c : *found->second.value + ",") {
      if (c != ',') {
        dir += c;
      } else if (!dir.empty()) {
        dirs.push_back(dir);
        dir.clear();
      }
    }
    return dirs;
  }
  return {};
}

std::optional<fault::GrayAction> grayAction(const DrillSpec& spec, std::int64_t drill_id,
                                            const fault::Peers& peers) {
  const auto& o = spec.options;
  const auto name = grayDrillName(drill_id);
  const std::chrono::seconds duration(o.duration_s);
  switch (spec.fault) {
    case FaultType::kIsolate: {
      fault::IsolateSpec isolate;
      isolate.drill = name;
      isolate.from = o.from;
      isolate.mode = o.mode;
      isolate.duration = duration;
      isolate.peers = peers;
      return isolate;
    }
    case FaultType::kThrottle: {
      fault::ThrottleSpec throttle;
      throttle.drill = name;
      throttle.bytes_per_second = o.rate_bytes_per_second;
      throttle.duration = duration;
      return throttle;
    }
    case FaultType::kDiskFull: {
      fault::DiskFullSpec fill;
      fill.drill = name;
      fill.duration = duration;
      return fill;
    }
    case FaultType::kDiskSlow:
      return fault::DiskSlowSpec{name, duration, o.rate_bytes_per_second};
    default:
      return std::nullopt;
  }
}

std::string injectionProblem(fault::Injector& injector, const DrillSpec& spec,
                             std::int64_t drill_id, const fault::Peers& peers) {
  const auto action = grayAction(spec, drill_id, peers);
  if (!action) return {};
  auto checked = injector.checkGray(*action);
  if (checked) return {};
  return injector.describe() + " cannot inject " + toString(spec.fault) + ": " +
         checked.error().message;
}

Result<fault::FaultRecord> injectFault(fault::Injector& injector, const DrillSpec& spec,
                                       std::int64_t drill_id, const fault::Peers& peers,
                                       const std::vector<std::string>& log_dirs) {
  const auto& o = spec.options;
  switch (spec.fault) {
    case FaultType::kKill:
      return injector.kill();
    case FaultType::kStop:
      return injector.stop(std::chrono::seconds(o.grace_s));
    case FaultType::kRestart:
      return o.kill ? injector.kill() : injector.stop(std::chrono::seconds(o.grace_s));
    case FaultType::kPause:
      return injector.pause({grayDrillName(drill_id), std::chrono::seconds(o.pause_s)});
    case FaultType::kIsolate:
    case FaultType::kThrottle:
    case FaultType::kDiskFull:
    case FaultType::kDiskSlow: {
      // The same spec the preflight checked (grayAction); the filler's directory is the
      // injector's (its placement), filled in there.
      auto action = *grayAction(spec, drill_id, peers);
      if (auto* fill = std::get_if<fault::DiskFullSpec>(&action)) fill->log_dirs = log_dirs;
      if (const auto* isolate = std::get_if<fault::IsolateSpec>(&action))
        return injector.isolate(*isolate);
      if (const auto* throttle = std::get_if<fault::ThrottleSpec>(&action))
        return injector.throttle(*throttle);
      if (const auto* fill = std::get_if<fault::DiskFullSpec>(&action))
        return injector.fillDisk(*fill);
      return injector.slowDisk(std::get<fault::DiskSlowSpec>(action));
    }
    // Never injected itself: each of its steps is a restart (rollingStep).
    case FaultType::kRollingRestart:
    // Never injected at all: the fault is someone else's (observed_run.h).
    case FaultType::kObserved:
      break;
  }
  return fault::faultError(fault::errc::unsupported, "unknown fault");
}

Result<fault::FaultRecord> undoFault(fault::Injector& injector, const DrillSpec& spec,
                                     std::int64_t drill_id) {
  if (spec.fault == FaultType::kPause) return injector.resume(grayDrillName(drill_id));
  return injector.heal(grayDrillName(drill_id));
}

std::string undoneEvent(FaultType fault) {
  return fault == FaultType::kPause ? "resumed" : "healed";
}

std::string undoVerb(FaultType fault) {
  return fault == FaultType::kPause ? "resume" : "heal";
}

std::optional<analysis::GrayFaultInput> grayInput(const DrillSpec& spec,
                                                  std::optional<std::int64_t> healed_us,
                                                  std::int64_t healed_uncertainty_us) {
  if (!isGrayFault(spec.fault)) return std::nullopt;
  analysis::GrayFaultInput in;
  in.kind = spec.fault == FaultType::kIsolate    ? common::GrayFault::kIsolate
            : spec.fault == FaultType::kThrottle ? common::GrayFault::kThrottle
                                                 : common::GrayFault::kDiskFull;
  if (spec.fault == FaultType::kIsolate) {
    in.from = fault::toString(spec.options.from);
    in.mode = fault::toString(spec.options.mode);
  }
  if (spec.fault == FaultType::kThrottle) {
    in.bytes_per_second = static_cast<std::int64_t>(spec.options.rate_bytes_per_second);
  }
  in.duration_us = holdUs(spec);
  in.healed_us = healed_us;
  in.healed_uncertainty_us = healed_uncertainty_us;
  return in;
}

}  // namespace kfaild::drill
