// The profiler (see include/tilescope/analysis/profile.h for what it counts and the sector model).
#include "tilescope/analysis/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <map>
#include <mutex>
#include <unordered_map>

#include "site.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/elem.h"
#include "tilescope/ir/ops.h"

namespace tilescope::analysis {

// ---------------------------------------------------------------------------------------------
// The GPU table. Peaks are dense (a sheet's "with sparsity" tensor figures are halved), in FLOP/s
// (OP/s for int8), bandwidth in bytes/s (1 TB/s = 1e12 B/s), for the SXM / OAM part where a sheet has
// several. Each row names the document its numbers come from.

namespace {
constexpr double T = 1e12;
constexpr GpuSpec kGpus[] = {
    {"H100", "H100 SXM5 80GB",
     "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com, H100 SXM column; tensor figures halved from the "
     "sparsity ones)",
     3.35 * T, 34 * T, 67 * T, 67 * T, 494.5 * T, 989.5 * T, 989.5 * T, 1979 * T, 1979 * T},
    {"H200", "H200 SXM 141GB",
     "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com, H200 SXM column; tensor figures halved from the "
     "sparsity ones)",
     4.8 * T, 34 * T, 67 * T, 67 * T, 494.5 * T, 989.5 * T, 989.5 * T, 1979 * T, 1979 * T},
    {"A100", "A100 SXM4 80GB",
     "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com, A100 80GB SXM column; dense figures; no FP8)",
     2.039 * T, 9.7 * T, 19.5 * T, 19.5 * T, 156 * T, 312 * T, 312 * T, 0, 624 * T},
    {"B200", "B200 (HGX B200, per GPU)",
     "NVIDIA HGX B200 specifications (nvidia.com/data-center/hgx: 8-GPU totals divided by 8; tensor "
     "figures halved from the sparsity ones)",
     8 * T, 37 * T, 37 * T, 75 * T, 1125 * T, 2250 * T, 2250 * T, 4500 * T, 4500 * T},
    {"MI300X", "AMD Instinct MI300X (OAM)",
     "AMD Instinct MI300X accelerator data sheet (amd.com; dense figures; FP64 vector / matrix)", 5.3 * T,
     81.7 * T, 163.4 * T, 163.4 * T, 653.7 * T, 1307.4 * T, 1307.4 * T, 2614.9 * T, 2614.9 * T},
    {"L4", "L4 24GB",
     "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com; tensor figures halved from the sparsity ones; FP64 "
     "is not on the sheet: 1/64 of FP32, Ada's rate in the CUDA C++ Programming Guide's throughput table)",
     0.3 * T, 30.3 * T / 64, 0, 30.3 * T, 60 * T, 121 * T, 121 * T, 242.5 * T, 242.5 * T},
};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}
}  // namespace

std::span<const GpuSpec> gpus() { return kGpus; }

const GpuSpec& find_gpu(std::string_view name) {
  std::string names;
  for (const GpuSpec& g : kGpus) {
    if (iequal(g.name, name)) return g;
    names += (names.empty() ? "" : ", ") + std::string(g.name);
  }
  throw Error(fmt::format("no GPU named '{}' for the roofline (known: {})", name, names));
}

// ---------------------------------------------------------------------------------------------

namespace {

using exec::AccessKind;
using ir::Op;
using ir::Opcode;

constexpr int kSectorShift = 5;  // 32-byte sectors
constexpr int kWarp = 32;

// FLOP precision classes (report keys), in report order.
enum Prec : uint8_t {
  p_fp64,
  p_fp32,
  p_tf32,
  p_fp16,
  p_bf16,
  p_fp8,
  p_int8,
  p_fp64_vector,
  p_fp32_vector,
  kPrecs
};
constexpr const char* kPrecName[kPrecs] = {"fp64", "fp32", "tf32",        "fp16",       "bf16",
                                           "fp8",  "int8", "fp64_vector", "fp32_vector"};

double peak(const GpuSpec& g, int p) {
  switch (p) {
    case p_fp64: return g.fp64_tensor > 0 ? g.fp64_tensor : g.fp64;
    case p_fp32: return g.fp32;
    case p_tf32: return g.tf32;
    case p_fp16: return g.fp16;
    case p_bf16: return g.bf16;
    case p_fp8: return g.fp8;
    case p_int8: return g.int8;
    case p_fp64_vector: return g.fp64;
    default: return g.fp32;
  }
}

// Counters of one memory kind (per op or per launch). Plain integers: per-program copies are summed
// under a lock at program end.
struct Mem {
  int64_t executions = 0, lanes = 0, active_lanes = 0, bytes = 0, bytes_all = 0, sectors = 0, requests = 0;
  void add(const Mem& o) {
    executions += o.executions;
    lanes += o.lanes;
    active_lanes += o.active_lanes;
    bytes += o.bytes;
    bytes_all += o.bytes_all;
    sectors += o.sectors;
    requests += o.requests;
  }
};

// What is known of an op before the launch, and its counters for one program or the launch.
struct OpInfo {
  const Op* op = nullptr;
  // probe: an op whose executions count the iterations of an scf.while (never a report row).
  enum Class : uint8_t { memory, dot, arith, loop, probe } cls = arith;
  int levels = 1;              // memory: candidate V = 1 .. 2^(levels-1) (the most per thread)
  int last_dim = 1;            // memory: the tile's last dimension
  std::vector<int64_t> shape;  // memory: the tile's shape
  int64_t numel = 1;           // memory: the tile's elements
  int replicas = 1;            // memory: warps loading the same copy (set at the report)
  int vec = 1;                 // memory: the V the layout picks (set at the report)
  bool vectorized = false;     // memory: whether the report counts vector instructions
  int64_t flops_per_exec = 0;  // dot: 2*M*N*K*passes; arith: vector FLOPs per execution
  int prec = p_fp32_vector;    // which FLOP class flops_per_exec counts in
  int64_t elements = 0;        // arith: result elements per execution
  // loop (scf.while): the op counting its iterations (an op of its before region: runs once more per
  // loop than the body; else of its after region: once per iteration); null: not countable.
  const Op* while_probe = nullptr;
  bool probe_in_before = false;
};

constexpr int kLevels = 5;  // V = 1, 2, 4, 8, 16

struct Counts {
  Mem mem;  // sectors and requests filled in at the report, from the level the layout picks
  int64_t executions = 0;
  int64_t trips = 0;  // loops: iterations, summed over executions
  // Memory ops, per level l (V = 2^l): sectors and requests as vector instructions (groups of 32V lanes)
  // and as V scalar instructions per group; chunks of V lanes that are not V consecutive aligned addresses.
  int64_t vec_sectors[kLevels] = {}, vec_requests[kLevels] = {};
  int64_t sc_sectors[kLevels] = {}, sc_requests[kLevels] = {};
  int64_t misaligned[kLevels] = {};
  int mask_align = 64;  // the least power of two dividing a flattened index where the mask changes (64: none)
  void add(const Counts& o) {
    mem.add(o.mem);
    executions += o.executions;
    trips += o.trips;
    for (int l = 0; l < kLevels; ++l) {
      vec_sectors[l] += o.vec_sectors[l];
      vec_requests[l] += o.vec_requests[l];
      sc_sectors[l] += o.sc_sectors[l];
      sc_requests[l] += o.sc_requests[l];
      misaligned[l] += o.misaligned[l];
    }
    mask_align = std::min(mask_align, o.mask_align);
  }
};

struct PState {
  std::vector<Counts> ops;        // per OpInfo
  std::vector<uint64_t> scratch;  // sector ids of one instruction
  std::vector<uint64_t> lo, hi;   // per lane of an access: addresses, then lo: sector ids, hi: addresses
  std::vector<int64_t> run;       // per lane: active lanes at consecutive addresses from it
  std::vector<uint64_t> t_addrs;  // a column-major access's addresses and mask in its layout's order
  std::vector<uint8_t> t_mask;
};

// One bit per byte of a buffer, set by any program (atomic OR).
struct Bitmap {
  explicit Bitmap(uint64_t bytes) : words((bytes + 63) / 64), bits(new std::atomic<uint64_t>[words]) {
    for (uint64_t i = 0; i < words; ++i) bits[i].store(0, std::memory_order_relaxed);
  }
  void set(uint64_t lo, uint64_t hi) {  // bytes [lo, hi)
    while (lo < hi) {
      const uint64_t w = lo / 64, b = lo % 64;
      const uint64_t take = std::min<uint64_t>(64 - b, hi - lo);
      const uint64_t m = (take == 64 ? ~uint64_t{0} : ((uint64_t{1} << take) - 1)) << b;
      if ((bits[w].load(std::memory_order_relaxed) & m) != m) bits[w].fetch_or(m, std::memory_order_relaxed);
      lo += take;
    }
  }
  // (distinct bytes, distinct 32-byte sectors, distinct 64-byte blocks)
  std::array<int64_t, 3> count() const {
    int64_t bytes = 0, sectors = 0, blocks = 0;
    for (uint64_t i = 0; i < words; ++i) {
      const uint64_t v = bits[i].load(std::memory_order_relaxed);
      bytes += std::popcount(v);
      sectors += (v & 0xffffffffu ? 1 : 0) + (v >> 32 ? 1 : 0);
      blocks += v != 0;
    }
    return {bytes, sectors, blocks};
  }
  uint64_t words;
  std::unique_ptr<std::atomic<uint64_t>[]> bits;
};

int kind_index(AccessKind k) { return k == AccessKind::load ? 0 : k == AccessKind::store ? 1 : 2; }
constexpr const char* kKindName[3] = {"load", "store", "atomic"};

}  // namespace

struct Profile::Impl {
  const ir::Module& m;
  ProfileOptions opts;
  const GpuSpec* gpu;
  SiteMaker sites;
  std::vector<OpInfo> ops;
  std::unordered_map<const Op*, uint32_t> op_index;

  // Per launch.
  const exec::LaunchContext* ctx = nullptr;
  std::array<int64_t, 3> grid{1, 1, 1};
  int64_t programs = 0;
  std::mutex mu;  // totals, free states, bitmaps
  std::vector<Counts> totals;
  std::vector<std::unique_ptr<PState>> states;
  std::vector<PState*> free_states;
  // Per buffer id and kind (0: read by loads and atomics, 1: written by stores and atomics).
  std::vector<std::array<std::atomic<Bitmap*>, 2>> touched;
  std::vector<std::unique_ptr<Bitmap>> bitmaps;
  nlohmann::json last = nullptr;

  Impl(const ir::Module& mod, const ProfileOptions& o) : m(mod), opts(o), gpu(&find_gpu(o.gpu)), sites(mod) {
    auto walk = [&](auto& self, const ir::Region& r) -> void {
      for (auto& b : r.blocks)
        for (auto& op : b->ops) {
          classify(*op);
          // A combine region's ops are counted by their reduce / scan (classify), not one by one.
          if (op->code() == Opcode::tt_reduce || op->code() == Opcode::tt_scan) continue;
          for (auto& sub : op->regions) self(self, *sub);
        }
    };
    for (auto& f : m.functions) walk(walk, f->body);
    // The probes of scf.while loops: watched for their executions (an op classified otherwise counts
    // them already).
    std::vector<const Op*> probes;
    for (const OpInfo& oi : ops)
      if (oi.while_probe) probes.push_back(oi.while_probe);
    for (const Op* p : probes)
      if (!op_index.count(p)) {
        OpInfo oi;
        oi.op = p;
        oi.cls = OpInfo::probe;
        add(std::move(oi));
      }
  }

  /// Vector FLOPs of one execution of an arith / math op: one per float result element (two for an
  /// FMA); conversions, comparisons, selects and integer ops none.
  static int64_t arith_flops(const Op& op) {
    const std::string_view name = op.name;
    if (op.results.empty()) return 0;
    const ir::Type* r = op.results[0]->type;
    const ir::Elem e = r->elem;
    const bool is_float =
        e != ir::Elem::ptr && e != ir::Elem::none && e != ir::Elem::tensordesc && ir::elem_info(e).is_float;
    const bool cvt = name.starts_with("arith.ext") || name.starts_with("arith.trunc") ||
                     name.find("tofp") != std::string_view::npos ||
                     name.find("fpto") != std::string_view::npos || name == "arith.bitcast" ||
                     name == "arith.select";
    if (!is_float || cvt) return 0;
    return r->numel() * (name == "math.fma" ? 2 : 1);
  }

  static bool is_arith(const Op& op) {
    const std::string_view name = op.name;
    return (name.starts_with("arith.") && name != "arith.constant") || name.starts_with("math.");
  }

  void add(OpInfo&& oi) {
    op_index.emplace(oi.op, static_cast<uint32_t>(ops.size()));
    ops.push_back(std::move(oi));
  }

  void classify(const Op& op) {
    OpInfo oi;
    oi.op = &op;
    const unsigned fx = op.def->effects;
    if (fx & (ir::effect::read | ir::effect::write)) {
      oi.cls = OpInfo::memory;
      // The tile whose lanes the op accesses: the loaded result, else the stored value / pointer operand.
      const ir::Type* t = !op.results.empty()      ? op.results[0]->type
                          : op.operands.size() > 1 ? op.operands[1]->type
                          : !op.operands.empty()   ? op.operands[0]->type
                                                   : nullptr;
      int64_t numel = t ? t->numel() : 1;
      int eb = 4;
      if (t && t->elem != ir::Elem::ptr && t->elem != ir::Elem::tensordesc && t->elem != ir::Elem::none)
        eb = std::max(1, ir::elem_info(t->elem).bytes);
      else if (t && t->pointee && !t->pointee->is_tensor && t->pointee->elem != ir::Elem::none)
        eb = std::max(1, ir::elem_info(t->pointee->elem).bytes);
      int64_t v = std::min<int64_t>(16 / eb, numel / (int64_t{kWarp} * opts.num_warps));
      oi.levels = std::countr_zero(std::bit_floor(static_cast<uint64_t>(std::max<int64_t>(1, v)))) + 1;
      if (t && t->is_tensor) oi.shape = t->shape;
      oi.numel = numel;
      oi.last_dim = t && t->is_tensor && !t->shape.empty() ? static_cast<int>(t->shape.back()) : 1;
      add(std::move(oi));
      return;
    }
    if (op.code() == Opcode::tt_dot && op.operands.size() >= 2) {
      const ir::Type* a = op.operands[0]->type;
      const ir::Type* b = op.operands[1]->type;
      const ir::Type* d = op.results[0]->type;
      if (a->rank() < 2 || b->rank() < 2) return;
      const int64_t k = a->shape.back();
      oi.cls = OpInfo::dot;
      int passes = 1;
      switch (a->elem) {
        case ir::Elem::f64: oi.prec = p_fp64; break;
        case ir::Elem::f32: {
          const ir::Attr* p = op.attr("inputPrecision");
          std::string s = !p ? "ieee" : p->kind == ir::Attr::Kind::Int ? std::to_string(p->i) : p->s;
          if (s == "tf32" || s == "0")
            oi.prec = p_tf32;
          else if (s == "tf32x3" || s == "1")
            oi.prec = p_tf32, passes = 3;
          else if (s == "bf16x3" || s == "3")
            oi.prec = p_bf16, passes = 3;
          else if (s == "bf16x6" || s == "4")
            oi.prec = p_bf16, passes = 6;
          else
            oi.prec = p_fp32;
          break;
        }
        case ir::Elem::f16: oi.prec = p_fp16; break;
        case ir::Elem::bf16: oi.prec = p_bf16; break;
        case ir::Elem::i8: oi.prec = p_int8; break;
        default: oi.prec = ir::elem_info(a->elem).bits == 8 ? p_fp8 : p_fp32; break;
      }
      oi.flops_per_exec = 2 * d->numel() * k * passes;  // d: [B,]M,N
      add(std::move(oi));
      return;
    }
    if (op.code() == Opcode::scf_for) {
      oi.cls = OpInfo::loop;
      add(std::move(oi));
      return;
    }
    if (op.code() == Opcode::scf_while) {
      oi.cls = OpInfo::loop;
      const ir::WhileProbe probe = ir::while_probe(op);
      oi.while_probe = probe.op;
      oi.probe_in_before = probe.in_before;
      add(std::move(oi));
      return;
    }
    if ((op.code() == Opcode::tt_reduce || op.code() == Opcode::tt_scan) && !op.operands.empty() &&
        op.operands[0]->type->is_tensor && !op.regions.empty()) {
      // The combine region runs once per element folded in: numel - numel / n along the axis, per
      // execution (a scan's sequential count; a GPU's parallel scan may combine more). Its FLOPs are
      // those of its float arith ops on scalars.
      const ir::Type* t = op.operands[0]->type;
      const ir::Attr* ax = op.attr("axis");
      const int64_t axis = ax ? ax->i : 0;
      if (axis < 0 || axis >= static_cast<int64_t>(t->shape.size()) || t->shape[axis] <= 0) return;
      int64_t per_combine = 0;
      for (const auto& b : op.regions[0]->blocks)
        for (const auto& o : b->ops)
          if (is_arith(*o)) per_combine += arith_flops(*o);
      oi.cls = OpInfo::arith;
      oi.elements = t->numel();
      oi.prec = t->elem == ir::Elem::f64 ? p_fp64_vector : p_fp32_vector;
      oi.flops_per_exec = (t->numel() - t->numel() / t->shape[axis]) * per_combine;
      add(std::move(oi));
      return;
    }
    if (!is_arith(op) || op.results.empty()) return;
    oi.cls = OpInfo::arith;
    const ir::Elem e = op.results[0]->type->elem;
    oi.elements = op.results[0]->type->numel();
    oi.flops_per_exec = arith_flops(op);
    if (oi.flops_per_exec) oi.prec = e == ir::Elem::f64 ? p_fp64_vector : p_fp32_vector;
    add(std::move(oi));
  }

  Bitmap* bitmap(int buffer, int kind) {
    auto& slot = touched[buffer][kind];
    Bitmap* b = slot.load(std::memory_order_acquire);
    if (b) return b;
    std::lock_guard<std::mutex> g(mu);
    b = slot.load(std::memory_order_relaxed);
    if (!b) {
      bitmaps.push_back(std::make_unique<Bitmap>(ctx->memory->buffer(buffer).bytes));
      b = bitmaps.back().get();
      slot.store(b, std::memory_order_release);
    }
    return b;
  }

  // Distinct sector ids in `s` (sorted in place when not already ordered).
  static int64_t distinct(std::vector<uint64_t>& s) {
    if (s.empty()) return 0;
    if (!std::is_sorted(s.begin(), s.end())) std::sort(s.begin(), s.end());
    int64_t n = 1;
    for (size_t i = 1; i < s.size(); ++i) n += s[i] != s[i - 1];
    return n;
  }

  void access(const exec::AccessEvent& e, PState& st) {
    auto it = op_index.find(e.op);
    if (it == op_index.end()) return;
    Counts& c = st.ops[it->second];
    const int64_t eb = e.elem_bytes;
    const int64_t n = e.lanes;
    int64_t active = 0;
    for (int64_t i = 0; i < n; ++i) active += e.mask[i] != 0;
    c.executions++;
    c.mem.executions++;
    c.mem.lanes += n;
    c.mem.active_lanes += active;
    c.mem.bytes += active * eb;
    c.mem.bytes_all += n * eb;
    if (active == 0) return;
    const OpInfo& oi = ops[it->second];
    if (oi.shape.size() == 2 && oi.shape[0] > 1 && oi.shape[1] > 1 && oi.shape[0] * oi.shape[1] == n &&
        column_major(e, oi.shape[1], eb)) {
      // Triton's layout follows the pointer's contiguous dimension: threads go down the columns of a
      // tile whose consecutive addresses run along dim 0 (a transposed operand). Count the lanes in
      // that order.
      const int64_t rows = oi.shape[0], cols = oi.shape[1];
      st.t_addrs.resize(static_cast<size_t>(n));
      st.t_mask.resize(static_cast<size_t>(n));
      for (int64_t cc = 0, k = 0; cc < cols; ++cc)
        for (int64_t r = 0; r < rows; ++r, ++k) {
          st.t_addrs[k] = e.addrs[r * cols + cc];
          st.t_mask[k] = e.mask[r * cols + cc];
        }
      exec::AccessEvent t = e;
      t.addrs = st.t_addrs.data();
      t.mask = st.t_mask.data();
      count_access(t, oi, c, st, n, eb, active);
      return;
    }
    count_access(e, oi, c, st, n, eb, active);
  }

  // Whether the first active lane's address continues one row down (dim 0) and not one column right.
  static bool column_major(const exec::AccessEvent& e, int64_t cols, int64_t eb) {
    for (int64_t i = 0; i + cols < e.lanes; ++i) {
      if (!e.mask[i]) continue;
      const bool down = e.mask[i + cols] && e.addrs[i + cols] == e.addrs[i] + static_cast<uint64_t>(eb);
      const bool right =
          (i + 1) % cols != 0 && e.mask[i + 1] && e.addrs[i + 1] == e.addrs[i] + static_cast<uint64_t>(eb);
      return down && !right;
    }
    return false;
  }

  void count_access(const exec::AccessEvent& e, const OpInfo& oi, Counts& c, PState& st, int64_t n,
                    int64_t eb, int64_t active) {
    // Addresses relative to their buffer's first byte (a GPU allocator aligns it; the CPU's need not be).
    auto offset_of = [&](uint64_t a) -> uint64_t {
      const int r = e.memory->region(a);
      return r < 0 ? 0
                   : (static_cast<uint64_t>(r + 1) << 42) + (uint64_t{1} << 40) - e.memory->buffer(r).vbase;
    };
    if (active == n && contiguous(e.addrs, n, eb)) {
      const uint64_t a0 = e.addrs[0] + offset_of(e.addrs[0]);
      if (a0 % static_cast<uint64_t>(eb) == 0) {
        contiguous_counts(oi, c, a0, n, eb);
        const exec::Where w = e.memory->where(e.addrs[0], static_cast<int>(eb));
        if (w.in_bounds && w.buffer->id >= 0 && static_cast<size_t>(w.buffer->id) < touched.size() &&
            static_cast<uint64_t>(w.offset + n * eb) <= w.buffer->bytes) {
          mark_range(e.kind, w.buffer->id, static_cast<uint64_t>(w.offset),
                     static_cast<uint64_t>(w.offset + n * eb));
          return;
        }
        mark_touched(e, n, eb);
        return;
      }
    }
    st.lo.resize(static_cast<size_t>(n));
    st.hi.resize(static_cast<size_t>(n));
    {
      int last_region = -2;
      uint64_t offset = 0;  // added to an address of last_region
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t a = e.addrs[i];
        const int r = e.memory->region(a);
        if (r != last_region) {
          last_region = r;
          offset = offset_of(a);
        }
        st.lo[i] = a + offset;  // the byte address for now
      }
    }
    general_counts(e, oi, c, st, n, eb);
    mark_touched(e, n, eb);
  }

  void mark_range(exec::AccessKind kind, int buffer, uint64_t lo, uint64_t hi) {
    const int k = kind_index(kind);
    if (k != 1) bitmap(buffer, 0)->set(lo, hi);
    if (k != 0) bitmap(buffer, 1)->set(lo, hi);
  }

  static bool contiguous(const uint64_t* a, int64_t n, int64_t eb) {
    for (int64_t i = 1; i < n; ++i)
      if (a[i] != a[0] + static_cast<uint64_t>(i * eb)) return false;
    return true;
  }

  // Sectors of an instruction whose k lanes are at b, b + stride, ... (bytes), eb bytes each, b a multiple
  // of eb (so an element crosses no 32-byte boundary when eb <= 32).
  static int64_t progression_sectors(uint64_t b, int64_t k, int64_t stride, int64_t eb) {
    if (stride <= 32)
      return static_cast<int64_t>(((b + (k - 1) * stride + eb - 1) >> kSectorShift) - (b >> kSectorShift)) +
             1;
    int64_t s = 0;
    for (int64_t i = 0; i < k; ++i) {
      const uint64_t a = b + static_cast<uint64_t>(i * stride);
      s += static_cast<int64_t>(((a + eb - 1) >> kSectorShift) - (a >> kSectorShift)) + 1;
    }
    return s;
  }

  // The counts of an access whose lanes are all active at consecutive addresses from `a0` (relative to
  // the buffer), computed per instruction rather than per lane (the usual case; the same numbers as
  // general_counts).
  void contiguous_counts(const OpInfo& oi, Counts& c, uint64_t a0, int64_t n, int64_t eb) {
    for (int l = 0; l < oi.levels; ++l) {
      const int64_t V = int64_t{1} << l, group = int64_t{kWarp} * V;
      if (l > 0) {
        // Chunk t is V aligned consecutive elements; only lane 0 starts a run.
        int64_t bad = 0;
        if (a0 % static_cast<uint64_t>(V * eb) != 0) {
          bad = (n + V - 1) / V;
        } else {
          bad += a0 % static_cast<uint64_t>(16 * eb) != 0;
          bad += n % V != 0;  // a last chunk cut short
          bad = std::min(bad, (n + V - 1) / V);
        }
        c.misaligned[l] += bad;
      }
      for (int64_t g0 = 0; g0 < n; g0 += group) {
        const int64_t g1 = std::min(n, g0 + group);
        const uint64_t b = a0 + static_cast<uint64_t>(g0 * eb);
        c.vec_requests[l]++;
        c.vec_sectors[l] += progression_sectors(b, g1 - g0, eb, eb);
        if (l == 0) continue;
        for (int64_t j = 0; j < V && g0 + j < g1; ++j) {
          const int64_t k = (g1 - g0 - j + V - 1) / V;
          c.sc_requests[l]++;
          c.sc_sectors[l] += progression_sectors(b + static_cast<uint64_t>(j * eb), k, V * eb, eb);
        }
      }
    }
  }

  void general_counts(const exec::AccessEvent& e, const OpInfo& oi, Counts& c, PState& st, int64_t n,
                      int64_t eb) {
    for (int64_t i = 1; i < n; ++i)
      if (e.mask[i] != e.mask[i - 1])
        c.mask_align = std::min(c.mask_align, 1 << std::min(6, std::countr_zero(static_cast<uint64_t>(i))));
    // run[i]: how many active lanes from i on lie at consecutive addresses (0 for an inactive lane), so
    // that a chunk or an instruction of contiguous active lanes is counted without visiting its lanes.
    st.run.resize(static_cast<size_t>(n));
    for (int64_t i = n - 1; i >= 0; --i)
      st.run[i] = !e.mask[i] ? 0
                  : i + 1 < n && e.mask[i + 1] && st.lo[i + 1] == st.lo[i] + static_cast<uint64_t>(eb)
                      ? st.run[i + 1] + 1
                      : 1;
    bool aligned[kLevels] = {true, true, true, true, true};  // this event's chunks at level l
    for (int l = 1; l < oi.levels; ++l) {  // chunks of V lanes: V consecutive elements, V-aligned
      const int64_t V = int64_t{1} << l;
      int64_t bad = 0;
      for (int64_t t = 0; t < n; t += V) {
        // A run of consecutive addresses must start at a multiple of 16 elements from the buffer's
        // start: Triton proves alignment only from the 16-divisibility of pointers and integer
        // arguments (a row stride of 100 elements gives it no vector width, though every row start of a
        // float tensor is then 16-byte aligned).
        const bool run_start = t == 0 || st.lo[t] != st.lo[t - 1] + static_cast<uint64_t>(eb);
        bool any = false, ok = t + V <= n && st.lo[t] % static_cast<uint64_t>(V * eb) == 0 &&
                               (!run_start || st.lo[t] % static_cast<uint64_t>(16 * eb) == 0);
        if (st.run[t] >= V) {
          any = true;  // all V active and consecutive
        } else {
          for (int64_t j = 0; j < V && t + j < n; ++j) {
            any |= e.mask[t + j] != 0;
            if (j > 0 && st.lo[t + j] != st.lo[t] + static_cast<uint64_t>(j * eb)) ok = false;
          }
        }
        bad += any && !ok;
      }
      c.misaligned[l] += bad;
      aligned[l] = bad == 0;
    }
    std::vector<uint64_t>& bytes = st.hi;  // the byte addresses, kept for the contiguous instructions
    bytes.swap(st.lo);
    st.lo.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) st.lo[i] = bytes[i] >> kSectorShift;
    // One instruction: its lanes from, from + step, ... < to. Distinct sectors by one pass while the
    // sector ids ascend (the usual case), else sorted.
    // One instruction: its lanes from, from + step, ... < to. Distinct sectors run by run (the lanes of a
    // run of consecutive addresses form an arithmetic progression) while the sector ids ascend (the
    // usual case), else the instruction's sector ids sorted.
    auto instruction = [&](int64_t from, int64_t to, int64_t step, int64_t& sectors, int64_t& requests) {
      int64_t count = 0;
      uint64_t last = 0;
      bool any = false;
      for (int64_t i = from; i < to;) {
        if (!e.mask[i]) {
          i += step;
          continue;
        }
        const uint64_t b = bytes[i];
        const int64_t k =
            b % static_cast<uint64_t>(eb) == 0 ? (std::min(to, i + st.run[i]) - i + step - 1) / step : 1;
        const uint64_t lo = st.lo[i];
        if (any && lo < last) {  // not ascending
          st.scratch.clear();
          for (int64_t j = from; j < to; j += step)
            if (e.mask[j]) {
              const uint64_t h = (bytes[j] + eb - 1) >> kSectorShift;
              st.scratch.push_back(st.lo[j]);
              if (h != st.lo[j]) st.scratch.push_back(h);
            }
          requests++;
          sectors += distinct(st.scratch);
          return;
        }
        count += progression_sectors(b, k, step * eb, eb) - (any && lo == last ? 1 : 0);
        last = (b + static_cast<uint64_t>((k - 1) * step * eb + eb - 1)) >> kSectorShift;
        any = true;
        i += k * step;
      }
      if (any) {
        requests++;
        sectors += count;
      }
    };
    for (int l = 0; l < oi.levels; ++l) {
      const int64_t V = int64_t{1} << l, group = int64_t{kWarp} * V;
      for (int64_t g0 = 0; g0 < n; g0 += group) {
        const int64_t g1 = std::min(n, g0 + group);
        // Vector counts of a level this event is not aligned at are never reported (pick_layouts).
        if (aligned[l]) instruction(g0, g1, 1, c.vec_sectors[l], c.vec_requests[l]);
        if (l == 0) continue;
        for (int64_t j = 0; j < V; ++j) instruction(g0 + j, g1, V, c.sc_sectors[l], c.sc_requests[l]);
      }
    }
  }

  // Distinct bytes across programs: runs of consecutive in-bounds lanes of one buffer at once.
  void mark_touched(const exec::AccessEvent& e, int64_t n, int64_t eb) {
    int64_t i = 0;
    while (i < n) {
      if (!e.mask[i]) {
        ++i;
        continue;
      }
      const exec::Where w = e.memory->where(e.addrs[i], static_cast<uint64_t>(eb));
      if (!w.in_bounds || w.buffer->id < 0 || static_cast<size_t>(w.buffer->id) >= touched.size()) {
        ++i;
        continue;
      }
      uint64_t lo = static_cast<uint64_t>(w.offset), hi = lo + eb;
      int64_t j = i + 1;
      while (j < n && e.mask[j] && e.addrs[j] == e.addrs[j - 1] + static_cast<uint64_t>(eb) &&
             hi + eb <= w.buffer->bytes) {
        hi += eb;
        ++j;
      }
      mark_range(e.kind, w.buffer->id, lo, hi);
      i = j;
    }
  }

  void op_begin(const exec::OpEvent& e, PState& st) {
    const uint32_t idx = static_cast<uint32_t>(static_cast<const OpInfo*>(e.tag) - ops.data());
    Counts& c = st.ops[idx];
    c.executions++;
    if (ops[idx].cls == OpInfo::loop && e.op->code() == Opcode::scf_for && e.op->operands.size() >= 3) {
      // scf.for %i = %lb to %ub step %s: integer (or index) scalars.
      auto scalar = [&](size_t i) -> int64_t {
        exec::ValueRef v = e.operand(i);
        switch (v.elem()) {
          case ir::Elem::i64: return *v.as<int64_t>();
          case ir::Elem::i32: return *v.as<int32_t>();
          case ir::Elem::i16: return *v.as<int16_t>();
          case ir::Elem::i8: return *v.as<int8_t>();
          default: return 0;
        }
      };
      const int64_t lb = scalar(0), ub = scalar(1), step = scalar(2);
      if (step > 0 && ub > lb) c.trips += (ub - lb + step - 1) / step;
    }
  }

  nlohmann::json build(const LaunchInfo& info);

  // The sector model's layout per memory op, as Triton's coalescing pass picks it (profile.h): the
  // alignment an op shows (the largest V whose chunks were all V consecutive aligned elements, over the
  // launch) stands for the one Triton proves; the layout takes the largest among memory ops of the same
  // tile shape (the pass's slice of related accesses), within the op's own limit, and a store no more
  // than its own alignment. Vector instructions when the op's alignment covers it and its mask changes
  // only at multiples of min(16, last dimension) (the constancy Triton proves for bounds divisible by
  // 16), else V scalar instructions.
  void pick_layouts() {
    std::vector<int> align(ops.size(), 0);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].cls != OpInfo::memory || !totals[i].executions) continue;
      int a = 0;
      while (a + 1 < ops[i].levels && totals[i].misaligned[a + 1] == 0) ++a;
      align[i] = a;
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      OpInfo& oi = ops[i];
      Counts& c = totals[i];
      if (oi.cls != OpInfo::memory || !c.executions) continue;
      int level = align[i];
      for (size_t j = 0; j < ops.size(); ++j)
        if (ops[j].cls == OpInfo::memory && totals[j].executions && ops[j].shape == oi.shape)
          level = std::max(level, align[j]);
      level = std::min(level, oi.levels - 1);
      const bool store = oi.op->def->effects & ir::effect::write;
      if (store) level = std::min(level, align[i]);
      const bool mask_ok = c.mask_align >= std::min(16, std::max(1, oi.last_dim));
      oi.vec = 1 << level;
      oi.vectorized = level > 0 && align[i] >= level && mask_ok;
      const bool vec = level == 0 || oi.vectorized;
      // A tile of fewer than 32 * num_warps elements is replicated across warps: each warp covering a
      // copy loads it again (stores and atomics are issued once, by one copy).
      const int64_t numel = std::max<int64_t>(1, static_cast<int64_t>(oi.numel));
      const int64_t covering = std::min<int64_t>(opts.num_warps, (numel + kWarp - 1) / kWarp);
      oi.replicas = store || (oi.op->def->effects & ir::effect::atomic) ? 1 : opts.num_warps / covering;
      c.mem.sectors = (vec ? c.vec_sectors[level] : c.sc_sectors[level]) * oi.replicas;
      c.mem.requests = (vec ? c.vec_requests[level] : c.sc_requests[level]) * oi.replicas;
    }
  }
};

Profile::Profile(const ir::Module& module, const ProfileOptions& opts)
    : impl_(std::make_unique<Impl>(module, opts)) {}
Profile::~Profile() = default;

exec::Subscription Profile::on_launch_begin(const exec::LaunchContext& ctx) {
  Impl& I = *impl_;
  I.ctx = &ctx;
  I.grid = ctx.grid;
  I.programs = ctx.programs;
  I.totals.assign(I.ops.size(), Counts{});
  I.bitmaps.clear();
  I.touched = std::vector<std::array<std::atomic<Bitmap*>, 2>>(ctx.memory->buffers().size());
  I.last = nullptr;
  exec::Subscription sub;
  sub.kinds = exec::kAccess | exec::kProgram | exec::kOpBegin;
  sub.ops = [&I](const Op& op) -> const void* {
    auto it = I.op_index.find(&op);
    if (it == I.op_index.end() || I.ops[it->second].cls == OpInfo::memory) return nullptr;
    return &I.ops[it->second];
  };
  return sub;
}

void* Profile::on_program_begin(exec::ProgramId) {
  Impl& I = *impl_;
  PState* s;
  {
    std::lock_guard<std::mutex> g(I.mu);
    if (I.free_states.empty()) {
      I.states.push_back(std::make_unique<PState>());
      I.free_states.push_back(I.states.back().get());
    }
    s = I.free_states.back();
    I.free_states.pop_back();
  }
  s->ops.assign(I.ops.size(), Counts{});
  return s;
}

void Profile::on_program_end(exec::ProgramId, void* state) {
  Impl& I = *impl_;
  auto* s = static_cast<PState*>(state);
  std::lock_guard<std::mutex> g(I.mu);
  for (size_t i = 0; i < s->ops.size(); ++i)
    if (s->ops[i].executions) I.totals[i].add(s->ops[i]);
  I.free_states.push_back(s);
}

void Profile::on_op_begin(const exec::OpEvent& e, void* state) {
  impl_->op_begin(e, *static_cast<PState*>(state));
}

void Profile::on_access(const exec::AccessEvent& e, void* state) {
  impl_->access(e, *static_cast<PState*>(state));
}

namespace {

nlohmann::json mem_json(const Mem& m) {
  return {{"executions", m.executions},
          {"lanes", m.lanes},
          {"active_lanes", m.active_lanes},
          {"bytes", m.bytes},
          {"bytes_all_lanes", m.bytes_all},
          {"mask_efficiency", m.bytes_all ? static_cast<double>(m.bytes) / m.bytes_all : 1.0},
          {"sectors", m.sectors},
          {"requests", m.requests},
          {"coalescing", m.sectors ? static_cast<double>(m.bytes) / (m.sectors * 32.0) : 1.0}};
}

nlohmann::json site_json(const OpSite& s) {
  return {{"op", s.op},
          {"file", s.file},
          {"line", s.line},
          {"col", s.col},
          {"var", s.var},
          {"source", s.source_line},
          {"ttir", {{"file", s.ttir_file}, {"line", s.ttir_line}, {"col", s.ttir_col}}}};
}

}  // namespace

nlohmann::json Profile::Impl::build(const LaunchInfo& info) {
  using nlohmann::json;
  const GpuSpec& G = *gpu;
  Mem kinds[3];
  double flops[kPrecs] = {};
  json op_counts = json::object();
  struct Line {
    std::string file, source;
    int line = 0;
    int64_t bytes = 0, sectors = 0, flops = 0;
    double seconds = 0;
    std::vector<std::string> ops;
  };
  std::map<std::pair<std::string, int>, Line> lines;
  json site_list = json::array();
  std::vector<std::pair<double, json>> ranked;
  pick_layouts();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Counts& c = totals[i];
    if (!c.executions) continue;
    const OpInfo& oi = ops[i];
    const Op* op = oi.op;
    OpSite s = sites.of(op);
    json row = {{"site", site_json(s)}, {"executions", c.executions}};
    double seconds = 0;
    int64_t sec_bytes = 0, fl = 0;
    switch (oi.cls) {
      case OpInfo::memory: {
        const int k = op->def->effects & ir::effect::atomic    ? 2
                      : (op->def->effects & ir::effect::write) ? 1
                                                               : 0;
        kinds[k].add(c.mem);
        row["kind"] = kKindName[k];
        row["memory"] = mem_json(c.mem);
        row["layout"] = {
            {"elements_per_thread", oi.vec}, {"vectorized", oi.vectorized}, {"replicas", oi.replicas}};
        sec_bytes = c.mem.sectors * 32;
        seconds = sec_bytes / G.dram_bytes_per_s;
        break;
      }
      case OpInfo::dot: {
        fl = oi.flops_per_exec * c.executions;
        flops[oi.prec] += static_cast<double>(fl);
        row["kind"] = "dot";
        row["flops"] = fl;
        row["precision"] = kPrecName[oi.prec];
        const double pk = peak(G, oi.prec);
        seconds = pk > 0 ? fl / pk : 0;
        break;
      }
      case OpInfo::loop: {
        row["kind"] = "loop";
        int64_t trips = c.trips;
        if (oi.while_probe) {  // scf.while: from its probe's executions
          const int64_t runs = totals[op_index.at(oi.while_probe)].executions;
          trips = std::max<int64_t>(0, runs - (oi.probe_in_before ? c.executions : 0));
        }
        row["trips"] = trips;
        break;
      }
      case OpInfo::probe: continue;
      case OpInfo::arith: {
        fl = oi.flops_per_exec * c.executions;
        flops[oi.prec] += static_cast<double>(fl);
        json& oc = op_counts[op->name];
        if (oc.is_null()) oc = {{"executions", 0}, {"elements", 0}};
        oc["executions"] = oc["executions"].get<int64_t>() + c.executions;
        oc["elements"] = oc["elements"].get<int64_t>() + c.executions * oi.elements;
        const double pk = peak(G, oi.prec);
        seconds = pk > 0 && fl ? fl / pk : 0;
        break;
      }
    }
    Line& L = lines[{s.file, s.line}];
    L.file = s.file;
    L.line = s.line;
    L.source = s.source_line;
    L.bytes += oi.cls == OpInfo::memory ? c.mem.bytes : 0;
    L.sectors += oi.cls == OpInfo::memory ? c.mem.sectors : 0;
    L.flops += fl;
    L.seconds += seconds;
    if (std::find(L.ops.begin(), L.ops.end(), op->name) == L.ops.end()) L.ops.push_back(op->name);
    if (oi.cls != OpInfo::arith) {
      row["cost_seconds"] = seconds;
      ranked.emplace_back(seconds, std::move(row));
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (auto& r : ranked) site_list.push_back(std::move(r.second));

  // Distinct bytes per kind, from the bitmaps.
  int64_t unique_bytes[2] = {}, unique_sectors[2] = {}, blocks[2] = {};
  for (auto& slots : touched)
    for (int k = 0; k < 2; ++k)
      if (Bitmap* b = slots[k].load()) {
        auto [by, se, bl] = b->count();
        unique_bytes[k] += by;
        unique_sectors[k] += se;
        blocks[k] += bl;
      }

  json memory = json::object();
  for (int k = 0; k < 3; ++k) memory[kKindName[k]] = mem_json(kinds[k]);
  memory["read"] = {{"unique_bytes", unique_bytes[0]},
                    {"unique_sectors", unique_sectors[0]},
                    {"dram_bytes", blocks[0] * 64}};
  memory["written"] = {{"unique_bytes", unique_bytes[1]},
                       {"unique_sectors", unique_sectors[1]},
                       {"dram_bytes", blocks[1] * 64}};

  json fl = json::object();
  double compute_s = 0, total_flops = 0;
  json unsupported = json::array();
  for (int p = 0; p < kPrecs; ++p) {
    if (flops[p] == 0) continue;
    fl[kPrecName[p]] = static_cast<int64_t>(flops[p]);
    total_flops += flops[p];
    const double pk = peak(G, p);
    if (pk > 0)
      compute_s += flops[p] / pk;
    else
      unsupported.push_back(kPrecName[p]);
  }
  const double dram = static_cast<double>((blocks[0] + blocks[1]) * 64);
  const double memory_s = dram / G.dram_bytes_per_s;
  json roofline = {{"gpu", G.name},
                   {"part", G.part},
                   {"source", G.source},
                   {"dram_bytes", static_cast<int64_t>(dram)},
                   {"flops", static_cast<int64_t>(total_flops)},
                   {"arithmetic_intensity", dram > 0 ? total_flops / dram : 0.0},
                   {"memory_seconds", memory_s},
                   {"compute_seconds", compute_s},
                   {"seconds", std::max(memory_s, compute_s)},
                   {"bound", memory_s >= compute_s ? "memory" : "compute"},
                   {"unsupported_precisions", unsupported}};

  std::vector<Line> ls;
  ls.reserve(lines.size());
  for (auto& [_, L] : lines) ls.push_back(std::move(L));
  std::stable_sort(ls.begin(), ls.end(), [](const Line& a, const Line& b) {
    return std::make_tuple(a.seconds, a.bytes, a.flops) > std::make_tuple(b.seconds, b.bytes, b.flops);
  });
  json line_list = json::array();
  for (const Line& L : ls)
    line_list.push_back({{"file", L.file},
                         {"line", L.line},
                         {"source", L.source},
                         {"bytes", L.bytes},
                         {"sectors", L.sectors},
                         {"flops", L.flops},
                         {"cost_seconds", L.seconds},
                         {"ops", L.ops}});
  return {{"version", 1},
          {"kernel", info.kernel},
          {"grid", grid},
          {"programs", programs},
          {"model", {{"warp", kWarp}, {"sector_bytes", 32}, {"num_warps", opts.num_warps}}},
          {"memory", memory},
          {"flops", fl},
          {"ops", op_counts},
          {"roofline", roofline},
          {"lines", line_list},
          {"sites", site_list}};
}

void Profile::collect(const LaunchInfo& info, std::vector<Finding>&) {
  Impl& I = *impl_;
  I.last = I.build(info);
  I.bitmaps.clear();
  I.touched.clear();
  I.ctx = nullptr;
}

nlohmann::json Profile::report() const { return impl_->last; }

}  // namespace tilescope::analysis
