#include "storage/sample_block.h"

#include <algorithm>

#include "storage/errc.h"

namespace kfaild::storage {
namespace {

enum Flags : std::uint8_t {
  kAck = 1,
  kOffset = 2,
  kReceive = 4,
  kError = 8,
  kSeqExplicit = 16,
  kOffsetExplicit = 32,
};
constexpr std::uint8_t kKnownFlags = 63;

// Differences are taken modulo 2^64, so that no input overflows and decoding adds them back
// exactly.
std::int64_t minus(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

std::int64_t plus(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

void putVarint(std::uint64_t value, std::string& out) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void putSigned(std::int64_t value, std::string& out) {
  const auto bits = static_cast<std::uint64_t>(value);
  putVarint((bits << 1) ^ (value < 0 ? ~std::uint64_t{0} : 0), out);
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool byte(std::uint8_t& value) {
    if (at_ >= data_.size()) return false;
    value = static_cast<std::uint8_t>(data_[at_++]);
    return true;
  }

  bool varint(std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      std::uint8_t b = 0;
      if (!byte(b)) return false;
      value |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;  // more than ten bytes: not something putVarint wrote
  }

  bool signedVarint(std::int64_t& value) {
    std::uint64_t bits = 0;
    if (!varint(bits)) return false;
    value = static_cast<std::int64_t>((bits >> 1) ^ (~(bits & 1) + 1));
    return true;
  }

  bool done() const { return at_ == data_.size(); }

 private:
  std::string_view data_;
  std::size_t at_ = 0;
};

}  // namespace

void encodeSampleBlock(const std::vector<BlockSample>& samples, std::int64_t base_send_us,
                       std::string& out) {
  out.push_back(static_cast<char>(kSampleBlockFormat));
  putVarint(samples.size(), out);
  // The flags first, as runs: a steady probe's samples all have the same flags, so a block
  // usually needs one run (two bytes) instead of a byte per sample.
  std::vector<std::uint8_t> flags_of(samples.size());
  {
    std::int64_t seq = -1;
    std::int64_t offset = -1;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& s = samples[i];
      std::uint8_t flags = 0;
      if (s.ack_us) flags |= kAck;
      if (s.offset) flags |= kOffset;
      if (s.receive_us) flags |= kReceive;
      if (s.ack_error != 0) flags |= kError;
      if (s.seq != plus(seq, 1)) flags |= kSeqExplicit;
      if (s.offset && *s.offset != plus(offset, 1)) flags |= kOffsetExplicit;
      seq = s.seq;
      if (s.offset) offset = *s.offset;
      flags_of[i] = flags;
    }
    std::vector<std::pair<std::size_t, std::uint8_t>> runs;
    for (const auto flags : flags_of) {
      if (!runs.empty() && runs.back().second == flags) {
        ++runs.back().first;
      } else {
        runs.emplace_back(1, flags);
      }
    }
    putVarint(runs.size(), out);
    for (const auto& [length, flags] : runs) {
      putVarint(length, out);
      out.push_back(static_cast<char>(flags));
    }
  }
  std::int64_t prev_send = base_send_us;
  std::int64_t prev_send_delta = 0;
  std::int64_t prev_seq = -1;
  std::int64_t prev_ack_delay = 0;
  std::int64_t prev_offset = -1;
  std::int64_t prev_receive_delay = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    const std::uint8_t flags = flags_of[i];

    const auto send_delta = minus(s.send_us, prev_send);
    putSigned(minus(send_delta, prev_send_delta), out);
    prev_send = s.send_us;
    prev_send_delta = send_delta;
    if ((flags & kSeqExplicit) != 0) putSigned(minus(s.seq, plus(prev_seq, 1)), out);
    prev_seq = s.seq;
    if (s.ack_us) {
      const auto delay = minus(*s.ack_us, s.send_us);
      putSigned(minus(delay, prev_ack_delay), out);
      prev_ack_delay = delay;
    }
    if (s.ack_error != 0) putSigned(s.ack_error, out);
    if (s.offset) {
      if ((flags & kOffsetExplicit) != 0) putSigned(minus(*s.offset, plus(prev_offset, 1)), out);
      prev_offset = *s.offset;
    }
    if (s.receive_us) {
      const auto delay = minus(*s.receive_us, s.send_us);
      putSigned(minus(delay, prev_receive_delay), out);
      prev_receive_delay = delay;
    }
  }
}

Status decodeSampleBlock(std::string_view data, std::int64_t base_send_us,
                         std::vector<BlockSample>& out) {
  const auto corrupt = [&](std::string_view what) {
    return Error{errc::query_failed, "a sample block (first send " + std::to_string(base_send_us) +
                                         ", " + std::to_string(data.size()) +
                                         " bytes) is corrupt: " + std::string(what)};
  };
  Reader in(data);
  std::uint8_t format = 0;
  if (!in.byte(format)) return corrupt("empty");
  if (format != kSampleBlockFormat) return corrupt("unknown format " + std::to_string(format));
  std::uint64_t count = 0;
  if (!in.varint(count)) return corrupt("no sample count");
  // Every sample takes at least one byte: a corrupt count cannot make us reserve gigabytes.
  if (count > data.size()) return corrupt("more samples than bytes");
  std::uint64_t runs = 0;
  if (!in.varint(runs)) return corrupt("no flag runs");
  if (runs > count) return corrupt("more flag runs than samples");
  std::vector<std::pair<std::uint64_t, std::uint8_t>> flag_runs;
  std::uint64_t covered = 0;
  for (std::uint64_t r = 0; r < runs; ++r) {
    std::uint64_t length = 0;
    std::uint8_t flags = 0;
    if (!in.varint(length) || !in.byte(flags)) return corrupt("truncated flag runs");
    if ((flags & ~kKnownFlags) != 0) return corrupt("unknown flags");
    if (length == 0 || length > count - covered)
      return corrupt("flag runs do not cover the samples");
    covered += length;
    flag_runs.emplace_back(length, flags);
  }
  if (covered != count) return corrupt("flag runs do not cover the samples");
  out.reserve(out.size() + count);
  std::size_t run = 0;
  std::uint64_t left_in_run = 0;

  std::int64_t prev_send = base_send_us;
  std::int64_t prev_send_delta = 0;
  std::int64_t prev_seq = -1;
  std::int64_t prev_ack_delay = 0;
  std::int64_t prev_offset = -1;
  std::int64_t prev_receive_delay = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (left_in_run == 0) left_in_run = flag_runs[run++].first;
    const std::uint8_t flags = flag_runs[run - 1].second;
    --left_in_run;
    BlockSample& s = out.emplace_back();
    std::int64_t value = 0;
    if (!in.signedVarint(value)) return corrupt("truncated send time");
    prev_send_delta = plus(prev_send_delta, value);
    s.send_us = plus(prev_send, prev_send_delta);
    prev_send = s.send_us;
    s.seq = plus(prev_seq, 1);
    if ((flags & kSeqExplicit) != 0) {
      if (!in.signedVarint(value)) return corrupt("truncated seq");
      s.seq = plus(s.seq, value);
    }
    prev_seq = s.seq;
    if ((flags & kAck) != 0) {
      if (!in.signedVarint(value)) return corrupt("truncated ack time");
      prev_ack_delay = plus(prev_ack_delay, value);
      s.ack_us = plus(s.send_us, prev_ack_delay);
    }
    if ((flags & kError) != 0) {
      if (!in.signedVarint(value)) return corrupt("truncated ack error");
      s.ack_error = static_cast<std::int32_t>(value);
    }
    if ((flags & kOffset) != 0) {
      std::int64_t offset = plus(prev_offset, 1);
      if ((flags & kOffsetExplicit) != 0) {
        if (!in.signedVarint(value)) return corrupt("truncated offset");
        offset = plus(offset, value);
      }
      s.offset = offset;
      prev_offset = offset;
    } else if ((flags & kOffsetExplicit) != 0) {
      return corrupt("an explicit offset without an offset");
    }
    if ((flags & kReceive) != 0) {
      if (!in.signedVarint(value)) return corrupt("truncated receive time");
      prev_receive_delay = plus(prev_receive_delay, value);
      s.receive_us = plus(s.send_us, prev_receive_delay);
    }
  }
  if (!in.done()) return corrupt("trailing bytes");
  return okStatus();
}

std::vector<EncodedBlock> packSampleBlocks(std::vector<BlockSample>& samples) {
  // Stable, so that of two writes of one message the later stays last among its equals.
  std::stable_sort(samples.begin(), samples.end(), [](const BlockSample& a, const BlockSample& b) {
    return a.send_us != b.send_us ? a.send_us < b.send_us : a.seq < b.seq;
  });
  std::vector<EncodedBlock> blocks;
  std::vector<BlockSample> run;
  const auto close = [&] {
    if (run.empty()) return;
    EncodedBlock& block = blocks.emplace_back();
    block.first_send_us = run.front().send_us;
    block.samples = run.size();
    encodeSampleBlock(run, block.first_send_us, block.data);
    run.clear();
  };
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    if (i + 1 < samples.size() && samples[i + 1].send_us == s.send_us &&
        samples[i + 1].seq == s.seq) {
      continue;
    }
    // Sorted, so the unsigned difference is exact even across the whole int64 range.
    if (!run.empty() &&
        (run.size() >= kMaxSamplesPerBlock ||
         static_cast<std::uint64_t>(s.send_us) - static_cast<std::uint64_t>(run.front().send_us) >=
             static_cast<std::uint64_t>(kSampleBlockSpanUs))) {
      close();
    }
    run.push_back(s);
  }
  close();
  return blocks;
}

}  // namespace kfaild::storage
