// evaluate / evaluate_python (generate.h): a candidate through every stage, with located feedback.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tilescope/analysis/uninit.h"
#include "tilescope/generate/generate.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/elem.h"
#include "tilescope/launch/runner.h"
#include "tilescope/report/report.h"

namespace tilescope::generate {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The data of a .npy file the worker wrote (numpy.save: format 1.0, or 2.0 / 3.0 for long headers), which
// must hold `bytes` bytes; its dtype and shape are the case's (the worker wrote both from the same array).
std::vector<std::byte> npy_data(const std::string& path, uint64_t bytes) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  if (!f || s.size() < 10 || std::memcmp(s.data(), "\x93NUMPY", 6) != 0)
    throw Error(fmt::format("{}: not a .npy file", path));
  const int major = static_cast<unsigned char>(s[6]);
  size_t header = 0, start = 0;
  if (major == 1) {
    header = static_cast<unsigned char>(s[8]) | static_cast<size_t>(static_cast<unsigned char>(s[9])) << 8;
    start = 10 + header;
  } else {
    for (int i = 0; i < 4; ++i)
      header |= static_cast<size_t>(static_cast<unsigned char>(s[8 + i])) << (8 * i);
    start = 12 + header;
  }
  if (start > s.size() || s.size() - start != bytes)
    throw Error(
        fmt::format("{}: {} bytes of data, expected {}", path, s.size() - std::min(start, s.size()), bytes));
  std::vector<std::byte> out(bytes);
  std::memcpy(out.data(), s.data() + start, bytes);
  return out;
}

int64_t numel_of(const json& shape) {
  int64_t n = 1;
  for (const auto& d : shape) n *= d.get<int64_t>();
  return n;
}

ir::Elem elem_of(const std::string& dtype) {
  auto e = ir::elem_from_mlir(dtype);
  if (!e) throw Error(fmt::format("unknown dtype '{}'", dtype));
  return *e;
}

// Element i of a buffer of `e` as a double (integers exactly up to 2^53).
double value_at(const std::byte* data, ir::Elem e, int64_t i) {
  const size_t w = static_cast<size_t>(ir::elem_bytes(e));
  uint64_t bits = 0;
  std::memcpy(&bits, data + static_cast<size_t>(i) * w, w);
  if (ir::is_float(e)) return ir::float_from_bits(e, bits);
  // sign-extend the integer
  const int b = ir::elem_bits(e);
  if (e == ir::Elem::i1) return static_cast<double>(bits & 1);
  const int64_t v = b == 64 ? static_cast<int64_t>(bits) : static_cast<int64_t>(bits << (64 - b)) >> (64 - b);
  return static_cast<double>(v);
}

std::vector<int64_t> unravel(int64_t i, const json& shape) {
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = shape[d].get<int64_t>();
    at[d] = n ? i % n : 0;
    i = n ? i / n : 0;
  }
  return at;
}

// `got` (the buffer after the launch, of `dtype`) against the case's expected entry; `before` (its bytes
// before the launch, or null) tells which elements the kernel changed.
OutputCheck compare(const json& expected, const json& arg, const std::byte* got, const std::byte* before) {
  OutputCheck c;
  c.name = expected.at("name").get<std::string>();
  c.rtol = expected.at("rtol").get<double>();
  c.atol = expected.at("atol").get<double>();
  const ir::Elem e = elem_of(arg.at("dtype").get<std::string>());
  const int64_t n = numel_of(arg.at("shape"));
  const auto want = npy_data(expected.at("npy").get<std::string>(), static_cast<uint64_t>(n) * 8);
  std::vector<std::byte> mask;
  if (expected.contains("mask") && expected["mask"].is_string())
    mask = npy_data(expected["mask"].get<std::string>(), static_cast<uint64_t>(n));
  // The reference is float64 for float outputs, int64 for integer ones (_gen_task.make_case).
  const bool exact = !ir::is_float(e);
  const bool out_role = arg.value("role", "in") == "out";
  const size_t w = static_cast<size_t>(ir::elem_bytes(e));
  auto changed = [&](int64_t i) {
    return before &&
           std::memcmp(got + static_cast<size_t>(i) * w, before + static_cast<size_t>(i) * w, w) != 0;
  };
  double worst = -1;
  int64_t worst_i = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!mask.empty() && mask[static_cast<size_t>(i)] == std::byte{0}) {
      if (changed(i) && c.touched++ == 0) c.first_touched = unravel(i, arg.at("shape"));
      continue;
    }
    ++c.compared;
    if (out_role && before && !changed(i) && c.unwritten++ == 0)
      c.first_unwritten = unravel(i, arg.at("shape"));
    double x = 0;
    int64_t xi = 0;
    if (exact) {
      std::memcpy(&xi, want.data() + i * 8, 8);
      x = static_cast<double>(xi);
    } else {
      std::memcpy(&x, want.data() + i * 8, 8);
    }
    const double g = value_at(got, e, i);
    double err = 0;
    bool ok = false;
    if (std::isnan(x) || std::isnan(g)) {
      ok = std::isnan(x) && std::isnan(g);
      err = ok ? 0 : INFINITY;
    } else if (std::isinf(x) || std::isinf(g)) {
      ok = x == g;
      err = ok ? 0 : INFINITY;
    } else {
      err = std::fabs(g - x);
      ok = exact ? g == x : err <= c.atol + c.rtol * std::fabs(x);
    }
    if (!ok) ++c.bad;
    if (err > worst) {
      worst = err;
      worst_i = i;
      c.got = g;
      c.expected = x;
    }
  }
  c.max_error = std::max(worst, 0.0);
  if (c.compared) c.at = unravel(worst_i, arg.at("shape"));
  return c;
}

std::string shape_text(const std::vector<int64_t>& at) {
  std::string s = "[";
  for (size_t i = 0; i < at.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", at[i]);
  return s + "]";
}

std::string size_text(const json& size) {
  std::string s;
  for (const auto& [k, v] : size.items()) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", k, v.dump());
  return s;
}

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

// The JSON pointer of TTIR line `line` (1-based), or "".
std::string pointer_of_line(const std::vector<std::string>& lines, int line) {
  if (line < 1 || static_cast<size_t>(line) > lines.size()) return "";
  return lines[static_cast<size_t>(line) - 1];
}

// The elements of input `a` that differ between `was` and `now` (its bytes before and after the launch).
CaseResult::ChangedInput changed_input(const std::string& name, const json& a, const std::byte* was,
                                       const std::byte* now_bytes) {
  CaseResult::ChangedInput ci;
  ci.name = name;
  const size_t w = static_cast<size_t>(ir::elem_bytes(elem_of(a.at("dtype").get<std::string>())));
  const int64_t n = numel_of(a.at("shape"));
  for (int64_t i = 0; i < n; ++i)
    if (std::memcmp(was + static_cast<size_t>(i) * w, now_bytes + static_cast<size_t>(i) * w, w) != 0 &&
        ci.elements++ == 0)
      ci.first = unravel(i, a.at("shape"));
  return ci;
}

// A located error of the lowered TTIR, with the JSON pointer of the op at its line first.
std::string located(const Error& e, const std::vector<std::string>& lines) {
  const std::string ptr = pointer_of_line(lines, e.diagnostic().ttir.line);
  // The model never sees the TTIR: where there is an op, its pointer replaces the TTIR position.
  if (ptr.empty()) return e.what();
  const Diagnostic& d = e.diagnostic();
  return d.op.empty() ? fmt::format("at {}: {}", ptr, d.message)
                      : fmt::format("at {} ({}): {}", ptr, d.op, d.message);
}

// A case of `task` at sizes[i] made by the worker with the kernel's constexprs `meta`.
json make_case(const Task& task, size_t i, const json& meta, Worker& worker, const EvalOptions& o) {
  const fs::path dir = fs::path(o.work_dir) / fmt::format("case{}", i);
  return worker
      .call({{"op", "case"},
             {"path", task.path},
             {"size", task.sizes[i]},
             {"seed", o.seed + static_cast<int>(i)},
             {"meta", meta},
             {"dir", dir.string()}})
      .at("case");
}

// Run `kernel` on a case on the engine, under the three analyses; `keep` receives the output buffers.
CaseResult run_case(const Task& task, launch::Kernel& kernel, const json& c, const EvalOptions& o,
                    const std::vector<std::string>& lines,
                    std::map<std::string, std::vector<std::byte>>* keep) {
  CaseResult r;
  r.size = c.at("size");
  for (int d = 0; d < 3; ++d)
    r.grid[static_cast<size_t>(d)] = c.at("grid")[static_cast<size_t>(d)].get<int64_t>();
  launch::LaunchRecord rec;
  rec.kernel = task.name;
  rec.grid = r.grid;
  std::map<std::string, std::vector<std::byte>> data, before;
  std::vector<uint64_t> tracked;
  for (const json& a : c.at("args")) {
    const std::string name = a.at("name").get<std::string>();
    if (!a.contains("npy")) {
      const json& v = a.at("value");
      launch::Scalar s = v.is_boolean()          ? launch::Scalar{v.get<bool>()}
                         : v.is_number_integer() ? launch::Scalar{v.get<int64_t>()}
                         : v.is_string() ? launch::Scalar{std::strtod(v.get<std::string>().c_str(), nullptr)}
                                         : launch::Scalar{v.get<double>()};
      rec.args.push_back(launch::ArgRecord::scalar(name, s));
      continue;
    }
    const ir::Elem e = elem_of(a.at("dtype").get<std::string>());
    const int64_t n = numel_of(a.at("shape"));
    const uint64_t bytes = static_cast<uint64_t>(n) * static_cast<uint64_t>(ir::elem_bytes(e));
    auto& buf = data[name];
    buf = npy_data(a.at("npy").get<std::string>(), bytes);
    std::vector<int64_t> shape, strides(a.at("shape").size());
    for (const auto& d : a.at("shape")) shape.push_back(d.get<int64_t>());
    int64_t st = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      strides[d] = st;
      st *= shape[d];
    }
    if (a.value("role", "in") == "out" && bytes)  // undefined until the kernel writes it (torch.empty)
      tracked.push_back(analysis::Definedness::process().track(
          buf.data(), bytes, {"the out buffer of inputs()", task.path, task.inputs_line},
          ir::elem_bytes(e) == 1 ? analysis::Sentinel::int_bytes : analysis::Sentinel::float_nan));
    if (a.value("role", "in") != "in") before[name] = buf;  // what the kernel must leave, or never wrote
    rec.args.push_back(launch::ArgRecord::buffer(name, e, buf.data(), bytes, shape, strides));
  }
  launch::RunOptions ro;
  ro.analyses = {{"sanitizer", nullptr}, {"races", nullptr}, {"uninit", nullptr}};
  ro.threads = o.threads;
  ro.cancel = o.cancel;
  ro.max_steps = o.max_steps;
  const double t0 = now();
  try {
    launch::RunResult res = launch::run_launch(kernel, rec, ro);
    r.findings = std::move(res.findings);
  } catch (const Error& e) {
    r.error = located(e, lines);
  }
  r.seconds = now() - t0;
  for (uint64_t id : tracked) analysis::Definedness::process().forget(id);
  if (!r.error.empty()) return r;
  // Inputs must come back as they went in (a kernel that writes into one would corrupt the caller's tensor).
  for (const json& a : c.at("args")) {
    if (!a.contains("npy") || a.value("role", "in") != "in") continue;
    const std::string name = a.at("name").get<std::string>();
    const auto& now_bytes = data.at(name);
    const auto was = npy_data(a.at("npy").get<std::string>(), now_bytes.size());
    if (was != now_bytes) r.changed_inputs.push_back(changed_input(name, a, was.data(), now_bytes.data()));
  }
  for (const json& exp : c.at("expected")) {
    const std::string name = exp.at("name").get<std::string>();
    for (const json& a : c.at("args"))
      if (a.at("name") == name)
        r.outputs.push_back(compare(exp, a, data.at(name).data(), before.at(name).data()));
  }
  if (keep) *keep = std::move(data);
  return r;
}

// The stage reached by a candidate whose cases are `cases` (all of them ran or some failed).
Stage stage_of_cases(const std::vector<CaseResult>& cases) {
  bool values = true, clean = true;
  for (const auto& c : cases) {
    if (!c.error.empty()) return Stage::compiled;
    values = values && c.changed_inputs.empty();
    for (const auto& o : c.outputs) values = values && o.ok();
    clean = clean && c.findings.empty();
  }
  if (!values) return Stage::compiled;
  return clean ? Stage::clean : Stage::correct;
}

}  // namespace

bool CaseResult::ok() const {
  if (!error.empty() || !findings.empty() || !changed_inputs.empty()) return false;
  for (const auto& o : outputs)
    if (!o.ok()) return false;
  return true;
}

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::none: return "none";
    case Stage::json: return "json";
    case Stage::schema: return "schema";
    case Stage::semantics: return "semantics";
    case Stage::interface: return "interface";
    case Stage::verified: return "verified";
    case Stage::compiled: return "compiled";
    case Stage::correct: return "correct";
    case Stage::clean: return "clean";
  }
  return "";
}

Evaluation evaluate(const Task& task, std::string_view text, Worker& worker, const EvalOptions& o) {
  const double t0 = now();
  Evaluation ev;
  ev.json_text = std::string(text);
  fs::create_directories(o.work_dir);
  gen::Parsed p = gen::parse_text(text);
  if (!p.problems.empty()) {
    const auto kind = p.problems.front().kind;
    ev.reached = kind == gen::Problem::Kind::json     ? Stage::none
                 : kind == gen::Problem::Kind::schema ? Stage::json
                                                      : Stage::schema;
    ev.problems = std::move(p.problems);
    ev.seconds = now() - t0;
    return ev;
  }
  ev.reached = Stage::semantics;
  ev.problems = gen::check_interface(*p.ast, task.iface);
  if (!ev.problems.empty()) {
    ev.seconds = now() - t0;
    return ev;
  }
  ev.reached = Stage::interface;
  for (const auto& a : p.ast->args)
    if (a.kind == gen::Arg::Kind::pointer) ev.writers[a.name] = gen::writers(*p.ast, a.name);
  ev.ttir = gen::lower(*p.ast, &ev.line_pointers);
  ev.python = gen::python(*p.ast);
  const std::string ttir_file = task.name + ".ttir";
  const fs::path ttir_path = fs::path(o.work_dir) / ttir_file;
  {
    std::ofstream f(ttir_path, std::ios::binary);
    f << ev.ttir;
  }
  std::shared_ptr<launch::Kernel> kernel;
  try {
    kernel = launch::compile(ev.ttir, ttir_file);
  } catch (const Error& e) {
    ev.error = located(e, ev.line_pointers);
    ev.seconds = now() - t0;
    return ev;
  }
  ev.reached = Stage::verified;
  if (o.triton) {
    json r = worker.call({{"op", "compile_ttir"}, {"ttir", ttir_path.string()}, {"arch", 90}});
    if (r.contains("error")) {
      ev.error = "Triton: " + r["error"].get<std::string>();
      ev.seconds = now() - t0;
      return ev;
    }
  }
  ev.reached = Stage::compiled;
  json meta = json::object();
  for (const auto& a : p.ast->args)
    if (a.kind == gen::Arg::Kind::constexpr_) meta[a.name] = a.value;
  std::map<std::string, std::vector<std::byte>> first_outputs;
  json first_case;
  for (size_t i = 0; i < task.sizes.size(); ++i) {
    const json c = make_case(task, i, meta, worker, o);
    if (i == 0) first_case = c;
    ev.cases.push_back(run_case(task, *kernel, c, o, ev.line_pointers, i == 0 ? &first_outputs : nullptr));
    if (o.cancel && o.cancel->load()) break;
  }
  ev.reached = stage_of_cases(ev.cases);
  if (ev.passed() && o.round_trip && !ev.python.empty()) {
    // The emitted Triton Python, through Triton's own front end and tilescope's front door, on case 0.
    const fs::path dir = fs::path(o.work_dir) / "python";
    fs::create_directories(dir);
    const fs::path py = dir / (task.name + ".py");
    {
      std::ofstream f(py, std::ios::binary);
      f << ev.python;
    }
    json r = worker.call({{"op", "run_python"},
                          {"module", py.string()},
                          {"kernel", task.name},
                          {"path", task.path},
                          {"size", task.sizes[0]},
                          {"seed", o.seed},
                          {"meta", meta},
                          {"dir", dir.string()},
                          {"max_steps", o.max_steps}});
    // The same seed must give the same inputs, or the two runs cannot be compared: the task's fault.
    if (r.contains("case")) {
      for (size_t k = 0; k < first_case.at("args").size(); ++k) {
        const json& mine = first_case["args"][k];
        const json& theirs = r["case"].at("args").at(k);
        if (!mine.contains("npy") || mine.value("role", "in") == "out")
          continue;  // out: whatever memory held
        if (file_text(mine["npy"].get<std::string>()) != file_text(theirs.at("npy").get<std::string>()))
          throw Error(
              fmt::format("{}:{}: inputs() gave {} other values for the same seed: draw random values from "
                          "its `gen` argument (a seeded torch.Generator)",
                          task.path, task.inputs_line, mine.at("name").get<std::string>()));
      }
    }
    if (r.contains("error")) {
      ev.round_trip = false;
      ev.round_trip_note = fmt::format("the emitted Python failed ({}): {}", r.value("stage", ""),
                                       r["error"].get<std::string>());
    } else {
      std::string diff;
      for (const auto& [name, path] : r.at("outputs").items()) {
        const auto& mine = first_outputs.at(name);
        const auto theirs = npy_data(path.get<std::string>(), mine.size());
        if (std::memcmp(mine.data(), theirs.data(), mine.size()) != 0)
          diff += (diff.empty() ? "" : ", ") + name;
      }
      const auto findings = report::from_json(r.at("findings"));
      ev.round_trip = diff.empty() && findings.empty();
      if (!diff.empty()) ev.round_trip_note = "outputs differ from the engine's run of the TTIR: " + diff;
      if (!findings.empty())
        ev.round_trip_note += (diff.empty() ? "" : "; ") + report::summary_line(findings);
    }
  }
  ev.seconds = now() - t0;
  return ev;
}

Evaluation evaluate_python(const Task& task, std::string_view source, Worker& worker, const EvalOptions& o) {
  const double t0 = now();
  Evaluation ev;
  ev.python = std::string(source);
  fs::create_directories(o.work_dir);
  const fs::path py = fs::path(o.work_dir) / (task.name + ".py");
  {
    std::ofstream f(py, std::ios::binary);
    f << source;
  }
  for (size_t i = 0; i < task.sizes.size(); ++i) {
    const fs::path dir = fs::path(o.work_dir) / fmt::format("case{}", i);
    json r = worker.call({{"op", "run_python"},
                          {"module", py.string()},
                          {"kernel", task.name},
                          {"path", task.path},
                          {"size", task.sizes[i]},
                          {"seed", o.seed + static_cast<int>(i)},
                          {"dir", dir.string()},
                          {"compile", i == 0 && o.triton},
                          {"max_steps", o.max_steps}});
    const std::string stage = r.value("stage", "");
    if (stage == "import" || stage == "kernel" || stage == "compile") {
      ev.reached = stage == "compile" ? Stage::interface : Stage::none;
      ev.error = (stage == "compile" ? "Triton: " : "") + r.at("error").get<std::string>();
      ev.seconds = now() - t0;
      return ev;
    }
    CaseResult cr;
    const json& c = r.at("case");
    cr.size = c.at("size");
    for (int d = 0; d < 3; ++d)
      cr.grid[static_cast<size_t>(d)] = c.at("grid")[static_cast<size_t>(d)].get<int64_t>();
    if (stage == "launch") {
      cr.error = r.at("error").get<std::string>();
    } else {
      cr.findings = report::from_json(r.at("findings"));
      for (const json& ch : r.value("changed_inputs", json::array())) {
        CaseResult::ChangedInput ci;
        ci.name = ch.at("name").get<std::string>();
        ci.elements = ch.at("elements").get<int64_t>();
        ci.first = ch.at("first").get<std::vector<int64_t>>();
        cr.changed_inputs.push_back(std::move(ci));
      }
      for (const json& exp : c.at("expected")) {
        const std::string name = exp.at("name").get<std::string>();
        for (const json& a : c.at("args")) {
          if (a.at("name") != name) continue;
          const ir::Elem e = elem_of(a.at("dtype").get<std::string>());
          const uint64_t bytes =
              static_cast<uint64_t>(numel_of(a.at("shape"))) * static_cast<uint64_t>(ir::elem_bytes(e));
          const auto got = npy_data(r.at("outputs").at(name).get<std::string>(), bytes);
          const auto was = npy_data(r.at("before").at(name).get<std::string>(), bytes);
          cr.outputs.push_back(compare(exp, a, got.data(), was.data()));
        }
      }
    }
    ev.cases.push_back(std::move(cr));
    if (o.cancel && o.cancel->load()) break;
  }
  ev.reached = stage_of_cases(ev.cases);
  ev.seconds = now() - t0;
  return ev;
}

std::vector<std::string> Evaluation::feedback(size_t max_lines) const {
  std::vector<std::string> out;
  auto add = [&](std::string s) {
    if (out.size() < max_lines) out.push_back(std::move(s));
  };
  for (const auto& p : problems) add(p.str());
  if (!error.empty()) {
    std::string e = error;
    if (e.size() > 600) e = e.substr(0, 600) + " ...";
    add(e);
  }
  for (const auto& c : cases) {
    const std::string size = size_text(c.size);
    if (!c.error.empty()) {
      std::string e = c.error;
      if (e.size() > 400) e = e.substr(0, 400) + " ...";
      add(fmt::format("size {}: the launch failed: {}", size, e));
      continue;
    }
    for (const auto& o : c.outputs) {
      if (o.bad)
        add(fmt::format(
            "size {}, grid ({}, {}, {}): {}: {} of {} compared elements are wrong; the largest error is {} "
            "at "
            "{}: got {}, expected {}{}",
            size, c.grid[0], c.grid[1], c.grid[2], o.name, o.bad, o.compared, number(o.max_error),
            shape_text(o.at), number(o.got), number(o.expected),
            o.unwritten ? fmt::format(" ({} of the compared elements were never written, the first at {})",
                                      o.unwritten, shape_text(o.first_unwritten))
                        : ""));
      if (o.touched)
        add(fmt::format(
            "size {}, grid ({}, {}, {}): {}: {} elements that the task does not check were written, the "
            "first at {}: the kernel must leave them as they were",
            size, c.grid[0], c.grid[1], c.grid[2], o.name, o.touched, shape_text(o.first_touched)));
    }
    for (const auto& ci : c.changed_inputs) {
      std::string ops;
      if (auto it = writers.find(ci.name); it != writers.end())
        for (const auto& p : it->second) ops += (ops.empty() ? "" : ", ") + p;
      add(fmt::format(
          "size {}: the kernel wrote into {}, an input, at {} elements, the first at {}: it must only read "
          "it{}",
          size, ci.name, ci.elements, shape_text(ci.first),
          ops.empty() ? "" : fmt::format(" (the stores and atomics into {}: {})", ci.name, ops)));
    }
    for (const auto& f : c.findings) {
      const std::string ptr = pointer_of_line(line_pointers, f.site.ttir_line);
      add(fmt::format("size {}: {} at {}{}: {}", size, analysis::kind_name(f.kind),
                      ptr.empty() ? "" : ptr + " ", f.site.op.empty() ? "" : "(" + f.site.op + ")",
                      f.summary));
    }
  }
  return out;
}

}  // namespace tilescope::generate
