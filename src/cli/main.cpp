// The `tilescope` command.
//
//   tilescope run kernel.ttir [--kernel NAME] --grid X[,Y[,Z]] --arg NAME=SPEC... [--save NAME=PATH.npy]
//                 [--json PATH] [--sarif PATH] [--abort-on-first] [--no-poison] [--no-races]
//                 [--color auto|always|never]
//                 [--threads N] [--max-steps N] [--trace FILE [--trace-budget SIZE]]
//   tilescope sanitize [--trace FILE] -- CMD...   (src/cli/sanitize.h; `tilescope trace -- CMD` records too)
//   tilescope show FILE                           (a trace's summary; src/cli/trace_cmd.h)
//   tilescope replay FILE --launch N [--save-inputs DIR]
//   tilescope gen schema | ops | check FILE.json | lower FILE.json   (src/cli/gen.h: the generator's AST)
//
// The launch runs under the sanitizer (analysis/sanitizer.h) and the race detector (analysis/races.h;
// --no-races: not): findings go to stderr as text, and to
// --json / --sarif files. Exit status: 0 on success, 1 when there are findings, 2 on a usage or
// input error (a located message on stderr; a program past the step limit is one), 130 when SIGINT
// (Ctrl-C) stopped the launch.
//
//   tilescope run kernel.ttir ... --profile [--profile-gpu G] [--profile-top N] [--profile-num-warps N]
//   tilescope profile kernel.ttir ... [--gpu G] [--top N] [--num-warps N] [--json PATH]   (the same)
//
// With --profile the launch runs under the profile analysis alone (analysis/profile.h): its summary
// goes to stderr and --json writes the profile document (README "Profile JSON"); exit status 0.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <regex>

#include "args.h"
#include "assist.h"
#include "budget.h"
#include "cache.h"
#include "gen.h"
#include "interrupt.h"
#include "llm.h"
#include "npy.h"
#include "output_file.h"
#include "sanitize.h"
#include "tilescope/analysis/profile.h"
#include "tilescope/exec/engine.h"
#include "tilescope/launch/record.h"
#include "tilescope/launch/runner.h"
#include "tilescope/report/profile.h"
#include "tilescope/report/report.h"
#include "tilescope/trace/trace.h"
#include "trace_cmd.h"
#include "usage.h"
#include "view.h"

namespace tilescope::cli {
namespace {

using ir::Elem;

struct RunReport {
  std::string json_path, sarif_path;  // --json / --sarif
  bool abort_on_first = false;
  bool poison = true;          // undefined-value, int32-overflow, division-by-zero
  bool races = true;           // data-race, intra-program-race
  std::string color = "auto";  // auto | always | never
  // `tilescope profile kernel.ttir ...`: the profile analysis alone, its summary on stderr, --json its
  // document (README "Profile JSON").
  bool profile = false;
  std::string gpu = "H100";
  int top = 5;
  int num_warps = 4;
  std::string trace_path;     // --trace: record the launch into this trace file
  int64_t trace_budget = -1;  // --trace-budget; -1: trace::kDefaultBudget
};

/// tt.print goes to stdout, each op's lines together, flushed as they come (as a GPU program's
/// printf output reaches the terminal while it runs).

// The TTIR text of `path`. A directory, a file over 1 GiB (or an endless device such as /dev/zero)
// and a read error are tilescope::Errors naming the file and the reason.
std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("{}: is a directory, not a TTIR file", path));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  constexpr size_t kMaxBytes = size_t{1} << 30;
  std::string text;
  int err = 0;
  size_t chunk = size_t{1} << 16;
  for (;;) {
    const size_t used = text.size();
    text.resize(used + chunk);
    const ssize_t n = ::read(fd, text.data() + used, chunk);
    text.resize(used + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    if (text.size() > kMaxBytes) {
      ::close(fd);
      throw Error(fmt::format("{}: more than 1 GiB, not a TTIR file", path));
    }
    chunk = std::clamp(text.size(), size_t{1} << 16, size_t{1} << 24);  // reads grow with the text
  }
  ::close(fd);
  if (err) throw Error(fmt::format("{}: cannot read: {}", path, std::strerror(err)));
  return text;
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

int run_command(const std::string& ttir, const std::string& kernel, const std::string& grid_s,
                const std::vector<std::string>& arg_specs, const std::vector<std::string>& saves, int threads,
                int64_t max_steps, int64_t max_memory, uint64_t seed, bool time, const RunReport& rep) {
  if (max_steps < 0)
    throw Error(fmt::format("--max-steps {}: give a number of operations, or 0 for no limit", max_steps));
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
      hosts.push_back(buffer_from_spec(a->name, spec, pointee, rng));
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
  if (rep.profile) {
    opts.analyses.push_back({"profile", {{"gpu", rep.gpu}, {"num_warps", rep.num_warps}}});
  } else {
    opts.analyses.push_back({"sanitizer", {{"abort_on_first", rep.abort_on_first}, {"poison", rep.poison}}});
    if (rep.races) opts.analyses.push_back({"races", nlohmann::json::object()});
  }
  opts.threads = threads;
  opts.max_steps = max_steps;
  opts.max_memory = max_memory;
  opts.cancel = &interrupted();
  opts.print = [](std::string_view text) { std::cout << text << std::flush; };
  launch::RunResult r;
  try {
    CancelOnSigint cancel_on_sigint;
    if (rep.trace_path.empty()) {
      r = launch::run_launch(*k, rec, opts);
    } else {
      trace::create(rep.trace_path, rep.trace_budget >= 0 ? rep.trace_budget : trace::kDefaultBudget);
      trace::Writer w(rep.trace_path);
      r = w.run(*k, rec, opts);
    }
  } catch (const exec::Interrupted&) {
    std::cerr << "tilescope: interrupted (SIGINT)\n";
    return 130;
  }
  if (r.stats.stopped) std::cerr << "tilescope: stopped at the first finding (--abort-on-first)\n";
  if (time)
    std::cerr << fmt::format("run time: {:.3f} ms ({} programs)\n", r.seconds * 1e3, r.stats.programs);
  const auto& findings = r.findings;
  bool color = rep.color == "always" || (rep.color == "auto" && isatty(STDERR_FILENO));
  if (!findings.empty())
    std::cerr << report::to_text(findings, color) << "tilescope: " << report::summary_line(findings) << "\n";
  // Every output is attempted even after one fails, so that a full disk loses only what it must;
  // any failure is exit status 2, after the findings (status 1) have been printed.
  bool failed = false;
  auto attempt = [&](const std::function<void()>& write) {
    try {
      write();
    } catch (const Error& e) {
      std::cerr << "tilescope: " << report::diagnostic_to_text(e.diagnostic(), color);
      failed = true;
    }
  };
  nlohmann::json profiles = nlohmann::json::array();
  if (rep.profile) {
    if (r.reports.contains("profile")) profiles.push_back(r.reports["profile"]);
    std::cerr << report::profile_to_text(profiles, rep.top);
  }
  if (!rep.json_path.empty())
    attempt([&] {
      write_file_atomically(
          rep.json_path,
          {(rep.profile ? report::profile_document(profiles) : report::to_json(findings)).dump(2), "\n"});
    });
  if (!rep.sarif_path.empty())
    attempt([&] { write_file_atomically(rep.sarif_path, {report::to_sarif(findings).dump(2), "\n"}); });
  for (const auto& save : save_list) {  // (clang 14 cannot capture structured bindings)
    const HostBuffer& h = hosts[buffer_of[save.first]];
    attempt([&] { write_npy(save.second, NpyArray{ir::elem_info(h.elem).npy, h.shape, h.data}); });
  }
  if (!(std::cout << std::flush)) {
    std::cerr << "tilescope: error: cannot write the kernel's tt.print output to stdout\n";
    failed = true;
  }
  if (!(std::cerr << std::flush)) failed = true;  // the report was lost: nowhere left to say so
  if (failed) return 2;
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
  std::string threads = "0";
  int64_t max_steps = tilescope::exec::kDefaultMaxSteps;
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
  run->add_option("--threads", threads,
                  fmt::format("worker threads: 0 for all cores (the default), at most {}",
                              tilescope::exec::kMaxThreads))
      ->type_name("N");
  run->add_option("--max-steps", max_steps,
                  "operations one program may run before the launch fails with a located error (a hung "
                  "kernel ends by itself); 0: no limit")
      ->capture_default_str();
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
  run->add_flag("!--no-races", run_report.races, "no race detection (data-race, intra-program-race)");
  run->add_option("--color", run_report.color, "colour the report: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  run->add_option("--trace", run_report.trace_path,
                  "record the launch into this trace file (docs/trace-format.md)");
  tilescope::cli::add_trace_budget(run, run_report.trace_budget,
                                   "most bytes of payload the trace may hold (e.g. 64M)");
  tilescope::cli::SanitizeOptions sanitize_opts, trace_opts;
  tilescope::cli::add_sanitize(app, sanitize_opts);  // for --help; run by sanitize_main
  tilescope::cli::add_sanitize(app, trace_opts, "trace");
  tilescope::cli::ShowOptions show_opts;
  auto* show = tilescope::cli::add_show(app, show_opts);
  tilescope::cli::ViewOptions view_opts;
  auto* view = tilescope::cli::add_view(app, view_opts);
  tilescope::cli::AssistOptions assist_opts;
  CLI::App *explain = nullptr, *ask = nullptr;
  tilescope::cli::add_assist(app, assist_opts, explain, ask);
  tilescope::cli::ReplayOptions replay_opts;
  auto* replay = tilescope::cli::add_replay(app, replay_opts);
  run->add_flag("--profile", run_report.profile,
                "profile the launch instead of sanitizing it (what `tilescope profile kernel.ttir` does)");
  run->add_option("--profile-gpu", run_report.gpu, "with --profile: the roofline's GPU")
      ->capture_default_str();
  run->add_option("--profile-top", run_report.top, "with --profile: hottest lines shown")
      ->capture_default_str();
  run->add_option("--profile-num-warps", run_report.num_warps, "with --profile: warps per program")
      ->check(CLI::Range(1, 32))
      ->capture_default_str();
  tilescope::cli::SanitizeOptions profile_opts;
  tilescope::cli::add_profile(app, profile_opts);  // for --help; run by profile_main or as `run --profile`
  // `tilescope profile kernel.ttir OPTIONS`: `tilescope run kernel.ttir --profile` with the profile's
  // option names mapped to run's.
  std::vector<std::string> rewritten;
  std::vector<char*> rewritten_argv;
  if (argc > 2 && std::string(argv[1]) == "profile") {
    bool ttir_form = false;
    for (int i = 2; i < argc && std::string(argv[i]) != "--"; ++i) {
      const std::string a = argv[i];
      if (a.size() > 5 && a.compare(a.size() - 5, 5, ".ttir") == 0) ttir_form = true;
    }
    if (ttir_form) {
      rewritten = {argv[0], "run", "--profile"};
      for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        rewritten.push_back(a == "--gpu"         ? "--profile-gpu"
                            : a == "--top"       ? "--profile-top"
                            : a == "--num-warps" ? "--profile-num-warps"
                                                 : a);
      }
      for (auto& a : rewritten) rewritten_argv.push_back(a.data());
      argc = static_cast<int>(rewritten_argv.size());
      argv = rewritten_argv.data();
    }
  }
  std::vector<std::string> demo_args;
  auto* demo = tilescope::cli::add_demo(app, demo_args);
  auto* cache = tilescope::cli::add_cache(app);
  tilescope::cli::LlmCliOptions llm_opts;
  auto* llm = tilescope::cli::add_llm(app, llm_opts);
  tilescope::cli::GenOptions gen_opts;
  auto* gen = tilescope::cli::add_gen(app, gen_opts);
  try {
    if (argc > 1 && (std::string(argv[1]) == "sanitize" || std::string(argv[1]) == "trace"))
      return tilescope::cli::sanitize_main(argc, argv);
    if (argc > 1 && std::string(argv[1]) == "profile") return tilescope::cli::profile_main(argc, argv);
  } catch (const tilescope::Error& e) {
    std::cerr << "tilescope: "
              << tilescope::report::diagnostic_to_text(e.diagnostic(), isatty(STDERR_FILENO));
    return 2;
  }
  tilescope::cli::tilescope_usage_errors(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);    // prints help, or the usage error
    return rc == 0 ? 0 : 2;  // usage errors exit 2, as every other bad input
  }
  try {
    if (*demo) return tilescope::cli::demo_command(demo_args, demo->remaining());
    if (*cache) return tilescope::cli::cache_command();
    if (*show) return tilescope::cli::show_command(show_opts);
    if (*view) return tilescope::cli::view_command(view_opts);
    if (*explain || *ask) return tilescope::cli::assist_command(assist_opts);
    if (*replay) return tilescope::cli::replay_command(replay_opts);
    if (*llm) return tilescope::cli::llm_command(*llm, llm_opts);
    if (*gen) return tilescope::cli::gen_command(*gen, gen_opts);
    if (run_report.profile) tilescope::analysis::find_gpu(run_report.gpu);
    return tilescope::cli::run_command(ttir, kernel, grid, args, saves,
                                       tilescope::exec::parse_threads(threads, "--threads"), max_steps,
                                       max_memory, seed, time, run_report);
  } catch (const tilescope::Error& e) {
    std::cerr << "tilescope: "
              << tilescope::report::diagnostic_to_text(e.diagnostic(), isatty(STDERR_FILENO));
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tilescope: internal error: " << e.what() << "\n";
    return 3;
  }
}
