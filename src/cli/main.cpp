// The `tilescope` command.
//
//   tilescope run kernel.ttir [--kernel NAME] --grid X[,Y[,Z]] --arg NAME=SPEC... [--save NAME=PATH.npy]
//                 [--json PATH] [--sarif PATH] [--abort-on-first] [--no-poison] [--color auto|always|never]
//
// The launch runs under the sanitizer (analysis/sanitizer.h): findings go to stderr as text, and to
// --json / --sarif files. Exit status: 0 on success, 1 when there are findings, 2 on a usage or
// input error (a located message on stderr).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>

#include "cache.h"
#include "npy.h"
#include "sanitize.h"
#include "tilescope/exec/engine.h"
#include "tilescope/launch/record.h"
#include "tilescope/launch/runner.h"
#include "tilescope/report/report.h"

namespace tilescope::cli {
namespace {

using ir::Elem;

struct HostBuffer {
  Elem elem;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;
};

void store_double(std::byte* p, Elem e, double v) {
  switch (e) {
    case Elem::f32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case Elem::f64: std::memcpy(p, &v, 8); break;
    case Elem::f16:
    case Elem::bf16: {
      uint16_t b = static_cast<uint16_t>(ir::float_to_bits(e, v));
      std::memcpy(p, &b, 2);
      break;
    }
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz: {
      uint8_t b = static_cast<uint8_t>(ir::float_to_bits(e, v));
      std::memcpy(p, &b, 1);
      break;
    }
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::ptr: {  // a pointer-to-pointer buffer holds integer addresses
      int64_t i = static_cast<int64_t>(v);
      if (e == Elem::i1) i = i != 0;
      std::memcpy(p, &i, static_cast<size_t>(ir::elem_bytes(e)));
      break;
    }
    case Elem::tensordesc:
    case Elem::none:  // no storage: run() rejects `none` pointees, the reader pointers to descriptors
      assert(false && "a buffer's elements have storage");
      break;
  }
}

// `[DTYPE][SHAPE]:GEN`, GEN = zeros | ones | randn | rand | arange | full=V
HostBuffer generate(const std::string& name, const std::string& spec, Elem pointee, std::mt19937_64& rng) {
  static const std::regex re(R"(^([A-Za-z0-9]*)\[([0-9x, ]*)\]:([a-z]+)(=(.*))?$)");
  std::smatch m;
  if (!std::regex_match(spec, m, re))
    throw Error(fmt::format(
        "--arg {}={}: expected DTYPE[SHAPE]:GEN (e.g. f32[64x32]:randn), a .npy path, or TYPE:VALUE", name,
        spec));
  HostBuffer b;
  b.elem = pointee;
  if (!m[1].str().empty()) {
    auto e = ir::elem_from_name(m[1].str());
    if (!e)
      throw Error(fmt::format("--arg {}: unknown dtype '{}' ({})", name, m[1].str(), ir::elem_names_help()));
    if (ir::elem_bytes(*e) != ir::elem_bytes(pointee))
      throw Error(fmt::format("--arg {}: dtype {} does not match the kernel's pointer type {}", name,
                              m[1].str(), ir::elem_name(pointee)));
    b.elem = *e;
  }
  std::string dims = m[2];
  static const std::regex shape_re(R"(^[0-9]+([x,][0-9]+)*$)");
  if (!std::regex_match(dims, shape_re))
    throw Error(
        fmt::format("--arg {}: shape '[{}]' must be sizes separated by 'x' (e.g. [64x32])", name, dims));
  int64_t n = 1;
  bool overflow = false;
  std::regex num("[0-9]+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    int64_t d = 0;
    try {
      d = std::stoll(it->str());
    } catch (const std::logic_error&) {
      overflow = true;
    }
    b.shape.push_back(d);
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  int eb = ir::elem_bytes(b.elem);
  constexpr int64_t kMaxBytes = int64_t{1} << 36;  // 64 GiB: a typo, not a buffer
  if (overflow || n <= 0 || n > kMaxBytes / eb)
    throw Error(
        fmt::format("--arg {}: shape {} has {} elements, more than a host buffer can hold", name, dims, n));
  b.data.assign(static_cast<size_t>(n * eb), std::byte{0});
  std::string gen = m[3];
  double full = 0;
  if (gen == "full") {
    if (!m[5].matched) throw Error(fmt::format("--arg {}: full needs a value (full=1.5)", name));
    try {
      size_t used = 0;
      full = std::stod(m[5], &used);
      if (static_cast<std::ptrdiff_t>(used) != m[5].length()) throw std::invalid_argument(m[5]);
    } catch (const std::logic_error&) {
      throw Error(fmt::format("--arg {}: full={} is not a number", name, m[5].str()));
    }
  }
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  bool fl = ir::is_float(b.elem);
  std::function<double(int64_t)> value;
  if (gen == "zeros")
    value = [](int64_t) { return 0.0; };
  else if (gen == "ones")
    value = [](int64_t) { return 1.0; };
  else if (gen == "full")
    value = [full](int64_t) { return full; };
  else if (gen == "arange")
    value = [](int64_t i) { return static_cast<double>(i); };
  else if (gen == "randn")
    value = [&](int64_t) { return fl ? normal(rng) : std::round(normal(rng) * 10); };
  else if (gen == "rand")
    value = [&](int64_t) { return fl ? uniform(rng) : std::floor(uniform(rng) * 100); };
  else
    throw Error(fmt::format("--arg {}: unknown generator '{}' (zeros, ones, randn, rand, arange, full=V)",
                            name, gen));
  if (gen != "zeros")  // the buffer starts zeroed
    for (int64_t i = 0; i < n; ++i) store_double(b.data.data() + i * eb, b.elem, value(i));
  return b;
}

HostBuffer from_npy(const std::string& name, const std::string& path, Elem pointee) {
  NpyArray a = read_npy(path);
  if (a.item_bytes() != ir::elem_bytes(pointee))
    throw Error(
        fmt::format("--arg {}: {} holds {}-byte '{}' elements, but the kernel's pointer is to {} ({} bytes)",
                    name, path, a.item_bytes(), a.descr, ir::elem_name(pointee), ir::elem_bytes(pointee)));
  bool float_file = a.descr[1] == 'f', float_ptr = ir::is_float(pointee);
  bool bits_ok = (pointee == Elem::bf16 || pointee == Elem::f8e4m3fn || pointee == Elem::f8e5m2 ||
                  pointee == Elem::f8e4m3fnuz || pointee == Elem::f8e5m2fnuz) &&
                 !float_file;
  if (float_file != float_ptr && !bits_ok && !(pointee == Elem::i8 && a.descr == "|b1"))
    throw Error(fmt::format("--arg {}: {} holds '{}' but the kernel's pointer is to {}", name, path, a.descr,
                            ir::elem_name(pointee)));
  return HostBuffer{pointee, a.shape.empty() ? std::vector<int64_t>{1} : a.shape, std::move(a.data)};
}

// `[TYPE:]VALUE` for a scalar argument of TTIR type `t`: the value as written (range checks and the
// conversion to `t` happen when the launch record is bound, launch::bind).
launch::Scalar parse_scalar(const std::string& name, const std::string& spec, const ir::Type& t) {
  auto colon = spec.find(':');
  std::string ty = colon == std::string::npos ? "" : spec.substr(0, colon);
  std::string val = colon == std::string::npos ? spec : spec.substr(colon + 1);
  if (!ty.empty()) {
    auto e = ir::elem_from_name(ty);
    if (!e) throw Error(fmt::format("--arg {}: unknown type '{}' ({})", name, ty, ir::elem_names_help()));
    if (ir::elem_bytes(*e) != ir::elem_bytes(t.elem) || ir::is_float(*e) != ir::is_float(t.elem))
      throw Error(fmt::format("--arg {}: {} given, but the kernel's argument is {}", name, ty, t.str()));
  }
  try {
    size_t used = 0;
    if (ir::is_float(t.elem)) {
      double v = std::stod(val, &used);
      if (used != val.size()) throw std::invalid_argument(val);
      return v;
    }
    if (val == "true") return true;
    if (val == "false") return false;
    if (ir::is_unsigned_name(ty)) {
      uint64_t u = std::stoull(val, &used, 0);
      if (used != val.size() || val[0] == '-') throw std::invalid_argument(val);
      return u;
    }
    int64_t v = std::stoll(val, &used, 0);
    if (used != val.size()) throw std::invalid_argument(val);
    return v;
  } catch (const std::out_of_range&) {
    throw Error(fmt::format("--arg {}: {} does not fit in {}", name, val, t.str()));
  } catch (const std::logic_error&) {
    throw Error(fmt::format("--arg {}: cannot read '{}' as {}", name, val, t.str()));
  }
}

struct RunReport {
  std::string json_path, sarif_path;  // --json / --sarif
  bool abort_on_first = false;
  bool poison = true;          // undefined-value, int32-overflow, division-by-zero
  std::string color = "auto";  // auto | always | never
};

/// tt.print goes to stdout, each op's lines together, flushed as they come (as a GPU program's
/// printf output reaches the terminal while it runs).

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("{}: is a directory, not a TTIR file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{}: cannot read file", path));
  return ss.str();
}

// `X[,Y[,Z]]` (or `XxYxZ`), checked against CUDA's limits (exec::check_grid).
std::array<int64_t, 3> parse_grid(const std::string& grid_s) {
  static const std::regex grid_re(R"(^[0-9]+([,x][0-9]+){0,2}$)");
  if (!std::regex_match(grid_s, grid_re))
    throw Error(fmt::format("--grid {}: expected X[,Y[,Z]] with positive integers", grid_s));
  std::array<int64_t, 3> grid{1, 1, 1};
  std::regex num("[0-9]+");
  int d = 0;
  for (auto it = std::sregex_iterator(grid_s.begin(), grid_s.end(), num); it != std::sregex_iterator();
       ++it, ++d) {
    try {
      grid[d] = std::stoll(it->str());
    } catch (const std::logic_error&) {
      throw Error(fmt::format("--grid {}: '{}' is too large", grid_s, it->str()));
    }
  }
  try {
    exec::check_grid(grid);
  } catch (const Error& e) {
    throw Error(fmt::format("--grid {}: {}", grid_s, e.what()));
  }
  // The engine runs an empty grid as the GPU does (no program); asking for one by hand is a mistake.
  for (int64_t g : grid)
    if (g == 0) throw Error(fmt::format("--grid {}: every dimension must be at least 1", grid_s));
  return grid;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("cannot write {}", path));
  out << text;
}

int run_command(const std::string& ttir, const std::string& kernel, const std::string& grid_s,
                const std::vector<std::string>& arg_specs, const std::vector<std::string>& saves, int threads,
                int64_t max_memory, uint64_t seed, bool time, const RunReport& rep) {
  launch::LaunchRecord rec;
  rec.ttir = read_text_file(ttir);
  rec.ttir_file = ttir;
  std::shared_ptr<launch::Kernel> k = launch::compile(rec.ttir, ttir);
  const ir::Function& fn = k->function(kernel);
  rec.kernel = fn.name;
  rec.grid = parse_grid(grid_s);

  std::map<std::string, std::string> given;
  for (const auto& a : arg_specs) {
    auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw Error(fmt::format("--arg {}: expected NAME=SPEC", a));
    if (!given.emplace(a.substr(0, eq), a.substr(eq + 1)).second)
      throw Error(fmt::format("--arg {}: given twice", a.substr(0, eq)));
  }
  std::mt19937_64 rng(seed);
  std::vector<HostBuffer> hosts;
  hosts.reserve(fn.args().size());
  std::map<std::string, int> buffer_of;
  for (const auto& a : fn.args()) {
    const ir::Type& t = *a->type;
    auto it = given.find(a->name);
    if (it == given.end())
      throw Error(fmt::format("kernel '{}' needs --arg {}=... ({})", fn.name, a->name, t.str()));
    const std::string& spec = it->second;
    if (t.elem == Elem::ptr || t.elem == Elem::tensordesc) {
      Elem pointee = t.elem == Elem::ptr ? (t.pointee && !t.pointee->is_tensor ? t.pointee->elem : Elem::none)
                                         : t.pointee->elem;
      if (pointee == Elem::none)
        throw Error(fmt::format("argument '{}' has type {}, which a launch cannot pass", a->name, t.str()));
      bool npy = spec.size() > 4 && spec.compare(spec.size() - 4, 4, ".npy") == 0;
      hosts.push_back(npy ? from_npy(a->name, spec, pointee) : generate(a->name, spec, pointee, rng));
      HostBuffer& h = hosts.back();
      std::vector<int64_t> strides(h.shape.size(), 1);
      for (int d = static_cast<int>(h.shape.size()) - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * h.shape[d + 1];
      buffer_of[a->name] = static_cast<int>(hosts.size()) - 1;
      rec.args.push_back(
          launch::ArgRecord::buffer(a->name, h.elem, h.data.data(), h.data.size(), h.shape, strides));
    } else {
      rec.args.push_back(launch::ArgRecord::scalar(a->name, parse_scalar(a->name, spec, t)));
    }
    given.erase(it);
  }
  if (!given.empty())
    throw Error(fmt::format("kernel '{}' has no argument named '{}'", fn.name, given.begin()->first));

  std::vector<std::pair<std::string, std::string>> save_list;
  for (const auto& s : saves) {
    auto eq = s.find('=');
    if (eq == std::string::npos) throw Error(fmt::format("--save {}: expected NAME=PATH.npy", s));
    std::string name = s.substr(0, eq);
    if (!buffer_of.count(name))
      throw Error(fmt::format("--save {}: '{}' is not a pointer argument of '{}'", s, name, fn.name));
    save_list.emplace_back(name, s.substr(eq + 1));
  }

  launch::RunOptions opts;
  opts.analyses.push_back({"sanitizer", {{"abort_on_first", rep.abort_on_first}, {"poison", rep.poison}}});
  opts.threads = threads;
  opts.max_memory = max_memory;
  opts.print = [](std::string_view text) { std::cout << text << std::flush; };
  launch::RunResult r = launch::run_launch(*k, rec, opts);
  if (r.stats.stopped) std::cerr << "tilescope: stopped at the first finding (--abort-on-first)\n";
  if (time)
    std::cerr << fmt::format("run time: {:.3f} ms ({} programs)\n", r.seconds * 1e3, r.stats.programs);
  const auto& findings = r.findings;
  bool color = rep.color == "always" || (rep.color == "auto" && isatty(STDERR_FILENO));
  if (!findings.empty())
    std::cerr << report::to_text(findings, color) << "tilescope: " << report::summary_line(findings) << "\n";
  if (!rep.json_path.empty()) write_text_file(rep.json_path, report::to_json(findings).dump(2) + "\n");
  if (!rep.sarif_path.empty()) write_text_file(rep.sarif_path, report::to_sarif(findings).dump(2) + "\n");
  for (auto& [name, path] : save_list) {
    HostBuffer& h = hosts[buffer_of[name]];
    write_npy(path, NpyArray{ir::elem_info(h.elem).npy, h.shape, h.data});
  }
  return findings.empty() ? 0 : 1;
}

}  // namespace
}  // namespace tilescope::cli

// Only tilescope::Error is a user error; any other exception is our bug, and terminate() (which prints
// it) is the wanted outcome.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  CLI::App app{"tilescope: run Triton kernels (TTIR) on the CPU and observe every access"};
  app.require_subcommand(1);
  auto* run = app.add_subcommand("run", "Run one launch of a kernel from a .ttir file");
  std::string ttir, kernel, grid = "1";
  std::vector<std::string> args, saves;
  int threads = 0;
  int64_t max_memory = 0;
  uint64_t seed = 0;
  bool time = false;
  run->add_option("ttir", ttir, "TTIR file (kernel.asm[\"ttir\"] as Triton prints it)")->required();
  run->add_option("--kernel", kernel, "kernel (public tt.func) to run; default: the first public one");
  run->add_option("--grid", grid, "launch grid: X[,Y[,Z]]")->capture_default_str();
  run->add_option(
      "--arg", args,
      "NAME=SPEC, by TTIR argument name. Pointers: DTYPE[SHAPE]:GEN with GEN one of zeros, ones, randn, "
      "rand, arange, full=V (e.g. f32[64x32]:randn), or a .npy file (bf16/fp8 pointers take 2-/1-byte "
      "integer arrays of bit patterns). Scalars: TYPE:VALUE (i32:4096, f32:1e-5).");
  run->add_option("--save", saves,
                  "NAME=PATH.npy: write a pointer argument's buffer after the run (bf16 as uint16 bits)");
  run->add_option("--threads", threads, "worker threads (default: all cores)")->check(CLI::NonNegativeNumber);
  tilescope::cli::add_max_memory(*run, max_memory);
  run->add_option("--seed", seed, "seed of the random generators")->capture_default_str();
  run->add_flag("--time", time, "print the launch's run time on stderr");
  tilescope::cli::RunReport run_report;
  run->add_option("--json", run_report.json_path, "write the findings as JSON (schema in the README)");
  run->add_option("--sarif", run_report.sarif_path, "write the findings as SARIF 2.1.0");
  run->add_flag("--abort-on-first", run_report.abort_on_first, "stop the launch at the first finding");
  run->add_flag(
      "!--no-poison", run_report.poison,
      "only out-of-bounds, null and assert findings (no undefined-value, int32-overflow, division-by-zero)");
  run->add_option("--color", run_report.color, "colour the report: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  tilescope::cli::SanitizeOptions sanitize_opts;
  tilescope::cli::add_sanitize(app, sanitize_opts);  // for --help; run by sanitize_main
  std::vector<std::string> demo_args;
  auto* demo = tilescope::cli::add_demo(app, demo_args);
  auto* cache = tilescope::cli::add_cache(app);
  try {
    if (argc > 1 && std::string(argv[1]) == "sanitize") return tilescope::cli::sanitize_main(argc, argv);
  } catch (const tilescope::Error& e) {
    std::cerr << "tilescope: "
              << tilescope::report::diagnostic_to_text(e.diagnostic(), isatty(STDERR_FILENO));
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);    // prints help, or the usage error
    return rc == 0 ? 0 : 2;  // usage errors exit 2, as every other bad input
  }
  try {
    if (*demo) return tilescope::cli::demo_command(demo_args, demo->remaining());
    if (*cache) return tilescope::cli::cache_command();
    return tilescope::cli::run_command(ttir, kernel, grid, args, saves, threads, max_memory, seed, time,
                                       run_report);
  } catch (const tilescope::Error& e) {
    std::cerr << "tilescope: "
              << tilescope::report::diagnostic_to_text(e.diagnostic(), isatty(STDERR_FILENO));
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tilescope: internal error: " << e.what() << "\n";
    return 3;
  }
}
