#pragma once

// Bringing a node back after a fault, and the recovery journal that makes sure it happens even
// when kfaild dies mid-drill. An entry is made durable before a fault is injected (with where a
// gray fault goes, and "pending"), marked when the injection returned (done or failed), and
// closed only when the node is back (or an operator resolves it); while one is open, drills on
// the cluster are refused. Entries a previous kfaild left open are replayed at start, on the
// engine's thread beside the HTTP server and the probe; entries that could not be closed in time
// are retried between drills with a growing backoff (30 s to 5 min). An entry an operator
// resolves meanwhile is left alone from the next retry on. An entry for a node that is no longer
// in the inventory cannot be retried: it is reported, and an operator who has brought the node
// back (or retired it) resolves it through the API.
//
// Threading: the drill engine's thread only (and its start-up before the thread runs).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/drill/seams.h"

namespace kfaild::drill {

class NodeRecovery {
 public:
  static constexpr std::int64_t kFirstRetryUs = 30'000'000;
  static constexpr std::int64_t kMaxRetryUs = 300'000'000;

  explicit NodeRecovery(EngineDeps& deps) : deps_(deps) {}

  // Called after each failed attempt: attempt number, error, the wait before the next one.
  using RetryReport =
      std::function<void(int attempt, const std::string& error, std::int64_t retry_in_us)>;
  // Waits until a monotonic deadline; false when the wait was cut short and the recovery is to be
  // left for later (kfaild stopping).
  using Sleeper = std::function<bool(common::MonoMicros deadline)>;
  // Brings back `entry`'s node: heals its gray fault when the action is "heal" and the injection
  // was not a failure (where the entry places it; an entry without a place, where the node's
  // configuration puts it now), starts (or resumes) the node until it runs, and waits until it
  // has rejoined (see notBack), retrying with backoff (1 s doubling to 30 s) up to `timeout_us`;
  // the error then says what was still missing. A heal that fails is retried, but a stopped node
  // is started all the same meanwhile: "nothing there" is a heal (Injector::healPlaced), and
  // anything else must not keep the broker down. Without a `sleeper` it is not interruptible: a
  // node a running drill took down comes back before anything else happens. The background
  // retries pass one that a stop (or the entry's resolution) cuts short.
  Status bringBack(const storage::RecoveryEntry& entry, std::int64_t timeout_us,
                   const RetryReport& on_retry = {}, const Sleeper& sleeper = {});

  // What a controller's rejoin is measured against: the quorum as first described after the
  // node was (re)started, taken again when the quorum's leader changes.
  struct RejoinBaseline {
    std::int32_t leader = -1;
    std::int64_t high_watermark = -1;
    std::int64_t leader_now_ms = -1;  // the leader's clock; -1: it reports no timestamps
  };
  // Why `node` has not rejoined yet; nullopt once it has. A broker: registered and in every ISR
  // it is a replica of. A controller: the KRaft quorum has a leader and the node is a voter that
  // leads it, or that has caught up with the leader since `baseline`: its log end offset has
  // reached the high watermark of the baseline and (when the leader reports timestamps) the
  // leader saw it caught up at or after the baseline's moment. A baseline is empty after each
  // start of the node and is filled by the first answer. When kfaild cannot describe the quorum
  // (not PLAINTEXT) a controller is back once the cluster answers. Blocks for a DescribeQuorum.
  std::optional<std::string> notBack(std::int32_t node, RejoinBaseline& baseline);

  // The journal entry for a fault about to be injected at `place` (a gray fault's; empty for the
  // others), made durable now with injection "pending".
  Result<storage::RecoveryEntry> open(std::int64_t drill_id, std::int32_t node,
                                      const std::string& action,
                                      const fault::GrayPlace& place = {});
  // Records how the injection went ("done", or "failed": nothing of it was placed).
  void injected(storage::RecoveryEntry& entry, bool ok);
  void save(const storage::RecoveryEntry& entry);
  // Whether `id` is still open in the journal (an operator may have resolved it meanwhile).
  bool stillOpen(std::int64_t id) const;

  // Why no drill may start while `running` (if any) runs: a node an earlier drill left down.
  std::optional<std::string> openProblem(std::optional<std::int64_t> running) const;

  // At start: brings back every node a previous kfaild left down (each up to `timeout`). Returns
  // how many; a node not back stays open and is retried by retryOpen(). `sleeper` (see bringBack)
  // cuts the tries short when kfaild stops; an entry resolved meanwhile is not tried further.
  Result<int> replay(std::int64_t timeout_us, const Sleeper& sleeper = {});
  // Between drills: one more try at every open entry of the cluster; schedules the next try.
  // `sleeper` (see bringBack) cuts the tries short when kfaild stops; the entries stay open.
  void retryOpen(const Sleeper& sleeper = {});
  // When retryOpen() is due (monotonic), if anything is open.
  std::optional<common::MonoMicros> retryDueAt() const { return retry_at_; }
  void scheduleRetry(std::int64_t in_us);

 private:
  std::optional<std::string> brokerNotBack(std::int32_t node) const;
  // An entry whose node left the inventory: its gray fault healed where the journal places it,
  // when that is on kfaild's own host (fault::healLocalPlace).
  void healOrphan(const storage::RecoveryEntry& entry);
  std::optional<std::string> controllerNotBack(std::int32_t node, RejoinBaseline& baseline);

  EngineDeps& deps_;
  std::optional<common::MonoMicros> retry_at_;
  std::int64_t retry_backoff_us_ = 0;
};

// The order in which nodes down together come back (a compound drill's, the journal's replay):
// controllers first, since a broker rejoins its ISRs only through an active controller; each
// group in the order it went down. Pure.
std::vector<std::int32_t> recoveryOrder(const std::vector<std::int32_t>& taken_down,
                                        const std::vector<config::NodeConfig>& inventory);

// A journal entry's gray-fault place and back.
fault::GrayPlace placeOf(const storage::RecoveryEntry& entry);
void setPlace(storage::RecoveryEntry& entry, const fault::GrayPlace& place);

// The text an operator reads for an entry whose node is not in the inventory.
std::string orphanProblem(const storage::RecoveryEntry& entry, const std::string& cluster);

}  // namespace kfaild::drill
