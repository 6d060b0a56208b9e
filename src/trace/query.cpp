// The visualizer's queries over a trace (query.h): indexed reads of the tables of
// docs/trace-format.md, answered as JSON.
#include "tilescope/trace/query.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <mutex>

#include "contents.h"
#include "sqlite.h"
#include "tilescope/ir/elem.h"
#include "tilescope/trace/trace.h"

namespace tilescope::trace {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json parse_or(const std::string& text, const json& fallback) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

/// Little-endian int64 pairs of a run-length blob (docs/trace-format.md).
std::vector<std::array<int64_t, 2>> pairs(std::span<const std::byte> b) {
  std::vector<std::array<int64_t, 2>> out(b.size() / 16);
  for (size_t i = 0; i < out.size(); ++i) {
    std::memcpy(&out[i][0], b.data() + 16 * i, 8);
    std::memcpy(&out[i][1], b.data() + 16 * i + 8, 8);
  }
  return out;
}

std::string pid_key(int64_t x, int64_t y, int64_t z) { return fmt::format("{},{},{}", x, y, z); }

}  // namespace

struct Query::Impl {
  explicit Impl(const std::string& path) : reader(path), db(path, /*write=*/false) {
    Stmt t(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'finding_programs'");
    finding_programs = t.step();  // traces written before it was added have none
    Stmt u(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'program_times'");
    program_times = u.step();
  }
  // First: its checks (format, version, integrity) and their messages come before any query. Also
  // what replays read (values), under its own lock: a replay does not hold up the queries.
  Reader reader;
  Db db;
  std::mutex mu;
  std::mutex replay_mu;
  std::vector<std::pair<std::string, json>> recent;  // the latest values answers, newest last
  bool finding_programs = false;                     // the trace has the table
  bool program_times = false;                        // the trace has the table

  void require_launch(int64_t id) {
    Stmt s(db, "SELECT 1 FROM launches WHERE id = ?");
    s.bind(1, id);
    if (!s.step()) throw NotFound(fmt::format("no launch {} in this trace", id));
  }
  /// The launch exists and `pid` is inside its grid.
  void require_program(int64_t id, const std::array<int64_t, 3>& pid) {
    Stmt l(db, "SELECT grid_x, grid_y, grid_z FROM launches WHERE id = ?");
    l.bind(1, id);
    if (!l.step()) throw NotFound(fmt::format("no launch {} in this trace", id));
    for (int i = 0; i < 3; ++i)
      if (pid[i] < 0 || pid[i] >= l.i64(i))
        throw NotFound(fmt::format("no program ({}, {}, {}) in launch {} (grid {} x {} x {})", pid[0], pid[1],
                                   pid[2], id, l.i64(0), l.i64(1), l.i64(2)));
  }
};

// The Reader inside Impl runs the format, version and integrity checks, with their messages, first.
Query::Query(const std::string& path) : impl_(std::make_unique<Impl>(path)) {}

Query::~Query() = default;

json Query::session() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  const Db& db = impl_->db;
  json out = {{"file", fs::path(db.path()).filename().string()}};
  Stmt m(db, "SELECT key, value FROM meta");
  while (m.step()) {
    const std::string k = m.text(0);
    if (k == "version" || k == "budget" || k == "used") out[k] = std::stoll(m.text(1));
  }
  Stmt n(db, "SELECT (SELECT count(*) FROM launches), (SELECT count(*) FROM kernels)");
  n.step();
  out["launches"] = n.i64(0);
  out["kernels"] = n.i64(1);
  return out;
}

namespace {

json launch_row(Stmt& s) {
  // Columns: id, name, kernel, grid_x, grid_y, grid_z, programs, seconds, started, findings, error,
  // detail_stride, dropped, language
  json findings = parse_or(s.text(9), json::array());
  json kinds = json::object();
  for (const json& f : findings)
    if (f.is_object() && f.contains("kind") && f["kind"].is_string())  // a damaged finding is not counted
      kinds[f["kind"].get<std::string>()] = kinds.value(f["kind"].get<std::string>(), 0) + 1;
  return {{"id", s.i64(0)},
          {"name", s.text(1)},
          {"kernel", s.i64(2)},
          {"grid", {s.i64(3), s.i64(4), s.i64(5)}},
          {"programs", s.i64(6)},
          {"seconds", s.f64(7)},
          {"started", s.f64(8)},
          {"findings", findings.is_array() ? findings.size() : 0},
          {"kinds", kinds},
          {"error", s.is_null(10) ? json() : json(s.text(10))},
          {"detail_stride", s.i64(11)},
          {"dropped", parse_or(s.text(12), json::object())},
          {"language", s.text(13)}};
}

constexpr const char* kLaunchColumns =
    "id, name, kernel, grid_x, grid_y, grid_z, programs, seconds, started, findings, error, detail_stride, "
    "dropped, (SELECT language FROM kernels WHERE kernels.id = launches.kernel)";

}  // namespace

json Query::launches() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  Stmt s(impl_->db, fmt::format("SELECT {} FROM launches ORDER BY id", kLaunchColumns).c_str());
  json out = json::array();
  while (s.step()) out.push_back(launch_row(s));
  return out;
}

json Query::launch(int64_t id) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  const Db& db = impl_->db;
  Stmt s(db, fmt::format("SELECT {}, record, reports FROM launches WHERE id = ?", kLaunchColumns).c_str());
  s.bind(1, id);
  if (!s.step()) throw NotFound(fmt::format("no launch {} in this trace", id));
  json out = launch_row(s);
  out["kernel_id"] = out["kernel"];
  const json record = parse_or(s.text(14), json::object());
  out["reports"] = parse_or(s.text(15), json::object());
  json args = record.value("args", json::array());
  for (size_t i = 0; i < args.size(); ++i) args[i]["index"] = i;
  out["args"] = args;
  out["specialization"] = record.value("specialization", json::object());
  out["stack"] = record.value("stack", json::array());
  out["findings"] = parse_or(s.text(9), json::array());
  std::map<int64_t, json> stats;
  {
    Stmt st(db,
            "SELECT site, executions, lanes, active, oob, bytes, stored FROM site_stats WHERE launch = ?");
    st.bind(1, id);
    while (st.step())
      stats[st.i64(0)] = {{"executions", st.i64(1)}, {"lanes", st.i64(2)}, {"active", st.i64(3)},
                          {"oob", st.i64(4)},        {"bytes", st.i64(5)}, {"stored", st.i64(6)}};
  }
  json sites = json::array();
  {
    Stmt si(db,
            "SELECT site, op, ttir_line, ttir_col, file, line, col, var, inlined_from, dot FROM sites WHERE "
            "kernel = ? "
            "ORDER BY site");
    si.bind(1, out["kernel"].get<int64_t>());
    while (si.step()) {
      json e = {{"site", si.i64(0)},
                {"op", si.text(1)},
                {"ttir_line", si.i64(2)},
                {"ttir_col", si.i64(3)},
                {"file", si.text(4)},
                {"line", si.i64(5)},
                {"col", si.i64(6)},
                {"var", si.text(7)},
                {"inlined_from", parse_or(si.text(8), json::array())},
                {"dot", si.is_null(9) ? json() : parse_or(si.text(9), json())}};
      if (auto it = stats.find(si.i64(0)); it != stats.end()) e["stats"] = it->second;
      sites.push_back(std::move(e));
    }
  }
  out["sites"] = sites;
  json sources = json::array();
  Stmt so(db,
          "SELECT s.id, s.path FROM launch_sources ls JOIN sources s ON s.id = ls.source WHERE ls.launch = ? "
          "ORDER BY s.path");
  so.bind(1, id);
  while (so.step()) sources.push_back({{"id", so.i64(0)}, {"path", so.text(1)}});
  out["sources"] = sources;
  return out;
}

json Query::programs(int64_t launch, bool with_bytes, bool with_times) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  const Db& db = impl_->db;
  Stmt l(db, "SELECT detail_stride, findings, record FROM launches WHERE id = ?");
  l.bind(1, launch);
  if (!l.step()) throw NotFound(fmt::format("no launch {} in this trace", launch));
  json out = {{"detail_stride", l.i64(0)}};
  const json findings = parse_or(l.text(1), json::array());
  std::map<std::array<int64_t, 3>, std::array<int64_t, 2>> per;  // accesses, bytes
  if (with_bytes) {
    // Bytes are not stored per program: element runs times the argument's element size.
    const json args = parse_or(l.text(2), json::object()).value("args", json::array());
    std::map<int64_t, int64_t> elem_size;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].value("kind", "") != "buffer") continue;
      const auto e = ir::elem_from_mlir(args[i].value("dtype", ""));
      elem_size[static_cast<int64_t>(i)] = e ? ir::elem_bytes(*e) : 0;
    }
    Stmt a(db, "SELECT pid_x, pid_y, pid_z, arg, runs FROM accesses WHERE launch = ?");
    a.bind(1, launch);
    while (a.step()) {
      auto& p = per[{a.i64(0), a.i64(1), a.i64(2)}];
      ++p[0];
      int64_t elements = 0;
      for (const auto& run : pairs(a.bytes(4))) elements += run[1];
      auto es = elem_size.find(a.i64(3));
      p[1] += elements * (es == elem_size.end() ? 0 : es->second);
    }
  }
  json progs = json::array();
  for (const auto& [pid, v] : per)
    progs.push_back({{"pid", {pid[0], pid[1], pid[2]}}, {"accesses", v[0]}, {"bytes", v[1]}});
  if (with_bytes) out["programs"] = progs;
  json by_pid = json::object();
  for (size_t i = 0; i < findings.size(); ++i) {
    const json& f = findings[i];
    auto add = [&](const json& ps) {
      if (!ps.is_object() || !ps.contains("first")) return;
      for (const json& p : ps["first"])
        if (p.is_array() && p.size() == 3) by_pid[pid_key(p[0], p[1], p[2])].push_back(i);
    };
    add(f.value("programs", json()));
    if (f.contains("other") && f["other"].is_object()) add(f["other"].value("programs", json()));
  }
  // Findings list their first programs only; for out-of-bounds ones the recorded accesses say exactly
  // which (sampled) programs had lanes outside their buffer, at which op.
  {
    std::map<int64_t, std::vector<size_t>> oob_findings_by_line;  // TTIR line of the op -> finding indexes
    for (size_t i = 0; i < findings.size(); ++i) {
      const json& f = findings[i];
      if (f.value("kind", json("")).is_string() &&
          f["kind"].get<std::string>().rfind("out-of-bounds", 0) == 0 && f.contains("ttir") &&
          f["ttir"].contains("line"))
        oob_findings_by_line[f["ttir"]["line"].get<int64_t>()].push_back(i);
    }
    if (!oob_findings_by_line.empty()) {
      Stmt a(db,
             "SELECT DISTINCT a.pid_x, a.pid_y, a.pid_z, s.ttir_line FROM accesses a JOIN sites s ON s.site "
             "= a.site "
             "AND s.kernel = (SELECT kernel FROM launches WHERE id = ?1) WHERE a.launch = ?1 AND a.oob > 0");
      a.bind(1, launch);
      while (a.step())
        if (auto it = oob_findings_by_line.find(a.i64(3)); it != oob_findings_by_line.end())
          for (size_t i : it->second) by_pid[pid_key(a.i64(0), a.i64(1), a.i64(2))].push_back(i);
    }
  }
  // Findings that recorded every program (races, uninitialized reads: finding_programs).
  if (impl_->finding_programs) {
    Stmt e(db, "SELECT DISTINCT pid_x, pid_y, pid_z, finding FROM finding_programs WHERE launch = ?");
    e.bind(1, launch);
    while (e.step()) by_pid[pid_key(e.i64(0), e.i64(1), e.i64(2))].push_back(e.i64(3));
  }
  for (auto& [k, v] : by_pid.items()) {  // each finding once per program
    std::vector<size_t> ids = v.get<std::vector<size_t>>();
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    v = ids;
  }
  out["findings"] = by_pid;
  if (with_times) {
    json times = nullptr;
    if (impl_->program_times) {
      Stmt t(db, "SELECT ns FROM program_times WHERE launch = ?");
      t.bind(1, launch);
      if (t.step()) {
        const std::span<const std::byte> b = t.bytes(0);
        times = json::array();
        for (size_t i = 0; i + 8 <= b.size(); i += 8) {
          int64_t v = 0;
          std::memcpy(&v, b.data() + i, 8);  // little-endian, as written (docs/trace-format.md)
          times.push_back(v);
        }
      }
    }
    out["times_ns"] = times;
  }
  return out;
}

json Query::program(int64_t launch, const std::array<int64_t, 3>& pid) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->require_program(launch, pid);
  const Db& db = impl_->db;
  json out = {{"pid", {pid[0], pid[1], pid[2]}}};
  json acc = json::array();
  Stmt a(db,
         "SELECT site, seq, arg, kind, lanes, active, oob, runs, oob_runs FROM accesses WHERE launch = ? AND "
         "pid_x = ? AND pid_y = ? AND pid_z = ? ORDER BY site, seq, arg");
  a.bind(1, launch).bind(2, pid[0]).bind(3, pid[1]).bind(4, pid[2]);
  auto runs_of = [](std::span<const std::byte> b) {
    json runs = json::array();
    for (const auto& r : pairs(b)) runs.push_back({r[0], r[1]});
    return runs;
  };
  while (a.step())
    acc.push_back({{"site", a.i64(0)},
                   {"seq", a.i64(1)},
                   {"arg", a.i64(2)},
                   {"kind", a.text(3)},
                   {"lanes", a.i64(4)},
                   {"active", a.i64(5)},
                   {"oob", a.i64(6)},
                   {"runs", runs_of(a.bytes(7))},
                   {"oob_runs", runs_of(a.bytes(8))}});
  json loops = json::array();
  Stmt l(db,
         "SELECT site, executions, trips FROM loops WHERE launch = ? AND pid_x = ? AND pid_y = ? AND pid_z = "
         "? ORDER BY site");
  l.bind(1, launch).bind(2, pid[0]).bind(3, pid[1]).bind(4, pid[2]);
  while (l.step()) loops.push_back({{"site", l.i64(0)}, {"executions", l.i64(1)}, {"trips", l.i64(2)}});
  Stmt st(db, "SELECT detail_stride, grid_x, grid_y FROM launches WHERE id = ?");
  st.bind(1, launch);
  st.step();
  const int64_t stride = st.i64(0), gx = st.i64(1), gy = st.i64(2);
  const int64_t linear = pid[0] + gx * (pid[1] + gy * pid[2]);
  out["sampled"] = stride > 0 && linear % stride == 0;
  // What this program did in each finding that recorded every program (finding_programs).
  json flagged = json::array();
  if (impl_->finding_programs) {
    Stmt f(
        db,
        "SELECT finding, side, seq, runs FROM finding_programs WHERE launch = ? AND pid_x = ? AND pid_y = ? "
        "AND pid_z = ? ORDER BY finding, side, seq");
    f.bind(1, launch).bind(2, pid[0]).bind(3, pid[1]).bind(4, pid[2]);
    while (f.step())
      flagged.push_back(
          {{"finding", f.i64(0)}, {"side", f.i64(1)}, {"seq", f.i64(2)}, {"runs", runs_of(f.bytes(3))}});
  }
  out["findings"] = flagged;
  out["accesses"] = acc;
  out["loops"] = loops;
  return out;
}

json Query::element_counts(int64_t launch, int arg) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->require_launch(launch);
  Stmt s(impl_->db, "SELECT loads, stores FROM element_counts WHERE launch = ? AND arg = ?");
  s.bind(1, launch).bind(2, arg);
  if (!s.step()) throw NotFound(fmt::format("launch {} has no element counts for argument {}", launch, arg));
  auto runs = [](std::span<const std::byte> b, int64_t& n) {
    json v = json::array();
    n = 0;
    for (const auto& [count, repeat] : pairs(b)) {
      v.push_back({count, repeat});
      n += repeat;
    }
    return v;
  };
  int64_t nl = 0, ns = 0;
  json loads = runs(s.bytes(0), nl), stores = runs(s.bytes(1), ns);
  return {{"elements", std::max(nl, ns)}, {"loads", loads}, {"stores", stores}};
}

json Query::element_accesses(int64_t launch, int arg, int64_t element, int limit) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->require_launch(launch);
  {  // the element must be one of the argument's (its bytes over its element size)
    Stmt l(impl_->db, "SELECT record FROM launches WHERE id = ?");
    l.bind(1, launch);
    l.step();
    const json args = parse_or(l.text(0), json::object()).value("args", json::array());
    if (arg < 0 || arg >= static_cast<int>(args.size()) || args[arg].value("kind", "") != "buffer")
      throw NotFound(fmt::format("launch {} has no buffer argument {}", launch, arg));
    const auto e = ir::elem_from_mlir(args[arg].value("dtype", ""));
    const int64_t n =
        e && ir::elem_bytes(*e) > 0 ? args[arg].value("bytes", int64_t{0}) / ir::elem_bytes(*e) : -1;
    if (n >= 0 && element >= n)
      throw NotFound(fmt::format("argument {} of launch {} has {} elements; element {} is past its end", arg,
                                 launch, n, element));
  }
  json out = json::array();
  bool more = false;
  Stmt a(impl_->db,
         "SELECT pid_x, pid_y, pid_z, site, seq, kind, runs FROM accesses WHERE launch = ? AND arg = ? ORDER "
         "BY pid_z, "
         "pid_y, pid_x, site, seq");
  a.bind(1, launch).bind(2, arg);
  while (a.step()) {
    for (const auto& r : pairs(a.bytes(6))) {
      if (element >= r[0] && element < r[0] + r[1]) {
        if (static_cast<int>(out.size()) >= limit) {
          more = true;
          break;
        }
        out.push_back({{"pid", {a.i64(0), a.i64(1), a.i64(2)}},
                       {"site", a.i64(3)},
                       {"seq", a.i64(4)},
                       {"kind", a.text(5)}});
        break;
      }
    }
    if (more) break;
  }
  return {{"accesses", out}, {"more", more}};
}

std::string Query::contents(int64_t launch, int arg, const std::string& phase) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->require_launch(launch);
  // An 'after' row marked unchanged: the launch stored nothing into the argument; its bytes are the
  // 'before' row's.
  Stmt s(
      impl_->db,
      "SELECT CASE WHEN c.unchanged THEN b.phase ELSE c.phase END, CASE WHEN c.unchanged THEN b.chunks ELSE "
      "c.chunks END, c.bytes, CASE WHEN c.unchanged THEN b.period ELSE c.period END FROM contents c LEFT "
      "JOIN contents b ON c.unchanged AND b.launch = c.launch AND b.arg = c.arg AND b.phase = 'before' "
      "WHERE c.launch = ? AND c.arg = ? AND c.phase = ?");
  s.bind(1, launch).bind(2, arg).bind(3, phase);
  if (!s.step() || s.is_null(1) || s.i64(1) <= 0)
    throw NotFound(
        fmt::format("launch {} has no '{}' contents of argument {} (not a buffer, or dropped by the budget)",
                    launch, phase, arg));
  std::optional<std::string> stored = read_chunks(impl_->db, launch, arg, s.text(0), s.i64(1));
  if (!stored)
    throw Error(
        fmt::format("{}: launch {}: the stored contents of argument {} miss a chunk: the trace is damaged",
                    impl_->db.path(), launch, arg));
  if (s.i64(3) <= 0 && static_cast<int64_t>(stored->size()) == s.i64(2)) return std::move(*stored);
  std::optional<std::string> full = expand_contents(std::as_bytes(std::span(*stored)), s.i64(3), s.i64(2));
  if (!full)
    throw Error(fmt::format(
        "{}: launch {}: the stored contents of argument {} are {} bytes, not {}: the trace is damaged",
        impl_->db.path(), launch, arg, stored->size(), s.i64(3) > 0 ? s.i64(3) : s.i64(2)));
  return std::move(*full);
}

json Query::values(int64_t launch, const std::array<int64_t, 3>& pid, const std::vector<int>& sites) const {
  std::string key = fmt::format("{}/{},{},{}/", launch, pid[0], pid[1], pid[2]);
  for (int s : sites) key += fmt::format("{},", s);
  std::lock_guard<std::mutex> g(impl_->replay_mu);
  for (const auto& [k, v] : impl_->recent)
    if (k == key) return v;
  {
    std::lock_guard<std::mutex> q(impl_->mu);
    impl_->require_program(launch, pid);
    Stmt n(impl_->db, "SELECT count(*) FROM sites WHERE kernel = (SELECT kernel FROM launches WHERE id = ?)");
    n.bind(1, launch);
    n.step();
    for (int site : sites)
      if (site < 0 || site >= n.i64(0))
        throw NotFound(
            fmt::format("launch {}'s kernel has no op site {} (it has {})", launch, site, n.i64(0)));
  }
  json v = capture_values(impl_->reader, launch, pid, sites);
  impl_->recent.emplace_back(key, v);
  if (impl_->recent.size() > 8) impl_->recent.erase(impl_->recent.begin());
  return v;
}

json Query::source(int64_t id) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  Stmt s(impl_->db, "SELECT path, content FROM sources WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) throw NotFound(fmt::format("no source file {} in this trace", id));
  auto b = s.bytes(1);
  return {{"id", id},
          {"path", s.text(0)},
          {"content", std::string(reinterpret_cast<const char*>(b.data()), b.size())}};
}

json Query::kernel(int64_t id) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  Stmt s(impl_->db, "SELECT name, ttir_file, ttir, language FROM kernels WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) throw NotFound(fmt::format("no kernel {} in this trace", id));
  return {{"id", id},
          {"name", s.text(0)},
          {"ttir_file", s.text(1)},
          {"ttir", s.text(2)},
          {"language", s.text(3)}};
}

}  // namespace tilescope::trace
