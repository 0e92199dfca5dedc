#pragma once

// The audit log: one row per mutating API request (time, role, peer address, method, route
// pattern, SHA-256 of the body, status, problem type), written by the API's audit sink and read
// by GET /api/v1/audit. Rows are never pruned by retention: they are few (one per change an
// operator or a script asked for, or per refused attempt) and are the record of who did what.
//
// Its own connection to the database file (WAL: it never blocks the probe's writer for longer
// than one insert); every method is safe from any thread.

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

  Result<std::int64_t> append(const AuditRecord& record);
  Result<std::vector<AuditRecord>> records(const AuditQuery& query) const;

 private:
  explicit AuditLog(std::unique_ptr<sqlite::Database> db);
  mutable std::mutex mutex_;
  std::unique_ptr<sqlite::Database> db_;  // guarded by mutex_
};

}  // namespace kfaild::storage
