// The DescribeQuorum wire format against bytes spelled out by hand from Kafka's
// DescribeQuorumRequest.json / DescribeQuorumResponse.json (and RequestHeader / ResponseHeader),
// and the quorum client against sockets that misbehave.

#include "server/kafka/quorum.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "server/kafka/errc.h"
#include "tests/support/kafka_doubles.h"

namespace kafka_quorum_test {

using namespace kfaild;
using kfaild::testing::SilentListener;
using Bytes = std::vector<std::uint8_t>;

namespace {

void append(Bytes& out, std::initializer_list<int> bytes) {
  for (int b : bytes) out.push_back(static_cast<std::uint8_t>(b));
}

void appendText(Bytes& out, const std::string& text) {
  out.insert(out.end(), text.begin(), text.end());
}

void appendRepeated(Bytes& out, int byte, int count) {
  for (int i = 0; i < count; ++i) out.push_back(static_cast<std::uint8_t>(byte));
}

// A v2 answer, correlation id 7: leader 100 in epoch 3, high watermark 1234, voter 100, and
// brokers 1 and 2 as observers; the Nodes section names controller 100's listener.
Bytes leader100V2() {
  Bytes b;
  append(b, {0x00, 0x00, 0x00, 0x07});  // CorrelationId 7
  append(b, {0x00});                    // response header v1: no tagged fields
  append(b, {0x00, 0x00});              // ErrorCode 0
  append(b, {0x00});                    // ErrorMessage null
  append(b, {0x02});                    // Topics: 1 element (compact: n + 1)
  append(b, {0x13});                    // TopicName: 18 characters
  appendText(b, "__cluster_metadata");
  append(b, {0x02});                                      // Partitions: 1 element
  append(b, {0x00, 0x00, 0x00, 0x00});                    // PartitionIndex 0
  append(b, {0x00, 0x00});                                // ErrorCode 0
  append(b, {0x00});                                      // ErrorMessage null
  append(b, {0x00, 0x00, 0x00, 0x64});                    // LeaderId 100
  append(b, {0x00, 0x00, 0x00, 0x03});                    // LeaderEpoch 3
  append(b, {0, 0, 0, 0, 0, 0, 0x04, 0xd2});              // HighWatermark 1234
  append(b, {0x02});                                      // CurrentVoters: 1 element
  append(b, {0x00, 0x00, 0x00, 0x64});                    //   ReplicaId 100
  appendRepeated(b, 0x11, 16);                            //   ReplicaDirectoryId
  append(b, {0, 0, 0, 0, 0, 0, 0x04, 0xd2});              //   LogEndOffset 1234
  appendRepeated(b, 0xff, 8);                             //   LastFetchTimestamp -1 (the leader)
  append(b, {0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00});  // LastCaughtUpTimestamp 1700000000000
  append(b, {0x00});                                      //   tagged fields
  append(b, {0x03});                                      // Observers: 2 elements
  append(b, {0x00, 0x00, 0x00, 0x01});                    //   ReplicaId 1
  appendRepeated(b, 0x22, 16);
  append(b, {0, 0, 0, 0, 0, 0, 0x04, 0xce});              //   LogEndOffset 1230
  append(b, {0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x67, 0x9c});  //   LastFetchTimestamp 1699999999900
  append(b, {0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x67, 0x38});  //   LastCaughtUp 1699999999800
  append(b, {0x00});
  append(b, {0x00, 0x00, 0x00, 0x02});  //   ReplicaId 2
  appendRepeated(b, 0x33, 16);
  append(b, {0, 0, 0, 0, 0, 0, 0x04, 0xd2});              //   LogEndOffset 1234
  append(b, {0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x67, 0xce});  //   LastFetchTimestamp 1699999999950
  append(b, {0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00});  //   LastCaughtUp 1700000000000
  append(b, {0x00});
  append(b, {0x00});                    // PartitionData tagged fields
  append(b, {0x00});                    // TopicData tagged fields
  append(b, {0x02});                    // Nodes: 1 element
  append(b, {0x00, 0x00, 0x00, 0x64});  //   NodeId 100
  append(b, {0x02});                    //   Listeners: 1 element
  append(b, {0x0b});
  appendText(b, "CONTROLLER");
  append(b, {0x0a});
  appendText(b, "127.0.0.1");
  append(b, {0x4a, 0x9c});  //     Port 19100
  append(b, {0x00});        //     Listener tagged fields
  append(b, {0x00});        //   Node tagged fields
  append(b, {0x00});        // response tagged fields
  return b;
}

}  // namespace

TEST_CASE("a DescribeQuorum request is the flexible header and one topic with partition 0",
          "[unit][kafka]") {
  const Bytes expected = {
      0x00, 0x00, 0x00, 0x2d,                      // size: 45 bytes follow
      0x00, 0x37,                                  // RequestApiKey 55
      0x00, 0x02,                                  // RequestApiVersion 2
      0x00, 0x00, 0x00, 0x07,                      // CorrelationId 7
      0x00, 0x06, 'k',  'f',  'a', 'i', 'l', 'd',  // ClientId: INT16 length even in header v2
      0x00,                                        // header tagged fields
      0x02,                                        // Topics: 1 element
      0x13, '_',  '_',  'c',  'l', 'u', 's', 't', 'e', 'r',
      '_',  'm',  'e',  't',  'a', 'd', 'a', 't', 'a',
      0x02,                    // Partitions: 1 element
      0x00, 0x00, 0x00, 0x00,  // PartitionIndex 0
      0x00,                    // PartitionData tagged fields
      0x00,                    // TopicData tagged fields
      0x00,                    // request tagged fields
  };
  CHECK(kafka::encodeDescribeQuorumRequest(2, 7, "kfaild") == expected);

  auto v0 = expected;
  v0[7] = 0x00;
  CHECK(kafka::encodeDescribeQuorumRequest(0, 7, "kfaild") == v0);
}

TEST_CASE("an ApiVersions request is version 0 with the classic header and no body",
          "[unit][kafka]") {
  const Bytes expected = {0x00, 0x00, 0x00, 0x10,  // size: 16 bytes follow
                          0x00, 0x12,              // RequestApiKey 18
                          0x00, 0x00,              // RequestApiVersion 0
                          0x00, 0x00, 0x00, 0x01,  // CorrelationId 1
                          0x00, 0x06, 'k',  'f',  'a', 'i', 'l', 'd'};
  CHECK(kafka::encodeApiVersionsRequest(1, "kfaild") == expected);
}

TEST_CASE("the DescribeQuorum version is the newest both the broker and kfaild speak",
          "[unit][kafka]") {
  Bytes answer;
  append(answer, {0x00, 0x00, 0x00, 0x05});              // CorrelationId 5
  append(answer, {0x00, 0x00});                          // ErrorCode 0
  append(answer, {0x00, 0x00, 0x00, 0x02});              // ApiKeys: 2 elements (INT32 count in v0)
  append(answer, {0x00, 0x12, 0x00, 0x00, 0x00, 0x04});  // ApiVersions 0-4
  append(answer, {0x00, 0x37, 0x00, 0x00, 0x00, 0x03});  // DescribeQuorum 0-3
  const auto range = kafka::decodeApiVersionsResponse(answer, 5, kafka::kDescribeQuorumKey);
  REQUIRE(range.ok());
  REQUIRE(range->has_value());
  CHECK((*range)->max == 3);
  CHECK(kafka::pickDescribeQuorumVersion(**range) == std::optional<std::int16_t>(2));
  CHECK(kafka::pickDescribeQuorumVersion({0, 1}) == std::optional<std::int16_t>(1));
  CHECK_FALSE(kafka::pickDescribeQuorumVersion({3, 4}).has_value());

  const auto absent = kafka::decodeApiVersionsResponse(answer, 5, 99);
  REQUIRE(absent.ok());
  CHECK_FALSE(absent->has_value());
  CHECK_FALSE(kafka::decodeApiVersionsResponse(answer, 6, kafka::kDescribeQuorumKey).ok());
}

TEST_CASE("a v2 answer gives leader 100 in epoch 3 with its voter and two observers",
          "[unit][kafka]") {
  const auto quorum = kafka::decodeDescribeQuorumResponse(leader100V2(), 2, 7);
  REQUIRE(quorum.ok());
  CHECK(quorum->leader_id == 100);
  CHECK(quorum->leader_epoch == 3);
  CHECK(quorum->high_watermark == 1234);
  CHECK(quorum->api_version == 2);
  REQUIRE(quorum->voters.size() == 1);
  CHECK(quorum->voters[0] == kafka::QuorumReplica{100, 1234, -1, 1'700'000'000'000});
  REQUIRE(quorum->observers.size() == 2);
  CHECK(quorum->observers[0] ==
        kafka::QuorumReplica{1, 1230, 1'699'999'999'900, 1'699'999'999'800});
  CHECK(quorum->observers[1] ==
        kafka::QuorumReplica{2, 1234, 1'699'999'999'950, 1'700'000'000'000});
  CHECK(quorum->isVoter(100));
  CHECK_FALSE(quorum->isVoter(1));
  CHECK(quorum->lagOf(quorum->observers[0]) == std::optional<std::int64_t>(4));
  CHECK(quorum->lagOf(quorum->voters[0]) == std::optional<std::int64_t>(0));
  // The Nodes section: where the active controller listens (for describeControllerConfig).
  REQUIRE(quorum->endpoints.count(100) == 1);
  REQUIRE(quorum->endpoints.at(100).size() == 1);
  CHECK(quorum->endpoints.at(100)[0] == kafka::QuorumEndpoint{"CONTROLLER", "127.0.0.1", 19100});
}

TEST_CASE("a DescribeConfigs request asks one node's own config for the named keys, in version 4",
          "[unit][kafka]") {
  const Bytes expected = {
      0x00, 0x00, 0x00, 0x36,                      // size: 54 bytes follow
      0x00, 0x20,                                  // RequestApiKey 32
      0x00, 0x04,                                  // RequestApiVersion 4
      0x00, 0x00, 0x00, 0x09,                      // CorrelationId 9
      0x00, 0x06, 'k',  'f',  'a', 'i', 'l', 'd',  // ClientId
      0x00,                                        // header tagged fields
      0x02,                                        // Resources: 1 element
      0x04,                                        // ResourceType BROKER
      0x04, '1',  '0',  '0',                       // ResourceName "100"
      0x02,                                        // ConfigurationKeys: 1 element
      0x1a, 'b',  'r',  'o',  'k', 'e', 'r', '.', 's', 'e', 's', 's', 'i',
      'o',  'n',  '.',  't',  'i', 'm', 'e', 'o', 'u', 't', '.', 'm', 's',
      0x00,  // resource tagged fields
      0x00,  // IncludeSynonyms false
      0x00,  // IncludeDocumentation false
      0x00,  // request tagged fields
  };
  CHECK(kafka::encodeDescribeNodeConfigsRequest(9, "kfaild", 100, {"broker.session.timeout.ms"}) ==
        expected);
}

namespace {

// A v4 DescribeConfigs answer, correlation id 9, for node 100: broker.session.timeout.ms 6000
// from the node's properties file (source 4), with one synonym.
Bytes sessionTimeoutAnswer(std::int16_t resource_error = 0) {
  Bytes b;
  append(b, {0x00, 0x00, 0x00, 0x09});  // CorrelationId 9
  append(b, {0x00});                    // response header tagged fields
  append(b, {0x00, 0x00, 0x00, 0x00});  // ThrottleTimeMs
  append(b, {0x02});                    // Results: 1 element
  append(b,
         {static_cast<int>((resource_error >> 8) & 0xff), static_cast<int>(resource_error & 0xff)});
  append(b, {0x00});  // ErrorMessage null
  append(b, {0x04});  // ResourceType BROKER
  append(b, {0x04});
  appendText(b, "100");
  append(b, {0x02});  // Configs: 1 element
  append(b, {0x1a});
  appendText(b, "broker.session.timeout.ms");
  append(b, {0x05});
  appendText(b, "6000");
  append(b, {0x01});  // ReadOnly
  append(b, {0x04});  // ConfigSource STATIC_BROKER_CONFIG
  append(b, {0x00});  // IsSensitive
  append(b, {0x02});  // Synonyms: 1 element
  append(b, {0x1a});
  appendText(b, "broker.session.timeout.ms");
  append(b, {0x05});
  appendText(b, "6000");
  append(b, {0x04});  //   Source
  append(b, {0x00});  //   tagged fields
  append(b, {0x05});  // ConfigType LONG
  append(b, {0x00});  // Documentation null
  append(b, {0x00});  // Config tagged fields
  append(b, {0x00});  // Result tagged fields
  append(b, {0x00});  // response tagged fields
  return b;
}

}  // namespace

TEST_CASE(
    "a DescribeConfigs answer gives each value with its source, and a resource error is an error",
    "[unit][kafka]") {
  const auto values = kafka::decodeDescribeConfigsResponse(sessionTimeoutAnswer(), 9);
  REQUIRE(values.ok());
  REQUIRE(values->count("broker.session.timeout.ms") == 1);
  CHECK(values->at("broker.session.timeout.ms") == kafka::NodeConfigValue{"6000", 4});
  CHECK(std::string(kafka::configSourceName(4)) == "the node's properties file");

  CHECK_FALSE(kafka::decodeDescribeConfigsResponse(sessionTimeoutAnswer(), 10).ok());
  const auto refused = kafka::decodeDescribeConfigsResponse(sessionTimeoutAnswer(29),
                                                            9);  // CLUSTER_AUTHORIZATION_FAILED
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("node 100") != std::string::npos);

  const auto whole = sessionTimeoutAnswer();
  for (std::size_t n = 0; n < whole.size(); ++n) {
    const Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK_FALSE(kafka::decodeDescribeConfigsResponse(cut, 9).ok());
  }
}

TEST_CASE("a v0 answer has no timestamps and no directory ids", "[unit][kafka]") {
  Bytes b;
  append(b, {0x00, 0x00, 0x00, 0x09, 0x00});  // CorrelationId 9, header tagged fields
  append(b, {0x00, 0x00});                    // ErrorCode 0 (no ErrorMessage before v2)
  append(b, {0x02, 0x13});
  appendText(b, "__cluster_metadata");
  append(b, {0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});  // partition 0, ErrorCode 0
  append(b, {0xff, 0xff, 0xff, 0xff});                    // LeaderId -1: an election
  append(b, {0x00, 0x00, 0x00, 0x05});                    // LeaderEpoch 5
  append(b, {0, 0, 0, 0, 0, 0, 0, 0x0a});                 // HighWatermark 10
  append(b, {0x02, 0x00, 0x00, 0x00, 0x64});              // voter 100
  append(b, {0, 0, 0, 0, 0, 0, 0, 0x0a, 0x00});           // LogEndOffset 10, tagged fields
  append(b, {0x01});                                      // Observers: empty
  append(b, {0x00, 0x00, 0x00});                          // partition, topic, response tags
  const auto quorum = kafka::decodeDescribeQuorumResponse(b, 0, 9);
  REQUIRE(quorum.ok());
  CHECK(quorum->leader_id == -1);
  CHECK(quorum->leader_epoch == 5);
  CHECK(quorum->voters == std::vector<kafka::QuorumReplica>{{100, 10, -1, -1}});
  CHECK(quorum->observers.empty());
  CHECK_FALSE(quorum->lagOf(quorum->voters[0]).has_value());
}

TEST_CASE("every truncation of an answer is an error and not a crash", "[unit][kafka]") {
  const auto whole = leader100V2();
  for (std::size_t n = 0; n < whole.size(); ++n) {
    const auto quorum =
        kafka::decodeDescribeQuorumResponse(std::span<const std::uint8_t>(whole.data(), n), 2, 7);
    INFO("first " << n << " bytes");
    REQUIRE_FALSE(quorum.ok());
    CHECK(quorum.error().code == kafka::errc::admin_failed);
  }
  auto longer = whole;
  longer.push_back(0x00);
  const auto trailing = kafka::decodeDescribeQuorumResponse(longer, 2, 7);
  REQUIRE_FALSE(trailing.ok());
  CHECK_THAT(trailing.error().message, Catch::Contains("after the end"));
}

TEST_CASE("a corrupt array length cannot make the decoder allocate what the answer cannot hold",
          "[unit][kafka]") {
  auto answer = leader100V2();
  // The Topics count (byte 8) as a 5-byte varint of 2^31.
  answer.erase(answer.begin() + 8);
  answer.insert(answer.begin() + 8, {0x80, 0x80, 0x80, 0x80, 0x08});
  const auto quorum = kafka::decodeDescribeQuorumResponse(answer, 2, 7);
  REQUIRE_FALSE(quorum.ok());
  CHECK_THAT(quorum.error().message, Catch::Contains("cannot fit"));
}

TEST_CASE("a broker's error code keeps its Kafka name and message", "[unit][kafka]") {
  Bytes b;
  append(b, {0x00, 0x00, 0x00, 0x07, 0x00});
  append(b, {0x00, 0x1f});  // ErrorCode 31: CLUSTER_AUTHORIZATION_FAILED
  append(b, {0x0c});        // ErrorMessage: 11 characters
  appendText(b, "not allowed");
  append(b, {0x01, 0x01, 0x00});  // no topics, no nodes, no tagged fields
  const auto quorum = kafka::decodeDescribeQuorumResponse(b, 2, 7);
  REQUIRE_FALSE(quorum.ok());
  CHECK(quorum.error().code == kafka::errc::admin_failed);
  CHECK_THAT(quorum.error().message,
             Catch::Contains("CLUSTER_AUTHORIZATION_FAILED") && Catch::Contains("not allowed"));

  const auto wrong_request = kafka::decodeDescribeQuorumResponse(leader100V2(), 2, 8);
  REQUIRE_FALSE(wrong_request.ok());
  CHECK_THAT(wrong_request.error().message, Catch::Contains("expected 8"));
}

TEST_CASE("a broker that never answers costs one timeout and the error names every broker tried",
          "[integration][kafka]") {
  SilentListener silent;
  std::string refused;
  {
    SilentListener closed_soon;
    refused = closed_soon.address();
  }
  kafka::QuorumClientOptions options;
  options.bootstrap = "PLAINTEXT://" + silent.address() + ", " + refused;
  options.timeout_ms = 300;
  const auto started = std::chrono::steady_clock::now();
  const auto quorum = kafka::describeQuorum(options);
  const auto took = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(quorum.ok());
  CHECK(quorum.error().code == kafka::errc::admin_failed);
  CHECK_THAT(quorum.error().message, Catch::Contains(silent.address() + ": receive: timed out") &&
                                         Catch::Contains(refused + ": connect: "));
  CHECK(took >= std::chrono::milliseconds(250));
  CHECK(took < std::chrono::seconds(3));

  options.bootstrap = " , ";
  const auto none = kafka::describeQuorum(options);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Contains("no bootstrap server"));
}

TEST_CASE("a describe waiting on a silent broker gives up promptly when cancelled",
          "[integration][kafka]") {
  SilentListener silent;
  kafka::QuorumClientOptions options;
  options.bootstrap = silent.address();
  options.timeout_ms = 30'000;
  kafka::QuorumDescriber describer(options);
  std::atomic<bool> cancel{false};
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const auto started = std::chrono::steady_clock::now();
  const auto quorum = describer.describe(cancel);
  const auto took = std::chrono::steady_clock::now() - started;
  canceller.join();
  REQUIRE_FALSE(quorum.ok());
  CHECK_THAT(quorum.error().message, Catch::Contains("cancelled"));
  CHECK(took < std::chrono::seconds(2));
}

namespace {

// A FindCoordinator v4 answer for one key: coordinator `node` at 127.0.0.1:19092, or `error`.
Bytes coordinatorAnswer(std::int16_t error = 0, std::int32_t node = 2) {
  Bytes b;
  append(b, {0x00, 0x00, 0x00, 0x07, 0x00});  // CorrelationId 7, header tagged fields
  append(b, {0x00, 0x00, 0x00, 0x00});        // ThrottleTimeMs
  append(b, {0x02, 0x0b});                    // one coordinator; Key "kfaild-lab" (10 bytes)
  appendText(b, "kfaild-lab");
  append(b, {static_cast<std::uint8_t>(node >> 24), static_cast<std::uint8_t>(node >> 16),
             static_cast<std::uint8_t>(node >> 8), static_cast<std::uint8_t>(node)});
  append(b, {0x0a});  // Host "127.0.0.1" (9 bytes)
  appendText(b, "127.0.0.1");
  append(b, {0x00, 0x00, 0x4a, 0xc4});  // Port 19140
  append(b, {static_cast<std::uint8_t>(error >> 8), static_cast<std::uint8_t>(error)});
  append(b, {0x00});        // ErrorMessage null
  append(b, {0x00, 0x00});  // coordinator, response tagged fields
  return b;
}

}  // namespace

TEST_CASE(
    "a FindCoordinator v4 request names the key and its type, and its answer gives the coordinator",
    "[unit][kafka]") {
  const auto request =
      kafka::encodeFindCoordinatorRequest(7, "kfaild", kafka::CoordinatorType::kTransaction, "t1");
  // size, api key 10, version 4, correlation 7, client id "kfaild", header tags, key type 1,
  // one key "t1", tags.
  const Bytes expected = {0x00, 0x00, 0x00, 0x17, 0x00, 0x0a, 0x00, 0x04, 0x00,
                          0x00, 0x00, 0x07, 0x00, 0x06, 'k',  'f',  'a',  'i',
                          'l',  'd',  0x00, 0x01, 0x02, 0x03, 't',  '1',  0x00};
  CHECK(request == expected);

  const auto found = kafka::decodeFindCoordinatorResponse(coordinatorAnswer(), 7);
  REQUIRE(found.ok());
  CHECK(found->node == 2);
  CHECK(found->host == "127.0.0.1");
  CHECK(found->port == 19140);

  CHECK_FALSE(kafka::decodeFindCoordinatorResponse(coordinatorAnswer(), 8).ok());
  const auto moving =
      kafka::decodeFindCoordinatorResponse(coordinatorAnswer(15), 7);  // COORDINATOR_NOT_AVAILABLE
  REQUIRE_FALSE(moving.ok());
  CHECK(moving.error().message.find("COORDINATOR_NOT_AVAILABLE") != std::string::npos);
  const auto whole = coordinatorAnswer();
  for (std::size_t n = 0; n < whole.size(); ++n) {
    const Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK_FALSE(kafka::decodeFindCoordinatorResponse(cut, 7).ok());
  }
}

TEST_CASE(
    "the coordinator's partition is the key's Java hashCode, absolute, modulo the partition count",
    "[unit][kafka]") {
  // Values from jshell (JDK 17): "hello".hashCode() 99162322, "kfaild-probe-lab" -1807343074,
  // "é€😀x" 519312306 (a surrogate pair); "polygenelubricants" is Integer.MIN_VALUE, which
  // Kafka's Utils.abs makes 0.
  CHECK(kafka::coordinatorPartition("hello", 50) == 22);
  CHECK(kafka::coordinatorPartition("kfaild-probe-lab", 50) == 24);
  CHECK(kafka::coordinatorPartition("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80x", 50) == 6);
  CHECK(kafka::coordinatorPartition("polygenelubricants", 50) == 0);
  CHECK(kafka::coordinatorPartition("Aa", 50) == kafka::coordinatorPartition("BB", 50));
  CHECK(kafka::coordinatorPartition("", 50) == 0);
  CHECK(kafka::coordinatorPartition("hello", 0) == -1);
  CHECK(std::string(kafka::coordinatorTopic(kafka::CoordinatorType::kGroup)) ==
        "__consumer_offsets");
  CHECK(std::string(kafka::coordinatorTopic(kafka::CoordinatorType::kTransaction)) ==
        "__transaction_state");
}

}  // namespace kafka_quorum_test
