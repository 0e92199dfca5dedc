#pragma once

// Fires drills on their cron schedules (UTC, with an optional random delay). A run that fell due
// while kfaild was down is recorded as missed — never fired late, never in a burst. A scheduled
// drill queues behind a running drill of its cluster; a guard's refusal is recorded as the
// schedule's outcome. Own thread (a common::Worker), woken once a second or by stop().

#include <cstdint>
#include <map>
#include <string>

#include "server/common/clock.h"
#include "server/common/worker.h"
#include "server/drill/drill_runner.h"
#include "storage/drill_store.h"

namespace kfaild::drill {

class Scheduler {
 public:
  // `runners` by cluster id; they must outlive the scheduler.
  Scheduler(storage::DrillStore& store, const common::Clock& clock,
            std::map<storage::ClusterId, DrillRunner*> runners);
  ~Scheduler();

  void start();
  void stop();
  // One pass over the schedules at the clock's current time (the thread calls it every second;
  // tests call it directly with a manual clock).
  void tick();

  // A run counts as missed when it is found this long after it fell due.
  static constexpr std::int64_t kMissedAfterUs = 60'000'000;

 private:
  void save(const storage::ScheduleRecord& schedule);

  storage::DrillStore& store_;
  const common::Clock& clock_;
  std::map<storage::ClusterId, DrillRunner*> runners_;
  common::Worker worker_;  // last: stopped before the members above go
};

}  // namespace kfaild::drill
