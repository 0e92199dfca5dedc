#pragma once

// The KRaft quorum as the active controller describes it (DescribeQuorum, API key 55, for the
// metadata log "__cluster_metadata" partition 0): who leads it, in which epoch, how far each
// voter and observer has replicated. In KRaft the controller id of a Metadata answer is a random
// live broker; this is the only client-side view of the active controller.
//
// librdkafka has no DescribeQuorum, so this is a minimal Kafka protocol client of its own, one
// short-lived connection per describe, secured as the cluster's librdkafka clients are: the same
// `clusters[].client` properties give PLAINTEXT, SSL (OpenSSL, the CA of ssl.ca.location, host
// name verification, a client certificate), SASL_PLAINTEXT or SASL_SSL with PLAIN, SCRAM-SHA-256
// or SCRAM-SHA-512 (server/kafka/security.h, tls.h, sasl.h). A broker forwards the request to the
// active controller, as `kafka-metadata-quorum.sh --bootstrap-server` relies on.
//
// The wire format lives in pure functions (bytes in, bytes or a typed answer out) so it can be
// tested without a socket. Encoders return a whole frame (4-byte size prefix included); decoders
// take a response without its size prefix, exactly as it follows the prefix on the wire.
//
// Errors: Error{errc::admin_failed, ...} with the broker's own error name and message (or the
// socket's strerror, or what the decoder found malformed) kept in the message.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/kafka/cluster_types.h"
#include "server/kafka/security.h"

namespace kfaild::kafka {

inline constexpr std::int16_t kApiVersionsKey = 18;
inline constexpr std::int16_t kDescribeQuorumKey = 55;
// The newest DescribeQuorum version the decoder reads (v2: Kafka 3.9 and later).
inline constexpr std::int16_t kDescribeQuorumMaxVersion = 2;
inline constexpr std::string_view kClusterMetadataTopic = "__cluster_metadata";

struct ApiVersionRange {
  std::int16_t min = 0;
  std::int16_t max = -1;
};

// ApiVersions v0 (request header v1, empty body). Every broker answers it in the v0 format, also
// when it supports newer versions only (it then sets UNSUPPORTED_VERSION and still lists its APIs).
std::vector<std::uint8_t> encodeApiVersionsRequest(std::int32_t correlation_id,
                                                   std::string_view client_id);

// The versions the broker supports for `api_key`; nullopt when it does not support the API.
Result<std::optional<ApiVersionRange>> decodeApiVersionsResponse(
    std::span<const std::uint8_t> response, std::int32_t correlation_id, std::int16_t api_key);

// The newest version both sides speak, nullopt when there is none.
std::optional<std::int16_t> pickDescribeQuorumVersion(ApiVersionRange broker);

// DescribeQuorum (flexible in every version: request header v2) for __cluster_metadata-0.
// `version` must be between 0 and kDescribeQuorumMaxVersion.
std::vector<std::uint8_t> encodeDescribeQuorumRequest(std::int16_t version,
                                                      std::int32_t correlation_id,
                                                      std::string_view client_id);

// Decodes a DescribeQuorum response of `version` (response header v1). A top-level or partition
// error, a missing __cluster_metadata-0, a wrong correlation id, and a truncated or malformed
// response are errors.
Result<QuorumInfo> decodeDescribeQuorumResponse(std::span<const std::uint8_t> response,
                                                std::int16_t version, std::int32_t correlation_id);

// DescribeConfigs (API key 32) of a node's own configuration (resource type BROKER), in its only
// flexible version, 4 (Kafka 2.8 and later; every KRaft controller answers it on its listener).
inline constexpr std::int16_t kDescribeConfigsKey = 32;
inline constexpr std::int16_t kDescribeConfigsVersion = 4;

std::vector<std::uint8_t> encodeDescribeNodeConfigsRequest(std::int32_t correlation_id,
                                                           std::string_view client_id,
                                                           std::int32_t node,
                                                           const std::vector<std::string>& keys);
// The values of the answer's one resource; a top-level or resource error, a wrong correlation id
// and a malformed answer are errors.
Result<std::map<std::string, NodeConfigValue>> decodeDescribeConfigsResponse(
    std::span<const std::uint8_t> response, std::int32_t correlation_id);

// FindCoordinator (API key 10) in version 4 (Kafka 3.0 and later; flexible: request header v2):
// which broker coordinates a consumer group (key type 0) or a transactional id (key type 1).
inline constexpr std::int16_t kFindCoordinatorKey = 10;
inline constexpr std::int16_t kFindCoordinatorVersion = 4;
enum class CoordinatorType : std::int8_t { kGroup = 0, kTransaction = 1 };

struct Coordinator {
  std::int32_t node = -1;
  std::string host;
  std::int32_t port = 0;
};

// The internal topic whose partition leaders are the coordinators: "__consumer_offsets" (groups)
// or "__transaction_state" (transactional ids).
const char* coordinatorTopic(CoordinatorType type);
// The partition of that topic whose leader coordinates `key`, as the broker computes it:
// Utils.abs(key.hashCode()) % partitions, the hash Java's String.hashCode over the key's UTF-16
// code units (the key given as UTF-8; an invalid byte counts as U+FFFD). Pure.
std::int32_t coordinatorPartition(std::string_view key, std::int32_t partitions);

std::vector<std::uint8_t> encodeFindCoordinatorRequest(std::int32_t correlation_id,
                                                       std::string_view client_id,
                                                       CoordinatorType type, std::string_view key);
// The coordinator of the answer's one key; a key error (COORDINATOR_NOT_AVAILABLE while the
// coordinator moves, ...), a wrong correlation id and a malformed answer are errors.
Result<Coordinator> decodeFindCoordinatorResponse(std::span<const std::uint8_t> response,
                                                  std::int32_t correlation_id);

class TlsContext;

// How the client reaches a broker, made once from the cluster's client properties: nullopt
// security with the reason (the key first) when they cannot be used, else the TLS context (for
// SSL and SASL_SSL, with the CA, certificate and key read) and the SASL credentials.
struct QuorumTransport {
  std::optional<ClientSecurity> security;
  std::shared_ptr<const TlsContext> tls;
  std::string problem;
};
QuorumTransport quorumTransport(const std::map<std::string, std::string>& client);

struct QuorumClientOptions {
  std::string bootstrap;  // "host:port,host:port" (an optional "PLAINTEXT://" is accepted)
  // The cluster's librdkafka properties (clusters[].client): security.protocol, sasl.*, ssl.*.
  // Settings it cannot use make every call fail with the reason (quorumClientProblem says it
  // first).
  std::map<std::string, std::string> properties;
  std::string client_id = "kfaild";
  int timeout_ms = 2000;  // per broker tried: connect, ApiVersions and DescribeQuorum together
};

struct BootstrapServer {
  std::string host;
  std::string port;
};

// The host:port entries of a comma-separated bootstrap list (a "scheme://" prefix and the
// brackets of an IPv6 address removed). `error` (may be null) is set to why the list has no
// usable entry, and cleared when it has one.
std::vector<BootstrapServer> bootstrapServers(std::string_view bootstrap, std::string* error);

// Whether any of `servers` accepts a TCP connection, tried in turn within timeout_ms in all (no
// TLS, no request: a refused or unanswered connect is what it tells apart). Ok at the first that
// accepts; otherwise an error naming each server and its socket error. Returns within ~100 ms of
// `cancel` (may be null) turning true.
Status anyServerAccepts(const std::vector<BootstrapServer>& servers, int timeout_ms,
                        const std::atomic<bool>* cancel);

// Asks the bootstrap brokers in turn, starting with the one that answered last, until one
// answers. Blocks up to timeout_ms per broker tried; with `cancel`, returns within ~100 ms of it
// turning true (an error saying so). Not thread-safe: one caller at a time.
class QuorumDescriber {
 public:
  explicit QuorumDescriber(QuorumClientOptions options);

  [[nodiscard]] Result<QuorumInfo> describe() { return describe(nullptr); }
  [[nodiscard]] Result<QuorumInfo> describe(const std::atomic<bool>& cancel) {
    return describe(&cancel);
  }

  // DescribeQuorum asked of one node directly (a voter on its controller listener, which
  // DescribeQuorum v2 names), giving up after timeout_ms. Only the leader answers it: any other
  // voter's NOT_LEADER_OR_FOLLOWER is an error like a refused connection.
  [[nodiscard]] Result<QuorumInfo> describeAt(const std::string& host, std::uint16_t port,
                                              int timeout_ms, const std::atomic<bool>* cancel);

  // FindCoordinator v4 through the bootstrap brokers, in turn from the one that answered last,
  // until one answers with a coordinator; blocks up to timeout_ms per broker tried.
  [[nodiscard]] Result<Coordinator> findCoordinator(CoordinatorType type, const std::string& key,
                                                    const std::atomic<bool>* cancel = nullptr);

  // `keys` of the active controller's own configuration: the quorum is described, then the
  // leader is asked on the first listener DescribeQuorum v2 lists for it. Settings that only a
  // controller applies (broker.session.timeout.ms: when a silent broker is fenced) are read
  // where they are in force, not from a broker's file, which may well differ. Needs a leader and
  // DescribeQuorum v2 (Kafka 3.9 and later); blocks up to timeout_ms per connection.
  [[nodiscard]] Result<std::map<std::string, NodeConfigValue>> describeControllerConfig(
      const std::vector<std::string>& keys);

 private:
  using Server = BootstrapServer;

  Result<QuorumInfo> describe(const std::atomic<bool>* cancel);
  Result<QuorumInfo> describeOn(const Server& server, int timeout_ms,
                                const std::atomic<bool>* cancel);
  Result<Coordinator> findCoordinatorOn(const Server& server, CoordinatorType type,
                                        const std::string& key, const std::atomic<bool>* cancel);
  std::int32_t nextCorrelationId();
  std::function<std::int32_t()> nextId();

  QuorumClientOptions options_;
  QuorumTransport transport_;
  std::vector<Server> servers_;
  std::string bootstrap_error_;  // why `bootstrap` has no usable server, empty when it has
  std::size_t preferred_ = 0;    // index into servers_ of the last broker that answered
  std::int32_t next_correlation_id_ = 1;
};

// Why the quorum client cannot describe a cluster with these client properties ("" when it can):
// a SASL mechanism other than PLAIN and SCRAM (GSSAPI, OAUTHBEARER), a SASL protocol without its
// mechanism or credentials, a PKCS#12 keystore or an OpenSSL engine; the key and the reason. Pure:
// files named by the properties are read when a QuorumDescriber is made.
std::string quorumClientProblem(const std::map<std::string, std::string>& client);

// One describe with a fresh QuorumDescriber.
[[nodiscard]] Result<QuorumInfo> describeQuorum(const QuorumClientOptions& options);

}  // namespace kfaild::kafka
