#pragma once

// The Kafka protocol's primitive types as kfaild's own protocol client writes and reads them
// (server/kafka/quorum.cc, server/kafka/sasl.cc): a request frame built front to back with its
// size prefix, a response read front to back that records its first problem instead of throwing,
// and the headers and errors every request and decoder shares. Pure, no I/O; one object per frame,
// not thread-safe.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/common/result.h"
#include "server/kafka/errc.h"

namespace kfaild::kafka::wire {

class FrameWriter {
 public:
  FrameWriter() { bytes_.resize(4); }  // the size prefix, filled in by finish()

  void int8(std::int8_t v) { bytes_.push_back(static_cast<std::uint8_t>(v)); }
  void int16(std::int16_t v) { bigEndian(static_cast<std::uint16_t>(v), 2); }
  void int32(std::int32_t v) { bigEndian(static_cast<std::uint32_t>(v), 4); }
  void int64(std::int64_t v) { bigEndian(static_cast<std::uint64_t>(v), 8); }
  void bytes(std::span<const std::uint8_t> b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  std::size_t size() const { return bytes_.size(); }
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
  // The next `n` bytes as they are, skipped over; empty (and a problem) when fewer are left.
  std::span<const std::uint8_t> view(std::size_t n, const char* what) {
    if (!need(n, what)) return {};
    const auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

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

  // A STRING (INT16 length, not null) of the classic, non-flexible versions.
  std::string legacyString(const char* what) {
    const auto n = int16(what);
    if (!ok()) return {};
    if (n < 0) {
      fail(std::string(what) + ": null where a string is required");
      return {};
    }
    if (!need(static_cast<std::size_t>(n), what)) return {};
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  // A COMPACT_NULLABLE_STRING (or COMPACT_NULLABLE_BYTES); nullopt for null.
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

// A decoder's error for what the reader found wrong.
inline Error malformed(const std::string& what, const FrameReader& in) {
  return kafkaError(errc::admin_failed, what + ": malformed response: " + in.problem());
}

// Kafka's protocol error codes are librdkafka's positive rd_kafka_resp_err_t values.
inline Error brokerError(const std::string& what, std::int16_t code,
                         const std::optional<std::string>& message) {
  auto error = kafkaError(errc::admin_failed, what, static_cast<rd_kafka_resp_err_t>(code));
  if (message && !message->empty()) error.message += ": " + *message;
  return error;
}

// The request header up to the client id (v1); a flexible request (v2) adds its tagged fields.
inline void requestHeader(FrameWriter& out, std::int16_t api_key, std::int16_t version,
                          std::int32_t correlation_id, std::string_view client_id) {
  out.int16(api_key);
  out.int16(version);
  out.int32(correlation_id);
  out.legacyString(client_id);
}

// The response header's correlation id must be the request's.
inline Status checkCorrelation(FrameReader& in, std::int32_t expected, const std::string& what) {
  const auto got = in.int32("correlation id");
  if (!in.ok()) return malformed(what, in);
  if (got != expected) {
    return kafkaError(errc::admin_failed, what + ": answer to request " + std::to_string(got) +
                                              ", expected " + std::to_string(expected));
  }
  return okStatus();
}

}  // namespace kfaild::kafka::wire
