// Lowerings of ops that only newer Triton prints (TritonOps.td of the triton 3.9.0 wheel). Each one is
// an existing kernel applied to an op of the same operand layout; the adapter says why that is exact
// (or how far from the GPU it is).
#include "src/ops/ops.h"

namespace tilescope::ops {

namespace {

// The op as another op of the same operands and attributes: the lowering picks its kernel by name
// and attributes only. The Step keeps pointing at the real op, so events and run-time errors name it.
ir::Op alias_of(const Op& op, std::string_view as_name) {
  ir::Op a;
  a.name = std::string(as_name);
  a.def = ir::find_op(as_name);
  a.operands = op.operands;
  a.attrs = op.attrs;
  a.parent = op.parent;
  a.pos = op.pos;
  a.loc = op.loc;
  return a;
}

}  // namespace

// tt.approx_divf (3.9, tl.fdiv(x, y, approx=True)); f32 only. The GPU's div.approx.f32 is within 2 ulp
// of the quotient for |y| in [2^-126, 2^126] (TritonOps.td); we give the correctly rounded quotient,
// which is inside that bound. Outside that range of y the GPU may differ more (not emulated).
void lower_approx_divf(const Op& op, Planner& p, Step& s) {
  if (s.out_types.size() != 1 || s.out_types[0]->elem != ir::Elem::f32)
    p.unsupported(op, "tt.approx_divf is defined on f32 only");
  lower_float_binary(alias_of(op, "arith.divf"), p, s);
}

// tt.atomic_load (3.9): `sem, scope, ptr[, mask]`, the operands of a masked tt.load. Masked-off lanes
// are unspecified (TritonOps.td) and read as 0. It is run as a volatile load: the engine then lets
// other programs run first, which is what a program polling a flag with atomic_load needs to make
// progress; each lane's load is a single aligned access (no tearing).
void lower_atomic_load(const Op& op, Planner& p, Step& s) {
  ir::Op a = alias_of(op, "tt.load");
  ir::Attr vol;
  vol.kind = ir::Attr::Kind::Bool;
  vol.b = true;
  a.attrs["isVolatile"] = vol;
  lower_load(a, p, s);
}

// tt.atomic_store (3.9): `sem, scope, ptr, value[, mask]`, the operands of a masked tt.store; masked-off
// lanes are not written.
void lower_atomic_store(const Op& op, Planner& p, Step& s) { lower_store(alias_of(op, "tt.store"), p, s); }

}  // namespace tilescope::ops
