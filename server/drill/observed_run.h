#pragma once

// An observed drill (FaultType::kObserved): the fault is someone else's. kfaild never injects,
// never restarts a node, never elects a leader and opens no recovery journal entry in it:
//
//   preflight   the guards it can check (the cluster whole, the probe steady: checkGuards with
//               no target), the broker settings (cluster_settings.h)
//   baseline    baseline_s of normal probing
//   observe     up to window_s: waits for a fault, marked (mark(), from the API) or found from
//               the cluster (analysis::findDepartures on the metadata's events). Ends once a fault
//               was seen, the cluster is whole again (every inventory broker registered, every
//               probe partition fully replicated) with the probe steady, observe_min_s after the
//               last fault, and that has held quiet_s with no new one; else at window_s, saying
//               what was still missing.
//   analyse     the brokers' failover log lines of every departed broker are read, the departures
//               found again with them (a fencing, a controlled shutdown), and each fault is a
//               step: a run analysed as kfaild's own drills are (roles by the departed broker),
//               its observation cut at the next step's fault.
//
// Each step's fault time: a mark's time when a mark names it (a mark without a broker takes the
// first departure after it); else placed from its departure (departureFault): a fencing lies a
// session timeout after the broker's last heartbeat, so the fault is placed there, ± half a
// heartbeat interval and the log line's resolution; a controlled shutdown, an unregistration or
// a leader change at the sign's own time, ± its resolution (an unregistration also ± the session
// timeout: the broker may have died that long before). A fencing is judged as a kill, a
// controlled shutdown as a stop; anything else (an unregistration or a leader change without a
// log line, a mark that no departure follows) as `observed`, against the objectives that name no
// fault. With no fault in the window the drill is done with no step, verdict inconclusive.
//
// The engine's thread runs it; marks come from HTTP threads through ObservedMarks.

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/analysis/departures.h"
#include "server/analysis/verdict.h"
#include "server/drill/run_execution.h"

namespace kfaild::drill {

// Someone's word that they injected a fault at `at_us` (kfaild's wall clock), into `broker` when
// they say so.
struct ObservedMark {
  std::int64_t at_us = 0;
  std::optional<std::int32_t> broker;
  std::string by;  // who or what marked it, in their words; empty when unsaid
};

// The marks of the running observed drill. Thread-safe: HTTP threads add, the engine's thread
// opens, reads and closes.
class ObservedMarks {
 public:
  void open(std::int64_t drill_id, std::int64_t began_us);
  void close();
  // The running observed drill and when it began; nullopt when none is waiting for a fault.
  std::optional<std::pair<std::int64_t, std::int64_t>> current() const;
  // False when `drill_id` is not the open drill (it ended meanwhile).
  bool add(std::int64_t drill_id, const ObservedMark& mark);
  std::vector<ObservedMark> marks() const;

 private:
  mutable std::mutex mutex_;
  std::optional<std::int64_t> drill_;  // guarded by mutex_
  std::int64_t began_us_ = 0;          // guarded by mutex_
  std::vector<ObservedMark> marks_;    // guarded by mutex_
};

// A step of an observed drill: a departure, a mark, or both.
struct ObservedFault {
  std::optional<analysis::DepartureFound> departure;
  std::optional<ObservedMark> mark;
  std::int32_t broker = -1;  // -1: a mark naming no broker, with no departure after it
  std::int64_t fault_us = 0;
  std::int64_t uncertainty_us = 0;
  std::string time_source;  // "mark", or "departure:<kind>"
  std::string judged_as;    // kill | stop | observed
};

// The faults of a window: each departure, with the mark that names it (the mark's broker, or for
// a mark with none the first departure at or after it not yet named), and each mark no departure
// follows. By fault time. `session_timeout_us` and `heartbeat_us` place a fencing's fault. Pure.
std::vector<ObservedFault> observedFaults(const std::vector<analysis::DepartureFound>& departures,
                                          const std::vector<ObservedMark>& marks,
                                          std::int64_t session_timeout_us,
                                          std::int64_t heartbeat_us);

class ObservedRun {
 public:
  ObservedRun(RunParts parts, storage::DrillRecord& drill, const DrillSpec& spec,
              ObservedMarks& marks, const analysis::Objectives& objectives);
  // The drill's result ({"runs": [...], "observed": {...}, "verdict": {...}}) is written into
  // drill.result (and verdict, regressed when done); returns the terminal state and its reason.
  std::pair<DrillState, std::string> execute();

 private:
  bool preflight();
  bool baseline();
  // Waits for faults and the cluster whole again; false when interrupted.
  bool watch();
  // Reads the metadata's events of the window so far and the marks: the faults seen.
  std::vector<ObservedFault> faultsSoFar(bool with_logs);
  // One poll: the leadership and the probe's state, kept to be read at a fault's time; whether
  // the cluster is whole with the probe steady (else why not, in `missing`).
  bool pollCluster(std::string& missing);
  void readBrokerLogs(const std::vector<ObservedFault>& faults);
  void analyseSteps(const std::vector<ObservedFault>& faults);
  RunOutcome step(const ObservedFault& fault, int index, std::int64_t observe_end_us,
                  bool cut_by_next, const std::vector<storage::Event>& events,
                  const std::vector<storage::ProbeSample>& samples);
  analysis::Verdict judge(const std::vector<ObservedFault>& faults,
                          const std::vector<analysis::RunAnalysis>& analyses) const;
  // When the cluster was first whole with the probe steady at or after `from_us`, if it was.
  std::optional<std::int64_t> wholeAfter(std::int64_t from_us) const;
  bool interrupted() const;
  std::string interruption(const char* phase) const;
  void setState(DrillState state, const std::string& reason = {});

  RunParts parts_;
  EngineDeps& deps_;
  storage::DrillRecord& drill_;
  const DrillSpec& spec_;
  ObservedMarks& marks_;
  const analysis::Objectives& objectives_;
  nlohmann::json result_ = {{"runs", nlohmann::json::array()}};

  std::map<std::string, std::int32_t> min_insync_;
  std::optional<ClusterSettings> settings_;
  std::optional<std::map<std::string, std::string>> probe_client_;
  std::uint64_t steps_at_baseline_ = 0;
  std::int64_t baseline_start_us_ = 0;
  std::int64_t baseline_end_us_ = 0;
  std::int64_t window_end_us_ = 0;
  // Every change of the leadership seen, and the probe's state at each poll of the last
  // kProbeMemoryUs: what a fault found late (a fencing, seconds after the kill) is analysed on.
  std::vector<LeadershipAtFault> leadership_;
  std::deque<std::pair<std::int64_t, ProbeSnapshotAtFault>> probe_;
  // Each change of "whole with the probe steady" (time, whole).
  std::vector<std::pair<std::int64_t, bool>> whole_;
  std::string missing_;  // why the cluster was not whole at the window's end
};

}  // namespace kfaild::drill
