#pragma once

// Polls a cluster's metadata for the probe topics at a short interval on its own thread and
// records every change as an event (see metadata_diff.h), plus `metadata_unavailable` /
// `metadata_available` when the cluster stops or starts answering. On a second thread it
// describes the KRaft quorum every kQuorumIntervalUs (a slower cadence: the active controller
// rarely moves, and a describe that has to wait for a dead broker must not hold up the metadata
// polls) and records `controller_change` when its leader or leader epoch changes.
// latest() is thread-safe.
//
// Both threads are common::Workers: stop() wakes their waits between polls at once and cuts a
// describe under way short (within ~100 ms); a metadata request under way finishes first (up to
// its timeout, 10 polling intervals and at least 1 s).

#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/common/worker.h"
#include "server/config/config.h"
#include "server/kafka/client.h"
#include "server/kafka/metadata.h"
#include "server/kafka/quorum.h"
#include "server/observe/observed_cluster.h"
#include "storage/store.h"

namespace kfaild::observe {

// The cluster's observer client: a librdkafka handle (producer type, never producing) for the
// metadata poller and the drill engine's admin calls, created on first use. It is not the probe's
// producer or consumer, on purpose (docs/PERFORMANCE.md, "librdkafka clients per cluster"): a
// broker answers the requests of one connection one at a time, so a metadata request on the
// producer's connection waits behind its acks=all produce requests (the whole ~9 s of a
// follower's stall in a kill drill), and every metadata answer updates the handle's own leader
// cache, so a poller on the probe's clients would shorten the very client-discovery time the
// probe measures.
std::unique_ptr<kafka::SharedHandle> makeObserverClient(const config::ClusterConfig& cluster);

class MetadataPoller {
 public:
  static constexpr std::int64_t kQuorumIntervalUs = 2'000'000;
  static constexpr int kQuorumTimeoutMs = 2000;  // per bootstrap broker tried

  // `observer`: the cluster's observer client (makeObserverClient), shared with the drill engine;
  // it must outlive the poller. Without one the poller makes its own.
  MetadataPoller(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                 storage::Store& store, const common::Clock& clock,
                 kafka::SharedHandle* observer = nullptr);
  ~MetadataPoller();
  MetadataPoller(const MetadataPoller&) = delete;
  MetadataPoller& operator=(const MetadataPoller&) = delete;

  // Told after every answered poll how many partitions each probe topic has (topics the answer
  // gave an error for are left out), on the poller's thread, outside its lock: the probe follows
  // partitions added to its topics within one poll. Set before start().
  using PartitionCountListener = std::function<void(const std::map<std::string, std::int32_t>&)>;
  void setPartitionCountListener(PartitionCountListener listener) {
    partition_count_listener_ = std::move(listener);
  }

  [[nodiscard]] Status start();
  // Raises the stop flags of every loop and returns at once: a loop blocked in a request gives up
  // at its end while the parts stopped before it are still being joined (ClusterParts::stop),
  // so kfaild's stop takes the longest such request rather than their sum. stop() still joins.
  void requestStop();
  void stop();
  // One poll, on the caller's thread (the poller thread uses it; tests may call it directly
  // before start()).
  void pollOnce();
  // One quorum describe, on the caller's thread (same use as pollOnce()).
  void describeQuorumOnce();

  ObservedCluster latest() const;

 private:
  void run();
  void runQuorum();
  [[nodiscard]] Status ensureHandle();
  void record(storage::Event event);

  config::ClusterConfig cluster_;
  storage::ClusterId cluster_id_;
  storage::Store& store_;
  const common::Clock& clock_;
  std::vector<std::string> topics_;
  std::unique_ptr<kafka::SharedHandle> own_observer_;  // when none was given
  kafka::SharedHandle* observer_;
  rd_kafka_t* handle_ = nullptr;  // observer_'s, once created; used by the poller thread only
  // The poller thread's: whether the last metadata that came named no broker, and when the
  // clients were last given the bootstrap servers again for it (kafka::addBootstrapAgain).
  bool nobroker_since_last_answer_ = false;
  common::MonoMicros bootstrap_added_at_ = std::numeric_limits<common::MonoMicros>::min() / 2;
  // Empty when the cluster's listeners need TLS or SASL, which the quorum client does not speak.
  std::optional<kafka::QuorumDescriber> quorum_describer_;  // used by one thread at a time

  PartitionCountListener partition_count_listener_;  // set before start(), then only read
  mutable std::mutex mutex_;
  ObservedCluster state_;  // guarded by mutex_
  // The last quorum that was described, kept through failed describes so that a leader change
  // across an outage is still seen. Guarded by mutex_.
  std::optional<kafka::QuorumInfo> last_quorum_;

  // Raised by stop() before it stops the quorum worker: QuorumDescriber's socket waits look at an
  // atomic flag, which a Worker does not lend out. While raised, describeQuorumOnce() does
  // nothing.
  std::atomic<bool> cancel_describe_{false};

  // Last, so they stop before anything they use goes.
  common::Worker quorum_poller_;
  common::Worker metadata_poller_;
};

}  // namespace kfaild::observe
