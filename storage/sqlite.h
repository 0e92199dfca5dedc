#pragma once

// A thin RAII layer over the SQLite C API for the store (and for its tests, which use it to
// inspect or lock a database file). sqlite3.h stays out of includers.
//
// Threading: a Database and its Statements belong to one thread at a time; connections are opened
// in SQLite's multi-thread mode (SQLITE_OPEN_NOMUTEX), so the owner serialises all use.
// Errors come back as kfaild::Error in the storage category (errc.h); the message names what was
// being done and keeps sqlite3_errmsg's text.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "storage/errc.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kfaild::storage::sqlite {

class Statement {
 public:
  Statement() = default;  // holds nothing until a prepared one is moved in
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameter indexes are 1-based, as in SQL (?1, ?2, ...). Text is copied.
  void bindInt(int index, std::int64_t value);
  void bindOptionalInt(int index, std::optional<std::int64_t> value);
  void bindText(int index, std::string_view text);
  void bindOptionalText(int index, const std::optional<std::string>& text);
  void bindBlob(int index, std::string_view bytes);  // copied

  // One step; the raw SQLite code (SQLITE_ROW, SQLITE_DONE or an error), for callers that treat
  // some errors differently from others.
  int stepRaw();
  // One step: true with a row to read, false when done.
  Result<bool> step();
  // Steps to the end, ignoring rows (INSERT, UPDATE, DELETE).
  Status run();
  // Makes the statement ready to run again; clears the bindings.
  void reset();

  // Column indexes are 0-based. A NULL reads as 0 / "" / nullopt.
  std::int64_t columnInt(int index) const;
  std::optional<std::int64_t> columnOptionalInt(int index) const;
  std::string columnText(int index) const;
  std::optional<std::string> columnOptionalText(int index) const;
  // Valid until the next step, reset or column call on this statement; NULL reads as empty.
  std::string_view columnBlob(int index) const;

  // The error for a failed step, worded with the statement's SQL.
  Error error(int code) const;

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

class Database {
 public:
  // Opens the file read-write, creating it when missing. Fails with open_failed (or io_error when
  // the file exists but is not a database).
  static Result<std::unique_ptr<Database>> open(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements that return no rows needed by the caller.
  Status exec(std::string_view sql, errc fallback = errc::query_failed);
  Result<Statement> prepare(std::string_view sql);
  // The first column of the first row (NULL and no row read as 0); for PRAGMAs and counts.
  Result<std::int64_t> queryInt(std::string_view sql);

  void setBusyTimeout(std::chrono::milliseconds timeout);
  // Rows changed by the last INSERT, UPDATE or DELETE on this connection.
  std::int64_t changes() const;
  // True between BEGIN and COMMIT/ROLLBACK (SQLite may roll back by itself after some errors).
  bool inTransaction() const;
  // Rolls back if a transaction is open; for error paths, where the original error matters more.
  void rollbackQuietly();

  // The last error on this connection as an Error; `code` is the failing call's result.
  Error error(int code, errc fallback, std::string_view doing) const;

  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_;
  std::string path_;
};

}  // namespace kfaild::storage::sqlite
