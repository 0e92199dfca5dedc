#pragma once

// A drill's verdict: its runs' analyses checked against the effective objectives (objectives.h),
// and each run's stalls compared with earlier drills'. Pure: the caller reads the earlier drills.
//
// Checks, one per (objective, run, partition) where the objective applies:
//   max_ack_stall_s / max_receive_stall_s  every partition with a limit for its role and the fault.
//        outcome stall → the stall; none → the longest gap (not significant, still compared);
//        inconclusive → inconclusive with the analysis' reason. A stall whose mechanism is
//        shared_request (shared_request.h) is the client's: the check measures the partition's
//        own stall as the cluster saw it (cluster_stall_us) where it is known, and its reason
//        gives the client's figure and the partition it waited on.
//   max_lost / max_duplicated / max_failed  every partition. A count above the limit fails even
//        while the partition is unsettled (counts only grow); otherwise unsettled → inconclusive.
//   max_detection_s  every partition whose detection phase was observed; a kill or pause whose
//        run shows no fencing at all gets one check (no partition): not applicable where the
//        mechanism fences nothing (a pause shorter than the session timeout, a KRaft
//        controller's process), else inconclusive. A phase the analysis could not tell from
//        the fault time's uncertainty is inconclusive with its reason.
//   max_discovery_s  every partition whose client-discovery phase was observed.
//   max_recovery_s   per run (no partition): fault → the node back; unset → inconclusive.
//   regression       only with fail_on_regression: one failing check per regression.
// Verdict: fail if any check fails; else inconclusive if any is inconclusive; else pass. A check
// that is not applicable states why and does not change the verdict.
//
// Where the fault's mechanism changes what to expect (FaultMechanism), the defaults that do not
// fit it are derived from it (objectivesFor): docs/CONFIG.md, "Objectives", says why.
//
// Regression: a run's stall (outcome stall) of a kind, role and topic is compared with the median
// of the same kind, role and topic over `history` (the earlier drills' values, the caller keeps
// the last RegressionPolicy::window drills of the same cluster and fault). A regression needs at
// least min_runs earlier values, a stall > factor × median, and stall − median ≥ min_delta_s.
// A regression is reported apart and does not change the verdict unless fail_on_regression.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/analysis/drill_analysis.h"
#include "server/analysis/objectives.h"

namespace kfaild::analysis {

enum class CheckStatus { kPass, kFail, kInconclusive, kNotApplicable };
const char* toString(CheckStatus status);
std::optional<CheckStatus> checkStatusFromString(const std::string& text);

struct Check {
  std::string objective;  // "max_ack_stall_s", ...
  std::string source;     // the key it comes from ("by_fault.kill.max_ack_stall_s")
  double threshold = 0;
  std::optional<double> measured;
  std::string unit;  // "s" or "messages"
  CheckStatus status = CheckStatus::kInconclusive;
  int run = 0;
  std::optional<std::string> topic;
  std::optional<std::int32_t> partition;
  std::optional<std::string> role;
  std::string reason;
  std::optional<std::string>
      profile;  // a client profile's check (addProfile); unset: the primary's
};

struct Regression {
  StallKind kind = StallKind::kAck;
  std::string role;
  std::string topic;
  std::int32_t partition = 0;
  int run = 0;
  double stall_s = 0;
  double median_s = 0;
  double factor = 0;         // stall / median
  std::size_t previous = 0;  // earlier values the median is taken over
};

// One earlier stall: a run of an earlier drill of the same cluster and fault.
struct StallSample {
  std::string topic;
  std::string role;
  StallKind kind = StallKind::kAck;
  double seconds = 0;
};

struct Verdict {
  CheckStatus verdict = CheckStatus::kInconclusive;
  Objectives objectives;
  std::vector<Check> checks;
  std::vector<Regression> regressions;
  RegressionPolicy policy;
  std::string reason;  // set when the drill did not finish (failed / aborted)
  // With client profiles (addProfile): each profile's own verdict, the primary's first.
  std::vector<std::pair<std::string, CheckStatus>> profiles;
};

// Kafka's default broker.session.timeout.ms and broker.heartbeat.interval.ms, in seconds.
inline constexpr double kDefaultSessionTimeoutS = 9.0;
inline constexpr double kDefaultHeartbeatIntervalS = 2.0;

// What the drill did to what, as far as the objectives care.
struct FaultMechanism {
  std::string fault;              // kill | stop | pause | restart
  std::optional<double> pause_s;  // a pause's length
  double session_timeout_s = kDefaultSessionTimeoutS;
  double heartbeat_interval_s = kDefaultHeartbeatIntervalS;
  bool target_is_controller = false;  // a KRaft controller: never fenced
  // Gray faults (isolate, throttle, disk_full): what was done, and the settings the mechanisms
  // depend on (gray_mechanism.h). session_timeout_s above is not used for them: settings has it.
  std::optional<GrayFaultInput> gray;
  MechanismSettings settings;
};

// The objectives a drill of `mechanism` is judged against: `objectives`, with the limits still at
// their defaults (Objectives::defaulted) derived for a pause:
//   stall limits (every role)  pause_s + kPauseStallMarginS: a frozen leader's clients wait on
//                              its connections until it resumes, its followers until fencing
//                              or the resume, whichever is first.
//   max_discovery_s            when the pause is at least the session timeout minus one
//                              heartbeat interval (fencing possible before the resume):
//                              default + pause_s − (session_timeout_s − heartbeat_interval_s),
//                              since no client can discover the new leader before the frozen
//                              connection gives way at the resume.
// For a gray fault, the stall limits still at their defaults become, per gray role
// (isolated_* / throttled_*, and leader / follower for disk_full), the expected stall of the
// role's mechanism (expectationFor) plus kGrayStallMarginS, under by_fault.F.by_role.R. A role
// whose mechanism is none or node_back keeps the defaults.
inline constexpr double kPauseStallMarginS = 5.0;
inline constexpr double kGrayStallMarginS = 5.0;
Objectives objectivesFor(const Objectives& objectives, const FaultMechanism& mechanism);

// `runs`: the analyses of the drill's runs (run numbers from 1, in order). `objectives` are taken
// as they are: the caller derives them (objectivesFor).
Verdict evaluate(const std::vector<RunAnalysis>& runs, const Objectives& objectives,
                 const FaultMechanism& mechanism, const std::vector<StallSample>& history,
                 const RegressionPolicy& policy);
// The same for a mechanism told by its fault alone.
Verdict evaluate(const std::vector<RunAnalysis>& runs, const Objectives& objectives,
                 const std::string& fault, const std::vector<StallSample>& history,
                 const RegressionPolicy& policy);

// A drill that ended failed or aborted: never pass, whatever its runs measured.
Verdict unfinishedVerdict(const Objectives& objectives, const std::string& state,
                          const std::string& reason);

// The stalls of a stored drill result ({"runs":[{"state":"done","analysis":{...}}]}), for the
// history of later drills: outcome stall, and none's longest gap (a measured non-stall).
std::vector<StallSample> stallSamplesOf(const nlohmann::json& result);

// Adds client profile `profile`'s verdict (evaluated on its own analyses) to the drill's, whose
// own checks are the primary profile's (`primary`): its checks are appended marked with the
// profile, and the drill's verdict becomes the worst of all (fail, then inconclusive, then pass),
// so an objective any profile misses fails the drill, naming the profile.
void addProfile(Verdict& verdict, const std::string& primary, const std::string& profile,
                const Verdict& theirs);

nlohmann::json toJson(const Verdict& verdict);

}  // namespace kfaild::analysis
