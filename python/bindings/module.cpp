// tilescope._native: the Python package's door into the C++ engine.
//
// Python hands over TTIR text (compiled by Triton from the user's kernel) and a launch: its arguments
// as tilescope._native.Buffer objects (tensors and arrays: a pointer, an extent, a dtype, a shape and
// strides) and Python scalars. Everything else happens in C++ on the one launch path
// (launch::run_launch): reading and verifying the TTIR once per distinct text, binding the launch
// record by the TTIR signature, running the grid under the requested analyses, returning the findings
// as JSON. The GIL is released while the grid runs. Bad input raises TilescopeError (its `diagnostic`
// attribute holds the structured form: report.h diagnostic_to_json), never a crash.
#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tilescope/analysis/uninit.h"
#include "tilescope/gen/ast.h"
#include "tilescope/ir/diag.h"
#include "tilescope/launch/record.h"
#include "tilescope/launch/runner.h"
#include "tilescope/nki/nki.h"
#include "tilescope/report/profile.h"
#include "tilescope/report/report.h"
#include "tilescope/trace/trace.h"

namespace nb = nanobind;
using namespace tilescope;

namespace {

std::thread::id g_main_thread;  // Python is imported, and gets signals, on the main thread
PyObject* g_error = nullptr;    // tilescope._native.TilescopeError

/// A Python argument as a launch-record argument: a Buffer, or a scalar (int, float, bool), or None.
launch::ArgRecord arg_record(const nb::handle& a, const std::string& name) {
  if (nb::isinstance<launch::ArgRecord>(a)) {
    launch::ArgRecord r = nb::cast<launch::ArgRecord>(a);
    if (r.name.empty()) r.name = name;
    return r;
  }
  launch::ArgRecord r;
  r.name = name;
  if (a.is_none()) {
    r.kind = launch::ArgRecord::Kind::none;
  } else if (nb::isinstance<nb::bool_>(a)) {
    r.value = nb::cast<bool>(a);
  } else if (nb::isinstance<nb::int_>(a)) {
    // Triton passes ints >= 2^63 as u64; anything wider cannot be an argument.
    try {
      r.value = nb::cast<int64_t>(a);
    } catch (const std::exception&) {
      try {
        r.value = nb::cast<uint64_t>(a);
      } catch (const std::exception&) {
        throw Error(fmt::format("argument '{}': {} does not fit in 64 bits", name,
                                nb::cast<std::string>(nb::str(a))));
      }
    }
  } else if (nb::isinstance<nb::float_>(a)) {
    r.value = nb::cast<double>(a);
  } else {
    throw Error(fmt::format("argument '{}': {} is neither a tensor nor a number", name,
                            nb::cast<std::string>(nb::str(nb::type_name(a.type())))));
  }
  return r;
}

// Findings of every launch in this process (so the text report can group across launches).
std::mutex g_findings_mu;
std::vector<analysis::Finding> g_findings;

// The launch record of this process's last launch, made into JSON only when asked for (last_record):
// building and printing it at every launch cost about a fifth of a small launch.
std::mutex g_last_mu;
std::optional<launch::LaunchRecord> g_last_record;

/// `parse(text)` for a text the front door passes unchanged at every launch (a kernel's specialization,
/// the process's analyses): parsed at its first use and kept (a few distinct texts per process).
template <class T, class Parse>
const T& parsed_once(const std::string& text, Parse&& parse) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const T>> seen;
  std::lock_guard<std::mutex> g(mu);
  auto it = seen.find(text);
  if (it == seen.end()) it = seen.emplace(text, std::make_shared<const T>(parse(text))).first;
  return *it->second;
}

/// Ctrl-C during a launch. Python runs its SIGINT handler between bytecodes on the main thread, which
/// is inside the engine then, with the GIL released; so for the launch a C handler sets the launch's
/// cancel flag, which the engine checks at every loop iteration and call of every program. A launch
/// stopped that way hands the signal back to Python (hand_back): Python's own handler runs and
/// raises KeyboardInterrupt (or whatever handler the program installed does). Only on the main thread
/// (where Python receives signals), and only while Python handles SIGINT: when the program ignores it
/// or restored the default action, that applies as usual. The previous handler is restored when the
/// launch ends.
class InterruptGuard {
 public:
  InterruptGuard() : on_(std::this_thread::get_id() == g_main_thread) {
    if (!on_) return;
    flag().store(false);
    sigaction(SIGINT, nullptr, &old_);
    if (old_.sa_handler == SIG_IGN || old_.sa_handler == SIG_DFL) {
      on_ = false;
      return;
    }
    struct sigaction sa {};
    sa.sa_handler = [](int) { flag().store(true); };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
  }
  ~InterruptGuard() { restore(); }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  /// The launch's cancel flag: null where SIGINT is not ours to catch.
  const std::atomic<bool>* cancel() const { return on_ ? &flag() : nullptr; }
  /// The launch was interrupted: restore Python's handler and run it for the SIGINT it missed (GIL
  /// held). Always leaves a Python exception set: the handler's (KeyboardInterrupt by default), or
  /// KeyboardInterrupt when the handler returned, since the launch did not finish.
  void hand_back() {
    restore();
#if PY_VERSION_HEX >= 0x030A0000
    PyErr_SetInterruptEx(SIGINT);
#else
    PyErr_SetInterrupt();
#endif
    if (PyErr_CheckSignals() == 0) PyErr_SetNone(PyExc_KeyboardInterrupt);
  }

 private:
  static std::atomic<bool>& flag() {
    static std::atomic<bool> f{false};
    return f;
  }
  void restore() {
    if (on_) sigaction(SIGINT, &old_, nullptr);
    on_ = false;
  }
  bool on_;
  struct sigaction old_ {};
};

/// The analyses a front door asks for: JSON `[[name, options], ...]` (tilescope._state.analyses_json).
std::vector<launch::AnalysisRequest> analysis_requests(const std::string& analyses) {
  nlohmann::json requests = nlohmann::json::parse(analyses, nullptr, false);
  if (!requests.is_array()) throw Error("analyses: a JSON list of [name, options] pairs is needed");
  std::vector<launch::AnalysisRequest> out;
  for (const auto& r : requests) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_string())
      throw Error(fmt::format("analyses: {} is not a [name, options] pair", r.dump()));
    out.push_back({r[0].get<std::string>(), r[1]});
  }
  return out;
}

/// The trace writer of this process for `path`: opened once, and closed when the process moves on to
/// another trace file (once launches still writing to it are done). A forked child opens its own: an
/// SQLite connection must not cross a fork, so the parent's is left alone, never closed in the child.
std::shared_ptr<trace::Writer> trace_writer(const std::string& path) {
  static std::mutex mu;
  static std::map<pid_t, std::pair<std::string, std::shared_ptr<trace::Writer>>> writers;
  std::lock_guard<std::mutex> g(mu);
  auto& [p, w] = writers[getpid()];
  if (!w || p != path) {
    w = std::make_shared<trace::Writer>(path);
    p = path;
  }
  return w;
}

/// The writer for `path` ("" = no trace: null); null with the reason in `error` when it cannot be opened
/// (the launch still runs: the program goes on).
std::shared_ptr<trace::Writer> trace_writer(const std::string& path, std::string& error) {
  if (path.empty()) return nullptr;
  try {
    return trace_writer(path);
  } catch (const Error& e) {
    error = e.what();
    return nullptr;
  }
}

nb::dict launch_kernel(const std::shared_ptr<launch::Kernel>& k, const nb::list& args,
                       const std::vector<int64_t>& grid, int threads, int64_t max_steps,
                       const std::string& analyses, const std::vector<std::string>& stack,
                       const std::string& specialization, const std::vector<launch::ArgRecord>& allocations,
                       int64_t max_memory, const std::string& trace_path) {
  launch::LaunchRecord rec;
  rec.allocations = allocations;
  rec.ttir_file = k->module().filename;
  const auto& params = k->function("").args();
  for (size_t i = 0; i < nb::len(args); ++i)
    rec.args.push_back(arg_record(args[i], i < params.size() ? params[i]->name : fmt::format("#{}", i)));
  if (grid.empty() || grid.size() > 3)
    throw Error(fmt::format("the launch grid must have 1 to 3 dimensions, not {}", grid.size()));
  for (size_t d = 0; d < grid.size(); ++d) rec.grid[d] = grid[d];
  rec.stack = stack;
  // The front end's specialization, through the record's own JSON reader (README, "Launch record").
  rec.specialization = parsed_once<launch::Specialization>(specialization, [](const std::string& text) {
    nlohmann::json spec = nlohmann::json::parse(text, nullptr, false);
    if (!spec.is_object()) throw Error("specialization: a JSON object is needed");
    return launch::record_from_json(
               {{"kernel", ""}, {"grid", {1}}, {"args", nlohmann::json::array()}, {"specialization", spec}})
        .specialization;
  });

  launch::RunOptions opts;
  opts.threads = threads;
  opts.max_steps = max_steps;
  opts.max_memory = max_memory;
  opts.analyses = parsed_once<std::vector<launch::AnalysisRequest>>(analyses, analysis_requests);
  InterruptGuard interrupt;
  opts.cancel = interrupt.cancel();
  launch::RunResult res;
  std::string trace_error;  // the launch ran but could not be recorded: the program goes on
  try {
    nb::gil_scoped_release nogil;
    std::shared_ptr<trace::Writer> writer = trace_writer(trace_path, trace_error);
    res = writer ? writer->run(*k, rec, opts, &trace_error) : launch::run_launch(*k, rec, opts);
  } catch (const exec::Interrupted&) {
    interrupt.hand_back();
    throw nb::python_error();
  }
  {
    std::lock_guard<std::mutex> g(g_findings_mu);
    g_findings.insert(g_findings.end(), res.findings.begin(), res.findings.end());
  }
  nb::dict out;
  out["findings"] = report::to_json(res.findings).dump();
  nb::dict st;
  st["programs"] = res.stats.programs;
  st["out_of_bounds"] = res.stats.out_of_bounds;
  st["failed_asserts"] = res.stats.failed_asserts;
  st["switches"] = res.stats.switches;
  out["stats"] = st;
  out["stopped"] = res.stats.stopped;  // an analysis stopped the grid (abort_on_first)
  out["stdout"] = res.prints;
  out["stderr"] = opts.analyses.empty() ? res.failed_asserts : std::string();
  out["statistics"] = res.statistics.dump();
  out["reports"] = res.reports.dump();  // per analysis name, those with a report (the profiler's counts)
  out["trace_error"] = trace_error;
  {
    std::lock_guard<std::mutex> g(g_last_mu);
    g_last_record = std::move(rec);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// NKI (tilescope/nki/nki.h): python/tilescope/nki specializes the kernel (its Python runs once per
// program) and hands each operation over; the instructions run here.

ir::PyLoc py_loc(const std::string& file, int line, int col) {
  ir::PyLoc l;
  l.file = file;
  l.line = line;
  l.col = col;
  return l;
}

/// One argument of an NKI operation: None, a View, a number (bools and ints too), a name, or a list of
/// numbers (nested lists are flattened: iota's [[step, num], ...]).
nki::Value nki_value(const nb::handle& h, const std::string& key) {
  if (h.is_none()) return std::monostate{};
  if (nb::isinstance<nki::View>(h)) return nb::cast<nki::View>(h);
  if (nb::isinstance<nb::bool_>(h)) return nb::cast<bool>(h) ? 1.0 : 0.0;
  if (nb::isinstance<nb::int_>(h) || nb::isinstance<nb::float_>(h)) return nb::cast<double>(h);
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    std::vector<double> out;
    std::function<void(const nb::handle&)> flat = [&](const nb::handle& x) {
      if (nb::isinstance<nb::list>(x) || nb::isinstance<nb::tuple>(x)) {
        for (nb::handle y : x) flat(y);
      } else if (nb::isinstance<nb::int_>(x) || nb::isinstance<nb::float_>(x) ||
                 nb::isinstance<nb::bool_>(x)) {
        out.push_back(nb::cast<double>(x));
      } else {
        throw Error(fmt::format("argument '{}': a list of numbers is needed, not one holding {}", key,
                                std::string(nb::str(x.type()).c_str())));
      }
    };
    flat(h);
    return out;
  }
  throw Error(fmt::format("argument '{}': {} is not a tile, a number or an operator", key,
                          std::string(nb::str(h.type()).c_str())));
}

nb::dict nki_run(nki::Kernel& k, const std::string& analyses, const std::vector<std::string>& stack,
                 const std::string& trace_path) {
  launch::RunOptions opts;
  opts.analyses = analysis_requests(analyses);
  InterruptGuard interrupt;
  opts.cancel = interrupt.cancel();
  launch::RunResult res;
  std::string trace_error;  // the launch ran but could not be recorded: the program goes on
  try {
    nb::gil_scoped_release nogil;
    std::shared_ptr<trace::Writer> writer = trace_writer(trace_path, trace_error);
    if (writer) {
      // Recorded as any launch, with its profile (the visualizer's memory and engine views need it).
      launch::LaunchRecord rec = k.record();
      rec.stack = stack;
      const ir::Module& m = k.module();
      res = writer->run(
          {m, *m.functions.front(), rec.ttir, "nki"}, rec, opts,
          [&](const launch::RunOptions& o) {
            launch::RunResult r = k.run(o);
            if (!r.reports.contains("profile")) r.reports["profile"] = k.profile();
            return r;
          },
          &trace_error);
    } else {
      res = k.run(opts);
    }
  } catch (const exec::Interrupted&) {
    interrupt.hand_back();
    throw nb::python_error();
  }
  {
    std::lock_guard<std::mutex> g(g_findings_mu);
    g_findings.insert(g_findings.end(), res.findings.begin(), res.findings.end());
  }
  nb::dict out;
  out["findings"] = report::to_json(res.findings).dump();
  out["programs"] = res.stats.programs;
  out["statistics"] = res.statistics.dump();
  out["reports"] = res.reports.dump();
  out["seconds"] = res.seconds;
  out["trace_error"] = trace_error;
  return out;
}

// The AST of a kernel AST's JSON text; an Error listing its problems when it is not valid.
gen::Ast valid_ast(const std::string& text) {
  gen::Parsed p = gen::parse_text(text);
  if (!p.ast) {
    std::string msg = "invalid kernel AST:";
    for (const auto& q : p.problems) msg += "\n  " + q.str();
    throw Error(msg);
  }
  return std::move(*p.ast);
}

void bind_nki(nb::module_& m) {
  nb::class_<nki::View>(m, "NkiView",
                        "An access pattern: elements of one tensor of an NKI kernel (nki/nki.h).")
      .def(nb::init<>())
      .def(
          "__init__",
          [](nki::View* v, int tensor, int64_t offset, std::vector<int64_t> shape,
             std::vector<int64_t> strides, const nki::View* vector_offset, const nki::View* scalar_offset,
             int indirect_dim) {
            new (v) nki::View{tensor, offset, std::move(shape), std::move(strides)};
            if (vector_offset) v->vector_offset = std::make_shared<const nki::View>(*vector_offset);
            if (scalar_offset) v->scalar_offset = std::make_shared<const nki::View>(*scalar_offset);
            v->indirect_dim = indirect_dim;
          },
          nb::arg("tensor"), nb::arg("offset"), nb::arg("shape"), nb::arg("strides"),
          nb::arg("vector_offset").none() = nb::none(), nb::arg("scalar_offset").none() = nb::none(),
          nb::arg("indirect_dim") = 0,
          "A view; `vector_offset` / `scalar_offset`: index tiles (NkiView) of a dynamic one (nki.h, View).")
      .def_rw("tensor", &nki::View::tensor)
      .def_rw("offset", &nki::View::offset)
      .def_rw("shape", &nki::View::shape)
      .def_rw("strides", &nki::View::strides);
  nb::class_<nki::Kernel>(m, "NkiKernel",
                          "One launch of an NKI kernel: its tensors and its programs' instructions.")
      .def(
          "__init__",
          [](nki::Kernel* k, const std::string& name, const std::string& target, int64_t programs) {
            new (k) nki::Kernel(name, nki::target(target), programs);
          },
          nb::arg("name"), nb::arg("target"), nb::arg("programs"))
      .def(
          "add_argument",
          [](nki::Kernel& k, const std::string& name, const std::string& dtype, uintptr_t data_ptr,
             uint64_t nbytes, std::vector<int64_t> shape, std::vector<int64_t> strides) {
            return k.add_argument(name, nki::dtype(dtype), reinterpret_cast<std::byte*>(data_ptr), nbytes,
                                  std::move(shape), std::move(strides));
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("data_ptr"), nb::arg("nbytes"), nb::arg("shape"),
          nb::arg("strides"),
          "An HBM array the kernel reads or writes (zero-copy: it must stay alive until run()); the tensor "
          "id.")
      .def(
          "allocate",
          [](nki::Kernel& k, int program, const std::string& name, const std::string& space,
             const std::string& dtype, std::vector<int64_t> shape, const std::string& file, int line,
             int col) {
            const nki::Space s = space == "psum"   ? nki::Space::psum
                                 : space == "sbuf" ? nki::Space::sbuf
                                                   : nki::Space::hbm;
            return k.allocate(program, name, s, nki::dtype(dtype), std::move(shape), py_loc(file, line, col));
          },
          nb::arg("program"), nb::arg("name"), nb::arg("space"), nb::arg("dtype"), nb::arg("shape"),
          nb::arg("file") = "", nb::arg("line") = 0, nb::arg("col") = 0,
          "An SBUF or PSUM tensor of `program`, allocated at file:line; the tensor id.")
      .def(
          "append",
          [](nki::Kernel& k, int program, const std::string& op, const nb::dict& args,
             const std::string& file, int line, int col) {
            nki::Args a;
            for (auto [key, value] : args) {
              const std::string name = nb::cast<std::string>(key);
              a.emplace(name, nki_value(value, name));
            }
            k.append(program, op, a, py_loc(file, line, col));
          },
          nb::arg("program"), nb::arg("op"), nb::arg("args"), nb::arg("file") = "", nb::arg("line") = 0,
          nb::arg("col") = 0,
          "Check operation `op` of `program` with `args` (name -> None, NkiView, number, operator name or "
          "list "
          "of numbers), called from file:line, and append it. TilescopeError for a broken constraint.")
      .def("run", &nki_run, nb::arg("analyses") = "[]", nb::arg("stack") = std::vector<std::string>(),
           nb::arg("trace") = "",
           "Run every program under `analyses` (JSON [name, options] pairs; 'profile' gives the NKI "
           "profile), recorded into the trace file `trace` when it is not empty, with the launch's Python "
           "`stack`. Returns {findings (JSON), programs, statistics, reports, seconds, trace_error}.")
      .def_prop_ro("programs", &nki::Kernel::programs);
  // The kernel generator's AST (include/tilescope/gen/ast.h, docs/gen-format.md).
  m.attr("GEN_VERSION") = gen::kVersion;
  m.def(
      "gen_schema", [] { return gen::schema().dump(); },
      "The JSON Schema (draft 2020-12) of the kernel AST, as JSON text, generated from the op table.");
  m.def("gen_reference", &gen::op_reference,
        "The op reference of the kernel AST (text, one op and its fields each).");
  m.def(
      "gen_check",
      [](const std::string& text) {
        nlohmann::json a = nlohmann::json::array();
        for (const auto& p : gen::parse_text(text).problems)
          a.push_back({{"kind", gen::problem_kind_name(p.kind)},
                       {"pointer", p.pointer},
                       {"message", p.message},
                       {"expected", p.expected},
                       {"found", p.found}});
        return a.dump();
      },
      nb::arg("text"),
      "The problems of a kernel AST (JSON text) as a JSON list of {pointer, message, expected, found}; "
      "'[]' when it is valid.");
  m.def(
      "gen_lower",
      [](const std::string& text) {
        std::vector<std::string> lines;
        std::string ttir = gen::lower(valid_ast(text), &lines);
        return std::make_pair(ttir, lines);
      },
      nb::arg("text"),
      "(TTIR text, the JSON pointer of the AST op behind each TTIR line) of a valid kernel AST (JSON text); "
      "TilescopeError listing its problems otherwise.");
  m.def(
      "gen_python", [](const std::string& text) { return gen::python(valid_ast(text)); }, nb::arg("text"),
      "The Triton Python module (the @triton.jit kernel and launch(..., grid)) of a valid kernel AST (JSON "
      "text); TilescopeError listing its problems otherwise.");
  m.def(
      "nki_ops",
      [] {
        std::vector<std::string> v;
        for (auto s : nki::Kernel::ops()) v.emplace_back(s);
        return v;
      },
      "The NKI operations tilescope runs.");
  m.def(
      "nki_target",
      [](const std::string& name) {
        const nki::Target& t = nki::target(name);
        nb::dict d;
        d["name"] = std::string(t.name);
        d["nc_version"] = t.nc_version;
        d["partitions"] = t.partitions;
        d["sbuf_bytes"] = t.sbuf_bytes;
        d["psum_bytes"] = t.psum_bytes;
        d["psum_banks"] = t.psum_banks;
        return d;
      },
      nb::arg("name"), "The NKI target `name` (trn1, trn2, trn3): partitions and bytes per partition.");
}

}  // namespace

NB_MODULE(_native, m) {
  g_main_thread = std::this_thread::get_id();
  // Compiled kernels live in a process-wide cache until exit, by design: no leak report at shutdown.
  nb::set_leak_warnings(false);
  m.doc() = "tilescope's C++ engine: compile TTIR once, launch it under analyses";
  static nb::exception<Error> error(m, "TilescopeError");
  g_error = error.ptr();
  // tilescope::Error keeps its structured diagnostic for Python: `e.diagnostic` (a JSON string).
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      nb::object exc = nb::borrow(g_error)(nb::str(e.what()));
      nb::setattr(exc, "diagnostic", nb::str(report::diagnostic_to_json(e.diagnostic()).dump().c_str()));
      PyErr_SetObject(g_error, exc.ptr());
    }
  });

  nb::class_<launch::ArgRecord>(m, "Buffer",
                                "A tensor or array argument: the memory the kernel's pointer may reach.")
      .def(
          "__init__",
          [](launch::ArgRecord* self, const std::string& name, const std::string& dtype, uintptr_t data_ptr,
             uint64_t nbytes, std::vector<int64_t> shape, std::vector<int64_t> strides) {
            auto e = ir::elem_from_name(dtype);
            if (!e) throw Error(fmt::format("argument '{}': unknown dtype '{}'", name, dtype));
            new (self)
                launch::ArgRecord(launch::ArgRecord::buffer(name, *e, reinterpret_cast<std::byte*>(data_ptr),
                                                            nbytes, std::move(shape), std::move(strides)));
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("data_ptr"), nb::arg("nbytes"), nb::arg("shape"),
          nb::arg("strides"),
          "name: the kernel argument; dtype: a torch / numpy / Triton dtype name; data_ptr: the address of "
          "the first element; nbytes: every byte the view can reach from it; shape and strides in elements.")
      .def_ro("name", &launch::ArgRecord::name)
      .def_ro("nbytes", &launch::ArgRecord::bytes)
      .def_ro("shape", &launch::ArgRecord::shape)
      .def_ro("strides", &launch::ArgRecord::strides)
      .def_rw("padding", &launch::ArgRecord::padding,
              "for the base of a host-side tensor descriptor: 1 zero padding, 2 NaN padding");

  nb::class_<launch::Kernel>(m, "Kernel")
      .def_prop_ro("name", [](const launch::Kernel& k) { return k.function("").name; })
      .def_prop_ro(
          "args",
          [](const launch::Kernel& k) {
            std::vector<std::pair<std::string, std::string>> out;
            for (auto& a : k.function("").args()) out.emplace_back(a->name, a->type->str());
            return out;
          },
          "(name, TTIR type) of each runtime argument, in order");

  m.def("compile", &launch::compile, nb::arg("text"), nb::arg("filename") = "kernel.ttir",
        "Read and verify TTIR text and plan it on the engine; cached by text. Raises TilescopeError.");
  m.attr("DEFAULT_MAX_STEPS") = exec::kDefaultMaxSteps;
  m.attr("MAX_THREADS") = exec::kMaxThreads;
  m.def(
      "parse_threads",
      [](const std::string& text, const std::string& what) { return exec::parse_threads(text, what); },
      nb::arg("text"), nb::arg("what"),
      "A worker thread count written as a decimal number, checked as every entry point checks it: 0 (all "
      "cores) to MAX_THREADS. Raises TilescopeError naming `what` (the option or variable) otherwise.");
  m.def(
      "launch", &launch_kernel, nb::arg("kernel"), nb::arg("args"), nb::arg("grid"), nb::arg("threads") = 0,
      nb::arg("max_steps") = exec::kDefaultMaxSteps, nb::arg("analyses") = "[]",
      nb::arg("stack") = std::vector<std::string>{}, nb::arg("specialization") = "{}",
      nb::arg("allocations") = std::vector<launch::ArgRecord>{}, nb::arg("max_memory") = 0,
      nb::arg("trace") = "",
      "Run one launch of `kernel` on `grid` with `args` (per TTIR argument: a Buffer or a Python scalar) "
      "and the program's other live `allocations` (Buffers: what a pointer made from an integer may point "
      "into), on `threads` worker threads (0: all cores), each program running at most `max_steps` "
      "operations (0: no limit; more is a TilescopeError located at the loop), "
      "under `analyses` (JSON: a list of [name, options] pairs, e.g. '[[\"sanitizer\", {}]]'), in at "
      "most `max_memory` bytes of program frames (0: half the physical memory), recorded into the trace "
      "file `trace` when it is not empty (trace/trace.h). Ctrl-C "
      "stops the launch within a loop iteration and raises KeyboardInterrupt. Returns "
      "{'findings': JSON text (list), 'stats': {...}, 'stopped': bool, 'stdout': the tt.print text, "
      "'stderr': failed-assert lines when no analysis ran, 'statistics': JSON text, 'reports': JSON text "
      "(per analysis with a report, e.g. 'profile'), 'trace_error': why the launch could not be recorded "
      "('' when it was, or no trace)}; the caller writes the text. The GIL is released while the grid runs.");
  m.def(
      "last_record",
      []() -> std::optional<std::string> {
        std::lock_guard<std::mutex> g(g_last_mu);
        if (!g_last_record) return std::nullopt;
        return launch::to_json(*g_last_record, false).dump();
      },
      "The launch record of this process's last launch (README, \"Launch record\") as JSON text, without "
      "the TTIR; None before the first launch.");
  m.def(
      "analyses",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& a : analysis::analyses()) out.emplace_back(a.name, a.description);
        return out;
      },
      "(name, description) of every analysis in the registry");
  m.def(
      "profile_text",
      [](const std::string& launches, int top) {
        nlohmann::json j = nlohmann::json::parse(launches, nullptr, false);
        if (!j.is_array()) throw Error("profile_text: a JSON list of per-launch profile reports is needed");
        return report::profile_to_text(j, top);
      },
      nb::arg("launches"), nb::arg("top") = 5,
      "The profile summary (as `tilescope profile` prints it) of per-launch profile reports (JSON text)");
  m.def(
      "report_text",
      [](bool color) {
        std::lock_guard<std::mutex> g(g_findings_mu);
        return report::to_text(report::merge(g_findings), color);
      },
      nb::arg("color") = false, "Text report of every finding of this process so far");
  m.def(
      "uninit_track",
      [](uintptr_t host, uint64_t nbytes, const std::string& call, const std::string& file, int line,
         bool int_bytes) {
        return analysis::Definedness::process().track(
            reinterpret_cast<std::byte*>(host), nbytes, {call, file, line},
            int_bytes ? analysis::Sentinel::int_bytes : analysis::Sentinel::float_nan);
      },
      nb::arg("host"), nb::arg("nbytes"), nb::arg("call"), nb::arg("file"), nb::arg("line"),
      nb::arg("int_bytes") = false,
      "Track host bytes [host, host + nbytes), just allocated uninitialized by `call` at file:line, for the "
      "uninit analysis: fills them with the sentinel pattern (int_bytes: the one for 1-byte integer data, "
      "else float32 NaNs) and marks them undefined (the memory must be writable and of plain data). Returns "
      "the id uninit_forget takes (0: nothing tracked).");
  m.def(
      "uninit_forget", [](uint64_t id) { analysis::Definedness::process().forget(id); }, nb::arg("id"),
      "Stop tracking allocation `id` (its owner was freed).");
  m.def(
      "uninit_defined",
      [](uintptr_t host) {
        auto a = analysis::Definedness::process().find(reinterpret_cast<const std::byte*>(host));
        if (!a) return -1;
        std::lock_guard<std::mutex> g(a->mu());
        return a->defined(static_cast<uint64_t>(reinterpret_cast<const std::byte*>(host) - a->host)) ? 1 : 0;
      },
      nb::arg("host"),
      "Whether a kernel has defined host byte `host` of a tracked allocation: 1 or 0 (host writes not "
      "looked at); -1 when no tracked allocation holds it.");
  m.def(
      "uninit_tracked", [] { return analysis::Definedness::process().size(); },
      "How many allocations are tracked by the uninit analysis now");
  m.def("clear", [] {
    std::lock_guard<std::mutex> g(g_findings_mu);
    g_findings.clear();
  });
  bind_nki(m);
}
