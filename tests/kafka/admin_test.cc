// The validate-only requests kfaild sends (the controller check every control-probe interval):
// options that librdkafka refuses to make validate-only are an error, never a request that would
// change the cluster.

#include "server/kafka/admin.h"

#include <catch2/catch.hpp>

#include "server/kafka/client.h"

namespace admin_test {

using namespace kfaild;

TEST_CASE("a request is made validate-only or not sent, with librdkafka's reason", "[unit]") {
  // No broker is ever asked: options are built on a handle alone.
  auto client = kafka::createClient(RD_KAFKA_PRODUCER, kafka::ClientOptions{});
  REQUIRE(client);
  const auto create =
      kafka::validateOnlyOptions(client->get(), RD_KAFKA_ADMIN_OP_CREATETOPICS, 1000);
  CHECK(create);
  // DeleteTopics has no validate_only: librdkafka says so, and kfaild does not send it.
  const auto remove =
      kafka::validateOnlyOptions(client->get(), RD_KAFKA_ADMIN_OP_DELETETOPICS, 1000);
  REQUIRE_FALSE(remove);
  CHECK_THAT(remove.error().message, Catch::StartsWith("cannot make the request validate-only: "));
  CHECK(remove.error().message.size() >
        std::string("cannot make the request validate-only: ").size());
}

}  // namespace admin_test
