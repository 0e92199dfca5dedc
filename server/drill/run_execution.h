#pragma once

// One run of a drill, phase by phase:
//   preflight → baseline → inject → observe → recover → elect → analyse
// A compound drill (DrillSpec::then) injects its second fault during the observation, `after_s`
// after the first, resolved and guarded then (checkSecondFault); both nodes are brought back
// (recoveryOrder), and the analysis is the second fault's, with the first's up to it beside it.
// Each phase is a method that either lets the run go on or ends it with a typed outcome. An
// abort or a stop ends the run after the phase it lands in; once the fault is in, the node is
// always brought back first. Made and used on the engine's thread, one object per run.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/analysis/drill_analysis.h"
#include "server/drill/analysis_inputs.h"
#include "server/drill/drill_queue.h"
#include "server/drill/drill_records.h"
#include "server/drill/fault_action.h"
#include "server/drill/guard_inputs.h"
#include "server/drill/node_recovery.h"
#include "server/drill/run_outcome.h"
#include "server/drill/seams.h"

namespace kfaild::drill {

// Every partition of `snapshot` as the analysis takes it, with its topic's min.insync.replicas
// (0: unknown).
std::vector<analysis::PartitionAtFault> partitionsOf(
    const kafka::ClusterSnapshot& snapshot, const std::map<std::string, std::int32_t>& min_insync);
// The probe's state now, as a run keeps it at the fault.
ProbeSnapshotAtFault probeSnapshot(const EngineDeps& deps);
ProbeSnapshotAtFault probeSnapshot(const ProbeView& view, const common::Clock& clock);
// A profile's events (ProfileProbe): its stream's own (the probe's and its client's) with the
// cluster's others (metadata, brokers' logs, injector, ...), by (t_us, id).
std::vector<storage::Event> profileEvents(const std::vector<storage::Event>& cluster,
                                          std::vector<storage::Event> stream);
// Reads the failover lines of the brokers' logs since `since_us` (fault::readFailoverLogs) about
// each of `targets` (the first's with every node's leader epochs and ISR shrinks) and stores them
// as broker_log events.
void storeFailoverLogs(const EngineDeps& deps, const std::vector<std::int32_t>& targets,
                       std::int64_t since_us);

// The parts of the engine a run uses.
struct RunParts {
  EngineDeps& deps;
  GuardInputs& guards;
  NodeRecovery& recovery;
  DrillQueue& queue;  // sleeps that end on an abort or a stop, and the abort request
  DrillRecords& records;
  const common::Worker& worker;  // whether kfaild is stopping
  // An isolate's peers (peer_addresses.h): the inventory's addresses, and the resolver of the
  // hosts the cluster lists.
  const NodeAddresses& addresses;
  const HostResolver& resolve;
};

class RunExecution {
 public:
  RunExecution(RunParts parts, storage::DrillRecord& drill, const DrillSpec& spec, int run);
  RunOutcome execute();

 private:
  // Each returns false when the run ends there (outcome_ then says how).
  bool preflight();
  // Resolves the target (again after the preflight election: `after_election`), checks the
  // guards on facts read now and that the node's injector reaches it.
  bool prepareTarget(bool after_election);
  // Why `spec` cannot be injected into `node` (empty when it can): faultRefusal, a peer without
  // an address on `cluster` (peerRefusal), the injector's check of the exact injection. `peers`
  // is set to the peers the injection names.
  std::string injectionRefusal(const DrillSpec& spec, std::int32_t node, const PeerSources& cluster,
                               fault::Peers& peers);
  bool baseline();
  bool atFault();
  bool inject();
  void observe();
  // The compound drill's second fault: resolved at preflight (prepareSecond), then at its moment
  // guarded and injected (secondFault; failure_ says why when it is not).
  bool prepareSecond();
  void secondFault();
  void injectSecond(const fault::Peers& peers, const kafka::ClusterSnapshot& cluster,
                    const kafka::QuorumInfo* quorum, std::int64_t observed_at_us);
  bool refuseSecond(const std::string& why);
  bool recover();
  // Brings `node` back with its journal entry (closed once it is back); the error when it is not.
  std::optional<std::string> bringBack(std::int32_t node, storage::RecoveryEntry& journal,
                                       RecoveryReport& report);
  ProbeSnapshotAtFault probeNow() const;
  // What the observation also waits for when `fault` takes `node` down: the control plane (a
  // controller), the commits and transactions it coordinates (or whose partition it leads). A
  // controller whose loss (with `also_down`, a compound drill's first node still down) leaves the
  // KRaft quorum without a majority of `quorum` (or, undescribed, of the inventory's controllers)
  // takes the control plane with it: the observation does not wait for it, and its stall is
  // measured to its first answer after the node is back (control_offline_).
  void awaitWhatDependsOn(std::int32_t node, FaultType fault,
                          const std::vector<analysis::PartitionAtFault>& partitions,
                          const kafka::QuorumInfo* quorum, std::int32_t also_down = -1);
  bool quorumLostWithout(std::int32_t node, const kafka::QuorumInfo* quorum,
                         std::int32_t also_down) const;
  // Each partition into recoverable_ or offline_ (whose ISR has only `node`, or is below
  // min.insync.replicas without it, while `fault` holds it down; once offline, a partition stays
  // so).
  void sortByRecovery(std::int32_t node, FaultType fault,
                      const std::vector<analysis::PartitionAtFault>& partitions);
  void observeOffline();
  void elect();
  void analyse();
  // The steps of analyse: the input from the run's state; the analysis of kfaild's own streams
  // (the control plane, the coordinators), whose samples it takes out of `stored`; the probe's
  // holds, idle stretches and refusals, recorded and still open; a compound drill's first fault
  // alone, up to the second, and the input turned into the second's.
  analysis::AnalysisInput analysisInput() const;
  void analyseOwnStreams(const probe::ProbeStatus& live, const analysis::AnalysisInput& input,
                         StoredInputs& stored);
  void addProbeStretches(const probe::ProbeStatus& live, analysis::AnalysisInput& input) const;
  // One profile beside the primary: its samples and probe events from its stream, analysed with
  // the primary's input otherwise (`input`, stripped of the primary's samples and stretches; the
  // cluster's events).
  void analyseProfile(const ProfileProbe& profile, analysis::AnalysisInput input,
                      const std::vector<storage::Event>& cluster_events,
                      const AnalysisWindow& primary_window, ProfileOutcome& out) const;
  analysis::AnalysisInput firstOfTwo(const analysis::AnalysisInput& input) const;
  // Its target's roles with the first node out of the ISRs, from its moment, against the noise
  // of the baseline before the first fault.
  void toSecondFault(analysis::AnalysisInput& input) const;

  bool end(DrillState state, const std::string& reason);
  // A resume or start of the observation failed: an event, and the run fails.
  void actionFailed(const std::string& action, const std::string& error);
  bool interrupted() const;
  bool stopping() const;
  std::string interruption(const char* phase) const;
  void setState(DrillState state, const std::string& reason = {});
  // Every partition named in `only` ("topic-partition") has acked and received since `since_us`
  // and its last ack is recent (within the gap threshold), as `status` shows the probe.
  bool probesResumed(const probe::ProbeStatus& status, std::int64_t since_us,
                     const std::set<std::string>& only) const;
  // probesResumed, and no partition of `only` holds sends back or has a message outstanding for
  // long.
  bool probeSettled(std::int64_t since_us, const std::set<std::string>& only) const;
  // The control plane (and the coordinators' commits, transactions) the run awaits answered after
  // `since_us` (true for what it does not await).
  bool controlResumed(const probe::ProbeStatus& status, std::int64_t since_us) const;
  // What the observation waits for, on one reading of the probe: the recoverable partitions and
  // what the run awaits of the control plane and the coordinators, all after `since_us`.
  bool resumedAfter(const probe::ProbeStatus& status, std::int64_t since_us) const;
  // Whether the coordinator watch has answered at or after `at_us` about every coordinator the
  // run awaits (the move it saw, if any, then lies in the window). True when none is awaited.
  bool watchAnsweredSince(const probe::ProbeStatus& status, std::int64_t at_us) const;
  // The poller's latest observation once its snapshot is at most max_age_us old; nullopt when
  // none comes (within twice that, at least 2 s) or the run is interrupted.
  std::optional<observe::ObservedCluster> freshSnapshot(std::int64_t max_age_us);
  std::vector<kafka::TopicPartition> notOnPreferredLeader() const;
  // Waits (≤ 30 s, an abort or a stop ends it) until every probe partition has settled a second
  // after a leadership move at `elected_us` (probeSettled).
  void awaitProbeSettled(std::int64_t elected_us);
  // Elects the preferred leaders of `partitions` and waits (≤ 30 s) for the metadata to show them.
  ElectionOutcome electPreferred(const std::vector<kafka::TopicPartition>& partitions);
  void collectBrokerLogs();

  RunParts parts_;
  EngineDeps& deps_;
  storage::DrillRecord& drill_;
  const DrillSpec& spec_;
  RunOutcome outcome_;

  std::int32_t target_ = -1;
  fault::Peers peers_;  // the target's, as the preflight found them: what the injection names
  std::map<std::string, std::int32_t> min_insync_at_preflight_;
  std::optional<kafka::QuorumInfo> quorum_at_preflight_;
  std::optional<std::string> quorum_problem_at_preflight_;
  std::int64_t baseline_start_us_ = 0;
  std::vector<analysis::PartitionAtFault> at_fault_;
  // Partitions that recover without the target, and those whose only in-sync replica it is.
  std::set<std::string> recoverable_, offline_;
  // The target is a KRaft controller and the control probe runs: the observation also waits for
  // the control plane's first answer after the fault.
  bool await_control_ = false;
  // The fault left the quorum without a majority: the control plane answers only once the node
  // is back (observeOffline() waits for that answer).
  bool control_offline_ = false;
  // The target coordinates kfaild's own group (transactional id) at the fault: the observation
  // also waits for the first commit (transaction) after it.
  bool await_commits_ = false;
  bool await_transactions_ = false;
  std::optional<storage::RecoveryEntry> journal_;
  // The compound drill's second fault: its request as a one-fault drill, its node, its journal
  // entry, its time and the partitions at its moment (the first node out of every ISR).
  std::optional<DrillSpec> second_spec_;
  std::int32_t second_target_ = -1;
  std::optional<storage::RecoveryEntry> second_journal_;
  std::int64_t second_fault_us_ = 0;
  std::vector<analysis::PartitionAtFault> at_second_fault_;
  bool injected_ = false;
  std::string failure_;  // why the run cannot be done once the fault is in (an abort, a stop, a
                         // failed resume)
  DrillState failure_state_ = DrillState::kAborted;
  std::uint64_t steps_at_baseline_ = 0;
  std::int64_t fault_us_ = 0;
  std::optional<std::int64_t> undone_us_;   // a held fault's end (resumed, healed)
  std::int64_t undone_uncertainty_us_ = 0;  // ± of undone_us_
  std::int64_t observe_end_us_ = 0;
  std::int64_t recovered_us_ = 0;
  std::int64_t window_end_us_ = 0;
};

}  // namespace kfaild::drill
