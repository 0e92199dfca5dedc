#include "server/kafka/admin.h"

#include <algorithm>
#include <memory>

#include "server/kafka/errc.h"
#include "server/kafka/rdkafka_ptr.h"

namespace kfaild::kafka {
namespace {

struct NewTopicDeleter {
  void operator()(rd_kafka_NewTopic_t* t) const { rd_kafka_NewTopic_destroy(t); }
};
struct ConfigResourceDeleter {
  void operator()(rd_kafka_ConfigResource_t* r) const { rd_kafka_ConfigResource_destroy(r); }
};
struct ElectLeadersDeleter {
  void operator()(rd_kafka_ElectLeaders_t* e) const { rd_kafka_ElectLeaders_destroy(e); }
};

AdminOptionsPtr adminOptions(rd_kafka_t* rk, rd_kafka_admin_op_t op, int timeout_ms) {
  char errstr[256];
  AdminOptionsPtr options(rd_kafka_AdminOptions_new(rk, op));
  rd_kafka_AdminOptions_set_request_timeout(options.get(), timeout_ms, errstr, sizeof errstr);
  return options;
}

// Waits for the admin result on `queue`; an event-level error becomes an Error.
Result<EventPtr> awaitResult(rd_kafka_queue_t* queue, int timeout_ms, const std::string& what) {
  EventPtr event(rd_kafka_queue_poll(queue, timeout_ms + 5000));
  if (!event) return kafkaError(errc::admin_failed, what + ": no answer");
  if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafkaError(errc::admin_failed, what + ": " + rd_kafka_event_error_string(event.get()),
                      rd_kafka_event_error(event.get()));
  }
  return event;
}

}  // namespace

Result<CreateOutcome> createTopic(rd_kafka_t* rk, const NewTopic& topic, int timeout_ms) {
  char errstr[512];
  const bool explicit_assignment = !topic.replica_assignment.empty();
  std::unique_ptr<rd_kafka_NewTopic_t, NewTopicDeleter> nt(rd_kafka_NewTopic_new(
      topic.name.c_str(),
      explicit_assignment ? static_cast<int>(topic.replica_assignment.size()) : topic.partitions,
      explicit_assignment ? -1 : topic.replication_factor, errstr, sizeof errstr));
  if (!nt) return kafkaError(errc::admin_failed, "create topic " + topic.name + ": " + errstr);
  if (explicit_assignment) {
    for (std::size_t p = 0; p < topic.replica_assignment.size(); ++p) {
      const auto& replicas = topic.replica_assignment[p];
      if (rd_kafka_NewTopic_set_replica_assignment(
              nt.get(), static_cast<std::int32_t>(p), const_cast<std::int32_t*>(replicas.data()),
              replicas.size(), errstr, sizeof errstr) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return kafkaError(errc::admin_failed,
                          "replica assignment of " + topic.name + ": " + errstr);
      }
    }
  }
  for (const auto& [key, value] : topic.configs) {
    if (rd_kafka_NewTopic_set_config(nt.get(), key.c_str(), value.c_str()) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      return kafkaError(errc::admin_failed, "topic config " + key + "=" + value);
    }
  }
  AdminOptionsPtr options(rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS));
  rd_kafka_AdminOptions_set_operation_timeout(options.get(), timeout_ms, errstr, sizeof errstr);
  rd_kafka_AdminOptions_set_request_timeout(options.get(), timeout_ms, errstr, sizeof errstr);
  QueuePtr queue(rd_kafka_queue_new(rk));
  rd_kafka_NewTopic_t* topics[] = {nt.get()};
  rd_kafka_CreateTopics(rk, topics, 1, options.get(), queue.get());
  EventPtr event(rd_kafka_queue_poll(queue.get(), timeout_ms + 5000));
  if (!event) return kafkaError(errc::admin_failed, "create topic " + topic.name + ": no answer");
  if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafkaError(
        errc::admin_failed,
        "create topic " + topic.name + ": " + rd_kafka_event_error_string(event.get()),
        rd_kafka_event_error(event.get()));
  }
  const auto* result = rd_kafka_event_CreateTopics_result(event.get());
  size_t count = 0;
  const auto** results = rd_kafka_CreateTopics_result_topics(result, &count);
  for (size_t i = 0; i < count; ++i) {
    const auto err = rd_kafka_topic_result_error(results[i]);
    if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) return CreateOutcome::kAlreadyExists;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* msg = rd_kafka_topic_result_error_string(results[i]);
      return kafkaError(errc::admin_failed, "create topic " + topic.name + ": " + (msg ? msg : ""),
                        err);
    }
  }
  return CreateOutcome::kCreated;
}

Result<AdminOptionsPtr> validateOnlyOptions(rd_kafka_t* rk, rd_kafka_admin_op_t op,
                                            int timeout_ms) {
  char errstr[512];
  auto options = adminOptions(rk, op, timeout_ms);
  if (rd_kafka_AdminOptions_set_operation_timeout(options.get(), timeout_ms, errstr,
                                                  sizeof errstr) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafkaError(errc::admin_failed,
                      std::string("cannot set the operation timeout: ") + errstr);
  }
  if (rd_kafka_AdminOptions_set_validate_only(options.get(), 1, errstr, sizeof errstr) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafkaError(errc::admin_failed,
                      std::string("cannot make the request validate-only: ") + errstr);
  }
  return options;
}

Status sendControllerCheck(rd_kafka_t* rk, rd_kafka_queue_t* queue, int timeout_ms) {
  char errstr[512];
  // num_partitions 1 and the default replication factor: valid on any cluster, so the answer is
  // "would be created" (or an authorisation or policy error: an answer all the same).
  std::unique_ptr<rd_kafka_NewTopic_t, NewTopicDeleter> nt(
      rd_kafka_NewTopic_new(kControllerCheckTopic, 1, -1, errstr, sizeof errstr));
  if (!nt)
    return kafkaError(errc::admin_failed, std::string("the controller check's topic: ") + errstr);
  // Without validate-only this request would create the topic: never sent so.
  auto options = validateOnlyOptions(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms);
  if (!options) return options.error();
  rd_kafka_NewTopic_t* topics[] = {nt.get()};
  rd_kafka_CreateTopics(rk, topics, 1, options->get(), queue);
  return okStatus();
}

Status controllerCheckResult(rd_kafka_event_t* event) {
  if (rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafkaError(
        errc::admin_failed,
        std::string("the controller did not answer: ") + rd_kafka_event_error_string(event),
        rd_kafka_event_error(event));
  }
  const auto* result = rd_kafka_event_CreateTopics_result(event);
  if (result == nullptr)
    return kafkaError(errc::admin_failed, "the controller check got no CreateTopics result");
  size_t count = 0;
  const auto** results = rd_kafka_CreateTopics_result_topics(result, &count);
  for (size_t i = 0; i < count; ++i) {
    const auto err = rd_kafka_topic_result_error(results[i]);
    if (err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT || err == RD_KAFKA_RESP_ERR__TIMED_OUT ||
        err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR_NOT_CONTROLLER) {
      const char* msg = rd_kafka_topic_result_error_string(results[i]);
      return kafkaError(
          errc::admin_failed,
          std::string("the controller did not answer: ") + (msg ? msg : rd_kafka_err2str(err)),
          err);
    }
  }
  return okStatus();
}

std::int32_t refreshControllerId(rd_kafka_t* rk, int timeout_ms) {
  const rd_kafka_metadata_t* md = nullptr;
  // Neither all topics nor one: the brokers and the controller id only (an admin client knows no
  // topics of its own).
  if (rd_kafka_metadata(rk, 0, nullptr, &md, timeout_ms) != RD_KAFKA_RESP_ERR_NO_ERROR) return -1;
  rd_kafka_metadata_destroy(md);
  return rd_kafka_controllerid(rk, 0);
}

Status controllerAnswers(rd_kafka_t* rk, int timeout_ms) {
  QueuePtr queue(rd_kafka_queue_new(rk));
  if (auto sent = sendControllerCheck(rk, queue.get(), timeout_ms); !sent) return sent.error();
  EventPtr event(rd_kafka_queue_poll(queue.get(), timeout_ms + 5000));
  if (!event) return kafkaError(errc::admin_failed, "the controller did not answer: no answer");
  return controllerCheckResult(event.get());
}

Status deleteTopic(rd_kafka_t* rk, const std::string& name, int timeout_ms) {
  rd_kafka_DeleteTopic_t* topic = rd_kafka_DeleteTopic_new(name.c_str());
  auto options = adminOptions(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS, timeout_ms);
  QueuePtr queue(rd_kafka_queue_new(rk));
  rd_kafka_DeleteTopics(rk, &topic, 1, options.get(), queue.get());
  rd_kafka_DeleteTopic_destroy(topic);
  auto event = awaitResult(queue.get(), timeout_ms, "delete topic " + name);
  if (!event) return event.error();
  size_t count = 0;
  const auto** results =
      rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(event->get()), &count);
  for (size_t i = 0; i < count; ++i) {
    const auto err = rd_kafka_topic_result_error(results[i]);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
      return kafkaError(errc::admin_failed, "delete topic " + name, err);
    }
  }
  return okStatus();
}

Result<std::map<std::string, std::string>> describeTopicConfig(
    rd_kafka_t* rk, const std::vector<std::string>& topics, const std::string& key,
    int timeout_ms) {
  std::map<std::string, std::string> out;
  if (topics.empty()) return out;
  std::vector<std::unique_ptr<rd_kafka_ConfigResource_t, ConfigResourceDeleter>> owned;
  std::vector<rd_kafka_ConfigResource_t*> resources;
  for (const auto& t : topics) {
    owned.emplace_back(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, t.c_str()));
    resources.push_back(owned.back().get());
  }
  auto options = adminOptions(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
  QueuePtr queue(rd_kafka_queue_new(rk));
  rd_kafka_DescribeConfigs(rk, resources.data(), resources.size(), options.get(), queue.get());
  auto event = awaitResult(queue.get(), timeout_ms, "describe topic configs");
  if (!event) return event.error();
  const auto* result = rd_kafka_event_DescribeConfigs_result(event->get());
  size_t count = 0;
  const auto** described = rd_kafka_DescribeConfigs_result_resources(result, &count);
  for (size_t i = 0; i < count; ++i) {
    if (rd_kafka_ConfigResource_error(described[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    size_t n = 0;
    const auto** entries = rd_kafka_ConfigResource_configs(described[i], &n);
    for (size_t j = 0; j < n; ++j) {
      if (key == rd_kafka_ConfigEntry_name(entries[j])) {
        const char* value = rd_kafka_ConfigEntry_value(entries[j]);
        out[rd_kafka_ConfigResource_name(described[i])] = value ? value : "";
      }
    }
  }
  return out;
}

Result<std::map<std::string, NodeConfigValue>> describeBrokerConfig(
    rd_kafka_t* rk, std::int32_t broker, const std::vector<std::string>& keys, int timeout_ms) {
  const auto name = std::to_string(broker);
  std::unique_ptr<rd_kafka_ConfigResource_t, ConfigResourceDeleter> resource(
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, name.c_str()));
  rd_kafka_ConfigResource_t* resources[] = {resource.get()};
  auto options = adminOptions(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
  QueuePtr queue(rd_kafka_queue_new(rk));
  rd_kafka_DescribeConfigs(rk, resources, 1, options.get(), queue.get());
  auto event = awaitResult(queue.get(), timeout_ms, "describe the config of broker " + name);
  if (!event) return event.error();
  const auto* result = rd_kafka_event_DescribeConfigs_result(event->get());
  size_t count = 0;
  const auto** described = rd_kafka_DescribeConfigs_result_resources(result, &count);
  std::map<std::string, NodeConfigValue> out;
  for (size_t i = 0; i < count; ++i) {
    if (const auto err = rd_kafka_ConfigResource_error(described[i]);
        err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* why = rd_kafka_ConfigResource_error_string(described[i]);
      return kafkaError(errc::admin_failed,
                        "describe the config of broker " + name + ": " +
                            (why != nullptr ? why : rd_kafka_err2str(err)),
                        err);
    }
    size_t n = 0;
    const auto** entries = rd_kafka_ConfigResource_configs(described[i], &n);
    for (size_t j = 0; j < n; ++j) {
      const std::string key = rd_kafka_ConfigEntry_name(entries[j]);
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
      NodeConfigValue value;
      if (const char* v = rd_kafka_ConfigEntry_value(entries[j]); v != nullptr) value.value = v;
      value.source = static_cast<std::int8_t>(rd_kafka_ConfigEntry_source(entries[j]));
      out[key] = std::move(value);
    }
  }
  return out;
}

Result<std::vector<ElectionOutcome>> electPreferredLeaders(
    rd_kafka_t* rk, const std::vector<TopicPartition>& partitions, int timeout_ms) {
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  for (const auto& p : partitions) {
    rd_kafka_topic_partition_list_add(list.get(), p.topic.c_str(), p.partition);
  }
  std::unique_ptr<rd_kafka_ElectLeaders_t, ElectLeadersDeleter> request(
      rd_kafka_ElectLeaders_new(RD_KAFKA_ELECTION_TYPE_PREFERRED, list.get()));
  auto options = adminOptions(rk, RD_KAFKA_ADMIN_OP_ELECTLEADERS, timeout_ms);
  char errstr[256];
  rd_kafka_AdminOptions_set_operation_timeout(options.get(), timeout_ms, errstr, sizeof errstr);
  QueuePtr queue(rd_kafka_queue_new(rk));
  rd_kafka_ElectLeaders(rk, request.get(), options.get(), queue.get());
  auto event = awaitResult(queue.get(), timeout_ms, "preferred leader election");
  if (!event) return event.error();
  const auto* result = rd_kafka_event_ElectLeaders_result(event->get());
  size_t count = 0;
  const auto** results = rd_kafka_ElectLeaders_result_partitions(result, &count);
  std::vector<ElectionOutcome> out;
  for (size_t i = 0; i < count; ++i) {
    const auto* tp = rd_kafka_topic_partition_result_partition(results[i]);
    const auto* error = rd_kafka_topic_partition_result_error(results[i]);
    ElectionOutcome o;
    o.partition = {tp->topic, tp->partition};
    if (error != nullptr && rd_kafka_error_code(error) != RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_error_code(error) != RD_KAFKA_RESP_ERR_ELECTION_NOT_NEEDED) {
      o.error = rd_kafka_error_string(error);
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace kfaild::kafka
