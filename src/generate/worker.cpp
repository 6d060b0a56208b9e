// The Worker (generate.h): a Python process that speaks one JSON object per line, both ways
// (python/tilescope/_gen_worker.py). The task files are the user's Python code: whatever they print goes
// to the worker's stderr (its stdout carries only the protocol), and an error in them is a response, not a
// dead process.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "tilescope/generate/generate.h"
#include "tilescope/ir/diag.h"

namespace tilescope::generate {

using json = nlohmann::json;

struct Worker::Impl {
  std::string python, log_path;
  pid_t pid = -1;
  int to_child = -1, from_child = -1;
  std::string buffered;  // bytes read past the last line

  void start() {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0)
      throw Error(fmt::format("cannot start the Python worker: {}", std::strerror(errno)));
    if (pipe2(out, O_CLOEXEC) != 0) {
      const int e = errno;
      close(in[0]);
      close(in[1]);
      throw Error(fmt::format("cannot start the Python worker: {}", std::strerror(e)));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (!log_path.empty())
      posix_spawn_file_actions_addopen(&actions, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<std::string> argv{python, "-m", "tilescope._gen_worker"};
    std::vector<char*> cargv;
    cargv.reserve(argv.size() + 1);
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_t child = -1;
    const int rc = posix_spawnp(&child, cargv[0], &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      throw Error(
          fmt::format("cannot run the Python worker '{} -m tilescope._gen_worker': {} (set TILESCOPE_PYTHON "
                      "to a Python that has tilescope, torch and triton)",
                      python, std::strerror(rc)));
    }
    pid = child;
    to_child = in[1];
    from_child = out[0];
    buffered.clear();
  }

  // The process is gone or unusable: reap it and say why (its exit status and the end of its log).
  std::string stop(bool kill_now) {
    if (to_child >= 0) close(to_child);
    if (from_child >= 0) close(from_child);
    to_child = from_child = -1;
    std::string why;
    if (pid > 0) {
      int status = 0;
      pid_t r = 0;
      if (kill_now) kill(pid, SIGKILL);
      // It exits on EOF of its stdin (or has exited by itself): a moment, then it is killed.
      for (int i = 0; i < 40 && (r = waitpid(pid, &status, WNOHANG)) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (r == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
      if (WIFEXITED(status)) why = fmt::format("exit status {}", WEXITSTATUS(status));
      if (WIFSIGNALED(status)) why = fmt::format("signal {}", WTERMSIG(status));
    }
    pid = -1;
    return why;
  }

  std::string log_tail() const {
    if (log_path.empty()) return "";
    std::ifstream f(log_path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    if (s.size() > 2000) s = "..." + s.substr(s.size() - 2000);
    return s.empty() ? "" : "; its last output:\n" + s;
  }

  [[noreturn]] void died(const std::string& what, bool kill_now) {
    const std::string status = stop(kill_now);
    throw Error(fmt::format("the Python worker {}{} {}{}", what, status.empty() ? "" : " (" + status + ")",
                            doing, log_tail()));
  }

  std::string doing;  // what the request in flight does, for messages: "while loading x.py"

  void write_all(const std::string& s) {
    // A worker that died makes the write fail with EPIPE: SIGPIPE is blocked meanwhile, and a pending
    // one is taken, so that it does not end this process.
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    size_t done = 0;
    int err = 0;
    while (done < s.size()) {
      const ssize_t n = write(to_child, s.data() + done, s.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        err = errno;
        break;
      }
      done += static_cast<size_t>(n);
    }
    if (err == EPIPE) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe_set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (err) died(fmt::format("stopped reading requests ({})", std::strerror(err)), false);
  }

  std::string read_line() {
    for (;;) {
      if (auto nl = buffered.find('\n'); nl != std::string::npos) {
        std::string line = buffered.substr(0, nl);
        buffered.erase(0, nl + 1);
        return line;
      }
      char chunk[1 << 16];
      const ssize_t n = read(from_child, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) died("ended", false);
      buffered.append(chunk, static_cast<size_t>(n));
    }
  }
};

Worker::Worker(std::string python, std::string log_path) : impl_(std::make_unique<Impl>()) {
  impl_->python = std::move(python);
  impl_->log_path = std::move(log_path);
}

Worker::~Worker() { impl_->stop(false); }

json Worker::call(const json& request) {
  const std::string op = request.value("op", "");
  const std::string path = request.value("path", "");
  impl_->doing = op == "load"           ? "while loading " + path
                 : op == "case"         ? "while making a case of " + path + " (its inputs() and reference())"
                 : op == "check"        ? "while checking the sizes of " + path
                 : op == "compile_ttir" ? std::string("while Triton compiled the TTIR")
                 : op == "run_python"   ? "while running the Python kernel " + request.value("module", "")
                                        : std::string();
  if (impl_->pid < 0) impl_->start();
  impl_->write_all(request.dump() + "\n");
  const std::string line = impl_->read_line();
  json response;
  try {
    response = json::parse(line);
  } catch (const json::parse_error&) {
    impl_->died(fmt::format("answered something that is not JSON: {}", line.substr(0, 200)), true);
  }
  if (!response.is_object()) impl_->died("answered something that is not a JSON object", true);
  if (!response.value("ok", false))
    throw Error(response.value("error", std::string("the Python worker failed")));
  return response;
}

std::vector<std::string> Task::signature() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < iface.args.size(); ++i) {
    const gen::Arg& a = iface.args[i];
    switch (a.kind) {
      case gen::Arg::Kind::pointer: {
        const Role r = roles[i];
        out.push_back(fmt::format("{}: *{}{}", a.name, gen::dtype_name(a.dtype),
                                  r == Role::out     ? " out"
                                  : r == Role::inout ? " inout"
                                                     : ""));
        break;
      }
      case gen::Arg::Kind::scalar:
        out.push_back(fmt::format("{}: {}", a.name, gen::dtype_name(a.dtype)));
        break;
      case gen::Arg::Kind::constexpr_: out.push_back(fmt::format("{}: constexpr", a.name)); break;
    }
  }
  return out;
}

Task Worker::load(const std::string& path, const std::string& description) {
  json req = {{"op", "load"}, {"path", path}};
  if (!description.empty()) req["description"] = description;
  const json t = call(req).at("task");
  Task task;
  task.name = t.at("name").get<std::string>();
  task.path = t.at("path").get<std::string>();
  task.description = t.at("description").get<std::string>();
  task.grid_source = t.value("grid_source", std::string());
  task.inputs_line = t.value("inputs_line", 0);
  task.sizes = t.at("sizes");
  task.iface.name = task.name;
  for (const json& a : t.at("signature")) {
    gen::Arg arg;
    arg.name = a.at("name").get<std::string>();
    const std::string kind = a.at("kind").get<std::string>();
    Role role = Role::in;
    if (kind == "constexpr") {
      arg.kind = gen::Arg::Kind::constexpr_;
    } else {
      arg.kind = kind == "pointer" ? gen::Arg::Kind::pointer : gen::Arg::Kind::scalar;
      auto d = gen::dtype_from_name(a.at("dtype").get<std::string>());
      if (!d) throw Error(fmt::format("{}: unknown dtype in the signature of {}", task.path, arg.name));
      arg.dtype = *d;
      const std::string r = a.value("role", std::string("in"));
      role = r == "out" ? Role::out : r == "inout" ? Role::inout : Role::in;
    }
    task.iface.args.push_back(arg);
    task.roles.push_back(role);
  }
  return task;
}

}  // namespace tilescope::generate
