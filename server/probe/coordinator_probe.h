#pragma once

// The coordinator probes: whether consumers can commit offsets and transactional producers can
// commit transactions, which depend on the brokers that coordinate them, not on the data
// partitions' leaders (a broker that hosts a group's coordinator can die while every probe
// partition keeps a healthy leader). Loops per cluster, each a common::Worker:
//
//   kfaild:commit — every commit interval (100 ms), one offset commit of the kfaild-owned group
//                   (`probe.coordinators.group`, default the probe consumer's group id) on the
//                   first probe topic's partition 0, by a consumer that never joins the group
//                   (an OffsetCommit of generation -1), so that it finds the coordinator as an
//                   application's consumer does (the admin API's AlterConsumerGroupOffsets kept
//                   a decommissioned broker as coordinator, librdkafka#5511).
//                   One commit at a time, each given up on after the timeout. Stored as the
//                   stream kfaild:commit (samples, and gaps above the threshold), as the control
//                   probe stores kfaild:control.
//   kfaild:txn    — with `transactions` on: every transaction interval one transaction of the
//                   kfaild-owned transactional id (begin, produce one small message to that same
//                   partition, commit), stored as the stream kfaild:txn. A fatal error (the id
//                   fenced, the producer's state lost) makes a new producer; an abortable one
//                   aborts the transaction.
//   kfaild:coord  — every watch interval, FindCoordinator of the group (and of the transactional
//                   id) through the bootstrap brokers (kfaild's own protocol client: PLAINTEXT
//                   only). A change of coordinator is a coordinator/coordinator_moved event with
//                   the old coordinator's last answer.
//
// The commit and transaction messages go to the probe's own topic: the probe's consumer reads
// them, and ignores them (they are not its payload).

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "server/common/clock.h"
#include "server/common/worker.h"
#include "server/config/config.h"
#include "server/kafka/client.h"
#include "server/kafka/quorum.h"
#include "server/probe/control_probe.h"
#include "server/probe/probe_status.h"
#include "storage/store.h"

namespace kfaild::probe {

// Who coordinates a key, as FindCoordinator's answers show it. Events (source "coordinator"):
//   coordinator_moved — the first answer naming another node than the last one seen: broker =
//     the new coordinator; detail {type ("group" | "transaction"), key, from, to,
//     previous_last_us (the old coordinator's last answer), moved_us (this answer − that one),
//     partition (the internal topic's partition that moved, "__consumer_offsets-17", when known)}.
//     Not raised for the first coordinator seen.
class CoordinatorWatch {
 public:
  CoordinatorWatch(storage::ClusterId cluster, std::string type, std::string key)
      : cluster_(cluster), type_(std::move(type)), key_(std::move(key)) {}
  void answered(common::WallMicros at, std::int32_t node, ControlOutput& out);
  // The internal topic's partition that holds the key (coordinatorPartition).
  void setPartition(std::string partition);
  bool partitionKnown() const { return !partition_.empty(); }
  const std::optional<CoordinatorSeen>& seen() const { return seen_; }
  std::uint64_t moves() const { return moves_; }

 private:
  storage::ClusterId cluster_;
  std::string type_;
  std::string key_;
  std::string partition_;
  std::optional<CoordinatorSeen> seen_;
  std::uint64_t moves_ = 0;
};

class CoordinatorProbe {
 public:
  CoordinatorProbe(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                   storage::Store& store, const common::Clock& clock);
  ~CoordinatorProbe();
  CoordinatorProbe(const CoordinatorProbe&) = delete;
  CoordinatorProbe& operator=(const CoordinatorProbe&) = delete;

  // Creates the clients (a refused property is an error) and starts the loops.
  [[nodiscard]] Status start();
  // Raises the stop flags of every loop and returns at once: a loop blocked in a request gives up
  // at its end while the parts stopped before it are still being joined (ClusterParts::stop),
  // so kfaild's stop takes the longest such request rather than their sum. stop() still joins.
  void requestStop();
  void stop();
  CoordinatorStatus status() const;

 private:
  void commitLoop();
  void transactionLoop();
  void watchLoop();
  // Reads how many partitions __consumer_offsets (and __transaction_state) have, and gives the
  // watches the partition of kfaild's group (transactional id); until it succeeds, every watch.
  void learnPartitions();
  void publish(ControlOutput& out);
  [[nodiscard]] Result<kafka::Handle> makeTransactionalProducer();

  config::ClusterConfig cluster_;
  storage::ClusterId cluster_id_;
  storage::Store& store_;
  const common::Clock& clock_;
  std::string topic_;  // the first probe topic: partition 0 takes the commits and transactions
  kafka::Handle committer_;
  kafka::Handle transactional_;  // transaction loop only (after start)
  std::optional<kafka::QuorumDescriber> finder_;
  std::string finder_problem_;
  std::atomic<bool> cancel_{false};

  mutable std::mutex mutex_;
  OperationLedger commits_;       // guarded by mutex_
  OperationLedger transactions_;  // guarded by mutex_
  CoordinatorWatch group_watch_;  // guarded by mutex_
  CoordinatorWatch txn_watch_;    // guarded by mutex_
  std::string watch_error_;       // guarded by mutex_
  common::Worker committer_loop_;
  common::Worker transaction_loop_;
  common::Worker watcher_;
};

}  // namespace kfaild::probe
