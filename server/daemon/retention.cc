#include "server/daemon/retention.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <vector>

namespace kfaild::daemon {

void RetentionTask::start() {
  worker_.start([this] {
    while (worker_.sleepFor(std::chrono::microseconds(kIntervalUs))) prune();
  });
}

std::int64_t RetentionTask::prune() {
  const auto now = clock_.wallNow();
  std::vector<storage::TimeRange> keep;
  storage::DrillQuery drills;
  drills.limit = 100000;
  if (auto all = drills_.drills(drills); all) {
    for (const auto& d : *all) {
      keep.push_back({d.started_us.value_or(d.created_us) - 60'000'000, d.finished_us.value_or(now) + 60'000'000});
    }
  }
  auto pruned = store_.pruneSamples(now - retention_us_, keep);
  if (!pruned) {
    spdlog::error("store: cannot prune samples: {}", pruned.error().describe());
    return -1;
  }
  spdlog::info("store: pruned {} samples older than the retention", *pruned);
  return *pruned;
}

}  // namespace kfaild::daemon
