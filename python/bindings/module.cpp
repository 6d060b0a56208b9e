// tilescope._native: the Python package's door into the C++ engine.
//
// Python hands over TTIR text (compiled by Triton from the user's kernel) and a launch described
// with plain Python values; everything else happens here: reading and verifying the TTIR (once per
// distinct text), binding the arguments by the TTIR function signature, running the grid on the
// engine with the sanitizer observing it, and returning the findings as JSON. The GIL is released
// while the grid runs. Bad input raises tilescope's Error as a Python exception (TilescopeError),
// never a crash.
#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "src/cli/merge_findings.h"
#include "src/exec/value.h"
#include "tilescope/analysis/sanitizer.h"
#include "tilescope/exec/engine.h"
#include "tilescope/ir/reader.h"

namespace {
std::thread::id g_main_thread;
}  // namespace
#include "tilescope/report/report.h"

namespace nb = nanobind;
using namespace tilescope;

namespace {

// One compiled kernel: the module (owned here, outliving the engine) and its engine.
struct Kernel {
  std::string text;
  ir::Module module;
  std::unique_ptr<exec::Engine> engine;
  const ir::Function* fn = nullptr;
  std::mutex mu;  // one launch at a time per engine (Python threads may launch concurrently)
};

// Compiled kernels by TTIR text: different specializations can produce the same text, and a
// program launching the same kernel again must not pay for reading and planning twice.
std::mutex g_cache_mu;
std::unordered_map<size_t, std::vector<std::shared_ptr<Kernel>>> g_cache;

std::shared_ptr<Kernel> compile(const std::string& text, const std::string& filename) {
  size_t h = std::hash<std::string>{}(text);
  {
    std::lock_guard<std::mutex> g(g_cache_mu);
    for (auto& k : g_cache[h])
      if (k->text == text) return k;
  }
  auto k = std::make_shared<Kernel>();
  k->text = text;
  k->module = ir::read(text, filename);
  ir::verify(k->module);
  k->fn = k->module.entry();
  if (!k->fn) throw Error(fmt::format("{}: no public tt.func in the TTIR", filename));
  k->engine = std::make_unique<exec::Engine>(k->module);
  std::lock_guard<std::mutex> g(g_cache_mu);
  g_cache[h].push_back(k);
  return k;
}

// A Python scalar as the raw bits of the TTIR argument type `t` (ints sign-extended; floats
// rounded to the argument's format, as Triton's launcher packs them).
uint64_t scalar_bits(const nb::handle& v, const ir::Type& t, const std::string& name) {
  using ir::Elem;
  if (t.is_tensor || t.elem == Elem::ptr || t.elem == Elem::tensordesc)
    throw Error(fmt::format("argument '{}' is {} in the kernel, but a scalar was passed", name, t.str()));
  if (ir::is_float(t.elem)) {
    double d;
    if (nb::isinstance<nb::float_>(v) || nb::isinstance<nb::int_>(v) || nb::isinstance<nb::bool_>(v))
      d = nb::cast<double>(v);
    else
      throw Error(fmt::format("argument '{}': a number is needed for {}", name, t.str()));
    if (t.elem == Elem::f32) return exec::Arg::f32(static_cast<float>(d)).bits;
    if (t.elem == Elem::f64) return exec::Arg::f64(d).bits;
    return ir::float_to_bits(t.elem, d);
  }
  if (nb::isinstance<nb::bool_>(v)) return nb::cast<bool>(v) ? 1 : 0;
  if (!nb::isinstance<nb::int_>(v))
    throw Error(fmt::format("argument '{}': an integer is needed for {}", name, t.str()));
  if (t.elem == Elem::i1) return nb::cast<int64_t>(v) != 0;
  // Triton picks u64 for ints >= 2^63: take the value modulo 2^64.
  int64_t i;
  try {
    i = nb::cast<int64_t>(v);
  } catch (const std::exception&) {
    i = static_cast<int64_t>(nb::cast<uint64_t>(v));
  }
  int bits = ir::elem_bits(t.elem);
  if (bits < 64) {  // wrap to the width, then sign-extend (the engine's scalar encoding)
    uint64_t m = (uint64_t{1} << bits) - 1;
    uint64_t u = static_cast<uint64_t>(i) & m;
    if (u >> (bits - 1)) u |= ~m;
    return u;
  }
  return static_cast<uint64_t>(i);
}

// Findings of every launch in this process (so the text report can group across launches).
std::mutex g_findings_mu;
std::vector<analysis::Finding> g_findings;

// nlohmann::json's destructor may allocate (deep trees); a bad_alloc there terminates, as anywhere else.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct LaunchResult {
  exec::LaunchStats stats;
  bool aborted = false;
  nlohmann::json findings;
};

struct HostArg {
  bool buffer = false;
  exec::Buffer buf;
  uint64_t bits = 0;
};

nb::dict launch(const std::shared_ptr<Kernel>& k, const nb::list& args, const std::vector<int64_t>& grid_in,
                int threads, bool sanitize, bool abort_on_first, const std::string& kernel_name,
                const std::vector<std::string>& stack) {
  const auto& fargs = k->fn->args();
  if (nb::len(args) != fargs.size())
    throw Error(fmt::format("kernel '{}' takes {} runtime arguments in its TTIR signature, {} were given",
                            k->fn->name, fargs.size(), nb::len(args)));
  std::vector<HostArg> hosts(fargs.size());
  for (size_t i = 0; i < fargs.size(); ++i) {
    const ir::Type& t = *fargs[i]->type;
    nb::handle a = args[i];
    std::string aname = fargs[i]->name;
    if (nb::isinstance<nb::tuple>(a) && nb::len(a) >= 1 &&
        nb::isinstance<nb::str>(nb::tuple(nb::borrow(a))[0]) &&
        nb::cast<std::string>(nb::tuple(nb::borrow(a))[0]) == "buffer") {
      // ("buffer", data_ptr, nbytes, dtype, shape, strides, name)
      nb::tuple d = nb::borrow<nb::tuple>(a);
      if (nb::len(d) != 7) throw Error(fmt::format("argument '{}': bad buffer description", aname));
      if (t.elem != ir::Elem::ptr || t.is_tensor)
        throw Error(
            fmt::format("argument '{}' is {} in the kernel, but a tensor was passed", aname, t.str()));
      exec::Buffer b;
      b.host = reinterpret_cast<std::byte*>(nb::cast<uintptr_t>(d[1]));
      b.bytes = nb::cast<uint64_t>(d[2]);
      std::string dt = nb::cast<std::string>(d[3]);
      auto named = ir::elem_from_name(dt);
      b.dtype = named ? *named : t.pointee && !t.pointee->is_tensor ? t.pointee->elem : ir::Elem::i8;
      b.shape = nb::cast<std::vector<int64_t>>(d[4]);
      b.strides = nb::cast<std::vector<int64_t>>(d[5]);
      b.name = nb::cast<std::string>(d[6]);
      hosts[i].buffer = true;
      hosts[i].buf = std::move(b);
    } else if (a.is_none()) {
      throw Error(fmt::format("argument '{}' ({}) was passed None", aname, t.str()));
    } else {
      hosts[i].bits = scalar_bits(a, t, aname);
    }
  }
  std::array<int64_t, 3> grid{1, 1, 1};
  if (grid_in.empty() || grid_in.size() > 3)
    throw Error(fmt::format("the launch grid must have 1 to 3 dimensions, not {}", grid_in.size()));
  for (size_t d = 0; d < grid_in.size(); ++d) grid[d] = grid_in[d];

  LaunchResult r;
  // Ctrl-C during a launch: Python's own handler cannot run while the GIL is released, so a C
  // handler stops the grid and the launch raises KeyboardInterrupt (main thread only, where Python
  // receives signals).
  static std::atomic<bool> interrupted{false};
  interrupted = false;
  struct sigaction old_action {};
  bool handler = std::this_thread::get_id() == g_main_thread;
  if (handler) {
    struct sigaction sa {};
    sa.sa_handler = [](int) { interrupted = true; };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_action);
  }
  struct Restore {
    bool on;
    struct sigaction* old;
    ~Restore() {
      if (on) sigaction(SIGINT, old, nullptr);
    }
  } restore{handler, &old_action};
  try {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> g(k->mu);
    exec::Memory memory;
    std::vector<exec::Arg> eargs;
    for (auto& h : hosts) {
      if (h.buffer)
        eargs.push_back(exec::Arg::buf(memory.add(h.buf)));
      else
        eargs.push_back(exec::Arg{exec::Arg::Kind::scalar, -1, h.bits});
    }
    exec::LaunchOptions opts;
    opts.grid = grid;
    opts.threads = threads;
    opts.cancel = &interrupted;
    std::unique_ptr<analysis::Sanitizer> san;
    if (sanitize) {
      san = std::make_unique<analysis::Sanitizer>(k->module, abort_on_first);
      opts.observers.push_back(san.get());
    }
    try {
      r.stats = k->engine->launch(k->fn->name, eargs, memory, opts);
    } catch (const analysis::AbortRequested&) {
      r.aborted = true;  // --abort-on-first: the grid stopped at the first finding
    }
    if (san) {
      san->finish(analysis::LaunchInfo{kernel_name, stack});
      r.findings = report::to_json(san->findings());
      std::lock_guard<std::mutex> fg(g_findings_mu);
      g_findings.insert(g_findings.end(), san->findings().begin(), san->findings().end());
    }
  } catch (const exec::Interrupted&) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw nb::python_error();
  }
  nb::dict out;
  out["findings"] = r.findings.is_null() ? std::string("[]") : r.findings.dump();
  nb::dict st;
  st["programs"] = r.stats.programs;
  st["out_of_bounds"] = r.stats.out_of_bounds;
  st["failed_asserts"] = r.stats.failed_asserts;
  out["stats"] = st;
  out["aborted"] = r.aborted;
  return out;
}

}  // namespace

NB_MODULE(_native, m) {
  g_main_thread = std::this_thread::get_id();  // Python is imported, and gets signals, on the main thread
  // Compiled kernels live in a process-wide cache until exit, by design: no leak report at shutdown.
  nb::set_leak_warnings(false);
  m.doc() = "tilescope's C++ engine: compile TTIR once, launch it with sanitizing observers";
  static nb::exception<Error> error(m, "TilescopeError");
  (void)error;

  nb::class_<Kernel>(m, "Kernel")
      .def_prop_ro("name", [](const Kernel& k) { return k.fn->name; })
      .def_prop_ro(
          "args",
          [](const Kernel& k) {
            std::vector<std::pair<std::string, std::string>> out;
            for (auto& a : k.fn->args()) out.emplace_back(a->name, a->type->str());
            return out;
          },
          "(name, TTIR type) of each runtime argument, in order");

  m.def("compile", &compile, nb::arg("text"), nb::arg("filename") = "kernel.ttir",
        "Read and verify TTIR text and plan it on the engine; cached by text. Raises TilescopeError.");
  m.def(
      "launch", &launch, nb::arg("kernel"), nb::arg("args"), nb::arg("grid"), nb::arg("threads") = 0,
      nb::arg("sanitize") = true, nb::arg("abort_on_first") = false, nb::arg("kernel_name") = "",
      nb::arg("stack") = std::vector<std::string>{},
      "Run one launch. args: per TTIR argument, ('buffer', data_ptr, nbytes, dtype, shape, strides, name) "
      "or a Python scalar. Returns {'findings': JSON text (list), 'stats': {...}}. The GIL is released while "
      "the grid runs.");
  m.attr("has_sanitizer") = true;
  m.def(
      "report_text",
      [](bool color) {
        std::lock_guard<std::mutex> g(g_findings_mu);
        return report::to_text(cli::merge_findings(g_findings), color);
      },
      nb::arg("color") = false, "Text report of every finding of this process so far");
  m.def("clear", [] {
    std::lock_guard<std::mutex> g(g_findings_mu);
    g_findings.clear();
  });
}
