// The op registry: one row per opcode, names unique and found, operand roles and effects as the TTIR
// op definitions give them (TritonOps.td; reference §1), and a dialect's op registered at run time
// going through the reader, the verifier, the planner and the engine like a built-in one.
#include <gtest/gtest.h>

#include <set>

#include "src/exec/plan.h"
#include "src/ops/table.h"
#include "tests/cpp/harness.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/ops.h"
#include "tilescope/ir/reader.h"
#include "tilescope/ir/verify.h"

namespace tilescope::ir {
namespace {

TEST(OpRegistry, OneRowPerOpcodeWithUniqueNames) {
  std::set<std::string_view> names;
  ASSERT_EQ(builtin_ops().size(), static_cast<size_t>(kNumBuiltinOps));
  for (size_t i = 0; i < builtin_ops().size(); ++i) {
    const OpDef& d = builtin_ops()[i];
    EXPECT_EQ(static_cast<size_t>(d.code), i);
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_EQ(find_op(d.name), &d) << d.name;
    EXPECT_EQ(&op_def(d.code), &d);
    EXPECT_NE(d.verify, nullptr) << d.name;
  }
  EXPECT_EQ(find_op("tt.no_such_op"), nullptr);
  EXPECT_EQ(find_op("tt.load")->dialect(), "tt");
  EXPECT_EQ(find_op("llvm.intr.assume")->dialect(), "llvm");
}

// Terminators and ops we recognise but cannot run are the only rows without a lowering.
TEST(OpRegistry, EveryRunnableOpHasALowering) {
  const std::set<std::string_view> not_run = {"tt.map_elementwise.return",
                                              "tt.atomic_poll",
                                              "tt.reduce.return",
                                              "tt.scan.return",
                                              "tt.return",
                                              "tt.func",
                                              "tt.reinterpret_tensor_descriptor",
                                              "scf.yield",
                                              "scf.condition",
                                              "cf.br",
                                              "cf.cond_br"};
  for (const OpDef& d : builtin_ops())
    EXPECT_EQ(ops::lowering(d.code) == nullptr, not_run.count(d.name) == 1) << d.name;
}

const Module& sample() {
  static Module m = read(R"(module {
  tt.func public @k(%p: tensor<8x!tt.ptr<f32>>, %m: tensor<8xi1>, %o: tensor<8xf32>, %d: !tt.tensordesc<tensor<8xf32>>, %i: i32) {
    %a = tt.load %p, %m, %o : tensor<8x!tt.ptr<f32>>
    %b = "tt.load"(%p, %o) <{operandSegmentSizes = array<i32: 1, 0, 1>, cache = 1 : i32, evict = 1 : i32, isVolatile = true}> : (tensor<8x!tt.ptr<f32>>, tensor<8xf32>) -> tensor<8xf32>
    tt.store %p, %a, %m : tensor<8x!tt.ptr<f32>>
    tt.descriptor_store %d[%i], %a : !tt.tensordesc<tensor<8xf32>>, tensor<8xf32>
    %c = tt.atomic_rmw fadd, relaxed, cta, %p, %a, %m : (tensor<8x!tt.ptr<f32>>, tensor<8xf32>, tensor<8xi1>) -> tensor<8xf32>
    %e = tt.atomic_load acquire, sys, %p : (tensor<8x!tt.ptr<f32>>) -> tensor<8xf32>
    tt.return
  }
})",
                         "roles.ttir");
  return m;
}

const Op& op_at(size_t i) { return *sample().entry()->body.blocks[0]->ops.at(i); }

TEST(OpRegistry, OperandRoles) {
  const Op& load = op_at(0);
  EXPECT_EQ(operand_role(load, 0), Role::ptr);
  EXPECT_EQ(operand_index(load, Role::mask), 1);
  EXPECT_EQ(operand_index(load, Role::other), 2);
  const Op& load_seg = op_at(1);  // generic form: other without a mask
  EXPECT_EQ(operand_index(load_seg, Role::mask), -1);
  EXPECT_EQ(operand_index(load_seg, Role::other), 1);
  const Op& store = op_at(2);
  EXPECT_EQ(operand_index(store, Role::value), 1);
  EXPECT_EQ(operand_index(store, Role::mask), 2);
  const Op& desc_store = op_at(3);
  EXPECT_EQ(operand_role(desc_store, 0), Role::desc);
  EXPECT_EQ(operand_role(desc_store, 1), Role::offset);
  EXPECT_EQ(operand_role(desc_store, 2), Role::value);
  const Op& rmw = op_at(4);
  EXPECT_EQ(operand_index(rmw, Role::mask), 2);
}

TEST(OpRegistry, EffectsAndMemoryOrder) {
  EXPECT_FALSE(may_wait(op_at(0)));  // a plain load
  EXPECT_TRUE(may_wait(op_at(1)));   // isVolatile = true
  EXPECT_FALSE(may_wait(op_at(2)));  // a store
  EXPECT_TRUE(may_wait(op_at(4)));   // atomics may spin
  EXPECT_TRUE(may_wait(op_at(5)));
  EXPECT_TRUE(op_at(3).def->effects & effect::write);
  EXPECT_FALSE(memory_order(op_at(0)).has_value());
  auto rmw = memory_order(op_at(4));
  ASSERT_TRUE(rmw.has_value());
  EXPECT_EQ(rmw->sem, MemSem::relaxed);
  EXPECT_EQ(rmw->scope, MemScope::cta);
  auto ld = memory_order(op_at(5));
  ASSERT_TRUE(ld.has_value());
  EXPECT_EQ(ld->sem, MemSem::acquire);
  EXPECT_EQ(ld->scope, MemScope::sys);
}

// A dialect's op: `test.twice` doubles an f32 scalar. Registered once for the whole test binary.
void verify_twice(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  v.check(v.in(o, 0)->elem == Elem::f32 && v.out(o) == v.in(o, 0), o, "needs an f32 operand and result");
}

void twice_kernel(exec::Program& p, const exec::Step& s) {
  *p.at<float>(s.out[0]) = 2 * *p.at<float>(s.in[0]);
}

void lower_twice(const Op&, exec::Planner&, exec::Step& s) { s.fn = twice_kernel; }

const OpDef& twice() {
  static const OpDef& d = [] {
    const OpDef& row = register_op(OpDef{Opcode{}, "test.twice", Syntax::GenericOnly, verify_twice,
                                         Roles::none, effect::none, Taint::elementwise});
    ops::register_lowering(row.code, lower_twice);
    return std::ref(row);
  }();
  return d;
}

TEST(OpRegistry, ADialectRegistersItsOwnOps) {
  const OpDef& d = twice();
  EXPECT_GE(static_cast<int>(d.code), kNumBuiltinOps);
  EXPECT_EQ(find_op("test.twice"), &d);
  EXPECT_EQ(&op_def(d.code), &d);
  EXPECT_THROW(register_op(OpDef{Opcode{}, "test.twice", Syntax::GenericOnly, verify_twice, Roles::none,
                                 effect::none, Taint::none}),
               Error);
  const char* text = R"(module {
  tt.func public @k(%x: f32, %out: !tt.ptr<f32>) {
    %y = "test.twice"(%x) : (f32) -> f32
    tt.store %out, %y : !tt.ptr<f32>
    tt.return
  }
})";
  std::vector<float> out(1, 0.0f);
  exec::Memory mem;
  int o = test::add_buffer(mem, out, "out", Elem::f32);
  test::run_ttir(text, {exec::Arg::f32(1.25f), exec::Arg::buf(o)}, mem);
  EXPECT_EQ(out[0], 2.5f);
  // Its verifier runs like a built-in one.
  Module bad = read(R"(module {
  tt.func public @k(%x: i32) {
    %y = "test.twice"(%x) : (i32) -> i32
    tt.return
  }
})",
                    "bad.ttir");
  try {
    verify(bad);
    ADD_FAILURE() << "verify accepted an i32 test.twice";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "bad.ttir:3:5: 'test.twice': needs an f32 operand and result");
  }
}

}  // namespace
}  // namespace tilescope::ir
