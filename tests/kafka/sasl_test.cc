// SCRAM against RFC 7677's SCRAM-SHA-256 exchange and the same exchange in SHA-512 as Python's
// hashlib/hmac compute it (RFC 5802's own example is SCRAM-SHA-1, which Kafka does not offer);
// the SaslHandshake and SaslAuthenticate frames against bytes spelled out from Kafka's
// SaslHandshakeRequest.json / SaslAuthenticateRequest.json; and which client properties the own
// protocol client accepts.

#include "server/kafka/sasl.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "server/kafka/quorum.h"
#include "server/kafka/security.h"

namespace sasl_test {

using namespace kfaild;
using Bytes = std::vector<std::uint8_t>;

namespace {

constexpr const char* kNonce = "rOprNGfwEbeRWgbNEkqO";
constexpr const char* kServerFirst =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

Bytes bytes(std::initializer_list<int> values) {
  Bytes out;
  for (int v : values) out.push_back(static_cast<std::uint8_t>(v));
  return out;
}

void appendText(Bytes& out, const std::string& text) {
  out.insert(out.end(), text.begin(), text.end());
}

}  // namespace

TEST_CASE("SCRAM-SHA-256 reproduces RFC 7677's exchange and checks the server's signature",
          "[unit]") {
  kafka::ScramClient scram(kafka::SaslMechanism::kScramSha256, "user", "pencil", kNonce);
  CHECK(scram.clientFirst() == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  const auto final = scram.clientFinal(kServerFirst);
  REQUIRE(final);
  CHECK(*final ==
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+"
        "Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  CHECK(scram.verifyServerFinal("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
  const auto forged = scram.verifyServerFinal("v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
  REQUIRE_FALSE(forged);
  CHECK_THAT(forged.error().message, Catch::Contains("signature is wrong"));
}

TEST_CASE("SCRAM-SHA-512 gives the proof and signature an independent implementation computes",
          "[unit]") {
  kafka::ScramClient scram(kafka::SaslMechanism::kScramSha512, "user", "pencil", kNonce);
  const auto final = scram.clientFinal(kServerFirst);
  REQUIRE(final);
  CHECK(*final ==
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=gMGXRcevScNtxZ6/"
        "8lQYpGtnsNAc3mGcmNomv+"
        "xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ==");
  CHECK(
      scram.verifyServerFinal("v=ZQnYEgWQMFmmsM8aQMF0nDDCy/"
                              "AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw=="));
  // The SHA-256 signature of the same exchange is not SHA-512's.
  CHECK_FALSE(scram.verifyServerFinal("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
}

TEST_CASE("a SCRAM client refuses a server that does not follow the exchange", "[unit]") {
  const auto refusal = [](const std::string& server_first) {
    kafka::ScramClient scram(kafka::SaslMechanism::kScramSha512, "user", "pencil", kNonce);
    auto final = scram.clientFinal(server_first);
    REQUIRE_FALSE(final);
    return final.error().message;
  };
  CHECK_THAT(refusal("r=someoneElsesNonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
             Catch::Contains("nonce"));
  CHECK_THAT(refusal("r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1024"),
             Catch::Contains("1024 iterations"));
  CHECK_THAT(refusal("r=rOprNGfwEbeRWgbNEkqOx,s=not*base64,i=4096"), Catch::Contains("salt"));
  CHECK_THAT(refusal("e=unknown-user"), Catch::Contains("unknown-user"));
  // Without a completed exchange there is no signature to accept.
  kafka::ScramClient fresh(kafka::SaslMechanism::kScramSha256, "user", "pencil", kNonce);
  CHECK_FALSE(fresh.verifyServerFinal("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
}

TEST_CASE("a SCRAM client refuses an iteration count above Kafka's maximum of 16384 before hashing",
          "[unit]") {
  const auto answer = [](const std::string& iterations) {
    kafka::ScramClient scram(kafka::SaslMechanism::kScramSha512, "user", "pencil", kNonce);
    return scram.clientFinal("r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=" + iterations);
  };
  // PBKDF2 over 2,000,000,000 iterations would hold this thread for tens of minutes.
  const auto pinned = answer("2000000000");
  REQUIRE_FALSE(pinned);
  CHECK_THAT(pinned.error().message, Catch::Contains("2000000000 iterations, more than 16384"));
  CHECK(answer("16384"));
  CHECK_FALSE(answer("16385"));
  // Past a long's range, and digits followed by anything else, are not an iteration count.
  CHECK_THAT(answer("99999999999999999999").error().message, Catch::Contains("not a number"));
  CHECK_THAT(answer("4096x").error().message, Catch::Contains("not a number"));
}

TEST_CASE("SCRAM escapes = and , in the user name, and PLAIN is NUL-separated", "[unit]") {
  kafka::ScramClient scram(kafka::SaslMechanism::kScramSha256, "a=b,c", "pw", "n0nce");
  CHECK(scram.clientFirst() == "n,,n=a=3Db=2Cc,r=n0nce");
  CHECK(kafka::plainMessage("kfaild", "s3cret") == std::string("\0kfaild\0s3cret", 14));
  CHECK(kafka::scramNonce() != kafka::scramNonce());
}

TEST_CASE(
    "SaslHandshake v1 frames the mechanism and reads the broker's refusal with its mechanisms",
    "[unit]") {
  auto expected = bytes({0, 0, 0, 31, 0, 17, 0, 1, 0, 0, 0, 9, 0, 6});
  appendText(expected, "kfaild");
  expected.insert(expected.end(), {0, 13});
  appendText(expected, "SCRAM-SHA-512");
  CHECK(kafka::encodeSaslHandshakeRequest(9, "kfaild", "SCRAM-SHA-512") == expected);

  auto accepted = bytes({0, 0, 0, 9, 0, 0, 0, 0, 0, 1, 0, 13});
  appendText(accepted, "SCRAM-SHA-512");
  CHECK(kafka::decodeSaslHandshakeResponse(accepted, 9, "SCRAM-SHA-512"));

  auto refused = bytes({0, 0, 0, 9, 0, 33, 0, 0, 0, 2, 0, 5});
  appendText(refused, "PLAIN");
  refused.insert(refused.end(), {0, 13});
  appendText(refused, "SCRAM-SHA-256");
  const auto status = kafka::decodeSaslHandshakeResponse(refused, 9, "SCRAM-SHA-512");
  REQUIRE_FALSE(status);
  CHECK_THAT(status.error().message,
             Catch::Contains("sasl.mechanism: the broker does not enable SCRAM-SHA-512 (it enables "
                             "PLAIN, SCRAM-SHA-256)"));
  CHECK_FALSE(kafka::decodeSaslHandshakeResponse(accepted, 10, "SCRAM-SHA-512"));
}

TEST_CASE(
    "SaslAuthenticate v2 carries the exchange as compact bytes and the broker's reason on failure",
    "[unit]") {
  auto expected = bytes({0, 0, 0, 23, 0, 36, 0, 2, 0, 0, 0, 4, 0, 6});
  appendText(expected, "kfaild");
  expected.insert(expected.end(), {0, 5});
  appendText(expected, "abcd");
  expected.push_back(0);
  CHECK(kafka::encodeSaslAuthenticateRequest(4, "kfaild", "abcd") == expected);

  // correlation 4, no header tags, no error, null message, bytes "v=xy", lifetime 0, no tags.
  auto answer = bytes({0, 0, 0, 4, 0, 0, 0, 0, 5});
  appendText(answer, "v=xy");
  answer.insert(answer.end(), {0, 0, 0, 0, 0, 0, 0, 0, 0});
  const auto ok = kafka::decodeSaslAuthenticateResponse(answer, 4);
  REQUIRE(ok);
  CHECK(*ok == "v=xy");

  const std::string reason =
      "Authentication failed during authentication due to invalid credentials";
  auto failed = bytes({0, 0, 0, 4, 0, 0, 58, static_cast<int>(reason.size() + 1)});
  appendText(failed, reason);
  failed.insert(failed.end(), {1, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  const auto refused = kafka::decodeSaslAuthenticateResponse(failed, 4);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("invalid credentials"));

  answer.pop_back();
  CHECK_FALSE(kafka::decodeSaslAuthenticateResponse(answer, 4));
}

TEST_CASE(
    "the own protocol client takes librdkafka's security keys and refuses only what it cannot do, "
    "naming the key",
    "[unit]") {
  const auto problem = [](const std::map<std::string, std::string>& client) {
    return kafka::quorumClientProblem(client);
  };
  CHECK(problem({}).empty());
  CHECK(problem({{"security.protocol", "SASL_SSL"},
                 {"sasl.mechanism", "SCRAM-SHA-512"},
                 {"sasl.username", "u"},
                 {"sasl.password", "p"}})
            .empty());
  CHECK(problem({{"security.protocol", "sasl_plaintext"},
                 {"sasl.mechanisms", "PLAIN"},
                 {"sasl.username", "u"},
                 {"sasl.password", "p"}})
            .empty());
  CHECK(problem({{"security.protocol", "SSL"}, {"ssl.ca.location", "/etc/ca.pem"}}).empty());
  CHECK_THAT(
      problem({{"security.protocol", "SASL_SSL"}, {"sasl.username", "u"}, {"sasl.password", "p"}}),
      Catch::Contains("sasl.mechanism: required with security.protocol SASL_SSL"));
  CHECK_THAT(
      problem({{"security.protocol", "SASL_SSL"}, {"sasl.mechanism", "GSSAPI"}}),
      Catch::Contains("sasl.mechanism: GSSAPI is not supported") && Catch::Contains("Kerberos"));
  CHECK_THAT(problem({{"security.protocol", "SASL_SSL"}, {"sasl.mechanism", "OAUTHBEARER"}}),
             Catch::Contains("OAUTHBEARER is not supported"));
  CHECK_THAT(
      problem(
          {{"security.protocol", "SASL_SSL"}, {"sasl.mechanism", "PLAIN"}, {"sasl.username", "u"}}),
      Catch::Contains("sasl.password: required"));
  CHECK_THAT(problem({{"security.protocol", "SSL"}, {"ssl.keystore.location", "k.p12"}}),
             Catch::Contains("ssl.keystore.location: not supported"));
  CHECK_THAT(problem({{"security.protocol", "SSL"}, {"ssl.certificate.location", "c.pem"}}),
             Catch::Contains("ssl.key.location: required"));
  CHECK_THAT(problem({{"security.protocol", "tls"}}), Catch::Contains("security.protocol"));
  // No problem message ever carries the password.
  CHECK(problem({{"security.protocol", "SASL_SSL"},
                 {"sasl.mechanism", "GSSAPI"},
                 {"sasl.password", "hunter2"}})
            .find("hunter2") == std::string::npos);

  const auto s = kafka::clientSecurity(
      {{"security.protocol", "SSL"}, {"ssl.endpoint.identification.algorithm", "none"}});
  REQUIRE(s);
  CHECK(s->tls());
  CHECK_FALSE(s->sasl());
  CHECK_FALSE(s->verify_hostname);
}

}  // namespace sasl_test
