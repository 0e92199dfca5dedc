// The SASL exchange as a state machine over whole frames (server/kafka/sasl.h: SaslExchange), fed
// synthetic answers as a broker writes them: the frames it asks to send, in order, with their
// correlation ids; PLAIN and SCRAM completing; a refused mechanism, refused credentials, a forged
// server signature and an answer out of turn ending it.

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "server/kafka/sasl.h"

namespace sasl_exchange_test {

using namespace kfaild;
using Bytes = std::vector<std::uint8_t>;

namespace {

// RFC 7677's SCRAM-SHA-256 exchange (user "user", password "pencil").
constexpr const char* kNonce = "rOprNGfwEbeRWgbNEkqO";
constexpr const char* kServerFirst =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
constexpr const char* kServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

void int16(Bytes& out, int v) {
  out.push_back(static_cast<std::uint8_t>((v >> 8) & 0xff));
  out.push_back(static_cast<std::uint8_t>(v & 0xff));
}

void int32(Bytes& out, std::int64_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<std::uint8_t>((v >> shift) & 0xff));
}

void text(Bytes& out, const std::string& s) {
  out.insert(out.end(), s.begin(), s.end());
}

// A SaslHandshake v1 answer: the error and the mechanisms the broker enables.
Bytes handshakeAnswer(std::int32_t correlation, int error,
                      const std::vector<std::string>& enabled) {
  Bytes out;
  int32(out, correlation);
  int16(out, error);
  int32(out, static_cast<std::int64_t>(enabled.size()));
  for (const auto& m : enabled) {
    int16(out, static_cast<int>(m.size()));
    text(out, m);
  }
  return out;
}

// A SaslAuthenticate v2 answer (flexible: compact strings, tagged fields); lengths below 127.
Bytes authenticateAnswer(std::int32_t correlation, int error, const std::string& message,
                         const std::string& auth_bytes, std::int64_t lifetime_ms) {
  Bytes out;
  int32(out, correlation);
  out.push_back(0);  // header tags
  int16(out, error);
  if (error == 0) {
    out.push_back(0);  // null message
  } else {
    out.push_back(static_cast<std::uint8_t>(message.size() + 1));
    text(out, message);
  }
  out.push_back(static_cast<std::uint8_t>(auth_bytes.size() + 1));
  text(out, auth_bytes);
  int32(out, lifetime_ms >> 32);
  int32(out, lifetime_ms & 0xffffffff);
  out.push_back(0);  // tags
  return out;
}

// The API key, correlation id and (for SaslAuthenticate) the auth bytes of a request frame.
struct Request {
  int api_key = 0;
  std::int32_t correlation = 0;
  std::string auth_bytes;
};

Request parse(const Bytes& frame) {
  REQUIRE(frame.size() >= 12);
  Request r;
  r.api_key = (frame[4] << 8) | frame[5];
  r.correlation =
      static_cast<std::int32_t>((std::uint32_t{frame[8]} << 24) | (std::uint32_t{frame[9]} << 16) |
                                (std::uint32_t{frame[10]} << 8) | frame[11]);
  if (r.api_key == kafka::kSaslAuthenticateKey) {
    // size, key, version, correlation, client id (int16 + 6 bytes "kfaild"), header tags
    const std::size_t at = 4 + 2 + 2 + 4 + 2 + 6 + 1;
    const std::size_t length = frame[at] - 1u;
    r.auth_bytes.assign(frame.begin() + static_cast<std::ptrdiff_t>(at + 1),
                        frame.begin() + static_cast<std::ptrdiff_t>(at + 1 + length));
  }
  return r;
}

kafka::ClientSecurity security(kafka::SaslMechanism mechanism, const std::string& user,
                               const std::string& password) {
  kafka::ClientSecurity s;
  s.protocol = kafka::SecurityProtocol::kSaslSsl;
  s.mechanism = mechanism;
  s.username = user;
  s.password = password;
  return s;
}

}  // namespace

TEST_CASE(
    "a PLAIN exchange is a handshake naming PLAIN and one message, each with a new correlation "
    "id, and keeps the session lifetime the broker gives",
    "[unit]") {
  std::int32_t next = 40;
  kafka::SaslExchange exchange(security(kafka::SaslMechanism::kPlain, "kfaild", "secret"), "kfaild",
                               [&] { return next++; });
  const auto handshake = parse(exchange.begin());
  CHECK(handshake.api_key == kafka::kSaslHandshakeKey);
  CHECK(handshake.correlation == 40);

  auto step = exchange.answer(handshakeAnswer(40, 0, {"PLAIN", "SCRAM-SHA-512"}));
  REQUIRE(step);
  REQUIRE_FALSE(step->done);
  const auto plain = parse(step->frame);
  CHECK(plain.api_key == kafka::kSaslAuthenticateKey);
  CHECK(plain.correlation == 41);
  CHECK(plain.auth_bytes == std::string("\0kfaild\0secret", 14));

  step = exchange.answer(authenticateAnswer(41, 0, "", "", 3'600'000));
  REQUIRE(step);
  CHECK(step->done);
  CHECK(step->frame.empty());
  CHECK(exchange.sessionLifetimeMs() == 3'600'000);
}

TEST_CASE("a SCRAM exchange replays RFC 7677's messages and checks the server's signature",
          "[unit]") {
  std::int32_t next = 1;
  kafka::SaslExchange exchange(
      security(kafka::SaslMechanism::kScramSha256, "user", "pencil"), "kfaild",
      [&] { return next++; }, kNonce);
  exchange.begin();
  auto step = exchange.answer(handshakeAnswer(1, 0, {"SCRAM-SHA-256"}));
  REQUIRE(step);
  CHECK(parse(step->frame).auth_bytes == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  step = exchange.answer(authenticateAnswer(2, 0, "", kServerFirst, 0));
  REQUIRE(step);
  REQUIRE_FALSE(step->done);
  CHECK(parse(step->frame).auth_bytes ==
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+"
        "Ute9ytag9zjfMHgsqmmiz7AndVQ=");

  SECTION("the server's signature: done") {
    step = exchange.answer(authenticateAnswer(3, 0, "", kServerFinal, 0));
    REQUIRE(step);
    CHECK(step->done);
    CHECK(exchange.sessionLifetimeMs() == 0);
  }
  SECTION("a forged signature: refused, and nothing more is taken") {
    step = exchange.answer(
        authenticateAnswer(3, 0, "", "v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", 0));
    REQUIRE_FALSE(step);
    CHECK_THAT(step.error().message, Catch::Contains("signature is wrong"));
    CHECK_FALSE(exchange.answer(authenticateAnswer(3, 0, "", kServerFinal, 0)));
  }
}

TEST_CASE(
    "SCRAM exchanges sharing a salt cache compute the salted password once and give the same "
    "proof, and a new salt is computed again",
    "[unit]") {
  kafka::ScramSaltCache cache;
  const auto proofOf = [&](const std::string& server_first) {
    std::int32_t next = 1;
    kafka::SaslExchange exchange(
        security(kafka::SaslMechanism::kScramSha256, "user", "pencil"), "kfaild",
        [&] { return next++; }, kNonce, &cache);
    exchange.begin();
    REQUIRE(exchange.answer(handshakeAnswer(1, 0, {"SCRAM-SHA-256"})));
    auto step = exchange.answer(authenticateAnswer(2, 0, "", server_first, 0));
    REQUIRE(step);
    return parse(step->frame).auth_bytes;
  };
  const auto first = proofOf(kServerFirst);
  REQUIRE(cache.iterations == 4096);
  const auto salted = cache.salted;
  CHECK(proofOf(kServerFirst) == first);
  CHECK(cache.salted == salted);

  std::string other_salt = kServerFirst;
  other_salt.replace(other_salt.find("s=W22"), 5, "s=X22");
  CHECK(proofOf(other_salt) != first);
  CHECK(cache.salted != salted);
  // A cache that claims the salt with the wrong key: the proof is wrong, which is how it is used
  // at all (the right key gives RFC 7677's proof above).
  cache.salt = "W22ZaJ0SNY7soEsUEjb6gQ==";
  CHECK(proofOf(kServerFirst) != first);
}

TEST_CASE(
    "a broker refusing the mechanism or the credentials, or answering out of turn, ends the "
    "exchange with its reason and never the password",
    "[unit]") {
  std::int32_t next = 7;
  kafka::SaslExchange exchange(security(kafka::SaslMechanism::kScramSha512, "kfaild", "hunter2"),
                               "kfaild", [&] { return next++; });
  exchange.begin();
  SECTION("a mechanism the broker does not enable") {
    const auto step = exchange.answer(handshakeAnswer(7, 33, {"PLAIN"}));
    REQUIRE_FALSE(step);
    CHECK_THAT(step.error().message,
               Catch::Contains("does not enable SCRAM-SHA-512 (it enables PLAIN)"));
  }
  SECTION("credentials the broker does not know") {
    REQUIRE(exchange.answer(handshakeAnswer(7, 0, {"SCRAM-SHA-512"})));
    const auto step = exchange.answer(authenticateAnswer(
        8, 58, "Authentication failed during authentication due to invalid credentials", "", 0));
    REQUIRE_FALSE(step);
    CHECK_THAT(step.error().message, Catch::Contains("invalid credentials"));
    CHECK_THAT(step.error().message, !Catch::Contains("hunter2"));
  }
  SECTION("an answer to another request") {
    const auto step = exchange.answer(handshakeAnswer(99, 0, {"SCRAM-SHA-512"}));
    REQUIRE_FALSE(step);
  }
  SECTION("an answer cut short") {
    auto answer = handshakeAnswer(7, 0, {"SCRAM-SHA-512"});
    answer.resize(answer.size() - 3);
    REQUIRE_FALSE(exchange.answer(answer));
  }
}

}  // namespace sasl_exchange_test
