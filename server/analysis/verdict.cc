#include "server/analysis/verdict.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace kfaild::analysis {
namespace {

using nlohmann::json;

double seconds(std::int64_t us) {
  return static_cast<double>(us) / 1e6;
}

CheckStatus compare(double measured, double threshold) {
  return measured <= threshold ? CheckStatus::kPass : CheckStatus::kFail;
}

Check partitionCheck(const std::string& objective, const std::string& source, double threshold,
                     const std::string& unit, int run, const PartitionResult& p) {
  Check c;
  c.objective = objective;
  c.source = source;
  c.threshold = threshold;
  c.unit = unit;
  c.run = run;
  c.topic = p.topic;
  c.partition = p.partition;
  c.role = toString(p.role);
  return c;
}

// A shared_request stall (shared_request.h) is the client's: the partition's own stall as the
// cluster saw it is what a stall objective judges, where it is known.
std::optional<std::int64_t> coupledClusterStall(const PartitionResult& p) {
  if (!p.mechanism || p.mechanism->mechanism != Mechanism::kSharedRequest) return std::nullopt;
  return p.mechanism->cluster_stall_us;
}

std::string coupledReason(const PartitionResult& p, std::int64_t client_us,
                          std::int64_t cluster_us) {
  const auto& w = *p.mechanism->waited_on;
  char text[320];
  std::snprintf(text, sizeof text,
                "shared_request: the client's stall was %.3f s, its batches waiting in the "
                "producer's requests to their leader behind %s-%d's; the cluster's own stall was "
                "%.3f s (a producer of its own would not have waited)",
                seconds(client_us), w.topic.c_str(), w.partition, seconds(cluster_us));
  return text;
}

void checkStall(std::vector<Check>& out, const Objectives& o, const std::string& fault, int run,
                const PartitionResult& p, StallKind kind) {
  const auto limit = stallLimit(o, fault, toString(p.role), kind);
  if (!limit) return;
  const auto& k = kind == StallKind::kAck ? p.ack : p.receive;
  auto c = partitionCheck(kind == StallKind::kAck ? "max_ack_stall_s" : "max_receive_stall_s",
                          limit->source, limit->seconds, "s", run, p);
  switch (k.outcome) {
    case Outcome::kStall:
      c.measured = seconds(k.stall->duration_us());
      if (const auto cluster_us = coupledClusterStall(p)) {
        c.measured = seconds(*cluster_us);
        c.reason = coupledReason(p, k.stall->duration_us(), *cluster_us);
      }
      c.status = compare(*c.measured, c.threshold);
      break;
    case Outcome::kNone:
      // Not significant against the partition's noise, but still a measured gap: a limit below
      // the noise is the objective's to judge.
      if (k.longest_gap) {
        c.measured = seconds(k.longest_gap->duration_us());
        c.status = compare(*c.measured, c.threshold);
      } else {
        c.measured = 0.0;
        c.status = CheckStatus::kPass;
      }
      c.reason = "no stall: " + k.reason;
      break;
    case Outcome::kInconclusive:
      c.status = CheckStatus::kInconclusive;
      c.reason =
          k.reason.empty() ? std::string("the analysis could not measure the stall") : k.reason;
      break;
  }
  out.push_back(std::move(c));
}

void checkCount(std::vector<Check>& out, const char* objective,
                const std::optional<std::int64_t>& limit, int run, const PartitionResult& p,
                std::int64_t measured) {
  if (!limit) return;
  auto c = partitionCheck(objective, objective, static_cast<double>(*limit), "messages", run, p);
  c.measured = static_cast<double>(measured);
  if (measured > *limit) {
    c.status = CheckStatus::kFail;  // counts only grow while messages settle
  } else if (!p.settled) {
    c.status = CheckStatus::kInconclusive;
    c.reason = std::to_string(p.unresolved) + " message(s) of the run had no fate when analysed";
  } else {
    c.status = CheckStatus::kPass;
  }
  out.push_back(std::move(c));
}

// max_lost on the messages the cluster may have lost: those counted lost while the probe's
// consumer read nothing from the partition (PartitionResult::lost_consumer_stuck) are not
// counted; when there are any and the rest pass, the check is inconclusive.
void checkLost(std::vector<Check>& out, const std::optional<std::int64_t>& limit, int run,
               const PartitionResult& p) {
  checkCount(out, "max_lost", limit, run, p, p.lost - p.lost_consumer_stuck);
  if (!limit || p.lost_consumer_stuck == 0 || out.back().status == CheckStatus::kFail) return;
  out.back().status = CheckStatus::kInconclusive;
  out.back().reason =
      std::to_string(p.lost_consumer_stuck) +
      " message(s) were counted lost while kfaild's consumer read nothing from the partition "
      "(it restarted the consumer's reading): whether the cluster lost them is not known";
}

void checkPhase(std::vector<Check>& out, const char* objective, const std::optional<double>& limit,
                int run, const PartitionResult& p, const char* phase,
                const std::optional<std::int64_t>& phase_us) {
  if (!limit || !phase_us) return;
  auto c = partitionCheck(objective, objective, *limit, "s", run, p);
  c.measured = seconds(*phase_us);
  c.status = compare(*c.measured, c.threshold);
  if (const auto why = p.phases.inconclusive.find(phase); why != p.phases.inconclusive.end()) {
    c.status = CheckStatus::kInconclusive;
    c.reason = why->second;
  }
  out.push_back(std::move(c));
}

// Why no fencing is the expected outcome of this mechanism, or "" when fencing is expected.
std::string whyNoFencing(const FaultMechanism& m) {
  if (m.target_is_controller) {
    return "the target is a KRaft controller: controllers are never fenced, so there is no "
           "detection phase";
  }
  if (m.fault == "pause" && m.pause_s && *m.pause_s < m.session_timeout_s) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "a pause of %.1f s is shorter than the session timeout (%.1f s): no fencing "
                  "is expected, so there is no detection phase",
                  *m.pause_s, m.session_timeout_s);
    return text;
  }
  return "";
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

std::optional<std::int64_t> intAt(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer())
    return std::nullopt;
  return object[key].get<std::int64_t>();
}

std::string textAt(const json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_string()
             ? object[key].get<std::string>()
             : std::string();
}

template <typename T>
json optJson(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

const char* toString(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kInconclusive:
      return "inconclusive";
    case CheckStatus::kNotApplicable:
      return "not_applicable";
  }
  return "inconclusive";
}

std::optional<CheckStatus> checkStatusFromString(const std::string& text) {
  if (text == "pass") return CheckStatus::kPass;
  if (text == "fail") return CheckStatus::kFail;
  if (text == "inconclusive") return CheckStatus::kInconclusive;
  if (text == "not_applicable") return CheckStatus::kNotApplicable;
  return std::nullopt;
}

Objectives objectivesFor(const Objectives& objectives, const FaultMechanism& m) {
  Objectives o = objectives;
  if (m.gray) {
    if (!o.defaulted.stall) return o;
    auto& fault = o.by_fault[common::toString(m.gray->kind)];
    for (const Role role : {Role::kIsolatedLeader, Role::kIsolatedFollower, Role::kThrottledLeader,
                            Role::kThrottledFollower, Role::kLeader, Role::kFollowerInIsr}) {
      // The roles a fault gives: isolate and throttle rename leader and follower.
      if (grayRole(baseRole(role), m.gray->kind) != role) continue;
      // The objective is per role, not per partition: the longer of what min.insync.replicas 1
      // and above would give (a leader cut from its followers: the ISR shrink, or the heal).
      const auto expected = expectationFor(*m.gray, role, m.settings, false);
      const auto alone = expectationFor(*m.gray, role, m.settings, true);
      if (expected.mechanism == Mechanism::kNone || expected.mechanism == Mechanism::kNodeBack) {
        continue;
      }
      double limit = static_cast<double>(std::max(expected.expected_us, alone.expected_us)) / 1e6 +
                     kGrayStallMarginS;
      // After `drop`, a heal's reconnect waits for TCP's retransmission backoff: up to the
      // fault's length again.
      const bool drop = m.gray->kind == common::GrayFault::kIsolate && m.gray->mode == "drop";
      if (drop && (expected.mechanism == Mechanism::kHeal || alone.mechanism == Mechanism::kHeal)) {
        limit = std::max(limit, 2.0 * static_cast<double>(m.gray->duration_us) / 1e6);
      }
      fault.by_role[toString(role)] = {limit, limit};
    }
    return o;
  }
  if (m.fault != "pause" || !m.pause_s) return o;
  if (o.defaulted.stall) {
    const double limit = *m.pause_s + kPauseStallMarginS;
    // Every role of a pause: the by_fault.pause level under every role of the defaults.
    auto& pause = o.by_fault["pause"];
    pause.stall = {limit, limit};
    for (const auto& [role, limits] : o.by_role) pause.by_role[role] = {limit, limit};
  }
  const double fenced_from_s = m.session_timeout_s - m.heartbeat_interval_s;
  if (o.defaulted.max_discovery_s && o.max_discovery_s && *m.pause_s >= fenced_from_s) {
    o.max_discovery_s = *o.max_discovery_s + *m.pause_s - fenced_from_s;
  }
  return o;
}

Verdict evaluate(const std::vector<RunAnalysis>& runs, const Objectives& o,
                 const std::string& fault, const std::vector<StallSample>& history,
                 const RegressionPolicy& policy) {
  FaultMechanism mechanism;
  mechanism.fault = fault;
  return evaluate(runs, o, mechanism, history, policy);
}

Verdict evaluate(const std::vector<RunAnalysis>& runs, const Objectives& o,
                 const FaultMechanism& mechanism, const std::vector<StallSample>& history,
                 const RegressionPolicy& policy) {
  const std::string& fault = mechanism.fault;
  Verdict v;
  v.objectives = o;
  v.policy = policy;
  using Key = std::tuple<std::string, std::string, StallKind>;
  std::map<Key, std::vector<double>> previous;
  for (const auto& s : history) previous[{s.topic, s.role, s.kind}].push_back(s.seconds);

  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& a = runs[i];
    const int run = static_cast<int>(i) + 1;
    bool detection_seen = false;
    for (const auto& p : a.partitions) {
      checkStall(v.checks, o, fault, run, p, StallKind::kAck);
      checkStall(v.checks, o, fault, run, p, StallKind::kReceive);
      checkLost(v.checks, o.max_lost, run, p);
      checkCount(v.checks, "max_duplicated", o.max_duplicated, run, p, p.duplicated);
      if (mechanism.settings.sends_retried) {
        checkCount(v.checks, "max_failed", o.max_failed, run, p, p.failed);
      } else if (o.max_failed) {
        auto c = partitionCheck("max_failed", "max_failed", static_cast<double>(*o.max_failed),
                                "messages", run, p);
        c.measured = static_cast<double>(p.failed);
        c.status = CheckStatus::kNotApplicable;
        c.reason =
            "the wire client does not retry: each send during a stall fails at once and the next "
            "tick is "
            "the retry, so a failed send is an attempt, not a message an application would lose";
        v.checks.push_back(std::move(c));
      }
      checkPhase(v.checks, "max_detection_s", o.max_detection_s, run, p, "detection",
                 p.phases.detection_us);
      checkPhase(v.checks, "max_discovery_s", o.max_discovery_s, run, p, "discovery",
                 p.phases.discovery_us);
      detection_seen = detection_seen || p.phases.detection_us.has_value();

      for (const auto kind : {StallKind::kAck, StallKind::kReceive}) {
        const auto& k = kind == StallKind::kAck ? p.ack : p.receive;
        if (k.outcome != Outcome::kStall) continue;
        const auto found = previous.find({p.topic, toString(p.role), kind});
        if (found == previous.end() ||
            found->second.size() < static_cast<std::size_t>(policy.min_runs))
          continue;
        const double stall = seconds(k.stall->duration_us());
        const double med = median(found->second);
        if (stall > policy.factor * med && stall - med >= policy.min_delta_s) {
          v.regressions.push_back(Regression{kind, toString(p.role), p.topic, p.partition, run,
                                             stall, med, med > 0 ? stall / med : 0.0,
                                             found->second.size()});
        }
      }
    }
    // Kill and pause are detected by the controller's session timeout: a run that shows none did
    // not observe what the objective is about, unless the mechanism fences nothing.
    if (o.max_detection_s && !detection_seen && (fault == "kill" || fault == "pause") &&
        a.departure != common::Departure::kControlledShutdown) {
      Check c;
      c.objective = c.source = "max_detection_s";
      c.threshold = *o.max_detection_s;
      c.unit = "s";
      c.run = run;
      c.reason = whyNoFencing(mechanism);
      c.status = c.reason.empty() ? CheckStatus::kInconclusive : CheckStatus::kNotApplicable;
      if (c.reason.empty())
        c.reason = "no partition's detection phase (fault → fenced) was observed";
      v.checks.push_back(std::move(c));
    }
    if (o.max_recovery_s) {
      Check c;
      c.objective = c.source = "max_recovery_s";
      c.threshold = *o.max_recovery_s;
      c.unit = "s";
      c.run = run;
      if (a.recovered_us) {
        c.measured = seconds(*a.recovered_us - a.fault_us);
        c.status = compare(*c.measured, c.threshold);
      } else {
        c.status = CheckStatus::kInconclusive;
        c.reason = "the node was not seen back in its ISRs";
      }
      v.checks.push_back(std::move(c));
    }
  }
  if (o.fail_on_regression.value_or(false)) {
    for (const auto& r : v.regressions) {
      Check c;
      c.objective = c.source = "fail_on_regression";
      c.threshold = r.median_s * policy.factor;
      c.measured = r.stall_s;
      c.unit = "s";
      c.run = r.run;
      c.topic = r.topic;
      c.partition = r.partition;
      c.role = r.role;
      c.status = CheckStatus::kFail;
      c.reason = std::string(toString(r.kind)) + " stall regressed against the median of " +
                 std::to_string(r.previous) + " earlier run(s)";
      v.checks.push_back(std::move(c));
    }
  }
  const auto any = [&v](CheckStatus s) {
    return std::any_of(v.checks.begin(), v.checks.end(),
                       [s](const Check& c) { return c.status == s; });
  };
  if (runs.empty()) {
    v.verdict = CheckStatus::kInconclusive;
    v.reason = "the drill has no analysed run";
  } else {
    v.verdict = any(CheckStatus::kFail)           ? CheckStatus::kFail
                : any(CheckStatus::kInconclusive) ? CheckStatus::kInconclusive
                                                  : CheckStatus::kPass;
  }
  return v;
}

Verdict unfinishedVerdict(const Objectives& objectives, const std::string& state,
                          const std::string& reason) {
  Verdict v;
  v.verdict = CheckStatus::kInconclusive;
  v.objectives = objectives;
  v.reason = "the drill " + state + (reason.empty() ? std::string() : ": " + reason);
  return v;
}

std::vector<StallSample> stallSamplesOf(const json& result) {
  std::vector<StallSample> out;
  const auto& runs = result.is_object() ? result.value("runs", json()) : json();
  if (!runs.is_array()) return out;
  for (const auto& run : runs) {
    if (textAt(run, "state") != "done" || !run.contains("analysis") || !run["analysis"].is_object())
      continue;
    const auto& parts = run["analysis"].value("partitions", json());
    if (!parts.is_array()) continue;
    for (const auto& p : parts) {
      for (const auto kind : {StallKind::kAck, StallKind::kReceive}) {
        const auto& k = p.is_object() ? p.value(toString(kind), json()) : json();
        const auto outcome = common::outcomeFromString(textAt(k, "outcome"));
        const char* field = outcome == Outcome::kStall  ? "stall"
                            : outcome == Outcome::kNone ? "longest_gap"
                                                        : nullptr;
        if (!field || !k.is_object() || !k.contains(field) || !k[field].is_object() ||
            k[field].value("open", false)) {
          continue;
        }
        if (auto d = intAt(k[field], "duration_us")) {
          out.push_back({textAt(p, "topic"), textAt(p, "role"), kind, seconds(*d)});
        }
      }
    }
  }
  return out;
}

void addProfile(Verdict& verdict, const std::string& primary, const std::string& profile,
                const Verdict& theirs) {
  if (verdict.profiles.empty()) verdict.profiles.emplace_back(primary, verdict.verdict);
  verdict.profiles.emplace_back(profile, theirs.verdict);
  for (auto c : theirs.checks) {
    c.profile = profile;
    verdict.checks.push_back(std::move(c));
  }
  const auto rank = [](CheckStatus s) {
    return s == CheckStatus::kFail ? 2 : s == CheckStatus::kInconclusive ? 1 : 0;
  };
  if (rank(theirs.verdict) > rank(verdict.verdict)) verdict.verdict = theirs.verdict;
  if (verdict.reason.empty() && !theirs.reason.empty()) {
    verdict.reason = "profile " + profile + ": " + theirs.reason;
  }
}

json toJson(const Verdict& v) {
  json checks = json::array();
  for (const auto& c : v.checks) {
    checks.push_back({{"objective", c.objective},
                      {"source", c.source},
                      {"threshold", c.threshold},
                      {"measured", optJson(c.measured)},
                      {"unit", c.unit},
                      {"status", toString(c.status)},
                      {"run", c.run},
                      {"topic", optJson(c.topic)},
                      {"partition", optJson(c.partition)},
                      {"role", optJson(c.role)},
                      {"reason", c.reason}});
    if (c.profile) checks.back()["profile"] = *c.profile;
  }
  json regressions = json::array();
  for (const auto& r : v.regressions) {
    regressions.push_back({{"kind", toString(r.kind)},
                           {"role", r.role},
                           {"topic", r.topic},
                           {"partition", r.partition},
                           {"run", r.run},
                           {"stall_s", r.stall_s},
                           {"median_s", r.median_s},
                           {"factor", r.factor},
                           {"previous", r.previous}});
  }
  json out = {{"verdict", toString(v.verdict)},
              {"objectives", toJson(v.objectives)},
              {"checks", std::move(checks)},
              {"regressions", std::move(regressions)},
              {"regression", toJson(v.policy)}};
  if (!v.reason.empty()) out["reason"] = v.reason;
  if (!v.profiles.empty()) {
    auto& profiles = out["profiles"] = json::array();
    for (const auto& [name, status] : v.profiles) {
      profiles.push_back({{"profile", name}, {"verdict", toString(status)}});
    }
  }
  return out;
}

}  // namespace kfaild::analysis
