#pragma once

// Admin operations kfaild needs, blocking with a timeout, on any client handle.

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "server/common/result.h"

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

}  // namespace kfaild::kafka
