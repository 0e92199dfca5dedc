#pragma once

// A point-in-time view of a cluster as one broker's metadata answer describes it: the brokers it
// lists (in KRaft: registered and unfenced), the controller id it reports (in KRaft a broker
// picked at random, not the active KRaft controller, so it is informational only), and per
// requested topic its partitions' leader, replicas and ISR.

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace kfaild::kafka {

struct BrokerInfo {
  std::int32_t id = -1;
  std::string host;
  int port = 0;
  bool operator==(const BrokerInfo&) const = default;
};

struct PartitionInfo {
  std::int32_t partition = 0;
  std::int32_t leader = -1;  // -1: no leader (offline)
  std::vector<std::int32_t> replicas;
  std::vector<std::int32_t> isr;
  std::string error;  // librdkafka error name, empty when none
  bool operator==(const PartitionInfo&) const = default;
};

struct TopicInfo {
  std::string name;
  std::string error;  // e.g. "UNKNOWN_TOPIC_OR_PART", empty when none
  std::vector<PartitionInfo> partitions;
  bool operator==(const TopicInfo&) const = default;
};

struct ClusterSnapshot {
  std::vector<BrokerInfo> brokers;  // sorted by id
  std::int32_t controller_id = -1;
  std::vector<TopicInfo> topics;    // in the order requested
  std::int32_t answered_by = -1;    // the broker that answered

  const TopicInfo* topic(const std::string& name) const;
  bool hasBroker(std::int32_t id) const;
};

// Sends one Metadata request per topic (a request for every topic of a large cluster would be
// far heavier). Blocks up to `timeout_ms` per request. Thread-safe for a given handle.
// The handle must have allow.auto.create.topics=false (librdkafka's producers default to true,
// brokers to auto.create.topics.enable=true), or asking about a missing topic creates it with
// one partition.
Result<ClusterSnapshot> fetchMetadata(rd_kafka_t* rk, const std::vector<std::string>& topics,
                                      int timeout_ms);

// Every topic of the cluster (internal ones included) in one request: for drill guards, which
// must know every partition a broker failure would take offline. Heavier than fetchMetadata.
Result<ClusterSnapshot> fetchAllMetadata(rd_kafka_t* rk, int timeout_ms);

}  // namespace kfaild::kafka
