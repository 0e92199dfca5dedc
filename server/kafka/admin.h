#pragma once

// Admin operations kfaild needs, blocking with a timeout, on any client handle.

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/kafka/cluster_types.h"
#include "server/kafka/rdkafka_ptr.h"

namespace kfaild::kafka {

struct NewTopic {
  std::string name;
  std::int32_t partitions = 1;
  std::int16_t replication_factor = 1;
  std::vector<std::vector<std::int32_t>> replica_assignment;  // overrides the two above when set
  std::map<std::string, std::string> configs;
};

enum class CreateOutcome { kCreated, kAlreadyExists };

Result<CreateOutcome> createTopic(rd_kafka_t* rk, const NewTopic& topic, int timeout_ms);

// Deletes a topic; a topic that does not exist is not an error.
Status deleteTopic(rd_kafka_t* rk, const std::string& name, int timeout_ms);

// One configuration value of each named topic (e.g. "min.insync.replicas"), as the cluster
// reports it (the topic's own value or the broker default). Topics the cluster does not know are
// left out of the map.
Result<std::map<std::string, std::string>> describeTopicConfig(
    rd_kafka_t* rk, const std::vector<std::string>& topics, const std::string& key, int timeout_ms);

// `keys` of one broker's own configuration (DescribeConfigs of resource BROKER "<id>", which only
// that broker answers), each with where its value comes from. Keys the broker does not know are
// left out.
Result<std::map<std::string, NodeConfigValue>> describeBrokerConfig(
    rd_kafka_t* rk, std::int32_t broker, const std::vector<std::string>& keys, int timeout_ms);

// Whether the active KRaft controller answers: a CreateTopics request with validate_only, which
// every broker forwards to the controller and which creates nothing. Any answer about the topic
// (created-in-validation, exists, not authorised, invalid) means the controller answered; a
// timeout or a transport error means it did not. In KRaft the controller id in the metadata is a
// random broker, so this is the only client-side way to see that the quorum is gone.
Status controllerAnswers(rd_kafka_t* rk, int timeout_ms);
// The topic the controller check asks to create (validate-only: it is never created). The
// narrowest ACL that lets it through is CREATE on this literal topic (docs/SECURITY.md).
inline constexpr const char* kControllerCheckTopic = "kfaild-controller-check";
// Admin options for `op` with request and operation timeouts and validate_only set; an error
// (librdkafka's reason) when `op` takes no validate_only, so a request meant to change nothing is
// never sent as one that would.
Result<AdminOptionsPtr> validateOnlyOptions(rd_kafka_t* rk, rd_kafka_admin_op_t op, int timeout_ms);
// controllerAnswers in two halves, for a caller that waits on its own terms (the control probe,
// which must stop within 100 ms): the request, its result going to `queue` (an error, and
// nothing sent, when the request could not be made validate-only); the verdict on the result
// event.
Status sendControllerCheck(rd_kafka_t* rk, rd_kafka_queue_t* queue, int timeout_ms);
Status controllerCheckResult(rd_kafka_event_t* event);
// Asks any broker for the cluster's brokers and controller id, and returns that id (-1 without an
// answer by `timeout_ms`). librdkafka sends a request for the controller to the id of its last
// metadata and, while that id is known, never refreshes it on its own when that broker is down:
// under KRaft a broker names a random live broker as the "controller" (any broker forwards), so
// once that broker dies every controller request of the client waits out its timeout until the
// next periodic refresh (topic.metadata.refresh.interval.ms, 5 min by default).
std::int32_t refreshControllerId(rd_kafka_t* rk, int timeout_ms);

struct TopicPartition {
  std::string topic;
  std::int32_t partition = 0;
};

struct ElectionOutcome {
  TopicPartition partition;
  std::string error;  // empty: elected (or already the preferred leader)
};

// Preferred leader election (the article's kafka-leader-election.sh --election-type preferred)
// for the given partitions. A partition whose preferred leader already leads is not an error.
Result<std::vector<ElectionOutcome>> electPreferredLeaders(
    rd_kafka_t* rk, const std::vector<TopicPartition>& partitions, int timeout_ms);

}  // namespace kfaild::kafka
