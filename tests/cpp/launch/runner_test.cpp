// The one launch path: a record runs under analyses named in the registry, findings and statistics
// come back, a record read back from its JSON (with its memory given again) runs the same, options are
// checked, grids are checked against CUDA's limits. Expected values are computed by hand from the
// kernel: copy 32 elements per program with an unmasked load.
#include "tilescope/launch/runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tilescope/ir/diag.h"

namespace tilescope::launch {
namespace {

// out[i] = x[i] for i < n, 32 lanes per program; the load has no mask (reads past x when n % 32 != 0),
// and program 0 prints its first offset.
const char* kCopy = R"(module {
  tt.func public @copy_kernel(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %c32_i32 = arith.constant 32 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c32_i32 : i32
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %bs = tt.splat %base : i32 -> tensor<32xi32>
    %offs = arith.addi %bs, %r : tensor<32xi32>
    %xs = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %x = tt.load %xp : tensor<32x!tt.ptr<f32>>
    %ns = tt.splat %n : i32 -> tensor<32xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<32xi32>
    %os = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %op = tt.addptr %os, %offs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    tt.store %op, %x, %m : tensor<32x!tt.ptr<f32>>
    tt.return
  }
})";

struct Copy {
  std::vector<float> x, out;
  LaunchRecord rec;
  explicit Copy(int64_t n) : x(static_cast<size_t>(n)), out(static_cast<size_t>(n), 0.0f) {
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f;
    rec.ttir = kCopy;
    rec.ttir_file = "copy.ttir";
    rec.grid = {(n + 31) / 32, 1, 1};
    rec.args = {
        ArgRecord::buffer("x_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(x.data()), n * 4, {n}, {1}),
        ArgRecord::buffer("out_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(out.data()), n * 4, {n},
                          {1}),
        ArgRecord::scalar("n", n)};
    rec.stack = {"prog.py:3 in main"};
  }
};

RunOptions sanitize(analysis::Options o = nullptr) {
  RunOptions opts;
  opts.analyses.push_back({"sanitizer", std::move(o)});
  return opts;
}

TEST(Runner, RunsARecordUnderTheSanitizer) {
  Copy c(100);
  RunResult r = run_launch(c.rec, sanitize());
  EXPECT_EQ(r.stats.programs, 4);
  EXPECT_FALSE(r.stats.stopped);
  for (size_t i = 0; i < c.out.size(); ++i) ASSERT_EQ(c.out[i], c.x[i]) << i;
  ASSERT_EQ(r.findings.size(), 1u);
  const analysis::Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, analysis::Kind::oob_load);
  EXPECT_EQ(f.kernel, "copy_kernel");
  EXPECT_EQ(f.lanes, 28);  // offsets 100..127 of program 3
  EXPECT_EQ(f.offset_min, 100);
  EXPECT_EQ(f.offset_max, 127);
  EXPECT_EQ(f.launch_stack, c.rec.stack);
  ASSERT_TRUE(r.statistics.contains("sanitizer"));
  EXPECT_TRUE(r.statistics["sanitizer"].contains("watched_ops"));
  // A clean launch: n a multiple of 32.
  Copy clean(64);
  EXPECT_TRUE(run_launch(clean.rec, sanitize()).findings.empty());
  // No analysis: the kernel just runs.
  Copy plain(100);
  RunResult p = run_launch(plain.rec, RunOptions{});
  EXPECT_TRUE(p.findings.empty());
  EXPECT_EQ(plain.out[99], plain.x[99]);
}

TEST(Runner, AReplayedRecordGivesTheSameFindings) {
  Copy c(100);
  RunResult first = run_launch(c.rec, sanitize());
  LaunchRecord back = record_from_json(nlohmann::json::parse(to_json(c.rec).dump()));
  // A record read back has no memory: running it so is an error naming the buffer ...
  try {
    run_launch(back, sanitize());
    ADD_FAILURE() << "ran a record without memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'x_ptr'"), std::string::npos) << e.what();
  }
  // ... and with the memory given again it runs as before.
  std::vector<float> out2(100, 0.0f);
  back.args[0].host = reinterpret_cast<std::byte*>(c.x.data());
  back.args[1].host = reinterpret_cast<std::byte*>(out2.data());
  RunResult again = run_launch(back, sanitize());
  ASSERT_EQ(again.findings.size(), first.findings.size());
  EXPECT_EQ(again.findings[0].summary, first.findings[0].summary);
  EXPECT_EQ(out2, c.out);
}

TEST(Runner, AbortOnFirstStopsTheLaunch) {
  Copy c(1000);  // only the last program (offsets 992..1023) reads past x
  RunOptions o = sanitize({{"abort_on_first", true}});
  o.threads = 1;
  RunResult r = run_launch(c.rec, o);
  EXPECT_TRUE(r.stats.stopped);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, analysis::Kind::oob_load);
}

TEST(Runner, AnalysesAndOptionsAreChecked) {
  Copy c(64);
  auto error_of = [&](const RunOptions& o) {
    try {
      run_launch(c.rec, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  RunOptions unknown;
  unknown.analyses.push_back({"racecheck", nullptr});
  EXPECT_EQ(error_of(unknown), "no analysis named 'racecheck' (known: sanitizer, races, uninit, profile)");
  EXPECT_EQ(error_of(sanitize({{"posion", false}})),
            "analysis 'sanitizer': unknown option 'posion' (it has: abort_on_first, poison, max_first)");
  EXPECT_EQ(error_of(sanitize({{"poison", 1}})), "analysis 'sanitizer': option 'poison' must be a boolean");
  EXPECT_EQ(error_of(sanitize({{"max_first", 0}})),
            "analysis 'sanitizer': option 'max_first' must be an integer from 1 to 1000");
  EXPECT_EQ(error_of(sanitize(nlohmann::json::array())),
            "analysis 'sanitizer': options must be a JSON object");
  RunOptions uninit;
  uninit.analyses.push_back({"uninit", {{"max_firts", 3}}});
  EXPECT_EQ(error_of(uninit), "analysis 'uninit': unknown option 'max_firts' (it has: max_first)");
}

TEST(Runner, GridsAreCheckedAgainstCudaLimits) {
  Copy c(64);
  auto error_of = [&](std::array<int64_t, 3> g) {
    c.rec.grid = g;
    try {
      run_launch(c.rec, RunOptions{});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({int64_t{1} << 31, 1, 1}),
            "grid dimension x is 2147483648: CUDA allows 0 to 2147483647");
  EXPECT_EQ(error_of({1, 65536, 1}), "grid dimension y is 65536: CUDA allows 0 to 65535");
  EXPECT_EQ(error_of({1, 1, -1}), "grid dimension z is -1: CUDA allows 0 to 65535");
  // An empty grid launches nothing (as Triton skips the launch on the GPU).
  c.rec.grid = {0, 1, 1};
  RunResult r = run_launch(c.rec, sanitize());
  EXPECT_EQ(r.stats.programs, 0);
  EXPECT_EQ(c.out[0], 0.0f);
}

TEST(Runner, KernelsAreReadOncePerText) {
  auto a = compile(kCopy, "a.ttir");
  auto b = compile(kCopy, "b.ttir");
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->function("").name, "copy_kernel");
  EXPECT_THROW(a->function("nope"), Error);
}

// A pointer array (issue 9 item 4): program p loads the address ptrs[p] (an integer, as
// torch.tensor([a.data_ptr(), ...]) holds), makes a pointer of it and copies 16 floats from there to
// out[16p..16p+16).
const char* kGather = R"(module {
  tt.func public @gather_kernel(%ptrs: !tt.ptr<i64>, %out_ptr: !tt.ptr<f32>) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %pid = tt.get_program_id x : i32
    %pp = tt.addptr %ptrs, %pid : !tt.ptr<i64>, i32
    %addr = tt.load %pp : !tt.ptr<i64>
    %base = tt.int_to_ptr %addr : i64 -> !tt.ptr<f32>
    %offs = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %bs = tt.splat %base : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %src = tt.addptr %bs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %x = tt.load %src : tensor<16x!tt.ptr<f32>>
    %o0 = arith.muli %pid, %c16_i32 : i32
    %os = tt.splat %o0 : i32 -> tensor<16xi32>
    %oo = arith.addi %os, %offs : tensor<16xi32>
    %ob = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %dst = tt.addptr %ob, %oo : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %dst, %x : tensor<16x!tt.ptr<f32>>
    %back = tt.ptr_to_int %base : !tt.ptr<f32> -> i64
    %same = arith.cmpi eq, %back, %addr : i64
    tt.assert %same, "ptr_to_int(int_to_ptr(a)) == a" : i1
    tt.return
  }
})";

struct Gather {
  std::vector<float> a, b, out;
  std::vector<int64_t> ptrs;
  LaunchRecord rec;
  Gather(size_t b_size, uint64_t second) : a(16), b(b_size), out(32, -1.0f) {
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = 100.0f + static_cast<float>(i);
    ptrs = {static_cast<int64_t>(reinterpret_cast<uint64_t>(a.data())), static_cast<int64_t>(second)};
    rec.ttir = kGather;
    rec.ttir_file = "gather.ttir";
    rec.grid = {2, 1, 1};
    rec.args = {
        ArgRecord::buffer("ptrs", ir::Elem::i64, reinterpret_cast<std::byte*>(ptrs.data()), 16, {2}, {1}),
        ArgRecord::buffer("out_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(out.data()), 128, {32},
                          {1})};
    auto n = static_cast<int64_t>(b.size());
    rec.allocations = {
        ArgRecord::buffer("tensor a", ir::Elem::f32, reinterpret_cast<std::byte*>(a.data()), 64, {16}, {1}),
        ArgRecord::buffer("tensor b", ir::Elem::f32, reinterpret_cast<std::byte*>(b.data()), n * 4, {n},
                          {1})};
  }
  uint64_t b_host() const { return reinterpret_cast<uint64_t>(b.data()); }
};

TEST(Runner, PointersMadeFromIntegersResolveToLiveAllocations) {
  Gather g(16, 0);
  g.ptrs[1] = static_cast<int64_t>(g.b_host());
  RunResult r = run_launch(g.rec, sanitize());
  EXPECT_TRUE(r.findings.empty()) << r.findings.size() << " " << r.findings[0].message;
  EXPECT_TRUE(r.failed_asserts.empty()) << r.failed_asserts;
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(g.out[i], g.a[i]) << i;
    EXPECT_EQ(g.out[16 + i], g.b[i]) << i;
  }
  // The record's JSON keeps the allocations.
  LaunchRecord back = record_from_json(to_json(g.rec));
  ASSERT_EQ(back.allocations.size(), 2u);
  EXPECT_EQ(back.allocations[1].name, "tensor b");
  EXPECT_EQ(back.allocations[1].bytes, 64u);
}

TEST(Runner, APointerArrayPastItsTensorIsOutOfBoundsOfThatTensor) {
  Gather g(12, 0);  // b has 12 elements; the kernel reads 16
  g.ptrs[1] = static_cast<int64_t>(g.b_host());
  RunResult r = run_launch(g.rec, sanitize());
  ASSERT_EQ(r.findings.size(), 1u);
  const analysis::Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, analysis::Kind::oob_load);
  ASSERT_TRUE(f.buffer);
  EXPECT_EQ(f.buffer->name, "tensor b");
  EXPECT_EQ(f.lanes, 4);
  EXPECT_EQ(f.offset_min, 12);
  EXPECT_EQ(f.offset_max, 15);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(g.out[16 + i], g.b[i]) << i;
}

TEST(Runner, AWildPointerIsReportedAndNeverDereferenced) {
  // An address in no allocation, far from any mapping (dereferencing it would crash the process).
  const uint64_t wild = 0x7ff0'0000'0000;
  Gather g(16, wild);
  RunResult r = run_launch(g.rec, sanitize());
  ASSERT_EQ(r.findings.size(), 1u);
  const analysis::Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, analysis::Kind::wild_pointer);
  EXPECT_EQ(f.lanes, 16);
  EXPECT_EQ(f.address_min, wild);
  EXPECT_EQ(f.address_max, wild + 60);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(g.out[i], g.a[i]) << i;
  // Without the allocations, a's address is wild too: provenance comes only from the registry.
  Gather none(16, wild);
  none.rec.allocations.clear();
  RunResult r2 = run_launch(none.rec, sanitize());
  ASSERT_EQ(r2.findings.size(), 1u);
  EXPECT_EQ(r2.findings[0].kind, analysis::Kind::wild_pointer);
  EXPECT_EQ(r2.findings[0].lanes, 32);
}

TEST(Runner, DescriptorPaddingRoundTripsThroughJson) {
  std::vector<float> x(4);
  LaunchRecord r;
  r.args = {ArgRecord::buffer("d", ir::Elem::f32, reinterpret_cast<std::byte*>(x.data()), 16, {4}, {1})};
  EXPECT_FALSE(to_json(r)["args"][0].contains("padding"));
  r.args[0].padding = 2;
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["args"][0]["padding"], "nan");
  EXPECT_EQ(record_from_json(j).args[0].padding, 2);
  j["args"][0]["padding"] = "inf";
  EXPECT_THROW(record_from_json(j), Error);
}

}  // namespace
}  // namespace tilescope::launch
