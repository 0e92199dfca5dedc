#include "server/kafka/security.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "server/kafka/errc.h"

namespace kfaild::kafka {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<std::string> valueOf(const std::map<std::string, std::string>& client,
                                   const std::string& key) {
  const auto found = client.find(key);
  if (found == client.end()) return std::nullopt;
  return found->second;
}

Error keyed(const std::string& key, const std::string& why) {
  return kafkaError(errc::invalid_property, key + ": " + why);
}

}  // namespace

const char* mechanismName(SaslMechanism mechanism) {
  switch (mechanism) {
    case SaslMechanism::kPlain:
      return "PLAIN";
    case SaslMechanism::kScramSha256:
      return "SCRAM-SHA-256";
    case SaslMechanism::kScramSha512:
      return "SCRAM-SHA-512";
  }
  return "?";
}

Result<ClientSecurity> clientSecurity(const std::map<std::string, std::string>& client) {
  ClientSecurity s;
  if (const auto protocol = valueOf(client, "security.protocol")) {
    const auto p = lower(*protocol);
    if (p == "plaintext") {
      s.protocol = SecurityProtocol::kPlaintext;
    } else if (p == "ssl") {
      s.protocol = SecurityProtocol::kSsl;
    } else if (p == "sasl_plaintext") {
      s.protocol = SecurityProtocol::kSaslPlaintext;
    } else if (p == "sasl_ssl") {
      s.protocol = SecurityProtocol::kSaslSsl;
    } else {
      return keyed("security.protocol",
                   "\"" + *protocol + "\" is not plaintext, ssl, sasl_plaintext or sasl_ssl");
    }
  }
  // Settings the own client has no counterpart for: refused rather than ignored, or it would
  // present itself otherwise than the librdkafka clients beside it.
  for (const char* key :
       {"ssl.keystore.location", "ssl.engine.location", "ssl.engine.id", "ssl.providers",
        "sasl.oauthbearer.config", "sasl.oauthbearer.method", "sasl.kerberos.service.name"}) {
    if (client.contains(key) && (s.tls() || s.sasl())) {
      return keyed(
          key,
          "not supported by kfaild's own protocol client (DescribeQuorum, FindCoordinator); "
          "use PEM files (ssl.certificate.location, ssl.key.location) and SASL PLAIN or SCRAM");
    }
  }
  if (s.sasl()) {
    auto mechanism = valueOf(client, "sasl.mechanism");
    if (!mechanism) mechanism = valueOf(client, "sasl.mechanisms");
    if (!mechanism) {
      return keyed("sasl.mechanism",
                   "required with security.protocol " + *valueOf(client, "security.protocol") +
                       " (librdkafka would take GSSAPI, Kerberos): PLAIN, SCRAM-SHA-256 or "
                       "SCRAM-SHA-512");
    }
    const auto name = *mechanism;
    if (name == "PLAIN") {
      s.mechanism = SaslMechanism::kPlain;
    } else if (name == "SCRAM-SHA-256") {
      s.mechanism = SaslMechanism::kScramSha256;
    } else if (name == "SCRAM-SHA-512") {
      s.mechanism = SaslMechanism::kScramSha512;
    } else if (name == "GSSAPI" || name == "OAUTHBEARER") {
      return keyed("sasl.mechanism",
                   name +
                       " is not supported by kfaild's own protocol client (DescribeQuorum, "
                       "FindCoordinator): it speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 "
                       "(" +
                       (name == "GSSAPI" ? "Kerberos needs a ticket cache and GSS-API"
                                         : "OAUTHBEARER needs a token provider") +
                       ")");
    } else {
      return keyed("sasl.mechanism",
                   "\"" + name + "\" is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512");
    }
    s.username = valueOf(client, "sasl.username").value_or("");
    s.password = valueOf(client, "sasl.password").value_or("");
    if (s.username.empty())
      return keyed("sasl.username", std::string("required with sasl.mechanism ") + name);
    if (s.password.empty())
      return keyed("sasl.password", std::string("required with sasl.mechanism ") + name);
  }
  if (s.tls()) {
    s.ca_location = valueOf(client, "ssl.ca.location").value_or("");
    if (s.ca_location == "probe") s.ca_location.clear();  // librdkafka: look for the system's CAs
    s.ca_pem = valueOf(client, "ssl.ca.pem").value_or("");
    s.certificate_location = valueOf(client, "ssl.certificate.location").value_or("");
    s.certificate_pem = valueOf(client, "ssl.certificate.pem").value_or("");
    s.key_location = valueOf(client, "ssl.key.location").value_or("");
    s.key_pem = valueOf(client, "ssl.key.pem").value_or("");
    s.key_password = valueOf(client, "ssl.key.password").value_or("");
    const bool has_cert = !s.certificate_location.empty() || !s.certificate_pem.empty();
    const bool has_key = !s.key_location.empty() || !s.key_pem.empty();
    if (has_cert != has_key) {
      return keyed(has_cert ? "ssl.key.location" : "ssl.certificate.location",
                   std::string("required with ") +
                       (has_cert ? "ssl.certificate.location" : "ssl.key.location"));
    }
    const auto algorithm =
        lower(valueOf(client, "ssl.endpoint.identification.algorithm").value_or("https"));
    if (algorithm != "https" && algorithm != "none") {
      return keyed("ssl.endpoint.identification.algorithm",
                   "\"" + algorithm + "\" is not https or none");
    }
    s.verify_hostname = algorithm == "https";
    const auto verify =
        lower(valueOf(client, "enable.ssl.certificate.verification").value_or("true"));
    s.verify_certificate = verify != "false";
  }
  return s;
}

}  // namespace kfaild::kafka
