// The planner's value storage: slots share bytes by liveness (src/exec/plan.cpp, assign_storage), and a
// launch whose frames do not fit the memory limit fails before allocating them (issue 8, item 5).
// Expected values are computed by hand from the kernels' meaning; the "naive" frame size is one
// 64-byte-rounded slot per SSA value, which is what the planner did before.
#include "src/exec/plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <set>

#include "tests/cpp/exec/planned.h"
#include "tests/cpp/exec/sync_kernels.h"
#include "tests/cpp/harness.h"
#include "tilescope/ir/reader.h"

using namespace tilescope;
using exec::Arg;
using ir::Elem;
using test::Planned;

namespace {

/// x + 1 + 1 + ... (`k` additions) on tiles of `n` f32 elements, into out.
std::string chain(int64_t n, int k) {
  std::string t = fmt::format(R"(module {{
  tt.func public @chain(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {{noinline = false}} {{
    %r = tt.make_range {{end = {0} : i32, start = 0 : i32}} : tensor<{0}xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<{0}x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<{0}x!tt.ptr<f32>>, tensor<{0}xi32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<{0}x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<{0}x!tt.ptr<f32>>, tensor<{0}xi32>
    %one = arith.constant dense<1.000000e+00> : tensor<{0}xf32>
    %v0 = tt.load %xp : tensor<{0}x!tt.ptr<f32>>
)",
                              n);
  for (int i = 1; i <= k; ++i)
    t += fmt::format("    %v{} = arith.addf %v{}, %one : tensor<{}xf32>\n", i, i - 1, n);
  t += fmt::format("    tt.store %op, %v{} : tensor<{}x!tt.ptr<f32>>\n    tt.return\n  }}\n}}\n", k, n);
  return t;
}

/// Runs `kernel(%x, %out)` on `x` and an `out` of as many f32 elements, filled with -1 (a lane that no
/// program stores stays -1); returns out.
std::vector<float> run_x_out(const std::string& kernel, std::vector<float> x,
                             std::array<int64_t, 3> grid = {1, 1, 1}, int threads = 1) {
  std::vector<float> out(x.size(), -1.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x", Elem::f32);
  int ob = test::add_buffer(mem, out, "out", Elem::f32);
  test::run_ttir(kernel, {Arg::buf(xb), Arg::buf(ob)}, mem, grid, threads);
  return out;
}

}  // namespace

TEST(PlanStorage, LongChainReusesSlots) {
  // 1000 additions on 2^20-element tiles: 1000 values of 4 MiB each. Live at once: the range, the two
  // pointer tiles (8 MiB each, and their splats until the addptr), the constant, and two links of the
  // chain; never more than 16 tiles' worth.
  constexpr int64_t n = int64_t{1} << 20;
  Planned p(chain(n, 1000));
  const int64_t tile = 4 * n;
  EXPECT_GE(p.naive_bytes(), 1001 * tile);
  EXPECT_LE(p.plan.frame_bytes, 16 * tile);
  std::set<int64_t> chain_offsets;
  for (int i = 0; i <= 1000; ++i) chain_offsets.insert(p.offset(fmt::format("v{}", i)));
  EXPECT_LE(chain_offsets.size(), 3u);  // each link takes the storage of the one before the last
  // A result never shares storage with its op's operands; the constant tile is not in the frame at all:
  // every program reads it from the plan (Planner::share_constant).
  for (int i = 1; i <= 1000; ++i)
    EXPECT_NE(p.offset(fmt::format("v{}", i)), p.offset(fmt::format("v{}", i - 1)));
  const std::byte* one = p.plan.slot_shared[p.slot("one")];
  ASSERT_NE(one, nullptr);
  float last = 0;
  std::memcpy(&last, one + 4 * (n - 1), 4);
  EXPECT_EQ(last, 1.0f);
  // The arguments are written once per worker and read by every program: never shared.
  for (const char* a : {"x", "out"}) {
    for (size_t s = 0; s < p.plan.slots.size(); ++s) {
      if (p.plan.slot_value[s]->name != a && !p.plan.slot_shared[s]) {
        EXPECT_NE(p.plan.slot_offset[s], p.offset(a)) << a;
      }
    }
  }
}

TEST(PlanStorage, LongChainComputesTheSameValues) {
  constexpr int64_t n = 4096;
  std::vector<float> x(n);
  std::iota(x.begin(), x.end(), 0.0f);
  for (int threads : {1, 2}) {
    const std::vector<float> out = run_x_out(chain(n, 300), x, {3, 1, 1}, threads);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(i) + 300.0f) << i;
  }
}

// A value defined before a loop and read inside it must keep its storage for every iteration, and so
// must the loop-carried values: here `a` is last read (in the text) by the loop's first op, and the
// body then defines tiles of a's size that must not take its bytes. acc_{k+1} = 2 (acc_k + a) - acc_k
// = acc_k + 2a, so after 5 iterations from 0: 10a.
TEST(PlanStorage, ValuesReadInALoopLiveForTheWholeLoop) {
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c5 = arith.constant 5 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %a = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %two = arith.constant dense<2.000000e+00> : tensor<64xf32>
    %res = scf.for %i = %c0 to %c5 step %c1 iter_args(%acc = %zero) -> (tensor<64xf32>)  : i32 {
      %t1 = arith.addf %acc, %a : tensor<64xf32>
      %t2 = arith.mulf %t1, %two : tensor<64xf32>
      %t3 = arith.subf %t2, %acc : tensor<64xf32>
      %t4 = arith.addf %t3, %zero : tensor<64xf32>
      scf.yield %t4 : tensor<64xf32>
    }
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %op, %res : tensor<64x!tt.ptr<f32>>
    tt.return
  }
})";
  Planned p(k);
  for (const char* inner : {"t1", "t2", "t3", "t4"})
    for (const char* outer : {"a", "acc", "zero", "two", "res"})
      EXPECT_NE(p.offset(inner), p.offset(outer)) << inner << " shares the storage of " << outer;
  EXPECT_NE(p.offset("acc"), p.offset("res"));
  std::vector<float> x(64);
  std::iota(x.begin(), x.end(), 1.0f);
  const std::vector<float> out = run_x_out(k, x);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], 10.0f * x[i]) << i;
}

// The same with a loop made of branches (cf.cond_br back to a block): in a region of several blocks
// every value lives for the whole region. Sum of a over 4 iterations, doubled at each step into t2:
// acc_{k+1} = 2 (acc_k + a) - acc_k = acc_k + 2a: 8a.
TEST(PlanStorage, ValuesOfABranchLoopLiveForTheWholeRegion) {
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %a = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %two = arith.constant dense<2.000000e+00> : tensor<64xf32>
    cf.br ^bb1(%c0, %zero : i32, tensor<64xf32>)
  ^bb1(%i: i32, %acc: tensor<64xf32>):
    %t1 = arith.addf %acc, %a : tensor<64xf32>
    %t2 = arith.mulf %t1, %two : tensor<64xf32>
    %t3 = arith.subf %t2, %acc : tensor<64xf32>
    %i1 = arith.addi %i, %c1 : i32
    %more = arith.cmpi slt, %i1, %c4 : i32
    cf.cond_br %more, ^bb1(%i1, %t3 : i32, tensor<64xf32>), ^bb2(%t3 : tensor<64xf32>)
  ^bb2(%res: tensor<64xf32>):
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %op, %res : tensor<64x!tt.ptr<f32>>
    tt.return
  }
})";
  Planned p(k);
  for (const char* inner : {"t1", "t2", "t3"})
    EXPECT_NE(p.offset(inner), p.offset("a")) << inner << " shares the storage of a";
  std::vector<float> x(64);
  std::iota(x.begin(), x.end(), 1.0f);
  const std::vector<float> out = run_x_out(k, x);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], 8.0f * x[i]) << i;
}

// A reshape keeps its operand's bytes (Step::view), so its result takes the operand's storage and
// copies nothing; the storage is then held until the later of their last reads. Here `a` is last read
// by %t while its views `b` and `bb` are read after %u, a new tile of a's size, is made: %u must not
// take the bytes. out = (2a)^2 + a with a = x + x.
TEST(PlanStorage, AReshapeTakesItsOperandsStorageUntilItsLastRead) {
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %l = tt.load %xp : tensor<64x!tt.ptr<f32>>
    %a = arith.addf %l, %l : tensor<64xf32>
    %b = tt.reshape %a : tensor<64xf32> -> tensor<8x8xf32>
    %e = tt.expand_dims %b {axis = 0 : i32} : tensor<8x8xf32> -> tensor<1x8x8xf32>
    %t = arith.addf %a, %a : tensor<64xf32>
    %u = arith.mulf %t, %t : tensor<64xf32>
    %bb = tt.reshape %e : tensor<1x8x8xf32> -> tensor<64xf32>
    %s = arith.addf %u, %bb : tensor<64xf32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %op, %s : tensor<64x!tt.ptr<f32>>
    tt.return
  }
})";
  Planned p(k);
  for (const char* view : {"b", "e", "bb"}) EXPECT_EQ(p.offset(view), p.offset("a")) << view;
  for (const char* other : {"l", "t", "u", "s"}) EXPECT_NE(p.offset(other), p.offset("a")) << other;
  std::vector<float> x(64);
  std::iota(x.begin(), x.end(), -20.0f);
  for (int threads : {1, 2}) {
    const std::vector<float> out = run_x_out(k, x, {3, 1, 1}, threads);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(out[i], 16.0f * x[i] * x[i] + 2.0f * x[i]) << i;
  }
}

// Where a reshape's operand is a loop-carried value, the yield writes the operand while the reshape's
// result may still be read (here by the same yield), so the result keeps storage of its own; a
// reshape of a constant (read from the plan, not the frame) too. p_{k+1} = p_k + 1, q_{k+1} = p_k:
// after 3 iterations from (x, 0): p = x + 3, q = x + 2 (+ the constant 0.5).
TEST(PlanStorage, AReshapeOfALoopCarriedValueOrAConstantHasStorageOfItsOwn) {
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    %a = tt.load %xp : tensor<256x!tt.ptr<f32>>
    %zero = arith.constant dense<0.000000e+00> : tensor<256xf32>
    %one = arith.constant dense<1.000000e+00> : tensor<256xf32>
    %half = arith.constant dense<5.000000e-01> : tensor<16x16xf32>
    %halfv = tt.reshape %half : tensor<16x16xf32> -> tensor<256xf32>
    %res:2 = scf.for %i = %c0 to %c3 step %c1 iter_args(%p = %a, %q = %zero) -> (tensor<256xf32>, tensor<256xf32>)  : i32 {
      %v = tt.reshape %p : tensor<256xf32> -> tensor<256xf32>
      %n = arith.addf %p, %one : tensor<256xf32>
      scf.yield %n, %v : tensor<256xf32>, tensor<256xf32>
    }
    %sum = arith.addf %res#1, %halfv : tensor<256xf32>
    %w = arith.mulf %res#0, %sum : tensor<256xf32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    tt.store %op, %w : tensor<256x!tt.ptr<f32>>
    tt.return
  }
})";
  Planned p(k);
  EXPECT_NE(p.offset("v"), p.offset("p"));
  ASSERT_NE(p.plan.slot_shared[p.slot("half")], nullptr);  // the constant is read from the plan
  std::vector<float> x(256);
  std::iota(x.begin(), x.end(), -7.0f);
  for (int threads : {1, 2}) {
    const std::vector<float> out = run_x_out(k, x, {2, 1, 1}, threads);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(out[i], (x[i] + 3.0f) * (x[i] + 2.5f)) << i;
  }
}

// ---------------------------------------------------------------------------------------------
// The memory limit

namespace {

std::string launch_error(const std::string& ttir, const std::vector<Arg>& args, exec::Memory& mem,
                         std::array<int64_t, 3> grid, int threads, int64_t max_memory) {
  ir::Module m = ir::read(ttir, "t.ttir");
  ir::verify(m);
  exec::Engine e(m);
  exec::LaunchOptions o;
  o.grid = grid;
  o.threads = threads;
  o.max_memory = max_memory;
  try {
    e.launch(m.entry()->name, args, mem, o);
  } catch (const Error& err) {
    return err.what();
  }
  return "(no error)";
}

}  // namespace

TEST(PlanStorage, AFrameLargerThanTheLimitIsAClearErrorBeforeTheLaunch) {
  // 2^18-element tiles: the load's result alone is 1 MiB, more than a 512 KiB limit.
  constexpr int64_t n = int64_t{1} << 18;
  std::vector<float> x(n, 1.0f), out(n, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x", Elem::f32);
  int ob = test::add_buffer(mem, out, "out", Elem::f32);
  const std::string k = chain(n, 3);
  std::string e = launch_error(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {4, 1, 1}, 4, 512 << 10);
  EXPECT_NE(e.find("this launch needs at least"), std::string::npos) << e;
  EXPECT_NE(e.find("x 4 worker threads"), std::string::npos) << e;
  EXPECT_NE(e.find("more than the memory limit of 512.0 KiB"), std::string::npos) << e;
  EXPECT_NE(e.find("raise the limit with --max-memory SIZE"), std::string::npos) << e;
  EXPECT_EQ(out[0], 0.0f);  // nothing ran
  // The frame's size, as the error gives it, is the plan's (plus the alignment slack), and 4 of them fit
  // a limit of exactly that much.
  Planned p(k);
  const int64_t frame = p.plan.frame_bytes + 64;
  EXPECT_NE(e.find(fmt::format("({:.1f} MiB per program frame", static_cast<double>(frame) / (1 << 20))),
            std::string::npos)
      << e;
  EXPECT_EQ(launch_error(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {4, 1, 1}, 4, 4 * frame), "(no error)");
  EXPECT_EQ(out[0], 4.0f);
  EXPECT_NE(launch_error(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {4, 1, 1}, 4, 4 * frame - 1), "(no error)");
  // The default thread count is cut to the frames that fit; only a frame larger than the limit fails.
  out.assign(n, 0.0f);
  EXPECT_EQ(launch_error(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {64, 1, 1}, 0, frame), "(no error)");
  EXPECT_EQ(out[0], 4.0f);
  e = launch_error(k, {Arg::buf(xb), Arg::buf(ob)}, mem, {64, 1, 1}, 0, frame - 1);
  EXPECT_NE(e.find("x 1 worker thread)"), std::string::npos) << e;
}

TEST(PlanStorage, ProgramsParkedOnAtomicsCountAgainstTheLimit) {
  // Program i waits for program i + 1 (control_test.cpp, WaitingOnLaterProgramsDoesNotStarve): on one
  // thread all 600 programs are in flight at once, each with its frame.
  const char* k = test::kWaitChainKernel;
  Planned p(k);
  const int64_t frame = p.plan.frame_bytes + 64;
  std::vector<int32_t> flags(600, 0);
  exec::Memory mem;
  int f = test::add_buffer(mem, flags, "flags", Elem::i32);
  std::string e = launch_error(k, {Arg::buf(f), Arg::i64(600)}, mem, {600, 1, 1}, 1, 100 * frame);
  EXPECT_NE(e.find("x 101 programs in flight: 1 thread, and programs parked"), std::string::npos) << e;
  EXPECT_NE(e.find("--max-memory"), std::string::npos) << e;
  flags.assign(600, 0);
  EXPECT_EQ(launch_error(k, {Arg::buf(f), Arg::i64(600)}, mem, {600, 1, 1}, 1, 600 * frame), "(no error)");
  EXPECT_EQ(std::accumulate(flags.begin(), flags.end(), 0), 600);
}

TEST(PlanStorage, TheDefaultLimitIsHalfTheMemory) {
  const int64_t phys = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  EXPECT_GT(exec::default_max_memory(), 0);
  EXPECT_LE(exec::default_max_memory(), phys / 2);
}
