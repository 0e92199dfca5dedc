#pragma once

// What the drill runner keeps: drills (one row per request, its runs in `result`), the recovery
// journal (written before a fault is injected, so a broker kfaild stopped is brought back even if
// kfaild dies), and schedules. Every method is synchronous and durable when it returns OK (the
// journal must be on disk before the signal is sent); they are safe from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "storage/records.h"
#include "storage/store.h"

namespace kfaild::storage {

struct DrillRecord {
  std::int64_t id = 0;
  ClusterId cluster = 0;
  std::string fault;    // a drill::FaultType as drill::toString spells it (drill_spec.h)
  std::string target;   // the request's target, JSON ({"broker":1} / {"leader_of":...} / ...)
  std::string options;  // JSON of the drill options
  std::string state;    // queued | preflight | baseline | inject | observe | recover | elect
                        // | analyse | done | failed | aborted
  std::string reason;   // why it failed or was aborted (the guard's words), else empty
  std::optional<std::int64_t> schedule_id;
  std::int64_t created_us = 0;
  std::optional<std::int64_t> started_us;
  std::optional<std::int64_t> finished_us;
  std::string result = "{}";  // JSON: {"runs":[...]} with per-run times and analysis
  std::string expect;         // JSON of the request's objectives (`expect`), empty when it had none
  std::string
      second_fault;  // JSON of the request's `then` (a compound drill's second fault), else empty
  // The verdict (pass | fail | inconclusive) and whether a regression was flagged, once the drill
  // ended; also in `result.verdict`, kept here so they can be filtered and counted in SQL.
  std::optional<std::string> verdict;
  std::optional<bool> regressed;
};

struct DrillQuery {
  std::optional<ClusterId> cluster;
  std::optional<std::string> state;
  std::optional<std::string> fault;
  std::optional<std::string> verdict;
  std::optional<std::int64_t> created_from_us;
  std::optional<std::int64_t> created_to_us;
  std::optional<std::int64_t> before_id;  // cursor: only drills with a smaller id
  std::size_t limit = 50;                 // newest first
};

// When a drill ran, without its request or result: for the readers that need only that
// (retention's drill windows, incidents).
struct DrillSpan {
  std::int64_t id = 0;
  ClusterId cluster = 0;
  std::int64_t from_us = 0;           // started_us, or created_us while it has not started
  std::optional<std::int64_t> to_us;  // finished_us; nullopt while it is not finished
};

// How many drills of a cluster ended (or stand) in one state after one kind of fault.
struct DrillCount {
  ClusterId cluster = 0;
  std::string fault;
  std::string state;
  std::int64_t count = 0;
};

struct RecoveryEntry {
  std::int64_t id = 0;
  std::int64_t drill_id = 0;
  ClusterId cluster = 0;
  std::int32_t node = -1;
  std::string action;  // "start" (after kill/stop), "resume" (after pause), "heal" (gray faults)
  std::string phase;   // drill phase when written; "resolved" when an operator closed it
  std::int64_t created_us = 0;
  std::optional<std::int64_t> done_us;
  std::int32_t attempts = 0;
  std::string last_error;
  // Whether the fault was injected: "pending" (written before the call; kfaild may have died in
  // it), "done", "failed" (the injector returned an error: nothing of it was placed); "" in entries
  // written before version 12 (taken as pending).
  std::string injection;
  // Where a gray fault was placed, as the node's injector said just before injecting: the ssh
  // host, the network namespace (local: its name; docker: the container) and its identity (the
  // namespace's inode, "net:[4026532…]"), the nft table ("kfaild_d12"), the disk filler's path.
  // Empty: that step was not part of the fault. Recovery undoes what these name, not what the
  // configuration says now.
  std::string place_host;
  std::string place_netns;
  std::string place_netns_id;
  std::string place_table;
  std::string place_filler;
};

struct ScheduleRecord {
  std::int64_t id = 0;
  ClusterId cluster = 0;
  std::string name;
  std::string cron;           // 5-field, UTC
  std::int64_t jitter_s = 0;  // random delay up to this many seconds
  bool enabled = true;
  std::string drill;  // JSON: the drill request it starts (fault, target, options)
  std::optional<std::int64_t> last_run_us;
  std::optional<std::int64_t> next_run_us;
  std::string last_outcome;  // "started drill 12", "missed", "refused: ..."
  std::int64_t created_us = 0;
};

class DrillStore {
 public:
  virtual ~DrillStore() = default;

  virtual Result<std::int64_t> createDrill(const DrillRecord& drill) = 0;
  virtual Status updateDrill(const DrillRecord& drill) = 0;
  virtual Result<std::optional<DrillRecord>> drill(std::int64_t id) const = 0;
  virtual Result<std::vector<DrillRecord>> drills(const DrillQuery& query) const = 0;
  // The spans of the drills (of `cluster`, or of all) that overlap `range`: began before its end
  // and did not finish before its start. By id.
  virtual Result<std::vector<DrillSpan>> drillSpans(std::optional<ClusterId> cluster,
                                                    TimeRange range) const = 0;
  // Drills counted per (cluster, fault, state) in SQL, in that order.
  virtual Result<std::vector<DrillCount>> drillCounts() const = 0;
  // The newest drill (highest id) in `state` of every (cluster, fault), by cluster and fault. The
  // newest of each is found in the (cluster, fault, state) index, so only those rows' results are
  // read: /metrics calls this on every scrape.
  virtual Result<std::vector<DrillRecord>> lastDrills(const std::string& state) const = 0;

  virtual Result<std::int64_t> addRecovery(const RecoveryEntry& entry) = 0;
  // Changes an open entry; an entry already closed (done, or resolved by an operator meanwhile)
  // stays as it is.
  virtual Status updateRecovery(const RecoveryEntry& entry) = 0;
  virtual Result<std::vector<RecoveryEntry>> pendingRecoveries() const = 0;

  virtual Result<std::int64_t> createSchedule(const ScheduleRecord& schedule) = 0;
  virtual Status updateSchedule(const ScheduleRecord& schedule) = 0;
  // The scheduler's record of a run: only last_run_us, next_run_us and last_outcome change, so
  // an edit made meanwhile through the API (enabled, cron, ...) is never overwritten.
  virtual Status recordScheduleRun(const ScheduleRecord& schedule) = 0;
  virtual Result<bool> deleteSchedule(std::int64_t id) = 0;
  virtual Result<std::optional<ScheduleRecord>> schedule(std::int64_t id) const = 0;
  virtual Result<std::vector<ScheduleRecord>> schedules(std::optional<ClusterId> cluster) const = 0;
};

// Closes an open journal entry on an operator's word (the node is back, or retired): done_us is
// `now_us`, phase "resolved", last_error keeps the note. The entry as closed; nullopt when no open
// entry has that id.
Result<std::optional<RecoveryEntry>> resolveRecovery(DrillStore& store, std::int64_t id,
                                                     const std::string& note, std::int64_t now_us);

}  // namespace kfaild::storage
