#pragma once

// The control-plane probe: whether the cluster can change its metadata, measured the way the data
// probe measures writes. Two loops per cluster, each a common::Worker:
//
//   kfaild:control — every interval, one operation only the active KRaft controller completes: a
//                    validate-only CreateTopics (kafka::controllerAnswers), which every broker
//                    forwards to the active controller, which runs it on its event queue and
//                    creates nothing. One operation at a time, each given up on after the
//                    timeout. Each is stored as a sample of the stream "kfaild:control"
//                    partition 0 (send = start, ack = answer, ack_error = why it failed), and the
//                    intervals between successful answers above the gap threshold as its ack
//                    gaps: stored like the data probe's, pruned like them, read by the drill
//                    analysis. (No Kafka topic name contains ':', so the stream never meets one.)
//   kfaild:qwatch  — every interval, DescribeQuorum asked of the voters directly on their
//                    controller listeners (DescribeQuorum v2 names them), the last leader first;
//                    only the leader answers. A change of leader or epoch is a control/
//                    quorum_leader_elected event carrying the old leader's last answer, so
//                    "leaderless" (old leader's last answer → new leader's first) and the
//                    elections it took (epoch increments) come from one event. Off where
//                    kfaild's DescribeQuorum client cannot speak the cluster's protocol
//                    (kafka::quorumClientProblem); the operations go on through librdkafka.
//
// The pure parts (ControlLedger, QuorumWatch) are what the unit tests drive with synthetic answers.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/clock.h"
#include "server/common/worker.h"
#include "server/config/config.h"
#include "server/kafka/client.h"
#include "server/kafka/cluster_types.h"
#include "server/kafka/quorum.h"
#include "server/probe/probe_status.h"
#include "storage/records.h"
#include "storage/store.h"

namespace kfaild::probe {

struct ControlOutput {
  std::vector<storage::ProbeSample> samples;
  std::vector<storage::Gap> gaps;
  std::vector<storage::Event> events;
};

// The accounting of one operation stream (kfaild:control, kfaild:commit, kfaild:txn): one sample
// per operation, a gap when two successes are further apart than the threshold (measured on the
// monotonic clock, stored on the wall).
class OperationLedger {
 public:
  OperationLedger(storage::ClusterId cluster, std::string_view stream, std::int64_t interval_us,
                  std::int64_t gap_threshold_us);
  // One operation, started at `sent`, answered (error 0) or given up on (error, `why`) at `done`.
  void record(common::Instant sent, common::Instant done, std::int32_t error,
              const std::string& why, ControlOutput& out);
  const OperationStatus& status() const { return status_; }

 private:
  storage::ClusterId cluster_;
  std::string stream_;
  std::int64_t gap_threshold_us_;
  std::int64_t next_seq_ = 0;
  std::int64_t last_ok_seq_ = -1;
  OperationStatus status_;
};

// Hands a loop's samples, gaps and events to the store, logging each gap and event.
void publishOutput(storage::Store& store, const std::string& cluster, ControlOutput& out);

// Records one operation of `ledger` (a failure when `problem` is set) and logs a failure when the
// stream starts failing or its reason changes. The caller holds the ledger's lock.
void recordOperation(OperationLedger& ledger, const std::string& cluster, const char* what,
                     common::Instant sent, common::Instant done, const std::string& problem,
                     ControlOutput& out);

// The quorum's leader as its answers show it. Events (source "control"):
//   quorum_leader_elected — the first answer of a leader (or epoch) other than the last one seen:
//     broker = the new leader; detail {leader, epoch, previous_leader, previous_epoch,
//     previous_last_us (the old leader's last answer), leaderless_us (this answer − that one),
//     elections (epoch − previous_epoch), watch_period_us (this watch − the one before: how far
//     the new leader's first answer may trail its election), answered_by}. Not raised for the
//     first leader seen.
//   quorum_unanswered — the first watch after an answer in which no voter answered as leader:
//     broker = the last leader; detail {leader, epoch, last_us, error}.
class QuorumWatch {
 public:
  explicit QuorumWatch(storage::ClusterId cluster) : cluster_(cluster) {}
  void answered(common::WallMicros at, std::int32_t leader, std::int32_t epoch,
                const std::string& answered_by, ControlOutput& out);
  void unanswered(common::WallMicros at, const std::string& error, ControlOutput& out);
  const std::optional<QuorumLeaderSeen>& leader() const { return leader_; }
  const std::string& error() const { return error_; }
  std::uint64_t changes() const { return changes_; }

 private:
  storage::ClusterId cluster_;
  std::optional<QuorumLeaderSeen> leader_;
  std::string error_;
  bool silent_ = false;  // a quorum_unanswered is out since the last answer
  std::optional<common::WallMicros> last_watch_us_;  // the latest watch, answered or not
  std::uint64_t changes_ = 0;
};

class ControlProbe {
 public:
  ControlProbe(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
               storage::Store& store, const common::Clock& clock);
  ~ControlProbe();
  ControlProbe(const ControlProbe&) = delete;
  ControlProbe& operator=(const ControlProbe&) = delete;

  // Creates the client (a refused property is an error) and starts both loops.
  [[nodiscard]] Status start();
  // Raises the stop flags of every loop and returns at once: a loop blocked in a request gives up
  // at its end while the parts stopped before it are still being joined (ClusterParts::stop),
  // so kfaild's stop takes the longest such request rather than their sum. stop() still joins.
  void requestStop();
  void stop();
  ControlStatus status() const;
  // Nodes the checks must not go through: a drill's targets, from the start of its baseline
  // until they are back (empty: none). Before each check whose route (librdkafka's controller id)
  // is one of them the client asks for metadata until a broker names another (under KRaft each
  // answer names a random live broker, and a node just killed stays "live" until the controller
  // fences it); else a check sent to a dead broker waits out its timeout and the run shows a
  // control-plane stall that is the client's. A hint: const, as the probe is shared read-only.
  void steerAround(std::vector<std::int32_t> nodes) const;

 private:
  void operationLoop();
  // Before a check: moves the route off the nodes of steerAround(), as far as a few metadata
  // requests can.
  void steer();
  void watchLoop();
  void watchOnce();
  void publish(ControlOutput& out);

  config::ClusterConfig cluster_;
  storage::ClusterId cluster_id_;
  storage::Store& store_;
  const common::Clock& clock_;
  kafka::Handle client_;
  std::vector<kafka::BootstrapServer> servers_;      // the bootstrap list, for operationLoop's gate
  std::optional<kafka::QuorumDescriber> describer_;  // nullopt: the quorum is not watched
  std::string describer_problem_;
  std::atomic<bool> cancel_{false};
  std::atomic<std::int32_t> requests_via_{-1};
  mutable std::mutex avoid_mutex_;
  mutable std::vector<std::int32_t> avoid_;  // guarded by avoid_mutex_
  // The voters' controller listeners from the last DescribeQuorum v2 answer (watch thread only).
  std::map<std::int32_t, std::vector<kafka::QuorumEndpoint>> endpoints_;
  std::uint64_t silent_watches_ = 0;  // watch thread only: watches without an answer in a row

  mutable std::mutex mutex_;
  OperationLedger ledger_;  // guarded by mutex_
  QuorumWatch watch_;       // guarded by mutex_
  common::Worker operations_;
  common::Worker watcher_;
};

}  // namespace kfaild::probe
