#pragma once

// How kfaild's own protocol client (server/kafka/quorum.h: DescribeQuorum, DescribeConfigs,
// FindCoordinator) reaches a secured cluster, read from the same `clusters[].client` properties
// librdkafka takes, with librdkafka's defaults where a key is absent:
//
//   security.protocol                      plaintext | ssl | sasl_plaintext | sasl_ssl (any case)
//   sasl.mechanism (or sasl.mechanisms)    PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
//   sasl.username, sasl.password
//   ssl.ca.location (file or directory; "probe" or absent: the system's CAs), ssl.ca.pem
//   ssl.certificate.location, ssl.certificate.pem, ssl.key.location, ssl.key.pem, ssl.key.password
//   ssl.endpoint.identification.algorithm  https (default: the certificate must name the host) |
//   none enable.ssl.certificate.verification    true (default) | false
//
// Pure: no file is read here (the TLS context reads them, server/kafka/tls.h).

#include <map>
#include <string>

#include "server/common/result.h"

namespace kfaild::kafka {

enum class SecurityProtocol { kPlaintext, kSsl, kSaslPlaintext, kSaslSsl };
enum class SaslMechanism { kPlain, kScramSha256, kScramSha512 };

const char* mechanismName(SaslMechanism mechanism);

struct ClientSecurity {
  SecurityProtocol protocol = SecurityProtocol::kPlaintext;
  SaslMechanism mechanism = SaslMechanism::kPlain;  // meaningful with a SASL protocol only
  std::string username;
  std::string password;     // a secret: never put in a message
  std::string ca_location;  // empty: the system's default CAs
  std::string ca_pem;
  std::string certificate_location;
  std::string certificate_pem;
  std::string key_location;
  std::string key_pem;       // a secret
  std::string key_password;  // a secret
  bool verify_certificate = true;
  bool verify_hostname = true;

  bool tls() const {
    return protocol == SecurityProtocol::kSsl || protocol == SecurityProtocol::kSaslSsl;
  }
  bool sasl() const {
    return protocol == SecurityProtocol::kSaslPlaintext || protocol == SecurityProtocol::kSaslSsl;
  }
};

// The settings, or an error whose message starts with the key it concerns and says why
// ("sasl.mechanism: GSSAPI (Kerberos) is not supported by kfaild's own protocol client ...").
// A SASL protocol needs sasl.mechanism (librdkafka would take GSSAPI), sasl.username and
// sasl.password. Keys of librdkafka that the own client cannot honour (a PKCS#12 keystore, an
// OpenSSL engine, OAUTHBEARER's settings) are errors too, so that it never connects otherwise
// than librdkafka does.
Result<ClientSecurity> clientSecurity(const std::map<std::string, std::string>& client);

}  // namespace kfaild::kafka
