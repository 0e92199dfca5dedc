#pragma once

// Whether kfaild's clients can reach and authenticate to a cluster, asked once at start with a
// bounded metadata request: a bad password, a CA that did not sign the brokers' certificates or a
// missing SASL mechanism is the configuration's mistake and stops kfaild; a cluster that does not
// answer is not, since kfaild probes clusters that may be down.

#include <map>
#include <string>

namespace kfaild::kafka {

struct AccessCheck {
  enum class Outcome {
    kAnswered,     // a broker answered the metadata request
    kUnreachable,  // no broker answered, none refused: the cluster may be down
    kRefused,      // authentication or TLS failed, or the settings cannot be used
  };
  Outcome outcome = Outcome::kAnswered;
  std::string key;  // kRefused: the client property at fault ("sasl.password", "ssl.ca.location")
  std::string reason;  // librdkafka's or OpenSSL's words, one line, never a secret
};

// Blocks up to `timeout_ms` (less when every broker refused the connection outright). The
// classification of librdkafka's error into a key is refusedKey(). Thread-safe (its own client).
AccessCheck checkClusterAccess(const std::string& bootstrap,
                               const std::map<std::string, std::string>& client, int timeout_ms);

// The client property a librdkafka authentication (`ssl` false: RD_KAFKA_RESP_ERR__AUTHENTICATION)
// or TLS (`ssl` true: RD_KAFKA_RESP_ERR__SSL) failure points at, from its reason. Pure.
std::string refusedKey(bool ssl, const std::string& reason);

}  // namespace kfaild::kafka
