#include "server/analysis/rolling.h"

#include <algorithm>

namespace kfaild::analysis {

CheckStatus stepVerdict(const std::vector<Check>& checks, int run) {
  bool any = false, inconclusive = false;
  for (const auto& c : checks) {
    if (c.run != run || c.status == CheckStatus::kNotApplicable) continue;
    if (c.status == CheckStatus::kFail) return CheckStatus::kFail;
    if (c.status == CheckStatus::kInconclusive) inconclusive = true;
    any = true;
  }
  if (inconclusive) return CheckStatus::kInconclusive;
  return any ? CheckStatus::kPass : CheckStatus::kNotApplicable;
}

namespace {

void consider(std::optional<RollingStall>& worst, const RollingStall& candidate) {
  if (!worst || candidate.seconds > worst->seconds) worst = candidate;
}

}  // namespace

RollingSummary summariseRolling(const std::vector<RunAnalysis>& steps,
                                const std::vector<std::int32_t>& nodes, const Verdict& verdict) {
  RollingSummary out;
  out.verdict = verdict.verdict;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    RollingStepSummary s;
    s.step = static_cast<int>(i) + 1;
    s.node = i < nodes.size() ? nodes[i] : steps[i].target;
    s.verdict = stepVerdict(verdict.checks, s.step);
    for (const auto& p : steps[i].partitions) {
      bool stalled = false;
      for (const auto kind : {StallKind::kAck, StallKind::kReceive}) {
        const auto& r = kind == StallKind::kAck ? p.ack : p.receive;
        if (r.outcome == Outcome::kInconclusive) {
          ++s.inconclusive_partitions;
          break;
        }
      }
      for (const auto kind : {StallKind::kAck, StallKind::kReceive}) {
        const auto& r = kind == StallKind::kAck ? p.ack : p.receive;
        if (r.outcome != Outcome::kStall || !r.stall) continue;
        stalled = true;
        const double seconds = static_cast<double>(r.stall->duration_us()) / 1e6;
        (kind == StallKind::kAck ? s.ack_partition_seconds : s.receive_partition_seconds) +=
            seconds;
        consider(s.worst, RollingStall{s.step, s.node, p.topic, p.partition, toString(p.role), kind,
                                       seconds});
      }
      if (stalled) ++s.stalled_partitions;
    }
    out.ack_partition_seconds += s.ack_partition_seconds;
    out.receive_partition_seconds += s.receive_partition_seconds;
    if (s.worst) consider(out.worst, *s.worst);
    out.steps.push_back(std::move(s));
  }
  return out;
}

nlohmann::json toJson(const RollingStall& stall) {
  return {{"step", stall.step},           {"node", stall.node}, {"topic", stall.topic},
          {"partition", stall.partition}, {"role", stall.role}, {"kind", toString(stall.kind)},
          {"seconds", stall.seconds}};
}

nlohmann::json toJson(const RollingStepSummary& step) {
  return {{"step", step.step},
          {"node", step.node},
          {"verdict", toString(step.verdict)},
          {"ack_partition_seconds", step.ack_partition_seconds},
          {"receive_partition_seconds", step.receive_partition_seconds},
          {"stalled_partitions", step.stalled_partitions},
          {"inconclusive_partitions", step.inconclusive_partitions},
          {"worst_stall", step.worst ? toJson(*step.worst) : nlohmann::json(nullptr)}};
}

nlohmann::json toJson(const RollingSummary& summary) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : summary.steps) steps.push_back(toJson(s));
  return {{"steps", std::move(steps)},
          {"ack_partition_seconds", summary.ack_partition_seconds},
          {"receive_partition_seconds", summary.receive_partition_seconds},
          {"worst_stall", summary.worst ? toJson(*summary.worst) : nlohmann::json(nullptr)},
          {"verdict", toString(summary.verdict)}};
}

}  // namespace kfaild::analysis
