#pragma once

// Prunes probe samples older than storage.sample_retention, once an hour on its own thread.
// Samples around drills (a minute either side of each) are kept: their analyses can be redone.

#include <cstdint>

#include "server/common/clock.h"
#include "server/common/worker.h"
#include "storage/drill_store.h"
#include "storage/store.h"

namespace kfaild::daemon {

class RetentionTask {
 public:
  static constexpr std::int64_t kIntervalUs = 3'600'000'000;

  RetentionTask(storage::Store& store, const storage::DrillStore& drills, const common::Clock& clock,
                std::int64_t retention_us)
      : store_(store), drills_(drills), clock_(clock), retention_us_(retention_us), worker_(clock) {}
  ~RetentionTask() { stop(); }

  void start();
  void stop() { worker_.stop(); }
  // One pass now; how many samples it removed (-1 when the database refused).
  std::int64_t prune();

 private:
  storage::Store& store_;
  const storage::DrillStore& drills_;
  const common::Clock& clock_;
  std::int64_t retention_us_;
  common::Worker worker_;  // last: stopped before the members above go
};

}  // namespace kfaild::daemon
