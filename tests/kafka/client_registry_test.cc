// kafka::addBootstrapAgain: every live handle created with a bootstrap string is given it again,
// none other, and a destroyed handle is no longer reached.

#include <catch2/catch.hpp>
#include <string>

#include "server/kafka/client.h"

namespace client_registry_test {

using namespace kfaild;

namespace {

kafka::Handle producer(const std::string& bootstrap) {
  kafka::ClientOptions options;
  options.bootstrap = bootstrap;  // nothing listens there: the handles only try to connect
  options.client_id = "kfaild-registry-test";
  options.log = [](std::string_view, int, std::string_view, std::string_view) {};
  auto handle = kafka::createClient(RD_KAFKA_PRODUCER, options);
  REQUIRE(handle);
  return std::move(*handle);
}

}  // namespace

TEST_CASE(
    "the bootstrap servers are given again to every live client of that bootstrap, and to no other",
    "[unit]") {
  const std::string one = "127.0.0.1:1,127.0.0.1:3";
  const std::string other = "127.0.0.1:2";
  CHECK(kafka::addBootstrapAgain(one) == 0);
  auto a = producer(one);
  auto b = producer(one);
  auto c = producer(other);
  CHECK(kafka::addBootstrapAgain(one) == 2);
  CHECK(kafka::addBootstrapAgain(other) == 1);
  CHECK(kafka::addBootstrapAgain("127.0.0.1:4") == 0);
  a.reset();
  CHECK(kafka::addBootstrapAgain(one) == 1);
  b.reset();
  c.reset();
  CHECK(kafka::addBootstrapAgain(one) == 0);
  CHECK(kafka::addBootstrapAgain(other) == 0);
}

}  // namespace client_registry_test
