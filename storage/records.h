#pragma once

// What kfaild stores. Times: `*_us` are wall-clock microseconds since the Unix epoch (to line up
// with broker logs); `duration_us` values were measured on the monotonic clock.

#include <cstdint>
#include <optional>
#include <string>

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

// Something that happened in or to a cluster, from any source.
//   source: "metadata" (kfaild's poll), "client" (librdkafka's log), "broker_log", "injector",
//           "probe", "kfaild"
//   kind:   e.g. "broker_gone", "broker_back", "controller_change", "leader_change", "isr_shrink",
//           "isr_expand", "client_leader_update", "fenced", "controlled_shutdown", ...
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

struct Cluster {
  ClusterId id = 0;
  std::string name;
  std::string bootstrap;
  std::int64_t created_us = 0;
};

}  // namespace kfaild::storage
