#pragma once

// The three requests kfaild's own probe client speaks (server/probe/wire_client.h): Produce v9,
// Fetch v12 and Metadata v12, all flexible (request header v2, response header v1), answered by
// every broker from Kafka 2.8 on, 4.x included. A probe message travels as one record without a
// key in a record batch of its own (magic 2, uncompressed, no producer id: the client does not
// retry, so it needs no idempotence), and a tick's batches for every partition a broker leads
// leave in one Produce request.
//
// Pure functions, bytes in and bytes or a typed answer out, so they are tested without a socket:
// encoders return a whole frame (size prefix included), decoders take a response without its size
// prefix. A decoder's error is Error{errc::admin_failed} with what it found malformed; the
// broker's per-partition errors are data in the answer, not errors.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace kfaild::kafka::probewire {

inline constexpr std::int16_t kProduceKey = 0;
inline constexpr std::int16_t kProduceVersion = 9;
inline constexpr std::int16_t kFetchKey = 1;
inline constexpr std::int16_t kFetchVersion = 12;
inline constexpr std::int16_t kMetadataKey = 3;
inline constexpr std::int16_t kMetadataVersion = 12;

// CRC-32C (Castagnoli), the record batch's checksum.
std::uint32_t crc32c(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0);

struct OutRecord {
  std::span<const std::uint8_t> value;
  std::int64_t timestamp_ms = 0;
};
// Appends one record batch v2 holding `records` in order (offset deltas 0, 1, ...), each without
// a key. A Produce request (v3 and later) carries exactly one batch per partition: the broker
// refuses more, so two messages for one partition in one request share a batch.
void appendRecordBatch(std::vector<std::uint8_t>& out, std::span<const OutRecord> records);
// One record.
void appendRecordBatch(std::vector<std::uint8_t>& out, std::span<const std::uint8_t> value,
                       std::int64_t timestamp_ms);

struct ProducePartition {
  std::int32_t partition = 0;
  std::vector<std::uint8_t> records;  // record batches (appendRecordBatch)
};
struct ProduceTopic {
  std::string name;
  std::vector<ProducePartition> partitions;
};
// acks -1 (all in-sync replicas); `timeout_ms` is how long the broker waits for them.
std::vector<std::uint8_t> encodeProduceRequest(std::int32_t correlation_id,
                                               std::string_view client_id, std::int32_t timeout_ms,
                                               const std::vector<ProduceTopic>& topics);

struct ProduceResult {
  std::string topic;
  std::int32_t partition = 0;
  std::int16_t error = 0;  // Kafka's error code (librdkafka's positive rd_kafka_resp_err_t)
  std::int64_t base_offset = -1;
  std::string message;  // the broker's error message, if it gave one
};
Result<std::vector<ProduceResult>> decodeProduceResponse(std::span<const std::uint8_t> response,
                                                         std::int32_t correlation_id);

struct FetchPartition {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int32_t max_bytes = 1 << 20;
};
struct FetchTopic {
  std::string name;
  std::vector<FetchPartition> partitions;
};
// A full fetch without a session (session id 0, epoch -1), read_uncommitted, as a consumer
// outside any group: the broker answers once `min_bytes` are there or after `max_wait_ms`.
std::vector<std::uint8_t> encodeFetchRequest(std::int32_t correlation_id,
                                             std::string_view client_id, std::int32_t max_wait_ms,
                                             std::int32_t min_bytes, std::int32_t max_bytes,
                                             const std::vector<FetchTopic>& topics);

struct FetchedRecord {
  std::int64_t offset = 0;
  std::span<const std::uint8_t> value;  // into the response's bytes; empty for a null value
};
struct FetchedPartition {
  std::string topic;
  std::int32_t partition = 0;
  std::int16_t error = 0;
  std::int64_t high_watermark = -1;
  std::int64_t log_start_offset = -1;
  std::vector<FetchedRecord> records;  // at or after the fetch offset, in offset order
  // Where the next fetch starts: past the last whole batch returned, or the fetch offset when
  // none was.
  std::int64_t next_offset = 0;
  // Records that could not be read (a compressed batch, a malformed one): the partition's
  // records stop there.
  std::string problem;
};
// `offsets` are the fetch offsets asked for, in the request's order of topics and partitions,
// so that records before them (a batch starts where it starts) are left out.
Result<std::vector<FetchedPartition>> decodeFetchResponse(std::span<const std::uint8_t> response,
                                                          std::int32_t correlation_id,
                                                          const std::vector<FetchTopic>& asked);

// The records of a batch sequence (a fetch answer's `records`): appends those at or after
// `from_offset` to `out` and returns the offset after the last whole batch (`from_offset` when
// none was whole). A partial batch at the end is normal (the broker cuts at the size limit).
// Control batches are skipped; a compressed or malformed batch is an error.
Result<std::int64_t> decodeRecords(std::span<const std::uint8_t> records, std::int64_t from_offset,
                                   std::vector<FetchedRecord>& out);

std::vector<std::uint8_t> encodeMetadataRequest(std::int32_t correlation_id,
                                                std::string_view client_id,
                                                const std::vector<std::string>& topics);

struct MetadataBroker {
  std::int32_t node = -1;
  std::string host;
  std::int32_t port = 0;
};
struct MetadataPartition {
  std::int32_t partition = 0;
  std::int16_t error = 0;
  std::int32_t leader = -1;
  std::int32_t leader_epoch = -1;
};
struct MetadataTopic {
  std::string name;
  std::int16_t error = 0;
  std::vector<MetadataPartition> partitions;
};
struct MetadataAnswer {
  std::vector<MetadataBroker> brokers;
  std::vector<MetadataTopic> topics;
};
Result<MetadataAnswer> decodeMetadataResponse(std::span<const std::uint8_t> response,
                                              std::int32_t correlation_id);

}  // namespace kfaild::kafka::probewire
