#include "server/kafka/admin.h"

#include <memory>

#include "server/kafka/errc.h"

namespace kfaild::kafka {
namespace {

struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
struct EventDeleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};
struct NewTopicDeleter {
  void operator()(rd_kafka_NewTopic_t* t) const { rd_kafka_NewTopic_destroy(t); }
};
struct OptionsDeleter {
  void operator()(rd_kafka_AdminOptions_t* o) const { rd_kafka_AdminOptions_destroy(o); }
};

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
        return kafkaError(errc::admin_failed, "replica assignment of " + topic.name + ": " + errstr);
      }
    }
  }
  for (const auto& [key, value] : topic.configs) {
    if (rd_kafka_NewTopic_set_config(nt.get(), key.c_str(), value.c_str()) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      return kafkaError(errc::admin_failed, "topic config " + key + "=" + value);
    }
  }
  std::unique_ptr<rd_kafka_AdminOptions_t, OptionsDeleter> options(
      rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS));
  rd_kafka_AdminOptions_set_operation_timeout(options.get(), timeout_ms, errstr, sizeof errstr);
  rd_kafka_AdminOptions_set_request_timeout(options.get(), timeout_ms, errstr, sizeof errstr);
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> queue(rd_kafka_queue_new(rk));
  rd_kafka_NewTopic_t* topics[] = {nt.get()};
  rd_kafka_CreateTopics(rk, topics, 1, options.get(), queue.get());
  std::unique_ptr<rd_kafka_event_t, EventDeleter> event(
      rd_kafka_queue_poll(queue.get(), timeout_ms + 5000));
  if (!event) return kafkaError(errc::admin_failed, "create topic " + topic.name + ": no answer");
  if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafkaError(errc::admin_failed,
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
      return kafkaError(errc::admin_failed,
                        "create topic " + topic.name + ": " + (msg ? msg : ""), err);
    }
  }
  return CreateOutcome::kCreated;
}

}  // namespace kfaild::kafka
