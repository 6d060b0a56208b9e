// Reader tests for syntax that differs between Triton versions (3.4, 3.6, 3.9). The snippets follow
// what triton 3.4.0 and 3.9.0 printed for tests/ttir/kernels.py (tests/ttir/triton-3.4, triton-3.9),
// trimmed to the construct under test; op formats are from TritonOps.td of the 3.9.0 wheel.
#include <gtest/gtest.h>

#include <functional>

#include "src/exec/plan.h"
#include "src/ops/table.h"
#include "tests/cpp/ir/reader_test_util.h"
#include "tilescope/ir/reader.h"

using namespace tilescope;
using namespace tilescope::ir;
using tilescope::test::read_error;
using tilescope::test::where;

namespace {

std::string kernel(const std::string& args, const std::string& body) {
  return "module {\n  tt.func public @k(" + args + ") {\n" + body + "\n    tt.return\n  }\n}\n";
}

void walk(const Region& r, const std::function<void(const Op&)>& f) {
  for (auto& b : r.blocks)
    for (auto& o : b->ops) {
      f(*o);
      for (auto& sub : o->regions) walk(*sub, f);
    }
}

// The first op named `name` in the module's functions.
const Op* first(const Module& m, const std::string& name) {
  const Op* hit = nullptr;
  for (auto& fn : m.functions)
    walk(fn->body, [&](const Op& o) {
      if (!hit && o.name == name) hit = &o;
    });
  return hit;
}

std::string plan_error(const std::string& text) {
  Module m = read(text, "t.ttir");
  verify(m);
  exec::Plan plan;
  exec::Planner planner(m, plan);
  try {
    planner.lower(*m.entry());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kDescArgs = "%a_ptr: !tt.ptr<f32>, %M: i32, %N: i32, %s: i64";

}  // namespace

// 3.8+ prints a tensor descriptor without the inner tensor<> (`!tt.tensordesc<16x32xf32>`, and the
// stripped `<16x32xf32>` after make_tensor_descriptor's colon); 3.4-3.7 print `<tensor<16x32xf32>>`.
// Both spellings must give the same interned type.
TEST(ReaderVersions, TensorDescriptorBothSpellings) {
  std::string t = kernel(kDescArgs, R"(
    %c1_i64 = arith.constant 1 : i64
    %c0_i32 = arith.constant 0 : i32
    %d39 = tt.make_tensor_descriptor %a_ptr, [%M, %N], [%s, %c1_i64] : <f32>, <16x32xf32>
    %d36 = tt.make_tensor_descriptor %a_ptr, [%M, %N], [%s, %c1_i64] : <f32>, <tensor<16x32xf32>>
    %v = tt.descriptor_load %d39[%c0_i32, %c0_i32] : !tt.tensordesc<16x32xf32> -> tensor<16x32xf32>
    %w = tt.descriptor_load %d36[%c0_i32, %c0_i32] : !tt.tensordesc<tensor<16x32xf32>> -> tensor<16x32xf32>
    tt.descriptor_store %d39[%c0_i32, %c0_i32], %w : !tt.tensordesc<16x32xf32>, tensor<16x32xf32>)");
  Module m = read(t, "t.ttir");
  verify(m);
  const Op* mk = first(m, "tt.make_tensor_descriptor");
  ASSERT_NE(mk, nullptr);
  const Type* d = mk->result()->type;
  EXPECT_EQ(d->elem, Elem::tensordesc);
  ASSERT_NE(d->pointee, nullptr);
  EXPECT_TRUE(d->pointee->is_tensor);
  EXPECT_EQ(d->pointee->shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(d->pointee->elem, Elem::f32);
  EXPECT_EQ(mk->operands.at(0)->type->elem, Elem::ptr);  // `<f32>` is still the base pointer
  // Both descriptor spellings are one interned type, and the loads' operands carry it.
  const Function& f = *m.entry();
  const Type* d36 = nullptr;
  walk(f.body, [&](const Op& o) {
    if (o.name == "tt.make_tensor_descriptor" && o.result()->name == "d36") d36 = o.result()->type;
  });
  EXPECT_EQ(d36, d);
  EXPECT_EQ(m.desc(m.tensor(Elem::f32, {16, 32})), d);
}

TEST(ReaderVersions, TensorDescriptorMalformedIsLocated) {
  std::string unclosed = kernel(kDescArgs, R"(
    %c1_i64 = arith.constant 1 : i64
    %d = tt.make_tensor_descriptor %a_ptr, [%M, %N], [%s, %c1_i64] : <f32>, <16x32xf32
    %e = arith.constant 0 : i32)");
  std::string e = read_error(unclosed);  // reported where the '>' should be: the next line's first token
  EXPECT_NE(e.find(where(unclosed, "%e = ")), std::string::npos) << e;
  EXPECT_NE(e.find("'>'"), std::string::npos) << e;
  std::string dynamic = kernel(kDescArgs, R"(
    %c1_i64 = arith.constant 1 : i64
    %d = tt.make_tensor_descriptor %a_ptr, [%M, %N], [%s, %c1_i64] : <f32>, <16x?xf32>)");
  e = read_error(dynamic);
  EXPECT_NE(e.find(where(dynamic, "?xf32")), std::string::npos) << e;
  EXPECT_NE(e.find("dynamic"), std::string::npos) << e;
  std::string rank_mismatch = kernel(kDescArgs, R"(
    %c1_i64 = arith.constant 1 : i64
    %c0_i32 = arith.constant 0 : i32
    %d = tt.make_tensor_descriptor %a_ptr, [%M, %N], [%s, %c1_i64] : <f32>, <16x32xf32>
    %v = tt.descriptor_load %d[%c0_i32] : !tt.tensordesc<16x32xf32> -> tensor<16x32xf32>)");
  e = read_error(rank_mismatch);
  EXPECT_NE(e.find(where(rank_mismatch, "%v = ")), std::string::npos) << e;
}

// Triton <= 3.4 prints numbered SSA names and function arguments without NameLocs: the arguments are
// %arg0.. and their loc is the function's file position (real 3.4 add.ttir).
TEST(ReaderVersions, Triton34NumberedNamesAndPlainLocations) {
  std::string t = R"(#loc = loc("kernels.py":56:0)
module {
  tt.func public @add_kernel(%arg0: !tt.ptr<f32> loc("kernels.py":56:0), %arg1: i32 loc("kernels.py":56:0)) attributes {noinline = false} {
    %c128_i32 = arith.constant 128 : i32 loc(#loc1)
    %0 = tt.get_program_id x : i32 loc(#loc2)
    %1 = arith.muli %0, %c128_i32 : i32 loc(#loc3)
    %2 = arith.addi %1, %arg1 : i32 loc(#loc3)
    tt.return loc(#loc4)
  } loc(#loc)
} loc(#loc)
#loc1 = loc(unknown)
#loc2 = loc("kernels.py":57:24)
#loc3 = loc("kernels.py":58:17)
#loc4 = loc("kernels.py":62:4)
)";
  Module m = read(t, "t.ttir");
  verify(m);
  const Function* f = m.find("add_kernel");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->args().size(), 2u);
  EXPECT_EQ(f->args()[0]->name, "arg0");
  EXPECT_EQ(f->args()[1]->name, "arg1");
  const Op* pid = first(m, "tt.get_program_id");
  ASSERT_NE(pid, nullptr);
  EXPECT_EQ(pid->result()->name, "0");
  EXPECT_EQ(pid->loc.file, "kernels.py");
  EXPECT_EQ(pid->loc.line, 57);
  EXPECT_EQ(pid->loc.col, 24);  // <= 3.6: 0-based column of the last visited child node
  EXPECT_TRUE(pid->loc.var.empty());
  const Op* c = first(m, "arith.constant");
  EXPECT_FALSE(c->loc.known());  // loc(unknown)
}

// 3.7+ columns are 1-based and constants keep a NameLoc (real 3.9 add.ttir); the reader stores the
// column as printed.
TEST(ReaderVersions, Triton39NameLocsAndColumns) {
  std::string t = R"(#loc = loc("kernels.py":56:1)
module {
  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> loc("x_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %offs = arith.constant 128 : i32 loc(#loc7)
    %pid = tt.get_program_id x : i32 loc(#loc8)
    %offs_0 = arith.muli %pid, %offs : i32 loc(#loc7)
    tt.return loc(#loc3)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("kernels.py":58:12)
#loc2 = loc("kernels.py":57:11)
#loc3 = loc("kernels.py":62:5)
#loc7 = loc("offs"(#loc1))
#loc8 = loc("pid"(#loc2))
)";
  Module m = read(t, "t.ttir");
  verify(m);
  const Function* f = m.entry();
  EXPECT_EQ(f->args()[0]->name, "x_ptr");
  EXPECT_EQ(f->loc.col, 1);
  const Op* c = first(m, "arith.constant");
  EXPECT_EQ(c->loc.var, "offs");
  EXPECT_EQ(c->loc.line, 58);
  EXPECT_EQ(c->loc.col, 12);
  const Op* pid = first(m, "tt.get_program_id");
  EXPECT_EQ(pid->loc.var, "pid");
  EXPECT_EQ(pid->loc.col, 11);
}

// tt.approx_divf (3.9, tl.fdiv(approx=True)): `$x , $y attr-dict : type($x)`, F32 only.
TEST(ReaderVersions, ApproxDivf) {
  std::string t = kernel("%x: f32, %y: f32", R"(
    %q = tt.approx_divf %x, %y : f32
    %v = tt.splat %q : f32 -> tensor<32xf32>
    %w = tt.approx_divf %v, %v : tensor<32xf32>)");
  Module m = read(t, "t.ttir");
  verify(m);
  const Op* q = first(m, "tt.approx_divf");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->operands.size(), 2u);
  EXPECT_EQ(q->result()->type, m.scalar(Elem::f32));
  EXPECT_EQ(plan_error(t), "(no error)");
  std::string f16 = kernel("%x: f16", "    %q = tt.approx_divf %x, %x : f16");
  std::string e = read_error(f16);
  EXPECT_NE(e.find(where(f16, "%q = ")), std::string::npos) << e;
  EXPECT_NE(e.find("f32"), std::string::npos) << e;
}

// tt.atomic_load / tt.atomic_store (3.9): leading `sem, scope` keywords; the mask is optional.
TEST(ReaderVersions, AtomicLoadStore) {
  std::string t = kernel("%p: !tt.ptr<f32>", R"(
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %pp = tt.addptr %ps, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %m = arith.constant dense<true> : tensor<32xi1>
    %a = tt.atomic_load relaxed, gpu, %pp, %m : (tensor<32x!tt.ptr<f32>>, tensor<32xi1>) -> tensor<32xf32>
    %s = tt.atomic_load acquire, sys, %p : (!tt.ptr<f32>) -> f32
    tt.atomic_store release, gpu, %pp, %a, %m : tensor<32x!tt.ptr<f32>>
    tt.atomic_store relaxed, cta, %p, %s : !tt.ptr<f32>)");
  Module m = read(t, "t.ttir");
  verify(m);
  std::vector<const Op*> loads, stores;
  walk(m.entry()->body, [&](const Op& o) {
    if (o.name == "tt.atomic_load") loads.push_back(&o);
    if (o.name == "tt.atomic_store") stores.push_back(&o);
  });
  ASSERT_EQ(loads.size(), 2u);
  ASSERT_EQ(stores.size(), 2u);
  EXPECT_EQ(loads[0]->attr("sem")->s, "relaxed");
  EXPECT_EQ(loads[0]->attr("scope")->s, "gpu");
  EXPECT_EQ(loads[0]->operands.size(), 2u);
  EXPECT_EQ(loads[0]->result()->type, m.tensor(Elem::f32, {32}));
  EXPECT_EQ(loads[1]->attr("scope")->s, "sys");
  EXPECT_EQ(loads[1]->operands.size(), 1u);
  EXPECT_EQ(stores[0]->operands.size(), 3u);
  EXPECT_EQ(stores[0]->attr("sem")->s, "release");
  EXPECT_EQ(stores[1]->attr("scope")->s, "cta");
  EXPECT_EQ(stores[1]->operands.size(), 2u);
  EXPECT_EQ(plan_error(t), "(no error)");  // both run (as a volatile load and a masked store)

  std::string bad =
      kernel("%p: !tt.ptr<f32>", "    %a = tt.atomic_load relaxed, gpu, %p : (!tt.ptr<f32>) -> i32");
  std::string e = read_error(bad);
  EXPECT_NE(e.find(where(bad, "%a = ")), std::string::npos) << e;
  std::string nosem = kernel("%p: !tt.ptr<f32>", "    %a = tt.atomic_load %p : (!tt.ptr<f32>) -> f32");
  e = read_error(nosem);
  EXPECT_NE(e.find("sem"), std::string::npos) << e;
  EXPECT_NE(e.find("t.ttir:3:"), std::string::npos) << e;
}

// tt.atomic_poll (3.9): `sem, scope, ptr, expected [timeout %t] : Tp, Te -> Ti1` (real 3.9
// atomic_poll.ttir). Read and verified, but not run: planning gives a located "unsupported op".
TEST(ReaderVersions, AtomicPollReadsButIsUnsupported) {
  std::string t = kernel("%flag_ptr: !tt.ptr<i32> loc(\"flag_ptr\"(#loc))", R"(
    %ok = arith.constant 0 : i64
    %ok_0 = arith.constant dense<1> : tensor<8xi32>
    %offs = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %ok_1 = tt.splat %flag_ptr : !tt.ptr<i32> -> tensor<8x!tt.ptr<i32>>
    %ok_2 = tt.addptr %ok_1, %offs : tensor<8x!tt.ptr<i32>>, tensor<8xi32>
    %ok_3 = tt.atomic_poll acquire, gpu, %ok_2, %ok_0 timeout %ok : tensor<8x!tt.ptr<i32>>, tensor<8xi32> -> tensor<8xi1> loc(#loc2)
    %ok_4 = tt.atomic_poll relaxed, gpu, %ok_2, %ok_0 : tensor<8x!tt.ptr<i32>>, tensor<8xi32> -> tensor<8xi1>)");
  t = "#loc = loc(\"kernels.py\":10:1)\n" + t +
      "#loc1 = loc(\"kernels.py\":12:10)\n#loc2 = loc(\"ok\"(#loc1))\n";
  Module m = read(t, "t.ttir");
  verify(m);
  const Op* p = first(m, "tt.atomic_poll");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->operands.size(), 3u);
  EXPECT_EQ(p->operands[2]->type, m.scalar(Elem::i64));
  EXPECT_NE(p->attr("timeout"), nullptr);
  EXPECT_EQ(p->attr("sem")->s, "acquire");
  EXPECT_EQ(p->result()->type, m.tensor(Elem::i1, {8}));
  ASSERT_NE(find_op("tt.atomic_poll"), nullptr);
  EXPECT_EQ(tilescope::ops::lowering(find_op("tt.atomic_poll")->code), nullptr);
  std::string e = plan_error(t);
  EXPECT_NE(e.find(where(t, "%ok_3 = ") + "unsupported op 'tt.atomic_poll'"), std::string::npos) << e;
  EXPECT_NE(e.find("kernels.py:12:10"), std::string::npos) << e;

  std::string bad_timeout = kernel("%p: !tt.ptr<i32>, %t: i32", R"(
    %e = arith.constant 1 : i32
    %r = tt.atomic_poll acquire, gpu, %p, %e timeout %t : !tt.ptr<i32>, i32 -> i1)");
  e = read_error(bad_timeout);
  EXPECT_NE(e.find(where(bad_timeout, "%r = ")), std::string::npos) << e;
  EXPECT_NE(e.find("timeout"), std::string::npos) << e;
  std::string float_poll = kernel("%p: !tt.ptr<f32>", R"(
    %e = arith.constant 1.0 : f32
    %r = tt.atomic_poll acquire, gpu, %p, %e : !tt.ptr<f32>, f32 -> i1)");
  e = read_error(float_poll);
  EXPECT_NE(e.find(where(float_poll, "%r = ")), std::string::npos) << e;
}

// tt.grid_dependency_wait / tt.grid_dependency_launch_dependents (3.9; `attr-dict` only). They take
// no keywords, so the next line's op is not swallowed; and ttg.barrier (3.7+) keeps its keyword.
TEST(ReaderVersions, GridDependencyAndBarriers) {
  std::string t = kernel("%x: i32", R"(
    tt.grid_dependency_wait
    %y = arith.addi %x, %x : i32
    ttg.barrier all
    tt.grid_dependency_launch_dependents)");
  Module m = read(t, "t.ttir");
  verify(m);
  std::vector<std::string> names;
  for (auto& o : m.entry()->body.blocks[0]->ops) names.push_back(o->name);
  EXPECT_EQ(names, (std::vector<std::string>{"tt.grid_dependency_wait", "arith.addi", "ttg.barrier",
                                             "tt.grid_dependency_launch_dependents", "tt.return"}));
  EXPECT_NE(first(m, "ttg.barrier")->attr("all"), nullptr);
  EXPECT_TRUE(first(m, "tt.grid_dependency_wait")->operands.empty());
  EXPECT_EQ(plan_error(t), "(no error)");
  std::string bad = kernel("%x: i32", "    tt.grid_dependency_wait %x");
  std::string e = read_error(bad);
  EXPECT_NE(e.find(where(bad, "%x\n") + "'tt.grid_dependency_wait' takes no operands"), std::string::npos)
      << e;
  std::string res = kernel("%x: i32", "    %r = tt.grid_dependency_wait");
  e = read_error(res);
  EXPECT_NE(e.find(where(res, "%r = ") + "'tt.grid_dependency_wait' has no results"), std::string::npos) << e;
}

// 3.9 prints float unary minus as arith.negf (3.6: arith.subf from 0.0).
TEST(ReaderVersions, NegfIsUnary) {
  std::string t = kernel("%x: f32", R"(
    %v = tt.splat %x : f32 -> tensor<16xf32>
    %n = arith.negf %v : tensor<16xf32>)");
  Module m = read(t, "t.ttir");
  verify(m);
  const Op* n = first(m, "arith.negf");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->operands.size(), 1u);
  std::string two = kernel("%x: f32", "    %n = arith.negf %x, %x : f32");
  EXPECT_NE(read_error(two).find(where(two, "%n = ")), std::string::npos) << read_error(two);
}
