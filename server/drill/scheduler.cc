#include "server/drill/scheduler.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "server/drill/cron.h"
#include "server/drill/drill_spec.h"

namespace kfaild::drill {

Scheduler::Scheduler(storage::DrillStore& store, const common::Clock& clock,
                     std::map<storage::ClusterId, DrillRunner*> runners)
    : store_(store), clock_(clock), runners_(std::move(runners)), worker_(clock) {}

Scheduler::~Scheduler() {
  stop();
}

void Scheduler::start() {
  worker_.start("kfaild:schedule", [this] {
    do {
      tick();
    } while (worker_.sleepFor(std::chrono::seconds(1)));
  });
}

void Scheduler::stop() {
  worker_.stop();
}

void Scheduler::save(const storage::ScheduleRecord& schedule) {
  if (auto s = store_.recordScheduleRun(schedule); !s) {
    spdlog::error("schedule {}: cannot record its run: {}", schedule.id, s.error().describe());
  }
}

void Scheduler::tick() {
  auto schedules = store_.schedules(std::nullopt);
  if (!schedules) return;
  const auto now = clock_.wallNow();
  for (auto s : *schedules) {
    if (!s.enabled) continue;
    if (!s.next_run_us) {
      const auto next = nextScheduledRun(s.cron, s.jitter_s, now);
      if (next < 0) continue;
      s.next_run_us = next;
      save(s);
      continue;
    }
    if (now < *s.next_run_us) continue;
    const auto due = *s.next_run_us;
    s.last_run_us = due;
    if (now - due > kMissedAfterUs) {
      s.last_outcome = "missed";
      spdlog::warn("schedule {} ({}): the run due at {} was missed", s.id, s.name, due);
    } else {
      auto runner = runners_.find(s.cluster);
      auto spec = parseDrillSpec(nlohmann::json::parse(s.drill, nullptr, false));
      if (runner == runners_.end()) {
        s.last_outcome = "refused: the schedule's cluster is not configured";
      } else if (!spec) {
        s.last_outcome = "refused: " + spec.error().message;
      } else {
        auto id = runner->second->submit(*spec, {s.id, true});
        s.last_outcome =
            id ? "started drill " + std::to_string(*id) : "refused: " + id.error().message;
      }
      spdlog::info("schedule {} ({}): {}", s.id, s.name, s.last_outcome);
    }
    const auto next = nextScheduledRun(s.cron, s.jitter_s, now);
    s.next_run_us = next < 0 ? std::optional<std::int64_t>() : next;
    save(s);
  }
}

}  // namespace kfaild::drill
