#pragma once

// What kfaild stores. Times: `*_us` are wall-clock microseconds since the Unix epoch (to line up
// with broker logs); `duration_us` values were measured on the monotonic clock.

#include <cstdint>
#include <optional>
#include <string>

#include "server/common/event_types.h"

namespace kfaild::storage {

using ClusterId = std::int64_t;

// One probe message, written once when its fate is known: received, failed, or given up on.
struct ProbeSample {
  ClusterId cluster = 0;
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t seq = 0;
  std::int64_t send_us = 0;
  std::optional<std::int64_t> ack_us;      // delivery report time (success or error)
  std::int32_t ack_error = 0;              // librdkafka rd_kafka_resp_err_t, 0 = acked
  std::optional<std::int64_t> offset;      // from the delivery report
  std::optional<std::int64_t> receive_us;  // first time the consumer saw it
};

enum class GapKind { kAck, kReceive };

const char* toString(GapKind kind);
std::optional<GapKind> gapKindFromString(const std::string& text);

// An interval between two consecutive acks (or receives) of one partition that exceeded the
// configured threshold. Kept forever.
struct Gap {
  std::int64_t id = 0;  // assigned by the store
  ClusterId cluster = 0;
  std::string topic;
  std::int32_t partition = 0;
  GapKind kind = GapKind::kAck;
  std::int64_t start_us = 0;     // the last ack/receive before the gap
  std::int64_t end_us = 0;       // the first ack/receive after it
  std::int64_t duration_us = 0;  // monotonic
  std::int64_t seq_before = -1;
  std::int64_t seq_after = -1;
};

// Something that happened in or to a cluster, from any source. `source` and `kind` hold the
// spellings of common::EventSource and common::EventKind (server/common/event_types.h) as stored:
// write them with toString, read them with sourceOf / kindOf / isEvent. An event written by
// another version of kfaild keeps its text here and reads as kUnknown.
struct Event {
  std::int64_t id = 0;  // assigned by the store
  ClusterId cluster = 0;
  std::int64_t t_us = 0;
  std::string source;
  std::string kind;
  std::optional<std::int32_t> broker;
  std::optional<std::string> topic;
  std::optional<std::int32_t> partition;
  std::string detail;  // JSON object text, "{}" when empty
};

common::EventSource sourceOf(const Event& event);
common::EventKind kindOf(const Event& event);
// The event is `kind` from `source`.
bool isEvent(const Event& event, common::EventSource source, common::EventKind kind);

struct Cluster {
  ClusterId id = 0;
  std::string name;
  std::string bootstrap;
  std::int64_t created_us = 0;
};

}  // namespace kfaild::storage
