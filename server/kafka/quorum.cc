#include "server/kafka/quorum.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "server/common/tls_verify.h"
#include "server/kafka/errc.h"
#include "server/kafka/sasl.h"
#include "server/kafka/tls.h"
#include "server/kafka/wire.h"

namespace kfaild::kafka {
namespace {

// A DescribeQuorum answer lists a handful of replicas; anything near this is not Kafka talking.
constexpr std::int32_t kMaxResponseBytes = 4 * 1024 * 1024;
// How often a blocked socket operation looks at its cancel flag.
constexpr int kCancelCheckMs = 100;
constexpr std::int16_t kUnsupportedVersion = 35;

using wire::brokerError;
using wire::checkCorrelation;
using wire::FrameReader;
using wire::FrameWriter;
using wire::malformed;
using wire::requestHeader;

QuorumReplica readReplica(FrameReader& in, std::int16_t version) {
  QuorumReplica r;
  r.replica_id = in.int32("ReplicaId");
  if (version >= 2) in.skip(16, "ReplicaDirectoryId");
  r.log_end_offset = in.int64("LogEndOffset");
  if (version >= 1) {
    r.last_fetch_timestamp_ms = in.int64("LastFetchTimestamp");
    r.last_caught_up_timestamp_ms = in.int64("LastCaughtUpTimestamp");
  }
  in.skipTaggedFields("ReplicaState tagged fields");
  return r;
}

std::vector<QuorumReplica> readReplicas(FrameReader& in, std::int16_t version, const char* what) {
  // ReplicaId + LogEndOffset + tagged fields at least.
  const auto n = in.compactArrayLength(what, 13);
  std::vector<QuorumReplica> out;
  for (std::size_t i = 0; in.ok() && i < n; ++i) out.push_back(readReplica(in, version));
  return out;
}

std::map<std::int32_t, std::vector<QuorumEndpoint>> readNodes(FrameReader& in) {
  std::map<std::int32_t, std::vector<QuorumEndpoint>> out;
  const auto nodes = in.compactArrayLength("Nodes", 6);
  for (std::size_t i = 0; in.ok() && i < nodes; ++i) {
    const auto id = in.int32("NodeId");
    const auto listeners = in.compactArrayLength("Listeners", 6);
    std::vector<QuorumEndpoint> endpoints;
    for (std::size_t j = 0; in.ok() && j < listeners; ++j) {
      QuorumEndpoint e;
      e.listener = in.compactString("Listener Name");
      e.host = in.compactString("Listener Host");
      e.port = in.uint16("Listener Port");
      in.skipTaggedFields("Listener tagged fields");
      endpoints.push_back(std::move(e));
    }
    in.skipTaggedFields("Node tagged fields");
    if (in.ok()) out[id] = std::move(endpoints);
  }
  return out;
}

using Clock = std::chrono::steady_clock;

int millisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

std::string systemError(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

// One TCP connection with a deadline on every operation, given up early when `cancel` (may be
// null) turns true. Owns its descriptor.
class Connection {
 public:
  explicit Connection(const std::atomic<bool>* cancel) : cancel_(cancel) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }

  // On failure returns why, in words ("connect: Connection refused").
  std::optional<std::string> open(const std::string& host, const std::string& port,
                                  Clock::time_point deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      return std::string("resolve: ") + ::gai_strerror(rc);
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
    std::string last = "resolve: no address";
    for (auto* a = addresses.get(); a != nullptr; a = a->ai_next) {
      const int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) {
        last = systemError("socket", errno);
        continue;
      }
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
        return std::nullopt;
      }
      if (errno != EINPROGRESS) {
        last = systemError("connect", errno);
        ::close(fd);
        continue;
      }
      if (auto waited = wait(fd, POLLOUT, deadline, "connect", cancel_)) {
        last = *waited;
        ::close(fd);
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof so_error;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
      if (so_error != 0) {
        last = systemError("connect", so_error);
        ::close(fd);
        continue;
      }
      fd_ = fd;
      return std::nullopt;
    }
    return last;
  }

  // Sends one request frame and reads one response frame (without its size prefix).
  Result<std::vector<std::uint8_t>> roundTrip(const std::vector<std::uint8_t>& request,
                                              Clock::time_point deadline) {
    if (auto unsent = sendAll(request.data(), request.size(), deadline)) return failure(*unsent);
    std::uint8_t prefix[4];
    if (auto got = receive(prefix, sizeof prefix, deadline)) return failure(*got);
    const std::int32_t size = static_cast<std::int32_t>(
        (std::uint32_t{prefix[0]} << 24) | (std::uint32_t{prefix[1]} << 16) |
        (std::uint32_t{prefix[2]} << 8) | std::uint32_t{prefix[3]});
    if (size < 4 || size > kMaxResponseBytes) {
      return failure("response size " + std::to_string(size) + " is not a Kafka answer");
    }
    std::vector<std::uint8_t> body(static_cast<std::size_t>(size));
    if (auto got = receive(body.data(), body.size(), deadline)) return failure(*got);
    return body;
  }

  static std::optional<std::string> wait(int fd, short events, Clock::time_point deadline,
                                         const char* what, const std::atomic<bool>* cancel) {
    for (;;) {
      if (cancel != nullptr && cancel->load()) return std::string(what) + ": cancelled";
      const int left = millisLeft(deadline);
      if (left == 0) return std::string(what) + ": timed out";
      pollfd p{fd, events, 0};
      const int rc = ::poll(&p, 1, cancel != nullptr ? std::min(left, kCancelCheckMs) : left);
      if (rc > 0) return std::nullopt;
      if (rc < 0 && errno != EINTR) return systemError(std::string(what) + " (poll)", errno);
    }
  }

  // TLS over the connected socket: the handshake, with the peer's certificate checked against
  // the context's CAs and, when the context says so, against `host` (a name or an IP literal).
  std::optional<std::string> startTls(const TlsContext& tls, const std::string& host,
                                      Clock::time_point deadline) {
    ssl_ = SSL_new(tls.get());
    if (ssl_ == nullptr || !attachSocket(ssl_, fd_))
      return "TLS: " + openSslErrors("cannot make a session");
    if (auto why = common::expectPeerHost(ssl_, host, tls.verifyHostname())) return "TLS: " + *why;
    auto done = tlsStep([this] { return SSL_connect(ssl_); }, "TLS handshake", deadline);
    if (const auto* why = std::get_if<std::string>(&done)) return *why;
    return std::nullopt;
  }

 private:
  static Error failure(const std::string& why) { return kafkaError(errc::admin_failed, why); }

  // One SSL_connect, SSL_read or SSL_write (`io`), repeated while OpenSSL waits for the socket:
  // what it returned (> 0), or why it failed.
  std::variant<int, std::string> tlsStep(const std::function<int()>& io, const char* what,
                                         Clock::time_point deadline) {
    for (;;) {
      ERR_clear_error();
      errno = 0;
      const int n = io();
      if (n > 0) return n;
      const int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_ZERO_RETURN)
        return std::string(what) + ": the broker closed the connection";
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
        return std::string(what) + ": " + tlsFailure(ssl_, e);
      if (auto waited =
              wait(fd_, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, what, cancel_)) {
        return *waited;
      }
    }
  }

  std::optional<std::string> sendAll(const std::uint8_t* data, std::size_t size,
                                     Clock::time_point deadline) {
    std::size_t sent = 0;
    while (sent < size) {
      if (ssl_ != nullptr) {
        auto n =
            tlsStep([&] { return SSL_write(ssl_, data + sent, static_cast<int>(size - sent)); },
                    "send", deadline);
        if (const auto* why = std::get_if<std::string>(&n)) return *why;
        sent += static_cast<std::size_t>(std::get<int>(n));
        continue;
      }
      const auto n = ::send(fd_, data + sent, size - sent, MSG_NOSIGNAL);
      if (n >= 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return systemError("send", errno);
      if (auto waited = wait(fd_, POLLOUT, deadline, "send", cancel_)) return waited;
    }
    return std::nullopt;
  }

  std::optional<std::string> receive(std::uint8_t* into, std::size_t size,
                                     Clock::time_point deadline) {
    std::size_t got = 0;
    while (got < size) {
      if (ssl_ != nullptr) {
        auto n = tlsStep([&] { return SSL_read(ssl_, into + got, static_cast<int>(size - got)); },
                         "receive", deadline);
        if (const auto* why = std::get_if<std::string>(&n)) return *why;
        got += static_cast<std::size_t>(std::get<int>(n));
        continue;
      }
      const auto n = ::recv(fd_, into + got, size - got, 0);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
        continue;
      }
      if (n == 0) return std::string("receive: the broker closed the connection");
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return systemError("receive", errno);
      if (auto waited = wait(fd_, POLLIN, deadline, "receive", cancel_)) return waited;
    }
    return std::nullopt;
  }

  const std::atomic<bool>* cancel_;
  int fd_ = -1;
  SSL* ssl_ = nullptr;  // owned; null on a plain connection
};

// SaslHandshake, then SaslAuthenticate with each message of the mechanism's exchange.
Status authenticate(Connection& connection, const ClientSecurity& security,
                    std::string_view client_id, const std::function<std::int32_t()>& next_id,
                    Clock::time_point deadline) {
  SaslExchange exchange(security, std::string(client_id), next_id);
  auto frame = exchange.begin();
  for (;;) {
    auto answer = connection.roundTrip(frame, deadline);
    if (!answer) return answer.error();
    auto step = exchange.answer(*answer);
    if (!step) return step.error();
    if (step->done) return okStatus();
    frame = std::move(step->frame);
  }
}

// Connects, then TLS and SASL as the cluster's client properties say.
Status connectTo(Connection& connection, const QuorumTransport& transport, const std::string& host,
                 const std::string& port, Clock::time_point deadline,
                 const std::function<std::int32_t()>& next_id, std::string_view client_id) {
  if (!transport.security) return kafkaError(errc::invalid_property, transport.problem);
  if (auto why = connection.open(host, port, deadline)) return kafkaError(errc::admin_failed, *why);
  if (transport.tls) {
    if (auto why = connection.startTls(*transport.tls, host, deadline))
      return kafkaError(errc::admin_failed, *why);
  }
  if (transport.security->sasl())
    return authenticate(connection, *transport.security, client_id, next_id, deadline);
  return okStatus();
}

// Opens `connection` and checks with ApiVersions that the node answers `api_key` in `version`;
// `why_not` completes "does not answer ..." for the error.
Status openSpeaking(Connection& connection, const QuorumTransport& transport,
                    const std::string& host, const std::string& port, Clock::time_point deadline,
                    const std::function<std::int32_t()>& next_id, std::string_view client_id,
                    std::int16_t api_key, std::int16_t version, const std::string& why_not) {
  if (auto s = connectTo(connection, transport, host, port, deadline, next_id, client_id); !s)
    return s;
  const auto versions_id = next_id();
  auto versions_answer =
      connection.roundTrip(encodeApiVersionsRequest(versions_id, client_id), deadline);
  if (!versions_answer) return versions_answer.error();
  auto range = decodeApiVersionsResponse(*versions_answer, versions_id, api_key);
  if (!range) return range.error();
  if (!*range || (*range)->max < version || (*range)->min > version) {
    return kafkaError(errc::admin_failed, "does not answer " + why_not);
  }
  return okStatus();
}

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

}  // namespace

std::vector<std::uint8_t> encodeApiVersionsRequest(std::int32_t correlation_id,
                                                   std::string_view client_id) {
  FrameWriter out;
  requestHeader(out, kApiVersionsKey, 0, correlation_id, client_id);
  return std::move(out).finish();
}

Result<std::optional<ApiVersionRange>> decodeApiVersionsResponse(
    std::span<const std::uint8_t> response, std::int32_t correlation_id, std::int16_t api_key) {
  const std::string what = "ApiVersions";
  FrameReader in(response);
  if (auto status = checkCorrelation(in, correlation_id, what); !status) return status.error();
  const auto error = in.int16("ErrorCode");
  // int16 key + min + max per element; the v0 array has an INT32 count.
  const auto count = in.int32("ApiKeys count");
  if (in.ok() && (count < 0 || static_cast<std::size_t>(count) > in.remaining() / 6)) {
    in.fail("ApiKeys: " + std::to_string(count) + " elements in " + std::to_string(in.remaining()) +
            " bytes");
  }
  std::optional<ApiVersionRange> found;
  for (std::int32_t i = 0; in.ok() && i < count; ++i) {
    const auto key = in.int16("ApiKey");
    ApiVersionRange range;
    range.min = in.int16("MinVersion");
    range.max = in.int16("MaxVersion");
    if (in.ok() && key == api_key) found = range;
  }
  if (!in.ok()) return malformed(what, in);
  // UNSUPPORTED_VERSION still carries the broker's list; any other error does not.
  if (error != 0 && error != kUnsupportedVersion) return brokerError(what, error, std::nullopt);
  return found;
}

std::optional<std::int16_t> pickDescribeQuorumVersion(ApiVersionRange broker) {
  const auto version = std::min(broker.max, kDescribeQuorumMaxVersion);
  if (version < 0 || version < broker.min) return std::nullopt;
  return version;
}

std::vector<std::uint8_t> encodeDescribeQuorumRequest(std::int16_t version,
                                                      std::int32_t correlation_id,
                                                      std::string_view client_id) {
  FrameWriter out;
  requestHeader(out, kDescribeQuorumKey, version, correlation_id, client_id);
  out.noTaggedFields();  // request header v2
  out.compactArrayLength(1);
  out.compactString(kClusterMetadataTopic);
  out.compactArrayLength(1);
  out.int32(0);
  out.noTaggedFields();  // partition
  out.noTaggedFields();  // topic
  out.noTaggedFields();  // request
  return std::move(out).finish();
}

Result<QuorumInfo> decodeDescribeQuorumResponse(std::span<const std::uint8_t> response,
                                                std::int16_t version, std::int32_t correlation_id) {
  const std::string what = "DescribeQuorum v" + std::to_string(version);
  if (version < 0 || version > kDescribeQuorumMaxVersion) {
    return kafkaError(errc::admin_failed, what + ": version not supported by this decoder");
  }
  FrameReader in(response);
  if (auto status = checkCorrelation(in, correlation_id, what); !status) return status.error();
  in.skipTaggedFields("response header tagged fields");
  const auto error = in.int16("ErrorCode");
  std::optional<std::string> message;
  if (version >= 2) message = in.compactNullableString("ErrorMessage");
  if (!in.ok()) return malformed(what, in);
  if (error != 0) return brokerError(what, error, message);

  std::optional<QuorumInfo> quorum;
  std::optional<Error> partition_error;
  // TopicName + Partitions + tagged fields at least.
  const auto topics = in.compactArrayLength("Topics", 3);
  for (std::size_t t = 0; in.ok() && t < topics; ++t) {
    const auto topic = in.compactString("TopicName");
    const auto partitions = in.compactArrayLength("Partitions", 20);
    for (std::size_t p = 0; in.ok() && p < partitions; ++p) {
      QuorumInfo info;
      const auto index = in.int32("PartitionIndex");
      const auto partition_code = in.int16("ErrorCode");
      std::optional<std::string> partition_message;
      if (version >= 2) partition_message = in.compactNullableString("ErrorMessage");
      info.leader_id = in.int32("LeaderId");
      info.leader_epoch = in.int32("LeaderEpoch");
      info.high_watermark = in.int64("HighWatermark");
      info.voters = readReplicas(in, version, "CurrentVoters");
      info.observers = readReplicas(in, version, "Observers");
      in.skipTaggedFields("PartitionData tagged fields");
      if (!in.ok() || topic != kClusterMetadataTopic || index != 0) continue;
      if (partition_code != 0) {
        partition_error = brokerError(what + " " + topic + "-0", partition_code, partition_message);
      } else {
        info.api_version = version;
        quorum = std::move(info);
      }
    }
    in.skipTaggedFields("TopicData tagged fields");
  }
  std::map<std::int32_t, std::vector<QuorumEndpoint>> endpoints;
  if (version >= 2) endpoints = readNodes(in);
  in.skipTaggedFields("response tagged fields");
  if (in.ok() && in.remaining() != 0) {
    in.fail(std::to_string(in.remaining()) + " bytes after the end of the response");
  }
  if (!in.ok()) return malformed(what, in);
  if (partition_error) return *partition_error;
  if (!quorum) {
    return kafkaError(errc::admin_failed,
                      what + ": the answer has no " + std::string(kClusterMetadataTopic) + "-0");
  }
  quorum->endpoints = std::move(endpoints);
  return std::move(*quorum);
}

std::vector<std::uint8_t> encodeDescribeNodeConfigsRequest(std::int32_t correlation_id,
                                                           std::string_view client_id,
                                                           std::int32_t node,
                                                           const std::vector<std::string>& keys) {
  constexpr std::int8_t kBrokerResource = 4;
  FrameWriter out;
  requestHeader(out, kDescribeConfigsKey, kDescribeConfigsVersion, correlation_id, client_id);
  out.noTaggedFields();  // request header v2
  out.compactArrayLength(1);
  out.int8(kBrokerResource);
  out.compactString(std::to_string(node));
  out.compactArrayLength(keys.size());
  for (const auto& key : keys) out.compactString(key);
  out.noTaggedFields();  // resource
  out.int8(0);           // IncludeSynonyms
  out.int8(0);           // IncludeDocumentation
  out.noTaggedFields();  // request
  return std::move(out).finish();
}

Result<std::map<std::string, NodeConfigValue>> decodeDescribeConfigsResponse(
    std::span<const std::uint8_t> response, std::int32_t correlation_id) {
  const std::string what = "DescribeConfigs v" + std::to_string(kDescribeConfigsVersion);
  FrameReader in(response);
  if (auto status = checkCorrelation(in, correlation_id, what); !status) return status.error();
  in.skipTaggedFields("response header tagged fields");
  in.int32("ThrottleTimeMs");
  std::optional<Error> resource_error;
  std::optional<std::map<std::string, NodeConfigValue>> values;
  // ErrorCode + ErrorMessage + ResourceType + ResourceName + Configs + tagged fields at least.
  const auto results = in.compactArrayLength("Results", 7);
  for (std::size_t r = 0; in.ok() && r < results; ++r) {
    const auto code = in.int16("ErrorCode");
    const auto message = in.compactNullableString("ErrorMessage");
    in.int8("ResourceType");
    const auto name = in.compactString("ResourceName");
    std::map<std::string, NodeConfigValue> entries;
    // Name + Value + ReadOnly + ConfigSource + IsSensitive + Synonyms + ConfigType +
    // Documentation + tagged fields at least.
    const auto configs = in.compactArrayLength("Configs", 9);
    for (std::size_t c = 0; in.ok() && c < configs; ++c) {
      const auto key = in.compactString("Config Name");
      NodeConfigValue value;
      value.value = in.compactNullableString("Config Value");
      in.int8("ReadOnly");
      value.source = in.int8("ConfigSource");
      in.int8("IsSensitive");
      const auto synonyms = in.compactArrayLength("Synonyms", 4);
      for (std::size_t y = 0; in.ok() && y < synonyms; ++y) {
        in.compactString("Synonym Name");
        in.compactNullableString("Synonym Value");
        in.int8("Synonym Source");
        in.skipTaggedFields("Synonym tagged fields");
      }
      in.int8("ConfigType");
      in.compactNullableString("Documentation");
      in.skipTaggedFields("Config tagged fields");
      if (in.ok()) entries[key] = std::move(value);
    }
    in.skipTaggedFields("Result tagged fields");
    if (!in.ok()) break;
    if (code != 0) {
      resource_error = brokerError(what + " of node " + name, code, message);
    } else {
      values = std::move(entries);
    }
  }
  in.skipTaggedFields("response tagged fields");
  if (in.ok() && in.remaining() != 0) {
    in.fail(std::to_string(in.remaining()) + " bytes after the end of the response");
  }
  if (!in.ok()) return malformed(what, in);
  if (resource_error) return *resource_error;
  if (!values) return kafkaError(errc::admin_failed, what + ": the answer has no resource");
  return std::move(*values);
}

QuorumTransport quorumTransport(const std::map<std::string, std::string>& client) {
  QuorumTransport transport;
  auto security = clientSecurity(client);
  if (!security) {
    transport.problem = security.error().message;
    return transport;
  }
  if (security->tls()) {
    auto tls = TlsContext::create(*security);
    if (!tls) {
      transport.problem = tls.error().message;
      return transport;
    }
    transport.tls = std::move(*tls);
  }
  transport.security = std::move(*security);
  return transport;
}

std::vector<BootstrapServer> bootstrapServers(std::string_view bootstrap, std::string* error) {
  std::vector<BootstrapServer> servers;
  std::string problem;
  std::string_view rest = bootstrap;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    auto entry = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (entry.empty()) continue;
    if (const auto scheme = entry.find("://"); scheme != std::string::npos) {
      entry = entry.substr(scheme + 3);
    }
    const auto colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) {
      problem = "bootstrap server \"" + entry + "\" is not host:port";
      continue;
    }
    BootstrapServer server{entry.substr(0, colon), entry.substr(colon + 1)};
    if (server.host.size() > 2 && server.host.front() == '[' && server.host.back() == ']') {
      server.host = server.host.substr(1, server.host.size() - 2);
    }
    servers.push_back(std::move(server));
  }
  if (error != nullptr) {
    *error = !servers.empty()  ? std::string()
             : problem.empty() ? "no bootstrap server given"
                               : problem;
  }
  return servers;
}

Status anyServerAccepts(const std::vector<BootstrapServer>& servers, int timeout_ms,
                        const std::atomic<bool>* cancel) {
  if (servers.empty()) return kafkaError(errc::admin_failed, "no bootstrap server given");
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string failures;
  for (const auto& server : servers) {
    if (cancel != nullptr && cancel->load()) break;
    Connection connection(cancel);
    const auto why = connection.open(server.host, server.port, deadline);
    if (!why) return okStatus();
    failures += (failures.empty() ? "" : "; ") + server.host + ":" + server.port + ": " + *why;
  }
  return kafkaError(errc::admin_failed,
                    "no bootstrap server accepts a connection (" +
                        (failures.empty() ? std::string("cancelled") : failures) + ")");
}

QuorumDescriber::QuorumDescriber(QuorumClientOptions options)
    : options_(std::move(options)), transport_(quorumTransport(options_.properties)) {
  servers_ = bootstrapServers(options_.bootstrap, &bootstrap_error_);
}

Result<QuorumInfo> QuorumDescriber::describe(const std::atomic<bool>* cancel) {
  if (servers_.empty()) {
    return kafkaError(errc::admin_failed, "describe quorum: " + bootstrap_error_);
  }
  std::string failures;
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (cancel != nullptr && cancel->load()) break;
    const auto index = (preferred_ + i) % servers_.size();
    auto quorum = describeOn(servers_[index], options_.timeout_ms, cancel);
    if (quorum) {
      preferred_ = index;
      return quorum;
    }
    failures += (failures.empty() ? "" : "; ") + quorum.error().message;
  }
  return kafkaError(errc::admin_failed,
                    "describe quorum: " + (failures.empty() ? std::string("cancelled") : failures));
}

Result<QuorumInfo> QuorumDescriber::describeAt(const std::string& host, std::uint16_t port,
                                               int timeout_ms, const std::atomic<bool>* cancel) {
  return describeOn(Server{host, std::to_string(port)}, timeout_ms, cancel);
}

Result<QuorumInfo> QuorumDescriber::describeOn(const Server& server, int timeout_ms,
                                               const std::atomic<bool>* cancel) {
  const auto name = server.host + ":" + server.port;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto fail = [&name](const Error& e) {
    return kafkaError(errc::admin_failed, name + ": " + e.message);
  };
  Connection connection(cancel);
  if (auto s = connectTo(connection, transport_, server.host, server.port, deadline, nextId(),
                         options_.client_id);
      !s) {
    return fail(s.error());
  }

  const auto versions_id = nextCorrelationId();
  auto versions_answer =
      connection.roundTrip(encodeApiVersionsRequest(versions_id, options_.client_id), deadline);
  if (!versions_answer) return fail(versions_answer.error());
  auto range = decodeApiVersionsResponse(*versions_answer, versions_id, kDescribeQuorumKey);
  if (!range) return fail(range.error());
  if (!*range)
    return kafkaError(errc::admin_failed, name + ": the broker has no DescribeQuorum (not KRaft?)");
  const auto version = pickDescribeQuorumVersion(**range);
  if (!version) {
    return kafkaError(errc::admin_failed, name + ": no common DescribeQuorum version (broker " +
                                              std::to_string((*range)->min) + "-" +
                                              std::to_string((*range)->max) + ", kfaild 0-" +
                                              std::to_string(kDescribeQuorumMaxVersion) + ")");
  }

  const auto quorum_id = nextCorrelationId();
  auto answer = connection.roundTrip(
      encodeDescribeQuorumRequest(*version, quorum_id, options_.client_id), deadline);
  if (!answer) return fail(answer.error());
  auto quorum = decodeDescribeQuorumResponse(*answer, *version, quorum_id);
  if (!quorum) return fail(quorum.error());
  quorum->answered_by = name;
  return quorum;
}

Result<std::map<std::string, NodeConfigValue>> QuorumDescriber::describeControllerConfig(
    const std::vector<std::string>& keys) {
  auto quorum = describe(nullptr);
  if (!quorum) return quorum.error();
  if (quorum->leader_id < 0) {
    return kafkaError(errc::admin_failed, "describe controller config: the quorum has no leader");
  }
  const auto found = quorum->endpoints.find(quorum->leader_id);
  if (found == quorum->endpoints.end() || found->second.empty()) {
    return kafkaError(errc::admin_failed, "describe controller config: DescribeQuorum v" +
                                              std::to_string(quorum->api_version) +
                                              " lists no listener of controller " +
                                              std::to_string(quorum->leader_id) +
                                              " (v2, Kafka 3.9 and later, does)");
  }
  const auto& endpoint = found->second.front();
  const auto name = endpoint.host + ":" + std::to_string(endpoint.port) + " (controller " +
                    std::to_string(quorum->leader_id) + ")";
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  auto fail = [&name](const Error& e) {
    return kafkaError(errc::admin_failed, name + ": " + e.message);
  };
  Connection connection(nullptr);
  if (auto s = openSpeaking(connection, transport_, endpoint.host, std::to_string(endpoint.port),
                            deadline, nextId(), options_.client_id, kDescribeConfigsKey,
                            kDescribeConfigsVersion,
                            "DescribeConfigs v" + std::to_string(kDescribeConfigsVersion));
      !s) {
    return fail(s.error());
  }
  const auto configs_id = nextCorrelationId();
  auto answer = connection.roundTrip(
      encodeDescribeNodeConfigsRequest(configs_id, options_.client_id, quorum->leader_id, keys),
      deadline);
  if (!answer) return fail(answer.error());
  auto values = decodeDescribeConfigsResponse(*answer, configs_id);
  if (!values) return fail(values.error());
  return values;
}

const char* coordinatorTopic(CoordinatorType type) {
  return type == CoordinatorType::kGroup ? "__consumer_offsets" : "__transaction_state";
}

std::int32_t coordinatorPartition(std::string_view key, std::int32_t partitions) {
  if (partitions <= 0) return -1;
  // Java's String.hashCode: h = 31 * h + unit, over UTF-16 code units, in 32-bit arithmetic.
  std::uint32_t h = 0;
  const auto unit = [&h](std::uint32_t u) { h = 31 * h + u; };
  for (std::size_t i = 0; i < key.size();) {
    const auto b = static_cast<unsigned char>(key[i]);
    std::uint32_t cp = 0xFFFD;
    std::size_t len = 1;
    if (b < 0x80) {
      cp = b;
    } else if ((b >> 5) == 0x6 || (b >> 4) == 0xE || (b >> 3) == 0x1E) {
      len = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : 4;
      cp = b & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
      bool valid = i + len <= key.size();
      for (std::size_t k = 1; valid && k < len; ++k) {
        const auto c = static_cast<unsigned char>(key[i + k]);
        valid = (c >> 6) == 0x2;
        cp = (cp << 6) | (c & 0x3F);
      }
      if (!valid) {
        cp = 0xFFFD;
        len = 1;
      }
    }
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      unit(0xD800 + (cp >> 10));
      unit(0xDC00 + (cp & 0x3FF));
    } else {
      unit(cp);
    }
  }
  // Kafka's Utils.abs: Integer.MIN_VALUE is 0, the rest their absolute value.
  const auto signed_hash = static_cast<std::int32_t>(h);
  const std::int64_t abs =
      signed_hash == INT32_MIN ? 0 : std::abs(static_cast<std::int64_t>(signed_hash));
  return static_cast<std::int32_t>(abs % partitions);
}

std::vector<std::uint8_t> encodeFindCoordinatorRequest(std::int32_t correlation_id,
                                                       std::string_view client_id,
                                                       CoordinatorType type, std::string_view key) {
  FrameWriter out;
  requestHeader(out, kFindCoordinatorKey, kFindCoordinatorVersion, correlation_id, client_id);
  out.noTaggedFields();  // request header v2
  out.int8(static_cast<std::int8_t>(type));
  out.compactArrayLength(1);
  out.compactString(key);
  out.noTaggedFields();
  return std::move(out).finish();
}

Result<Coordinator> decodeFindCoordinatorResponse(std::span<const std::uint8_t> response,
                                                  std::int32_t correlation_id) {
  const std::string what = "find coordinator";
  FrameReader in(response);
  if (auto s = checkCorrelation(in, correlation_id, what); !s) return s.error();
  in.skipTaggedFields("response header tagged fields");
  in.int32("ThrottleTimeMs");
  // Key + NodeId + Host + Port + ErrorCode + ErrorMessage + tagged fields at least.
  const auto n = in.compactArrayLength("Coordinators", 14);
  std::optional<Coordinator> found;
  std::optional<Error> key_error;
  for (std::size_t i = 0; in.ok() && i < n; ++i) {
    const auto key = in.compactString("Key");
    Coordinator c;
    c.node = in.int32("NodeId");
    c.host = in.compactString("Host");
    c.port = in.int32("Port");
    const auto code = in.int16("ErrorCode");
    const auto message = in.compactNullableString("ErrorMessage");
    in.skipTaggedFields("Coordinator tagged fields");
    if (!in.ok()) break;
    if (code != 0) {
      key_error = brokerError(what + " of " + key, code, message);
    } else {
      found = std::move(c);
    }
  }
  in.skipTaggedFields("response tagged fields");
  if (!in.ok()) return malformed(what, in);
  if (key_error) return *key_error;
  if (!found) return kafkaError(errc::admin_failed, what + ": the answer names no coordinator");
  return std::move(*found);
}

Result<Coordinator> QuorumDescriber::findCoordinator(CoordinatorType type, const std::string& key,
                                                     const std::atomic<bool>* cancel) {
  if (servers_.empty())
    return kafkaError(errc::admin_failed, "find coordinator: " + bootstrap_error_);
  std::string failures;
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (cancel != nullptr && cancel->load()) break;
    const auto index = (preferred_ + i) % servers_.size();
    auto found = findCoordinatorOn(servers_[index], type, key, cancel);
    if (found) {
      preferred_ = index;
      return found;
    }
    failures += (failures.empty() ? "" : "; ") + found.error().message;
  }
  return kafkaError(
      errc::admin_failed,
      "find coordinator: " + (failures.empty() ? std::string("cancelled") : failures));
}

Result<Coordinator> QuorumDescriber::findCoordinatorOn(const Server& server, CoordinatorType type,
                                                       const std::string& key,
                                                       const std::atomic<bool>* cancel) {
  const auto name = server.host + ":" + server.port;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  auto fail = [&name](const Error& e) {
    return kafkaError(errc::admin_failed, name + ": " + e.message);
  };
  Connection connection(cancel);
  if (auto s = openSpeaking(connection, transport_, server.host, server.port, deadline, nextId(),
                            options_.client_id, kFindCoordinatorKey, kFindCoordinatorVersion,
                            "FindCoordinator v" + std::to_string(kFindCoordinatorVersion) +
                                " (Kafka 3.0 and later do)");
      !s) {
    return fail(s.error());
  }
  const auto id = nextCorrelationId();
  auto answer = connection.roundTrip(
      encodeFindCoordinatorRequest(id, options_.client_id, type, key), deadline);
  if (!answer) return fail(answer.error());
  auto found = decodeFindCoordinatorResponse(*answer, id);
  if (!found) return fail(found.error());
  return found;
}

std::function<std::int32_t()> QuorumDescriber::nextId() {
  return [this] { return nextCorrelationId(); };
}

std::int32_t QuorumDescriber::nextCorrelationId() {
  if (next_correlation_id_ == std::numeric_limits<std::int32_t>::max()) next_correlation_id_ = 1;
  return next_correlation_id_++;
}

std::string quorumClientProblem(const std::map<std::string, std::string>& client) {
  auto security = clientSecurity(client);
  if (security) return {};
  return "kfaild's own protocol client cannot use clusters[].client: " + security.error().message;
}

Result<QuorumInfo> describeQuorum(const QuorumClientOptions& options) {
  QuorumDescriber describer(options);
  return describer.describe();
}

}  // namespace kfaild::kafka
