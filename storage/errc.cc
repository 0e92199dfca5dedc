#include "storage/errc.h"

#include <sqlite3.h>

namespace kfaild::storage {
namespace {

class StorageCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "storage"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::open_failed:
        return "cannot open database";
      case errc::migration_failed:
        return "schema migration failed";
      case errc::newer_schema:
        return "database schema is newer than this kfaild";
      case errc::query_failed:
        return "database query failed";
      case errc::io_error:
        return "database I/O error";
      case errc::disk_full:
        return "database or disk is full";
      case errc::read_only:
        return "database is read-only";
      case errc::busy:
        return "database is locked";
      case errc::shutting_down:
        return "store is shutting down";
    }
    return "unknown storage error";
  }
};

}  // namespace

const std::error_category& storageCategory() {
  static const StorageCategory category;
  return category;
}

std::error_code make_error_code(errc e) {
  return {static_cast<int>(e), storageCategory()};
}

errc errcFromSqlite(int sqlite_code, errc fallback) {
  switch (sqlite_code & 0xff) {
    case SQLITE_FULL:
      return errc::disk_full;
    case SQLITE_READONLY:
      return errc::read_only;
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return errc::io_error;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return errc::busy;
    default:
      return fallback;
  }
}

}  // namespace kfaild::storage
