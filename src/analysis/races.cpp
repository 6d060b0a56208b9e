// The race detector (see races.h): exact per-byte shadow state with FastTrack-style epochs, sparse vector
// clocks per program and per atomic address, findings grouped by (kind, pair of sites, buffer).
#include "tilescope/analysis/races.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <thread>
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

/// One access as a segment stores it: an Epoch whose lane is a function of the byte, for a run of
/// consecutive lanes at consecutive addresses: lane(b) = lane + (b - start) / eb for the byte at page
/// offset b (start: the run's first byte on the page, eb: its element size); eb = 0: `lane` for every byte
/// (a scalar access). prog = 0: none.
struct Slot {
  uint32_t prog = 0;
  uint32_t clock = 0;
  uint32_t site = 0;
  uint32_t lane = 0;
  uint16_t start = 0;
  uint8_t eb = 0;

  uint32_t lane_at(uint32_t b) const { return eb ? lane + (b - start) / eb : lane; }
  Epoch at(uint32_t b) const { return prog ? Epoch{prog, clock, site, lane_at(b)} : Epoch{}; }
  bool operator==(const Slot&) const = default;
};

/// Bytes [lo, hi) of a page whose every byte's cell is (w, r1, r2) with the slots' lanes at that byte.
struct Seg {
  uint16_t lo = 0, hi = 0;
  Slot w, r1, r2;
  bool same_state(const Seg& o) const { return w == o.w && r1 == o.r1 && r2 == o.r2; }
};

/// The shadow of kShadowPageBytes bytes, in one of two forms.
///
/// Segments (gran = 0; the form of a new page): a sorted list of at most kMaxSegs disjoint byte ranges,
/// each with one (w, r1, r2) whose lanes are functions of the byte (Slot); bytes in no segment have the
/// empty cell. A run of lanes (consecutive lanes at consecutive addresses on this page, what a tile's row
/// is) updates the segments it overlaps once per piece instead of once per element, which is exact
/// because the checks and updates of a cell depend on its epochs' programs, clocks and sites and not on
/// their lanes, except the cross-lane RAW test (lanes compared: done per piece when both lane functions
/// have the same element size and alignment, else the page becomes cells). Any access that would report
/// a race, that is not such a run, or that would need more than kMaxSegs segments turns the page into
/// cells first (materialize), so races are found and reported by the cell code only.
///
/// Cells (gran > 0): a cell per `gran` bytes (1, 2, 4 or 8: the largest that every segment boundary, lane
/// function and the access that needed cells allowed). While
/// every access covers whole aligned cells, a cell stands exactly for each of its bytes; the first access
/// that does not (another element size, a misaligned address) splits the page into byte cells, each a
/// copy of the cell it was part of, which keeps it exact.
/// A page's lock: critical sections are one run's update, so a spin (yielding while taken) is enough and
/// keeps a page at 32 bytes (std::mutex alone is 40).
struct SpinLock {
  std::atomic<bool> taken{false};
  void lock() {
    while (taken.exchange(true, std::memory_order_acquire))
      while (taken.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  void unlock() { taken.store(false, std::memory_order_release); }
};

struct Page {
  SpinLock mu;
  uint8_t gran = 0;            // 0: segments
  uint8_t nsegs = 0, cap = 0;  // segs has room for cap, nsegs in use
  std::unique_ptr<Cell[]> cells;
  Seg* segs = nullptr;            // from the page's shard's arena
  struct Shard* shard = nullptr;  // whose arena
};

static_assert(sizeof(Page) <= 32);

constexpr size_t kMaxSegs = 32;
constexpr size_t kFirstSegs = 2;  // segments a page has room for when it is made

/// A node of the page table's radix tree (Races::Impl::page): 512 children (4 KiB), the next level's
/// nodes or, in a leaf, pages. Small nodes keep a launch that touches a few pages cheap to set up.
constexpr int kNodeBits = 9, kTopBits = 10, kLevels = 3;  // 10 + 3 * 9 = 37 key bits
struct Node {
  std::array<std::atomic<void*>, size_t{1} << kNodeBits> child{};
};

/// A part of the page table (Races::Impl): pages, radix table nodes and segment arrays, freed at launch
/// end; `mu` guards its own containers (a page has its own mutex). Nothing is allocated before a page
/// of the shard is touched.
struct Shard {
  static constexpr size_t kPagesPerChunk = 64;
  std::mutex mu;
  std::vector<std::unique_ptr<Page[]>> pages;  // chunks of kPagesPerChunk; the last has `pages_left`
  size_t pages_left = 0;
  std::vector<std::unique_ptr<Node>> nodes;
  // Segment arrays are cut from these, left unzeroed: a page reads only the nsegs segments it wrote
  // (Seg is an implicit-lifetime aggregate, so the bytes hold Segs once written).
  std::vector<std::unique_ptr<std::byte[]>> chunks;
  size_t size = 0, left = 0;  // chunks.back()'s segments, and the unused ones at its end

  /// A new page (under mu).
  Page* page() {
    if (pages_left == 0) {
      pages.push_back(std::make_unique<Page[]>(kPagesPerChunk));
      pages_left = kPagesPerChunk;
    }
    return &pages.back()[kPagesPerChunk - pages_left--];
  }

  /// Room for `n` (at most kMaxSegs) segments (under mu). Chunks double from 64 to 4096 segments, so a
  /// small launch takes little.
  Seg* segs(size_t n) {
    if (left < n) {
      size = std::clamp<size_t>(size * 2, 64, 4096);
      chunks.push_back(std::make_unique_for_overwrite<std::byte[]>(size * sizeof(Seg)));
      left = size;
    }
    left -= n;
    return reinterpret_cast<Seg*>(chunks.back().get()) + (size - left - n);
  }

  void clear() {
    pages.clear();
    nodes.clear();
    chunks.clear();
    pages_left = size = left = 0;
  }
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
  uint32_t cur_lane = 0;  // the current access's lane (Epoch::lane), for deduplication
};

struct Agg {
  std::set<uint32_t> progs_a, progs_b;  // capped at kMaxCounted
  int64_t count_a = 0, count_b = 0;     // distinct programs (a lower bound past the cap)
  std::vector<int64_t> lanes_a, lanes_b;
  int64_t lanes = 0, occurrences = 0;
  int64_t off_min = INT64_MAX, off_max = INT64_MIN;  // bytes
  bool any_atomic = false;
  bool raw = false, war = false;  // read / write pairs seen with the writer the lower / higher program
  // With evidence: per program (linear + 1), the byte offsets at which its access raced, each side.
  std::map<uint32_t, std::vector<int64_t>> bytes_a, bytes_b;
};

/// Byte offsets (any order, repeats) as (first, count) runs of the elements of `elem_bytes` they fall in.
std::vector<int64_t> element_runs(std::vector<int64_t>& bytes, int64_t elem_bytes) {
  for (int64_t& b : bytes) b /= elem_bytes;
  std::sort(bytes.begin(), bytes.end());
  bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
  std::vector<int64_t> runs;
  for (int64_t e : bytes)
    if (!runs.empty() && runs[runs.size() - 2] + runs.back() == e)
      ++runs.back();
    else
      runs.insert(runs.end(), {e, 1});
  return runs;
}

/// The memory operations and barriers of a module, each with what the detector needs of it; the same
/// for every launch of the module, so made once (Module::derived).
struct SiteTable {
  std::vector<OpInfo> ops;  // index = site id
  std::unordered_map<const Op*, uint32_t> op_index;
};

SiteTable site_table(const ir::Module& m) {
  SiteTable t;
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
    t.op_index.emplace(op, static_cast<uint32_t>(t.ops.size()));
    t.ops.push_back(oi);
  }
  return t;
}

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
  bool evidence = false;                   // keep_evidence: every program of each finding
  std::shared_ptr<const SiteTable> table;  // the module's (Module::derived): made at its first launch
  const std::vector<OpInfo>& ops;          // index = site id
  const std::unordered_map<const Op*, uint32_t>& op_index;
  SiteMaker sites;

  // Per launch.
  const exec::Memory* memory = nullptr;
  std::array<int64_t, 3> grid{1, 1, 1};

  /// The pages, by key = host address / kShadowPageBytes (47-bit user addresses: 37-bit keys), in a
  /// radix table of 10 + 9 + 9 + 9 key bits whose nodes are created on first touch with a
  /// compare-and-swap (lookups take no lock); nodes and pages live in shards by key so that threads
  /// creating pages seldom wait for each other.
  std::array<std::atomic<void*>, size_t{1} << kTopBits> top{};
  static constexpr size_t kShards = 64;
  std::array<Shard, kShards> shards;
  std::atomic<uint64_t> shadow_bytes{0};
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

  Impl(const ir::Module& mod, const RacesOptions& o)
      : m(mod),
        opts(o),
        table(mod.derived<SiteTable>([&] { return site_table(mod); })),
        ops(table->ops),
        op_index(table->op_index),
        sites(mod) {}

  ProgramId pid_of(uint32_t prog) const {
    const int64_t id = prog - 1;
    return ProgramId{static_cast<int32_t>(id % grid[0]), static_cast<int32_t>((id / grid[0]) % grid[1]),
                     static_cast<int32_t>(id / (grid[0] * grid[1]))};
  }

  template <class E>
  static bool ordered_before(const E& e, const PState& s) {
    return e.prog == s.prog || (!s.vc.empty() && vc_get(s.vc, e.prog) >= e.clock);
  }

  /// The node at `slot`, made (and owned by `sh`, under its lock) if there is none yet.
  Node* node(std::atomic<void*>& slot, Shard& sh) {
    void* n = slot.load(std::memory_order_acquire);
    if (n) return static_cast<Node*>(n);
    auto fresh = std::make_unique<Node>();
    void* want = fresh.get();
    if (!slot.compare_exchange_strong(n, want, std::memory_order_acq_rel))
      return static_cast<Node*>(n);  // another thread's
    shadow_bytes.fetch_add(sizeof(Node));
    std::lock_guard<std::mutex> g(sh.mu);
    sh.nodes.push_back(std::move(fresh));
    return static_cast<Node*>(want);
  }

  /// The page of `key`, made on first touch; null past 47-bit addresses (not checked).
  Page* page(uintptr_t key) {
    constexpr int kKeyBits = kTopBits + kLevels * kNodeBits;
    constexpr uintptr_t kNodeMask = (uintptr_t{1} << kNodeBits) - 1;
    if (key >> kKeyBits) {  // past 47-bit user addresses: not checked
      untracked = true;
      return nullptr;
    }
    Shard& sh = shards[(key * 0x9E3779B97F4A7C15ull) >> 58];
    Node* n = node(top[key >> (kLevels * kNodeBits)], sh);
    for (int level = kLevels - 1; level > 0; --level)
      n = node(n->child[(key >> (level * kNodeBits)) & kNodeMask], sh);
    std::atomic<void*>& slot = n->child[key & kNodeMask];
    if (void* pg = slot.load(std::memory_order_acquire)) return static_cast<Page*>(pg);
    std::lock_guard<std::mutex> g(sh.mu);
    if (void* pg = slot.load(std::memory_order_acquire))  // pages are made under the shard's lock: no waste
      return static_cast<Page*>(pg);
    Page* pg = sh.page();
    pg->shard = &sh;
    pg->segs = sh.segs(kFirstSegs);
    pg->cap = kFirstSegs;
    shadow_bytes.fetch_add(sizeof(Page) + kFirstSegs * sizeof(Seg));
    slot.store(pg, std::memory_order_release);
    return pg;
  }

  /// Account `bytes` more of shadow; false (and nothing accounted) past the budget.
  bool charge(uint64_t bytes) {
    if (shadow_bytes.fetch_add(bytes) + bytes > static_cast<uint64_t>(opts.max_shadow_mib) << 20) {
      shadow_bytes.fetch_sub(bytes);
      untracked = true;  // past the budget: these bytes are not checked
      return false;
    }
    return true;
  }

  /// Turn a page of segments into cells (under pg->mu), the largest granularity that the segments and
  /// an access of `len` bytes at `off` in elements of `eb` bytes allow; false past the budget.
  bool materialize(Page& pg, uint32_t off, uint32_t len, uint32_t eb) {
    auto fits = [](uint32_t g, uint32_t x) { return x % g == 0; };
    uint32_t g = 1;
    for (uint32_t c : {8u, 4u, 2u}) {
      bool ok = fits(c, off) && fits(c, len) && fits(c, eb);
      for (const Seg& sg : std::span(pg.segs, pg.nsegs)) {
        ok = ok && fits(c, sg.lo) && fits(c, sg.hi);
        for (const Slot* sl : {&sg.w, &sg.r1, &sg.r2})
          ok = ok && (!sl->prog || !sl->eb || (fits(c, sl->eb) && fits(c, sl->start)));
      }
      if (ok) {
        g = c;
        break;
      }
    }
    if (!charge(kShadowPageBytes / g * sizeof(Cell))) return false;
    auto cells = std::make_unique<Cell[]>(kShadowPageBytes / g);
    for (const Seg& sg : std::span(pg.segs, pg.nsegs))
      for (uint32_t b = sg.lo; b < sg.hi; b += g) cells[b / g] = Cell{sg.w.at(b), sg.r1.at(b), sg.r2.at(b)};
    pg.nsegs = 0;  // the segment array stays in the arena until the launch ends
    pg.cells = std::move(cells);
    pg.gran = static_cast<uint8_t>(g);
    return true;
  }

  /// Make `pg`'s cells cover [off, off + len) in whole cells of at most `eb` bytes (under pg->mu),
  /// materializing a page of segments; false past the budget.
  bool fit(Page& pg, uint32_t off, uint32_t len, uint32_t eb) {
    if (!pg.gran) return materialize(pg, off, len, eb);
    if (off % pg.gran == 0 && len % pg.gran == 0 && eb % pg.gran == 0) return true;
    if (!charge(kShadowPageBytes * sizeof(Cell))) return false;
    auto cells = std::make_unique<Cell[]>(kShadowPageBytes);
    // Split: every byte gets a copy of the cell it was part of.
    for (uint32_t b = 0; b < kShadowPageBytes; ++b) cells[b] = pg.cells[b / pg.gran];
    shadow_bytes.fetch_sub(kShadowPageBytes / pg.gran * sizeof(Cell));
    pg.cells = std::move(cells);
    pg.gran = 1;
    return true;
  }

  /// The segment form of check_write / check_read for one piece of a run, whose bytes all have the state
  /// `sg`: false when some byte would report a race (the caller then materializes the page and lets the
  /// cells report it), else updates `sg` as check_write / check_read would update each byte's cell.
  bool seg_check(Seg& sg, const Slot& cur, bool writes, bool atomic, const PState& s) const {
    auto concurrent = [&](const Slot& old) {
      return old.prog && old.prog != cur.prog && !(atomic && (old.site & kAtomicBit)) &&
             !ordered_before(old, s);
    };
    if (writes) {
      if (concurrent(sg.w) || concurrent(sg.r1) || concurrent(sg.r2)) return false;
      sg.w = cur;
      if (sg.r1.prog && ordered_before(sg.r1, s)) sg.r1 = Slot{};
      if (sg.r2.prog && ordered_before(sg.r2, s)) sg.r2 = Slot{};
      if (!sg.r1.prog) std::swap(sg.r1, sg.r2);
      return true;
    }
    const Slot& w = sg.w;
    if (w.prog && w.prog != cur.prog) {
      if (concurrent(w)) return false;
    } else if (w.prog && opts.intra && !atomic && !(w.site & kAtomicBit) && w.eb && cur.eb &&
               w.clock == s.clock) {
      // Cross-lane RAW unless every byte's write lane is its read lane: same element size and alignment
      // and the same lane at the first byte (then at every byte).
      if (w.eb != cur.eb || (w.start + cur.eb - cur.start % cur.eb) % cur.eb != 0 ||
          w.lane_at(sg.lo) != cur.lane_at(sg.lo))
        return false;
    }
    if (!sg.r1.prog || ordered_before(sg.r1, s))
      sg.r1 = cur;
    else if (!sg.r2.prog || ordered_before(sg.r2, s))
      sg.r2 = cur;
    else if (cur.prog < std::max(sg.r1.prog, sg.r2.prog))
      (sg.r1.prog > sg.r2.prog ? sg.r1 : sg.r2) = cur;
    return true;
  }

  /// A run `cur` over bytes [off, end) of a page of segments (under pg->mu); false, with the page
  /// unchanged, when it needs cells (a race to report, a lane-dependent check, or too many segments).
  bool seg_access(Page& pg, uint32_t off, uint32_t end, const Slot& cur, bool writes, bool atomic,
                  const PState& s) {
    const std::span<Seg> v(pg.segs, pg.nsegs);
    thread_local std::vector<Seg> mid;
    mid.clear();
    auto push = [&](const Seg& x) {
      if (!mid.empty() && mid.back().hi == x.lo && mid.back().same_state(x))
        mid.back().hi = x.hi;
      else
        mid.push_back(x);
    };
    size_t i0 = 0;
    while (i0 < v.size() && v[i0].hi <= off) ++i0;
    size_t i = i0;
    uint32_t pos = off;
    while (pos < end) {
      Seg piece;
      if (i < v.size() && v[i].lo <= pos) {  // inside segment i
        if (v[i].lo < pos) {                 // its part before the run stays
          Seg left = v[i];
          left.hi = static_cast<uint16_t>(pos);
          push(left);
        }
        piece = v[i];
        piece.lo = static_cast<uint16_t>(pos);
        piece.hi = static_cast<uint16_t>(std::min<uint32_t>(v[i].hi, end));
      } else {  // a gap: empty cells up to the next segment
        piece.lo = static_cast<uint16_t>(pos);
        piece.hi = static_cast<uint16_t>(i < v.size() ? std::min<uint32_t>(v[i].lo, end) : end);
      }
      if (!seg_check(piece, cur, writes, atomic, s)) return false;
      push(piece);
      pos = piece.hi;
      if (i < v.size() && v[i].hi <= pos) {
        ++i;
      } else if (i < v.size() && v[i].lo < pos) {  // segment i goes on past the run: its rest stays
        Seg right = v[i];
        right.lo = static_cast<uint16_t>(pos);
        push(right);
        ++i;
      }
    }
    // Segments i0..i-1 are replaced by `mid`; join equal neighbours across the edges.
    if (i0 > 0 && v[i0 - 1].hi == mid.front().lo && v[i0 - 1].same_state(mid.front())) {
      mid.front().lo = v[--i0].lo;
    }
    if (i < v.size() && mid.back().hi == v[i].lo && v[i].same_state(mid.back())) {
      mid.back().hi = v[i++].hi;
    }
    const size_t n = v.size() - (i - i0) + mid.size();
    if (n > kMaxSegs) return false;
    if (n > pg.cap) {  // a larger array from the arena (the old one stays there)
      const auto cap = static_cast<uint8_t>(std::min(kMaxSegs, std::max<size_t>(n, pg.cap * size_t{2})));
      Seg* bigger;
      {
        std::lock_guard<std::mutex> g(pg.shard->mu);
        bigger = pg.shard->segs(cap);
      }
      std::copy(v.begin(), v.end(), bigger);
      shadow_bytes.fetch_add(cap * sizeof(Seg));
      pg.segs = bigger;
      pg.cap = cap;
    }
    // Move the segments after i - 1 to after i0 + mid.size() - 1, then put `mid` at i0.
    std::memmove(pg.segs + i0 + mid.size(), pg.segs + i, (pg.nsegs - i) * sizeof(Seg));
    std::copy(mid.begin(), mid.end(), pg.segs + i0);
    pg.nsegs = static_cast<uint8_t>(n);
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
    h.cur_lane = cur.lane;
    // One hit per lane pair, not per byte: the hits of the current lane are the last ones (an event's
    // lanes are checked one after another), so however many cells its bytes take, the same pairs come out.
    for (size_t j = hits.size(); j-- > 0 && hits[j].cur_lane == cur.lane;) {
      const Hit& l = hits[j];
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
      // With evidence every program is kept (the trace lists them all).
      const size_t cap = evidence ? SIZE_MAX : kMaxCounted;
      if (a.progs_a.size() < cap && a.progs_a.insert(h.prog_a).second) a.count_a++;
      if (a.progs_b.size() < cap && a.progs_b.insert(h.prog_b).second) a.count_b++;
      keep_smallest(a.lanes_a, h.lane_a, keep);
      keep_smallest(a.lanes_b, h.lane_b, keep);
      a.off_min = std::min(a.off_min, h.byte_off);
      a.off_max = std::max(a.off_max, h.byte_off);
      a.any_atomic |= h.atomic_a || h.atomic_b;
      if (evidence) {  // a lane's bytes come one after another: its element once, not once per byte
        for (auto [bytes, prog] : {std::pair{&a.bytes_a, h.prog_a}, std::pair{&a.bytes_b, h.prog_b}}) {
          std::vector<int64_t>& v = (*bytes)[prog];
          if (v.empty() || v.back() != h.byte_off) v.push_back(h.byte_off);
        }
      }
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
    const uint32_t site_bits = site | (atomic ? kAtomicBit : 0);
    const bool scalar = e.lanes == 1;
    Page* pg = nullptr;
    uintptr_t pg_key = ~uintptr_t{0};
    std::unique_lock<SpinLock> lk;
    auto lock = [&](uintptr_t key) {  // false: the page is not checked
      if (key == pg_key) return pg != nullptr;
      if (lk) lk.unlock();
      pg = page(key);
      pg_key = key;
      if (pg) lk = std::unique_lock<SpinLock>(pg->mu);
      return pg != nullptr;
    };
    auto check = [&](Cell& c, const Epoch& cur, int region, int64_t at) {
      if (writes)
        check_write(c, cur, atomic, s, hits, region, at);
      else
        check_read(c, cur, atomic, s, hits, region, at);
    };

    // A run: lanes first, first + 1, ... at bytes [off, end) of one page, one after another.
    struct Run {
      uintptr_t key = 0;
      uint32_t off = 0, end = 0;
      int64_t first = -1, last = -1;  // lanes; first < 0: no run
      int region = -1;
      int64_t at = 0;     // byte offset of `off` in the buffer
      uint64_t vend = 0;  // virtual address of `end`
    } run;
    auto flush_run = [&] {
      if (run.first < 0 || !lock(run.key)) {
        run.first = -1;
        return;
      }
      const Slot cur{s.prog,
                     s.clock,
                     site_bits,
                     scalar ? kScalarLane : static_cast<uint32_t>(run.first),
                     static_cast<uint16_t>(run.off),
                     static_cast<uint8_t>(scalar ? 0 : eb)};
      if ((pg->gran || !opts.segments || !seg_access(*pg, run.off, run.end, cur, writes, atomic, s)) &&
          fit(*pg, run.off, run.end - run.off, static_cast<uint32_t>(eb))) {
        const uint32_t g = pg->gran;
        Epoch ep{cur.prog, cur.clock, cur.site, cur.lane};
        for (uint32_t b = run.off; b < run.end; b += static_cast<uint32_t>(eb)) {
          for (uint32_t c = b; c < b + static_cast<uint32_t>(eb); c += g)
            check(pg->cells[c / g], ep, run.region, run.at + (c - run.off));
          if (!scalar) ep.lane++;
        }
      }
      run.first = -1;
    };

    const auto ueb = static_cast<uint32_t>(eb);
    int64_t from = 0;  // the lanes the loop below still has to see
    // The lanes the engine found active, in one buffer, in rows of consecutive lanes: all of them
    // (dense), the active prefix (the rest masked off), or rows of row_lanes.
    const int64_t one_range = e.run_lanes();
    const int64_t active = one_range > 0 ? one_range : e.lanes;
    if (const int64_t row = one_range > 0 ? one_range : e.row_lanes; row > 0 && !scalar) {
      // The runs are each row's pieces on each shadow page, as the loop below would find them lane by
      // lane (it joins two rows only when one goes on where the other ends, which a tile of rows never
      // does: that tile is dense). Elements aligned to their size never straddle a page; from the first
      // row that is not aligned, the loop does it.
      int region = -1;
      std::byte* h0 = host_of(0, region);
      if (h0) {
        const exec::Buffer& b = mem.buffer(region);
        for (; from < active; from += row) {
          std::byte* h = b.host + (e.addrs[from] - b.vbase);
          if (reinterpret_cast<uintptr_t>(h) % ueb != 0) break;
          for (int64_t lane = from; lane < from + row;) {
            const auto addr = reinterpret_cast<uintptr_t>(h) + static_cast<uintptr_t>(lane - from) * ueb;
            const auto off = static_cast<uint32_t>(addr % kShadowPageBytes);
            const int64_t n = std::min<int64_t>(from + row - lane, (kShadowPageBytes - off) / ueb);
            const uint64_t va = e.addrs[from] + static_cast<uint64_t>(lane - from) * ueb;
            run = Run{addr / kShadowPageBytes,
                      off,
                      off + static_cast<uint32_t>(n) * ueb,
                      lane,
                      lane + n - 1,
                      region,
                      static_cast<int64_t>(va - b.vbase),
                      va + static_cast<uint64_t>(n) * ueb};
            flush_run();
            lane += n;
          }
        }
      }
    }
    if (from >= active) from = e.lanes;  // the lanes after an active prefix are inactive
    for (int64_t i = from; i < e.lanes; ++i) {
      if (!e.mask[i]) continue;
      // The next lanes of a run (no lane is out of bounds, so they are in the run's buffer).
      if (e.addrs[i] == run.vend && i == run.last + 1 && e.bad_lanes == 0 && run.first >= 0 &&
          run.end + ueb <= kShadowPageBytes) {
        const int64_t n = std::min<int64_t>(e.lanes - i, (kShadowPageBytes - run.end) / ueb);
        // 16 lanes at a time while they all continue the run (vectorises), then one by one.
        constexpr int64_t kBlock = 16;
        int64_t k = 0;
        uint64_t v = run.vend;
        while (k + kBlock <= n) {
          uint64_t off_run = 0;
          for (int64_t j = 0; j < kBlock; ++j)
            off_run |= (e.addrs[i + k + j] ^ (v + static_cast<uint64_t>(j) * ueb)) |
                       static_cast<uint64_t>(e.mask[i + k + j] == 0);
          if (off_run) break;
          k += kBlock;
          v += kBlock * ueb;
        }
        for (; k < n && e.mask[i + k] && e.addrs[i + k] == v; v += ueb) ++k;
        run.end += static_cast<uint32_t>(k) * ueb;
        run.vend += static_cast<uint64_t>(k) * ueb;
        run.last = i + k - 1;
        i += k - 1;
        continue;
      }
      int region = -1;
      std::byte* h = host_of(i, region);
      if (!h) continue;
      const auto addr = reinterpret_cast<uintptr_t>(h);
      const uintptr_t key = addr / kShadowPageBytes;
      const auto off = static_cast<uint32_t>(addr % kShadowPageBytes);
      const int64_t at = static_cast<int64_t>(e.addrs[i] - mem.buffer(region).vbase);
      if (off + static_cast<uint32_t>(eb) <= kShadowPageBytes) {  // within one page: a run's lane
        if (run.first >= 0 && key == run.key && off == run.end && i == run.last + 1 && region == run.region) {
          run.end += ueb;
          run.vend = e.addrs[i] + ueb;
          run.last = i;
          continue;
        }
        flush_run();
        run = Run{key, off, off + ueb, i, i, region, at, e.addrs[i] + ueb};
        continue;
      }
      // An element straddling two pages: its bytes page by page, in cells.
      flush_run();
      const Epoch cur{s.prog, s.clock, site_bits, scalar ? kScalarLane : static_cast<uint32_t>(i)};
      for (int k = 0; k < eb;) {
        const auto a = addr + static_cast<uintptr_t>(k);
        const auto o = static_cast<uint32_t>(a % kShadowPageBytes);
        const auto len = static_cast<uint32_t>(std::min<uint64_t>(eb - k, kShadowPageBytes - o));
        if (lock(a / kShadowPageBytes) && fit(*pg, o, len, len))
          for (uint32_t c = o; c < o + len; c += pg->gran)
            check(pg->cells[c / pg->gran], cur, region, at + k + (c - o));
        k += static_cast<int>(len);
      }
    }
    flush_run();
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
    // Fast path: strictly increasing addresses cannot repeat. First over every lane, masked-off ones too
    // (the active ones are then increasing as well; vectorises), then over the active lanes.
    // (Unsigned order as signed order of the addresses with the top bit flipped: AVX2 compares signed.)
    const auto order = [](uint64_t a) { return static_cast<int64_t>(a ^ (uint64_t{1} << 63)); };
    uint64_t all_increasing = 1;
    for (int64_t i = 1; i < n; ++i)
      all_increasing &= static_cast<uint64_t>(order(addrs[i]) > order(addrs[i - 1]));
    if (all_increasing) return;
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
      if (evidence) {  // every program of each side, with the elements at which it raced
        const int64_t bytes =
            region >= 0 && memory ? std::max(1, ir::elem_bytes(memory->buffer(region).dtype)) : 1;
        for (uint32_t prog : a.progs_a)
          f.evidence.push_back({pid_of(prog), 0, -1, element_runs(a.bytes_a[prog], bytes)});
        for (uint32_t prog : a.progs_b)
          f.evidence.push_back({pid_of(prog), 1, -1, element_runs(a.bytes_b[prog], bytes)});
      }
      pending.push_back(std::move(p));
    }
    aggs.clear();
    shadow_last = shadow_bytes.exchange(0);
    sync_last = sync.size();
    untracked_last = untracked.exchange(false);
    for (auto& n : top) n.store(nullptr, std::memory_order_relaxed);
    for (Shard& sh : shards) sh.clear();
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
    if (f.site.op.starts_with("nki."))  // the SPMD programs of an NKI kernel (nki/nki.h)
      f.hint =
          "the programs of the grid access the same HBM bytes with nothing ordering them: give each program "
          "its own part of the tensor (index it with nl.program_id(0))";
    f.other = I.sites.of(I.ops[x.site_b].op);
    f.summary = summarize(f);
    out.push_back(std::move(f));
  }
}

void Races::keep_evidence() { impl_->evidence = true; }

nlohmann::json Races::statistics() const {
  return {{"shadow_bytes", impl_->shadow_last},
          {"sync_addresses", impl_->sync_last},
          {"shadow_budget_exceeded", impl_->untracked_last}};
}

}  // namespace tilescope::analysis
