#pragma once

// What the guards (guards.h) are checked on, gathered from the engine's seams. Three moments:
// - submission: on ClusterFacts the engine's thread keeps fresh while it is idle, so an HTTP
//   thread never waits on an admin call (it waits, bounded, only for a refresh it asked for);
// - preflight: on facts read there and then (the engine's thread);
// - the fault: on the poller's metadata and the probe's state, nothing slow in between.
//
// Threading: base() and fresh() from any thread; read() from the engine's thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "server/drill/drill_spec.h"
#include "server/drill/guards.h"
#include "server/drill/seams.h"

namespace kfaild::drill {

// The cluster as the admin API describes it: every topic, whether the KRaft controller answers,
// min.insync.replicas per topic. `problem` names the first thing that could not be read.
struct ClusterFacts {
  std::optional<kafka::ClusterSnapshot> all;
  std::optional<std::string> problem;
  std::map<std::string, std::int32_t> min_insync;
  common::MonoMicros read_at = 0;
};

class GuardInputs {
 public:
  // Submissions use facts at most this old, and wait at most kRefreshWait for newer ones.
  static constexpr std::int64_t kMaxFactsAgeUs = 15'000'000;
  static constexpr std::chrono::milliseconds kRefreshWait{5000};
  // The engine refreshes its facts this often while idle.
  static constexpr std::int64_t kIdleRefreshUs = 10'000'000;

  explicit GuardInputs(EngineDeps& deps) : deps_(deps) {}

  // The request, the inventory, the probe topics and the probe's health now; the caller adds
  // the cluster's state.
  GuardInput base(std::int32_t target, const DrillSpec& spec) const;

  // Reads the facts with admin calls (blocking, each call bounded by its timeout), keeps them
  // for submissions and returns them.
  ClusterFacts read();
  // Facts no older than kMaxFactsAgeUs and, when `read_after` is given, read at or after it; else
  // calls `ask_refresh` (which wakes the engine) and waits up to kRefreshWait for such a read.
  // nullopt when none came.
  std::optional<ClusterFacts> fresh(const std::function<void()>& ask_refresh,
                                    std::optional<common::MonoMicros> read_after = std::nullopt);
  // A submission asked for facts the engine has not read yet.
  bool refreshWanted() const;

 private:
  EngineDeps& deps_;
  mutable std::mutex mutex_;
  std::condition_variable read_done_;
  std::optional<ClusterFacts> latest_;  // guarded by mutex_
  bool refresh_wanted_ = false;         // guarded by mutex_
};

// The guards on `facts` (a refusal's reason, or nullopt). `open_recovery` is the recovery
// journal's problem, checked after the metadata and before the controller as it always was.
std::optional<std::string> checkWithFacts(GuardInput in, const ClusterFacts& facts,
                                          const std::optional<std::string>& open_recovery);

}  // namespace kfaild::drill

namespace kfaild::drill {

// The node a request's target names now (leader_of reads the poller's metadata).
// errc::invalid_request for a target that cannot name a node, errc::guard_refused for one that
// names none right now (no leader, a leader kfaild cannot reach).
Result<std::int32_t> resolveTarget(const EngineDeps& deps, const Target& target);

}  // namespace kfaild::drill
