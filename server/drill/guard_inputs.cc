#include "server/drill/guard_inputs.h"

#include <algorithm>
#include <random>

#include "server/drill/errc.h"

namespace kfaild::drill {

using common::NodeRole;

namespace {

Error refused(const std::string& reason) {
  return Error{make_error_code(errc::guard_refused), reason};
}

// A coordinator_of target as FindCoordinator's answer `found` names it.
Result<ResolvedTarget> resolveCoordinator(const EngineDeps& deps, const Target& target,
                                          const Result<kafka::Coordinator>& found) {
  const auto query = coordinatorQuery(deps.cluster, target);
  const auto what = std::string(target.transactional ? "transactional id " : "group ") + query.key;
  if (!found)
    return refused("the coordinator of " + what + " cannot be told: " + found.error().message);
  if (!deps.injectors.count(found->node)) {
    return refused("the coordinator of " + what + ", broker " + std::to_string(found->node) +
                   ", is not in the inventory");
  }
  return ResolvedTarget{found->node, "the coordinator of " + what + " (FindCoordinator)"};
}

}  // namespace

CoordinatorQuery coordinatorQuery(const config::ClusterConfig& cluster, const Target& target) {
  const auto& own = cluster.probe.coordinators;
  auto key = target.coordinator_key.empty()
                 ? (target.transactional ? own.transactional_id : own.group)
                 : target.coordinator_key;
  if (key.empty()) key = "kfaild-probe-" + cluster.name;  // the configuration's default
  return {
      target.transactional ? kafka::CoordinatorType::kTransaction : kafka::CoordinatorType::kGroup,
      key};
}

Result<ResolvedTarget> resolveTargetOn(const EngineDeps& deps, const Target& target,
                                       const observe::ObservedCluster& observed) {
  const auto& cluster = deps.cluster;
  switch (target.kind) {
    case TargetKind::kBroker:
      if (!deps.injectors.count(target.broker)) {
        return Error{make_error_code(errc::invalid_request),
                     "target.broker: node " + std::to_string(target.broker) +
                         " is not in the inventory of cluster " + cluster.name};
      }
      return ResolvedTarget{target.broker, "named in the request"};
    case TargetKind::kLeaderOf: {
      if (!observed.snapshot) return refused("the cluster's metadata is unavailable");
      const auto* topic = observed.snapshot->topic(target.topic);
      if (topic == nullptr) {
        return Error{make_error_code(errc::invalid_request),
                     "target.leader_of.topic: " + target.topic +
                         " is not a probe topic of cluster " + cluster.name};
      }
      for (const auto& p : topic->partitions) {
        if (p.partition != target.partition) continue;
        const auto name = target.topic + "-" + std::to_string(p.partition);
        if (p.leader < 0) return refused(name + " has no leader");
        if (!deps.injectors.count(p.leader)) {
          return refused("the leader of " + name + ", broker " + std::to_string(p.leader) +
                         ", is not in the inventory");
        }
        return ResolvedTarget{p.leader, "the leader of " + name + " in the metadata"};
      }
      return Error{make_error_code(errc::invalid_request),
                   "target.leader_of.partition: " + target.topic + " has no partition " +
                       std::to_string(target.partition)};
    }
    case TargetKind::kController: {
      const bool any =
          std::any_of(cluster.inventory.begin(), cluster.inventory.end(),
                      [](const config::NodeConfig& n) { return n.role == NodeRole::kController; });
      if (!any)
        return Error{make_error_code(errc::invalid_request),
                     "target.controller: no controller in the inventory"};
      // The active controller is the KRaft quorum's leader: only DescribeQuorum tells it (the
      // Metadata answer's controller id is a random broker in KRaft).
      if (!observed.quorum) {
        return refused("the active controller cannot be told: the KRaft quorum is not described (" +
                       (observed.quorum_error.empty() ? std::string("not described yet")
                                                      : observed.quorum_error) +
                       ")");
      }
      const auto leader = observed.quorum->leader_id;
      if (leader < 0)
        return refused("the KRaft quorum has no leader: there is no active controller");
      if (!deps.injectors.count(leader)) {
        return refused("the active controller, node " + std::to_string(leader) +
                       ", is not in the inventory");
      }
      return ResolvedTarget{leader, "the KRaft quorum's leader (DescribeQuorum, epoch " +
                                        std::to_string(observed.quorum->leader_epoch) + ")"};
    }
    case TargetKind::kCoordinatorOf: {
      const auto query = coordinatorQuery(cluster, target);
      return resolveCoordinator(deps, target, deps.admin.findCoordinator(query.type, query.key));
    }
    case TargetKind::kNodes:
      // A rolling restart's nodes are its plan (rolling_plan.h), each step a target of its own.
      return Error{make_error_code(errc::invalid_request),
                   "target.nodes: a rolling restart's target names no single node"};
    case TargetKind::kRandom: {
      std::vector<std::int32_t> brokers;
      for (const auto& node : cluster.inventory) {
        if (node.role == NodeRole::kBroker) brokers.push_back(node.id);
      }
      if (brokers.empty())
        return Error{make_error_code(errc::invalid_request),
                     "target.random: no broker in the inventory"};
      std::mt19937 rng(std::random_device{}());
      return ResolvedTarget{
          brokers[std::uniform_int_distribution<std::size_t>(0, brokers.size() - 1)(rng)],
          "drawn at random from the inventory's brokers"};
    }
  }
  return Error{make_error_code(errc::invalid_request), "target: unknown kind"};
}

Result<std::int32_t> resolveTarget(const EngineDeps& deps, const Target& target,
                                   const ClusterFacts* facts) {
  auto resolved = [&]() -> Result<ResolvedTarget> {
    if (target.kind != TargetKind::kCoordinatorOf)
      return resolveTargetOn(deps, target, deps.view.latest());
    const auto query = coordinatorQuery(deps.cluster, target);
    if (!facts || !facts->coordinators.count(query)) {
      return refused("the coordinator of " + query.key + " was not looked up");
    }
    return resolveCoordinator(deps, target, facts->coordinators.at(query));
  }();
  if (!resolved) return resolved.error();
  return resolved->node;
}

GuardInput GuardInputs::base(std::int32_t target, const DrillSpec& spec) const {
  GuardInput in;
  in.fault = spec.fault;
  in.target = target;
  in.allow_unavailable = spec.options.allow_unavailable;
  in.allow_quorum_loss = spec.options.allow_quorum_loss;
  for (const auto& node : deps_.cluster.inventory) {
    in.inventory.insert(node.id);
    if (node.role == NodeRole::kBroker) in.inventory_brokers.insert(node.id);
    if (node.role == NodeRole::kController) in.inventory_controllers.insert(node.id);
  }
  for (const auto& t : deps_.cluster.probe.topics) in.probe_topics.push_back(t.name);
  const auto status = deps_.probe.status();
  if (status.phase != probe::ProbePhase::kProbing) {
    in.probe_problem = std::string(probe::toString(status.phase)) +
                       (status.problem.empty() ? "" : " (" + status.problem + ")");
  }
  const auto now = deps_.clock.monoNow();
  for (const auto& p : status.partitions) {
    ProbeHealth h;
    h.topic = p.topic;
    h.partition = p.partition;
    if (p.oldest_outstanding_sent) h.backlog_us = now - p.oldest_outstanding_sent->mono;
    h.holding = p.holding_since.has_value();
    if (p.last_ack) h.last_ack_age_us = now - p.last_ack->mono;
    if (p.last_receive) h.last_receive_age_us = now - p.last_receive->mono;
    in.probe.push_back(h);
  }
  in.gap_threshold_us = deps_.cluster.probe.gap_threshold_us;
  return in;
}

ClusterFacts GuardInputs::read() {
  ClusterFacts facts;
  std::set<CoordinatorQuery> coordinators;
  {
    std::lock_guard lock(mutex_);
    coordinators = wanted_coordinators_;
  }
  for (const auto& query : coordinators) {
    facts.coordinators.emplace(query, deps_.admin.findCoordinator(query.type, query.key));
  }
  auto all = deps_.admin.describeCluster();
  if (!all) {
    facts.problem = "the cluster's metadata is unavailable: " + all.error().describe();
  } else {
    facts.all = std::move(*all);
    // Without a controller nobody fences the broker or elects new leaders: the "drill" would be
    // an outage until the node is back.
    if (auto answered = deps_.admin.controllerAnswers(); !answered) {
      facts.problem = "the KRaft controller does not answer (" + answered.error().describe() +
                      "): nothing would fence the broker or elect new leaders";
    } else {
      std::vector<std::string> topics;
      for (const auto& t : facts.all->topics) topics.push_back(t.name);
      auto min_isr = deps_.admin.topicConfig(topics, "min.insync.replicas");
      if (!min_isr) {
        facts.problem = "cannot read min.insync.replicas: " + min_isr.error().describe();
      } else {
        for (const auto& [topic, value] : *min_isr) {
          try {
            facts.min_insync[topic] = std::stoi(value);
          } catch (const std::exception&) {
            facts.min_insync[topic] = 1;
          }
        }
      }
    }
  }
  // The poller's quorum, not a describe of its own: with the controller gone a DescribeQuorum
  // waits its timeout on every broker, which a submission cannot afford.
  const auto observed = deps_.view.latest();
  if (observed.quorum) {
    facts.quorum = *observed.quorum;
  } else {
    facts.quorum_problem =
        observed.quorum_error.empty() ? "not described yet" : observed.quorum_error;
  }
  facts.read_at = deps_.clock.monoNow();
  {
    std::lock_guard lock(mutex_);
    latest_ = facts;
    // A query asked while this read ran waits for the next one.
    for (const auto& query : coordinators) wanted_coordinators_.erase(query);
    read_wanted_ = !wanted_coordinators_.empty();
  }
  read_done_.notify_all();
  return facts;
}

bool GuardInputs::readWanted() const {
  std::lock_guard lock(mutex_);
  return read_wanted_;
}

std::optional<ClusterFacts> GuardInputs::readAfter(
    common::MonoMicros since, const std::function<void()>& ask_read,
    const std::vector<CoordinatorQuery>& coordinators) {
  std::unique_lock lock(mutex_);
  const auto done = [&] {
    return latest_ && latest_->read_at >= since &&
           std::all_of(coordinators.begin(), coordinators.end(), [&](const CoordinatorQuery& q) {
             return latest_->coordinators.count(q) > 0;
           });
  };
  if (done()) return latest_;
  read_wanted_ = true;
  wanted_coordinators_.insert(coordinators.begin(), coordinators.end());
  lock.unlock();
  ask_read();
  lock.lock();
  // Real time: this bounds how long an HTTP thread waits, whatever the engine's clock does.
  if (read_done_.wait_for(lock, kReadWait, done)) return latest_;
  return std::nullopt;
}

std::optional<std::string> checkWithFacts(GuardInput in, const ClusterFacts& facts,
                                          const std::optional<std::string>& open_recovery) {
  if (!facts.all) return facts.problem.value_or("the cluster's metadata is unavailable");
  if (open_recovery) return open_recovery;
  if (facts.problem) return facts.problem;
  in.cluster = &*facts.all;
  in.min_insync = facts.min_insync;
  if (facts.quorum) in.quorum = &*facts.quorum;
  in.quorum_problem = facts.quorum_problem;
  return checkGuards(in);
}

}  // namespace kfaild::drill
