#include "server/analysis/steady.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

namespace kfaild::analysis {
namespace {

constexpr double kMicros = 1e6;

double seconds(std::int64_t us) {
  return static_cast<double>(us) / kMicros;
}

// "12.3 s"; bounds keep their configured precision ("0.25 s").
std::string secondsText(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g s", value);
  if (value >= 100) std::snprintf(buffer, sizeof buffer, "%.0f s", value);
  return buffer;
}

std::string partitionName(const std::string& topic, std::int32_t partition) {
  return topic + "-" + std::to_string(partition);
}

using Partitions = std::vector<SteadyPartition>;

SteadyFailure partitionFailure(SteadyCheck check, const SteadyPartition& p) {
  SteadyFailure f;
  f.check = check;
  f.topic = p.topic;
  f.partition = p.partition;
  return f;
}

void checkProbe(const SteadyInput& in, const Partitions& partitions,
                std::vector<SteadyFailure>& out) {
  if (!in.probing) {
    out.push_back({SteadyCheck::kProbe, std::nullopt, std::nullopt, std::nullopt, std::nullopt, "",
                   "the probe is not probing (" + in.probe_state +
                       "): nothing is measured, so nothing is known to be steady"});
    return;
  }
  if (in.probing_for_us < in.window_us) {
    out.push_back({SteadyCheck::kProbe, std::nullopt, std::nullopt, seconds(in.probing_for_us),
                   seconds(in.window_us), "",
                   "the probe has probed for " + secondsText(seconds(in.probing_for_us)) +
                       ", less than the " + secondsText(seconds(in.window_us)) +
                       " window: the window's start is not measured yet"});
  }
  if (partitions.empty()) {
    out.push_back({SteadyCheck::kProbe, std::nullopt, std::nullopt, std::nullopt, std::nullopt, "",
                   "the probe has no partitions yet"});
  }
  for (const auto& p : partitions) {
    if (p.ack_age_us && p.receive_age_us) continue;
    auto f = partitionFailure(SteadyCheck::kProbe, p);
    f.reason = partitionName(p.topic, p.partition) + " has never been " +
               (p.ack_age_us ? "read back" : "acked") + " since the probe began";
    out.push_back(std::move(f));
  }
}

void checkMetadata(const SteadyInput& in, const Partitions& partitions,
                   std::vector<SteadyFailure>& out) {
  if (in.metadata_problem) {
    out.push_back({SteadyCheck::kMetadata, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                   "", "the cluster's metadata is not known now: " + *in.metadata_problem});
    return;
  }
  for (const auto& p : partitions) {
    const auto name = partitionName(p.topic, p.partition);
    if (!p.metadata || p.metadata->leader < 0) {
      auto f = partitionFailure(SteadyCheck::kOffline, p);
      f.reason = p.metadata ? name + " has no leader: it takes no writes and serves no reads"
                            : name + " is not in the cluster's last metadata answer";
      out.push_back(std::move(f));
    }
  }
  for (const auto& p : partitions) {
    if (!p.metadata || p.metadata->leader < 0) continue;
    const auto min = in.min_insync.find(p.topic);
    const std::int32_t min_insync = min == in.min_insync.end() ? 1 : min->second;
    const auto isr = static_cast<std::int32_t>(p.metadata->isr.size());
    if (isr >= min_insync) continue;
    auto f = partitionFailure(SteadyCheck::kUnderMinIsr, p);
    f.observed = isr;
    f.bound = min_insync;
    f.objective = "min.insync.replicas";
    f.reason = partitionName(p.topic, p.partition) + " has " + std::to_string(isr) +
               " replica(s) in its ISR, below min.insync.replicas " + std::to_string(min_insync) +
               ": acks=all writes fail";
    out.push_back(std::move(f));
  }
}

// The longest of a partition's stall going on now and the gaps of `kind` that ended inside the
// window, when it is above `bound`.
void checkStalls(const SteadyInput& in, const Partitions& partitions, storage::GapKind kind,
                 std::optional<double> bound, std::vector<SteadyFailure>& out) {
  if (!bound) return;
  const bool ack = kind == storage::GapKind::kAck;
  const char* objective = ack ? "max_ack_stall_s" : "max_receive_stall_s";
  const char* what = ack ? "ack" : "receipt";
  const auto from_us = in.now_us - in.window_us;
  for (const auto& p : partitions) {
    const auto& age = ack ? p.ack_age_us : p.receive_age_us;
    std::optional<std::int64_t> longest_gap;
    std::int64_t gap_end = 0;
    for (const auto& gap : in.gaps) {
      if (gap.kind != kind || gap.topic != p.topic || gap.partition != p.partition) continue;
      if (gap.end_us < from_us || gap.end_us > in.now_us) continue;
      if (!longest_gap || gap.duration_us > *longest_gap) {
        longest_gap = gap.duration_us;
        gap_end = gap.end_us;
      }
    }
    const bool now_longer = age && (!longest_gap || *age >= *longest_gap);
    const auto observed = now_longer ? age : longest_gap;
    if (!observed || seconds(*observed) <= *bound) continue;
    auto f = partitionFailure(ack ? SteadyCheck::kAckStall : SteadyCheck::kReceiveStall, p);
    f.observed = seconds(*observed);
    f.bound = *bound;
    f.objective = objective;
    const auto name = partitionName(p.topic, p.partition);
    f.reason = now_longer
                   ? name + " has had no " + what + " for " + secondsText(*f.observed) +
                         " now, above " + objective + " " + secondsText(*bound)
                   : name + " had no " + what + " for " + secondsText(*f.observed) +
                         " in a stall that ended " + secondsText(seconds(in.now_us - gap_end)) +
                         " ago, above " + objective + " " + secondsText(*bound);
    out.push_back(std::move(f));
  }
}

void checkLost(const SteadyInput& in, const Partitions& partitions, std::int64_t max_lost,
               std::vector<SteadyFailure>& out) {
  for (const auto& p : partitions) {
    const auto found = in.lost.find({p.topic, p.partition});
    if (found == in.lost.end() || found->second <= max_lost) continue;
    auto f = partitionFailure(SteadyCheck::kLost, p);
    f.observed = static_cast<double>(found->second);
    f.bound = static_cast<double>(max_lost);
    f.objective = "max_lost";
    f.reason = partitionName(p.topic, p.partition) + " lost " + std::to_string(found->second) +
               " message(s) inside the window (acked, never read back), above max_lost " +
               std::to_string(max_lost);
    out.push_back(std::move(f));
  }
}

}  // namespace

const char* toString(SteadyCheck check) {
  switch (check) {
    case SteadyCheck::kProbe:
      return "probe";
    case SteadyCheck::kMetadata:
      return "metadata";
    case SteadyCheck::kOffline:
      return "offline";
    case SteadyCheck::kUnderMinIsr:
      return "under_min_insync";
    case SteadyCheck::kAckStall:
      return "ack_stall";
    case SteadyCheck::kReceiveStall:
      return "receive_stall";
    case SteadyCheck::kLost:
      return "lost";
  }
  return "probe";
}

SteadyBounds steadyBounds(const Objectives& objectives) {
  SteadyBounds bounds;
  if (const auto ack = stallLimit(objectives, "", "", StallKind::kAck)) {
    bounds.max_ack_stall_s = ack->seconds;
  }
  if (const auto receive = stallLimit(objectives, "", "", StallKind::kReceive)) {
    bounds.max_receive_stall_s = receive->seconds;
  }
  bounds.max_lost = objectives.max_lost.value_or(0);
  return bounds;
}

SteadyResult checkSteady(const SteadyInput& in) {
  SteadyResult result;
  result.bounds = steadyBounds(in.objectives);
  // Each partition once (a probe status raced with a metadata change may list one twice), in
  // order, so that failures come by topic and partition.
  Partitions partitions;
  std::set<std::pair<std::string, std::int32_t>> seen;
  for (const auto& p : in.partitions) {
    if (seen.emplace(p.topic, p.partition).second) partitions.push_back(p);
  }
  std::sort(partitions.begin(), partitions.end(),
            [](const SteadyPartition& a, const SteadyPartition& b) {
              return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
            });
  checkProbe(in, partitions, result.failures);
  checkMetadata(in, partitions, result.failures);
  // While the probe is not probing, its ages and gaps say nothing of the cluster.
  if (in.probing) {
    checkStalls(in, partitions, storage::GapKind::kAck, result.bounds.max_ack_stall_s,
                result.failures);
    checkStalls(in, partitions, storage::GapKind::kReceive, result.bounds.max_receive_stall_s,
                result.failures);
  }
  checkLost(in, partitions, result.bounds.max_lost, result.failures);
  result.steady = result.failures.empty();
  return result;
}

}  // namespace kfaild::analysis
