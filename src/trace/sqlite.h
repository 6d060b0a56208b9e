// A thin RAII layer over SQLite's C API for the trace store: a connection and prepared statements.
// Every failure is a tilescope::Error that names the trace file and says what SQLite said; a file that
// is not a database or is damaged says so in words a user understands.
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tilescope/ir/diag.h"

namespace tilescope::trace {

/// What SQLite's result code `rc` means for a trace file, for messages.
inline std::string sqlite_problem(int rc, const char* msg) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB: return "not a tilescope trace (not an SQLite database)";
    case SQLITE_CORRUPT: return fmt::format("the trace is truncated or corrupted (SQLite: {})", msg);
    case SQLITE_CANTOPEN: return fmt::format("cannot open ({})", msg);
    case SQLITE_BUSY: return fmt::format("the file stayed locked by another process ({})", msg);
    default: return msg;
  }
}

class Db {
 public:
  Db(const std::string& path, bool write) : path_(path) {
    const int flags =
        (write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw Error(fmt::format("{}: {}", path, sqlite_problem(rc, msg.c_str())));
    }
    sqlite3_extended_result_codes(db_, 1);
    // Several processes of one run write one file: wait for each other's transactions.
    sqlite3_busy_timeout(db_, 120'000);
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }
  /// Throws the error for result code `rc` of `what`; a file that is not a database or is damaged is
  /// said as such, whatever was being done.
  [[noreturn]] void fail(int rc, std::string_view what) const {
    const std::string problem = sqlite_problem(rc, sqlite3_errmsg(db_));
    if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
      throw Error(fmt::format("{}: {}", path_, problem));
    throw Error(fmt::format("{}: {}: {}", path_, what, problem));
  }
  void exec(const char* sql, std::string_view what = "SQL") const {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      sqlite3_free(err);
      fail(rc, what);
    }
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt(const Db& db, const char* sql) : db_(db) {
    const int rc = sqlite3_prepare_v2(db.get(), sql, -1, &s_, nullptr);
    if (rc != SQLITE_OK) db.fail(rc, "reading the schema");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v) {
    check(sqlite3_bind_int64(s_, i, v));
    return *this;
  }
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, double v) {
    check(sqlite3_bind_double(s_, i, v));
    return *this;
  }
  Stmt& bind(int i, std::string_view v) {
    check(sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
    return *this;
  }
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  /// Binds `n` bytes at `data` without copying them: they must stay valid until the statement is run
  /// and reset (run() does both).
  Stmt& blob(int i, const void* data, size_t n) {
    check(sqlite3_bind_blob64(s_, i, n ? data : "", n, SQLITE_STATIC));
    return *this;
  }
  Stmt& null(int i) {
    check(sqlite3_bind_null(s_, i));
    return *this;
  }
  /// One step: true when a row is ready.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    db_.fail(rc, "reading or writing the trace");
  }
  /// Run a statement that returns no rows, then reset it for the next bindings.
  void run() {
    step();
    reset();
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  double f64(int col) const { return sqlite3_column_double(s_, col); }
  bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, col))) : std::string();
  }
  std::span<const std::byte> bytes(int col) const {
    const void* p = sqlite3_column_blob(s_, col);
    return {static_cast<const std::byte*>(p), p ? static_cast<size_t>(sqlite3_column_bytes(s_, col)) : 0};
  }

 private:
  void check(int rc) const {
    if (rc != SQLITE_OK) db_.fail(rc, "binding a value");
  }
  const Db& db_;
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace tilescope::trace
