#pragma once

// The audit log: one row per mutating API request that carried a token or was accepted (time,
// role, peer address, method, route pattern, SHA-256 of the body, status, problem type), and,
// for refused anonymous requests, a count per minute, peer, route class and status instead of a
// row each (so that whoever can reach the port cannot grow it by a row per request). Refused
// requests with a token past the first few of a minute share one aggregated row per minute,
// role, method, route class and status, with their count (api/audit_endpoints.h). Written by
// the API's audit recorder, read by GET /api/v1/audit.
//
// Bounded by its own retention (prune(): rows and counts older than a cutoff) and its own share
// of storage.max_bytes (bytes() and pruneOldest(), run by the retention task before it deletes
// any measurement data), so audit records can never push samples, gaps or events out. The
// budget takes refusals only: an accepted change's row (status below 400) goes by retention
// alone, so a flood of refused requests cannot push out who changed what.
//
// Its own connection to the database file (WAL: it never blocks the probe's writer for longer
// than one transaction); every method is safe from any thread.

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

struct AuditRecord {
  std::int64_t id = 0;
  std::int64_t time_us = 0;
  std::string role;    // operator | viewer | anonymous
  std::string remote;  // the peer's IP address
  std::string method;
  std::string route;  // the route pattern ("/api/v1/drills/{id}/abort")
  std::string body_sha256;
  std::int64_t body_bytes = 0;
  int status = 0;
  std::string problem;  // the problem type's slug when refused or failed
  // Requests this row stands for: 1, or for an aggregated row (time_us the minute's start,
  // body_sha256 empty, body_bytes their sum, remote the peer or "(several)") their number.
  std::int64_t count = 1;
  bool aggregated = false;
};

// Refused anonymous requests of one minute from one peer to one route class with one status.
struct AuditRefusal {
  std::int64_t minute_us = 0;  // the minute's start (wall clock)
  std::string remote;
  std::string route_class;  // the route pattern, or "unmatched" for a path no route has
  int status = 0;
  std::int64_t count = 0;
};

struct AuditQuery {
  std::optional<std::int64_t> from_us;
  std::optional<std::int64_t> to_us;
  std::optional<std::int64_t> before_id;  // cursor: only rows with a smaller id
  std::size_t limit = 50;                 // newest first
};

class AuditLog {
 public:
  // The database must already be at the latest schema (SqliteStore::open migrates it).
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // One row, committed when this returns.
  Result<std::int64_t> append(const AuditRecord& record);
  // Rows and refusal counts (added to a minute's count already stored), in one transaction. An
  // aggregated row is added to the stored one of its minute, role, method, route and status
  // (count and body_bytes summed; remote "(several)" once two peers differ).
  Status appendBatch(const std::vector<AuditRecord>& records,
                     const std::vector<AuditRefusal>& refusals);

  Result<std::vector<AuditRecord>> records(const AuditQuery& query) const;
  // Oldest minute first; `limit` counts at most.
  Result<std::vector<AuditRefusal>> refusals(std::size_t limit) const;

  // An estimate of the bytes its rows and counts take in the file (their text and integers plus
  // SQLite's per-row overhead).
  Result<std::int64_t> bytes() const;
  // Deletes rows and counts older than `before_us`, at most `max_rows` of each; the number deleted.
  Result<std::int64_t> prune(std::int64_t before_us, std::int64_t max_rows);
  // Deletes the oldest counts, then the oldest refused rows (status 400 and above), until bytes()
  // is about `target_bytes`; never an accepted row, so the log may stay above the target when
  // those alone take more. The number deleted.
  Result<std::int64_t> pruneOldest(std::int64_t target_bytes);

 private:
  explicit AuditLog(std::unique_ptr<sqlite::Database> db);
  Result<std::int64_t> bytesLocked() const;
  mutable std::mutex mutex_;
  std::unique_ptr<sqlite::Database> db_;  // guarded by mutex_
};

}  // namespace kfaild::storage
