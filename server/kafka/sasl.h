#pragma once

// SASL for kfaild's own protocol client, as Kafka frames it (KIP-43, KIP-152): SaslHandshake v1
// names the mechanism, then SaslAuthenticate v2 carries each message of the exchange. PLAIN is
// one message (RFC 4616); SCRAM-SHA-256 and SCRAM-SHA-512 are RFC 5802 / RFC 7677 without
// channel binding ("n,,"), the server's signature checked at the end, as librdkafka does.
//
// Pure: bytes and strings in, bytes or a result out; the sockets are the callers' (quorum.cc's
// blocking connection, the probe's event loop in server/probe/wire_client.cc). Encoders return a
// whole frame (size prefix included), decoders take the response without its prefix. A
// ScramClient and a SaslExchange are one exchange, used by one thread. Passwords never appear in
// an error message.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/kafka/security.h"

namespace kfaild::kafka {

inline constexpr std::int16_t kSaslHandshakeKey = 17;
inline constexpr std::int16_t kSaslHandshakeVersion = 1;
inline constexpr std::int16_t kSaslAuthenticateKey = 36;
inline constexpr std::int16_t kSaslAuthenticateVersion = 2;

std::vector<std::uint8_t> encodeSaslHandshakeRequest(std::int32_t correlation_id,
                                                     std::string_view client_id,
                                                     std::string_view mechanism);
// An error when the broker does not enable the mechanism (UNSUPPORTED_SASL_MECHANISM, with the
// mechanisms it enables) or answers otherwise.
Status decodeSaslHandshakeResponse(std::span<const std::uint8_t> response,
                                   std::int32_t correlation_id, std::string_view mechanism);

std::vector<std::uint8_t> encodeSaslAuthenticateRequest(std::int32_t correlation_id,
                                                        std::string_view client_id,
                                                        std::string_view auth_bytes);
// The server's message of this step; the broker's error (SASL_AUTHENTICATION_FAILED with its
// reason, "invalid credentials ...") as an error.
Result<std::string> decodeSaslAuthenticateResponse(std::span<const std::uint8_t> response,
                                                   std::int32_t correlation_id);

// A SaslAuthenticate answer: the server's message of this step and, on the last, the session's
// lifetime (KIP-368: the broker closes the connection after it unless the client authenticates
// again; 0 when the broker sets no connections.max.reauth.ms).
struct SaslAnswer {
  std::string bytes;
  std::int64_t session_lifetime_ms = 0;
};
Result<SaslAnswer> decodeSaslAuthenticateAnswer(std::span<const std::uint8_t> response,
                                                std::int32_t correlation_id);

// PLAIN's one message: authzid (empty), authcid, password, separated by NUL.
std::string plainMessage(std::string_view username, std::string_view password);

// SCRAM's salted password (PBKDF2 of the password) for the salt and iteration count a server last
// gave: RFC 5802 (section 5.1) lets a client keep it for the next exchange with the same ones, so
// that of the connections a client makes to a cluster only the first pays PBKDF2 (4096 iterations
// of SHA-512: about 6 ms of a busy core). As secret as the password; used by one thread.
struct ScramSaltCache {
  SaslMechanism mechanism = SaslMechanism::kPlain;
  std::string salt;  // base64, as the server sent it
  long iterations = 0;
  std::vector<std::uint8_t> salted;
};

// RFC 5802 SCRAM client without channel binding. The nonce is given so that tests can replay the
// RFCs' exchanges; live use takes scramNonce(). Usernames are escaped ('=' as =3D, ',' as =2C);
// passwords are used as UTF-8 bytes without SASLprep, as librdkafka and the Java client do.
class ScramClient {
 public:
  ScramClient(SaslMechanism mechanism, std::string username, std::string password,
              std::string nonce, ScramSaltCache* cache = nullptr);

  // "n,,n=<user>,r=<nonce>"
  std::string clientFirst() const;
  // From the server's first message (r=<nonce>,s=<salt>,i=<iterations>): the client's final
  // message with its proof. An error for a nonce that does not extend ours, a bad salt, an
  // iteration count below 4096 (RFC 7677's minimum) or above 16384 (Kafka's maximum: a larger one
  // would hold the thread in PBKDF2 for as long as the server likes) or a server error (e=...).
  Result<std::string> clientFinal(std::string_view server_first);
  // The server's final message must carry v=<its signature>, else an error (e=... is the server's
  // reason; a wrong signature means the server does not know the password either).
  Status verifyServerFinal(std::string_view server_final) const;

 private:
  SaslMechanism mechanism_;
  std::string username_;
  std::string password_;
  std::string nonce_;
  std::string client_first_bare_;
  std::vector<std::uint8_t> server_signature_;
  ScramSaltCache* cache_;  // not owned; may be null
};

// 32 random bytes from OpenSSL, base64: a client nonce.
std::string scramNonce();

std::string base64Encode(std::span<const std::uint8_t> bytes);
std::optional<std::vector<std::uint8_t>> base64Decode(std::string_view text);

// One client authentication over one connection as a state machine over whole frames, so that a
// blocking caller and an event loop drive the same exchange: begin() gives the SaslHandshake
// frame; each answer (without its size prefix) goes to answer(), which gives the next frame to
// send or says the exchange is done. PLAIN is handshake + one SaslAuthenticate, SCRAM handshake
// + two. Any error (the broker refusing the mechanism or the credentials, a malformed or
// unexpected answer, a server signature that does not match) ends the exchange: the connection
// must not be used. Correlation ids come from `next_id`, called once per frame.
class SaslExchange {
 public:
  struct Step {
    std::vector<std::uint8_t> frame;  // to send next; empty when done
    bool done = false;
  };

  // `security` must name a SASL protocol. The nonce is given so that tests can replay an
  // exchange; live use takes scramNonce(). `cache` (may be null) must outlive the exchange.
  SaslExchange(const ClientSecurity& security, std::string client_id,
               std::function<std::int32_t()> next_id, std::string nonce = scramNonce(),
               ScramSaltCache* cache = nullptr);

  std::vector<std::uint8_t> begin();
  // SCRAM's PBKDF2 runs here, on the answer to the first SaslAuthenticate: 4096 to 16384
  // iterations (ScramClient), 5 to 20 ms of the calling thread, unless the cache has them.
  Result<Step> answer(std::span<const std::uint8_t> response);
  // The session's lifetime the broker gave with its last answer (SaslAnswer), once done.
  std::int64_t sessionLifetimeMs() const { return session_lifetime_ms_; }

 private:
  enum class Stage { kStart, kHandshake, kPlain, kScramFirst, kScramFinal, kDone, kFailed };

  std::vector<std::uint8_t> authenticate(const std::string& message);

  SaslMechanism mechanism_;
  std::string username_;
  std::string password_;
  std::string client_id_;
  std::function<std::int32_t()> next_id_;
  ScramClient scram_;
  Stage stage_ = Stage::kStart;
  std::int32_t correlation_ = 0;
  std::int64_t session_lifetime_ms_ = 0;
};

}  // namespace kfaild::kafka
