#include "server/probe/java_protocol.h"

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace java_protocol_test {

using namespace kfaild::probe::java;

TEST_CASE("the java child's reports parse into their fields", "[unit][probe]") {
  auto hello = parseReport("hello 1 123456789012");
  REQUIRE(hello);
  CHECK(hello->kind == ReportKind::kHello);
  CHECK(hello->code == 1);
  CHECK(hello->t_ns == 123456789012);

  auto ack = parseReport("ack 3 17 5000000000 42");
  REQUIRE(ack);
  CHECK(ack->kind == ReportKind::kAck);
  CHECK(ack->slot == 3);
  CHECK(ack->seq == 17);
  CHECK(ack->t_ns == 5000000000);
  CHECK(ack->offset == 42);

  auto error = parseReport("error 0 9 77 6 NOT_LEADER_OR_FOLLOWER");
  REQUIRE(error);
  CHECK(error->kind == ReportKind::kError);
  CHECK(error->code == 6);
  CHECK(error->text == "NOT_LEADER_OR_FOLLOWER");

  auto recv = parseReport("recv 2 88 1000 kfp1:00000000000000ab:5:1700000000000000:");
  REQUIRE(recv);
  CHECK(recv->kind == ReportKind::kRecv);
  CHECK(recv->slot == 2);
  CHECK(recv->offset == 1000);
  CHECK(recv->text == "kfp1:00000000000000ab:5:1700000000000000:");

  auto leader = parseReport("leader 1 -1 -1 99");
  REQUIRE(leader);
  CHECK(leader->broker == -1);
  CHECK(leader->t_ns == 99);

  auto refused = parseReport("refused linger.ms Invalid value abc for configuration linger.ms");
  REQUIRE(refused);
  CHECK(refused->kind == ReportKind::kRefused);
  CHECK(refused->key == "linger.ms");
  CHECK(refused->text == "Invalid value abc for configuration linger.ms");
  REQUIRE(parseReport("ok"));
}

TEST_CASE("a line that is not a whole report is refused, not half read", "[unit][probe]") {
  CHECK_FALSE(parseReport(""));
  CHECK_FALSE(parseReport("ack"));
  CHECK_FALSE(parseReport("ack 1 2 3"));            // died mid-line
  CHECK_FALSE(parseReport("ack 1 2 3 4 5"));        // one word too many
  CHECK_FALSE(parseReport("ack 1 2 x 4"));          // not a number
  CHECK_FALSE(parseReport("ack -1 2 3 4"));         // no such slot
  CHECK_FALSE(parseReport("ack 1  3 4"));           // an empty word
  CHECK_FALSE(parseReport("recv 1 2 3"));           // no head
  CHECK_FALSE(parseReport("Exception in thread"));  // a Java stack trace on stdout
  CHECK_FALSE(parseReport("ok then"));
  CHECK_FALSE(parseReport("refused"));
}

TEST_CASE("lines split across reads are joined, and the line a child died in stays partial",
          "[unit][probe]") {
  LineSplitter splitter;
  std::vector<std::string> lines;
  splitter.append("ack 0 1 10 5\nack 0 2", lines);
  REQUIRE(lines == std::vector<std::string>{"ack 0 1 10 5"});
  CHECK(splitter.partial() == "ack 0 2");
  splitter.append(" 20 6\nrecv 0 30 5 -\nac", lines);
  CHECK(lines == std::vector<std::string>{"ack 0 1 10 5", "ack 0 2 20 6", "recv 0 30 5 -"});
  CHECK(splitter.partial() == "ac");
  CHECK_FALSE(splitter.overflowed());

  LineSplitter endless;
  std::vector<std::string> none;
  endless.append(std::string(kMaxLineBytes + 1, 'x'), none);
  CHECK(none.empty());
  CHECK(endless.overflowed());
}

TEST_CASE("kfaild's lines to the child carry newlines and backslashes escaped", "[unit][probe]") {
  CHECK(escapeConfigValue("a\\b\nc") == "a\\\\b\\nc");
  CHECK(configLine("ssl.keystore.key", "-----BEGIN\nX\n") ==
        "config ssl.keystore.key -----BEGIN\\nX\\n\n");
  CHECK(assignLine(4, "probe", 2, 1234) == "assign 4 probe 2 1234\n");
  CHECK(sendLine(7, 99, "kfp1:x") == "send 7 99 kfp1:x\n");
}

TEST_CASE("a child time becomes an instant on kfaild's timebase", "[unit][probe]") {
  const kfaild::common::Instant now{1'700'000'000'000'000, 5'000'000};
  const auto at = instantOf(4'250'000'000, now);  // 750 ms before now
  CHECK(at.mono == 4'250'000);
  CHECK(at.wall == now.wall - 750'000);
  // A time after the reading (a clock that is not kfaild's) is not taken as later than it.
  CHECK(instantOf(9'000'000'000, now).mono == now.mono);
  CHECK(sameClock(4'250'000'000, 4'000'000, 4'500'000));
  CHECK(sameClock(4'000'000'500, 4'000'001, 4'500'000));  // truncated into the same µs
  CHECK_FALSE(sameClock(3'000'000'000, 4'000'000, 4'500'000));
  CHECK_FALSE(sameClock(5'000'000'000, 4'000'000, 4'500'000));
}

TEST_CASE("the cluster's librdkafka security settings are mapped to the Java client's",
          "[unit][probe]") {
  std::string error;
  SECTION("SASL_SSL with SCRAM and a PEM CA") {
    const auto java = javaSettings({{"security.protocol", "sasl_ssl"},
                                    {"sasl.mechanisms", "SCRAM-SHA-512"},
                                    {"sasl.username", "kfaild"},
                                    {"sasl.password", "p\"w"},
                                    {"ssl.ca.location", "/etc/ca.pem"},
                                    {"socket.timeout.ms", "30000"},
                                    {"reconnect.backoff.max.ms", "1000"}},
                                   {{"linger.ms", "0"}}, error);
    REQUIRE(java);
    const auto& s = java->settings;
    CHECK(s.at("security.protocol") == "SASL_SSL");
    CHECK(s.at("sasl.mechanism") == "SCRAM-SHA-512");
    CHECK(s.at("sasl.jaas.config") ==
          "org.apache.kafka.common.security.scram.ScramLoginModule required "
          "username=\"kfaild\" password=\"p\\\"w\";");
    CHECK(s.at("ssl.truststore.type") == "PEM");
    CHECK(s.at("ssl.truststore.location") == "/etc/ca.pem");
    CHECK(s.at("reconnect.backoff.max.ms") == "1000");
    CHECK(s.at("linger.ms") == "0");
    CHECK_FALSE(s.contains("socket.timeout.ms"));
    CHECK(java->ignored == std::vector<std::string>{"socket.timeout.ms"});
  }
  SECTION("SASL_PLAINTEXT with PLAIN") {
    const auto java = javaSettings({{"security.protocol", "SASL_PLAINTEXT"},
                                    {"sasl.mechanism", "PLAIN"},
                                    {"sasl.username", "u"},
                                    {"sasl.password", "p"}},
                                   {}, error);
    REQUIRE(java);
    CHECK(java->settings.at("sasl.jaas.config")
              .starts_with("org.apache.kafka.common.security.plain.PlainLoginModule required"));
  }
  SECTION("a client certificate goes inline as a PEM keystore") {
    kfaild::testing::TempDir dir;
    std::ofstream(dir / "c.pem") << "CERT\n";
    std::ofstream(dir / "k.pem") << "KEY\n";
    const auto java = javaSettings({{"security.protocol", "SSL"},
                                    {"ssl.certificate.location", (dir / "c.pem").string()},
                                    {"ssl.key.location", (dir / "k.pem").string()},
                                    {"ssl.endpoint.identification.algorithm", "none"}},
                                   {}, error);
    REQUIRE(java);
    CHECK(java->settings.at("ssl.keystore.type") == "PEM");
    CHECK(java->settings.at("ssl.keystore.certificate.chain") == "CERT\n");
    CHECK(java->settings.at("ssl.keystore.key") == "KEY\n");
    CHECK(java->settings.at("ssl.endpoint.identification.algorithm").empty());
  }
  SECTION("what has no Java form is an error naming the key") {
    CHECK_FALSE(javaSettings({{"sasl.mechanisms", "OAUTHBEARER"}}, {}, error));
    CHECK(error.starts_with("sasl.mechanism:"));
    CHECK_FALSE(javaSettings({{"ssl.certificate.location", "/x"}}, {}, error));
    CHECK(error.starts_with("ssl.key.location:"));
    CHECK_FALSE(javaSettings(
        {{"ssl.certificate.location", "/nonexistent/c"}, {"ssl.key.location", "/nonexistent/k"}},
        {}, error));
    CHECK(error.starts_with("ssl.certificate.location: cannot read"));
  }
}

}  // namespace java_protocol_test
