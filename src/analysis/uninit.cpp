// Uninitialized memory: the process-wide Definedness store and the `uninit` analysis (see
// include/tilescope/analysis/uninit.h for the rules).
#include "tilescope/analysis/uninit.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "site.h"
#include "tilescope/exec/memory.h"

namespace tilescope::analysis {

// ---------------------------------------------------------------------------------------------
// TrackedAllocation

namespace {

// Sentinel::float_nan: four little-endian float32 quiet NaNs: 0x7fd35aa5, 0x7fe16996, 0x7fc44bb4,
// 0x7ff07887.
constexpr uint8_t kFloatPattern[Definedness::kWindow] = {0xa5, 0x5a, 0xd3, 0x7f, 0x96, 0x69, 0xe1, 0x7f,
                                                         0xb4, 0x4b, 0xc4, 0x7f, 0x87, 0x78, 0xf0, 0x7f};
// Sentinel::int_bytes: 16 distinct bytes, none of 0x00, 0x01, 0x7f, 0x80, 0xff.
constexpr uint8_t kIntPattern[Definedness::kWindow] = {0xa5, 0x5a, 0xd3, 0x96, 0x69, 0xe1, 0xb4, 0x4b,
                                                       0xc4, 0x87, 0x78, 0xf0, 0x9c, 0xc9, 0xb8, 0x8b};

const uint8_t* pattern(Sentinel s) { return s == Sentinel::int_bytes ? kIntPattern : kFloatPattern; }

uint8_t load_byte(const std::byte* p) {
  // Other programs may store to neighbouring bytes meanwhile: read without a data race.
  return __atomic_load_n(reinterpret_cast<const uint8_t*>(p), __ATOMIC_RELAXED);
}

}  // namespace

uint8_t Definedness::sentinel(uint64_t off, Sentinel s) { return pattern(s)[off % kWindow]; }

TrackedAllocation::TrackedAllocation(uint64_t id_, std::byte* host_, uint64_t bytes_, AllocationSite site_,
                                     Sentinel sentinel_)
    : id(id_),
      host(host_),
      bytes(bytes_),
      site(std::move(site_)),
      sentinel(sentinel_),
      pages_((bytes_ + kPage - 1) / kPage),
      full_(pages_.size(), 0),
      defined_in_page_(pages_.size(), 0),
      undefined_(bytes_) {}

bool TrackedAllocation::defined(uint64_t off) const {
  const uint64_t p = off / kPage;
  if (full_[p]) return true;
  const uint64_t* w = pages_[p].get();
  if (!w) return false;
  const uint64_t b = off % kPage;
  return (w[b / 64] >> (b % 64)) & 1;
}

void TrackedAllocation::define_range(uint64_t off, uint64_t n) {
  const uint64_t end = std::min(bytes, off + n);
  uint64_t newly = 0;
  while (off < end) {
    const uint64_t p = off / kPage;
    const uint64_t page_end = std::min(end, (p + 1) * kPage);
    if (full_[p]) {
      off = page_end;
      continue;
    }
    auto& words = pages_[p];
    if (!words) words = std::make_unique<uint64_t[]>(kWords);  // zeroed
    uint64_t page_new = 0;
    for (uint64_t b = off; b < page_end;) {
      const uint64_t i = b % kPage;
      const uint64_t bit = i % 64;
      const uint64_t take = std::min<uint64_t>(64 - bit, page_end - b);
      const uint64_t mask = (take == 64 ? ~uint64_t{0} : ((uint64_t{1} << take) - 1)) << bit;
      page_new += static_cast<uint64_t>(std::popcount(mask & ~words[i / 64]));
      words[i / 64] |= mask;
      b += take;
    }
    defined_in_page_[p] = static_cast<uint16_t>(defined_in_page_[p] + page_new);
    newly += page_new;
    if (defined_in_page_[p] == std::min(kPage, bytes - p * kPage)) {
      full_[p] = 1;
      words.reset();
    }
    off = page_end;
  }
  undefined_.fetch_sub(newly, std::memory_order_relaxed);
}

void TrackedAllocation::define(uint64_t off, uint64_t n) {
  if (off >= bytes) return;
  define_range(off, n);
}

bool TrackedAllocation::window_written(uint64_t w) {
  const uint64_t lo = w * Definedness::kWindow;
  const uint64_t hi = std::min(bytes, lo + Definedness::kWindow);
  for (uint64_t b = lo; b < hi; ++b)
    if (!defined(b) && load_byte(host + b) != Definedness::sentinel(b, sentinel)) return true;
  return false;
}

bool TrackedAllocation::reads_undefined(uint64_t off, uint64_t n) {
  const uint64_t end = std::min(bytes, off + n);
  bool undefined = false;
  for (uint64_t b = off; b < end; ++b) {
    if (defined(b)) continue;
    const uint64_t w = b / Definedness::kWindow;
    if (window_written(w)) {
      define_range(w * Definedness::kWindow, Definedness::kWindow);
      continue;
    }
    undefined = true;
  }
  return undefined;
}

bool TrackedAllocation::all_defined(uint64_t off, uint64_t n) const {
  const uint64_t end = std::min(bytes, off + n);
  while (off < end) {
    const uint64_t p = off / kPage;
    const uint64_t page_end = std::min(end, (p + 1) * kPage);
    if (!full_[p]) {
      const uint64_t* words = pages_[p].get();
      if (!words) return false;
      for (uint64_t b = off; b < page_end;) {
        const uint64_t i = b % kPage;
        const uint64_t bit = i % 64;
        const uint64_t take = std::min<uint64_t>(64 - bit, page_end - b);
        const uint64_t mask = (take == 64 ? ~uint64_t{0} : ((uint64_t{1} << take) - 1)) << bit;
        if ((words[i / 64] & mask) != mask) return false;
        b += take;
      }
    }
    off = page_end;
  }
  return true;
}

uint64_t TrackedAllocation::bitmap_bytes() const {
  uint64_t n = 0;
  for (const auto& p : pages_) n += p ? kPage / 8 : 0;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Definedness

Definedness& Definedness::process() {
  static Definedness* d = new Definedness;  // never destroyed: finalizers may run at interpreter exit
  return *d;
}

uint64_t Definedness::track(std::byte* host, uint64_t bytes, AllocationSite site, Sentinel sentinel) {
  if (!host || bytes == 0) return 0;
  // The pattern, then copies of what is filled so far (doubling, up to 1 MiB a copy).
  const uint64_t first = std::min(kWindow, bytes);
  std::memcpy(host, pattern(sentinel), first);
  for (uint64_t done = first; done < bytes;) {
    const uint64_t n = std::min({done, bytes - done, uint64_t{1} << 20});
    std::memcpy(host + done, host, n);
    done += n;
  }
  std::lock_guard<std::mutex> g(mu_);
  const auto lo = reinterpret_cast<uintptr_t>(host);
  const auto hi = lo + bytes;
  // Forget what overlaps: that memory was freed and is now this allocation (the one starting before
  // `lo` if it reaches past it, and those starting in [lo, hi)).
  auto from = by_host_.lower_bound(host);
  if (from != by_host_.begin()) {
    const auto prev = std::prev(from);
    if (reinterpret_cast<uintptr_t>(prev->first) + prev->second->bytes > lo) from = prev;
  }
  auto to = from;
  for (; to != by_host_.end() && reinterpret_cast<uintptr_t>(to->first) < hi; ++to)
    host_of_.erase(to->second->id);
  by_host_.erase(from, to);
  auto a = std::make_shared<TrackedAllocation>(next_id_++, host, bytes, std::move(site), sentinel);
  by_host_.emplace(host, a);
  host_of_.emplace(a->id, host);
  return a->id;
}

void Definedness::forget(uint64_t id) {
  std::lock_guard<std::mutex> g(mu_);
  const auto h = host_of_.find(id);
  if (h == host_of_.end()) return;
  if (auto it = by_host_.find(h->second); it != by_host_.end() && it->second->id == id) by_host_.erase(it);
  host_of_.erase(h);
}

std::vector<std::shared_ptr<TrackedAllocation>> Definedness::overlapping(const std::byte* host,
                                                                         uint64_t bytes) const {
  std::vector<std::shared_ptr<TrackedAllocation>> out;
  std::lock_guard<std::mutex> g(mu_);
  if (by_host_.empty() || bytes == 0) return out;
  const auto lo = reinterpret_cast<uintptr_t>(host);
  const auto hi = lo + bytes;
  auto it = by_host_.upper_bound(host);
  if (it != by_host_.begin()) --it;  // the last one starting at or before `host` may reach into it
  for (; it != by_host_.end() && reinterpret_cast<uintptr_t>(it->first) < hi; ++it) {
    const auto alo = reinterpret_cast<uintptr_t>(it->first);
    if (alo + it->second->bytes > lo && it->second->undefined_bytes() > 0) out.push_back(it->second);
  }
  return out;
}

std::shared_ptr<TrackedAllocation> Definedness::find(const std::byte* p) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_host_.upper_bound(p);
  if (it == by_host_.begin()) return nullptr;
  --it;
  return p < it->first + it->second->bytes ? it->second : nullptr;
}

size_t Definedness::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return by_host_.size();
}

// ---------------------------------------------------------------------------------------------
// The analysis

namespace {

using exec::ProgramId;

/// Per program: the sites it has been counted at (a flag per site id), so it counts once per site.
struct State {
  std::vector<uint8_t> counted;
  std::vector<uint32_t> counted_ids;
  // One access's undefined lanes: (allocation, lane, element offset in the buffer, the buffer).
  std::vector<std::tuple<const TrackedAllocation*, int64_t, int64_t, const exec::Buffer*>> hits;
  // With evidence: executions so far of each op this program read through (the trace's `seq`).
  std::unordered_map<const ir::Op*, int64_t> seq;
};

}  // namespace

struct UninitAnalysis::Impl {
  struct Agg {
    uint32_t id = 0;
    const ir::Op* op = nullptr;
    std::shared_ptr<TrackedAllocation> alloc;
    int64_t programs = 0;
    std::vector<ProgramId> first_pids;
    ProgramId last_pid{0, 0, 0};
    int64_t lanes = 0;
    std::vector<int64_t> first_lanes;
    int64_t occurrences = 0;
    BufferInfo buffer;
    int64_t off_min = INT64_MAX, off_max = INT64_MIN;
    std::vector<Finding::Evidence> evidence;  // with keep_evidence: per program execution, in record order
  };

  const ir::Module& m;
  UninitOptions opts;
  const exec::Memory* memory = nullptr;
  // Per buffer id of the launch: the tracked allocations it overlaps (most have none).
  std::vector<std::vector<std::shared_ptr<TrackedAllocation>>> tracked;
  int64_t tracked_buffers = 0;
  bool evidence = false;  // keep_evidence

  std::mutex pool_mu;
  std::vector<std::unique_ptr<State>> states;
  std::vector<State*> free_states;

  std::mutex mu;  // guards aggs
  // One finding per op and allocation site: the allocations one line makes during a launch (an NKI
  // kernel's tile allocated in a loop, nki/nki.h) are one finding of that launch, as long as they are the
  // same buffer (name and size); an allocation of unknown site is its own.
  using AggKey = std::tuple<const ir::Op*, std::string, int, std::string, uint64_t, uint64_t>;
  std::map<AggKey, Agg> aggs;
  SiteMaker sites;
  // tt.atomic_rmw exch ops whose old value the kernel never uses: they only write (the value stored does
  // not depend on what was there), so they are not checked as reads.
  std::unordered_set<const ir::Op*> write_only;

  Impl(const ir::Module& mod, UninitOptions o) : m(mod), opts(o), sites(mod) {
    std::unordered_set<const ir::Value*> used;
    std::vector<const ir::Op*> exch;
    auto walk = [&](auto& self, const ir::Region& r) -> void {
      for (auto& b : r.blocks)
        for (auto& op : b->ops) {
          for (const ir::Value* v : op->operands) used.insert(v);
          for (auto& so : op->successor_operands)
            for (const ir::Value* v : so) used.insert(v);
          if (op->name == "tt.atomic_rmw" && !op->results.empty()) {
            const ir::Attr* k = op->attr("atomic_rmw_op");
            const bool is_exch =
                k && ((k->kind == ir::Attr::Kind::Int && k->i == 10) ||
                      ((k->kind == ir::Attr::Kind::Keyword || k->kind == ir::Attr::Kind::String) &&
                       k->s.find("exch") != std::string::npos));
            if (is_exch) exch.push_back(op.get());
          }
          for (auto& sub : op->regions) self(self, *sub);
        }
    };
    for (auto& f : mod.functions) walk(walk, f->body);
    for (const ir::Op* op : exch)
      if (!used.count(op->result(0))) write_only.insert(op);
  }

  TrackedAllocation* alloc_of(const exec::Buffer& b, uint64_t off) const {
    if (b.id < 0 || static_cast<size_t>(b.id) >= tracked.size()) return nullptr;
    const std::byte* h = b.host + off;
    for (const auto& a : tracked[b.id])
      if (h >= a->host && h < a->host + a->bytes) return a.get();
    return nullptr;
  }

  /// The lanes of an access to check or define, as runs of consecutive active lanes at consecutive
  /// addresses inside one tracked allocation: calls f(alloc, byte offset in alloc, bytes, first lane,
  /// lanes, byte offset in the buffer, buffer) with alloc->mu() held. Lanes outside their buffer, masked-off
  /// lanes and lanes in no tracked allocation are skipped. `dense`: AccessEvent::dense (the runs are then
  /// found without a look at each lane).
  template <class F>
  void runs(int64_t n, const uint64_t* addrs, const uint8_t* mask, bool mask_scalar, int eb, bool dense,
            F&& f) {
    std::unique_lock<std::mutex> held;
    TrackedAllocation* cur = nullptr;
    const auto active = [&](int64_t i) { return !mask || mask[mask_scalar ? 0 : i]; };
    const auto ueb = static_cast<uint64_t>(eb);
    if (n > 0) {  // every lane (masked-off ones too) in one buffer with nothing tracked: nothing to do
      uint64_t differ = 0;  // the bits where some lane's address differs from lane 0's (vectorises)
      for (int64_t j = 1; j < n; ++j) differ |= addrs[j] ^ addrs[0];
      const int k = memory->region(addrs[0]);
      if ((differ >> exec::Memory::kRegionShift) == 0 &&
          (k < 0 || static_cast<size_t>(k) >= tracked.size() || tracked[k].empty()))
        return;
    }
    for (int64_t i = 0; i < n;) {
      const int k = memory->region(addrs[i]);
      if (!active(i) || k < 0 || static_cast<size_t>(k) >= tracked.size() || tracked[k].empty()) {
        ++i;  // masked off, in no buffer, or in a buffer with nothing tracked
        continue;
      }
      exec::Where w = memory->where(addrs[i], eb);
      if (!w.in_bounds) {
        ++i;
        continue;
      }
      const auto boff = static_cast<uint64_t>(w.offset);
      TrackedAllocation* a = alloc_of(*w.buffer, boff);
      // The access may begin before a tracked allocation that starts inside the element.
      if (!a) a = alloc_of(*w.buffer, boff + ueb - 1);
      if (!a) {
        ++i;
        continue;
      }
      if (a != cur) {
        held = std::unique_lock<std::mutex>(a->mu());
        cur = a;
      }
      const std::byte* h = w.buffer->host + w.offset;
      int64_t count = 1;
      if (h >= a->host) {  // extend over the following lanes that continue the run
        const auto lo = static_cast<uint64_t>(h - a->host);
        if (dense) {  // AccessEvent::dense: the lanes go on consecutively, all active, in this buffer
          const auto fit =
              static_cast<int64_t>(std::min((a->bytes - lo) / ueb, (w.buffer->bytes - boff) / ueb));
          count = std::max<int64_t>(1, std::min(n - i, fit));
        }
        while (i + count < n && active(i + count) && addrs[i + count] == addrs[i + count - 1] + ueb &&
               lo + (static_cast<uint64_t>(count) + 1) * ueb <= a->bytes &&
               boff + (static_cast<uint64_t>(count) + 1) * ueb <= w.buffer->bytes)
          ++count;
        f(*a, lo, static_cast<uint64_t>(count) * ueb, i, count, boff, *w.buffer);
      } else {  // one lane straddling the allocation's start: the bytes inside it
        f(*a, 0, static_cast<uint64_t>(h + eb - a->host), i, count, boff, *w.buffer);
      }
      i += count;
    }
  }

  /// A read of `n` lanes: undefined ones become findings at `op`; `define` marks them defined after
  /// (an atomic writes what it read).
  void read(const ir::Op* op, ProgramId pid, State& st, int64_t n, const uint64_t* addrs, const uint8_t* mask,
            bool mask_scalar, int eb, bool define, int part = 0, bool dense = false) {
    st.hits.clear();
    // A later part of an execution (AccessEvent::part) belongs to the execution its part 0 began.
    const int64_t seq = !evidence ? -1 : part > 0 ? st.seq[op] - 1 : st.seq[op]++;
    const auto ueb = static_cast<uint64_t>(eb);
    runs(n, addrs, mask, mask_scalar, eb, dense,
         [&](TrackedAllocation& a, uint64_t off, uint64_t len, int64_t lane, int64_t count, uint64_t boff,
             const exec::Buffer& b) {
           if (!a.all_defined(off, len)) {
             const auto buf_eb = static_cast<uint64_t>(std::max(1, ir::elem_bytes(b.dtype)));
             const uint64_t lane_bytes = count == 1 ? len : ueb;
             for (int64_t k = 0; k < count; ++k) {
               if (a.reads_undefined(off + static_cast<uint64_t>(k) * ueb, lane_bytes))
                 st.hits.emplace_back(&a, lane + k,
                                      static_cast<int64_t>((boff + static_cast<uint64_t>(k) * ueb) / buf_eb),
                                      &b);
             }
           }
           if (define) a.define(off, len);
         });
    if (!st.hits.empty()) record(op, pid, st, seq);
  }

  void record(const ir::Op* op, ProgramId pid, State& st, int64_t seq) {
    std::lock_guard<std::mutex> g(mu);
    const TrackedAllocation* last = nullptr;
    Agg* a = nullptr;
    for (auto& [alloc, lane, elem, buf] : st.hits) {
      if (alloc != last) {
        last = alloc;
        const bool sited = alloc->site.line > 0;
        auto [it, fresh] =
            aggs.try_emplace(AggKey{op, sited ? alloc->site.file : std::string(), alloc->site.line, buf->name,
                                    buf->bytes, sited ? 0 : alloc->id});
        a = &it->second;
        if (fresh) {
          a->id = static_cast<uint32_t>(aggs.size() - 1);
          a->op = op;
          for (auto& v : tracked)
            for (auto& t : v)
              if (t.get() == alloc) a->alloc = t;
          const exec::Buffer& b = *buf;
          a->buffer.name = b.name;
          a->buffer.dtype = ir::elem_name(b.dtype);
          a->buffer.shape = b.shape;
          a->buffer.strides = b.strides;
          a->buffer.bytes = b.bytes;
          a->buffer.numel =
              static_cast<int64_t>(b.bytes / static_cast<uint64_t>(std::max(1, ir::elem_bytes(b.dtype))));
        }
        a->occurrences++;
        if (a->id >= st.counted.size()) st.counted.resize(a->id + 1, 0);
        if (!st.counted[a->id]) {
          st.counted[a->id] = 1;
          st.counted_ids.push_back(a->id);
          if (a->programs++ == 0 || pid_less(a->last_pid, pid)) a->last_pid = pid;
          keep_first<ProgramId>(a->first_pids, pid, static_cast<size_t>(opts.max_first), pid_less);
        }
      }
      if (evidence) {  // this execution's elements as runs, in lane order
        if (a->evidence.empty() || a->evidence.back().pid != pid || a->evidence.back().seq != seq)
          a->evidence.push_back({pid, 0, seq, {}});
        std::vector<int64_t>& r = a->evidence.back().runs;
        if (!r.empty() && r[r.size() - 2] + r.back() == elem)
          ++r.back();
        else
          r.insert(r.end(), {elem, 1});
      }
      a->lanes++;
      keep_first<int64_t>(a->first_lanes, lane, static_cast<size_t>(opts.max_first), i64_less);
      a->off_min = std::min(a->off_min, elem);
      a->off_max = std::max(a->off_max, elem);
    }
  }

  void findings(std::vector<Finding>& out, const LaunchInfo& info) {
    std::lock_guard<std::mutex> g(mu);
    std::vector<Finding> found;
    for (auto& [key, a] : aggs) {
      Finding f;
      f.kind = Kind::uninitialized_read;
      f.kernel = info.kernel;
      f.site = sites.of(a.op);
      f.programs = a.programs;
      f.first_programs = a.first_pids;
      f.last_program = a.last_pid;
      f.lanes = a.lanes;
      f.first_lanes = a.first_lanes;
      f.occurrences = a.occurrences;
      f.buffer = a.buffer;
      f.has_offsets = true;
      f.offset_min = a.off_min;
      f.offset_max = a.off_max;
      OpSite s;
      s.op = a.alloc->site.call;
      s.file = a.alloc->site.file;
      s.line = a.alloc->site.line;
      s.source_line = sites.source_line(s.file, s.line);
      f.allocation = std::move(s);
      const bool numpy = a.alloc->site.call.rfind("numpy", 0) == 0 || a.alloc->site.call.rfind("np.", 0) == 0;
      if (a.alloc->site.call.rfind("nl.", 0) == 0)  // an NKI kernel's SBUF / PSUM tensor (nki/nki.h)
        f.hint =
            "write every element of the tile before an instruction reads it (nl.zeros, nisa.memset, or a "
            "dma_copy that covers the whole tile)";
      else
        f.hint = fmt::format(
            "zero the buffer ({}) or write every element the kernel reads (mask the load, or the store that "
            "should have written it)",
            numpy ? "numpy.zeros" : "torch.zeros");
      f.launch_stack = info.stack;
      f.summary = summarize(f);
      f.evidence = std::move(a.evidence);
      std::stable_sort(f.evidence.begin(), f.evidence.end(),
                       [](const Finding::Evidence& x, const Finding::Evidence& y) {
                         return pid_less(x.pid, y.pid) || (x.pid == y.pid && x.seq < y.seq);
                       });
      found.push_back(std::move(f));
    }
    std::sort(found.begin(), found.end(), [](const Finding& x, const Finding& y) {
      return std::tie(x.site.ttir_line, x.site.ttir_col) < std::tie(y.site.ttir_line, y.site.ttir_col);
    });
    aggs.clear();
    for (auto& f : found) out.push_back(std::move(f));
  }
};

UninitAnalysis::UninitAnalysis(const ir::Module& module, UninitOptions opts)
    : impl_(std::make_unique<Impl>(module, opts)) {}

UninitAnalysis::~UninitAnalysis() = default;

exec::Subscription UninitAnalysis::on_launch_begin(const exec::LaunchContext& ctx) {
  Impl& I = *impl_;
  I.memory = ctx.memory;
  I.tracked.clear();
  I.tracked_buffers = 0;
  exec::Subscription sub;
  if (!ctx.memory) return sub;
  const Definedness& store = Definedness::process();
  if (store.size() == 0) return sub;
  for (const exec::Buffer& b : ctx.memory->buffers()) {
    if (b.id >= static_cast<int>(I.tracked.size())) I.tracked.resize(static_cast<size_t>(b.id) + 1);
    I.tracked[b.id] = store.overlapping(b.host, b.bytes);
    I.tracked_buffers += I.tracked[b.id].empty() ? 0 : 1;
  }
  if (I.tracked_buffers == 0) return sub;  // nothing to check: no event at all
  sub.kinds = exec::kAccess | exec::kOpBegin | exec::kProgram;
  // Atomics are checked before they run (their access event comes after the write).
  sub.ops = [&I](const ir::Op& op) -> const void* {
    if (I.write_only.count(&op)) return nullptr;
    return op.name == "tt.atomic_rmw" || op.name == "tt.atomic_cas" ? &op : nullptr;
  };
  return sub;
}

void UninitAnalysis::on_launch_end(const exec::LaunchContext&, const exec::LaunchStats&) {
  impl_->memory = nullptr;
}

void* UninitAnalysis::on_program_begin(exec::ProgramId) {
  Impl& I = *impl_;
  State* st;
  {
    std::lock_guard<std::mutex> g(I.pool_mu);
    if (I.free_states.empty()) {
      I.states.push_back(std::make_unique<State>());
      I.free_states.push_back(I.states.back().get());
    }
    st = I.free_states.back();
    I.free_states.pop_back();
  }
  for (uint32_t id : st->counted_ids) st->counted[id] = 0;
  st->counted_ids.clear();
  st->seq.clear();
  return st;
}

void UninitAnalysis::on_program_end(exec::ProgramId, void* state) {
  std::lock_guard<std::mutex> g(impl_->pool_mu);
  impl_->free_states.push_back(static_cast<State*>(state));
}

void UninitAnalysis::on_op_begin(const exec::OpEvent& e, void* state) {
  const ir::Op& op = *e.op;
  if (op.results.empty() || op.operands.empty()) return;
  const int eb = ir::elem_bytes(op.results[0]->type->elem);
  const exec::ValueRef ptr = e.operand(0);
  const int64_t n = ptr.numel();
  const uint8_t* mask = nullptr;
  bool mask_scalar = false;
  if (op.name == "tt.atomic_rmw" && op.operands.size() > 2) {
    const exec::ValueRef m = e.operand(2);
    mask = m.as<uint8_t>();
    mask_scalar = m.numel() == 1;
  }
  impl_->read(e.op, e.pid, *static_cast<State*>(state), n, ptr.as<uint64_t>(), mask, mask_scalar, eb, true);
}

void UninitAnalysis::on_access(const exec::AccessEvent& e, void* state) {
  Impl& I = *impl_;
  // A dense tile, or an active prefix (the rest masked off) taken as a dense tile of its lanes.
  const int64_t run = e.run_lanes();
  const int64_t lanes = run > 0 ? run : e.lanes;
  if (e.kind == exec::AccessKind::load) {
    I.read(e.op, e.pid, *static_cast<State*>(state), lanes, e.addrs, e.mask, false, e.elem_bytes, false,
           e.part, run > 0);
    return;
  }
  // A store that begins an execution (an NKI instruction writing before it reads) counts it.
  if (e.kind == exec::AccessKind::store && e.part == 0 && I.evidence) static_cast<State*>(state)->seq[e.op]++;
  // Stores, and atomics (rmw / cas were checked at op begin; descriptor reductions only write here).
  I.runs(lanes, e.addrs, e.mask, false, e.elem_bytes, run > 0,
         [](TrackedAllocation& a, uint64_t off, uint64_t len, int64_t, int64_t, uint64_t,
            const exec::Buffer&) { a.define(off, len); });
}

void UninitAnalysis::collect(const LaunchInfo& info, std::vector<Finding>& out) {
  impl_->findings(out, info);
}

void UninitAnalysis::keep_evidence() { impl_->evidence = true; }

nlohmann::json UninitAnalysis::statistics() const { return {{"tracked_buffers", impl_->tracked_buffers}}; }

}  // namespace tilescope::analysis
