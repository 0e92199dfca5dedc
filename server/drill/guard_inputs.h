#pragma once

// What the guards (guards.h) are checked on, gathered from the engine's seams. Three moments:
// - submission: on ClusterFacts the engine's thread reads when a submission asks, so the admin
//   calls never run on an HTTP thread, which waits for them at most kReadWait;
// - preflight: on facts read there and then (the engine's thread);
// - the fault: on the poller's metadata, quorum and the probe's state, nothing slow in between.
//
// Threading: base() and readAfter() from any thread; read() from the engine's thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/drill/drill_spec.h"
#include "server/drill/guards.h"
#include "server/drill/seams.h"

namespace kfaild::drill {

// What a coordinator_of target asks FindCoordinator: the group or transactional id the request
// names, else kfaild's own (the configuration's, by default kfaild-probe-<cluster>).
struct CoordinatorQuery {
  kafka::CoordinatorType type = kafka::CoordinatorType::kGroup;
  std::string key;
  auto operator<=>(const CoordinatorQuery&) const = default;
};
CoordinatorQuery coordinatorQuery(const config::ClusterConfig& cluster, const Target& target);

// The cluster as the admin API describes it: every topic, whether the KRaft controller answers,
// min.insync.replicas per topic; and the KRaft quorum as the metadata poller last described it
// (every 2 s). `problem` names the first thing that could not be read; a quorum that could not be
// described is `quorum_problem` (only a drill on a controller needs it, and the guard decides).
// `coordinators`: FindCoordinator's answer to each query a submission asked for with the read.
struct ClusterFacts {
  std::optional<kafka::ClusterSnapshot> all;
  std::optional<std::string> problem;
  std::map<std::string, std::int32_t> min_insync;
  std::optional<kafka::QuorumInfo> quorum;
  std::optional<std::string> quorum_problem;
  std::map<CoordinatorQuery, Result<kafka::Coordinator>> coordinators;
  common::MonoMicros read_at = 0;
};

class GuardInputs {
 public:
  // How long a submitting thread waits for the engine to read the cluster.
  static constexpr std::chrono::milliseconds kReadWait{5000};

  explicit GuardInputs(EngineDeps& deps) : deps_(deps) {}

  // The request, the inventory, the probe topics and the probe's health now; the caller adds
  // the cluster's state.
  GuardInput base(std::int32_t target, const DrillSpec& spec) const;

  // Reads the facts with admin calls (blocking, each call bounded by its timeout), with the
  // coordinators submissions asked for, keeps them for the submission that asked and returns them.
  // The engine's thread.
  ClusterFacts read();
  // Facts read at or after `since` that answer every query of `coordinators`: asks the engine for
  // a read with `ask_read` (which wakes it) and waits up to kReadWait. nullopt when none came in
  // time. Any thread.
  std::optional<ClusterFacts> readAfter(common::MonoMicros since,
                                        const std::function<void()>& ask_read,
                                        const std::vector<CoordinatorQuery>& coordinators = {});
  // A submission is waiting for a read.
  bool readWanted() const;

 private:
  EngineDeps& deps_;
  mutable std::mutex mutex_;
  std::condition_variable read_done_;
  std::optional<ClusterFacts> latest_;              // guarded by mutex_
  bool read_wanted_ = false;                        // guarded by mutex_
  std::set<CoordinatorQuery> wanted_coordinators_;  // guarded by mutex_
};

// The guards on `facts` (a refusal's reason, or nullopt). `open_recovery` is the recovery
// journal's problem, checked after the metadata and before the controller as it always was.
std::optional<std::string> checkWithFacts(GuardInput in, const ClusterFacts& facts,
                                          const std::optional<std::string>& open_recovery);

}  // namespace kfaild::drill

namespace kfaild::drill {

// The node a request's target names, and how it was found ("the leader of orders-1 in the
// metadata", "the KRaft quorum's leader (DescribeQuorum, epoch 7)"): leader_of on the
// metadata's leader, controller on the KRaft quorum's leader (the active controller; a chosen
// voter is `{broker: N}`), random a broker of the inventory drawn anew on every call.
// errc::invalid_request for a target that cannot name a node, errc::guard_refused for one that
// names none right now (no leader, no quorum described, a leader kfaild cannot reach).
struct ResolvedTarget {
  std::int32_t node = -1;
  std::string how;
};
// On `observed`: its metadata for leader_of, its quorum for controller.
Result<ResolvedTarget> resolveTargetOn(const EngineDeps& deps, const Target& target,
                                       const observe::ObservedCluster& observed);
// On the poller's latest observation, a coordinator_of target on `facts`' coordinators (never
// blocks: submissions use it; a coordinator_of target without its answer in `facts` is refused).
Result<std::int32_t> resolveTarget(const EngineDeps& deps, const Target& target,
                                   const ClusterFacts* facts);

}  // namespace kfaild::drill
