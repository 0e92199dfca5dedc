#pragma once

// Loads what a run's analysis reads from the store: every stored sample of the probe partitions
// sent in the window, and every event in the event window. Both are read in pages, so no store
// limit cuts a window short; a window that cannot be read whole is an error, never a shorter
// window (an analysis of the first N events loses the fault's end and the recovery).
//
// Called on the engine's thread; the store's queries are safe from any thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/common/result.h"
#include "storage/records.h"
#include "storage/store.h"

namespace kfaild::drill {

struct AnalysisWindow {
  storage::ClusterId cluster = 0;
  std::vector<std::pair<std::string, std::int32_t>> partitions;  // topic, partition
  storage::TimeRange samples;                                    // on send_us
  storage::TimeRange events;                                     // on t_us
};

// Rows per query; the store's own defaults unless a test asks for smaller pages.
struct PageSizes {
  std::size_t samples = storage::SampleQuery{}.limit;
  std::size_t events = storage::EventQuery{}.limit;
};

struct StoredInputs {
  std::vector<storage::ProbeSample> samples;  // by partition, then (send_us, seq)
  std::vector<storage::Event> events;         // by (t_us, id)
};

// Errors: a store query failed, or a page could not move on (more samples of one partition with
// one send time than a page holds); the message names the partition or the window.
[[nodiscard]] Result<StoredInputs> loadAnalysisInputs(const storage::Store& store,
                                                      const AnalysisWindow& window,
                                                      PageSizes pages = {});

}  // namespace kfaild::drill
