#include "gen_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "interrupt.h"
#include "output_file.h"
#include "paths.h"
#include "tilescope/generate/generate.h"
#include "tilescope/ir/diag.h"

namespace tilescope::cli {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string python_exe() {
  const char* p = std::getenv("TILESCOPE_PYTHON");
  return p && *p ? p : "python3";
}

fs::path suite_dir(const std::string& given) {
  return given.empty() ? beside_executable("tasks", "TILESCOPE_TASKS") : fs::path(given);
}

// "m=5,n=100" or {"m": 5, "n": 100} -> the size object.
json parse_size(const std::string& text) {
  if (!text.empty() && text.front() == '{') {
    json j = json::parse(text, nullptr, false);
    if (!j.is_object()) throw Error(fmt::format("--sizes {}: not a JSON object", text));
    return j;
  }
  json size = json::object();
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    const std::string item = text.substr(i, j - i);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error(fmt::format("--sizes {}: give NAME=VALUE,NAME=VALUE", text));
    json v = json::parse(item.substr(eq + 1), nullptr, false);
    if (v.is_discarded() || !v.is_primitive())
      throw Error(fmt::format("--sizes {}: {} is not a number", text, item.substr(eq + 1)));
    size[item.substr(0, eq)] = v;
    i = j + 1;
  }
  if (size.empty()) throw Error("--sizes: an empty size");
  return size;
}

generate::GenOptions gen_options(const GenRunOptions& o) {
  generate::GenOptions g;
  g.attempts = o.attempts;
  auto d = generate::decoding_from_name(o.decoding);
  if (!d)
    throw Error(
        fmt::format("--decoding {}: one of auto, json-schema, llama-grammar, json-object, none", o.decoding));
  g.decoding = *d;
  g.max_tokens = o.max_tokens;
  g.context_tokens = o.context;
  if (o.temperature >= 0) g.temperature = o.temperature;
  g.bounds.ops = o.max_ops;
  g.bounds.region_ops = std::max(o.max_ops / 2, 4);
  g.eval.seed = o.seed;
  g.eval.triton = !o.no_triton;
  g.eval.max_steps = o.max_steps;
  g.eval.cancel = &interrupted();
  return g;
}

std::string plural(int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// A folder for the command's files; a path that cannot be one is the user's error, not tilescope's.
void make_dir(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec || !fs::is_directory(p))
    throw Error(
        fmt::format("{}: cannot make this folder ({})", p.string(), ec ? ec.message() : "a file is there"));
}

// What people see while a generation runs (stderr).
struct TerminalProgress : generate::Progress {
  bool tty = isatty(STDERR_FILENO) != 0;
  bool live = false;  // a \r line is showing
  std::string prefix;
  void end_line() {
    if (live) std::cerr << "\n";
    live = false;
  }
  void attempt_begin(int number, int of, const std::string& decoding) override {
    end_line();
    if (!tty) return;  // off a terminal, one line per attempt, when it ends
    std::cerr << fmt::format("{}attempt {}/{} ({})", prefix, number, of, decoding) << std::flush;
    live = true;
  }
  void streamed(int64_t tokens, double seconds) override {
    if (!tty || tokens % 8) return;
    std::cerr << fmt::format("\r{}  receiving: {} tokens, {:.0f} s", prefix, tokens, seconds) << std::flush;
  }
  void note(const std::string& line) override {
    end_line();
    std::cerr << prefix << "  note: " << line << "\n";
  }
  void attempt_end(const generate::Attempt& a) override {
    if (tty && live) std::cerr << "\r\033[K";
    live = false;
    std::cerr << fmt::format("{}attempt {} ({}): ", prefix, a.number, a.decoding);
    if (!a.llm_error.empty()) {
      std::cerr << "no answer: " << a.llm_error << "\n";
      return;
    }
    std::cerr << fmt::format("{} tokens in {:.1f} s; ", a.completion_tokens, a.model_seconds);
    if (a.eval.passed()) {
      std::cerr << fmt::format("correct and clean at {}",
                               plural(static_cast<int64_t>(a.eval.cases.size()), "size", "sizes"));
      if (a.eval.round_trip)
        std::cerr << (*a.eval.round_trip ? "; the Triton Python gives the same outputs" : "");
      std::cerr << "\n";
      if (a.eval.round_trip && !*a.eval.round_trip)
        std::cerr << prefix << "  warning: " << a.eval.round_trip_note << "\n";
      return;
    }
    std::cerr << fmt::format("stopped after stage '{}'\n", generate::stage_name(a.eval.reached));
    const auto lines = a.eval.feedback(4);
    for (const auto& l : lines) std::cerr << prefix << "  " << l.substr(0, 300) << "\n";
    if (!a.eval.error.empty() && lines.empty())
      std::cerr << prefix << "  " << a.eval.error.substr(0, 300) << "\n";
  }
};

void write_text(const fs::path& p, const std::string& text) { write_file_atomically(p.string(), {text}); }

// The answer's files: kernel.json (pretty when it parses), kernel.ttir and kernel.py when it got that far.
std::vector<std::string> write_answer(const fs::path& dir, const generate::Outcome& out) {
  std::vector<std::string> wrote;
  make_dir(dir);
  for (const auto& a : out.attempts) {
    const fs::path ad = dir / "attempts" / fmt::format("attempt{}", a.number);
    make_dir(ad);
    write_text(ad / (out.mode == "python" ? "reply.md" : "reply.txt"), a.reply);
    write_text(ad / "feedback.txt", [&] {
      std::string s;
      for (const auto& l : a.eval.feedback(64)) s += l + "\n";
      return s;
    }());
  }
  if (out.best < 0) return wrote;
  const auto& a = out.attempts[static_cast<size_t>(out.best)];
  if (out.mode == "ast" && a.eval.reached >= generate::Stage::json) {  // JSON, at least: else only the reply
    json doc = json::parse(a.eval.json_text, nullptr, false);
    if (!doc.is_discarded()) {
      write_text(dir / "kernel.json", doc.dump(1) + "\n");
      wrote.emplace_back("kernel.json");
    }
  }
  if (!a.eval.ttir.empty()) {
    write_text(dir / "kernel.ttir", a.eval.ttir);
    wrote.emplace_back("kernel.ttir");
  }
  if (!a.eval.python.empty()) {
    write_text(dir / "kernel.py", a.eval.python);
    wrote.emplace_back("kernel.py");
  }
  return wrote;
}

}  // namespace

CLI::App* add_gen_run(CLI::App& gen, GenRunOptions& o) {
  auto common = [&](CLI::App& c) {
    c.add_option("--attempts", o.attempts, "attempts per kernel: the first and the repairs")
        ->check(CLI::Range(1, 20))
        ->capture_default_str();
    c.add_option("--decoding", o.decoding,
                 "how the model is held to the format: auto, json-schema, llama-grammar, json-object, none")
        ->capture_default_str();
    c.add_option("--max-tokens", o.max_tokens, "the longest reply, in tokens")
        ->check(CLI::Range(64, 1 << 20))
        ->capture_default_str();
    c.add_option("--temperature", o.temperature, "sampling temperature (default: the server's)")
        ->check(CLI::Range(0.0, 2.0));
    c.add_option("--max-ops", o.max_ops, "ops the request's schema allows in the kernel's list")
        ->check(CLI::Range(4, 256))
        ->capture_default_str();
    c.add_option("--seed", o.seed, "seed of the cases' inputs")->capture_default_str();
    c.add_option(
         "--context", o.context,
         "the model's context in tokens: repairs leave out the previous reply where it would not leave "
         "--max-tokens for the answer (default: unknown)")
        ->check(CLI::Range(int64_t{256}, int64_t{1} << 24));
    c.add_flag("--no-triton", o.no_triton, "skip the stage that compiles the TTIR with Triton");
    c.add_option("--max-steps", o.max_steps,
                 "ops one program of a candidate may run before its launch fails (a loop that never ends)")
        ->check(CLI::Range(int64_t{1000}, int64_t{1} << 40))
        ->capture_default_str();
    c.add_option("--sizes", o.sizes,
                 "sizes to check instead of the task's: NAME=V,NAME=V or a JSON object, each");
    add_llm_settings(c, o.llm, false, false);
  };
  gen.add_option("description", o.description,
                 "what the kernel computes (replaces the description of the task file)");
  gen.add_option("--reference", o.reference,
                 "the task file: signature, sizes, inputs, PyTorch reference, grid "
                 "(docs/gen-tasks.md)");
  gen.add_option("--task", o.task, "a task of the suite shipped with tilescope (tilescope gen eval --list)");
  gen.add_option("-o,--out", o.out, "where the kernel and the report go (default: ./tilescope-gen/NAME)");
  gen.add_flag("--dry-run", o.dry_run, "print the first request (messages and schema) and ask nothing");
  gen.add_flag("--json", o.json, "print the report as JSON on stdout");
  common(gen);
  auto* ev = gen.add_subcommand("eval", "Run the task suite: a model's kernels per stage, pass@1 and pass@k");
  ev->add_option("--suite", o.suite, "the folder of task files (default: the suite shipped with tilescope)");
  ev->add_option("--tasks", o.tasks, "only these tasks (names)")->delimiter(',');
  ev->add_option("-k,--samples", o.samples, "independent generations per task (pass@k)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  ev->add_flag("--baseline", o.baseline,
               "also ask the model for Triton Python (no schema), judged the same way");
  auto* fixtures = ev->add_flag("--fixtures", o.fixtures,
                                "evaluate the suite's own ASTs (NAME.json beside each task), no model");
  auto* list =
      ev->add_flag("--list", o.list, "list the suite's tasks (name and description) and ask nothing");
  ev->add_option("-o,--out", o.out, "where attempts and eval.json go (default: ./tilescope-gen/eval)");
  auto* markdown =
      ev->add_option("--markdown", o.markdown, "write the summary table (Markdown) to this file");
  ev->add_flag("--json", o.json, "print the summary as JSON on stdout");
  common(*ev);
  // Without a model, the model's options mean nothing: an error, not silence.
  for (const char* name :
       {"--baseline", "--samples", "--attempts", "--decoding", "--max-tokens", "--temperature", "--max-ops",
        "--context", "--base-url", "--model", "--timeout", "--debug-log"}) {
    fixtures->excludes(ev->get_option(name));
    list->excludes(ev->get_option(name));
  }
  fixtures->excludes(markdown);
  list->excludes(fixtures);
  return ev;
}

namespace {

// The sizes to check: --sizes, else the task's; each run through inputs() and reference() now (the worker's
// "check"), so that a task's mistake is said before a model is asked, and named as --sizes' when it is
// theirs.
void choose_sizes(generate::Task& task, const std::vector<std::string>& given, int seed,
                  generate::Worker& worker) {
  if (!given.empty()) {
    task.sizes = json::array();
    for (const auto& s : given) task.sizes.push_back(parse_size(s));
  }
  try {
    worker.call({{"op", "check"}, {"path", task.path}, {"sizes", task.sizes}, {"seed", seed}});
  } catch (const Error& e) {
    if (given.empty()) throw;
    throw Error(fmt::format("--sizes: {}", e.what()));
  }
}

// A task name of the suite: an identifier (not a path).
void check_task_name(const std::string& name) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) throw Error(fmt::format("--task {}: a task's name (tilescope gen eval --list), not a path", name));
}

}  // namespace

int gen_run_command(const GenRunOptions& o) {
  if (o.reference.empty() == o.task.empty())
    throw Error("gen: give a task file with --reference FILE, or a task of the suite with --task NAME");
  if (!o.task.empty()) check_task_name(o.task);
  const fs::path task_file = o.task.empty() ? fs::path(o.reference) : suite_dir("") / (o.task + ".py");
  if (!o.task.empty() && !fs::exists(task_file))
    throw Error(fmt::format("gen: no task '{}' in {} (tilescope gen eval --list lists them)", o.task,
                            suite_dir("").string()));
  std::optional<CancelOnSigint> on_sigint;
  on_sigint.emplace();
  const llm::Prompts prompts(prompts_dir(), {"gen_system", "gen_task", "gen_repair"});
  const fs::path out_dir = o.out.empty() ? fs::path("tilescope-gen") / task_file.stem() : fs::path(o.out);
  // A dry run writes nothing: its worker's messages go to stderr.
  if (!o.dry_run) make_dir(out_dir);
  generate::Worker worker(python_exe(), o.dry_run ? "" : (out_dir / "worker.log").string());
  generate::Task task = worker.load(fs::absolute(task_file).string(), o.description);
  choose_sizes(task, o.sizes, o.seed, worker);
  const llm::Config config = llm_config(o.llm);
  llm::Client client(config.endpoint);
  generate::Generator g(client, prompts, worker, gen_options(o));
  if (o.dry_run) {
    json msgs = json::array();
    for (const auto& m : g.first_messages(task)) msgs.push_back({{"role", m.role}, {"content", m.content}});
    std::cout << json({{"messages", msgs}, {"schema", json::parse(g.request_schema(task).dump())}}).dump(2)
              << "\n";
    return 0;
  }
  TerminalProgress progress;
  std::string model;
  try {
    model = client.model(&interrupted());
  } catch (const llm::LlmError& e) {
    if (e.kind == llm::LlmError::Kind::cancelled) return 130;
    throw Error(fmt::format("gen: the model server at {}: {} ({})", config.endpoint.base_url, e.what(),
                            llm::kind_name(e.kind)));
  }
  std::cerr << fmt::format("tilescope gen: {} ({}), model {}, up to {}\n", task.name, task.path, model,
                           plural(o.attempts, "attempt", "attempts"));
  generate::Outcome out;
  try {
    out = g.generate(task, (out_dir / "attempts").string(), &progress);
  } catch (const llm::LlmError& e) {
    if (e.kind != llm::LlmError::Kind::cancelled) throw;
  }
  if (interrupted()) {
    std::cerr << "\ntilescope: interrupted (SIGINT)\n";
    return 130;
  }
  const auto wrote = write_answer(out_dir, out);
  json report = out.to_json();
  report["model"] = model;
  report["task_file"] = task.path;
  report["sizes"] = task.sizes;
  report["options"] = {{"attempts", o.attempts},  {"decoding", o.decoding}, {"max_tokens", o.max_tokens},
                       {"context", o.context},    {"max_ops", o.max_ops},   {"seed", o.seed},
                       {"max_steps", o.max_steps}};
  report["files"] = wrote;
  report["out"] = out_dir.string();
  write_text(out_dir / "report.json", report.dump(1) + "\n");
  if (o.json) std::cout << report.dump(2) << "\n";
  std::string files;
  for (const auto& f : wrote) files += (files.empty() ? "" : ", ") + f;
  std::cerr << fmt::format("tilescope gen: {}; wrote {}{}report.json in {}\n",
                           out.passed() ? "a correct, sanitizer-clean kernel" : "no correct kernel", files,
                           files.empty() ? "" : ", ", out_dir.string());
  bool all_failed_to_answer = !out.attempts.empty();
  for (const auto& a : out.attempts) all_failed_to_answer = all_failed_to_answer && !a.llm_error.empty();
  if (all_failed_to_answer) return 2;
  return out.passed() ? 0 : 1;
}

namespace {

// Per mode: the counts of the summary table.
struct Tally {
  int tasks = 0, samples = 0, passed_samples = 0, attempts = 0;
  int reached[9] = {};  // attempts whose reached >= each stage
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double model_seconds = 0, eval_seconds = 0;
  double pass1 = 0, passk = 0;  // sums over tasks
  int truncated = 0;
  void add(const generate::Outcome& o) {
    ++samples;
    passed_samples += o.passed();
    for (const auto& a : o.attempts) {
      ++attempts;
      for (int s = 0; s <= static_cast<int>(a.eval.reached); ++s) ++reached[s];
      prompt_tokens += a.prompt_tokens;
      completion_tokens += a.completion_tokens;
      model_seconds += a.model_seconds;
      eval_seconds += a.eval.seconds;
      truncated += a.finish_reason == "length";
    }
  }
  json to_json(int k) const {
    auto stage = [&](generate::Stage s) { return reached[static_cast<int>(s)]; };
    return {{"tasks", tasks},
            {"samples", samples},
            {"attempts", attempts},
            {"truncated", truncated},
            {"json", stage(generate::Stage::json)},
            {"schema_valid", stage(generate::Stage::schema)},
            {"valid", stage(generate::Stage::semantics)},
            {"interface", stage(generate::Stage::interface)},
            {"verified", stage(generate::Stage::verified)},
            {"compiled", stage(generate::Stage::compiled)},
            {"correct", stage(generate::Stage::correct)},
            {"clean", stage(generate::Stage::clean)},
            {"passed_samples", passed_samples},
            {"pass@1", tasks ? pass1 / tasks : 0},
            {fmt::format("pass@{}", k), tasks ? passk / tasks : 0},
            {"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"model_seconds", model_seconds},
            {"eval_seconds", eval_seconds}};
  }
};

std::string markdown_table(const json& summary, int k) {
  // pass@k is a column of its own only where k > 1 (pass@1 otherwise).
  const std::string passk = k > 1 ? fmt::format(" pass@{} |", k) : "";
  std::string s =
      "| mode | tasks | samples | attempts | cut at max_tokens | JSON | schema-valid | valid | interface | "
      "verified | "
      "compiled | correct | clean | pass@1 |" +
      passk + " completion tokens | model s | eval s |\n";
  s += std::string("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|") + (k > 1 ? "---|" : "") +
       "---|---|---|\n";
  for (const auto& item : summary.items()) {
    const std::string& mode = item.key();
    const json& t = item.value();
    auto stage = [&](const char* key) -> std::string {
      if (mode == "python" && (std::string(key) == "json" || std::string(key) == "schema_valid" ||
                               std::string(key) == "valid" || std::string(key) == "verified"))
        return "n/a";
      return t[key].dump();
    };
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3f} |", mode,
                     t["tasks"].dump(), t["samples"].dump(), t["attempts"].dump(), t["truncated"].dump(),
                     stage("json"), stage("schema_valid"), stage("valid"), stage("interface"),
                     stage("verified"), stage("compiled"), stage("correct"), stage("clean"),
                     t["pass@1"].get<double>());
    if (k > 1) s += fmt::format(" {:.3f} |", t[fmt::format("pass@{}", k)].get<double>());
    s += fmt::format(" {} | {:.0f} | {:.0f} |\n", t["completion_tokens"].dump(),
                     t["model_seconds"].get<double>(), t["eval_seconds"].get<double>());
  }
  return s;
}

}  // namespace

int gen_eval_command(const GenRunOptions& o) {
  const fs::path dir = suite_dir(o.suite);
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".py" && e.path().filename().string().front() != '_')
      files.push_back(e.path());
  if (ec || files.empty())
    throw Error(fmt::format("gen eval: no task files (NAME.py; _*.py are not tasks) in {}", dir.string()));
  std::sort(files.begin(), files.end());
  if (!o.tasks.empty()) {
    std::vector<fs::path> chosen;
    for (const auto& name : o.tasks) {
      const fs::path p = dir / (name + ".py");
      if (std::find(files.begin(), files.end(), p) == files.end())
        throw Error(
            fmt::format("gen eval: no task '{}' in {} (tilescope gen eval --list)", name, dir.string()));
      chosen.push_back(p);
    }
    files = chosen;
  }
  std::optional<CancelOnSigint> on_sigint;
  on_sigint.emplace();
  auto interrupted_exit = [] {
    std::cerr << "\ntilescope: interrupted (SIGINT)\n";
    return 130;
  };
  const fs::path out_dir = o.out.empty() ? fs::path("tilescope-gen") / "eval" : fs::path(o.out);
  if (!o.list) make_dir(out_dir);
  generate::Worker worker(python_exe(), o.list ? "" : (out_dir / "worker.log").string());
  const double t0 = now();
  // Every task file, loaded and its sizes checked; one that cannot be used is said, and the others still run.
  std::vector<generate::Task> tasks;
  std::vector<std::pair<std::string, std::string>> broken;  // file, why
  for (const auto& f : files) {
    try {
      generate::Task t = worker.load(fs::absolute(f).string());
      choose_sizes(t, o.sizes, o.seed, worker);
      tasks.push_back(std::move(t));
    } catch (const Error& e) {
      if (interrupted()) return interrupted_exit();
      broken.emplace_back(f.string(), e.what());
      std::cerr << "tilescope: error: " << e.what() << "\n";
    }
  }
  if (o.list) {
    for (const auto& t : tasks) {
      std::string d = t.description;
      if (d.size() > 100) d = d.substr(0, 97) + "...";
      std::cout << fmt::format("{:<22} {}\n", t.name, d);
    }
    return broken.empty() ? 0 : 2;
  }
  json results = json::array();
  json broken_j = json::array();
  for (const auto& [f, why] : broken) broken_j.push_back({{"file", f}, {"error", why}});
  if (o.fixtures) {
    // The suite's own ASTs through the same evaluation, no model: every one must pass.
    int failed = 0;
    for (const auto& task : tasks) {
      fs::path ast = task.path;
      ast.replace_extension(".json");
      std::ifstream in(ast, std::ios::binary);
      if (!in) {
        broken_j.push_back({{"file", task.path}, {"error", "no AST beside it (" + ast.string() + ")"}});
        std::cerr << fmt::format("tilescope: error: {} has no AST beside it ({})\n", task.path, ast.string());
        continue;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      generate::EvalOptions eo;
      eo.work_dir = (out_dir / task.name).string();
      eo.seed = o.seed;
      eo.triton = !o.no_triton;
      eo.max_steps = o.max_steps;
      eo.cancel = &interrupted();
      generate::Evaluation ev;
      try {
        ev = generate::evaluate(task, ss.str(), worker, eo);
      } catch (const Error& e) {
        if (interrupted()) return interrupted_exit();
        broken_j.push_back({{"file", task.path}, {"error", e.what()}});
        std::cerr << "tilescope: error: " << e.what() << "\n";
        continue;
      }
      if (interrupted()) return interrupted_exit();
      const bool ok = ev.passed() && ev.round_trip.value_or(false);
      failed += !ok;
      std::cerr << fmt::format(
          "{:<24} {} ({}{}){}\n", task.name, ok ? "passed" : "FAILED",
          plural(static_cast<int64_t>(ev.cases.size()), "size", "sizes"),
          ev.round_trip ? (*ev.round_trip ? ", round trip identical" : ", round trip differs") : "",
          ok ? "" : ": stopped after stage '" + std::string(generate::stage_name(ev.reached)) + "'");
      if (!ok)
        for (const auto& l : ev.feedback(6)) std::cerr << "    " << l.substr(0, 300) << "\n";
      if (!ok && !ev.round_trip_note.empty()) std::cerr << "    " << ev.round_trip_note << "\n";
      json r = ev.to_json();
      r["task"] = task.name;
      results.push_back(r);
    }
    const int ran = static_cast<int>(results.size());
    json summary = {{"fixtures", ran},
                    {"failed", failed},
                    {"errors", broken_j},
                    {"seconds", now() - t0},
                    {"results", results}};
    write_text(out_dir / "eval.json", summary.dump(1) + "\n");
    if (o.json) std::cout << summary.dump(2) << "\n";
    std::cerr << fmt::format("{} of {} fixtures pass every stage (in {:.0f} s){}\n", ran - failed, ran,
                             now() - t0,
                             broken_j.empty() ? "" : fmt::format("; {} could not be used", broken_j.size()));
    return !broken_j.empty() ? 2 : failed ? 1 : 0;
  }
  const llm::Prompts prompts(
      prompts_dir(), {"gen_system", "gen_task", "gen_repair", "gen_python_system", "gen_python_task"});
  const llm::Config config = llm_config(o.llm);
  llm::Client client(config.endpoint);
  std::string model;
  try {
    model = client.model(&interrupted());
  } catch (const llm::LlmError& e) {
    if (e.kind == llm::LlmError::Kind::cancelled) return interrupted_exit();
    throw Error(fmt::format("gen eval: the model server at {}: {} ({})", config.endpoint.base_url, e.what(),
                            llm::kind_name(e.kind)));
  }
  std::vector<std::string> modes = {"ast"};
  if (o.baseline) modes.emplace_back("python");
  std::map<std::string, Tally> tally;
  std::vector<std::string> notes;
  std::map<std::string, std::unique_ptr<generate::Generator>> gens;
  for (const auto& mode : modes)
    gens[mode] = std::make_unique<generate::Generator>(client, prompts, worker, gen_options(o));
  std::cerr << fmt::format(
      "tilescope gen eval: {} x {}, model {}, up to {} each{}\n",
      plural(static_cast<int64_t>(tasks.size()), "task", "tasks"), plural(o.samples, "sample", "samples"),
      model, plural(o.attempts, "attempt", "attempts"), o.baseline ? ", with the Python baseline" : "");
  // eval.json as it stands: rewritten after every task ("complete": false until the last), so that a run
  // that is stopped (Ctrl-C, a machine taken away) keeps what it measured.
  auto record = [&](bool complete) {
    json summary = json::object();
    for (const auto& mode : modes) summary[mode] = tally[mode].to_json(o.samples);
    const std::string table = markdown_table(summary, o.samples);
    json doc = {{"model", model},         {"suite", dir.string()},  {"samples", o.samples},
                {"attempts", o.attempts}, {"decoding", o.decoding}, {"max_tokens", o.max_tokens},
                {"context", o.context},   {"max_ops", o.max_ops},   {"wall_seconds", now() - t0},
                {"complete", complete},   {"summary", summary},     {"table", table},
                {"notes", notes},         {"errors", broken_j},     {"results", results}};
    write_text(out_dir / "eval.json", doc.dump(1) + "\n");
    return std::pair{doc, table};
  };
  auto stopped = [&] {
    record(false);
    return interrupted_exit();
  };
  // Mode by mode: requests of one mode share their system prompt, which a server keeps in its prompt cache
  // from one task to the next (llama.cpp: minutes a task on 2 cores otherwise).
  for (const auto& mode : modes) {
    for (const auto& task : tasks) {
      int passed = 0;
      for (int s = 0; s < o.samples; ++s) {
        TerminalProgress progress;
        progress.prefix = fmt::format("{} [{} {}/{}] ", task.name, mode, s + 1, o.samples);
        const fs::path sample_dir = out_dir / mode / task.name / fmt::format("sample{}", s + 1);
        generate::Outcome out;
        try {
          out = mode == "ast"
                    ? gens[mode]->generate(task, (sample_dir / "attempts").string(), &progress)
                    : gens[mode]->generate_python(task, (sample_dir / "attempts").string(), &progress);
        } catch (const llm::LlmError& e) {
          if (e.kind == llm::LlmError::Kind::cancelled) return stopped();
          throw;
        }
        if (interrupted()) return stopped();
        passed += out.passed();
        tally[mode].add(out);
        for (const auto& n : out.notes) notes.push_back(n);
        json r = out.to_json();
        r["sample"] = s + 1;
        results.push_back(r);
        write_answer(sample_dir, out);
      }
      tally[mode].tasks += 1;
      tally[mode].pass1 += generate::pass_at_k(o.samples, passed, 1);
      tally[mode].passk += generate::pass_at_k(o.samples, passed, o.samples);
      record(false);
    }
  }
  const auto [doc, table] = record(true);
  if (!o.markdown.empty()) write_text(o.markdown, table);
  if (o.json) std::cout << doc.dump(2) << "\n";
  std::cerr << "\n" << table;
  return broken_j.empty() ? 0 : 2;
}

}  // namespace tilescope::cli
