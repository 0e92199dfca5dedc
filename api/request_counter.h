#pragma once

// Counts responses by HTTP status code for kfaild_http_requests_total{code}.
// Thread-safe and lock-free: record() is called by every server thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

namespace kfaild::api {

class RequestCounter {
 public:
  // Codes outside 100..599 are not HTTP and are ignored.
  void record(int status) {
    if (status < kFirst || status > kLast) return;
    counts_[static_cast<std::size_t>(status - kFirst)].fetch_add(1, std::memory_order_relaxed);
  }
  // Every code seen at least once, ascending.
  std::vector<std::pair<int, std::uint64_t>> snapshot() const {
    std::vector<std::pair<int, std::uint64_t>> out;
    for (int code = kFirst; code <= kLast; ++code) {
      const auto n =
          counts_[static_cast<std::size_t>(code - kFirst)].load(std::memory_order_relaxed);
      if (n > 0) out.emplace_back(code, n);
    }
    return out;
  }

 private:
  static constexpr int kFirst = 100;
  static constexpr int kLast = 599;
  std::array<std::atomic<std::uint64_t>, kLast - kFirst + 1> counts_{};
};

}  // namespace kfaild::api
