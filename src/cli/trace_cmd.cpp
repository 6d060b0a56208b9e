// `tilescope show` and `tilescope replay` (see trace_cmd.h).
#include "trace_cmd.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "interrupt.h"
#include "npy.h"
#include "output_file.h"
#include "tilescope/exec/engine.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/elem.h"
#include "tilescope/launch/runner.h"
#include "tilescope/report/report.h"
#include "tilescope/trace/trace.h"

namespace tilescope::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Findings JSON without what depends on the machine rather than the launch (source lines are read
// from the files at report time), and without the kinds replay does not run.
json comparable(const json& findings) {
  json out = json::array();
  for (json f : findings) {
    if (f.value("kind", "") == "uninitialized-read") continue;
    f.erase("source");
    for (const char* k : {"cause", "use"})
      if (f.contains(k) && f[k].is_object()) f[k].erase("source");
    out.push_back(std::move(f));
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") ==
          std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string scalar_text(const launch::Scalar& v) {
  return std::visit(
      [](auto x) -> std::string {
        using T = decltype(x);
        if constexpr (std::is_same_v<T, bool>)
          return x ? "1" : "0";
        else
          return fmt::format("{}", x);  // floats: the shortest text that reads back the same double
      },
      v);
}

// The launch as files `tilescope run` takes: KERNEL.ttir, one .npy per buffer argument (its bytes
// before the launch, as a 1-D array of its dtype: the kernel's own strides address it), and run.sh
// with the command. run.sh names its files by its own directory and runs in the caller's, so that
// paths the caller adds (`--save out_ptr=out.npy`) are the caller's. Returns the command, with `dir`.
std::string save_inputs(const trace::StoredLaunch& s, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("--save-inputs {}: cannot create the directory: {}", dir, ec.message()));
  const launch::LaunchRecord& r = s.record;
  const std::string name = r.kernel.empty() ? "kernel" : r.kernel;
  write_file_atomically((fs::path(dir) / (name + ".ttir")).string(), {r.ttir});
  // The command twice: for run.sh (files under "$d", its directory) and as said to the user (under dir).
  std::string script_args, shown_args;
  auto file = [&](const std::string& f) {
    return std::pair{"\"$d\"/" + shell_quote(f), shell_quote((fs::path(dir) / f).string())};
  };
  auto add = [&](const std::string& prefix, const std::pair<std::string, std::string>& value) {
    script_args += " " + prefix + value.first;
    shown_args += " " + prefix + value.second;
  };
  for (size_t i = 0; i < r.args.size(); ++i) {
    const launch::ArgRecord& a = r.args[i];
    if (a.kind == launch::ArgRecord::Kind::buffer) {
      const int eb = std::max(1, ir::elem_bytes(a.dtype));
      ArrayBytes data(s.before[i]->begin(), s.before[i]->end());
      data.resize(data.size() / static_cast<size_t>(eb) * static_cast<size_t>(eb));
      const int64_t n = static_cast<int64_t>(data.size()) / eb;
      write_npy((fs::path(dir) / (a.name + ".npy")).string(),
                NpyArray{ir::elem_info(a.dtype).npy, {n}, std::move(data)});
      add("--arg " + shell_quote(a.name + "="), file(a.name + ".npy"));
    } else if (a.kind == launch::ArgRecord::Kind::scalar) {
      const std::string v = shell_quote(a.name + "=" + scalar_text(a.value));
      add("--arg ", {v, v});
    }
  }
  const std::string tail =
      fmt::format("{} --grid {},{},{}", r.kernel.empty() ? "" : " --kernel " + shell_quote(r.kernel),
                  r.grid[0], r.grid[1], r.grid[2]);
  const auto ttir = file(name + ".ttir");
  const fs::path script = fs::path(dir) / "run.sh";
  write_file_atomically(
      script.string(),
      {"#!/bin/sh\n# Launch ", std::to_string(s.id),
       " of a tilescope trace, as `tilescope run` runs it (TILESCOPE_BIN: which tilescope). Files are\n",
       "# taken from this script's directory; paths given to it are the caller's.\n",
       "d=$(dirname \"$0\")\nexec \"${TILESCOPE_BIN:-tilescope}\" run ", ttir.first, tail, script_args,
       " \"$@\"\n"});
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add, ec);
  return "tilescope run " + ttir.second + tail + shown_args;
}

}  // namespace

CLI::App* add_show(CLI::App& app, ShowOptions& o) {
  auto* s =
      app.add_subcommand("show", "Summarize a trace file: launches, kernels, findings, top lines by bytes");
  s->add_option("trace", o.path, "the trace file (tilescope sanitize --trace FILE)")->required();
  s->add_option("--top", o.top, "source lines to list by bytes")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  return s;
}

int show_command(const ShowOptions& o) {
  trace::Reader r(o.path);
  std::cout << r.summary(o.top) << std::flush;
  return std::cout ? 0 : 2;
}

CLI::App* add_replay(CLI::App& app, ReplayOptions& o) {
  auto* s = app.add_subcommand("replay", "Run a recorded launch again from a trace file alone");
  s->add_option("trace", o.path, "the trace file")->required();
  s->add_option("--launch", o.launch, "the launch to run (its number in `tilescope show`)")->required();
  s->add_option(
      "--save-inputs", o.save_dir,
      "also write the launch as KERNEL.ttir, one .npy per buffer argument and run.sh (the `tilescope "
      "run` command) into DIR");
  s->add_option("--json", o.json_path, "write the replay's findings as JSON");
  s->add_option("--threads", o.threads, "worker threads: 0 for all cores (the default)")->type_name("N");
  s->add_option("--max-steps", o.max_steps,
                "operations one program may run before the launch fails with a located error (as tilescope "
                "run); 0: no limit")
      ->check(CLI::NonNegativeNumber)
      ->type_name("N");
  s->add_option("--color", o.color, "colour the report: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  return s;
}

int replay_command(const ReplayOptions& o) {
  const int threads = o.threads.empty() ? 0 : exec::parse_threads(o.threads, "--threads");
  trace::Reader reader(o.path);
  trace::StoredLaunch s = reader.launch(o.launch);
  launch::LaunchRecord& rec = s.record;
  const std::string where = fmt::format("{}: launch {}", o.path, o.launch);
  trace::ReplayMemory memory(s, where);  // the buffers' contents before the launch, aliasing as recorded
  if (!o.save_dir.empty()) {
    const std::string cmd = save_inputs(s, o.save_dir);
    std::cerr << fmt::format("tilescope: wrote launch {} to {}: {}\n", o.launch, o.save_dir, cmd);
  }

  launch::RunOptions opts;
  opts.threads = threads;
  if (o.max_steps >= 0) opts.max_steps = o.max_steps;
  for (const auto& a : s.analyses)
    if (a.name != "uninit") opts.analyses.push_back(a);
  // Said when it matters: the recording has findings that replay cannot have.
  bool skipped_uninit = false;
  for (const json& f : s.findings) skipped_uninit |= f.value("kind", "") == "uninitialized-read";
  opts.print = [](std::string_view text) { std::cout << text << std::flush; };
  opts.cancel = &interrupted();
  launch::RunResult r;
  try {
    CancelOnSigint cancel_on_sigint;  // Ctrl-C stops the programs, then this says so (exit 130)
    r = launch::run_launch(rec, opts);
  } catch (const exec::Interrupted&) {
    std::cerr << fmt::format("tilescope: replay of launch {} interrupted (SIGINT)\n", o.launch);
    return 130;
  }
  const bool color =
      o.color == "always" || (o.color == "auto" && isatty(STDERR_FILENO) && !std::getenv("NO_COLOR"));
  if (!r.findings.empty()) std::cerr << report::to_text(r.findings, color);
  const json found = report::to_json(r.findings);
  const bool same = comparable(found) == comparable(s.findings);
  const std::vector<analysis::Finding> recorded = report::from_json(comparable(s.findings));
  std::cerr << fmt::format(
      "tilescope: replay of launch {}: {}; {}{}\n", o.launch,
      r.findings.empty() ? std::string("no findings") : report::summary_line(r.findings),
      same ? "the same findings as recorded"
           : fmt::format("DIFFERENT from the recording ({})",
                         recorded.empty() ? std::string("no findings") : report::summary_line(recorded)),
      skipped_uninit ? " (the recorded uninitialized-read findings are not replayed)" : "");
  if (!s.error.empty())
    std::cerr << fmt::format("tilescope: note: the recorded launch failed: {}\n", s.error);
  if (!o.json_path.empty()) write_file_atomically(o.json_path, {found.dump(2), "\n"});
  if (!same) return 4;
  return r.findings.empty() ? 0 : 1;
}

}  // namespace tilescope::cli
