// The profile analysis through the one runner, on a kernel small enough to count by hand: a copy of
// 32 elements per program, the load unmasked (x is padded to whole programs) and the store masked to
// i < n. Expected counts follow from the kernel text: lanes = 32 per program, 4-byte floats, one warp
// of 32 lanes per instruction (32 elements is less than 32 * num_warps, so V = 1; loads replicate per
// warp), sectors of contiguous 128-byte runs = 4.
#include "tilescope/analysis/profile.h"

#include <gtest/gtest.h>

#include <vector>

#include "tilescope/ir/diag.h"
#include "tilescope/launch/runner.h"

namespace tilescope::analysis {
namespace {

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

nlohmann::json profile_copy(int64_t n, int num_warps, const std::string& gpu = "H100") {
  const int64_t programs = (n + 31) / 32;
  std::vector<float> x(static_cast<size_t>(programs * 32), 1.0f), out(static_cast<size_t>(n), 0.0f);
  launch::LaunchRecord rec;
  rec.ttir = kCopy;
  rec.ttir_file = "copy.ttir";
  rec.grid = {programs, 1, 1};
  rec.args = {launch::ArgRecord::buffer("x_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(x.data()),
                                        programs * 32 * 4, {programs * 32}, {1}),
              launch::ArgRecord::buffer("out_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(out.data()),
                                        n * 4, {n}, {1}),
              launch::ArgRecord::scalar("n", n)};
  launch::RunOptions o;
  o.analyses.push_back({"profile", {{"gpu", gpu}, {"num_warps", num_warps}}});
  launch::RunResult r = launch::run_launch(rec, o);
  EXPECT_TRUE(r.findings.empty());
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], 1.0f);
  return r.reports.at("profile");
}

TEST(Profile, CountsOfACopyByHand) {
  const int64_t n = 100;  // 4 programs, 128 lanes; 100 stored
  nlohmann::json p = profile_copy(n, 4);
  const auto& ld = p["memory"]["load"];
  const auto& st = p["memory"]["store"];
  EXPECT_EQ(ld["lanes"], 128);
  EXPECT_EQ(ld["active_lanes"], 128);
  EXPECT_EQ(ld["bytes"], 512);
  EXPECT_EQ(st["active_lanes"], n);
  EXPECT_EQ(st["bytes"], 4 * n);
  EXPECT_EQ(st["bytes_all_lanes"], 512);
  EXPECT_DOUBLE_EQ(st["mask_efficiency"].get<double>(), 100.0 / 128.0);
  // 32 lanes < 32 * 4 warps: each of the 4 warps loads the 128 bytes (4 sectors) again; stores once.
  EXPECT_EQ(ld["requests"], 4 * 4);
  EXPECT_EQ(ld["sectors"], 4 * 4 * 4);
  EXPECT_EQ(st["requests"], 4);
  EXPECT_EQ(st["sectors"], 3 * 4 + 1);  // the last program stores elements 96..99: one sector
  // Distinct bytes: x read whole (512 bytes), out written whole (400 bytes = 6.25 64-byte blocks -> 7).
  EXPECT_EQ(p["memory"]["read"]["unique_bytes"], 512);
  EXPECT_EQ(p["memory"]["written"]["unique_bytes"], 400);
  EXPECT_EQ(p["memory"]["written"]["dram_bytes"], 7 * 64);
  EXPECT_EQ(p["ops"]["arith.cmpi"]["elements"], 128);
  EXPECT_EQ(p["ops"]["arith.muli"]["executions"], 4);
  EXPECT_EQ(p["programs"], 4);
  // With one warp nothing is replicated.
  nlohmann::json one = profile_copy(n, 1);
  EXPECT_EQ(one["memory"]["load"]["sectors"], 4 * 4);
}

TEST(Profile, RooflineUsesTheTable) {
  nlohmann::json p = profile_copy(1 << 12, 4, "a100");  // names are case-insensitive
  const auto& roof = p["roofline"];
  EXPECT_EQ(roof["gpu"], "A100");
  const double dram = (4096.0 * 4) * 2;  // read and written once, whole 64-byte blocks
  EXPECT_EQ(roof["dram_bytes"], dram);
  EXPECT_DOUBLE_EQ(roof["memory_seconds"].get<double>(), dram / 2.039e12);  // A100 SXM4 80GB: 2,039 GB/s
  EXPECT_EQ(roof["bound"], "memory");
}

TEST(Profile, GpuTableAndErrors) {
  for (const GpuSpec& g : gpus()) {
    EXPECT_GT(g.dram_bytes_per_s, 0) << g.name;
    EXPECT_GT(g.fp32, 0) << g.name;
    EXPECT_FALSE(g.source.empty()) << g.name;
    EXPECT_EQ(&find_gpu(g.name), &g);
  }
  EXPECT_EQ(find_gpu("mi300x").name, "MI300X");
  try {
    find_gpu("V100");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "no GPU named 'V100' for the roofline (known: H100, H200, A100, B200, MI300X, L4)");
  }
  std::vector<float> x(32);
  launch::LaunchRecord rec;
  rec.ttir = kCopy;
  rec.grid = {1, 1, 1};
  rec.args = {launch::ArgRecord::buffer("x_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(x.data()), 128,
                                        {32}, {1}),
              launch::ArgRecord::buffer("out_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(x.data()), 128,
                                        {32}, {1}),
              launch::ArgRecord::scalar("n", 32)};
  auto error_of = [&](nlohmann::json options) {
    launch::RunOptions o;
    o.analyses.push_back({"profile", std::move(options)});
    try {
      launch::run_launch(rec, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({{"num_warps", 0}}),
            "analysis 'profile': option 'num_warps' must be an integer from 1 to 32");
  EXPECT_EQ(error_of({{"gpu", 3}}), "analysis 'profile': option 'gpu' must be a string");
  EXPECT_EQ(error_of({{"gpu", "V100"}}),
            "analysis 'profile': option 'gpu': no GPU named 'V100' for the roofline (known: H100, H200, "
            "A100, B200, "
            "MI300X, L4)");
}

}  // namespace
}  // namespace tilescope::analysis
