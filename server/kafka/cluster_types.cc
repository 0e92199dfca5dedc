#include "server/kafka/cluster_types.h"

#include <algorithm>

namespace kfaild::kafka {

const TopicInfo* ClusterSnapshot::topic(const std::string& name) const {
  for (const auto& t : topics) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool ClusterSnapshot::hasBroker(std::int32_t id) const {
  return std::any_of(brokers.begin(), brokers.end(),
                     [id](const BrokerInfo& b) { return b.id == id; });
}

const QuorumReplica* QuorumInfo::leaderReplica() const {
  for (const auto& v : voters) {
    if (v.replica_id == leader_id) return &v;
  }
  return nullptr;
}

bool QuorumInfo::isVoter(std::int32_t id) const {
  return std::any_of(voters.begin(), voters.end(),
                     [id](const QuorumReplica& v) { return v.replica_id == id; });
}

std::optional<std::int64_t> QuorumInfo::lagOf(const QuorumReplica& replica) const {
  const auto* leader = leaderReplica();
  if (leader == nullptr || leader->log_end_offset < 0 || replica.log_end_offset < 0) {
    return std::nullopt;
  }
  return leader->log_end_offset - replica.log_end_offset;
}

const char* configSourceName(std::int8_t source) {
  switch (source) {
    case 1:
      return "dynamic topic config";
    case 2:
      return "dynamic config of this node";
    case 3:
      return "dynamic cluster default";
    case 4:
      return "the node's properties file";
    case 5:
      return "Kafka's default";
    case 6:
      return "dynamic logger config";
    default:
      return "unknown source";
  }
}

}  // namespace kfaild::kafka
