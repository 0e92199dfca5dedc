// DescribeQuorum against the lab (lab/lab): one dedicated controller, node 100, the only
// voter; brokers 1, 2 and 3 replicate the metadata log as observers. Any broker forwards the
// request to the active controller.

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "server/kafka/quorum.h"
#include "tests/support/lab.h"

namespace quorum_e2e_test {

using namespace kfaild;

TEST_CASE("the lab's quorum is led by controller 100 with the three brokers as observers",
          "[e2e][kafka]") {
  REQUIRE(testing::lab("status") == 0);
  kafka::QuorumClientOptions options;
  options.bootstrap = testing::labBootstrap();
  options.client_id = "kfaild-e2e";
  const auto quorum = kafka::describeQuorum(options);
  REQUIRE(quorum.ok());
  UNSCOPED_INFO("DescribeQuorum v" << quorum->api_version << " via " << quorum->answered_by);
  CHECK(quorum->leader_id == 100);
  CHECK(quorum->leader_epoch > 0);
  CHECK(quorum->high_watermark > 0);
  REQUIRE(quorum->voters.size() == 1);
  CHECK(quorum->voters[0].replica_id == 100);
  CHECK(quorum->voters[0].log_end_offset >= quorum->high_watermark);
  std::vector<std::int32_t> observers;
  for (const auto& o : quorum->observers) observers.push_back(o.replica_id);
  std::sort(observers.begin(), observers.end());
  CHECK(observers == std::vector<std::int32_t>{1, 2, 3});
  CHECK(quorum->api_version == kafka::kDescribeQuorumMaxVersion);
  // The lab's brokers fetch the metadata log continuously (every few hundred ms).
  for (const auto& o : quorum->observers) {
    CHECK(o.last_caught_up_timestamp_ms > 0);
    CHECK(quorum->lagOf(o).has_value());
  }
  // The same answer through each broker: every one forwards to the active controller.
  // The lab's brokers as `lab bootstrap` names them (the lab ctest gave this test: its port base).
  std::vector<std::string> brokers;
  std::stringstream list(testing::labBootstrap());
  for (std::string server; std::getline(list, server, ',');) brokers.push_back(server);
  REQUIRE(brokers.size() == 3);
  for (const auto& server : brokers) {
    options.bootstrap = server;
    const auto via = kafka::describeQuorum(options);
    REQUIRE(via.ok());
    CHECK(via->answered_by == server);
    CHECK(via->leader_id == 100);
  }
}

}  // namespace quorum_e2e_test
