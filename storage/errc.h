#pragma once

// Errors of the SQLite store. Error::message keeps what SQLite said (sqlite3_errmsg) and what the
// store was doing, so a report names both the cause and the operation.

#include <string_view>
#include <system_error>

#include "server/common/result.h"

namespace kfaild::storage {

enum class errc {
  open_failed = 1,   // the file cannot be opened or set up (missing directory, not a database)
  migration_failed,  // a schema migration step failed; the database is left at the previous version
  newer_schema,      // the file was written by a newer kfaild; refusing to touch it
  query_failed,      // a statement failed for a reason not listed below
  io_error,          // the OS reported an I/O error, or the file is corrupt
  disk_full,         // SQLITE_FULL: no space left, or max_page_count reached
  read_only,         // the file or its directory cannot be written
  busy,              // another connection held the lock longer than the busy timeout
  shutting_down,     // the store is being destroyed; the request was not run
};

const std::error_category& storageCategory();
std::error_code make_error_code(errc e);

// Classifies a SQLite result code (primary or extended). Codes with no specific meaning for the
// caller map to `fallback`.
errc errcFromSqlite(int sqlite_code, errc fallback);

}  // namespace kfaild::storage

template <>
struct std::is_error_code_enum<kfaild::storage::errc> : true_type {};
