// Checked memory access (see access.h).
#include "access.h"

#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "tilescope/ir/diag.h"

namespace tilescope::exec {

namespace {

template <int EB>
struct UIntOf;
template <>
struct UIntOf<1> {
  using type = uint8_t;
};
template <>
struct UIntOf<2> {
  using type = uint16_t;
};
template <>
struct UIntOf<4> {
  using type = uint32_t;
};
template <>
struct UIntOf<8> {
  using type = uint64_t;
};
template <int EB>
using uint_t = typename UIntOf<EB>::type;

const uint8_t* all_ones(int64_t n) {
  thread_local std::vector<uint8_t> ones;
  if (static_cast<int64_t>(ones.size()) < n) ones.assign(static_cast<size_t>(n), 1);
  return ones.data();
}

// ---------------------------------------------------------------------------------------------
// Loads and stores

/// Whether addrs[i] == addrs[0] + i·EB for all n lanes: four accumulators of one SIMD register's
/// lanes each (GCC vector types as wide as the target's registers: wider ones spill).
template <int EB>
inline bool contiguous(int64_t n, const uint64_t* a) {
#ifdef __AVX2__
  constexpr int64_t kW = 4;
#else
  constexpr int64_t kW = 2;
#endif
  using V = uint64_t __attribute__((vector_size(kW * 8)));
  const uint64_t a0 = a[0];
  V e0;
  for (int64_t k = 0; k < kW; ++k) e0[k] = a0 + static_cast<uint64_t>(k) * EB;
  V e1 = e0 + kW * EB, e2 = e0 + 2 * kW * EB, e3 = e0 + 3 * kW * EB;
  V c0{}, c1{}, c2{}, c3{};
  int64_t i = 0;
  for (; i + 4 * kW <= n; i += 4 * kW) {
    V v0, v1, v2, v3;
    std::memcpy(&v0, a + i, sizeof v0);
    std::memcpy(&v1, a + i + kW, sizeof v1);
    std::memcpy(&v2, a + i + 2 * kW, sizeof v2);
    std::memcpy(&v3, a + i + 3 * kW, sizeof v3);
    c0 |= v0 ^ e0;
    c1 |= v1 ^ e1;
    c2 |= v2 ^ e2;
    c3 |= v3 ^ e3;
    e0 += 4 * kW * EB;
    e1 += 4 * kW * EB;
    e2 += 4 * kW * EB;
    e3 += 4 * kW * EB;
  }
  const V c = c0 | c1 | c2 | c3;
  uint64_t gaps = 0;
  for (int64_t k = 0; k < kW; ++k) gaps |= c[k];
  for (; i < n; ++i) gaps |= a[i] ^ (a0 + static_cast<uint64_t>(i) * EB);
  return gaps == 0;
}

/// The row length R of a tile made of equal rows: every lane active, lanes [k·R, (k + 1)·R) at
/// consecutive addresses for every k, and each row inside the buffer (lo = its first byte's address,
/// span = its size less EB). What a 2-D tile of a row-major tensor is (rows at a stride). 0 for any
/// other tile, and for rows shorter than 4 lanes (the lane pass is as cheap).
template <int EB, bool M>
int64_t equal_rows(uint64_t lo, uint64_t span, int64_t n, const uint64_t* a, const uint8_t* m) {
  constexpr int64_t kMinRow = 4;
  const uint64_t a0 = a[0];
  int64_t r = 1;
  while (r < n && a[r] == a0 + static_cast<uint64_t>(r) * EB) ++r;
  if (r < kMinRow || r >= n || n % r != 0) return 0;
  if (M && std::memchr(m, 0, static_cast<size_t>(n)) != nullptr) return 0;
  const auto row_last = static_cast<uint64_t>(r - 1) * EB;
  for (int64_t k = 0; k < n; k += r) {
    const uint64_t off = a[k] - lo;
    if (off > span || row_last > span - off || !contiguous<EB>(r, a + k)) return 0;
  }
  return r;
}

/// Whether none of the n mask bytes is set.
inline bool none_active(const uint8_t* m, int64_t n) {
  uint8_t any = 0;
  for (int64_t i = 0; i < n; ++i) any |= m[i];
  return any == 0;
}

/// Fast-path test: are all active lanes inside buffer `b` for an access of EB bytes? Also tells
/// whether the lanes are contiguous (addrs[i] == addrs[0] + i·EB) and every lane is active (`dense`:
/// such a tile is one memcpy), or contiguous with the active lanes a prefix [0, `prefix`) and the rest
/// masked off (a row's last tile, `offs < n`: one memcpy of the prefix), or whether the tile is rows of
/// `rows` such lanes (equal_rows: one memcpy per row; 0 otherwise). A contiguous tile (the common case:
/// a pointer plus a range) is recognised first by a cheap pass over the addresses and tested as one byte
/// range, its mask scanned bytewise; then a tile of rows; any other tile takes the branch-free pass over
/// the lanes.
template <int EB, bool M>
inline bool all_inside(const Buffer& b, int64_t n, const uint64_t* a, const uint8_t* m, bool& dense,
                       int64_t& rows, int64_t& prefix) {
  if (b.bytes < static_cast<uint64_t>(EB)) return false;
  const uint64_t lo = b.vbase, span = b.bytes - EB, a0 = a[0];
  const auto last = static_cast<uint64_t>(n - 1) * EB;
  if (a[n - 1] - a0 == last) {
    if (contiguous<EB>(n, a)) {
      const auto* z = M ? static_cast<const uint8_t*>(std::memchr(m, 0, static_cast<size_t>(n))) : nullptr;
      dense = z == nullptr;
      // The active lanes are the prefix [0, k) when every lane from the first inactive one is inactive.
      const int64_t k = dense ? n : z - m;
      const bool is_prefix = !dense && k > 0 && none_active(z + 1, n - k - 1);
      const uint64_t off0 = a0 - lo;
      // Every lane inside: the whole range is. Otherwise only the masked-off lanes may be outside
      // (the last program of a grid): an active prefix inside is enough, else the lane pass decides.
      if (off0 <= span && last <= span - off0) {
        if (is_prefix) prefix = k;
        return true;
      }
      if (dense) return false;
      if (is_prefix && off0 <= span && static_cast<uint64_t>(k - 1) * EB <= span - off0) {
        prefix = k;
        return true;
      }
    }
  } else if ((rows = equal_rows<EB, M>(lo, span, n, a, m)) > 0) {
    return true;
  }
  uint64_t outside = 0, gaps = 0, inactive = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t active = M ? static_cast<uint64_t>(m[i] != 0) : 1;
    inactive |= active ^ 1;
    outside |= active & static_cast<uint64_t>(a[i] - lo > span);
    gaps |= (a[i] - a0) ^ (static_cast<uint64_t>(i) * EB);
  }
  dense = gaps == 0 && inactive == 0;
  return outside == 0;
}

template <int EB, bool M, Fill F>
void load_lanes(Program& p, const ir::Op* op, int64_t n, const uint64_t* a, const uint8_t* m,
                const void* other, uint64_t fill, void* out_) {
  using T = uint_t<EB>;
  T* out = static_cast<T*>(out_);
  const T* o = static_cast<const T*>(other);
  const T fv = static_cast<T>(fill);
  auto alt = [&](int64_t i) -> T {
    if constexpr (F == Fill::per_lane)
      return o[i];
    else if constexpr (F == Fill::splat)
      return fv;
    else
      return T{0};
  };
  const Memory& mem = *p.memory;
  if (n > 0) {
    int r = mem.region(a[0]);
    bool dense = false;
    int64_t rows = 0, prefix = 0;
    if (r >= 0 && all_inside<EB, M>(mem.buffer(r), n, a, m, dense, rows, prefix)) {
      const Buffer& b = mem.buffer(r);
      const std::byte* h = b.host;
      const uint64_t lo = b.vbase;
      if (dense) {
        std::memcpy(out, h + (a[0] - lo), static_cast<size_t>(n) * EB);
      } else if (prefix > 0) {
        std::memcpy(out, h + (a[0] - lo), static_cast<size_t>(prefix) * EB);
        for (int64_t i = prefix; i < n; ++i) out[i] = alt(i);
      } else if (rows > 0) {
        for (int64_t k = 0; k < n; k += rows)
          std::memcpy(&out[k], h + (a[k] - lo), static_cast<size_t>(rows) * EB);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          if (!M || m[i])
            std::memcpy(&out[i], h + (a[i] - lo), EB);
          else
            out[i] = alt(i);
        }
      }
      report_access(p, AccessKind::load, op, n, a, M ? m : nullptr, EB, 0, dense, rows, prefix);
      return;
    }
  }
  // Slow path: lanes in several buffers, or at least one bad lane. Bad lanes are never read.
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (M && !m[i]) {
      out[i] = alt(i);
      continue;
    }
    if (mem.where(a[i], EB).in_bounds) {
      std::memcpy(&out[i], mem.host(a[i]), EB);
    } else {
      out[i] = alt(i);
      ++bad;
    }
  }
  report_access(p, AccessKind::load, op, n, a, M ? m : nullptr, EB, bad);
}

/// Addresses whose value a write changed, in buffers where programs are parked (Program::watching):
/// collected during one op, then one wake_waiters call. Per thread; never held across a switch.
std::vector<uint64_t>& changed_addrs() {
  thread_local std::vector<uint64_t> v;
  v.clear();
  return v;
}

/// Store lanes into a buffer where programs are parked: the same writes as store_lanes, and the
/// lanes whose value changed wake the programs waiting on them.
template <int EB, bool M>
int64_t store_watched(Program& p, int64_t n, const uint64_t* a, const uint8_t* m, const void* src_) {
  using T = uint_t<EB>;
  const T* src = static_cast<const T*>(src_);
  const Memory& mem = *p.memory;
  std::vector<uint64_t>& changed = changed_addrs();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (M && !m[i]) continue;
    if (!mem.where(a[i], EB).in_bounds) {
      ++bad;
      continue;
    }
    std::byte* h = mem.host(a[i]);
    T old;
    std::memcpy(&old, h, EB);
    std::memcpy(h, &src[i], EB);
    if (old != src[i] && p.watching(mem.region(a[i]))) changed.push_back(a[i]);
  }
  if (!changed.empty()) wake_waiters(p, changed.data(), static_cast<int64_t>(changed.size()));
  return bad;
}

template <int EB, bool M>
void store_lanes(Program& p, const ir::Op* op, int64_t n, const uint64_t* a, const uint8_t* m,
                 const void* src_) {
  using T = uint_t<EB>;
  const T* src = static_cast<const T*>(src_);
  const Memory& mem = *p.memory;
  if (n > 0) {
    int r = mem.region(a[0]);
    bool dense = false;
    int64_t rows = 0, prefix = 0;
    if (r >= 0 && all_inside<EB, M>(mem.buffer(r), n, a, m, dense, rows, prefix)) {
      if (p.watching(r)) [[unlikely]] {
        store_watched<EB, M>(p, n, a, m, src_);
      } else {
        const Buffer& b = mem.buffer(r);
        std::byte* h = b.host;
        const uint64_t lo = b.vbase;
        if (dense) {
          std::memcpy(h + (a[0] - lo), src, static_cast<size_t>(n) * EB);
        } else if (prefix > 0) {
          std::memcpy(h + (a[0] - lo), src, static_cast<size_t>(prefix) * EB);
        } else if (rows > 0) {
          // Rows in lane order: where rows overlap, the later row's lanes win, as lane by lane.
          for (int64_t k = 0; k < n; k += rows)
            std::memcpy(h + (a[k] - lo), &src[k], static_cast<size_t>(rows) * EB);
        } else {
          // Lanes are written in index order: with duplicate addresses the last active lane wins.
          for (int64_t i = 0; i < n; ++i)
            if (!M || m[i]) std::memcpy(h + (a[i] - lo), &src[i], EB);
        }
      }
      report_access(p, AccessKind::store, op, n, a, M ? m : nullptr, EB, 0, dense, rows, prefix);
      return;
    }
  }
  // Lanes in several buffers, or at least one bad lane (never written).
  int64_t bad = store_watched<EB, M>(p, n, a, m, src_);
  report_access(p, AccessKind::store, op, n, a, M ? m : nullptr, EB, bad);
}

// ---------------------------------------------------------------------------------------------
// Atomic loads and stores (volatile loads, tt.atomic_load, tt.atomic_store)

std::mutex g_misaligned;  // atomics on addresses not aligned for std::atomic_ref (the GPU would fault)

/// kAtomicOrder (exec/events.h): while an observer wants atomics in the order they took effect, each
/// atomic op runs all its lanes and delivers its access event under this lock; otherwise it takes no
/// lock (one mask test).
std::mutex g_atomic_order;
std::unique_lock<std::mutex> atomic_order_lock(const Program& p) {
  return (p.observed & kAtomicOrder) ? std::unique_lock<std::mutex>(g_atomic_order)
                                     : std::unique_lock<std::mutex>();
}

template <class T>
T atomic_load_at(std::byte* h) {
  if (reinterpret_cast<uintptr_t>(h) % std::atomic_ref<T>::required_alignment != 0) {
    std::lock_guard<std::mutex> g(g_misaligned);
    T v;
    std::memcpy(&v, h, sizeof v);
    return v;
  }
  return std::atomic_ref<T>(*reinterpret_cast<T*>(h)).load();
}

template <class T>
T atomic_exchange_at(std::byte* h, T v) {
  if (reinterpret_cast<uintptr_t>(h) % std::atomic_ref<T>::required_alignment != 0) {
    std::lock_guard<std::mutex> g(g_misaligned);
    T old;
    std::memcpy(&old, h, sizeof old);
    std::memcpy(h, &v, sizeof v);
    return old;
  }
  return std::atomic_ref<T>(*reinterpret_cast<T*>(h)).exchange(v);
}

template <int EB, bool M, Fill F>
void load_lanes_atomic(Program& p, const ir::Op* op, int64_t n, const uint64_t* a, const uint8_t* m,
                       const void* other, uint64_t fill, void* out_) {
  auto order = atomic_order_lock(p);
  using T = uint_t<EB>;
  T* out = static_cast<T*>(out_);
  const Memory& mem = *p.memory;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool active = !M || m[i];
    if (active && mem.where(a[i], EB).in_bounds) {
      out[i] = atomic_load_at<T>(mem.host(a[i]));
      continue;
    }
    bad += active;
    if constexpr (F == Fill::per_lane)
      out[i] = static_cast<const T*>(other)[i];
    else if constexpr (F == Fill::splat)
      out[i] = static_cast<T>(fill);
    else
      out[i] = T{0};
  }
  report_access(p, AccessKind::load, op, n, a, M ? m : nullptr, EB, bad);
}

template <int EB, bool M>
void store_lanes_atomic(Program& p, const ir::Op* op, int64_t n, const uint64_t* a, const uint8_t* m,
                        const void* src_) {
  auto order = atomic_order_lock(p);
  using T = uint_t<EB>;
  const T* src = static_cast<const T*>(src_);
  const Memory& mem = *p.memory;
  std::vector<uint64_t>& changed = changed_addrs();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (M && !m[i]) continue;
    if (!mem.where(a[i], EB).in_bounds) {
      ++bad;
      continue;
    }
    if (atomic_exchange_at<T>(mem.host(a[i]), src[i]) != src[i] && p.watching(mem.region(a[i])))
      changed.push_back(a[i]);
  }
  if (!changed.empty()) wake_waiters(p, changed.data(), static_cast<int64_t>(changed.size()));
  report_access(p, AccessKind::store, op, n, a, M ? m : nullptr, EB, bad);
}

template <int EB>
LoadLanesFn pick_load_eb(bool mask, Fill fill, bool atomic) {
  if (atomic) {
    switch (fill) {
      case Fill::zero:
        return mask ? load_lanes_atomic<EB, true, Fill::zero> : load_lanes_atomic<EB, false, Fill::zero>;
      case Fill::per_lane:
        return mask ? load_lanes_atomic<EB, true, Fill::per_lane>
                    : load_lanes_atomic<EB, false, Fill::per_lane>;
      case Fill::splat:
        return mask ? load_lanes_atomic<EB, true, Fill::splat> : load_lanes_atomic<EB, false, Fill::splat>;
    }
    return nullptr;
  }
  switch (fill) {
    case Fill::zero: return mask ? load_lanes<EB, true, Fill::zero> : load_lanes<EB, false, Fill::zero>;
    case Fill::per_lane:
      return mask ? load_lanes<EB, true, Fill::per_lane> : load_lanes<EB, false, Fill::per_lane>;
    case Fill::splat: return mask ? load_lanes<EB, true, Fill::splat> : load_lanes<EB, false, Fill::splat>;
  }
  return nullptr;
}

template <int EB>
StoreLanesFn pick_store_eb(bool mask, bool atomic) {
  if (atomic) return mask ? store_lanes_atomic<EB, true> : store_lanes_atomic<EB, false>;
  return mask ? store_lanes<EB, true> : store_lanes<EB, false>;
}

// ---------------------------------------------------------------------------------------------
// Pointer tiles in affine form (tt.addptr(tt.splat(base), offsets), fused at plan time)

/// Whether offs[i] == offs[0] + i for all n lanes with no wraparound in the offsets' type, so that the
/// sign-extended offsets, and the lanes' addresses, are consecutive too. Compared in the unsigned type
/// (8 lanes of i32 per AVX2 compare).
template <class Off>
bool consecutive(int64_t n, const Off* o) {
  using U = std::make_unsigned_t<Off>;
  if (n - 1 > static_cast<int64_t>(std::numeric_limits<Off>::max())) return false;
  if (o[0] > std::numeric_limits<Off>::max() - static_cast<Off>(n - 1)) return false;
  const U u0 = static_cast<U>(o[0]);
  // Two accumulators of one SIMD register's lanes each, as contiguous().
#ifdef __AVX2__
  constexpr int kBytes = 32;
#else
  constexpr int kBytes = 16;
#endif
  using V32 = uint32_t __attribute__((vector_size(kBytes)));
  using V64 = uint64_t __attribute__((vector_size(kBytes)));
  using V = std::conditional_t<sizeof(U) == 4, V32, V64>;
  constexpr int64_t kW = kBytes / sizeof(U);
  V e0, step;
  for (int64_t k = 0; k < kW; ++k) {
    e0[k] = static_cast<U>(u0 + static_cast<U>(k));
    step[k] = static_cast<U>(2 * kW);
  }
  V e1 = e0 + static_cast<U>(kW), c0{}, c1{};
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    V v0, v1;
    std::memcpy(&v0, o + i, sizeof v0);
    std::memcpy(&v1, o + i + kW, sizeof v1);
    c0 |= v0 ^ e0;
    c1 |= v1 ^ e1;
    e0 += step;
    e1 += step;
  }
  const V c = c0 | c1;
  U gaps = 0;
  for (int64_t k = 0; k < kW; ++k) gaps |= c[k];
  for (; i < n; ++i) gaps |= static_cast<U>(o[i]) ^ static_cast<U>(u0 + static_cast<U>(i));
  return gaps == 0;
}

/// Lane i's address: base + offs[i]·EB (tt.addptr: sign-extended offset, 64-bit wraparound).
template <int EB, class Off>
uint64_t lane_address(uint64_t base, Off off) {
  return base + (static_cast<uint64_t>(static_cast<int64_t>(off)) << std::countr_zero(unsigned{EB}));
}

/// Where the EB-byte lanes base + offs[i]·EB lie when they are one range inside one buffer: the range's
/// first host byte, its buffer in `region`; null otherwise (not consecutive, or not all inside).
/// `in_order`: offs[i] == offs[0] + i modulo 2^width is known (LoadAffineFn); a tile that wrapped
/// around has offs[n - 1] - offs[0] != n - 1 (n <= 2^31), so only the ends are compared.
template <int EB, class Off>
std::byte* affine_range(const Memory& mem, int64_t n, uint64_t base, const Off* offs, bool in_order,
                        int& region) {
  if (n <= 0) return nullptr;
  if (in_order ? static_cast<uint64_t>(static_cast<int64_t>(offs[n - 1])) -
                         static_cast<uint64_t>(static_cast<int64_t>(offs[0])) !=
                     static_cast<uint64_t>(n - 1)
               : !consecutive(n, offs))
    return nullptr;
  const uint64_t a0 = lane_address<EB>(base, offs[0]);
  region = mem.region(a0);
  if (region < 0) return nullptr;
  const Buffer& b = mem.buffer(region);
  if (b.bytes < static_cast<uint64_t>(EB)) return nullptr;
  const uint64_t span = b.bytes - EB, off0 = a0 - b.vbase, last = static_cast<uint64_t>(n - 1) * EB;
  if (off0 > span || last > span - off0) return nullptr;
  return b.host + off0;
}

/// The lane addresses, in scratch, for the general path.
template <int EB, class Off>
const uint64_t* affine_lanes(int64_t n, uint64_t base, const Off* offs) {
  uint64_t* a = scratch_addrs(n);
  for (int64_t i = 0; i < n; ++i) a[i] = lane_address<EB>(base, offs[i]);
  return a;
}

// No observer sees these accesses' addresses (kSeesAddresses): a clean access reports nothing
// (report_access would emit no event and count no bad lane), so the fast paths report nothing.

template <int EB, bool M, Fill F, class Off>
const std::byte* load_affine(Program& p, const ir::Op* op, int64_t n, uint64_t base, const void* offs_,
                             bool in_order, bool in_place, const uint8_t* m, const void* other, void* out_) {
  static_assert(F != Fill::splat, "fused loads fill from `other` or with 0");
  using T = uint_t<EB>;
  assert(!(p.observed & kSeesAddresses));
  const Off* offs = static_cast<const Off*>(offs_);
  int region = -1;
  if (const std::byte* h = affine_range<EB>(*p.memory, n, base, offs, in_order, region)) {
    T* out = static_cast<T*>(out_);
    if (!M || std::memchr(m, 0, static_cast<size_t>(n)) == nullptr) {
      if (in_place && reinterpret_cast<uintptr_t>(h) % EB == 0) return h;
      std::memcpy(out, h, static_cast<size_t>(n) * EB);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (m[i])
          std::memcpy(&out[i], h + i * EB, EB);
        else
          out[i] = F == Fill::per_lane ? static_cast<const T*>(other)[i] : T{0};
      }
    }
    return nullptr;
  }
  load_lanes<EB, M, F>(p, op, n, affine_lanes<EB>(n, base, offs), m, other, 0, out_);
  return nullptr;
}

template <int EB, bool M, class Off>
void store_affine(Program& p, const ir::Op* op, int64_t n, uint64_t base, const void* offs_, bool in_order,
                  const uint8_t* m, const void* src_) {
  using T = uint_t<EB>;
  assert(!(p.observed & kSeesAddresses));
  const Off* offs = static_cast<const Off*>(offs_);
  int region = -1;
  std::byte* h = affine_range<EB>(*p.memory, n, base, offs, in_order, region);
  if (h && !p.watching(region)) {
    const T* src = static_cast<const T*>(src_);
    if (!M || std::memchr(m, 0, static_cast<size_t>(n)) == nullptr) {
      std::memcpy(h, src, static_cast<size_t>(n) * EB);
    } else {
      for (int64_t i = 0; i < n; ++i)
        if (m[i]) std::memcpy(h + i * EB, &src[i], EB);
    }
    return;
  }
  store_lanes<EB, M>(p, op, n, affine_lanes<EB>(n, base, offs), m, src_);
}

template <int EB, class Off>
LoadAffineFn pick_load_affine_off(bool mask, Fill fill) {
  if (fill == Fill::per_lane)
    return mask ? load_affine<EB, true, Fill::per_lane, Off> : load_affine<EB, false, Fill::per_lane, Off>;
  if (fill == Fill::zero)
    return mask ? load_affine<EB, true, Fill::zero, Off> : load_affine<EB, false, Fill::zero, Off>;
  return nullptr;
}

template <int EB>
LoadAffineFn pick_load_affine_eb(int offset_bytes, bool mask, Fill fill) {
  if (offset_bytes == 4) return pick_load_affine_off<EB, int32_t>(mask, fill);
  if (offset_bytes == 8) return pick_load_affine_off<EB, int64_t>(mask, fill);
  return nullptr;
}

template <int EB>
StoreAffineFn pick_store_affine_eb(int offset_bytes, bool mask) {
  if (offset_bytes == 4) return mask ? store_affine<EB, true, int32_t> : store_affine<EB, false, int32_t>;
  if (offset_bytes == 8) return mask ? store_affine<EB, true, int64_t> : store_affine<EB, false, int64_t>;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Atomics

constexpr bool is_fp(ir::Elem e) {
  return e == ir::Elem::f16 || e == ir::Elem::bf16 || e == ir::Elem::f32 || e == ir::Elem::f64;
}

template <ir::Elem E, class T>
double to_double(T bits) {
  if constexpr (E == ir::Elem::f32)
    return std::bit_cast<float>(static_cast<uint32_t>(bits));
  else if constexpr (E == ir::Elem::f64)
    return std::bit_cast<double>(static_cast<uint64_t>(bits));
  else
    return ir::float_from_bits(E, bits);
}

/// Sum of two values of format E, rounded once to nearest even. For f16 and bf16 the double sum is
/// rounded to E: double has more than 2p+2 bits for both, so the double rounding is innocuous.
template <ir::Elem E, class T>
T fp_add(T x, T y) {
  if constexpr (E == ir::Elem::f32) {
    return std::bit_cast<uint32_t>(std::bit_cast<float>(x) + std::bit_cast<float>(y));
  } else if constexpr (E == ir::Elem::f64) {
    return std::bit_cast<uint64_t>(std::bit_cast<double>(x) + std::bit_cast<double>(y));
  } else {
    return static_cast<T>(ir::float_to_bits(E, to_double<E>(x) + to_double<E>(y), ir::Rounding::rtne));
  }
}

template <class T, Rmw K, ir::Elem E>
T combine(T old, T v) {
  using S = std::make_signed_t<T>;
  if constexpr (K == Rmw::and_)
    return old & v;
  else if constexpr (K == Rmw::or_)
    return old | v;
  else if constexpr (K == Rmw::xor_)
    return old ^ v;
  else if constexpr (K == Rmw::add)
    return static_cast<T>(old + v);
  else if constexpr (K == Rmw::fadd)
    return fp_add<E, T>(old, v);
  else if constexpr (K == Rmw::exch)
    return v;
  else if constexpr (K == Rmw::umax)
    return old < v ? v : old;
  else if constexpr (K == Rmw::umin)
    return v < old ? v : old;
  else if constexpr (K == Rmw::inc)
    return old >= v ? T{0} : static_cast<T>(old + 1);
  else if constexpr (K == Rmw::dec)
    return (old == 0 || old > v) ? v : static_cast<T>(old - 1);
  else if constexpr (is_fp(E)) {
    // IEEE maxNum / minNum: a NaN operand loses to a number.
    double a = to_double<E>(old), b = to_double<E>(v);
    if (std::isnan(b)) return old;
    if (std::isnan(a)) return v;
    if constexpr (K == Rmw::max)
      return b > a ? v : old;
    else
      return b < a ? v : old;
  } else if constexpr (K == Rmw::max) {
    return static_cast<S>(old) < static_cast<S>(v) ? v : old;
  } else {
    static_assert(K == Rmw::min);
    return static_cast<S>(v) < static_cast<S>(old) ? v : old;
  }
}

template <class T, Rmw K, ir::Elem E>
T rmw_at(std::byte* h, T v) {
  if (reinterpret_cast<uintptr_t>(h) % std::atomic_ref<T>::required_alignment != 0) {
    std::lock_guard<std::mutex> g(g_misaligned);
    T o;
    std::memcpy(&o, h, sizeof o);
    T nw = combine<T, K, E>(o, v);
    std::memcpy(h, &nw, sizeof nw);
    return o;
  }
  std::atomic_ref<T> r(*reinterpret_cast<T*>(h));
  constexpr bool integer = !is_fp(E);
  if constexpr (integer && K == Rmw::add)
    return r.fetch_add(v);
  else if constexpr (integer && K == Rmw::and_)
    return r.fetch_and(v);
  else if constexpr (integer && K == Rmw::or_)
    return r.fetch_or(v);
  else if constexpr (integer && K == Rmw::xor_)
    return r.fetch_xor(v);
  else if constexpr (K == Rmw::exch)
    return r.exchange(v);
  else {
    T o = r.load(std::memory_order_relaxed);
    while (!r.compare_exchange_weak(o, combine<T, K, E>(o, v), std::memory_order_seq_cst,
                                    std::memory_order_relaxed)) {
    }
    return o;
  }
}

template <class T, Rmw K, ir::Elem E>
void atomic_lanes(Program& p, const ir::Op* op, int64_t n, const uint64_t* a, const uint8_t* m,
                  const void* vals_, void* old_) {
  auto order = atomic_order_lock(p);
  const T* vals = static_cast<const T*>(vals_);
  T* old = static_cast<T*>(old_);
  const Memory& mem = *p.memory;
  std::vector<uint64_t>& changed = changed_addrs();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (m && !m[i]) {
      if (old)
        old[i] =
            0;  // masked-off result lanes: 0 (undefined on the GPU, uninitialised in Triton's interpreter)
      continue;
    }
    if (!mem.where(a[i], sizeof(T)).in_bounds) {
      ++bad;
      if (old) old[i] = 0;
      continue;
    }
    T prev = rmw_at<T, K, E>(mem.host(a[i]), vals[i]);
    if (old) old[i] = prev;
    if (p.watching(mem.region(a[i])) && combine<T, K, E>(prev, vals[i]) != prev) changed.push_back(a[i]);
  }
  if (!changed.empty()) wake_waiters(p, changed.data(), static_cast<int64_t>(changed.size()));
  report_access(p, AccessKind::atomic, op, n, a, m, sizeof(T), bad);
}

template <class T>
void cas_lanes(Program& p, const ir::Op* op, int64_t n, const uint64_t* a, const void* cmp_, const void* val_,
               void* old_) {
  auto order = atomic_order_lock(p);
  const T* cmp = static_cast<const T*>(cmp_);
  const T* val = static_cast<const T*>(val_);
  T* old = static_cast<T*>(old_);
  const Memory& mem = *p.memory;
  std::vector<uint64_t>& changed = changed_addrs();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!mem.where(a[i], sizeof(T)).in_bounds) {
      ++bad;
      old[i] = 0;
      continue;
    }
    std::byte* h = mem.host(a[i]);
    T expected = cmp[i];
    if (reinterpret_cast<uintptr_t>(h) % std::atomic_ref<T>::required_alignment != 0) {
      std::lock_guard<std::mutex> g(g_misaligned);
      std::memcpy(&expected, h, sizeof expected);
      if (expected == cmp[i]) std::memcpy(h, &val[i], sizeof(T));
    } else {
      std::atomic_ref<T>(*reinterpret_cast<T*>(h)).compare_exchange_strong(expected, val[i]);
    }
    old[i] = expected;  // the previous value whether or not the swap happened
    if (expected == cmp[i] && val[i] != cmp[i] && p.watching(mem.region(a[i]))) changed.push_back(a[i]);
  }
  if (!changed.empty()) wake_waiters(p, changed.data(), static_cast<int64_t>(changed.size()));
  report_access(p, AccessKind::atomic, op, n, a, nullptr, sizeof(T), bad);
}

template <Rmw K>
AtomicLanesFn pick_int(ir::Elem e) {
  using ir::Elem;
  switch (e) {
    case Elem::i8: return atomic_lanes<uint8_t, K, Elem::i8>;
    case Elem::i16: return atomic_lanes<uint16_t, K, Elem::i16>;
    case Elem::i32: return atomic_lanes<uint32_t, K, Elem::i32>;
    case Elem::i64: return atomic_lanes<uint64_t, K, Elem::i64>;
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
    case Elem::none: return nullptr;
  }
  return nullptr;
}

template <Rmw K>
AtomicLanesFn pick_fp(ir::Elem e) {
  using ir::Elem;
  switch (e) {
    case Elem::f16: return atomic_lanes<uint16_t, K, Elem::f16>;
    case Elem::bf16: return atomic_lanes<uint16_t, K, Elem::bf16>;
    case Elem::f32: return atomic_lanes<uint32_t, K, Elem::f32>;
    case Elem::f64: return atomic_lanes<uint64_t, K, Elem::f64>;
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: return nullptr;
  }
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public entry points

void emit_access(Program& p, AccessKind kind, const ir::Op* op, int64_t lanes, const uint64_t* addrs,
                 const uint8_t* mask, int elem_bytes, int64_t bad_lanes, bool dense, int64_t row_lanes,
                 int64_t prefix_lanes) {
  if (!p.dispatch) return;
  AccessEvent e{kind,
                op,
                p.pid,
                lanes,
                addrs,
                mask ? mask : all_ones(lanes),
                elem_bytes,
                bad_lanes,
                p.memory,
                0,
                dense && bad_lanes == 0,
                dense || bad_lanes > 0 ? 0 : row_lanes,
                dense || bad_lanes > 0 || mask == nullptr ? 0 : prefix_lanes};
  const Dispatch& d = *p.dispatch;
  for (int i : bad_lanes > 0 ? d.out_of_bounds : d.access) d.observers[i]->on_access(e, p.state[i]);
}

uint64_t* scratch_addrs(int64_t n) {
  thread_local std::vector<uint64_t> v;
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

uint8_t* scratch_mask(int64_t n) {
  thread_local std::vector<uint8_t> v;
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

LoadLanesFn pick_load_lanes(int elem_bytes, bool has_mask, Fill fill, bool atomic) {
  switch (elem_bytes) {
    case 1: return pick_load_eb<1>(has_mask, fill, atomic);
    case 2: return pick_load_eb<2>(has_mask, fill, atomic);
    case 4: return pick_load_eb<4>(has_mask, fill, atomic);
    case 8: return pick_load_eb<8>(has_mask, fill, atomic);
    default: return nullptr;
  }
}

StoreLanesFn pick_store_lanes(int elem_bytes, bool has_mask, bool atomic) {
  switch (elem_bytes) {
    case 1: return pick_store_eb<1>(has_mask, atomic);
    case 2: return pick_store_eb<2>(has_mask, atomic);
    case 4: return pick_store_eb<4>(has_mask, atomic);
    case 8: return pick_store_eb<8>(has_mask, atomic);
    default: return nullptr;
  }
}

LoadAffineFn pick_load_affine(int elem_bytes, int offset_bytes, bool has_mask, Fill fill) {
  switch (elem_bytes) {
    case 1: return pick_load_affine_eb<1>(offset_bytes, has_mask, fill);
    case 2: return pick_load_affine_eb<2>(offset_bytes, has_mask, fill);
    case 4: return pick_load_affine_eb<4>(offset_bytes, has_mask, fill);
    case 8: return pick_load_affine_eb<8>(offset_bytes, has_mask, fill);
    default: return nullptr;
  }
}

StoreAffineFn pick_store_affine(int elem_bytes, int offset_bytes, bool has_mask) {
  switch (elem_bytes) {
    case 1: return pick_store_affine_eb<1>(offset_bytes, has_mask);
    case 2: return pick_store_affine_eb<2>(offset_bytes, has_mask);
    case 4: return pick_store_affine_eb<4>(offset_bytes, has_mask);
    case 8: return pick_store_affine_eb<8>(offset_bytes, has_mask);
    default: return nullptr;
  }
}

AtomicLanesFn pick_atomic_lanes(Rmw kind, ir::Elem e) {
  using ir::Elem;
  const bool fp = is_fp(e);
  switch (kind) {
    case Rmw::and_: return pick_int<Rmw::and_>(e);
    case Rmw::or_: return pick_int<Rmw::or_>(e);
    case Rmw::xor_: return pick_int<Rmw::xor_>(e);
    case Rmw::add: return fp ? pick_fp<Rmw::fadd>(e) : pick_int<Rmw::add>(e);
    case Rmw::fadd: return pick_fp<Rmw::fadd>(e);
    case Rmw::max: return fp ? pick_fp<Rmw::max>(e) : pick_int<Rmw::max>(e);
    case Rmw::min: return fp ? pick_fp<Rmw::min>(e) : pick_int<Rmw::min>(e);
    case Rmw::umax: return pick_int<Rmw::umax>(e);
    case Rmw::umin: return pick_int<Rmw::umin>(e);
    case Rmw::inc: return pick_int<Rmw::inc>(e);
    case Rmw::dec: return pick_int<Rmw::dec>(e);
    case Rmw::exch:
      // A bit exchange: any element of 1, 2, 4 or 8 bytes (tl.atomic_xchg also takes floats).
      switch (ir::elem_bytes(e)) {
        case 1: return e == Elem::i1 ? nullptr : atomic_lanes<uint8_t, Rmw::exch, Elem::i8>;
        case 2: return atomic_lanes<uint16_t, Rmw::exch, Elem::i16>;
        case 4: return atomic_lanes<uint32_t, Rmw::exch, Elem::i32>;
        case 8: return atomic_lanes<uint64_t, Rmw::exch, Elem::i64>;
        default: return nullptr;
      }
  }
  return nullptr;
}

CasLanesFn pick_cas_lanes(int elem_bytes) {
  switch (elem_bytes) {
    case 1: return cas_lanes<uint8_t>;
    case 2: return cas_lanes<uint16_t>;
    case 4: return cas_lanes<uint32_t>;
    case 8: return cas_lanes<uint64_t>;
    default: return nullptr;
  }
}

uint64_t nan_bits(ir::Elem e) {
  using ir::Elem;
  switch (e) {
    case Elem::f16: return 0x7E00;
    case Elem::bf16: return 0x7FC0;
    case Elem::f32: return 0x7FC00000u;
    case Elem::f64: return 0x7FF8000000000000ull;
    case Elem::f8e4m3fn: return 0x7F;  // OCP E4M3: S.1111.111 is the only NaN
    case Elem::f8e5m2: return 0x7E;    // E5M2: exponent all ones, quiet mantissa
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz: return 0x80;  // FNUZ: negative zero encodes NaN
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: return 0;  // not a float: NaN padding pads with 0
  }
  return 0;
}

void tile_lanes(uint64_t base, int rank, const int64_t* start, const int64_t* block, const int64_t* shape,
                const int64_t* strides, unsigned check, int elem_bytes, uint64_t* addrs, uint8_t* mask) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= block[d];
  int64_t idx[TensorDesc::kMaxRank > BlockPtr::kMaxRank ? TensorDesc::kMaxRank : BlockPtr::kMaxRank] = {};
  const uint64_t eb = static_cast<uint64_t>(elem_bytes);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t addr = base;
    bool ok = true;
    for (int d = 0; d < rank; ++d) {
      int64_t e = start[d] + idx[d];
      addr += static_cast<uint64_t>(e) * static_cast<uint64_t>(strides[d]) * eb;
      if (check & (1u << d)) ok = ok && e >= 0 && e < shape[d];
    }
    addrs[i] = addr;
    mask[i] = ok ? 1 : 0;
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < block[d]) break;
      idx[d] = 0;
    }
  }
}

TensorDesc make_desc_arg(const ir::Type& desc_type, uint64_t base, std::span<const int64_t> shape,
                         std::span<const int64_t> strides, int padding) {
  const ir::Type* block = desc_type.pointee;
  int rank = block ? block->rank() : 0;
  if (desc_type.elem != ir::Elem::tensordesc || rank < 1 || rank > TensorDesc::kMaxRank)
    throw Error(
        fmt::format("{} is not a tensor descriptor of rank 1 to {}", desc_type.str(), TensorDesc::kMaxRank));
  if (static_cast<int>(shape.size()) != rank || static_cast<int>(strides.size()) != rank)
    throw Error(fmt::format("descriptor {} needs {} shape and {} stride values, got {} and {}",
                            desc_type.str(), rank, rank, shape.size(), strides.size()));
  if (padding != 1 && padding != 2)
    throw Error(fmt::format("descriptor padding must be 1 (zero) or 2 (nan), got {}", padding));
  TensorDesc d;
  d.base = base;
  d.rank = rank;
  for (int k = 0; k < rank; ++k) {
    d.shape[k] = shape[k];
    d.strides[k] = strides[k];
  }
  d.padding = padding;
  return d;
}

}  // namespace tilescope::exec
