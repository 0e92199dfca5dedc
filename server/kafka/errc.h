#pragma once

// Errors of the Kafka client wrapper. Error::message keeps librdkafka's own text.

#include <librdkafka/rdkafka.h>

#include <string>
#include <system_error>

#include "server/common/result.h"

namespace kfaild::kafka {

enum class errc {
  invalid_property = 1,  // librdkafka refused a configuration property
  client_create_failed,
  metadata_failed,  // no metadata answer (cluster unreachable, timeout)
  topic_missing,    // a probe topic does not exist and is not to be created
  topic_error,      // the topic exists but its metadata carries an error
  admin_failed,     // an admin request failed (create topics, elect leaders, ...)
  produce_failed,
  consume_failed,
};

const std::error_category& kafkaCategory();
std::error_code make_error_code(errc e);

Error kafkaError(errc code, const std::string& what, rd_kafka_resp_err_t err);
Error kafkaError(errc code, const std::string& what);

}  // namespace kfaild::kafka

template <>
struct std::is_error_code_enum<kfaild::kafka::errc> : true_type {};
