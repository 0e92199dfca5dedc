#pragma once

// The notification queue (table `notifications`): one row per (receiver, event) with the payload
// as it will be sent, its delivery state and its retry schedule. Written by the notifier
// (server/notify), read by GET /api/v1/notifications and /metrics.
//
// States: queued → delivering (claimed by the worker) → delivered | queued (retry later) |
// failed (given up). A row left `delivering` by a kfaild that died is queued again by
// requeueInterrupted() at the next start: it may have been sent already (at-least-once).
// enqueue() ignores a row whose (receiver, dedup_key) exists: that is the dedup.
//
// Its own connection to the database file (WAL); every method is safe from any thread.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace kfaild::storage {

namespace sqlite {
class Database;
}

struct NotificationRecord {
  std::int64_t id = 0;
  std::string receiver;   // the configured receiver's name
  std::string event;      // drill_finished | drill_failed | regression | incident
  std::string dedup_key;  // unique per receiver
  std::string payload;    // the body sent, as rendered when queued
  std::string state = "queued";
  std::int64_t attempts = 0;
  std::int64_t next_attempt_us = 0;  // wall µs; when the worker may try (again)
  std::string last_error;
  std::int64_t created_us = 0;
  std::optional<std::int64_t> delivered_us;
};

struct NotificationQuery {
  std::optional<std::string> state;
  std::optional<std::string> receiver;
  std::optional<std::string> event;
  std::optional<std::int64_t> before_id;  // cursor: only rows with a smaller id
  std::size_t limit = 50;                 // newest first
};

// Rows per (receiver, state), for /metrics.
struct NotificationCount {
  std::string receiver;
  std::string state;
  std::int64_t count = 0;
};

class NotificationQueue {
 public:
  // The database must already be at the latest schema (SqliteStore::open migrates it).
  static Result<std::unique_ptr<NotificationQueue>> open(const std::string& path);
  ~NotificationQueue();
  NotificationQueue(const NotificationQueue&) = delete;
  NotificationQueue& operator=(const NotificationQueue&) = delete;

  // Inserts the row (state queued) unless one with the same receiver and dedup_key exists: the
  // new row's id, or nullopt when it was a duplicate.
  Result<std::optional<std::int64_t>> enqueue(const NotificationRecord& record);
  // Rows in state queued whose next_attempt_us <= now_us, oldest first, at most `limit`; each is
  // set to delivering in the same transaction, so no two callers claim one row.
  Result<std::vector<NotificationRecord>> claimDue(std::int64_t now_us, std::size_t limit);
  // The outcome of one attempt of a claimed row: attempts + 1, and the new state.
  Status markDelivered(std::int64_t id, std::int64_t now_us);
  Status markRetry(std::int64_t id, std::int64_t next_attempt_us, const std::string& error);
  Status markFailed(std::int64_t id, const std::string& error);
  // Rows left `delivering` (by a kfaild that stopped mid-attempt) go back to queued, due now.
  Result<std::int64_t> requeueInterrupted(std::int64_t now_us);
  // The earliest next_attempt_us of a queued row, if any.
  Result<std::optional<std::int64_t>> nextDue() const;

  Result<std::optional<NotificationRecord>> notification(std::int64_t id) const;
  Result<std::vector<NotificationRecord>> notifications(const NotificationQuery& query) const;
  Result<std::vector<NotificationCount>> counts() const;

 private:
  explicit NotificationQueue(std::unique_ptr<sqlite::Database> db);
  Status finishAttempt(std::int64_t id, const std::string& state,
                       std::optional<std::int64_t> next_us,
                       std::optional<std::int64_t> delivered_us, const std::string& error);
  mutable std::mutex mutex_;
  std::unique_ptr<sqlite::Database> db_;  // guarded by mutex_
};

}  // namespace kfaild::storage
