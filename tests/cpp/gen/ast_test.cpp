// The kernel AST (include/tilescope/gen/ast.h): the op table and the schema generated from it, the
// located problems of every semantic class (each at the JSON pointer of the operand or field at fault,
// with expected and found), and the lowering: TTIR that tilescope's reader and verifier accept and that
// runs through launch::run_launch with values checked against a computation by hand. End-to-end runs of
// the task fixtures against numpy / torch, and Triton's parser and compiler, are tests/python/test_gen.py.
#include "tilescope/gen/ast.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "src/gen/table.h"
#include "tilescope/ir/reader.h"
#include "tilescope/launch/runner.h"

namespace tilescope::gen {
namespace {

using nlohmann::json;

// A kernel with a fixed signature around `ops` (JSON text of the op list's items) and `regions`.
std::string doc(const std::string& ops, const std::string& regions = "") {
  std::string d = R"({"version": 1, "name": "k", "args": [
      {"name": "x_ptr", "kind": "pointer", "dtype": "f32"},
      {"name": "y_ptr", "kind": "pointer", "dtype": "f32"},
      {"name": "i_ptr", "kind": "pointer", "dtype": "i32"},
      {"name": "h_ptr", "kind": "pointer", "dtype": "f16"},
      {"name": "n", "kind": "scalar", "dtype": "i32"},
      {"name": "big", "kind": "scalar", "dtype": "i64"},
      {"name": "f", "kind": "scalar", "dtype": "f32"},
      {"name": "B", "kind": "constexpr", "value": 64},
      {"name": "B100", "kind": "constexpr", "value": 100}],
    "ops": [)" + ops +
                  "]";
  if (!regions.empty()) d += R"(, "regions": [)" + regions + "]";
  return d + "}";
}

// x: f32[64] loaded from x_ptr (ops 0..3); the tests' ops follow, at /ops/4 on.
const char* kLoadX = R"(
  {"op": "make_range", "result": "lanes", "start": 0, "end": "B"},
  {"op": "splat", "result": "xp", "operands": ["x_ptr"], "shape": ["B"]},
  {"op": "addptr", "result": "xs", "operands": ["xp", "lanes"]},
  {"op": "load", "result": "x", "operands": ["xs"]},
  {"op": "splat", "result": "yp", "operands": ["y_ptr"], "shape": ["B"]},
  {"op": "addptr", "result": "ys", "operands": ["yp", "lanes"]})";

std::string with_x(const std::string& more) {
  return doc(std::string(kLoadX) + (more.empty() ? "" : ",") + more);
}

std::vector<Problem> problems(const std::string& text) { return parse_text(text).problems; }

// The first problem is at `pointer` and its message contains `text` (and expected / found, when given).
void expect_problem(const std::string& d, const std::string& pointer, const std::string& text,
                    const std::string& expected = "", const std::string& found = "") {
  auto p = problems(d);
  ASSERT_FALSE(p.empty()) << "no problem in\n" << d;
  EXPECT_EQ(p[0].pointer, pointer) << p[0].str();
  EXPECT_NE(p[0].message.find(text), std::string::npos) << p[0].str();
  if (!expected.empty()) {
    EXPECT_EQ(p[0].expected, expected) << p[0].str();
  }
  if (!found.empty()) {
    EXPECT_EQ(p[0].found, found) << p[0].str();
  }
}

const char* kStoreX = R"({"op": "store", "operands": ["ys", "x"]})";

TEST(GenTable, OneRowPerKindInOrder) {
  ASSERT_EQ(op_table().size(), static_cast<size_t>(kNumOpKinds));
  std::set<std::string> names;
  for (size_t i = 0; i < op_table().size(); ++i) {
    const OpSpec& s = op_table()[i];
    EXPECT_EQ(static_cast<size_t>(s.kind), i);
    EXPECT_STREQ(s.name, op_name(s.kind));
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_LE(s.min_operands, static_cast<int>(s.roles.size()));
    EXPECT_NE(*s.doc, '\0') << s.name;
    std::set<std::string> keys;
    for (const auto& f : s.fields) EXPECT_TRUE(keys.insert(f.key).second) << s.name << "." << f.key;
  }
  EXPECT_EQ(find_op("atomic_rmw")->kind, OpKind::atomic_rmw);
  EXPECT_EQ(find_op("relu"), nullptr);
}

TEST(GenSchema, GeneratedFromTheTable) {
  json s = schema();
  EXPECT_EQ(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
  const json& ops = s["$defs"]["op"]["anyOf"];
  ASSERT_EQ(ops.size(), op_table().size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpSpec& spec_row = op_table()[i];
    EXPECT_EQ(ops[i]["properties"]["op"]["const"], spec_row.name);
    EXPECT_EQ(ops[i]["additionalProperties"], false);
    for (const auto& f : spec_row.fields) EXPECT_TRUE(ops[i]["properties"].contains(f.key)) << spec_row.name;
    if (!spec_row.roles.empty()) {
      EXPECT_EQ(ops[i]["properties"]["operands"]["minItems"], spec_row.min_operands);
      EXPECT_EQ(ops[i]["properties"]["operands"]["maxItems"], spec_row.roles.size());
    }
  }
  EXPECT_EQ(s["$defs"]["name"]["maxLength"], kMaxNameLength);
  EXPECT_EQ(s["properties"]["ops"]["maxItems"], kMaxOps);
  // The op reference comes from the same table.
  const std::string ref = "\n" + op_reference();
  for (const auto& row : op_table()) EXPECT_NE(ref.find(std::string("\n") + row.name), std::string::npos);
}

TEST(GenParse, AValidKernel) {
  Parsed p = parse_text(with_x(kStoreX));
  ASSERT_TRUE(p.problems.empty()) << p.problems[0].str();
  ASSERT_TRUE(p.ast);
  EXPECT_EQ(p.ast->ops[3].result_types[0].str(), "f32[64]");
  EXPECT_EQ(p.ast->ops[2].result_types[0].str(), "*f32[64]");
  EXPECT_EQ(p.ast->ops[3].pointer, "/ops/3");
}

// Text that is not JSON: one problem of kind json at "" that says where, in lines and columns counted
// from the text, the JSON stops being valid, in words (not the JSON library's exception text).
TEST(GenParse, NotJson) {
  // A reply cut off at max_tokens: 14 bytes, no newline.
  auto p = problems(R"({"version": 1, "na)");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, Problem::Kind::json);
  EXPECT_EQ(p[0].pointer, "");
  EXPECT_EQ(p[0].message.rfind("not JSON: the document ends early, at line 1, column 19 (", 0), 0u)
      << p[0].message;
  EXPECT_EQ(p[0].expected, "a JSON object");
  EXPECT_EQ(p[0].found, "the end of the text (18 bytes)");
  for (const char* lib : {"json.exception", "parse_error", "parse error", "at byte"})
    EXPECT_EQ(p[0].str().find(lib), std::string::npos) << p[0].str();
  // Cut after a newline: the place after the text's last character.
  p = problems("{\"version\": 1,\n  \"name\": \"k\",\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].message.rfind("not JSON: the document ends early, at line 3, column 1 (", 0), 0u)
      << p[0].message;
  // Invalid in the middle: the line and column of the first character that makes it invalid (columns count
  // characters: the two-byte \u00e9 is one), and what is there.
  p = problems("{\"version\": 1,\n  \"name\": \"\u00e9\", \"args\": [1 2]}");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].message.rfind("not JSON: invalid at line 2, column 27 (while parsing array: ", 0), 0u)
      << p[0].message;
  EXPECT_EQ(p[0].found, "'2]}'");
  // A token the grammar does not allow there: at its first character.
  p = problems("{\"version\": 1 \"name\": \"k\"}");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].message.rfind(
                "not JSON: invalid at line 1, column 15 (while parsing object: unexpected string", 0),
            0u)
      << p[0].message;
  EXPECT_EQ(p[0].found, "'\"name\": \"k\"}'");
  // A character no token has there: at that character (\"tru\" could still be the start of true).
  p = problems("{\"version\": tru, \"name\": \"k\"}");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].message.rfind("not JSON: invalid at line 1, column 16 (", 0), 0u) << p[0].message;
  EXPECT_EQ(p[0].found, "', \"name\": \"k\"}'");
  // After the document: more text.
  p = problems("{} x");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].message.rfind("not JSON: invalid at line 1, column 4 (", 0), 0u) << p[0].message;
  // No document at all.
  p = problems(" \n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].message, "not JSON: the text is empty");
  EXPECT_EQ(p[0].found, "only white space");
  // Bytes that are not UTF-8 are shown as \xNN, so that the problem is valid JSON text itself.
  p = problems("{\"version\": \xff}");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].found, "'\\xff}'");
  EXPECT_NO_THROW(nlohmann::json(p[0].str()).dump());
  p = problems("{\"version\": \"\xed\xa0\x80\"}");  // a UTF-16 surrogate, which UTF-8 does not have
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].message.find("\\xed\\xa0"), std::string::npos) << p[0].message;
  EXPECT_NO_THROW(nlohmann::json(p[0].str()).dump());
}

TEST(GenParse, Structure) {
  expect_problem(with_x(R"({"op": "store", "operands": ["ys", "x"], "mask": "m"})"), "/ops/6/mask",
                 "unknown field 'mask' of op 'store'");
  expect_problem(with_x(R"({"op": "relu", "result": "r", "operands": ["x"]})"), "/ops/6/op", "unknown op");
  expect_problem(with_x(R"({"op": "exp", "result": "r", "operands": ["x", "x"]})"), "/ops/6/operands",
                 "wrong operands for 'exp' (x)", "an array of 1 names", "an array of 2");
  expect_problem(
      with_x(R"({"op": "reduce", "result": "r", "operands": ["x"], "axis": 0, "combine": "mean"})"),
      "/ops/6/combine", "not one of the choices", "one of sum, prod, max, min, argmax, argmin", "\"mean\"");
}

// ------------------------------------------------------------------------------------------------
// Names

TEST(GenNames, Undefined) {
  expect_problem(with_x(R"({"op": "exp", "result": "e", "operands": ["xx"]}, )" + std::string(kStoreX)),
                 "/ops/6/operands/0", "operand 0 (x) 'xx' is not defined (did you mean 'x'?)",
                 "a defined value", "'xx'");
}

TEST(GenNames, UsedBeforeDefinition) {
  expect_problem(with_x(R"({"op": "exp", "result": "e", "operands": ["later"]},
                           {"op": "exp", "result": "later", "operands": ["x"]}, )" +
                        std::string(kStoreX)),
                 "/ops/6/operands/0", "'later' is used before its definition at /ops/7/result");
}

TEST(GenNames, Redefined) {
  expect_problem(with_x(R"({"op": "exp", "result": "x", "operands": ["x"]}, )" + std::string(kStoreX)),
                 "/ops/6/result", "'x' is already defined at /ops/3/result", "a new name", "'x'");
  // An argument's name too.
  expect_problem(with_x(R"({"op": "exp", "result": "n", "operands": ["x"]}, )" + std::string(kStoreX)),
                 "/ops/6/result", "'n' is already defined at /args/4/name");
}

TEST(GenNames, RegionValuesStayInside) {
  const std::string d = doc(
      std::string(kLoadX) + R"(, {"op": "for", "var": "i", "lower": 0, "upper": 4, "step": 1, "body": "loop"},
          {"op": "store", "operands": ["ys", "inner"]})",
      R"({"name": "loop", "ops": [{"op": "exp", "result": "inner", "operands": ["x"]}]})");
  expect_problem(d, "/ops/7/operands/1", "'inner' is defined at /regions/0/ops/0/result, inside a region");
}

// ------------------------------------------------------------------------------------------------
// Types and shapes

TEST(GenTypes, ElementwiseNeedsEqualTypes) {
  // A scalar with a tensor: TTIR has no implicit broadcast.
  expect_problem(with_x(R"({"op": "add", "result": "r", "operands": ["x", "f"]})"), "/ops/6/operands/1",
                 "operand 1 (b) of add: operands must have equal types (splat it to the shape first",
                 "f32[64]", "f32");
  // Shapes [64] and [1, 64].
  expect_problem(with_x(R"({"op": "expand_dims", "result": "x2", "operands": ["x"], "axis": 0},
                           {"op": "mul", "result": "r", "operands": ["x", "x2"]})"),
                 "/ops/7/operands/1", "expand_dims / broadcast / splat it first", "f32[64]", "f32[1, 64]");
  // Different dtypes.
  expect_problem(with_x(R"({"op": "add", "result": "r", "operands": ["x", "lanes"]})"), "/ops/6/operands/1",
                 "(cast it first)", "f32[64]", "i32[64]");
  // Arithmetic on i1 masks.
  expect_problem(with_x(R"({"op": "splat", "result": "nv", "operands": ["n"], "shape": ["B"]},
                           {"op": "lt", "result": "m", "operands": ["lanes", "nv"]},
                           {"op": "add", "result": "r", "operands": ["m", "m"]})"),
                 "/ops/8/operands/0", "i1 values are masks");
}

TEST(GenTypes, PointersAndProvenance) {
  // Pointer arithmetic is addptr.
  expect_problem(with_x(R"({"op": "add", "result": "r", "operands": ["xs", "lanes"]})"), "/ops/6/operands/0",
                 "pointer arithmetic is addptr(ptr, offset)", "a number", "*f32[64]");
  // A load through integers.
  expect_problem(with_x(R"({"op": "load", "result": "r", "operands": ["lanes"]})"), "/ops/6/operands/0",
                 "memory is reached only through pointers derived from pointer arguments", "", "i32[64]");
  // The offset must have the pointer's shape.
  expect_problem(with_x(R"({"op": "addptr", "result": "q", "operands": ["x_ptr", "lanes"]})"),
                 "/ops/6/operands/1", "the offset must have the pointer's shape", "i32", "i32[64]");
  // A mask of the wrong type, a stored value of the wrong type.
  expect_problem(with_x(R"({"op": "load", "result": "r", "operands": ["xs", "lanes"]})"), "/ops/6/operands/1",
                 "a mask is i1 with the pointer's shape", "i1[64]", "i32[64]");
  expect_problem(with_x(R"({"op": "store", "operands": ["ys", "lanes"]})"), "/ops/6/operands/1",
                 "the value has the pointee type", "f32[64]", "i32[64]");
  expect_problem(with_x(R"({"op": "load", "result": "r", "operands": ["xs", "m", "f"]})"),
                 "/ops/6/operands/1", "'m' is not defined");
}

TEST(GenTypes, BlockShapesArePowersOfTwo) {
  // A constexpr that is not a power of two: one problem, at its value, however many ops use it.
  auto p = problems(with_x(R"({"op": "splat", "result": "r", "operands": ["f"], "shape": ["B100"]},
                               {"op": "make_range", "result": "q", "start": 0, "end": "B100"})"));
  ASSERT_EQ(p.size(), 1u) << p[1].str();
  EXPECT_EQ(p[0].pointer, "/args/8/value");
  EXPECT_EQ(p[0].message,
            "constexpr 'B100' is a block dim (first at /ops/6/shape/0), and block dims must be powers of two "
            "(Triton's rule for every tensor dim)");
  EXPECT_EQ(p[0].found, "100");
  expect_problem(with_x(R"({"op": "constant", "result": "r", "dtype": "f32", "value": 1, "shape": [8, 3]})"),
                 "/ops/6/shape/1", "block dims must be powers of two", "a power of two", "3");
  expect_problem(with_x(R"({"op": "make_range", "result": "r", "start": 0, "end": 48})"), "/ops/6/end",
                 "a range's length end - start must be a power of two", "", "48 - 0 = 48");
  // A runtime argument is not a compile-time shape.
  expect_problem(with_x(R"({"op": "splat", "result": "r", "operands": ["f"], "shape": ["n"]})"),
                 "/ops/6/shape/0", "'n' is a runtime argument, not a constexpr");
  expect_problem(
      with_x(R"({"op": "constant", "result": "r", "dtype": "f32", "value": 1, "shape": [1024, 2048]})"),
      "/ops/6/shape", "too many elements in one tensor");
}

TEST(GenTypes, ShapeOps) {
  expect_problem(with_x(R"({"op": "broadcast", "result": "r", "operands": ["x"], "shape": [64, 64]})"),
                 "/ops/6/shape", "broadcast keeps the rank", "a shape that [64] broadcasts to", "[64, 64]");
  expect_problem(with_x(R"({"op": "splat", "result": "r", "operands": ["x"], "shape": [64]})"),
                 "/ops/6/operands/0", "splat takes a scalar");
  expect_problem(with_x(R"({"op": "reshape", "result": "r", "operands": ["x"], "shape": [4, 8]})"),
                 "/ops/6/shape", "reshape keeps the number of elements");
  expect_problem(with_x(R"({"op": "reduce", "result": "r", "operands": ["x"], "axis": 1, "combine": "sum"})"),
                 "/ops/6/axis", "axis out of range", "an axis in 0..0", "1");
  expect_problem(with_x(R"({"op": "expand_dims", "result": "a", "operands": ["x"], "axis": 2})"),
                 "/ops/6/axis", "the new dim must go at 0..rank");
  expect_problem(with_x(R"({"op": "expand_dims", "result": "a", "operands": ["x"], "axis": 1},
                           {"op": "trans", "result": "t", "operands": ["a"], "order": [0, 0]})"),
                 "/ops/7/order", "order must be a permutation");
}

TEST(GenTypes, MathAndCasts) {
  expect_problem(with_x(R"({"op": "splat", "result": "hp", "operands": ["h_ptr"], "shape": ["B"]},
                           {"op": "addptr", "result": "hs", "operands": ["hp", "lanes"]},
                           {"op": "load", "result": "h", "operands": ["hs"]},
                           {"op": "exp", "result": "e", "operands": ["h"]})"),
                 "/ops/9/operands/0", "exp takes f32 or f64 (cast f16 / bf16 to f32 first)",
                 "f32, f64 elements", "f16[64]");
  expect_problem(with_x(R"({"op": "constant", "result": "c", "dtype": "i8", "value": 300})"), "/ops/6/value",
                 "the value does not fit i8", "an integer in -128..127", "300");
  expect_problem(with_x(R"({"op": "constant", "result": "c", "dtype": "i32", "value": 1.5})"), "/ops/6/value",
                 "the value does not fit i32");
  expect_problem(with_x(R"({"op": "constant", "result": "c", "dtype": "f16", "value": 1e6})"), "/ops/6/value",
                 "out of f16's range");
}

TEST(GenTypes, Dot) {
  const std::string tiles = R"(
    {"op": "constant", "result": "a", "dtype": "f16", "value": 1, "shape": [32, 16]},
    {"op": "constant", "result": "b", "dtype": "f16", "value": 1, "shape": [32, 32]},
    {"op": "constant", "result": "b8", "dtype": "f16", "value": 1, "shape": [16, 8]},
    {"op": "constant", "result": "acc", "dtype": "f32", "value": 0, "shape": [32, 32]},
    {"op": "constant", "result": "acc16", "dtype": "f16", "value": 0, "shape": [32, 32]},
    {"op": "constant", "result": "b16", "dtype": "f16", "value": 1, "shape": [16, 32]},
    {"op": "constant", "result": "accbad", "dtype": "f32", "value": 0, "shape": [32, 16]})";
  // K of b (32) is not a's K (16).
  expect_problem(with_x(tiles + R"(, {"op": "dot", "result": "d", "operands": ["a", "b", "acc"]})"),
                 "/ops/13/operands/1", "b is [K, N] with a's dtype and a's K", "f16[16, 32]", "f16[32, 32]");
  expect_problem(with_x(tiles + R"(, {"op": "dot", "result": "d", "operands": ["a", "b8", "acc"]})"),
                 "/ops/13/operands/1", "dot needs M, N and K of at least 16");
  expect_problem(with_x(tiles + R"(, {"op": "dot", "result": "d", "operands": ["a", "b16", "accbad"]})"),
                 "/ops/13/operands/2", "the accumulator is [M, N]", "f32[32, 32] (or f16)", "f32[32, 16]");
  // f16 x f16 -> f16 is one of the valid forms.
  auto p = problems(with_x(tiles + R"(, {"op": "dot", "result": "d", "operands": ["a", "b16", "acc16"]}, )" +
                           std::string(kStoreX)));
  EXPECT_TRUE(p.empty()) << p[0].str();
}

TEST(GenTypes, AtomicsAndGather) {
  expect_problem(with_x(R"({"op": "atomic_rmw", "operands": ["ys", "x"], "kind": "max"})"),
                 "/ops/6/operands/0", "max is not a TTIR atomic on f32");
  expect_problem(with_x(R"({"op": "atomic_cas", "result": "o", "operands": ["ys", "x", "lanes"]})"),
                 "/ops/6/operands/2", "the pointee type with the pointer's shape", "f32[64]", "i32[64]");
  expect_problem(with_x(R"({"op": "expand_dims", "result": "x2", "operands": ["x"], "axis": 0},
                           {"op": "constant", "result": "idx", "dtype": "i32", "value": 0, "shape": [2, 4]},
                           {"op": "gather", "result": "g", "operands": ["x2", "idx"], "axis": 1})"),
                 "/ops/8/operands/1", "indices have src's rank and src's dims except along axis");
}

// ------------------------------------------------------------------------------------------------
// Control flow

TEST(GenControl, LoopCarriedValuesKeepTheirType) {
  const std::string d = doc(std::string(kLoadX) + R"(,
      {"op": "constant", "result": "acc0", "dtype": "f32", "value": 0, "shape": ["B"]},
      {"op": "for", "results": ["acc"], "var": "i", "lower": 0, "upper": "n", "step": 1,
       "init": ["acc0"], "carried": ["a"], "body": "loop"},
      {"op": "store", "operands": ["ys", "acc"]})",
                            R"({"name": "loop", "ops": [{"op": "cast", "result": "a16", "operands": ["a"],
                                "dtype": "f16"}], "yield": ["a16"]})");
  expect_problem(d, "/regions/0/yield/0", "yield 0 is the next value of carried 'a' and keeps its type",
                 "f32[64]", "f16[64]");
}

TEST(GenControl, LoopShape) {
  const char* body = R"({"name": "loop", "ops": [], "yield": []})";
  expect_problem(
      doc(std::string(kLoadX) + R"(, {"op": "for", "var": "i", "lower": 0, "upper": "big", "step": "n",
      "body": "loop"})",
          body),
      "/ops/6/step", "lower, upper and step have one type", "i64", "i32");
  expect_problem(doc(std::string(kLoadX) + R"(, {"op": "for", "var": "i", "lower": 0, "upper": "f", "step": 1,
      "body": "loop"})",
                     body),
                 "/ops/6/upper", "loop bounds are i32 or i64 scalars", "an i32 or i64 scalar", "f32");
  expect_problem(doc(std::string(kLoadX) + R"(, {"op": "for", "var": "i", "lower": 0, "upper": 4, "step": 0,
      "body": "loop"})",
                     body),
                 "/ops/6/step", "the step must be positive");
  expect_problem(doc(std::string(kLoadX) + R"(, {"op": "for", "var": "i", "lower": 0, "upper": 4, "step": 1,
      "init": ["x"], "body": "loop"})",
                     R"({"name": "loop", "ops": [], "yield": ["x"]})"),
                 "/ops/6/carried", "one carried name per init value", "1 names", "0");
  // The body yields nothing for one carried value.
  expect_problem(doc(std::string(kLoadX) + R"(, {"op": "for", "var": "i", "lower": 0, "upper": 4, "step": 1,
      "init": ["x"], "carried": ["c"], "body": "loop"})",
                     body),
                 "/regions/0/yield", "the body of a for yields the next value of each carried value (1)");
}

TEST(GenControl, Regions) {
  const std::string loop = R"({"op": "for", "var": "i", "lower": 0, "upper": 4, "step": 1, "body": "loop"})";
  expect_problem(doc(std::string(kLoadX) + ", " + loop, R"({"name": "lop", "ops": []})"), "/ops/6/body",
                 "there is no region named 'loop'", "one of lop");
  // Used twice, and used inside itself.
  expect_problem(doc(std::string(kLoadX) + ", " + loop + ", " + loop, R"({"name": "loop", "ops": []})"),
                 "/ops/7/body", "region 'loop' is already used by /ops/6/body");
  expect_problem(doc(std::string(kLoadX) + ", " + loop,
                     R"({"name": "loop", "ops": [{"op": "for", "var": "j", "lower": 0, "upper": 4, "step": 1,
                         "body": "loop"}]})"),
                 "/regions/0/ops/0/body", "region 'loop' is already used by /ops/6/body");
  expect_problem(doc(std::string(kLoadX) + ", " + kStoreX, R"({"name": "spare", "ops": []})"),
                 "/regions/0/name", "region 'spare' is not the body of any for or if");
  // Nesting deeper than kMaxDepth.
  std::string regions;
  for (int i = 0; i <= kMaxDepth; ++i) {
    if (i) regions += ", ";
    regions += R"({"name": "r)" + std::to_string(i) + R"(", "ops": [)";
    if (i < kMaxDepth)
      regions += R"({"op": "for", "var": "v)" + std::to_string(i + 1) +
                 R"(", "lower": 0, "upper": 2, "step": 1,
                    "body": "r)" +
                 std::to_string(i + 1) + R"("})";
    regions += "]}";
  }
  expect_problem(doc(std::string(kLoadX) + R"(, {"op": "for", "var": "v0", "lower": 0, "upper": 2, "step": 1,
      "body": "r0"}, )" + kStoreX,
                     regions),
                 "/regions/" + std::to_string(kMaxDepth), "regions nest at most 4 deep");
}

TEST(GenControl, If) {
  const std::string branches =
      R"({"name": "t", "ops": [], "yield": ["x"]}, {"name": "e", "ops": [{"op": "cast", "result": "xi",
          "operands": ["x"], "dtype": "i32"}], "yield": ["xi"]})";
  expect_problem(doc(std::string(kLoadX) + R"(, {"op": "if", "results": ["r"], "cond": "n", "then": "t",
      "else": "e"})",
                     branches),
                 "/ops/6/cond", "an if's condition is an i1 scalar", "i1", "i32");
  expect_problem(doc(std::string(kLoadX) + R"(, {"op": "constant", "result": "c", "dtype": "i1", "value": 1},
      {"op": "if", "results": ["r"], "cond": "c", "then": "t", "else": "e"})",
                     branches),
                 "/regions/1/yield/0", "both branches yield result 0 ('r') with one type", "f32[64]",
                 "i32[64]");
  expect_problem(doc(std::string(kLoadX) + R"(, {"op": "constant", "result": "c", "dtype": "i1", "value": 1},
      {"op": "if", "results": ["r"], "cond": "c", "then": "t"})",
                     R"({"name": "t", "ops": [], "yield": ["x"]})"),
                 "/ops/7", "an if with results needs an else region");
}

TEST(GenControl, AKernelMustWrite) { expect_problem(with_x(""), "/ops", "the kernel writes nothing"); }

TEST(GenParse, NoCascadeAfterAProblem) {
  // One bad op; its result's later uses report nothing more.
  auto p = problems(with_x(R"({"op": "add", "result": "r", "operands": ["x", "f"]},
                               {"op": "exp", "result": "e", "operands": ["r"]},
                               {"op": "store", "operands": ["ys", "e"]})"));
  ASSERT_EQ(p.size(), 1u) << p[1].str();
  EXPECT_EQ(p[0].pointer, "/ops/6/operands/1");
}

// ------------------------------------------------------------------------------------------------
// Lowering

TEST(GenLower, ReadByTilescopeAndRun) {
  // out[i] = x[i] * 2 + 1 for i < n, then a loop adds 3 * x[i] once per iteration (4 iterations), and an if
  // negates the result when n is odd: a kernel with every kind of region.
  const std::string d =
      doc(R"(
      {"op": "program_id", "result": "pid", "axis": 0},
      {"op": "mul", "result": "start", "operands": ["pid", "B"]},
      {"op": "make_range", "result": "lanes", "start": 0, "end": "B"},
      {"op": "splat", "result": "sv", "operands": ["start"], "shape": ["B"]},
      {"op": "add", "result": "offs", "operands": ["sv", "lanes"]},
      {"op": "splat", "result": "nv", "operands": ["n"], "shape": ["B"]},
      {"op": "lt", "result": "mask", "operands": ["offs", "nv"]},
      {"op": "splat", "result": "xp", "operands": ["x_ptr"], "shape": ["B"]},
      {"op": "addptr", "result": "xs", "operands": ["xp", "offs"]},
      {"op": "load", "result": "x", "operands": ["xs", "mask"]},
      {"op": "constant", "result": "two", "dtype": "f32", "value": 2, "shape": ["B"]},
      {"op": "constant", "result": "one", "dtype": "f32", "value": 1, "shape": ["B"]},
      {"op": "fma", "result": "y0", "operands": ["x", "two", "one"]},
      {"op": "constant", "result": "three", "dtype": "f32", "value": 3, "shape": ["B"]},
      {"op": "for", "results": ["y1"], "var": "i", "lower": 0, "upper": 4, "step": 1,
       "init": ["y0"], "carried": ["acc"], "body": "loop"},
      {"op": "constant", "result": "c2", "dtype": "i32", "value": 2},
      {"op": "rem", "result": "odd_n", "operands": ["n", "c2"]},
      {"op": "cast", "result": "odd", "operands": ["odd_n"], "dtype": "i1"},
      {"op": "if", "results": ["y"], "cond": "odd", "then": "negate", "else": "keep"},
      {"op": "splat", "result": "yp", "operands": ["y_ptr"], "shape": ["B"]},
      {"op": "addptr", "result": "ys", "operands": ["yp", "offs"]},
      {"op": "store", "operands": ["ys", "y", "mask"]})",
          R"({"name": "loop", "ops": [{"op": "mul", "result": "x3", "operands": ["x", "three"]},
                                  {"op": "add", "result": "next", "operands": ["acc", "x3"]}], "yield": ["next"]},
          {"name": "negate", "ops": [{"op": "neg", "result": "ny", "operands": ["y1"]}], "yield": ["ny"]},
          {"name": "keep", "ops": [], "yield": ["y1"]})");
  Parsed p = parse_text(d);
  ASSERT_TRUE(p.ast) << p.problems[0].str();
  std::vector<std::string> lines;
  const std::string ttir = lower(*p.ast, &lines);
  ASSERT_EQ(static_cast<size_t>(std::count(ttir.begin(), ttir.end(), '\n')), lines.size());
  EXPECT_NE(ttir.find("tt.func public @k(%x_ptr: !tt.ptr<f32>, %y_ptr: !tt.ptr<f32>, %i_ptr: !tt.ptr<i32>, "
                      "%h_ptr: !tt.ptr<f16>, %n: i32, %big: i64, %f: f32)"),
            std::string::npos)
      << ttir;
  ir::Module m = ir::read(ttir, "k.ttir");
  ir::verify(m);
  // The line of the loop maps back to its op.
  const size_t line =
      static_cast<size_t>(std::count(ttir.begin(), ttir.begin() + ttir.find("scf.for"), '\n'));
  EXPECT_EQ(lines[line], "/ops/14");

  for (int64_t n : {100, 77}) {
    std::vector<float> x(n), y(n + 28, -5.0f);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.25f - 3.0f;
    int32_t ib = 0;
    uint16_t hb = 0;
    launch::LaunchRecord r;
    r.ttir = ttir;
    r.ttir_file = "k.ttir";
    r.grid = {2, 1, 1};
    r.args = {
        launch::ArgRecord::buffer("x_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(x.data()), 4 * n, {n},
                                  {1}),
        launch::ArgRecord::buffer("y_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(y.data()),
                                  4 * y.size(), {static_cast<int64_t>(y.size())}, {1}),
        launch::ArgRecord::buffer("i_ptr", ir::Elem::i32, reinterpret_cast<std::byte*>(&ib), 4, {1}, {1}),
        launch::ArgRecord::buffer("h_ptr", ir::Elem::f16, reinterpret_cast<std::byte*>(&hb), 2, {1}, {1}),
        launch::ArgRecord::scalar("n", n),
        launch::ArgRecord::scalar("big", int64_t{0}),
        launch::ArgRecord::scalar("f", 0.0)};
    launch::RunOptions o;
    o.analyses = {{"sanitizer", nullptr}};
    launch::RunResult res = launch::run_launch(r, o);
    EXPECT_TRUE(res.findings.empty()) << res.findings[0].summary;
    for (int64_t i = 0; i < n; ++i) {
      // By hand: fma(x, 2, 1), then + 3x four times (each rounded in f32, as the kernel does).
      float v = std::fma(x[i], 2.0f, 1.0f);
      for (int k = 0; k < 4; ++k) v = v + x[i] * 3.0f;
      if (n % 2) v = 0.0f - v;
      EXPECT_EQ(y[i], v) << "n=" << n << " i=" << i;
    }
    for (size_t i = n; i < y.size(); ++i) EXPECT_EQ(y[i], -5.0f);  // masked off: untouched
  }
}

TEST(GenLower, LiteralsAndCasts) {
  // Float literals print so that MLIR reads them back exactly; inf / nan as bit patterns.
  Parsed p = parse_text(with_x(R"(
      {"op": "constant", "result": "a", "dtype": "f32", "value": 0.1, "shape": ["B"]},
      {"op": "constant", "result": "b", "dtype": "f32", "value": "-inf"},
      {"op": "constant", "result": "c", "dtype": "f16", "value": 1.5},
      {"op": "constant", "result": "d", "dtype": "i1", "value": 1},
      {"op": "cast", "result": "h", "operands": ["x"], "dtype": "f16"},
      {"op": "cast", "result": "hd", "operands": ["h"], "dtype": "f64"},
      {"op": "cast", "result": "same", "operands": ["x"], "dtype": "f32"},
      {"op": "store", "operands": ["ys", "same"]})"));
  ASSERT_TRUE(p.ast) << p.problems[0].str();
  const std::string t = lower(*p.ast);
  EXPECT_NE(t.find("%a = arith.constant dense<1.00000001e-01> : tensor<64xf32>"), std::string::npos) << t;
  EXPECT_NE(t.find("%b = arith.constant 0xFF800000 : f32"), std::string::npos) << t;
  EXPECT_NE(t.find("%c = arith.constant 0x3E00 : f16"), std::string::npos) << t;
  EXPECT_NE(t.find("%d = arith.constant true\n"), std::string::npos) << t;
  // f16 -> f64 goes through f32, as Triton's semantic.cast does.
  EXPECT_NE(t.find("arith.extf %h : tensor<64xf16> to tensor<64xf32>"), std::string::npos) << t;
  EXPECT_NE(t.find("tt.store %ys, %x : tensor<64x!tt.ptr<f32>>"), std::string::npos) << t;
  ir::verify(ir::read(t, "k.ttir"));
}

}  // namespace
}  // namespace tilescope::gen
