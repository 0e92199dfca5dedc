#pragma once

// Stand-ins for a Kafka cluster in tests that need no lab: librdkafka's mock cluster, and a
// loopback socket that listens and never answers.

#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "server/kafka/client.h"

namespace kfaild::testing {

// librdkafka's in-process mock cluster with `brokers` brokers, owned by a client of its own.
struct MockCluster {
  kafka::Handle owner;
  rd_kafka_mock_cluster_t* cluster = nullptr;

  explicit MockCluster(int brokers) {
    kafka::ClientOptions options;
    options.bootstrap = "";
    auto handle = kafka::createClient(RD_KAFKA_PRODUCER, options);
    REQUIRE(handle);
    owner = std::move(*handle);
    cluster = rd_kafka_mock_cluster_new(owner.get(), brokers);
    REQUIRE(cluster != nullptr);
  }
  ~MockCluster() { rd_kafka_mock_cluster_destroy(cluster); }
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;
  std::string bootstrap() const { return rd_kafka_mock_cluster_bootstraps(cluster); }
};

// A socket listening on an ephemeral loopback port that never accepts: the kernel completes
// handshakes from the backlog, so a client connects and sends, and nobody ever reads or answers
// (as with a SIGSTOPped broker).
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace kfaild::testing
