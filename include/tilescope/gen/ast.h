// tilescope/gen: the kernel AST of the generator, its JSON Schema, its validation and its lowering to TTIR.
//
// A kernel AST is a JSON document (format version kVersion, docs/gen-format.md) that describes one Triton
// kernel at the level of TTIR: its arguments (pointers with an element dtype, scalars, constexpr
// integers), and a flat list of ops with SSA result names. `for` and `if` bodies are not nested objects:
// they are named entries of the top-level `regions` list that the op refers to by name (nesting depth at
// most kMaxDepth). Every op kind, with its fields, their types and its operand arity, is declared once in
// one table (src/gen/table.cpp); the JSON Schema (draft 2020-12, no recursive $ref, every array and
// string bounded: a grammar engine can compile it and a small model cannot loop forever inside it), the
// structural validation and the op reference are all generated from that table.
//
// parse() checks a document in two passes: structure (what the schema says, from the same table), then
// semantics (names defined once and before use, operand types and shapes as TTIR requires them:
// explicit splat and broadcast, pointers derived from pointer arguments, loop-carried types, dot shapes,
// power-of-two block sizes). Every problem is located by a JSON pointer (RFC 6901) into the document
// and says what was expected and what was found. lower() turns a valid AST into TTIR text in the form
// Triton prints (`tt.func public @name(...)`), which ir::read / ir::verify accept and the engine runs.
#pragma once

#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilescope::gen {

/// The format version this build reads and writes (the document's "version" field).
inline constexpr int kVersion = 1;

// Bounds of a document (the schema states each one as maxItems / maxLength / maximum).
inline constexpr int kMaxOps = 256;            // ops in one list (the kernel's, or one region's)
inline constexpr int kMaxRegions = 32;         // entries of "regions"
inline constexpr int kMaxArgs = 24;            // kernel arguments
inline constexpr int kMaxNameLength = 40;      // an SSA name, argument or region name
inline constexpr int kMaxKernelName = 64;      // the kernel's name
inline constexpr int kMaxDims = 4;             // rank of a tensor
inline constexpr int kMaxCarried = 8;          // values a for loop carries / an if yields
inline constexpr int kMaxDepth = 4;            // for / if bodies nested inside each other
inline constexpr int64_t kMaxNumel = 1 << 20;  // elements of one tensor (Triton's TRITON_MAX_TENSOR_NUMEL)
inline constexpr int kMaxProblems = 32;        // problems one parse() reports before it stops

/// The element types of the format (TTIR is signless: integers are signed in every op the AST has).
enum class Dtype : uint8_t { i1, i8, i16, i32, i64, f16, bf16, f32, f64 };
inline constexpr int kNumDtypes = 9;
/// "i1", "i32", "f16", ... (the JSON spelling, which is also the MLIR one).
const char* dtype_name(Dtype d);
bool is_float(Dtype d);
/// The dtype spelled `name` ("f32"), or nothing.
std::optional<Dtype> dtype_from_name(std::string_view name);
int dtype_bits(Dtype d);

// The op kinds: id, JSON name. The table (src/gen/table.cpp) has one row per kind, in this order.
// clang-format off
#define TILESCOPE_GEN_OPS(X) \
  X(program_id, "program_id") X(num_programs, "num_programs") X(constant, "constant") \
  X(make_range, "make_range") \
  X(splat, "splat") X(broadcast, "broadcast") X(expand_dims, "expand_dims") X(reshape, "reshape") \
  X(trans, "trans") \
  X(add, "add") X(sub, "sub") X(mul, "mul") X(div, "div") X(rem, "rem") X(min, "min") X(max, "max") \
  X(and_, "and") X(or_, "or") X(xor_, "xor") X(shl, "shl") X(shr, "shr") \
  X(neg, "neg") X(abs, "abs") X(exp, "exp") X(exp2, "exp2") X(log, "log") X(log2, "log2") \
  X(sqrt, "sqrt") X(rsqrt, "rsqrt") \
  X(sin, "sin") X(cos, "cos") X(floor, "floor") X(ceil, "ceil") X(erf, "erf") X(tanh, "tanh") X(fma, "fma") \
  X(eq, "eq") X(ne, "ne") X(lt, "lt") X(le, "le") X(gt, "gt") X(ge, "ge") X(where, "where") X(cast, "cast") \
  X(addptr, "addptr") X(load, "load") X(store, "store") X(atomic_rmw, "atomic_rmw") X(atomic_cas, "atomic_cas") \
  X(reduce, "reduce") X(scan, "scan") X(dot, "dot") X(gather, "gather") X(for_, "for") X(if_, "if")
// clang-format on

enum class OpKind : uint8_t {
#define TILESCOPE_GEN_ENUM(id, name) id,
  TILESCOPE_GEN_OPS(TILESCOPE_GEN_ENUM)
#undef TILESCOPE_GEN_ENUM
};
/// The JSON names, index = static_cast<int>(OpKind).
inline constexpr const char* kOpNames[] = {
#define TILESCOPE_GEN_NAME(id, name) name,
    TILESCOPE_GEN_OPS(TILESCOPE_GEN_NAME)
#undef TILESCOPE_GEN_NAME
};
inline constexpr int kNumOpKinds = static_cast<int>(std::size(kOpNames));
/// The JSON name of an op kind ("add", "for").
inline const char* op_name(OpKind k) { return kOpNames[static_cast<size_t>(k)]; }

/// The type of a value: a scalar (empty shape) or a tensor of `elem`, or pointers to `elem`.
struct Type {
  bool ptr = false;
  Dtype elem = Dtype::i32;
  std::vector<int64_t> shape;
  bool operator==(const Type&) const = default;
  bool is_tensor() const { return !shape.empty(); }
  /// "i32", "f32[128]", "f16[32, 64]", "*f32" (a pointer), "*f32[128]" (a tensor of pointers).
  std::string str() const;
};

struct Arg {
  enum class Kind : uint8_t { pointer, scalar, constexpr_ };
  std::string name;
  Kind kind = Kind::scalar;
  Dtype dtype = Dtype::i32;  // pointer: the pointee; scalar: the value's; constexpr: i32
  int64_t value = 0;         // constexpr: its value
};

/// A float or integer literal as the document wrote it ("inf", "-inf", "nan" are floats).
struct Literal {
  bool is_int = true;
  int64_t i = 0;
  double f = 0;
};

/// One op of a validated AST. Only the fields of its kind (the table's row) are meaningful.
struct Op {
  OpKind kind = OpKind::constant;
  std::string pointer;                // where it is in the document: "/ops/7", "/regions/1/ops/0"
  std::vector<std::string> results;   // "result" (one name), or "results" of for / if; may be empty
  std::vector<std::string> operands;  // value names, in the table's operand order
  std::vector<Type> result_types;     // filled by parse(): one per result

  int64_t axis = 0;             // program_id, num_programs (0..2); expand_dims, reduce, scan, gather
  Dtype dtype = Dtype::i32;     // constant, cast
  Literal value;                // constant
  std::vector<int64_t> shape;   // constant (empty: a scalar), splat, broadcast, reshape (dims resolved)
  int64_t start = 0, end = 0;   // make_range (resolved)
  std::vector<int64_t> order;   // trans
  std::string combine;          // reduce: sum prod max min argmax argmin; scan: sum prod max min
  bool reverse = false;         // scan
  std::string precision;        // dot: ieee (default), tf32, tf32x3
  std::string rmw;              // atomic_rmw: add max min and or xor xchg
  std::string sem = "acq_rel";  // atomics: relaxed acquire release acq_rel
  std::string scope = "gpu";    // atomics: gpu cta sys
  // What the document wrote for shape's dims and make_range's start and end: the name of the constexpr
  // argument each one used, "" where it wrote an integer (parse() fills them with the numbers). The TTIR has
  // only the numbers; the Triton Python writes the names, so that a launch with another value stays right.
  std::vector<std::string> shape_names;  // one per dim of shape
  std::string start_name, end_name;      // make_range
  // for: var = lower .. upper by step, carrying `carried` (initialised from `init`) through `body`.
  std::string var;
  std::vector<Literal> bound_literals;  // lower, upper, step when written as integers (is_int = false: named)
  std::vector<std::string> bounds;      // lower, upper, step when named ("" when a literal)
  std::vector<std::string> init, carried;
  int body = -1;  // for: index into Ast::regions
  // if: cond ? then : else
  std::string cond;
  int then_region = -1, else_region = -1;  // -1: no else
};

struct Region {
  std::string name;
  std::string pointer;  // "/regions/3"
  std::vector<Op> ops;
  std::vector<std::string> yields;
};

/// A kernel AST that passed parse(): every name resolves and every op's result_types is set.
struct Ast {
  std::string name;
  std::vector<Arg> args;
  std::vector<Op> ops;
  std::vector<Region> regions;
};

/// One problem of a document: which pass found it, where (a JSON pointer into it, "" for the whole
/// document), what, and the expected and found types or values when the problem is a mismatch.
struct Problem {
  /// json: the text is not JSON; schema: the document breaks a rule of schema() (so a grammar-constrained
  /// decoder cannot produce it); semantics: valid under the schema, wrong as a kernel.
  enum class Kind : uint8_t { json, schema, semantics };
  Kind kind = Kind::semantics;
  std::string pointer;
  std::string message;
  std::string expected, found;  // "" when not a mismatch
  /// "/ops/7/operands/1: <message> (expected f32[128], found f32)".
  std::string str() const;
};
/// "json", "schema", "semantics".
const char* problem_kind_name(Problem::Kind k);

struct Parsed {
  std::optional<Ast> ast;         // set exactly when problems is empty
  std::vector<Problem> problems;  // in document order within each pass; at most kMaxProblems
};

/// Validate a document (structure, then semantics) and build its AST.
Parsed parse(const nlohmann::json& doc);
/// The same from JSON text; text that is not JSON is one problem of kind json at pointer "" that gives the
/// line and column where it stops being valid ("the document ends early" when that is its end).
Parsed parse_text(std::string_view text);

/// The JSON Schema (draft 2020-12) of the format, generated from the op table. Its keys are in the order a
/// model should write them (a grammar engine keeps the schema's order): "op" first in an op.
nlohmann::ordered_json schema();

/// What a task asks of a kernel: its name and its arguments in order. A constexpr's Arg::value is not part
/// of it: the kernel chooses it (a block size).
struct Interface {
  std::string name;
  std::vector<Arg> args;
};

/// The largest constexpr value a request schema offers (constexprs of a task are block sizes: 1, 2, 4, ...).
inline constexpr int64_t kMaxConstexprChoice = int64_t{1} << 16;

/// Bounds of a request: the format's own by default; a generator asks for less so that a small model's
/// answer ends within its token budget (every list it could repeat into is shorter).
struct Bounds {
  int ops = kMaxOps;                 // ops in the kernel's list
  int regions = kMaxRegions;         // entries of "regions" (0: no for / if bodies)
  int region_ops = kMaxOps;          // ops in one region
  int name_length = kMaxNameLength;  // characters of a name
};

/// The schema of a document that implements `iface` within `bounds` (each clamped to the format's), for
/// constrained decoding: schema() with "name" and every argument fixed by const (a constexpr's value one
/// of the powers of two 1 .. kMaxConstexprChoice), and the lists bounded by `bounds`. Every document it
/// accepts is accepted by schema().
nlohmann::ordered_json schema(const Interface& iface, const Bounds& bounds);

/// Where a valid AST differs from `iface`: its name (at "/name") and its arguments (at "/args/I": a missing,
/// extra, renamed or retyped argument, in order), as semantics problems with the expected and found
/// argument. Empty when it implements the interface.
std::vector<Problem> check_interface(const Ast& ast, const Interface& iface);

/// The JSON pointers of the store and atomic ops of a valid AST whose pointer operand is derived from
/// pointer argument `arg` (through splat, broadcast, expand_dims, reshape, trans, addptr, where, loop-carried
/// values and if results), in program order (a region's ops where its for / if is).
std::vector<std::string> writers(const Ast& ast, const std::string& arg);
/// A short text reference of every op (fields, operands, what it lowers to), from the same table: for
/// docs and for prompts.
std::string op_reference();

/// The TTIR of a valid AST, one module with one `tt.func public @<name>`. `line_pointers`, when given,
/// receives for each line of the text (index 0 = line 1) the JSON pointer of the op it came from ("" for
/// lines of no op: the signature, constants of constexprs, closing braces).
std::string lower(const Ast& ast, std::vector<std::string>* line_pointers = nullptr);

/// The Triton Python of a valid AST (docs/gen-format.md, "Triton Python"): a module that imports triton and
/// triton.language as tl, defines the kernel `@triton.jit def <name>(...)` (pointer arguments plain, scalars
/// annotated with their dtype, constexprs `tl.constexpr` in their declared positions), one statement per op
/// that assigns its value to the op's AST name, and `launch(<runtime args>, grid)`, which launches the kernel
/// on `grid` with the AST's constexpr values. Run on tilescope's front door it gives the outputs the AST's
/// lower() TTIR gives (tests/python/test_gen_python.py checks it bit for bit on every fixture).
std::string python(const Ast& ast);

}  // namespace tilescope::gen
