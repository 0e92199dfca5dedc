#include "server/drill/drill_runner.h"

#include <spdlog/spdlog.h>

#include "server/analysis/rolling.h"
#include "server/analysis/verdict.h"
#include "server/common/json_text.h"
#include "server/drill/errc.h"
#include "server/drill/event_log.h"
#include "server/drill/fault_action.h"
#include "server/drill/rolling_plan.h"
#include "server/drill/run_execution.h"

namespace kfaild::drill {

using common::EventKind;
using common::EventSource;
using common::NodeRole;

namespace {

Error refused(const std::string& reason) {
  return Error{make_error_code(errc::guard_refused), reason};
}

bool isControllerNode(const std::vector<config::NodeConfig>& inventory, std::int32_t id) {
  return std::any_of(inventory.begin(), inventory.end(), [id](const config::NodeConfig& n) {
    return n.id == id && n.role == NodeRole::kController;
  });
}

}  // namespace

DrillRunner::DrillRunner(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                         storage::Store& store, storage::DrillStore& drills,
                         const common::Clock& clock, RunnerSeams seams,
                         std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors)
    : cluster_(cluster),
      cluster_id_(cluster_id),
      injectors_(std::move(injectors)),
      resolve_(std::move(seams.resolve)),
      addresses_(resolveNodeAddresses(cluster.inventory, resolve_)),
      maintenance_(seams.maintenance),
      deps_{cluster_,
            cluster_id_,
            store,
            drills,
            clock,
            seams.view,
            seams.probe,
            seams.admin,
            injectors_,
            seams.listener,
            std::move(seams.profiles)},
      records_(deps_),
      guards_(deps_),
      recovery_(deps_),
      worker_(clock),
      queue_(worker_) {}

DrillRunner::~DrillRunner() {
  stop();
}

void DrillRunner::start(std::optional<std::chrono::seconds> recover_first) {
  if (recover_first) finishInterrupted();
  // Drills queued before a restart start again in order.
  storage::DrillQuery q;
  q.cluster = cluster_id_;
  q.state = toString(DrillState::kQueued);
  q.limit = DrillQueue::kCapacity;
  if (auto queued = deps_.drills.drills(q); queued) {
    for (auto it = queued->rbegin(); it != queued->rend(); ++it) queue_.push(it->id);
  }
  // The journal is replayed once: a loop that threw runs again without it (failRunning has the
  // recovery retried by the loop itself).
  worker_.start(
      "kfaild:drill",
      [this, recover_first, replayed = std::make_shared<bool>(false)] {
        if (recover_first && !*replayed) {
          *replayed = true;
          auto recovered = sweepAndReplay(*recover_first, [this](common::MonoMicros until) {
            return worker_.sleepFor(std::chrono::microseconds(
                std::max<std::int64_t>(0, until - deps_.clock.monoNow())));
          });
          if (!recovered) {
            spdlog::error("cluster {}: cannot read the recovery journal: {}", cluster_.name,
                          recovered.error().describe());
          } else if (*recovered > 0) {
            spdlog::warn("cluster {}: recovered {} node(s) left down by an earlier drill",
                         cluster_.name, *recovered);
          }
        }
        loop();
      },
      [this](const std::string& what) { failRunning(what); });
}

void DrillRunner::stop() {
  worker_.stop();
}

namespace {

// The coordinator_of targets of a drill, for the guards to look up (none for a rolling restart).
std::vector<CoordinatorQuery> coordinatorQueries(const config::ClusterConfig& cluster,
                                                 const DrillSpec& spec) {
  std::vector<CoordinatorQuery> coordinators;
  if (spec.fault == FaultType::kRollingRestart || spec.fault == FaultType::kObserved)
    return coordinators;
  for (const auto* t : {&spec.target, spec.then ? &spec.then->target : nullptr}) {
    if (t != nullptr && t->kind == TargetKind::kCoordinatorOf) {
      coordinators.push_back(coordinatorQuery(cluster, *t));
    }
  }
  return coordinators;
}

}  // namespace

Result<std::int64_t> DrillRunner::submit(const DrillSpec& spec, const SubmitOptions& options) {
  // One submission at a time: simultaneous requests must not all pass the "nothing is running"
  // check before any of them is queued.
  std::lock_guard serial(submit_mutex_);
  const auto running = queue_.busyWith();
  const auto coordinators = coordinatorQueries(cluster_, spec);
  // Only when no drill runs: a drill queued behind one is guarded at its preflight.
  std::optional<ClusterFacts> facts;
  if (!coordinators.empty() && !running) {
    auto read = readFactsNow(coordinators);
    if (!read) return read.error();
    facts = std::move(*read);
  }
  // A coordinator_of drill queued behind a running one is resolved by its run.
  std::vector<PlannedFault> planned;
  if (spec.fault == FaultType::kRollingRestart || coordinators.empty() || facts) {
    auto plan = planFaults(spec, facts ? &*facts : nullptr);
    if (!plan) return plan.error();
    planned = std::move(*plan);
  }
  if (running && !options.queue_if_busy) {
    return refused("drill " + std::to_string(*running) + " is running on cluster " + cluster_.name);
  }
  if (!running) {
    if (!facts) {
      auto read = readFactsNow({});
      if (!read) return read.error();
      facts = std::move(*read);
    }
    for (const auto& p : planned) {
      if (auto reason = checkWithFacts(guards_.base(p.node, p.spec), *facts, std::nullopt)) {
        return refused(p.prefix + *reason);
      }
    }
  }
  if (queue_.waiting() >= DrillQueue::kCapacity) {
    return refused(std::to_string(DrillQueue::kCapacity) +
                   " drills are already waiting on cluster " + cluster_.name);
  }
  return enqueue(spec, options);
}

std::string DrillRunner::refusalOn(const DrillSpec& spec, std::int32_t node) const {
  for (const auto& n : cluster_.inventory) {
    if (n.id == node) {
      return faultRefusal(spec, n, *injectors_.at(n.id), cluster_.inventory, addresses_);
    }
  }
  return std::string();
}

Result<ClusterFacts> DrillRunner::readFactsNow(const std::vector<CoordinatorQuery>& coordinators) {
  // A node an earlier drill left down refuses at once (the journal is in the database; the
  // engine may be busy retrying that very recovery).
  if (const auto open_recovery = recovery_.openProblem(std::nullopt)) {
    return refused(*open_recovery);
  }
  auto facts = guards_.readAfter(deps_.clock.monoNow(), [this] { queue_.wake(); }, coordinators);
  if (!facts) {
    return refused("kfaild could not read the cluster's state within " +
                   std::to_string(GuardInputs::kReadWait.count() / 1000) +
                   " s; try again in a moment");
  }
  return std::move(*facts);
}

Result<std::vector<DrillRunner::PlannedFault>> DrillRunner::planFaults(
    const DrillSpec& spec, const ClusterFacts* known) const {
  std::vector<PlannedFault> planned;
  // No node of its own: its guards are the cluster's and the probe's (target -1).
  if (spec.fault == FaultType::kObserved) {
    planned.push_back({-1, spec, ""});
    return planned;
  }
  if (spec.fault == FaultType::kRollingRestart) {
    const auto quorum = deps_.view.latest().quorum;
    auto plan = rollingPlan(spec, cluster_.inventory,
                            quorum && quorum->leader_id >= 0
                                ? std::optional<std::int32_t>(quorum->leader_id)
                                : std::nullopt);
    if (!plan) return plan.error();
    for (const auto node : *plan) {
      auto step = rollingStep(spec, node);
      const auto prefix = "step on node " + std::to_string(node) + ": ";
      if (auto reason = refusalOn(step, node); !reason.empty()) return refused(prefix + reason);
      planned.push_back({node, std::move(step), prefix});
    }
    return planned;
  }
  auto target = resolveTarget(deps_, spec.target, known);
  if (!target) return target.error();
  // What the fault needs of the node is known from the config alone (refusal() touches nothing).
  // A random target is drawn again at the run, which checks the node it draws.
  if (spec.target.kind != TargetKind::kRandom) {
    if (auto reason = refusalOn(spec, *target); !reason.empty()) return refused(reason);
  }
  planned.push_back({*target, spec, ""});
  // A compound drill's second fault: its target must name a node now, another than the first's
  // (the run resolves and guards it again at its moment, with the first node down).
  if (spec.then) {
    const auto second = secondSpec(spec);
    auto resolved = resolveTarget(deps_, spec.then->target, known);
    if (!resolved) return Error{resolved.error().code, "then: " + resolved.error().message};
    if (*resolved == *target && spec.target.kind != TargetKind::kRandom &&
        spec.then->target.kind != TargetKind::kRandom) {
      return refused("then: the second fault's target names node " + std::to_string(*resolved) +
                     ", which the first fault takes down");
    }
    if (spec.then->target.kind != TargetKind::kRandom) {
      if (auto reason = refusalOn(second, *resolved); !reason.empty())
        return refused("then: " + reason);
    }
    planned.push_back({*resolved, second, "then: "});
  }
  return planned;
}

Result<std::int64_t> DrillRunner::enqueue(const DrillSpec& spec, const SubmitOptions& options) {
  storage::DrillRecord drill;
  drill.cluster = cluster_id_;
  drill.fault = toString(spec.fault);
  drill.target = common::jsonText(toJson(spec.target));
  drill.options = common::jsonText(toJson(spec.options, spec.fault));
  if (spec.expect) drill.expect = common::jsonText(analysis::toJson(*spec.expect));
  if (spec.then) drill.second_fault = common::jsonText(toJson(*spec.then));
  drill.state = toString(DrillState::kQueued);
  drill.schedule_id = options.schedule_id;
  drill.created_us = deps_.clock.wallNow();
  auto id = deps_.drills.createDrill(drill);
  if (!id) return id.error();
  if (!queue_.push(*id)) {
    drill.id = *id;
    records_.setState(drill, DrillState::kAborted,
                      "the queue of cluster " + cluster_.name + " was full");
    return refused(std::to_string(DrillQueue::kCapacity) +
                   " drills are already waiting on cluster " + cluster_.name);
  }
  spdlog::info("drill {} on {}: queued {} of {}", *id, cluster_.name, drill.fault, drill.target);
  return *id;
}

Status DrillRunner::abort(std::int64_t drill_id) {
  const auto taken = queue_.abort(drill_id);
  const auto notFound = [drill_id] {
    return Error{make_error_code(errc::drill_not_found),
                 "drill " + std::to_string(drill_id) + " is not queued or running"};
  };
  if (taken == DrillQueue::AbortTaken::kRequested) {
    // The engine clears its running drill only after storing how it ended: in between the queue
    // still names a drill that is over, and the abort must not be taken for one. (Aborted is this
    // abort's own doing when the engine honoured it at once.)
    const auto stored = deps_.drills.drill(drill_id);
    if (stored && *stored && isTerminal((**stored).state) &&
        (**stored).state != toString(DrillState::kAborted)) {
      return notFound();
    }
    return okStatus();
  }
  if (taken == DrillQueue::AbortTaken::kNotFound) return notFound();
  auto drill = deps_.drills.drill(drill_id);
  if (drill && *drill) {
    auto record = **drill;
    records_.setState(record, DrillState::kAborted, "aborted on request before it started");
  }
  return okStatus();
}

void DrillRunner::loop() {
  // Between drills the engine reads the cluster for submissions (GuardInputs) and retries the
  // recoveries earlier drills could not finish.
  while (!worker_.stopRequested()) {
    if (guards_.readWanted()) guards_.read();
    const auto id = queue_.next(recovery_.retryDueAt(), [this] { return guards_.readWanted(); });
    if (worker_.stopRequested()) return;
    if (!id) {
      if (auto retry = recovery_.retryDueAt(); retry && deps_.clock.monoNow() >= *retry) {
        // A stop cuts these tries short: their journal entries stay open for the next start.
        recovery_.retryOpen([this](common::MonoMicros until) {
          return worker_.sleepFor(
              std::chrono::microseconds(std::max<std::int64_t>(0, until - deps_.clock.monoNow())));
        });
      }
      continue;
    }
    auto drill = deps_.drills.drill(*id);
    if (drill && *drill && (*drill)->state == toString(DrillState::kQueued)) execute(**drill);
    queue_.finished();
  }
}

void DrillRunner::failRunning(const std::string& what) {
  // First, as what follows may throw again: the journal holds what a run took down, retried at
  // once after a drill (later after a retry that threw, which would throw again at once).
  const auto id = queue_.active();
  recovery_.scheduleRetry(id ? 0 : NodeRecovery::kFirstRetryUs);
  if (!id) return;
  auto stored = deps_.drills.drill(*id);
  if (stored && *stored && !isTerminal((**stored).state)) {
    auto drill = **stored;
    records_.setState(drill, DrillState::kFailed,
                      "kfaild's drill engine failed during " + drill.state + " (" + what +
                          "); a node it took down is brought back by the recovery journal");
  }
  queue_.finished();
}

void DrillRunner::execute(storage::DrillRecord drill) {
  nlohmann::json request = {{"fault", drill.fault},
                            {"target", nlohmann::json::parse(drill.target, nullptr, false)},
                            {"options", nlohmann::json::parse(drill.options, nullptr, false)}};
  if (!drill.expect.empty())
    request["expect"] = nlohmann::json::parse(drill.expect, nullptr, false);
  if (!drill.second_fault.empty())
    request["then"] = nlohmann::json::parse(drill.second_fault, nullptr, false);
  // Stored as every broker (what it watches); the request has none.
  if (drill.fault == toString(FaultType::kObserved)) request.erase("target");
  auto spec = parseDrillSpec(request);
  if (!spec) {
    // It never started: nothing was measured, so it has no verdict (as a drill aborted while
    // queued).
    records_.setState(drill, DrillState::kFailed,
                      "stored request no longer valid: " + spec.error().message);
    return;
  }
  const auto objectives =
      spec->expect ? analysis::overlay(cluster_.objectives, *spec->expect) : cluster_.objectives;
  drill.started_us = deps_.clock.wallNow();
  if (spec->fault == FaultType::kRollingRestart) {
    executeRolling(drill, *spec, objectives);
    return;
  }
  if (spec->fault == FaultType::kObserved) {
    executeObserved(drill, *spec, objectives);
    return;
  }
  nlohmann::json result = {{"runs", nlohmann::json::array()}};
  std::vector<analysis::RunAnalysis> analyses;
  ProfileRuns profiles(deps_.profiles.size());
  analysis::FaultMechanism mechanism;
  mechanism.fault = drill.fault;
  if (spec->fault == FaultType::kPause) mechanism.pause_s = spec->options.pause_s;
  mechanism.gray = grayInput(*spec, std::nullopt);
  for (int run = 1; run <= spec->options.repeats; ++run) {
    RunExecution execution(
        {deps_, guards_, recovery_, queue_, records_, worker_, addresses_, resolve_}, drill, *spec,
        run);
    const auto outcome = execution.execute();
    result["runs"].push_back(toJson(outcome));
    drill.result = common::jsonText(result);
    if (outcome.state != DrillState::kDone) {
      finishUnfinished(drill, outcome.state, outcome.reason, objectives, analyses);
      return;
    }
    if (outcome.analysis) analyses.push_back(*outcome.analysis);
    profiles.add(outcome);
    if (outcome.probe_client)
      mechanism.settings = analysis::withClientSettings({}, *outcome.probe_client);
    if (outcome.cluster_settings) applyTo(*outcome.cluster_settings, mechanism);
    for (const auto& node : cluster_.inventory) {
      if (outcome.target && node.id == *outcome.target && node.role == NodeRole::kController) {
        mechanism.target_is_controller = true;
      }
    }
    if (run < spec->options.repeats) records_.persist(drill);
  }
  // Before the terminal state is written: the listener is told of the row as written, verdict
  // included.
  auto verdict = analysis::evaluate(analyses, analysis::objectivesFor(objectives, mechanism),
                                    mechanism, history(drill), cluster_.regression);
  profiles.judge(verdict, cluster_, objectives, mechanism);
  result["verdict"] = analysis::toJson(verdict);
  drill.result = common::jsonText(result);
  drill.verdict = analysis::toString(verdict.verdict);
  drill.regressed = !verdict.regressions.empty();
  spdlog::info("drill {} on {}: verdict {} ({} checks, {} regressions)", drill.id, cluster_.name,
               *drill.verdict, verdict.checks.size(), verdict.regressions.size());
  records_.setState(drill, DrillState::kDone);
}

void ProfileRuns::add(const RunOutcome& outcome) {
  for (std::size_t i = 0; i < outcome.profiles.size() && i < runs_.size(); ++i) {
    const auto& p = outcome.profiles[i];
    auto& runs = runs_[i];
    runs.name = p.profile;
    if (p.analysis) runs.analyses.push_back(*p.analysis);
    if (p.probe_client) runs.client_settings = *p.probe_client;
  }
}

void ProfileRuns::judge(analysis::Verdict& verdict, const config::ClusterConfig& cluster,
                        const analysis::Objectives& objectives,
                        const analysis::FaultMechanism& mechanism) const {
  if (runs_.empty()) return;
  // The same objectives for every profile; the mechanisms' client settings are the profile's.
  // Regressions are the primary's alone: the history holds the primary's stalls.
  for (const auto& runs : runs_) {
    auto theirs = mechanism;
    theirs.settings = analysis::withClientSettings(mechanism.settings, runs.client_settings);
    const auto v = analysis::evaluate(runs.analyses, analysis::objectivesFor(objectives, theirs),
                                      theirs, {}, cluster.regression);
    analysis::addProfile(verdict, cluster.probe.profiles.front().name, runs.name, v);
  }
}

void DrillRunner::executeRolling(storage::DrillRecord& drill, const DrillSpec& spec,
                                 const analysis::Objectives& objectives) {
  const auto activeController = [this]() -> std::optional<std::int32_t> {
    auto quorum = deps_.admin.describeQuorum();
    if (!quorum || quorum->leader_id < 0) return std::nullopt;
    return quorum->leader_id;
  };
  auto plan = rollingPlan(spec, cluster_.inventory, activeController());
  if (!plan) {
    records_.setState(drill, DrillState::kFailed, plan.error().message);
    return;
  }
  nlohmann::json result = {{"runs", nlohmann::json::array()}};
  // Its stalls are planned: no incident, no notification, the cluster's alerts silenced.
  const auto window = openWindow(drill, spec, plan->size());
  struct WindowCloser {
    DrillRunner& runner;
    std::int64_t drill;
    ~WindowCloser() { runner.closeWindows(drill); }
  } closer{*this, drill.id};
  const auto describe = [&](const std::vector<std::int32_t>& nodes,
                            const std::vector<analysis::RunAnalysis>& analyses,
                            const analysis::Verdict& verdict) {
    auto summary = analysis::toJson(analysis::summariseRolling(analyses, nodes, verdict));
    summary["plan"] = nodes;
    summary["by"] = spec.options.kill ? "kill" : "stop";
    summary["between_s"] = spec.options.between_s;
    summary["maintenance_window"] = window ? nlohmann::json(*window) : nlohmann::json(nullptr);
    result["rolling_restart"] = std::move(summary);
  };
  std::vector<std::int32_t> done_nodes;
  std::vector<analysis::RunAnalysis> analyses;
  ProfileRuns profiles(deps_.profiles.size());
  analysis::FaultMechanism mechanism;
  mechanism.fault = toString(FaultType::kRestart);
  auto remaining = *plan;
  const auto unfinished = [&](DrillState state, const std::string& reason) {
    auto partial = analysis::evaluate(analyses, analysis::objectivesFor(objectives, mechanism),
                                      mechanism, history(drill), cluster_.regression);
    describe(done_nodes, analyses, partial);
    result["rolling_restart"]["plan"] = *plan;
    result["rolling_restart"]["ended_at_step"] = static_cast<int>(done_nodes.size()) + 1;
    drill.result = common::jsonText(result);
    finishUnfinished(drill, state, reason, objectives, analyses);
  };
  for (int step = 1; !remaining.empty(); ++step) {
    // A controller's step: the active one goes last of those left (it may have moved).
    if (isControllerNode(cluster_.inventory, remaining.front())) {
      remaining = activeControllerLast(spec, remaining, cluster_.inventory, activeController());
    }
    const auto node = remaining.front();
    remaining.erase(remaining.begin());
    const auto step_spec = rollingStep(spec, node);
    RunExecution execution(
        {deps_, guards_, recovery_, queue_, records_, worker_, addresses_, resolve_}, drill,
        step_spec, step);
    auto outcome = execution.execute();
    auto run = toJson(outcome);
    run["step"] = step;
    result["runs"].push_back(std::move(run));
    drill.result = common::jsonText(result);
    if (outcome.state != DrillState::kDone) {
      // The step recovered its node (or left it in the journal, retried between drills): no
      // later step starts.
      unfinished(outcome.state, "step " + std::to_string(step) + " (node " + std::to_string(node) +
                                    "): " + outcome.reason);
      return;
    }
    done_nodes.push_back(node);
    if (outcome.analysis) analyses.push_back(*outcome.analysis);
    profiles.add(outcome);
    if (outcome.probe_client)
      mechanism.settings = analysis::withClientSettings({}, *outcome.probe_client);
    if (outcome.cluster_settings) applyTo(*outcome.cluster_settings, mechanism);
    records_.persist(drill);
    if (!remaining.empty() && spec.options.between_s > 0) {
      records_.setState(drill, DrillState::kBaseline,
                        "step " + std::to_string(step) + " of " + std::to_string(plan->size()) +
                            " done; the next in " + std::to_string(spec.options.between_s) + " s");
      if (!queue_.sleep(static_cast<std::int64_t>(spec.options.between_s) * 1'000'000)) {
        unfinished(DrillState::kAborted,
                   std::string(worker_.stopRequested() ? "kfaild stopped" : "aborted on request") +
                       " between step " + std::to_string(step) + " and the next");
        return;
      }
      drill.reason.clear();
    }
  }
  auto verdict = analysis::evaluate(analyses, analysis::objectivesFor(objectives, mechanism),
                                    mechanism, history(drill), cluster_.regression);
  // The steps' summary is the primary profile's; the verdict judges every profile.
  describe(done_nodes, analyses, verdict);
  profiles.judge(verdict, cluster_, objectives, mechanism);
  result["verdict"] = analysis::toJson(verdict);
  drill.result = common::jsonText(result);
  drill.verdict = analysis::toString(verdict.verdict);
  drill.regressed = !verdict.regressions.empty();
  spdlog::info("drill {} on {}: rolling restart of {} nodes, verdict {}", drill.id, cluster_.name,
               done_nodes.size(), *drill.verdict);
  records_.setState(drill, DrillState::kDone);
}

void DrillRunner::executeObserved(storage::DrillRecord& drill, const DrillSpec& spec,
                                  const analysis::Objectives& objectives) {
  ObservedRun run({deps_, guards_, recovery_, queue_, records_, worker_, addresses_, resolve_},
                  drill, spec, marks_, objectives);
  const auto [state, reason] = run.execute();
  if (state != DrillState::kDone) {
    finishUnfinished(drill, state, reason, objectives, {});
    return;
  }
  spdlog::info("drill {} on {}: observed, verdict {}", drill.id, cluster_.name,
               drill.verdict.value_or("none"));
  records_.setState(drill, DrillState::kDone);
}

bool DrillRunner::knownBroker(std::int32_t broker) const {
  const auto configured = std::any_of(
      cluster_.inventory.begin(), cluster_.inventory.end(),
      [&](const config::NodeConfig& n) { return n.id == broker && n.role == NodeRole::kBroker; });
  if (configured) return true;
  const auto latest = deps_.view.latest();
  if (!latest.snapshot) return false;
  if (latest.snapshot->hasBroker(broker)) return true;
  for (const auto& topic : latest.snapshot->topics) {
    for (const auto& p : topic.partitions) {
      if (std::find(p.replicas.begin(), p.replicas.end(), broker) != p.replicas.end()) return true;
    }
  }
  return false;
}

Result<ObservedMark> DrillRunner::mark(std::int64_t drill_id, std::optional<std::int64_t> at_us,
                                       std::optional<std::int32_t> broker, const std::string& by) {
  const auto invalid = [](const std::string& why) {
    return Error{make_error_code(errc::invalid_request), why};
  };
  const auto current = marks_.current();
  if (!current || current->first != drill_id) {
    auto stored = deps_.drills.drill(drill_id);
    if (stored && *stored && (**stored).fault != toString(FaultType::kObserved)) {
      return Error{make_error_code(errc::not_observed),
                   "drill " + std::to_string(drill_id) + " is a " + (**stored).fault +
                       " drill: kfaild injects its fault itself"};
    }
    return Error{make_error_code(errc::drill_not_found),
                 "drill " + std::to_string(drill_id) +
                     " is not an observed drill running in this kfaild (queued, or ended)"};
  }
  if (broker && !knownBroker(*broker)) {
    return invalid("broker: " + std::to_string(*broker) + " is not a broker of cluster " +
                   cluster_.name + " (neither in its inventory nor in its metadata)");
  }
  const auto now = deps_.clock.wallNow();
  ObservedMark mark{at_us.value_or(now), broker, by};
  // Another host's clock, or the system clock against kfaild's timebase, may read a little ahead:
  // a mark that far in the future is taken as now.
  constexpr std::int64_t kAheadToleranceUs = 250'000;
  if (mark.at_us > now + kAheadToleranceUs)
    return invalid("at: in the future (kfaild's clock reads it later)");
  mark.at_us = std::min(mark.at_us, now);
  if (mark.at_us < current->second) return invalid("at: before the drill began");
  if (!marks_.add(drill_id, mark)) {
    return Error{make_error_code(errc::drill_not_found),
                 "drill " + std::to_string(drill_id) + " has just ended"};
  }
  nlohmann::json detail = {{"observed", true}, {"drill", drill_id}, {"by", by}};
  recordEvent(deps_, EventSource::kInjector, EventKind::kFault, mark.at_us, broker, detail);
  return mark;
}

std::optional<std::int64_t> DrillRunner::openWindow(const storage::DrillRecord& drill,
                                                    const DrillSpec& spec, std::size_t steps) {
  if (maintenance_ == nullptr) return std::nullopt;
  const auto& o = spec.options;
  // The longest a step can take: its phases' own bounds, and the pause after it.
  const std::int64_t step_s = o.baseline_s + o.grace_s + o.observe_timeout_s + o.recover_timeout_s +
                              o.settle_timeout_s + 2 * 30 + o.between_s;
  const auto now = deps_.clock.wallNow();
  const auto until =
      now + std::min<std::int64_t>(static_cast<std::int64_t>(steps) * step_s * 1'000'000,
                                   maintenance::kMaxWindowUs);
  const auto by = "drill " + std::to_string(drill.id);
  auto id = maintenance_->open(
      cluster_id_, "rolling restart (" + by + ") of " + std::to_string(steps) + " node(s)", until,
      by);
  if (!id) {
    spdlog::warn("drill {} on {}: no maintenance window for the rolling restart: {}", drill.id,
                 cluster_.name, id.error().describe());
    return std::nullopt;
  }
  recordEvent(deps_, EventSource::kKfaild, EventKind::kMaintenanceOpened, now, std::nullopt,
              {{"drill", drill.id}, {"window", *id}});
  return *id;
}

void DrillRunner::closeWindows(std::int64_t drill_id) {
  if (maintenance_ == nullptr) return;
  const auto by = "drill " + std::to_string(drill_id);
  const auto now = deps_.clock.wallNow();
  auto open = maintenance_->windows(cluster_id_, now, now + 1, 100);
  if (!open) {
    spdlog::warn("cluster {}: cannot read the maintenance windows of {}: {}", cluster_.name, by,
                 open.error().describe());
    return;
  }
  for (const auto& w : *open) {
    if (w.opened_by != by || !w.activeAt(now)) continue;
    if (auto closed = maintenance_->close(w.id, by); !closed) {
      spdlog::warn("cluster {}: cannot close maintenance window {} of {}: {}", cluster_.name, w.id,
                   by, closed.error().describe());
      continue;
    }
    recordEvent(deps_, EventSource::kKfaild, EventKind::kMaintenanceClosed, now, std::nullopt,
                {{"drill", drill_id}, {"window", w.id}});
  }
}

void DrillRunner::finishUnfinished(storage::DrillRecord& drill, DrillState state,
                                   const std::string& reason,
                                   const analysis::Objectives& objectives,
                                   const std::vector<analysis::RunAnalysis>& finished) {
  // A drill that did not finish is never a pass. The runs it did finish are still judged: a
  // failed objective in one of them is a failure whatever happened to a later run; otherwise the
  // unfinished part makes the verdict inconclusive, with the finished runs' checks kept.
  auto result = nlohmann::json::parse(drill.result, nullptr, false);
  if (!result.is_object()) result = nlohmann::json::object();
  auto verdict = analysis::unfinishedVerdict(objectives, toString(state), reason);
  if (!finished.empty()) {
    auto judged =
        analysis::evaluate(finished, objectives, drill.fault, history(drill), cluster_.regression);
    judged.reason = verdict.reason;
    if (judged.verdict != analysis::CheckStatus::kFail)
      judged.verdict = analysis::CheckStatus::kInconclusive;
    verdict = std::move(judged);
  }
  result["verdict"] = analysis::toJson(verdict);
  drill.result = common::jsonText(result);
  drill.verdict = analysis::toString(verdict.verdict);
  drill.regressed = !verdict.regressions.empty();
  records_.setState(drill, state, reason);
}

std::vector<analysis::StallSample> DrillRunner::history(const storage::DrillRecord& drill) const {
  storage::DrillQuery q;
  q.cluster = cluster_id_;
  q.state = toString(DrillState::kDone);
  q.fault = drill.fault;
  q.before_id = drill.id;
  q.limit = static_cast<std::size_t>(cluster_.regression.window);
  std::vector<analysis::StallSample> out;
  auto earlier = deps_.drills.drills(q);
  if (!earlier) {
    spdlog::warn("drill {}: no regression check, cannot read earlier drills: {}", drill.id,
                 earlier.error().describe());
    return out;
  }
  for (const auto& d : *earlier) {
    auto samples = analysis::stallSamplesOf(nlohmann::json::parse(d.result, nullptr, false));
    out.insert(out.end(), samples.begin(), samples.end());
  }
  return out;
}

Result<int> DrillRunner::recoverPending(std::chrono::seconds timeout) {
  auto recovered = sweepAndReplay(timeout, {});
  if (!recovered) return recovered.error();
  finishInterrupted();
  return recovered;
}

Result<int> DrillRunner::sweepAndReplay(std::chrono::seconds timeout,
                                        const NodeRecovery::Sleeper& sleeper) {
  // A gray fault left by a kfaild that died: its rules and fillers go first, before anything waits
  // on the cluster. The journal's replay then heals (again, harmlessly) and waits for the node.
  for (auto& [node, injector] : injectors_) {
    auto swept = injector->sweep();
    if (!swept) {
      spdlog::error("cluster {}: node {}: sweeping gray faults failed: {}", cluster_.name, node,
                    swept.error().describe());
      continue;
    }
    for (const auto& what : *swept) {
      spdlog::warn("cluster {}: node {}: removed a gray fault left behind: {}", cluster_.name, node,
                   what);
      recordEvent(deps_, EventSource::kKfaild, EventKind::kGraySwept, deps_.clock.wallNow(), node,
                  {{"removed", what}});
    }
  }
  return recovery_.replay(std::chrono::duration_cast<std::chrono::microseconds>(timeout).count(),
                          sleeper);
}

void DrillRunner::finishInterrupted() {
  // Every drill this cluster had in flight died with the previous kfaild.
  storage::DrillQuery q;
  q.cluster = cluster_id_;
  q.limit = 1000;
  if (auto all = deps_.drills.drills(q); all) {
    for (auto d : *all) {
      if (isTerminal(d.state)) continue;
      if (d.state == toString(DrillState::kQueued)) {
        // Never ran: nothing was measured, so it has no verdict at all.
        records_.setState(d, DrillState::kAborted, "kfaild stopped before the drill ran");
      } else {
        // The finished runs of a drill kfaild died in are stored as JSON only: judged inconclusive.
        finishUnfinished(d, DrillState::kAborted, "kfaild stopped during " + d.state,
                         cluster_.objectives, {});
        closeWindows(d.id);  // a rolling restart's
      }
    }
  }
}

}  // namespace kfaild::drill
