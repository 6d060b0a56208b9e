// The generator's pieces that need no model and no Python (include/tilescope/generate/generate.h,
// gen::schema(iface, bounds), gen::check_interface). The loop, the worker and the evaluation end to end:
// tests/python/test_gen_pipeline.py.
#include "tilescope/generate/generate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tilescope/gen/ast.h"

namespace tilescope::generate {
namespace {

using json = nlohmann::json;

// C(n, k) / C(m, k) by exact products, for the expected values of pass@k.
double choose(int n, int k) {
  double r = 1;
  for (int i = 0; i < k; ++i) r = r * (n - i) / (i + 1);
  return r;
}

TEST(GeneratePassAtK, TheUnbiasedEstimator) {
  EXPECT_DOUBLE_EQ(pass_at_k(5, 2, 1), 0.4);
  EXPECT_DOUBLE_EQ(pass_at_k(5, 2, 2), 1 - choose(3, 2) / choose(5, 2));  // 0.7
  EXPECT_NEAR(pass_at_k(20, 3, 5), 1 - choose(17, 5) / choose(20, 5), 1e-12);
  EXPECT_EQ(pass_at_k(10, 0, 3), 0.0);
  EXPECT_EQ(pass_at_k(4, 4, 1), 1.0);
  EXPECT_EQ(pass_at_k(3, 1, 3), 1.0);  // fewer wrong samples than k: some draw holds a right one
  EXPECT_EQ(pass_at_k(0, 0, 1), 0.0);
}

TEST(GenerateDecoding, NamesRoundTrip) {
  for (Decoding d : {Decoding::automatic, Decoding::json_schema, Decoding::llama_grammar,
                     Decoding::json_object, Decoding::none})
    EXPECT_EQ(decoding_from_name(decoding_name(d)), d);
  EXPECT_FALSE(decoding_from_name("json_schema"));  // the CLI spells them with dashes
}

gen::Interface vector_add() {
  gen::Interface i;
  i.name = "vector_add";
  auto arg = [](const char* name, gen::Arg::Kind kind, gen::Dtype d) {
    gen::Arg a;
    a.name = name;
    a.kind = kind;
    a.dtype = d;
    return a;
  };
  i.args = {arg("x_ptr", gen::Arg::Kind::pointer, gen::Dtype::f32),
            arg("out_ptr", gen::Arg::Kind::pointer, gen::Dtype::f32),
            arg("n", gen::Arg::Kind::scalar, gen::Dtype::i32),
            arg("BLOCK", gen::Arg::Kind::constexpr_, gen::Dtype::i32)};
  return i;
}

const char* kCopy = R"({"version": 1, "name": "vector_add", "args": [
  {"name": "x_ptr", "kind": "pointer", "dtype": "f32"}, {"name": "out_ptr", "kind": "pointer", "dtype": "f32"},
  {"name": "n", "kind": "scalar", "dtype": "i32"}, {"name": "BLOCK", "kind": "constexpr", "value": 64}],
 "ops": [{"op": "constant", "result": "z", "dtype": "f32", "value": 0}, {"op": "store", "operands": ["out_ptr", "z"]}]})";

TEST(GenerateInterface, MatchesAndMismatches) {
  gen::Parsed p = gen::parse_text(kCopy);
  ASSERT_TRUE(p.ast) << p.problems[0].str();
  EXPECT_TRUE(gen::check_interface(*p.ast, vector_add()).empty());
  gen::Interface other = vector_add();
  other.name = "copy";
  other.args[2].dtype = gen::Dtype::i64;
  other.args.push_back(other.args[0]);
  other.args.back().name = "y_ptr";
  const auto probs = gen::check_interface(*p.ast, other);
  ASSERT_EQ(probs.size(), 3u);
  EXPECT_EQ(probs[0].pointer, "/name");
  EXPECT_EQ(probs[0].expected, "copy");
  EXPECT_EQ(probs[1].pointer, "/args/2");
  EXPECT_EQ(probs[1].expected, "n: i64");
  EXPECT_EQ(probs[1].found, "n: i32");
  EXPECT_EQ(probs[2].pointer, "/args/4");
  EXPECT_EQ(probs[2].expected, "y_ptr: *f32");
  EXPECT_EQ(probs[2].found, "nothing");
}

TEST(GenerateInterface, WritersFollowPointersThroughLoopsAndWhere) {
  // y's pointers are splat, advanced in a loop (a carried tensor of pointers) and stored through; x is only
  // read; the atomic goes through a where of z's and y's pointer tiles.
  gen::Parsed p = gen::parse_text(R"({"version": 1, "name": "k", "args": [
    {"name": "x", "kind": "pointer", "dtype": "f32"}, {"name": "y", "kind": "pointer", "dtype": "f32"},
    {"name": "z", "kind": "pointer", "dtype": "f32"}, {"name": "n", "kind": "scalar", "dtype": "i32"}],
   "ops": [{"op": "make_range", "result": "r", "start": 0, "end": 16},
           {"op": "splat", "result": "xs", "operands": ["x"], "shape": [16]},
           {"op": "splat", "result": "ys", "operands": ["y"], "shape": [16]},
           {"op": "splat", "result": "zs", "operands": ["z"], "shape": [16]},
           {"op": "for", "results": ["yend"], "var": "i", "lower": 0, "upper": "n", "step": 1, "init": ["ys"],
            "carried": ["yp"], "body": "loop"},
           {"op": "lt", "result": "m", "operands": ["r", "r"]},
           {"op": "where", "result": "w", "operands": ["m", "zs", "yend"]},
           {"op": "load", "result": "v0", "operands": ["xs"]},
           {"op": "atomic_rmw", "operands": ["w", "v0"], "kind": "add"}],
   "regions": [{"name": "loop", "ops": [{"op": "load", "result": "v", "operands": ["xs"]},
                                         {"op": "store", "operands": ["yp", "v"]},
                                         {"op": "addptr", "result": "yn", "operands": ["yp", "r"]}],
                "yield": ["yn"]}]})");
  ASSERT_TRUE(p.ast) << p.problems[0].str();
  EXPECT_TRUE(gen::writers(*p.ast, "x").empty());
  EXPECT_EQ(gen::writers(*p.ast, "y"), (std::vector<std::string>{"/regions/0/ops/1", "/ops/8"}));
  EXPECT_EQ(gen::writers(*p.ast, "z"), (std::vector<std::string>{"/ops/8"}));
}

TEST(GenerateSchema, TheRequestFixesTheInterfaceAndTheBounds) {
  const json s = gen::schema(vector_add(), gen::Bounds{20, 2, 10, 16});
  EXPECT_EQ(s["properties"]["name"], json({{"const", "vector_add"}}));
  const json& items = s["properties"]["args"]["prefixItems"];
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(s["properties"]["args"]["minItems"], 4);
  EXPECT_EQ(s["properties"]["args"]["maxItems"], 4);
  EXPECT_EQ(items[0]["properties"]["dtype"], json({{"const", "f32"}}));
  EXPECT_EQ(items[2]["properties"]["kind"], json({{"const", "scalar"}}));
  const json& block = items[3]["properties"]["value"]["enum"];
  EXPECT_EQ(block.front(), 1);
  EXPECT_EQ(block.back(), gen::kMaxConstexprChoice);
  EXPECT_EQ(block.size(), 17u);
  EXPECT_EQ(s["properties"]["ops"]["maxItems"], 20);
  EXPECT_EQ(s["properties"]["regions"]["maxItems"], 2);
  EXPECT_EQ(s["$defs"]["region"]["properties"]["ops"]["maxItems"], 10);
  EXPECT_EQ(s["$defs"]["name"]["maxLength"], 16);
  EXPECT_EQ(s["$defs"]["name"]["pattern"], "^[A-Za-z_][A-Za-z0-9_]{0,15}$");
  EXPECT_FALSE(s["$defs"].contains("arg"));  // the arguments are all consts
  // Bounds past the format's are clamped to it.
  const json big = gen::schema(vector_add(), gen::Bounds{100000, 100000, 100000, 1000});
  EXPECT_EQ(big["properties"]["ops"]["maxItems"], gen::kMaxOps);
  EXPECT_EQ(big["$defs"]["name"]["maxLength"], gen::kMaxNameLength);
  // The format's own schema names the keys in the order a model writes them.
  const auto full = gen::schema();
  std::vector<std::string> keys;
  for (const auto& [k, v] : full["properties"].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"version", "name", "args", "ops", "regions"}));
  EXPECT_EQ(full["$defs"]["op"]["anyOf"][0]["properties"].begin().key(), "op");
}

TEST(GenerateFeedback, LocatedLines) {
  Evaluation ev;
  ev.reached = Stage::compiled;
  ev.line_pointers = {"", "/ops/0", "/ops/1", "/regions/0/ops/2"};
  CaseResult c;
  c.size = {{"n", 100}};
  c.grid = {2, 1, 1};
  OutputCheck o;
  o.name = "out_ptr";
  o.compared = 100;
  o.bad = 3;
  o.max_error = 0.5;
  o.at = {7};
  o.got = 1.5;
  o.expected = 1.0;
  c.outputs.push_back(o);
  analysis::Finding f;
  f.kind = analysis::Kind::oob_load;
  f.site.op = "tt.load";
  f.site.ttir_line = 4;
  f.summary = "out-of-bounds load from 'x_ptr' (100 elements): element offsets 100..127";
  c.findings.push_back(f);
  c.changed_inputs = {{"x_ptr", 4, {9}}};
  c.outputs[0].unwritten = 2;
  c.outputs[0].first_unwritten = {98};
  OutputCheck padding;
  padding.name = "pad_ptr";
  padding.compared = 10;
  padding.touched = 1;
  padding.first_touched = {10};
  c.outputs.push_back(padding);
  ev.writers["x_ptr"] = {"/ops/12", "/regions/0/ops/4"};
  ev.cases.push_back(c);
  const auto lines = ev.feedback();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "size n=100, grid (2, 1, 1): out_ptr: 3 of 100 compared elements are wrong; the largest error is "
            "0.5 at "
            "[7]: got 1.5, expected 1 (2 of the compared elements were never written, the first at [98])");
  EXPECT_EQ(lines[1],
            "size n=100, grid (2, 1, 1): pad_ptr: 1 elements that the task does not check were written, the "
            "first at "
            "[10]: the kernel must leave them as they were");
  EXPECT_EQ(lines[2],
            "size n=100: the kernel wrote into x_ptr, an input, at 4 elements, the first at [9]: it must "
            "only read it "
            "(the stores and atomics into x_ptr: /ops/12, /regions/0/ops/4)");
  EXPECT_EQ(lines[3], "size n=100: out-of-bounds-load at /regions/0/ops/2 (tt.load): " + f.summary);
  EXPECT_FALSE(ev.cases[0].outputs[1].ok());
  EXPECT_FALSE(ev.cases[0].ok());
  EXPECT_EQ(ev.feedback(1).size(), 1u);
}

}  // namespace
}  // namespace tilescope::generate
