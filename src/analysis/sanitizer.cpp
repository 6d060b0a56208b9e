// The sanitizer: out-of-bounds / null accesses and failed asserts from engine events, and the
// poison-lane analyses (undefined values, int32 overflow into addresses, division by zero). See
// include/tilescope/analysis/sanitizer.h for the rules and src/analysis/taint.h for the static part.
#include "tilescope/analysis/sanitizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "site.h"
#include "taint.h"
#include "tilescope/exec/memory.h"
#include "tilescope/exec/value.h"

namespace tilescope::analysis {

namespace {

using exec::ProgramId;
using ir::Op;

struct Shadow {
  bool any = false;
  std::vector<uint32_t> lanes;
};

/// One program instance's shadow (the engine's per-program state for this observer) and scratch.
struct State {
  std::vector<Shadow> sh;  // per tracked value
  // Undefined values re-labelled at a reduce / scan / dot: the input lanes that were undefined there
  // (derived cause id -> count and first lanes), so the finding counts those rather than the sink's.
  std::vector<std::pair<uint32_t, std::pair<int64_t, std::vector<int64_t>>>> via_lanes;
  // (cause, lane) pairs found by one op's sinks; flushed at the end of the callback.
  std::vector<std::pair<uint32_t, int64_t>> hits;
  // on_transfer's parallel assignment: poisoned sources read before any destination is written.
  std::vector<std::pair<int, std::vector<uint32_t>>> moves;
  std::vector<int> cleans;
  // derive()'s last answer: a reduce in a loop asks the same question every iteration.
  uint32_t derive_in = 0, derive_out = 0;
  const Op* derive_via = nullptr;
  // The sites (Agg::id) this program has already been counted at, so that a program counts once per
  // site however often it misbehaves there: a flag per site id, and the ids set (to clear them).
  std::vector<uint8_t> counted;
  std::vector<uint32_t> counted_ids;
};

template <class T>
bool any_zero(const void* p, int64_t n) {
  const T* v = static_cast<const T*>(p);
  bool z = false;
  for (int64_t i = 0; i < n; ++i) z |= v[i] == 0;
  return z;
}

// A signed integer index lane (gather indices: i8 ... i64).
int64_t read_index(const void* p, ir::Elem e, int64_t i) {
  switch (ir::elem_bytes(e)) {
    case 1: return static_cast<const int8_t*>(p)[i];
    case 2: return static_cast<const int16_t*>(p)[i];
    case 4: return static_cast<const int32_t*>(p)[i];
    default: return static_cast<const int64_t*>(p)[i];
  }
}

bool is_zero(const void* p, ir::Elem e, int64_t i) {
  switch (ir::elem_bytes(e)) {
    case 1: return static_cast<const uint8_t*>(p)[i] == 0;
    case 2: return static_cast<const uint16_t*>(p)[i] == 0;
    case 4: return static_cast<const uint32_t*>(p)[i] == 0;
    default: return static_cast<const uint64_t*>(p)[i] == 0;
  }
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Sanitizer::Impl {
  // One site's findings in the launch being observed. Its size does not depend on the grid: programs
  // are counted (each once, through State::counted), not stored; only the first few ids and the last
  // are kept.
  struct Agg {
    Kind kind;
    uint32_t id = 0;  // dense, in creation order: the index of State::counted
    const Op* site = nullptr;
    const Op* cause = nullptr;
    const Op* use = nullptr;
    int64_t programs = 0;
    std::vector<ProgramId> first_pids;
    ProgramId last_pid{0, 0, 0};
    int64_t lanes = 0;
    std::vector<int64_t> first_lanes;
    int64_t occurrences = 0;
    bool has_buffer = false;
    BufferInfo buffer;
    int64_t off_min = INT64_MAX, off_max = INT64_MIN;
    bool has_addr = false;
    uint64_t addr_min = UINT64_MAX, addr_max = 0;
    std::string message;
  };
  using Key = std::tuple<int, const Op*, const Op*>;

  const ir::Module& m;
  SanitizerOptions opts;
  std::shared_ptr<const TaintPlan> plan_kept;  // the module's (Module::derived), or an empty one
  const TaintPlan& plan;
  unsigned kinds = 0;
  uint32_t static_causes = 0;
  const exec::LaunchContext* launch = nullptr;  // the launch being observed (for request_stop)

  std::mutex pool_mu;                          // guards the two below
  std::vector<std::unique_ptr<State>> states;  // every State made, reused across programs and launches
  std::vector<State*> free_states;

  std::mutex mu;         // guards everything below
  bool stopped = false;  // abort_on_first: a finding was recorded and the launch asked to stop
  std::vector<Cause> derived;
  std::map<std::pair<uint32_t, const Op*>, uint32_t> derived_ids;
  std::map<Key, Agg> aggs;
  std::vector<Finding> findings;
  SiteMaker sites;

  Impl(const ir::Module& mod, const SanitizerOptions& o)
      : m(mod),
        opts(o),
        plan_kept(o.poison ? mod.derived<TaintPlan>([&] { return build_taint_plan(mod); })
                           : std::make_shared<const TaintPlan>()),
        plan(*plan_kept),
        sites(mod) {
    static_causes = static_cast<uint32_t>(plan.causes.size());
    // kProgram always: the per-program state counts each program once per site (note_pid).
    kinds = exec::kOutOfBounds | exec::kAssert | exec::kProgram;
    if (!plan.tracked.empty() || !plan.ops.empty()) kinds |= exec::kOpResult;
  }

  // -- per-program state -------------------------------------------------------------------------

  State* begin_program() {
    State* st;
    {
      std::lock_guard<std::mutex> g(pool_mu);
      if (free_states.empty()) {
        states.push_back(std::make_unique<State>());
        states.back()->sh.resize(plan.numel.size());
        free_states.push_back(states.back().get());
      }
      st = free_states.back();
      free_states.pop_back();
    }
    for (auto& x : st->sh) x.any = false;
    st->via_lanes.clear();
    st->derive_via = nullptr;
    for (uint32_t id : st->counted_ids) st->counted[id] = 0;
    st->counted_ids.clear();
    return st;
  }

  void end_program(State* st) {
    std::lock_guard<std::mutex> g(pool_mu);
    free_states.push_back(st);
  }

  // -- causes ------------------------------------------------------------------------------------

  bool is_overflow(uint32_t id) const {
    return id < static_causes && plan.causes[id].kind == Kind::int32_overflow;
  }

  Cause cause(uint32_t id) {
    if (id < static_causes) return plan.causes[id];
    std::lock_guard<std::mutex> g(mu);
    return derived.at(id - static_causes);
  }

  /// Undefined values that flow through a reduce / scan / dot are reported at that op (the first
  /// one), naming the load; other kinds keep their origin.
  uint32_t derive(State& st, uint32_t id, const Op* via) {
    if (id == st.derive_in && via == st.derive_via) return st.derive_out;
    uint32_t r = derive_slow(id, via);
    st.derive_in = id, st.derive_via = via, st.derive_out = r;
    return r;
  }

  uint32_t derive_slow(uint32_t id, const Op* via) {
    if (id == 0 || id >= static_causes || plan.causes[id].kind != Kind::undefined_value) return id;
    std::lock_guard<std::mutex> g(mu);
    auto [it, fresh] = derived_ids.try_emplace({id, via}, 0);
    if (fresh) {
      it->second = static_causes + static_cast<uint32_t>(derived.size());
      derived.push_back(Cause{Kind::undefined_value, plan.causes[id].origin, via});
    }
    return it->second;
  }

  // -- recording ---------------------------------------------------------------------------------

  Agg& agg(Kind k, const Op* site, const Op* cause_op) {
    auto [it, fresh] = aggs.try_emplace(Key{static_cast<int>(k), site, cause_op});
    if (fresh) {
      it->second.kind = k;
      it->second.id = static_cast<uint32_t>(aggs.size() - 1);
      it->second.site = site;
      it->second.cause = cause_op;
    }
    return it->second;
  }

  /// Count program `pid` at site `a` unless `st` (that program's state) was counted there already.
  void note_pid(Agg& a, ProgramId pid, State& st) {
    if (a.id >= st.counted.size()) st.counted.resize(aggs.size(), 0);
    if (st.counted[a.id]) return;
    st.counted[a.id] = 1;
    st.counted_ids.push_back(a.id);
    if (a.programs++ == 0 || pid_less(a.last_pid, pid)) a.last_pid = pid;
    keep_first<ProgramId>(a.first_pids, pid, static_cast<size_t>(opts.max_first), pid_less);
  }

  /// Whether findings are still recorded (call with `mu` held): after the first one under
  /// abort_on_first, the launch is stopping and later events are dropped.
  bool recording() const { return !(opts.abort_on_first && stopped); }

  /// After recording a finding (with `mu` held): abort_on_first stops the launch.
  void recorded() {
    if (!opts.abort_on_first) return;
    stopped = true;
    if (launch) launch->request_stop();
  }

  /// Turn the (cause, lane) pairs a sink found into findings.
  void flush_hits(const Op* sink, ProgramId pid, State& st) {
    auto& hits = st.hits;
    if (hits.empty()) return;
    std::sort(hits.begin(), hits.end());
    std::vector<std::pair<Cause, std::pair<size_t, size_t>>> groups;  // cause, [begin, end)
    for (size_t i = 0; i < hits.size();) {
      size_t j = i;
      while (j < hits.size() && hits[j].first == hits[i].first) ++j;
      groups.push_back({cause(hits[i].first), {i, j}});
      i = j;
    }
    {
      std::lock_guard<std::mutex> g(mu);
      for (auto& [c, range] : groups) {
        if (!recording()) break;
        const Op* site = c.kind == Kind::undefined_value ? (c.via ? c.via : sink) : c.origin;
        Agg& a = agg(c.kind, site, c.origin);
        if (!a.use && site != sink) a.use = sink;
        note_pid(a, pid, st);
        a.occurrences++;
        const std::pair<int64_t, std::vector<int64_t>>* via = nullptr;
        if (c.via)
          for (auto& [id, v] : st.via_lanes)
            if (id == hits[range.first].first) via = &v;
        if (via) {
          a.lanes += via->first;
          for (int64_t lane : via->second)
            keep_first<int64_t>(a.first_lanes, lane, static_cast<size_t>(opts.max_first), i64_less);
          continue;
        }
        int64_t prev = -1;
        for (size_t i = range.first; i < range.second; ++i) {
          int64_t lane = hits[i].second;
          if (lane == prev) continue;
          prev = lane;
          a.lanes++;
          keep_first<int64_t>(a.first_lanes, lane, static_cast<size_t>(opts.max_first), i64_less);
        }
      }
      if (!groups.empty()) recorded();
    }
    hits.clear();
  }

  // -- shadow helpers ----------------------------------------------------------------------------

  static uint32_t lane_of(const Shadow& s, int64_t i) {
    return s.lanes.size() == 1 ? s.lanes[0] : s.lanes[i];
  }

  const Shadow* in(State& st, const OpInfo& o, size_t k) const {
    if (k >= o.in.size()) return nullptr;
    int i = o.in[k];
    return (i >= 0 && st.sh[i].any) ? &st.sh[i] : nullptr;
  }

  uint32_t* out_lanes(State& st, int idx) {
    Shadow& s = st.sh[idx];
    s.lanes.resize(static_cast<size_t>(plan.numel[idx]));
    return s.lanes.data();
  }

  void set_clean(State& st, int idx) {
    if (idx >= 0) st.sh[idx].any = false;
  }

  /// After writing a result's lanes: set `any`, and check branch conditions.
  void finalize(State& st, int idx, ProgramId pid) {
    Shadow& s = st.sh[idx];
    bool any = false;
    for (uint32_t c : s.lanes) any |= c != 0;
    s.any = any;
    if (any && plan.cond_term[idx]) {
      sink(st, s, 1, nullptr, true);
      flush_hits(plan.cond_term[idx], pid, st);
    }
  }

  /// Collect poisoned lanes of `s` among `n` lanes consumed by a sink; `active` (may be null) is a
  /// per-lane 0/1 mask. Value sinks ignore int32 overflow (only addresses matter for it).
  void sink(State& st, const Shadow& s, int64_t n, const uint8_t* active, bool value) {
    for (int64_t i = 0; i < n; ++i) {
      uint32_t c = lane_of(s, i);
      if (!c || (active && !active[i]) || (value && is_overflow(c))) continue;
      st.hits.emplace_back(c, i);
    }
  }

  void sink_operand(State& st, const OpInfo& o, size_t k, const uint8_t* active, bool value) {
    if (const Shadow* s = in(st, o, k)) sink(st, *s, o.in_n[k], active, value);
  }

  // -- op handlers -------------------------------------------------------------------------------

  bool overflow_lane(const OpInfo& o, const int32_t* a, const int32_t* b, int64_t i) const {
    int64_t r = 0;
    switch (o.arith) {
      case Arith::add: r = int64_t{a[i]} + b[i]; break;
      case Arith::sub: r = int64_t{a[i]} - b[i]; break;
      case Arith::mul: r = int64_t{a[i]} * b[i]; break;
      case Arith::shl: return int32_shl_overflows(a[i], b[i]);
    }
    return r != static_cast<int32_t>(r);
  }

  void elementwise(const exec::OpEvent& e, const OpInfo& o, State& st) {
    bool anyin = false;
    for (size_t k = 0; k < o.in.size(); ++k) anyin = anyin || in(st, o, k);
    const int64_t n = o.out_n.empty() ? 0 : o.out_n[0];
    bool src = false;
    if (o.source == Source::overflow) {
      src = any_int32_overflow(o.arith, static_cast<const int32_t*>(e.operands[0]),
                               static_cast<const int32_t*>(e.operands[1]), n);
    } else if (o.source == Source::divzero) {
      ir::Elem de = e.op->operands[1]->type->elem;
      switch (ir::elem_bytes(de)) {
        case 1: src = any_zero<uint8_t>(e.operands[1], n); break;
        case 2: src = any_zero<uint16_t>(e.operands[1], n); break;
        case 4: src = any_zero<uint32_t>(e.operands[1], n); break;
        default: src = any_zero<uint64_t>(e.operands[1], n); break;
      }
    }
    if (!anyin && !src) {
      for (int r : o.out) set_clean(st, r);
      return;
    }
    for (size_t r = 0; r < o.out.size(); ++r) {
      int idx = o.out[r];
      if (idx < 0) continue;
      uint32_t* out = out_lanes(st, idx);
      const int64_t rn = o.out_n[r];
      std::fill(out, out + rn, 0u);
      for (size_t k = 0; k < o.in.size(); ++k) {
        const Shadow* s = in(st, o, k);
        if (!s) continue;
        if (o.in_n[k] == rn || o.in_n[k] == 1) {
          for (int64_t i = 0; i < rn; ++i)
            if (!out[i]) out[i] = lane_of(*s, i);
        } else {  // shapes differ (multi-result asm with packing): any poison taints every lane
          uint32_t c = 0;
          for (uint32_t x : s->lanes) c = c ? c : x;
          for (int64_t i = 0; i < rn; ++i)
            if (!out[i]) out[i] = c;
        }
      }
      if (src && rn == n) {
        if (o.source == Source::overflow) {
          auto* a = static_cast<const int32_t*>(e.operands[0]);
          auto* b = static_cast<const int32_t*>(e.operands[1]);
          for (int64_t i = 0; i < n; ++i)
            if (!out[i] && overflow_lane(o, a, b, i)) out[i] = o.cause;
        } else {
          ir::Elem de = e.op->operands[1]->type->elem;
          for (int64_t i = 0; i < n; ++i)
            if (!out[i] && is_zero(e.operands[1], de, i)) out[i] = o.cause;
        }
      }
      finalize(st, idx, e.pid);
    }
  }

  void select(const exec::OpEvent& e, const OpInfo& o, State& st) {
    const Shadow* c = in(st, o, 0);
    const Shadow* a = in(st, o, 1);
    const Shadow* b = in(st, o, 2);
    int idx = o.out[0];
    if (idx < 0) return;
    if (!c && !a && !b) return set_clean(st, idx);
    const int64_t n = o.out_n[0];
    const uint8_t* cv = static_cast<const uint8_t*>(e.operands[0]);
    const bool cs = o.in_n[0] == 1;
    uint32_t* out = out_lanes(st, idx);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t x = c ? lane_of(*c, i) : 0;
      if (!x) {
        const Shadow* pick = cv[cs ? 0 : i] ? a : b;
        x = pick ? lane_of(*pick, i) : 0;
      }
      out[i] = x;
    }
    finalize(st, idx, e.pid);
  }

  void load(const exec::OpEvent& e, const OpInfo& o, State& st) {
    const int64_t n = o.in_n[0];
    const uint8_t* mask = o.mask >= 0 ? static_cast<const uint8_t*>(e.operands[o.mask]) : nullptr;
    sink_operand(st, o, 0, mask, false);
    if (o.mask >= 0) sink_operand(st, o, static_cast<size_t>(o.mask), nullptr, false);
    flush_hits(e.op, e.pid, st);
    int idx = o.out.empty() ? -1 : o.out[0];
    if (idx < 0) return;
    const Shadow* other = o.other >= 0 ? in(st, o, static_cast<size_t>(o.other)) : nullptr;
    bool masked_off = false;
    if (mask && (o.source == Source::masked_load || other))  // masks hold 0 or 1 per lane
      masked_off = std::memchr(mask, 0, static_cast<size_t>(n)) != nullptr;
    if (!masked_off) return set_clean(st, idx);
    uint32_t* out = out_lanes(st, idx);
    for (int64_t i = 0; i < n; ++i) out[i] = mask[i] ? 0u : (other ? lane_of(*other, i) : o.cause);
    finalize(st, idx, e.pid);
  }

  /// For tt.descriptor_store / tt.descriptor_reduce (operands: the descriptor, one index per dim,
  /// the value tile): 1 for each lane of the tile inside the descriptor's shape, in `buf`; null for
  /// other ops (every lane is consumed).
  static const uint8_t* desc_store_lanes(const exec::OpEvent& e, std::vector<uint8_t>& buf) {
    const ir::Opcode c = e.op->code();
    if (c != ir::Opcode::tt_descriptor_store && c != ir::Opcode::tt_descriptor_reduce) return nullptr;
    const auto& d = *static_cast<const exec::TensorDesc*>(e.operands[0]);
    const ir::Type& tile = *e.op->operands.back()->type;
    const int rank = d.rank;
    if (rank < 1 || static_cast<int>(tile.shape.size()) != rank || e.op->operands.size() != size_t(rank) + 2)
      return nullptr;
    int64_t n = 1;
    for (int64_t x : tile.shape) n *= x;
    buf.assign(static_cast<size_t>(n), 1);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i;
      for (int k = rank - 1; k >= 0; --k) {
        const int64_t extent = tile.shape[static_cast<size_t>(k)];
        const void* idx = e.operands[1 + k];
        const int64_t start = ir::elem_bytes(e.op->operands[1 + k]->type->elem) == 8
                                  ? *static_cast<const int64_t*>(idx)
                                  : *static_cast<const int32_t*>(idx);
        const int64_t at = start + rest % extent;
        rest /= extent;
        if (at < 0 || at >= d.shape[k]) {
          buf[static_cast<size_t>(i)] = 0;
          break;
        }
      }
    }
    return buf.data();
  }

  void store_like(const exec::OpEvent& e, const OpInfo& o, State& st) {
    const uint8_t* mask = o.mask >= 0 ? static_cast<const uint8_t*>(e.operands[o.mask]) : nullptr;
    using ir::Taint;
    switch (o.rule) {
      case Taint::store:
        if (o.block) {  // through a block pointer: no mask (the pointer's boundary check decides)
          sink_operand(st, o, 0, nullptr, false);
          sink_operand(st, o, 1, nullptr, true);
          break;
        }
        [[fallthrough]];
      case Taint::atomic_rmw:
        sink_operand(st, o, 0, mask, false);
        sink_operand(st, o, 1, mask, true);
        if (o.mask >= 0) sink_operand(st, o, static_cast<size_t>(o.mask), nullptr, false);
        break;
      case Taint::atomic_cas:
        for (size_t k = 0; k < o.in.size(); ++k) sink_operand(st, o, k, nullptr, k > 0);
        break;
      case Taint::load: sink_operand(st, o, 0, nullptr, false); break;  // through a block pointer
      case Taint::histogram:
        sink_operand(st, o, 0, mask, true);
        if (o.mask >= 0) sink_operand(st, o, static_cast<size_t>(o.mask), nullptr, true);
        break;
      case Taint::desc_access: {
        // A descriptor store (or reduce) drops the lanes outside the tensor's shape (TMA clips them),
        // so undefined values there are not consumed; other descriptor ops consume every lane.
        std::vector<uint8_t> inside;
        const uint8_t* stored = desc_store_lanes(e, inside);
        for (size_t k = 0; k < o.in.size(); ++k) {
          const bool value = e.op->operands[k]->type->is_tensor;
          sink_operand(st, o, k, value ? stored : nullptr, value);
        }
        break;
      }
      case Taint::cond:
      case Taint::assert_: sink_operand(st, o, 0, nullptr, true); break;
      case Taint::for_bounds:
        for (size_t k = 0; k < 3 && k < o.in.size(); ++k) sink_operand(st, o, k, nullptr, true);
        break;
      case Taint::none:
      case Taint::elementwise:
      case Taint::overflow_arith:
      case Taint::divide:
      case Taint::select:
      case Taint::splat:
      case Taint::broadcast:
      case Taint::linear:
      case Taint::trans:
      case Taint::join:
      case Taint::split:
      case Taint::cat:
      case Taint::unsplat:
      case Taint::gather:
      case Taint::reduce:
      case Taint::scan:
      case Taint::dot:
      case Taint::dot_other:
      case Taint::scalar_any: assert(false && "not a sink: on_op sends it elsewhere"); break;
    }
    flush_hits(e.op, e.pid, st);
    for (int r : o.out) set_clean(st, r);
  }

  /// Shape ops: result lane i takes operand `src[i].first` lane `src[i].second` (-1: clean).
  void shape(const exec::OpEvent& e, const OpInfo& o, State& st) {
    bool anyin = false;
    for (size_t k = 0; k < o.in.size(); ++k) anyin = anyin || in(st, o, k);
    if (!anyin) {
      for (int r : o.out) set_clean(st, r);
      return;
    }
    for (size_t r = 0; r < o.out.size(); ++r) {
      int idx = o.out[r];
      if (idx < 0) continue;
      const int64_t n = o.out_n[r];
      uint32_t* out = out_lanes(st, idx);
      const Shadow* s0 = in(st, o, 0);
      auto from0 = [&](int64_t j) { return s0 ? lane_of(*s0, j) : 0u; };
      switch (o.rule) {
        case ir::Taint::splat:
        case ir::Taint::unsplat:
          for (int64_t i = 0; i < n; ++i) out[i] = from0(0);
          break;
        case ir::Taint::linear:
          for (int64_t i = 0; i < n; ++i) out[i] = from0(i);
          break;
        case ir::Taint::broadcast: {
          const auto& is = o.in_shape;
          const auto& os = o.out_shape;
          auto ist = strides_of(is);
          for (int64_t i = 0; i < n; ++i) {
            int64_t rem = i, j = 0;
            for (int d = static_cast<int>(os.size()) - 1; d >= 0; --d) {
              int64_t c = rem % os[d];
              rem /= os[d];
              if (d < static_cast<int>(is.size()) && is[d] != 1) j += c * ist[d];
            }
            out[i] = from0(j);
          }
          break;
        }
        case ir::Taint::trans: {
          const auto& is = o.in_shape;
          const auto& os = o.out_shape;
          auto ist = strides_of(is);
          for (int64_t i = 0; i < n; ++i) {
            int64_t rem = i, j = 0;
            for (int d = static_cast<int>(os.size()) - 1; d >= 0; --d) {
              int64_t c = rem % os[d];
              rem /= os[d];
              int src_d = d < static_cast<int>(o.order.size()) ? o.order[d] : d;
              j += c * ist[src_d];
            }
            out[i] = from0(j);
          }
          break;
        }
        case ir::Taint::join: {
          const Shadow* s1 = in(st, o, 1);
          for (int64_t i = 0; i < n; ++i) {
            const Shadow* s = (i & 1) ? s1 : s0;
            out[i] = s ? lane_of(*s, i / 2) : 0u;
          }
          break;
        }
        case ir::Taint::split:
          for (int64_t i = 0; i < n; ++i) out[i] = from0(2 * i + static_cast<int64_t>(r));
          break;
        case ir::Taint::cat: {
          const Shadow* s1 = in(st, o, 1);
          const int64_t na = o.in_n[0];
          for (int64_t i = 0; i < n; ++i) out[i] = i < na ? from0(i) : (s1 ? lane_of(*s1, i - na) : 0u);
          break;
        }
        case ir::Taint::gather: {
          const Shadow* si = in(st, o, 1);
          const auto& ss = o.in_shape;
          const auto& os = o.out_shape;
          auto sst = strides_of(ss);
          ir::Elem ie = e.op->operands[1]->type->elem;
          for (int64_t i = 0; i < n; ++i) {
            uint32_t x = si ? lane_of(*si, i) : 0u;
            if (!x && s0) {
              int64_t rem = i, j = 0;
              bool ok = true;
              for (int d = static_cast<int>(os.size()) - 1; d >= 0; --d) {
                int64_t c = rem % os[d];
                rem /= os[d];
                if (d == o.axis) c = read_index(e.operands[1], ie, i);
                if (d >= static_cast<int>(ss.size()) || c < 0 || c >= ss[d])
                  ok = false;
                else
                  j += c * sst[d];
              }
              if (ok) x = from0(j);
            }
            out[i] = x;
          }
          break;
        }
        case ir::Taint::none:
        case ir::Taint::elementwise:
        case ir::Taint::overflow_arith:
        case ir::Taint::divide:
        case ir::Taint::select:
        case ir::Taint::load:
        case ir::Taint::store:
        case ir::Taint::atomic_rmw:
        case ir::Taint::atomic_cas:
        case ir::Taint::reduce:
        case ir::Taint::scan:
        case ir::Taint::dot:
        case ir::Taint::dot_other:
        case ir::Taint::histogram:
        case ir::Taint::scalar_any:
        case ir::Taint::desc_access:
        case ir::Taint::cond:
        case ir::Taint::for_bounds:
        case ir::Taint::assert_: assert(false && "not a shape op: on_op sends it elsewhere"); break;
      }
      finalize(st, idx, e.pid);
    }
  }

  /// Remember which input lanes of a reduce / scan / dot were undefined (per derived cause).
  void note_via(State& st, const std::vector<uint32_t>& causes, const Op* op) {
    std::vector<std::pair<uint32_t, std::pair<int64_t, std::vector<int64_t>>>> local;
    for (size_t i = 0; i < causes.size(); ++i) {
      uint32_t c = causes[i];
      if (!c) continue;
      uint32_t d = derive(st, c, op);
      if (d == c) continue;
      auto it = std::find_if(local.begin(), local.end(), [&](auto& x) { return x.first == d; });
      if (it == local.end()) it = local.insert(local.end(), {d, {0, {}}});
      it->second.first++;
      if (it->second.second.size() < static_cast<size_t>(opts.max_first))
        it->second.second.push_back(static_cast<int64_t>(i));
    }
    for (auto& x : local) {
      auto it =
          std::find_if(st.via_lanes.begin(), st.via_lanes.end(), [&](auto& y) { return y.first == x.first; });
      if (it == st.via_lanes.end())
        st.via_lanes.push_back(std::move(x));
      else
        *it = std::move(x);
    }
  }

  /// tt.reduce / tt.scan: lanes along `axis` combine; undefined values are re-labelled "via" this op.
  void reduce_scan(const exec::OpEvent& e, const OpInfo& o, State& st) {
    bool anyin = false;
    for (size_t k = 0; k < o.in.size(); ++k) anyin = anyin || in(st, o, k);
    if (!anyin) {
      for (int r : o.out) set_clean(st, r);
      return;
    }
    const auto& sh = o.in_shape;
    int axis = sh.empty() ? 0 : std::clamp(o.axis, 0, static_cast<int>(sh.size()) - 1);
    int64_t outer = 1, len = sh.empty() ? 1 : sh[axis], inner = 1;
    for (int d = 0; d < axis; ++d) outer *= sh[d];
    for (int d = axis + 1; d < static_cast<int>(sh.size()); ++d) inner *= sh[d];
    // Combined cause of every input lane (first operand first).
    const int64_t total = outer * len * inner;
    std::vector<uint32_t> comb(static_cast<size_t>(total), 0u);
    for (size_t k = 0; k < o.in.size(); ++k)
      if (const Shadow* s = in(st, o, k))
        for (int64_t i = 0; i < total; ++i)
          if (!comb[i]) comb[i] = lane_of(*s, i);
    note_via(st, comb, e.op);
    std::vector<uint32_t> res;
    if (o.rule == ir::Taint::reduce) {
      res.assign(static_cast<size_t>(outer * inner), 0u);
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t j = 0; j < len; ++j)
          for (int64_t b = 0; b < inner; ++b) {
            uint32_t c = comb[(a * len + j) * inner + b];
            uint32_t& r = res[a * inner + b];
            if (c && !r) r = derive(st, c, e.op);
          }
    } else {
      res.assign(static_cast<size_t>(total), 0u);
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t b = 0; b < inner; ++b) {
          uint32_t run = 0;
          for (int64_t t = 0; t < len; ++t) {
            int64_t j = o.reverse ? len - 1 - t : t;
            int64_t p = (a * len + j) * inner + b;
            if (!run && comb[p]) run = derive(st, comb[p], e.op);
            res[p] = run;
          }
        }
    }
    for (size_t r = 0; r < o.out.size(); ++r) {
      int idx = o.out[r];
      if (idx < 0) continue;
      uint32_t* out = out_lanes(st, idx);
      const int64_t n = std::min<int64_t>(o.out_n[r], static_cast<int64_t>(res.size()));
      std::copy(res.begin(), res.begin() + n, out);
      finalize(st, idx, e.pid);
    }
  }

  void dot(const exec::OpEvent& e, const OpInfo& o, State& st) {
    const Shadow* a = in(st, o, 0);
    const Shadow* b = in(st, o, 1);
    const Shadow* c = in(st, o, 2);
    int idx = o.out.empty() ? -1 : o.out[0];
    if (idx < 0) return;
    if (!a && !b && !c) return set_clean(st, idx);
    const int64_t n = o.out_n[0];
    uint32_t* out = out_lanes(st, idx);
    if (o.rule == ir::Taint::dot_other || o.in_shape.size() < 2 || o.b_shape.size() < 2) {
      uint32_t any = 0;
      for (size_t k = 0; k < o.in.size(); ++k)
        if (const Shadow* s = in(st, o, k))
          for (uint32_t x : s->lanes) any = any ? any : x;
      uint32_t d = derive(st, any, e.op);
      for (int64_t i = 0; i < n; ++i) out[i] = d;
      return finalize(st, idx, e.pid);
    }
    if (a)
      note_via(st, a->lanes, e.op);
    else if (b)
      note_via(st, b->lanes, e.op);
    const auto& as = o.in_shape;
    const auto& bs = o.b_shape;
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    const int64_t B = std::max<int64_t>(1, n / std::max<int64_t>(1, M * N));
    std::vector<uint32_t> row(static_cast<size_t>(B * M), 0u), col(static_cast<size_t>(B * N), 0u);
    if (a)
      for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t k = 0; k < K && !row[bb * M + m]; ++k)
            row[bb * M + m] = lane_of(*a, (bb * M + m) * K + k);
    if (b)
      for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K && !col[bb * N + j]; ++k)
            col[bb * N + j] = lane_of(*b, (bb * K + k) * N + j);
    for (auto& x : row) x = derive(st, x, e.op);
    for (auto& x : col) x = derive(st, x, e.op);
    for (int64_t bb = 0; bb < B; ++bb)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t j = 0; j < N; ++j) {
          int64_t i = (bb * M + m) * N + j;
          uint32_t x = c ? lane_of(*c, i) : 0u;
          if (!x) x = row[bb * M + m];
          if (!x) x = col[bb * N + j];
          out[i] = x;
        }
    finalize(st, idx, e.pid);
  }

  void scalar_any(const exec::OpEvent& e, const OpInfo& o, State& st) {
    uint32_t c = 0;
    for (size_t k = 0; k < o.in.size() && !c; ++k)
      if (const Shadow* s = in(st, o, k))
        for (uint32_t x : s->lanes) c = c ? c : x;
    for (size_t r = 0; r < o.out.size(); ++r) {
      int idx = o.out[r];
      if (idx < 0) continue;
      if (!c) {
        set_clean(st, idx);
        continue;
      }
      uint32_t* out = out_lanes(st, idx);
      std::fill(out, out + o.out_n[r], c);
      finalize(st, idx, e.pid);
    }
  }

  void on_op(const exec::OpEvent& e, State& st) {
    const OpInfo* o = static_cast<const OpInfo*>(e.tag);  // what on_launch_begin's op filter returned
    using ir::Taint;
    switch (o->rule) {
      case Taint::elementwise:
      case Taint::overflow_arith:
      case Taint::divide: return elementwise(e, *o, st);
      case Taint::select: return select(e, *o, st);
      case Taint::load: return o->block ? store_like(e, *o, st) : load(e, *o, st);
      case Taint::splat:
      case Taint::broadcast:
      case Taint::linear:
      case Taint::trans:
      case Taint::join:
      case Taint::split:
      case Taint::cat:
      case Taint::unsplat:
      case Taint::gather: return shape(e, *o, st);
      case Taint::reduce:
      case Taint::scan: return reduce_scan(e, *o, st);
      case Taint::dot:
      case Taint::dot_other: return dot(e, *o, st);
      case Taint::scalar_any: return scalar_any(e, *o, st);
      case Taint::none: return;
      case Taint::store:
      case Taint::atomic_rmw:
      case Taint::atomic_cas:
      case Taint::histogram:
      case Taint::desc_access:
      case Taint::cond:
      case Taint::for_bounds:
      case Taint::assert_: return store_like(e, *o, st);
    }
  }

  void on_transfer(const exec::TransferEvent& e, State& st) {
    // Parallel assignment: read every poisoned source before writing any destination.
    st.moves.clear();
    st.cleans.clear();
    for (int i = 0; i < e.count; ++i) {
      auto d = plan.tracked.find(e.dst[i]);
      if (d == plan.tracked.end()) continue;
      auto s = plan.tracked.find(e.src[i]);
      if (s != plan.tracked.end() && st.sh[s->second].any)
        st.moves.emplace_back(d->second, st.sh[s->second].lanes);
      else
        st.cleans.push_back(d->second);
    }
    for (int c : st.cleans) set_clean(st, c);
    for (auto& [d, lanes] : st.moves) {
      uint32_t* out = out_lanes(st, d);
      const int64_t n = plan.numel[d];
      for (int64_t i = 0; i < n; ++i) out[i] = lanes.size() == 1 ? lanes[0] : lanes[static_cast<size_t>(i)];
      finalize(st, d, e.pid);
    }
  }

  // -- out of bounds and asserts -------------------------------------------------------------------

  static Kind access_kind(exec::AccessKind k) {
    switch (k) {
      case exec::AccessKind::load: return Kind::oob_load;
      case exec::AccessKind::store: return Kind::oob_store;
      case exec::AccessKind::atomic: return Kind::oob_atomic;
    }
    return Kind::oob_atomic;
  }

  void on_access(const exec::AccessEvent& e, State& st) {
    if (!e.bad_lanes) return;
    std::lock_guard<std::mutex> g(mu);
    if (!recording()) return;
    {
      Agg* oob = nullptr;
      Agg* null = nullptr;  // below exec::Memory::kNullPage
      Agg* wild = nullptr;  // anywhere else outside every buffer
      for (int64_t i = 0; i < e.lanes; ++i) {
        if (!e.mask[i]) continue;
        exec::Where w = e.memory->where(e.addrs[i], e.elem_bytes);
        if (w.in_bounds) continue;
        Agg* a;
        if (!w.buffer) {
          const bool is_null = exec::Memory::is_null(e.addrs[i]);
          Agg*& slot = is_null ? null : wild;
          if (!slot) {
            slot = &agg(is_null ? Kind::null_pointer : Kind::wild_pointer, e.op, nullptr);
            note_pid(*slot, e.pid, st);
            slot->occurrences++;
          }
          a = slot;
          a->has_addr = true;
          a->addr_min = std::min(a->addr_min, e.addrs[i]);
          a->addr_max = std::max(a->addr_max, e.addrs[i]);
        } else {
          if (!oob) {
            oob = &agg(access_kind(e.kind), e.op, nullptr);
            note_pid(*oob, e.pid, st);
            oob->occurrences++;
          }
          a = oob;
          const exec::Buffer& b = *w.buffer;
          int eb = std::max(1, ir::elem_bytes(b.dtype));
          if (!a->has_buffer) {
            a->has_buffer = true;
            a->buffer = buffer_info(b);
          }
          int64_t off = w.offset >= 0 ? w.offset / eb : -((-w.offset + eb - 1) / eb);
          a->off_min = std::min(a->off_min, off);
          a->off_max = std::max(a->off_max, off);
        }
        a->lanes++;
        keep_first<int64_t>(a->first_lanes, i, static_cast<size_t>(opts.max_first), i64_less);
      }
      if (oob || null || wild) recorded();
    }
  }

  void on_assert(const exec::AssertEvent& e, State& st) {
    std::lock_guard<std::mutex> g(mu);
    if (!recording()) return;
    {
      Agg& a = agg(Kind::assert_failed, e.op, nullptr);
      note_pid(a, e.pid, st);
      a.occurrences++;
      a.lanes += e.failed_lanes;
      if (e.first_lane >= 0)
        keep_first<int64_t>(a.first_lanes, e.first_lane, static_cast<size_t>(opts.max_first), i64_less);
      if (a.message.empty()) a.message = e.message;
      recorded();
    }
  }

  // -- findings ----------------------------------------------------------------------------------

  size_t finish(const LaunchInfo& info) {
    std::lock_guard<std::mutex> g(mu);
    std::vector<Finding> out;
    for (auto& [key, a] : aggs) {
      Finding f;
      f.kind = a.kind;
      f.kernel = info.kernel;
      f.site = sites.of(a.site);
      if (a.cause && a.cause != a.site) f.cause = sites.of(a.cause);
      if (a.use && a.use != a.site) f.use = sites.of(a.use);
      f.programs = a.programs;
      f.first_programs = a.first_pids;
      f.last_program = a.last_pid;
      f.lanes = a.lanes;
      f.first_lanes = a.first_lanes;
      f.occurrences = a.occurrences;
      if (a.has_buffer) {
        f.buffer = a.buffer;
        f.has_offsets = true;
        f.offset_min = a.off_min;
        f.offset_max = a.off_max;
        f.elements_before = a.off_min < 0 ? -a.off_min : 0;
        f.elements_past = a.off_max >= a.buffer.numel ? a.off_max - a.buffer.numel + 1 : 0;
      }
      if (a.has_addr) {
        f.has_addresses = true;
        f.address_min = a.addr_min;
        f.address_max = a.addr_max;
      }
      f.message = a.message;
      // An NKI instruction reaches outside a tensor only through runtime offsets (nki/nki.h, View).
      if ((f.kind == Kind::oob_load || f.kind == Kind::oob_store) && f.site.op.starts_with("nki."))
        f.hint =
            "check or clamp the indices of the vector_offset / scalar_offset tile before the instruction "
            "(dma_copy's oob_mode=nisa.oob_mode.skip drops the elements outside instead)";
      f.launch_stack = info.stack;
      f.summary = summarize(f);
      out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(), [](const Finding& x, const Finding& y) {
      return std::tie(x.site.ttir_line, x.site.ttir_col, x.kind) <
             std::tie(y.site.ttir_line, y.site.ttir_col, y.kind);
    });
    aggs.clear();
    for (auto& f : out) findings.push_back(std::move(f));
    return out.size();
  }
};

// ---------------------------------------------------------------------------------------------

Sanitizer::Sanitizer(const ir::Module& module, bool abort_on_first)
    : Sanitizer(module, SanitizerOptions{abort_on_first}) {}

Sanitizer::Sanitizer(const ir::Module& module, const SanitizerOptions& opts)
    : impl_(std::make_unique<Impl>(module, opts)) {}

Sanitizer::~Sanitizer() = default;

unsigned Sanitizer::kinds() const { return impl_->kinds; }

exec::Subscription Sanitizer::on_launch_begin(const exec::LaunchContext& ctx) {
  impl_->launch = &ctx;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->stopped = false;
  }
  exec::Subscription sub;
  sub.kinds = impl_->kinds;
  // The tag of a watched op is its taint record, so on_op needs no lookup.
  sub.ops = [this](const ir::Op& op) -> const void* {
    auto it = impl_->plan.ops.find(&op);
    return it == impl_->plan.ops.end() ? nullptr : &it->second;
  };
  sub.values = [this](const ir::Value& v) { return impl_->plan.tracked.count(&v) != 0; };
  return sub;
}

void Sanitizer::on_launch_end(const exec::LaunchContext&, const exec::LaunchStats&) {
  impl_->launch = nullptr;
}

void* Sanitizer::on_program_begin(exec::ProgramId) { return impl_->begin_program(); }

void Sanitizer::on_program_end(exec::ProgramId, void* state) {
  impl_->end_program(static_cast<State*>(state));
}

void Sanitizer::on_access(const exec::AccessEvent& e, void* state) {
  impl_->on_access(e, *static_cast<State*>(state));
}

void Sanitizer::on_op(const exec::OpEvent& e, void* state) { impl_->on_op(e, *static_cast<State*>(state)); }

void Sanitizer::on_transfer(const exec::TransferEvent& e, void* state) {
  impl_->on_transfer(e, *static_cast<State*>(state));
}

void Sanitizer::on_assert(const exec::AssertEvent& e, void* state) {
  impl_->on_assert(e, *static_cast<State*>(state));
}

size_t Sanitizer::finish(const LaunchInfo& info) { return impl_->finish(info); }

const std::vector<Finding>& Sanitizer::findings() const { return impl_->findings; }

size_t Sanitizer::watched_ops() const { return impl_->plan.ops.size(); }

size_t Sanitizer::retained_bytes() const {
  size_t n = 0;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    for (const auto& [key, a] : impl_->aggs) {
      n += sizeof(key) + sizeof(a) + 4 * sizeof(void*);  // a map node: the pair and the tree links
      n += a.first_pids.capacity() * sizeof(ProgramId) + a.first_lanes.capacity() * sizeof(int64_t);
      n += (a.buffer.shape.capacity() + a.buffer.strides.capacity()) * sizeof(int64_t);
      n += a.buffer.name.capacity() + a.buffer.dtype.capacity() + a.message.capacity();
    }
  }
  std::lock_guard<std::mutex> g(impl_->pool_mu);
  for (const auto& st : impl_->states)
    n += st->counted.capacity() + st->counted_ids.capacity() * sizeof(uint32_t);
  return n;
}

void Sanitizer::collect(const LaunchInfo& info, std::vector<Finding>& out) {
  const size_t n = finish(info);
  const auto& all = impl_->findings;
  out.insert(out.end(), all.end() - static_cast<std::ptrdiff_t>(n), all.end());
}

nlohmann::json Sanitizer::statistics() const {
  return {{"watched_ops", impl_->plan.ops.size()}, {"tracked_values", impl_->plan.tracked.size()}};
}

}  // namespace tilescope::analysis
