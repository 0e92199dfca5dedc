#pragma once

// The schema's history. The database's version is `PRAGMA user_version`: the number of steps of
// kSchemaMigrations applied to it. Opening a database applies the missing steps in order, each in
// its own transaction together with the version bump, so a crash or a failing step leaves the
// file at the last complete version. A database whose version is above the number of steps this
// build knows was written by a newer kfaild and is refused (newer_schema), never modified.
//
// To change the schema, append a step to kSchemaMigrations in migrations.cc, and document the
// result in storage/README.md. Never edit or reorder a step that has shipped.

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "storage/sqlite.h"

namespace kfaild::storage {

struct Migration {
  std::string_view description;
  std::string_view sql;  // one or more statements
  // Optional: a data conversion that `sql` depends on, too big for one transaction. migrate()
  // calls it first inside the step's transaction; while it returns true (it moved a full batch,
  // more may remain), that transaction commits with the version unchanged and the next one calls
  // it again. When it returns false (it moved the last, partial batch, or nothing), `sql` and the
  // version bump follow in the same transaction. So each call must move one bounded batch and
  // leave the database consistent: a crash between two calls leaves the version unchanged, and
  // the next open continues where it stopped.
  Result<bool> (*convert)(sqlite::Database& db) = nullptr;
};

// kfaild's steps, oldest first; step i brings the schema to version i + 1.
std::span<const Migration> schemaMigrations();
int latestSchemaVersion();

// The version stamped in `db`.
Result<int> schemaVersion(sqlite::Database& db);

// For the connections that do not migrate (drill store, audit log): fails with migration_failed
// unless `db` (the file at `path`) is at latestSchemaVersion(); SqliteStore::open migrates.
Status requireLatestSchema(sqlite::Database& db, const std::string& path);

// A second connection to a migrated database for a small writer of its own (audit log,
// notification queue): WAL, synchronous NORMAL, a 10 s busy timeout, the schema checked.
Result<std::unique_ptr<sqlite::Database>> openAtLatestSchema(const std::string& path);

// Brings `db` to version steps.size(). Safe against another process migrating the same file at
// the same time (each step re-reads the version under the write lock). Errors: newer_schema,
// migration_failed (message names the step and keeps SQLite's text), busy, io_error, disk_full,
// read_only.
Status migrate(sqlite::Database& db, std::span<const Migration> steps);

}  // namespace kfaild::storage
