// The broker settings a drill's expectations use: read from the active controller and the
// brokers where they can be, Kafka's defaults with the reason where they cannot, and the largest
// replica.lag.time.max.ms when the leaders disagree.

#include "server/drill/cluster_settings.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

namespace cluster_settings_test {

using namespace kfaild;
using kafka::NodeConfigValue;

namespace {

using Configs = std::map<std::string, NodeConfigValue>;

// Answers the two config calls; every other call is not used by readClusterSettings.
class ConfigOnlyAdmin final : public drill::ClusterAdmin {
 public:
  std::map<std::int32_t, Result<Configs>> brokers;
  Result<Configs> controller = Configs{};
  std::vector<std::int32_t> asked;

  Result<kafka::ClusterSnapshot> describeCluster() override { return unused(); }
  Status controllerAnswers() override { return unused(); }
  Result<std::map<std::string, std::string>> topicConfig(const std::vector<std::string>&,
                                                         const std::string&) override {
    return unused();
  }
  Status electPreferredLeaders(const std::vector<kafka::TopicPartition>&) override {
    return unused();
  }
  Result<kafka::QuorumInfo> describeQuorum() override { return unused(); }
  Result<kafka::Coordinator> findCoordinator(kafka::CoordinatorType, const std::string&) override {
    return unused();
  }
  Result<Configs> brokerConfig(std::int32_t broker, const std::vector<std::string>&) override {
    asked.push_back(broker);
    auto found = brokers.find(broker);
    return found == brokers.end() ? Result<Configs>(Configs{}) : found->second;
  }
  Result<Configs> controllerConfig(const std::vector<std::string>&) override { return controller; }

 private:
  static Error unused() {
    return Error{make_error_code(std::errc::not_supported), "not used here"};
  }
};

Error timedOut(const std::string& what) {
  return Error{make_error_code(std::errc::timed_out), what};
}

}  // namespace

TEST_CASE(
    "settings read from the controller and the brokers replace Kafka's defaults, with their "
    "sources",
    "[unit][drill]") {
  ConfigOnlyAdmin admin;
  admin.controller = Configs{{"broker.session.timeout.ms", {"6000", 4}}};
  for (int b : {1, 2, 3}) {
    admin.brokers.insert_or_assign(
        b, Configs{{"replica.lag.time.max.ms", {"10000", 4}},
                   {"broker.heartbeat.interval.ms",
                    {b == 2 ? "1000" : "2000", static_cast<std::int8_t>(b == 2 ? 2 : 5)}}});
  }
  const auto settings = drill::readClusterSettings(admin, {1, 2, 3}, 2);
  CHECK(settings.session_timeout.value_ms == 6000);
  CHECK(settings.session_timeout.read);
  CHECK(settings.session_timeout.source == "the active controller: the node's properties file");
  CHECK(settings.heartbeat_interval.value_ms == 1000);  // the target's own
  CHECK(settings.heartbeat_interval.source == "broker 2: dynamic config of this node");
  CHECK(settings.replica_lag_time_max.value_ms == 10000);
  CHECK(settings.replica_lag_time_max.source == "broker 1: the node's properties file");
  CHECK(admin.asked == std::vector<std::int32_t>{1, 2, 3});

  const auto mechanism = drill::mechanismSettings(settings);
  CHECK(mechanism.session_timeout_us == 6'000'000);
  CHECK(mechanism.replica_lag_time_max_us == 10'000'000);
  analysis::FaultMechanism fault;
  fault.settings.request_timeout_us = 5'000'000;
  drill::applyTo(settings, fault);
  CHECK(fault.session_timeout_s == 6.0);
  CHECK(fault.heartbeat_interval_s == 1.0);
  CHECK(fault.settings.session_timeout_us == 6'000'000);
  CHECK(fault.settings.request_timeout_us == 5'000'000);  // the client's settings stay

  // Stored and read back as the drill's result keeps it.
  const auto back = drill::clusterSettingsFromJson(drill::toJson(settings));
  REQUIRE(back);
  CHECK(back->session_timeout.value_ms == 6000);
  CHECK(back->replica_lag_time_max.source == settings.replica_lag_time_max.source);
}

TEST_CASE("a setting that cannot be read stays Kafka's default and says why", "[unit][drill]") {
  ConfigOnlyAdmin admin;
  admin.controller = timedOut("DescribeQuorum timed out");
  admin.brokers.insert_or_assign(1, timedOut("broker 1 is down"));
  admin.brokers.insert_or_assign(2, Configs{{"replica.lag.time.max.ms", {"not a number", 4}}});
  const auto settings = drill::readClusterSettings(admin, {1, 2}, 1);
  CHECK(settings.session_timeout.value_ms == 9000);
  CHECK_FALSE(settings.session_timeout.read);
  CHECK(settings.session_timeout.source ==
        "Kafka's default: the active controller could not be asked (DescribeQuorum timed out)");
  CHECK(settings.heartbeat_interval.value_ms == 2000);
  CHECK(settings.heartbeat_interval.source.find("broker 1 could not be asked (broker 1 is down)") !=
        std::string::npos);
  CHECK(settings.replica_lag_time_max.value_ms == 30000);
  CHECK(settings.replica_lag_time_max.source.find("Kafka's default: broker 1 could not be asked") ==
        0);
}

TEST_CASE(
    "leaders that disagree on replica.lag.time.max.ms give the largest, and the source lists each",
    "[unit][drill]") {
  ConfigOnlyAdmin admin;
  admin.brokers.insert_or_assign(1, Configs{{"replica.lag.time.max.ms", {"10000", 4}}});
  admin.brokers.insert_or_assign(2, Configs{{"replica.lag.time.max.ms", {"30000", 5}}});
  admin.brokers.insert_or_assign(3, timedOut("no answer"));
  const auto settings = drill::readClusterSettings(admin, {1, 2, 3}, 1);
  CHECK(settings.replica_lag_time_max.value_ms == 30000);
  CHECK(settings.replica_lag_time_max.read);
  CHECK(settings.replica_lag_time_max.source ==
        "the largest of broker 1 10000, broker 2 30000 (not every broker answered); broker 2: "
        "Kafka's default");
}

}  // namespace cluster_settings_test
