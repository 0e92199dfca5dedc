#pragma once

// DrillStore on the same SQLite file as SqliteStore, through its own connection with
// synchronous=FULL: a recovery-journal entry is on disk before the fault it guards is injected.
// Open it after SqliteStore::open (which runs the migrations). All methods are serialised by one
// mutex; drills are rare, so one connection is plenty. Errors are storage errors (errc.h).

#include <memory>
#include <mutex>
#include <string>

#include "storage/drill_store.h"

namespace kfaild::storage {

namespace sqlite {
class Database;
}

class SqliteDrillStore final : public DrillStore {
 public:
  static Result<std::unique_ptr<SqliteDrillStore>> open(const std::string& path);
  ~SqliteDrillStore() override;

  Result<std::int64_t> createDrill(const DrillRecord& drill) override;
  Status updateDrill(const DrillRecord& drill) override;
  Result<std::optional<DrillRecord>> drill(std::int64_t id) const override;
  Result<std::vector<DrillRecord>> drills(const DrillQuery& query) const override;
  Result<std::vector<DrillSpan>> drillSpans(std::optional<ClusterId> cluster,
                                            TimeRange range) const override;
  // A scan of the covering index drills_by_outcome, not of the drills' rows.
  Result<std::vector<DrillCount>> drillCounts() const override;
  Result<std::vector<DrillRecord>> lastDrills(const std::string& state) const override;

  Result<std::int64_t> addRecovery(const RecoveryEntry& entry) override;
  Status updateRecovery(const RecoveryEntry& entry) override;
  Result<std::vector<RecoveryEntry>> pendingRecoveries() const override;

  Result<std::int64_t> createSchedule(const ScheduleRecord& schedule) override;
  Status updateSchedule(const ScheduleRecord& schedule) override;
  Status recordScheduleRun(const ScheduleRecord& schedule) override;
  Result<bool> deleteSchedule(std::int64_t id) override;
  Result<std::optional<ScheduleRecord>> schedule(std::int64_t id) const override;
  Result<std::vector<ScheduleRecord>> schedules(std::optional<ClusterId> cluster) const override;

 private:
  explicit SqliteDrillStore(std::unique_ptr<sqlite::Database> db);

  mutable std::mutex mutex_;
  std::unique_ptr<sqlite::Database> db_;  // guarded by mutex_
};

}  // namespace kfaild::storage
