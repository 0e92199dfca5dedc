#include "server/drill/guards.h"

#include <algorithm>
#include <cstdio>

namespace kfaild::drill {
namespace {

std::string listOf(const std::vector<std::string>& items, std::size_t max = 5) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > max) out += " and " + std::to_string(items.size() - max) + " more";
  return out;
}

bool contains(const std::vector<std::int32_t>& v, std::int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string seconds(std::int64_t micros) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(micros) / 1e6);
  return text;
}

std::string idList(const std::vector<std::int32_t>& ids) {
  std::string out;
  for (auto id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out.empty() ? "none" : out;
}

// The quorum guard: nullopt when losing the target leaves the KRaft quorum a majority; with
// `also_down` (a compound drill's first node, still down) left out of the caught-up voters too.
std::optional<std::string> quorumRefusal(const GuardInput& in, std::int32_t also_down = -1) {
  const auto node = std::to_string(in.target);
  const std::string opt_in = "; set options.allow_quorum_loss to run it anyway";
  if (in.quorum == nullptr) {
    // Whether a broker is a voter (combined mode) cannot be told either; a dedicated controller
    // is one by all odds.
    if (!in.inventory_controllers.count(in.target)) return std::nullopt;
    return "the KRaft quorum cannot be described (" + in.quorum_problem.value_or("no answer") +
           "), so kfaild cannot tell whether losing controller " + node +
           " leaves a majority of voters" + opt_in;
  }
  const auto& q = *in.quorum;
  if (!q.isVoter(in.target)) return std::nullopt;
  if (q.leader_id < 0) return "the KRaft quorum has no leader (an election is under way)" + opt_in;
  auto impact = quorumImpactOfLosing(in.target, q);
  std::erase(impact.caught_up_without, also_down);
  if (impact.keepsMajority()) return std::nullopt;
  const auto with =
      also_down < 0 ? std::string() : " with node " + std::to_string(also_down) + " down";
  return "losing controller " + node + with + " would leave the KRaft quorum without a majority: " +
         std::to_string(impact.caught_up_without.size()) + " of its " +
         std::to_string(impact.voters.size()) + " voter(s) (" + idList(impact.voters) +
         ") up and caught up without it (" + idList(impact.caught_up_without) + "), " +
         std::to_string(impact.majority) +
         " needed; nothing would fence brokers or elect leaders until it is back" + opt_in;
}

}  // namespace

bool voterCaughtUp(const kafka::QuorumInfo& quorum, const kafka::QuorumReplica& voter) {
  if (voter.replica_id == quorum.leader_id) return true;
  const auto* leader = quorum.leaderReplica();
  const auto leader_now = leader == nullptr ? -1
                                            : std::max(leader->last_fetch_timestamp_ms,
                                                       leader->last_caught_up_timestamp_ms);
  if (leader_now >= 0) {
    return voter.last_fetch_timestamp_ms >= 0 && voter.last_caught_up_timestamp_ms >= 0 &&
           leader_now - voter.last_fetch_timestamp_ms <= kVoterMaxAgeMs &&
           leader_now - voter.last_caught_up_timestamp_ms <= kVoterMaxAgeMs;
  }
  return quorum.high_watermark >= 0 && voter.log_end_offset >= quorum.high_watermark;
}

QuorumImpact quorumImpactOfLosing(std::int32_t node, const kafka::QuorumInfo& quorum) {
  QuorumImpact impact;
  for (const auto& v : quorum.voters) {
    impact.voters.push_back(v.replica_id);
    if (v.replica_id != node && voterCaughtUp(quorum, v))
      impact.caught_up_without.push_back(v.replica_id);
  }
  impact.majority = quorum.voters.size() / 2 + 1;
  return impact;
}

Impact impactOfLosing(std::int32_t broker, const kafka::ClusterSnapshot& cluster,
                      const std::map<std::string, std::int32_t>& min_insync) {
  Impact impact;
  for (const auto& topic : cluster.topics) {
    const auto min = min_insync.count(topic.name) ? min_insync.at(topic.name) : 1;
    for (const auto& p : topic.partitions) {
      if (!contains(p.isr, broker)) continue;
      const auto remaining = static_cast<std::int32_t>(p.isr.size()) - 1;
      const auto name = topic.name + "-" + std::to_string(p.partition);
      if (remaining == 0) {
        impact.offline.push_back(name);
      } else if (remaining < min) {
        impact.below_min_isr.push_back(name);
      }
    }
  }
  return impact;
}

std::optional<std::string> checkGuards(const GuardInput& in) {
  if (in.active_drill) {
    return "drill " + std::to_string(*in.active_drill) + " is running on this cluster";
  }
  if (in.target >= 0 && !in.inventory.count(in.target)) {
    return "node " + std::to_string(in.target) + " is not in the cluster's inventory";
  }
  if (in.cluster_problem) return *in.cluster_problem;
  if (in.cluster == nullptr) return std::string("the cluster's metadata is unavailable");
  for (auto id : in.inventory_brokers) {
    if (!in.cluster->hasBroker(id)) {
      return "broker " + std::to_string(id) + " is not registered (fenced or down)";
    }
  }
  for (const auto& name : in.probe_topics) {
    const auto* topic = in.cluster->topic(name);
    if (topic == nullptr) return "probe topic " + name + " is missing from the metadata";
    for (const auto& p : topic->partitions) {
      if (p.isr.size() < p.replicas.size()) {
        return "probe partition " + name + "-" + std::to_string(p.partition) +
               " is under-replicated (ISR " + std::to_string(p.isr.size()) + " of " +
               std::to_string(p.replicas.size()) + ")";
      }
    }
  }
  // The probe must be measuring normally, or the drill measures the probe.
  if (in.probe_problem) return "the probe is not probing: " + *in.probe_problem;
  for (const auto& p : in.probe) {
    const auto name = p.topic + "-" + std::to_string(p.partition);
    if (!p.last_ack_age_us) return "probe partition " + name + " has had no ack yet";
    if (*p.last_ack_age_us > std::max<std::int64_t>(in.gap_threshold_us, 1'000'000)) {
      return "probe partition " + name + " has had no ack for " + seconds(*p.last_ack_age_us) +
             ": it is stalled already";
    }
    // The consumer is half of the probe: a drill started while it catches up would measure the
    // catching up as receive stalls.
    if (!p.last_receive_age_us) return "probe partition " + name + " has read nothing back yet";
    if (*p.last_receive_age_us > std::max<std::int64_t>(in.gap_threshold_us, 1'000'000)) {
      return "probe partition " + name + " has read nothing back for " +
             seconds(*p.last_receive_age_us) + ": its consumer is behind";
    }
    if (p.holding || p.backlog_us > kMaxProbeBacklogUs) {
      return "the probe of " + name + " is " + seconds(p.backlog_us) +
             " behind (oldest message without an ack" + (p.holding ? ", sends held back" : "") +
             "): the cluster or kfaild's host is overloaded, and a drill now would measure the "
             "backlog rather than the failover";
    }
  }
  if (!in.allow_quorum_loss) {
    if (auto refusal = quorumRefusal(in)) return refusal;
  }
  if (in.inventory_brokers.count(in.target) && !in.allow_unavailable) {
    const auto impact = impactOfLosing(in.target, *in.cluster, in.min_insync);
    if (!impact.offline.empty()) {
      return "losing broker " + std::to_string(in.target) + " would take " +
             std::to_string(impact.offline.size()) + " partition(s) offline (" +
             listOf(impact.offline) + "); set options.allow_unavailable to run it anyway";
    }
    if (!impact.below_min_isr.empty()) {
      return "losing broker " + std::to_string(in.target) + " would leave " +
             std::to_string(impact.below_min_isr.size()) +
             " partition(s) below min.insync.replicas (" + listOf(impact.below_min_isr) +
             "); set options.allow_unavailable to run it anyway";
    }
  }
  return std::nullopt;
}

std::optional<std::string> checkSecondFault(const GuardInput& in, std::int32_t first,
                                            bool first_down) {
  if (!in.inventory.count(in.target)) {
    return "node " + std::to_string(in.target) + " is not in the cluster's inventory";
  }
  if (in.target == first) {
    return "its target names node " + std::to_string(first) + ", the first fault's";
  }
  if (in.cluster == nullptr) return std::string("the cluster's metadata is unavailable");
  if (!in.allow_quorum_loss) {
    if (auto refusal = quorumRefusal(in, first_down ? first : -1)) return refusal;
  }
  if (in.inventory_brokers.count(in.target) && !in.allow_unavailable) {
    const auto impact = impactOfLosing(in.target, *in.cluster, in.min_insync);
    const auto with = first_down ? " with node " + std::to_string(first) + " down" : std::string();
    if (!impact.offline.empty()) {
      return "losing broker " + std::to_string(in.target) + with + " would take " +
             std::to_string(impact.offline.size()) + " partition(s) offline (" +
             listOf(impact.offline) + "); set options.allow_unavailable to run it anyway";
    }
    if (!impact.below_min_isr.empty()) {
      return "losing broker " + std::to_string(in.target) + with + " would leave " +
             std::to_string(impact.below_min_isr.size()) +
             " partition(s) below min.insync.replicas (" + listOf(impact.below_min_isr) +
             "); set options.allow_unavailable to run it anyway";
    }
  }
  return std::nullopt;
}

kafka::ClusterSnapshot withoutNode(const kafka::ClusterSnapshot& cluster, std::int32_t node) {
  auto out = cluster;
  for (auto& topic : out.topics) {
    for (auto& p : topic.partitions) {
      std::erase(p.isr, node);
      if (p.leader == node) p.leader = -1;
    }
  }
  return out;
}

}  // namespace kfaild::drill
