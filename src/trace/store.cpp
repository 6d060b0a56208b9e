// The trace store (trace.h): the schema, the writer's per-launch transaction and the reader.
// Schema and budget rule: docs/trace-format.md (keep them in sync with kSchema and Writer::run).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "contents.h"
#include "recorder.h"
#include "sqlite.h"
#include "tilescope/ir/elem.h"
#include "tilescope/report/report.h"
#include "tilescope/trace/trace.h"

namespace tilescope::trace {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormatName = "tilescope-trace";

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kernels(id INTEGER PRIMARY KEY, hash TEXT NOT NULL, name TEXT NOT NULL,
  ttir_file TEXT NOT NULL, ttir TEXT NOT NULL, language TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS kernels_hash ON kernels(hash);
CREATE TABLE IF NOT EXISTS sites(kernel INTEGER NOT NULL, site INTEGER NOT NULL, op TEXT NOT NULL,
  ttir_line INTEGER NOT NULL, ttir_col INTEGER NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL,
  col INTEGER NOT NULL, var TEXT NOT NULL, inlined_from TEXT NOT NULL, dot TEXT,
  PRIMARY KEY(kernel, site));
CREATE TABLE IF NOT EXISTS sources(id INTEGER PRIMARY KEY, path TEXT NOT NULL, hash TEXT NOT NULL,
  content BLOB NOT NULL, UNIQUE(path, hash));
CREATE TABLE IF NOT EXISTS launches(id INTEGER PRIMARY KEY, kernel INTEGER NOT NULL, name TEXT NOT NULL,
  process INTEGER NOT NULL, started REAL NOT NULL, ended REAL NOT NULL, seconds REAL NOT NULL,
  grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL, programs INTEGER NOT NULL,
  record TEXT NOT NULL, analyses TEXT NOT NULL, findings TEXT NOT NULL, reports TEXT NOT NULL,
  statistics TEXT NOT NULL, error TEXT, detail_stride INTEGER NOT NULL, dropped TEXT NOT NULL,
  bytes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS launch_sources(launch INTEGER NOT NULL, source INTEGER NOT NULL,
  PRIMARY KEY(launch, source));
CREATE TABLE IF NOT EXISTS site_stats(launch INTEGER NOT NULL, site INTEGER NOT NULL,
  executions INTEGER NOT NULL, lanes INTEGER NOT NULL, active INTEGER NOT NULL, oob INTEGER NOT NULL,
  bytes INTEGER NOT NULL, stored INTEGER NOT NULL, PRIMARY KEY(launch, site));
CREATE TABLE IF NOT EXISTS contents(launch INTEGER NOT NULL, arg INTEGER NOT NULL, phase TEXT NOT NULL,
  host_addr INTEGER NOT NULL, bytes INTEGER NOT NULL, chunks INTEGER NOT NULL DEFAULT 0,
  unchanged INTEGER NOT NULL DEFAULT 0, period INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(launch, arg, phase));
CREATE TABLE IF NOT EXISTS content_chunks(launch INTEGER NOT NULL, arg INTEGER NOT NULL,
  phase TEXT NOT NULL, chunk INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(launch, arg, phase, chunk));
CREATE TABLE IF NOT EXISTS element_counts(launch INTEGER NOT NULL, arg INTEGER NOT NULL,
  loads BLOB NOT NULL, stores BLOB NOT NULL, PRIMARY KEY(launch, arg));
CREATE TABLE IF NOT EXISTS accesses(launch INTEGER NOT NULL, site INTEGER NOT NULL, pid_x INTEGER NOT NULL,
  pid_y INTEGER NOT NULL, pid_z INTEGER NOT NULL, seq INTEGER NOT NULL, arg INTEGER NOT NULL,
  kind TEXT NOT NULL, lanes INTEGER NOT NULL, active INTEGER NOT NULL, oob INTEGER NOT NULL,
  runs BLOB NOT NULL, oob_runs BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS accesses_program ON accesses(launch, pid_x, pid_y, pid_z);
CREATE TABLE IF NOT EXISTS loops(launch INTEGER NOT NULL, site INTEGER NOT NULL, pid_x INTEGER NOT NULL,
  pid_y INTEGER NOT NULL, pid_z INTEGER NOT NULL, executions INTEGER NOT NULL, trips INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS finding_programs(launch INTEGER NOT NULL, finding INTEGER NOT NULL,
  side INTEGER NOT NULL, pid_x INTEGER NOT NULL, pid_y INTEGER NOT NULL, pid_z INTEGER NOT NULL,
  seq INTEGER NOT NULL, runs BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS finding_programs_program ON finding_programs(launch, pid_x, pid_y, pid_z);
CREATE TABLE IF NOT EXISTS program_times(launch INTEGER PRIMARY KEY, ns BLOB NOT NULL);
)sql";

std::string fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Whether the database holds a table called `name`.
bool has_table(const Db& db, const char* name) {
  Stmt s(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  s.bind(1, name);
  return s.step();
}

std::string meta(const Db& db, const char* key) {
  Stmt s(db, "SELECT value FROM meta WHERE key = ?");
  s.bind(1, key);
  return s.step() ? s.text(0) : std::string();
}

/// The integer meta value `key`; a missing or malformed one is a damaged trace.
int64_t meta_int(const Db& db, const char* key) {
  const std::string v = meta(db, key);
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < 0)
    throw Error(
        fmt::format("{}: the trace is damaged (meta '{}' is '{}', not a byte count)", db.path(), key, v));
  return n;
}

/// Checks that `db` is a tilescope trace of this format version. `empty_ok`: a database without any
/// table (a new file) passes.
void check_format(const Db& db, bool empty_ok) {
  const std::string& p = db.path();
  {
    Stmt any(db, "SELECT count(*) FROM sqlite_master");  // the first read: SQLite checks the header
    any.step();
    if (any.i64(0) == 0) {
      if (empty_ok) return;
      throw Error(fmt::format("{}: not a tilescope trace (an empty file or database)", p));
    }
  }
  if (!has_table(db, "meta") || meta(db, "format") != kFormatName)
    throw Error(
        fmt::format("{}: not a tilescope trace (an SQLite database without tilescope's meta table)", p));
  const std::string v = meta(db, "version");
  int version = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), version);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || v[0] == '-' || v[0] == '+')
    throw Error(fmt::format("{}: unknown trace format version '{}' (this tilescope reads version {})", p, v,
                            kFormatVersion));
  if (version > kFormatVersion)
    throw Error(
        fmt::format("{}: trace format version {} is newer than this tilescope reads ({}); use a newer "
                    "tilescope",
                    p, version, kFormatVersion));
  if (version != kFormatVersion)
    throw Error(fmt::format("{}: unknown trace format version {} (this tilescope reads version {})", p,
                            version, kFormatVersion));
}

/// Source files of a launch: the Python stack's files and the files of the kernel's op locations.
std::set<std::string> source_files(const launch::LaunchRecord& rec, const std::vector<const ir::Op*>& sites) {
  std::set<std::string> files;
  for (const std::string& frame : rec.stack) {  // "file:line in func"
    const size_t in = frame.rfind(" in ");
    const size_t colon = frame.rfind(':', in == std::string::npos ? frame.size() : in);
    if (colon != std::string::npos && colon > 0) files.insert(frame.substr(0, colon));
  }
  auto triton_lib = [](const std::string& f) {
    return f.find("/triton/language/") != std::string::npos ||
           f.find("/triton/runtime/") != std::string::npos;
  };
  for (const ir::Op* op : sites) {
    if (!op->loc.file.empty() && !triton_lib(op->loc.file)) files.insert(op->loc.file);
    for (const auto& [f, l] : op->loc.stack)
      if (!triton_lib(f)) files.insert(f);
  }
  return files;
}

std::optional<std::string> read_source(const std::string& path) {
  constexpr uintmax_t kMax = uintmax_t{8} << 20;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > kMax || ec) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return std::nullopt;
  return s;
}

const char* kind_name(uint8_t k) {
  switch (static_cast<exec::AccessKind>(k)) {
    case exec::AccessKind::load: return "load";
    case exec::AccessKind::store: return "store";
    default: return "atomic";
  }
}

json analyses_json(const std::vector<launch::AnalysisRequest>& a) {
  json out = json::array();
  for (const auto& r : a) out.push_back({r.name, r.options.is_null() ? json::object() : r.options});
  return out;
}

/// BEGIN IMMEDIATE ... COMMIT, rolled back when an exception leaves the scope.
class Transaction {
 public:
  explicit Transaction(const Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE", "starting a transaction"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    db_.exec("COMMIT", "committing a launch");
    done_ = true;
  }

 private:
  const Db& db_;
  bool done_ = false;
};

void init_schema(const Db& db, int64_t budget) {
  // Pages of 32 KiB (SQLite's default is 4 KiB): argument contents are large blobs, written a quarter
  // faster (make bench-analyses, traced); an empty trace is about 0.7 MiB. Set before the first table.
  db.exec("PRAGMA page_size = 32768", "creating the schema");
  Transaction t(db);
  db.exec(kSchema, "creating the schema");
  Stmt ins(db, "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)");
  const std::pair<const char*, std::string> rows[] = {{"format", kFormatName},
                                                      {"version", std::to_string(kFormatVersion)},
                                                      {"budget", std::to_string(budget)},
                                                      {"used", "0"},
                                                      {"created", fmt::format("{:.6f}", unix_now())}};
  for (const auto& [k, v] : rows) ins.bind(1, k).bind(2, v).run();
  t.commit();
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Writer

struct Writer::Impl {
  explicit Impl(const std::string& p) : db(p, true) {}
  Db db;
  int64_t budget = kDefaultBudget;
  std::mutex mu;  // the connection is used by one thread at a time (launches may come from several)
};

namespace {
/// `path`, unless it names a directory (SQLite would say only "disk I/O error").
const std::string& not_a_directory(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(fmt::format("{}: is a directory, not a trace file", path));
  return path;
}
}  // namespace

Writer::Writer(const std::string& path, int64_t budget)
    : impl_(std::make_unique<Impl>(not_a_directory(path))) {
  if (budget < 0) throw Error(fmt::format("{}: the trace budget must not be negative", path));
  // No fsync at commit: a crash of the recording process (a buggy kernel's, the case a trace is for)
  // still loses at most the launch in flight, since the data is with the operating system; a crash of
  // the operating system or a power loss may damage the file (SQLite, "PRAGMA synchronous"). Waiting
  // for the disk cost more than the whole recording (docs/trace-format.md).
  impl_->db.exec("PRAGMA synchronous = OFF", "setting up the trace");
  check_format(impl_->db, true);
  if (!has_table(impl_->db, "meta")) init_schema(impl_->db, budget);
  check_format(impl_->db, false);
  impl_->budget = meta_int(impl_->db, "budget");
}

Writer::~Writer() = default;

const std::string& Writer::path() const { return impl_->db.path(); }

namespace {

/// The error a launch row holds until the launch has run: what a reader sees of a launch that ended
/// its process (docs/trace-format.md).
constexpr const char* kInFlight =
    "the process ended during this launch: the trace holds its inputs but nothing of its run";

/// Writes the kernel's text and sites the first time the text is seen; returns the kernel's id and adds
/// the payload to `bytes`.
int64_t write_kernel(const Db& db, const Writer::Program& program, const std::vector<const ir::Op*>& sites,
                     int64_t& bytes) {
  const std::string hash = fnv1a(program.text);
  {
    Stmt find(db, "SELECT id, ttir, language FROM kernels WHERE hash = ?");
    find.bind(1, hash);
    while (find.step())
      if (find.text(1) == program.text && find.text(2) == program.language) return find.i64(0);
  }
  Stmt ins(db, "INSERT INTO kernels(hash, name, ttir_file, ttir, language) VALUES (?, ?, ?, ?, ?)");
  ins.bind(1, hash)
      .bind(2, program.function.name)
      .bind(3, program.module.filename)
      .bind(4, program.text)
      .bind(5, std::string(program.language))
      .run();
  const int64_t kernel_id = sqlite3_last_insert_rowid(db.get());
  bytes += static_cast<int64_t>(program.text.size());
  Stmt site(
      db,
      "INSERT INTO sites(kernel, site, op, ttir_line, ttir_col, file, line, col, var, inlined_from, dot) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < sites.size(); ++i) {
    const ir::Op& op = *sites[i];
    json inlined = json::array();
    for (const auto& [f, l] : op.loc.stack)
      if (!(f == op.loc.file && l == op.loc.line) && f.find("/triton/language/") == std::string::npos &&
          f.find("/triton/runtime/") == std::string::npos)
        inlined.push_back(fmt::format("{}:{}", f, l));
    site.bind(1, kernel_id)
        .bind(2, static_cast<int64_t>(i))
        .bind(3, op.name)
        .bind(4, op.pos.line)
        .bind(5, op.pos.col)
        .bind(6, op.loc.file)
        .bind(7, op.loc.line)
        .bind(8, op.loc.col)
        .bind(9, op.loc.var)
        .bind(10, inlined.dump());
    if ((op.name == "tt.dot" || op.name == "tt.dot_scaled") && op.operands.size() >= 2 &&
        op.operands[0]->type->shape.size() >= 2 && op.operands[1]->type->shape.size() >= 2) {
      const auto& a = op.operands[0]->type->shape;
      const auto& b = op.operands[1]->type->shape;
      site.bind(11, json{a[a.size() - 2], b[b.size() - 1], a[a.size() - 1]}.dump());  // [M, N, K]
    }
    site.run();
    bytes += 64;
  }
  return kernel_id;
}

/// Links the launch to its Python sources, storing each distinct (path, content) once.
void write_sources(const Db& db, int64_t launch, const launch::LaunchRecord& rec,
                   const std::vector<const ir::Op*>& sites, int64_t& bytes) {
  Stmt find(db, "SELECT id FROM sources WHERE path = ? AND hash = ?");
  Stmt ins(db, "INSERT INTO sources(path, hash, content) VALUES (?, ?, ?)");
  Stmt link(db, "INSERT OR IGNORE INTO launch_sources(launch, source) VALUES (?, ?)");
  for (const std::string& f : source_files(rec, sites)) {
    std::optional<std::string> text = read_source(f);
    if (!text) continue;
    const std::string h = fnv1a(*text);
    find.bind(1, f).bind(2, h);
    int64_t sid = find.step() ? find.i64(0) : -1;
    find.reset();
    if (sid < 0) {
      ins.bind(1, f).bind(2, h).blob(3, text->data(), text->size()).run();
      sid = sqlite3_last_insert_rowid(db.get());
      bytes += static_cast<int64_t>(text->size());
    }
    link.bind(1, launch).bind(2, sid).run();
  }
}

bool is_buffer(const launch::ArgRecord& a) { return a.kind == launch::ArgRecord::Kind::buffer; }

constexpr const char* kInsertChunk =
    "INSERT INTO content_chunks(launch, arg, phase, chunk, data) VALUES (?, ?, ?, ?, ?)";

}  // namespace

launch::RunResult Writer::run(launch::Kernel& kernel, const launch::LaunchRecord& rec,
                              const launch::RunOptions& options, std::string* write_error) {
  return run(
      {kernel.module(), kernel.function(rec.kernel), kernel.text(), "ttir"}, rec, options,
      [&](const launch::RunOptions& o) { return launch::run_launch(kernel, rec, o); }, write_error);
}

launch::RunResult Writer::run(const Program& program, const launch::LaunchRecord& rec,
                              const launch::RunOptions& options, const RunFn& run_it,
                              std::string* write_error) {
  const Db& db = impl_->db;
  const double started = unix_now();
  const std::string record_json = launch::to_json(rec, false).dump();
  const std::string analyses = analyses_json(options.analyses).dump();
  const ir::Function& fn = program.function;
  const std::vector<const ir::Op*> sites = op_sites(program.module);
  // Per argument: the period of a buffer that repeats a short pattern (stored as one period), else 0.
  std::vector<uint64_t> period(rec.args.size(), 0);
  int64_t before_bytes = 0;
  for (size_t i = 0; i < rec.args.size(); ++i) {
    const launch::ArgRecord& a = rec.args[i];
    if (!is_buffer(a)) continue;
    period[i] = period_of(a.host, a.bytes);
    before_bytes += static_cast<int64_t>(period[i] ? period[i] : a.bytes);
  }

  // First transaction, before the launch runs: the launch row (its error saying it is in flight), the
  // kernel, the sources and the argument contents before the launch, straight from the arguments'
  // memory. A launch that ends the process is in the trace with its inputs (replayable).
  int64_t id = -1, bytes = 0, detail_cap = 0;
  bool before_kept = false;
  std::string error_writing;
  try {
    std::lock_guard<std::mutex> g(impl_->mu);
    Transaction t(db);
    const int64_t budget = impl_->budget;
    const int64_t used = meta_int(db, "used");
    bytes = static_cast<int64_t>(record_json.size() + analyses.size()) + 64;
    const int64_t kernel_id = write_kernel(db, program, sites, bytes);
    Stmt ins_launch(
        db,
        "INSERT INTO launches(kernel, name, process, started, ended, seconds, grid_x, grid_y, grid_z, "
        "programs, record, analyses, findings, reports, statistics, error, detail_stride, dropped, bytes) "
        "VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, '[]', 'null', 'null', ?, 0, '{}', 0)");
    ins_launch.bind(1, kernel_id)
        .bind(2, rec.kernel.empty() ? fn.name : rec.kernel)
        .bind(3, static_cast<int64_t>(getpid()))
        .bind(4, started)
        .bind(5, started)
        .bind(6, rec.grid[0])
        .bind(7, rec.grid[1])
        .bind(8, rec.grid[2])
        .bind(9, rec.grid[0] * rec.grid[1] * rec.grid[2])  // the grid's programs, until the launch says
        .bind(10, record_json)
        .bind(11, analyses)
        .bind(12, kInFlight)
        .run();
    id = sqlite3_last_insert_rowid(db.get());
    write_sources(db, id, rec, sites, bytes);
    before_kept = used + bytes + before_bytes <= budget;
    Stmt content(db,
                 "INSERT INTO contents(launch, arg, phase, host_addr, bytes, chunks, period) VALUES (?, ?, "
                 "'before', ?, ?, ?, ?)");
    Stmt chunk(db, kInsertChunk);
    for (size_t i = 0; i < rec.args.size(); ++i) {
      const launch::ArgRecord& a = rec.args[i];
      if (!is_buffer(a)) continue;
      int64_t chunks = 0;
      if (before_kept && (a.host || a.bytes == 0))  // an empty tensor: one empty chunk
        chunks = write_chunks(chunk, id, static_cast<int64_t>(i), "before", a.host,
                              period[i] ? period[i] : a.bytes);
      content.bind(1, id)
          .bind(2, static_cast<int64_t>(i))
          .bind(3, static_cast<int64_t>(reinterpret_cast<uintptr_t>(a.host)))
          .bind(4, static_cast<int64_t>(a.bytes))
          .bind(5, chunks)
          .bind(6, static_cast<int64_t>(period[i]))
          .run();
      bytes += 32;
    }
    if (before_kept) bytes += before_bytes;
    Stmt upd(db, "UPDATE meta SET value = ? WHERE key = 'used'");
    upd.bind(1, std::to_string(used + bytes)).run();
    t.commit();
    detail_cap = budget - used - bytes;
  } catch (const Error& e) {
    error_writing = e.what();
    id = -1;
  }

  // The launch, recorded when its row was written.
  std::optional<Recorder> recorder;
  launch::RunOptions o = options;
  if (id >= 0) {
    recorder.emplace(program.module, detail_cap);
    o.observers.push_back(&*recorder);
    o.evidence = true;  // every program of each finding, for finding_programs
  }
  launch::RunResult r;
  std::string error;
  std::exception_ptr failure;
  try {
    r = run_it(o);
  } catch (const std::exception& e) {
    error = e.what();
    failure = std::current_exception();
  }
  const double ended = unix_now();

  // Second transaction: what the launch did. A failure leaves the launch as the first one wrote it.
  auto write = [&] {
    std::lock_guard<std::mutex> g(impl_->mu);
    Transaction t(db);
    const int64_t budget = impl_->budget;
    const int64_t used = meta_int(db, "used");
    const std::string findings = report::to_json(r.findings).dump();
    const std::string reports = r.reports.dump();
    const std::string statistics = r.statistics.dump();
    int64_t more = static_cast<int64_t>(findings.size() + reports.size() + statistics.size());
    json dropped = json::object();
    {
      Stmt upd(db,
               "UPDATE launches SET ended = ?, seconds = ?, programs = ?, findings = ?, reports = ?, "
               "statistics = ?, error = ? WHERE id = ?");
      upd.bind(1, ended)
          .bind(2, r.seconds)
          .bind(3, failure ? rec.grid[0] * rec.grid[1] * rec.grid[2]
                           : r.stats.programs)  // a failed run: the grid's
          .bind(4, findings)
          .bind(5, reports)
          .bind(6, statistics);
      if (failure)
        upd.bind(7, error);
      else
        upd.null(7);
      upd.bind(8, id).run();
    }

    // Aggregates over every program.
    {
      Stmt ins(
          db,
          "INSERT INTO site_stats(launch, site, executions, lanes, active, oob, bytes, stored) VALUES (?, "
          "?, ?, ?, ?, ?, ?, ?)");
      const auto& st = recorder->site_stats();
      for (size_t i = 0; i < st.size(); ++i) {
        if (st[i].executions == 0) continue;
        ins.bind(1, id)
            .bind(2, static_cast<int64_t>(i))
            .bind(3, st[i].executions)
            .bind(4, st[i].lanes)
            .bind(5, st[i].active)
            .bind(6, st[i].oob)
            .bind(7, st[i].bytes)
            .bind(8, st[i].stored)
            .run();
        more += 64;
      }
      Stmt cnt(db, "INSERT INTO element_counts(launch, arg, loads, stores) VALUES (?, ?, ?, ?)");
      json too_big = json::array();
      auto& counts = recorder->counts();
      for (size_t i = 0; i < counts.size() && i < rec.args.size(); ++i) {
        if (!is_buffer(rec.args[i])) continue;
        if (counts[i].loads.elements() == 0 && rec.args[i].bytes > 0) {
          too_big.push_back(rec.args[i].name);
          continue;
        }
        const std::vector<int64_t> l = counts[i].loads.rle(), s = counts[i].stores.rle();
        cnt.bind(1, id)
            .bind(2, static_cast<int64_t>(i))
            .blob(3, l.data(), l.size() * 8)
            .blob(4, s.data(), s.size() * 8)
            .run();
        more += static_cast<int64_t>((l.size() + s.size()) * 8);
      }
      if (!too_big.empty()) dropped["element_counts"] = too_big;
    }
    if (!before_kept) {
      json lost = json::array();
      for (const auto& a : rec.args)
        if (is_buffer(a)) lost.push_back(a.name);
      if (!lost.empty()) dropped["contents_before"] = lost;
    }

    // Every program of each finding (Finding::evidence), when all of it fits what is left.
    {
      int64_t need = 0;
      for (const analysis::Finding& f : r.findings)
        for (const analysis::Finding::Evidence& e : f.evidence) need += row_bytes(e.runs.size());
      if (need > 0 && used + more + need > budget) {
        dropped["finding_programs"] = need;
      } else if (need > 0) {
        Stmt ins(db,
                 "INSERT INTO finding_programs(launch, finding, side, pid_x, pid_y, pid_z, seq, runs) VALUES "
                 "(?, ?, ?, ?, ?, ?, ?, ?)");
        for (size_t i = 0; i < r.findings.size(); ++i)
          for (const analysis::Finding::Evidence& e : r.findings[i].evidence)
            ins.bind(1, id)
                .bind(2, static_cast<int64_t>(i))
                .bind(3, int64_t{e.side})
                .bind(4, e.pid[0])
                .bind(5, e.pid[1])
                .bind(6, e.pid[2])
                .bind(7, e.seq)
                .blob(8, e.runs.data(), e.runs.size() * 8)
                .run();
        more += need;
      }
    }

    // Every program's wall time (Recorder::program_ns), when it fits what is left.
    if (const std::vector<int64_t>& ns = recorder->program_ns(); !ns.empty()) {
      const int64_t need = row_bytes(ns.size());
      if (used + more + need > budget) {
        dropped["program_times"] = need;
      } else {
        Stmt(db, "INSERT INTO program_times(launch, ns) VALUES (?, ?)")
            .bind(1, id)
            .blob(2, ns.data(), ns.size() * 8)
            .run();
        more += need;
      }
    }

    // The sampled detail, then the contents after the launch, each when it fits what is left.
    recorder->fit(budget - used - more);
    const int64_t stride = recorder->stride();
    std::vector<std::unique_ptr<ProgramDetail>> detail = recorder->take_detail();
    {
      Stmt acc(
          db,
          "INSERT INTO accesses(launch, site, pid_x, pid_y, pid_z, seq, arg, kind, lanes, active, oob, runs, "
          "oob_runs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      Stmt loop(db,
                "INSERT INTO loops(launch, site, pid_x, pid_y, pid_z, executions, trips) VALUES (?, ?, ?, ?, "
                "?, ?, ?)");
      for (const auto& d : detail) {
        for (const AccessRow& a : d->accesses)
          acc.bind(1, id)
              .bind(2, a.site)
              .bind(3, d->pid[0])
              .bind(4, d->pid[1])
              .bind(5, d->pid[2])
              .bind(6, a.seq)
              .bind(7, a.arg)
              .bind(8, kind_name(a.kind))
              .bind(9, a.lanes)
              .bind(10, a.active)
              .bind(11, a.oob)
              .blob(12, a.runs.data(), a.runs.size() * 8)
              .blob(13, a.oob_runs.data(), a.oob_runs.size() * 8)
              .run();
        for (const LoopRow& l : d->loops)
          loop.bind(1, id)
              .bind(2, l.site)
              .bind(3, d->pid[0])
              .bind(4, d->pid[1])
              .bind(5, d->pid[2])
              .bind(6, l.executions)
              .bind(7, l.trips)
              .run();
        more += d->bytes;
      }
    }
    const int64_t programs = r.stats.programs;
    if (stride != 1 && programs > 0)
      dropped["detail"] = {
          {"stride", stride}, {"programs_kept", static_cast<int64_t>(detail.size())}, {"programs", programs}};

    // After: an argument the launch stored nothing into (no store or atomic lane landed in memory it
    // shares) is marked unchanged, its bytes being the before row's; the others are stored when all
    // of them fit. A launch that failed may have changed memory without telling: all are stored.
    std::vector<bool> same(rec.args.size(), false);
    int64_t after_bytes = 0;
    for (size_t i = 0; i < rec.args.size(); ++i) {
      const launch::ArgRecord& a = rec.args[i];
      if (!is_buffer(a)) continue;
      same[i] = before_kept && !failure && !recorder->stored_into(a.host, a.bytes);
      period[i] = same[i] ? 0 : period_of(a.host, a.bytes);
      if (!same[i]) after_bytes += static_cast<int64_t>(period[i] ? period[i] : a.bytes);
    }
    const bool after_fits = used + more + after_bytes <= budget;
    Stmt content(
        db,
        "INSERT INTO contents(launch, arg, phase, host_addr, bytes, chunks, unchanged, period) VALUES (?, "
        "?, 'after', ?, ?, ?, ?, ?)");
    Stmt chunk(db, kInsertChunk);
    json lost = json::array();
    for (size_t i = 0; i < rec.args.size(); ++i) {
      const launch::ArgRecord& a = rec.args[i];
      if (!is_buffer(a)) continue;
      int64_t chunks = 0;
      if (!same[i] && after_fits && (a.host || a.bytes == 0)) {
        const uint64_t n = period[i] ? period[i] : a.bytes;
        chunks = write_chunks(chunk, id, static_cast<int64_t>(i), "after", a.host, n);
        more += static_cast<int64_t>(n);
      } else if (!same[i]) {
        lost.push_back(a.name);
      }
      content.bind(1, id)
          .bind(2, static_cast<int64_t>(i))
          .bind(3, static_cast<int64_t>(reinterpret_cast<uintptr_t>(a.host)))
          .bind(4, static_cast<int64_t>(a.bytes))
          .bind(5, chunks)
          .bind(6, same[i] ? 1 : 0)
          .bind(7, static_cast<int64_t>(period[i]))
          .run();
      more += 32;
    }
    if (!lost.empty()) dropped["contents_after"] = lost;

    Stmt fin(db, "UPDATE launches SET detail_stride = ?, dropped = ?, bytes = ? WHERE id = ?");
    fin.bind(1, stride).bind(2, dropped.dump()).bind(3, bytes + more).bind(4, id).run();
    Stmt upd(db, "UPDATE meta SET value = ? WHERE key = 'used'");
    upd.bind(1, std::to_string(used + more)).run();
    t.commit();
  };
  if (id >= 0) {
    try {
      write();
    } catch (const Error& e) {
      error_writing = e.what();
    }
  }
  if (!error_writing.empty()) {
    if (write_error)
      *write_error = error_writing;
    else if (!failure)
      throw Error(error_writing);
  }
  if (failure) std::rethrow_exception(failure);  // the launch's own error comes first
  return r;
}

void create(const std::string& path, int64_t budget) {
  std::error_code ec;
  not_a_directory(path);
  if (fs::exists(path, ec)) {
    {
      Db db(path, false);
      check_format(db, true);  // a trace of this version, or an empty file; anything else is refused
    }
    if (!fs::remove(path, ec) && ec)
      throw Error(fmt::format("{}: cannot replace the old trace: {}", path, ec.message()));
    fs::remove(path + "-journal", ec);
  }
  Writer w(path, budget);
}

// ------------------------------------------------------------------------------------------------
// Reader

struct Reader::Impl {
  explicit Impl(const std::string& p) : db(p, false) {}
  Db db;
};

Reader::Reader(const std::string& path) : impl_(nullptr) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(fmt::format("{}: no such trace file", path));
  if (fs::is_directory(path, ec)) throw Error(fmt::format("{}: is a directory, not a trace file", path));
  impl_ = std::make_unique<Impl>(path);
  check_format(impl_->db, false);
  Stmt check(impl_->db, "PRAGMA quick_check");
  if (check.step() && check.text(0) != "ok")
    throw Error(fmt::format("{}: the trace is truncated or corrupted (SQLite's integrity check: {})", path,
                            check.text(0)));
}

Reader::~Reader() = default;

const std::string& Reader::path() const { return impl_->db.path(); }

std::vector<int64_t> Reader::launches() const {
  std::vector<int64_t> out;
  Stmt s(impl_->db, "SELECT id FROM launches ORDER BY id");
  while (s.step()) out.push_back(s.i64(0));
  return out;
}

std::map<int64_t, Reader::Process> Reader::processes() const {
  std::map<int64_t, Process> out;
  Stmt s(impl_->db, "SELECT process, findings FROM launches ORDER BY id");
  while (s.step()) {
    Process& p = out[s.i64(0)];
    ++p.launches;
    json f = json::parse(s.text(1), nullptr, false);
    if (f.is_array())
      for (json& x : f) p.findings.push_back(std::move(x));
  }
  return out;
}

StoredLaunch Reader::launch(int64_t id) const {
  const Db& db = impl_->db;
  Stmt s(
      db,
      "SELECT l.record, k.ttir, k.ttir_file, l.analyses, l.findings, l.error, l.dropped, l.name, k.language "
      "FROM "
      "launches l "
      "JOIN kernels k ON k.id = l.kernel WHERE l.id = ?");
  s.bind(1, id);
  if (!s.step()) {
    const auto ids = launches();
    throw Error(fmt::format("{}: no launch {} (the trace has {})", db.path(), id,
                            ids.empty()       ? std::string("no launches")
                            : ids.size() == 1 ? std::string("launch 1")
                                              : fmt::format("launches {} to {}", ids.front(), ids.back())));
  }
  StoredLaunch out;
  out.id = id;
  try {
    json rec = json::parse(s.text(0));
    rec["ttir"] = s.text(1);
    out.record = launch::record_from_json(rec);
    if (out.record.ttir_file.empty()) out.record.ttir_file = s.text(2);
    if (out.record.kernel.empty()) out.record.kernel = s.text(7);  // the function that ran
    out.language = s.text(8);
    for (const json& a : json::parse(s.text(3)))
      out.analyses.push_back({a.at(0).get<std::string>(), a.at(1)});
    out.findings = json::parse(s.text(4));
    out.dropped = json::parse(s.text(6));
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: launch {}: a damaged record ({})", db.path(), id, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: launch {}: {}", db.path(), id, e.what()));
  }
  if (!s.is_null(5)) out.error = s.text(5);
  out.before.resize(out.record.args.size());
  out.host_addr.assign(out.record.args.size(), 0);
  Stmt c(db,
         "SELECT arg, host_addr, chunks, period, bytes FROM contents WHERE launch = ? AND phase = 'before'");
  c.bind(1, id);
  while (c.step()) {
    const int64_t arg = c.i64(0);
    if (arg < 0 || arg >= static_cast<int64_t>(out.before.size())) continue;
    out.host_addr[arg] = static_cast<uint64_t>(c.i64(1));
    if (c.i64(2) > 0) {
      const std::optional<std::string> stored = read_chunks(db, id, arg, "before", c.i64(2));
      if (!stored)
        throw Error(
            fmt::format("{}: launch {}: the stored contents of argument {} miss a chunk: the trace is "
                        "damaged",
                        db.path(), id, arg));
      const auto b = std::as_bytes(std::span(*stored));
      if (c.i64(3) == 0) {  // stored as is: a wrong length is for replay to report, naming the argument
        out.before[arg].emplace(b.begin(), b.end());
        continue;
      }
      std::optional<std::string> full = expand_contents(b, c.i64(3), c.i64(4));
      if (!full)
        throw Error(
            fmt::format("{}: launch {}: the stored contents of argument {} do not match their period: "
                        "the trace is damaged",
                        db.path(), id, arg));
      const auto* f = reinterpret_cast<const std::byte*>(full->data());
      out.before[arg].emplace(f, f + full->size());
    }
  }
  return out;
}

std::string Reader::summary(int top_lines) const {
  const Db& db = impl_->db;
  std::string out;
  {
    Stmt s(db, "SELECT count(*), count(DISTINCT process), count(DISTINCT kernel) FROM launches");
    s.step();
    // Sizes in the unit that shows the budget best (a budget under 1 MiB in KiB).
    const int64_t budget = meta_int(db, "budget");
    const bool kib = budget < (int64_t{1} << 20);
    const double unit = kib ? 1024 : 1 << 20;
    out += fmt::format(
        "{}: trace format {}, {} launch(es) in {} process(es), {} kernel text(s); {:.1f} of {:.{}f} {} "
        "of budget used\n",
        db.path(), kFormatVersion, s.i64(0), s.i64(1), s.i64(2),
        static_cast<double>(meta_int(db, "used")) / unit, static_cast<double>(budget) / unit, kib ? 1 : 0,
        kib ? "KiB" : "MiB");
  }
  out += "\nlaunches:\n";
  std::vector<analysis::Finding> all;
  {
    Stmt s(db,
           "SELECT id, name, grid_x, grid_y, grid_z, programs, seconds, findings, error, detail_stride, "
           "dropped, "
           "analyses FROM launches ORDER BY id");
    while (s.step()) {
      json f = json::parse(s.text(7), nullptr, false);
      std::vector<analysis::Finding> found =
          f.is_array() ? report::from_json(f) : std::vector<analysis::Finding>{};
      std::string note;
      if (!s.is_null(8)) note += fmt::format(", failed: {}", s.text(8));
      const int64_t stride = s.i64(9);
      const bool in_flight = !s.is_null(8) && s.text(8) == kInFlight;
      if (stride == 0 && !in_flight)
        note += ", no per-program detail (budget)";
      else if (stride > 1)
        note += fmt::format(", detail for 1 program in {} (budget)", stride);
      json dropped = json::parse(s.text(10), nullptr, false);
      if (dropped.is_object() && dropped.contains("contents_before")) note += ", inputs not stored (budget)";
      // "no findings" from a run without the sanitizer (tilescope profile --trace) says so.
      json analyses = json::parse(s.text(11), nullptr, false);
      bool sanitizer = !analyses.is_array();
      std::string names;
      if (analyses.is_array())
        for (const json& a : analyses)
          if (a.is_array() && !a.empty() && a[0].is_string()) {
            sanitizer |= a[0] == "sanitizer";
            names += (names.empty() ? "" : ", ") + a[0].get<std::string>();
          }
      if (!sanitizer) note += fmt::format(", sanitizer off (analyses: {})", names.empty() ? "none" : names);
      out += fmt::format("  #{:<4} {}  grid ({}, {}, {})  {} program(s)  {:.2f} ms  {}{}\n", s.i64(0),
                         s.text(1), s.i64(2), s.i64(3), s.i64(4), s.i64(5), s.f64(6) * 1e3,
                         found.empty() ? std::string("no findings") : report::summary_line(found), note);
      all.insert(all.end(), found.begin(), found.end());
    }
  }
  out += "\nkernels:\n";
  {
    Stmt s(db,
           "SELECT name, count(*), sum(programs) FROM launches GROUP BY name ORDER BY count(*) DESC, name");
    while (s.step())
      out += fmt::format("  {}  {} launch(es), {} program(s)\n", s.text(0), s.i64(1), s.i64(2));
  }
  out += fmt::format("\nfindings: {}\n", all.empty() ? "none" : report::summary_line(report::merge(all)));
  out += "\ntop lines by bytes (all launches, active in-bounds lanes):\n";
  {
    Stmt s(db,
           "SELECT st.file, st.line, sum(ss.bytes), sum(ss.stored), sum(ss.executions), "
           "group_concat(DISTINCT st.op) FROM site_stats ss JOIN launches l ON l.id = "
           "ss.launch "
           "JOIN sites st ON st.kernel = l.kernel AND st.site = ss.site GROUP BY st.file, st.line "
           "ORDER BY sum(ss.bytes) DESC, st.file, st.line LIMIT ?");
    s.bind(1, top_lines);
    Stmt src(db, "SELECT content FROM sources WHERE path = ? ORDER BY id DESC LIMIT 1");
    out += fmt::format("  {:>12} {:>12} {:>10}  {}\n", "bytes", "stored", "executions", "line");
    while (s.step()) {
      std::string file = s.text(0), text;
      const int64_t line = s.i64(1);
      src.bind(1, file);
      if (src.step()) {
        auto b = src.bytes(0);
        std::string_view content(reinterpret_cast<const char*>(b.data()), b.size());
        size_t pos = 0;
        for (int64_t l = 1; l < line && pos != std::string_view::npos; ++l) {
          pos = content.find('\n', pos);
          if (pos != std::string_view::npos) ++pos;
        }
        if (pos != std::string_view::npos) {
          text = std::string(content.substr(pos, content.find('\n', pos) - pos));
          text.erase(0, text.find_first_not_of(" \t"));
        }
      }
      src.reset();
      out += fmt::format("  {:>12} {:>12} {:>10}  {}:{}  {}  [{}]\n", s.i64(2), s.i64(3), s.i64(4),
                         file.empty() ? "?" : file, line, text, s.text(5));
    }
  }
  return out;
}

}  // namespace tilescope::trace
