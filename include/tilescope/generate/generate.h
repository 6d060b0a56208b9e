// tilescope/generate: the LLM kernel generator (issue 15; README "The kernel generator").
//
// A model is asked for a kernel AST (gen/ast.h, docs/gen-format.md) under schema-constrained decoding; the
// reply is validated, checked against the task's interface, lowered to TTIR, read and verified by
// tilescope, compiled by Triton to PTX for sm_90, and run on the engine under the sanitizer, the race
// detector and uninitialized-memory tracking against the task's PyTorch reference at every size. Each
// failure goes back to the model as located feedback, up to a number of attempts. A task is a Python file
// (docs/gen-tasks.md) that a Worker process runs: it makes the cases (inputs, reference outputs, grid),
// compiles with Triton and runs Python kernels (the emitted Triton Python, the unconstrained baseline).
//
// Stages of a candidate, in order (a candidate "passes" when it reaches Stage::clean):
//   json       the reply is a JSON document (a reply cut at max_tokens is `truncated`, retried)
//   schema     valid under the format's schema (gen::Problem::Kind::schema)
//   semantics  names, types, shapes, provenance, regions (gen::Problem::Kind::semantics)
//   interface  the task's kernel: its name and arguments (gen::check_interface)
//   verified   the lowered TTIR is read and verified by tilescope's reader
//   compiled   Triton's MLIR parser accepts it and triton.compile takes it to PTX for sm_90
//   correct    every output of every case within the task's tolerance
//   clean      and no finding of the sanitizer, the race detector or uninitialized memory
// A Python candidate (the baseline) has no json / schema / semantics / verified stages: its first stage
// is `interface` (the reply holds Python that imports and defines the task's @triton.jit kernel).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tilescope/analysis/finding.h"
#include "tilescope/gen/ast.h"
#include "tilescope/llm/client.h"
#include "tilescope/llm/prompts.h"

namespace tilescope::generate {

/// What a kernel does with a pointer argument (the signature's role: docs/gen-tasks.md).
enum class Role : uint8_t { in, out, inout };

/// A task as its file defines it (read by the Worker).
// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's destructor may allocate
struct Task {
  std::string name;         // the file's stem, which is the kernel's name
  std::string path;         // the task file
  std::string description;  // what to compute, for the model
  std::string grid_source;  // the source text of its grid function, for the model
  int inputs_line = 0;      // the line of its inputs() function (where out buffers are made)
  gen::Interface iface;     // name and arguments in order (a constexpr's value is the kernel's choice)
  std::vector<Role> roles;  // per argument of iface (scalars and constexprs: Role::in)
  nlohmann::json sizes;     // the sizes to check, an array of objects ({"m": 5, "n": 100})
  /// The signature as the task file writes it: "x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK:
  /// constexpr".
  std::vector<std::string> signature() const;
};

/// The Python half of the generator: one `python -m tilescope._gen_worker` process (started at the first
/// call) that imports task files and makes cases (python/tilescope/_gen_worker.py documents the protocol:
/// one JSON request per line on its stdin, one JSON response per line on its stdout). Its stderr goes to
/// `log_path` ("" = inherited). Not thread-safe.
class Worker {
 public:
  /// `python`: the interpreter (TILESCOPE_PYTHON, else python3 on PATH).
  Worker(std::string python, std::string log_path);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  /// One request; the response object when it has "ok": true. Throws tilescope::Error with the worker's
  /// message (an error of a task file: its path and line) otherwise, and when the process cannot be
  /// started or dies (then the next call starts a new one).
  nlohmann::json call(const nlohmann::json& request);
  /// Load the task file `path`; `description` (if not empty) replaces the file's.
  Task load(const std::string& path, const std::string& description = "");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

enum class Stage : uint8_t { none, json, schema, semantics, interface, verified, compiled, correct, clean };
/// "json", "schema", ... ("none": not even JSON).
const char* stage_name(Stage s);

/// One output buffer of one case against the reference (|got - expected| <= atol + rtol * |expected|;
/// NaN passes only where NaN is expected; integers exactly).
struct OutputCheck {
  std::string name;
  int64_t compared = 0;  // elements compared (the reference's mask)
  int64_t bad = 0;       // of which out of tolerance
  /// The largest |got - expected| among the compared (inf: a NaN where a number was expected), its index,
  /// and both values there.
  double max_error = 0;
  std::vector<int64_t> at;
  double got = 0, expected = 0;
  double rtol = 0, atol = 0;
  /// An `out` buffer's compared elements the kernel never wrote (still the bytes it started with), and the
  /// first one's index.
  int64_t unwritten = 0;
  std::vector<int64_t> first_unwritten;
  /// Elements outside the reference's mask that the kernel changed (it must leave them as they were: the
  /// padding between rows, say), and the first one's index.
  int64_t touched = 0;
  std::vector<int64_t> first_touched;
  bool ok() const { return bad == 0 && touched == 0; }
};

/// One size of the task, run.
// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's destructor may allocate
struct CaseResult {
  nlohmann::json size;
  std::array<int64_t, 3> grid{1, 1, 1};
  std::string error;  // the launch failed (a located tilescope error, or the Python kernel's exception)
  std::vector<OutputCheck> outputs;
  /// `in` buffers the kernel wrote into: name, elements changed and the first one's index.
  struct ChangedInput {
    std::string name;
    int64_t elements = 0;
    std::vector<int64_t> first;
  };
  std::vector<ChangedInput> changed_inputs;
  std::vector<analysis::Finding> findings;
  double seconds = 0;
  bool ok() const;
};

/// What happened to one candidate (an AST reply, or Python for the baseline).
struct Evaluation {
  Stage reached = Stage::none;
  std::vector<gen::Problem> problems;  // json, schema, semantics and interface problems
  std::string error;                   // the stage after `reached` failed with this message
  std::string json_text;               // an AST candidate's document (the reply, or the JSON taken from it)
  std::string ttir;                    // the lowered TTIR (AST candidates that reached `interface`)
  std::vector<std::string> line_pointers;  // per TTIR line, the JSON pointer of its op (gen::lower)
  std::string python;                      // the Triton Python emitted from the AST, or the baseline's code
  /// Per buffer argument, the JSON pointers of the AST's store and atomic ops whose pointer comes from it
  /// (gen::writers), to locate writes into an input.
  std::map<std::string, std::vector<std::string>> writers;
  std::vector<CaseResult> cases;
  /// The emitted Triton Python, run under tilescope's front door on the first case, gave the same outputs
  /// bit for bit as the engine's run of the lowered TTIR (unset: not checked).
  std::optional<bool> round_trip;
  std::string round_trip_note;
  double seconds = 0;
  bool passed() const { return reached == Stage::clean; }
  /// Located feedback for the model: problems at their JSON pointers, errors at their TTIR line and op,
  /// findings with their lanes and offsets, wrong values with the largest error and where. At most
  /// `max_lines` lines.
  std::vector<std::string> feedback(size_t max_lines = 12) const;
  nlohmann::json to_json() const;
};

struct EvalOptions {
  std::string work_dir;    // where case files go (made if missing; Generator: set per attempt)
  int seed = 0;            // case i uses torch.Generator().manual_seed(seed + i)
  bool triton = true;      // the `compiled` stage (off: it is passed without asking Triton)
  bool round_trip = true;  // run the emitted Python (AST candidates that pass)
  int threads = 0;         // engine threads per launch (0: all cores)
  /// Ops one program may run before its launch fails (a loop that never ends, or runs 2^31 times): the
  /// suite's kernels run at most thousands.
  int64_t max_steps = 1'000'000;
  const std::atomic<bool>* cancel = nullptr;
};

/// Evaluate an AST reply (JSON text) for `task`.
Evaluation evaluate(const Task& task, std::string_view text, Worker& worker, const EvalOptions& options);
/// Evaluate Triton Python source (the baseline): the module must define `@triton.jit def <task name>` whose
/// constexpr parameters have default values (the grid's meta).
Evaluation evaluate_python(const Task& task, std::string_view source, Worker& worker,
                           const EvalOptions& options);

/// How the model is held to the format.
enum class Decoding : uint8_t {
  automatic,      // json_schema, falling back to llama_grammar, then json_object, then none, as the server
                  // refuses
  json_schema,    // response_format {"type": "json_schema"}: OpenAI, vLLM (XGrammar), llama.cpp, Ollama
  llama_grammar,  // llama.cpp's own request field "json_schema", which its server turns into a GBNF grammar
  json_object,    // response_format {"type": "json_object"}: any JSON; the schema is checked afterwards
  none,           // free text; the JSON is taken from the reply and checked afterwards
};
const char* decoding_name(Decoding d);  // "json-schema", "llama-grammar", "json-object", "none", "auto"
std::optional<Decoding> decoding_from_name(std::string_view name);

struct GenOptions {
  int attempts = 3;  // per generation: the first try and the repairs
  Decoding decoding = Decoding::automatic;
  int max_tokens = 4096;  // per reply
  /// The model's context in tokens (0: unknown). A repair request carries the previous reply only where the
  /// first request's prompt, that reply, the feedback and max_tokens fit in it (else the server would cut
  /// the answer at the context's end); unknown, it is left out only when the server refuses the request.
  int64_t context_tokens = 0;
  std::optional<double> temperature;
  /// The request schema's bounds (gen::schema(iface, bounds)): a reply cannot be longer than they allow.
  /// By default 96 ops, and 2 regions of 48, with names of 24 characters: every task's own kernel fits (the
  /// largest, attention_small, has 85 ops). A small model that repeats itself until the bound needs less:
  /// bench/GEN.md records the 135M model with 24.
  gen::Bounds bounds{96, 2, 48, 24};
  EvalOptions eval;
};

/// One attempt: the request, the reply and its evaluation.
struct Attempt {
  int number = 1;
  std::string decoding;       // as asked: "json-schema", ... ("python" for the baseline)
  std::string reply;          // the model's text
  std::string finish_reason;  // "stop", "length" (cut at max_tokens), ...
  std::string llm_error;      // the request failed: "kind: message" (then reply is empty)
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double model_seconds = 0;
  Evaluation eval;
  nlohmann::json to_json() const;
};

/// What a generation did: every attempt, and which one is the answer.
struct Outcome {
  std::string task;
  std::string mode;  // "ast" or "python" (the baseline)
  std::vector<Attempt> attempts;
  /// The passing attempt, else the one that got furthest (index into attempts; -1 when none has a reply).
  int best = -1;
  std::vector<std::string> notes;  // e.g. the server refused json_schema, fell back to json_object
  bool passed() const { return best >= 0 && attempts[static_cast<size_t>(best)].eval.passed(); }
  nlohmann::json to_json() const;
};

/// What a generation tells people while it runs (the CLI prints it; every call is optional).
struct Progress {
  virtual ~Progress() = default;
  virtual void attempt_begin(int number, int of, const std::string& decoding) {}
  virtual void streamed(int64_t tokens, double seconds) {}  // so far in this reply
  virtual void note(const std::string& line) {}
  virtual void attempt_end(const Attempt& attempt) {}
};

/// Asks one model for kernels. Remembers across tasks what the server refused (the decoding it fell back to).
class Generator {
 public:
  /// `prompts`: the generator's prompts (prompts/gen_*.md).
  Generator(llm::Client& client, const llm::Prompts& prompts, Worker& worker, GenOptions options);
  /// A kernel AST for `task`, repaired from located feedback up to options.attempts times. Each attempt's
  /// files (the lowered TTIR, the cases) go into `work_dir`/attemptN.
  Outcome generate(const Task& task, const std::string& work_dir, Progress* progress = nullptr);
  /// The baseline: the same model asked for Triton Python (free text, no schema), judged the same way.
  Outcome generate_python(const Task& task, const std::string& work_dir, Progress* progress = nullptr);
  /// The messages of the first request for `task` (python: the baseline's), for `--dry-run` and tests.
  std::vector<llm::Message> first_messages(const Task& task, bool python = false) const;
  /// The schema a request for `task` is held to.
  nlohmann::ordered_json request_schema(const Task& task) const;
  /// The decoding in use now (after any fallback).
  Decoding decoding() const { return decoding_; }
  const GenOptions& options() const { return options_; }

 private:
  Outcome run(const Task& task, bool python, const std::string& work_dir, Progress* progress);
  llm::Client& client_;
  const llm::Prompts& prompts_;
  Worker& worker_;
  GenOptions options_;
  Decoding decoding_;
};

/// pass@k from n samples of which c passed (the unbiased estimator 1 - C(n-c, k) / C(n, k)); k <= n.
double pass_at_k(int n, int c, int k);

}  // namespace tilescope::generate
