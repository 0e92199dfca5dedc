#pragma once

// What kfaild knows of a cluster, as plain data: the brokers and partitions a Metadata answer
// lists (metadata.h fetches them) and the KRaft quorum a DescribeQuorum answer describes
// (quorum.h). No librdkafka here: the API and the stores use these types without linking it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"

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
  std::vector<TopicInfo> topics;  // in the order requested
  std::int32_t answered_by = -1;  // the broker that answered

  const TopicInfo* topic(const std::string& name) const;
  bool hasBroker(std::int32_t id) const;
};

struct QuorumReplica {
  std::int32_t replica_id = -1;
  std::int64_t log_end_offset = -1;  // -1: unknown
  // The leader's wall clock, ms since the Unix epoch; -1 when unknown (and always with v0).
  // For the leader itself both are its "now" (Kafka 4.x; the schema allows -1 for last fetch).
  std::int64_t last_fetch_timestamp_ms = -1;
  std::int64_t last_caught_up_timestamp_ms = -1;
  bool operator==(const QuorumReplica&) const = default;
};

// One configuration value as a node reports it, with where it comes from (Kafka's ConfigSource:
// 2 dynamic for this node, 3 dynamic cluster default, 4 the node's properties file, 5 Kafka's
// default).
struct NodeConfigValue {
  std::optional<std::string> value;  // nullopt: null (a sensitive value is never sent)
  std::int8_t source = -1;
  bool operator==(const NodeConfigValue&) const = default;
};
const char* configSourceName(std::int8_t source);

// One listener of a quorum node, as DescribeQuorum v2 lists it (the controllers' own listeners).
struct QuorumEndpoint {
  std::string listener;
  std::string host;
  std::uint16_t port = 0;
  bool operator==(const QuorumEndpoint&) const = default;
};

struct QuorumInfo {
  std::int32_t leader_id = -1;  // -1: no leader (an election is under way)
  std::int32_t leader_epoch = -1;
  std::int64_t high_watermark = -1;
  std::vector<QuorumReplica> voters;     // in the controller's order
  std::vector<QuorumReplica> observers;  // brokers (and controllers that are not voters)
  std::int16_t api_version = -1;         // the DescribeQuorum version the answer came in
  std::string answered_by;               // "host:port" of the broker that was asked
  // The voters' listeners (DescribeQuorum v2 Nodes), by node id; empty with v0 and v1.
  std::map<std::int32_t, std::vector<QuorumEndpoint>> endpoints;

  // The leader's own entry among the voters, nullptr when it is not there.
  const QuorumReplica* leaderReplica() const;
  bool isVoter(std::int32_t id) const;
  // How far `replica` trails the leader's log end offset (what kafka-metadata-quorum.sh calls
  // lag), nullopt when either end offset is unknown.
  std::optional<std::int64_t> lagOf(const QuorumReplica& replica) const;
};

}  // namespace kfaild::kafka
