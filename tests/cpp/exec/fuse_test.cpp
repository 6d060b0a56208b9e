// Fused pointer tiles (ops::fuse_addresses, src/ops/table.h): a tt.load / tt.store through
// tt.addptr(tt.splat(p), offsets) computes its lanes from p and the offsets when no observer sees
// addresses, and runs the steps as written when one does. Both must give what the TTIR means: the
// expected outputs and out-of-bounds counts are computed here lane by lane from the kernel's
// definition (reference §1.2: sign-extended offsets scaled by the pointee size; §5.1: masked-off lanes
// get `other` or 0, out-of-bounds lanes are skipped and counted), for consecutive, reversed and strided
// offsets, offsets that wrap around in i32, negative ones, ones past the buffer, with and without a
// mask and `other`, i32 and i64 offsets, and 1- to 8-byte elements; and a loaded tile read where it lies
// in the buffer (in place) never sees a later write and is read only within its lanes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "src/exec/plan.h"
#include "tests/cpp/exec/planned.h"
#include "tests/cpp/harness.h"
#include "tilescope/ir/reader.h"

using namespace tilescope;
using exec::Arg;
using ir::Elem;
using test::Planned;

namespace {

constexpr int64_t kN = 64;        // lanes per program
constexpr int64_t kGrid = 3;      // programs
constexpr int64_t kLen = 2 * kN;  // elements of the buffer the offsets index (smaller than the grid's lanes)

/// An observer that sees addresses: launches with it run the steps as written.
struct SeesAccesses : exec::Observer {
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override { return {exec::kAccess, {}, {}}; }
};

/// test::run_ttir on one thread, `observed`: with an observer that sees addresses (the steps as
/// written), else with none (the fused accesses).
exec::LaunchStats run_maybe_observed(const std::string& ttir, const std::vector<Arg>& args, exec::Memory& mem,
                                     std::array<int64_t, 3> grid, bool observed) {
  SeesAccesses sees;
  std::vector<exec::Observer*> obs;
  if (observed) obs.push_back(&sees);
  return test::run_ttir(ttir, args, mem, grid, 1, obs);
}

/// f(i): i; N - 1 - i; 2i; i with the pairs (1, 2), (3, 4), ..., (N - 3, N - 2) swapped (a permutation
/// whose first and last lanes are those of the consecutive tile).
enum class Offs { consecutive, reversed, strided, permuted };
enum class Side { load, store };  // which access goes through the offsets (the other through pid·N + r)

struct Case {
  const char* elem;  // TTIR element type
  int eb;
  Offs offs;
  bool mask, other, i64;
  Side side;
  int32_t start;
  bool via = false;  // the loaded tile passes through an arith.select (all lanes true) before the store
};

/// The kernel: lane i of program pid has offset o = start + pid·N + f(i) (i32 arithmetic, wrapping),
/// f as Offs says; mask: o < n. Side::load: out[pid·N + i] = x[o] (masked; `via`: every lane stored,
/// masked-off ones as loaded); Side::store: out[o] = x[pid·N + i] (masked).
std::string kernel(const Case& c) {
  const std::string t = c.elem, N = std::to_string(kN);
  std::string f;
  switch (c.offs) {
    case Offs::consecutive: f = "%r"; break;
    case Offs::reversed: f = "%rev"; break;
    case Offs::strided: f = "%r2"; break;
    case Offs::permuted: f = "%perm"; break;
  }
  const std::string ot = c.i64 ? "i64" : "i32";
  std::string k = fmt::format(R"(module {{
  tt.func public @k(%x: !tt.ptr<{0}>, %out: !tt.ptr<{0}>, %start: i32, %n: i32, %fill: {0}) attributes {{noinline = false}} {{
    %cN = arith.constant {1} : i32
    %cN1 = arith.constant dense<{2}> : tensor<{1}xi32>
    %pid = tt.get_program_id x : i32
    %pb = arith.muli %pid, %cN : i32
    %s = arith.addi %start, %pb : i32
    %r = tt.make_range {{end = {1} : i32, start = 0 : i32}} : tensor<{1}xi32>
    %rev = arith.subi %cN1, %r : tensor<{1}xi32>
    %r2 = arith.addi %r, %r : tensor<{1}xi32>
    %c1t = arith.constant dense<1> : tensor<{1}xi32>
    %c0t = arith.constant dense<0> : tensor<{1}xi32>
    %odd = arith.andi %r, %c1t : tensor<{1}xi32>
    %twice = arith.addi %odd, %odd : tensor<{1}xi32>
    %step = arith.subi %twice, %c1t : tensor<{1}xi32>
    %after0 = arith.cmpi sgt, %r, %c0t : tensor<{1}xi32>
    %beforelast = arith.cmpi slt, %r, %cN1 : tensor<{1}xi32>
    %inner = arith.andi %after0, %beforelast : tensor<{1}xi1>
    %d = arith.select %inner, %step, %c0t : tensor<{1}xi1>, tensor<{1}xi32>
    %perm = arith.addi %r, %d : tensor<{1}xi32>
    %ss = tt.splat %s : i32 -> tensor<{1}xi32>
    %offs = arith.addi %ss, {3} : tensor<{1}xi32>
    %pbs = tt.splat %pb : i32 -> tensor<{1}xi32>
    %home = arith.addi %pbs, %r : tensor<{1}xi32>
    %ns = tt.splat %n : i32 -> tensor<{1}xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<{1}xi32>
    %fills = tt.splat %fill : {0} -> tensor<{1}x{0}>
)",
                              t, N, kN - 1, f);
  if (c.i64) k += fmt::format("    %offs64 = arith.extsi %offs : tensor<{0}xi32> to tensor<{0}xi64>\n", N);
  const std::string o = c.i64 ? "%offs64" : "%offs";
  const std::string lo = c.side == Side::load ? o : "%home", so = c.side == Side::store ? o : "%home";
  const std::string lot = c.side == Side::load ? ot : "i32", sot = c.side == Side::store ? ot : "i32";
  k += fmt::format("    %xs = tt.splat %x : !tt.ptr<{0}> -> tensor<{1}x!tt.ptr<{0}>>\n", t, N);
  k += fmt::format("    %xp = tt.addptr %xs, {2} : tensor<{1}x!tt.ptr<{0}>>, tensor<{1}x{3}>\n", t, N, lo,
                   lot);
  std::string load_ops = "%xp", load_types;
  if (c.mask) load_ops += ", %m";
  if (c.mask && c.other) load_ops += ", %fills";
  k += fmt::format("    %v = tt.load {2} : tensor<{1}x!tt.ptr<{0}>>\n", t, N, load_ops);
  k += fmt::format("    %os = tt.splat %out : !tt.ptr<{0}> -> tensor<{1}x!tt.ptr<{0}>>\n", t, N);
  k += fmt::format("    %op = tt.addptr %os, {2} : tensor<{1}x!tt.ptr<{0}>>, tensor<{1}x{3}>\n", t, N, so,
                   sot);
  std::string stored = "%v";
  if (c.via) {  // an op reads the tile before the store: a load that may read it in place (fuse_addresses)
    k += fmt::format("    %yes = arith.constant dense<true> : tensor<{0}xi1>\n", N);
    k += fmt::format("    %w = arith.select %yes, %v, %v : tensor<{1}xi1>, tensor<{1}x{0}>\n", t, N);
    stored = "%w";
  }
  // Through the select, a load-side kernel stores every lane: masked-off lanes show what the load gave.
  const bool store_mask = c.mask && !(c.via && c.side == Side::load);
  k += fmt::format("    tt.store %op, {2}{3} : tensor<{1}x!tt.ptr<{0}>>\n", t, N, stored,
                   store_mask ? ", %m" : "");
  k += "    tt.return\n  }\n}\n";
  return k;
}

/// Elements as bytes of `eb` each, element j holding a pattern that tells j apart.
std::vector<uint8_t> pattern(int64_t count, int eb, uint8_t salt) {
  std::vector<uint8_t> v(static_cast<size_t>(count * eb));
  for (size_t b = 0; b < v.size(); ++b) v[b] = static_cast<uint8_t>(b * 7 + salt + b / eb);
  return v;
}

struct Outcome {
  std::vector<uint8_t> out;
  int64_t out_of_bounds = 0;
};

/// What the TTIR means, lane by lane.
Outcome expected(const Case& c, const std::vector<uint8_t>& x, std::vector<uint8_t> out, int32_t n,
                 const std::vector<uint8_t>& fill) {
  Outcome e;
  const int64_t len_x = static_cast<int64_t>(x.size()) / c.eb,
                len_out = static_cast<int64_t>(out.size()) / c.eb;
  for (int64_t pid = 0; pid < kGrid; ++pid)
    for (int64_t i = 0; i < kN; ++i) {
      const int64_t swapped = i == 0 || i == kN - 1 ? i : i % 2 ? i + 1 : i - 1;
      const int64_t f = c.offs == Offs::consecutive ? i
                        : c.offs == Offs::reversed  ? kN - 1 - i
                        : c.offs == Offs::strided   ? 2 * i
                                                    : swapped;
      const auto s = static_cast<int32_t>(static_cast<uint32_t>(c.start) + static_cast<uint32_t>(pid * kN));
      const auto o = static_cast<int32_t>(static_cast<uint32_t>(s) + static_cast<uint32_t>(f));
      const bool active = !c.mask || o < n;
      const int64_t home = pid * kN + i;
      const int64_t src = c.side == Side::load ? o : home, dst = c.side == Side::store ? o : home;
      // The loaded value: x[src] when active and inside, else `other` (the fill) or 0; an active lane
      // outside is counted and never read (access.h).
      std::vector<uint8_t> v(static_cast<size_t>(c.eb), 0);
      if (active && src >= 0 && src < len_x) {
        std::memcpy(v.data(), &x[static_cast<size_t>(src * c.eb)], static_cast<size_t>(c.eb));
      } else {
        if (active) e.out_of_bounds++;
        if (c.other) v = fill;
      }
      if (!active && !(c.via && c.side == Side::load)) continue;  // the store is masked off too
      if (dst >= 0 && dst < len_out)
        std::memcpy(&out[static_cast<size_t>(dst * c.eb)], v.data(), static_cast<size_t>(c.eb));
      else
        e.out_of_bounds++;
    }
  e.out = std::move(out);
  return e;
}

Elem elem_of(const Case& c) {
  const std::string t = c.elem;
  return t == "f32" ? Elem::f32 : t == "f16" ? Elem::f16 : t == "i8" ? Elem::i8 : Elem::f64;
}

Outcome run(const Case& c, std::vector<uint8_t> x, std::vector<uint8_t> out, int32_t n, uint64_t fill_bits,
            bool observed) {
  exec::Memory mem;
  const Elem e = elem_of(c);
  auto add = [&](std::vector<uint8_t>& v, const char* name) {
    return test::add_buffer(mem, v.data(), v.size(), static_cast<int64_t>(v.size()) / c.eb, name, e);
  };
  const int xb = add(x, "x"), ob = add(out, "out");
  Arg fill = Arg::i64(0);
  fill.bits = fill_bits;
  const exec::LaunchStats st =
      run_maybe_observed(kernel(c), {Arg::buf(xb), Arg::buf(ob), Arg::i64(c.start), Arg::i64(n), fill}, mem,
                         {kGrid, 1, 1}, observed);
  return Outcome{std::move(out), st.out_of_bounds};
}

}  // namespace

TEST(FusedPointerTiles, EveryOffsetFormGivesWhatTheTtirMeansObservedOrNot) {
  struct Elt {
    const char* name;
    int eb;
  };
  int cases = 0;
  for (Elt el : {Elt{"f32", 4}, Elt{"f16", 2}, Elt{"i8", 1}, Elt{"f64", 8}})
    for (Offs offs : {Offs::consecutive, Offs::reversed, Offs::strided, Offs::permuted})
      for (Side side : {Side::load, Side::store})
        for (int masking : {0, 1, 2})  // none, mask, mask and other
          for (bool i64 : {false, true})
            // Inside; a tail past n (masked) and past the buffer; negative; wrapping around in i32;
            // far past the buffer.
            for (int32_t start : {0, static_cast<int32_t>(kLen - kN / 2 - 2 * kN), -5, INT32_MAX - 70,
                                  static_cast<int32_t>(10 * kLen)})
              for (bool via : {false, true}) {
                const Case c{el.name, el.eb, offs, masking > 0, masking == 2, i64, side, start, via};
                const int32_t n = static_cast<int32_t>(kLen - kN / 2);
                const std::vector<uint8_t> x = pattern(kLen, el.eb, 1);
                const std::vector<uint8_t> out = pattern(side == Side::load ? kGrid * kN : kLen, el.eb, 99);
                const std::vector<uint8_t> fill = pattern(1, el.eb, 42);
                uint64_t fill_bits = 0;
                std::memcpy(&fill_bits, fill.data(), fill.size());
                const Outcome want = expected(c, x, out, n, fill);
                for (bool observed : {false, true}) {
                  const Outcome got = run(c, x, out, n, fill_bits, observed);
                  const std::string what = fmt::format(
                      "{} offsets {} side {} masking {} i64 {} start {} via {} observed {}", el.name,
                      static_cast<int>(offs), static_cast<int>(side), masking, i64, start, via, observed);
                  ASSERT_EQ(got.out, want.out) << what;
                  ASSERT_EQ(got.out_of_bounds, want.out_of_bounds) << what;
                }
                ++cases;
              }
  EXPECT_EQ(cases, 4 * 4 * 2 * 3 * 2 * 5 * 2);
}

// A fused load reads the splat's pointer and the offsets when it runs, after their last use as
// operands: they must keep their storage until then. Here %t, a tile of the offsets' size made
// between the addptr and the load, would otherwise take the offsets' bytes.
TEST(FusedPointerTiles, TheOffsetsLiveUntilTheFusedAccess) {
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %c3 = arith.constant dense<3> : tensor<64xi32>
    %offs = arith.addi %r, %c3 : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %t = arith.muli %r, %r : tensor<64xi32>
    %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %tf = arith.sitofp %t : tensor<64xi32> to tensor<64xf32>
    %w = arith.addf %v, %tf : tensor<64xf32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %op, %w : tensor<64x!tt.ptr<f32>>
    tt.return
  }
})";
  Planned p(k);
  const exec::Step& load = p.step("tt.load");
  EXPECT_EQ(load.reads, (std::vector<int>{p.slot("x"), p.slot("offs")}));
  EXPECT_NE(p.plan.slot_offset[p.slot("t")], p.plan.slot_offset[p.slot("offs")]);
  std::vector<float> x(80), out(64, -1.0f);
  std::iota(x.begin(), x.end(), 0.5f);
  for (bool observed : {false, true}) {
    exec::Memory mem;
    int xb = test::add_buffer(mem, x, "x", Elem::f32);
    int ob = test::add_buffer(mem, out, "out", Elem::f32);
    run_maybe_observed(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {1, 1, 1}, observed);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], x[i + 3] + static_cast<float>(i * i)) << i;
  }
}

// Only a pointer tile that nothing but loads and stores read is fused: here %xp is also a select's
// operand, so its loads read the tile as written; %ys's splat feeds a fused addptr and one that is not.
TEST(FusedPointerTiles, ATileReadByAnotherOpIsNotFused) {
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %out: !tt.ptr<f32>, %c: i1) attributes {noinline = false} {
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %yq = tt.addptr %ys, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %pick = arith.select %c, %xp, %yq : tensor<16x!tt.ptr<f32>>
    %a = tt.load %xp : tensor<16x!tt.ptr<f32>>
    %b = tt.load %yp : tensor<16x!tt.ptr<f32>>
    %d = tt.load %pick : tensor<16x!tt.ptr<f32>>
    %s1 = arith.addf %a, %b : tensor<16xf32>
    %s2 = arith.addf %s1, %d : tensor<16xf32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %op, %s2 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
})";
  Planned p(k);
  EXPECT_TRUE(p.step("tt.load", 0).reads.empty());                                      // %xp: also selected
  EXPECT_EQ(p.step("tt.load", 1).reads, (std::vector<int>{p.slot("y"), p.slot("r")}));  // %yp: fused
  EXPECT_TRUE(p.step("tt.load", 2).reads.empty());                                      // through the select
  EXPECT_EQ(p.step("tt.store").reads, (std::vector<int>{p.slot("out"), p.slot("r")}));
  std::vector<float> x(16), y(16), out(16, -1.0f);
  std::iota(x.begin(), x.end(), 1.0f);
  std::iota(y.begin(), y.end(), 100.0f);
  for (int c : {0, 1}) {
    exec::Memory mem;
    int xb = test::add_buffer(mem, x, "x", Elem::f32);
    int yb = test::add_buffer(mem, y, "y", Elem::f32);
    int ob = test::add_buffer(mem, out, "out", Elem::f32);
    test::run_ttir(k, {Arg::buf(xb), Arg::buf(yb), Arg::buf(ob), Arg::i64(c)}, mem);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], x[i] + y[i] + (c ? x[i] : y[i])) << i;
  }
}

// i32 offsets that wrap around inside one tile are not one range even where the range's start lies in
// the buffer: a buffer of more than 2^31 f32 elements (8 GiB of address space reserved with no access, so
// it commits no memory whatever the system's overcommit policy; only its last 64 KiB are made readable),
// offsets INT32_MAX - 3 + i. Lanes 0..3 read the elements 2^31 - 4 .. 2^31 - 1; lanes 4.. wrap to
// -2^31 + ..., before the buffer: out of bounds, never read.
TEST(FusedPointerTiles, OffsetsThatWrapInsideATileAreNotOneRange) {
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %start: i32) attributes {noinline = false} {
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %ss = tt.splat %start : i32 -> tensor<16xi32>
    %offs = arith.addi %ss, %r : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %op, %v : tensor<16x!tt.ptr<f32>>
    tt.return
  }
})";
  const size_t elems = (size_t{1} << 31) + 1024, bytes = elems * sizeof(float);
  void* big = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(big, MAP_FAILED) << "cannot reserve 8 GiB of address space";
  constexpr size_t kTail = 64 * 1024;  // whole pages: bytes is a multiple of 4 KiB
  static_assert(((size_t{1} << 31) + 1024) * sizeof(float) % 4096 == 0);
  ASSERT_EQ(mprotect(static_cast<std::byte*>(big) + bytes - kTail, kTail, PROT_READ | PROT_WRITE), 0);
  auto* x = static_cast<float*>(big);
  const int64_t first = INT32_MAX - 3;
  for (int64_t i = 0; i < 4; ++i) x[first + i] = 7.0f + static_cast<float>(i);
  for (bool observed : {false, true}) {
    exec::Memory mem;
    const int xb = test::add_buffer(mem, big, bytes, static_cast<int64_t>(elems), "x", Elem::f32);
    std::vector<float> out(16, -1.0f);
    const int ob = test::add_buffer(mem, out, "out", Elem::f32);
    const exec::LaunchStats st =
        run_maybe_observed(k, {Arg::buf(xb), Arg::buf(ob), Arg::i64(first)}, mem, {1, 1, 1}, observed);
    EXPECT_EQ(st.out_of_bounds, 12) << "observed " << observed;
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(out[i], i < 4 ? 7.0f + static_cast<float>(i) : 0.0f) << i << " observed " << observed;
  }
  munmap(big, bytes);
}

namespace {

/// Watches every op's results and checks the pointer tiles it is shown: a splat's lanes are its scalar,
/// an addptr's lanes are its pointer lanes plus the offsets times 4 (f32).
struct SeesPointerTiles : exec::Observer {
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override {
    return {exec::kOpResult, {}, {}};
  }
  void on_op(const exec::OpEvent& e, void*) override {
    const ir::Op& op = *e.op;
    if (op.results.empty() || op.results[0]->type->elem != Elem::ptr || !op.results[0]->type->is_tensor)
      return;
    const int64_t n = op.results[0]->type->numel();
    const auto* r = static_cast<const uint64_t*>(e.results[0]);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t want = 0;
      if (op.name == "tt.splat") {
        want = *static_cast<const uint64_t*>(e.operands[0]);
      } else if (op.name == "tt.addptr") {
        const auto* p = static_cast<const uint64_t*>(e.operands[0]);
        const auto* o = static_cast<const int32_t*>(e.operands[1]);
        want = p[i] + static_cast<uint64_t>(static_cast<int64_t>(o[i])) * 4;
      } else {
        continue;
      }
      checked++;
      if (r[i] != want) wrong++;
    }
  }
  std::atomic<int64_t> checked{0}, wrong{0};
};

}  // namespace

// An observer that watches ops sees every pointer tile as the TTIR defines it (the splat made for it,
// the addptr from the splat's scalar), while the fused accesses still give the right values.
TEST(FusedPointerTiles, AnObserverOfOpsSeesThePointerTiles) {
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %op, %v : tensor<64x!tt.ptr<f32>>
    tt.return
  }
})";
  std::vector<float> x(64), out(64, -1.0f);
  std::iota(x.begin(), x.end(), 3.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x", Elem::f32);
  int ob = test::add_buffer(mem, out, "out", Elem::f32);
  SeesPointerTiles sees;
  test::run_ttir(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {2, 1, 1}, 1, {&sees});
  EXPECT_EQ(sees.checked.load(), 2 * 4 * 64);  // 2 programs, 2 splats and 2 addptrs of 64 lanes
  EXPECT_EQ(sees.wrong.load(), 0);
  EXPECT_EQ(out, x);
}

// A fused load may leave its tile where it lies in the buffer (LoadAffineFn's in_place) only while
// nothing can change that memory before the value's last read. Each kernel loads x, then (between the
// load and a read of the value) writes x through another pointer tile: a store, an atomic, a loop that
// stores, a loop that stores and reads the value in its body, a branch to a block that stores before
// reading. The value read must be the one loaded (reference §5.1: a load's result is a copy), unobserved
// (the fused form) and observed (as written); the last kernel has nothing in between (the in-place case).
TEST(FusedPointerTiles, ALoadReadInPlaceNeverSeesALaterWrite) {
  struct Kernel {
    const char* what;
    std::string between;  // TTIR after %v's load; defines %u, the value read from %v
    float scale;          // out = scale · x_old + 1
  };
  const std::string store_x = "    tt.store %xp2, %c : tensor<16x!tt.ptr<f32>>\n";
  const std::vector<Kernel> kernels = {
      {"a store", store_x + "    %u = arith.addf %v, %zero : tensor<16xf32>\n", 1},
      {"an atomic",
       "    %old = tt.atomic_rmw fadd, relaxed, gpu, %xp2, %c, %yes : (tensor<16x!tt.ptr<f32>>, "
       "tensor<16xf32>, tensor<16xi1>) -> tensor<16xf32>\n"
       "    %u = arith.addf %v, %zero : tensor<16xf32>\n",
       1},
      {"a loop that stores",
       "    scf.for %i = %c0 to %c2 step %c1  : i32 {\n" + store_x +
           "    }\n    %u = arith.addf %v, %zero : tensor<16xf32>\n",
       1},
      {"a loop that stores, then reads the value",
       "    %u = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %zero) -> (tensor<16xf32>)  : i32 {\n" +
           store_x +
           "      %a2 = arith.addf %a, %v : tensor<16xf32>\n"
           "      scf.yield %a2 : tensor<16xf32>\n    }\n",
       2},
      {"a branch to a block that stores",
       "    cf.br ^bb1\n  ^bb1:\n" + store_x + "    %u = arith.addf %v, %zero : tensor<16xf32>\n", 1},
      {"nothing", "    %u = arith.addf %v, %zero : tensor<16xf32>\n", 1},
  };
  for (const Kernel& kn : kernels) {
    const std::string k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %one = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %c = arith.constant dense<1.000000e+02> : tensor<16xf32>
    %yes = arith.constant dense<true> : tensor<16xi1>
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %xs2 = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp2 = tt.addptr %xs2, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
)" + kn.between + R"(    %w = arith.addf %u, %one : tensor<16xf32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %op, %w : tensor<16x!tt.ptr<f32>>
    tt.return
  }
})";
    Planned p(k);
    EXPECT_FALSE(p.step("tt.load").reads.empty()) << kn.what << ": the load is fused";
    for (bool observed : {false, true}) {
      std::vector<float> x(16), out(16, -1.0f);
      std::iota(x.begin(), x.end(), 0.5f);
      const std::vector<float> x_old = x;
      exec::Memory mem;
      int xb = test::add_buffer(mem, x, "x", Elem::f32);
      int ob = test::add_buffer(mem, out, "out", Elem::f32);
      run_maybe_observed(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {1, 1, 1}, observed);
      for (int i = 0; i < 16; ++i)
        EXPECT_EQ(out[i], kn.scale * x_old[i] + 1.0f)
            << kn.what << ", lane " << i << ", observed " << observed;
    }
  }
}

// A tile read in place is read only within its lanes: here the last program's tile ends where the
// buffer's page ends and the next page has no access, and the tile goes through SLEEF's exp (whole
// vectors and a padded tail), a reduction and elementwise ops. Expected values: std::exp and exact sums
// of small integers.
TEST(FusedPointerTiles, ATileReadInPlaceIsReadOnlyWithinItsLanes) {
  constexpr size_t kPage = 4096;
  constexpr int64_t kLen = kPage / sizeof(float);  // the buffer: one page of floats
  void* m = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<std::byte*>(m) + kPage, kPage, PROT_NONE), 0);
  auto* x = static_cast<float*>(m);
  for (int64_t i = 0; i < kLen; ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  for (int64_t lanes : {4, 16, 64}) {  // 4: only SLEEF's padded tail (8 lanes a vector with AVX2)
    const std::string k = fmt::format(R"(module {{
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {{noinline = false}} {{
    %cN = arith.constant {0} : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %cN : i32
    %r = tt.make_range {{end = {0} : i32, start = 0 : i32}} : tensor<{0}xi32>
    %bs = tt.splat %base : i32 -> tensor<{0}xi32>
    %offs = arith.addi %bs, %r : tensor<{0}xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<{0}x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<{0}x!tt.ptr<f32>>, tensor<{0}xi32>
    %v = tt.load %xp : tensor<{0}x!tt.ptr<f32>>
    %e = math.exp %v : tensor<{0}xf32>
    %s = "tt.reduce"(%v) <{{axis = 0 : i32}}> ({{
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }}) : (tensor<{0}xf32>) -> f32
    %ss = tt.splat %s : f32 -> tensor<{0}xf32>
    %w = arith.addf %e, %ss : tensor<{0}xf32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<{0}x!tt.ptr<f32>>
    %op = tt.addptr %os, %offs : tensor<{0}x!tt.ptr<f32>>, tensor<{0}xi32>
    tt.store %op, %w : tensor<{0}x!tt.ptr<f32>>
    tt.return
  }}
}})",
                                      lanes);
    const int64_t tiles = kLen / lanes;  // the last tile ends where the page does
    for (bool observed : {false, true}) {
      exec::Memory mem;
      const int xb = test::add_buffer(mem, m, kPage, kLen, "x", Elem::f32);
      std::vector<float> out(kLen, -1.0f);
      const int ob = test::add_buffer(mem, out, "out", Elem::f32);
      run_maybe_observed(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {tiles, 1, 1}, observed);
      for (int64_t t = 0; t < tiles; ++t) {
        float sum = 0;
        for (int64_t i = 0; i < lanes; ++i) sum += x[t * lanes + i];  // small integers: exact in any order
        for (int64_t i = 0; i < lanes; ++i) {
          const float want = std::exp(x[t * lanes + i]) + sum;
          ASSERT_NEAR(out[t * lanes + i], want, 4e-7f * std::fabs(want) + 1e-6f)
              << lanes << " lanes, tile " << t << " lane " << i << " observed " << observed;
        }
      }
    }
  }
  munmap(m, 2 * kPage);
}

namespace {

/// Records the prefix_lanes / dense of each access event (lanes are checked by the test).
struct SeesPrefixes : exec::Observer {
  std::vector<int64_t> prefix;
  std::vector<bool> dense;
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override { return {exec::kAccess, {}, {}}; }
  void on_access(const exec::AccessEvent& e, void*) override {
    prefix.push_back(e.prefix_lanes);
    dense.push_back(e.dense);
  }
};

}  // namespace

// A tile whose mask cuts off its tail (`l < k`, a row's last tile) is loaded and stored as its active
// prefix: one copy of the first k lanes, `other` for the rest of the load, nothing past the prefix
// stored, also where the masked-off lanes lie past the buffer's end (x holds off + k elements), for 1-,
// 4- and 8-byte elements; the observers are told the prefix (AccessEvent::prefix_lanes). A mask that
// is not a prefix (`l >= k`) is no prefix. Expected values from the kernel's definition (reference
// §5.1: masked-off lanes of a load get `other`; a store writes only active lanes).
TEST(FusedPointerTiles, AMaskedTailIsCopiedAsItsActivePrefix) {
  constexpr int kLanes = 64;
  for (const char* ty : {"i8", "i32", "i64"}) {
    for (const char* pred : {"slt", "sge"}) {  // l < k: a prefix; l >= k: a suffix
      const std::string src = fmt::format(R"(module {{
  tt.func public @k(%x: !tt.ptr<{0}>, %out: !tt.ptr<{0}>, %off: i32, %k: i32) attributes {{noinline = false}} {{
    %c64 = arith.constant 64 : i32
    %l = tt.make_range {{end = 64 : i32, start = 0 : i32}} : tensor<64xi32>
    %ks = tt.splat %k : i32 -> tensor<64xi32>
    %m = arith.cmpi {1}, %l, %ks : tensor<64xi32>
    %os = tt.splat %off : i32 -> tensor<64xi32>
    %i = arith.addi %l, %os : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<{0}> -> tensor<64x!tt.ptr<{0}>>
    %xp = tt.addptr %xs, %i : tensor<64x!tt.ptr<{0}>>, tensor<64xi32>
    %other = arith.constant dense<7> : tensor<64x{0}>
    %v = tt.load %xp, %m, %other : tensor<64x!tt.ptr<{0}>>
    %outs = tt.splat %out : !tt.ptr<{0}> -> tensor<64x!tt.ptr<{0}>>
    %o1 = tt.addptr %outs, %l : tensor<64x!tt.ptr<{0}>>, tensor<64xi32>
    tt.store %o1, %v : tensor<64x!tt.ptr<{0}>>
    %s64 = tt.splat %c64 : i32 -> tensor<64xi32>
    %l2 = arith.addi %l, %s64 : tensor<64xi32>
    %o2 = tt.addptr %outs, %l2 : tensor<64x!tt.ptr<{0}>>, tensor<64xi32>
    tt.store %o2, %v, %m : tensor<64x!tt.ptr<{0}>>
    tt.return
  }}
}})",
                                          ty, pred);
      const bool prefix_mask = std::string(pred) == "slt";
      for (int k : {1, 5, 37, 63, 64}) {
        for (bool past_end : {false, true}) {
          if (!prefix_mask && past_end) continue;  // a suffix mask's active lanes are the last ones
          const int off = 3;
          // x: off + k elements when the tail is past the end, else room for every lane.
          const size_t xlen = past_end ? static_cast<size_t>(off + k) : static_cast<size_t>(off + kLanes);
          auto run = [&](auto zero, Elem e) {
            using T = decltype(zero);
            std::vector<T> x(xlen), out(2 * kLanes, static_cast<T>(-2));
            for (size_t j = 0; j < x.size(); ++j) x[j] = static_cast<T>(10 + j);
            exec::Memory mem;
            const int xb = test::add_buffer(mem, x, "x", e);
            const int ob = test::add_buffer(mem, out, "out", e);
            SeesPrefixes sees;
            const exec::LaunchStats st = test::run_ttir(
                src, {Arg::buf(xb), Arg::buf(ob), Arg::i64(off), Arg::i64(k)}, mem, {1, 1, 1}, 1, {&sees});
            EXPECT_EQ(st.out_of_bounds, 0);
            for (int l = 0; l < kLanes; ++l) {
              const bool active = prefix_mask ? l < k : l >= k;
              const T loaded = active ? static_cast<T>(10 + off + l) : static_cast<T>(7);
              ASSERT_EQ(out[static_cast<size_t>(l)], loaded)
                  << ty << " " << pred << " k " << k << " lane " << l;
              ASSERT_EQ(out[static_cast<size_t>(kLanes + l)], active ? loaded : static_cast<T>(-2))
                  << ty << " " << pred << " k " << k << " lane " << l;
            }
            // The load, the unmasked store, the masked store.
            ASSERT_EQ(sees.prefix.size(), 3u);
            const bool cut = prefix_mask && k < kLanes;
            EXPECT_EQ(sees.prefix[0], cut ? k : 0) << ty << " " << pred << " k " << k;
            EXPECT_EQ(sees.prefix[2], cut ? k : 0) << ty << " " << pred << " k " << k;
            EXPECT_EQ(sees.prefix[1], 0);
            EXPECT_TRUE(sees.dense[1]);
            EXPECT_EQ(sees.dense[0], prefix_mask && k == kLanes);
          };
          if (std::string(ty) == "i8") run(int8_t{}, Elem::i8);
          if (std::string(ty) == "i32") run(int32_t{}, Elem::i32);
          if (std::string(ty) == "i64") run(int64_t{}, Elem::i64);
        }
      }
    }
  }
}
