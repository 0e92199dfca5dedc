#pragma once

// Polls a cluster's metadata for the probe topics at a short interval on its own thread and
// records every change as an event (see metadata_diff.h), plus `metadata_unavailable` /
// `metadata_available` when the cluster stops or starts answering. latest() is thread-safe.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/config/config.h"
#include "server/kafka/client.h"
#include "server/kafka/metadata.h"
#include "storage/store.h"

namespace kfaild::observe {

struct ObservedCluster {
  std::optional<kafka::ClusterSnapshot> snapshot;  // the last answer, if any
  common::WallMicros snapshot_at = 0;
  bool reachable = false;
  std::string last_error;
  std::uint64_t polls = 0;
  std::uint64_t failures = 0;
};

class MetadataPoller {
 public:
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

  ObservedCluster latest() const;

 private:
  void run();
  [[nodiscard]] Status ensureHandle();
  void record(storage::Event event);

  config::ClusterConfig cluster_;
  storage::ClusterId cluster_id_;
  storage::Store& store_;
  const common::Clock& clock_;
  std::vector<std::string> topics_;
  kafka::Handle handle_;

  mutable std::mutex mutex_;
  ObservedCluster state_;  // guarded by mutex_

  std::atomic<bool> stopping_{false};
  std::mutex wait_mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace kfaild::observe
