// The literals the daemon hands the API's redaction: every key of the inventory that says how
// kfaild reaches a node.

#include <algorithm>
#include <catch2/catch.hpp>

#include "server/common/redaction.h"
#include "server/daemon/daemon.h"

namespace sensitive_literals_test {

using namespace kfaild;

TEST_CASE(
    "a node's gray-fault placement (address, netns, fill_dir) is hidden from readers without the "
    "operator token",
    "[unit][daemon][security]") {
  config::Config config;
  config::ClusterConfig cluster;
  cluster.name = "lab";
  cluster.bootstrap = "broker-1.lab:9092";
  config::NodeConfig node;
  node.id = 2;
  node.local = config::LocalTarget{"/run/kafka-2.pid", {"kafka-server-start.sh"}, ""};
  node.address = "kafka-2.internal";
  node.netns = "kafkans2";
  node.fill_dir = "/var/lib/kafka-fill";
  cluster.inventory.push_back(node);
  config.clusters.push_back(cluster);

  const auto literals = daemon::sensitiveLiterals(config);
  for (const auto& key : {"kafka-2.internal", "kafkans2", "/var/lib/kafka-fill"}) {
    INFO(key);
    CHECK(std::find(literals.begin(), literals.end(), key) != literals.end());
  }
  const common::Redactor redactor(literals);
  CHECK(redactor.redact(
            "isolate of node 2 failed: ip netns exec kafkans2 nft: kafka-2.internal unreachable") ==
        "isolate of node 2 failed: ip netns exec [redacted] nft: [redacted] unreachable");
}

}  // namespace sensitive_literals_test
