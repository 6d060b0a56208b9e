// The trace recorder (see recorder.h).
#include "recorder.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <limits>
#include <map>

#include "tilescope/ir/elem.h"
#include "tilescope/ir/ops.h"

namespace tilescope::trace {

namespace {

void collect_ops(const ir::Region& r, std::vector<const ir::Op*>& out) {
  for (const auto& b : r.blocks)
    for (const auto& op : b->ops) {
      out.push_back(op.get());
      for (const auto& sub : op->regions) collect_ops(*sub, out);
    }
}

}  // namespace

std::vector<const ir::Op*> op_sites(const ir::Module& module) {
  std::vector<const ir::Op*> out;
  for (const auto& f : module.functions) collect_ops(f->body, out);
  return out;
}

namespace {

int64_t read_int(const exec::ValueRef& v) {
  switch (v.elem()) {
    case ir::Elem::i8: return *v.as<int8_t>();
    case ir::Elem::i16: return *v.as<int16_t>();
    case ir::Elem::i32: return *v.as<int32_t>();
    default: return *v.as<int64_t>();
  }
}

// A program that is not in the sample has huge detail: it never fits.
constexpr int64_t kTooBig = std::numeric_limits<int64_t>::max() / 4;

}  // namespace

// ------------------------------------------------------------------------------------------------
// ElementCounts

void ElementCounts::init(int64_t elements) {
  std::lock_guard<std::mutex> g(mu_);
  elements_ = elements;
  starts_.clear();
  ends_.clear();
  dense_.clear();
}

void ElementCounts::add(const std::vector<Run>& runs) {
  if (runs.empty()) return;
  std::lock_guard<std::mutex> g(mu_);
  if (dense_.empty()) {
    for (const Run& r : runs) {
      starts_.push_back(r.start);
      ends_.push_back(r.start + r.count);
    }
    // Runs cost 8 bytes each, dense counts 4 per element: past a quarter of the elements, dense.
    if (static_cast<int64_t>(starts_.size()) > std::max<int64_t>(elements_ / 4, 4096)) densify();
    return;
  }
  for (const Run& r : runs)
    for (uint32_t i = r.start; i < r.start + r.count; ++i) ++dense_[i];
}

void ElementCounts::densify() {
  // A difference array: +1 where a run starts, -1 where it ends; its prefix sums are the counts.
  dense_.assign(static_cast<size_t>(elements_) + 1, 0);
  for (uint32_t s : starts_) ++dense_[s];
  for (uint32_t e : ends_) --dense_[e];  // unsigned wrap-around: the prefix sums come out right
  for (size_t i = 1; i < dense_.size(); ++i) dense_[i] += dense_[i - 1];
  dense_.pop_back();
  std::vector<uint32_t>().swap(starts_);
  std::vector<uint32_t>().swap(ends_);
}

std::vector<int64_t> ElementCounts::rle() {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<int64_t> out;
  auto emit = [&out](int64_t value, int64_t repeat) {
    if (repeat <= 0) return;
    if (!out.empty() && out[out.size() - 2] == value)
      out.back() += repeat;
    else
      out.insert(out.end(), {value, repeat});
  };
  if (!dense_.empty()) {
    for (size_t i = 0; i < dense_.size();) {
      size_t j = i + 1;
      while (j < dense_.size() && dense_[j] == dense_[i]) ++j;
      emit(dense_[i], static_cast<int64_t>(j - i));
      i = j;
    }
    return out;
  }
  // Runs mode: sweep the sorted boundaries; the count between two boundaries is the runs started
  // minus the runs ended so far.
  std::sort(starts_.begin(), starts_.end());
  std::sort(ends_.begin(), ends_.end());
  int64_t count = 0, pos = 0;
  size_t si = 0, ei = 0;
  while (si < starts_.size() || ei < ends_.size()) {
    const int64_t next = std::min<int64_t>(si < starts_.size() ? starts_[si] : elements_,
                                           ei < ends_.size() ? ends_[ei] : elements_);
    emit(count, next - pos);
    pos = next;
    while (si < starts_.size() && starts_[si] == next) ++count, ++si;
    while (ei < ends_.size() && ends_[ei] == next) --count, ++ei;
  }
  emit(count, elements_ - pos);
  return out;
}

// ------------------------------------------------------------------------------------------------
// Recorder

struct Recorder::Program {
  std::chrono::steady_clock::time_point start;
  int64_t linear = 0;
  std::unique_ptr<ProgramDetail> detail;  // null: not in the sample (no detail kept)
  std::vector<SiteStats> stats;           // by site
  std::vector<int64_t> seq;               // executions so far, by site
  std::map<int, LoopRow> loops;           // by site
  std::map<int, int64_t> probe_runs;      // scf.while site -> executions of its probe
  // Per TTIR argument: the element runs this program loaded / stored, contiguous runs merged.
  std::vector<std::vector<ElementCounts::Run>> loads, stores;
  // One access's runs (scratch): (argument, first element, count), in lane order.
  struct ArgRun {
    int arg;
    int64_t start, count;
  };
  std::vector<ArgRun> in_runs, oob_runs;
};

Recorder::Recorder(const ir::Module& module, int64_t detail_cap)
    : counts_(std::make_unique<std::vector<Counts>>()), cap_(detail_cap) {
  sites_ = op_sites(module);
  for (size_t i = 0; i < sites_.size(); ++i) site_of_[sites_[i]] = static_cast<int>(i);
  stats_.resize(sites_.size());
  none_ = detail_cap <= 0;
  // scf.while: trips from its probe's executions (ir::while_probe).
  for (size_t i = 0; i < sites_.size(); ++i) {
    if (sites_[i]->code() != ir::Opcode::scf_while) continue;
    const ir::WhileProbe probe = ir::while_probe(*sites_[i]);
    while_before_[static_cast<int>(i)] = probe.in_before;
    if (probe.op) probes_[probe.op].push_back({static_cast<int>(i)});
  }
}

exec::Subscription Recorder::on_launch_begin(const exec::LaunchContext& ctx) {
  grid_ = ctx.grid;
  programs_ = ctx.programs;
  ns_.assign(programs_ <= kMaxTimedPrograms ? static_cast<size_t>(programs_) : 0, 0);
  arg_of_buffer_.assign(ctx.memory->buffers().size(), -1);
  stored_ = std::make_unique<std::atomic<bool>[]>(ctx.memory->buffers().size());
  buffer_host_.clear();
  for (const exec::Buffer& b : ctx.memory->buffers())
    buffer_host_.emplace_back(reinterpret_cast<uintptr_t>(b.host), b.bytes);
  counts_ = std::make_unique<std::vector<Counts>>(ctx.args.size());
  elem_bytes_.assign(ctx.args.size(), 1);
  elem_shift_.assign(ctx.args.size(), 0);
  for (size_t i = 0; i < ctx.args.size(); ++i) {
    const exec::Buffer* b = ctx.args[i].buffer;
    if (!b || b->id < 0) continue;
    arg_of_buffer_[b->id] = static_cast<int>(i);
    const int eb = std::max(1, ir::elem_bytes(b->dtype));
    elem_bytes_[i] = eb;
    elem_shift_[i] =
        std::has_single_bit(static_cast<unsigned>(eb)) ? std::countr_zero(static_cast<unsigned>(eb)) : -1;
    const uint64_t n = b->bytes / static_cast<uint64_t>(eb);
    if (n <= static_cast<uint64_t>(kMaxCountedElements)) {
      (*counts_)[i].loads.init(static_cast<int64_t>(n));
      (*counts_)[i].stores.init(static_cast<int64_t>(n));
    }
  }
  exec::Subscription s;
  s.kinds = exec::kAccess | exec::kProgram | exec::kOpBegin;
  s.ops = [this](const ir::Op& op) -> const void* {
    // Loops: scf.for trip counts from their bounds; scf.while ones from their probe's executions.
    return op.code() == ir::Opcode::scf_for || op.code() == ir::Opcode::scf_while || probes_.count(&op)
               ? &op
               : nullptr;
  };
  return s;
}

void* Recorder::on_program_begin(exec::ProgramId pid) {
  auto* p = new Program;
  p->stats.resize(sites_.size());
  p->seq.resize(sites_.size());
  p->loads.resize(counts_->size());
  p->stores.resize(counts_->size());
  const int64_t linear = pid[0] + grid_[0] * (pid[1] + grid_[1] * pid[2]);
  p->linear = linear;
  p->start = std::chrono::steady_clock::now();
  if (!none_ && linear % stride_.load(std::memory_order_relaxed) == 0) {
    p->detail = std::make_unique<ProgramDetail>();
    p->detail->linear = linear;
    p->detail->pid = pid;
  }
  return p;
}

void Recorder::on_access(const exec::AccessEvent& e, void* state) {
  auto* p = static_cast<Program*>(state);
  auto it = site_of_.find(e.op);
  const int site = it == site_of_.end() ? -1 : it->second;
  int64_t active = 0, in_bounds = 0;
  auto add = [](std::vector<Program::ArgRun>& runs, int arg, int64_t elem) {
    if (!runs.empty() && runs.back().arg == arg && runs.back().start + runs.back().count == elem)
      ++runs.back().count;
    else
      runs.push_back({arg, elem, 1});
  };
  p->in_runs.clear();
  p->oob_runs.clear();
  const bool detail = p->detail && p->detail->bytes < kTooBig;
  // The buffer of the last in-bounds lane: the next lane is most often in it too (one compare instead
  // of Memory::where). Any address inside a buffer's bytes is in that buffer's region.
  const exec::Buffer* last = nullptr;
  int last_arg = -1, shift = 0, eb = 1;
  const uint64_t n = static_cast<uint64_t>(e.elem_bytes);
  // The common case first: every lane active, consecutive elements (a vectorizable check), all in one
  // argument: one run.
  auto arg_of = [this](const exec::Buffer* b) {  // -1: not a TTIR argument's buffer
    return b && b->id >= 0 && b->id < static_cast<int>(arg_of_buffer_.size()) ? arg_of_buffer_[b->id] : -1;
  };
  int64_t lane = 0;
  if (e.lanes > 0 && e.bad_lanes == 0) {
    const uint64_t a0 = e.addrs[0];
    bool dense = true;
    for (int64_t i = 0; i < e.lanes; ++i)
      dense &= (e.mask[i] != 0) & (e.addrs[i] == a0 + static_cast<uint64_t>(i) * n);
    if (dense) {
      const exec::Where w = e.memory->where(a0, e.elem_bytes);
      const int arg = arg_of(w.buffer);
      if (arg >= 0 && w.in_bounds && static_cast<uint64_t>(w.offset) + n * e.lanes <= w.buffer->bytes &&
          static_cast<uint64_t>(w.offset) % n == 0 && n == static_cast<uint64_t>(elem_bytes_[arg])) {
        if (e.kind != exec::AccessKind::load) mark_stored(w.buffer->id);
        p->in_runs.push_back({arg, w.offset / static_cast<int64_t>(n), e.lanes});
        active = in_bounds = lane = e.lanes;
      }
    }
  }
  for (int64_t i = lane; i < e.lanes; ++i) {
    if (!e.mask[i]) continue;
    ++active;
    const uint64_t addr = e.addrs[i];
    if (!(last && addr >= last->vbase && addr - last->vbase + n <= last->bytes)) {
      const exec::Where w = e.memory->where(addr, e.elem_bytes);
      const int arg = arg_of(w.buffer);
      if (!w.in_bounds) {
        if (detail && arg >= 0) {
          const int64_t b = elem_bytes_[arg];
          add(p->oob_runs, arg, w.offset >= 0 ? w.offset / b : -((-w.offset + b - 1) / b));  // floor
        }
        continue;
      }
      last = w.buffer;
      last_arg = arg;
      if (e.kind != exec::AccessKind::load) mark_stored(w.buffer->id);
      if (arg >= 0) {
        shift = elem_shift_[arg];
        eb = elem_bytes_[arg];
      }
    }
    ++in_bounds;
    if (last_arg < 0) continue;
    const uint64_t off = addr - last->vbase;
    add(p->in_runs, last_arg,
        static_cast<int64_t>(shift >= 0 ? off >> shift : off / static_cast<uint64_t>(eb)));
  }
  // Per-element counts: the program's runs, merged with its previous run of the argument.
  for (const Program::ArgRun& r : p->in_runs) {
    if ((*counts_)[r.arg].loads.elements() == 0) continue;
    auto push = [&r](std::vector<ElementCounts::Run>& v) {
      if (!v.empty() && int64_t{v.back().start} + v.back().count == r.start)
        v.back().count += static_cast<uint32_t>(r.count);
      else
        v.push_back({static_cast<uint32_t>(r.start), static_cast<uint32_t>(r.count)});
    };
    if (e.kind != exec::AccessKind::store) push(p->loads[r.arg]);
    if (e.kind != exec::AccessKind::load) push(p->stores[r.arg]);
  }
  if (site < 0) return;
  SiteStats& st = p->stats[site];
  st.executions += e.part == 0;  // later parts belong to the execution part 0 began (AccessEvent::part)
  st.lanes += e.lanes;
  st.active += active;
  st.oob += e.bad_lanes;
  st.bytes += in_bounds * e.elem_bytes;
  if (e.kind != exec::AccessKind::load) st.stored += in_bounds * e.elem_bytes;
  const int64_t seq = e.part == 0 ? p->seq[site]++ : p->seq[site] - 1;
  if (!detail) return;
  // Detail rows, one per argument (in argument order), runs in lane order.
  std::map<int, AccessRow> rows;
  auto append = [](std::vector<int64_t>& runs, const Program::ArgRun& r) {
    if (!runs.empty() && runs[runs.size() - 2] + runs.back() == r.start)
      runs.back() += r.count;
    else
      runs.insert(runs.end(), {r.start, r.count});
  };
  for (const Program::ArgRun& r : p->in_runs) append(rows[r.arg].runs, r);
  for (const Program::ArgRun& r : p->oob_runs) append(rows[r.arg].oob_runs, r);
  if (rows.empty()) rows[-1];  // an execution with no lane in an argument still has its counts
  bool first = true;
  for (auto& [arg, row] : rows) {
    row.site = site;
    row.seq = seq;
    row.arg = arg;
    row.kind = static_cast<uint8_t>(e.kind);
    row.lanes = e.lanes;
    // The counts of the execution go with its first row; later rows (more arguments) hold runs only.
    row.active = first ? active : 0;
    row.oob = first ? e.bad_lanes : 0;
    first = false;
    p->detail->bytes += row_bytes(row.runs.size() + row.oob_runs.size());
    p->detail->accesses.push_back(std::move(row));
  }
  if (p->detail->bytes > cap_) {  // this program alone does not fit: it never will
    p->detail->accesses.clear();
    p->detail->bytes = kTooBig;
  }
}

void Recorder::mark_stored(int buffer) {
  // Read first: once set, the flag's cache line is shared by every program, never written again.
  if (buffer >= 0 && buffer < static_cast<int>(arg_of_buffer_.size()) &&
      !stored_[buffer].load(std::memory_order_relaxed))
    stored_[buffer].store(true, std::memory_order_relaxed);
}

bool Recorder::stored_into(const std::byte* host, uint64_t bytes) const {
  const auto lo = reinterpret_cast<uintptr_t>(host), hi = lo + bytes;
  for (size_t id = 0; id < buffer_host_.size(); ++id) {
    const auto [blo, n] = buffer_host_[id];
    if (stored_[id].load() && blo < hi && lo < blo + n) return true;
  }
  return false;
}

void Recorder::on_op_begin(const exec::OpEvent& e, void* state) {
  auto* p = static_cast<Program*>(state);
  if (!p->detail) return;
  if (auto it = probes_.find(e.op); it != probes_.end())
    for (const Probe& w : it->second) p->probe_runs[w.site] += 1;
  const bool is_for = e.op->code() == ir::Opcode::scf_for;
  if (!is_for && e.op->code() != ir::Opcode::scf_while) return;
  const int site = site_of_.at(e.op);
  LoopRow& row = p->loops[site];
  row.site = site;
  row.executions += 1;
  if (is_for) {
    const int64_t lb = read_int(e.operand(0)), ub = read_int(e.operand(1)), step = read_int(e.operand(2));
    row.trips += (step > 0 && ub > lb) ? (ub - lb + step - 1) / step : 0;
  }
}

void Recorder::on_program_end(exec::ProgramId pid, void* state) {
  std::unique_ptr<Program> p(static_cast<Program*>(state));
  if (p->linear >= 0 && p->linear < static_cast<int64_t>(ns_.size()))
    ns_[static_cast<size_t>(p->linear)] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - p->start)
            .count();
  for (size_t a = 0; a < p->loads.size(); ++a) {
    (*counts_)[a].loads.add(p->loads[a]);
    (*counts_)[a].stores.add(p->stores[a]);
  }
  std::lock_guard<std::mutex> g(mu_);
  for (size_t site = 0; site < p->stats.size(); ++site) {
    const SiteStats& s = p->stats[site];
    if (s.executions == 0) continue;
    SiteStats& t = stats_[site];
    t.executions += s.executions;
    t.lanes += s.lanes;
    t.active += s.active;
    t.oob += s.oob;
    t.bytes += s.bytes;
    t.stored += s.stored;
  }
  if (!p->detail) return;
  for (auto& [site, row] : p->loops) {
    if (sites_[site]->code() ==
        ir::Opcode::scf_while) {  // its condition ran once more per loop than its body
      const int64_t runs = p->probe_runs[site];
      row.trips = std::max<int64_t>(0, runs - (while_before_.at(site) ? row.executions : 0));
    }
    p->detail->loops.push_back(row);
    if (p->detail->bytes < kTooBig) p->detail->bytes += row_bytes(0);
  }
  keep(std::move(p->detail));
}

void Recorder::keep(std::unique_ptr<ProgramDetail> d) {
  if (none_ || d->linear % stride_.load() != 0) return;
  kept_bytes_ += d->bytes;
  kept_.push_back(std::move(d));
  shrink();
}

void Recorder::shrink() {
  while (!none_ && kept_bytes_ > cap_) {
    if (stride_.load() >= programs_) {  // program 0 alone does not fit: no detail
      none_ = true;
      kept_.clear();
      kept_bytes_ = 0;
      return;
    }
    const int64_t s = stride_.load() * 2;
    stride_.store(s);
    std::erase_if(kept_, [s](const auto& d) { return d->linear % s != 0; });
    kept_bytes_ = 0;
    for (auto& d : kept_) kept_bytes_ += d->bytes;
  }
}

void Recorder::fit(int64_t cap) {
  std::lock_guard<std::mutex> g(mu_);
  cap_ = std::min(cap_, cap);
  if (cap_ <= 0) {
    none_ = true;
    kept_.clear();
    kept_bytes_ = 0;
  }
  shrink();
}

std::vector<std::unique_ptr<ProgramDetail>> Recorder::take_detail() {
  std::lock_guard<std::mutex> g(mu_);
  std::sort(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) { return a->linear < b->linear; });
  return std::move(kept_);
}

}  // namespace tilescope::trace
