#include "server/kafka/errc.h"

namespace kfaild::kafka {
namespace {

class KafkaCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "kafka"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::invalid_property:
        return "invalid client property";
      case errc::client_create_failed:
        return "cannot create Kafka client";
      case errc::metadata_failed:
        return "cluster metadata unavailable";
      case errc::topic_missing:
        return "topic does not exist";
      case errc::topic_error:
        return "topic metadata error";
      case errc::admin_failed:
        return "admin request failed";
      case errc::produce_failed:
        return "produce failed";
      case errc::consume_failed:
        return "consume failed";
    }
    return "unknown kafka error";
  }
};

}  // namespace

const std::error_category& kafkaCategory() {
  static const KafkaCategory category;
  return category;
}

std::error_code make_error_code(errc e) {
  return {static_cast<int>(e), kafkaCategory()};
}

Error kafkaError(errc code, const std::string& what, rd_kafka_resp_err_t err) {
  return Error{code, what + ": " + rd_kafka_err2name(err) + " (" + rd_kafka_err2str(err) + ")"};
}

Error kafkaError(errc code, const std::string& what) {
  return Error{code, what};
}

}  // namespace kfaild::kafka
