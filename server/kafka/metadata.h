#pragma once

// A point-in-time view of a cluster as metadata answers describe it: the brokers they list (in
// KRaft: registered and unfenced) and per requested topic its partitions' leader, replicas and
// ISR. The controller id of a Metadata answer is left out on purpose: in KRaft it is a broker
// picked at random, not the active controller (that one is in quorum.h).
//
// Times: each answer is stamped (wall clock, µs) when it arrived, so that a change seen in the
// first of several per-topic answers is not dated by the last one.

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"
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
  common::WallMicros answered_at_us = 0;  // when this topic's answer arrived; 0: not stamped
  bool operator==(const TopicInfo&) const = default;
};

struct ClusterSnapshot {
  std::vector<BrokerInfo> brokers;  // sorted by id, as the last answer lists them
  // When the answers started to list exactly `brokers`: the first of the trailing answers with
  // this list (per-topic requests may see a broker leave half-way). 0: not stamped.
  common::WallMicros brokers_at_us = 0;
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
// With a clock, every answer is stamped with clock.wallNow() when it arrives (answered_at_us,
// brokers_at_us); without one those stay 0.
Result<ClusterSnapshot> fetchMetadata(rd_kafka_t* rk, const std::vector<std::string>& topics,
                                      int timeout_ms, const common::Clock& clock);
Result<ClusterSnapshot> fetchMetadata(rd_kafka_t* rk, const std::vector<std::string>& topics,
                                      int timeout_ms);

// Every topic of the cluster (internal ones included) in one request: for drill guards, which
// must know every partition a broker failure would take offline. Heavier than fetchMetadata.
Result<ClusterSnapshot> fetchAllMetadata(rd_kafka_t* rk, int timeout_ms);

}  // namespace kfaild::kafka
