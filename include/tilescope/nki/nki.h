// tilescope/nki: AWS NKI (Neuron Kernel Interface, Beta 2) kernels on tilescope's memory model,
// observer seam and analyses.
//
// An NKI kernel is specialized the way the NKI compiler does it (NKI language guide, "compilation
// model"): its Python code runs once per SPMD program (program ids are compile-time integers), and
// every `nki.isa` / `nki.language` operation it calls becomes one instruction of that program. Python
// (python/tilescope/nki) does that part and hands each instruction here, where it is checked against the
// documented constraints at once (a violation is an Error naming the op, the argument, the rule and the
// kernel's source line, as the compiler reports it), and appended. `Kernel::run` then executes every
// program's instructions on the CPU, against the user's arrays (HBM, zero-copy) and modelled on-chip
// memories (SBUF, PSUM), telling the analyses of the registry what each instruction read and wrote
// through the same observer seam as TTIR launches (exec/events.h). So the sanitizer, the race detector
// (between SPMD programs on HBM) and the uninitialized-memory analysis (SBUF / PSUM never written) work
// on NKI kernels unchanged.
//
// Semantics and constraints: the NKI API reference (awsdocs-neuron.readthedocs-hosted.com, nki/api/
// generated/nki.isa.*.html) and the architecture guides (nki/guides/architecture/trainium*_arch.html);
// each op's source cites its page (src/nki/isa.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tilescope/ir/elem.h"
#include "tilescope/ir/ir.h"
#include "tilescope/launch/runner.h"

namespace tilescope::nki {

/// A NeuronCore generation, selected by its instance name. Per partition (128 partitions on each):
/// SBUF 192 KiB on trn1 (NeuronCore-v2), 224 KiB on trn2 (v3), 256 KiB on trn3 (v4), of which kernels may
/// use 180224 / 212984 / 245752 bytes (the compiler's `tile_size.total_available_sbuf_size`); PSUM 16 KiB
/// in 8 banks of 2 KiB on all three (the architecture guides, "SBUF" and "PSUM").
struct Target {
  std::string_view name;  // "trn1", "trn2", "trn3"
  int nc_version;         // nki.isa.nc_version: 2, 3, 4
  int partitions;         // 128
  int64_t sbuf_bytes;     // per partition, usable by kernels
  int64_t psum_bytes;     // per partition
  int psum_banks;         // PSUM banks per partition (2 KiB each)
  // The profiler's clocks (GHz) and DMA rate, from the same guides ("Engines" of each; the DMA
  // overview's "theoretical peak DMA bandwidth per NeuronCore": 16 queues of 17 / 23 / 33 bytes per ns).
  double tensor_ghz, vector_ghz, scalar_ghz, gpsimd_ghz;
  double dma_bytes_per_ns;  // per DMA queue
};

/// The target called `name` (trn1, trn2, trn3; also gen2, gen3, gen4 and inf2 = trn1); throws Error
/// listing them.
const Target& target(std::string_view name);

/// Where a tensor lives: HBM (the user's arrays and kernel outputs), SBUF or PSUM (per program).
enum class Space : uint8_t { hbm, sbuf, psum };
std::string_view space_name(Space s);

/// An NKI data type: its storage element (bf16, fp8 and f32 codecs from ir/elem.h) and how NKI reads
/// it. `name` is nki.language's spelling ("bfloat16", "float8_e5m2", "uint8", "tfloat32").
struct DType {
  std::string name;
  ir::Elem elem = ir::Elem::f32;
  bool is_unsigned = false;  // uint8 / uint16 / uint32 (TTIR elements are signless)
  bool tf32 = false;         // tfloat32: stored in 32 bits, 10 mantissa bits kept (rounded on write)
  int bytes() const { return ir::elem_bytes(elem); }
  bool is_float() const { return ir::is_float(elem); }
};
/// The NKI dtype called `name` (nki.language's names, and numpy's / torch's: float32, bfloat16, ...);
/// throws Error listing them.
DType dtype(std::string_view name);

/// A tensor of the kernel: a kernel argument or output in HBM, or an allocation in SBUF / PSUM.
struct TensorInfo {
  std::string name;
  Space space = Space::hbm;
  DType dtype;
  std::vector<int64_t> shape;  // elements; dim 0 is the partition dim of an on-chip tensor
  int program = -1;            // the program that allocated it (on-chip tensors); -1: a kernel argument
  ir::PyLoc loc;               // where the kernel allocated it (unknown for arguments)
};

/// An access pattern: elements of one tensor, row-major over `shape`, element (i0, i1, ...) at
/// `offset + sum(i_k * strides[k])` (elements of the tensor's dtype, from its first element).
struct View {
  View() = default;
  View(int tensor, int64_t offset, std::vector<int64_t> shape, std::vector<int64_t> strides)
      : tensor(tensor), offset(offset), shape(std::move(shape)), strides(std::move(strides)) {}
  int tensor = -1;
  int64_t offset = 0;
  std::vector<int64_t> shape, strides;
  /// Offsets known only when the instruction runs (the access-pattern guide's `.ap(vector_offset=,
  /// scalar_offset=, indirect_dim=)`, nki/deep-dives/nki-aps.html; dma_copy's indirect DMA), each an
  /// integer tile in SBUF read by the instruction. `vector_offset` ([P, 1], HBM tensors, indirect_dim 0):
  /// row i0 of the view starts at idx[i0] * R instead of i0 * strides[0], R the elements of one index step
  /// of the tensor (the product of its shape past `indirect_dim`). `scalar_offset` ([1, 1]): adds its
  /// value * R. Only dma_copy and tensor_copy take such views. An element they move outside the tensor is
  /// an out-of-bounds access (a sanitizer finding; with oob_mode=skip, dropped): never dereferenced.
  std::shared_ptr<const View> vector_offset, scalar_offset;
  int indirect_dim = 0;
  int64_t numel() const;
  bool dynamic() const { return vector_offset || scalar_offset; }
};

/// One argument of an instruction as the Python front end hands it over: absent (None), a view, a
/// number, a name (an operator such as "add" / "exp", an enum value, a dtype), or a list of numbers
/// (iota's pattern, tile_position).
using Value = std::variant<std::monostate, View, double, std::string, std::vector<double>>;
using Args = std::map<std::string, Value, std::less<>>;

class Kernel {
 public:
  /// A launch of kernel `name` on `programs` SPMD programs (nki's `kernel[n]`) for `target`.
  Kernel(std::string name, const Target& target, int64_t programs);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  const Target& target() const;
  int64_t programs() const;

  /// An HBM tensor the kernel reads or writes in place: `bytes` of host memory at `host` (not owned;
  /// it must outlive run()), with `shape` and `strides` in elements. Returns the tensor id.
  int add_argument(std::string name, const DType& dtype, std::byte* host, uint64_t bytes,
                   std::vector<int64_t> shape, std::vector<int64_t> strides);
  /// nl.ndarray / nl.zeros on chip: a tensor of program `program` in SBUF or PSUM, allocated where
  /// `loc` says (shape rules: dim 0 <= the target's partitions; PSUM tiles within 2 KiB per partition
  /// on one bank). Its bytes are undefined until written (the uninit analysis reports reads of them).
  /// Throws Error naming `loc` for a bad shape. Returns the tensor id.
  int allocate(int program, std::string name, Space space, const DType& dtype, std::vector<int64_t> shape,
               const ir::PyLoc& loc);
  const TensorInfo& tensor(int id) const;

  /// Check instruction `op` (nki.isa's name, e.g. "tensor_tensor", or "load" / "store" for
  /// nki.language's) of program `program` with `args`, called from `loc`, and append it. Throws Error
  /// naming the op, the argument and the rule, located at `loc`, for a constraint it breaks.
  void append(int program, std::string_view op, const Args& args, const ir::PyLoc& loc);

  /// Run every program's instructions in program order under `options.analyses` (and its observers),
  /// as launch::run_launch runs a TTIR launch. Runs once. Throws Error for a failure while running.
  launch::RunResult run(const launch::RunOptions& options);

  /// The estimated per-engine profile of the kernel's instructions (README "NKI profile"): instruction
  /// counts per engine, DMA bytes per direction, the estimated per-engine timeline of each program from
  /// the documented instruction costs and clocks, SBUF / PSUM usage over time, and the costliest Python
  /// lines. Static: it does not need run(). JSON, `"kind": "nki"`.
  nlohmann::json profile() const;
  /// What the trace stores of this kernel: a module with one op per instruction site, in the order the
  /// kernel first called them (the site's line in the listing is its index + 1).
  const ir::Module& module() const;
  /// The kernel as a launch record (launch/record.h): its name, the grid {programs, 1, 1}, the HBM tensors
  /// (arguments, then outputs: the analyses' and the trace's argument order) as buffers over their host
  /// memory, and as its text the instruction listing, one line per site
  /// ("nki.isa.tensor_tensor  # file.py:12:4", the file without its directory), named "<kernel>.nki".
  launch::LaunchRecord record() const;

  /// The ops append() knows, in documentation order (README's table).
  static std::vector<std::string_view> ops();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::nki
