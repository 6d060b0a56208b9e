// The NKI profile (nki.h, Kernel::profile; README "NKI profile"): per instruction an estimated cost
// on its engine, then per program a timeline in which every engine runs its instructions in program
// order and an instruction waits for the instructions whose elements it depends on.
//
// Costs are the NKI API reference's "Estimated instruction cost" formulas (the NKI 2.26 pages,
// awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.<op>.html), in engine
// cycles, with N the elements per partition of the instruction's main input and MIN_II = 64 cycles
// (the pages' minimum initiation interval); ops without a published formula take max(MIN_II, N) on the
// Vector and Scalar engines and 150 + N on GpSimd (the GpSimd ops' published fixed cost). Cycles are
// turned into time by the engine's clock (Target). The Vector engine's performance modes of
// NeuronCore-v3 and later (trainium2_arch.html, "Vector Engine"): tensor_copy and tensor_scalar 4x
// faster from SBUF to SBUF on 2-byte dtypes with unit inner stride, 2x otherwise on 2-byte dtypes.
//
// A DMA (dma_copy, nl.load / nl.store, dma_transpose) is spread over up to 16 queues, one contiguous
// piece per queue at a time (nki-dma-overview.html), and costs the documented ~1300 ns of fixed latency
// (nki-dma-bandwidth-guide.html, "semaphore-to-start latency") plus its bytes at the queues' rate
// (Target::dma_bytes_per_ns each); a DMA transpose moves at half that rate from SBUF to SBUF and 90%
// from HBM (nki-dma-bandwidth-guide.html, "DMA transpose").
//
// The timeline is an estimate (the compiler's scheduling, cross-engine semaphores and the queues'
// sharing of HBM bandwidth are not modelled): each program runs on its own NeuronCore, the engines of
// one program run in parallel, and an instruction starts when its engine (or its queues) is free and
// every earlier instruction that wrote elements it reads, or read or wrote elements it writes, has
// ended.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "machine.h"
#include "tilescope/analysis/finding.h"

namespace tilescope::nki {

using json = nlohmann::json;

std::string_view engine_name(Engine e) {
  switch (e) {
    case Engine::tensor: return "tensor";
    case Engine::vector: return "vector";
    case Engine::scalar: return "scalar";
    case Engine::gpsimd: return "gpsimd";
    case Engine::dma: return "dma";
  }
  return "?";
}

namespace {

constexpr double kMinII = 64;         // cycles (the API reference's MIN_II)
constexpr double kGpSimdStart = 150;  // cycles (iota, affine_select, local_gather)
constexpr double kDmaFixedNs = 1300;  // nki-dma-bandwidth-guide.html
constexpr int kDmaQueues = 16;        // per NeuronCore (nki-dma-overview.html)

int64_t free_size(const View& v) {
  int64_t f = 1;
  for (size_t d = 1; d < v.shape.size(); ++d) f *= v.shape[d];
  return v.shape.empty() ? 1 : f;
}

/// Elements per contiguous piece of `v` (its innermost dims that are laid out densely; on chip, within
/// one partition: "an SBUF tile needs at least one DMA buffer per partition", nki-dma-overview.html).
int64_t contiguous(const View& v, bool on_chip) {
  int64_t run = 1;
  for (size_t d = v.shape.size(); d-- > (on_chip ? 1 : 0);) {
    if (v.shape[d] == 1) continue;
    if (v.strides[d] != run) break;
    run *= v.shape[d];
  }
  return run;
}

const View* view_of(const Args& args, std::string_view key) {
  auto it = args.find(key);
  return it == args.end() ? nullptr : std::get_if<View>(&it->second);
}

std::string name_of(const Args& args, std::string_view key) {
  auto it = args.find(key);
  const std::string* s = it == args.end() ? nullptr : std::get_if<std::string>(&it->second);
  return s ? *s : std::string();
}

double clock(const Target& t, Engine e) {
  switch (e) {
    case Engine::tensor: return t.tensor_ghz;
    case Engine::vector: return t.vector_ghz;
    case Engine::scalar: return t.scalar_ghz;
    case Engine::gpsimd: return t.gpsimd_ghz;
    case Engine::dma: return 1;
  }
  return 1;
}

}  // namespace

Cost estimate(const Kernel::Impl& k, std::string_view op, const Args& args) {
  Cost c;
  const Target& t = *k.target;
  // The main input: the largest on-chip operand that is read, else the destination.
  const View* dst = view_of(args, "dst");
  const View* main = nullptr;
  bool all_two_byte = true, any_psum = false, all_sbuf = true;
  for (const auto& [key, value] : args) {
    const View* v = std::get_if<View>(&value);
    if (!v) continue;
    const Storage& s = k.storage(*v);
    all_two_byte &= s.info.dtype.bytes() == 2;
    any_psum |= s.info.space == Space::psum;
    all_sbuf &= s.info.space == Space::sbuf;
    const bool written = key == "dst" || key == "reduce_res" || key == "dst_idx";
    if (!written && s.info.space != Space::hbm && (!main || free_size(*v) > free_size(*main))) main = v;
  }
  if (!main) main = dst;
  const double n = main ? static_cast<double>(free_size(*main)) : 1;
  // The traffic: every operand read, into the destination's memory.
  if (dst) {
    const auto to = static_cast<size_t>(k.storage(*dst).info.space);
    for (const auto& [key, value] : args) {
      const View* v = std::get_if<View>(&value);
      if (!v || key == "dst" || key == "reduce_res" || key == "dst_idx") continue;
      const Storage& s = k.storage(*v);
      c.flow[static_cast<size_t>(s.info.space) * 3 + to] += v->numel() * s.info.dtype.bytes();
    }
  }
  auto dtype_of = [&](const View* v) { return v ? k.storage(*v).info.dtype.name : std::string(); };

  // DMA: bytes over the queues, pieces as contiguous as both sides allow.
  if (op == "dma_copy" || op == "load" || op == "store" || op == "dma_transpose") {
    const View* src = view_of(args, "src");
    c.engine = Engine::dma;
    if (!src || !dst) return c;
    const Storage &from = k.storage(*src), &to = k.storage(*dst);
    c.from = from.info.space;
    c.to = to.info.space;
    c.read_bytes = src->numel() * from.info.dtype.bytes();
    c.written_bytes = dst->numel() * to.info.dtype.bytes();
    // A gather / scatter (vector_offset) moves each row on its own.
    const int64_t piece =
        std::max<int64_t>(1, std::min(contiguous(*src, from.info.space != Space::hbm || src->vector_offset),
                                      contiguous(*dst, to.info.space != Space::hbm || dst->vector_offset)));
    const int64_t pieces = (dst->numel() + piece - 1) / piece;
    c.queues = static_cast<int>(std::clamp<int64_t>(pieces, 1, kDmaQueues));
    double rate = t.dma_bytes_per_ns * c.queues;
    if (op == "dma_transpose") rate *= from.info.space == Space::hbm ? 0.9 : 0.5;
    c.ns = kDmaFixedNs + static_cast<double>(std::max(c.read_bytes, c.written_bytes)) / rate;
    return c;
  }

  // The engine: the call's `engine=`, else the op's own.
  const std::string given = name_of(args, "engine");
  auto engine_or = [&](Engine fallback) {
    if (given == "tensor") return Engine::tensor;
    if (given == "vector") return Engine::vector;
    if (given == "scalar") return Engine::scalar;
    if (given == "gpsimd") return Engine::gpsimd;
    return fallback;
  };
  double cycles = std::max(kMinII, n);
  if (op == "nc_matmul") {
    c.engine = Engine::tensor;
    const View* st = view_of(args, "stationary");
    const View* mv = view_of(args, "moving");
    if (st && mv) {
      const double m = static_cast<double>(free_size(*st)), nn = static_cast<double>(free_size(*mv));
      const double kk = st->shape.empty() ? 1 : static_cast<double>(st->shape[0]);
      c.flops = 2 * kk * m * nn;
      cycles = std::max(std::min(64.0, m), nn);
      if (dtype_of(st) == "float32" || dtype_of(mv) == "float32") cycles *= 4;  // fp32: quarter rate
    }
  } else if (op == "nc_transpose") {
    const View* data = view_of(args, "data");
    const int64_t p = data && !data->shape.empty() ? data->shape[0] : 1;
    const int64_t f = data ? free_size(*data) : 1;
    c.engine = engine_or(std::max(p, f) <= 32 ? Engine::vector : Engine::tensor);
    cycles = c.engine == Engine::tensor
                 ? std::max<double>(static_cast<double>(p), std::min(64.0, static_cast<double>(f)))
                 : std::max(kMinII, static_cast<double>(f));
  } else if (op == "activation" || op == "activation_reduce") {
    c.engine = Engine::scalar;
    cycles = std::max(kMinII, n);
    const View* res = view_of(args, "reduce_res");
    if (op == "activation_reduce" || res) cycles += kMinII;  // reading the accumulator
  } else if (op == "iota" || op == "affine_select" || op == "local_gather") {
    c.engine = Engine::gpsimd;  // local_gather: 150 + N here (its page's formula also counts valid indexes)
    cycles = kGpSimdStart + n;
  } else {
    c.engine = engine_or(Engine::vector);
    if (op == "tensor_tensor") {
      const std::string o = name_of(args, "op");
      const bool cheap =
          any_psum || (all_sbuf && dtype_of(view_of(args, "data1")) == "bfloat16" &&
                       dtype_of(view_of(args, "data2")) == "bfloat16" && dtype_of(dst) == "bfloat16" &&
                       (o == "add" || o == "multiply" || o == "subtract"));
      cycles = std::max(kMinII, cheap ? n : 2 * n);
    } else if (op == "scalar_tensor_tensor") {
      const bool fast = dtype_of(view_of(args, "data")) == "bfloat16" &&
                        dtype_of(view_of(args, "operand1")) == "bfloat16" &&
                        name_of(args, "op0") == "subtract" && name_of(args, "op1") == "multiply" &&
                        std::fmod(n, 2) == 0;
      cycles = fast ? n : 2 * n;
    } else if (op == "tensor_reduce") {
      const std::string o = name_of(args, "op");
      const bool fast = dtype_of(view_of(args, "data")) == "bfloat16" && dtype_of(dst) == "bfloat16" &&
                        (o == "add" || o == "maximum");
      cycles = std::max(1.0, fast ? n / 2 : n);
    } else if (op == "tensor_scalar_reduce") {
      cycles = std::max(kMinII, n) + kMinII;
    } else if (op == "tensor_tensor_scan") {
      cycles = std::max(kMinII, 2 * n);
    } else if (op == "tensor_copy_predicated") {
      cycles = std::max(kMinII, all_sbuf ? 2 * n : n);
    } else if (op == "memset") {
      const auto it = args.find("value");
      const double* value = it == args.end() ? nullptr : std::get_if<double>(&it->second);
      cycles = std::max(kMinII, value && *value == 0 && all_two_byte ? n / 2 : n);
    } else if (op == "reciprocal") {
      cycles = std::max(kMinII, 8 * n);
    } else if (op == "bn_aggr") {
      cycles = std::max(kMinII, 13 * std::floor(n / 3));
    } else if (op == "max8" || op == "nc_find_index8") {
      cycles = std::max(1.0, n);
    }
    if (c.engine == Engine::gpsimd && op != "iota" && op != "affine_select" && op != "local_gather" &&
        (name_of(args, "op0") == "rsqrt" || name_of(args, "op") == "rsqrt"))
      cycles *= 4;  // "throughput is 4x lower" than the Scalar engine's (isa/tensor_scalar)
    // Vector engine performance modes (NeuronCore-v3 and later).
    if (c.engine == Engine::vector && t.nc_version >= 3 && all_two_byte &&
        (op == "tensor_copy" || op == "tensor_scalar")) {
      const View* in = view_of(args, op == "tensor_copy" ? "src" : "data");
      const bool unit = in && dst && (in->strides.empty() || in->strides.back() == 1) &&
                        (dst->strides.empty() || dst->strides.back() == 1);
      cycles /= all_sbuf && unit ? 4 : 2;
    }
  }
  c.ns = cycles / clock(t, c.engine);
  return c;
}

nlohmann::json Kernel::profile() const {
  const Impl& k = *impl_;
  const Target& t = *k.target;
  const size_t nsites = k.fn->body.blocks[0]->ops.size();
  std::map<const ir::Op*, int> site_index;
  for (size_t i = 0; i < nsites; ++i) site_index[k.fn->body.blocks[0]->ops[i].get()] = static_cast<int>(i);

  // Which programs' timelines and memory use the report lists: every stride-th, so that at most
  // kMaxEvents instructions are listed (program 0 always).
  constexpr int64_t kMaxEvents = 20000;
  int64_t total = 0;
  for (const auto& c : k.code) total += static_cast<int64_t>(c.size());
  int64_t stride = 1;
  while (stride < k.programs && (total + stride - 1) / stride > kMaxEvents) stride *= 2;
  const int64_t first_size = k.code.empty() ? 0 : static_cast<int64_t>(k.code[0].size());
  const bool truncated = first_size > kMaxEvents;

  std::array<int64_t, kEngines> count{};
  std::array<double, kEngines> busy{};
  struct Dir {
    int64_t transfers = 0, read = 0, written = 0;
  };
  std::map<std::string, Dir> dma;
  std::array<int64_t, 9> flow{};
  double flops = 0;
  struct Line {
    std::string file;
    int line = 0;
    int64_t instructions = 0;
    double ns = 0;
    int64_t dma_bytes = 0;
    std::array<int64_t, kEngines> per_engine{};
  };
  std::map<std::pair<std::string, int>, Line> lines;
  std::vector<double> program_ns(static_cast<size_t>(k.programs), 0);
  json events = json::array(), memory = json::array(), allocations = json::array();
  int64_t listed = 0;

  for (int64_t p = 0; p < k.programs; ++p) {
    const std::vector<Instr>& code = k.code[static_cast<size_t>(p)];
    const bool listed_program = p % stride == 0 && !truncated;
    // The schedule: engines in program order, dependencies through the elements touched.
    std::array<double, kEngines> engine_free{};
    std::array<double, kDmaQueues> queue_free{};
    struct Past {
      int64_t lo, hi;
      bool write;
      double end;
    };
    std::map<int, std::vector<Past>> past;  // per tensor: its most recent accesses
    constexpr size_t kPast = 32;
    std::vector<std::pair<double, double>> span(code.size());
    double end_all = 0;
    for (size_t i = 0; i < code.size(); ++i) {
      const Instr& in = code[i];
      double ready = 0;
      for (const Touch& tc : in.touches)
        if (auto it = past.find(tc.tensor); it != past.end())
          for (const Past& q : it->second)
            if ((q.write || tc.write) && q.lo <= tc.hi && tc.lo <= q.hi) ready = std::max(ready, q.end);
      double start = 0, end = 0;
      std::vector<int> queues;
      const auto e = static_cast<size_t>(in.cost.engine);
      if (in.cost.engine == Engine::dma) {
        std::vector<int> order(kDmaQueues);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
          return queue_free[static_cast<size_t>(a)] < queue_free[static_cast<size_t>(b)];
        });
        queues.assign(order.begin(), order.begin() + in.cost.queues);
        start = ready;
        for (int q : queues) start = std::max(start, queue_free[static_cast<size_t>(q)]);
        end = start + in.cost.ns;
        for (int q : queues) queue_free[static_cast<size_t>(q)] = end;
      } else {
        start = std::max(ready, engine_free[e]);
        end = start + in.cost.ns;
        engine_free[e] = end;
      }
      span[i] = {start, end};
      end_all = std::max(end_all, end);
      for (const Touch& tc : in.touches) {
        std::vector<Past>& v = past[tc.tensor];
        v.push_back({tc.lo, tc.hi, tc.write, end});
        if (v.size() > kPast) v.erase(v.begin());
      }
      // Totals.
      ++count[e];
      busy[e] += in.cost.ns * (in.cost.engine == Engine::dma ? in.cost.queues : 1);
      flops += in.cost.flops;
      for (size_t f = 0; f < flow.size(); ++f) flow[f] += in.cost.flow[f];
      if (in.cost.engine == Engine::dma) {
        Dir& d = dma[fmt::format("{}_to_{}", space_name(in.cost.from), space_name(in.cost.to))];
        ++d.transfers;
        d.read += in.cost.read_bytes;
        d.written += in.cost.written_bytes;
      }
      const ir::PyLoc& l = in.site->loc;
      Line& L = lines[{l.file, l.line}];
      L.file = l.file;
      L.line = l.line;
      ++L.instructions;
      L.ns += in.cost.ns;
      L.dma_bytes += in.cost.engine == Engine::dma ? std::max(in.cost.read_bytes, in.cost.written_bytes) : 0;
      ++L.per_engine[e];
      if (listed_program) {
        events.push_back({p, engine_name(in.cost.engine), queues.empty() ? 0 : queues.front(),
                          site_index[in.site], start, end});
        ++listed;
      }
    }
    program_ns[static_cast<size_t>(p)] = end_all;
    if (!listed_program) continue;
    // SBUF / PSUM in use over time: a tensor holds its bytes per partition from the start of the first
    // instruction that uses it to the end of the last (the live ranges of the capacity check).
    const std::map<int, std::pair<size_t, size_t>> live = k.live_ranges(static_cast<int>(p));
    std::vector<std::tuple<double, int64_t, int64_t>> steps;  // time, sbuf delta, psum delta
    for (const auto& [id, range] : live) {
      const Storage& s = k.tensors[static_cast<size_t>(id)];
      const int64_t per_partition = static_cast<int64_t>(s.bytes) / std::max<int64_t>(1, s.info.shape.at(0));
      const double from = span[range.first].first, to = span[range.second].second;
      const bool sbuf = s.info.space == Space::sbuf;
      steps.emplace_back(from, sbuf ? per_partition : 0, sbuf ? 0 : per_partition);
      steps.emplace_back(to, sbuf ? -per_partition : 0, sbuf ? 0 : -per_partition);
      if (allocations.size() < 4096)
        allocations.push_back({{"program", p},
                               {"name", s.info.name},
                               {"space", space_name(s.info.space)},
                               {"dtype", s.info.dtype.name},
                               {"shape", s.info.shape},
                               {"bytes_per_partition", per_partition},
                               {"file", s.info.loc.file},
                               {"line", s.info.loc.line},
                               {"start_ns", from},
                               {"end_ns", to}});
    }
    std::sort(steps.begin(), steps.end(),
              [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    json points = json::array();
    int64_t sbuf = 0, psum = 0, sbuf_peak = 0, psum_peak = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      sbuf += std::get<1>(steps[i]);
      psum += std::get<2>(steps[i]);
      if (i + 1 < steps.size() && std::get<0>(steps[i + 1]) == std::get<0>(steps[i])) continue;
      points.push_back({std::get<0>(steps[i]), sbuf, psum});
      sbuf_peak = std::max(sbuf_peak, sbuf);
      psum_peak = std::max(psum_peak, psum);
    }
    memory.push_back(
        {{"program", p}, {"points", points}, {"sbuf_peak", sbuf_peak}, {"psum_peak", psum_peak}});
  }

  const double longest = program_ns.empty() ? 0 : *std::max_element(program_ns.begin(), program_ns.end());
  const size_t slowest =
      program_ns.empty()
          ? 0
          : static_cast<size_t>(std::max_element(program_ns.begin(), program_ns.end()) - program_ns.begin());
  json engines = json::object();
  for (int e = 0; e < kEngines; ++e) {
    const double denom = longest * static_cast<double>(k.programs) * (e == 4 ? kDmaQueues : 1);
    engines[std::string(engine_name(static_cast<Engine>(e)))] = {
        {"instructions", count[static_cast<size_t>(e)]},
        {"busy_ns", busy[static_cast<size_t>(e)]},
        {"utilization", denom > 0 ? busy[static_cast<size_t>(e)] / denom : 0.0}};
  }
  json flows = json::object();
  for (size_t f = 0; f < flow.size(); ++f)
    if (flow[f])
      flows[fmt::format("{}_to_{}", space_name(static_cast<Space>(f / 3)),
                        space_name(static_cast<Space>(f % 3)))] = flow[f];
  json dma_j = json::object();
  for (const auto& [dir, d] : dma)
    dma_j[dir] = {{"transfers", d.transfers}, {"read_bytes", d.read}, {"written_bytes", d.written}};

  analysis::SiteMaker sm(k.module);
  std::vector<Line> ranked;
  ranked.reserve(lines.size());
  for (auto& [key, L] : lines) ranked.push_back(L);
  std::sort(ranked.begin(), ranked.end(), [](const Line& a, const Line& b) { return a.ns > b.ns; });
  json lines_j = json::array();
  for (const Line& L : ranked) {
    json per = json::object();
    for (int e = 0; e < kEngines; ++e)
      if (L.per_engine[static_cast<size_t>(e)])
        per[std::string(engine_name(static_cast<Engine>(e)))] = L.per_engine[static_cast<size_t>(e)];
    lines_j.push_back({{"file", L.file},
                       {"line", L.line},
                       {"source", L.file.empty() ? std::string() : sm.source_line(L.file, L.line)},
                       {"instructions", L.instructions},
                       {"engines", per},
                       {"busy_ns", L.ns},
                       {"dma_bytes", L.dma_bytes}});
  }
  json sites = json::array();
  for (size_t i = 0; i < nsites; ++i) {
    const ir::Op& op = *k.fn->body.blocks[0]->ops[i];
    sites.push_back({{"op", op.name}, {"file", op.loc.file}, {"line", op.loc.line}, {"col", op.loc.col}});
  }
  json programs_ns = json::array();  // the first 4096 programs'
  for (size_t i = 0; i < program_ns.size() && i < 4096; ++i) programs_ns.push_back(program_ns[i]);
  double serial = 0;
  for (double v : program_ns) serial += v;

  return {{"version", 1},
          {"kind", "nki"},
          {"kernel", k.name},
          {"programs", k.programs},
          {"target", t.name},
          {"model",
           {{"estimate", true},
            {"clocks_ghz",
             {{"tensor", t.tensor_ghz},
              {"vector", t.vector_ghz},
              {"scalar", t.scalar_ghz},
              {"gpsimd", t.gpsimd_ghz}}},
            {"min_ii_cycles", kMinII},
            {"dma_queues", kDmaQueues},
            {"dma_bytes_per_ns_per_queue", t.dma_bytes_per_ns},
            {"dma_fixed_ns", kDmaFixedNs}}},
          {"engines", engines},
          {"dma", dma_j},
          {"flows", flows},
          {"flops", {{"matmul", flops}}},
          {"estimate",
           {{"seconds", longest * 1e-9},
            {"slowest_program", slowest},
            {"serial_seconds", serial * 1e-9},
            {"program_ns", programs_ns},
            {"sbuf_bytes_per_partition", t.sbuf_bytes},
            {"psum_bytes_per_partition", t.psum_bytes}}},
          {"lines", lines_j},
          {"sites", sites},
          {"timeline",
           {{"columns", {"program", "engine", "queue", "site", "start_ns", "end_ns"}},
            {"stride", truncated ? 0 : stride},
            {"rows", events}}},
          {"memory", memory},
          {"allocations", allocations}};
}

}  // namespace tilescope::nki
