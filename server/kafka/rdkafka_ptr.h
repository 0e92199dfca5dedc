#pragma once

// Owners of the librdkafka objects several parts of kfaild hold for a call: a queue, an event, a
// partition list, admin options. Each file's own, rarer, objects keep their deleters there.

#include <librdkafka/rdkafka.h>

#include <memory>

namespace kfaild::kafka {

struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
struct EventDeleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};
struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
struct AdminOptionsDeleter {
  void operator()(rd_kafka_AdminOptions_t* o) const { rd_kafka_AdminOptions_destroy(o); }
};

using QueuePtr = std::unique_ptr<rd_kafka_queue_t, QueueDeleter>;
using EventPtr = std::unique_ptr<rd_kafka_event_t, EventDeleter>;
using PartitionListPtr = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter>;
using AdminOptionsPtr = std::unique_ptr<rd_kafka_AdminOptions_t, AdminOptionsDeleter>;

}  // namespace kfaild::kafka
