// tilescope/analysis: the profiler (issue 11 item 3): what a launch moves and computes, counted
// exactly on the real execution (every program runs; no sampling), per launch and per op and Python
// source line, with a roofline estimate for a chosen GPU.
//
// Counts, per memory op (tt.load / tt.store / atomics / descriptor ops) and in total per kind:
//   lanes, active_lanes        lanes of the op's tile, and those whose mask is set
//   bytes, bytes_all_lanes     active lanes * element bytes, all lanes * element bytes;
//                              mask_efficiency = bytes / bytes_all_lanes
//   sectors, requests          the GPU's view of the access (the sector model below): 32-byte L1
//                              sectors touched and warp-level memory instructions issued;
//                              coalescing = bytes / (sectors * 32)
//   unique_bytes, unique_sectors, dram_bytes (read and written, per launch) distinct bytes, 32-byte
//                              sectors and 64-byte blocks (* 64) touched by the whole launch (all
//                              programs): the DRAM traffic of a launch whose data is cached once read
// per tt.dot: executions and FLOPs (2*M*N*K per execution, times the passes of a split precision:
// tf32x3 = 3 tf32 MMAs, bf16x3 / bf16x6 = 3 / 6 bf16 MMAs) by input precision (fp64, fp32 (ieee), tf32,
// fp16, bf16, fp8, int8); per arith / math op: executions and elements, float ones also as vector FLOPs
// (fp32 / fp64, an FMA counting 2); per scf.for: executions and trip count; atomics as a memory kind.
//
// The sector model (a GPU's L1, NVIDIA's `l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}` metrics),
// after Triton's layouts and its lowering of loads and stores:
//   - lanes are dealt to threads in the order of the tile's flattened (row-major) index, V consecutive
//     lanes per thread, 32 threads per warp (Triton's blocked layout); a 2-D tile whose consecutive
//     addresses run down dim 0 (a transposed operand) is dealt column by column instead;
//   - V, the elements per thread, is what Triton's coalescing pass picks: at most 16 bytes and
//     numel / (32 * num_warps) elements; the op's alignment (the largest V for which every chunk of V
//     lanes is V consecutive, V-aligned elements, runs of consecutive addresses starting at multiples of
//     16 elements from the buffer's start: what Triton proves from 16-divisible arguments), raised to
//     the largest alignment among memory ops of the same tile shape; a store keeps its own;
//   - a warp's 32*V lanes are one vector instruction when the op's alignment covers V and its mask
//     changes only at multiples of min(16, last dimension) (the constancy Triton proves for bounds
//     divisible by 16); otherwise V scalar instructions, instruction j taking lane j of each thread;
//   - a tile of fewer than 32 * num_warps elements is replicated across warps: a load is issued by each
//     warp holding a copy, a store or atomic once;
//   - an instruction with an active lane is a request and touches the distinct 32-byte sectors its
//     active lanes' bytes fall in (addresses relative to each buffer's start, which a GPU allocator
//     aligns to at least 256 bytes).
// bench/PROFILE.md compares the model with an H200.
//
// The roofline (GpuSpec): modelled time = max(dram bytes / bandwidth, sum over precisions of FLOPs /
// peak); the launch is memory-bound when the first term is the larger. Lines and sites are ranked by a
// cost: their sectors * 32 / bandwidth + their FLOPs / peak (no caching).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tilescope/analysis/analysis.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

/// One GPU's public peaks (dense, no sparsity): bytes/s of DRAM and FLOP/s (or OP/s) per precision.
/// Zero: the GPU has no such unit (FLOPs of that precision then cost nothing in the model, and the
/// report's "unsupported_precisions" lists it).
struct GpuSpec {
  std::string_view name;     // "H100"
  std::string_view part;     // "H100 SXM5 80GB"
  std::string_view source;   // the vendor document the numbers come from
  double dram_bytes_per_s;   // DRAM bandwidth
  double fp64, fp64_tensor;  // vector and tensor (matrix) FP64
  double fp32;               // vector FP32 (not tensor cores)
  double tf32, fp16, bf16;   // tensor cores, dense
  double fp8, int8;          // tensor cores, dense
};

/// Every GPU of `--gpu`, in table order.
std::span<const GpuSpec> gpus();
/// The GPU called `name` (case-insensitive); throws tilescope::Error listing the known names.
const GpuSpec& find_gpu(std::string_view name);

struct ProfileOptions {
  std::string gpu = "H100";  // the roofline's GPU (find_gpu)
  int num_warps = 4;         // warps per program for the sector model (Triton's default)
};

class Profile : public Analysis {
 public:
  Profile(const ir::Module& module, const ProfileOptions& opts);
  ~Profile() override;

  exec::Subscription on_launch_begin(const exec::LaunchContext&) override;
  void* on_program_begin(exec::ProgramId) override;
  void on_program_end(exec::ProgramId, void* state) override;
  void on_op_begin(const exec::OpEvent&, void* state) override;
  void on_access(const exec::AccessEvent&, void* state) override;
  /// Finds nothing; builds this launch's report (README "Profile JSON").
  void collect(const LaunchInfo& info, std::vector<Finding>& out) override;
  nlohmann::json report() const override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::analysis
