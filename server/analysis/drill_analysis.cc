#include "server/analysis/drill_analysis.h"

#include <algorithm>
#include <map>

namespace kfaild::analysis {
namespace {

bool contains(const std::vector<std::int32_t>& v, std::int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

KindResult intervals(std::vector<std::int64_t> times, std::int64_t fault_us, std::int64_t observe_end_us,
                     std::int64_t interval_us) {
  KindResult r;
  std::sort(times.begin(), times.end());
  r.count = static_cast<std::int64_t>(times.size());
  for (std::size_t i = 1; i < times.size(); ++i) {
    const Interval gap{times[i - 1], times[i]};
    const bool spans = gap.end_us > fault_us && gap.start_us < observe_end_us;
    if (spans && (!r.stall || gap.duration_us() > r.stall->duration_us())) r.stall = gap;
  }
  // Nothing since the last ack and observation is over: the stall has not ended. It counts when
  // it is longer than any closed one and clearly more than the probe's own spacing.
  if (!times.empty() && times.back() < observe_end_us && observe_end_us > fault_us) {
    const Interval tail{times.back(), observe_end_us, true};
    if (tail.duration_us() > std::max<std::int64_t>(r.stall ? r.stall->duration_us() : 0, 5 * interval_us)) {
      r.stall = tail;
    }
  }
  for (std::size_t i = 1; i < times.size(); ++i) {
    const Interval gap{times[i - 1], times[i]};
    if (r.stall && gap.start_us == r.stall->start_us && gap.end_us == r.stall->end_us) continue;
    if (!r.baseline || gap.duration_us() > r.baseline->duration_us()) r.baseline = gap;
  }
  return r;
}

std::optional<std::int64_t> diff(std::optional<std::int64_t> later, std::optional<std::int64_t> earlier) {
  if (!later || !earlier) return std::nullopt;
  return *later - *earlier;
}

nlohmann::json intervalJson(const std::optional<Interval>& i) {
  if (!i) return nullptr;
  return {{"start_us", i->start_us}, {"end_us", i->end_us}, {"duration_us", i->duration_us()}, {"open", i->open}};
}

nlohmann::json optJson(const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nullptr; }

}  // namespace

const char* toString(Role role) {
  switch (role) {
    case Role::kLeader: return "leader";
    case Role::kFollowerInIsr: return "follower";
    case Role::kFollowerOutOfIsr: return "follower_out_of_isr";
    case Role::kNotAReplica: return "not_a_replica";
  }
  return "unknown";
}

Role roleOf(std::int32_t target, const PartitionAtFault& p) {
  if (p.leader == target) return Role::kLeader;
  if (!contains(p.replicas, target)) return Role::kNotAReplica;
  return contains(p.isr, target) ? Role::kFollowerInIsr : Role::kFollowerOutOfIsr;
}

RunAnalysis analyse(const AnalysisInput& in) {
  RunAnalysis out;
  out.fault = in.fault;
  out.target = in.target;
  out.fault_us = in.fault_us;

  // How the target left: its fencing (the controller's log line or, without logs, the metadata)
  // or a controlled shutdown. The earliest sign after the fault counts.
  for (const auto& e : in.events) {
    if (e.t_us < in.fault_us - 1'000'000 || !e.broker || *e.broker != in.target) continue;
    std::string kind;
    if (e.source == "broker_log" && e.kind == "fenced") kind = "fenced";
    if (e.source == "broker_log" && e.kind == "controlled_shutdown") kind = "controlled_shutdown";
    if (kind.empty()) continue;
    if (!out.departure_at_us || e.t_us < *out.departure_at_us) {
      out.departure = kind;
      out.departure_at_us = e.t_us;
    }
  }
  if (!out.departure_at_us) {
    // No broker log: the first metadata sign of the target leaving, classified by the fault.
    for (const auto& e : in.events) {
      if (e.t_us < in.fault_us || e.source != "metadata" || !e.broker || *e.broker != in.target) continue;
      if (e.kind != "broker_gone" && e.kind != "isr_shrink") continue;
      if (!out.departure_at_us || e.t_us < *out.departure_at_us) out.departure_at_us = e.t_us;
    }
    if (out.departure_at_us) out.departure = in.fault == "stop" ? "controlled_shutdown" : "fenced";
  }

  std::map<std::pair<std::string, std::int32_t>, std::vector<const storage::ProbeSample*>> by_partition;
  for (const auto& s : in.samples) by_partition[{s.topic, s.partition}].push_back(&s);

  for (const auto& p : in.partitions) {
    PartitionResult r;
    r.topic = p.topic;
    r.partition = p.partition;
    r.role = roleOf(in.target, p);
    std::vector<std::int64_t> acks, receives;
    std::int64_t min_seq = -1, max_seq = -1, seen = 0;
    for (const auto* s : by_partition[{p.topic, p.partition}]) {
      ++r.sent;
      ++seen;
      min_seq = min_seq < 0 ? s->seq : std::min(min_seq, s->seq);
      max_seq = std::max(max_seq, s->seq);
      if (s->ack_error != 0) {
        ++r.failed;
      } else if (s->ack_us) {
        acks.push_back(*s->ack_us);
        if (!s->receive_us) ++r.lost;
      }
      if (s->receive_us) receives.push_back(*s->receive_us);
    }
    if (max_seq >= 0) r.unresolved = (max_seq - min_seq + 1) - seen;
    r.ack = intervals(std::move(acks), in.fault_us, in.observe_end_us, in.interval_us);
    r.receive = intervals(std::move(receives), in.fault_us, in.observe_end_us, in.interval_us);

    auto& ph = r.phases;
    const bool fenced = out.departure == "fenced";
    if (fenced && out.departure_at_us) {
      ph.fenced_at_us = out.departure_at_us;
      ph.detection_us = *out.departure_at_us - in.fault_us;
    }
    for (const auto& e : in.events) {
      if (e.t_us < in.fault_us - 1'000'000 || !e.topic || *e.topic != p.topic || !e.partition ||
          *e.partition != p.partition) {
        continue;
      }
      const bool leader_event = (e.source == "metadata" && e.kind == "leader_change") ||
                                (e.source == "broker_log" && e.kind == "leader_epoch_start");
      if (r.role == Role::kLeader && leader_event && e.broker && *e.broker != in.target &&
          (!ph.new_leader_at_us || e.t_us < *ph.new_leader_at_us)) {
        ph.new_leader_at_us = e.t_us;
        ph.new_leader = e.broker;
      }
      if (r.role == Role::kFollowerInIsr && e.source == "metadata" && e.kind == "isr_shrink" &&
          e.broker && *e.broker == in.target && (!ph.new_leader_at_us || e.t_us < *ph.new_leader_at_us)) {
        ph.new_leader_at_us = e.t_us;  // the leader stays; the ISR no longer waits for the target
      }
      if (r.role == Role::kLeader && e.source == "client" && e.kind == "client_leader_update" &&
          e.detail.find("\"producer\"") != std::string::npos && e.broker && *e.broker != in.target &&
          (!ph.client_update_at_us || e.t_us < *ph.client_update_at_us)) {
        ph.client_update_at_us = e.t_us;
      }
    }
    const auto left_at = out.departure_at_us;
    ph.election_us = diff(ph.new_leader_at_us, left_at);
    ph.discovery_us = diff(ph.client_update_at_us, ph.new_leader_at_us);
    if (r.ack.stall && !r.ack.stall->open) {
      const auto from = ph.client_update_at_us ? ph.client_update_at_us : ph.new_leader_at_us;
      ph.resume_us = diff(r.ack.stall->end_us, from);
    }
    for (const auto& e : in.events) {
      if (e.source != "probe" || !e.topic || *e.topic != p.topic || !e.partition || *e.partition != p.partition) {
        continue;
      }
      if (e.kind == "duplicate") ++r.duplicated;
      if (e.kind == "reordered") ++r.reordered;
    }
    out.partitions.push_back(std::move(r));
  }
  return out;
}

nlohmann::json toJson(const RunAnalysis& a) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& p : a.partitions) {
    auto kind = [](const KindResult& k) {
      return nlohmann::json{{"stall", intervalJson(k.stall)},
                            {"baseline", intervalJson(k.baseline)},
                            {"count", k.count}};
    };
    parts.push_back({{"topic", p.topic},
                     {"partition", p.partition},
                     {"role", toString(p.role)},
                     {"ack", kind(p.ack)},
                     {"receive", kind(p.receive)},
                     {"sent", p.sent},
                     {"failed", p.failed},
                     {"lost", p.lost},
                     {"unresolved", p.unresolved},
                     {"duplicated", p.duplicated},
                     {"reordered", p.reordered},
                     {"phases",
                      {{"detection_us", optJson(p.phases.detection_us)},
                       {"election_us", optJson(p.phases.election_us)},
                       {"discovery_us", optJson(p.phases.discovery_us)},
                       {"resume_us", optJson(p.phases.resume_us)},
                       {"fenced_at_us", optJson(p.phases.fenced_at_us)},
                       {"new_leader_at_us", optJson(p.phases.new_leader_at_us)},
                       {"client_update_at_us", optJson(p.phases.client_update_at_us)},
                       {"new_leader", p.phases.new_leader ? nlohmann::json(*p.phases.new_leader) : nullptr}}}});
  }
  return {{"fault", a.fault},
          {"target", a.target},
          {"fault_us", a.fault_us},
          {"departure", a.departure.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.departure)},
          {"departure_at_us", optJson(a.departure_at_us)},
          {"partitions", parts}};
}

}  // namespace kfaild::analysis
