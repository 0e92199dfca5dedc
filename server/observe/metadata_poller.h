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

class MetadataPoller {
 public:
  static constexpr std::int64_t kQuorumIntervalUs = 2'000'000;
  static constexpr int kQuorumTimeoutMs = 2000;  // per bootstrap broker tried

  MetadataPoller(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                 storage::Store& store, const common::Clock& clock);
  ~MetadataPoller();
  MetadataPoller(const MetadataPoller&) = delete;
  MetadataPoller& operator=(const MetadataPoller&) = delete;

  [[nodiscard]] Status start();
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
  kafka::Handle handle_;
  // Empty when the cluster's listeners need TLS or SASL, which the quorum client does not speak.
  std::optional<kafka::QuorumDescriber> quorum_describer_;  // used by one thread at a time

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
