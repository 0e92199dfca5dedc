#include "storage/sqlite.h"

#include <sqlite3.h>

#include <utility>

namespace kfaild::storage::sqlite {

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

// Bind calls can only fail on a bad index or out of memory, both bugs or fatal; the following
// step reports the latter anyway.
void Statement::bindInt(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
}

void Statement::bindOptionalInt(int index, std::optional<std::int64_t> value) {
  if (value) {
    sqlite3_bind_int64(stmt_, index, *value);
  } else {
    sqlite3_bind_null(stmt_, index);
  }
}

void Statement::bindText(int index, std::string_view text) {
  sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

void Statement::bindOptionalText(int index, const std::optional<std::string>& text) {
  if (text) {
    bindText(index, *text);
  } else {
    sqlite3_bind_null(stmt_, index);
  }
}

void Statement::bindBlob(int index, std::string_view bytes) {
  sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
}

int Statement::stepRaw() {
  return sqlite3_step(stmt_);
}

Result<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return error(rc);
}

Status Statement::run() {
  for (;;) {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_DONE) return okStatus();
    if (rc != SQLITE_ROW) return error(rc);
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::int64_t Statement::columnInt(int index) const {
  return sqlite3_column_int64(stmt_, index);
}

std::optional<std::int64_t> Statement::columnOptionalInt(int index) const {
  if (sqlite3_column_type(stmt_, index) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(stmt_, index);
}

std::string Statement::columnText(int index) const {
  const auto* text = sqlite3_column_text(stmt_, index);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text),
          static_cast<std::size_t>(sqlite3_column_bytes(stmt_, index))};
}

std::optional<std::string> Statement::columnOptionalText(int index) const {
  if (sqlite3_column_type(stmt_, index) == SQLITE_NULL) return std::nullopt;
  return columnText(index);
}

std::string_view Statement::columnBlob(int index) const {
  const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt_, index));
  if (bytes == nullptr) return {};
  return {bytes, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, index))};
}

Error Statement::error(int code) const {
  // The SQL on one line, so a log line stays one line.
  std::string sql;
  for (const char* c = sqlite3_sql(stmt_); *c != '\0'; ++c) {
    const bool space = *c == ' ' || *c == '\n' || *c == '\t';
    if (!space) {
      sql += *c;
    } else if (!sql.empty() && sql.back() != ' ') {
      sql += ' ';
    }
  }
  return Error{errcFromSqlite(code, errc::query_failed),
               "running \"" + sql + "\": " + sqlite3_errmsg(db_)};
}

Result<std::unique_ptr<Database>> Database::open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Error error{errcFromSqlite(rc, errc::open_failed),
                "opening " + path + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc))};
    // A read-only or unreachable file is an open failure to the caller, whatever SQLite calls it.
    if (error.code != errc::io_error) error.code = errc::open_failed;
    sqlite3_close_v2(db);
    return error;
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Database>(new Database(db, path));
}

Database::~Database() {
  sqlite3_close_v2(db_);
}

Status Database::exec(std::string_view sql, errc fallback) {
  char* message = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return okStatus();
  std::string detail = message ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return Error{errcFromSqlite(rc, fallback), detail};
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    return error(rc, errc::query_failed, "preparing \"" + std::string(sql) + "\"");
  }
  return Statement(db_, stmt);
}

Result<std::int64_t> Database::queryInt(std::string_view sql) {
  auto statement = prepare(sql);
  if (!statement) return statement.error();
  auto row = statement->step();
  if (!row) return row.error();
  return *row ? statement->columnInt(0) : 0;
}

void Database::setBusyTimeout(std::chrono::milliseconds timeout) {
  sqlite3_busy_timeout(db_, static_cast<int>(timeout.count()));
}

std::int64_t Database::changes() const {
  return sqlite3_changes64(db_);
}

bool Database::inTransaction() const {
  return sqlite3_get_autocommit(db_) == 0;
}

void Database::rollbackQuietly() {
  if (inTransaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Error Database::error(int code, errc fallback, std::string_view doing) const {
  return Error{errcFromSqlite(code, fallback), std::string(doing) + ": " + sqlite3_errmsg(db_)};
}

}  // namespace kfaild::storage::sqlite
