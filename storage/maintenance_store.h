#pragma once

// Planned-maintenance windows (tables `maintenance_windows`, `maintenance_silences`): what
// server/maintenance/maintenance_windows.h keeps. A window covers [started_us, end) of one
// cluster, where end is ends_us, or closed_us when it was closed earlier; rows are never deleted.
// Per window and Alertmanager receiver, one silence row tracks the silence kfaild keeps there:
//
//   creating → active (silence_id set) → expiring (closed early) → ended
//            ↘ failed (given up)                                 ↗ (or the window ran out)
//
// Its own connection to the database file (WAL); every method is safe from any thread.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "storage/records.h"

namespace kfaild::storage {

namespace sqlite {
class Database;
}

struct MaintenanceSilenceRecord {
  std::int64_t window_id = 0;
  std::string receiver;            // the configured Alertmanager receiver's name
  std::string silence_id;          // Alertmanager's, once created
  std::string state = "creating";  // creating | active | expiring | ended | failed
  std::int64_t attempts = 0;       // failed attempts at the current step
  std::int64_t created_us = 0;     // when the current step began (the backoff's age)
  std::int64_t next_attempt_us = 0;
  std::string last_error;  // of the last failed attempt; empty after a success
};

struct MaintenanceWindowRecord {
  std::int64_t id = 0;  // assigned by the store
  ClusterId cluster = 0;
  std::string cluster_name;  // read back from `clusters`; ignored by insert
  std::string reason;
  std::string opened_by;
  std::int64_t started_us = 0;
  std::int64_t ends_us = 0;               // as opened
  std::optional<std::int64_t> closed_us;  // closed early
  std::string closed_by;
  std::vector<MaintenanceSilenceRecord> silences;  // read back; ignored by insert

  // Where the window stops covering: its end, or when it was closed.
  std::int64_t endUs() const { return closed_us ? std::min(*closed_us, ends_us) : ends_us; }
  bool activeAt(std::int64_t at_us) const { return started_us <= at_us && at_us < endUs(); }
};

class MaintenanceStore {
 public:
  // The database must already be at the latest schema (SqliteStore::open migrates it).
  static Result<std::unique_ptr<MaintenanceStore>> open(const std::string& path);
  ~MaintenanceStore();
  MaintenanceStore(const MaintenanceStore&) = delete;
  MaintenanceStore& operator=(const MaintenanceStore&) = delete;

  // Inserts the window and a `creating` silence row per receiver (due at started_us), in one
  // transaction; the window's id.
  Result<std::int64_t> insert(const MaintenanceWindowRecord& window,
                              const std::vector<std::string>& receivers);
  // Closes the window at `closed_us` if it is still open then; its silences that are active or
  // still being created move to `expiring`/`ended`. False when the window is unknown, already
  // closed, or already over at closed_us.
  Result<bool> close(std::int64_t id, std::int64_t closed_us, const std::string& closed_by);

  Result<std::optional<MaintenanceWindowRecord>> window(std::int64_t id) const;
  // The cluster's windows that cover any instant of [from_us, to_us), oldest first, at most
  // `limit`; with their silences. An empty range (from_us >= to_us) covers none.
  Result<std::vector<MaintenanceWindowRecord>> windows(ClusterId cluster, std::int64_t from_us,
                                                       std::int64_t to_us, std::size_t limit) const;
  // Every cluster's windows that cover `at_us`, oldest first.
  Result<std::vector<MaintenanceWindowRecord>> activeAt(std::int64_t at_us) const;

  // Silence rows in state creating or expiring due at `now_us`, oldest first.
  Result<std::vector<MaintenanceSilenceRecord>> silencesDue(std::int64_t now_us) const;
  // The earliest next_attempt_us of a creating or expiring row.
  Result<std::optional<std::int64_t>> nextSilenceDue() const;
  // Writes back a silence row's state, silence_id, attempts, created_us, next_attempt_us and
  // last_error (keyed by window_id and receiver).
  Status updateSilence(const MaintenanceSilenceRecord& silence);
  // Active silences whose window ran out before `now_us` become `ended` (Alertmanager ended them
  // by their endsAt); the number of rows changed.
  Result<std::int64_t> endRunOutSilences(std::int64_t now_us);

 private:
  explicit MaintenanceStore(std::unique_ptr<sqlite::Database> db);
  Status attachSilences(std::vector<MaintenanceWindowRecord>& windows) const;  // mutex_ held
  mutable std::mutex mutex_;
  std::unique_ptr<sqlite::Database> db_;  // guarded by mutex_
};

}  // namespace kfaild::storage
