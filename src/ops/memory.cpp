// Memory ops: addptr, load/store, atomics, block pointers and tensor descriptors (see ops.h).
//
// Semantics: reference §1.2 (addptr, load, store, make_tensor_ptr, advance), §1.3 and §5.4
// (atomics), §1.8 and §5.6 (descriptors), §5.1 (masks, `other`, block-pointer padding). Every
// host access goes through the checked lane functions of src/exec/access.h: an address outside
// the buffer it was derived from is reported and never dereferenced; masked-off lanes are never
// touched.
#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "access.h"
#include "ops.h"
#include "tilescope/exec/value.h"

namespace tilescope::ops {

using exec::BlockPtr;
using exec::Fill;
using exec::Program;
using exec::TensorDesc;
using ir::Elem;

namespace {

// ---------------------------------------------------------------------------------------------
// Plan-time helpers

/// Value (1-based, as in TritonAttrDefs.td) of an enum attribute written as a keyword (`add`), a
/// string, or its integer (`padding = 2 : i32`, generic form). `names[k]` is the keyword of value
/// k + 1. Returns `dflt` when the attribute is absent.
constexpr const char* kRmwNames[] = {"and", "or", "xor", "add", "fadd", "max", "min", "umax", "umin", "exch"};
constexpr const char* kReduceNames[] = {"add", "min", "max", "inc", "dec", "and", "or", "xor"};
constexpr const char* kPaddingNames[] = {"zero", "nan"};

int enum_attr(const Op& op, Planner& p, const char* key, std::span<const char* const> names, int dflt) {
  const ir::Attr* a = op.attr(key);
  if (!a) {
    if (dflt > 0) return dflt;
    p.unsupported(op, fmt::format("missing attribute '{}'", key));
  }
  if (a->kind == ir::Attr::Kind::Int) {
    if (a->i >= 1 && a->i <= static_cast<int64_t>(names.size())) return static_cast<int>(a->i);
  } else if (a->kind == ir::Attr::Kind::Keyword || a->kind == ir::Attr::Kind::String) {
    std::string s = a->s;
    // Tolerate a dialect-attribute spelling such as `#tt<rmw add>` or `#tt.padding_option<nan>`.
    if (auto lt = s.rfind('<'); lt != std::string::npos && s.back() == '>') {
      s = s.substr(lt + 1, s.size() - lt - 2);
      if (auto sp = s.rfind(' '); sp != std::string::npos) s = s.substr(sp + 1);
    }
    int k = 1;
    for (const char* n : names) {
      if (s == n) return k;
      ++k;
    }
  }
  p.unsupported(op, fmt::format("unknown value of attribute '{}'", key));
}

/// The pointee element of a pointer or tensor-of-pointer type (null for anything else).
const ir::Type* pointee_of(const ir::Type* t) { return t && t->elem == Elem::ptr ? t->pointee : nullptr; }

template <class A>
std::shared_ptr<const void> make_aux(A a) {
  return std::make_shared<const A>(std::move(a));
}

/// Read an integer scalar slot of element `e`, sign-extended (i1 is 0/1).
int64_t read_int(Program& p, int slot, Elem e) {
  switch (e) {
    case Elem::i1: return *p.at<uint8_t>(slot) != 0;
    case Elem::i8: return *p.at<int8_t>(slot);
    case Elem::i16: return *p.at<int16_t>(slot);
    case Elem::i32: return *p.at<int32_t>(slot);
    case Elem::i64: return *p.at<int64_t>(slot);
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz:
    case Elem::f16:
    case Elem::bf16:
    case Elem::f32:
    case Elem::f64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: break;
  }
  assert(false && "need_int_scalars checked the slot is an integer");
  return *p.at<int64_t>(slot);
}

int64_t read_int_at(const void* base, int64_t i, Elem e) {
  switch (e) {
    case Elem::i8: return static_cast<const int8_t*>(base)[i];
    case Elem::i16: return static_cast<const int16_t*>(base)[i];
    case Elem::i32: return static_cast<const int32_t*>(base)[i];
    case Elem::i64: return static_cast<const int64_t*>(base)[i];
    case Elem::i1:
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz:
    case Elem::f16:
    case Elem::bf16:
    case Elem::f32:
    case Elem::f64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: break;
  }
  assert(false && "rows_aux checked the x offsets are i32 or i16");
  return static_cast<const int64_t*>(base)[i];
}

void need_int_scalars(const Op& op, Planner& p, const Step& s, size_t from, size_t count, const char* what) {
  for (size_t k = from; k < from + count; ++k)
    if (k >= s.in_types.size() || !ir::is_int(s.in_types[k]->elem) || s.in_types[k]->is_tensor)
      p.unsupported(op, fmt::format("{} must be integer scalars", what));
}

// ---------------------------------------------------------------------------------------------
// tt.addptr: addr + offset · sizeof(pointee), signed offset, 64-bit wraparound (reference §1.2).

struct AddptrAux {
  int64_t n;
  int shift;      // log2(sizeof(pointee)); element sizes are 1, 2, 4 or 8
  int base = -1;  // fused (fuse_addresses): the slot of the splat's scalar pointer, every lane's base
};

template <class Off, bool PtrScalar, bool OffScalar>
void addptr_kernel(Program& p, const Step& s) {
  const auto& x = s.data<AddptrAux>();
  const uint64_t* a = p.at<uint64_t>(s.in[0]);
  const Off* o = p.at<Off>(s.in[1]);
  uint64_t* r = p.at<uint64_t>(s.out[0]);
  const int sh = x.shift;
  const int64_t n = x.n;  // a local: stores to r could otherwise alias x.n and block vectorization
  for (int64_t i = 0; i < n; ++i)
    r[i] = a[PtrScalar ? 0 : i] + (static_cast<uint64_t>(static_cast<int64_t>(o[OffScalar ? 0 : i])) << sh);
}

template <class Off>
exec::KernelFn pick_addptr(bool ps, bool os) {
  if (ps) return os ? addptr_kernel<Off, true, true> : addptr_kernel<Off, true, false>;
  return os ? addptr_kernel<Off, false, true> : addptr_kernel<Off, false, false>;
}

// ---------------------------------------------------------------------------------------------
// tt.load / tt.store on tensors of pointers (or scalar pointers)

struct LoadAux {
  exec::LoadLanesFn fn;
  int64_t n;
  int mask = -1, other = -1;  // operand positions, -1 when absent
  int eb = 0;                 // element bytes
  bool vol = false;
  // Fused (fuse_addresses): the lanes are base + offsets·eb, base and offsets being the slots of the
  // splat's scalar pointer and the addptr's offset tile (Step::reads).
  exec::LoadAffineFn affine = nullptr;
  int base = -1, offsets = -1;
  bool in_order = false;  // the offsets are offs[0] + i by construction (modulo their width)
  bool in_place = false;  // the tile may be read where it lies in the buffer (fuse_addresses)
};

void load_kernel(Program& p, const Step& s) {
  const auto& x = s.data<LoadAux>();
  const uint64_t* a = p.at<uint64_t>(s.in[0]);
  const uint8_t* m = x.mask >= 0 ? p.at<uint8_t>(s.in[x.mask]) : nullptr;
  x.fn(p, s.op, x.n, a, m, x.other >= 0 ? p.slot[s.in[x.other]] : nullptr, 0, p.slot[s.out[0]]);
  // A volatile load is how a program polls a flag another program sets.
  if (x.vol) p.polled(s, x.n, a, m, p.slot[s.out[0]], x.eb);
}

struct StoreAux {
  exec::StoreLanesFn fn;
  int64_t n;
  int mask = -1;
  exec::StoreAffineFn affine = nullptr;  // fused, as LoadAux
  int base = -1, offsets = -1;
  bool in_order = false;
};

void store_kernel(Program& p, const Step& s) {
  const auto& x = s.data<StoreAux>();
  x.fn(p, s.op, x.n, p.at<uint64_t>(s.in[0]), x.mask >= 0 ? p.at<uint8_t>(s.in[x.mask]) : nullptr,
       p.slot[s.in[1]]);
}

// ---------------------------------------------------------------------------------------------
// Fused pointer tiles (fuse_addresses): a tt.load / tt.store through tt.addptr(tt.splat(base),
// offsets) whose pointer tile nothing else reads. Where an observer sees addresses or pointer values
// (exec::kSeesAddresses) every step runs as written; otherwise the splat and the addptr make nothing
// and the access computes its lanes from base and offsets (exec::LoadAffineFn).

void load_fused_kernel(Program& p, const Step& s) {
  const auto& x = s.data<LoadAux>();
  std::byte*& out = p.slot[s.out[0]];
  const bool in_place = x.in_place && p.frame;
  if (in_place) out = p.frame + p.plan->slot_offset[s.out[0]];  // its last run may have left it in a buffer
  if (p.observed & exec::kSeesAddresses) return load_kernel(p, s);
  if (const std::byte* h = x.affine(p, s.op, x.n, *p.at<uint64_t>(x.base), p.slot[x.offsets], x.in_order,
                                    in_place, x.mask >= 0 ? p.at<uint8_t>(s.in[x.mask]) : nullptr,
                                    x.other >= 0 ? p.slot[s.in[x.other]] : nullptr, out))
    out = const_cast<std::byte*>(h);  // only read: no op writes a slot but its own results (plan.cpp)
}

void store_fused_kernel(Program& p, const Step& s) {
  if (p.observed & exec::kSeesAddresses) return store_kernel(p, s);
  const auto& x = s.data<StoreAux>();
  x.affine(p, s.op, x.n, *p.at<uint64_t>(x.base), p.slot[x.offsets], x.in_order,
           x.mask >= 0 ? p.at<uint8_t>(s.in[x.mask]) : nullptr, p.slot[s.in[1]]);
}

/// The tt.splat of a pointer whose every user is a fused addptr (which reads the scalar itself): made
/// only for an observer that watches this op.
void splat_unless_fused(Program& p, const Step& s) {
  if (p.dispatch && static_cast<size_t>(s.id) < p.dispatch->step_hooks.size() && p.dispatch->step_hooks[s.id])
    std::fill_n(p.at<uint64_t>(s.out[0]), s.n, *p.at<uint64_t>(s.in[0]));
}

/// A tt.addptr whose pointer tile only fused accesses read, made where an observer may see it. Its
/// pointer operand is a splat: every lane's base is the splat's scalar (AddptrAux::base, Step::reads).
template <class Off>
void addptr_unless_fused(Program& p, const Step& s) {
  if (!(p.observed & exec::kSeesAddresses)) return;
  const auto& x = s.data<AddptrAux>();
  const uint64_t base = *p.at<uint64_t>(x.base);
  const Off* o = p.at<Off>(s.in[1]);
  uint64_t* r = p.at<uint64_t>(s.out[0]);
  const int sh = x.shift;
  const int64_t n = x.n;
  for (int64_t i = 0; i < n; ++i) r[i] = base + (static_cast<uint64_t>(static_cast<int64_t>(o[i])) << sh);
}

// ---------------------------------------------------------------------------------------------
// Block pointers (tt.make_tensor_ptr, tt.advance, and loads/stores through them; ≤3.6 `.source`)

struct BlockAux {
  exec::LoadLanesFn load = nullptr;
  exec::StoreLanesFn store = nullptr;
  int rank = 0;
  int64_t n = 0;
  int64_t block[BlockPtr::kMaxRank]{};
  unsigned check = 0;  // bit d: boundary-check dim d
  int eb = 0;
  uint64_t fill = 0;
  bool vol = false;
};

/// Lane addresses and boundary mask of the tile a block pointer points at (reference §5.1).
void block_lanes(const BlockPtr& bp, const BlockAux& x, uint64_t* a, uint8_t* m) {
  int64_t start[BlockPtr::kMaxRank];
  for (int d = 0; d < x.rank; ++d) start[d] = bp.offsets[d];
  exec::tile_lanes(bp.base, x.rank, start, x.block, bp.shape, bp.strides, x.check, x.eb, a, m);
}

void block_load_kernel(Program& p, const Step& s) {
  const auto& x = s.data<BlockAux>();
  uint64_t* a = exec::scratch_addrs(x.n);
  uint8_t* m = exec::scratch_mask(x.n);
  block_lanes(*p.at<BlockPtr>(s.in[0]), x, a, m);
  x.load(p, s.op, x.n, a, x.check ? m : nullptr, nullptr, x.fill, p.slot[s.out[0]]);
  if (x.vol) p.polled(s, x.n, a, x.check ? m : nullptr, p.slot[s.out[0]], x.eb);
}

void block_store_kernel(Program& p, const Step& s) {
  const auto& x = s.data<BlockAux>();
  uint64_t* a = exec::scratch_addrs(x.n);
  uint8_t* m = exec::scratch_mask(x.n);
  block_lanes(*p.at<BlockPtr>(s.in[0]), x, a, m);
  x.store(p, s.op, x.n, a, x.check ? m : nullptr, p.slot[s.in[1]]);
}

/// Fill BlockAux's shape and boundary-check part from the block pointer type and attributes.
BlockAux block_aux(const Op& op, Planner& p, const ir::Type* bpt) {
  BlockAux x;
  const ir::Type* tile = bpt->pointee;
  x.rank = tile->rank();
  if (x.rank < 1 || x.rank > BlockPtr::kMaxRank)
    p.unsupported(op,
                  fmt::format("block pointers of rank {} (1 to {} supported)", x.rank, BlockPtr::kMaxRank));
  for (int d = 0; d < x.rank; ++d) x.block[d] = tile->shape[d];
  x.n = tile->numel();
  x.eb = ir::elem_bytes(tile->elem);
  if (const ir::Attr* bc = op.attr("boundaryCheck")) {
    for (int64_t d : bc->ints) {
      if (d < 0 || d >= x.rank) p.unsupported(op, fmt::format("boundaryCheck dimension {} out of range", d));
      x.check |= 1u << d;
    }
  }
  return x;
}

struct MakeBlockAux {
  int rank;
  Elem shape_e[BlockPtr::kMaxRank], stride_e[BlockPtr::kMaxRank], off_e[BlockPtr::kMaxRank];
};

void make_block_ptr_kernel(Program& p, const Step& s) {
  const auto& x = s.data<MakeBlockAux>();
  BlockPtr bp;
  bp.base = *p.at<uint64_t>(s.in[0]);
  bp.rank = x.rank;
  for (int d = 0; d < x.rank; ++d) {
    bp.shape[d] = read_int(p, s.in[1 + d], x.shape_e[d]);
    bp.strides[d] = read_int(p, s.in[1 + x.rank + d], x.stride_e[d]);
    bp.offsets[d] = static_cast<int32_t>(read_int(p, s.in[1 + 2 * x.rank + d], x.off_e[d]));
  }
  *p.at<BlockPtr>(s.out[0]) = bp;
}

void advance_kernel(Program& p, const Step& s) {
  const auto& x = s.data<MakeBlockAux>();
  BlockPtr bp = *p.at<BlockPtr>(s.in[0]);
  for (int d = 0; d < x.rank; ++d) {
    // i32 offsets (reference §5.1: advance adds the i32 offsets), two's-complement wraparound.
    auto sum =
        static_cast<uint32_t>(bp.offsets[d]) + static_cast<uint32_t>(read_int(p, s.in[1 + d], x.off_e[d]));
    bp.offsets[d] = static_cast<int32_t>(sum);
  }
  *p.at<BlockPtr>(s.out[0]) = bp;
}

// ---------------------------------------------------------------------------------------------
// Atomics

struct AtomicAux {
  exec::AtomicLanesFn fn;
  int64_t n;
  int mask = -1;
  int eb = 0;  // element bytes
};

// Atomics report what they read (their old values), so that a program spinning on a lock or a
// counter is parked until another program changes it (Program::polled).
void atomic_rmw_kernel(Program& p, const Step& s) {
  const auto& x = s.data<AtomicAux>();
  const uint64_t* a = p.at<uint64_t>(s.in[0]);
  const uint8_t* m = x.mask >= 0 ? p.at<uint8_t>(s.in[x.mask]) : nullptr;
  void* old = s.out.empty() ? nullptr : p.slot[s.out[0]];
  x.fn(p, s.op, x.n, a, m, p.slot[s.in[1]], old);
  if (old) p.polled(s, x.n, a, m, old, x.eb);
}

struct CasAux {
  exec::CasLanesFn fn;
  int64_t n;
  int eb = 0;
};

void atomic_cas_kernel(Program& p, const Step& s) {
  const auto& x = s.data<CasAux>();
  const uint64_t* a = p.at<uint64_t>(s.in[0]);
  x.fn(p, s.op, x.n, a, p.slot[s.in[1]], p.slot[s.in[2]], p.slot[s.out[0]]);
  p.polled(s, x.n, a, nullptr, p.slot[s.out[0]], x.eb);
}

// ---------------------------------------------------------------------------------------------
// Tensor descriptors (reference §1.8, §5.6): offsets are element indices per dim; elements
// outside [0, shape) on any dim are masked (loads give the padding, stores and reductions skip
// them): that is TMA's boundary handling, not an error, so those lanes are never "bad".

struct MakeDescAux {
  int rank;
  int padding;
  Elem shape_e[TensorDesc::kMaxRank], stride_e[TensorDesc::kMaxRank];
};

void make_desc_kernel(Program& p, const Step& s) {
  const auto& x = s.data<MakeDescAux>();
  TensorDesc d;
  d.base = *p.at<uint64_t>(s.in[0]);
  d.rank = x.rank;
  for (int k = 0; k < x.rank; ++k) {
    d.shape[k] = read_int(p, s.in[1 + k], x.shape_e[k]);
    d.strides[k] = read_int(p, s.in[1 + x.rank + k], x.stride_e[k]);
  }
  d.padding = x.padding;
  *p.at<TensorDesc>(s.out[0]) = d;
}

struct DescAux {
  exec::LoadLanesFn load = nullptr;
  exec::StoreLanesFn store = nullptr;
  exec::AtomicLanesFn atomic = nullptr;
  int rank = 0;
  int64_t n = 0;
  int64_t block[TensorDesc::kMaxRank]{};
  int eb = 0;
  Elem elem = Elem::f32;
  Elem idx_e[TensorDesc::kMaxRank]{};
  Elem xoff_e = Elem::i32;  // gather/scatter row offsets
  int src = -1;             // operand position of the stored tile
};

/// Lanes of the descriptor tile at the indices in operands 1..rank.
void desc_tile_lanes(Program& p, const Step& s, const DescAux& x, const TensorDesc& d, uint64_t* a,
                     uint8_t* m) {
  int64_t start[TensorDesc::kMaxRank];
  for (int k = 0; k < x.rank; ++k) start[k] = read_int(p, s.in[1 + k], x.idx_e[k]);
  exec::tile_lanes(d.base, x.rank, start, x.block, d.shape, d.strides, (1u << x.rank) - 1, x.eb, a, m);
}

uint64_t desc_fill(const TensorDesc& d, Elem e) { return d.padding == 2 ? exec::nan_bits(e) : 0; }

using DescLanes = void (*)(Program&, const Step&, const DescAux&, const TensorDesc&, uint64_t*, uint8_t*);

/// A descriptor load (descriptor_load, descriptor_gather): lanes from `Lanes`, outside lanes get the
/// descriptor's padding.
template <DescLanes Lanes>
void desc_load_kernel(Program& p, const Step& s) {
  const auto& x = s.data<DescAux>();
  const TensorDesc& d = *p.at<TensorDesc>(s.in[0]);
  uint64_t* a = exec::scratch_addrs(x.n);
  uint8_t* m = exec::scratch_mask(x.n);
  Lanes(p, s, x, d, a, m);
  x.load(p, s.op, x.n, a, m, nullptr, desc_fill(d, x.elem), p.slot[s.out[0]]);
}

/// A descriptor store (descriptor_store / _reduce / _scatter): outside lanes are skipped.
template <DescLanes Lanes>
void desc_store_kernel(Program& p, const Step& s) {
  const auto& x = s.data<DescAux>();
  const TensorDesc& d = *p.at<TensorDesc>(s.in[0]);
  uint64_t* a = exec::scratch_addrs(x.n);
  uint8_t* m = exec::scratch_mask(x.n);
  Lanes(p, s, x, d, a, m);
  if (x.atomic)
    x.atomic(p, s.op, x.n, a, m, p.slot[s.in[x.src]], nullptr);
  else
    x.store(p, s.op, x.n, a, m, p.slot[s.in[x.src]]);
}

/// Lanes of descriptor_gather/scatter: row r of the result is row x_offsets[r] of the 2-D tensor,
/// columns y_offset .. y_offset + W - 1 (reference §1.8, §5.6: gather/scatter loop over rows).
void desc_rows_lanes(Program& p, const Step& s, const DescAux& x, const TensorDesc& d, uint64_t* a,
                     uint8_t* m) {
  const int64_t rows = x.block[0], w = x.block[1];
  const void* xo = p.slot[s.in[1]];
  const int64_t y = read_int(p, s.in[2], x.idx_e[1]);
  const int64_t one_row[2] = {1, w};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t start[2] = {read_int_at(xo, r, x.xoff_e), y};
    exec::tile_lanes(d.base, 2, start, one_row, d.shape, d.strides, 3u, x.eb, a + r * w, m + r * w);
  }
}

/// Common checks of a descriptor operand: returns the block type.
const ir::Type* desc_block(const Op& op, Planner& p, const Step& s) {
  if (s.in_types.empty() || s.in_types[0]->elem != Elem::tensordesc || !s.in_types[0]->pointee)
    p.unsupported(op, "operand 0 must be a !tt.tensordesc");
  const ir::Type* b = s.in_types[0]->pointee;
  if (b->rank() < 1 || b->rank() > TensorDesc::kMaxRank)
    p.unsupported(op,
                  fmt::format("descriptors of rank {} (1 to {} supported)", b->rank(), TensorDesc::kMaxRank));
  return b;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Lowering hooks

void lower_addptr(const Op& op, Planner& p, Step& s) {
  if (s.in.size() != 2 || s.out.size() != 1) p.unsupported(op, "tt.addptr takes a pointer and an offset");
  const ir::Type* pt = pointee_of(s.in_types[0]);
  if (!pt || pt->is_tensor) p.unsupported(op, "operand 0 must be a pointer or a tensor of pointers");
  int eb = ir::elem_bytes(pt->elem);
  int shift = eb == 1 ? 0 : eb == 2 ? 1 : eb == 4 ? 2 : eb == 8 ? 3 : -1;
  if (shift < 0) p.unsupported(op, fmt::format("pointee type {} has no element size", pt->str()));
  const ir::Type* ot = s.in_types[1];
  const int64_t n = s.out_types[0]->numel();
  bool ps = !s.in_types[0]->is_tensor, os = !ot->is_tensor;
  if ((!ps && s.in_types[0]->numel() != n) || (!os && ot->numel() != n))
    p.unsupported(op, "pointer and offset shapes differ");
  switch (ot->elem) {
    case Elem::i8: s.fn = pick_addptr<int8_t>(ps, os); break;
    case Elem::i16: s.fn = pick_addptr<int16_t>(ps, os); break;
    case Elem::i32: s.fn = pick_addptr<int32_t>(ps, os); break;
    case Elem::i64: s.fn = pick_addptr<int64_t>(ps, os); break;
    case Elem::i1:
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz:
    case Elem::f16:
    case Elem::bf16:
    case Elem::f32:
    case Elem::f64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: p.unsupported(op, fmt::format("offset type {} (i32 or i64 expected)", ot->str()));
  }
  s.aux = make_aux(AddptrAux{n, shift});
}

void lower_load(const Op& op, Planner& p, Step& s) {
  if (s.in.empty() || s.out.size() != 1) p.unsupported(op, "tt.load takes a pointer and gives one value");
  const ir::Type* pt = s.in_types[0];
  const ir::Type* rt = s.out_types[0];
  // A volatile load (and tt.atomic_load, 3.9, whose masked-off lanes are unspecified and read as 0) is how a
  // program polls a flag another program sets (the registry's may_wait): atomic lane reads, and the
  // kernel reports what it read (Program::polled).
  const bool vol = ir::may_wait(op);
  if (pt->is_block_ptr()) {
    if (s.in.size() != 1) p.unsupported(op, "a block-pointer load takes no mask or other");
    BlockAux x = block_aux(op, p, pt);
    if (rt->numel() != x.n) p.unsupported(op, "result shape differs from the block pointer's tile");
    // padding: absent or zero(1) gives 0, nan(2) gives NaN (reference §5.1).
    int pad = enum_attr(op, p, "padding", kPaddingNames, 1);
    x.fill = pad == 2 ? exec::nan_bits(pt->pointee->elem) : 0;
    x.vol = vol;
    x.load = exec::pick_load_lanes(x.eb, x.check != 0, Fill::splat, vol);
    if (!x.load) p.unsupported(op, "element type");
    s.fn = block_load_kernel;
    s.aux = make_aux(x);
    return;
  }
  const ir::Type* et = pointee_of(pt);
  if (!et || et->is_tensor) p.unsupported(op, "operand 0 must be a pointer or a tensor of pointers");
  LoadAux x{};
  x.n = rt->numel();
  x.vol = vol;
  if (pt->numel() != x.n) p.unsupported(op, "result shape differs from the pointer shape");
  x.mask = ir::operand_index(op, ir::Role::mask);
  x.other = ir::operand_index(op, ir::Role::other);
  int eb = ir::elem_bytes(rt->elem);
  if (eb != ir::elem_bytes(et->elem)) p.unsupported(op, "result element differs from the pointee type");
  x.eb = eb;
  if (x.mask >= 0) {
    const ir::Type* mt = s.in_types[x.mask];
    if (mt->elem != Elem::i1 || mt->numel() != x.n)
      p.unsupported(op, "mask must be i1 with the pointer's shape");
  }
  if (x.other >= 0) {
    const ir::Type* ot = s.in_types[x.other];
    if (ir::elem_bytes(ot->elem) != eb || ot->numel() != x.n)
      p.unsupported(op, "other must have the result's type");
  }
  x.fn = exec::pick_load_lanes(eb, x.mask >= 0, x.other >= 0 ? Fill::per_lane : Fill::zero, vol);
  if (!x.fn) p.unsupported(op, fmt::format("element type {}", rt->str()));
  s.fn = load_kernel;
  s.aux = make_aux(x);
}

void lower_store(const Op& op, Planner& p, Step& s) {
  if (s.in.size() < 2 || s.in.size() > 3) p.unsupported(op, "tt.store takes a pointer, a value and a mask");
  const ir::Type* pt = s.in_types[0];
  const ir::Type* vt = s.in_types[1];
  if (pt->is_block_ptr()) {
    if (s.in.size() != 2) p.unsupported(op, "a block-pointer store takes no mask");
    BlockAux x = block_aux(op, p, pt);
    if (vt->numel() != x.n) p.unsupported(op, "value shape differs from the block pointer's tile");
    x.store = exec::pick_store_lanes(x.eb, x.check != 0);
    if (!x.store) p.unsupported(op, "element type");
    s.fn = block_store_kernel;
    s.aux = make_aux(x);
    return;
  }
  const ir::Type* et = pointee_of(pt);
  if (!et || et->is_tensor) p.unsupported(op, "operand 0 must be a pointer or a tensor of pointers");
  StoreAux x{};
  x.n = pt->numel();
  if (vt->numel() != x.n) p.unsupported(op, "value shape differs from the pointer shape");
  int eb = ir::elem_bytes(et->elem);
  if (eb != ir::elem_bytes(vt->elem)) p.unsupported(op, "value element differs from the pointee type");
  if (s.in.size() == 3) {
    x.mask = 2;
    const ir::Type* mt = s.in_types[2];
    if (mt->elem != Elem::i1 || mt->numel() != x.n)
      p.unsupported(op, "mask must be i1 with the pointer's shape");
  }
  // tt.atomic_store (3.9) writes what other programs poll with tt.atomic_load: an atomic store.
  x.fn = exec::pick_store_lanes(eb, x.mask >= 0, op.code() == ir::Opcode::tt_atomic_store);
  if (!x.fn) p.unsupported(op, fmt::format("element type {}", vt->str()));
  s.fn = store_kernel;
  s.aux = make_aux(x);
}

void lower_atomic_rmw(const Op& op, Planner& p, Step& s) {
  if (s.in.size() < 2 || s.in.size() > 3)
    p.unsupported(op, "tt.atomic_rmw takes a pointer, a value and a mask");
  static constexpr exec::Rmw kinds[] = {exec::Rmw::and_, exec::Rmw::or_, exec::Rmw::xor_, exec::Rmw::add,
                                        exec::Rmw::fadd, exec::Rmw::max, exec::Rmw::min,  exec::Rmw::umax,
                                        exec::Rmw::umin, exec::Rmw::exch};
  int k = enum_attr(op, p, "atomic_rmw_op", kRmwNames, 0);
  const ir::Type* pt = s.in_types[0];
  const ir::Type* vt = s.in_types[1];
  const ir::Type* et = pointee_of(pt);
  if (!et || et->is_tensor) p.unsupported(op, "operand 0 must be a pointer or a tensor of pointers");
  AtomicAux x{};
  x.n = pt->numel();
  if (vt->numel() != x.n || ir::elem_bytes(vt->elem) != ir::elem_bytes(et->elem))
    p.unsupported(op, "value type differs from the pointer's");
  if (!s.out.empty() && s.out_types[0]->numel() != x.n)
    p.unsupported(op, "result shape differs from the pointer's");
  if (s.in.size() == 3) {
    x.mask = 2;
    if (s.in_types[2]->elem != Elem::i1 || s.in_types[2]->numel() != x.n)
      p.unsupported(op, "mask must be i1 with the pointer's shape");
  }
  x.fn = exec::pick_atomic_lanes(kinds[k - 1], vt->elem);
  if (!x.fn) p.unsupported(op, fmt::format("atomic {} on {}", kRmwNames[k - 1], ir::elem_name(vt->elem)));
  x.eb = ir::elem_bytes(vt->elem);
  s.fn = atomic_rmw_kernel;
  s.aux = make_aux(x);
}

void lower_atomic_cas(const Op& op, Planner& p, Step& s) {
  if (s.in.size() != 3 || s.out.size() != 1) p.unsupported(op, "tt.atomic_cas takes a pointer, cmp and val");
  const ir::Type* et = pointee_of(s.in_types[0]);
  if (!et || et->is_tensor) p.unsupported(op, "operand 0 must be a pointer or a tensor of pointers");
  CasAux x{};
  x.n = s.in_types[0]->numel();
  int eb = ir::elem_bytes(et->elem);
  for (int k = 1; k <= 2; ++k)
    if (s.in_types[k]->numel() != x.n || ir::elem_bytes(s.in_types[k]->elem) != eb)
      p.unsupported(op, "cmp and val must have the pointee type and the pointer's shape");
  x.fn = exec::pick_cas_lanes(eb);
  x.eb = eb;
  if (!x.fn || et->elem == Elem::i1) p.unsupported(op, fmt::format("atomic_cas on {}", et->str()));
  s.fn = atomic_cas_kernel;
  s.aux = make_aux(x);
}

void lower_make_tensor_ptr(const Op& op, Planner& p, Step& s) {
  if (s.out.size() != 1 || !s.out_types[0]->is_block_ptr())
    p.unsupported(op, "result must be a block pointer");
  MakeBlockAux x{};
  x.rank = s.out_types[0]->pointee->rank();
  if (x.rank < 1 || x.rank > BlockPtr::kMaxRank)
    p.unsupported(op,
                  fmt::format("block pointers of rank {} (1 to {} supported)", x.rank, BlockPtr::kMaxRank));
  if (static_cast<int>(s.in.size()) != 1 + 3 * x.rank)
    p.unsupported(op, fmt::format("a rank-{} block pointer needs {} shape, stride and offset operands",
                                  x.rank, x.rank));
  if (!pointee_of(s.in_types[0])) p.unsupported(op, "base must be a pointer");
  need_int_scalars(op, p, s, 1, 3 * static_cast<size_t>(x.rank), "shape, strides and offsets");
  for (int d = 0; d < x.rank; ++d) {
    x.shape_e[d] = s.in_types[1 + d]->elem;
    x.stride_e[d] = s.in_types[1 + x.rank + d]->elem;
    x.off_e[d] = s.in_types[1 + 2 * x.rank + d]->elem;
  }
  s.fn = make_block_ptr_kernel;
  s.aux = make_aux(x);
}

void lower_advance(const Op& op, Planner& p, Step& s) {
  if (s.out.size() != 1 || s.in.empty() || !s.in_types[0]->is_block_ptr())
    p.unsupported(op, "tt.advance takes a block pointer");
  MakeBlockAux x{};
  x.rank = s.in_types[0]->pointee->rank();
  if (static_cast<int>(s.in.size()) != 1 + x.rank || x.rank > BlockPtr::kMaxRank)
    p.unsupported(op, fmt::format("a rank-{} block pointer advances by {} offsets", x.rank, x.rank));
  need_int_scalars(op, p, s, 1, x.rank, "offsets");
  for (int d = 0; d < x.rank; ++d) x.off_e[d] = s.in_types[1 + d]->elem;
  s.fn = advance_kernel;
  s.aux = make_aux(x);
}

void lower_make_desc(const Op& op, Planner& p, Step& s) {
  if (s.out.size() != 1 || s.out_types[0]->elem != Elem::tensordesc || !s.out_types[0]->pointee)
    p.unsupported(op, "result must be a !tt.tensordesc");
  MakeDescAux x{};
  x.rank = s.out_types[0]->pointee->rank();
  if (x.rank < 1 || x.rank > TensorDesc::kMaxRank)
    p.unsupported(op,
                  fmt::format("descriptors of rank {} (1 to {} supported)", x.rank, TensorDesc::kMaxRank));
  if (static_cast<int>(s.in.size()) != 1 + 2 * x.rank)
    p.unsupported(op, fmt::format("a rank-{} descriptor needs {} shape and {} stride operands", x.rank,
                                  x.rank, x.rank));
  if (!pointee_of(s.in_types[0])) p.unsupported(op, "base must be a pointer");
  need_int_scalars(op, p, s, 1, 2 * static_cast<size_t>(x.rank), "shape and strides");
  for (int k = 0; k < x.rank; ++k) {
    x.shape_e[k] = s.in_types[1 + k]->elem;
    x.stride_e[k] = s.in_types[1 + x.rank + k]->elem;
  }
  x.padding = enum_attr(op, p, "padding", kPaddingNames, 1);  // 3.5+; default zero
  s.fn = make_desc_kernel;
  s.aux = make_aux(x);
}

void lower_desc_load(const Op& op, Planner& p, Step& s) {
  const ir::Type* b = desc_block(op, p, s);
  DescAux x{};
  x.rank = b->rank();
  if (static_cast<int>(s.in.size()) != 1 + x.rank || s.out.size() != 1)
    p.unsupported(op, fmt::format("a rank-{} descriptor load takes {} indices", x.rank, x.rank));
  need_int_scalars(op, p, s, 1, x.rank, "indices");
  for (int k = 0; k < x.rank; ++k) {
    x.block[k] = b->shape[k];
    x.idx_e[k] = s.in_types[1 + k]->elem;
  }
  x.n = b->numel();
  x.elem = b->elem;
  x.eb = ir::elem_bytes(b->elem);
  // The result may drop leading unit dims of the block (same elements, row-major).
  if (s.out_types[0]->numel() != x.n || s.out_types[0]->elem != b->elem)
    p.unsupported(op, "result type differs from the descriptor's block");
  x.load = exec::pick_load_lanes(x.eb, true, Fill::splat);
  if (!x.load) p.unsupported(op, "element type");
  s.fn = desc_load_kernel<desc_tile_lanes>;
  s.aux = make_aux(x);
}

void lower_desc_store(const Op& op, Planner& p, Step& s) {
  const ir::Type* b = desc_block(op, p, s);
  DescAux x{};
  x.rank = b->rank();
  if (static_cast<int>(s.in.size()) != 2 + x.rank)
    p.unsupported(op, fmt::format("a rank-{} descriptor store takes {} indices and a value", x.rank, x.rank));
  need_int_scalars(op, p, s, 1, x.rank, "indices");
  for (int k = 0; k < x.rank; ++k) {
    x.block[k] = b->shape[k];
    x.idx_e[k] = s.in_types[1 + k]->elem;
  }
  x.n = b->numel();
  x.elem = b->elem;
  x.eb = ir::elem_bytes(b->elem);
  x.src = 1 + x.rank;
  if (s.in_types[x.src]->numel() != x.n || s.in_types[x.src]->elem != b->elem)
    p.unsupported(op, "stored value type differs from the descriptor's block");
  if (op.code() == ir::Opcode::tt_descriptor_reduce) {
    // DescriptorReduceKind (reference §1.9): add(1) min(2) max(3) inc(4) dec(5) and(6) or(7) xor(8).
    // TTIR is signless: integer min/max are signed here.
    static constexpr exec::Rmw kinds[] = {exec::Rmw::add, exec::Rmw::min,  exec::Rmw::max, exec::Rmw::inc,
                                          exec::Rmw::dec, exec::Rmw::and_, exec::Rmw::or_, exec::Rmw::xor_};
    int k = enum_attr(op, p, "kind", kReduceNames, 0);
    x.atomic = exec::pick_atomic_lanes(kinds[k - 1], b->elem);
    if (!x.atomic)
      p.unsupported(op,
                    fmt::format("descriptor_reduce {} on {}", kReduceNames[k - 1], ir::elem_name(b->elem)));
  } else {
    x.store = exec::pick_store_lanes(x.eb, true);
    if (!x.store) p.unsupported(op, "element type");
  }
  s.fn = desc_store_kernel<desc_tile_lanes>;
  s.aux = make_aux(x);
}

/// Shared checks of descriptor_gather/scatter: [desc, x_offsets tensor<N x i32|i16>, y_offset i32 (, src)].
static DescAux rows_aux(const Op& op, Planner& p, const Step& s, const ir::Type* tile) {
  const ir::Type* b = desc_block(op, p, s);
  if (b->rank() != 2) p.unsupported(op, "gather and scatter need a 2-D descriptor");
  if (s.in.size() < 3) p.unsupported(op, "operands are the descriptor, x offsets and the y offset");
  const ir::Type* xt = s.in_types[1];
  if (!xt->is_tensor || xt->rank() != 1 || (xt->elem != Elem::i32 && xt->elem != Elem::i16))
    p.unsupported(op, "x offsets must be a 1-D i32 or i16 tensor");
  need_int_scalars(op, p, s, 2, 1, "the y offset");
  if (tile->rank() != 2 || tile->shape[0] != xt->shape[0] || tile->elem != b->elem)
    p.unsupported(op, "tile must be [len(x_offsets), W] of the descriptor's element type");
  DescAux x{};
  x.rank = 2;
  x.block[0] = tile->shape[0];
  x.block[1] = tile->shape[1];
  x.n = tile->numel();
  x.elem = b->elem;
  x.eb = ir::elem_bytes(b->elem);
  x.xoff_e = xt->elem;
  x.idx_e[1] = s.in_types[2]->elem;
  return x;
}

void lower_desc_gather(const Op& op, Planner& p, Step& s) {
  if (s.out.size() != 1 || s.in.size() != 3)
    p.unsupported(op, "descriptor_gather takes a descriptor and offsets");
  DescAux x = rows_aux(op, p, s, s.out_types[0]);
  x.load = exec::pick_load_lanes(x.eb, true, Fill::splat);
  if (!x.load) p.unsupported(op, "element type");
  s.fn = desc_load_kernel<desc_rows_lanes>;
  s.aux = make_aux(x);
}

void lower_desc_scatter(const Op& op, Planner& p, Step& s) {
  if (s.in.size() != 4) p.unsupported(op, "descriptor_scatter takes a descriptor, offsets and a value");
  DescAux x = rows_aux(op, p, s, s.in_types[3]);
  x.src = 3;
  x.store = exec::pick_store_lanes(x.eb, true);
  if (!x.store) p.unsupported(op, "element type");
  s.fn = desc_store_kernel<desc_rows_lanes>;
  s.aux = make_aux(x);
}

// ---------------------------------------------------------------------------------------------
// Plan pass: fused pointer tiles

namespace {

/// Whether running `s` may change memory, or let another program run and change it: a write, an
/// atomic, a barrier, a wait for another program (ir::may_wait: atomics, volatile loads), a call, or a
/// region op holding one of these.
bool may_change_memory(const Step& s) {
  using namespace ir::effect;
  if ((ir::op_def(s.op->code()).effects & (write | atomic | sync)) || ir::may_wait(*s.op) || s.callee)
    return true;
  for (const exec::RegionPlan& r : s.regions)
    for (const exec::BlockPlan& b : r.blocks)
      for (const Step& in : b.steps)
        if (may_change_memory(in)) return true;
  return false;
}

/// Calls f(slot) for each read of a slot by `s`: its operands, its fused reads (Step::reads), and
/// inside its regions every step's and terminator's; for a region, by all of its blocks.
template <class F>
void for_each_read(const exec::RegionPlan& r, F&& f);
template <class F>
void for_each_read(const Step& s, F&& f) {
  exec::for_each_own_read(s, f);
  for (const exec::RegionPlan& r : s.regions) for_each_read(r, f);
}
template <class F>
void for_each_read(const exec::RegionPlan& r, F&& f) {
  for (const exec::BlockPlan& b : r.blocks) {
    for (const Step& st : b.steps) for_each_read(st, f);
    exec::for_each_read(b.term, f);
  }
}

/// Fused loads whose tile may be read where it lies (LoadAffineFn's `in_place`): every read of the
/// value comes after the load in its own block (or inside a later step's regions there), with nothing
/// from the load to the last read that may change memory (may_change_memory). Those reads then see the
/// bytes the load would have copied, and nothing writes through the slot (no op writes a slot but its own
/// results, plan.cpp). A read by a terminator (a yield, a branch, a return) or from another block keeps
/// the copy. Another program writing the range meanwhile is a data race (a release after the load would
/// close the window); there two reads of the value may differ (CONTRIBUTING.md, "Value storage").
void read_in_place(exec::FunctionPlan& fp) {
  std::unordered_map<int, int> reads;  // of each slot, in the whole function
  for_each_read(fp.body, [&](int slot) { reads[slot]++; });
  auto walk = [&](auto& self, exec::RegionPlan& r) -> void {
    for (exec::BlockPlan& b : r.blocks)
      for (size_t i = 0; i < b.steps.size(); ++i) {
        Step& st = b.steps[i];
        for (exec::RegionPlan& sub : st.regions) self(self, sub);
        if (st.fn != load_fused_kernel) continue;
        const int v = st.out[0], all = reads[v];
        int seen = 0;
        for (size_t j = i + 1; j < b.steps.size() && seen < all; ++j) {
          if (may_change_memory(b.steps[j])) break;
          for_each_read(b.steps[j], [&](int slot) { seen += slot == v; });
        }
        if (seen != all) continue;
        LoadAux x = st.data<LoadAux>();
        x.in_place = true;
        st.aux = make_aux(x);
      }
  };
  walk(walk, fp.body);
}

}  // namespace

void fuse_addresses(exec::FunctionPlan& fp) {
  using ir::Opcode;
  // Every step of the function (regions included), who writes each slot, and how many reads each slot
  // has (operands, fused reads, terminators).
  std::vector<Step*> steps;
  std::unordered_map<int, Step*> def;
  std::unordered_map<int, int> reads;
  auto walk = [&](auto& self, exec::RegionPlan& r) -> void {
    for (exec::BlockPlan& b : r.blocks)
      for (Step& st : b.steps) {
        steps.push_back(&st);
        for (int o : st.out) def[o] = &st;
        for (exec::RegionPlan& sub : st.regions) self(self, sub);
      }
  };
  walk(walk, fp.body);
  for_each_read(fp.body, [&](int slot) { reads[slot]++; });
  auto made_by = [&](int slot, Opcode code) -> Step* {
    auto it = def.find(slot);
    return it != def.end() && it->second->op->code() == code ? it->second : nullptr;
  };

  // Offsets in order by construction: offs[i] == offs[0] + i modulo 2^width for a tt.make_range plus
  // (arith.addi) any number of tiles of equal lanes (a splat, a splat constant), sign-extended or not.
  // Whether the sum wrapped around is left to the launch (LoadAffineFn: the first and last lanes).
  auto equal_lanes = [&](int slot) {
    if (made_by(slot, Opcode::tt_splat)) return true;
    const Step* c = made_by(slot, Opcode::arith_constant);
    const ir::Attr* v = c ? c->op->attr("value") : nullptr;
    return v && v->kind == ir::Attr::Kind::Dense && v->dense.splat;
  };
  auto in_order = [&](int slot) {
    for (;;) {
      auto it = def.find(slot);
      if (it == def.end()) return false;
      const Step& d = *it->second;
      switch (d.op->code()) {
        case Opcode::tt_make_range: return true;
        case Opcode::arith_extsi: slot = d.in[0]; break;
        case Opcode::arith_addi:
          if (equal_lanes(d.in[1]))
            slot = d.in[0];
          else if (equal_lanes(d.in[0]))
            slot = d.in[1];
          else
            return false;
          break;
        default: return false;
      }
    }
  };

  // Loads and stores through addptr(splat(scalar pointer), i32 / i64 offset tile), per pointer tile.
  std::unordered_map<int, std::vector<Step*>> through;
  for (Step* st : steps) {
    const Opcode c = st->op->code();
    if (!(c == Opcode::tt_load && st->fn == load_kernel && !st->data<LoadAux>().vol) &&
        !(c == Opcode::tt_store && st->fn == store_kernel))
      continue;
    const Step* a = made_by(st->in[0], Opcode::tt_addptr);
    if (!a || !a->in_types[0]->is_tensor || !a->in_types[1]->is_tensor) continue;
    const Elem oe = a->in_types[1]->elem;
    const Step* sp = made_by(a->in[0], Opcode::tt_splat);
    if ((oe != Elem::i32 && oe != Elem::i64) || !sp || sp->in_types[0]->is_tensor) continue;
    through[st->in[0]].push_back(st);
  }

  std::unordered_map<int, int> fused_addptrs;  // splat slot -> its addptrs made only when observed
  for (auto& [ptr, accesses] : through) {
    if (static_cast<int>(accesses.size()) != reads[ptr]) continue;  // something else reads the tile
    Step& a = *def[ptr];
    const Step& sp = *def[a.in[0]];
    const int ob = ir::elem_bytes(a.in_types[1]->elem);
    const bool ordered = in_order(a.in[1]);
    // The fused fields of a LoadAux or StoreAux `x`, and the access's kernel.
    auto fuse = [&](Step& st, auto x, auto affine, exec::KernelFn fn) {
      assert(affine && "the lowering hook checked the element size");
      x.affine = affine;
      x.base = sp.in[0];
      x.offsets = a.in[1];
      x.in_order = ordered;
      st.aux = make_aux(x);
      st.fn = fn;
      st.reads = {sp.in[0], a.in[1]};
    };
    for (Step* st : accesses) {
      if (st->op->code() == Opcode::tt_load) {
        const auto& x = st->data<LoadAux>();
        fuse(*st, x,
             exec::pick_load_affine(x.eb, ob, x.mask >= 0, x.other >= 0 ? Fill::per_lane : Fill::zero),
             load_fused_kernel);
      } else {
        const auto& x = st->data<StoreAux>();
        fuse(*st, x, exec::pick_store_affine(ir::elem_bytes(st->in_types[1]->elem), ob, x.mask >= 0),
             store_fused_kernel);
      }
    }
    AddptrAux ax = a.data<AddptrAux>();
    ax.base = sp.in[0];
    a.aux = make_aux(ax);
    a.reads = {sp.in[0]};
    a.fn = ob == 4 ? addptr_unless_fused<int32_t> : addptr_unless_fused<int64_t>;
    fused_addptrs[a.in[0]]++;
  }
  for (auto [splat, n] : fused_addptrs)
    if (n == reads[splat]) def[splat]->fn = splat_unless_fused;
  read_in_place(fp);
}

}  // namespace tilescope::ops
