// `tilescope sanitize -- CMD...` and `tilescope demo`.
//
// sanitize runs an unmodified program (python script.py, pytest ...) with tilescope switched on in
// every Python process it starts: the environment carries TILESCOPE_SANITIZE=1, and the package's
// .pth file then imports tilescope._autoload at interpreter start-up, which routes every Triton
// launch to the engine under the sanitizer. Each process writes its findings as JSON into the
// directory named by TILESCOPE_FINDINGS; when the command ends, this merges them, prints the report,
// writes --json / --sarif, and exits with --exit-code (default 1) when there were findings, else with
// the command's own status (as compute-sanitizer does for CUDA programs).
#include "sanitize.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tilescope/ir/diag.h"
#include "tilescope/report/report.h"

namespace tilescope::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tilescope") : p.string();
}

// Run `argv` with the current environment; the exit status as a shell reports it (128 + signal).
// The parent ignores SIGINT / SIGQUIT meanwhile, as system() does, so ^C stops the child and we
// still merge and report what it found.
int run_child(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  struct sigaction ign {
  }, old_int{}, old_quit{};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGINT);
  sigaddset(&def, SIGQUIT);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int rc = posix_spawnp(&pid, cargv[0], nullptr, &attr, cargv.data(), environ);
  posix_spawnattr_destroy(&attr);
  int status = 0;
  if (rc == 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (rc != 0) throw Error(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Findings of all processes, in the order the processes wrote them (by file name: pid order is not
// meaningful, but the order is at least stable).
json read_findings(const fs::path& dir, int& processes, int64_t& launches) {
  json all = json::array();
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  processes = 0;
  launches = 0;
  for (auto& f : files) {
    std::ifstream in(f);
    json doc;
    try {
      in >> doc;
    } catch (const json::exception& e) {
      std::cerr << fmt::format("tilescope: warning: cannot read the findings of a child process ({}): {}\n",
                               f.string(), e.what());
      continue;
    }
    ++processes;
    launches += doc.value("launches", int64_t{0});
    for (auto& x : doc.value("findings", json::array())) all.push_back(x);
  }
  return all;
}

bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  return isatty(STDERR_FILENO) && !std::getenv("NO_COLOR");
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("cannot write '{}'", path));
  out << text;
}

}  // namespace

CLI::App* add_sanitize(CLI::App& app, SanitizeOptions& o) {
  auto* s = app.add_subcommand(
      "sanitize",
      "Run a program (python script.py, pytest ...) with every Triton launch sanitized on the CPU");
  s->add_option("--json", o.json_path, "write all findings as JSON (schema: README)");
  s->add_option("--sarif", o.sarif_path, "write all findings as SARIF 2.1.0");
  s->add_option("--exit-code", o.exit_code, "exit status when there are findings")->capture_default_str();
  s->add_flag("--abort-on-first", o.abort_on_first, "stop the program at the first finding");
  s->add_option("--threads", o.threads, "engine worker threads (default: all cores)");
  s->add_option("--color", o.color, "colour the report: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  s->add_option("command", o.command,
                "the program and its arguments: [--] python script.py ARGS, [--] pytest ...");
  return s;
}

int sanitize_main(int argc, char** argv) {
  // The command starts after `--` or at the first argument that is not one of our options; it is
  // passed on untouched (its own options are not ours to parse).
  static const std::set<std::string> with_value = {"--json", "--sarif", "--exit-code", "--threads",
                                                   "--color"};
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
  CLI::App app{"tilescope sanitize"};
  SanitizeOptions o;
  CLI::App* sub = add_sanitize(app, o);
  std::vector<std::string> args{"sanitize"};
  args.insert(args.end(), ours.begin(), ours.end());
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // help: 0; a usage error: 2, as for every tilescope command
  }
  (void)sub;
  o.command = command;
  return sanitize_command(o);
}

int sanitize_command(const SanitizeOptions& o) {
  if (o.command.empty()) throw Error("sanitize: no command given (tilescope sanitize -- python script.py)");
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = fmt::format("{}/tilescope-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw Error(fmt::format("cannot create a directory under {}", templ));
  fs::path dir(buf.data());

  setenv("TILESCOPE_SANITIZE", "1", 1);
  setenv("TILESCOPE_FINDINGS", dir.c_str(), 1);
  setenv("TILESCOPE_BIN", self_exe().c_str(), 1);
  setenv("TILESCOPE_EXIT_CODE", std::to_string(o.exit_code).c_str(), 1);
  if (o.threads > 0) setenv("TILESCOPE_THREADS", std::to_string(o.threads).c_str(), 1);
  if (o.abort_on_first) setenv("TILESCOPE_ABORT_ON_FIRST", "1", 1);
  // The child's `python` must be able to import Triton without a GPU.
  setenv("TRITON_MOCK_PTX_VERSION", "8.7", 0);

  int status = run_child(o.command);
  int processes = 0;
  int64_t launches = 0;
  std::vector<analysis::Finding> findings;
  try {
    json all = read_findings(dir, processes, launches);
    findings = report::merge(report::from_json(all));
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);

  if (processes == 0)
    std::cerr << "tilescope: warning: no Python process reported to the sanitizer; is the tilescope package "
                 "installed in the Python that ran the command (pip install .)?\n";
  std::cerr << report::to_text(findings, use_color(o.color));
  std::cerr << fmt::format(
      "tilescope: {} ({} launch(es) in {} process(es)); the program exited with status {}\n",
      report::summary_line(findings), launches, processes, status);
  if (!o.json_path.empty()) write_file(o.json_path, report::to_json(findings).dump(2) + "\n");
  if (!o.sarif_path.empty()) write_file(o.sarif_path, report::to_sarif(findings).dump(2) + "\n");
  if (!findings.empty()) return o.exit_code;
  return status;
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
  return run_child(argv);
}

}  // namespace tilescope::cli
