#pragma once

// Sample blocks: how probe samples are kept on disk (storage/README.md, table
// probe_sample_blocks). A block is a run of one partition's samples, all sent within
// kSampleBlockSpanUs of the block's first (earliest) send time, encoded in one BLOB:
//
//   byte 0         format (kSampleBlockFormat)
//   varint         number of samples
//   varint         number of flag runs, then per run: varint length, flags byte. A sample's
//                  flags say which fields it has; a steady probe's samples all have the same,
//                  so a block usually has one run.
//   per sample     the fields its flags say are there, each a zigzag varint of its difference
//                  from what the previous sample predicts:
//     send_us      always: delta-of-delta (this send minus the previous one, minus the previous
//                  such difference; the first sample's "previous send" is the block's base)
//     seq          if kSeqExplicit: seq − (previous seq + 1); else it is previous seq + 1
//     ack_us       if kAck: (ack − send) − the previous sample's (ack − send)
//     ack_error    if kError: the value itself (absent: 0)
//     offset       if kOffset and kOffsetExplicit: offset − (previous offset + 1); with kOffset
//                  alone it is previous offset + 1
//     receive_us   if kReceive: (receive − send) − the previous sample's (receive − send)
//
// A probe at a steady interval costs about 5–6 bytes per sample: one or two bytes each for the
// send jitter, the ack delay's change and the receive delay's change.
// Arithmetic wraps (two's complement), so every int64 value round-trips, however large.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace kfaild::storage {

// Every sample of a block was sent in [first_send_us, first_send_us + kSampleBlockSpanUs): a
// query for [from, to) reads the blocks whose first send lies in (from − span, to).
inline constexpr std::int64_t kSampleBlockSpanUs = 2'000'000;
// At most this many samples per block: a block stays a few hundred bytes, several to a page, so
// a page is never mostly one half-empty row, and rewriting a block a prune cuts through is cheap.
inline constexpr std::size_t kMaxSamplesPerBlock = 96;
inline constexpr std::uint8_t kSampleBlockFormat = 1;

// One sample without its partition (the block's row names it).
struct BlockSample {
  std::int64_t seq = 0;
  std::int64_t send_us = 0;
  std::optional<std::int64_t> ack_us;
  std::int32_t ack_error = 0;
  std::optional<std::int64_t> offset;
  std::optional<std::int64_t> receive_us;

  bool operator==(const BlockSample&) const = default;
};

// Appends the encoding of `samples` (any order, any values) to `out`; `base_send_us` is the
// block's first_send_us, which the decoder is given again.
void encodeSampleBlock(const std::vector<BlockSample>& samples, std::int64_t base_send_us,
                       std::string& out);

// Appends the samples of `data` to `out`, in the order encoded. Fails with query_failed when the
// data is not a well-formed block (truncated, unknown format, trailing bytes).
Status decodeSampleBlock(std::string_view data, std::int64_t base_send_us,
                         std::vector<BlockSample>& out);

struct EncodedBlock {
  std::int64_t first_send_us = 0;
  std::size_t samples = 0;
  std::string data;
};

// Cuts one partition's samples into blocks: sorted by (send_us, seq), a repeated (send_us, seq)
// kept once (the last one in `samples`: a later write of the same message replaces the earlier),
// a new block whenever the span or the sample count would be exceeded. Reorders `samples`.
std::vector<EncodedBlock> packSampleBlocks(std::vector<BlockSample>& samples);

}  // namespace kfaild::storage
