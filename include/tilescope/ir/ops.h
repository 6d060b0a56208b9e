// tilescope/ir: the op registry. Every TTIR op tilescope knows is declared once, in ops.def (an
// X-macro): its name, custom syntax, verifier, lowering hook, operand roles, memory effects and taint
// behaviour. Everything that needs to know about ops asks here, by Opcode; no other list of op names
// exists. Dialects (NKI, the kernel generator) register further rows with register_op.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tilescope::ir {

struct Op;
class Verifier;

/// Every built-in op, in ops.def order. Ops registered at run time get codes from kNumBuiltinOps on.
enum class Opcode : uint16_t {
#define TS_OP(id, ...) id,
#include "tilescope/ir/ops.def"
#undef TS_OP
};
inline constexpr int kNumBuiltinOps = 0
// NOLINTNEXTLINE(bugprone-macro-parentheses): each row adds one, "0 +1 +1 ..."
#define TS_OP(...) +1
#include "tilescope/ir/ops.def"
#undef TS_OP
    ;

/// How the custom form is written (reference §1-§2). `ops` = SSA operands, `kw` = leading keywords
/// (predicates, axes, enums), `T` = types after the colon.
enum class Syntax : uint8_t {
  SameType,     // op [kw] ops [kw = v]* {attrs} : T            result T (0 operands: make_range, poison)
  Compare,      // op pred, a, b : T                             result i1 with T's shape
  Select,       // op c, a, b : Tc, T  (or : T)                  result = last type
  Cast,         // op x : A to B                                 result B
  Arrow,        // op ops [kw] {attrs} : A -> B                  result(s) B (split: two results)
  FirstType,    // op p, o : Tp, To                              result Tp (addptr)
  Functional,   // op [kw,]* ops {attrs} : (A, B) -> R           result(s) R (atomics, extern, gather)
  Load,         // tt.load p[, m[, o]] [cacheModifier = ..] [evictionPolicy = ..] {..} : Tptr
  NoResult,     // op ops... {attrs} : T, ...                    no result (store, descriptor_store, assume)
  Unsplat,      // tt.unsplat x : T                              result = element of T
  Dot,          // tt.dot a, b, c[, inputPrecision = p] {..} : A * B -> C
  DotScaled,    // tt.dot_scaled a [scale as], b [scale bs], c lhs = t rhs = t {..} : A[, As] * B[, Bs] -> C
  StrippedPtr,  // tt.make_tensor_ptr / tt.advance: ... : <tensor<..>>  result !tt.ptr<tensor<..>>
  MakeDesc,     // tt.make_tensor_descriptor base, [shape], [strides] {..} : <T>, <tensor<..>>
  Print,        // tt.print "prefix" {..} : ops : types
  Assert,       // tt.assert c, "message" : T
  Call,         // tt.call @f(ops) : (A) -> R
  Return,       // tt.return / scf.yield / *.return [ops : types]
  For,          // scf.for %iv = lb to ub step s [iter_args(..) -> (..)] : T { region }
  If,           // scf.if c [-> (..)] { } [else { }]
  While,        // scf.while (args) : (..) -> (..) { } do { }
  Condition,    // scf.condition(c) ops : types
  Branch,       // cf.br ^bb(ops : types)
  CondBranch,   // cf.cond_br c, ^bb1[(..)], ^bb2[(..)]
  Barrier,      // gpu.barrier / ttg.barrier all
  GenericOnly,  // only the generic form exists (tt.reduce, tt.scan, tt.map_elementwise)
};

/// What one operand is to its op.
enum class Role : uint8_t {
  value,    // a plain value (the stored value of a store, an elementwise input, ...)
  ptr,      // the address(es) accessed: a pointer, a tensor of pointers or a block pointer
  mask,     // i1 lanes saying which addresses are touched
  other,    // tt.load: the value of masked-off lanes
  cmp,      // atomic_cas / atomic_poll: the expected value
  cond,     // a branch, select or assert condition
  offset,   // element offsets of a block pointer or a descriptor access
  desc,     // the tensor descriptor accessed
  base,     // the base pointer of a block pointer or descriptor being made
  index,    // tt.gather indices
  bound,    // scf.for lower bound, upper bound and step (they decide the trip count)
  init,     // scf.for iter_args initial values
  timeout,  // tt.atomic_poll timeout
  acc,      // tt.dot accumulator
};

/// Operand layouts, one per family of ops (the Roles column of ops.def). `?` marks an optional trailing
/// operand; tt.load's optional ones are named by operandSegmentSizes when the generic form gives it.
enum class Roles : uint8_t {
  none,          // every operand is a value
  load,          // ptr, mask?, other?
  store,         // ptr, value, mask?      (tt.store, tt.atomic_store)
  rmw,           // ptr, value, mask?
  cas,           // ptr, cmp, value
  atomic_load,   // ptr, mask?
  poll,          // ptr, cmp, timeout?
  select,        // cond, value, value
  cond,          // cond, value...
  for_loop,      // bound, bound, bound, init...
  addptr,        // ptr, offset (element offsets, not addresses)
  desc_load,     // desc, offset...
  desc_store,    // desc, offset..., value
  desc_gather,   // desc, offset (x, a tensor), offset (y)
  desc_scatter,  // desc, offset, offset, value
  base,          // base, value... (make_tensor_ptr / make_tensor_descriptor shapes, strides, offsets)
  advance,       // ptr, offset...
  histogram,     // value, mask?
  gather,        // value, index
  dot,           // value, value, acc
};

/// Memory effects (the Effects column of ops.def), a bit set.
namespace effect {
inline constexpr unsigned none = 0;
inline constexpr unsigned read = 1u << 0;               // reads memory through its ptr / desc operand
inline constexpr unsigned write = 1u << 1;              // writes memory
inline constexpr unsigned atomic = 1u << 2;             // each lane's access is one atomic operation
inline constexpr unsigned ordered = 1u << 3;            // carries `sem` and `scope` attributes (memory_order)
inline constexpr unsigned waits = 1u << 4;              // may wait for another program (spin locks, polling)
inline constexpr unsigned waits_if_volatile = 1u << 5;  // waits when `isVolatile = true` (tt.load)
inline constexpr unsigned sync = 1u << 6;               // a barrier among the lanes of one program
}  // namespace effect

/// How values flow through an op for the value-tracking analyses (the Taint column of ops.def):
/// which operand lanes reach which result lanes, and which operands are sinks (addresses, masks,
/// stored values, conditions). The analyses refine by types (a load through a block pointer).
enum class Taint : uint8_t {
  none,            // no flow: constants, ids, terminators, region ops (their transfers carry values)
  elementwise,     // result lane i from operand lane i (scalar operands: lane 0)
  overflow_arith,  // elementwise; i32 add/sub/mul/shl whose exact result may not fit (int32-overflow source)
  divide,          // elementwise; integer div/rem whose divisor may be 0 (division-by-zero source)
  select,          // condition, then the chosen operand
  load,            // ptr and mask are sinks; masked-off lanes take `other` or are undefined
  store,           // ptr, mask and value are sinks
  atomic_rmw,      // ptr, value, mask are sinks
  atomic_cas,      // ptr, cmp, value (and timeout) are sinks; all lanes active
  splat,
  broadcast,
  linear,  // expand_dims, reshape: same row-major order
  trans,
  join,
  split,
  cat,
  unsplat,
  gather,
  reduce,
  scan,
  dot,
  dot_other,    // dot_scaled: the accumulator lane-wise, any other operand taints every lane
  histogram,    // input lanes are a sink
  scalar_any,   // make_tensor_ptr, advance, make_tensor_descriptor: one scalar result from all operands
  desc_access,  // descriptor ops: scalar operands are addresses, tensors values
  cond,         // scf.if: operand 0 is a branch condition
  for_bounds,   // scf.for: operands 0..2 decide the trip count
  assert_,      // tt.assert: condition lanes
};

/// An op's verifier: throws tilescope::Error (through Verifier::fail) when the op is malformed.
using VerifyFn = void (*)(Verifier&, const Op&);

/// One row of the registry.
struct OpDef {
  Opcode code;
  std::string_view name;
  Syntax syntax;
  VerifyFn verify;  // never null
  Roles roles;
  unsigned effects;  // effect bits
  Taint taint;
  std::string_view dialect() const { return name.substr(0, name.find('.')); }
};

/// The entry for `name`, or null (built-in ops and registered ones).
const OpDef* find_op(std::string_view name);
/// The entry of `code` (built-in or registered).
const OpDef& op_def(Opcode code);
/// The built-in ops, in Opcode order (for tests and documentation).
std::span<const OpDef> builtin_ops();
/// Add a dialect's op (its `code` is assigned and returned in the stored row). Throws tilescope::Error
/// when the name is taken. Call before reading modules that use it; rows are never removed.
const OpDef& register_op(OpDef def);

/// Whether ops of this syntax end a block.
bool is_terminator(Syntax s);
/// The role of operand `k` of `op` (Role::value past the declared layout).
Role operand_role(const Op& op, size_t k);
/// The index of the first operand of `op` with role `r`, or -1.
int operand_index(const Op& op, Role r);
/// The op whose executions count the iterations of scf.while `op`: the first op of its before region
/// (the condition's: it runs once more per loop than the body), else the first of its after region (the
/// body's: once per iteration); `op` null when both regions hold only their terminators.
struct WhileProbe {
  const Op* op = nullptr;
  bool in_before = false;
};
WhileProbe while_probe(const Op& op);
/// Whether `op` may wait for another program: atomics, polling loads, volatile loads. The engine
/// runs programs of such kernels as fibers so spinning programs let the others run.
bool may_wait(const Op& op);

/// Memory ordering of an `ordered` op (its `sem` and `scope` keywords; PTX memory model semantics).
enum class MemSem : uint8_t { relaxed, acquire, release, acq_rel };
enum class MemScope : uint8_t { cta, gpu, sys };
struct MemoryOrder {
  MemSem sem = MemSem::acq_rel;
  MemScope scope = MemScope::gpu;
};
/// The ordering of an op with effect::ordered; nullopt for other ops.
std::optional<MemoryOrder> memory_order(const Op& op);

}  // namespace tilescope::ir
