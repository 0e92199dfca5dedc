#pragma once

// The drill engine of one cluster: its queue, its thread, and the runs it executes one at a time
// (run_execution.h), each drill's row written at every step so a reader (the API) always sees
// where it is:
//   queued → preflight → baseline → inject → observe → recover → elect → analyse → done
// or failed / aborted with the reason. Nodes are brought back through the recovery journal
// (node_recovery.h), guards are checked at submission, preflight and the fault (guard_inputs.h).
// Everything outside is reached through seams (seams.h), so a fake cluster and a manual clock
// drive it in the unit tests.
//
// Threading: submit(), abort(), active() are thread-safe and make no admin call (a submission
// waits at most GuardInputs::kReadWait for the engine's thread to read the cluster for it). The
// injectors are used by the engine's thread only (and by recoverPending() before start()).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "server/analysis/verdict.h"
#include "server/common/result.h"
#include "server/common/worker.h"
#include "server/drill/drill_queue.h"
#include "server/drill/drill_records.h"
#include "server/drill/drill_spec.h"
#include "server/drill/fault_action.h"
#include "server/drill/guard_inputs.h"
#include "server/drill/node_recovery.h"
#include "server/drill/observed_run.h"
#include "server/drill/run_outcome.h"
#include "server/drill/seams.h"
#include "server/maintenance/maintenance_windows.h"

namespace kfaild::drill {

struct SubmitOptions {
  std::optional<std::int64_t> schedule_id;
  bool queue_if_busy = false;  // schedules queue behind a running drill; API requests get 409
};

// The seams a runner is built on (seams.h); they outlive it.
struct RunnerSeams {
  const ClusterView& view;
  const ProbeView& probe;
  ClusterAdmin& admin;
  DrillListener* listener = nullptr;  // told when a drill ends (drill_listener.h); may be null
  // Where a rolling restart opens its planned-maintenance window; may be null (no window).
  maintenance::MaintenanceWindows* maintenance = nullptr;
  // The name service the peers of an isolate are resolved with (peer_addresses.h).
  HostResolver resolve = resolveHost;
  // The client profiles beside the primary (ProfileProbe), analysed in every run.
  std::vector<ProfileProbe> profiles{};
};

// The client profiles' analyses over a drill's runs (RunOutcome::profiles), each judged on its
// own and added to the drill's verdict (analysis::addProfile).
class ProfileRuns {
 public:
  explicit ProfileRuns(std::size_t profiles) : runs_(profiles) {}
  void add(const RunOutcome& outcome);
  void judge(analysis::Verdict& verdict, const config::ClusterConfig& cluster,
             const analysis::Objectives& objectives,
             const analysis::FaultMechanism& mechanism) const;

 private:
  struct Runs {
    std::string name;
    std::vector<analysis::RunAnalysis> analyses;
    std::map<std::string, std::string> client_settings;
  };
  std::vector<Runs> runs_;
};

class DrillRunner {
 public:
  DrillRunner(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
              storage::Store& store, storage::DrillStore& drills, const common::Clock& clock,
              RunnerSeams seams,
              std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors);
  ~DrillRunner();
  DrillRunner(const DrillRunner&) = delete;
  DrillRunner& operator=(const DrillRunner&) = delete;

  // Sweeps every node's gray faults whatever drill left them (Injector::sweep: nft tables, disk
  // fillers), then brings back every node a previous run of kfaild left down (retrying with backoff
  // up to `timeout`), marks those drills aborted, and fails drills left in a running state. Call
  // before start(), which then does none of it. Returns how many nodes it recovered; a node it
  // could not bring back stays in the journal and is retried by the engine's thread (drills on the
  // cluster are refused meanwhile).
  Result<int> recoverPending(std::chrono::seconds timeout);

  // Queues the drills a previous kfaild left queued and starts the thread. With `recover_first`,
  // first ends the drills a previous kfaild left running (at once), and the thread begins with
  // recoverPending's sweep and replay (each entry up to that long) before its first drill: the
  // caller goes on to serve HTTP and probe while it runs, and a stop or an operator's resolution
  // of the entry cuts it short.
  void start(std::optional<std::chrono::seconds> recover_first = std::nullopt);
  // Stops after the current drill has recovered its node (bounded by the drill's own timeouts).
  void stop();
  // Asks the thread to stop without waiting for it (stop() still joins).
  void requestStop() { worker_.requestStop(); }

  // Checks the guards and what the fault needs of the node (faultRefusal: an injector that cannot
  // do it, a nonsensical isolate) and queues the drill. errc::guard_refused carries the reason;
  // errc::invalid_request a target that cannot be resolved.
  Result<std::int64_t> submit(const DrillSpec& spec, const SubmitOptions& options = {});
  // Aborts a queued or running drill: a running one recovers its node at once.
  // errc::drill_not_found when it is neither.
  Status abort(std::int64_t drill_id);
  std::optional<std::int64_t> active() const { return queue_.active(); }

  // Marks the running observed drill `drill_id`: someone injected a fault at `at_us` (now when
  // unset), into `broker` when given. errc::drill_not_found when it is not running here (queued,
  // ended, or another cluster's); errc::not_observed for another fault; errc::invalid_request for
  // a time more than 250 ms in the future (less is taken as now) or before the drill began, or a
  // broker kfaild does not know (knownBroker). Any thread; the mark is an injector/fault event of
  // the drill (detail observed: true).
  Result<ObservedMark> mark(std::int64_t drill_id, std::optional<std::int64_t> at_us,
                            std::optional<std::int32_t> broker, const std::string& by);

  const std::string& clusterName() const { return cluster_.name; }
  storage::ClusterId clusterId() const { return cluster_id_; }

 private:
  // A broker of the inventory, or one the last metadata lists or names as a replica (a cluster
  // without an inventory; a broker already gone when the mark comes).
  bool knownBroker(std::int32_t broker) const;
  // A node the drill takes down, with its fault and what a refusal of that step starts with.
  struct PlannedFault {
    std::int32_t node;
    DrillSpec spec;
    std::string prefix;
  };
  // submit()'s steps, under submit_mutex_. planFaults: each node the drill takes down with its
  // fault (a rolling restart's steps each alone, as each will run on a cluster whole again),
  // refused where faultRefusal refuses it; `known`: the cluster's facts when they were read for
  // a coordinator_of target, else null.
  Result<std::vector<PlannedFault>> planFaults(const DrillSpec& spec,
                                               const ClusterFacts* known) const;
  // faultRefusal of `spec` on inventory node `node`; empty when it can be done (touches nothing).
  std::string refusalOn(const DrillSpec& spec, std::int32_t node) const;
  // The cluster as the engine's thread reads it for this request: the admin calls (a few seconds
  // when the cluster is in trouble; FindCoordinator for a coordinator_of target) never run on
  // the caller's (an HTTP) thread, which waits for them at most GuardInputs::kReadWait. Refused
  // at once while a node an earlier drill left down is not recovered.
  Result<ClusterFacts> readFactsNow(const std::vector<CoordinatorQuery>& coordinators);
  // Records the drill as queued and queues it.
  Result<std::int64_t> enqueue(const DrillSpec& spec, const SubmitOptions& options);
  void loop();
  // The engine's thread, after loop() threw (common::Worker): fails the running drill and has
  // the recovery journal retried at once, so a node the drill took down comes back.
  void failRunning(const std::string& what);
  // recoverPending's two halves: the sweep and the journal's replay (`sleeper` as NodeRecovery's),
  // and the drills a previous kfaild left unfinished.
  Result<int> sweepAndReplay(std::chrono::seconds timeout, const NodeRecovery::Sleeper& sleeper);
  void finishInterrupted();
  void execute(storage::DrillRecord drill);
  // A rolling restart: a restart run per node of its plan (rolling_plan.h), `between_s` apart;
  // the first step that does not finish ends the rehearsal (its node recovered by the run) and
  // no later step starts. result.rolling_restart sums the steps up (analysis/rolling.h).
  void executeRolling(storage::DrillRecord& drill, const DrillSpec& spec,
                      const analysis::Objectives& objectives);
  // An observed drill (observed_run.h): nothing injected, each fault seen a step.
  void executeObserved(storage::DrillRecord& drill, const DrillSpec& spec,
                       const analysis::Objectives& objectives);
  // The planned-maintenance window a rolling restart holds open while it runs: opened before its
  // first step (ending at the longest the rehearsal can take, at most a day), closed when it ends
  // however it ends; at start, for a rehearsal a previous kfaild died in. Failures are logged:
  // a rehearsal never depends on its window.
  std::optional<std::int64_t> openWindow(const storage::DrillRecord& drill, const DrillSpec& spec,
                                         std::size_t steps);
  void closeWindows(std::int64_t drill_id);
  // Writes a failed / aborted terminal state with its verdict (in `result.verdict`): fail when a
  // run in `finished` (the runs that were analysed) failed an objective, else inconclusive.
  void finishUnfinished(storage::DrillRecord& drill, DrillState state, const std::string& reason,
                        const analysis::Objectives& objectives,
                        const std::vector<analysis::RunAnalysis>& finished);
  // The stalls of the cluster's last regression.window done drills of the same fault before
  // `drill`.
  std::vector<analysis::StallSample> history(const storage::DrillRecord& drill) const;

  config::ClusterConfig cluster_;
  storage::ClusterId cluster_id_;
  std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors_;  // the engine's thread only
  const HostResolver resolve_;
  const NodeAddresses addresses_;  // the inventory's, resolved once here, read-only after
  maintenance::MaintenanceWindows* const maintenance_;  // may be null
  EngineDeps deps_;
  DrillRecords records_;
  GuardInputs guards_;
  NodeRecovery recovery_;
  std::mutex submit_mutex_;  // held through a whole submit(): check, guards, queue
  // The engine's thread; its stop wakes every wait of a drill at once. Before the queue, which
  // waits through it; the queue is stopped first by stop() in the destructor.
  common::Worker worker_;
  DrillQueue queue_;
  ObservedMarks marks_;  // the running observed drill's
};

}  // namespace kfaild::drill
