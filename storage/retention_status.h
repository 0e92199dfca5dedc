#pragma once

// What retention has done, for /metrics: rows pruned per kind, failures, the last pass that
// succeeded. The retention task (server/daemon/retention.h) keeps it; the API reads it.
//
// Thread-safety: retentionReport() may be called from any thread.

#include <cstdint>
#include <optional>

namespace kfaild::storage {

struct RetentionReport {
  // Rows deleted since start, by kind: raw samples (outside drill windows), samples inside
  // drill windows, gaps, events. By age and by the size bound alike.
  std::uint64_t pruned_samples = 0;
  std::uint64_t pruned_drill_samples = 0;
  std::uint64_t pruned_gaps = 0;
  std::uint64_t pruned_events = 0;
  std::uint64_t passes = 0;    // passes finished, successful or not
  std::uint64_t failures = 0;  // prune steps that failed (each logged with SQLite's error)
  std::optional<std::int64_t> last_success_us;  // wall clock; nullopt before the first
  std::optional<std::int64_t> max_bytes;        // storage.max_bytes; nullopt: no bound
};

class RetentionStatus {
 public:
  virtual ~RetentionStatus() = default;
  virtual RetentionReport retentionReport() const = 0;
};

}  // namespace kfaild::storage
