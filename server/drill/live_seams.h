#pragma once

// The drill engine's seams over the real thing: the metadata poller, the probe runner and a
// librdkafka admin client (and kfaild's own DescribeQuorum client).

#include <memory>
#include <mutex>
#include <optional>

#include "server/config/config.h"
#include "server/drill/seams.h"
#include "server/kafka/client.h"
#include "server/kafka/quorum.h"

namespace kfaild::drill {

class PollerView final : public ClusterView {
 public:
  explicit PollerView(const observe::MetadataPoller& poller) : poller_(poller) {}
  observe::ObservedCluster latest() const override { return poller_.latest(); }

 private:
  const observe::MetadataPoller& poller_;
};

class RunnerProbeView final : public ProbeView {
 public:
  explicit RunnerProbeView(const probe::ProbeRunner& probe) : probe_(probe) {}
  probe::ProbeStatus status() const override { return probe_.status(); }
  std::vector<storage::ProbeSample> pending(common::WallMicros from,
                                            common::WallMicros to) const override {
    return probe_.pending(from, to);
  }
  void steerAround(std::vector<std::int32_t> nodes) const override {
    probe_.steerAround(std::move(nodes));
  }

 private:
  const probe::ProbeRunner& probe_;
};

// The admin calls on a client made like the poller's (observe::makeObserverClient; the daemon gives
// the drill engine one of its own: see ClusterParts); DescribeQuorum through
// kafka::QuorumDescriber, secured as the cluster's client properties say (describeQuorum() gives
// the reason when it cannot be).
class KafkaClusterAdmin final : public ClusterAdmin {
 public:
  static constexpr int kTimeoutMs = 5000;
  static constexpr int kControllerTimeoutMs = 3000;
  static constexpr int kQuorumTimeoutMs = 2000;  // per bootstrap broker tried

  // `observer` must outlive the admin.
  KafkaClusterAdmin(const config::ClusterConfig& cluster, kafka::SharedHandle& observer);

  // Creates the client now: a refused client property is an error at start-up, not at a drill.
  Status connect();
  Result<kafka::ClusterSnapshot> describeCluster() override;
  Status controllerAnswers() override;
  Result<std::map<std::string, std::string>> topicConfig(const std::vector<std::string>& topics,
                                                         const std::string& key) override;
  Status electPreferredLeaders(const std::vector<kafka::TopicPartition>& partitions) override;
  Result<kafka::QuorumInfo> describeQuorum() override;
  Result<kafka::Coordinator> findCoordinator(kafka::CoordinatorType type,
                                             const std::string& key) override;
  Result<std::map<std::string, kafka::NodeConfigValue>> brokerConfig(
      std::int32_t broker, const std::vector<std::string>& keys) override;
  Result<std::map<std::string, kafka::NodeConfigValue>> controllerConfig(
      const std::vector<std::string>& keys) override;

 private:
  Result<rd_kafka_t*> handle();

  config::ClusterConfig cluster_;
  kafka::SharedHandle& observer_;
  std::mutex quorum_mutex_;
  std::optional<kafka::QuorumDescriber> quorum_;  // guarded by quorum_mutex_; empty: not PLAINTEXT
  std::string quorum_problem_;                    // why quorum_ is empty
};

}  // namespace kfaild::drill
