// The observer seam (exec/events.h) through the engine: launch begin/end and the launch context,
// per-program state (also with fibers interleaving programs, and two threads), watch sets, op-begin
// events, the stop flag (also inside nested regions and under fibers with a spin lock), and print /
// assert events that reach no stream. Expected values come from the kernels' meaning (hand
// computation), the op order of the TTIR text, and Triton's own device_print format
// (python/test/unit/language/test_subprocess.py in triton 3.6; reference §5).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/cpp/exec/sync_kernels.h"
#include "tests/cpp/harness.h"

using namespace tilescope;
using exec::Arg;
using ir::Elem;

namespace {

std::string fixture(const std::string& name) {
  auto path =
      (std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "ttir" / name).lexically_normal();
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// y[pid*8 + i] = x[pid*8 + i] * a * (n + 1): a load, a scalar splat, a loop of n adds, a store.
const char* kScaled = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %n: i32, %a: f32) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c8 = arith.constant 8 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c8 : i32
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %s = tt.splat %base : i32 -> tensor<8xi32>
    %offs = arith.addi %s, %r : tensor<8xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    %v = tt.load %xp : tensor<8x!tt.ptr<f32>>
    %as = tt.splat %a : f32 -> tensor<8xf32>
    %w = arith.mulf %v, %as : tensor<8xf32>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%t = %w) -> (tensor<8xf32>) : i32 {
      %t2 = arith.addf %t, %w : tensor<8xf32>
      scf.yield %t2 : tensor<8xf32>
    }
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    tt.store %yp, %acc : tensor<8x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @other(%y: !tt.ptr<f32>) attributes {noinline = false} {
    %c2 = arith.constant 2.0 : f32
    tt.store %y, %c2 : !tt.ptr<f32>
    tt.return
  }
})";

// out = combine over 16 loaded values with a two-op region (no fast path: the region runs per pair).
const char* kGenericReduce = R"(module {
  tt.func public @r(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %rg = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %rg : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
    %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %b, %b : f32
      %t = arith.addf %a, %m : f32
      tt.reduce.return %t : f32
    }) : (tensor<16xf32>) -> f32
    tt.store %out, %s : !tt.ptr<f32>
    tt.return
  }
})";

/// A module read and verified, with an engine on it.
struct Kernel {
  ir::Module m;
  std::unique_ptr<exec::Engine> engine;
  explicit Kernel(const std::string& text) : m(ir::read(text, "test.ttir")) {
    ir::verify(m);
    engine = std::make_unique<exec::Engine>(m);
  }
  exec::LaunchStats launch(const std::string& fn, const std::vector<Arg>& args, exec::Memory& mem,
                           std::array<int64_t, 3> grid, int threads, std::vector<exec::Observer*> obs) {
    exec::LaunchOptions o;
    o.grid = grid;
    o.threads = threads;
    o.observers = std::move(obs);
    return engine->launch(fn, args, mem, o);
  }
};

/// One callback, as an observer saw it.
struct Entry {
  Entry(std::string w, exec::ProgramId p = {-1, -1, -1}, std::string o = "", const ir::Op* ptr = nullptr,
        const void* t = nullptr)
      : what(std::move(w)), pid(p), op(std::move(o)), op_ptr(ptr), tag(t) {}
  std::string what;  // "launch_begin", "program_begin", "op_begin", "op", "access", ...
  exec::ProgramId pid;
  std::string op;  // op name for op / access events
  const ir::Op* op_ptr;
  const void* tag;
};

/// Records every callback of the kinds it subscribes to, in order (a mutex orders concurrent ones).
/// `hook` runs inside each callback (after recording) with the entry and the launch context.
class Log : public exec::Observer {
 public:
  explicit Log(unsigned kinds) : kinds_(kinds) {}
  std::function<void(const Entry&, const exec::LaunchContext&)> hook;
  std::function<const void*(const ir::Op&)> ops;
  std::function<bool(const ir::Value&)> values;

  exec::Subscription on_launch_begin(const exec::LaunchContext& ctx) override {
    ctx_ = &ctx;
    add({"launch_begin"});
    return {kinds_, ops, values};
  }
  void on_launch_end(const exec::LaunchContext& ctx, const exec::LaunchStats& st) override {
    EXPECT_EQ(&ctx, ctx_);
    end_stats = st;
    add({"launch_end"});
  }
  void* on_program_begin(exec::ProgramId pid) override {
    add({"program_begin", pid});
    return nullptr;
  }
  void on_program_end(exec::ProgramId pid, void*) override { add({"program_end", pid}); }
  void on_op_begin(const exec::OpEvent& e, void*) override {
    add({"op_begin", e.pid, e.op->name, e.op, e.tag});
  }
  void on_op(const exec::OpEvent& e, void*) override { add({"op", e.pid, e.op->name, e.op, e.tag}); }
  void on_transfer(const exec::TransferEvent& e, void*) override {
    add({"transfer", e.pid, e.count ? e.dst[0]->name : ""});
  }
  void on_access(const exec::AccessEvent& e, void*) override { add({"access", e.pid, e.op->name, e.op}); }
  void on_print(const exec::PrintEvent& e, void*) override {
    add({"print", e.pid, e.op->name, e.op});
    std::lock_guard<std::mutex> g(mu_);
    prints.push_back(e.text);
  }
  void on_assert(const exec::AssertEvent& e, void*) override {
    add({"assert", e.pid, e.op->name, e.op});
    std::lock_guard<std::mutex> g(mu_);
    asserts.push_back(e);
  }

  std::vector<Entry> entries;
  std::vector<std::string> prints;
  std::vector<exec::AssertEvent> asserts;
  exec::LaunchStats end_stats;

  /// Entries so far (safe while other threads record).
  size_t count() {
    std::lock_guard<std::mutex> g(mu_);
    return entries.size();
  }
  std::vector<Entry> of(const std::string& what) const {
    std::vector<Entry> r;
    for (auto& e : entries)
      if (e.what == what) r.push_back(e);
    return r;
  }

 private:
  void add(Entry e) {
    {
      std::lock_guard<std::mutex> g(mu_);
      entries.push_back(e);
    }
    if (hook) hook(e, *ctx_);
  }
  unsigned kinds_;
  const exec::LaunchContext* ctx_ = nullptr;
  std::mutex mu_;
};

struct Scaled {
  std::vector<float> x, y;
  exec::Memory mem;
  int xb, yb;
  explicit Scaled(int programs) : x(8 * programs), y(8 * programs, -1.0f) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
    xb = test::add_buffer(mem, x, "x", Elem::f32);
    yb = test::add_buffer(mem, y, "y", Elem::f32);
  }
  std::vector<Arg> args(int n) { return {Arg::buf(xb), Arg::buf(yb), Arg::i64(n), Arg::f32(0.5f)}; }
};

}  // namespace

TEST(ObserverSeam, LaunchBeginAndEndFrameEveryProgramAndTheContextDescribesTheLaunch) {
  Kernel k(kScaled);
  Scaled d(4);
  Log log(exec::kProgram);
  std::thread::id launcher = std::this_thread::get_id(), begin_thread, end_thread;
  const exec::LaunchContext* seen = nullptr;
  log.hook = [&](const Entry& e, const exec::LaunchContext& ctx) {
    if (e.what == "launch_begin") {
      begin_thread = std::this_thread::get_id();
      seen = &ctx;
      EXPECT_EQ(ctx.module, &k.m);
      ASSERT_NE(ctx.kernel, nullptr);
      EXPECT_EQ(ctx.kernel->name, "k");
      EXPECT_EQ(ctx.grid, (std::array<int64_t, 3>{4, 1, 1}));
      EXPECT_EQ(ctx.programs, 4);
      EXPECT_EQ(ctx.threads, 2);
      EXPECT_EQ(ctx.memory, &d.mem);
      EXPECT_FALSE(ctx.stop_requested());
      ASSERT_EQ(ctx.args.size(), 4u);
      const char* names[] = {"x", "y", "n", "a"};
      for (int i = 0; i < 4; ++i) EXPECT_EQ(ctx.args[i].param->name, names[i]);
      EXPECT_EQ(ctx.args[0].buffer, &d.mem.buffer(d.xb));
      EXPECT_EQ(ctx.args[0].bits, d.mem.vaddr(d.xb));
      EXPECT_EQ(ctx.args[1].buffer, &d.mem.buffer(d.yb));
      const exec::Buffer& xb = *ctx.args[0].buffer;
      EXPECT_EQ(xb.name, "x");
      EXPECT_EQ(xb.dtype, Elem::f32);
      EXPECT_EQ(xb.shape, std::vector<int64_t>{32});
      EXPECT_EQ(xb.strides, std::vector<int64_t>{1});
      EXPECT_EQ(xb.bytes, 128u);
      EXPECT_EQ(ctx.args[2].buffer, nullptr);
      EXPECT_EQ(ctx.args[2].bits, 3u);
      EXPECT_EQ(ctx.args[3].buffer, nullptr);
      EXPECT_EQ(ctx.args[3].bits, 0x3f000000u);  // 0.5f: sign 0, exponent 126, mantissa 0
    }
    if (e.what == "launch_end") {
      end_thread = std::this_thread::get_id();
      EXPECT_EQ(&ctx, seen);
    }
  };
  auto st = k.launch("k", d.args(3), d.mem, {4, 1, 1}, 2, {&log});
  EXPECT_EQ(begin_thread, launcher);
  EXPECT_EQ(end_thread, launcher);
  ASSERT_EQ(log.entries.size(), 2u + 2 * 4);
  EXPECT_EQ(log.entries.front().what, "launch_begin");
  EXPECT_EQ(log.entries.back().what, "launch_end");
  std::set<int32_t> begun, ended;
  for (size_t i = 1; i + 1 < log.entries.size(); ++i) {
    const Entry& e = log.entries[i];
    if (e.what == "program_begin") {
      EXPECT_TRUE(begun.insert(e.pid[0]).second);
    } else {
      ASSERT_EQ(e.what, "program_end");
      EXPECT_TRUE(begun.count(e.pid[0])) << "a program ends after it began";
      EXPECT_TRUE(ended.insert(e.pid[0]).second);
    }
  }
  EXPECT_EQ(begun, (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(ended, begun);
  EXPECT_EQ(st.programs, 4);
  EXPECT_FALSE(st.stopped);
  EXPECT_EQ(log.end_stats.programs, 4);
  for (size_t i = 0; i < d.y.size(); ++i) EXPECT_EQ(d.y[i], 2.0f * i) << i;  // i * 0.5 * (3 + 1)
}

namespace {

/// Hands out pooled per-program states and checks that every event carries its own program's.
class StateCheck : public exec::Observer {
 public:
  struct PState {
    exec::ProgramId pid;
    int64_t events = 0;
    bool live = false;
  };
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override {
    return {exec::kProgram | exec::kAccess | exec::kOpBegin | exec::kOpResult, {}, {}};
  }
  void* on_program_begin(exec::ProgramId pid) override {
    std::lock_guard<std::mutex> g(mu_);
    PState* s;
    if (free_.empty()) {
      all_.push_back(std::make_unique<PState>());
      s = all_.back().get();
    } else {
      s = free_.back();
      free_.pop_back();
    }
    EXPECT_FALSE(s->live);
    *s = PState{pid, 0, true};
    ++begun;
    ++live_;
    max_live = std::max(max_live, live_);
    return s;
  }
  void on_program_end(exec::ProgramId pid, void* state) override {
    auto* s = static_cast<PState*>(state);
    check(s, pid);
    std::lock_guard<std::mutex> g(mu_);
    s->live = false;
    ++ended;
    --live_;
    events += s->events;
    free_.push_back(s);
  }
  void on_op_begin(const exec::OpEvent& e, void* state) override { check(state, e.pid); }
  void on_op(const exec::OpEvent& e, void* state) override { check(state, e.pid); }
  void on_transfer(const exec::TransferEvent& e, void* state) override { check(state, e.pid); }
  void on_access(const exec::AccessEvent& e, void* state) override { check(state, e.pid); }

  int64_t begun = 0, ended = 0, events = 0, mismatches = 0, max_live = 0;

 private:
  void check(void* state, const exec::ProgramId& pid) {
    auto* s = static_cast<PState*>(state);
    // Per-program state needs no lock: only its own program's events touch it.
    if (!s || !s->live || s->pid != pid) {
      std::lock_guard<std::mutex> g(mu_);
      ++mismatches;
      return;
    }
    ++s->events;
  }
  std::mutex mu_;
  std::vector<std::unique_ptr<PState>> all_;
  std::vector<PState*> free_;
  int64_t live_ = 0;
};

}  // namespace

TEST(ObserverSeam, EachProgramsEventsCarryItsOwnStateAlsoWhenFibersInterleavePrograms) {
  for (int threads : {1, 2}) {
    Kernel k(test::kSpinLockKernel);
    std::vector<int32_t> lock(1, 0), counter(1, 0);
    exec::Memory mem;
    int l = test::add_buffer(mem, lock, "lock", Elem::i32);
    int c = test::add_buffer(mem, counter, "counter", Elem::i32);
    StateCheck chk;
    auto st = k.launch("k", {Arg::buf(l), Arg::buf(c)}, mem, {300, 1, 1}, threads, {&chk});
    EXPECT_EQ(counter[0], 300) << threads;
    EXPECT_EQ(st.programs, 300);
    EXPECT_EQ(chk.begun, 300);
    EXPECT_EQ(chk.ended, 300);
    EXPECT_EQ(chk.mismatches, 0) << threads << " threads";
    // Every program has at least its cas, load, store and exch accesses.
    EXPECT_GE(chk.events, 300 * 4);
  }
  // Programs interleaved: each waits for the next, so all 300 are live at once (parked).
  for (int threads : {1, 2}) {
    Kernel k(test::kWaitChainKernel);
    std::vector<int32_t> flags(300, 0);
    exec::Memory mem;
    int f = test::add_buffer(mem, flags, "flags", Elem::i32);
    StateCheck chk;
    auto st = k.launch("k", {Arg::buf(f), Arg::i64(300)}, mem, {300, 1, 1}, threads, {&chk});
    EXPECT_EQ(st.programs, 300);
    EXPECT_EQ(flags, std::vector<int32_t>(300, 1));
    EXPECT_EQ(chk.begun, 300);
    EXPECT_EQ(chk.ended, 300);
    EXPECT_EQ(chk.mismatches, 0) << threads << " threads";
    EXPECT_GE(chk.events, 300 * 2);  // a poll and the exch at least
    // No program can end before the last one has started, so all are live then, but for those the
    // other workers have taken from the grid and not begun yet (at most one each).
    EXPECT_GE(chk.max_live, 300 - (threads - 1)) << threads << " threads";
  }
  // Straight-line programs on two threads.
  Kernel k(kScaled);
  Scaled d(64);
  StateCheck chk;
  k.launch("k", d.args(2), d.mem, {64, 1, 1}, 2, {&chk});
  EXPECT_EQ(chk.begun, 64);
  EXPECT_EQ(chk.ended, 64);
  EXPECT_EQ(chk.mismatches, 0);
  EXPECT_GT(chk.events, 64 * 20);
}

TEST(ObserverSeam, AnObserverWatchingOneOpGetsExactlyThatOpsEventsAndEachOpIsAskedOnce) {
  Kernel k(kScaled);
  Scaled d(4);
  k.launch("other", {Arg::buf(d.yb)}, d.mem, {1, 1, 1}, 1, {});  // @other's ops are in the plan now
  d.y.assign(d.y.size(), -1.0f);
  static const int kMarker = 0;
  std::map<const ir::Op*, int> asked;
  std::map<const ir::Value*, int> asked_values;
  Log one(exec::kOpResult | exec::kOpBegin);
  one.ops = [&](const ir::Op& op) -> const void* {
    ++asked[&op];
    return op.name == "arith.mulf" ? &kMarker : nullptr;
  };
  one.values = [&](const ir::Value& v) {
    ++asked_values[&v];
    return v.name == "acc";
  };
  Log all(exec::kOpResult);  // no filters: every op, tagged with itself; every value
  k.launch("k", d.args(3), d.mem, {4, 1, 1}, 1, {&one, &all});

  // The ops the launch can run: @k's non-terminator ops, the loop body included; never @other's.
  std::set<const ir::Op*> expected;
  std::function<void(const ir::Region&)> walk = [&](const ir::Region& r) {
    for (auto& b : r.blocks)
      for (auto& op : b->ops) {
        if (op->name != "tt.return" && op->name != "scf.yield") expected.insert(op.get());
        for (auto& sub : op->regions) walk(*sub);
      }
  };
  walk(k.m.find("k")->body);
  EXPECT_EQ(expected.size(), 18u);
  std::set<const ir::Op*> asked_set;
  for (auto& [op, n] : asked) {
    EXPECT_EQ(n, 1) << op->name << " asked " << n << " times";
    asked_set.insert(op);
  }
  EXPECT_EQ(asked_set, expected);
  for (auto& [v, n] : asked_values) EXPECT_EQ(n, 1) << v->name;

  auto ops = one.of("op"), begins = one.of("op_begin");
  ASSERT_EQ(ops.size(), 4u);  // one arith.mulf per program
  ASSERT_EQ(begins.size(), 4u);
  for (auto& e : ops) {
    EXPECT_EQ(e.op, "arith.mulf");
    EXPECT_EQ(e.tag, &kMarker);
  }
  // Transfers only into the watched value: the loop's results, once per program.
  auto tr = one.of("transfer");
  ASSERT_EQ(tr.size(), 4u);
  for (auto& e : tr) EXPECT_EQ(e.op, "acc");
  // The unfiltered observer gets every op's result, tagged with the op itself: 17 ops once, and the
  // loop body's addf 3 times, per program.
  auto every = all.of("op");
  EXPECT_EQ(every.size(), 4u * (17 + 3));
  for (auto& e : every) EXPECT_EQ(e.tag, e.op_ptr);
  // Its transfers: loop init, 3 yields and the results, per program.
  EXPECT_EQ(all.of("transfer").size(), 4u * 5);
}

TEST(ObserverSeam, OpBeginPrecedesTheOpAndRegionOpsFrameTheirBodies) {
  Kernel k(kScaled);
  Scaled d(1);
  struct Values : Log {
    using Log::Log;
    std::vector<float> mulf_in0, mulf_in1, mulf_out;
    void on_op_begin(const exec::OpEvent& e, void* s) override {
      Log::on_op_begin(e, s);
      if (e.op->name != "arith.mulf") return;
      exec::ValueRef a = e.operand(0), b = e.operand(1);
      EXPECT_EQ(a.elem(), Elem::f32);
      EXPECT_EQ(a.numel(), 8);
      mulf_in0.assign(a.as<float>(), a.as<float>() + a.numel());
      mulf_in1.assign(b.as<float>(), b.as<float>() + b.numel());
    }
    void on_op(const exec::OpEvent& e, void* s) override {
      Log::on_op(e, s);
      if (e.op->name != "arith.mulf") return;
      exec::ValueRef r = e.result(0);
      mulf_out.assign(r.as<float>(), r.as<float>() + r.numel());
    }
  } log(exec::kOpBegin | exec::kOpResult);
  k.launch("k", d.args(2), d.mem, {1, 1, 1}, 1, {&log});
  std::string seq;
  for (auto& e : log.entries)
    if (e.what == "op_begin" || e.what == "op") seq += (e.what == "op" ? "/" : "") + e.op + " ";
  std::string expected;
  for (const char* op : {"arith.constant", "arith.constant", "arith.constant", "tt.get_program_id",
                         "arith.muli", "tt.make_range", "tt.splat", "arith.addi", "tt.splat", "tt.addptr",
                         "tt.load", "tt.splat", "arith.mulf"})
    expected += std::string(op) + " /" + op + " ";
  expected += "scf.for ";
  for (int i = 0; i < 2; ++i) expected += "arith.addf /arith.addf ";
  expected += "/scf.for ";
  for (const char* op : {"tt.splat", "tt.addptr", "tt.store"}) expected += std::string(op) + " /" + op + " ";
  EXPECT_EQ(seq, expected);
  EXPECT_EQ(log.mulf_in0, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(log.mulf_in1, std::vector<float>(8, 0.5f));
  EXPECT_EQ(log.mulf_out, (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f}));
}

TEST(ObserverSeam, StopRequestedAtProgramKStartsNoNewProgramAndReturnsStopped) {
  Kernel k(kScaled);
  Scaled d(16);
  Log log(exec::kProgram | exec::kAccess);
  log.hook = [](const Entry& e, const exec::LaunchContext& ctx) {
    if (e.what == "program_begin" && e.pid[0] == 5) ctx.request_stop();
  };
  auto st = k.launch("k", d.args(3), d.mem, {16, 1, 1}, 1, {&log});
  EXPECT_TRUE(st.stopped);
  EXPECT_TRUE(log.end_stats.stopped);
  EXPECT_EQ(st.programs, 6);
  std::vector<int32_t> begun, ended;
  for (auto& e : log.of("program_begin")) begun.push_back(e.pid[0]);
  for (auto& e : log.of("program_end")) ended.push_back(e.pid[0]);
  EXPECT_EQ(begun, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(ended, begun);
  // Program 5 ended at its first step boundary: no access; programs 0..4 loaded and stored.
  auto acc = log.of("access");
  EXPECT_EQ(acc.size(), 10u);
  for (auto& e : acc) EXPECT_LT(e.pid[0], 5);
  for (size_t i = 0; i < d.y.size(); ++i) EXPECT_EQ(d.y[i], i < 40 ? 2.0f * i : -1.0f) << i;

  // Two threads: the other worker finishes its current step and starts nothing new.
  Scaled d2(1000);
  Log log2(exec::kProgram);
  log2.hook = log.hook;
  auto st2 = k.launch("k", d2.args(3), d2.mem, {1000, 1, 1}, 2, {&log2});
  EXPECT_TRUE(st2.stopped);
  EXPECT_GE(st2.programs, 6);
  EXPECT_LE(st2.programs, 8);
  EXPECT_EQ(log2.of("program_begin").size(), static_cast<size_t>(st2.programs));
  EXPECT_EQ(log2.of("program_end").size(), static_cast<size_t>(st2.programs));
}

TEST(ObserverSeam, StopUnderFibersEndsSpinningAndLockHoldingProgramsNormally) {
  for (int threads : {1, 2}) {
    Kernel k(test::kSpinLockKernel);
    std::vector<int32_t> lock(1, 0), counter(1, 0);
    exec::Memory mem;
    int l = test::add_buffer(mem, lock, "lock", Elem::i32);
    int c = test::add_buffer(mem, counter, "counter", Elem::i32);
    Log log(exec::kProgram | exec::kAccess);
    std::atomic<int> loads{0};
    std::atomic<size_t> stop_at{0};
    // The 10th program to read the counter (inside the critical section) stops the launch while it
    // holds the lock: programs spinning on the lock must end too.
    log.hook = [&](const Entry& e, const exec::LaunchContext& ctx) {
      if (e.what == "access" && e.op == "tt.load" && ++loads == 10) {
        stop_at = log.count();
        ctx.request_stop();
      }
    };
    auto st = k.launch("k", {Arg::buf(l), Arg::buf(c)}, mem, {300, 1, 1}, threads, {&log});
    EXPECT_TRUE(st.stopped);
    size_t begun = log.of("program_begin").size();
    EXPECT_EQ(begun, static_cast<size_t>(st.programs));
    EXPECT_EQ(log.of("program_end").size(), begun) << "every parked program was resumed and returned";
    // No program starts after the stop (with two threads, the other worker may be past its check).
    ASSERT_GT(stop_at.load(), 0u);
    size_t late = 0;
    for (size_t i = stop_at; i < log.entries.size(); ++i) late += log.entries[i].what == "program_begin";
    EXPECT_LE(late, static_cast<size_t>(threads - 1)) << threads << " threads";
    EXPECT_EQ(counter[0], 9) << "nine increments; the tenth program stopped before its store";
    EXPECT_EQ(lock[0], 1) << "the lock holder stopped before releasing";
  }
}

TEST(ObserverSeam, StopInsideLoopAndReduceRegionsUnwindsWithoutFurtherEvents) {
  {  // scf.for body: stop at the begin of the second iteration's addf
    Kernel k(kScaled);
    Scaled d(1);
    Log log(exec::kProgram | exec::kOpBegin | exec::kOpResult);
    int addf = 0;
    size_t stop_at = 0;
    log.hook = [&](const Entry& e, const exec::LaunchContext& ctx) {
      if (e.what == "op_begin" && e.op == "arith.addf" && ++addf == 2) {
        stop_at = log.count();
        ctx.request_stop();
      }
    };
    auto st = k.launch("k", d.args(5), d.mem, {1, 1, 1}, 1, {&log});
    EXPECT_TRUE(st.stopped);
    ASSERT_GT(stop_at, 0u);
    ASSERT_EQ(log.entries.size(), stop_at + 2);
    EXPECT_EQ(log.entries[stop_at].what, "program_end");
    EXPECT_EQ(log.entries[stop_at + 1].what, "launch_end");
    for (auto& e : log.of("op")) EXPECT_NE(e.op, "scf.for") << "a stopped loop sends no result";
    EXPECT_EQ(d.y, std::vector<float>(8, -1.0f)) << "the store after the loop never ran";
  }
  {  // tt.reduce combine region: without a stop it runs 15 times (16 values); stop at the third
    Kernel k(kGenericReduce);
    std::vector<float> x(16, 1.0f), out(1, -1.0f);
    exec::Memory mem;
    int xb = test::add_buffer(mem, x, "x", Elem::f32);
    int ob = test::add_buffer(mem, out, "out", Elem::f32);
    Log full(exec::kOpResult);
    k.launch("r", {Arg::buf(xb), Arg::buf(ob)}, mem, {1, 1, 1}, 1, {&full});
    int combines = 0;
    for (auto& e : full.of("op")) combines += e.op == "arith.addf";
    EXPECT_EQ(combines, 15);
    EXPECT_NE(out[0], -1.0f);

    out[0] = -1.0f;
    Log log(exec::kProgram | exec::kOpBegin | exec::kOpResult);
    int addf = 0;
    size_t stop_at = 0;
    log.hook = [&](const Entry& e, const exec::LaunchContext& ctx) {
      if (e.what == "op_begin" && e.op == "arith.addf" && ++addf == 3) {
        stop_at = log.count();
        ctx.request_stop();
      }
    };
    auto st = k.launch("r", {Arg::buf(xb), Arg::buf(ob)}, mem, {1, 1, 1}, 1, {&log});
    EXPECT_TRUE(st.stopped);
    ASSERT_GT(stop_at, 0u);
    ASSERT_EQ(log.entries.size(), stop_at + 2);
    EXPECT_EQ(log.entries[stop_at].what, "program_end");
    for (auto& e : log.of("op")) EXPECT_NE(e.op, "tt.reduce");
    EXPECT_EQ(out[0], -1.0f) << "the store after the reduce never ran";
  }
}

TEST(ObserverSeam, PrintEventsCarryTheGpuTextAndNothingReachesStdout) {
  Kernel k(fixture("device_print.ttir"));
  std::vector<int32_t> x{0, 1, 2, 3, 42, -5, 255, 1000}, y(8, 0);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", Elem::i32);
  int yb = test::add_buffer(mem, y, "y_ptr", Elem::i32);
  // Triton's device_print format: `pid (x, y, z) idx (i) <prefix><value>`, the prefix " xval: " as the
  // frontend normalised it; hex=true prints an i32 as 0x%08x.
  std::string val, hex;
  for (int i = 0; i < 8; ++i) {
    val += fmt::format("pid (0, 0, 0) idx ({}) xval: {}\n", i, x[i]);
    hex += fmt::format("pid (0, 0, 0) idx ({}) xhex: 0x{:08x}\n", i, static_cast<uint32_t>(x[i]));
  }
  EXPECT_NE(hex.find("0xfffffffb"), std::string::npos);  // -5 as 32-bit two's complement
  Log log(exec::kPrint);
  testing::internal::CaptureStdout();
  k.launch("print_kernel", {Arg::buf(xb), Arg::buf(yb)}, mem, {1, 1, 1}, 1, {&log});
  k.launch("print_kernel", {Arg::buf(xb), Arg::buf(yb)}, mem, {1, 1, 1}, 1, {});
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, "");
  ASSERT_EQ(log.prints.size(), 2u);
  EXPECT_EQ(log.prints[0], val);
  EXPECT_EQ(log.prints[1], hex);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], x[i] + 1);
}

TEST(ObserverSeam, FailedAssertsAreEventsAndReachNoStream) {
  Kernel k(fixture("device_assert_fail.ttir"));
  std::vector<int32_t> x(64, 1), y(64, 0);
  x[3] = -1;
  x[40] = -2;
  x[41] = -3;
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", Elem::i32);
  int yb = test::add_buffer(mem, y, "y_ptr", Elem::i32);
  Log log(exec::kAssert);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  auto st = k.launch("assert_kernel", {Arg::buf(xb), Arg::buf(yb)}, mem, {2, 1, 1}, 1, {&log});
  auto st0 = k.launch("assert_kernel", {Arg::buf(xb), Arg::buf(yb)}, mem, {2, 1, 1}, 1, {});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(st.failed_asserts, 2);
  EXPECT_EQ(st0.failed_asserts, 2);
  ASSERT_EQ(log.asserts.size(), 2u);
  std::sort(log.asserts.begin(), log.asserts.end(), [](auto& a, auto& b) { return a.pid[0] < b.pid[0]; });
  EXPECT_EQ(log.asserts[0].pid[0], 0);
  EXPECT_EQ(log.asserts[0].failed_lanes, 1);
  EXPECT_EQ(log.asserts[0].first_lane, 3);
  EXPECT_EQ(log.asserts[1].pid[0], 1);
  EXPECT_EQ(log.asserts[1].failed_lanes, 2);
  EXPECT_EQ(log.asserts[1].first_lane, 8);  // element 40 is lane 8 of program 1 (BLOCK 32)
  EXPECT_EQ(log.asserts[0].message, "x must be non-negative");
}

TEST(ObserverSeam, AFailingLaunchStillEndsEveryProgramAndTheLaunch) {
  // scf.for with a zero step over a non-empty range is an error at run time (the step is an argument).
  Kernel k(R"(module {
  tt.func public @k(%out: !tt.ptr<i32>, %step: i32) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c4 = arith.constant 4 : i32
    %s = scf.for %i = %c0 to %c4 step %step iter_args(%acc = %c0) -> (i32)  : i32 {
      %a = arith.addi %acc, %i : i32
      scf.yield %a : i32
    }
    tt.store %out, %s : !tt.ptr<i32>
    tt.return
  }
})");
  std::vector<int32_t> out(1, 0);
  exec::Memory mem;
  int ob = test::add_buffer(mem, out, "out", Elem::i32);
  Log log(exec::kProgram);
  EXPECT_THROW(k.launch("k", {Arg::buf(ob), Arg::i64(0)}, mem, {3, 1, 1}, 1, {&log}), Error);
  EXPECT_EQ(log.of("program_begin").size(), 1u) << "the failing program stops the launch";
  EXPECT_EQ(log.of("program_end").size(), 1u);
  ASSERT_FALSE(log.entries.empty());
  EXPECT_EQ(log.entries.back().what, "launch_end");
}
