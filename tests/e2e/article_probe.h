#pragma once

// The broker-failure article's probe method beside kfaild in an end-to-end test: bench's refprobe
// (bench/peer-probe/refprobe.cc: librdkafka, acks=all, not idempotent, one message per partition
// per interval, delivery reports served by a thread of their own) on kfaild's own probe topic.
// Each probe ignores the other's messages (their run ids), so both wait on the same partitions,
// the same leaders and the same ISRs. A probe on another topic of the same assignment is no
// reference for a follower's stall: a leader puts a shrunk ISR in force one partition at a time,
// so another topic's partition ends its stall earlier or later (docs/MEASUREMENT.md, "Comparing
// with another probe").

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/lab.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"

namespace kfaild::e2e {

// One message of the article probe that the cluster acked: wall µs.
struct ArticleAck {
  int partition = 0;
  std::int64_t send_us = 0;
  std::int64_t ack_us = 0;
};

struct ArticleStall {
  std::int64_t start_us = 0;  // the last ack before it
  std::int64_t end_us = 0;    // the first ack after it
  std::int64_t duration() const { return end_us - start_us; }
};

// The stall bench/peer-probe/gaps.py reports: the longest interval between two consecutive acks
// of `partition` that ends after `fault_us` and starts before `fault_us + window_us`.
inline std::optional<ArticleStall> articleAckStall(const std::vector<ArticleAck>& acks,
                                                   int partition, std::int64_t fault_us,
                                                   std::int64_t window_us) {
  std::vector<std::int64_t> times;
  for (const auto& a : acks) {
    if (a.partition == partition) times.push_back(a.ack_us);
  }
  std::sort(times.begin(), times.end());
  std::optional<ArticleStall> longest;
  for (std::size_t i = 1; i < times.size(); ++i) {
    if (times[i] <= fault_us || times[i - 1] >= fault_us + window_us) continue;
    if (!longest || times[i] - times[i - 1] > longest->duration()) {
      longest = ArticleStall{times[i - 1], times[i]};
    }
  }
  return longest;
}

// refprobe as a child process, writing its CSV into `dir`.
class ArticleProbe {
 public:
  ArticleProbe(const std::string& dir, const std::string& topic, int interval_ms)
      : csv_(dir + "/article-probe.csv"),
        log_(dir + "/article-probe.log"),
        process_({std::string(KFAILD_BINARY_DIR) + "/bench/refprobe", "--bootstrap",
                  testing::labBootstrap(), "--topic", topic, "--interval-ms",
                  std::to_string(interval_ms), "--linger-ms", "0", "--warmup", "0",
                  "--status-every", "0.5", "--csv", csv_},
                 log_) {}

  // Waits until it has `acked` messages acked (its status lines, every 0.5 s).
  void waitAcked(std::int64_t acked, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline && process_.running()) {
      if (lastAcked() >= acked) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    INFO("article probe's log:\n" << readLog());
    FAIL("the article probe did not ack " << acked << " messages");
  }

  // Stops it (it flushes what it sent and writes every message's row) and reads the acks.
  std::vector<ArticleAck> stop() {
    INFO("article probe's log:\n" << readLog());
    REQUIRE(process_.stop(SIGINT, 20'000) == 0);
    std::ifstream in(csv_);
    std::string line;
    std::getline(in, line);
    REQUIRE(line == "partition,seq,send_us,ack_us,ack_error,receive_us");
    std::vector<ArticleAck> acks;
    while (std::getline(in, line)) {
      std::vector<std::string> fields;
      std::stringstream row(line);
      for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
      if (fields.size() < 5 || fields[3].empty() || fields[4] != "0") continue;  // not acked
      acks.push_back({std::stoi(fields[0]), std::stoll(fields[2]), std::stoll(fields[3])});
    }
    return acks;
  }

 private:
  std::string readLog() const {
    std::ifstream in(log_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  std::int64_t lastAcked() const {
    std::ifstream in(log_);
    std::int64_t acked = -1;
    for (std::string line; std::getline(in, line);) {
      const auto status = nlohmann::json::parse(line, nullptr, false);
      if (!status.is_discarded() && status.value("kind", "") == "status") {
        acked = status.value("acked", std::int64_t{-1});
      }
    }
    return acked;
  }

  std::string csv_;
  std::string log_;
  testing::ChildProcess process_;
};

}  // namespace kfaild::e2e
