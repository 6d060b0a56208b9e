// The NKI machine (private to src/nki): a kernel's tensors, its programs' instructions, the sites the
// analyses see, and the running program's view of memory.
#pragma once

#include <fmt/format.h>

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tilescope/analysis/uninit.h"
#include "tilescope/exec/events.h"
#include "tilescope/exec/memory.h"
#include "tilescope/ir/diag.h"
#include "tilescope/nki/nki.h"

namespace tilescope::nki {

class Exec;

/// The engines an instruction can run on (the architecture guides' Tensor (PE), Vector (DVE), Scalar
/// (ACT) and GpSimd (Pool) engines, and the DMA queues).
enum class Engine : uint8_t { tensor, vector, scalar, gpsimd, dma };
inline constexpr int kEngines = 5;
std::string_view engine_name(Engine e);

/// The elements [lo, hi] of one tensor an operand's access pattern reaches, and whether it writes them.
struct Touch {
  int tensor = -1;
  int64_t lo = 0, hi = 0;
  bool write = false;
};

/// An instruction's estimated cost (profile.cpp, from the NKI API reference's "estimated instruction
/// cost" formulas and the architecture guides' clocks).
struct Cost {
  Engine engine = Engine::vector;
  double ns = 0;     // how long it keeps its engine (each of its queues, for a DMA) busy
  int queues = 1;    // DMA: how many of the 16 queues it is spread over
  double flops = 0;  // nc_matmul: 2 * K * M * N
  Space from = Space::hbm, to = Space::hbm;   // DMA: the source's and the destination's memories
  int64_t read_bytes = 0, written_bytes = 0;  // DMA
  /// Bytes the instruction reads from each memory into the memory of its destination, any engine:
  /// flow[from * 3 + to], Space order (the profile's "flows": HBM / SBUF / PSUM traffic).
  std::array<int64_t, 9> flow{};
};

/// One instruction of one program: its site (the op the analyses see, with the kernel's source line),
/// what it does when the program runs, the tensor elements its operands reach, and its estimated cost.
struct Instr {
  const ir::Op* site = nullptr;
  std::function<void(Exec&)> run;
  std::vector<Touch> touches;
  Cost cost;
};

/// An op of nki.isa / nki.language: its name and the function that checks one call and returns the
/// instruction's body. Every op is one row of kOps (isa.cpp).
struct OpSpec {
  std::string_view name;
  std::function<void(Exec&)> (*check)(Kernel::Impl& k, int program, const Args& args);
};
std::span<const OpSpec> op_table();

/// The estimated cost of instruction `op` with `args` (checked by its OpSpec already) on `k`'s target.
Cost estimate(const Kernel::Impl& k, std::string_view op, const Args& args);

/// A tensor's storage: the user's array (HBM arguments), or memory the kernel owns (on-chip tensors).
struct Storage {
  TensorInfo info;
  int buffer = -1;  // exec::Memory id
  std::unique_ptr<std::byte[]> owned;
  uint64_t bytes = 0;
  uint64_t tracked = 0;  // analysis::Definedness id of owned memory (0: none)
  /// PSUM tensors: per element, whether an nc_matmul wrote it since the allocation (its accumulate
  /// inference); sized by the first nc_matmul into the tensor.
  std::vector<uint8_t> matmul_written;
};

struct Kernel::Impl {
  std::string name;
  const Target* target = nullptr;
  int64_t programs = 1;
  std::vector<Storage> tensors;
  exec::Memory memory;
  ir::Module module;  // one function, one op per site: what the analyses see (findings name its lines)
  ir::Function* fn = nullptr;
  std::vector<std::vector<Instr>> code;                     // per program
  std::map<std::string, const ir::Op*, std::less<>> sites;  // by "op@file:line:col"
  bool ran = false;

  // The call being checked (append): its op and location, for errors.
  std::string_view op;
  ir::PyLoc loc;

  ~Impl();
  /// Fails (an Error at the instruction where it happens) when the on-chip tensors live at once in
  /// `program` need more SBUF or PSUM per partition than the target has. A tensor is live from the
  /// first instruction that uses it to the last (the compiler's allocator reuses the space of dead
  /// tensors, and a tile allocated in a loop body is a new tensor per iteration).
  void check_capacity(int program) const;
  /// Per on-chip tensor of `program`: the indexes of the first and the last of its instructions that use it.
  std::map<int, std::pair<size_t, size_t>> live_ranges(int program) const;
  const ir::Op* site(std::string_view op_name, const ir::PyLoc& at);
  /// An Error located at the call being checked: "file:line: nki.isa.<op>: <message>".
  [[noreturn]] void fail(const std::string& message) const;
  Storage& storage(const View& v);
  const Storage& storage(const View& v) const;
  /// The view `args[key]`, checked in bounds of its tensor; std::nullopt when absent or None and not
  /// `required`.
  std::optional<View> view(const Args& args, std::string_view key, bool required = true);
  /// A dynamic view's rules (View::vector_offset, scalar_offset): the ops that take one, the index tiles'
  /// memory, dtype and shape; fail(...) naming `key`.
  void check_dynamic(const View& v, std::string_view key);
  double number(const Args& args, std::string_view key, std::optional<double> fallback = std::nullopt);
  std::string name_arg(const Args& args, std::string_view key,
                       std::optional<std::string> fallback = std::nullopt);
  /// The tensor's memory, or fail(...) naming `key` when not one of `allowed`.
  Space space(const View& v, std::string_view key, std::initializer_list<Space> allowed);
  /// Partitions (dim 0) and elements per partition (the product of the free dims) of an on-chip view;
  /// fails when the partition dim exceeds the target's.
  std::pair<int64_t, int64_t> tile(const View& v, std::string_view key);
};

/// The running program: reads and writes views, telling the observers.
class Exec {
 public:
  Exec(Kernel::Impl& k, exec::ProgramId pid, const std::vector<exec::Observer*>& observers,
       const std::vector<unsigned>& kinds, const std::vector<void*>& states)
      : k_(k), pid_(pid), observers_(observers), kinds_(kinds), states_(states) {}
  const ir::Op* site = nullptr;  // the instruction running
  /// The next instruction, at `s`: its accesses are parts 0, 1, ... of one execution (AccessEvent::part).
  void begin(const ir::Op* s) {
    site = s;
    part_ = 0;
    oob_skip = false;
  }
  exec::ProgramId pid() const { return pid_; }

  /// The elements of `v` in row-major order as float32 (integers converted), after a load event.
  std::vector<float> read(const View& v, std::vector<uint8_t>* valid = nullptr);
  /// Raw element bits (zero-extended to 64), after a load event.
  /// `valid` (when given): per element, whether it was read (a dynamic view's elements outside its tensor
  /// are not: they read as 0).
  std::vector<uint64_t> read_bits(const View& v, std::vector<uint8_t>* valid = nullptr);
  /// Writes `values` (row-major over `v`) converted to the tensor's dtype (round to nearest even;
  /// integers saturate, NaN -> 0), then a store event.
  /// `keep` (when given): only the elements it marks are written (those a dynamic source read).
  void write(const View& v, std::span<const float> values, const std::vector<uint8_t>* keep = nullptr);
  void write_bits(const View& v, std::span<const uint64_t> bits, const std::vector<uint8_t>* keep = nullptr);
  /// dma_copy's oob_mode=skip for the running instruction: elements a dynamic view moves outside its tensor
  /// are dropped without a finding (else they are out-of-bounds accesses). Reset by begin().
  bool oob_skip = false;
  Storage& storage(const View& v) { return k_.storage(v); }
  const DType& dtype(const View& v) { return k_.storage(v).info.dtype; }
  /// The Scalar engine's per-partition float32 accumulator (activation's reduce_cmd), per program.
  std::vector<float>& scalar_accumulator() { return scalar_acc_; }
  /// The Vector engine's per-partition float32 accumulator, per program, shared by exponential,
  /// range_select, select_reduce and tensor_scalar_reduce (their reduce_cmd).
  std::vector<float>& vector_accumulator() { return vector_acc_; }
  /// An element's bits as float32 (integers converted), and float32 as an element's bits (round to
  /// nearest even; tfloat32 keeps 10 mantissa bits; integers round, saturate, NaN -> 0).
  static float to_float(const DType& t, uint64_t bits);
  static uint64_t from_float(const DType& t, float f);

 private:
  /// The addresses of `v`'s elements, with `in[i]` whether element i is inside its tensor (always, for a
  /// static view: checked when appended); a dynamic view's index tiles are read (load events) first.
  struct Lanes {
    std::vector<uint64_t> addrs;
    std::vector<uint8_t> in;
    int64_t outside = 0;
  };
  Lanes lanes(const View& v);
  /// An access event for the lanes `mask` lets through (null: all), `bad` of them outside their tensor.
  void event(exec::AccessKind kind, const View& v, const std::vector<uint64_t>& addrs,
             const std::vector<uint8_t>* mask = nullptr, int64_t bad = 0);
  Kernel::Impl& k_;
  exec::ProgramId pid_;
  const std::vector<exec::Observer*>& observers_;
  const std::vector<unsigned>& kinds_;
  const std::vector<void*>& states_;
  int part_ = 0;
  std::vector<float> scalar_acc_ = std::vector<float>(128, 0.0f);
  std::vector<float> vector_acc_ = std::vector<float>(128, 0.0f);
};

/// Row-major element indexes of `v` (offset + sum of index * stride), in elements of its tensor.
std::vector<int64_t> element_indexes(const View& v);

}  // namespace tilescope::nki
