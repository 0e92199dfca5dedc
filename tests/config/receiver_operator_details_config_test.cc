#include <catch2/catch.hpp>

#include "server/config/config.h"

namespace receiver_operator_details_config_test {

using namespace kfaild::config;

namespace {

const std::string kReceivers = R"(
clusters:
  - name: lab
    bootstrap: 127.0.0.1:19091
    probe: {topics: [orders]}
notifications:
  receivers:
    - {name: chat, type: slack, url: https://hooks.example.com/T0/B0/X}
)";

}  // namespace

TEST_CASE("a receiver gets operator-only details only when it says include_operator_details: true",
          "[unit][config][notify]") {
  CHECK_FALSE(parseConfig(kReceivers).notifications.receivers.at(0).include_operator_details);
  const auto opted = parseConfig(kReceivers +
                                 "    - {name: ops, type: webhook, url: http://127.0.0.1:9000/k, "
                                 "include_operator_details: true}\n");
  CHECK_FALSE(opted.notifications.receivers.at(0).include_operator_details);
  CHECK(opted.notifications.receivers.at(1).include_operator_details);
  std::string error;
  try {
    parseConfig(
        kReceivers +
            "    - {name: ops, type: webhook, url: http://x, include_operator_details: maybe}\n",
        "test.yaml");
  } catch (const ConfigError& e) {
    error = e.what();
  }
  CHECK_THAT(error,
             Catch::Contains(
                 "notifications.receivers[1].include_operator_details: must be true or false"));
}

}  // namespace receiver_operator_details_config_test
