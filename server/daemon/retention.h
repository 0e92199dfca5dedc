#pragma once

// Keeps the database bounded: deletes what is older than its kind's retention, and, with a size
// bound, the oldest records until the database's used pages fit under it. Runs once at start and
// then every `interval_us` on its own thread (so a kfaild restarted every few minutes prunes as
// well as one that runs for months).
//
// Kinds, each with its own retention (nullopt: kept forever):
//   - raw samples: probe samples outside every drill window;
//   - drill samples: probe samples inside a drill window (from `drill_margin_us` before the
//     drill started to as long after it finished, or after now while it runs), kept longer so
//     a drill's analysis can be redone;
//   - gaps (by their end) and events.
//   - the audit log's rows and refusal counts (storage/audit_log.h), when the task has one.
// Clusters, probe partitions, drills and the recovery journal are never deleted.
//
// The audit log also has a byte budget (`audit_max_bytes`; unset: 5 % of max_bytes, or 64 MiB
// without a size bound). Every pass first deletes its oldest counts and refused rows until it
// fits its budget, and only then looks at max_bytes: the audit log counts in the used size, but
// refusals take at most its budget of it, so measurement data keeps max_bytes minus that budget
// and is never deleted to make room for refusals. Accepted changes are kept for audit_us
// whatever their size; a pass that finds them alone over the budget logs it and counts a failure.
//
// Size bound (`max_bytes`, used pages × page size): when over it, a pass deletes oldest first,
// raw samples, then drill samples, then gaps and events, until the used size is at most 90 % of
// the bound, so that the next interval's writes fit in the pages freed. When the file itself is
// larger than the bound (the bound was lowered) and the database is in incremental auto-vacuum
// mode, the free pages beyond the bound are given back to the file system.
//
// Failures are never silent: every failed step is logged (warn, with SQLite's message) and
// counted in retentionReport().failures; the pass goes on with the next step.
//
// Thread-safety: start()/stop() from the owner; prune() from any thread (passes never overlap);
// retentionReport() from any thread. Work is done in calls of at most `rows_per_call` rows, and
// stop() takes effect between two of them.

#include <cstdint>
#include <mutex>
#include <optional>

#include "server/common/clock.h"
#include "server/common/worker.h"
#include "storage/audit_log.h"
#include "storage/drill_store.h"
#include "storage/retention_status.h"
#include "storage/store.h"

namespace kfaild::daemon {

struct RetentionPolicy {
  static constexpr std::int64_t kHourUs = 3'600'000'000;

  std::optional<std::int64_t> samples_us = 7 * 24 * kHourUs;
  std::optional<std::int64_t> drill_samples_us = 90 * 24 * kHourUs;
  std::optional<std::int64_t> gaps_us = 365 * 24 * kHourUs;
  std::optional<std::int64_t> events_us = 90 * 24 * kHourUs;
  std::optional<std::int64_t> audit_us = 365 * 24 * kHourUs;
  std::optional<std::int64_t> max_bytes{};
  std::optional<std::int64_t> audit_max_bytes{};
  std::int64_t interval_us = 600'000'000;
  std::int64_t drill_margin_us = 60'000'000;
  std::int64_t rows_per_call = 100'000;

  // The audit log's budget in bytes.
  std::int64_t auditBudget() const {
    return audit_max_bytes.value_or(max_bytes ? *max_bytes / 20 : 64LL * 1024 * 1024);
  }
};

// What one pass deleted; `ok` when no step failed.
struct RetentionPass {
  std::int64_t samples = 0;
  std::int64_t drill_samples = 0;
  std::int64_t gaps = 0;
  std::int64_t events = 0;
  std::int64_t audit = 0;  // audit rows and refusal counts
  bool ok = true;
};

class RetentionTask final : public storage::RetentionStatus {
 public:
  // `audit` may be null (no audit log to keep bounded); it must outlive the task.
  RetentionTask(storage::Store& store, const storage::DrillStore& drills, storage::AuditLog* audit,
                const common::Clock& clock, RetentionPolicy policy);
  RetentionTask(storage::Store& store, const storage::DrillStore& drills,
                const common::Clock& clock, RetentionPolicy policy)
      : RetentionTask(store, drills, nullptr, clock, policy) {}
  ~RetentionTask() override { stop(); }
  RetentionTask(const RetentionTask&) = delete;
  RetentionTask& operator=(const RetentionTask&) = delete;

  // A pass now on the task's thread, then one every interval.
  void start();
  void stop() { worker_.stop(); }
  // One pass now, on the caller's thread.
  RetentionPass prune();

  storage::RetentionReport retentionReport() const override;

 private:
  class Pass;

  storage::Store& store_;
  const storage::DrillStore& drills_;
  storage::AuditLog* audit_;
  const common::Clock& clock_;
  const RetentionPolicy policy_;

  std::mutex pass_mutex_;  // held for a whole pass
  mutable std::mutex report_mutex_;
  storage::RetentionReport report_;  // guarded by report_mutex_

  common::Worker worker_;  // last: stopped before the members above go
};

}  // namespace kfaild::daemon
