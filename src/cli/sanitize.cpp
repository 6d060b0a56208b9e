// `tilescope sanitize -- CMD...` and `tilescope demo`.
//
// sanitize runs an unmodified program (python script.py, pytest ...) with tilescope switched on in
// every Python process it starts: the environment carries TILESCOPE_SANITIZE=1, and the package's
// .pth file then imports tilescope._autoload at interpreter start-up, which routes every Triton
// launch to the engine under the sanitizer. Each process writes its findings as JSON into the
// directory named by TILESCOPE_FINDINGS; when the command ends, this merges them, prints the report,
// writes --json / --sarif, and exits with the command's own status when it failed, else with 2 when
// a report was lost (a process could not write its findings, or --json / --sarif could not be
// written), else with --exit-code (default 1) when there were findings, else 0.
//
// A process that cannot write its findings file (a full TMPDIR) says so through the FIFO
// TILESCOPE_FINDINGS/failures, which needs no disk space: python/tilescope/_state.py documents its
// lines. That process prints its own report on stderr instead.
#include "sanitize.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "assist.h"
#include "budget.h"
#include "output_file.h"
#include "tilescope/analysis/profile.h"
#include "tilescope/exec/engine.h"
#include "tilescope/ir/diag.h"
#include "tilescope/report/profile.h"
#include "tilescope/report/report.h"
#include "tilescope/trace/trace.h"
#include "usage.h"
#include "view.h"

namespace tilescope::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tilescope") : p.string();
}

// Signals while a command runs (issue 8): SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to tilescope go
// to the command's whole process group (the command and every process it started), then tilescope
// waits for it, reports what it found and removes its files. The command runs in a process group of
// its own so that a signal reaches all of it; on a terminal that group is made the foreground job,
// as a shell does, so the command reads the terminal and gets ^C / ^Z directly.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
volatile sig_atomic_t g_child_group = 0;  // the running command's process group; 0 when none runs
volatile sig_atomic_t g_received = 0;     // the last forwarded signal that tilescope received

extern "C" void forward_signal(int sig) {
  g_received = sig;
  if (g_child_group > 0) kill(-g_child_group, sig);
}

// Installs the forwarding handler for the life of the object. A signal that tilescope's own parent
// set to be ignored (nohup, a background job of a non-interactive shell) stays ignored, and the
// command inherits that.
class ForwardSignals {
 public:
  ForwardSignals() {
    g_received = 0;
    for (size_t i = 0; i < std::size(kForwarded); ++i) {
      sigaction(kForwarded[i], nullptr, &old_[i]);
      if (old_[i].sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = forward_signal;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      sigaction(kForwarded[i], &sa, nullptr);
    }
  }
  ~ForwardSignals() {
    for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &old_[i], nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  struct sigaction old_[std::size(kForwarded)]{};
};

// The controlling terminal when tilescope is the foreground job of an interactive shell (the leader
// of the terminal's foreground process group): the command then becomes the foreground job instead.
// Else -1: under make, pytest or another program, the terminal stays with them, so that ^C still
// stops them too (tilescope, in their group, forwards it). The destructor takes the terminal back.
class Terminal {
 public:
  Terminal() {
    fd_ = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd_ >= 0 && (getpgrp() != getpid() || tcgetpgrp(fd_) != getpgrp())) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~Terminal() {
    if (fd_ < 0) return;
    take_back();
    ::close(fd_);
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  int fd() const { return fd_; }
  // Make tilescope's group the foreground job again (from the background: SIGTTOU is blocked
  // meanwhile, or it would stop tilescope).
  void take_back() const {
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(fd_, getpgrp());
    sigprocmask(SIG_SETMASK, &old, nullptr);
  }
  // The command stopped (^Z, or it read the terminal from the background): stop tilescope too, so
  // that the shell sees its job stopped; when continued in the foreground, give the terminal back.
  void stop_with(pid_t group) const {
    take_back();
    raise(SIGTSTP);
    if (tcgetpgrp(fd_) == getpgrp()) tcsetpgrp(fd_, group);
    kill(-group, SIGCONT);
  }

 private:
  int fd_ = -1;
};

// Run `argv` with the current environment in a process group of its own; the exit status as a
// shell reports it (128 + signal). Signals are forwarded while it runs (when a ForwardSignals is
// alive); one received before the command could start means it is not started.
int run_child(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  Terminal tty;
  // An inherited SIGCHLD of SIG_IGN would let the system reap the command before waitpid sees it.
  signal(SIGCHLD, SIG_DFL);
  // Blocked until the child's group is known, so that none is lost between the spawn and then.
  sigset_t fwd, old_mask;
  sigemptyset(&fwd);
  for (int sig : kForwarded) sigaddset(&fwd, sig);
  sigprocmask(SIG_BLOCK, &fwd, &old_mask);
  if (g_received) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return 128 + g_received;
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &old_mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (tty.fd() >= 0) posix_spawn_file_actions_addtcsetpgrp_np(&actions, tty.fd());  // before exec: no race
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc == 0) g_child_group = pid;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);  // a signal that came meanwhile is forwarded now
  if (rc != 0) throw Error(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, tty.fd() >= 0 ? WUNTRACED : 0);
    if (r < 0 && errno == EINTR) continue;
    if (r > 0 && WIFSTOPPED(status)) {
      tty.stop_with(pid);
      continue;
    }
    break;
  }
  g_child_group = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The directory the command's processes write their findings into: removed with everything in it
// on every way out of `tilescope sanitize` (a return, an error, a forwarded signal).
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = fmt::format("{}/tilescope-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data()))
      throw Error(fmt::format("cannot create a directory under {}: {}", templ, std::strerror(errno)));
    path_ = buf.data();
  }
  ~TempDir() { remove(); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  void remove() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }

 private:
  fs::path path_;
};

// What the command's processes reported: their findings, the lines they left for the report, and
// the processes that could not write their findings file.
struct Collected {
  json findings = json::array();
  json profiles = json::array();   // per-launch profile reports (`tilescope profile`)
  std::vector<std::string> notes;  // distinct, in the order read
  int processes = 0;
  int64_t launches = 0;
  struct Lost {
    int64_t findings = 0, launches = 0;
    std::string error;
  };
  std::map<int64_t, Lost> lost;         // by pid
  std::map<int64_t, int64_t> received;  // findings read from each pid's file
  std::map<int64_t, int64_t> reported;  // launches each pid's file counted
  int incomplete = 0;  // processes whose last file is not the one written at exit (os._exit, a crash)
};

// The FIFO that processes report their write failures through (see the file comment). Made and
// opened for reading (non-blocking) before the command starts, so that a writer's non-blocking open
// succeeds; read once the command has ended.
class FailureChannel {
 public:
  explicit FailureChannel(const fs::path& dir) {
    fs::path fifo = dir / "failures";
    if (::mkfifo(fifo.c_str(), 0600) == 0) fd_ = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  }
  ~FailureChannel() {
    if (fd_ >= 0) ::close(fd_);
  }
  FailureChannel(const FailureChannel&) = delete;
  FailureChannel& operator=(const FailureChannel&) = delete;
  // Every line written so far, applied in order: a failure line marks its pid's findings lost, an
  // "ok" line (a later write succeeded) clears it.
  void read_into(Collected& c) const {
    if (fd_ < 0) return;
    std::string text;
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // 0: no writer left; EAGAIN: a writer still has it open, nothing more now
      text.append(buf, static_cast<size_t>(n));
    }
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      json m = json::parse(line, nullptr, false);
      if (!m.is_object() || !m.contains("pid") || !m["pid"].is_number_integer()) continue;
      int64_t pid = m["pid"].get<int64_t>();
      if (m.value("ok", false)) {
        c.lost.erase(pid);
        continue;
      }
      Collected::Lost& l = c.lost[pid];
      l.findings = m.value("findings", int64_t{0});
      l.launches = m.value("launches", int64_t{0});
      l.error = m.value("error", std::string("unknown error"));
    }
  }

 private:
  int fd_ = -1;
};

// Findings of all processes, in the order the processes wrote them (by file name: pid order is not
// meaningful, but the order is at least stable).
void read_findings(const fs::path& dir, Collected& c) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json") files.push_back(it->path());
  if (ec)
    std::cerr << fmt::format("tilescope: warning: cannot list the findings in {}: {}\n", dir.string(),
                             ec.message());
  std::sort(files.begin(), files.end());
  for (auto& f : files) {
    std::ifstream in(f);
    try {
      json doc;
      in >> doc;  // value() below throws a type_error for anything but an object
      const json found = doc.value("findings", json::array());
      const json notes = doc.value("notes", json::array());
      const int64_t launches = doc.value("launches", int64_t{0});
      const int64_t pid = doc.value("pid", int64_t{-1});
      c.received[pid] += static_cast<int64_t>(found.size());
      c.reported[pid] += launches;
      if (!doc.value("complete", true)) ++c.incomplete;
      ++c.processes;
      c.launches += launches;
      for (auto& x : found) c.findings.push_back(x);
      for (auto& x : doc.value("profiles", json::array())) c.profiles.push_back(x);
      for (auto& n : notes)
        if (n.is_string() && std::find(c.notes.begin(), c.notes.end(), n) == c.notes.end())
          c.notes.push_back(n.get<std::string>());
    } catch (const json::exception& e) {
      std::cerr << fmt::format("tilescope: warning: cannot read the findings of a child process ({}): {}\n",
                               f.string(), e.what());
    }
  }
}

// A process writes its findings file at its first launch, at each launch with findings and at exit
// (python/tilescope/_state.py). One that ends without the exit write (os._exit, as multiprocessing's
// workers do, or a crash) reported its launches only up to its last write. The trace, when the run has
// one, holds every launch it recorded: the counts (and the findings of a process that never reported)
// come from it. Returns the note for the summary line ("" when the reports were whole).
std::string reconcile_with_trace(Collected& c, const std::string& trace_path) {
  if (trace_path.empty()) {
    if (c.incomplete == 0) return "";
    return fmt::format(
        "{} process(es) ended without reporting at exit (os._exit, as multiprocessing's workers do, or a "
        "crash): their launches after their last one with findings are not counted; --trace counts them",
        c.incomplete);
  }
  std::map<int64_t, trace::Reader::Process> recorded;
  try {
    recorded = trace::Reader(trace_path).processes();
  } catch (const Error&) {
    return "";  // an unreadable trace is reported with the trace's own line
  }
  int64_t extra = 0;
  int short_counted = 0;  // processes that reported fewer launches than they recorded
  for (auto& [pid, p] : recorded) {
    auto rep = c.reported.find(pid);
    auto lost = c.lost.find(pid);
    const bool known = rep != c.reported.end() || lost != c.lost.end();
    const int64_t counted = rep != c.reported.end() ? rep->second
                            : lost != c.lost.end()  ? lost->second.launches
                                                    : 0;
    if (p.launches > counted) {
      extra += p.launches - counted;
      ++short_counted;
    }
    if (!known) {
      ++c.processes;
      for (auto& f : p.findings) c.findings.push_back(std::move(f));
    }
  }
  if (extra == 0) return "";
  c.launches += extra;
  return fmt::format(
      "{} of them counted from the trace: {} process(es) ended without reporting at exit (os._exit, as "
      "multiprocessing's workers do, or a crash)",
      extra, short_counted);
}

// The emulated devices: the names of python/tilescope/_device.py's TARGETS (tests/python/test_device.py
// checks that they agree).
constexpr const char* kTargets[] = {"sm_80", "sm_90", "sm_100", "gfx942"};

std::string known_targets() {
  std::string s;
  for (const char* t : kTargets) s += (s.empty() ? "" : ", ") + std::string(t);
  return s;
}

// --target, else TILESCOPE_TARGET, else sm_90; an unknown name is a usage error.
std::string resolve_target(const std::string& option) {
  const char* env = std::getenv("TILESCOPE_TARGET");
  std::string target = !option.empty() ? option : (env && *env) ? env : "sm_90";
  if (std::find(std::begin(kTargets), std::end(kTargets), target) == std::end(kTargets))
    throw Error(fmt::format("sanitize: unknown target '{}'{} (known: {})", target,
                            option.empty() ? " in TILESCOPE_TARGET" : "", known_targets()));
  return target;
}

bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  return isatty(STDERR_FILENO) && !std::getenv("NO_COLOR");
}

// `tilescope profile`'s end: the summary on stderr, --json, and the exit status (the command's own when
// it failed, 2 when a report was lost, else 0).
int profile_report(const SanitizeOptions& o, const Collected& c, int status, bool color,
                   const std::string& trace_path) {
  if (g_received)
    std::cerr << fmt::format("tilescope: received SIG{}, passed it to the program and waited for it\n",
                             sigabbrev_np(g_received));
  bool failed = !c.lost.empty();
  if (c.processes == 0 && c.lost.empty())
    std::cerr << "tilescope: warning: no Python process reported to the profiler; is the tilescope package "
                 "installed in the Python that ran the command (pip install .)?\n";
  std::cerr << report::profile_to_text(c.profiles, o.top);
  for (const std::string& n : c.notes) std::cerr << "tilescope: note: " << n << "\n";
  if (!c.lost.empty())
    std::cerr << fmt::format(
        "tilescope: error: {} process(es) could not write their profiles (process {}: {})\n", c.lost.size(),
        c.lost.begin()->first, c.lost.begin()->second.error);
  std::cerr << fmt::format(
      "tilescope: profiled {} launch(es) in {} process(es); the program exited with status {}\n",
      c.profiles.size(), c.processes, status);
  if (!o.trace_path.empty()) {
    try {
      trace::Reader r(trace_path);
      std::cerr << fmt::format(
          "tilescope: trace of {} launch(es), with their profiles, written to {} (tilescope "
          "show {})\n",
          r.launches().size(), o.trace_path, o.trace_path);
    } catch (const Error& e) {
      std::cerr << "tilescope: " << report::diagnostic_to_text(e.diagnostic(), color);
      failed = true;
    }
  }
  if (!o.json_path.empty()) {
    try {
      write_file_atomically(o.json_path, {report::profile_document(c.profiles).dump(2), "\n"});
    } catch (const Error& e) {
      std::cerr << "tilescope: " << report::diagnostic_to_text(e.diagnostic(), color);
      failed = true;
    }
  }
  if (!(std::cerr << std::flush)) failed = true;
  if (status != 0) return status;
  return failed ? 2 : 0;
}

}  // namespace

CLI::Option* add_max_memory(CLI::App& cmd, int64_t& bytes) {
  return cmd
      .add_option("--max-memory", bytes,
                  fmt::format("most memory a launch may take for the values of its programs, e.g. 16G (K, M, "
                              "G, T: powers of 1024; default: half the physical memory, {}M here)",
                              exec::default_max_memory() >> 20))
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::PositiveNumber);
}

CLI::App* add_sanitize(CLI::App& app, SanitizeOptions& o, const std::string& name) {
  const bool trace = name == "trace";
  auto* s = app.add_subcommand(
      name,
      trace ? "Run a program with every Triton launch sanitized and recorded into a trace file (tilescope "
              "sanitize --trace FILE)"
            : "Run a program (python script.py, pytest ...) with every Triton launch sanitized on the CPU");
  if (trace) {
    o.trace_path = "tilescope.tstrace";
    s->add_option("-o,--output", o.trace_path, "the trace file to write")->capture_default_str();
  } else {
    s->add_option(
        "--trace", o.trace_path,
        "record every launch of every process of the run into this trace file (replaced when it is a "
        "trace already; docs/trace-format.md)");
  }
  s->add_flag(
      "--explain", o.explain,
      "after the report, ask the LLM to explain the findings (tilescope explain; settings: tilescope llm "
      "config)");
  s->add_flag("--view", o.view,
              "after the run, open the trace in the web visualizer (tilescope view) until Ctrl-C; without "
              "--trace, into a temporary trace removed afterwards");
  add_trace_budget(
      s, o.trace_budget,
      fmt::format("most bytes of payload the trace may hold (K, M, G: powers of 1024; default {}M); "
                  "beyond it, detail for a sample of programs (docs/trace-format.md)",
                  trace::kDefaultBudget >> 20));
  s->add_option("--json", o.json_path, "write all findings as JSON (schema: README)");
  s->add_option("--sarif", o.sarif_path, "write all findings as SARIF 2.1.0");
  s->add_option("--exit-code", o.exit_code, "exit status when there are findings")->capture_default_str();
  s->add_flag("--abort-on-first", o.abort_on_first, "stop the program at the first finding");
  s->add_flag("!--no-races", o.races, "no race detection (data-race, intra-program-race)");
  s->add_flag("--no-uninit", o.no_uninit,
              "do not track torch.empty / numpy.empty memory for reads of never-written bytes "
              "(uninitialized-read)");
  s->add_option(
       "--threads", o.threads,
       fmt::format("engine worker threads: 0 for all cores (the default), at most {}", exec::kMaxThreads))
      ->type_name("N");
  s->add_option("--max-steps", o.max_steps,
                fmt::format("operations one program may run before its launch fails with a located error "
                            "(default {}); 0: no limit",
                            exec::kDefaultMaxSteps))
      ->type_name("N");
  add_max_memory(*s, o.max_memory);
  s->add_option("--target", o.target,
                fmt::format("the GPU the program sees and kernels are compiled for: {} (default: "
                            "TILESCOPE_TARGET, else sm_90)",
                            known_targets()));
  s->add_flag(
      "--cuda-on-cpu", o.cuda_on_cpu,
      "make tensors the program puts on \"cuda\" on the CPU (torch.cuda.is_available() is then true)");
  s->add_flag(
      "--bench-all", o.bench_all,
      "run perf_report benchmarks at every x value and do_bench's function once (default: the first x "
      "value, the function not run)");
  s->add_option("--color", o.color, "colour the report: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  s->add_option("command", o.command,
                "the program and its arguments: [--] python script.py ARGS, [--] pytest ...");
  return s;
}

/// argv[2..] split into our options (`with_value` ones take the next argument) and the command: it
/// starts after `--` or at the first argument that is not an option, and is passed on untouched.
static std::pair<std::vector<std::string>, std::vector<std::string>> split_command(
    int argc, char** argv, const std::set<std::string>& with_value) {
  std::vector<std::string> ours, command;
  int i = 2;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    ours.push_back(a);
    if (with_value.count(a) && i + 1 < argc) ours.emplace_back(argv[++i]);
  }
  for (; i < argc; ++i) command.emplace_back(argv[i]);
  return {ours, command};
}

int sanitize_main(int argc, char** argv) {
  // The command starts after `--` or at the first argument that is not one of our options; it is
  // passed on untouched (its own options are not ours to parse).
  static const std::set<std::string> with_value = {
      "--json",  "--sarif",  "--exit-code", "--threads", "--max-steps", "--max-memory",
      "--color", "--target", "--trace",     "-o",        "--output",    "--trace-budget"};
  const std::string name = argv[1];
  auto [ours, command] = split_command(argc, argv, with_value);
  CLI::App app{"tilescope " + name};
  SanitizeOptions o;
  CLI::App* sub = add_sanitize(app, o, name);
  std::vector<std::string> args{name};
  args.insert(args.end(), ours.begin(), ours.end());
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  tilescope_usage_errors(app);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // help: 0; a usage error: 2, as for every tilescope command
  }
  (void)sub;
  o.command = command;
  return sanitize_command(o);
}

CLI::App* add_profile(CLI::App& app, SanitizeOptions& o) {
  auto* s = app.add_subcommand(
      "profile",
      "Run a program (python script.py, pytest ...) with every Triton launch profiled on the CPU: bytes, "
      "mask efficiency, sectors, FLOPs, roofline (or: tilescope profile kernel.ttir --grid ... --arg ...)");
  std::string gpus;
  for (const auto& g : analysis::gpus()) gpus += (gpus.empty() ? "" : ", ") + std::string(g.name);
  s->add_option("--gpu", o.gpu, fmt::format("the roofline's GPU: {}", gpus))->capture_default_str();
  s->add_option("--json", o.json_path,
                "write every launch's profile as JSON (schema: README \"Profile JSON\")");
  s->add_option("--trace", o.trace_path,
                "also record every launch, with its profile, into this trace file (docs/trace-format.md)");
  add_trace_budget(s, o.trace_budget, "most bytes of payload the trace may hold (e.g. 64M)");
  s->add_option("--top", o.top, "hottest Python lines shown per kernel")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  s->add_option("--num-warps", o.num_warps, "warps per program for the sector model (Triton's num_warps)")
      ->capture_default_str()
      ->check(CLI::Range(1, 32));
  s->add_option(
       "--threads", o.threads,
       fmt::format("engine worker threads: 0 for all cores (the default), at most {}", exec::kMaxThreads))
      ->type_name("N");
  s->add_option(
       "--max-steps", o.max_steps,
       fmt::format("operations one program may run before its launch fails (default {}); 0: no limit",
                   exec::kDefaultMaxSteps))
      ->type_name("N");
  add_max_memory(*s, o.max_memory);
  s->add_option("--target", o.target,
                fmt::format("the GPU the program sees and kernels are compiled for: {} (default: "
                            "TILESCOPE_TARGET, else sm_90)",
                            known_targets()));
  s->add_flag("--cuda-on-cpu", o.cuda_on_cpu, "make tensors the program puts on \"cuda\" on the CPU");
  s->add_flag("--bench-all", o.bench_all, "run perf_report benchmarks at every x value");
  s->add_option("--color", o.color, "colour: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  s->add_option("command", o.command, "the program and its arguments: [--] python script.py ARGS");
  return s;
}

int profile_main(int argc, char** argv) {
  static const std::set<std::string> with_value = {"--trace", "--trace-budget", "--gpu",       "--json",
                                                   "--top",   "--num-warps",    "--threads",   "--max-steps",
                                                   "--color", "--target",       "--max-memory"};
  auto [ours, command] = split_command(argc, argv, with_value);
  CLI::App app{"tilescope profile"};
  SanitizeOptions o;
  add_profile(app, o);
  std::vector<std::string> args{"profile"};
  args.insert(args.end(), ours.begin(), ours.end());
  std::reverse(args.begin(), args.end());
  tilescope_usage_errors(app);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  analysis::find_gpu(o.gpu);  // a usage error before the command runs
  o.command = command;
  o.profile = true;
  if (o.command.empty()) throw Error("profile: no command given (tilescope profile -- python script.py)");
  return sanitize_command(o);
}

int sanitize_command(const SanitizeOptions& o) {
  if (o.command.empty()) throw Error("sanitize: no command given (tilescope sanitize -- python script.py)");
  // Checked here, before the command runs, with the checks the engine applies.
  std::string threads, max_steps;
  if (!o.threads.empty()) threads = std::to_string(exec::parse_threads(o.threads, "--threads"));
  if (!o.max_steps.empty()) {
    int64_t n = -1;
    auto [end, ec] = std::from_chars(o.max_steps.data(), o.max_steps.data() + o.max_steps.size(), n);
    if (ec != std::errc() || end != o.max_steps.data() + o.max_steps.size() || n < 0)
      throw Error(fmt::format("--max-steps {}: give a number of operations, or 0 for no limit", o.max_steps));
    max_steps = std::to_string(n);
  }
  const std::string target = resolve_target(o.target);
  std::string trace_path;
  if (!o.trace_path.empty()) {
    // Made here, before the command runs, so that a bad path fails now and every process appends to it.
    std::error_code ec;
    trace_path = fs::absolute(o.trace_path, ec).string();
    trace::create(trace_path, o.trace_budget >= 0 ? o.trace_budget : trace::kDefaultBudget);
  } else if (o.view || o.explain) {
    // --view / --explain without --trace: a temporary trace, removed at the end.
    std::error_code ec;
    trace_path = (fs::temp_directory_path(ec) / fmt::format("tilescope-view-{}.tstrace", getpid())).string();
    trace::create(trace_path, o.trace_budget >= 0 ? o.trace_budget : trace::kDefaultBudget);
    // It holds the program's source and its tensors: for this user only.
    fs::permissions(trace_path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace,
                    ec);
  }
  struct RemoveAfter {  // a temporary trace goes at the end, whatever way out
    std::string path;
    ~RemoveAfter() {
      std::error_code ec;
      if (!path.empty()) fs::remove(path, ec);
    }
  } remove_after{o.trace_path.empty() ? trace_path : ""};
  ForwardSignals forwarding;
  TempDir dir;

  setenv("TILESCOPE_SANITIZE", "1", 1);
  setenv("TILESCOPE_FINDINGS", dir.path().c_str(), 1);
  setenv("TILESCOPE_BIN", self_exe().c_str(), 1);
  setenv("TILESCOPE_EXIT_CODE", std::to_string(o.exit_code).c_str(), 1);
  if (!threads.empty()) setenv("TILESCOPE_THREADS", threads.c_str(), 1);
  if (!max_steps.empty()) setenv("TILESCOPE_MAX_STEPS", max_steps.c_str(), 1);
  if (o.max_memory > 0) setenv("TILESCOPE_MAX_MEMORY", std::to_string(o.max_memory).c_str(), 1);
  if (o.abort_on_first) setenv("TILESCOPE_ABORT_ON_FIRST", "1", 1);
  if (!o.races) setenv("TILESCOPE_RACES", "0", 1);
  if (o.no_uninit) setenv("TILESCOPE_UNINIT", "0", 1);
  setenv("TILESCOPE_TARGET", target.c_str(), 1);
  if (o.cuda_on_cpu) setenv("TILESCOPE_CUDA_ON_CPU", "1", 1);
  if (o.bench_all) setenv("TILESCOPE_BENCH_ALL", "1", 1);
  if (o.profile) {
    setenv("TILESCOPE_PROFILE", json{{"gpu", o.gpu}, {"num_warps", o.num_warps}}.dump().c_str(), 1);
  } else {
    unsetenv("TILESCOPE_PROFILE");
  }
  if (!trace_path.empty()) setenv("TILESCOPE_TRACE", trace_path.c_str(), 1);
  // The child's `python` must be able to import Triton without a GPU.
  setenv("TRITON_MOCK_PTX_VERSION", "8.7", 0);

  int status = 0;
  Collected c;
  {
    FailureChannel failures(dir.path());
    status = run_child(o.command);
    read_findings(dir.path(), c);
    failures.read_into(c);
  }
  dir.remove();
  const std::string uncounted = reconcile_with_trace(c, trace_path);
  std::vector<analysis::Finding> findings = report::merge(report::from_json(c.findings));

  const bool color = use_color(o.color);
  if (o.profile) return profile_report(o, c, status, color, trace_path);
  if (g_received)
    std::cerr << fmt::format("tilescope: received SIG{}, passed it to the program and waited for it\n",
                             sigabbrev_np(g_received));
  int64_t lost_findings = 0;
  int lost_processes = 0;  // not counted yet: no file of theirs was read
  std::vector<std::pair<int64_t, const Collected::Lost*>> losing;  // processes whose findings are missing
  for (auto& [pid, l] : c.lost) {
    auto got = c.received.find(pid);
    // A process whose file holds an earlier state: what it found since is missing.
    const int64_t missing = std::max<int64_t>(0, l.findings - (got == c.received.end() ? 0 : got->second));
    if (missing > 0) losing.emplace_back(pid, &l);
    lost_findings += missing;
    if (got == c.received.end()) {
      ++lost_processes;
      c.launches += l.launches;
    }
  }
  const int processes = c.processes + lost_processes;
  if (processes == 0 && c.launches == 0)
    std::cerr << "tilescope: warning: no Python process reported to the sanitizer; is the tilescope package "
                 "installed in the Python that ran the command (pip install .)?\n";
  std::cerr << report::to_text(findings, color);
  for (const std::string& n : c.notes) std::cerr << "tilescope: note: " << n << "\n";
  bool failed = false;
  std::string summary = report::summary_line(findings);
  if (lost_findings > 0) {
    // Findings exist that this report does not hold: never say "no findings".
    std::cerr << fmt::format(
        "tilescope: error: {} process(es) could not write their findings to the temporary directory under "
        "$TMPDIR (process {}: {}); they printed their reports on stderr instead: {} finding(s) are missing "
        "from this report{}\n",
        losing.size(), losing.front().first, losing.front().second->error, lost_findings,
        o.json_path.empty() && o.sarif_path.empty() ? "" : " and from --json / --sarif");
    summary = findings.empty()
                  ? fmt::format("{} finding(s) not received (printed above by their process)", lost_findings)
                  : fmt::format("{}, and {} more not received (printed above by their process)", summary,
                                lost_findings);
    failed = true;
  }
  std::cerr << fmt::format(
      "tilescope: {} ({} launch(es) in {} process(es){}); the program exited with status {}\n", summary,
      c.launches, processes, uncounted.empty() ? "" : "; " + uncounted, status);
  if (!o.trace_path.empty()) {
    try {
      trace::Reader r(trace_path);
      std::cerr << fmt::format("tilescope: trace of {} launch(es) written to {} (tilescope show {})\n",
                               r.launches().size(), o.trace_path, o.trace_path);
    } catch (const Error& e) {
      std::cerr << "tilescope: " << report::diagnostic_to_text(e.diagnostic(), color);
      failed = true;
    }
  }
  // Both files are attempted even after one fails; a failure is exit status 2.
  auto attempt = [&](const std::string& path, const std::string& text) {
    try {
      write_file_atomically(path, {text, "\n"});
    } catch (const Error& e) {
      std::cerr << "tilescope: " << report::diagnostic_to_text(e.diagnostic(), color);
      failed = true;
    }
  };
  if (!o.json_path.empty()) attempt(o.json_path, report::to_json(findings).dump(2));
  if (!o.sarif_path.empty()) attempt(o.sarif_path, report::to_sarif(findings).dump(2));
  if (!(std::cerr << std::flush)) failed = true;  // the report was lost: nowhere left to say so
  // The program's own failure always wins; then tilescope's own (a report lost); --exit-code is the
  // status of a program that succeeded with findings.
  const int rc = status != 0 ? status : failed ? 2 : findings.empty() ? 0 : o.exit_code;
  if (o.explain && !trace_path.empty() && findings.empty())
    std::cerr << "tilescope: note: --explain: no findings to explain; for wrong values the sanitizer cannot "
                 "see, record the run (tilescope trace -o run.tstrace -- ...) and ask about it (tilescope "
                 "explain run.tstrace, or tilescope ask run.tstrace \"QUESTION\")\n";
  if (o.explain && !trace_path.empty() && !findings.empty()) {
    // The findings explained by the LLM (tilescope explain), right after the report.
    std::cerr << "tilescope: asking the LLM to explain the findings (tilescope explain; Ctrl-C stops it)\n";
    AssistOptions a;
    a.path = trace_path;
    try {
      if (assist_command(a) == 130) return 130;
    } catch (const Error& e) {
      std::cerr << "tilescope: " << report::diagnostic_to_text(e.diagnostic(), color);
    }
  }
  if (o.view && !trace_path.empty()) {
    // The trace in the web visualizer until Ctrl-C.
    ViewOptions v;
    v.path = trace_path;
    view_command(v);
  }
  return rc;
}

CLI::App* add_demo(CLI::App& app, std::vector<std::string>& args) {
  auto* d = app.add_subcommand("demo", "Run the bundled examples and show what the sanitizer finds");
  d->add_option("args", args, "arguments for examples/demo.py (--quick, --only NAME)");
  d->allow_extras();  // options such as --quick belong to demo.py
  return d;
}

int demo_command(const std::vector<std::string>& args, const std::vector<std::string>& extras) {
  // The examples sit next to the executable's directory: <pkg>/bin/tilescope -> <pkg>/examples
  // (installed package) or <repo>/build/tilescope -> <repo>/examples (a build tree).
  fs::path exe = self_exe();
  std::vector<fs::path> candidates;
  if (const char* e = std::getenv("TILESCOPE_EXAMPLES")) candidates.emplace_back(e);
  candidates.push_back(exe.parent_path().parent_path() / "examples");
  candidates.push_back(fs::current_path() / "examples");
  fs::path script;
  for (auto& c : candidates)
    if (fs::exists(c / "demo.py")) {
      script = c / "demo.py";
      break;
    }
  if (script.empty())
    throw Error("demo: examples/demo.py not found (set TILESCOPE_EXAMPLES to the examples folder)");
  const char* py = std::getenv("TILESCOPE_PYTHON");
  std::vector<std::string> argv{py && *py ? py : "python3", script.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), extras.begin(), extras.end());
  setenv("TILESCOPE_BIN", exe.c_str(), 1);
  ForwardSignals forwarding;
  return run_child(argv);
}

}  // namespace tilescope::cli
