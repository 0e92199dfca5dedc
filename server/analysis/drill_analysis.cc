#include "server/analysis/drill_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <utility>

#include "server/analysis/shared_request.h"

namespace kfaild::analysis {

using common::Departure;
using common::EventKind;
using common::EventSource;
using common::GrayFault;
using storage::isEvent;
using storage::kindOf;
using storage::sourceOf;

namespace {

// Broker and client log lines carry millisecond timestamps.
constexpr std::int64_t kLogResolutionUs = 1'000;

using PartitionKey = std::pair<std::string, std::int32_t>;

bool contains(const std::vector<std::int32_t>& v, std::int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool isPartition(const storage::Event& e, const PartitionKey& key) {
  return e.topic && *e.topic == key.first && e.partition && *e.partition == key.second;
}

std::string seconds(std::int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(us) / 1e6);
  return text;
}

// One ack or receive: when, and of which message.
struct Mark {
  std::int64_t at_us = 0;
  std::int64_t seq = 0;
  std::int64_t send_us = 0;  // when the message was sent
};

// What one kind of one partition is judged against.
struct KindScope {
  const char* plural = "acks";  // "acks" | "receives", for the reasons
  std::int64_t fault_us = 0;
  std::int64_t window_start_us = 0;
  std::int64_t baseline_end_us = 0;  // the noise's gaps end by then (the fault, or an earlier one)
  std::int64_t limit_us = 0;         // the partition's end of observation
  std::int64_t interval_us = 0;
  bool timed_out = false;               // the observation ended on its timeout at limit_us
  const std::string* cut_by = nullptr;  // or was cut there by this (AnalysisInput::cut_by)
  const ProbeAtFault* at_fault = nullptr;
  std::vector<const ProbeHold*> holds;
  std::vector<std::pair<std::int64_t, std::int64_t>> idles;  // this kind only
  std::vector<const ProbeRefusal*> refusals;
  std::vector<ProbeCause> recreations;
};

std::int64_t overlap(std::int64_t a_start, std::int64_t a_end, std::int64_t b_start,
                     std::int64_t b_end) {
  return std::max<std::int64_t>(0, std::min(a_end, b_end) - std::max(a_start, b_start));
}

// Idle time inside `candidate`, counting only stretches that end at or after `ending_from`.
std::int64_t idleInside(std::vector<std::pair<std::int64_t, std::int64_t>> idles,
                        const Interval& candidate,
                        std::int64_t ending_from = std::numeric_limits<std::int64_t>::min()) {
  // Stretches may be recorded overlapping (e.g. twice across a restart of the probe); merged
  // first so that idle time is not counted twice, and one stretch is judged by where it ends.
  std::sort(idles.begin(), idles.end());
  std::int64_t total = 0;
  std::optional<std::pair<std::int64_t, std::int64_t>> run;
  const auto count = [&] {
    if (run && run->second >= ending_from) {
      total += overlap(run->first, run->second, candidate.start_us, candidate.end_us);
    }
  };
  for (const auto& idle : idles) {
    if (run && idle.first <= run->second) {
      run->second = std::max(run->second, idle.second);
      continue;
    }
    count();
    run = idle;
  }
  count();
  return total;
}

std::int64_t ticksInside(const std::vector<const ProbeHold*>& holds, const Interval& candidate) {
  std::int64_t total = 0;
  for (const auto* hold : holds) {
    const std::int64_t end = hold->end_us.value_or(std::max(candidate.end_us, hold->start_us));
    const std::int64_t length = end - hold->start_us;
    if (length <= 0) {
      if (hold->start_us >= candidate.start_us && hold->start_us <= candidate.end_us) {
        total += hold->ticks;
      }
      continue;
    }
    const std::int64_t inside = overlap(hold->start_us, end, candidate.start_us, candidate.end_us);
    if (inside == length) {
      total += hold->ticks;
    } else if (inside > 0) {
      total += std::llround(static_cast<double>(hold->ticks) * static_cast<double>(inside) /
                            static_cast<double>(length));
    }
  }
  return total;
}

// The consumer's restarted fetches ("consumer_restarted", detail {"acked_ago_us"}), by the
// partition each restarted, and its recreations ("consumer_recreated"), which restarted every
// partition's: read once per analysis, each partition's receive gaps take its own and all.
struct ConsumerRestarts {
  std::map<PartitionKey, std::vector<ProbeCause>> by_partition;
  std::vector<ProbeCause> recreations;
};
ConsumerRestarts consumerRestartsFromEvents(const std::vector<storage::Event>& events) {
  ConsumerRestarts found;
  for (const auto& e : events) {
    if (sourceOf(e) != EventSource::kProbe) continue;
    const auto kind = kindOf(e);
    if (kind == EventKind::kConsumerRecreated) {
      const auto detail = nlohmann::json::parse(e.detail, nullptr, false);
      const auto error = detail.is_object() ? detail.value("error", std::string()) : std::string();
      // One that failed left the old consumer reading as before.
      if (error.empty()) found.recreations.push_back(ProbeCause{e.t_us, "", kind, 0});
      continue;
    }
    if (kind != EventKind::kConsumerRestarted || !e.topic || !e.partition) continue;
    ProbeCause restart{e.t_us, "", kind, 0};
    const auto detail = nlohmann::json::parse(e.detail, nullptr, false);
    if (detail.is_object()) restart.waited_us = detail.value("acked_ago_us", std::int64_t{0});
    found.by_partition[{*e.topic, *e.partition}].push_back(std::move(restart));
  }
  return found;
}

}  // namespace

std::int64_t noiseRank(std::int64_t gaps) {
  // Nearest rank: the smallest rank whose share of the gaps is at least the percentile.
  return std::max<std::int64_t>(1, (gaps * kNoisePercentile + 99) / 100);
}

namespace {

// The longest interval between consecutive marks that ends after the fault and starts before the
// end of observation, or the open one at its end; `ended_by` is the index of the mark that closed
// it.
std::optional<Interval> findCandidate(const std::vector<Mark>& marks, const KindScope& scope,
                                      std::size_t& ended_by) {
  std::optional<Interval> candidate;
  for (std::size_t i = 1; i < marks.size(); ++i) {
    Interval gap{marks[i - 1].at_us, marks[i].at_us};
    if (gap.end_us <= scope.fault_us || gap.start_us >= scope.limit_us) continue;
    // After an observation that timed out, kfaild brought the node back itself: the ack that
    // came then does not end the gap, which was still open when observation ended.
    if ((scope.timed_out || scope.cut_by) && gap.end_us > scope.limit_us) {
      gap = Interval{gap.start_us, scope.limit_us, true};
    }
    if (!candidate || gap.duration_us() > candidate->duration_us()) {
      candidate = gap;
      ended_by = i;
    }
  }
  if (!marks.empty() && marks.back().at_us < scope.limit_us && scope.limit_us > scope.fault_us) {
    const Interval tail{marks.back().at_us, scope.limit_us, true};
    if (!candidate || tail.duration_us() > candidate->duration_us()) candidate = tail;
  }
  return candidate;
}

// The noise comes from the baseline only: gaps after the fault belong to the outage (a split
// outage is still one), never to the partition's normal behaviour. A high percentile rather
// than the maximum, so that one hiccup does not hide a stall. Gaps of zero length (acks
// delivered together) say nothing about the noise and are not counted.
void findNoise(const std::vector<Mark>& marks, const KindScope& scope, KindResult& r) {
  std::vector<Interval> baseline_gaps;
  for (std::size_t i = 1; i < marks.size(); ++i) {
    const Interval gap{marks[i - 1].at_us, marks[i].at_us};
    if (gap.start_us < scope.window_start_us || gap.end_us > scope.baseline_end_us) continue;
    if (gap.duration_us() <= 0) continue;
    baseline_gaps.push_back(gap);
  }
  r.noise_gaps = static_cast<std::int64_t>(baseline_gaps.size());
  if (baseline_gaps.empty()) return;
  const auto rank = noiseRank(r.noise_gaps);
  std::nth_element(
      baseline_gaps.begin(), baseline_gaps.begin() + (rank - 1), baseline_gaps.end(),
      [](const Interval& a, const Interval& b) { return a.duration_us() < b.duration_us(); });
  r.baseline = baseline_gaps[rank - 1];
}

// The probe's own share of the candidate: ticks held back, idle and refused time. Returns the
// client's error of a refusal that overlaps it.
std::string measureProbeShare(const std::vector<Mark>& marks, const KindScope& scope,
                              const Interval& candidate, std::size_t ended_by, KindResult& r) {
  r.held_ticks = ticksInside(scope.holds, candidate);
  r.probe_idle_us = idleInside(scope.idles, candidate);
  // Only idle time up to the send of the message that ended the candidate can have lengthened
  // it. An idle stretch ends with a send, and every message sent inside the candidate before that
  // one went unanswered or failed: the cluster was asked again after such a stretch and was not
  // ready. (A client that fails sends at once while the leader is gone, as the wire client does,
  // leaves a short idle stretch after each failure; a sender that woke late on a busy host makes
  // one of them long.) An open candidate has no such message: all its idle time counts.
  r.probe_idle_at_end_us = candidate.open
                               ? r.probe_idle_us
                               : idleInside(scope.idles, candidate, marks[ended_by].send_us);
  std::vector<std::pair<std::int64_t, std::int64_t>> refused;
  std::string refused_error;
  for (const auto* refusal : scope.refusals) {
    refused.emplace_back(refusal->start_us,
                         refusal->end_us.value_or(std::max(candidate.end_us, refusal->start_us)));
    if (overlap(refused.back().first, refused.back().second, candidate.start_us, candidate.end_us) >
        0) {
      refused_error = refusal->error;
    }
  }
  r.probe_refused_us = idleInside(std::move(refused), candidate);
  return refused_error;
}

// The probe's own cause inside the candidate, in words, when there is one (set in r.probe_cause).
bool probeCaused(const KindScope& scope, const Interval& candidate, KindResult& r) {
  for (const auto& recreation : scope.recreations) {
    if (recreation.at_us < candidate.start_us || recreation.at_us > candidate.end_us) continue;
    r.probe_cause = recreation;
    if (recreation.kind == EventKind::kConsumerRestarted) {
      r.reason =
          "kfaild restarted the probe consumer's fetch of this partition during it, its acked "
          "messages unread "
          "for " +
          seconds(recreation.waited_us) + ": the gap is the consumer's, not the cluster's";
    } else if (recreation.kind == EventKind::kConsumerRecreated) {
      r.reason =
          "kfaild recreated the probe's consumer during it (its reading of a partition was stuck), "
          "and every "
          "partition's reading started over: the gap is the consumer's, not the cluster's";
    } else {
      r.reason = "the probe's producer was recreated during it after a fatal error (" +
                 recreation.error + "): the gap is the probe's, not the cluster's";
    }
    return true;
  }
  return false;
}

// Why the candidate cannot be judged before its length is (open, the probe's state at the fault,
// refused sends), in words; empty when nothing stands in the way.
std::string unmeasurable(const KindScope& scope, const Interval& candidate, const KindResult& r,
                         const std::string& refused_error) {
  const std::int64_t duration = candidate.duration_us();
  if (candidate.open) {
    const std::string at = scope.cut_by ? "at " + *scope.cut_by : "when observation ended";
    std::string reason = "still stalled " + at + " (≥ " + seconds(duration) + ")";
    if (scope.timed_out && !scope.cut_by) {
      reason += " on observe_timeout_s; it resumed only after kfaild brought the node back";
    }
    return reason;
  }
  if (scope.at_fault && scope.at_fault->holding) {
    return "the probe was holding back sends at the fault";
  }
  if (scope.at_fault && scope.at_fault->oldest_outstanding_age_us > kLagAtFaultUs) {
    return "the probe was lagging at the fault (oldest outstanding message " +
           seconds(scope.at_fault->oldest_outstanding_age_us) + " old)";
  }
  if (r.probe_refused_us > kIdleToleranceIntervals * scope.interval_us) {
    return "the client refused the probe's sends for " + seconds(r.probe_refused_us) + " of it (" +
           refused_error + "): the cluster was not asked";
  }
  return {};
}

// `marks` sorted by time, then sequence number, so that among acks delivered at once the
// lowest sequence number is the one named as ending a gap.
KindResult analyseKind(const std::vector<Mark>& marks, const KindScope& scope) {
  KindResult r;
  r.count = static_cast<std::int64_t>(marks.size());
  std::size_t candidate_index = 0;  // marks[index] ended it, when closed
  const auto candidate = findCandidate(marks, scope, candidate_index);
  findNoise(marks, scope, r);
  const auto noise_intervals = r.noise_gaps;

  if (!candidate) {
    r.reason = std::string("no ") + scope.plural +
               (marks.size() < 2 ? " in the window" : " during the observation");
    return r;
  }
  r.longest_gap = candidate;
  if (!candidate->open) r.ended_by = EndedBy{marks[candidate_index].seq, candidate->end_us};
  const auto refused_error = measureProbeShare(marks, scope, *candidate, candidate_index, r);

  const std::int64_t duration = candidate->duration_us();
  if (probeCaused(scope, *candidate, r)) return r;
  if (auto reason = unmeasurable(scope, *candidate, r, refused_error); !reason.empty()) {
    r.reason = std::move(reason);
    return r;
  }
  const bool idle = r.probe_idle_at_end_us > kIdleToleranceIntervals * scope.interval_us;
  const std::string idle_reason = "the probe had nothing outstanding for " +
                                  seconds(r.probe_idle_at_end_us) +
                                  " of it before it sent the message that ended it";
  if (noise_intervals < kMinNoiseIntervals) {
    r.reason = idle
                   ? idle_reason
                   : std::string("too few ") + scope.plural +
                         " before the fault to know the noise (" + std::to_string(noise_intervals) +
                         " intervals, " + std::to_string(kMinNoiseIntervals) + " needed)";
    return r;
  }
  const std::int64_t noise = r.baseline ? r.baseline->duration_us() : 0;
  if (duration >= kSignificanceFactor * noise &&
      duration >= noise + kSignificanceIntervals * scope.interval_us) {
    // Part of it was the probe's own: how long the cluster kept it waiting is not known.
    if (idle) {
      r.reason = idle_reason;
      return r;
    }
    r.outcome = Outcome::kStall;
    r.stall = candidate;
    return r;
  }
  // Within the noise. Time the probe had nothing outstanding can only have lengthened the gap
  // (the cluster answered at both its ends), so a stall of the cluster's inside it was shorter
  // still: none, idle or not.
  r.outcome = Outcome::kNone;
  r.reason = seconds(duration) + " is within the noise (" + seconds(noise) + ", p" +
             std::to_string(kNoisePercentile) + " of " + std::to_string(noise_intervals) +
             " baseline gaps)";
  if (r.probe_idle_us > kIdleToleranceIntervals * scope.interval_us) {
    r.reason +=
        ", though the probe had nothing outstanding for " + seconds(r.probe_idle_us) + " of it";
  }
  return r;
}

// A phase below its resolution is "≤ resolution", never negative; one that starts at the fault
// and is shorter than the fault time's uncertainty cannot be told at all.
void settlePhase(Phases& ph, const char* name, std::optional<std::int64_t>& value,
                 const std::optional<std::int64_t>& resolution, const AnalysisInput& in,
                 bool from_fault) {
  if (!value) return;
  const std::int64_t uncertainty = from_fault ? in.fault_time_uncertainty_us : 0;
  if (uncertainty > 0 && uncertainty > *value) {
    ph.inconclusive[name] = "the fault time (" + in.fault_time_source + ") is uncertain by ± " +
                            seconds(uncertainty) + ", more than the phase's " +
                            seconds(std::max<std::int64_t>(*value, 0));
  }
  if (*value < resolution.value_or(0) || *value < 0) {
    ph.below_resolution.emplace_back(name);
    value = std::max<std::int64_t>(*value, 0);
  }
}

std::optional<std::int64_t> diff(std::optional<std::int64_t> later,
                                 std::optional<std::int64_t> earlier) {
  if (!later || !earlier) return std::nullopt;
  return *later - *earlier;
}

nlohmann::json intervalJson(const std::optional<Interval>& i) {
  if (!i) return nullptr;
  return {{"start_us", i->start_us},
          {"end_us", i->end_us},
          {"duration_us", i->duration_us()},
          {"open", i->open}};
}

template <typename T>
nlohmann::json optJson(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json kindJson(const KindResult& k) {
  return {{"outcome", toString(k.outcome)},
          {"stall", intervalJson(k.stall)},
          {"longest_gap", intervalJson(k.longest_gap)},
          {"baseline", intervalJson(k.baseline)},
          {"noise_gaps", k.noise_gaps},
          {"ended_by", k.ended_by
                           ? nlohmann::json{{"seq", k.ended_by->seq}, {"at_us", k.ended_by->at_us}}
                           : nlohmann::json(nullptr)},
          {"reason", k.reason},
          {"held_ticks", k.held_ticks},
          {"probe_idle_us", k.probe_idle_us},
          {"probe_idle_at_end_us", k.probe_idle_at_end_us},
          {"probe_refused_us", k.probe_refused_us},
          {"probe_cause", k.probe_cause ? nlohmann::json{{"kind", toString(k.probe_cause->kind)},
                                                         {"at_us", k.probe_cause->at_us},
                                                         {"error", k.probe_cause->error}}
                                        : nlohmann::json(nullptr)},
          {"count", k.count}};
}

nlohmann::json phasesJson(const Phases& p) {
  return {{"detection_us", optJson(p.detection_us)},
          {"election_us", optJson(p.election_us)},
          {"discovery_us", optJson(p.discovery_us)},
          {"resume_us", optJson(p.resume_us)},
          {"node_back_us", optJson(p.node_back_us)},
          {"fenced_at_us", optJson(p.fenced_at_us)},
          {"new_leader_at_us", optJson(p.new_leader_at_us)},
          {"client_update_at_us", optJson(p.client_update_at_us)},
          {"new_leader", optJson(p.new_leader)},
          {"detection_resolution_us", optJson(p.detection_resolution_us)},
          {"election_resolution_us", optJson(p.election_resolution_us)},
          {"discovery_resolution_us", optJson(p.discovery_resolution_us)},
          {"resume_resolution_us", optJson(p.resume_resolution_us)},
          {"node_back_resolution_us", optJson(p.node_back_resolution_us)},
          {"below_resolution", p.below_resolution},
          {"inconclusive", p.inconclusive}};
}

std::optional<std::int64_t> integerField(const nlohmann::json& detail, const char* key) {
  const auto it = detail.find(key);
  if (it == detail.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

}  // namespace

std::int64_t logResolutionUs(const storage::Event& e) {
  if (sourceOf(e) != EventSource::kBrokerLog ||
      e.detail.find("clock_uncertainty_us") == std::string::npos) {
    return kLogResolutionUs;
  }
  const auto detail = nlohmann::json::parse(e.detail, nullptr, false);
  if (!detail.is_object()) return kLogResolutionUs;
  return kLogResolutionUs + detail.value("clock_uncertainty_us", std::int64_t{0});
}

std::int64_t logResolutionUs(const std::vector<storage::Event>& events) {
  std::int64_t resolution = kLogResolutionUs;
  for (const auto& e : events) resolution = std::max(resolution, logResolutionUs(e));
  return resolution;
}

namespace {

// The gray fault's mechanism for the partition: what should have ended its ack stall, and
// whether it did. A stall it does not explain is inconclusive: it does not measure the mechanism;
// so is no stall where the mechanism's event is missing too (the fault did not take effect).
void explainGrayStall(const AnalysisInput& in, const RunAnalysis& out, PartitionResult& r,
                      bool departure_from_metadata, std::int64_t log_resolution_us) {
  MechanismScope scope;
  scope.topic = r.topic;
  scope.partition = r.partition;
  scope.role = r.role;
  scope.target = in.target;
  scope.fault_us = in.fault_us;
  scope.healed_us = in.gray->healed_us;
  scope.healed_uncertainty_us = in.gray->healed_uncertainty_us;
  scope.recovered_us = in.recovered_us;
  scope.departure = out.departure;
  scope.departure_at_us = out.departure_at_us;
  scope.departure_resolution_us =
      departure_from_metadata ? in.metadata_interval_us : log_resolution_us;
  scope.metadata_interval_us = in.metadata_interval_us;
  std::optional<std::pair<std::int64_t, std::int64_t>> stall;
  if (r.ack.outcome == Outcome::kStall && r.ack.stall) {
    stall = std::make_pair(r.ack.stall->start_us, r.ack.stall->end_us);
  }
  scope.drop = in.gray->kind == GrayFault::kIsolate && in.gray->mode == "drop";
  // The target alone in the ISR: below min.insync.replicas unless that is 1 (0: unknown, Kafka's
  // default 1).
  bool alone_below_min_isr = false;
  for (const auto& p : in.partitions) {
    if (p.topic == r.topic && p.partition == r.partition) alone_below_min_isr = p.min_insync > 1;
  }
  r.mechanism = explainStall(expectationFor(*in.gray, r.role, in.settings, alone_below_min_isr),
                             scope, stall, in.events);
  const bool unexplained = stall && !r.mechanism->explained;
  const bool no_effect = !stall && r.ack.outcome == Outcome::kNone && !r.mechanism->took_effect;
  if (unexplained || no_effect) {
    r.ack.outcome = Outcome::kInconclusive;
    r.ack.stall.reset();
    r.ack.reason = r.mechanism->reason;
  }
}

}  // namespace

Role roleOf(std::int32_t target, const PartitionAtFault& p) {
  if (p.isr.size() == 1 && p.isr.front() == target) return Role::kSoleReplica;
  if (contains(p.isr, target) && static_cast<std::int32_t>(p.isr.size()) - 1 < p.min_insync)
    return Role::kBelowMinIsr;
  if (p.leader == target) return Role::kLeader;
  if (!contains(p.replicas, target)) return Role::kNotAReplica;
  return contains(p.isr, target) ? Role::kFollowerInIsr : Role::kFollowerOutOfIsr;
}

Role grayRole(Role role, GrayFault fault) {
  if (fault == GrayFault::kIsolate) {
    if (role == Role::kLeader) return Role::kIsolatedLeader;
    if (role == Role::kFollowerInIsr) return Role::kIsolatedFollower;
  }
  if (fault == GrayFault::kThrottle) {
    if (role == Role::kLeader) return Role::kThrottledLeader;
    if (role == Role::kFollowerInIsr) return Role::kThrottledFollower;
  }
  return role;
}

Role baseRole(Role role) {
  switch (role) {
    case Role::kIsolatedLeader:
    case Role::kThrottledLeader:
      return Role::kLeader;
    case Role::kIsolatedFollower:
    case Role::kThrottledFollower:
      return Role::kFollowerInIsr;
    default:
      return role;
  }
}

namespace {

// The run's view that every partition's analysis shares: the departure and how finely its
// events time the phases.
struct RunScope {
  const AnalysisInput& in;
  // Events are compared with a fault time that may be off by its uncertainty.
  std::int64_t before_fault_us = 0;
  bool departure_from_metadata = false;
  std::int64_t log_resolution_us = kLogResolutionUs;
  std::int64_t resolution(bool from_metadata) const {
    return from_metadata ? in.metadata_interval_us : log_resolution_us;
  }
};

// How the target left: its fencing (the controller's log line or, without logs, the metadata)
// or a controlled shutdown. The earliest sign after the fault counts. True when it was read from
// the metadata.
bool findDeparture(const AnalysisInput& in, std::int64_t before_fault_us, RunAnalysis& out) {
  for (const auto& e : in.events) {
    if (e.t_us < before_fault_us || !e.broker || *e.broker != in.target) continue;
    std::optional<Departure> kind;
    if (isEvent(e, EventSource::kBrokerLog, EventKind::kFenced)) kind = Departure::kFenced;
    if (isEvent(e, EventSource::kBrokerLog, EventKind::kControlledShutdown)) {
      kind = Departure::kControlledShutdown;
    }
    if (!kind) continue;
    if (!out.departure_at_us || e.t_us < *out.departure_at_us) {
      out.departure = kind;
      out.departure_at_us = e.t_us;
    }
  }
  // A gray fault that fences nothing (isolate from brokers or clients, throttle) drops the target
  // from ISRs without it leaving: the metadata's isr_shrink is then no departure.
  const bool may_fence = !in.gray || in.gray->kind == GrayFault::kDiskFull ||
                         (in.gray->kind == GrayFault::kIsolate &&
                          (in.gray->from == "all" || in.gray->from == "quorum"));
  if (out.departure_at_us || !may_fence) return false;
  // No broker log: the first metadata sign of the target leaving, classified by the fault. A
  // restart signals the broker like a stop does, so it shuts down in a controlled way too,
  // unless it was a restart by SIGKILL.
  for (const auto& e : in.events) {
    if (e.t_us < in.fault_us || sourceOf(e) != EventSource::kMetadata || !e.broker ||
        *e.broker != in.target) {
      continue;
    }
    if (kindOf(e) != EventKind::kBrokerGone && kindOf(e) != EventKind::kIsrShrink) continue;
    if (!out.departure_at_us || e.t_us < *out.departure_at_us) out.departure_at_us = e.t_us;
  }
  if (!out.departure_at_us) return false;
  const bool controlled = !in.killed && (in.fault == "stop" || in.fault == "restart");
  out.departure = controlled ? Departure::kControlledShutdown : Departure::kFenced;
  return true;
}

// A sequence number stored and still pending (the ledger not yet pruned) counts once, as
// stored: the stored sample is final.
struct Entry {
  const storage::ProbeSample* sample = nullptr;
  bool pending = false;
};
using EntriesBySeq = std::map<std::int64_t, Entry>;

std::map<PartitionKey, EntriesBySeq> samplesByPartition(const AnalysisInput& in) {
  std::map<PartitionKey, EntriesBySeq> by_partition;
  for (const auto& s : in.samples) by_partition[{s.topic, s.partition}].try_emplace(s.seq, &s);
  for (const auto& s : in.pending) {
    by_partition[{s.topic, s.partition}].try_emplace(s.seq, Entry{&s, true});
  }
  return by_partition;
}

// Why a partition of the metadata at the fault is left out (see ExcludedPartition); empty when
// it is analysed.
class Exclusions {
 public:
  explicit Exclusions(const AnalysisInput& in) : in_(in) {
    // When the probe began probing a partition added to its topic (probe/partition_added).
    for (const auto& e : in.events) {
      if (!isEvent(e, EventSource::kProbe, EventKind::kPartitionAdded) || !e.topic ||
          !e.partition) {
        continue;
      }
      const PartitionKey key{*e.topic, *e.partition};
      const auto it = probed_since_.find(key);
      if (it == probed_since_.end() || e.t_us < it->second) probed_since_[key] = e.t_us;
    }
  }

  std::string of(const PartitionAtFault& p) const {
    const PartitionKey key{p.topic, p.partition};
    if (const auto it = probed_since_.find(key);
        it != probed_since_.end() && it->second > in_.window_start_us) {
      const auto from_fault = it->second - in_.fault_us;
      return "added " + seconds(std::abs(from_fault)) + (from_fault <= 0 ? " before" : " after") +
             " the fault: no baseline";
    }
    if (in_.probe_at_fault.empty()) return {};
    for (const auto& f : in_.probe_at_fault) {
      if (f.topic == p.topic && f.partition == p.partition) return {};
    }
    return "not probed at the fault: added to the topic after the probe last looked";
  }

 private:
  const AnalysisInput& in_;
  std::map<PartitionKey, std::int64_t> probed_since_;
};

// The probe's own causes of gaps for one partition: its producer's recreations (acks and
// receives), and its consumer's restarts of this partition's fetch and recreations (receives).
struct PartitionCauses {
  const std::vector<ProbeCause>& recreations;
  const std::vector<ProbeCause>* restarts = nullptr;  // this partition's, when any
  const std::vector<ProbeCause>& consumer_recreations;

  // The consumer's reading of the partition started over at or after `at_us`.
  bool consumerRestartedSince(std::int64_t at_us) const {
    const auto since = [at_us](const ProbeCause& c) { return c.at_us >= at_us; };
    return std::any_of(consumer_recreations.begin(), consumer_recreations.end(), since) ||
           (restarts && std::any_of(restarts->begin(), restarts->end(), since));
  }
};

// The samples step: counts the partition's sends and their fates into `r`, and returns its acks
// and receives sorted by time, then sequence number.
std::pair<std::vector<Mark>, std::vector<Mark>> countSamples(const EntriesBySeq& entries,
                                                             const PartitionCauses& causes,
                                                             PartitionResult& r) {
  std::vector<Mark> acks, receives;
  for (const auto& [seq, entry] : entries) {
    const auto& s = *entry.sample;
    ++r.sent;
    const bool acked = s.ack_error == 0 && s.ack_us.has_value();
    // An error is a fate even when the ledger still holds the message.
    if (s.ack_error != 0) ++r.failed;
    if (entry.pending) {
      if (s.ack_error == 0 && !s.ack_us) ++r.awaiting_ack;
      if (acked && !s.receive_us) ++r.awaiting_receive;
    } else if (acked && !s.receive_us) {
      ++r.lost;
      if (causes.consumerRestartedSince(*s.ack_us)) ++r.lost_consumer_stuck;
    }
    if (acked) acks.push_back({*s.ack_us, seq, s.send_us});
    if (s.receive_us) receives.push_back({*s.receive_us, seq, s.send_us});
  }
  if (!entries.empty()) {
    const std::int64_t span = entries.rbegin()->first - entries.begin()->first + 1;
    r.missing = span - static_cast<std::int64_t>(entries.size());
  }
  r.unresolved = r.awaiting_ack + r.awaiting_receive + r.missing;
  r.settled = r.unresolved == 0;

  const auto byTime = [](const Mark& a, const Mark& b) {
    return a.at_us != b.at_us ? a.at_us < b.at_us : a.seq < b.seq;
  };
  std::sort(acks.begin(), acks.end(), byTime);
  std::sort(receives.begin(), receives.end(), byTime);
  return {std::move(acks), std::move(receives)};
}

// What the partition's acks and receives are judged against.
std::pair<KindScope, KindScope> kindScopes(const AnalysisInput& in, const PartitionAtFault& p,
                                           bool sole, const PartitionCauses& causes) {
  KindScope scope;
  scope.fault_us = in.fault_us;
  scope.window_start_us = in.window_start_us;
  scope.baseline_end_us = std::min(in.fault_us, in.baseline_end_us.value_or(in.fault_us));
  // A sole replica can only resume once the node is back, so it is watched to the end of the
  // run's window (never less than the others).
  scope.limit_us = sole ? std::max(in.observe_end_us, in.window_end_us) : in.observe_end_us;
  scope.interval_us = in.interval_us;
  scope.timed_out = sole ? in.offline_timed_out : in.observe_timed_out;
  if (in.cut_by) scope.cut_by = &*in.cut_by;
  for (const auto& f : in.probe_at_fault) {
    if (f.topic == p.topic && f.partition == p.partition) scope.at_fault = &f;
  }
  for (const auto& h : in.holds) {
    if (h.topic == p.topic && h.partition == p.partition) scope.holds.push_back(&h);
  }
  KindScope receive_scope = scope;
  receive_scope.plural = "receives";
  for (const auto& idle : in.idles) {
    if (idle.topic != p.topic || idle.partition != p.partition) continue;
    auto& into = idle.kind == storage::GapKind::kAck ? scope : receive_scope;
    into.idles.emplace_back(idle.start_us, idle.end_us);
  }
  for (const auto& refusal : in.refusals) {
    if (refusal.topic == p.topic && refusal.partition == p.partition) {
      scope.refusals.push_back(&refusal);
      receive_scope.refusals.push_back(&refusal);
    }
  }
  scope.recreations = causes.recreations;
  receive_scope.recreations = causes.recreations;
  auto& receive_causes = receive_scope.recreations;
  if (causes.restarts) {
    receive_causes.insert(receive_causes.end(), causes.restarts->begin(), causes.restarts->end());
  }
  receive_causes.insert(receive_causes.end(), causes.consumer_recreations.begin(),
                        causes.consumer_recreations.end());
  return {std::move(scope), std::move(receive_scope)};
}

// The phases step, detection to discovery: from the departure and the events of the partition.
// A sole replica has no one to hand over to: it comes back with the node (node_back), so it has
// no election or discovery. Returns whether the new leader was read from the metadata.
bool handoverPhases(const RunScope& run, const RunAnalysis& out, const PartitionKey& key, Role role,
                    bool sole, Phases& ph) {
  const auto& in = run.in;
  if (out.departure == Departure::kFenced && out.departure_at_us) {
    ph.fenced_at_us = out.departure_at_us;
    ph.detection_us = *out.departure_at_us - in.fault_us;
    ph.detection_resolution_us =
        run.resolution(run.departure_from_metadata) + in.fault_time_uncertainty_us;
  }
  bool new_leader_from_metadata = false;
  for (const auto& e : in.events) {
    if (sole || e.t_us < run.before_fault_us || !isPartition(e, key)) continue;
    const bool leader_event = isEvent(e, EventSource::kMetadata, EventKind::kLeaderChange) ||
                              isEvent(e, EventSource::kBrokerLog, EventKind::kLeaderEpochStart);
    if (role == Role::kLeader && leader_event && e.broker && *e.broker != in.target &&
        (!ph.new_leader_at_us || e.t_us < *ph.new_leader_at_us)) {
      ph.new_leader_at_us = e.t_us;
      ph.new_leader = e.broker;
      new_leader_from_metadata = sourceOf(e) == EventSource::kMetadata;
    }
    if (role == Role::kFollowerInIsr && isEvent(e, EventSource::kMetadata, EventKind::kIsrShrink) &&
        e.broker && *e.broker == in.target &&
        (!ph.new_leader_at_us || e.t_us < *ph.new_leader_at_us)) {
      ph.new_leader_at_us = e.t_us;  // the leader stays; the ISR no longer waits for the target
      new_leader_from_metadata = true;
    }
    if (role == Role::kLeader && isEvent(e, EventSource::kClient, EventKind::kClientLeaderUpdate) &&
        e.detail.find("\"producer\"") != std::string::npos && e.broker && *e.broker != in.target &&
        (!ph.client_update_at_us || e.t_us < *ph.client_update_at_us)) {
      ph.client_update_at_us = e.t_us;
    }
  }
  ph.election_us = diff(ph.new_leader_at_us, out.departure_at_us);
  if (ph.election_us) {
    ph.election_resolution_us =
        run.resolution(run.departure_from_metadata || new_leader_from_metadata);
  }
  ph.discovery_us = diff(ph.client_update_at_us, ph.new_leader_at_us);
  if (ph.discovery_us) ph.discovery_resolution_us = run.resolution(new_leader_from_metadata);
  return new_leader_from_metadata;
}

// The phases step, the partition's return: node_back and resume for a sole replica, resume after
// the client's update (or the new leader) for the others.
void returnPhases(const RunScope& run, const PartitionResult& r, bool sole,
                  bool new_leader_from_metadata, Phases& ph) {
  const auto& in = run.in;
  // Resume ends a stall: none when the gap was within the noise, none while it is still open.
  const auto& gap = r.ack.longest_gap;
  const bool resumed = gap && !gap->open && r.ack.outcome != Outcome::kNone;
  if (!sole) {
    if (!resumed) return;
    const auto from = ph.client_update_at_us ? ph.client_update_at_us : ph.new_leader_at_us;
    ph.resume_us = diff(gap->end_us, from);
    if (ph.resume_us) {
      ph.resume_resolution_us = run.resolution(!ph.client_update_at_us && new_leader_from_metadata);
    }
    return;
  }
  // The node is back for this partition once it has registered again (the metadata's
  // broker_back), which can be before kfaild sees it back in every ISR of the cluster
  // (recovered_us): the partition may ack in between.
  std::optional<std::int64_t> back_at;
  for (const auto& e : in.events) {
    if (isEvent(e, EventSource::kMetadata, EventKind::kBrokerBack) && e.broker &&
        *e.broker == in.target && e.t_us > in.fault_us && (!back_at || e.t_us < *back_at)) {
      back_at = e.t_us;
    }
  }
  const bool back_from_metadata = back_at.has_value();
  if (!back_at) back_at = in.recovered_us;
  ph.node_back_us = diff(back_at, in.fault_us);
  // Either bound of the node's return is as fine as the metadata poll that shows it.
  if (ph.node_back_us) {
    ph.node_back_resolution_us = in.metadata_interval_us + in.fault_time_uncertainty_us;
  }
  if (resumed && back_at) {
    ph.resume_us = gap->end_us - *back_at;
    ph.resume_resolution_us = run.resolution(back_from_metadata);
  }
}

void findPhases(const RunScope& run, const RunAnalysis& out, const PartitionKey& key, Role role,
                bool sole, PartitionResult& r) {
  auto& ph = r.phases;
  const bool new_leader_from_metadata = handoverPhases(run, out, key, role, sole, ph);
  returnPhases(run, r, sole, new_leader_from_metadata, ph);
  const auto& in = run.in;
  settlePhase(ph, "detection", ph.detection_us, ph.detection_resolution_us, in, true);
  settlePhase(ph, "election", ph.election_us, ph.election_resolution_us, in, false);
  settlePhase(ph, "discovery", ph.discovery_us, ph.discovery_resolution_us, in, false);
  settlePhase(ph, "resume", ph.resume_us, ph.resume_resolution_us, in, false);
  settlePhase(ph, "node_back", ph.node_back_us, ph.node_back_resolution_us, in, true);
}

// One partition: its samples, its ack and receive outcomes, its phases and anomalies.
PartitionResult analysePartition(const RunScope& run, const RunAnalysis& out,
                                 const PartitionAtFault& p, const EntriesBySeq& entries,
                                 const PartitionCauses& causes) {
  const auto& in = run.in;
  const PartitionKey key{p.topic, p.partition};
  PartitionResult r;
  r.topic = p.topic;
  r.partition = p.partition;
  const Role role = roleOf(in.target, p);
  r.role = in.gray ? grayRole(role, in.gray->kind) : role;
  // Both resume only once the node is back.
  const bool sole = r.role == Role::kSoleReplica || r.role == Role::kBelowMinIsr;

  const auto [acks, receives] = countSamples(entries, causes, r);
  const auto [scope, receive_scope] = kindScopes(in, p, sole, causes);
  r.ack = analyseKind(acks, scope);
  r.receive = analyseKind(receives, receive_scope);
  if (in.clock_steps > 0) {
    for (auto* k : {&r.ack, &r.receive}) {
      k->outcome = Outcome::kInconclusive;
      k->stall.reset();
      k->reason = "kfaild's wall clock stepped " + std::to_string(in.clock_steps) +
                  " time(s) during the run: times across a step do not line up";
    }
  }

  findPhases(run, out, key, role, sole, r);

  for (const auto& e : in.events) {
    if (sourceOf(e) != EventSource::kProbe || !isPartition(e, key)) continue;
    if (kindOf(e) == EventKind::kDuplicate) ++r.duplicated;
    if (kindOf(e) == EventKind::kReordered) ++r.reordered;
  }
  return r;
}

// The mechanisms step, once every partition's outcomes are known: a gray fault's mechanism for
// each partition, then shared_request for the stalls of partitions the target does not replicate,
// which are judged against the others' (shared_request.h). Under a gray fault such a stall that no
// other partition explains keeps the gray fault's verdict on it: none, unexplained.
void explainMechanisms(const RunScope& run, RunAnalysis& out) {
  const auto& in = run.in;
  const auto unreplicatedStall = [](const PartitionResult& r) {
    return baseRole(r.role) == Role::kNotAReplica && r.ack.outcome == Outcome::kStall;
  };
  const auto explainGray = [&](PartitionResult& r) {
    if (in.gray) explainGrayStall(in, out, r, run.departure_from_metadata, run.log_resolution_us);
  };
  for (auto& r : out.partitions) {
    if (!unreplicatedStall(r)) explainGray(r);
  }
  for (auto& r : out.partitions) {
    if (!unreplicatedStall(r)) continue;
    if (auto shared = sharedRequest(in, out.partitions, r)) {
      r.mechanism = std::move(shared);
    } else {
      explainGray(r);
    }
  }
}

}  // namespace

RunAnalysis analyse(const AnalysisInput& in) {
  RunAnalysis out;
  out.fault = in.fault;
  out.target = in.target;
  out.fault_us = in.fault_us;
  out.fault_time_source = in.fault_time_source;
  out.fault_time_uncertainty_us = in.fault_time_uncertainty_us;
  out.recovered_us = in.recovered_us;

  RunScope run{in};
  run.before_fault_us = in.fault_us - 1'000'000 - in.fault_time_uncertainty_us;
  run.departure_from_metadata = findDeparture(in, run.before_fault_us, out);
  run.log_resolution_us = logResolutionUs(in.events);

  auto by_partition = samplesByPartition(in);
  const auto recreations = producerRecreationsFromEvents(in.events);
  const auto restarts = consumerRestartsFromEvents(in.events);
  const Exclusions exclusions(in);
  out.settled = true;
  out.conclusive = true;
  for (const auto& p : in.partitions) {
    if (auto reason = exclusions.of(p); !reason.empty()) {
      out.excluded.push_back({p.topic, p.partition, std::move(reason)});
      continue;
    }
    const auto partition_restarts = restarts.by_partition.find({p.topic, p.partition});
    const PartitionCauses causes{
        recreations,
        partition_restarts == restarts.by_partition.end() ? nullptr : &partition_restarts->second,
        restarts.recreations};
    auto r = analysePartition(run, out, p, by_partition[{p.topic, p.partition}], causes);
    out.settled = out.settled && r.settled;
    out.partitions.push_back(std::move(r));
  }
  explainMechanisms(run, out);
  for (const auto& r : out.partitions) {
    out.conclusive = out.conclusive && r.ack.outcome != Outcome::kInconclusive &&
                     r.receive.outcome != Outcome::kInconclusive;
  }
  return out;
}

void probeStretchesFromEvents(const std::vector<storage::Event>& events,
                              std::vector<ProbeHold>& holds, std::vector<ProbeIdle>& idles) {
  for (const auto& e : events) {
    if (sourceOf(e) != EventSource::kProbe) continue;
    const auto event_kind = kindOf(e);
    if (event_kind != EventKind::kHeldBack && event_kind != EventKind::kIdle) continue;
    if (!e.topic || !e.partition) continue;
    const auto detail = nlohmann::json::parse(e.detail, nullptr, false);
    if (detail.is_discarded() || !detail.is_object()) continue;
    const auto end_us = integerField(detail, "end_us");
    if (end_us && *end_us < e.t_us) continue;

    if (event_kind == EventKind::kHeldBack) {
      const auto end = detail.find("end_us");
      if (end == detail.end() || (!end->is_null() && !end_us)) continue;
      const auto ticks = integerField(detail, "ticks");
      if (!ticks || *ticks < 0) continue;
      const auto reason = detail.find("reason");
      if (reason != detail.end() && !reason->is_string()) continue;
      ProbeHold hold;
      hold.topic = *e.topic;
      hold.partition = *e.partition;
      hold.start_us = e.t_us;
      hold.end_us = end_us;
      hold.ticks = *ticks;
      if (reason != detail.end()) hold.reason = reason->get<std::string>();
      holds.push_back(std::move(hold));
      continue;
    }

    const auto kind = detail.find("kind");
    if (!end_us || kind == detail.end() || !kind->is_string()) continue;
    const auto gap_kind = storage::gapKindFromString(kind->get<std::string>());
    if (!gap_kind) continue;
    ProbeIdle idle;
    idle.topic = *e.topic;
    idle.partition = *e.partition;
    idle.kind = *gap_kind;
    idle.start_us = e.t_us;
    idle.end_us = *end_us;
    idles.push_back(std::move(idle));
  }
}

void probeRefusalsFromEvents(const std::vector<storage::Event>& events,
                             std::vector<ProbeRefusal>& refusals) {
  for (const auto& e : events) {
    if (!isEvent(e, EventSource::kProbe, EventKind::kRefused) || !e.topic || !e.partition) continue;
    const auto detail = nlohmann::json::parse(e.detail, nullptr, false);
    if (detail.is_discarded() || !detail.is_object()) continue;
    const auto end_us = integerField(detail, "end_us");
    const auto sends = integerField(detail, "sends");
    if (!end_us || *end_us < e.t_us || !sends || *sends < 0) continue;
    ProbeRefusal refusal;
    refusal.topic = *e.topic;
    refusal.partition = *e.partition;
    refusal.start_us = e.t_us;
    refusal.end_us = end_us;
    refusal.sends = *sends;
    if (const auto error = detail.find("error"); error != detail.end() && error->is_string()) {
      refusal.error = error->get<std::string>();
    }
    refusals.push_back(std::move(refusal));
  }
}

std::vector<ProbeCause> producerRecreationsFromEvents(const std::vector<storage::Event>& events) {
  std::vector<ProbeCause> found;
  for (const auto& e : events) {
    if (!isEvent(e, EventSource::kProbe, EventKind::kProducerRecreated)) continue;
    ProbeCause recreation{e.t_us, ""};
    const auto detail = nlohmann::json::parse(e.detail, nullptr, false);
    if (detail.is_object()) {
      if (const auto error = detail.find("error"); error != detail.end() && error->is_string()) {
        recreation.error = error->get<std::string>();
      }
    }
    found.push_back(std::move(recreation));
  }
  return found;
}

nlohmann::json toJson(const RunAnalysis& a) {
  nlohmann::json excluded = nlohmann::json::array();
  for (const auto& x : a.excluded) {
    excluded.push_back({{"topic", x.topic}, {"partition", x.partition}, {"reason", x.reason}});
  }
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& p : a.partitions) {
    parts.push_back({{"topic", p.topic},
                     {"partition", p.partition},
                     {"role", toString(p.role)},
                     {"ack", kindJson(p.ack)},
                     {"receive", kindJson(p.receive)},
                     {"sent", p.sent},
                     {"failed", p.failed},
                     {"lost", p.lost},
                     {"lost_consumer_stuck", p.lost_consumer_stuck},
                     {"unresolved", p.unresolved},
                     {"awaiting_ack", p.awaiting_ack},
                     {"awaiting_receive", p.awaiting_receive},
                     {"missing", p.missing},
                     {"settled", p.settled},
                     {"duplicated", p.duplicated},
                     {"reordered", p.reordered},
                     {"phases", phasesJson(p.phases)},
                     {"mechanism", p.mechanism ? toJson(*p.mechanism) : nlohmann::json(nullptr)}});
  }
  return {
      {"fault", a.fault},
      {"target", a.target},
      {"fault_us", a.fault_us},
      {"fault_time_source", a.fault_time_source},
      {"fault_time_uncertainty_us", a.fault_time_uncertainty_us},
      {"departure", a.departure ? nlohmann::json(toString(*a.departure)) : nlohmann::json(nullptr)},
      {"departure_at_us", optJson(a.departure_at_us)},
      {"recovered_us", optJson(a.recovered_us)},
      {"settled", a.settled},
      {"conclusive", a.conclusive},
      {"partitions", parts},
      {"excluded", excluded}};
}

}  // namespace kfaild::analysis
