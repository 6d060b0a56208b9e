// The race detector (see races.h): per-byte shadow state with FastTrack-style epochs, sparse vector clocks
// per program and per atomic address, findings grouped by (kind, pair of sites, buffer).
#include "tilescope/analysis/races.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "site.h"
#include "tilescope/exec/memory.h"
#include "tilescope/ir/ops.h"

namespace tilescope::analysis {

namespace {

using exec::AccessKind;
using exec::ProgramId;
using ir::Op;

constexpr uint32_t kAtomicBit = 1u << 31;  // Epoch::site: the access was atomic
/// Epoch::lane of a scalar access: Triton runs scalar ops in every thread of the program (uniformly), so a
/// scalar access is not one lane's and takes no part in cross-lane races.
constexpr uint32_t kScalarLane = ~uint32_t{0};

/// One access in the shadow: which program (linear id + 1; 0: none), at which of its epochs, at which op
/// (index into Impl::ops, | kAtomicBit for atomics) and lane.
struct Epoch {
  uint32_t prog = 0;
  uint32_t clock = 0;
  uint32_t site = 0;
  uint32_t lane = 0;
};

/// The shadow of one byte: the last write and up to two reads not ordered before it.
struct Cell {
  Epoch w, r1, r2;
};

/// The shadow of kShadowPageBytes bytes. Cells cover `gran` bytes each: the element size of the first
/// access when it was aligned to it (1, 2, 4 or 8), so a page of f32 data takes a cell per element. While
/// every access covers whole aligned cells, a cell stands exactly for each of its bytes; the first access
/// that does not (another element size, a misaligned address) splits the page into byte cells, each a
/// copy of the cell it was part of, which keeps it exact.
struct Page {
  std::mutex mu;
  uint32_t gran = 0;  // 0: no cells yet
  std::unique_ptr<Cell[]> cells;
};

/// A sparse vector clock: (program + 1, clock), sorted by program. Absent entries are 0.
using VC = std::vector<std::pair<uint32_t, uint32_t>>;

uint32_t vc_get(const VC& v, uint32_t prog) {
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(prog, uint32_t{0}));
  return it != v.end() && it->first == prog ? it->second : 0;
}

void vc_join(VC& a, const VC& b) {
  if (b.empty()) return;
  VC out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].first < a[i].first) {
      out.push_back(b[j++]);
    } else {
      out.emplace_back(a[i].first, std::max(a[i].second, b[j].second));
      ++i, ++j;
    }
  }
  a = std::move(out);
}

/// What the detector needs to know about one memory op, from the TTIR alone.
struct OpInfo {
  const Op* op = nullptr;
  bool atomic = false;     // each lane is one atomic access (atomics, tt.atomic_load/store, volatile loads)
  bool acquire = false;    // sem acquire / acq_rel, scope gpu / sys, and the result is used
  bool release = false;    // sem release / acq_rel, scope gpu / sys
  bool dup_store = false;  // tt.store through a tensor of pointers: lanes may share an address
  bool barrier = false;    // gpu.barrier
};

struct PState {
  uint32_t prog = 0;   // linear program id + 1
  uint32_t clock = 1;  // own epoch: advances at every release and barrier
  VC vc;               // what this program has acquired of the others
};

enum Race : uint8_t { kRaw, kWar, kWaw, kSameStore };
const char* race_name(uint8_t r) {
  static constexpr const char* names[] = {"RAW", "WAR", "WAW", "same-store"};
  return names[r];
}

/// One racing lane pair, found during one event (flushed into the aggregates after it).
struct Hit {
  Kind kind;
  uint8_t race;
  uint32_t site_a, site_b;  // op indices (no atomic bit), a = first in program-id order
  int region;
  uint32_t prog_a, prog_b;  // linear + 1
  uint32_t lane_a, lane_b;
  int64_t byte_off;  // in the buffer of the current access
  bool atomic_a, atomic_b;
};

struct Agg {
  std::set<uint32_t> progs_a, progs_b;  // capped at kMaxCounted
  int64_t count_a = 0, count_b = 0;     // distinct programs (a lower bound past the cap)
  std::vector<int64_t> lanes_a, lanes_b;
  int64_t lanes = 0, occurrences = 0;
  int64_t off_min = INT64_MAX, off_max = INT64_MIN;  // bytes
  bool any_atomic = false;
  bool raw = false, war = false;  // read / write pairs seen with the writer the lower / higher program
};

using AggKey = std::tuple<int, int, uint32_t, uint32_t, int>;  // kind, race, site a, site b, region

struct Pending {  // one finding of the last launch, before sites are made
  Kind kind;
  uint8_t race;
  uint32_t site_a, site_b;
  Finding f;
};

void keep_smallest(std::vector<int64_t>& v, int64_t x, size_t keep) {
  auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it != v.end() && *it == x) return;
  v.insert(it, x);
  if (v.size() > keep) v.pop_back();
}

}  // namespace

struct Races::Impl {
  const ir::Module& m;
  RacesOptions opts;
  std::vector<OpInfo> ops;  // index = site id
  std::unordered_map<const Op*, uint32_t> op_index;
  SiteMaker sites;

  // Per launch.
  const exec::Memory* memory = nullptr;
  std::array<int64_t, 3> grid{1, 1, 1};

  std::shared_mutex pages_mu;
  std::unordered_map<uintptr_t, std::unique_ptr<Page>> pages;  // host address / kShadowPageBytes
  std::atomic<uint64_t> shadow_bytes{0};
  uint64_t generation = 0;  // this launch's: unique over every Races object and launch (next_generation)
  size_t shadow_last = 0;
  std::atomic<bool> untracked{false};  // some bytes were left unchecked (shadow budget)
  bool untracked_last = false;

  std::mutex sync_mu;
  std::unordered_map<uintptr_t, VC> sync;  // host address -> clock released there
  size_t sync_last = 0;

  std::mutex states_mu;
  std::vector<std::unique_ptr<PState>> states;
  std::vector<PState*> free_states;

  std::mutex agg_mu;
  std::map<AggKey, Agg> aggs;
  std::vector<Pending> pending;

  Impl(const ir::Module& mod, const RacesOptions& o) : m(mod), opts(o), sites(mod) {
    std::unordered_set<const ir::Value*> used;
    std::vector<const Op*> all;
    auto walk = [&](auto& self, const ir::Region& r) -> void {
      for (auto& b : r.blocks)
        for (auto& op : b->ops) {
          all.push_back(op.get());
          for (const ir::Value* v : op->operands) used.insert(v);
          for (auto& so : op->successor_operands)
            for (const ir::Value* v : so) used.insert(v);
          for (auto& sub : op->regions) self(self, *sub);
        }
    };
    for (auto& f : m.functions) walk(walk, f->body);
    for (const Op* op : all) {
      OpInfo oi;
      oi.op = op;
      const unsigned fx = op->def->effects;
      const bool memop = fx & (ir::effect::read | ir::effect::write);
      oi.barrier = op->code() == ir::Opcode::gpu_barrier;
      if (!memop && !oi.barrier) continue;
      oi.atomic = (fx & ir::effect::atomic) || ir::may_wait(*op);
      if (fx & ir::effect::ordered) {
        const ir::Attr* sem = op->attr("sem");
        const ir::Attr* scope = op->attr("scope");
        const std::string s = sem ? sem->s : "acq_rel";
        const bool inter = !(scope && scope->s == "cta");
        const bool result_used = op->results.empty() || used.count(op->result(0)) > 0;
        oi.acquire = inter && result_used && (s == "acquire" || s == "acq_rel");
        oi.release = inter && (s == "release" || s == "acq_rel");
      }
      oi.dup_store = op->code() == ir::Opcode::tt_store && !op->operands.empty() &&
                     op->operands[0]->type->is_tensor && !op->operands[0]->type->is_block_ptr();
      op_index.emplace(op, static_cast<uint32_t>(ops.size()));
      ops.push_back(oi);
    }
  }

  ProgramId pid_of(uint32_t prog) const {
    const int64_t id = prog - 1;
    return ProgramId{static_cast<int32_t>(id % grid[0]), static_cast<int32_t>((id / grid[0]) % grid[1]),
                     static_cast<int32_t>(id / (grid[0] * grid[1]))};
  }

  static bool ordered_before(const Epoch& e, const PState& s) {
    return e.prog == s.prog || vc_get(s.vc, e.prog) >= e.clock;
  }

  Page* page(uintptr_t key) {
    // A per-thread direct-mapped cache of pages of this launch (pages live until the launch ends; the
    // generation tells launches and detectors apart).
    struct Slot {
      uint64_t gen = 0;
      uintptr_t key = 0;
      Page* page = nullptr;
    };
    thread_local std::array<Slot, 256> cache;
    Slot& slot = cache[(key ^ (key >> 8)) % cache.size()];
    if (slot.gen == generation && slot.key == key) return slot.page;
    Page* pg = page_slow(key);
    slot = Slot{generation, key, pg};
    return pg;
  }

  Page* page_slow(uintptr_t key) {
    {
      std::shared_lock<std::shared_mutex> g(pages_mu);
      auto it = pages.find(key);
      if (it != pages.end()) return it->second.get();
    }
    std::unique_lock<std::shared_mutex> g(pages_mu);
    auto it = pages.find(key);
    if (it != pages.end()) return it->second.get();
    return pages.emplace(key, std::make_unique<Page>()).first->second.get();
  }

  /// Make `pg`'s cells cover [off, off + len) in whole cells (under pg->mu); false past the budget.
  bool fit(Page& pg, uint32_t off, uint32_t len) {
    if (pg.gran && off % pg.gran == 0 && len % pg.gran == 0) return true;
    uint32_t g = 1;
    if (!pg.gran) {
      for (uint32_t c : {8u, 4u, 2u})
        if (off % c == 0 && len % c == 0) {
          g = c;
          break;
        }
    }
    const uint64_t bytes = kShadowPageBytes / g * sizeof(Cell);
    if (shadow_bytes.fetch_add(bytes) + bytes > static_cast<uint64_t>(opts.max_shadow_mib) << 20) {
      shadow_bytes.fetch_sub(bytes);
      untracked = true;  // past the budget: these bytes are not checked
      return false;
    }
    auto cells = std::make_unique<Cell[]>(kShadowPageBytes / g);
    if (pg.gran) {  // split: every byte gets a copy of the cell it was part of
      for (uint32_t b = 0; b < kShadowPageBytes; ++b) cells[b] = pg.cells[b / pg.gran];
      shadow_bytes.fetch_sub(kShadowPageBytes / pg.gran * sizeof(Cell));
    }
    pg.cells = std::move(cells);
    pg.gran = g;
    return true;
  }

  void hit(std::vector<Hit>& hits, Kind kind, const Epoch& old, bool old_write, const Epoch& cur,
           bool cur_write, int region, int64_t off) {
    // Sides: for a write and a read, the write first (RAW when its program is the lower one, else WAR); for
    // two writes, the lower program first. So the pair of sites does not depend on the schedule.
    bool swap;
    uint8_t race;
    if (old_write && cur_write) {
      swap = cur.prog < old.prog;
      race = kWaw;
    } else {
      swap = cur_write;
      const uint32_t wp = cur_write ? cur.prog : old.prog, rp = cur_write ? old.prog : cur.prog;
      race = wp <= rp ? kRaw : kWar;
    }
    const Epoch& a = swap ? cur : old;
    const Epoch& b = swap ? old : cur;
    auto lane = [](uint32_t l) { return l == kScalarLane ? 0u : l; };
    Hit h{kind,
          race,
          a.site & ~kAtomicBit,
          b.site & ~kAtomicBit,
          region,
          a.prog,
          b.prog,
          lane(a.lane),
          lane(b.lane),
          off,
          (a.site & kAtomicBit) != 0,
          (b.site & kAtomicBit) != 0};
    if (!hits.empty()) {  // one hit per lane pair, not per byte
      const Hit& l = hits.back();
      if (l.kind == h.kind && l.race == h.race && l.site_a == h.site_a && l.site_b == h.site_b &&
          l.prog_a == h.prog_a && l.prog_b == h.prog_b && l.lane_a == h.lane_a && l.lane_b == h.lane_b)
        return;
    }
    hits.push_back(h);
  }

  void check_write(Cell& c, const Epoch& cur, bool atomic, const PState& s, std::vector<Hit>& hits,
                   int region, int64_t off) {
    auto conflict = [&](const Epoch& old, bool old_write) {
      if (!old.prog || old.prog == cur.prog) return;
      if (atomic && (old.site & kAtomicBit)) return;
      if (ordered_before(old, s)) return;
      hit(hits, Kind::data_race, old, old_write, cur, true, region, off);
    };
    conflict(c.w, true);
    conflict(c.r1, false);
    conflict(c.r2, false);
    c.w = cur;
    auto drop = [&](Epoch& r) {
      if (r.prog && ordered_before(r, s)) r = Epoch{};
    };
    drop(c.r1);
    drop(c.r2);
    if (!c.r1.prog) std::swap(c.r1, c.r2);
  }

  void check_read(Cell& c, const Epoch& cur, bool atomic, const PState& s, std::vector<Hit>& hits, int region,
                  int64_t off) {
    const Epoch& w = c.w;
    if (w.prog && w.prog != cur.prog) {
      if (!(atomic && (w.site & kAtomicBit)) && !ordered_before(w, s))
        hit(hits, Kind::data_race, w, true, cur, false, region, off);
    } else if (w.prog && opts.intra && !atomic && !(w.site & kAtomicBit) && w.lane != cur.lane &&
               w.lane != kScalarLane && cur.lane != kScalarLane && w.clock == s.clock) {
      hit(hits, Kind::intra_program_race, w, true, cur, false, region, off);
    }
    // Keep the two lowest programs among reads that are not ordered before this one.
    if (!c.r1.prog || ordered_before(c.r1, s))
      c.r1 = cur;
    else if (!c.r2.prog || ordered_before(c.r2, s))
      c.r2 = cur;
    else if (cur.prog < std::max(c.r1.prog, c.r2.prog))
      (c.r1.prog > c.r2.prog ? c.r1 : c.r2) = cur;
  }

  void flush(const std::vector<Hit>& hits) {
    if (hits.empty()) return;
    const size_t keep = static_cast<size_t>(opts.max_first);
    std::lock_guard<std::mutex> g(agg_mu);
    const Hit* prev = nullptr;
    for (const Hit& h : hits) {
      // RAW and WAR between the same two sites are one finding (which one a pair is can depend on who
      // took a lock first); WAW and same-store are their own.
      const int cls = h.race == kWar ? int{kRaw} : int{h.race};
      Agg& a = aggs[AggKey{static_cast<int>(h.kind), cls, h.site_a, h.site_b, h.region}];
      (h.race == kWar ? a.war : a.raw) = true;
      if (!prev || prev->site_a != h.site_a || prev->site_b != h.site_b || prev->race != h.race ||
          prev->kind != h.kind)
        a.occurrences++;
      prev = &h;
      a.lanes++;
      // Distinct programs, exact up to kMaxCounted per side (then the count stops: a lower bound).
      if (a.progs_a.size() < kMaxCounted && a.progs_a.insert(h.prog_a).second) a.count_a++;
      if (a.progs_b.size() < kMaxCounted && a.progs_b.insert(h.prog_b).second) a.count_b++;
      keep_smallest(a.lanes_a, h.lane_a, keep);
      keep_smallest(a.lanes_b, h.lane_b, keep);
      a.off_min = std::min(a.off_min, h.byte_off);
      a.off_max = std::max(a.off_max, h.byte_off);
      a.any_atomic |= h.atomic_a || h.atomic_b;
    }
  }

  void access(const exec::AccessEvent& e, PState& s) {
    auto it = op_index.find(e.op);
    if (it == op_index.end()) return;
    const uint32_t site = it->second;
    const OpInfo& oi = ops[site];
    const bool atomic = oi.atomic || e.kind == AccessKind::atomic;
    const bool writes = e.kind != AccessKind::load;
    const exec::Memory& mem = *e.memory;
    const int eb = e.elem_bytes;

    auto host_of = [&](int64_t i, int& region) -> std::byte* {
      const uint64_t a = e.addrs[i];
      if (e.bad_lanes > 0 && !mem.where(a, eb).in_bounds) return nullptr;
      region = mem.region(a);
      if (region < 0) return nullptr;
      const exec::Buffer& b = mem.buffer(region);
      return b.host + (a - b.vbase);
    };

    if (atomic && oi.acquire) {
      std::lock_guard<std::mutex> g(sync_mu);
      for (int64_t i = 0; i < e.lanes; ++i) {
        int r;
        std::byte* h = e.mask[i] ? host_of(i, r) : nullptr;
        if (!h) continue;
        auto f = sync.find(reinterpret_cast<uintptr_t>(h));
        if (f != sync.end()) vc_join(s.vc, f->second);
      }
    }

    thread_local std::vector<Hit> hits;
    hits.clear();
    Page* pg = nullptr;
    uintptr_t pg_key = ~uintptr_t{0};
    std::unique_lock<std::mutex> lk;
    for (int64_t i = 0; i < e.lanes; ++i) {
      if (!e.mask[i]) continue;
      int region = -1;
      std::byte* h = host_of(i, region);
      if (!h) continue;
      const Epoch cur{s.prog, s.clock, site | (atomic ? kAtomicBit : 0),
                      e.lanes == 1 ? kScalarLane : static_cast<uint32_t>(i)};
      const int64_t off0 = static_cast<int64_t>(e.addrs[i] - mem.buffer(region).vbase);
      for (int k = 0; k < eb;) {  // the lane's bytes, page by page (an element may straddle two)
        const auto addr = reinterpret_cast<uintptr_t>(h + k);
        const uintptr_t key = addr / kShadowPageBytes;
        const auto off = static_cast<uint32_t>(addr % kShadowPageBytes);
        const auto len = static_cast<uint32_t>(std::min<uint64_t>(eb - k, kShadowPageBytes - off));
        if (key != pg_key) {
          if (lk) lk.unlock();
          pg = page(key);
          pg_key = key;
          lk = std::unique_lock<std::mutex>(pg->mu);
        }
        if (fit(*pg, off, len)) {
          for (uint32_t b = off; b < off + len; b += pg->gran) {
            Cell& c = pg->cells[b / pg->gran];
            const int64_t at = off0 + k + (b - off);
            if (writes)
              check_write(c, cur, atomic, s, hits, region, at);
            else
              check_read(c, cur, atomic, s, hits, region, at);
          }
        }
        k += static_cast<int>(len);
      }
    }
    if (lk) lk.unlock();
    flush(hits);

    if (atomic && oi.release) {
      VC mine = s.vc;
      vc_join(mine, VC{{s.prog, s.clock}});
      std::lock_guard<std::mutex> g(sync_mu);
      for (int64_t i = 0; i < e.lanes; ++i) {
        int r;
        std::byte* h = e.mask[i] ? host_of(i, r) : nullptr;
        if (h) vc_join(sync[reinterpret_cast<uintptr_t>(h)], mine);
      }
      s.clock++;
    }
  }

  /// Lanes of one tt.store with one address and different values (before the store runs).
  void same_store(const exec::OpEvent& e, uint32_t site, PState& s) {
    const exec::ValueRef ptr = e.operand(0), val = e.operand(1);
    const int64_t n = ptr.type->numel();
    const int eb = ir::elem_bytes(val.type->elem);
    const auto* addrs = static_cast<const uint64_t*>(ptr.data);
    const auto* vals = static_cast<const std::byte*>(val.data);
    const uint8_t* mask =
        e.op->operands.size() > 2 ? static_cast<const uint8_t*>(e.operand(2).data) : nullptr;
    // Fast path: strictly increasing addresses cannot repeat.
    uint64_t last = 0;
    bool increasing = true, first = true;
    for (int64_t i = 0; i < n && increasing; ++i) {
      if (mask && !mask[i]) continue;
      increasing = first || addrs[i] > last;
      last = addrs[i];
      first = false;
    }
    if (increasing) return;
    thread_local std::vector<std::pair<uint64_t, uint32_t>> lanes;
    lanes.clear();
    for (int64_t i = 0; i < n; ++i)
      if (!mask || mask[i]) lanes.emplace_back(addrs[i], static_cast<uint32_t>(i));
    std::sort(lanes.begin(), lanes.end());
    thread_local std::vector<Hit> hits;
    hits.clear();
    const exec::Memory& mem = *memory;
    for (size_t i = 0; i + 1 < lanes.size(); ++i) {
      auto [a, li] = lanes[i];
      auto [b, lj] = lanes[i + 1];
      if (a != b) continue;
      if (std::memcmp(vals + static_cast<size_t>(li) * eb, vals + static_cast<size_t>(lj) * eb, eb) == 0)
        continue;
      const exec::Where w = mem.where(a, eb);
      if (!w.in_bounds) continue;
      hits.push_back(Hit{Kind::intra_program_race, kSameStore, site, site, w.buffer->id, s.prog, s.prog, li,
                         lj, w.offset, false, false});
    }
    flush(hits);
  }

  void finish_launch() {
    std::lock_guard<std::mutex> g(agg_mu);
    for (auto& [key, a] : aggs) {
      auto [kind, race, sa, sb, region] = key;
      Pending p{static_cast<Kind>(kind), static_cast<uint8_t>(race), sa, sb, Finding{}};
      Finding& f = p.f;
      f.kind = p.kind;
      f.race = p.race != kRaw ? race_name(p.race) : a.raw && a.war ? "RAW+WAR" : a.raw ? "RAW" : "WAR";
      f.programs = a.count_a;
      f.other_programs = a.count_b;
      const size_t keep = static_cast<size_t>(opts.max_first);
      for (uint32_t prog : a.progs_a) {
        if (f.first_programs.size() >= keep) break;
        f.first_programs.push_back(pid_of(prog));
      }
      for (uint32_t prog : a.progs_b) {
        if (f.other_first_programs.size() >= keep) break;
        f.other_first_programs.push_back(pid_of(prog));
      }
      if (!a.progs_a.empty()) f.last_program = pid_of(*a.progs_a.rbegin());
      f.lanes = a.lanes;
      f.first_lanes = a.lanes_a;
      f.other_first_lanes = a.lanes_b;
      f.occurrences = a.occurrences;
      if (region >= 0 && memory) {
        const exec::Buffer& b = memory->buffer(region);
        f.buffer = buffer_info(b);
        const int64_t bytes = std::max(1, ir::elem_bytes(b.dtype));
        f.has_offsets = true;
        f.offset_min = a.off_min / bytes;
        f.offset_max = a.off_max / bytes;
      }
      f.hint = hint(p.kind, p.race, a.any_atomic);
      pending.push_back(std::move(p));
    }
    aggs.clear();
    shadow_last = shadow_bytes.exchange(0);
    sync_last = sync.size();
    untracked_last = untracked.exchange(false);
    pages.clear();
    sync.clear();
  }

  static std::string hint(Kind k, uint8_t race, bool any_atomic) {
    if (k == Kind::intra_program_race)
      return race == kSameStore
                 ? "several lanes store different values to one address and the GPU keeps an arbitrary one: "
                   "combine them (tl.atomic_add, or reduce before the store)"
                 : "add tl.debug_barrier() between the store and the load: the lanes can be different GPU "
                   "threads, and without a barrier the load may not see the other thread's store";
    if (any_atomic)
      return "an atomic and a plain access to the same bytes: access them with atomics on both sides, or "
             "order them (release after the write, acquire before the read)";
    if (race == kWaw)
      return "programs write the same bytes and the last writer wins at random: give each program its own "
             "elements, or combine with tl.atomic_add / tl.atomic_max";
    return "nothing orders the write and the other program's access: release after the store (e.g. "
           "tl.atomic_xchg / tl.atomic_add, sem='release' or 'acq_rel') and acquire before the load, or "
           "split "
           "the kernel into two launches";
  }
};

Races::Races(const ir::Module& module, const RacesOptions& opts)
    : impl_(std::make_unique<Impl>(module, opts)) {}
Races::~Races() = default;

exec::Subscription Races::on_launch_begin(const exec::LaunchContext& ctx) {
  Impl& I = *impl_;
  I.memory = ctx.memory;
  I.grid = ctx.grid;
  static std::atomic<uint64_t> next_generation{1};
  I.generation = next_generation.fetch_add(1);
  exec::Subscription sub;
  sub.kinds = exec::kAccess | exec::kProgram | exec::kOpBegin | exec::kAtomicOrder;
  sub.ops = [&I](const Op& op) -> const void* {
    auto it = I.op_index.find(&op);
    if (it == I.op_index.end()) return nullptr;
    const OpInfo& oi = I.ops[it->second];
    return oi.barrier || (oi.dup_store && I.opts.intra) ? &oi : nullptr;
  };
  return sub;
}

void Races::on_launch_end(const exec::LaunchContext&, const exec::LaunchStats&) { impl_->finish_launch(); }

void* Races::on_program_begin(ProgramId pid) {
  Impl& I = *impl_;
  PState* s;
  {
    std::lock_guard<std::mutex> g(I.states_mu);
    if (I.free_states.empty()) {
      I.states.push_back(std::make_unique<PState>());
      I.free_states.push_back(I.states.back().get());
    }
    s = I.free_states.back();
    I.free_states.pop_back();
  }
  s->prog = static_cast<uint32_t>(pid[0] + I.grid[0] * (pid[1] + I.grid[1] * pid[2]) + 1);
  s->clock = 1;
  s->vc.clear();
  return s;
}

void Races::on_program_end(ProgramId, void* state) {
  std::lock_guard<std::mutex> g(impl_->states_mu);
  impl_->free_states.push_back(static_cast<PState*>(state));
}

void Races::on_op_begin(const exec::OpEvent& e, void* state) {
  const auto* oi = static_cast<const OpInfo*>(e.tag);
  auto& s = *static_cast<PState*>(state);
  if (oi->barrier) {
    s.clock++;
    return;
  }
  impl_->same_store(e, static_cast<uint32_t>(oi - impl_->ops.data()), s);
}

void Races::on_access(const exec::AccessEvent& e, void* state) {
  impl_->access(e, *static_cast<PState*>(state));
}

void Races::collect(const LaunchInfo& info, std::vector<Finding>& out) {
  Impl& I = *impl_;
  std::vector<Pending> p;
  {
    std::lock_guard<std::mutex> g(I.agg_mu);
    p.swap(I.pending);
  }
  auto pos = [&](uint32_t site) { return std::make_pair(I.ops[site].op->pos.line, I.ops[site].op->pos.col); };
  std::stable_sort(p.begin(), p.end(), [&](const Pending& a, const Pending& b) {
    return std::make_tuple(static_cast<int>(a.kind), pos(a.site_a), pos(a.site_b), a.race) <
           std::make_tuple(static_cast<int>(b.kind), pos(b.site_a), pos(b.site_b), b.race);
  });
  for (Pending& x : p) {
    Finding& f = x.f;
    f.kernel = info.kernel;
    f.launch_stack = info.stack;
    f.site = I.sites.of(I.ops[x.site_a].op);
    f.other = I.sites.of(I.ops[x.site_b].op);
    f.summary = summarize(f);
    out.push_back(std::move(f));
  }
}

nlohmann::json Races::statistics() const {
  return {{"shadow_bytes", impl_->shadow_last},
          {"sync_addresses", impl_->sync_last},
          {"shadow_budget_exceeded", impl_->untracked_last}};
}

}  // namespace tilescope::analysis
