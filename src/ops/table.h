// The op table: every TTIR op tilescope knows, declared once (name, syntax, verifier, kernel).
//
// The reader uses `syntax` to read the op's custom form (the generic form `"name"(...)` is read
// the same way for every op); ir::verify calls `verify`; the planner calls `lower` to pick the
// kernel for the op's element types. An op missing here is an "unknown op" error at read time; an op
// whose `lower` is null (or rejects the types) is an "unsupported op" error with both locations.
#pragma once

#include <span>
#include <string_view>

#include "tilescope/ir/ir.h"

namespace tilescope::exec {
class Planner;
struct Step;
}  // namespace tilescope::exec

namespace tilescope::ir {

/// How the custom form is written (reference §1-§2). `ops` = SSA operands, `kw` = leading keywords
/// (predicates, axes, enums), `T` = types after the colon.
enum class Syntax {
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

class Module;
using VerifyFn = void (*)(const Module&, const Op&);
using LowerFn = void (*)(const Op&, exec::Planner&, exec::Step&);

struct OpDef {
  std::string_view name;
  Syntax syntax;
  VerifyFn verify;  // may be null: the syntax rule already checks the types
  LowerFn lower;    // null: recognised but not executable
};

/// The entry for `name`, or null.
const OpDef* find_op(std::string_view name);
/// All entries (for tests and `tilescope ops`).
std::span<const OpDef> all_ops();

}  // namespace tilescope::ir
