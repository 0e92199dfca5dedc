#include "server/drill/live_seams.h"

#include "server/drill/errc.h"
#include "server/kafka/errc.h"

namespace kfaild::drill {

KafkaClusterAdmin::KafkaClusterAdmin(const config::ClusterConfig& cluster,
                                     kafka::SharedHandle& observer)
    : cluster_(cluster), observer_(observer) {
  quorum_problem_ = kafka::quorumClientProblem(cluster_.client);
  if (quorum_problem_.empty()) {
    kafka::QuorumClientOptions options;
    options.bootstrap = cluster_.bootstrap;
    options.properties = cluster_.client;
    options.client_id = "kfaild-" + cluster_.name + "-drill";
    options.timeout_ms = kQuorumTimeoutMs;
    quorum_.emplace(std::move(options));
  }
}

Result<rd_kafka_t*> KafkaClusterAdmin::handle() {
  return observer_.get();
}

Status KafkaClusterAdmin::connect() {
  auto h = handle();
  if (!h)
    return Error{make_error_code(errc::injector_failed),
                 "cannot create the admin client: " + h.error().describe()};
  return okStatus();
}

Result<kafka::ClusterSnapshot> KafkaClusterAdmin::describeCluster() {
  auto h = handle();
  if (!h) return h.error();
  return kafka::fetchAllMetadata(*h, kTimeoutMs);
}

Status KafkaClusterAdmin::controllerAnswers() {
  auto h = handle();
  if (!h) return h.error();
  return kafka::controllerAnswers(*h, kControllerTimeoutMs);
}

Result<std::map<std::string, std::string>> KafkaClusterAdmin::topicConfig(
    const std::vector<std::string>& topics, const std::string& key) {
  auto h = handle();
  if (!h) return h.error();
  return kafka::describeTopicConfig(*h, topics, key, kTimeoutMs);
}

Status KafkaClusterAdmin::electPreferredLeaders(
    const std::vector<kafka::TopicPartition>& partitions) {
  auto h = handle();
  if (!h) return h.error();
  auto elected = kafka::electPreferredLeaders(*h, partitions, kTimeoutMs * 2);
  if (!elected) return elected.error();
  return okStatus();
}

Result<kafka::QuorumInfo> KafkaClusterAdmin::describeQuorum() {
  std::lock_guard lock(quorum_mutex_);
  if (!quorum_) return Error{make_error_code(kafka::errc::admin_failed), quorum_problem_};
  return quorum_->describe();
}

Result<kafka::Coordinator> KafkaClusterAdmin::findCoordinator(kafka::CoordinatorType type,
                                                              const std::string& key) {
  std::lock_guard lock(quorum_mutex_);
  if (!quorum_) return Error{make_error_code(kafka::errc::admin_failed), quorum_problem_};
  return quorum_->findCoordinator(type, key);
}

Result<std::map<std::string, kafka::NodeConfigValue>> KafkaClusterAdmin::brokerConfig(
    std::int32_t broker, const std::vector<std::string>& keys) {
  auto h = handle();
  if (!h) return h.error();
  return kafka::describeBrokerConfig(*h, broker, keys, kTimeoutMs);
}

Result<std::map<std::string, kafka::NodeConfigValue>> KafkaClusterAdmin::controllerConfig(
    const std::vector<std::string>& keys) {
  std::lock_guard lock(quorum_mutex_);
  if (!quorum_) return Error{make_error_code(kafka::errc::admin_failed), quorum_problem_};
  return quorum_->describeControllerConfig(keys);
}

}  // namespace kfaild::drill
