#pragma once

// Runs the failure drills of one cluster, one at a time, on its own thread:
//   queued → preflight → baseline → inject → observe → recover → elect → analyse → done
// or failed / aborted with the reason. The drill row is written at every step, so a reader (the
// API) always sees where a drill is. A recovery-journal entry is made durable before a fault is
// injected and closed only when the node is back; recoverPending() finishes the entries a
// previous kfaild left open (it was killed mid-drill) and marks their drills aborted.
//
// Threading: submit(), abort(), active() are thread-safe. The injectors are used by the runner
// thread only (and by recoverPending() before start()).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/analysis/drill_analysis.h"
#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/common/worker.h"
#include "server/config/config.h"
#include "server/drill/drill_spec.h"
#include "server/drill/guards.h"
#include "server/kafka/admin.h"
#include "server/fault/injector.h"
#include "server/kafka/client.h"
#include "server/observe/metadata_poller.h"
#include "server/probe/probe_runner.h"
#include "storage/drill_store.h"
#include "storage/store.h"

namespace kfaild::drill {

struct SubmitOptions {
  std::optional<std::int64_t> schedule_id;
  bool queue_if_busy = false;  // schedules queue behind a running drill; API requests get 409
};

class DrillRunner {
 public:
  DrillRunner(const config::ClusterConfig& cluster, storage::ClusterId cluster_id, storage::Store& store,
              storage::DrillStore& drills, const common::Clock& clock, observe::MetadataPoller& poller,
              probe::ProbeRunner& probe, std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors);
  ~DrillRunner();
  DrillRunner(const DrillRunner&) = delete;
  DrillRunner& operator=(const DrillRunner&) = delete;

  // Brings back every node a previous run of kfaild left down (retrying with backoff up to
  // `timeout`), marks those drills aborted, and fails drills left in a running state. Call before
  // start(). Returns how many nodes it recovered; a node it could not bring back stays in the
  // journal and is retried by the runner thread (drills on the cluster are refused meanwhile).
  Result<int> recoverPending(std::chrono::seconds timeout);

  [[nodiscard]] Status start();
  // Stops after the current drill has recovered its node (bounded by the drill's own timeouts).
  void stop();

  // Checks the guards now and queues the drill. errc::guard_refused carries the guard's reason;
  // errc::invalid_request a target that cannot be resolved.
  Result<std::int64_t> submit(const DrillSpec& spec, const SubmitOptions& options = {});
  // Aborts a queued or running drill: a running one recovers its node at once.
  // errc::drill_not_found when it is neither.
  Status abort(std::int64_t drill_id);
  std::optional<std::int64_t> active() const;

  const std::string& clusterName() const { return cluster_.name; }
  storage::ClusterId clusterId() const { return cluster_id_; }

 private:
  struct RunRecord;
  class Aborted;

  void loop();
  void execute(storage::DrillRecord drill);
  nlohmann::json runOnce(storage::DrillRecord& drill, const DrillSpec& spec, int run);
  Result<std::int32_t> resolveTarget(const Target& target) const;
  // `min_insync` (optional) receives the min.insync.replicas values the guards read.
  std::optional<std::string> guards(std::int32_t target, const DrillSpec& spec, bool ignore_active,
                                    std::map<std::string, std::int32_t>* min_insync = nullptr);
  void persist(const storage::DrillRecord& drill);
  void persist(const storage::RecoveryEntry& entry);
  void setState(storage::DrillRecord& drill, const std::string& state, const std::string& reason = {});
  // Sleeps up to `micros`; false when the drill was aborted or the runner is stopping.
  bool waitFor(std::int64_t micros);
  bool interrupted() const;
  bool stopping() const;  // stop() was called
  // Every partition named in `only` ("topic-partition") has acked and received since `since_us`
  // and its last ack is recent (within the gap threshold).
  bool probesResumed(std::int64_t since_us, const std::set<std::string>& only) const;
  // What every guard check starts from: the request, the inventory, the probe topics and the
  // probe's health now. The caller adds the cluster's metadata and what else it knows.
  GuardInput guardInput(std::int32_t target, const DrillSpec& spec) const;
  std::optional<std::string> guardsAtFault(std::int32_t target, const DrillSpec& spec,
                                           const kafka::ClusterSnapshot& snapshot);
  // The poller's latest observation once its snapshot is at most max_age_us old; nullopt when
  // none comes (within twice that, at least 2 s) or the drill is interrupted.
  std::optional<observe::ObservedCluster> freshSnapshot(std::int64_t max_age_us);
  std::vector<kafka::TopicPartition> notOnPreferredLeader() const;
  // Elects the preferred leaders of `partitions` and waits (≤ 30 s) for the metadata to show
  // them: {"partitions":[...], "preferred": bool, "error"?: text}.
  nlohmann::json electPreferred(const std::vector<kafka::TopicPartition>& partitions);
  bool nodeBack(std::int32_t node) const;
  // Called after each failed attempt to bring a node back: attempt number, error, next wait.
  using RetryReport = std::function<void(int attempt, const std::string& error, std::int64_t retry_in_us)>;
  Status recoverNode(std::int32_t node, const std::string& action, std::int64_t timeout_us,
                     const RetryReport& on_retry = {});
  // Retries, while no drill runs, the recoveries earlier drills could not finish in time.
  void retryOpenRecoveries();
  std::optional<std::string> openRecoveryProblem() const;
  void collectBrokerLogs(std::int32_t target, std::int64_t since_us);
  void recordEvent(const std::string& source, const std::string& kind, std::int64_t t_us,
                   std::optional<std::int32_t> broker, nlohmann::json detail);
  kafka::Handle& admin();

  config::ClusterConfig cluster_;
  storage::ClusterId cluster_id_;
  storage::Store& store_;
  storage::DrillStore& drills_;
  const common::Clock& clock_;
  observe::MetadataPoller& poller_;
  probe::ProbeRunner& probe_;
  std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors_;  // runner thread only
  kafka::Handle admin_;                                                 // runner thread only

  std::mutex submit_mutex_;  // held through a whole submit(): check, guards, queue
  mutable std::mutex mutex_;
  std::deque<std::int64_t> queue_;             // guarded by mutex_
  std::optional<std::int64_t> active_;         // guarded by mutex_
  std::optional<std::int64_t> abort_request_;  // guarded by mutex_
  // Open recovery-journal entries of finished drills are retried at this time (runner thread).
  std::optional<std::chrono::steady_clock::time_point> recovery_retry_at_;
  std::int64_t recovery_retry_backoff_us_ = 0;
  // min.insync.replicas of the topics read at preflight, for the guards at the fault (runner
  // thread).
  std::map<std::string, std::int32_t> min_insync_at_preflight_;
  // The runner thread; its stop wakes every wait of a drill at once. Last: stopped first.
  common::Worker worker_;
};

}  // namespace kfaild::drill
