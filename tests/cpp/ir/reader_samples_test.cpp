// Reader tests on real Triton 3.6 TTIR (tests/ttir/reader/*.ttir, made by gen_samples.py from
// kernels.py). Expected values come from the kernel source and the printed text, not from the reader.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "src/ops/table.h"
#include "tilescope/ir/reader.h"

namespace fs = std::filesystem;
using namespace tilescope;
using namespace tilescope::ir;

namespace {

std::string sample(const std::string& name) {
  return (fs::path(__FILE__).parent_path() / ".." / ".." / "ttir" / "reader" / name)
      .lexically_normal()
      .string();
}

void walk(const Region& r, const std::function<void(const Op&)>& f) {
  for (auto& b : r.blocks)
    for (auto& o : b->ops) {
      f(*o);
      for (auto& sub : o->regions) walk(*sub, f);
    }
}

std::vector<const Op*> find_ops(const Function& fn, const std::string& name) {
  std::vector<const Op*> v;
  walk(fn.body, [&](const Op& o) {
    if (o.name == name) v.push_back(&o);
  });
  return v;
}

const Op* find_result(const Function& fn, const std::string& value) {
  const Op* hit = nullptr;
  walk(fn.body, [&](const Op& o) {
    for (auto& r : o.results)
      if (r->name == value) hit = &o;
  });
  return hit;
}

}  // namespace

TEST(ReaderSamples, AllSamplesReadAndVerify) {
  int n = 0;
  for (auto& e : fs::directory_iterator(fs::path(sample("")))) {
    if (e.path().extension() != ".ttir") continue;
    SCOPED_TRACE(e.path().string());
    try {
      Module m = read_file(e.path().string());
      verify(m);
      EXPECT_NE(m.entry(), nullptr);
    } catch (const Error& err) {
      ADD_FAILURE() << err.what();
    }
    ++n;
  }
  EXPECT_GE(n, 20);
}

namespace {

Module load(const std::string& name) {
  Module m = read_file(sample(name));
  verify(m);
  return m;
}

const Attr& attr(const Op& o, const std::string& k) {
  const Attr* a = o.attr(k);
  if (!a) throw std::runtime_error(o.name + " lacks attribute " + k);
  return *a;
}

int64_t attr_i(const std::map<std::string, Attr>& m, const std::string& k) {
  auto it = m.find(k);
  if (it == m.end() || it->second.kind != Attr::Kind::Int) throw std::runtime_error("no int attribute " + k);
  return it->second.i;
}

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

}  // namespace

// add.ttir (kernels.py add_kernel, lines 8-14): the vector-add module of reference §3.3.
TEST(ReaderSamples, VectorAdd) {
  Module m = load("add.ttir");
  ASSERT_EQ(m.functions.size(), 1u);
  const Function& f = *m.entry();
  EXPECT_EQ(f.name, "add_kernel");
  EXPECT_TRUE(f.is_public);
  ASSERT_EQ(f.args().size(), 4u);
  EXPECT_EQ(f.args()[0]->type->str(), "!tt.ptr<f32>");
  EXPECT_EQ(f.args()[3]->type->str(), "i32");
  EXPECT_EQ(f.args()[0]->name, "x_ptr");
  // attrs={(0,): [["tt.divisibility", 16]]} in gen_samples.py
  ASSERT_EQ(f.arg_attrs.size(), 4u);
  EXPECT_EQ(attr_i(f.arg_attrs[0], "tt.divisibility"), 16);
  EXPECT_TRUE(f.arg_attrs[1].empty());
  EXPECT_EQ(f.attrs.at("noinline").kind, Attr::Kind::Bool);
  EXPECT_FALSE(f.attrs.at("noinline").b);
  EXPECT_TRUE(ends_with(f.loc.file, "kernels.py"));
  EXPECT_EQ(f.loc.line, 8);
  EXPECT_EQ(f.args()[2]->loc.var, "out_ptr");
  EXPECT_EQ(f.args()[2]->loc.line, 8);

  const Op* pid = find_result(f, "pid");
  ASSERT_NE(pid, nullptr);
  EXPECT_EQ(pid->name, "tt.get_program_id");
  EXPECT_EQ(attr(*pid, "axis").i, 0);
  // `%pid = ...` is line 9 of add.ttir, indented by 4; Python: `pid = tl.program_id(0)` at 9:24 (§3.2).
  EXPECT_EQ(pid->pos.line, 9);
  EXPECT_EQ(pid->pos.col, 5);
  EXPECT_EQ(pid->loc.line, 9);
  EXPECT_EQ(pid->loc.col, 24);
  EXPECT_EQ(pid->loc.var, "pid");
  EXPECT_TRUE(ends_with(pid->loc.file, "tests/ttir/reader/kernels.py"));

  const Op* range = find_result(f, "offs_0");
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->name, "tt.make_range");
  EXPECT_EQ(attr(*range, "start").i, 0);
  EXPECT_EQ(attr(*range, "end").i, 128);
  EXPECT_EQ(range->result()->type->str(), "tensor<128xi32>");

  const Op* mask = find_result(f, "mask_3");
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->name, "arith.cmpi");
  EXPECT_EQ(attr(*mask, "predicate").s, "slt");
  EXPECT_EQ(mask->result()->type->str(), "tensor<128xi1>");

  auto loads = find_ops(f, "tt.load");
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0]->operands.size(), 2u);  // ptr, mask; no other
  EXPECT_EQ(loads[0]->operands[1], mask->result());
  EXPECT_EQ(loads[0]->result()->type->str(), "tensor<128xf32>");
  auto stores = find_ops(f, "tt.store");
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(stores[0]->operands.size(), 3u);
  EXPECT_EQ(stores[0]->results.size(), 0u);
  EXPECT_EQ(stores[0]->loc.line, 14);

  // Dense value ids, parents and defs.
  std::vector<bool> seen(f.num_values, false);
  walk(f.body, [&](const Op& o) {
    EXPECT_NE(o.def, nullptr);
    EXPECT_EQ(o.def->name, o.name);
    for (auto& r : o.results) {
      ASSERT_GE(r->id, 0);
      ASSERT_LT(r->id, f.num_values);
      EXPECT_FALSE(seen[r->id]);
      seen[r->id] = true;
      EXPECT_EQ(r->def, &o);
    }
  });
  for (auto& a : f.args()) seen.at(a->id) = true;
  for (bool s : seen) EXPECT_TRUE(s);
  EXPECT_EQ(f.body.blocks[0]->ops.back()->name, "tt.return");
  EXPECT_EQ(f.body.blocks[0]->ops.back()->parent, f.body.blocks[0].get());
}

// matmul.ttir (kernels.py matmul_kernel): scf.for with iter_args and tt.dot (reference §3.4).
TEST(ReaderSamples, MatmulLoop) {
  Module m = load("matmul.ttir");
  const Function& f = *m.entry();
  EXPECT_EQ(f.args().size(), 12u);
  auto fors = find_ops(f, "scf.for");
  ASSERT_EQ(fors.size(), 1u);
  const Op& loop = *fors[0];
  ASSERT_EQ(loop.operands.size(), 4u);  // lb, ub, step, one init
  EXPECT_EQ(loop.operands[0]->name, "c0_i32");
  EXPECT_EQ(loop.operands[1]->name, "K");
  EXPECT_EQ(loop.operands[2]->name, "c32_i32");
  ASSERT_EQ(loop.results.size(), 1u);
  EXPECT_EQ(loop.result()->name, "acc_5");
  EXPECT_EQ(loop.result()->type->str(), "tensor<32x32xf32>");
  ASSERT_EQ(loop.regions.size(), 1u);
  const Block& body = *loop.regions[0]->blocks[0];
  ASSERT_EQ(body.args.size(), 2u);
  EXPECT_EQ(body.args[0]->name, "k");
  EXPECT_EQ(body.args[0]->type->str(), "i32");
  EXPECT_EQ(body.args[1]->name, "acc_6");
  EXPECT_EQ(body.args[1]->block, &body);
  EXPECT_EQ(body.args[1]->index, 1);
  EXPECT_EQ(body.ops.back()->name, "scf.yield");
  EXPECT_EQ(body.ops.back()->operands[0]->name, "acc_45");
  auto dots = find_ops(f, "tt.dot");
  ASSERT_EQ(dots.size(), 1u);
  EXPECT_EQ(attr(*dots[0], "inputPrecision").kind, Attr::Kind::Keyword);
  EXPECT_EQ(attr(*dots[0], "inputPrecision").s, "tf32");
  EXPECT_EQ(dots[0]->operands[2], body.args[1].get());  // accumulates into the iter_arg
  EXPECT_EQ(dots[0]->operands[0]->type->str(), "tensor<32x32xf16>");
  EXPECT_EQ(dots[0]->parent, &body);
  EXPECT_EQ(dots[0]->parent->parent->parent, &loop);
  EXPECT_EQ(dots[0]->pos.line, 70);
  auto loads = find_ops(f, "tt.load");
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0]->operands.size(), 3u);  // ptr, mask, other
  EXPECT_EQ(loads[0]->operands[2]->type->str(), "tensor<32x32xf16>");
}

// argmax.ttir: a two-result generic tt.reduce and a `%am#1` use; locations through call sites.
TEST(ReaderSamples, ArgmaxReduce) {
  Module m = load("argmax.ttir");
  const Function& f = *m.entry();
  const Op* am = find_result(f, "am#1");
  ASSERT_NE(am, nullptr);
  EXPECT_EQ(am->name, "tt.reduce");
  ASSERT_EQ(am->results.size(), 2u);
  EXPECT_EQ(am->results[0]->name, "am#0");
  EXPECT_EQ(am->results[0]->type->str(), "tensor<16xf32>");
  EXPECT_EQ(am->results[1]->type->str(), "tensor<16xi32>");
  EXPECT_EQ(am->results[1]->index, 1);
  EXPECT_EQ(attr(*am, "axis").i, 1);
  EXPECT_EQ(attr(*am, "axis").type->str(), "i32");
  ASSERT_EQ(am->regions.size(), 1u);
  const Block& comb = *am->regions[0]->blocks[0];
  EXPECT_EQ(comb.label, "bb0");
  ASSERT_EQ(comb.args.size(), 4u);
  EXPECT_EQ(comb.args[1]->type->str(), "i32");
  EXPECT_EQ(comb.ops.back()->name, "tt.reduce.return");
  EXPECT_EQ(comb.ops.back()->operands.size(), 2u);
  // `%4 = arith.addi %am#1, %3` uses result 1.
  const Op* use = find_result(f, "4");
  ASSERT_NE(use, nullptr);
  EXPECT_EQ(use->operands[0], am->results[1].get());
  // kernels.py:40 `am = tl.argmax(x2, axis=1)` col 19; the reduce was built in standard.py (callsite).
  EXPECT_EQ(am->loc.line, 40);
  EXPECT_EQ(am->loc.col, 19);
  EXPECT_EQ(am->loc.var, "am");
  EXPECT_TRUE(ends_with(am->loc.file, "kernels.py"));
  ASSERT_GE(am->loc.stack.size(), 2u);
  EXPECT_NE(am->loc.stack[0].first.find("site-packages/triton/language/standard.py"), std::string::npos);
  EXPECT_TRUE(ends_with(am->loc.stack.back().first, "kernels.py"));
  EXPECT_EQ(am->loc.stack.back().second, 40);
  // Block arguments of the combine region carry their own call-site location.
  EXPECT_EQ(comb.args[0]->loc.line, 40);
  const Op* s = find_result(f, "s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->results.size(), 1u);
  EXPECT_EQ(s->loc.var, "s");
  EXPECT_EQ(s->loc.line, 41);
}

TEST(ReaderSamples, ScanAndMapElementwise) {
  Module m = load("scan.ttir");
  auto scans = find_ops(*m.entry(), "tt.scan");
  ASSERT_EQ(scans.size(), 2u);
  EXPECT_EQ(attr(*scans[0], "axis").i, 1);
  EXPECT_FALSE(attr(*scans[0], "reverse").b);
  EXPECT_EQ(attr(*scans[1], "axis").i, 0);
  EXPECT_EQ(attr(*scans[1], "reverse").kind, Attr::Kind::Bool);
  EXPECT_TRUE(attr(*scans[1], "reverse").b);
  EXPECT_EQ(scans[1]->result()->type->str(), "tensor<16x16xf32>");
  EXPECT_EQ(scans[1]->regions[0]->blocks[0]->ops.back()->name, "tt.scan.return");

  Module mm = load("map_elementwise.ttir");
  auto maps = find_ops(*mm.entry(), "tt.map_elementwise");
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(attr(*maps[0], "pack").i, 1);
  EXPECT_EQ(maps[0]->operands.size(), 2u);
  EXPECT_EQ(maps[0]->regions[0]->blocks[0]->args.size(), 2u);
  EXPECT_EQ(maps[0]->regions[0]->blocks[0]->ops.back()->name, "tt.map_elementwise.return");
}

// cond_br.ttir: a top-level `if ...: return` becomes cf.cond_br (reference §2.3).
TEST(ReaderSamples, CondBranch) {
  Module m = load("cond_br.ttir");
  const Function& f = *m.entry();
  ASSERT_EQ(f.body.blocks.size(), 3u);
  EXPECT_EQ(f.body.blocks[0]->label, "");
  EXPECT_EQ(f.body.blocks[1]->label, "bb1");
  const Op& br = *f.body.blocks[0]->ops.back();
  EXPECT_EQ(br.name, "cf.cond_br");
  ASSERT_EQ(br.successors.size(), 2u);
  EXPECT_EQ(br.successors[0], f.body.blocks[1].get());
  EXPECT_EQ(br.successors[1], f.body.blocks[2].get());
  ASSERT_EQ(br.successor_operands.size(), 2u);
  EXPECT_TRUE(br.successor_operands[0].empty());
  EXPECT_EQ(br.operands.size(), 1u);
  EXPECT_EQ(br.operands[0]->type->str(), "i1");
  // The value defined in the entry block (%pid) is used in ^bb2.
  const Op* addptr = find_result(f, "v");
  ASSERT_NE(addptr, nullptr);
  EXPECT_EQ(addptr->operands[1]->name, "pid");
  EXPECT_EQ(addptr->parent, f.body.blocks[2].get());
}

// call.ttir: a helper with an early return called in a loop stays a private multi-block function.
TEST(ReaderSamples, CallPrivateMultiBlock) {
  Module m = load("call.ttir");
  ASSERT_EQ(m.functions.size(), 3u);
  EXPECT_EQ(m.entry()->name, "call_kernel");
  const Function* helper = m.find("kernels._helper_ret__i32__");
  ASSERT_NE(helper, nullptr);
  EXPECT_FALSE(helper->is_public);
  ASSERT_EQ(helper->result_types.size(), 1u);
  EXPECT_EQ(helper->result_types[0]->str(), "i32");
  EXPECT_EQ(helper->body.blocks.size(), 3u);
  EXPECT_EQ(helper->body.blocks[1]->ops.back()->name, "tt.return");
  EXPECT_EQ(helper->body.blocks[1]->ops.back()->operands.size(), 1u);
  EXPECT_EQ(helper->loc.line, 79);
  const Function* noinl = m.find("kernels._noinl__Pi32_i32__");
  ASSERT_NE(noinl, nullptr);
  EXPECT_TRUE(noinl->attrs.at("noinline").b);
  auto calls = find_ops(*m.entry(), "tt.call");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(attr(*calls[0], "callee").kind, Attr::Kind::Symbol);
  EXPECT_EQ(attr(*calls[0], "callee").s, "kernels._helper_ret__i32__");
  EXPECT_EQ(calls[0]->results.size(), 1u);
  EXPECT_EQ(calls[1]->results.size(), 0u);
  EXPECT_EQ(calls[1]->operands.size(), 2u);
}

TEST(ReaderSamples, WhileLoop) {
  Module m = load("while.ttir");
  auto ws = find_ops(*m.entry(), "scf.while");
  ASSERT_EQ(ws.size(), 1u);
  const Op& w = *ws[0];
  ASSERT_EQ(w.regions.size(), 2u);
  EXPECT_EQ(w.operands.size(), 1u);
  EXPECT_EQ(w.operands[0]->name, "j");
  EXPECT_EQ(w.result()->name, "j_0");
  const Block& before = *w.regions[0]->blocks[0];
  ASSERT_EQ(before.args.size(), 1u);
  EXPECT_EQ(before.args[0]->name, "j_1");
  const Op& cond = *before.ops.back();
  EXPECT_EQ(cond.name, "scf.condition");
  ASSERT_EQ(cond.operands.size(), 2u);
  EXPECT_EQ(cond.operands[0]->type->str(), "i1");
  EXPECT_EQ(cond.operands[1], before.args[0].get());
  const Block& after = *w.regions[1]->blocks[0];
  ASSERT_EQ(after.args.size(), 1u);
  EXPECT_NE(after.args[0].get(), before.args[0].get());  // same name, sibling region
  EXPECT_EQ(after.args[0]->loc.var, "j");                // loc("j"): a name without a position
  EXPECT_FALSE(after.args[0]->loc.known());
  EXPECT_EQ(after.ops.back()->name, "scf.yield");
  EXPECT_EQ(after.ops.front()->operands[0], after.args[0].get());
}

TEST(ReaderSamples, PrintAssert) {
  Module m = load("print_assert.ttir");
  auto prints = find_ops(*m.entry(), "tt.print");
  ASSERT_EQ(prints.size(), 2u);
  EXPECT_EQ(attr(*prints[0], "prefix").s, " rnd hex: ");
  EXPECT_TRUE(attr(*prints[0], "hex").b);
  EXPECT_EQ(attr(*prints[0], "isSigned").kind, Attr::Kind::IntArray);
  EXPECT_EQ(attr(*prints[0], "isSigned").ints, std::vector<int64_t>{1});
  ASSERT_EQ(prints[0]->operands.size(), 1u);
  EXPECT_EQ(prints[0]->operands[0]->type->str(), "tensor<8xi32>");
  auto asserts = find_ops(*m.entry(), "tt.assert");
  bool found = false;
  for (auto* a : asserts)
    if (attr(*a, "message").s == "acc negative") found = true;
  EXPECT_TRUE(found);
  EXPECT_EQ(attr(*asserts.back(), "message").s, "int32 overflow detected for operation add");
  EXPECT_EQ(asserts.back()->operands[0]->type->str(), "tensor<8xi1>");
}

TEST(ReaderSamples, Atomics) {
  Module m = load("atomics.ttir");
  const Function& f = *m.entry();
  const Op* add = find_result(f, "2");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->name, "tt.atomic_rmw");
  EXPECT_EQ(attr(*add, "atomic_rmw_op").s, "add");
  EXPECT_EQ(attr(*add, "sem").s, "acq_rel");
  EXPECT_EQ(attr(*add, "scope").s, "gpu");
  EXPECT_EQ(add->operands.size(), 3u);
  const Op* fadd = find_result(f, "5");
  EXPECT_EQ(attr(*fadd, "atomic_rmw_op").s, "fadd");
  EXPECT_EQ(attr(*fadd, "sem").s, "release");
  EXPECT_EQ(attr(*fadd, "scope").s, "sys");
  EXPECT_EQ(fadd->result()->type->str(), "tensor<64xf32>");
  const Op* mn = find_result(f, "6");
  EXPECT_EQ(attr(*mn, "atomic_rmw_op").s, "min");
  EXPECT_EQ(attr(*mn, "sem").s, "relaxed");
  EXPECT_EQ(attr(*mn, "scope").s, "cta");
  auto cas = find_ops(f, "tt.atomic_cas");
  ASSERT_EQ(cas.size(), 1u);
  EXPECT_EQ(cas[0]->operands.size(), 3u);
  EXPECT_EQ(attr(*cas[0], "sem").s, "acq_rel");
  EXPECT_EQ(cas[0]->result()->type->str(), "i32");
  EXPECT_EQ(cas[0]->attrs.count("atomic_rmw_op"), 0u);
}

TEST(ReaderSamples, DotVariants) {
  Module m = load("dots.ttir");
  const Function& f = *m.entry();
  const Op* ieee = find_result(f, "a");
  ASSERT_NE(ieee, nullptr);
  EXPECT_EQ(ieee->attr("inputPrecision"), nullptr);  // ieee is the default and is not printed
  EXPECT_EQ(attr(*find_result(f, "b"), "inputPrecision").s, "tf32x3");
  const Op* b3 = find_result(f, "b3_15");
  EXPECT_EQ(attr(*b3, "inputPrecision").s, "bf16x3");
  EXPECT_EQ(b3->operands[0]->type->shape, (std::vector<int64_t>{2, 16, 32}));
  EXPECT_EQ(b3->result()->type->str(), "tensor<2x16x16xf32>");
  const Op* cf8 = find_result(f, "cf8");
  EXPECT_EQ(attr(*cf8, "maxNumImpreciseAcc").i, 1073741824);
  EXPECT_EQ(cf8->operands[0]->type->elem, Elem::f8e5m2);
  const Op* ci = find_result(f, "ci_14");
  EXPECT_EQ(ci->operands[0]->type->str(), "tensor<32x32xi8>");
  EXPECT_EQ(ci->result()->type->str(), "tensor<32x32xi32>");
}

TEST(ReaderSamples, DotScaled) {
  Module m = load("dot_scaled.ttir");
  auto ds = find_ops(*m.entry(), "tt.dot_scaled");
  ASSERT_EQ(ds.size(), 1u);
  const Op& d = *ds[0];
  ASSERT_EQ(d.operands.size(), 4u);  // a, a_scale, b, c
  EXPECT_TRUE(attr(d, "a_scale").b);
  EXPECT_FALSE(attr(d, "b_scale").b);
  EXPECT_EQ(attr(d, "lhs").s, "e2m1");
  EXPECT_EQ(attr(d, "rhs").s, "e4m3");
  EXPECT_FALSE(attr(d, "fastMath").b);
  EXPECT_EQ(d.operands[1]->type->str(), "tensor<32x4xi8>");
  EXPECT_EQ(d.operands[2]->type->str(), "tensor<128x32xf8E4M3FN>");
}

// desc.ttir / desc_arg.ttir: cuda:90 keeps the descriptor ops (reference §1.8).
TEST(ReaderSamples, Descriptors) {
  Module m = load("desc.ttir");
  const Function& f = *m.entry();
  auto mk = find_ops(f, "tt.make_tensor_descriptor");
  ASSERT_EQ(mk.size(), 1u);
  EXPECT_EQ(mk[0]->operands.size(), 5u);
  EXPECT_EQ(mk[0]->operands[0]->type->str(), "!tt.ptr<f16>");
  const Type* d = mk[0]->result()->type;
  EXPECT_EQ(d->elem, Elem::tensordesc);
  EXPECT_EQ(d->pointee->str(), "tensor<16x32xf16>");
  EXPECT_EQ(d->str(), "!tt.tensordesc<tensor<16x32xf16>>");
  auto ld = find_ops(f, "tt.descriptor_load");
  ASSERT_EQ(ld.size(), 1u);
  EXPECT_EQ(ld[0]->operands.size(), 3u);
  EXPECT_EQ(ld[0]->operands[0]->type, d);
  auto st = find_ops(f, "tt.descriptor_store");
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0]->operands.size(), 4u);
  EXPECT_EQ(st[0]->operands[3]->type->str(), "tensor<16x32xf16>");

  Module a = load("desc_arg.ttir");
  EXPECT_EQ(a.entry()->args()[0]->type->str(), "!tt.tensordesc<tensor<16x32xf32>>");
  EXPECT_EQ(a.entry()->args().size(), 6u);
  auto red = find_ops(*a.entry(), "tt.descriptor_reduce");
  ASSERT_EQ(red.size(), 1u);
  EXPECT_EQ(attr(*red[0], "kind").s, "add");
  EXPECT_EQ(red[0]->operands.size(), 4u);
}

// block_ptr.source.ttir is asm["source"]: tt.make_tensor_ptr / tt.advance and block-pointer loads.
TEST(ReaderSamples, BlockPointersFromSource) {
  Module m = load("block_ptr.source.ttir");
  const Function& f = *m.entry();
  auto mk = find_ops(f, "tt.make_tensor_ptr");
  ASSERT_EQ(mk.size(), 2u);
  EXPECT_EQ(mk[0]->operands.size(), 7u);
  const Type* bp = mk[0]->result()->type;
  EXPECT_TRUE(bp->is_block_ptr());
  EXPECT_EQ(bp->str(), "!tt.ptr<tensor<16x32xf32>>");
  EXPECT_EQ(attr(*mk[0], "order").ints, (std::vector<int64_t>{1, 0}));
  auto adv = find_ops(f, "tt.advance");
  ASSERT_EQ(adv.size(), 2u);
  EXPECT_EQ(adv[0]->result()->type, bp);
  EXPECT_EQ(adv[0]->operands.size(), 3u);
  auto loads = find_ops(f, "tt.load");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0]->result()->type->str(), "tensor<16x32xf32>");
  EXPECT_EQ(attr(*loads[0], "boundaryCheck").ints, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(attr(*loads[0], "padding").i, 2);
  auto fors = find_ops(f, "scf.for");
  ASSERT_EQ(fors.size(), 1u);
  EXPECT_EQ(fors[0]->results.size(), 2u);
  EXPECT_EQ(fors[0]->results[1]->name, "q_12#1");
  // The lowered form (asm["ttir"]) has no block pointers (reference §0.1).
  Module low = load("block_ptr.ttir");
  EXPECT_TRUE(find_ops(*low.entry(), "tt.make_tensor_ptr").empty());
}

TEST(ReaderSamples, Fp8AndCasts) {
  Module m = load("fp8.ttir");
  const Function& f = *m.entry();
  const Op* f8 = find_result(f, "f8");
  EXPECT_EQ(f8->name, "tt.fp_to_fp");
  EXPECT_EQ(attr(*f8, "rounding").s, "rtne");
  EXPECT_EQ(f8->result()->type->elem, Elem::f8e5m2);
  EXPECT_EQ(find_result(f, "f8b")->result()->type->elem, Elem::f8e4m3fn);
  EXPECT_EQ(attr(*find_result(f, "h"), "rounding").s, "rtz");
  EXPECT_EQ(find_result(f, "y_4")->attr("rounding"), nullptr);
  EXPECT_EQ(find_result(f, "b16")->result()->type->str(), "tensor<128xbf16>");
  // dense<0x7FC00000> : tensor<128xf32> is a splat of the f32 NaN bit pattern.
  const Attr& nan = attr(*find_result(f, "y_1"), "value");
  ASSERT_EQ(nan.kind, Attr::Kind::Dense);
  EXPECT_TRUE(nan.dense.splat);
  EXPECT_EQ(nan.dense.bytes, (std::vector<uint8_t>{0x00, 0x00, 0xC0, 0x7F}));
  EXPECT_EQ(attr(*find_result(f, "y_11"), "propagateNan").s, "none");
}

TEST(ReaderSamples, ShapesHistogramGatherExtern) {
  Module m = load("shapes.ttir");
  const Function& f = *m.entry();
  const Op* split = find_result(f, "outRHS");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->name, "tt.split");
  ASSERT_EQ(split->results.size(), 2u);
  EXPECT_EQ(split->results[0]->name, "outLHS");
  EXPECT_EQ(split->results[1]->type->str(), "tensor<16x16xf32>");
  EXPECT_EQ(attr(*find_result(f, "p"), "order").ints, (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(attr(*find_result(f, "s"), "allow_reorder").kind, Attr::Kind::Unit);
  EXPECT_EQ(find_result(f, "j")->result()->type->str(), "tensor<16x16x2xf32>");
  EXPECT_EQ(find_result(f, "c_10")->result()->type->str(), "tensor<32xf32>");

  Module h = load("histogram.ttir");
  const Op* hist = find_result(*h.entry(), "h_3");
  EXPECT_EQ(hist->operands.size(), 2u);  // with mask (3.5+)
  EXPECT_EQ(hist->result()->type->str(), "tensor<16xi32>");

  Module g = load("gather.ttir");
  const Op* gather = find_result(*g.entry(), "g");
  EXPECT_EQ(attr(*gather, "axis").i, 1);
  EXPECT_EQ(gather->operands[1]->type->str(), "tensor<16x16xi32>");

  Module e = load("extern.ttir");
  const Op* tanh = find_result(*e.entry(), "y");
  EXPECT_EQ(attr(*tanh, "symbol").s, "__nv_tanhf");
  EXPECT_EQ(attr(*tanh, "libname").s, "");
  EXPECT_TRUE(attr(*tanh, "pure").b);
  EXPECT_EQ(find_result(*e.entry(), "y_2")->operands.size(), 2u);

  Module a = load("inline_asm.ttir");
  const Op* as = find_result(*a.entry(), "y");
  EXPECT_EQ(as->name, "tt.elementwise_inline_asm");
  EXPECT_EQ(attr(*as, "asm_string").s, "mov.b32 $0, $1;");
  EXPECT_EQ(attr(*as, "constraints").s, "=r,r");
  EXPECT_EQ(attr(*as, "packed_element").i, 1);
  EXPECT_EQ(as->operands.size(), 1u);
}

TEST(ReaderSamples, LoadStoreModifiersAndAxes) {
  Module m = load("elementwise.ttir");
  const Function& f = *m.entry();
  const Op* x = find_result(f, "x_6");
  EXPECT_EQ(attr(*x, "cache").s, "cg");
  EXPECT_EQ(attr(*x, "evict").s, "evict_last");
  EXPECT_EQ(x->operands.size(), 3u);
  EXPECT_TRUE(attr(*find_result(f, "y_9"), "isVolatile").b);
  bool store_found = false;
  for (auto* s : find_ops(f, "tt.store"))
    if (s->attr("cache")) {
      EXPECT_EQ(attr(*s, "cache").s, "wt");
      EXPECT_EQ(attr(*s, "evict").s, "evict_first");
      store_found = true;
    }
  EXPECT_TRUE(store_found);
  EXPECT_EQ(attr(*find_result(f, "3"), "axis").i, 1);  // get_program_id y
  const Op* np = find_result(f, "5");
  EXPECT_EQ(np->name, "tt.get_num_programs");
  EXPECT_EQ(attr(*np, "axis").i, 2);
}

TEST(ReaderSamples, LoopAttributesAndNegativeNames) {
  Module m = load("loop_annot.ttir");
  auto fors = find_ops(*m.entry(), "scf.for");
  ASSERT_GE(fors.size(), 3u);
  EXPECT_EQ(attr(*fors[0], "tt.num_stages").i, 2);
  EXPECT_EQ(attr(*fors[0], "tt.flatten").kind, Attr::Kind::Unit);
  bool licm = false;
  for (auto* f : fors)
    if (f->attr("llvm.loop_annotation"))
      licm = attr(*f, "llvm.loop_annotation").s.find("licm") != std::string::npos;
  EXPECT_TRUE(licm);

  Module r = load("rand.ttir");
  const Op* c = find_result(*r.entry(), "c-766435501_i32");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(attr(*c, "value").i, -766435501);
  EXPECT_EQ(attr(*c, "value").type->str(), "i32");
}
