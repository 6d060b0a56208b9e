// The per-op verifiers named in ops.def's Verify column, by family (verify_elementwise.cpp,
// verify_shape.cpp, verify_memory.cpp, verify_control.cpp), and the type predicates they share.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "tilescope/ir/ir.h"
#include "tilescope/ir/verify.h"

namespace tilescope::ir {

/// Same element (including the pointee of pointers), shapes ignored.
inline bool elem_eq(const Type* a, const Type* b) {
  return a->elem == b->elem && a->pointee == b->pointee && a->addr_space == b->addr_space;
}
inline bool same_shape(const Type* a, const Type* b) {
  return a->is_tensor == b->is_tensor && a->shape == b->shape;
}
inline bool int_like(const Type* t) { return is_int(t->elem); }
inline bool float_like(const Type* t) { return is_float(t->elem); }
inline bool is_i1(const Type* t) { return t->elem == Elem::i1; }
inline bool scalar_i32(const Type* t) { return !t->is_tensor && t->elem == Elem::i32; }
inline bool scalar_i64(const Type* t) { return !t->is_tensor && t->elem == Elem::i64; }
/// A shape as the messages print it, "[4x8]", formatted only when a failing check builds its message
/// (Verifier::check). It refers to the vector: pass it straight to check.
struct Dims {
  const std::vector<int64_t>& shape;
};

namespace verifiers {

#define TS_VERIFIER(name) void name(Verifier& v, const Op& o);
// verify_elementwise.cpp (reference §2.1, §2.2, §1.1)
TS_VERIFIER(int_binary)
TS_VERIFIER(float_binary)
TS_VERIFIER(approx_divf)
TS_VERIFIER(float_unary)
TS_VERIFIER(int_unary)
TS_VERIFIER(fma)
TS_VERIFIER(clampf)
TS_VERIFIER(constant)
TS_VERIFIER(poison)
TS_VERIFIER(make_range)
TS_VERIFIER(program_id)
TS_VERIFIER(cmpi)
TS_VERIFIER(cmpf)
TS_VERIFIER(select)
TS_VERIFIER(ext_int)
TS_VERIFIER(trunc_int)
TS_VERIFIER(int_to_float)
TS_VERIFIER(float_to_int)
TS_VERIFIER(ext_float)
TS_VERIFIER(trunc_float)
TS_VERIFIER(arith_bitcast)
TS_VERIFIER(index_cast)
TS_VERIFIER(int_to_ptr)
TS_VERIFIER(ptr_to_int)
TS_VERIFIER(tt_bitcast)
TS_VERIFIER(fp_to_fp)
TS_VERIFIER(extern_elementwise)
TS_VERIFIER(inline_asm)
// verify_shape.cpp (reference §1.4, §1.5)
TS_VERIFIER(splat)
TS_VERIFIER(unsplat)
TS_VERIFIER(broadcast)
TS_VERIFIER(expand_dims)
TS_VERIFIER(reshape)
TS_VERIFIER(trans)
TS_VERIFIER(cat)
TS_VERIFIER(join)
TS_VERIFIER(split)
TS_VERIFIER(gather)
TS_VERIFIER(histogram)
TS_VERIFIER(dot)
TS_VERIFIER(dot_scaled)
TS_VERIFIER(reduce)
TS_VERIFIER(scan)
TS_VERIFIER(map_elementwise)
// verify_memory.cpp (reference §1.2, §1.3, §1.8, §1.9)
TS_VERIFIER(addptr)
TS_VERIFIER(load)
TS_VERIFIER(store)
TS_VERIFIER(atomic_rmw)
TS_VERIFIER(atomic_cas)
TS_VERIFIER(atomic_load)
TS_VERIFIER(atomic_store)
TS_VERIFIER(atomic_poll)
TS_VERIFIER(make_tensor_ptr)
TS_VERIFIER(advance)
TS_VERIFIER(make_desc)
TS_VERIFIER(reinterpret_desc)
TS_VERIFIER(desc_load)
TS_VERIFIER(desc_store)
TS_VERIFIER(desc_reduce)
TS_VERIFIER(desc_gather)
TS_VERIFIER(desc_scatter)
// verify_control.cpp (reference §1.6, §1.7, §2.3)
TS_VERIFIER(print)
TS_VERIFIER(assert_)
TS_VERIFIER(assume)
TS_VERIFIER(call)
TS_VERIFIER(func_return)
TS_VERIFIER(yield)
TS_VERIFIER(region_return)
TS_VERIFIER(nested_func)
TS_VERIFIER(for_loop)
TS_VERIFIER(if_else)
TS_VERIFIER(while_loop)
TS_VERIFIER(condition)
TS_VERIFIER(br)
TS_VERIFIER(cond_br)
TS_VERIFIER(no_operands)
#undef TS_VERIFIER

}  // namespace verifiers
}  // namespace tilescope::ir

template <>
struct fmt::formatter<tilescope::ir::Dims> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }
  auto format(const tilescope::ir::Dims& d, format_context& ctx) const {
    return fmt::format_to(ctx.out(), "[{}]", fmt::join(d.shape, "x"));
  }
};
