#include "server/kafka/quorum.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "server/kafka/errc.h"

namespace kfaild::kafka {
namespace {

// A DescribeQuorum answer lists a handful of replicas; anything near this is not Kafka talking.
constexpr std::int32_t kMaxResponseBytes = 4 * 1024 * 1024;
// How often a blocked socket operation looks at its cancel flag.
constexpr int kCancelCheckMs = 100;
constexpr std::int16_t kUnsupportedVersion = 35;

class FrameWriter {
 public:
  FrameWriter() { bytes_.resize(4); }  // the size prefix, filled in by finish()

  void int8(std::int8_t v) { bytes_.push_back(static_cast<std::uint8_t>(v)); }
  void int16(std::int16_t v) { bigEndian(static_cast<std::uint16_t>(v), 2); }
  void int32(std::int32_t v) { bigEndian(static_cast<std::uint32_t>(v), 4); }
  void uvarint(std::uint32_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<std::uint8_t>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<std::uint8_t>(v));
  }
  // The request header's client id keeps the classic INT16 length even in flexible headers.
  void legacyString(std::string_view s) {
    int16(static_cast<std::int16_t>(s.size()));
    raw(s);
  }
  void compactString(std::string_view s) {
    uvarint(static_cast<std::uint32_t>(s.size() + 1));
    raw(s);
  }
  void compactArrayLength(std::size_t n) { uvarint(static_cast<std::uint32_t>(n + 1)); }
  void noTaggedFields() { uvarint(0); }

  std::vector<std::uint8_t> finish() && {
    const auto size = static_cast<std::uint32_t>(bytes_.size() - 4);
    for (int i = 0; i < 4; ++i) bytes_[i] = static_cast<std::uint8_t>(size >> (8 * (3 - i)));
    return std::move(bytes_);
  }

 private:
  void bigEndian(std::uint64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void raw(std::string_view s) { bytes_.insert(bytes_.end(), s.begin(), s.end()); }

  std::vector<std::uint8_t> bytes_;
};

// Reads a response front to back. The first shortfall or malformed value sets problem() and
// makes every later read return zero, so a decoder checks once per structure, not per field.
class FrameReader {
 public:
  explicit FrameReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  bool ok() const { return problem_.empty(); }
  const std::string& problem() const { return problem_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }

  std::int8_t int8(const char* what) { return static_cast<std::int8_t>(bigEndian(1, what)); }
  std::int16_t int16(const char* what) { return static_cast<std::int16_t>(bigEndian(2, what)); }
  std::uint16_t uint16(const char* what) { return static_cast<std::uint16_t>(bigEndian(2, what)); }
  std::int32_t int32(const char* what) { return static_cast<std::int32_t>(bigEndian(4, what)); }
  std::int64_t int64(const char* what) { return static_cast<std::int64_t>(bigEndian(8, what)); }

  std::uint32_t uvarint(const char* what) {
    std::uint32_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (!need(1, what)) return 0;
      const auto byte = bytes_[pos_++];
      value |= static_cast<std::uint32_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    fail(std::string(what) + ": unsigned varint longer than 5 bytes");
    return 0;
  }

  // A COMPACT_NULLABLE_STRING; nullopt for null.
  std::optional<std::string> compactNullableString(const char* what) {
    const auto n = uvarint(what);
    if (!ok() || n == 0) return std::nullopt;
    if (!need(n - 1, what)) return std::nullopt;
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n - 1);
    pos_ += n - 1;
    return s;
  }
  std::string compactString(const char* what) {
    const auto start = pos_;
    auto s = compactNullableString(what);
    if (ok() && !s) {
      pos_ = start;
      fail(std::string(what) + ": null where a string is required");
    }
    return s.value_or(std::string());
  }

  // A COMPACT_ARRAY's element count. Every element takes at least `min_element_bytes`, which
  // bounds the count by what is left, so garbage cannot make the decoder reserve gigabytes.
  std::size_t compactArrayLength(const char* what, std::size_t min_element_bytes) {
    const auto n = uvarint(what);
    if (!ok()) return 0;
    if (n == 0) {
      fail(std::string(what) + ": null array");
      return 0;
    }
    const std::size_t count = n - 1;
    if (count > remaining() / std::max<std::size_t>(1, min_element_bytes)) {
      fail(std::string(what) + ": " + std::to_string(count) + " elements cannot fit in " +
           std::to_string(remaining()) + " bytes");
      return 0;
    }
    return count;
  }

  // Tagged fields this client does not know are skipped, as the protocol intends.
  void skipTaggedFields(const char* what) {
    const auto count = uvarint(what);
    for (std::uint32_t i = 0; ok() && i < count; ++i) {
      uvarint(what);
      skip(uvarint(what), what);
    }
  }

  void skip(std::size_t n, const char* what) {
    if (need(n, what)) pos_ += n;
  }

  void fail(std::string problem) {
    if (problem_.empty()) problem_ = std::move(problem) + " at byte " + std::to_string(pos_);
  }

 private:
  bool need(std::size_t n, const char* what) {
    if (!ok()) return false;
    if (remaining() < n) {
      fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, " +
           std::to_string(remaining()) + " left");
      return false;
    }
    return true;
  }
  std::uint64_t bigEndian(std::size_t width, const char* what) {
    if (!need(width, what)) return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) v = (v << 8) | bytes_[pos_++];
    return v;
  }

  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
  std::string problem_;
};

Error malformed(const std::string& what, const FrameReader& in) {
  return kafkaError(errc::admin_failed, what + ": malformed response: " + in.problem());
}

// Kafka's protocol error codes are librdkafka's positive rd_kafka_resp_err_t values.
Error brokerError(const std::string& what, std::int16_t code,
                  const std::optional<std::string>& message) {
  auto error = kafkaError(errc::admin_failed, what, static_cast<rd_kafka_resp_err_t>(code));
  if (message && !message->empty()) error.message += ": " + *message;
  return error;
}

void requestHeader(FrameWriter& out, std::int16_t api_key, std::int16_t version,
                   std::int32_t correlation_id, std::string_view client_id) {
  out.int16(api_key);
  out.int16(version);
  out.int32(correlation_id);
  out.legacyString(client_id);
}

Status checkCorrelation(FrameReader& in, std::int32_t expected, const std::string& what) {
  const auto got = in.int32("correlation id");
  if (!in.ok()) return malformed(what, in);
  if (got != expected) {
    return kafkaError(errc::admin_failed, what + ": answer to request " + std::to_string(got) +
                                              ", expected " + std::to_string(expected));
  }
  return okStatus();
}

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
    std::size_t sent = 0;
    while (sent < request.size()) {
      const auto n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n >= 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return failure(systemError("send", errno));
      if (auto waited = wait(fd_, POLLOUT, deadline, "send", cancel_)) return failure(*waited);
    }
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

 private:
  static Error failure(const std::string& why) { return kafkaError(errc::admin_failed, why); }

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

  std::optional<std::string> receive(std::uint8_t* into, std::size_t size,
                                     Clock::time_point deadline) {
    std::size_t got = 0;
    while (got < size) {
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
};

// Opens `connection` and checks with ApiVersions that the node answers `api_key` in `version`;
// `why_not` completes "does not answer ..." for the error.
Status openSpeaking(Connection& connection, const std::string& host, const std::string& port,
                    Clock::time_point deadline, std::int32_t versions_id, std::string_view client_id,
                    std::int16_t api_key, std::int16_t version, const std::string& why_not) {
  if (auto why = connection.open(host, port, deadline)) return kafkaError(errc::admin_failed, *why);
  auto versions_answer = connection.roundTrip(encodeApiVersionsRequest(versions_id, client_id), deadline);
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

QuorumDescriber::QuorumDescriber(QuorumClientOptions options) : options_(std::move(options)) {
  std::string_view rest = options_.bootstrap;
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
      bootstrap_error_ = "bootstrap server \"" + entry + "\" is not host:port";
      continue;
    }
    Server server{entry.substr(0, colon), entry.substr(colon + 1)};
    if (server.host.size() > 2 && server.host.front() == '[' && server.host.back() == ']') {
      server.host = server.host.substr(1, server.host.size() - 2);
    }
    servers_.push_back(std::move(server));
  }
  if (!servers_.empty()) {
    bootstrap_error_.clear();
  } else if (bootstrap_error_.empty()) {
    bootstrap_error_ = "no bootstrap server given";
  }
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

Result<QuorumInfo> QuorumDescriber::describeAt(const std::string& host, std::uint16_t port, int timeout_ms,
                                               const std::atomic<bool>* cancel) {
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
  if (auto why = connection.open(server.host, server.port, deadline)) {
    return kafkaError(errc::admin_failed, name + ": " + *why);
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
    return kafkaError(errc::admin_failed,
                      "describe controller config: DescribeQuorum v" +
                          std::to_string(quorum->api_version) + " lists no listener of controller " +
                          std::to_string(quorum->leader_id) + " (v2, Kafka 3.9 and later, does)");
  }
  const auto& endpoint = found->second.front();
  const auto name = endpoint.host + ":" + std::to_string(endpoint.port) + " (controller " +
                    std::to_string(quorum->leader_id) + ")";
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  auto fail = [&name](const Error& e) { return kafkaError(errc::admin_failed, name + ": " + e.message); };
  Connection connection(nullptr);
  if (auto s = openSpeaking(connection, endpoint.host, std::to_string(endpoint.port), deadline, nextCorrelationId(),
                            options_.client_id, kDescribeConfigsKey, kDescribeConfigsVersion,
                            "DescribeConfigs v" + std::to_string(kDescribeConfigsVersion));
      !s) {
    return fail(s.error());
  }
  const auto configs_id = nextCorrelationId();
  auto answer = connection.roundTrip(
      encodeDescribeNodeConfigsRequest(configs_id, options_.client_id, quorum->leader_id, keys), deadline);
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
  const std::int64_t abs = signed_hash == INT32_MIN ? 0 : std::abs(static_cast<std::int64_t>(signed_hash));
  return static_cast<std::int32_t>(abs % partitions);
}

std::vector<std::uint8_t> encodeFindCoordinatorRequest(std::int32_t correlation_id, std::string_view client_id,
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
  if (servers_.empty()) return kafkaError(errc::admin_failed, "find coordinator: " + bootstrap_error_);
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
  return kafkaError(errc::admin_failed,
                    "find coordinator: " + (failures.empty() ? std::string("cancelled") : failures));
}

Result<Coordinator> QuorumDescriber::findCoordinatorOn(const Server& server, CoordinatorType type,
                                                       const std::string& key, const std::atomic<bool>* cancel) {
  const auto name = server.host + ":" + server.port;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  auto fail = [&name](const Error& e) { return kafkaError(errc::admin_failed, name + ": " + e.message); };
  Connection connection(cancel);
  if (auto s = openSpeaking(connection, server.host, server.port, deadline, nextCorrelationId(), options_.client_id,
                            kFindCoordinatorKey, kFindCoordinatorVersion,
                            "FindCoordinator v" + std::to_string(kFindCoordinatorVersion) + " (Kafka 3.0 and later do)");
      !s) {
    return fail(s.error());
  }
  const auto id = nextCorrelationId();
  auto answer = connection.roundTrip(encodeFindCoordinatorRequest(id, options_.client_id, type, key), deadline);
  if (!answer) return fail(answer.error());
  auto found = decodeFindCoordinatorResponse(*answer, id);
  if (!found) return fail(found.error());
  return found;
}

std::int32_t QuorumDescriber::nextCorrelationId() {
  if (next_correlation_id_ == std::numeric_limits<std::int32_t>::max()) next_correlation_id_ = 1;
  return next_correlation_id_++;
}

std::string quorumClientProblem(const std::map<std::string, std::string>& client) {
  const auto found = client.find("security.protocol");
  if (found == client.end()) return {};
  std::string protocol = found->second;
  std::transform(protocol.begin(), protocol.end(), protocol.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (protocol == "plaintext") return {};
  return "the quorum is not described: security.protocol is " + found->second +
         " and kfaild's DescribeQuorum client speaks PLAINTEXT only";
}

Result<QuorumInfo> describeQuorum(const QuorumClientOptions& options) {
  QuorumDescriber describer(options);
  return describer.describe();
}

}  // namespace kfaild::kafka
