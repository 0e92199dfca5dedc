#include "server/drill/observed_run.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "server/analysis/rolling.h"
#include "server/common/json_text.h"
#include "server/drill/analysis_inputs.h"
#include "server/drill/event_log.h"

namespace kfaild::drill {

using analysis::DepartureKind;
using common::EventKind;
using common::EventSource;

namespace {

constexpr std::int64_t kSecond = 1'000'000;
// How often the watch reads the cluster, the probe and the metadata's events.
constexpr std::int64_t kWatchPollUs = 500'000;
// How long the probe's state at each poll is kept: a fault is found at most a session timeout
// (and a poll) after it happened.
constexpr std::int64_t kProbeMemoryUs = 120 * kSecond;
// A fault's effect can begin before its first sign (a graceful shutdown moves leadership before the
// controller logs its grant): a step's observation ends this long before the next fault's time.
constexpr std::int64_t kSignLeadUs = kSecond;
// A mark names the departure that follows it; one this much before it is the same fault seen
// early (the mark's clock, the metadata's poll).
constexpr std::int64_t kMarkLeadUs = kSecond;

const char* judgedAs(const std::optional<analysis::DepartureFound>& departure) {
  if (!departure) return "observed";
  if (departure->kind == DepartureKind::kFenced) return "kill";
  if (departure->kind == DepartureKind::kControlledShutdown) return "stop";
  return "observed";
}

// When the fault was seen: its departure's first sign, or its placed time (a mark). Whole again is
// looked for after this, not after the placed time, which lies earlier for a departure the
// metadata showed: the cluster looked whole in between.
std::int64_t seenUs(const ObservedFault& f) {
  return f.departure ? std::max(f.fault_us, f.departure->at_us) : f.fault_us;
}

// A departure's fault time and its ± (observed_run.h).
void departureFault(const analysis::DepartureFound& d, std::int64_t session_timeout_us,
                    std::int64_t heartbeat_us, ObservedFault& out) {
  out.time_source = std::string("departure:") + analysis::toString(d.kind);
  if (d.kind == DepartureKind::kFenced) {
    // Never after the departure's first sign (a metadata poll may show it a moment earlier).
    out.fault_us = std::min(d.kind_at_us - session_timeout_us + heartbeat_us / 2, d.at_us);
    out.uncertainty_us = heartbeat_us / 2 + d.kind_resolution_us;
  } else if (d.kind == DepartureKind::kUnregistered || d.kind == DepartureKind::kLeaderLost) {
    // Seen in the metadata, which shows a dead broker unregistered (and its leadership gone) only
    // at its fencing, up to a session timeout after it died: the fault lies in
    // [sign − session timeout − resolution, sign], placed at the middle. Placed at the sign, a
    // partition whose stall ended at its own ISR shrink, a poll before the sign, lost that stall
    // (the stall is the longest gap ending after the fault).
    const auto span = session_timeout_us + d.resolution_us;
    out.fault_us = d.at_us - span / 2;
    out.uncertainty_us = span - span / 2;
  } else {
    out.fault_us = d.at_us;
    out.uncertainty_us = d.resolution_us;
  }
}

nlohmann::json toJson(const ObservedMark& mark) {
  return {{"at_us", mark.at_us},
          {"broker", mark.broker ? nlohmann::json(*mark.broker) : nlohmann::json(nullptr)},
          {"by", mark.by}};
}

nlohmann::json toJson(const analysis::DepartureFound& d) {
  return {{"broker", d.broker},
          {"kind", analysis::toString(d.kind)},
          {"at_us", d.at_us},
          {"resolution_us", d.resolution_us},
          {"source", common::toString(d.source)},
          {"event", common::toString(d.event)},
          {"kind_at_us", d.kind_at_us},
          {"topic", d.topic ? nlohmann::json(*d.topic) : nlohmann::json(nullptr)},
          {"partition", d.partition ? nlohmann::json(*d.partition) : nlohmann::json(nullptr)},
          {"back_at_us", d.back_at_us ? nlohmann::json(*d.back_at_us) : nlohmann::json(nullptr)}};
}

nlohmann::json toJson(const ObservedFault& f) {
  return {{"broker", f.broker >= 0 ? nlohmann::json(f.broker) : nlohmann::json(nullptr)},
          {"fault_us", f.fault_us},
          {"uncertainty_us", f.uncertainty_us},
          {"time_source", f.time_source},
          {"judged_as", f.judged_as},
          {"departure", f.departure ? toJson(*f.departure) : nlohmann::json(nullptr)},
          {"mark", f.mark ? toJson(*f.mark) : nlohmann::json(nullptr)}};
}

}  // namespace

void ObservedMarks::open(std::int64_t drill_id, std::int64_t began_us) {
  std::lock_guard lock(mutex_);
  drill_ = drill_id;
  began_us_ = began_us;
  marks_.clear();
}

void ObservedMarks::close() {
  std::lock_guard lock(mutex_);
  drill_.reset();
}

std::optional<std::pair<std::int64_t, std::int64_t>> ObservedMarks::current() const {
  std::lock_guard lock(mutex_);
  if (!drill_) return std::nullopt;
  return std::make_pair(*drill_, began_us_);
}

bool ObservedMarks::add(std::int64_t drill_id, const ObservedMark& mark) {
  std::lock_guard lock(mutex_);
  if (!drill_ || *drill_ != drill_id) return false;
  marks_.push_back(mark);
  return true;
}

std::vector<ObservedMark> ObservedMarks::marks() const {
  std::lock_guard lock(mutex_);
  return marks_;
}

std::vector<ObservedFault> observedFaults(const std::vector<analysis::DepartureFound>& departures,
                                          const std::vector<ObservedMark>& marks,
                                          std::int64_t session_timeout_us,
                                          std::int64_t heartbeat_us) {
  std::vector<ObservedFault> out;
  for (const auto& d : departures) {
    ObservedFault f;
    f.departure = d;
    f.broker = d.broker;
    f.judged_as = judgedAs(d);
    departureFault(d, session_timeout_us, heartbeat_us, f);
    out.push_back(std::move(f));
  }
  auto sorted = marks;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.at_us < b.at_us; });
  for (const auto& m : sorted) {
    // The first departure not yet named at or after the mark, of its broker when it names one.
    auto named = std::find_if(out.begin(), out.end(), [&m](const ObservedFault& f) {
      return f.departure && !f.mark && f.departure->at_us >= m.at_us - kMarkLeadUs &&
             (!m.broker || *m.broker == f.broker);
    });
    if (named != out.end()) {
      named->mark = m;
      named->fault_us = m.at_us;
      named->uncertainty_us = 0;
      named->time_source = "mark";
      continue;
    }
    ObservedFault f;
    f.mark = m;
    f.broker = m.broker.value_or(-1);
    f.fault_us = m.at_us;
    f.time_source = "mark";
    f.judged_as = judgedAs(std::nullopt);
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.fault_us < b.fault_us; });
  return out;
}

ObservedRun::ObservedRun(RunParts parts, storage::DrillRecord& drill, const DrillSpec& spec,
                         ObservedMarks& marks, const analysis::Objectives& objectives)
    : parts_(parts),
      deps_(parts.deps),
      drill_(drill),
      spec_(spec),
      marks_(marks),
      objectives_(objectives) {}

bool ObservedRun::interrupted() const {
  return parts_.worker.stopRequested() || parts_.queue.abortRequested();
}

std::string ObservedRun::interruption(const char* phase) const {
  return std::string(parts_.worker.stopRequested() ? "kfaild stopped during "
                                                   : "aborted on request during ") +
         phase;
}

std::pair<DrillState, std::string> ObservedRun::execute() {
  // Marks are taken from the drill's start: a chaos tool may inject during the baseline.
  marks_.open(drill_.id, drill_.started_us.value_or(deps_.clock.wallNow()));
  struct Closer {
    ObservedMarks& marks;
    ~Closer() { marks.close(); }
  } closer{marks_};
  if (!preflight()) return {DrillState::kFailed, drill_.reason};
  if (!baseline()) return {DrillState::kAborted, interruption("baseline")};
  if (!watch()) {
    result_["observed"] = {{"window_s", spec_.options.window_s},
                           {"marks", nlohmann::json::array()},
                           {"faults", nlohmann::json::array()}};
    for (const auto& m : marks_.marks()) result_["observed"]["marks"].push_back(toJson(m));
    drill_.result = common::jsonText(result_);
    return {DrillState::kAborted, interruption("observe")};
  }
  auto faults = faultsSoFar(false);
  std::vector<std::int32_t> departed;
  for (const auto& f : faults) {
    if (f.broker >= 0 && std::find(departed.begin(), departed.end(), f.broker) == departed.end())
      departed.push_back(f.broker);
  }
  setState(DrillState::kAnalyse);
  storeFailoverLogs(deps_, departed, baseline_start_us_);
  faults = faultsSoFar(true);
  analyseSteps(faults);
  if (interrupted()) return {DrillState::kAborted, interruption("analyse")};
  return {DrillState::kDone, ""};
}

void ObservedRun::setState(DrillState state, const std::string& reason) {
  parts_.records.setState(drill_, state, reason);
}

bool ObservedRun::preflight() {
  setState(DrillState::kPreflight);
  auto facts = parts_.guards.read();
  if (auto reason = checkWithFacts(parts_.guards.base(-1, spec_), facts,
                                   parts_.recovery.openProblem(drill_.id))) {
    drill_.reason = "refused: " + *reason;
    return false;
  }
  min_insync_ = facts.min_insync;
  std::vector<std::int32_t> brokers;
  if (const auto observed = deps_.view.latest(); observed.snapshot) {
    for (const auto& b : observed.snapshot->brokers) brokers.push_back(b.id);
  }
  settings_ = readClusterSettings(deps_.admin, brokers, brokers.empty() ? -1 : brokers.front());
  probe_client_ = deps_.probe.status().client_settings;
  return true;
}

bool ObservedRun::baseline() {
  setState(DrillState::kBaseline);
  steps_at_baseline_ = deps_.clock.steps();
  baseline_start_us_ = deps_.clock.wallNow();
  std::string missing;
  pollCluster(missing);
  if (!parts_.queue.sleep(spec_.options.baseline_s * kSecond)) return false;
  baseline_end_us_ = deps_.clock.wallNow();
  return true;
}

bool ObservedRun::pollCluster(std::string& missing) {
  const auto now = deps_.clock.wallNow();
  const auto observed = deps_.view.latest();
  if (observed.snapshot) {
    auto partitions = partitionsOf(*observed.snapshot, min_insync_);
    const auto same = [](const analysis::PartitionAtFault& a, const analysis::PartitionAtFault& b) {
      return a.topic == b.topic && a.partition == b.partition && a.leader == b.leader &&
             a.isr == b.isr && a.replicas == b.replicas;
    };
    if (leadership_.empty() ||
        !std::equal(partitions.begin(), partitions.end(), leadership_.back().partitions.begin(),
                    leadership_.back().partitions.end(), same)) {
      leadership_.push_back({observed.snapshot_at, std::move(partitions)});
    }
  }
  probe_.emplace_back(now, probeSnapshot(deps_));
  while (!probe_.empty() && probe_.front().first < now - kProbeMemoryUs) probe_.pop_front();
  auto in = parts_.guards.base(-1, spec_);
  in.cluster = observed.snapshot ? &*observed.snapshot : nullptr;
  in.min_insync = min_insync_;
  if (!observed.reachable) in.cluster_problem = "the cluster does not answer";
  const auto reason = checkGuards(in);
  missing = reason.value_or("");
  const bool whole = !reason;
  if (whole_.empty() || whole_.back().second != whole) whole_.emplace_back(now, whole);
  return whole;
}

std::optional<std::int64_t> ObservedRun::wholeAfter(std::int64_t from_us) const {
  bool whole = false;
  for (const auto& [t, w] : whole_) {
    if (t <= from_us) {
      whole = w;
      continue;
    }
    if (whole) return from_us;
    if (w) return t;
  }
  if (whole) return from_us;
  return std::nullopt;
}

std::vector<ObservedFault> ObservedRun::faultsSoFar(bool with_logs) {
  deps_.store.flush();
  analysis::DepartureRules rules;
  rules.from_us = baseline_start_us_;
  rules.to_us = deps_.clock.wallNow() + 5 * kSecond;
  rules.metadata_interval_us = deps_.cluster.observe.metadata_interval_us;
  for (const auto& n : deps_.cluster.inventory) {
    if (n.role == common::NodeRole::kBroker) rules.brokers.insert(n.id);
  }
  if (!leadership_.empty()) {
    for (const auto& p : leadership_.front().partitions) {
      if (!p.replicas.empty())
        rules.preferred_leaders[p.topic + "-" + std::to_string(p.partition)] = p.replicas.front();
    }
  }
  std::vector<storage::Event> events;
  for (const auto source : {EventSource::kMetadata, EventSource::kBrokerLog}) {
    if (source == EventSource::kBrokerLog && !with_logs) continue;
    storage::EventQuery q;
    q.cluster = deps_.cluster_id;
    q.source = common::toString(source);
    q.range = {rules.from_us, rules.to_us};
    if (auto read = deps_.store.events(q); read) {
      events.insert(events.end(), read->begin(), read->end());
    } else {
      spdlog::warn("drill {}: cannot read the window's events: {}", drill_.id,
                   read.error().describe());
    }
  }
  const auto& s = settings_ ? *settings_ : ClusterSettings{};
  return observedFaults(analysis::findDepartures(events, rules), marks_.marks(),
                        s.session_timeout.value_ms * 1000, s.heartbeat_interval.value_ms * 1000);
}

bool ObservedRun::watch() {
  const auto started = deps_.clock.monoNow();
  const auto window = static_cast<std::int64_t>(spec_.options.window_s) * kSecond;
  setState(DrillState::kObserve, "waiting up to " + std::to_string(spec_.options.window_s) +
                                     " s for a fault (marked, or seen in the cluster)");
  std::size_t seen = 0;
  while (deps_.clock.monoNow() - started < window) {
    if (!parts_.queue.sleep(kWatchPollUs)) return false;
    std::string missing;
    pollCluster(missing);
    const auto faults = faultsSoFar(false);
    if (faults.empty()) continue;
    if (faults.size() != seen) {
      seen = faults.size();
      const auto& last = faults.back();
      setState(DrillState::kObserve,
               std::to_string(seen) + " fault(s) seen, the last " +
                   (last.broker >= 0 ? "on broker " + std::to_string(last.broker) : "marked") +
                   "; waiting for the cluster to be whole again");
    }
    const auto now = deps_.clock.wallNow();
    const auto last_fault = seenUs(faults.back());
    const auto whole_since = wholeAfter(last_fault + spec_.options.observe_min_s * kSecond);
    if (whole_since && whole_.back().second &&
        now - std::max(*whole_since, whole_.back().first) >= spec_.options.quiet_s * kSecond) {
      window_end_us_ = now;
      return true;
    }
  }
  std::string missing;
  pollCluster(missing);
  missing_ = missing;
  window_end_us_ = deps_.clock.wallNow();
  return true;
}

void ObservedRun::analyseSteps(const std::vector<ObservedFault>& faults) {
  nlohmann::json observed = {
      {"window_s", spec_.options.window_s},
      {"baseline_start_us", baseline_start_us_},
      {"window_end_us", window_end_us_},
      {"whole_again", missing_.empty()},
      {"missing", missing_.empty() ? nlohmann::json(nullptr) : nlohmann::json(missing_)},
      {"marks", nlohmann::json::array()},
      {"faults", nlohmann::json::array()}};
  for (const auto& m : marks_.marks()) observed["marks"].push_back(toJson(m));
  for (const auto& f : faults) observed["faults"].push_back(toJson(f));
  result_["observed"] = std::move(observed);
  if (faults.empty()) {
    auto verdict = analysis::unfinishedVerdict(objectives_, "done", "");
    verdict.reason = "no fault was marked or seen in the window (" +
                     std::to_string(spec_.options.window_s) + " s): nothing to judge";
    result_["verdict"] = analysis::toJson(verdict);
    drill_.verdict = analysis::toString(verdict.verdict);
    drill_.regressed = false;
    drill_.result = common::jsonText(result_);
    return;
  }
  // Every message of the window gets its fate before the figures are taken (as a drill's
  // analyse), or the settle timeout passes.
  const auto settle_deadline =
      deps_.clock.monoNow() + static_cast<std::int64_t>(spec_.options.settle_timeout_s) * kSecond;
  while (!deps_.probe.pending(baseline_start_us_, window_end_us_).empty() &&
         deps_.clock.monoNow() < settle_deadline && parts_.queue.sleep(100'000)) {
  }
  if (interrupted()) return;
  deps_.store.flush();
  AnalysisWindow window{.cluster = deps_.cluster_id,
                        .partitions = {},
                        .samples = {baseline_start_us_, window_end_us_},
                        .events = {baseline_start_us_ - kSecond, window_end_us_ + 5 * kSecond}};
  for (const auto& t : deps_.cluster.probe.topics) {
    if (leadership_.empty()) break;
    for (const auto& p : leadership_.front().partitions) {
      if (p.topic == t.name) window.partitions.emplace_back(p.topic, p.partition);
    }
  }
  auto stored = loadAnalysisInputs(deps_.store, window);
  if (!stored) {
    result_["observed"]["reason"] = "analysis not run: " + stored.error().describe();
    drill_.result = common::jsonText(result_);
    return;
  }
  std::vector<analysis::RunAnalysis> analyses;
  for (std::size_t i = 0; i < faults.size(); ++i) {
    // Each step is observed until the cluster is whole again after it, or the next fault.
    const auto& f = faults[i];
    const auto resumed = wholeAfter(seenUs(f) + spec_.options.observe_min_s * kSecond);
    std::int64_t end = resumed ? std::min(*resumed, window_end_us_) : window_end_us_;
    const auto next_from = i + 1 < faults.size()
                               ? faults[i + 1].fault_us - faults[i + 1].uncertainty_us - kSignLeadUs
                               : std::numeric_limits<std::int64_t>::max();
    const bool cut = next_from < end;
    if (cut) end = std::max(next_from, f.fault_us);
    auto outcome = step(f, static_cast<int>(i) + 1, end, cut, stored->events, stored->samples);
    auto run = toJson(outcome);
    run["step"] = static_cast<int>(i) + 1;
    run["observed_fault"] = toJson(f);
    result_["runs"].push_back(std::move(run));
    if (outcome.analysis) analyses.push_back(*outcome.analysis);
  }
  const auto verdict = judge(faults, analyses);
  std::vector<std::int32_t> nodes;
  for (const auto& f : faults) nodes.push_back(f.broker);
  if (faults.size() > 1) {
    result_["rolling_restart"] =
        analysis::toJson(analysis::summariseRolling(analyses, nodes, verdict));
    result_["rolling_restart"]["plan"] = nodes;
    result_["rolling_restart"]["by"] = "observed";
    result_["rolling_restart"]["between_s"] = 0;
    result_["rolling_restart"]["maintenance_window"] = nullptr;
  }
  result_["verdict"] = analysis::toJson(verdict);
  drill_.verdict = analysis::toString(verdict.verdict);
  drill_.regressed = false;
  drill_.result = common::jsonText(result_);
}

RunOutcome ObservedRun::step(const ObservedFault& fault, int index, std::int64_t observe_end_us,
                             bool cut_by_next, const std::vector<storage::Event>& events,
                             const std::vector<storage::ProbeSample>& samples) {
  RunOutcome outcome;
  outcome.run = index;
  outcome.fault = FaultType::kObserved;
  outcome.state = DrillState::kDone;
  if (fault.broker >= 0) outcome.target = fault.broker;
  outcome.baseline_start_us = baseline_start_us_;
  outcome.cluster_settings = settings_;
  outcome.probe_client = probe_client_;
  outcome.fault_injected = FaultInjected{
      fault.mark ? fault.mark->at_us : fault.fault_us,
      fault.fault_us,
      fault.time_source,
      fault.mark
          ? "marked by " + (fault.mark->by.empty() ? std::string("a client") : fault.mark->by)
          : "found by kfaild",
      fault.uncertainty_us,
      0};
  // The leadership as it was just before the fault, and the probe's state then.
  LeadershipAtFault leadership = leadership_.empty() ? LeadershipAtFault{} : leadership_.front();
  for (const auto& l : leadership_) {
    if (l.observed_at_us <= fault.fault_us - fault.uncertainty_us) leadership = l;
  }
  outcome.leadership_at_fault = leadership;
  // The probe as it was before the earliest the fault can have been: later it may already hold
  // back sends for the stall.
  ProbeSnapshotAtFault probe;
  for (const auto& [t, p] : probe_) {
    if (t <= fault.fault_us - fault.uncertainty_us) probe = p;
  }
  outcome.probe_at_fault = probe;
  const auto seen_us = seenUs(fault);
  const auto resumed =
      !cut_by_next && wholeAfter(seen_us).has_value() && observe_end_us < window_end_us_;
  outcome.observe_timed_out = !cut_by_next && !resumed;
  outcome.observe_end_us = observe_end_us;
  outcome.window_end_us = observe_end_us;
  const auto back = wholeAfter(fault.departure && fault.departure->back_at_us
                                   ? *fault.departure->back_at_us
                                   : seen_us + spec_.options.observe_min_s * kSecond);
  if (fault.departure && fault.departure->back_at_us && back) outcome.recovered_us = back;
  outcome.clock_steps_in_window = deps_.clock.steps() - steps_at_baseline_;

  analysis::AnalysisInput in;
  in.fault = fault.judged_as;
  in.killed = fault.judged_as == "kill";
  if (settings_) in.settings = mechanismSettings(*settings_);
  if (probe_client_) in.settings = analysis::withClientSettings(in.settings, *probe_client_);
  in.target = fault.broker;
  in.fault_us = fault.fault_us;
  in.fault_time_source = fault.time_source;
  in.fault_time_uncertainty_us = fault.uncertainty_us;
  in.window_start_us = baseline_start_us_;
  in.baseline_end_us = baseline_end_us_;
  in.observe_end_us = observe_end_us;
  in.recovered_us = outcome.recovered_us;
  in.window_end_us = observe_end_us;
  in.observe_timed_out = outcome.observe_timed_out;
  if (cut_by_next) in.cut_by = "the next fault";
  in.clock_steps = *outcome.clock_steps_in_window;
  in.interval_us = deps_.cluster.probe.interval_us;
  in.metadata_interval_us = deps_.cluster.observe.metadata_interval_us;
  in.partitions = leadership.partitions;
  in.probe_at_fault = probe.partitions;
  in.samples = samples;
  in.pending = deps_.probe.pending(baseline_start_us_, window_end_us_);
  in.events = events;
  analysis::probeStretchesFromEvents(in.events, in.holds, in.idles);
  analysis::probeRefusalsFromEvents(in.events, in.refusals);
  outcome.analysis = analysis::analyse(in);
  return outcome;
}

analysis::Verdict ObservedRun::judge(const std::vector<ObservedFault>& faults,
                                     const std::vector<analysis::RunAnalysis>& analyses) const {
  // Each step against the objectives of the fault it is judged as; the drill's checks are all of
  // theirs, numbered by step.
  analysis::Verdict out;
  out.objectives = objectives_;
  out.policy = deps_.cluster.regression;
  bool failed = false, inconclusive = false;
  for (std::size_t i = 0; i < analyses.size() && i < faults.size(); ++i) {
    analysis::FaultMechanism mechanism;
    mechanism.fault = faults[i].judged_as;
    if (settings_) applyTo(*settings_, mechanism);
    if (probe_client_) mechanism.settings = analysis::withClientSettings({}, *probe_client_);
    mechanism.target_is_controller = false;
    auto v = analysis::evaluate({analyses[i]}, analysis::objectivesFor(objectives_, mechanism),
                                mechanism, {}, deps_.cluster.regression);
    for (auto& c : v.checks) {
      c.run = static_cast<int>(i) + 1;
      out.checks.push_back(std::move(c));
    }
    failed = failed || v.verdict == analysis::CheckStatus::kFail;
    inconclusive = inconclusive || v.verdict == analysis::CheckStatus::kInconclusive;
  }
  out.verdict = failed         ? analysis::CheckStatus::kFail
                : inconclusive ? analysis::CheckStatus::kInconclusive
                               : analysis::CheckStatus::kPass;
  if (!missing_.empty()) {
    out.reason = "the cluster was not whole again at the window's end: " + missing_;
    if (!failed) out.verdict = analysis::CheckStatus::kInconclusive;
  }
  return out;
}

}  // namespace kfaild::drill
