#pragma once

// What each fault is to the engine, in one place: how it is injected through the node's
// injector, whether it is held for a while and then undone (pause: resumed; gray faults:
// healed), what the recovery journal does to bring the node back, and whether the node is down
// while it lasts. run_execution.cc asks these questions and never switches on the fault itself.
//
// Pure except inject/undo, which call the injector (engine's thread only, like every injector
// call). faultRefusal() and the rest are thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "server/analysis/drill_analysis.h"
#include "server/common/result.h"
#include "server/config/config.h"
#include "server/drill/drill_spec.h"
#include "server/drill/peer_addresses.h"
#include "server/drill/seams.h"
#include "server/fault/injector.h"

namespace kfaild::drill {

// The recovery journal's action for the fault: "start" (kill, stop, restart), "resume" (pause),
// "heal" (gray faults: undo the drill's fault on the node, then start it if it is down).
std::string recoveryAction(FaultType fault);

// The node is down after the fault until recovery starts it: kill, stop, and disk_full (the
// broker shuts itself down when it cannot write its log).
bool nodeGoesDown(FaultType fault);

// How long the fault is held before it is undone (pause_s, duration_s); 0: not held.
std::int64_t holdUs(const DrillSpec& spec);

// The name a drill's gray faults carry on the node (nft table kfaild_d<name>, filler file).
std::string grayDrillName(std::int64_t drill_id);

// Why `spec` cannot be done on `node` (empty when it can), from the configuration alone, without
// touching anything: a pause of a command node without pause and resume commands, the
// injector's refusal of the gray fault, `from: quorum` or `from: brokers`
// on a controller, and an isolate or throttle of a node whose network namespace another
// inventory node shares (local: the same `netns`; ssh: the same host, by ssh.host or by an
// inventory address they share), since the rules would cut that node too and the guards count
// only the target. A peer without an address is peerRefusal's (peer_addresses.h): it needs the
// cluster's state.
std::string faultRefusal(const DrillSpec& spec, const config::NodeConfig& node,
                         const fault::Injector& injector,
                         const std::vector<config::NodeConfig>& inventory,
                         const NodeAddresses& addresses);

// The broker's log.dirs (log.dir when log.dirs is not set), as `node` reports them through
// DescribeConfigs, for a disk_full spec: what its filler must bring below the threshold. Empty
// for other faults and when the node does not answer (the filler then checks only its own
// filesystem, and accepts only a root-owned fill dir).
std::vector<std::string> logDirsFor(const DrillSpec& spec, ClusterAdmin& admin, std::int32_t node);

// The gray fault `spec` injects, as injectFault hands it to the injector; nullopt for the others.
std::optional<fault::GrayAction> grayAction(const DrillSpec& spec, std::int64_t drill_id,
                                            const fault::Peers& peers);

// Why the node's injector cannot inject `spec` as the node stands now (Injector::checkGray: the
// namespace entered, nft --check of the exact script, the fill dir), empty when it can or `spec`
// is not a gray fault. Touches nothing; the preflight refuses a drill with this reason.
std::string injectionProblem(fault::Injector& injector, const DrillSpec& spec,
                             std::int64_t drill_id, const fault::Peers& peers);

// Injects the fault. `drill_id` names a gray fault's rules and files on the node, and a pause's
// expiry timer (it thaws the node by itself pause_s + kExpiryMargin after); `log_dirs`
// (logDirsFor) go to a disk filler.
Result<fault::FaultRecord> injectFault(fault::Injector& injector, const DrillSpec& spec,
                                       std::int64_t drill_id, const fault::Peers& peers,
                                       const std::vector<std::string>& log_dirs = {});

// Ends a held fault (holdUs > 0): resumes a pause (and cancels its expiry timer), heals a gray
// fault.
Result<fault::FaultRecord> undoFault(fault::Injector& injector, const DrillSpec& spec,
                                     std::int64_t drill_id);
// The event recorded when undoFault succeeds ("resumed", "healed") and the verb of its failure.
std::string undoneEvent(FaultType fault);
std::string undoVerb(FaultType fault);

// What the analysis is told of a gray fault; nullopt for the others.
std::optional<analysis::GrayFaultInput> grayInput(const DrillSpec& spec,
                                                  std::optional<std::int64_t> healed_us,
                                                  std::int64_t healed_uncertainty_us = 0);

}  // namespace kfaild::drill
