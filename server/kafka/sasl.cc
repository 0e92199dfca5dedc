#include "server/kafka/sasl.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <charconv>
#include <map>
#include <utility>

#include "server/kafka/errc.h"
#include "server/kafka/wire.h"

namespace kfaild::kafka {
namespace {

constexpr std::int16_t kUnsupportedSaslMechanism = 33;
// RFC 7677 section 4: a client must refuse fewer iterations than this.
constexpr long kMinScramIterations = 4096;
// Kafka's own maximum (ScramMechanism's maxIterations): no broker asks for more, and PBKDF2 over
// a count a rogue broker or an on-path attacker chose (i=2000000000) would hold the calling
// thread for tens of minutes.
constexpr long kMaxScramIterations = 16384;

Error saslError(const std::string& why) {
  return kafkaError(errc::admin_failed, why);
}

const EVP_MD* digestOf(SaslMechanism mechanism) {
  return mechanism == SaslMechanism::kScramSha512 ? EVP_sha512() : EVP_sha256();
}

std::vector<std::uint8_t> hmac(const EVP_MD* md, std::span<const std::uint8_t> key,
                               std::string_view data) {
  std::vector<std::uint8_t> out(EVP_MAX_MD_SIZE);
  unsigned int size = 0;
  HMAC(md, key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &size);
  out.resize(size);
  return out;
}

std::vector<std::uint8_t> digest(const EVP_MD* md, std::span<const std::uint8_t> data) {
  std::vector<std::uint8_t> out(EVP_MAX_MD_SIZE);
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &size, md, nullptr);
  out.resize(size);
  return out;
}

// "a=1,b=2" into its attributes; a value may contain '=' (base64 padding).
std::map<char, std::string> attributes(std::string_view message) {
  std::map<char, std::string> out;
  while (!message.empty()) {
    const auto comma = message.find(',');
    const auto item = message.substr(0, comma);
    if (item.size() >= 2 && item[1] == '=') out[item[0]] = std::string(item.substr(2));
    if (comma == std::string_view::npos) break;
    message.remove_prefix(comma + 1);
  }
  return out;
}

std::string escapeUsername(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == '=') {
      out += "=3D";
    } else if (c == ',') {
      out += "=2C";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::uint8_t> encodeSaslHandshakeRequest(std::int32_t correlation_id,
                                                     std::string_view client_id,
                                                     std::string_view mechanism) {
  wire::FrameWriter out;
  wire::requestHeader(out, kSaslHandshakeKey, kSaslHandshakeVersion, correlation_id, client_id);
  out.legacyString(mechanism);
  return std::move(out).finish();
}

Status decodeSaslHandshakeResponse(std::span<const std::uint8_t> response,
                                   std::int32_t correlation_id, std::string_view mechanism) {
  const std::string what = "SaslHandshake";
  wire::FrameReader in(response);
  if (auto s = wire::checkCorrelation(in, correlation_id, what); !s) return s;
  const auto code = in.int16("ErrorCode");
  const auto count = in.int32("Mechanisms count");
  std::string enabled;
  for (std::int32_t i = 0; in.ok() && i < count; ++i) {
    enabled += (enabled.empty() ? "" : ", ") + in.legacyString("Mechanism");
  }
  if (!in.ok()) return wire::malformed(what, in);
  if (code == kUnsupportedSaslMechanism) {
    return kafkaError(errc::admin_failed,
                      "sasl.mechanism: the broker does not enable " + std::string(mechanism) +
                          " (it enables " + (enabled.empty() ? std::string("none") : enabled) + ")",
                      static_cast<rd_kafka_resp_err_t>(code));
  }
  if (code != 0) return wire::brokerError(what, code, std::nullopt);
  return okStatus();
}

std::vector<std::uint8_t> encodeSaslAuthenticateRequest(std::int32_t correlation_id,
                                                        std::string_view client_id,
                                                        std::string_view auth_bytes) {
  wire::FrameWriter out;
  wire::requestHeader(out, kSaslAuthenticateKey, kSaslAuthenticateVersion, correlation_id,
                      client_id);
  out.noTaggedFields();  // request header v2
  out.compactString(auth_bytes);
  out.noTaggedFields();
  return std::move(out).finish();
}

Result<SaslAnswer> decodeSaslAuthenticateAnswer(std::span<const std::uint8_t> response,
                                                std::int32_t correlation_id) {
  const std::string what = "SaslAuthenticate";
  wire::FrameReader in(response);
  if (auto s = wire::checkCorrelation(in, correlation_id, what); !s) return s.error();
  in.skipTaggedFields("response header tagged fields");
  const auto code = in.int16("ErrorCode");
  const auto message = in.compactNullableString("ErrorMessage");
  const auto bytes = in.compactNullableString("AuthBytes");
  const auto lifetime = in.int64("SessionLifetimeMs");
  in.skipTaggedFields("response tagged fields");
  if (!in.ok()) return wire::malformed(what, in);
  if (code != 0) return wire::brokerError("SASL authentication failed", code, message);
  return SaslAnswer{bytes.value_or(std::string()), lifetime};
}

Result<std::string> decodeSaslAuthenticateResponse(std::span<const std::uint8_t> response,
                                                   std::int32_t correlation_id) {
  auto answer = decodeSaslAuthenticateAnswer(response, correlation_id);
  if (!answer) return answer.error();
  return std::move(answer->bytes);
}

std::string plainMessage(std::string_view username, std::string_view password) {
  std::string out;
  out += '\0';
  out += username;
  out += '\0';
  out += password;
  return out;
}

ScramClient::ScramClient(SaslMechanism mechanism, std::string username, std::string password,
                         std::string nonce, ScramSaltCache* cache)
    : mechanism_(mechanism),
      username_(std::move(username)),
      password_(std::move(password)),
      nonce_(std::move(nonce)),
      cache_(cache) {
  client_first_bare_ = "n=" + escapeUsername(username_) + ",r=" + nonce_;
}

std::string ScramClient::clientFirst() const {
  return "n,," + client_first_bare_;
}

Result<std::string> ScramClient::clientFinal(std::string_view server_first) {
  const auto attrs = attributes(server_first);
  if (const auto e = attrs.find('e'); e != attrs.end())
    return saslError("SCRAM: the server refused: " + e->second);
  const auto r = attrs.find('r');
  const auto s = attrs.find('s');
  const auto i = attrs.find('i');
  if (r == attrs.end() || s == attrs.end() || i == attrs.end()) {
    return saslError("SCRAM: the server's first message lacks r, s or i");
  }
  if (r->second.size() <= nonce_.size() || r->second.compare(0, nonce_.size(), nonce_) != 0) {
    return saslError("SCRAM: the server's nonce does not extend the client's");
  }
  const auto salt = base64Decode(s->second);
  if (!salt || salt->empty()) return saslError("SCRAM: the server's salt is not base64");
  long iterations = 0;
  const auto* end = i->second.data() + i->second.size();
  if (const auto parsed = std::from_chars(i->second.data(), end, iterations);
      parsed.ec != std::errc() || parsed.ptr != end) {
    return saslError("SCRAM: the iteration count \"" + i->second + "\" is not a number");
  }
  if (iterations < kMinScramIterations) {
    return saslError("SCRAM: the server asks for " + std::to_string(iterations) +
                     " iterations, fewer than " + std::to_string(kMinScramIterations));
  }
  if (iterations > kMaxScramIterations) {
    return saslError("SCRAM: the server asks for " + std::to_string(iterations) +
                     " iterations, more than " + std::to_string(kMaxScramIterations) +
                     ", Kafka's maximum");
  }
  const EVP_MD* md = digestOf(mechanism_);
  std::vector<std::uint8_t> salted(static_cast<std::size_t>(EVP_MD_get_size(md)));
  if (cache_ != nullptr && cache_->mechanism == mechanism_ && cache_->salt == s->second &&
      cache_->iterations == iterations && !cache_->salted.empty()) {
    salted = cache_->salted;
  } else {
    if (PKCS5_PBKDF2_HMAC(password_.data(), static_cast<int>(password_.size()), salt->data(),
                          static_cast<int>(salt->size()), static_cast<int>(iterations), md,
                          static_cast<int>(salted.size()), salted.data()) != 1) {
      return saslError("SCRAM: PBKDF2 failed");
    }
    if (cache_ != nullptr) *cache_ = {mechanism_, s->second, iterations, salted};
  }
  const auto client_key = hmac(md, salted, "Client Key");
  const auto stored_key = digest(md, client_key);
  const std::string without_proof = "c=biws,r=" + r->second;  // biws: base64("n,,")
  const auto auth_message =
      client_first_bare_ + "," + std::string(server_first) + "," + without_proof;
  const auto client_signature = hmac(md, stored_key, auth_message);
  std::vector<std::uint8_t> proof(client_key.size());
  for (std::size_t k = 0; k < proof.size(); ++k) proof[k] = client_key[k] ^ client_signature[k];
  const auto server_key = hmac(md, salted, "Server Key");
  server_signature_ = hmac(md, server_key, auth_message);
  return without_proof + ",p=" + base64Encode(proof);
}

Status ScramClient::verifyServerFinal(std::string_view server_final) const {
  const auto attrs = attributes(server_final);
  if (const auto e = attrs.find('e'); e != attrs.end())
    return saslError("SCRAM: the server refused: " + e->second);
  const auto v = attrs.find('v');
  if (v == attrs.end()) return saslError("SCRAM: the server's final message has no signature");
  const auto signature = base64Decode(v->second);
  if (server_signature_.empty() || !signature || *signature != server_signature_) {
    return saslError("SCRAM: the server's signature is wrong (it does not know the credentials)");
  }
  return okStatus();
}

SaslExchange::SaslExchange(const ClientSecurity& security, std::string client_id,
                           std::function<std::int32_t()> next_id, std::string nonce,
                           ScramSaltCache* cache)
    : mechanism_(security.mechanism),
      username_(security.username),
      password_(security.password),
      client_id_(std::move(client_id)),
      next_id_(std::move(next_id)),
      scram_(security.mechanism, security.username, security.password, std::move(nonce), cache) {}

std::vector<std::uint8_t> SaslExchange::begin() {
  correlation_ = next_id_();
  stage_ = Stage::kHandshake;
  return encodeSaslHandshakeRequest(correlation_, client_id_, mechanismName(mechanism_));
}

std::vector<std::uint8_t> SaslExchange::authenticate(const std::string& message) {
  correlation_ = next_id_();
  return encodeSaslAuthenticateRequest(correlation_, client_id_, message);
}

Result<SaslExchange::Step> SaslExchange::answer(std::span<const std::uint8_t> response) {
  const auto stage = std::exchange(stage_, Stage::kFailed);
  if (stage == Stage::kHandshake) {
    if (auto s = decodeSaslHandshakeResponse(response, correlation_, mechanismName(mechanism_));
        !s) {
      return s.error();
    }
    if (mechanism_ == SaslMechanism::kPlain) {
      stage_ = Stage::kPlain;
      return Step{authenticate(plainMessage(username_, password_)), false};
    }
    stage_ = Stage::kScramFirst;
    return Step{authenticate(scram_.clientFirst()), false};
  }
  if (stage != Stage::kPlain && stage != Stage::kScramFirst && stage != Stage::kScramFinal)
    return saslError("SASL: an answer after the exchange ended");
  auto answer = decodeSaslAuthenticateAnswer(response, correlation_);
  if (!answer) return answer.error();
  if (stage == Stage::kScramFirst) {
    auto client_final = scram_.clientFinal(answer->bytes);
    if (!client_final) return client_final.error();
    stage_ = Stage::kScramFinal;
    return Step{authenticate(*client_final), false};
  }
  if (stage == Stage::kScramFinal) {
    if (auto s = scram_.verifyServerFinal(answer->bytes); !s) return s.error();
  }
  session_lifetime_ms_ = answer->session_lifetime_ms;
  stage_ = Stage::kDone;
  return Step{{}, true};
}

std::string scramNonce() {
  std::vector<std::uint8_t> raw(32);
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
    // Only a broken OpenSSL fails here; a nonce must never be predictable.
    std::abort();
  }
  return base64Encode(raw);
}

std::string base64Encode(std::span<const std::uint8_t> bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::vector<std::uint8_t>> base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::vector<std::uint8_t> out(3 * text.size() / 4 + 1);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding's zero bytes.
  std::size_t size = static_cast<std::size_t>(n);
  if (!text.empty() && text.back() == '=') --size;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

}  // namespace kfaild::kafka
