#include "server/kafka/probe_wire.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "server/kafka/errc.h"
#include "server/kafka/wire.h"

namespace kfaild::kafka::probewire {
namespace {

using wire::FrameReader;
using wire::FrameWriter;

constexpr std::array<std::uint32_t, 256> makeCrcTable() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr auto kCrcTable = makeCrcTable();

// Zigzag varints of the record format (signed, up to 64 bits).
void putVarlong(std::vector<std::uint8_t>& out, std::int64_t v) {
  auto z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<std::uint8_t>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(z));
}
void putBig(std::vector<std::uint8_t>& out, std::uint64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void patchBig(std::vector<std::uint8_t>& out, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * (3 - i)));
}

// A cursor over one record batch's bytes (the record format, not the protocol's frames).
class RecordReader {
 public:
  explicit RecordReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  std::int64_t varlong() {
    std::uint64_t z = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos_ >= bytes_.size()) return fail();
      const auto byte = bytes_[pos_++];
      z |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0)
        return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
    }
    return fail();
  }
  std::span<const std::uint8_t> take(std::int64_t n) {
    if (n < 0 || static_cast<std::uint64_t>(n) > remaining()) {
      fail();
      return {};
    }
    const auto out = bytes_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }
  void skip(std::size_t n) { take(static_cast<std::int64_t>(n)); }

 private:
  std::int64_t fail() {
    ok_ = false;
    pos_ = bytes_.size();
    return 0;
  }
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

std::uint64_t readBig(std::span<const std::uint8_t> b, std::size_t at, int width) {
  std::uint64_t v = 0;
  for (int i = 0; i < width; ++i) v = (v << 8) | b[at + static_cast<std::size_t>(i)];
  return v;
}

Error recordsError(const std::string& what) {
  return kafkaError(errc::admin_failed, "records: " + what);
}

// The batch header's fixed part: base offset (8), length (4), leader epoch (4), magic (1),
// crc (4), attributes (2), last offset delta (4), first and max timestamp (8 + 8), producer id
// (8), epoch (2), base sequence (4), record count (4).
constexpr std::size_t kBatchHeaderBytes = 61;
constexpr std::size_t kBatchLengthEnd = 12;  // what the length does not count
constexpr std::size_t kCrcEnd = 21;          // the checksum covers what follows it

}  // namespace

std::uint32_t crc32c(std::span<const std::uint8_t> bytes, std::uint32_t crc) {
  crc = ~crc;
  for (const auto b : bytes) crc = kCrcTable[(crc ^ b) & 0xff] ^ (crc >> 8);
  return ~crc;
}

void appendRecordBatch(std::vector<std::uint8_t>& out, std::span<const OutRecord> records) {
  if (records.empty()) return;
  const auto first_ts = records.front().timestamp_ms;
  std::int64_t max_ts = first_ts;
  for (const auto& r : records) max_ts = std::max(max_ts, r.timestamp_ms);

  const auto start = out.size();
  putBig(out, 0, 8);                                     // base offset (the broker assigns it)
  putBig(out, 0, 4);                                     // batch length, patched below
  putBig(out, static_cast<std::uint32_t>(-1), 4);        // partition leader epoch
  out.push_back(2);                                      // magic
  putBig(out, 0, 4);                                     // crc, patched below
  putBig(out, 0, 2);                                     // attributes: uncompressed, CreateTime
  putBig(out, records.size() - 1, 4);                    // last offset delta
  putBig(out, static_cast<std::uint64_t>(first_ts), 8);  // first timestamp
  putBig(out, static_cast<std::uint64_t>(max_ts), 8);    // max timestamp
  putBig(out, static_cast<std::uint64_t>(-1), 8);        // producer id: none
  putBig(out, static_cast<std::uint16_t>(-1), 2);        // producer epoch
  putBig(out, static_cast<std::uint32_t>(-1), 4);        // base sequence
  putBig(out, records.size(), 4);                        // record count
  std::vector<std::uint8_t> record;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto value = records[i].value;
    record.clear();
    record.push_back(0);                                     // attributes
    putVarlong(record, records[i].timestamp_ms - first_ts);  // timestamp delta
    putVarlong(record, static_cast<std::int64_t>(i));        // offset delta
    putVarlong(record, -1);                                  // key: null
    putVarlong(record, static_cast<std::int64_t>(value.size()));
    record.insert(record.end(), value.begin(), value.end());
    putVarlong(record, 0);  // headers
    putVarlong(out, static_cast<std::int64_t>(record.size()));
    out.insert(out.end(), record.begin(), record.end());
  }

  patchBig(out, start + 8, static_cast<std::uint32_t>(out.size() - start - kBatchLengthEnd));
  const std::span<const std::uint8_t> covered(out.data() + start + kCrcEnd,
                                              out.size() - start - kCrcEnd);
  patchBig(out, start + 17, crc32c(covered));
}

void appendRecordBatch(std::vector<std::uint8_t>& out, std::span<const std::uint8_t> value,
                       std::int64_t timestamp_ms) {
  const OutRecord one{value, timestamp_ms};
  appendRecordBatch(out, std::span<const OutRecord>(&one, 1));
}

std::vector<std::uint8_t> encodeProduceRequest(std::int32_t correlation_id,
                                               std::string_view client_id, std::int32_t timeout_ms,
                                               const std::vector<ProduceTopic>& topics) {
  FrameWriter out;
  wire::requestHeader(out, kProduceKey, kProduceVersion, correlation_id, client_id);
  out.noTaggedFields();
  out.uvarint(0);  // transactional id: null
  out.int16(-1);   // acks: all in-sync replicas
  out.int32(timeout_ms);
  out.compactArrayLength(topics.size());
  for (const auto& t : topics) {
    out.compactString(t.name);
    out.compactArrayLength(t.partitions.size());
    for (const auto& p : t.partitions) {
      out.int32(p.partition);
      out.uvarint(static_cast<std::uint32_t>(p.records.size() + 1));
      out.bytes(p.records);
      out.noTaggedFields();
    }
    out.noTaggedFields();
  }
  out.noTaggedFields();
  return std::move(out).finish();
}

Result<std::vector<ProduceResult>> decodeProduceResponse(std::span<const std::uint8_t> response,
                                                         std::int32_t correlation_id) {
  const std::string what = "Produce";
  FrameReader in(response);
  if (auto status = wire::checkCorrelation(in, correlation_id, what); !status)
    return status.error();
  in.skipTaggedFields("response header");
  std::vector<ProduceResult> results;
  const auto topics = in.compactArrayLength("responses", 3);
  for (std::size_t t = 0; in.ok() && t < topics; ++t) {
    const auto name = in.compactString("topic name");
    const auto partitions = in.compactArrayLength("partition responses", 30);
    for (std::size_t p = 0; in.ok() && p < partitions; ++p) {
      ProduceResult r;
      r.topic = name;
      r.partition = in.int32("index");
      r.error = in.int16("error code");
      r.base_offset = in.int64("base offset");
      in.int64("log append time");
      in.int64("log start offset");
      const auto record_errors = in.compactArrayLength("record errors", 6);
      for (std::size_t e = 0; in.ok() && e < record_errors; ++e) {
        in.int32("batch index");
        in.compactNullableString("batch index error message");
        in.skipTaggedFields("record error");
      }
      r.message = in.compactNullableString("error message").value_or("");
      in.skipTaggedFields("partition response");
      results.push_back(std::move(r));
    }
    in.skipTaggedFields("topic response");
  }
  in.int32("throttle time");
  in.skipTaggedFields("response");
  if (!in.ok()) return wire::malformed(what, in);
  return results;
}

std::vector<std::uint8_t> encodeFetchRequest(std::int32_t correlation_id,
                                             std::string_view client_id, std::int32_t max_wait_ms,
                                             std::int32_t min_bytes, std::int32_t max_bytes,
                                             const std::vector<FetchTopic>& topics) {
  FrameWriter out;
  wire::requestHeader(out, kFetchKey, kFetchVersion, correlation_id, client_id);
  out.noTaggedFields();
  out.int32(-1);  // replica id: a consumer
  out.int32(max_wait_ms);
  out.int32(min_bytes);
  out.int32(max_bytes);
  out.int8(0);    // isolation: read_uncommitted
  out.int32(0);   // session id: none
  out.int32(-1);  // session epoch: a full fetch, no session created
  out.compactArrayLength(topics.size());
  for (const auto& t : topics) {
    out.compactString(t.name);
    out.compactArrayLength(t.partitions.size());
    for (const auto& p : t.partitions) {
      out.int32(p.partition);
      out.int32(-1);  // current leader epoch: unchecked
      out.int64(p.offset);
      out.int32(-1);  // last fetched epoch
      out.int64(-1);  // log start offset (followers only)
      out.int32(p.max_bytes);
      out.noTaggedFields();
    }
    out.noTaggedFields();
  }
  out.compactArrayLength(0);  // forgotten topics
  out.compactString("");      // rack id
  out.noTaggedFields();
  return std::move(out).finish();
}

Result<std::int64_t> decodeRecords(std::span<const std::uint8_t> records, std::int64_t from_offset,
                                   std::vector<FetchedRecord>& out) {
  std::int64_t next = from_offset;
  std::size_t pos = 0;
  while (records.size() - pos >= kBatchLengthEnd) {
    const auto batch_length = static_cast<std::int32_t>(readBig(records, pos + 8, 4));
    if (batch_length < static_cast<std::int32_t>(kBatchHeaderBytes - kBatchLengthEnd)) {
      return recordsError("batch length " + std::to_string(batch_length) +
                          " is shorter than its header");
    }
    const auto whole = kBatchLengthEnd + static_cast<std::size_t>(batch_length);
    if (records.size() - pos < whole) break;  // cut at the size limit: fetched again next time
    const auto batch = records.subspan(pos, whole);
    pos += whole;
    const auto base_offset = static_cast<std::int64_t>(readBig(batch, 0, 8));
    const auto magic = static_cast<std::int8_t>(batch[16]);
    if (magic != 2)
      return recordsError("batch at offset " + std::to_string(base_offset) + " has magic " +
                          std::to_string(magic));
    const auto attributes = static_cast<std::uint16_t>(readBig(batch, 21, 2));
    const auto last_delta = static_cast<std::int32_t>(readBig(batch, 23, 4));
    const auto batch_end = base_offset + last_delta + 1;
    if ((attributes & 0x20) != 0 || batch_end <= from_offset) {  // a control batch, or before
      next = std::max(next, batch_end);
      continue;
    }
    if ((attributes & 0x07) != 0) {
      return recordsError("batch at offset " + std::to_string(base_offset) +
                          " is compressed (codec " + std::to_string(attributes & 0x07) +
                          "): kfaild's client reads uncompressed batches only");
    }
    const auto count = static_cast<std::int32_t>(readBig(batch, 57, 4));
    RecordReader in(batch.subspan(kBatchHeaderBytes));
    for (std::int32_t i = 0; i < count && in.ok(); ++i) {
      const auto length = in.varlong();
      RecordReader rec(in.take(length));
      rec.skip(1);    // attributes
      rec.varlong();  // timestamp delta
      const auto offset_delta = rec.varlong();
      rec.take(std::max<std::int64_t>(0, rec.varlong()));  // key
      const auto value_length = rec.varlong();
      const auto value =
          value_length < 0 ? std::span<const std::uint8_t>() : rec.take(value_length);
      if (!in.ok() || !rec.ok()) break;
      const auto offset = base_offset + offset_delta;
      if (offset >= from_offset) out.push_back({offset, value});
    }
    if (!in.ok())
      return recordsError("batch at offset " + std::to_string(base_offset) + " is malformed");
    next = std::max(next, batch_end);
  }
  return next;
}

Result<std::vector<FetchedPartition>> decodeFetchResponse(std::span<const std::uint8_t> response,
                                                          std::int32_t correlation_id,
                                                          const std::vector<FetchTopic>& asked) {
  const std::string what = "Fetch";
  FrameReader in(response);
  if (auto status = wire::checkCorrelation(in, correlation_id, what); !status)
    return status.error();
  in.skipTaggedFields("response header");
  in.int32("throttle time");
  const auto error = in.int16("error code");
  in.int32("session id");
  if (in.ok() && error != 0) return wire::brokerError(what, error, std::nullopt);
  std::vector<FetchedPartition> result;
  const auto topics = in.compactArrayLength("responses", 3);
  for (std::size_t t = 0; in.ok() && t < topics; ++t) {
    const auto name = in.compactString("topic");
    std::unordered_map<std::int32_t, std::int64_t> asked_offsets;
    for (const auto& a : asked) {
      if (a.name != name) continue;
      for (const auto& p : a.partitions) asked_offsets[p.partition] = p.offset;
    }
    const auto partitions = in.compactArrayLength("partitions", 37);
    for (std::size_t p = 0; in.ok() && p < partitions; ++p) {
      FetchedPartition f;
      f.topic = name;
      f.partition = in.int32("partition index");
      f.error = in.int16("error code");
      f.high_watermark = in.int64("high watermark");
      in.int64("last stable offset");
      f.log_start_offset = in.int64("log start offset");
      const auto aborted = in.uvarint("aborted transactions");
      for (std::uint32_t a = 1; in.ok() && a < aborted; ++a) {
        in.int64("producer id");
        in.int64("first offset");
        in.skipTaggedFields("aborted transaction");
      }
      in.int32("preferred read replica");
      const auto records_length = in.uvarint("records");
      const auto records = records_length == 0 ? std::span<const std::uint8_t>()
                                               : in.view(records_length - 1, "records");
      in.skipTaggedFields("partition");
      if (!in.ok()) break;
      const auto asked_at = asked_offsets.find(f.partition);
      if (asked_at == asked_offsets.end()) continue;  // not asked for: nothing to advance
      const auto from = asked_at->second;
      f.next_offset = from;
      if (f.error == 0) {
        auto next = decodeRecords(records, from, f.records);
        if (next) {
          f.next_offset = *next;
        } else {
          f.problem = next.error().message;
        }
      }
      result.push_back(std::move(f));
    }
    in.skipTaggedFields("topic");
  }
  in.skipTaggedFields("response");
  if (!in.ok()) return wire::malformed(what, in);
  return result;
}

std::vector<std::uint8_t> encodeMetadataRequest(std::int32_t correlation_id,
                                                std::string_view client_id,
                                                const std::vector<std::string>& topics) {
  FrameWriter out;
  wire::requestHeader(out, kMetadataKey, kMetadataVersion, correlation_id, client_id);
  out.noTaggedFields();
  out.compactArrayLength(topics.size());
  for (const auto& t : topics) {
    for (int i = 0; i < 4; ++i) out.int32(0);  // topic id: none, asked by name
    out.compactString(t);
    out.noTaggedFields();
  }
  out.int8(0);  // allow auto topic creation: no
  out.int8(0);  // include topic authorized operations: no
  out.noTaggedFields();
  return std::move(out).finish();
}

Result<MetadataAnswer> decodeMetadataResponse(std::span<const std::uint8_t> response,
                                              std::int32_t correlation_id) {
  const std::string what = "Metadata";
  FrameReader in(response);
  if (auto status = wire::checkCorrelation(in, correlation_id, what); !status)
    return status.error();
  in.skipTaggedFields("response header");
  in.int32("throttle time");
  MetadataAnswer answer;
  const auto brokers = in.compactArrayLength("brokers", 11);
  for (std::size_t b = 0; in.ok() && b < brokers; ++b) {
    MetadataBroker broker;
    broker.node = in.int32("node id");
    broker.host = in.compactString("host");
    broker.port = in.int32("port");
    in.compactNullableString("rack");
    in.skipTaggedFields("broker");
    answer.brokers.push_back(std::move(broker));
  }
  in.compactNullableString("cluster id");
  in.int32("controller id");
  const auto topics = in.compactArrayLength("topics", 25);
  for (std::size_t t = 0; in.ok() && t < topics; ++t) {
    MetadataTopic topic;
    topic.error = in.int16("topic error code");
    topic.name = in.compactNullableString("topic name").value_or("");
    in.skip(16, "topic id");
    in.int8("is internal");
    const auto partitions = in.compactArrayLength("partitions", 20);
    for (std::size_t p = 0; in.ok() && p < partitions; ++p) {
      MetadataPartition partition;
      partition.error = in.int16("partition error code");
      partition.partition = in.int32("partition index");
      partition.leader = in.int32("leader id");
      partition.leader_epoch = in.int32("leader epoch");
      for (const char* list : {"replica nodes", "isr nodes", "offline replicas"}) {
        const auto n = in.compactArrayLength(list, 4);
        in.skip(4 * n, list);
      }
      in.skipTaggedFields("partition");
      topic.partitions.push_back(partition);
    }
    in.int32("topic authorized operations");
    in.skipTaggedFields("topic");
    answer.topics.push_back(std::move(topic));
  }
  in.skipTaggedFields("response");
  if (!in.ok()) return wire::malformed(what, in);
  return answer;
}

}  // namespace kfaild::kafka::probewire
