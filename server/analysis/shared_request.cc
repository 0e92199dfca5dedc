#include "server/analysis/shared_request.h"

#include <algorithm>
#include <cstdlib>

namespace kfaild::analysis {

using common::EventKind;
using common::EventSource;
using storage::isEvent;

namespace {

const PartitionAtFault* atFault(const AnalysisInput& in, const PartitionResult& r) {
  for (const auto& p : in.partitions) {
    if (p.topic == r.topic && p.partition == r.partition) return &p;
  }
  return nullptr;
}

bool contains(const std::vector<std::int32_t>& v, std::int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// acks=all on `p` waited for the target: it is in p's ISR and does not lead it.
bool waitsForTarget(const PartitionAtFault& p, std::int32_t target) {
  return p.leader != target && contains(p.isr, target);
}

// Whether an event of the window shows `r`'s leader or ISR changing: then its own stall as the
// cluster saw it is not known from the events alone.
bool leadershipChanged(const AnalysisInput& in, const PartitionResult& r) {
  for (const auto& e : in.events) {
    if (e.t_us < in.window_start_us || e.t_us > in.observe_end_us) continue;
    if (!e.topic || *e.topic != r.topic || !e.partition || *e.partition != r.partition) continue;
    if (isEvent(e, EventSource::kMetadata, EventKind::kLeaderChange) ||
        isEvent(e, EventSource::kMetadata, EventKind::kIsrShrink) ||
        isEvent(e, EventSource::kMetadata, EventKind::kIsrExpand) ||
        isEvent(e, EventSource::kBrokerLog, EventKind::kLeaderEpochStart) ||
        isEvent(e, EventSource::kBrokerLog, EventKind::kIsrShrink)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<MechanismResult> sharedRequest(const AnalysisInput& in,
                                             const std::vector<PartitionResult>& analysed,
                                             const PartitionResult& stalled) {
  if (baseRole(stalled.role) != Role::kNotAReplica || stalled.ack.outcome != Outcome::kStall ||
      !stalled.ack.stall) {
    return std::nullopt;
  }
  const auto* own = atFault(in, stalled);
  if (!own) return std::nullopt;
  const auto& stall = *stalled.ack.stall;
  const std::int64_t tolerance = in.interval_us + kSharedAckResolutionUs;
  const auto noise = [&](const PartitionResult& r) {
    return r.ack.baseline ? r.ack.baseline->duration_us() : in.interval_us;
  };

  const PartitionResult* waited_on = nullptr;
  for (const auto& other : analysed) {
    if (&other == &stalled || other.ack.outcome != Outcome::kStall || !other.ack.stall) continue;
    const auto* p = atFault(in, other);
    if (!p || p->leader != own->leader || !waitsForTarget(*p, in.target)) continue;
    const auto& theirs = *other.ack.stall;
    const auto apart = std::abs(theirs.end_us - stall.end_us);
    const auto start_tolerance =
        std::max({in.interval_us, noise(stalled), noise(other)}) + kSharedAckResolutionUs;
    if (theirs.start_us > stall.start_us + start_tolerance || apart > tolerance) continue;
    if (!waited_on || apart < std::abs(waited_on->ack.stall->end_us - stall.end_us)) {
      waited_on = &other;
    }
  }
  if (!waited_on) return std::nullopt;

  const auto& theirs = *waited_on->ack.stall;
  MechanismResult m;
  m.mechanism = Mechanism::kSharedRequest;
  m.expected_us = theirs.duration_us();
  m.explained = true;
  m.ended_by = "waited_on_ack";
  m.phases.push_back({"waited_on", stall.start_us, theirs.end_us, "waited_on_ack", tolerance});
  m.waited_on = MechanismResult::PartitionRef{waited_on->topic, waited_on->partition};
  if (!leadershipChanged(in, stalled)) m.cluster_stall_us = 0;
  m.client_stall_us = stall.duration_us();
  return m;
}

}  // namespace kfaild::analysis
