// Reader tests on hand-written TTIR covering forms the frontend rarely prints (reference §3.1-§3.2):
// attributes and their storage encodings, every type spelling, SSA name grammar, locations,
// CFG block arguments, implicit terminators, generic forms; plus located errors.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "src/ops/table.h"
#include "tests/cpp/ir/reader_test_util.h"
#include "tilescope/ir/reader.h"

using namespace tilescope;
using namespace tilescope::ir;
using tilescope::test::read_error;
using tilescope::test::where;

namespace {

// A module with one public kernel @k(args) whose body is `body` followed by tt.return.
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

const Op* def_of(const Module& m, const std::string& value) {
  const Op* hit = nullptr;
  for (auto& fn : m.functions)
    walk(fn->body, [&](const Op& o) {
      for (auto& r : o.results)
        if (r->name == value) hit = &o;
    });
  return hit;
}

const Attr& value_attr(const Module& m, const std::string& v) {
  const Op* o = def_of(m, v);
  if (!o || !o->attr("value")) throw std::runtime_error("no constant " + v);
  return *o->attr("value");
}

}  // namespace

TEST(ReaderForms, ConstantsAndDenseEncodings) {
  std::string t = kernel("", R"(
    %h = arith.constant 0x7E00 : f16
    %f = arith.constant 2.500000e+00 : f64
    %q = arith.constant -2147483648 : i32
    %true = arith.constant true
    %d = arith.constant dense<[1, 2, -1, 4]> : tensor<4xi32>
    %e = arith.constant dense<"0x0100000002000000"> : tensor<2xi32>
    %t = arith.constant dense<true> : tensor<4xi1>
    %g = arith.constant dense<[true, false]> : tensor<2xi1>
    %one16 = arith.constant dense<1.000000e+00> : tensor<2xf16>
    %onebf = arith.constant dense<1.000000e+00> : tensor<2xbf16>
    %ninf = arith.constant dense<0xFF800000> : tensor<2xf32>
    %z = arith.constant dense<[[1.000000e+00, 2.0], [3.0, -4.0]]> : tensor<2x2xf32>
    %e4 = arith.constant dense<0x38> : tensor<2xf8E4M3FN>
    %m1 = arith.constant dense<-1> : tensor<2xi64>
    %dd = arith.constant dense<5.000000e-01> : tensor<2xf64>)");
  Module m = read(t, "t.ttir");
  verify(m);
  const Attr& h = value_attr(m, "h");
  EXPECT_EQ(h.kind, Attr::Kind::Float);
  EXPECT_EQ(h.fbits, 0x7E00u);  // f16 NaN, raw bits (reference §2.1)
  EXPECT_EQ(h.type->str(), "f16");
  EXPECT_EQ(value_attr(m, "f").f, 2.5);
  EXPECT_EQ(value_attr(m, "f").type->elem, Elem::f64);
  EXPECT_EQ(value_attr(m, "q").i, -2147483648LL);
  EXPECT_EQ(value_attr(m, "true").kind, Attr::Kind::Bool);
  EXPECT_TRUE(value_attr(m, "true").b);
  EXPECT_EQ(def_of(m, "true")->result()->type->str(), "i1");

  const DenseAttr& d = value_attr(m, "d").dense;
  EXPECT_FALSE(d.splat);
  EXPECT_EQ(d.bytes, (std::vector<uint8_t>{1, 0, 0, 0, 2, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 4, 0, 0, 0}));
  const DenseAttr& e = value_attr(m, "e").dense;
  EXPECT_FALSE(e.splat);
  EXPECT_EQ(e.bytes, (std::vector<uint8_t>{1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_TRUE(value_attr(m, "t").dense.splat);
  EXPECT_EQ(value_attr(m, "t").dense.bytes, std::vector<uint8_t>{1});
  EXPECT_EQ(value_attr(m, "g").dense.bytes, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(value_attr(m, "one16").dense.bytes, (std::vector<uint8_t>{0x00, 0x3C}));  // IEEE half 1.0
  EXPECT_EQ(value_attr(m, "onebf").dense.bytes, (std::vector<uint8_t>{0x80, 0x3F}));  // bfloat16 1.0
  EXPECT_EQ(value_attr(m, "ninf").dense.bytes, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0xFF}));
  const DenseAttr& z = value_attr(m, "z").dense;
  ASSERT_EQ(z.bytes.size(), 16u);
  float zf[4];
  std::memcpy(zf, z.bytes.data(), 16);
  EXPECT_EQ(zf[0], 1.0f);
  EXPECT_EQ(zf[3], -4.0f);
  EXPECT_EQ(value_attr(m, "e4").dense.bytes, std::vector<uint8_t>{0x38});
  EXPECT_EQ(value_attr(m, "m1").dense.bytes, std::vector<uint8_t>(8, 0xFF));
  double half;
  std::memcpy(&half, value_attr(m, "dd").dense.bytes.data(), 8);
  EXPECT_EQ(half, 0.5);
}

TEST(ReaderForms, EveryTypeSpelling) {
  std::string t = kernel(
      "%a: !tt.ptr<f32, 3>, %b: !tt.tensordesc<16x32xf16>, %b2: !tt.tensordesc<tensor<16x32xf16>>, %c: bf16, "
      "%d: f8E4M3FNUZ, %e: f8E5M2FNUZ, %f: i16, %g: tensor<4x!tt.ptr<bf16>>, %h: !tt.ptr<tensor<16x32xf32>>, "
      "%i: f64, %j: tensor<f32>, %k2: f8E4M3FN, %l: f8E5M2, %m: i8, %n: i64, %o: tensor<2x2x!tt.ptr<i1>>",
      "");
  Module m = read(t, "t.ttir");
  const auto& a = m.entry()->args();
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(a[0]->type->addr_space, 3);
  EXPECT_EQ(a[0]->type->str(), "!tt.ptr<f32, 3>");
  EXPECT_EQ(a[1]->type, a[2]->type);  // 3.8+ and 3.2-3.7 spellings of one descriptor type
  EXPECT_EQ(a[1]->type->pointee->str(), "tensor<16x32xf16>");
  EXPECT_EQ(a[3]->type->elem, Elem::bf16);
  EXPECT_EQ(a[4]->type->elem, Elem::f8e4m3fnuz);
  EXPECT_EQ(a[5]->type->elem, Elem::f8e5m2fnuz);
  EXPECT_EQ(a[6]->type->elem, Elem::i16);
  EXPECT_EQ(a[7]->type->str(), "tensor<4x!tt.ptr<bf16>>");
  EXPECT_EQ(a[7]->type->pointee->elem, Elem::bf16);
  EXPECT_TRUE(a[8]->type->is_block_ptr());
  EXPECT_EQ(a[9]->type->elem, Elem::f64);
  EXPECT_TRUE(a[10]->type->is_tensor);
  EXPECT_EQ(a[10]->type->rank(), 0);
  EXPECT_EQ(a[11]->type->elem, Elem::f8e4m3fn);
  EXPECT_EQ(a[12]->type->elem, Elem::f8e5m2);
  EXPECT_EQ(a[15]->type->shape, (std::vector<int64_t>{2, 2}));
}

// Signed / unsigned integer types as Triton prints them for descriptors of signed or unsigned tensors
// (issue 9 item 3: `unsupported type 'ui8'`): signless on the engine, so a descriptor of `ui8` and its
// `tensor<...xi8>` loads have one element type.
TEST(ReaderForms, SignedAndUnsignedIntegerTypes) {
  std::string t = kernel(
      "%a: !tt.tensordesc<tensor<16x32xui8>>, %b: !tt.tensordesc<tensor<8xsi32>>, %c: si8, %d: ui16, "
      "%e: !tt.ptr<ui64>, %f: si1",
      "");
  Module m = read(t, "t.ttir");
  const auto& a = m.entry()->args();
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0]->type->pointee->str(), "tensor<16x32xi8>");
  EXPECT_EQ(a[1]->type->pointee->elem, Elem::i32);
  EXPECT_EQ(a[2]->type->elem, Elem::i8);
  EXPECT_EQ(a[3]->type->elem, Elem::i16);
  EXPECT_EQ(a[4]->type->pointee->elem, Elem::i64);
  EXPECT_EQ(a[5]->type->elem, Elem::i1);
  // Only integer widths: `uf32` and `si7` stay errors.
  EXPECT_NE(read_error(kernel("%a: uf32", "")).find("unsupported type 'uf32'"), std::string::npos);
  EXPECT_NE(read_error(kernel("%a: si7", "")).find("unsupported type 'si7'"), std::string::npos);
}

TEST(ReaderForms, SsaNameGrammar) {
  std::string t = kernel("%foo.x: i32, %arg3: i32",
                         R"(    %c-1_i32 = arith.constant -1 : i32
    %0 = arith.addi %foo.x, %arg3 : i32
    %1 = arith.addi %0, %c-1_i32 overflow<nsw> : i32
    %$x = arith.addi %1, %1 : i32
    %f = arith.sitofp %$x : i32 to f32
    %g = arith.addf %f, %f fastmath<fast> : f32
    %p:2 = "tt.split"(%j) : (tensor<2x2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    %j = tt.join %s, %s : tensor<2xf32> -> tensor<2x2xf32>)");
  // %j is used before its definition: not allowed in a single block.
  EXPECT_NE(read_error(t).find("use of undefined value '%j'"), std::string::npos);
  t = kernel("%foo.x: i32, %arg3: i32",
             R"(    %c-1_i32 = arith.constant -1 : i32
    %0 = arith.addi %foo.x, %arg3 : i32
    %1 = arith.addi %0, %c-1_i32 overflow<nsw> : i32
    %$x = arith.addi %1, %1 : i32
    %f = arith.sitofp %$x : i32 to f32
    %g = arith.addf %f, %f fastmath<fast> : f32
    %s = tt.splat %g : f32 -> tensor<2xf32>
    %j = tt.join %s, %s : tensor<2xf32> -> tensor<2x2xf32>
    %p:2 = "tt.split"(%j) : (tensor<2x2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    %r = arith.addf %p#0, %p#1 : tensor<2xf32>
    %q = "arith.addi"(%0, %0) {tt.divisibility = 16 : i32} : (i32, i32) -> i32)");
  Module m = read(t, "t.ttir");
  verify(m);
  EXPECT_EQ(m.entry()->args()[0]->name, "foo.x");
  const Op* add = def_of(m, "0");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->operands[0]->name, "foo.x");
  EXPECT_EQ(add->operands[1]->name, "arg3");
  EXPECT_EQ(def_of(m, "1")->operands[1]->name, "c-1_i32");
  EXPECT_NE(def_of(m, "1")->attr("overflow"), nullptr);
  EXPECT_NE(def_of(m, "g")->attr("fastmath"), nullptr);
  const Op* r = def_of(m, "r");
  EXPECT_EQ(r->operands[0]->name, "p#0");
  EXPECT_EQ(r->operands[1]->index, 1);
  const Op* q = def_of(m, "q");
  EXPECT_EQ(q->name, "arith.addi");
  EXPECT_EQ(q->attr("tt.divisibility")->i, 16);
}

TEST(ReaderForms, LocationsAliasesForwardCallsiteFused) {
  std::string t = R"(#loc = loc("k.py":1:0)
#loc3 = loc("/env/site-packages/triton/language/standard.py":10:5)
module {
  tt.func public @k(%x: i32 loc("x"(#loc))) {
    %0 = arith.addi %x, %x : i32 loc(#loc5)
    %1 = arith.addi %0, %x : i32 loc(fused[#loc1, #loc2])
    %2 = arith.addi %1, %x : i32 loc(fused<"fz">[unknown, #loc2])
    %3 = arith.addi %2, %x : i32 loc(unknown)
    %4 = arith.addi %3, %x : i32 loc("direct.py":7:3)
    %5 = arith.addi %4, %x : i32 loc("v"("k.py":9:1))
    %6 = arith.addi %5, %x : i32 loc("outer"(#loc4))
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("k.py":2:4)
#loc2 = loc("k.py":3:4)
#loc4 = loc("y"(#loc2))
#loc5 = loc(callsite(#loc3 at callsite(#loc6 at #loc4)))
#loc6 = loc("/env/site-packages/triton/language/core.py":20:1)
)";
  Module m = read(t, "t.ttir");
  const Function& f = *m.entry();
  EXPECT_EQ(f.loc.str(), "k.py:1:0");
  EXPECT_EQ(f.args()[0]->loc.var, "x");
  const Op* o0 = def_of(m, "0");
  EXPECT_EQ(o0->loc.file, "k.py");
  EXPECT_EQ(o0->loc.line, 3);
  EXPECT_EQ(o0->loc.col, 4);
  EXPECT_EQ(o0->loc.var, "y");
  ASSERT_EQ(o0->loc.stack.size(), 3u);  // innermost first
  EXPECT_EQ(o0->loc.stack[0].second, 10);
  EXPECT_EQ(o0->loc.stack[1].second, 20);
  EXPECT_EQ(o0->loc.stack[2], (std::pair<std::string, int>{"k.py", 3}));
  EXPECT_EQ(o0->pos.line, 5);
  EXPECT_EQ(o0->pos.col, 5);
  EXPECT_EQ(def_of(m, "1")->loc.str(), "k.py:2:4");
  EXPECT_EQ(def_of(m, "2")->loc.str(), "k.py:3:4");
  EXPECT_FALSE(def_of(m, "3")->loc.known());
  EXPECT_EQ(def_of(m, "4")->loc.str(), "direct.py:7:3");
  EXPECT_EQ(def_of(m, "5")->loc.var, "v");
  EXPECT_EQ(def_of(m, "5")->loc.str(), "k.py:9:1");
  EXPECT_EQ(def_of(m, "6")->loc.var, "outer");  // the outermost name wins
  EXPECT_EQ(def_of(m, "6")->loc.str(), "k.py:3:4");
}

TEST(ReaderForms, BlocksWithArgumentsAndBranches) {
  std::string t = R"(module {
  tt.func private @sel(%c: i1, %a: i32) -> i32 attributes {noinline = true} {
    cf.cond_br %c, ^bb1(%a : i32), ^bb2
  ^bb1(%v: i32 loc("v")):  // pred: ^bb0
    cf.br ^bb3(%v : i32)
  ^bb2:  // pred: ^bb0
    %c1 = arith.constant 1 : i32
    cf.br ^bb3(%c1 : i32)
  ^bb3(%r: i32):  // 2 preds: ^bb1, ^bb2
    tt.return %r : i32
  }
  tt.func public @k(%p: !tt.ptr<i32>, %c: i1, %a: i32) {
    %0 = tt.call @sel(%c, %a) : (i1, i32) -> i32
    tt.store %p, %0 : !tt.ptr<i32>
    tt.return
  }
}
)";
  Module m = read(t, "t.ttir");
  verify(m);
  EXPECT_EQ(m.entry()->name, "k");
  const Function& sel = *m.find("sel");
  ASSERT_EQ(sel.body.blocks.size(), 4u);
  const Op& cb = *sel.body.blocks[0]->ops.back();
  ASSERT_EQ(cb.successors.size(), 2u);
  EXPECT_EQ(cb.successors[0], sel.body.blocks[1].get());
  ASSERT_EQ(cb.successor_operands[0].size(), 1u);
  EXPECT_EQ(cb.successor_operands[0][0], sel.args()[1].get());
  EXPECT_TRUE(cb.successor_operands[1].empty());
  const Block& b3 = *sel.body.blocks[3];
  EXPECT_EQ(b3.label, "bb3");
  ASSERT_EQ(b3.args.size(), 1u);
  const Op& br = *sel.body.blocks[2]->ops.back();
  EXPECT_EQ(br.name, "cf.br");
  EXPECT_EQ(br.successors[0], &b3);
  EXPECT_EQ(br.successor_operands[0][0]->name, "c1");
  EXPECT_EQ(sel.body.blocks[1]->args[0]->loc.var, "v");
  EXPECT_EQ(b3.ops.back()->operands[0], b3.args[0].get());
}

TEST(ReaderForms, RegionsWithImplicitTerminators) {
  std::string t = kernel("%c: i1, %n: i32, %p: !tt.ptr<i32>", R"(
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = scf.if %c -> (i32) {
      scf.yield %c0 : i32
    } else {
      scf.yield %c1 : i32
    }
    scf.if %c {
      tt.store %p, %r : !tt.ptr<i32>
    }
    scf.for %i = %c0 to %n step %c1  : i32 {
      tt.store %p, %i : !tt.ptr<i32>
    } {tt.num_stages = 3 : i32}
    scf.while : () -> () {
      scf.condition(%c)
    } do {
      scf.yield
    }
    %w:2 = scf.while (%a = %c0, %b = %c1) : (i32, i32) -> (i32, i32) {
      %lt = arith.cmpi slt, %a, %n : i32
      scf.condition(%lt) %a, %b : i32, i32
    } do {
    ^bb0(%a: i32, %b: i32):
      %a1 = arith.addi %a, %b : i32
      scf.yield %a1, %b : i32, i32
    } attributes {foo = 1 : i32})");
  Module m = read(t, "t.ttir");
  verify(m);
  const Function& f = *m.entry();
  const auto& ops = f.body.blocks[0]->ops;
  const Op& ifr = *ops[2];
  EXPECT_EQ(ifr.name, "scf.if");
  EXPECT_EQ(ifr.regions.size(), 2u);
  EXPECT_EQ(ifr.result()->type->str(), "i32");
  const Op& ifn = *ops[3];
  ASSERT_EQ(ifn.regions.size(), 1u);                                    // no else written: none created
  EXPECT_EQ(ifn.regions[0]->blocks[0]->ops.back()->name, "scf.yield");  // implicit terminator
  const Op& loop = *ops[4];
  EXPECT_EQ(loop.name, "scf.for");
  EXPECT_EQ(loop.results.size(), 0u);
  EXPECT_EQ(loop.regions[0]->blocks[0]->args.size(), 1u);
  EXPECT_EQ(loop.regions[0]->blocks[0]->ops.back()->name, "scf.yield");
  EXPECT_EQ(loop.attr("tt.num_stages")->i, 3);
  const Op& w0 = *ops[5];
  EXPECT_EQ(w0.name, "scf.while");
  EXPECT_EQ(w0.operands.size(), 0u);
  EXPECT_EQ(w0.regions[0]->blocks[0]->ops.back()->operands.size(), 1u);
  const Op& w = *ops[6];
  EXPECT_EQ(w.results.size(), 2u);
  EXPECT_EQ(w.operands.size(), 2u);
  EXPECT_EQ(w.attr("foo")->i, 1);
  EXPECT_EQ(w.regions[1]->blocks[0]->args.size(), 2u);
}

TEST(ReaderForms, CustomFormsAndKeywords) {
  std::string t =
      kernel("%x: tensor<4xf32>, %p: tensor<4x!tt.ptr<f32>>, %m: tensor<4xi1>, %s: i64, %i: i32, %cb: i1", R"(
    %a = tt.load %p, %m evictionPolicy = evict_first cacheModifier = ca : tensor<4x!tt.ptr<f32>>
    %b = tt.reshape %x allow_reorder efficient_layout : tensor<4xf32> -> tensor<2x2xf32>
    %c = tt.clampf %a, %x, %x, propagateNan = all : tensor<4xf32>
    %d = tt.int_to_ptr %s : i64 -> !tt.ptr<f32>
    %e = tt.ptr_to_int %d : !tt.ptr<f32> -> i64
    %one = tt.reshape %x : tensor<4xf32> -> tensor<1x4xf32>
    %g = tt.splat %i : i32 -> tensor<1x1xi32>
    %u = tt.unsplat %g : tensor<1x1xi32>
    %y = arith.select %m, %a, %x : tensor<4xi1>, tensor<4xf32>
    %z = arith.select %cb, %a, %x : tensor<4xf32>
    %f = arith.cmpf une, %a, %x : tensor<4xf32>
    %bc = tt.bitcast %a : tensor<4xf32> -> tensor<4xi32>
    gpu.barrier
    llvm.intr.assume %f : tensor<4xi1>
    tt.print "a\"b\0A" {hex = false, isSigned = array<i32>}
    tt.print " v: " {hex = false, isSigned = array<i32: 1, 0>} : %i, %s : i32, i64
    tt.store %p, %a, %m cacheModifier = cs : tensor<4x!tt.ptr<f32>>)");
  // llvm.intr.assume takes an i1 scalar: the tensor form above fails verify, not read.
  Module m = read(t, "t.ttir");
  EXPECT_NE(read_error(t).find("needs an i1"), std::string::npos);
  const Op* a = def_of(m, "a");
  EXPECT_EQ(a->attr("cache")->s, "ca");
  EXPECT_EQ(a->attr("evict")->s, "evict_first");
  EXPECT_EQ(def_of(m, "b")->attr("allow_reorder")->kind, Attr::Kind::Unit);
  EXPECT_NE(def_of(m, "b")->attr("efficient_layout"), nullptr);
  EXPECT_EQ(def_of(m, "c")->attr("propagateNan")->s, "all");
  EXPECT_EQ(def_of(m, "d")->result()->type->str(), "!tt.ptr<f32>");
  EXPECT_EQ(def_of(m, "u")->result()->type->str(), "i32");
  EXPECT_EQ(def_of(m, "z")->operands[0]->type->str(), "i1");  // one type: scalar condition
  EXPECT_EQ(def_of(m, "y")->operands[0]->type->str(), "tensor<4xi1>");
  EXPECT_EQ(def_of(m, "f")->attr("predicate")->s, "une");
  int prints = 0;
  walk(m.entry()->body, [&](const Op& o) {
    if (o.name != "tt.print") return;
    if (prints++ == 0) {
      EXPECT_EQ(o.attr("prefix")->s, "a\"b\n");
      EXPECT_TRUE(o.operands.empty());
      EXPECT_TRUE(o.attr("isSigned")->ints.empty());
    } else {
      EXPECT_EQ(o.operands.size(), 2u);
      EXPECT_EQ(o.attr("isSigned")->ints, (std::vector<int64_t>{1, 0}));
    }
  });
  EXPECT_EQ(prints, 2);
}

// ------------------------------------------------------------------------------------------ errors

struct ErrorCase {
  const char* what;
  std::string text;
  std::string marker;  // the error points at the first occurrence of this text
  std::string message;
};

TEST(ReaderErrors, LocatedMessages) {
  const std::string A = "%x: i32, %f: f32, %p: !tt.ptr<i32>";
  std::vector<ErrorCase> cases = {
      {"undefined value", kernel(A, "    %0 = arith.addi %y, %x : i32"), "%y", "use of undefined value '%y'"},
      {"type mismatch", kernel(A, "    %0 = arith.addi %x, %f : i32"),
       "%f, %x" == std::string() ? "" : "%f :", "'%f' has type f32, but the op expects i32"},
      {"redefinition", kernel(A, "    %x = arith.addi %x, %x : i32"), "%x = ", "redefinition of '%x'"},
      {"unknown op", kernel(A, "    %0 = tt.frobnicate %x : i32"), "tt.frobnicate",
       "unknown op 'tt.frobnicate'"},
      {"unknown block", kernel(A, "    cf.br ^bb7\n  ^bb1:"), "^bb7", "use of undefined block '^bb7'"},
      {"undefined alias", kernel(A, "    %0 = arith.addi %x, %x : i32 loc(#loc9)"), "#loc9",
       "undefined location alias '#loc9'"},
      {"unterminated string", kernel(A, "    tt.print \"abc : %x : i32"), "\"abc", "unterminated string"},
      {"unsupported type", kernel("%x: tensor<4xi4>", ""), "i4>", "unsupported type 'i4'"},
      {"ttgir encoding", kernel("%x: tensor<4xi32, #blocked>", ""), ", #blocked", "tensor encodings"},
      {"result count", kernel(A, "    %a:2 = arith.addi %x, %x : i32"), "%a:2",
       "has 1 result(s) but 2 name(s)"},
      {"missing predicate", kernel(A, "    %0 = arith.cmpi %x, %x : i32"), "%0 =", "leading keyword"},
      {"bad axis", kernel(A, "    %0 = tt.get_program_id w : i32"), "w :", "expected program axis x, y or z"},
      {"generic-only op", kernel(A, "    %0 = tt.reduce %x : i32"),
       "%0 =", "only written in the generic form"},
      {"bad block redefinition", kernel(A, "    cf.br ^bb1\n  ^bb1:\n    cf.br ^bb1\n  ^bb1:"),
       "^bb1:\n    tt.return", "redefinition of block"},
      {"dense count", kernel(A, "    %0 = arith.constant dense<[1, 2, 3]> : tensor<4xi32>"), "dense<",
       "dense attribute has 3 elements"},
      {"int range", kernel(A, "    %0 = arith.constant 300 : i8"), "300", "does not fit i8"},
      {"not a module", "tt.func @k() {}", "tt.func", "expected 'module'"},
      {"empty input", "", "", "no module found"},
      {"missing brace", "module {\n  tt.func public @k() {\n    tt.return\n", "{\n    tt.return",
       "unterminated region"},
      {"load of non-pointer", kernel(A, "    %0 = tt.load %x : i32"), "i32\n",
       "tt.load needs a pointer type"},
      {"stray token", kernel(A, "    %0 = arith.addi %x, %x : i32 )"), ")\n", "expected"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    std::string err = read_error(c.text);
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
    if (!c.marker.empty()) {
      EXPECT_EQ(err.rfind(where(c.text, c.marker), 0), 0u) << err;
    }
  }
}

TEST(ReaderErrors, DepthIsBounded) {
  // 300 nested scf.if regions and a 300-deep pointer type: an error, not a stack overflow.
  std::string body;
  for (int i = 0; i < 300; ++i) body += "scf.if %c {\n";
  for (int i = 0; i < 300; ++i) body += "}\n";
  std::string err = read_error(kernel("%c: i1", body));
  EXPECT_NE(err.find("nesting deeper than 256"), std::string::npos) << err;
  std::string ty;
  for (int i = 0; i < 300; ++i) ty += "!tt.ptr<";
  ty += "i32";
  for (int i = 0; i < 300; ++i) ty += ">";
  err = read_error(kernel("%p: " + ty, ""));
  EXPECT_NE(err.find("nesting deeper than 256"), std::string::npos) << err;
  std::string dense = "dense<";
  for (int i = 0; i < 300; ++i) dense += "[";
  err = read_error(kernel("", "    %0 = arith.constant " + dense));
  EXPECT_NE(err.find("t.ttir:"), std::string::npos) << err;
  std::string loc = "loc(";
  for (int i = 0; i < 300; ++i) loc += "callsite(";
  err = read_error(kernel("", "    gpu.barrier " + loc));
  EXPECT_NE(err.find("nesting deeper than 256"), std::string::npos) << err;
  // An alias cycle is reported, not followed forever.
  err = read_error("#a = loc(#b)\n#b = loc(#a)\n" + kernel("", "    gpu.barrier loc(#a)"));
  EXPECT_NE(err.find("location alias cycle"), std::string::npos) << err;
}

TEST(ReaderErrors, ReadFileMissing) {
  try {
    read_file("/nonexistent/dir/k.ttir");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/k.ttir: cannot open"), std::string::npos);
  }
}

// ------------------------------------------------------------------------------------------ verify

TEST(VerifyErrors, ShapeAndTypeRules) {
  const std::string A =
      "%x: i32, %f: f32, %v: tensor<2xi32>, %p: tensor<4x!tt.ptr<f32>>, %m: tensor<2xi1>, %a: "
      "tensor<4x8xf32>, "
      "%b: tensor<4x8xf32>";
  std::vector<ErrorCase> cases = {
      {"broadcast rank", kernel(A, "    %0 = tt.broadcast %v : tensor<2xi32> -> tensor<4x2xi32>"),
       "%0 =", "equal rank"},
      {"broadcast dims", kernel(A, "    %0 = tt.broadcast %v : tensor<2xi32> -> tensor<4xi32>"),
       "%0 =", "cannot broadcast [2] to [4]"},
      {"expand_dims",
       kernel(A, "    %0 = tt.expand_dims %v {axis = 0 : i32} : tensor<2xi32> -> tensor<2x1xi32>"),
       "%0 =", "result must be [1x2]"},
      {"reshape numel", kernel(A, "    %0 = tt.reshape %v : tensor<2xi32> -> tensor<4xi32>"),
       "%0 =", "cannot reshape"},
      {"dot shapes",
       kernel(A, "    %0 = tt.dot %a, %b, %a : tensor<4x8xf32> * tensor<4x8xf32> -> tensor<4x8xf32>"),
       "%0 =", "inner dimensions differ"},
      {"not power of two",
       kernel(A, "    %0 = tt.make_range {end = 3 : i32, start = 0 : i32} : tensor<3xi32>"),
       "%0 =", "power of two"},
      {"too large", kernel(A, "    %0 = tt.splat %x : i32 -> tensor<2097152xi32>"),
       "%0 =", "no larger than 1048576"},
      {"splat element", kernel(A, "    %0 = tt.splat %x : i32 -> tensor<4xf32>"),
       "%0 =", "scalar and a tensor"},
      {"load mask", kernel(A, "    %0 = tt.load %p, %m : tensor<4x!tt.ptr<f32>>"),
       "%0 =", "mask tensor<2xi1> must be i1 with the pointer's shape"},
      {"predicate", kernel(A, "    %0 = arith.cmpi foo, %x, %x : i32"), "%0 =", "invalid predicate 'foo'"},
      {"int op on float", kernel(A, "    %0 = arith.addi %f, %f : f32"), "%0 =", "needs integer operands"},
      {"store value", kernel(A, "    tt.store %p, %a : tensor<4x!tt.ptr<f32>>"), "tt.store",
       "must be the pointee"},
      {"yield type", kernel(A, R"(    %c1 = arith.constant 1 : i32
    %0 = scf.for %i = %x to %x step %c1 iter_args(%s = %x) -> (i32) : i32 {
      scf.yield %f : f32
    })"),
       "scf.yield", "scf.for result expects i32"},
      {"if without else", kernel("%c: i1, %x: i32", R"(    %0 = scf.if %c -> (i32) {
      scf.yield %x : i32
    })"),
       "%0 =", "needs an else region"},
      {"reduce result", kernel(A, R"(    %0 = "tt.reduce"(%a) <{axis = 1 : i32}> ({
    ^bb0(%l: f32, %r: f32):
      %s = arith.addf %l, %r : f32
      tt.reduce.return %s : f32
    }) : (tensor<4x8xf32>) -> tensor<8xf32>)"),
       "%0 =", "expected [4] of f32"},
      {"unknown callee", kernel(A, "    tt.call @nope(%x) : (i32) -> ()"), "tt.call",
       "unknown callee '@nope'"},
      {"branch args", kernel(A, "    cf.br ^bb1(%x : i32)\n  ^bb1:"), "cf.br", "passes 1 value(s) to '^bb1'"},
      {"no terminator",
       "module {\n  tt.func public @k(%x: i32) {\n    %0 = arith.addi %x, %x : i32\n  }\n}\n",
       "%0 =", "block does not end with a terminator"},
      {"return types", "module {\n  tt.func public @k(%x: i32) -> f32 {\n    tt.return %x : i32\n  }\n}\n",
       "tt.return", "function's result expects f32"},
      {"fp_to_fp downcast", kernel(A, "    %0 = tt.fp_to_fp %f : f32 -> f16"),
       "%0 =", "needs a rounding mode"},
      {"trans order",
       kernel(A, "    %0 = tt.trans %a {order = array<i32: 0, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>"),
       "%0 =", "order must be a permutation"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    Module m;
    try {
      m = read(c.text, "t.ttir");
    } catch (const Error& e) {
      ADD_FAILURE() << "read failed: " << e.what();
      continue;
    }
    try {
      verify(m);
      ADD_FAILURE() << "verify passed";
    } catch (const Error& e) {
      std::string err = e.what();
      EXPECT_NE(err.find(c.message), std::string::npos) << err;
      EXPECT_EQ(err.rfind(where(c.text, c.marker), 0), 0u) << err;
    }
  }
}

TEST(ReaderForms, ModuleAttributesGenericBranchesAndOldOps) {
  std::string t = R"(#loop = #llvm.loop_annotation<licm = #llvm.licm<disable = true>>
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {
  tt.func public @k(%c: i1, %x: i32, %p: !tt.ptr<i8>) {
    "cf.cond_br"(%c, %x, %x) [^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (i1, i32, i32) -> ()
  ^bb1(%a: i32):
    %d = tt.reinterpret_tensor_descriptor %p : !tt.ptr<i8> to !tt.tensordesc<tensor<128xf32>>
    "cf.br"(%a)[^bb2] : (i32) -> ()
  ^bb2(%b: i32):
    tt.return
  }
}
)";
  Module m = read(t, "t.ttir");
  verify(m);
  const Function& f = *m.entry();
  EXPECT_EQ(f.pos.line, 3);
  EXPECT_EQ(f.pos.col, 3);
  const Op& cb = *f.body.blocks[0]->ops.back();
  EXPECT_EQ(cb.name, "cf.cond_br");
  EXPECT_EQ(cb.operands.size(), 1u);
  ASSERT_EQ(cb.successors.size(), 2u);
  EXPECT_EQ(cb.successor_operands[0].size(), 1u);
  EXPECT_EQ(cb.successor_operands[1][0]->name, "x");
  const Op& br = *f.body.blocks[1]->ops.back();
  EXPECT_EQ(br.successors[0], f.body.blocks[2].get());
  EXPECT_EQ(br.successor_operands[0][0]->name, "a");
  EXPECT_EQ(f.body.blocks[1]->ops[0]->result()->type->str(), "!tt.tensordesc<tensor<128xf32>>");
  EXPECT_EQ(tilescope::ops::lowering(find_op("tt.reinterpret_tensor_descriptor")->code),
            nullptr);  // recognised, not executable
}

// Numeric SSA names as Triton <= 3.4 printed them (reference §3.3, test/Triton/vecadd.mlir shape).
TEST(ReaderForms, NumericNamesOldStyle) {
  std::string t = R"(#loc = loc("/path/test.py":7:0)
module {
  tt.func public @test(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("/path/test.py":7:0), %arg4: i32 loc("/path/test.py":7:0)) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32 loc(#loc1)
    %c32_i32 = arith.constant 32 : i32 loc(#loc1)
    %cst = arith.constant dense<0.000000e+00> : tensor<256xf32> loc(#loc1)
    %8 = tt.splat %arg0 : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>> loc(#loc2)
    %15:3 = scf.for %arg6 = %c0_i32 to %arg4 step %c32_i32 iter_args(%arg7 = %cst, %arg8 = %8, %arg9 = %8) -> (tensor<256xf32>, tensor<256x!tt.ptr<f32>>, tensor<256x!tt.ptr<f32>>)  : i32 {
      %17 = tt.load %arg8 : tensor<256x!tt.ptr<f32>> loc(#loc3)
      %18 = arith.addf %arg7, %17 : tensor<256xf32> loc(#loc3)
      scf.yield %18, %arg9, %arg8 : tensor<256xf32>, tensor<256x!tt.ptr<f32>>, tensor<256x!tt.ptr<f32>> loc(#loc3)
    } loc(#loc2)
    tt.store %15#2, %15#0 : tensor<256x!tt.ptr<f32>> loc(#loc3)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc(unknown)
#loc2 = loc("/path/test.py":8:4)
#loc3 = loc("/path/test.py":9:8)
)";
  Module m = read(t, "t.ttir");
  verify(m);
  const Function& f = *m.entry();
  EXPECT_EQ(f.args()[1]->name, "arg4");
  EXPECT_EQ(f.args()[0]->loc.str(), "/path/test.py:7:0");
  EXPECT_EQ(f.args()[0]->loc.var, "");
  EXPECT_EQ(f.arg_attrs[0].at("tt.divisibility").i, 16);
  const Op* loop = def_of(m, "15#1");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->results.size(), 3u);
  EXPECT_EQ(loop->regions[0]->blocks[0]->args.size(), 4u);
  const Op& st = *f.body.blocks[0]->ops[5];
  EXPECT_EQ(st.name, "tt.store");
  EXPECT_EQ(st.operands[0], loop->results[2].get());
  EXPECT_EQ(st.operands[1], loop->results[0].get());
  EXPECT_EQ(st.loc.str(), "/path/test.py:9:8");
}
