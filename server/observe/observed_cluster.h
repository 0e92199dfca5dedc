#pragma once

// The cluster as the metadata poller last saw it, as plain data (no librdkafka: the API uses it
// without linking the poller).

#include <cstdint>
#include <optional>
#include <string>

#include "server/common/clock.h"
#include "server/kafka/cluster_types.h"

namespace kfaild::observe {

struct ObservedCluster {
  std::optional<kafka::ClusterSnapshot> snapshot;  // the last answer, if any
  common::WallMicros snapshot_at = 0;
  // The quorum as the last describe found it; empty before the first answer and while the last
  // describe failed (quorum_error says why), so a stale leader is never shown as the current one.
  std::optional<kafka::QuorumInfo> quorum;
  common::WallMicros quorum_at = 0;  // when `quorum` was described
  std::string quorum_error;
  bool reachable = false;
  std::string last_error;
  std::uint64_t polls = 0;
  std::uint64_t failures = 0;
};

}  // namespace kfaild::observe
