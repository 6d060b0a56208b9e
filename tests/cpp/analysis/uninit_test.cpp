// Uninitialized memory: the Definedness store's bits and host-write detection, and the uninit
// analysis on TTIR kernels (tests/ttir/add_tail.ttir: out = x + y under a mask; atomic_hist.ttir:
// hist[idx] += 1). Expected values follow from the rules in include/tilescope/analysis/uninit.h.
#include "tilescope/analysis/uninit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/cpp/harness.h"

namespace tilescope::analysis {
namespace {

namespace fs = std::filesystem;
// Absolute (at start-up): __FILE__ may be relative to the build directory (ccache with CCACHE_BASEDIR).
const fs::path kHere = fs::absolute(fs::path(__FILE__)).parent_path();
const fs::path kRoot = kHere.parent_path().parent_path().parent_path();

/// A tracked host buffer, forgotten at scope exit (the store is process-wide).
struct Tracked {
  std::vector<uint8_t> mem;
  uint64_t id;
  std::shared_ptr<TrackedAllocation> a;
  explicit Tracked(size_t n, int line = 7) : mem(n, 0) {
    id = Definedness::process().track(reinterpret_cast<std::byte*>(mem.data()), n,
                                      {"torch.empty", "t.py", line});
    a = Definedness::process().find(reinterpret_cast<std::byte*>(mem.data()));
  }
  ~Tracked() { Definedness::process().forget(id); }
  bool reads_undefined(uint64_t off, uint64_t n) {
    std::lock_guard<std::mutex> g(a->mu());
    return a->reads_undefined(off, n);
  }
  void define(uint64_t off, uint64_t n) {
    std::lock_guard<std::mutex> g(a->mu());
    a->define(off, n);
  }
  bool defined(uint64_t off) {
    std::lock_guard<std::mutex> g(a->mu());
    return a->defined(off);
  }
  bool all_defined(uint64_t off, uint64_t n) {
    std::lock_guard<std::mutex> g(a->mu());
    return a->all_defined(off, n);
  }
};

TEST(Definedness, TrackFillsTheSentinelAndEverythingIsUndefined) {
  Tracked t(100);
  ASSERT_TRUE(t.a);
  EXPECT_EQ(t.a->undefined_bytes(), 100u);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(t.mem[i], Definedness::sentinel(i)) << i;
  // Every aligned word of the pattern is a float32 quiet NaN.
  for (size_t i = 0; i + 4 <= 100; i += 4) {
    float f;
    std::memcpy(&f, t.mem.data() + i, 4);
    EXPECT_TRUE(std::isnan(f)) << i;
  }
  EXPECT_TRUE(t.reads_undefined(0, 4));
  EXPECT_TRUE(t.reads_undefined(96, 4));
}

TEST(Definedness, OneByteIntegerDataGetsAPatternWithoutItsCommonValues) {
  // Zero, one, -1 and the int8 / uint8 saturation values (127, -128, 255) are what such data holds most
  // often; the float pattern's 0x7f bytes would read a host-written 127 as never written.
  std::vector<uint8_t> seen;
  for (uint64_t i = 0; i < Definedness::kWindow; ++i) {
    const uint8_t b = Definedness::sentinel(i, Sentinel::int_bytes);
    for (uint8_t common : {0x00, 0x01, 0x7f, 0x80, 0xff}) EXPECT_NE(b, common) << i;
    EXPECT_EQ(std::count(seen.begin(), seen.end(), b), 0) << "byte " << i << " repeats";
    seen.push_back(b);
  }
  std::vector<std::byte> mem(40);
  const uint64_t id =
      Definedness::process().track(mem.data(), mem.size(), {"torch.empty", "i.py", 1}, Sentinel::int_bytes);
  auto a = Definedness::process().find(mem.data());
  ASSERT_TRUE(a);
  for (size_t i = 0; i < mem.size(); ++i)
    EXPECT_EQ(static_cast<uint8_t>(mem[i]), Definedness::sentinel(i, Sentinel::int_bytes)) << i;
  {
    std::lock_guard<std::mutex> g(a->mu());
    a->define(0, 3);
    mem[3] = std::byte{0x7f};  // the host writes 127 into window 0's one undefined byte
    for (uint64_t b = 4; b < 16; ++b) a->define(b, 1);
    EXPECT_FALSE(a->reads_undefined(0, 16));
    EXPECT_TRUE(a->reads_undefined(16, 1));
  }
  Definedness::process().forget(id);
}

TEST(Definedness, KernelWritesDefineExactlyTheirBytes) {
  Tracked t(64);
  t.define(4, 8);
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ(t.defined(i), i >= 4 && i < 12) << i;
  EXPECT_EQ(t.a->undefined_bytes(), 56u);
  t.define(8, 8);  // overlaps: only 4 new bytes
  EXPECT_EQ(t.a->undefined_bytes(), 52u);
  EXPECT_TRUE(t.all_defined(4, 12));
  EXPECT_FALSE(t.all_defined(4, 13));
  EXPECT_FALSE(t.all_defined(3, 2));
  EXPECT_FALSE(t.reads_undefined(4, 12));
  EXPECT_TRUE(t.reads_undefined(12, 8));  // 12..15 defined, 16..19 not
}

TEST(Definedness, AHostWriteIntoAWindowDefinesIt) {
  Tracked t(64);
  t.mem[20] = 0;  // window 1 (bytes 16..31) no longer holds the sentinel: the host wrote it
  EXPECT_FALSE(t.reads_undefined(16, 4));
  EXPECT_FALSE(t.reads_undefined(28, 4));  // the whole window is defined from then on
  for (uint64_t i = 16; i < 32; ++i) EXPECT_TRUE(t.defined(i)) << i;
  EXPECT_TRUE(t.reads_undefined(32, 4));  // the next window still holds the sentinel
  EXPECT_TRUE(t.reads_undefined(12, 4));
}

TEST(Definedness, HostWritingTheSentinelItselfIsNotSeen) {
  // The documented limit: bytes that hold their sentinel values read as never written.
  Tracked t(32);
  t.mem[3] = Definedness::sentinel(3);
  EXPECT_TRUE(t.reads_undefined(0, 4));
}

TEST(Definedness, BitsArePerPageAndFreedWhenAPageIsFull) {
  Tracked t(3 * 4096 + 100);
  EXPECT_EQ(t.a->bitmap_bytes(), 0u);
  t.define(4096 + 5, 1);
  EXPECT_EQ(t.a->bitmap_bytes(), 4096u / 8);
  t.define(4096, 4096);
  EXPECT_EQ(t.a->bitmap_bytes(), 0u);
  EXPECT_FALSE(t.all_defined(4000, 4096 + 100));  // bytes 4000..4095 are not
  EXPECT_TRUE(t.all_defined(4096, 4096));
  EXPECT_TRUE(t.defined(4096 + 4095));
  EXPECT_FALSE(t.defined(2 * 4096));
  t.define(3 * 4096, 100);  // the last, short page fills too
  EXPECT_EQ(t.a->bitmap_bytes(), 0u);
  EXPECT_EQ(t.a->undefined_bytes(), 2u * 4096);
}

TEST(Definedness, OverlapFindAndForget) {
  std::vector<uint8_t> mem(256);
  auto* p = reinterpret_cast<std::byte*>(mem.data());
  Definedness& d = Definedness::process();
  const size_t before = d.size();
  uint64_t a = d.track(p, 128, {"torch.empty", "a.py", 1});
  uint64_t b = d.track(p + 128, 128, {"numpy.empty", "b.py", 2});
  EXPECT_EQ(d.size(), before + 2);
  EXPECT_EQ(d.find(p + 127)->id, a);
  EXPECT_EQ(d.find(p + 128)->id, b);
  ASSERT_EQ(d.overlapping(p + 100, 50).size(), 2u);
  EXPECT_EQ(d.overlapping(p + 130, 4).size(), 1u);
  // A new allocation over `a`'s memory: `a` was freed, it is forgotten.
  uint64_t c = d.track(p, 64, {"torch.empty", "c.py", 3});
  EXPECT_EQ(d.find(p + 100), nullptr);
  EXPECT_EQ(d.find(p)->site.file, "c.py");
  d.forget(a);  // a stale id does nothing
  EXPECT_EQ(d.size(), before + 2);
  // Fully defined allocations are not offered to launches any more.
  {
    auto t = d.find(p);
    std::lock_guard<std::mutex> g(t->mu());
    t->define(0, 64);
  }
  EXPECT_TRUE(d.overlapping(p, 64).empty());
  d.forget(b);
  d.forget(c);
  EXPECT_EQ(d.size(), before);
}

TEST(Definedness, ConcurrentWritersCountEveryByteOnce) {
  Tracked t(8 * 4096);
  std::vector<std::thread> ws;
  for (int k = 0; k < 4; ++k)
    ws.emplace_back([&, k] {
      for (uint64_t off = static_cast<uint64_t>(k) * 8; off < 8 * 4096; off += 32)
        t.define(off, 12);  // overlaps
    });
  for (auto& w : ws) w.join();
  // Thread k writes [32j + 8k, 32j + 8k + 12): together they cover every byte, several twice.
  EXPECT_EQ(t.a->undefined_bytes(), 0u);
}

// -- the analysis on kernels -----------------------------------------------------------------

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Finding> run(const fs::path& file, const std::vector<exec::Arg>& args, exec::Memory& mem,
                         int threads = 1, std::array<int64_t, 3> grid = {1, 1, 1}) {
  fs::path old = fs::current_path();
  fs::current_path(kRoot);
  ir::Module m = ir::read(slurp(file), file.string());
  ir::verify(m);
  exec::Engine e(m);
  UninitAnalysis u(m);
  exec::LaunchOptions o;
  o.threads = threads;
  o.grid = grid;
  o.observers = {&u};
  e.launch(m.entry()->name, args, mem, o);
  std::vector<Finding> out;
  u.collect(LaunchInfo{m.entry()->name, {"test.py:1 in main"}}, out);
  fs::current_path(old);
  return out;
}

template <class T>
int add(exec::Memory& mem, std::vector<T>& v, const char* name, ir::Elem e) {
  return test::add_buffer(mem, v, name, e);
}

TEST(UninitAnalysis, LoadOfNeverWrittenElementsIsAFinding) {
  // add_tail: out[i] = x[i] + y[i] for i < n, BLOCK 128 per program.
  std::vector<float> x(128), y(128, 1.0f), out(128, 0.0f);
  uint64_t id =
      Definedness::process().track(reinterpret_cast<std::byte*>(x.data()), 512, {"torch.empty", "s.py", 9});
  for (int i = 0; i < 64; ++i) x[i] = 2.0f;  // the host writes the first half
  exec::Memory mem;
  int xb = add(mem, x, "x_ptr", ir::Elem::f32);
  int yb = add(mem, y, "y_ptr", ir::Elem::f32);
  int ob = add(mem, out, "out_ptr", ir::Elem::f32);
  auto fs = run(kRoot / "tests/ttir/add_tail.ttir",
                {exec::Arg::buf(xb), exec::Arg::buf(yb), exec::Arg::buf(ob), exec::Arg::i64(100)}, mem);
  Definedness::process().forget(id);
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::uninitialized_read);
  EXPECT_EQ(f.site.op, "tt.load");
  EXPECT_EQ(f.lanes, 36);  // lanes 64..99: masked-off lanes 100..127 are not read
  EXPECT_EQ(f.offset_min, 64);
  EXPECT_EQ(f.offset_max, 99);
  EXPECT_EQ(f.first_lanes.front(), 64);
  EXPECT_EQ(f.buffer->name, "x_ptr");
  ASSERT_TRUE(f.allocation);
  EXPECT_EQ(f.allocation->op, "torch.empty");
  EXPECT_EQ(f.allocation->file, "s.py");
  EXPECT_EQ(f.allocation->line, 9);
  EXPECT_FALSE(f.hint.empty());
}

TEST(UninitAnalysis, ADenseTileOverAnAllocationInsideABufferFindsExactlyItsElements) {
  // add_tail with n = 128: one dense load of x's 128 elements (every lane active, consecutive). The tracked
  // allocation is bytes [102, 302) of x, so elements 25 (bytes 100..103) to 75 (bytes 300..303) touch it.
  std::vector<float> x(128, 1.0f), y(128, 1.0f), out(128, 0.0f);
  uint64_t id = Definedness::process().track(reinterpret_cast<std::byte*>(x.data()) + 102, 200,
                                             {"torch.empty", "s.py", 4});
  exec::Memory mem;
  int xb = add(mem, x, "x_ptr", ir::Elem::f32);
  int yb = add(mem, y, "y_ptr", ir::Elem::f32);
  int ob = add(mem, out, "out_ptr", ir::Elem::f32);
  auto fs = run(kRoot / "tests/ttir/add_tail.ttir",
                {exec::Arg::buf(xb), exec::Arg::buf(yb), exec::Arg::buf(ob), exec::Arg::i64(128)}, mem);
  Definedness::process().forget(id);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].lanes, 51);
  EXPECT_EQ(fs[0].offset_min, 25);
  EXPECT_EQ(fs[0].offset_max, 75);
  EXPECT_EQ(fs[0].first_lanes.front(), 25);
}

TEST(UninitAnalysis, WhatAKernelStoredIsDefinedForTheNextLaunch) {
  std::vector<float> x(128, 1.0f), y(128, 1.0f), out(128), out2(128);
  uint64_t id =
      Definedness::process().track(reinterpret_cast<std::byte*>(out.data()), 512, {"torch.empty", "s.py", 3});
  exec::Memory mem;
  int xb = add(mem, x, "x_ptr", ir::Elem::f32);
  int yb = add(mem, y, "y_ptr", ir::Elem::f32);
  int ob = add(mem, out, "out_ptr", ir::Elem::f32);
  int o2 = add(mem, out2, "out2", ir::Elem::f32);
  auto first = run(kRoot / "tests/ttir/add_tail.ttir",
                   {exec::Arg::buf(xb), exec::Arg::buf(yb), exec::Arg::buf(ob), exec::Arg::i64(128)}, mem);
  EXPECT_TRUE(first.empty());
  // out was written with 2.0f everywhere, whose bytes differ from the sentinel anyway; make them the
  // sentinel again so that only the bits can say it was written.
  for (size_t i = 0; i < 512; ++i) reinterpret_cast<uint8_t*>(out.data())[i] = Definedness::sentinel(i);
  auto second = run(kRoot / "tests/ttir/add_tail.ttir",
                    {exec::Arg::buf(ob), exec::Arg::buf(yb), exec::Arg::buf(o2), exec::Arg::i64(128)}, mem);
  EXPECT_TRUE(second.empty()) << (second.empty() ? "" : second[0].summary);
  Definedness::process().forget(id);
}

TEST(UninitAnalysis, AtomicAddIntoNeverWrittenMemoryIsAFinding) {
  // atomic_hist: hist[idx[i]] += 1 for 16 lanes; idx = i % 10.
  std::vector<int32_t> idx(16), hist(10);
  for (int i = 0; i < 16; ++i) idx[i] = i % 10;
  uint64_t id =
      Definedness::process().track(reinterpret_cast<std::byte*>(hist.data()), 40, {"torch.empty", "h.py", 4});
  exec::Memory mem;
  int ib = add(mem, idx, "idx_ptr", ir::Elem::i32);
  int hb = add(mem, hist, "hist_ptr", ir::Elem::i32);
  auto fs = run(kHere / "atomic_hist.ttir", {exec::Arg::buf(ib), exec::Arg::buf(hb)}, mem);
  auto again = run(kHere / "atomic_hist.ttir", {exec::Arg::buf(ib), exec::Arg::buf(hb)}, mem);
  Definedness::process().forget(id);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].site.op, "tt.atomic_rmw");
  // Lanes 0..9 read never-written counters; lanes 10..15 hit counters lanes 0..5 just wrote.
  EXPECT_EQ(fs[0].lanes, 10);
  EXPECT_EQ(fs[0].offset_min, 0);
  EXPECT_EQ(fs[0].offset_max, 9);
  EXPECT_TRUE(again.empty());  // the atomics defined every counter
}

TEST(UninitAnalysis, ConcurrentAtomicsReportEachNeverWrittenElementOnce) {
  // 8 programs on 4 threads add to the same 10 counters: whichever lane reaches a counter first reads
  // it never written, every other lane reads what an atomic wrote, whatever the interleaving.
  std::vector<int32_t> idx(16), hist(10);
  for (int i = 0; i < 16; ++i) idx[i] = i % 10;
  uint64_t id =
      Definedness::process().track(reinterpret_cast<std::byte*>(hist.data()), 40, {"torch.empty", "h.py", 4});
  exec::Memory mem;
  int ib = add(mem, idx, "idx_ptr", ir::Elem::i32);
  int hb = add(mem, hist, "hist_ptr", ir::Elem::i32);
  auto fs = run(kHere / "atomic_hist.ttir", {exec::Arg::buf(ib), exec::Arg::buf(hb)}, mem, 4, {8, 1, 1});
  Definedness::process().forget(id);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].lanes, 10);
  EXPECT_EQ(fs[0].offset_min, 0);
  EXPECT_EQ(fs[0].offset_max, 9);
}

TEST(UninitAnalysis, NoTrackedBufferSubscribesToNothing) {
  std::vector<float> x(128, 1.0f), y(128, 1.0f), out(128);
  exec::Memory mem;
  add(mem, x, "x_ptr", ir::Elem::f32);
  add(mem, y, "y_ptr", ir::Elem::f32);
  add(mem, out, "out_ptr", ir::Elem::f32);
  ir::Module m = ir::read(slurp(kRoot / "tests/ttir/add_tail.ttir"), "add_tail.ttir");
  UninitAnalysis u(m);
  std::atomic<bool> stop{false};
  exec::LaunchContext ctx(stop);
  ctx.memory = &mem;
  EXPECT_EQ(u.on_launch_begin(ctx).kinds, 0u);
}

}  // namespace
}  // namespace tilescope::analysis
