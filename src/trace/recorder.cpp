// The trace recorder (see recorder.h).
#include "recorder.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>

#include "tilescope/ir/elem.h"

namespace tilescope::trace {

namespace {

void collect_ops(const ir::Region& r, std::vector<const ir::Op*>& out) {
  for (const auto& b : r.blocks)
    for (const auto& op : b->ops) {
      out.push_back(op.get());
      for (const auto& sub : op->regions) collect_ops(*sub, out);
    }
}

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

struct Recorder::Program {
  std::unique_ptr<ProgramDetail> detail;  // null: not in the sample (no detail kept)
  std::map<int, SiteStats> stats;         // by site
  std::map<int, int64_t> seq;             // executions so far, by site
  std::map<int, LoopRow> loops;           // by site
};

Recorder::Recorder(const ir::Module& module, int64_t detail_cap) : cap_(detail_cap) {
  for (const auto& f : module.functions) collect_ops(f->body, sites_);
  for (size_t i = 0; i < sites_.size(); ++i) site_of_[sites_[i]] = static_cast<int>(i);
  stats_.resize(sites_.size());
  none_ = detail_cap <= 0;
}

exec::Subscription Recorder::on_launch_begin(const exec::LaunchContext& ctx) {
  grid_ = ctx.grid;
  programs_ = ctx.programs;
  memory_ = ctx.memory;
  arg_of_buffer_.assign(ctx.memory->buffers().size(), -1);
  counts_.assign(ctx.args.size(), {});
  elem_bytes_.assign(ctx.args.size(), 1);
  for (size_t i = 0; i < ctx.args.size(); ++i) {
    const exec::Buffer* b = ctx.args[i].buffer;
    if (!b || b->id < 0) continue;
    arg_of_buffer_[b->id] = static_cast<int>(i);
    const int eb = std::max(1, ir::elem_bytes(b->dtype));
    elem_bytes_[i] = eb;
    const uint64_t n = b->bytes / static_cast<uint64_t>(eb);
    if (n <= static_cast<uint64_t>(kMaxCountedElements)) {
      counts_[i].loads.assign(n, 0);
      counts_[i].stores.assign(n, 0);
    }
  }
  exec::Subscription s;
  s.kinds = exec::kAccess | exec::kProgram | exec::kOpBegin;
  s.ops = [](const ir::Op& op) -> const void* {
    return op.name == "scf.for" ? &op : nullptr;  // loops: trip counts from their bounds
  };
  return s;
}

void* Recorder::on_program_begin(exec::ProgramId pid) {
  auto* p = new Program;
  const int64_t linear = pid[0] + grid_[0] * (pid[1] + grid_[1] * pid[2]);
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
  // Runs per argument, in lane order, over active lanes: in bounds, and out of bounds of the argument
  // they were derived from.
  std::map<int, AccessRow> rows;
  auto add_run = [](std::vector<int64_t>& runs, int64_t elem) {
    if (!runs.empty() && runs[runs.size() - 2] + runs.back() == elem)
      ++runs.back();
    else
      runs.insert(runs.end(), {elem, 1});
  };
  for (int64_t i = 0; i < e.lanes; ++i) {
    if (!e.mask[i]) continue;
    ++active;
    const exec::Where w = e.memory->where(e.addrs[i], e.elem_bytes);
    const int arg = w.buffer && w.buffer->id < static_cast<int>(arg_of_buffer_.size())
                        ? arg_of_buffer_[w.buffer->id]
                        : -1;
    if (!w.in_bounds) {
      if (p->detail && arg >= 0) {
        const int64_t eb = elem_bytes_[arg];
        add_run(rows[arg].oob_runs, w.offset >= 0 ? w.offset / eb : -((-w.offset + eb - 1) / eb));  // floor
      }
      continue;
    }
    ++in_bounds;
    if (arg < 0) continue;
    const int64_t elem = w.offset / elem_bytes_[arg];
    Counts& c = counts_[arg];
    if (!c.loads.empty()) {
      if (e.kind != exec::AccessKind::store)
        std::atomic_ref<uint32_t>(c.loads[elem]).fetch_add(1, std::memory_order_relaxed);
      if (e.kind != exec::AccessKind::load)
        std::atomic_ref<uint32_t>(c.stores[elem]).fetch_add(1, std::memory_order_relaxed);
    }
    if (p->detail) add_run(rows[arg].runs, elem);
  }
  if (site < 0) return;
  SiteStats& st = p->stats[site];
  st.executions += 1;
  st.lanes += e.lanes;
  st.active += active;
  st.oob += e.bad_lanes;
  st.bytes += in_bounds * e.elem_bytes;
  const int64_t seq = p->seq[site]++;
  if (!p->detail || p->detail->bytes >= kTooBig) return;
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

void Recorder::on_op_begin(const exec::OpEvent& e, void* state) {
  auto* p = static_cast<Program*>(state);
  if (!p->detail) return;
  const int64_t lb = read_int(e.operand(0)), ub = read_int(e.operand(1)), step = read_int(e.operand(2));
  const int64_t trips = (step > 0 && ub > lb) ? (ub - lb + step - 1) / step : 0;
  LoopRow& row = p->loops[site_of_.at(e.op)];
  row.site = site_of_.at(e.op);
  row.executions += 1;
  row.trips += trips;
}

void Recorder::on_program_end(exec::ProgramId pid, void* state) {
  std::unique_ptr<Program> p(static_cast<Program*>(state));
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [site, s] : p->stats) {
    SiteStats& t = stats_[site];
    t.executions += s.executions;
    t.lanes += s.lanes;
    t.active += s.active;
    t.oob += s.oob;
    t.bytes += s.bytes;
  }
  if (!p->detail) return;
  for (auto& [site, row] : p->loops) {
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
