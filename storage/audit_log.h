#pragma once

// The audit log: one row per mutating API request that carried a token or was accepted (time,
// role, peer address, method, route pattern, SHA-256 of the body, status, problem type), and,
// for refused anonymous requests, a count per minute, peer, route class and status instead of a
// row each (so that whoever can reach the port cannot grow it by a row per request). Written by
// the API's audit recorder (api/audit_endpoints.h), read by GET /api/v1/audit.
//
// Bounded by its own retention (prune(): rows and counts older than a cutoff) and its own share
// of storage.max_bytes (bytes() and pruneOldest(), run by the retention task before it deletes
// any measurement data), so audit records can never push samples, gaps or events out.
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
  std::string route;   // the route pattern ("/api/v1/drills/{id}/abort")
  std::string body_sha256;
  std::int64_t body_bytes = 0;
  int status = 0;
  std::string problem;  // the problem type's slug when refused or failed
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
  // Rows and refusal counts (added to a minute's count already stored), in one transaction.
  Status appendBatch(const std::vector<AuditRecord>& records, const std::vector<AuditRefusal>& refusals);

  Result<std::vector<AuditRecord>> records(const AuditQuery& query) const;
  // Oldest minute first; `limit` counts at most.
  Result<std::vector<AuditRefusal>> refusals(std::size_t limit) const;

  // An estimate of the bytes its rows and counts take in the file (their text and integers plus
  // SQLite's per-row overhead).
  Result<std::int64_t> bytes() const;
  // Deletes rows and counts older than `before_us`, at most `max_rows` of each; the number deleted.
  Result<std::int64_t> prune(std::int64_t before_us, std::int64_t max_rows);
  // Deletes the oldest counts, then the oldest rows, until bytes() is about `target_bytes`;
  // the number deleted.
  Result<std::int64_t> pruneOldest(std::int64_t target_bytes);

 private:
  explicit AuditLog(std::unique_ptr<sqlite::Database> db);
  Result<std::int64_t> bytesLocked() const;
  mutable std::mutex mutex_;
  std::unique_ptr<sqlite::Database> db_;  // guarded by mutex_
};

}  // namespace kfaild::storage
