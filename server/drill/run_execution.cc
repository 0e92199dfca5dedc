#include "server/drill/run_execution.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/common/json_text.h"
#include "server/drill/analysis_inputs.h"
#include "server/drill/event_log.h"
#include "server/fault/kafka_log.h"

namespace kfaild::drill {

using common::EventKind;
using common::EventSource;
using common::NodeRole;

namespace {

// An operation probe (control plane, commits, transactions) that is off, or answered after
// `since_us`.
template <typename Operation>
bool answeredSince(const std::optional<Operation>& s, std::int64_t since_us) {
  return !s || (s->last_ok && s->last_ok->wall > since_us);
}

constexpr std::int64_t kPollUs = 100'000;
constexpr std::int64_t kSecond = 1'000'000;

std::string partitionName(const std::string& topic, std::int32_t partition) {
  return topic + "-" + std::to_string(partition);
}

bool isController(const std::vector<config::NodeConfig>& inventory, std::int32_t node) {
  return std::any_of(inventory.begin(), inventory.end(), [node](const config::NodeConfig& n) {
    return n.id == node && n.role == NodeRole::kController;
  });
}

}  // namespace

std::vector<analysis::PartitionAtFault> partitionsOf(
    const kafka::ClusterSnapshot& snapshot, const std::map<std::string, std::int32_t>& min_insync) {
  std::vector<analysis::PartitionAtFault> out;
  for (const auto& t : snapshot.topics) {
    const auto min = min_insync.find(t.name);
    for (const auto& p : t.partitions) {
      out.push_back({t.name, p.partition, p.leader, p.replicas, p.isr,
                     min == min_insync.end() ? 0 : min->second});
    }
  }
  return out;
}

std::vector<storage::Event> profileEvents(const std::vector<storage::Event>& cluster,
                                          std::vector<storage::Event> stream) {
  for (const auto& e : cluster) {
    const auto source = storage::sourceOf(e);
    if (source != common::EventSource::kProbe && source != common::EventSource::kClient) {
      stream.push_back(e);
    }
  }
  std::sort(stream.begin(), stream.end(), [](const auto& a, const auto& b) {
    return std::pair(a.t_us, a.id) < std::pair(b.t_us, b.id);
  });
  return stream;
}

ProbeSnapshotAtFault probeSnapshot(const EngineDeps& deps) {
  return probeSnapshot(deps.probe, deps.clock);
}

ProbeSnapshotAtFault probeSnapshot(const ProbeView& view, const common::Clock& clock) {
  const auto status = view.status();
  ProbeSnapshotAtFault probe;
  const auto now = clock.monoNow();
  for (const auto& p : status.partitions) {
    analysis::ProbeAtFault f;
    f.topic = p.topic;
    f.partition = p.partition;
    f.outstanding = static_cast<std::int64_t>(p.outstanding);
    if (p.oldest_outstanding_sent)
      f.oldest_outstanding_age_us = now - p.oldest_outstanding_sent->mono;
    f.holding = p.holding_since.has_value();
    f.held_ticks = static_cast<std::int64_t>(p.counters.held_ticks);
    probe.partitions.push_back(std::move(f));
  }
  probe.skipped_ticks = status.skipped_ticks;
  probe.max_send_lateness_us = status.max_send_lateness_us;
  probe.clock_steps = clock.steps();
  return probe;
}

RunExecution::RunExecution(RunParts parts, storage::DrillRecord& drill, const DrillSpec& spec,
                           int run)
    : parts_(parts), deps_(parts.deps), drill_(drill), spec_(spec) {
  outcome_.run = run;
  outcome_.fault = spec.fault;
  if (!deps_.profiles.empty()) {
    outcome_.profile = deps_.cluster.probe.profiles.front().name;
    outcome_.profile_client = config::toString(deps_.cluster.probe.profiles.front().client);
  }
  for (const auto& p : deps_.profiles) {
    outcome_.profiles.push_back({.profile = p.profile.name,
                                 .client = config::toString(p.profile.client),
                                 .probe_at_fault = std::nullopt,
                                 .probe_client = std::nullopt,
                                 .analysis = std::nullopt,
                                 .problem = "the run ended before its analysis"});
  }
  if (spec.then) {
    second_spec_ = secondSpec(spec);
    SecondFaultOutcome second;
    second.fault = spec.then->fault;
    second.after_s = spec.then->after_s;
    second.reason = "the run ended before the second fault's moment";
    outcome_.second_fault = std::move(second);
  }
}

RunOutcome RunExecution::execute() {
  // Whatever way the run ends, the control probe routes through every node again.
  struct Steering {
    const ProbeView& probe;
    ~Steering() { probe.steerAround({}); }
  } steering{deps_.probe};
  if (!preflight() || !baseline() || !atFault() || !inject()) return outcome_;
  if (injected_) observe();
  if (!recover()) return outcome_;
  if (injected_ && failure_.empty()) observeOffline();
  outcome_.window_end_us = window_end_us_;
  // A step of the wall clock anywhere in the window shifts the times on one side of it against
  // the other: the analysis is told (every outcome inconclusive), checked here at the window's
  // end rather than only at the fault.
  outcome_.clock_steps_in_window = deps_.clock.steps() - steps_at_baseline_;
  outcome_.clock_drift_us = deps_.clock.largestDrift(baseline_start_us_, window_end_us_);
  if (injected_) collectBrokerLogs();
  if (!failure_.empty()) {
    end(injected_ ? failure_state_ : DrillState::kFailed, failure_);
    return outcome_;
  }
  if (spec_.options.preferred_election) {
    elect();
    if (interrupted()) {
      end(DrillState::kAborted, interruption("elect"));
      return outcome_;
    }
  }
  analyse();
  return outcome_;
}

bool RunExecution::end(DrillState state, const std::string& reason) {
  outcome_.state = state;
  outcome_.reason = reason;
  return false;
}

bool RunExecution::stopping() const {
  return parts_.worker.stopRequested();
}

bool RunExecution::interrupted() const {
  return stopping() || parts_.queue.abortRequested();
}

std::string RunExecution::interruption(const char* phase) const {
  return std::string(stopping() ? "kfaild stopped during " : "aborted on request during ") + phase;
}

void RunExecution::setState(DrillState state, const std::string& reason) {
  parts_.records.setState(drill_, state, reason);
}

bool RunExecution::prepareTarget(bool after_election) {
  // A random target is drawn once per run; a named node is what it is. Whom leader_of and
  // controller name depends on the cluster's state, read again each time.
  const bool follows_cluster = spec_.target.kind == TargetKind::kLeaderOf ||
                               spec_.target.kind == TargetKind::kController ||
                               spec_.target.kind == TargetKind::kCoordinatorOf;
  // The quorum as it is now, not as the poller last described it (up to 2 s ago): whom a
  // controller target names, and, for a fault on a controller, whether the other voters are
  // caught up (a voter just brought back by the previous run's recovery was caught up by then,
  // but the poller's older description did not show it yet: a run refused on the lab).
  std::optional<kafka::QuorumInfo> fresh_quorum;
  std::string fresh_quorum_error;
  const auto describeQuorumNow = [&] {
    if (auto quorum = deps_.admin.describeQuorum(); quorum) {
      fresh_quorum = std::move(*quorum);
    } else {
      fresh_quorum_error = quorum.error().describe();
    }
  };
  if (!after_election || follows_cluster) {
    auto observed = deps_.view.latest();
    if (spec_.target.kind == TargetKind::kController) {
      describeQuorumNow();
      if (fresh_quorum) {
        observed.quorum = *fresh_quorum;
      } else {
        observed.quorum.reset();
        observed.quorum_error = fresh_quorum_error;
      }
    }
    auto resolved = resolveTargetOn(deps_, spec_.target, observed);
    if (!resolved) {
      return end(DrillState::kFailed, (after_election ? "after the preflight election: " : "") +
                                          resolved.error().message);
    }
    if (after_election) {
      outcome_.target_resolution->after_election = resolved->node;
      outcome_.target_resolution->how = resolved->how;
    } else {
      outcome_.target_resolution =
          TargetResolution{resolved->how, resolved->node, std::nullopt, std::nullopt};
    }
    target_ = resolved->node;
    outcome_.target = target_;
  }
  auto facts = parts_.guards.read();
  const auto target_node =
      std::find_if(deps_.cluster.inventory.begin(), deps_.cluster.inventory.end(),
                   [this](const config::NodeConfig& n) { return n.id == target_; });
  if (!fresh_quorum && fresh_quorum_error.empty() && target_node != deps_.cluster.inventory.end() &&
      target_node->role == NodeRole::kController) {
    describeQuorumNow();
  }
  if (fresh_quorum) {
    facts.quorum = *fresh_quorum;
    facts.quorum_problem.reset();
  }
  if (auto reason = checkWithFacts(parts_.guards.base(target_, spec_), facts,
                                   parts_.recovery.openProblem(drill_.id))) {
    return end(
        DrillState::kFailed,
        std::string(after_election ? "refused after the preflight election: " : "refused: ") +
            *reason);
  }
  // The injection itself must be able to run (the peers' addresses, the namespace entered, nft's
  // check of the exact script, sudo, the fill dir): a drill that cannot inject is refused here,
  // not half-run.
  const PeerSources cluster{facts.all ? facts.all->brokers : std::vector<kafka::BrokerInfo>{},
                            facts.quorum, facts.quorum_problem.value_or("")};
  if (auto reason = injectionRefusal(spec_, target_, cluster, peers_); !reason.empty()) {
    return end(
        DrillState::kFailed,
        std::string(after_election ? "refused after the preflight election: " : "refused: ") +
            reason);
  }
  auto& injector = deps_.injectors.at(target_);
  min_insync_at_preflight_ = facts.min_insync;
  quorum_at_preflight_ = facts.quorum;
  quorum_problem_at_preflight_ = facts.quorum_problem;
  // The way to the node must work before it is touched: a fault kfaild could not undo is worse
  // than no drill.
  if (auto state = injector->inspect(); !state) {
    return end(DrillState::kFailed, "node " + std::to_string(target_) + " cannot be reached (" +
                                        injector->describe() + "): " + state.error().describe());
  }
  return true;
}

std::string RunExecution::injectionRefusal(const DrillSpec& spec, std::int32_t node,
                                           const PeerSources& cluster, fault::Peers& peers) {
  auto& injector = *deps_.injectors.at(node);
  for (const auto& n : deps_.cluster.inventory) {
    if (n.id != node) continue;
    if (auto reason = faultRefusal(spec, n, injector, deps_.cluster.inventory, parts_.addresses);
        !reason.empty()) {
      return reason;
    }
  }
  // Only an isolate's rules name peers: a name service that is slow to answer delays no other
  // fault.
  peers = {};
  if (spec.fault == FaultType::kIsolate) {
    const auto found =
        peersOf(node, cluster, deps_.cluster.inventory, parts_.addresses, parts_.resolve);
    if (auto hole = peerRefusal(spec, node, found); !hole.empty()) return hole;
    peers = found.peers;
  }
  return injectionProblem(injector, spec, drill_.id, peers);
}

bool RunExecution::preflight() {
  setState(DrillState::kPreflight);
  if (!prepareTarget(false)) return false;
  // Every run starts from the leadership the topics were designed with: after a restart of the
  // cluster one broker may lead everything, and the drill would never see a follower. The target
  // and its guards are settled again after it: the election may have moved the leader a
  // leader_of target names.
  if (spec_.options.preflight_election) {
    if (auto moved = notOnPreferredLeader(); !moved.empty()) {
      setState(DrillState::kPreflight, "moving leadership back to the preferred replicas first");
      outcome_.preflight_election = electPreferred(moved);
      // The producer follows the moved leaders within moments; the baseline starts once every
      // partition acks and reads back again, so that the move is not counted as noise.
      awaitProbeSettled(deps_.clock.wallNow());
      drill_.reason.clear();
      parts_.records.persist(drill_);
      if (interrupted()) return end(DrillState::kAborted, interruption("preflight"));
      if (!prepareTarget(true)) return false;
    }
  }
  if (interrupted()) return end(DrillState::kAborted, interruption("preflight"));
  // What the cluster is set to, for the expectations (how long until fencing, until an ISR
  // shrink): read where each setting is in force, never assumed where it can be read.
  std::vector<std::int32_t> brokers;
  std::int32_t heartbeat_from = -1;
  if (const auto observed = deps_.view.latest(); observed.snapshot) {
    for (const auto& b : observed.snapshot->brokers) {
      brokers.push_back(b.id);
      if (b.id == target_ || heartbeat_from < 0) heartbeat_from = b.id;
    }
  }
  outcome_.cluster_settings = readClusterSettings(deps_.admin, brokers, heartbeat_from);
  if (interrupted()) return end(DrillState::kAborted, interruption("preflight"));
  if (second_spec_ && !prepareSecond()) return false;
  return true;
}

bool RunExecution::prepareSecond() {
  // Named now only to refuse at once what cannot work (a target naming no node, or the first
  // fault's, a node kfaild cannot reach); whom it names is settled at its moment.
  auto observed = deps_.view.latest();
  if (second_spec_->target.kind == TargetKind::kController) {
    if (auto quorum = deps_.admin.describeQuorum(); quorum) observed.quorum = std::move(*quorum);
  }
  auto resolved = resolveTargetOn(deps_, second_spec_->target, observed);
  if (!resolved) return end(DrillState::kFailed, "then: " + resolved.error().message);
  const auto node = resolved->node;
  if (node == target_) {
    return end(DrillState::kFailed, "then: the second fault's target names node " +
                                        std::to_string(node) + ", the first fault's");
  }
  outcome_.second_fault->preflight_target = node;
  auto& injector = deps_.injectors.at(node);
  for (const auto& n : deps_.cluster.inventory) {
    if (n.id != node) continue;
    if (auto reason =
            faultRefusal(*second_spec_, n, *injector, deps_.cluster.inventory, parts_.addresses);
        !reason.empty()) {
      return end(DrillState::kFailed, "then: refused: " + reason);
    }
  }
  if (auto state = injector->inspect(); !state) {
    return end(DrillState::kFailed, "then: node " + std::to_string(node) + " cannot be reached (" +
                                        injector->describe() + "): " + state.error().describe());
  }
  return true;
}

bool RunExecution::baseline() {
  setState(DrillState::kBaseline);
  // The control probe's route leaves the target now, not at the fault: a check sent through it
  // just before the fault would wait out its timeout and show a control-plane stall of the
  // client's making. A baseline gives the probe's loop time to steer between two checks.
  deps_.probe.steerAround({target_});
  steps_at_baseline_ = deps_.clock.steps();
  baseline_start_us_ = deps_.clock.wallNow();
  outcome_.baseline_start_us = baseline_start_us_;
  if (!parts_.queue.sleep(spec_.options.baseline_s * kSecond))
    return end(DrillState::kAborted, interruption("baseline"));
  return true;
}

bool RunExecution::atFault() {
  // Roles come from metadata at most two poll intervals old; the guards are asked again now,
  // right before the fault, on what kfaild keeps fresh (the poller's metadata of the probe
  // topics, the probe's own state), and the probe's state at this moment goes with the result.
  // Every other topic was checked at preflight. The quorum is the poller's latest, or
  // preflight's when the poller's last describe failed.
  const auto max_age =
      std::max<std::int64_t>(2 * deps_.cluster.observe.metadata_interval_us, 500'000);
  const auto observed = freshSnapshot(max_age);
  if (!observed) {
    if (interrupted()) return end(DrillState::kAborted, interruption("baseline"));
    return end(DrillState::kFailed,
               "refused at the fault: no metadata younger than " + std::to_string(max_age / 1000) +
                   " ms (the cluster does not answer); the node was not touched");
  }
  const auto& snapshot = *observed->snapshot;
  // The node the target names now must be the one the run was prepared on (its guards, its
  // injector's check, the baseline): a target that moved is refused, never silently changed.
  if (spec_.target.kind == TargetKind::kLeaderOf || spec_.target.kind == TargetKind::kController ||
      spec_.target.kind == TargetKind::kCoordinatorOf) {
    auto now = resolveTargetOn(deps_, spec_.target, *observed);
    if (!now)
      return end(DrillState::kFailed,
                 "refused at the fault: " + now.error().message + "; the node was not touched");
    outcome_.target_resolution->at_fault = now->node;
    if (now->node != target_) {
      return end(DrillState::kFailed, "refused at the fault: the target moved from node " +
                                          std::to_string(target_) + " to node " +
                                          std::to_string(now->node) + " (" + now->how +
                                          ") since preflight; the node was not touched");
    }
  } else {
    outcome_.target_resolution->at_fault = target_;
  }
  auto in = parts_.guards.base(target_, spec_);
  in.cluster = &snapshot;
  in.min_insync = min_insync_at_preflight_;
  if (observed->quorum) {
    in.quorum = &*observed->quorum;
  } else if (quorum_at_preflight_) {
    in.quorum = &*quorum_at_preflight_;
  } else {
    in.quorum_problem = quorum_problem_at_preflight_;
  }
  auto reason = parts_.recovery.openProblem(drill_.id);
  if (!reason) reason = checkGuards(in);
  if (reason)
    return end(DrillState::kFailed,
               "refused at the fault: " + *reason + "; the node was not touched");

  LeadershipAtFault leadership;
  leadership.observed_at_us = observed->snapshot_at;
  at_fault_ = partitionsOf(snapshot, min_insync_at_preflight_);
  leadership.partitions = at_fault_;
  outcome_.leadership_at_fault = std::move(leadership);

  outcome_.probe_at_fault = probeNow();
  outcome_.probe_client = deps_.probe.status().client_settings;
  for (std::size_t i = 0; i < deps_.profiles.size(); ++i) {
    auto& profile = outcome_.profiles[i];
    profile.probe_at_fault = probeSnapshot(*deps_.profiles[i].probe, deps_.clock);
    profile.probe_client = deps_.profiles[i].probe->status().client_settings;
  }
  awaitWhatDependsOn(target_, spec_.fault, at_fault_, in.quorum);
  sortByRecovery(target_, spec_.fault, at_fault_);
  return true;
}

ProbeSnapshotAtFault RunExecution::probeNow() const {
  return probeSnapshot(deps_);
}

bool RunExecution::quorumLostWithout(std::int32_t node, const kafka::QuorumInfo* quorum,
                                     std::int32_t also_down) const {
  if (quorum != nullptr) {
    if (!quorum->isVoter(node)) return false;
    auto impact = quorumImpactOfLosing(node, *quorum);
    std::erase(impact.caught_up_without, also_down);
    return !impact.keepsMajority();
  }
  // Undescribed: the inventory's dedicated controllers stand for the voters.
  std::size_t controllers = 0, left = 0;
  for (const auto& n : deps_.cluster.inventory) {
    if (n.role != NodeRole::kController) continue;
    ++controllers;
    if (n.id != node && n.id != also_down) ++left;
  }
  return controllers > 0 && left < controllers / 2 + 1;
}

void RunExecution::awaitWhatDependsOn(std::int32_t node, FaultType fault,
                                      const std::vector<analysis::PartitionAtFault>& partitions,
                                      const kafka::QuorumInfo* quorum, std::int32_t also_down) {
  const auto status = deps_.probe.status();
  if (status.control && isController(deps_.cluster.inventory, node)) {
    if (nodeGoesDown(fault) && quorumLostWithout(node, quorum, also_down)) {
      // Nothing answers until the node is back: waiting would only keep the cluster without a
      // controller until observe_timeout_s.
      control_offline_ = true;
      await_control_ = false;
    } else if (!control_offline_) {
      await_control_ = true;
    }
  }
  if (!status.coordinators) return;
  const auto& c = *status.coordinators;
  if (c.commits && c.group_coordinator && c.group_coordinator->node == node) await_commits_ = true;
  if (c.transactions && c.transaction_coordinator && c.transaction_coordinator->node == node)
    await_transactions_ = true;
  // The transactions write to the first probe topic's partition 0: its leader's death stalls
  // them too.
  if (c.transactions && !deps_.cluster.probe.topics.empty()) {
    for (const auto& p : partitions) {
      if (p.topic == deps_.cluster.probe.topics.front().name && p.partition == 0 &&
          p.leader == node) {
        await_transactions_ = true;
      }
    }
  }
}

void RunExecution::sortByRecovery(std::int32_t node, FaultType fault,
                                  const std::vector<analysis::PartitionAtFault>& partitions) {
  // Partitions whose only in-sync replica is the node, or whose ISR without it is below
  // min.insync.replicas, cannot recover (take acks=all writes) while it is down: the observation
  // does not wait for them, the node is brought back, and their outage is measured to their
  // first ack after that.
  const bool node_stays_down = nodeGoesDown(fault);
  for (const auto& p : partitions) {
    const auto role = analysis::roleOf(node, p);
    const bool sole = node_stays_down && (role == analysis::Role::kSoleReplica ||
                                          role == analysis::Role::kBelowMinIsr);
    const auto name = partitionName(p.topic, p.partition);
    if (sole) {
      offline_.insert(name);
      recoverable_.erase(name);
    } else if (!offline_.count(name)) {
      recoverable_.insert(name);
    }
  }
}

bool RunExecution::inject() {
  setState(DrillState::kInject);
  if (interrupted())
    return end(DrillState::kAborted, interruption("inject") + "; the node was not touched");
  // Durable before the fault, with where a gray fault goes: a kfaild that dies with it in force
  // undoes exactly that at its next start.
  auto& injector = deps_.injectors.at(target_);
  const auto place =
      isGrayFault(spec_.fault) ? injector->grayPlace(grayDrillName(drill_.id)) : fault::GrayPlace{};
  auto journal = parts_.recovery.open(drill_.id, target_, recoveryAction(spec_.fault), place);
  if (!journal)
    return end(DrillState::kFailed,
               "cannot write the recovery journal: " + journal.error().describe());
  journal_ = std::move(*journal);

  auto record =
      injectFault(*injector, spec_, drill_.id, peers_, logDirsFor(spec_, deps_.admin, target_));
  injected_ = record.ok();
  // A failed injection placed nothing: recovery then heals nothing, and only makes sure the node
  // runs.
  parts_.recovery.injected(*journal_, injected_);
  fault_us_ = deps_.clock.wallNow();
  if (injected_) {
    fault_us_ = record->faultTime();
    FaultInjected fault{record->requested_at,
                        fault_us_,
                        record->fault_at ? record->fault_time_source : "requested",
                        record->detail,
                        record->uncertainty_us,
                        record->clock_offset_us};
    recordEvent(deps_, EventSource::kInjector, EventKind::kFault, fault_us_, target_,
                {{"fault", toString(spec_.fault)},
                 {"requested_us", fault.requested_us},
                 {"time_source", fault.time_source},
                 {"detail", fault.detail},
                 {"drill", drill_.id},
                 {"run", outcome_.run}});
    outcome_.fault_injected = std::move(fault);
  } else {
    failure_ = "injecting " + std::string(toString(spec_.fault)) + " into node " +
               std::to_string(target_) + " failed: " + record.error().describe();
  }
  observe_end_us_ = deps_.clock.wallNow();
  return true;
}

void RunExecution::observe() {
  auto& injector = deps_.injectors.at(target_);
  const auto hold = holdUs(spec_);
  if (hold > 0) {
    // Held for its time, then undone at once, also on an abort or a stop.
    const bool full = parts_.queue.sleep(hold);
    auto undone = undoFault(*injector, spec_, drill_.id);
    if (undone) {
      // When the heal took effect (kfaild-gray's window, on the node's clock placed on kfaild's),
      // not when kfaild asked for it: over ssh the two are a connection apart.
      undone_us_ = undone->faultTime();
      undone_uncertainty_us_ = undone->uncertainty_us;
      nlohmann::json detail = {
          {"held_s", static_cast<double>(hold) / kSecond},
          {"drill", drill_.id},
          {"run", outcome_.run},
          {"detail", undone->detail},
          {"requested_us", undone->requested_at},
          {"uncertainty_us", undone->uncertainty_us},
          {"time_source", undone->fault_at ? undone->fault_time_source : "requested"}};
      if (spec_.fault == FaultType::kPause) detail = {{"paused_s", spec_.options.pause_s}};
      recordEvent(deps_, EventSource::kInjector, undoneEvent(spec_.fault), *undone_us_, target_,
                  detail);
    } else {
      actionFailed(undoVerb(spec_.fault), undone.error().describe());
    }
    if (!full && failure_.empty()) {
      const auto held = spec_.fault == FaultType::kPause
                            ? std::string("the pause")
                            : "the " + std::string(toString(spec_.fault));
      failure_ = interruption(held.c_str());
    }
  }
  if (spec_.fault == FaultType::kRestart && !interrupted()) {
    auto started = injector->start();
    if (started) {
      recordEvent(deps_, EventSource::kInjector, EventKind::kStarted, started->requested_at,
                  target_, {{"restart", true}});
    } else {
      actionFailed("start", started.error().describe());
    }
  }
  if (failure_.empty()) {
    setState(DrillState::kObserve);
    journal_->phase = "observe";
    parts_.recovery.save(*journal_);
    if (second_spec_) secondFault();
  }
  if (failure_.empty()) {
    // A compound drill is observed from its second fault: the probes resume after both.
    const auto since = second_journal_ ? second_fault_us_ : fault_us_;
    const auto settle_from = std::max(fault_us_ + hold, since);
    const auto started_mono = deps_.clock.monoNow();
    const auto timeout = spec_.options.observe_timeout_s * kSecond;
    bool resumed = false;
    while (deps_.clock.monoNow() - started_mono < timeout) {
      if (deps_.clock.wallNow() - settle_from >= spec_.options.observe_min_s * kSecond &&
          resumedAfter(deps_.probe.status(), since)) {
        resumed = true;
        break;
      }
      if (!parts_.queue.sleep(kPollUs)) break;
    }
    if (resumed && (await_commits_ || await_transactions_)) {
      // The streams resumed on a coordinator their own clients found; the watch asks
      // FindCoordinator only every watch interval, and a move it has not seen yet would fall
      // outside the window and the run would report no move (256934e). One more answer of the
      // watch, bounded by its round.
      const auto resumed_at = deps_.clock.wallNow();
      const auto& cc = deps_.cluster.probe.coordinators;
      const auto bound = deps_.clock.monoNow() + cc.watch_interval_us + cc.timeout_us;
      while (!watchAnsweredSince(deps_.probe.status(), resumed_at) &&
             deps_.clock.monoNow() < bound && parts_.queue.sleep(kPollUs)) {
      }
    }
    if (interrupted()) {
      failure_ = interruption("observe");
    } else if (!resumed) {
      outcome_.observe_timed_out = true;
    }
    observe_end_us_ = deps_.clock.wallNow();
  }
}

void RunExecution::secondFault() {
  auto& second = *outcome_.second_fault;
  const auto waited = [&] {
    second.reason = interruption("the wait for the second fault");
    failure_ = second.reason;
  };
  if (const auto wait = fault_us_ + second.after_s * kSecond - deps_.clock.wallNow();
      wait > 0 && !parts_.queue.sleep(wait)) {
    return waited();
  }
  // As at the first fault: fresh metadata, the target resolved on it, the guards asked on it.
  const auto max_age =
      std::max<std::int64_t>(2 * deps_.cluster.observe.metadata_interval_us, 500'000);
  auto observed = freshSnapshot(max_age);
  if (!observed) {
    if (interrupted()) return waited();
    refuseSecond("no metadata younger than " + std::to_string(max_age / 1000) +
                 " ms (the cluster does not answer)");
    return;
  }
  // The quorum as it is now when a controller is named (the poller's may be 2 s old, from
  // before the first fault).
  bool described = false;
  const auto describeNow = [&] {
    described = true;
    if (auto quorum = deps_.admin.describeQuorum(); quorum) {
      observed->quorum = std::move(*quorum);
    } else {
      observed->quorum.reset();
      observed->quorum_error = quorum.error().describe();
    }
  };
  if (second_spec_->target.kind == TargetKind::kController) describeNow();
  auto resolved = resolveTargetOn(deps_, second_spec_->target, *observed);
  if (!resolved) {
    refuseSecond(resolved.error().message);
    return;
  }
  second_target_ = resolved->node;
  second.target = second_target_;
  second.how = resolved->how;
  if (!described && isController(deps_.cluster.inventory, second_target_)) describeNow();
  const bool first_down = nodeGoesDown(spec_.fault);
  const auto cluster = first_down ? withoutNode(*observed->snapshot, target_) : *observed->snapshot;
  auto in = parts_.guards.base(second_target_, *second_spec_);
  in.cluster = &cluster;
  in.min_insync = min_insync_at_preflight_;
  if (observed->quorum) {
    in.quorum = &*observed->quorum;
  } else {
    in.quorum_problem =
        observed->quorum_error.empty() ? std::string("not described yet") : observed->quorum_error;
  }
  auto reason = checkSecondFault(in, target_, first_down);
  fault::Peers peers;
  if (!reason) {
    const PeerSources now{observed->snapshot->brokers, observed->quorum, observed->quorum_error};
    if (auto refusal = injectionRefusal(*second_spec_, second_target_, now, peers);
        !refusal.empty())
      reason = refusal;
  }
  if (reason) {
    refuseSecond(*reason);
    return;
  }
  injectSecond(peers, cluster, in.quorum, observed->snapshot_at);
}

// The second fault, guarded: its journal entry, what the run looked like at this moment, the
// injection and what the observation waits for after it.
void RunExecution::injectSecond(const fault::Peers& peers, const kafka::ClusterSnapshot& cluster,
                                const kafka::QuorumInfo* quorum, std::int64_t observed_at_us) {
  auto& second = *outcome_.second_fault;
  auto& injector = deps_.injectors.at(second_target_);
  const auto place = isGrayFault(second_spec_->fault)
                         ? injector->grayPlace(grayDrillName(drill_.id))
                         : fault::GrayPlace{};
  auto journal =
      parts_.recovery.open(drill_.id, second_target_, recoveryAction(second_spec_->fault), place);
  if (!journal) {
    refuseSecond("cannot write the recovery journal: " + journal.error().describe());
    return;
  }
  second_journal_ = std::move(*journal);
  second_journal_->phase = "observe";
  parts_.recovery.save(*second_journal_);

  // What the run looked like at this moment: the partitions with the first node out of their
  // ISRs, the probe's state (a partition the first fault stalled lags here: its figure at the
  // second fault is inconclusive).
  LeadershipAtFault leadership;
  leadership.observed_at_us = observed_at_us;
  at_second_fault_ = partitionsOf(cluster, min_insync_at_preflight_);
  leadership.partitions = at_second_fault_;
  second.leadership_at_fault = std::move(leadership);
  second.probe_at_fault = probeNow();

  deps_.probe.steerAround({target_, second_target_});
  auto record = injectFault(*injector, *second_spec_, drill_.id, peers,
                            logDirsFor(*second_spec_, deps_.admin, second_target_));
  second_fault_us_ = deps_.clock.wallNow();
  parts_.recovery.injected(*second_journal_, record.ok());
  if (!record) {
    second.state = "failed";
    second.reason = record.error().describe();
    failure_ = "injecting the second fault (" + std::string(toString(second_spec_->fault)) +
               ") into node " + std::to_string(second_target_) + " failed: " + second.reason;
    failure_state_ = DrillState::kFailed;
    return;
  }
  second_fault_us_ = record->faultTime();
  FaultInjected fault{record->requested_at,
                      second_fault_us_,
                      record->fault_at ? record->fault_time_source : "requested",
                      record->detail,
                      record->uncertainty_us,
                      record->clock_offset_us};
  recordEvent(deps_, EventSource::kInjector, EventKind::kFault, second_fault_us_, second_target_,
              {{"fault", toString(second_spec_->fault)},
               {"requested_us", fault.requested_us},
               {"time_source", fault.time_source},
               {"detail", fault.detail},
               {"drill", drill_.id},
               {"run", outcome_.run},
               {"second", true},
               {"after_s", second.after_s}});
  second.fault_injected = std::move(fault);
  second.state = "injected";
  second.reason.clear();
  awaitWhatDependsOn(second_target_, second_spec_->fault, at_second_fault_, quorum,
                     nodeGoesDown(spec_.fault) ? target_ : -1);
  sortByRecovery(second_target_, second_spec_->fault, at_second_fault_);
}

bool RunExecution::refuseSecond(const std::string& why) {
  auto& second = *outcome_.second_fault;
  second.state = "refused";
  second.reason = why;
  failure_ = "the second fault was refused: " + why + "; its node was not touched";
  failure_state_ = DrillState::kFailed;
  recordEvent(deps_, EventSource::kKfaild, EventKind::kSecondFaultRefused, deps_.clock.wallNow(),
              second_target_ >= 0 ? std::optional<std::int32_t>(second_target_) : std::nullopt,
              {{"drill", drill_.id}, {"run", outcome_.run}, {"reason", why}});
  return false;
}

void RunExecution::actionFailed(const std::string& action, const std::string& error) {
  // The node stays paused (stopped, faulted) while the observation would wait for it: what it
  // would measure is kfaild's failure, not the cluster's. The run fails; recovery retries it.
  recordEvent(deps_, EventSource::kInjector, action + "_failed", deps_.clock.wallNow(), target_,
              {{"drill", drill_.id}, {"run", outcome_.run}, {"error", error}});
  const auto verb = action == "resume" ? "resuming" : action == "heal" ? "healing" : "starting";
  failure_ = std::string(verb) + " node " + std::to_string(target_) + " after the " +
             toString(spec_.fault) + " failed: " + error;
  failure_state_ = DrillState::kFailed;
}

bool RunExecution::recover() {
  outcome_.observe_end_us = observe_end_us_;
  setState(DrillState::kRecover);
  // Every node the run took down comes back, each tried even when another could not be (its
  // entry then stays open and is retried between drills); controllers first.
  std::vector<std::int32_t> down{target_};
  if (second_journal_) down.push_back(second_target_);
  const auto order = recoveryOrder(down, deps_.cluster.inventory);
  if (second_journal_) outcome_.recovery_order = order;
  std::string not_back;
  for (const auto node : order) {
    const bool first = node == target_;
    RecoveryReport report;
    auto error = bringBack(node, first ? *journal_ : *second_journal_, report);
    if (first) {
      outcome_.recovery = std::move(report);
    } else {
      outcome_.second_fault->recovery = std::move(report);
    }
    if (error) {
      not_back += (not_back.empty() ? "" : "; ") + *error;
      continue;
    }
    const auto done = *(first ? journal_ : second_journal_)->done_us;
    if (first) {
      outcome_.recovered_us = done;
    } else {
      outcome_.second_fault->recovered_us = done;
    }
    recovered_us_ = std::max(recovered_us_, done);
  }
  if (!not_back.empty()) {
    // Left open: the engine keeps trying between drills and refuses new ones meanwhile.
    parts_.recovery.scheduleRetry(NodeRecovery::kFirstRetryUs);
    return end(DrillState::kFailed,
               (failure_.empty() ? "" : failure_ + "; ") + not_back +
                   " (kfaild keeps retrying every 30 s to 5 min; drills on this cluster are "
                   "refused until it is back)");
  }
  window_end_us_ = observe_end_us_;
  return true;
}

std::optional<std::string> RunExecution::bringBack(std::int32_t node,
                                                   storage::RecoveryEntry& journal,
                                                   RecoveryReport& report) {
  journal.phase = "recover";
  parts_.recovery.save(journal);
  // Each failed attempt is reported where a reader looks: the drill's reason while it recovers,
  // the journal, an event.
  auto recovered = parts_.recovery.bringBack(
      journal, spec_.options.recover_timeout_s * kSecond,
      [&](int attempt, const std::string& error, std::int64_t retry_in_us) {
        const auto now = deps_.clock.wallNow();
        journal.attempts = attempt;
        journal.last_error = error;
        parts_.recovery.save(journal);
        if (report.errors.size() < 20) report.errors.push_back({attempt, now, error});
        recordEvent(deps_, EventSource::kKfaild, EventKind::kRecoveryRetry, now, node,
                    {{"drill", drill_.id},
                     {"run", outcome_.run},
                     {"attempt", attempt},
                     {"error", error},
                     {"retry_in_s", static_cast<double>(retry_in_us) / kSecond}});
        setState(DrillState::kRecover, "recovering node " + std::to_string(node) + ": attempt " +
                                           std::to_string(attempt) + " failed (" + error +
                                           "); retrying in " +
                                           std::to_string(retry_in_us / kSecond) + " s");
      });
  journal.attempts += 1;
  report.attempts = journal.attempts;
  const bool retried = !report.errors.empty();
  if (!recovered) {
    journal.last_error = recovered.error().message;
    parts_.recovery.save(journal);
    return recovered.error().message;
  }
  journal.done_us = deps_.clock.wallNow();
  parts_.recovery.save(journal);
  if (retried) {
    drill_.reason.clear();
    parts_.records.persist(drill_);
  }
  recordEvent(deps_, EventSource::kInjector, EventKind::kRecovered, *journal.done_us, node,
              {{"drill", drill_.id}, {"run", outcome_.run}});
  return std::nullopt;
}

void RunExecution::observeOffline() {
  // The offline partitions' outage ends at their first ack (and receipt) after the node is back;
  // a control plane the fault took down, at its first answer after that.
  if (offline_.empty() && !control_offline_) return;
  const auto deadline = deps_.clock.monoNow() + spec_.options.observe_timeout_s * kSecond;
  const auto isBack = [&] {
    const auto status = deps_.probe.status();
    return probesResumed(status, recovered_us_, offline_) &&
           (!control_offline_ || answeredSince(status.control, recovered_us_));
  };
  bool back = false;
  while (!(back = isBack()) && deps_.clock.monoNow() < deadline && parts_.queue.sleep(kPollUs)) {
  }
  if (!back) outcome_.offline_timed_out = true;
  window_end_us_ = deps_.clock.wallNow();
}

void RunExecution::elect() {
  setState(DrillState::kElect);
  std::vector<kafka::TopicPartition> partitions;
  for (const auto& p : at_fault_) partitions.push_back({p.topic, p.partition});
  const bool moves = !notOnPreferredLeader().empty();
  const auto election = electPreferred(partitions);
  if (election.error) {
    outcome_.election_error = *election.error;
  } else {
    outcome_.preferred_leaders_restored = election.preferred;
    // As after the preflight election: the run ends once the probe has followed the moved
    // leaders, so that the next run or drill is not refused on the move ("orders-0 has had no ack
    // for 1.0 s" when a drill was submitted right after the last one ended).
    if (election.preferred && moves) awaitProbeSettled(deps_.clock.wallNow());
  }
}

void RunExecution::awaitProbeSettled(std::int64_t elected_us) {
  // The producer follows moved leaders within moments; every partition must ack and read back
  // again after the move (a second after it: what was in flight to an old leader is retried).
  std::set<std::string> all;
  for (const auto& p : deps_.probe.status().partitions)
    all.insert(partitionName(p.topic, p.partition));
  const auto deadline = deps_.clock.monoNow() + 30 * kSecond;
  while (!probeSettled(elected_us + kSecond, all) && deps_.clock.monoNow() < deadline &&
         parts_.queue.sleep(kPollUs)) {
  }
}

void RunExecution::analyse() {
  setState(DrillState::kAnalyse);
  // Settle: every message sent in the window gets its fate (acked and received, failed, or given
  // up on) before the numbers are taken, or the settle timeout passes and the rest is unresolved.
  const auto& clock = deps_.clock;
  const auto settle_start = clock.monoNow();
  const auto settle_deadline = settle_start + spec_.options.settle_timeout_s * kSecond;
  const auto unsettled = [this] {
    if (!deps_.probe.pending(baseline_start_us_, window_end_us_).empty()) return true;
    return std::any_of(deps_.profiles.begin(), deps_.profiles.end(), [this](const auto& p) {
      return !p.probe->pending(baseline_start_us_, window_end_us_).empty();
    });
  };
  while (unsettled() && clock.monoNow() < settle_deadline && parts_.queue.sleep(kPollUs)) {
  }
  outcome_.settle_us = clock.monoNow() - settle_start;
  if (interrupted()) {
    end(DrillState::kAborted, interruption("analyse"));
    return;
  }

  auto input = analysisInput();
  // The ledger first, then the store: a message that finishes in between is in both (the
  // analysis prefers the stored one), never in neither.
  input.pending = deps_.probe.pending(baseline_start_us_, window_end_us_);
  const auto live = deps_.probe.status();
  deps_.store.flush();
  AnalysisWindow window{.cluster = deps_.cluster_id,
                        .partitions = {},
                        .samples = {baseline_start_us_, window_end_us_},
                        .events = {baseline_start_us_ - kSecond, window_end_us_ + 5 * kSecond}};
  for (const auto& p : at_fault_) window.partitions.emplace_back(p.topic, p.partition);
  if (live.control) window.partitions.emplace_back(std::string(probe::kControlStream), 0);
  if (live.coordinators) {
    window.partitions.emplace_back(std::string(probe::kCommitStream), 0);
    if (live.coordinators->transactions) {
      window.partitions.emplace_back(std::string(probe::kTransactionStream), 0);
    }
  }
  auto stored = loadAnalysisInputs(deps_.store, window);
  if (!stored) {
    end(DrillState::kFailed, "analysis not run: " + stored.error().describe());
    return;
  }
  analyseOwnStreams(live, input, *stored);
  input.samples = std::move(stored->samples);
  input.events = std::move(stored->events);
  addProbeStretches(live, input);
  if (second_journal_ && outcome_.second_fault->fault_injected) {
    outcome_.second_fault->first_analysis = analysis::analyse(firstOfTwo(input));
    toSecondFault(input);
  }
  outcome_.analysis = analysis::analyse(input);
  if (!deps_.profiles.empty()) {
    // The primary's input without its own samples and probe stretches is each profile's base: no
    // copy of the primary's samples per profile.
    const auto cluster_events = std::move(input.events);
    input.events.clear();
    input.samples.clear();
    input.pending.clear();
    input.holds.clear();
    input.idles.clear();
    input.refusals.clear();
    for (std::size_t i = 0; i < deps_.profiles.size(); ++i) {
      analyseProfile(deps_.profiles[i], input, cluster_events, window, outcome_.profiles[i]);
    }
  }
  outcome_.state = DrillState::kDone;
  outcome_.reason.clear();
}

void RunExecution::analyseProfile(const ProfileProbe& profile, analysis::AnalysisInput input,
                                  const std::vector<storage::Event>& cluster_events,
                                  const AnalysisWindow& primary_window, ProfileOutcome& out) const {
  if (!out.probe_at_fault) {
    out.problem = "the profile's probe was not read at the fault";
    return;
  }
  // The profile's own samples and probe events (its stream), the cluster's other events (the
  // metadata, the brokers' logs, the injector: the same for every profile).
  AnalysisWindow window = primary_window;
  window.cluster = profile.stream;
  std::erase_if(window.partitions, [](const auto& p) { return probe::isOwnStream(p.first); });
  const auto live = profile.probe->status();
  auto stored = loadAnalysisInputs(deps_.store, window);
  if (!stored) {
    out.problem = "analysis not run: " + stored.error().describe();
    return;
  }
  input.pending = profile.probe->pending(baseline_start_us_, window_end_us_);
  input.samples = std::move(stored->samples);
  input.events = profileEvents(cluster_events, std::move(stored->events));
  input.probe_at_fault = out.probe_at_fault->partitions;
  input.settings = outcome_.cluster_settings ? mechanismSettings(*outcome_.cluster_settings)
                                             : analysis::MechanismSettings{};
  if (out.probe_client) {
    input.settings = analysis::withClientSettings(input.settings, *out.probe_client);
  }
  addProbeStretches(live, input);
  out.analysis = analysis::analyse(input);
  out.problem.clear();
}

analysis::AnalysisInput RunExecution::analysisInput() const {
  analysis::AnalysisInput input;
  input.fault = toString(spec_.fault);
  input.killed =
      spec_.fault == FaultType::kKill || (spec_.fault == FaultType::kRestart && spec_.options.kill);
  input.gray = grayInput(spec_, undone_us_, undone_uncertainty_us_);
  if (outcome_.cluster_settings) input.settings = mechanismSettings(*outcome_.cluster_settings);
  if (outcome_.probe_client) {
    input.settings = analysis::withClientSettings(input.settings, *outcome_.probe_client);
  }
  input.target = target_;
  input.fault_us = fault_us_;
  if (outcome_.fault_injected) {
    input.fault_time_source = outcome_.fault_injected->time_source;
    input.fault_time_uncertainty_us = outcome_.fault_injected->uncertainty_us;
  }
  input.window_start_us = baseline_start_us_;
  input.observe_end_us = observe_end_us_;
  input.recovered_us = recovered_us_;
  input.window_end_us = window_end_us_;
  input.observe_timed_out = outcome_.observe_timed_out;
  input.offline_timed_out = outcome_.offline_timed_out;
  input.clock_steps = outcome_.clock_steps_in_window.value_or(0);
  input.interval_us = deps_.cluster.probe.interval_us;
  input.metadata_interval_us = deps_.cluster.observe.metadata_interval_us;
  input.partitions = at_fault_;
  input.probe_at_fault = outcome_.probe_at_fault->partitions;
  return input;
}

void RunExecution::analyseOwnStreams(const probe::ProbeStatus& live,
                                     const analysis::AnalysisInput& input, StoredInputs& stored) {
  // kfaild's own streams leave the samples here: the data analysis is the probe partitions'.
  std::map<std::string, std::vector<storage::ProbeSample>> own;
  auto& samples = stored.samples;
  const auto split = std::stable_partition(
      samples.begin(), samples.end(),
      [](const storage::ProbeSample& s) { return !probe::isOwnStream(s.topic); });
  for (auto it = split; it != samples.end(); ++it) own[it->topic].push_back(std::move(*it));
  samples.erase(split, samples.end());

  const auto streamInput = [&](std::int64_t interval_us, std::int64_t threshold_us,
                               std::string_view stream) {
    analysis::StreamInput in;
    in.interval_us = interval_us;
    in.gap_threshold_us = threshold_us;
    in.fault_us = fault_us_;
    in.fault_time_uncertainty_us = input.fault_time_uncertainty_us;
    in.window_start_us = baseline_start_us_;
    in.window_end_us = window_end_us_;
    in.samples = &own[std::string(stream)];
    in.clock_steps = input.clock_steps;
    return in;
  };
  if (live.coordinators) {
    const auto& c = deps_.cluster.probe.coordinators;
    analysis::CoordinatorsInput coordinators;
    coordinators.target = target_;
    coordinators.commits =
        streamInput(c.commit_interval_us, c.gap_threshold_us, probe::kCommitStream);
    if (live.coordinators->transactions) {
      coordinators.transactions =
          streamInput(c.txn_interval_us, c.txn_gap_threshold_us, probe::kTransactionStream);
    }
    coordinators.watched = live.coordinators->group_coordinator.has_value();
    coordinators.unwatched_reason = live.coordinators->watch_error;
    outcome_.coordinators = analysis::analyseCoordinators(coordinators, stored.events);
  }
  if (live.control) {
    const auto& c = deps_.cluster.probe.control;
    analysis::ControlPlaneInput control;
    control.interval_us = c.interval_us;
    control.gap_threshold_us = c.gap_threshold_us;
    control.fault_us = fault_us_;
    control.fault_time_uncertainty_us = input.fault_time_uncertainty_us;
    control.window_start_us = baseline_start_us_;
    control.window_end_us = window_end_us_;
    control.quorum_watched = live.control->quorum.has_value();
    control.quorum_unwatched_reason = live.control->quorum_error;
    control.clock_steps = input.clock_steps;
    control.samples = std::move(own[std::string(probe::kControlStream)]);
    outcome_.control_plane = analysis::analyseControlPlane(control, stored.events);
  }
}

void RunExecution::addProbeStretches(const probe::ProbeStatus& live,
                                     analysis::AnalysisInput& input) const {
  analysis::probeStretchesFromEvents(input.events, input.holds, input.idles);
  analysis::probeRefusalsFromEvents(input.events, input.refusals);
  for (const auto& p : live.partitions) {
    // A hold or a refusal still open is not an event yet.
    if (p.holding_since && p.holding_since->wall <= window_end_us_) {
      input.holds.push_back({p.topic, p.partition, p.holding_since->wall, std::nullopt, 0, "open"});
    }
    if (p.refusing_since && p.refusing_since->wall <= window_end_us_) {
      input.refusals.push_back(
          {p.topic, p.partition, p.refusing_since->wall, std::nullopt, 0, "open"});
    }
  }
}

analysis::AnalysisInput RunExecution::firstOfTwo(const analysis::AnalysisInput& input) const {
  auto first = input;
  first.observe_end_us = second_fault_us_;
  first.window_end_us = second_fault_us_;
  first.recovered_us.reset();
  first.observe_timed_out = false;
  first.offline_timed_out = false;
  first.cut_by = "the second fault";
  return first;
}

void RunExecution::toSecondFault(analysis::AnalysisInput& input) const {
  const auto& second = *outcome_.second_fault;
  input.fault = toString(second_spec_->fault);
  input.killed = second_spec_->fault == FaultType::kKill;
  input.target = second_target_;
  input.fault_us = second_fault_us_;
  input.fault_time_source = second.fault_injected->time_source;
  input.fault_time_uncertainty_us = second.fault_injected->uncertainty_us;
  input.baseline_end_us = fault_us_;
  input.partitions = at_second_fault_;
  input.probe_at_fault = second.probe_at_fault->partitions;
  input.recovered_us = second.recovered_us ? second.recovered_us : input.recovered_us;
}

bool RunExecution::resumedAfter(const probe::ProbeStatus& status, std::int64_t since_us) const {
  return probesResumed(status, since_us, recoverable_) && controlResumed(status, since_us);
}

bool RunExecution::watchAnsweredSince(const probe::ProbeStatus& status, std::int64_t at_us) const {
  if (!status.coordinators) return true;
  const auto& c = *status.coordinators;
  const auto since = [at_us](const std::optional<probe::CoordinatorSeen>& seen) {
    return seen && seen->last_us >= at_us;
  };
  if (await_commits_ && c.commits && !since(c.group_coordinator)) return false;
  if (await_transactions_ && c.transactions && !since(c.transaction_coordinator)) return false;
  return true;
}

bool RunExecution::probesResumed(const probe::ProbeStatus& status, std::int64_t since_us,
                                 const std::set<std::string>& only) const {
  if (status.phase != probe::ProbePhase::kProbing || status.partitions.empty()) return false;
  const auto now = deps_.clock.now();
  const auto threshold = deps_.cluster.probe.gap_threshold_us;
  for (const auto& p : status.partitions) {
    if (!only.count(partitionName(p.topic, p.partition))) continue;
    if (!p.last_ack || p.last_ack->wall < since_us) return false;
    if (!p.last_receive || p.last_receive->wall < since_us) return false;
    if (now.mono - p.last_ack->mono > threshold) return false;
  }
  return true;
}

bool RunExecution::controlResumed(const probe::ProbeStatus& status, std::int64_t since_us) const {
  if (!await_control_ && !await_commits_ && !await_transactions_) return true;
  const auto answered = [since_us](const auto& s) { return answeredSince(s, since_us); };
  if (await_control_ && !answered(status.control)) return false;
  if (status.coordinators) {
    if (await_commits_ && !answered(status.coordinators->commits)) return false;
    if (await_transactions_ && !answered(status.coordinators->transactions)) return false;
  }
  return true;
}

bool RunExecution::probeSettled(std::int64_t since_us, const std::set<std::string>& only) const {
  const auto status = deps_.probe.status();
  if (!probesResumed(status, since_us, only)) return false;
  // As the guards will judge it: nothing held back, nothing outstanding for long. A message in
  // flight to the old leader at the election is retried for a while after acks resume (a CI
  // run's drill was refused "2.0 s behind, sends held back" right after them).
  const auto now = deps_.clock.now();
  for (const auto& p : status.partitions) {
    if (!only.count(partitionName(p.topic, p.partition))) continue;
    if (p.holding_since) return false;
    if (p.oldest_outstanding_sent &&
        now.mono - p.oldest_outstanding_sent->mono > kMaxProbeBacklogUs / 2)
      return false;
  }
  return true;
}

std::optional<observe::ObservedCluster> RunExecution::freshSnapshot(std::int64_t max_age_us) {
  // A snapshot taken before now - max_age_us may predate a leadership change; wait for the
  // poller's next one (it polls every observe.metadata_interval_ms).
  const auto deadline = deps_.clock.monoNow() + std::max<std::int64_t>(2 * max_age_us, 2 * kSecond);
  while (true) {
    auto observed = deps_.view.latest();
    if (observed.reachable && observed.snapshot &&
        deps_.clock.wallNow() - observed.snapshot_at <= max_age_us) {
      return observed;
    }
    if (deps_.clock.monoNow() >= deadline || !parts_.queue.sleep(kPollUs / 2)) return std::nullopt;
  }
}

std::vector<kafka::TopicPartition> RunExecution::notOnPreferredLeader() const {
  std::vector<kafka::TopicPartition> out;
  const auto observed = deps_.view.latest();
  if (!observed.snapshot) return out;
  for (const auto& t : observed.snapshot->topics) {
    for (const auto& p : t.partitions) {
      if (!p.replicas.empty() && p.leader != p.replicas.front())
        out.push_back({t.name, p.partition});
    }
  }
  return out;
}

ElectionOutcome RunExecution::electPreferred(const std::vector<kafka::TopicPartition>& partitions) {
  ElectionOutcome out;
  for (const auto& p : partitions) out.partitions.push_back(partitionName(p.topic, p.partition));
  if (auto elected = deps_.admin.electPreferredLeaders(partitions); !elected) {
    out.error = elected.error().describe();
    return out;
  }
  const auto deadline = deps_.clock.monoNow() + 30 * kSecond;
  while (!out.preferred && deps_.clock.monoNow() < deadline && parts_.queue.sleep(kPollUs * 2)) {
    out.preferred = notOnPreferredLeader().empty();
  }
  return out;
}

void RunExecution::collectBrokerLogs() {
  std::vector<std::int32_t> targets{target_};
  if (second_journal_) targets.push_back(second_target_);
  storeFailoverLogs(deps_, targets, baseline_start_us_);
}

void storeFailoverLogs(const EngineDeps& deps, const std::vector<std::int32_t>& targets,
                       std::int64_t since_us) {
  if (targets.empty()) return;
  std::vector<fault::LogSource> sources;
  for (const auto& node : deps.cluster.inventory) {
    sources.push_back(
        {node.id, node.role == NodeRole::kController, deps.injectors.at(node.id).get()});
  }
  std::vector<std::string> topics;
  for (const auto& t : deps.cluster.probe.topics) topics.push_back(t.name);
  // The logs are written on the system clock: from the window's start as it read then.
  const auto since = deps.clock.toSystem(since_us);
  auto lines = fault::readFailoverLogs(sources, targets.front(), topics, since);
  for (std::size_t i = 1; i < targets.size(); ++i) {
    // The other targets' marks; the leaders' epochs and ISR shrinks are every node's, read once
    // already.
    for (auto& line : fault::readFailoverLogs(sources, targets[i], topics, since)) {
      const auto kind = common::eventKindFromString(line.kind);
      if (kind != EventKind::kLeaderEpochStart && kind != EventKind::kIsrShrink) {
        lines.push_back(std::move(line));
      }
    }
  }
  for (auto& line : lines) {
    storage::Event e;
    e.cluster = deps.cluster_id;
    // On kfaild's timebase, which a step of the system clock below a second leaves where it was.
    e.t_us = deps.clock.fromSystem(line.t);
    e.source = toString(EventSource::kBrokerLog);
    e.kind = line.kind;
    e.broker = line.broker;
    e.topic = line.topic;
    e.partition = line.partition;
    nlohmann::json detail = {{"file", line.file}, {"line", line.line}};
    if (common::eventKindFromString(line.kind) != EventKind::kSignalReceived) {
      detail["node"] = line.node;
    }
    if (e.t_us != line.t) detail["system_t_us"] = line.t;
    if (line.clock_uncertainty_us > 0) {
      // Another host's log (ssh): placed on kfaild's clock by that host's clock offset.
      detail["clock_offset_us"] = line.clock_offset_us;
      detail["clock_uncertainty_us"] = line.clock_uncertainty_us;
    }
    e.detail = common::jsonText(detail);
    deps.store.addEvent(std::move(e));
  }
}

}  // namespace kfaild::drill
