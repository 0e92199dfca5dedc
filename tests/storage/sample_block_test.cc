#include "storage/sample_block.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace kfaild::storage::sample_block_test {
namespace {

std::string describe(const BlockSample& s) {
  const auto opt = [](const std::optional<std::int64_t>& v) {
    return v ? std::to_string(*v) : std::string("none");
  };
  return "seq=" + std::to_string(s.seq) + " send=" + std::to_string(s.send_us) +
         " ack=" + opt(s.ack_us) + " err=" + std::to_string(s.ack_error) +
         " offset=" + opt(s.offset) + " receive=" + opt(s.receive_us);
}

BlockSample sample(std::int64_t seq, std::int64_t send_us,
                   std::optional<std::int64_t> ack_us = std::nullopt, std::int32_t ack_error = 0,
                   std::optional<std::int64_t> offset = std::nullopt,
                   std::optional<std::int64_t> receive_us = std::nullopt) {
  return BlockSample{.seq = seq,
                     .send_us = send_us,
                     .ack_us = ack_us,
                     .ack_error = ack_error,
                     .offset = offset,
                     .receive_us = receive_us};
}

std::vector<BlockSample> roundTrip(const std::vector<BlockSample>& samples, std::int64_t base) {
  std::string data;
  encodeSampleBlock(samples, base, data);
  std::vector<BlockSample> decoded;
  const auto status = decodeSampleBlock(data, base, decoded);
  INFO((status.ok() ? std::string() : status.error().describe()));
  REQUIRE(status.ok());
  return decoded;
}

void requireSame(const std::vector<BlockSample>& got, const std::vector<BlockSample>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("sample " << i << ": got " << describe(got[i]) << ", want " << describe(want[i]));
    REQUIRE(got[i] == want[i]);
  }
}

// A probe partition at `interval_us` with the noise a real one has: send jitter, ack delays of a
// few ms, receives a little later, the odd unacked, failed or never-received message.
std::vector<BlockSample> realisticStream(std::mt19937_64& rng, std::size_t n,
                                         std::int64_t interval_us) {
  std::normal_distribution<double> jitter(0, 300);
  std::lognormal_distribution<double> ack_ms(1.0, 0.5);
  std::lognormal_distribution<double> receive_ms(1.5, 0.6);
  std::uniform_real_distribution<double> chance(0, 1);
  std::vector<BlockSample> samples;
  std::int64_t offset = 123'456;
  for (std::size_t i = 0; i < n; ++i) {
    BlockSample s;
    s.seq = 1'000 + static_cast<std::int64_t>(i);
    s.send_us = 1'764'000'000'000'000 + static_cast<std::int64_t>(i) * interval_us +
                static_cast<std::int64_t>(jitter(rng));
    const double roll = chance(rng);
    if (roll < 0.002) {
      // no delivery report yet when it was given up on
    } else if (roll < 0.004) {
      s.ack_us = s.send_us + 30'000'000;
      s.ack_error = -192;  // RD_KAFKA_RESP_ERR__MSG_TIMED_OUT
    } else {
      s.ack_us = s.send_us + static_cast<std::int64_t>(ack_ms(rng) * 1000);
      s.offset = offset++;
      if (roll > 0.001 + 0.004) {
        s.receive_us = *s.ack_us + static_cast<std::int64_t>(receive_ms(rng) * 1000);
      }
    }
    samples.push_back(s);
  }
  return samples;
}

TEST_CASE("a sample block gives back exactly the samples encoded into it, in their order",
          "[unit][storage]") {
  std::mt19937_64 rng(18);
  std::uniform_int_distribution<std::int64_t> any(std::numeric_limits<std::int64_t>::min(),
                                                  std::numeric_limits<std::int64_t>::max());
  std::uniform_int_distribution<std::int64_t> small(-50'000, 50'000);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int round = 0; round < 300; ++round) {
    INFO("round " << round);
    const std::size_t n = static_cast<std::size_t>(round % 40);
    // Half the rounds draw any int64 (wrap-around deltas), half stay near a probe's values in
    // random order (negative deltas, out-of-order sends and seqs).
    const bool extreme = round % 2 == 0;
    const auto value = [&](std::int64_t near) { return extreme ? any(rng) : near + small(rng); };
    std::vector<BlockSample> samples;
    for (std::size_t i = 0; i < n; ++i) {
      BlockSample s;
      s.seq = value(static_cast<std::int64_t>(i));
      s.send_us = value(1'764'000'000'000'000);
      if (coin(rng) != 0) s.ack_us = value(s.send_us);
      if (coin(rng) == 0) {
        s.ack_error = static_cast<std::int32_t>(
            extreme ? any(rng) % std::numeric_limits<std::int32_t>::max() : small(rng));
      }
      if (coin(rng) != 0) s.offset = value(static_cast<std::int64_t>(i));
      if (coin(rng) != 0) s.receive_us = value(s.send_us);
      samples.push_back(s);
    }
    const auto base = n > 0 && !extreme ? samples.front().send_us : value(0);
    requireSame(roundTrip(samples, base), samples);
  }

  SECTION("the extremes of int64 in every field") {
    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    const std::vector<BlockSample> samples = {
        sample(kMax, kMin, kMax, std::numeric_limits<std::int32_t>::min(), kMin, kMax),
        sample(kMin, kMax, kMin, std::numeric_limits<std::int32_t>::max(), kMax, kMin),
        sample(0, 0),
    };
    requireSame(roundTrip(samples, kMax), samples);
  }
}

TEST_CASE("a realistic probe stream takes well under 8 bytes per sample in blocks",
          "[unit][storage]") {
  std::mt19937_64 rng(20);
  auto samples = realisticStream(rng, 50'000, 20'000);
  const auto original = samples;
  std::size_t bytes = 0;
  std::vector<BlockSample> decoded;
  std::int64_t previous_first = std::numeric_limits<std::int64_t>::min();
  const auto blocks = packSampleBlocks(samples);
  for (const auto& block : blocks) {
    bytes += block.data.size();
    CHECK(block.first_send_us > previous_first);
    previous_first = block.first_send_us;
    CHECK(block.samples <= kMaxSamplesPerBlock);
    const auto before = decoded.size();
    REQUIRE(decodeSampleBlock(block.data, block.first_send_us, decoded).ok());
    REQUIRE(decoded.size() - before == block.samples);
    CHECK(decoded[before].send_us == block.first_send_us);
    CHECK(decoded.back().send_us - block.first_send_us < kSampleBlockSpanUs);
  }
  // The blocks hold the same samples, sorted by send time.
  auto sorted = original;
  std::stable_sort(sorted.begin(), sorted.end(), [](const BlockSample& a, const BlockSample& b) {
    return a.send_us != b.send_us ? a.send_us < b.send_us : a.seq < b.seq;
  });
  requireSame(decoded, sorted);
  const double per_sample = static_cast<double>(bytes) / static_cast<double>(original.size());
  INFO("blob bytes per sample: " << per_sample);
  CHECK(per_sample < 6.5);
  // A block per 96 samples (1.9 s at 20 ms) or per 2 s, whichever is first.
  CHECK(blocks.size() == (original.size() + kMaxSamplesPerBlock - 1) / kMaxSamplesPerBlock);
}

TEST_CASE("packing keeps the later of two writes of one message and splits blocks by span",
          "[unit][storage]") {
  std::vector<BlockSample> samples = {
      sample(2, 3'000'000, 3'000'100),
      sample(1, 1'000'000),
      sample(1, 1'000'000, 1'000'500, 0, 9, 1'000'900),
      sample(3, 3'100'000),
  };
  const auto blocks = packSampleBlocks(samples);
  REQUIRE(blocks.size() == 2);  // 1.0 s, then 3.0 s and 3.1 s: 2 s apart starts a new block
  std::vector<BlockSample> decoded;
  REQUIRE(decodeSampleBlock(blocks[0].data, blocks[0].first_send_us, decoded).ok());
  REQUIRE(decoded.size() == 1);
  CHECK(decoded[0].offset == 9);
  CHECK(decoded[0].receive_us == 1'000'900);
  decoded.clear();
  REQUIRE(decodeSampleBlock(blocks[1].data, blocks[1].first_send_us, decoded).ok());
  REQUIRE(decoded.size() == 2);
  CHECK(decoded[0].seq == 2);
  CHECK(decoded[1].seq == 3);
}

TEST_CASE("a damaged sample block is reported, never read past its end", "[unit][storage]") {
  std::mt19937_64 rng(7);
  auto samples = realisticStream(rng, 60, 20'000);
  std::string data;
  encodeSampleBlock(samples, samples.front().send_us, data);
  std::vector<BlockSample> out;
  // Every truncation fails: the count says more samples than the bytes hold.
  for (std::size_t cut = 0; cut < data.size(); ++cut) {
    INFO("cut at " << cut);
    out.clear();
    CHECK_FALSE(decodeSampleBlock(std::string_view(data).substr(0, cut), 0, out).ok());
  }
  out.clear();
  CHECK_FALSE(decodeSampleBlock(data + '\0', samples.front().send_us, out).ok());
  auto other_format = data;
  other_format[0] = 2;
  out.clear();
  const auto refused = decodeSampleBlock(other_format, samples.front().send_us, out);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("unknown format 2"));
}

}  // namespace
}  // namespace kfaild::storage::sample_block_test
