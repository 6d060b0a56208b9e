// Checked memory access: the one place where kernels touch host memory.
//
// Every active lane's address is resolved against the registered buffers (exec/memory.h) before a
// byte of host memory is read or written (ARCHITECTURE "Memory", issue 2 item 5). A lane whose
// address lies outside the buffer it was derived from (or in region 0: null and int-made
// addresses) is never dereferenced: a load gives the lane's `other` value (or 0), a store or an
// atomic skips it, and the lane is counted in LaunchStats::out_of_bounds and reported in the
// AccessEvent's `bad_lanes`. Masked-off lanes are never touched and never reported.
//
// The lane functions are chosen at plan time (element size, whether a mask exists, where the
// fill value comes from) so the common case, all active lanes inside one buffer, is a branch-free
// bounds pass over the addresses followed by a tight copy (a memcpy when the lanes are contiguous
// and unmasked). Only a tile with a bad lane takes the per-lane reporting path.
#pragma once

#include <cstdint>
#include <span>

#include "dispatch.h"
#include "plan.h"
#include "tilescope/exec/events.h"
#include "tilescope/exec/value.h"

namespace tilescope::exec {

/// Deliver one access to the observers that want it: observers of kAccess get every access,
/// observers of only kOutOfBounds get it when `bad_lanes > 0`. `mask` may be null (all lanes
/// active); the event then carries an all-ones mask, never null.
void emit_access(Program& p, AccessKind kind, const ir::Op* op, int64_t lanes, const uint64_t* addrs,
                 const uint8_t* mask, int elem_bytes, int64_t bad_lanes, bool dense = false,
                 int64_t row_lanes = 0, int64_t prefix_lanes = 0);

/// Count bad lanes in the program's stats and emit an event if anyone observes it (one mask test
/// when nobody does). `dense`, `row_lanes`, `prefix_lanes`: AccessEvent's (only where the caller checked
/// them).
inline void report_access(Program& p, AccessKind kind, const ir::Op* op, int64_t lanes, const uint64_t* addrs,
                          const uint8_t* mask, int elem_bytes, int64_t bad_lanes, bool dense = false,
                          int64_t row_lanes = 0, int64_t prefix_lanes = 0) {
  if (bad_lanes > 0 && p.stats) p.stats->out_of_bounds += bad_lanes;
  if (p.observed & (bad_lanes > 0 ? (kAccess | kOutOfBounds) : kAccess))
    emit_access(p, kind, op, lanes, addrs, mask, elem_bytes, bad_lanes, dense, row_lanes, prefix_lanes);
}

/// Per-thread scratch for lane addresses and masks that kernels compute (block pointers,
/// descriptors). Valid until the next call on the same thread with the same tag; never held across
/// a fiber switch (Program::polled).
uint64_t* scratch_addrs(int64_t n);
uint8_t* scratch_mask(int64_t n);

/// Where a load's masked-off (and bad) lanes get their value.
enum class Fill : uint8_t {
  zero,      // 0 (tt.load without `other`; GPU gives 0, reference §5 table)
  per_lane,  // `other[i]` (tt.load with `other`)
  splat,     // one bit pattern for every lane (block-pointer / descriptor padding)
};

/// Load `n` lanes of `elem_bytes` each from `addrs` into `out` (slot storage). `mask` is uint8 0/1 per
/// lane or null; `other` is per-lane bits (Fill::per_lane) and `fill` the splat bits (Fill::splat).
using LoadLanesFn = void (*)(Program& p, const ir::Op* op, int64_t n, const uint64_t* addrs,
                             const uint8_t* mask, const void* other, uint64_t fill, void* out);
/// Store `n` lanes of `elem_bytes` each from `src` (slot storage) to `addrs`; masked-off lanes skipped.
using StoreLanesFn = void (*)(Program& p, const ir::Op* op, int64_t n, const uint64_t* addrs,
                              const uint8_t* mask, const void* src);
/// Pick the lane kernel for an element size (1, 2, 4 or 8 bytes); null for other sizes. `atomic`: each
/// active lane is one sequentially consistent atomic access, for the loads and stores through which
/// programs talk to each other while they run (volatile loads, tt.atomic_load, tt.atomic_store):
/// other programs access those addresses at the same time, on other threads.
LoadLanesFn pick_load_lanes(int elem_bytes, bool has_mask, Fill fill, bool atomic = false);
StoreLanesFn pick_store_lanes(int elem_bytes, bool has_mask, bool atomic = false);

/// Event kinds through which an observer sees lane addresses or the values of pointer tiles (accesses,
/// op operands and results). A launch with such an observer runs every step as written; one without
/// runs the fused form of loads and stores through tt.addptr(tt.splat(base), offsets) (ops::
/// fuse_addresses), which never makes the pointer tile.
constexpr unsigned kSeesAddresses = kAccess | kOpBegin | kOpResult;

/// A fused tt.load: `n` lanes of `elem_bytes` at base + offs[i]·elem_bytes (offs: the addptr's i32 or
/// i64 offsets, sign-extended; 64-bit wraparound, reference §1.2). The same values, stats and
/// out-of-bounds events as the LoadLanesFn on those addresses. Offsets offs[0] + i (no wraparound)
/// whose range lies in one buffer are one range check and a copy; other tiles have their addresses
/// made in scratch and take the LoadLanesFn. `in_order`: the plan knows that offs[i] is offs[0] + i
/// modulo 2^width (ops::fuse_addresses), so the first and last lanes tell whether the tile wrapped
/// around; otherwise every lane is compared. Only where no observer sees addresses (kSeesAddresses).
/// `in_place`: the plan allows the tile to be read where it lies (ops::fuse_addresses): when its lanes
/// are one range in one buffer, every lane active and the first aligned to the element size, nothing is
/// copied and the range's first byte is returned. Otherwise the tile is made in `out` and null returned.
using LoadAffineFn = const std::byte* (*)(Program& p, const ir::Op* op, int64_t n, uint64_t base,
                                          const void* offs, bool in_order, bool in_place, const uint8_t* mask,
                                          const void* other, void* out);
/// A fused tt.store, as LoadAffineFn (a buffer where parked programs wait takes the StoreLanesFn).
using StoreAffineFn = void (*)(Program& p, const ir::Op* op, int64_t n, uint64_t base, const void* offs,
                               bool in_order, const uint8_t* mask, const void* src);
/// The fused lane kernel for an element size (1, 2, 4, 8) and offset size (4: i32, 8: i64); null for
/// others. Loads fill masked-off lanes with 0 or `other` (Fill::zero, Fill::per_lane; null for splat).
LoadAffineFn pick_load_affine(int elem_bytes, int offset_bytes, bool has_mask, Fill fill);
StoreAffineFn pick_store_affine(int elem_bytes, int offset_bytes, bool has_mask);

/// Read-modify-write kinds: tt.atomic_rmw (RMWOp, reference §1.9) plus the descriptor_reduce kinds
/// inc and dec (PTX red.inc / red.dec: inc gives old >= v ? 0 : old + 1, dec gives
/// old == 0 || old > v ? v : old - 1, unsigned).
enum class Rmw : uint8_t { and_, or_, xor_, add, fadd, max, min, umax, umin, exch, inc, dec };

/// Apply one atomic RMW per active lane, in lane index order, each a std::atomic_ref CAS (or fetch op)
/// on the host address; `old` (may be null) gets the previous values, 0 for masked-off and bad lanes.
using AtomicLanesFn = void (*)(Program& p, const ir::Op* op, int64_t n, const uint64_t* addrs,
                               const uint8_t* mask, const void* vals, void* old);
/// The lane kernel for `kind` on element type `e`, or null when the combination has no meaning
/// (fadd on integers, bitwise ops on floats, ...). max/min on floats follow IEEE maxNum/minNum.
AtomicLanesFn pick_atomic_lanes(Rmw kind, ir::Elem e);
/// Compare-and-swap every lane (tt.atomic_cas has no mask): `old[i]` = previous value, bitwise compare.
using CasLanesFn = void (*)(Program& p, const ir::Op* op, int64_t n, const uint64_t* addrs, const void* cmp,
                            const void* val, void* old);
CasLanesFn pick_cas_lanes(int elem_bytes);

/// The bit pattern of a quiet NaN of float type `e` (0 for integer types: NaN padding of an integer
/// tensor pads with 0, reference §5.1).
uint64_t nan_bits(ir::Elem e);

/// Addresses and in-bounds mask of a tile anchored at `start` (element indices, may be negative):
/// lane (i_0..i_{r-1}) (row-major over `block`) has address base + Σ (start_d + i_d)·strides_d·elem_bytes
/// (64-bit wraparound) and mask bit = AND over dims d in `check` (bit d) of 0 <= start_d + i_d < shape_d.
/// Used by block pointers (reference §5.1) and descriptors (§5.6).
void tile_lanes(uint64_t base, int rank, const int64_t* start, const int64_t* block, const int64_t* shape,
                const int64_t* strides, unsigned check, int elem_bytes, uint64_t* addrs, uint8_t* mask);

/// The TensorDesc of a host `!tt.tensordesc<tensor<B0x..xT>>` kernel argument (reference §1.8): `base` is
/// the virtual address of the buffer passed for it; `shape` (elements) and `strides` (elements) are the
/// values of the 2·rank scalar arguments that follow it in the TTIR signature (rank i32 shapes, then
/// rank i64 strides). `padding` is 1 (zero, Triton's host TensorDescriptor default) or 2 (NaN).
/// Throws tilescope::Error when the counts do not match the block rank.
TensorDesc make_desc_arg(const ir::Type& desc_type, uint64_t base, std::span<const int64_t> shape,
                         std::span<const int64_t> strides, int padding = 1);

}  // namespace tilescope::exec
