// The engine: plans kernels once and runs launch grids on a thread pool (see engine.h).
//
// Scheduling. Program instances are handed out to worker threads from one atomic counter. A plan
// that contains no atomics and no volatile loads cannot wait on another program, so its programs
// run straight on the worker's stack. Otherwise every program runs as a fiber (ucontext) with its
// own frame, and every op through which it may wait (atomics, volatile and atomic loads) reports
// what it read (Program::polled). A program that reads the same value at one address twice in a
// row from the same op is spinning: it is parked on that address (Waits) and its worker runs or
// starts another program. A write that changes the value at a watched address (stores and atomics
// check one bit per buffer, Program::watching) wakes the address's first waiter, which polls again
// and either goes on or parks again. So a lock holder runs while its waiters sleep, a lock handed
// over costs a few switches, and a grid barrier costs each program one wake: the work is linear in
// the number of programs, where polling every waiter was quadratic. A worker with nothing to run or
// start rechecks the values its parked programs wait on (a write may have raced with the parking,
// or woken another waiter), then sleeps; when every worker is in that state, no running program
// can change anything: all parked programs resume and spin for a budget that doubles each time
// before they park again, so bounded waits (a poll with a retry count) finish and a real hang
// reaches the step limit. A poll that cannot park (several lanes, an address outside its buffer)
// switches to the next program instead, and after each full round of those one more program
// starts, so a program that waits for one not started yet is never starved.
//
// Observers (exec/events.h) are dispatched through per-launch tables (src/exec/dispatch.h). A launch
// stops early through one flag (Launch::stop: an observer asked, a program failed, the launch was
// cancelled): workers start no new program, each running program ends at its next step boundary by
// returning, and parked fibers are resumed until they have ended that way (drain). Cancellation
// (LaunchOptions::cancel) and the step limit are checked at loop back-edges and calls.
#include "tilescope/exec/engine.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "dispatch.h"
#include "plan.h"
#include "tilescope/ir/diag.h"

// ASan and TSan must be told about every switch between stacks, or they take a fiber's frames for
// the worker's (wrong stack bounds, lost shadow, false reports). In other builds this is compiled out.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TILESCOPE_ASAN_FIBERS 1
#endif
#if __has_feature(thread_sanitizer)
#define TILESCOPE_TSAN_FIBERS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(TILESCOPE_ASAN_FIBERS)
#define TILESCOPE_ASAN_FIBERS 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(TILESCOPE_TSAN_FIBERS)
#define TILESCOPE_TSAN_FIBERS 1
#endif
#ifdef TILESCOPE_ASAN_FIBERS
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef TILESCOPE_TSAN_FIBERS
#include <sanitizer/tsan_interface.h>
#endif

namespace tilescope::exec {

Arg Arg::f64(double v) {
  Arg a;
  std::memcpy(&a.bits, &v, sizeof v);
  return a;
}

Arg Arg::f32(float v) {
  Arg a;
  uint32_t b;
  std::memcpy(&b, &v, sizeof v);
  a.bits = b;
  return a;
}

// ---------------------------------------------------------------------------------------------
// Running regions

void Program::copy(int to, int from) {
  if (to != from) std::memcpy(slot[to], slot[from], static_cast<size_t>(plan->slots[to].bytes));
}

namespace {

/// The kOpBegin (`begin`) or kOpResult event of step `s` to the observers watching it.
void emit_op(Program& p, const Step& s, bool begin) {
  // Stack arrays for the common case: this runs once per watched op.
  constexpr size_t kMax = 16;
  const void* small_in[kMax];
  const void* small_out[kMax];
  std::vector<const void*> big_in, big_out;
  const void** in = small_in;
  const void** out = small_out;
  if (s.in.size() > kMax) {
    big_in.resize(s.in.size());
    in = big_in.data();
  }
  if (s.out.size() > kMax) {
    big_out.resize(s.out.size());
    out = big_out.data();
  }
  for (size_t i = 0; i < s.in.size(); ++i) in[i] = p.slot[s.in[i]];
  for (size_t i = 0; i < s.out.size(); ++i) out[i] = p.slot[s.out[i]];
  OpEvent e{s.op, p.pid, in, out, nullptr};
  const Dispatch& d = *p.dispatch;
  const auto& first = begin ? d.begin_first : d.result_first;
  const Dispatch::Watch* w = (begin ? d.begin_watch : d.result_watch).data();
  const Dispatch::Watch* end = w + first[s.id + 1];
  const auto& obs = d.observers;
  for (w += first[s.id]; w != end; ++w) {
    e.tag = w->tag;
    if (begin)
      obs[w->observer]->on_op_begin(e, p.state[w->observer]);
    else
      obs[w->observer]->on_op(e, p.state[w->observer]);
  }
}

void emit_transfer(Program& p, const std::vector<int>& dst, const std::vector<int>& src) {
  // Stack arrays for the common case: loops send one of these per iteration.
  constexpr size_t kMax = 16;
  const ir::Value* small_d[kMax];
  const ir::Value* small_s[kMax];
  std::vector<const ir::Value*> big_d, big_s;
  const ir::Value** d = small_d;
  const ir::Value** s = small_s;
  if (dst.size() > kMax) {
    big_d.resize(dst.size());
    d = big_d.data();
  }
  if (src.size() > kMax) {
    big_s.resize(src.size());
    s = big_s.data();
  }
  for (size_t i = 0; i < dst.size(); ++i) d[i] = p.plan->slot_value[dst[i]];
  for (size_t i = 0; i < src.size(); ++i) s[i] = p.plan->slot_value[src[i]];
  TransferEvent e{p.pid, d, s, static_cast<int>(std::min(dst.size(), src.size()))};
  const Dispatch& disp = *p.dispatch;
  for (size_t k = 0; k < disp.transfer.size(); ++k) {
    const std::vector<uint8_t>& mine = disp.slot_watch[k];
    bool wanted = false;
    for (int x : dst) wanted |= mine[x] != 0;
    int i = disp.transfer[k];
    if (wanted) disp.observers[i]->on_transfer(e, p.state[i]);
  }
}

/// What Program::run returns once the program is halted: no operands, nothing to copy.
const Terminator kHalted{};

}  // namespace

/// Copy `src[i]` into `dst[i]` for all i as one parallel assignment (a yield may permute values).
void parallel_copy(Program& p, const std::vector<int>& dst, const std::vector<int>& src) {
  if (p.observed & kOpResult) {
    bool any = false;
    for (int d : dst) any |= p.dispatch->slot_any[d] != 0;
    if (any) emit_transfer(p, dst, src);
  }
  bool overlap = false;
  for (size_t i = 0; i < dst.size() && !overlap; ++i)
    for (size_t j = 0; j < src.size(); ++j)
      if (i != j && dst[i] == src[j]) overlap = true;
  if (!overlap) {
    for (size_t i = 0; i < dst.size(); ++i) p.copy(dst[i], src[i]);
    return;
  }
  std::vector<std::vector<std::byte>> tmp(src.size());
  for (size_t i = 0; i < src.size(); ++i)
    tmp[i].assign(p.slot[src[i]], p.slot[src[i]] + p.plan->slots[src[i]].bytes);
  for (size_t i = 0; i < dst.size(); ++i) std::memcpy(p.slot[dst[i]], tmp[i].data(), tmp[i].size());
}

namespace {

/// Program::run for one case: with op events (`kHooked`: kOpBegin before a watched step, kOpResult
/// after it) or without. Two out-of-line copies keep the unobserved loop as small as it can be.
/// Step boundaries are where a stopping launch ends its programs (exec/events.h, "Stopping"): one
/// load and test per step.
template <bool kHooked>
[[gnu::noinline]] const Terminator& run_region(Program& p, const RegionPlan& r) {
  const std::atomic<bool>& stopping = *p.stop;
  const uint8_t* hooks = kHooked ? p.dispatch->step_hooks.data() : nullptr;
  size_t b = 0;
  for (;;) {
    const BlockPlan& bp = r.blocks[b];
    p.steps += static_cast<int64_t>(bp.steps.size()) + 1;  // the block's ops and its terminator
    for (const Step& s : bp.steps) {
      uint8_t h = 0;
      if constexpr (kHooked) {
        h = hooks[s.id];
        if (h & Dispatch::kBeginHook) emit_op(p, s, true);
      }
      s.fn(p, s);
      if (stopping.load(std::memory_order_relaxed)) {
        p.halted = true;
        return kHalted;
      }
      if constexpr (kHooked)
        if (h & Dispatch::kResultHook) emit_op(p, s, false);
    }
    const Terminator& t = bp.term;
    switch (t.kind) {
      case Terminator::Kind::br:
        if (p.at_back_edge(*t.op)) return kHalted;  // branches can loop: cancelled, or a located error
        parallel_copy(p, r.blocks[t.targets[0]].args, t.target_operands[0]);
        b = t.targets[0];
        continue;
      case Terminator::Kind::cond_br: {
        if (p.at_back_edge(*t.op)) return kHalted;
        int k = *p.at<uint8_t>(t.cond) ? 0 : 1;
        parallel_copy(p, r.blocks[t.targets[k]].args, t.target_operands[k]);
        b = t.targets[k];
        continue;
      }
      case Terminator::Kind::none:
      case Terminator::Kind::yield:
      case Terminator::Kind::ret:
      case Terminator::Kind::condition: return t;  // the region ends: the caller reads t
    }
    return t;
  }
}

}  // namespace

const Terminator& Program::run(const RegionPlan& r) {
  return observed & (kOpBegin | kOpResult) ? run_region<true>(*this, r) : run_region<false>(*this, r);
}

// ---------------------------------------------------------------------------------------------
// Fibers and their scheduling (the header comment, "Scheduling")

namespace {

constexpr size_t kStackBytes = size_t{1} << 20;  // lazily committed by the kernel (mmap)
// A poll that reads what the same op read last time, at the same address, is a spin.
constexpr int kSpinRepeats = 2;
// A program switches out after this many polls without parking, whatever they read: a safety net
// for waits the spin test cannot see (the reads change, but not because of the awaited program).
constexpr int kPollsPerTurn = 4096;
// Polls that a program resumed by "every worker is idle" may spin before it parks again (doubling);
// every parked program gets them up to kSharedSpinBudget, then one program at a time.
constexpr int64_t kFirstSpinBudget = 64;
constexpr int64_t kSharedSpinBudget = 1024;
constexpr int64_t kMaxSpinBudget = int64_t{1} << 40;
// An idle worker rechecks its parked programs at least this often (writes that raced with parking).
constexpr std::chrono::milliseconds kIdleRecheck{2};

}  // namespace

struct Worker;

/// A program run as a fiber: its stack, its frame, and its scheduling state.
struct Fiber {
  ucontext_t ctx{};
  void* stack = nullptr;
  std::vector<std::byte> frame_storage;
  Program prog;
  Worker* worker = nullptr;
  int64_t index = -1;  // linear program index
  bool done = false;
  std::exception_ptr error;
  void* asan_fake_stack = nullptr;  // ASan's fake frames of this fiber while it is switched out
  void* tsan_fiber = nullptr;       // TSan's state for this fiber (one per started program)

  // Spin test: the last poll of a few steps (by step id % 4), and how often it came out the same.
  struct Poll {
    int step = -1;
    uint64_t addr = 0, bits = 0;
    int repeats = 0;
  };
  std::array<Poll, 4> polls{};
  int polls_since_switch = 0;
  int64_t spin_budget = 0;  // spins left before parking again (after every worker was idle)
  int64_t next_spin_budget = kFirstSpinBudget;
  // Why the fiber switched out, for its worker: it asks to park on `wait_*`, or it yielded.
  bool park_request = false;
  bool forced = false;  // in Worker::ready after a forced switch (counts toward starting a program)
  // The address the fiber waits on: `wait_bytes` bytes that held `wait_bits` when it parked.
  uint64_t wait_addr = 0, wait_bits = 0;
  int wait_bytes = 0;
  // The address whose change woke this fiber (0: none). When the fiber ends or parks elsewhere, it
  // went on: the next waiter of that address is woken if the value it waits on changed too.
  uint64_t woken_from = 0;
  // While parked (under Waits::mu): in Waits::by_addr[wait_addr]'s list and Worker::parked.
  bool parked = false;
  Fiber* prev = nullptr;
  Fiber* next = nullptr;
  size_t parked_at = 0;  // index in Worker::parked
};

/// Programs parked until a write changes the address they poll, per launch. Everything but
/// `watched` is guarded by `mu`; a fiber is only resumed by its own worker.
struct Waits {
  struct List {
    Fiber* head = nullptr;
    Fiber* tail = nullptr;
  };
  std::mutex mu;
  std::condition_variable cv;  // idle workers wait here
  std::unordered_map<uint64_t, List> by_addr;
  std::array<int, 64> watchers{};  // parked fibers per bit of `watched` (buffer id % 64)
  std::atomic<uint64_t> watched{0};
  int workers = 0;        // workers still scheduling
  int idle = 0;           // of those, the ones waiting with only parked programs
  int64_t inboxed = 0;    // woken fibers in the workers' inboxes, not yet taken
  uint64_t all_idle = 0;  // bumped each time every worker was idle: all parked programs resume
};

struct Launch {
  const Plan* plan = nullptr;
  const FunctionPlan* kernel = nullptr;
  Memory* memory = nullptr;
  std::array<int64_t, 3> grid{1, 1, 1};
  int64_t programs = 0;
  int64_t max_steps = INT64_MAX;
  std::vector<std::pair<int, std::vector<std::byte>>> arg_values;  // slot -> bytes
  Dispatch dispatch;
  bool fibers = false;
  // `next` is bumped by every worker once per program: on a cache line of its own, away from what
  // programs read at every step.
  alignas(64) std::atomic<int64_t> next{0};
  // An observer asked to stop, a program failed, or the launch was cancelled; read at every step
  // boundary.
  alignas(64) std::atomic<bool> stop{false};
  std::atomic<bool> cancelled{false};  // cancel was seen: launch() throws Interrupted
  const std::atomic<bool>* cancel = nullptr;
  Waits waits;
  // Fibers made so far (each has a frame), against LaunchOptions::max_memory.
  int64_t max_memory = 0;
  int threads = 1;
  std::atomic<int64_t> frames{0};
};

struct Worker {
  Launch* launch = nullptr;
  ucontext_t home{};
  LaunchStats stats;
  std::deque<Fiber*> ready;  // switched out without parking, or woken
  std::vector<Fiber*> free_fibers;
  Fiber* current = nullptr;
  std::exception_ptr error;
  std::vector<std::byte> direct_frame;
  Program direct;
  bool exhausted = false;   // every program of the grid has been handed out
  size_t forced_round = 0;  // forced fibers resumed since the last start
  // Under Waits::mu: this worker's parked fibers, and fibers other workers woke for it.
  std::vector<Fiber*> parked;
  std::vector<Fiber*> inbox;
  std::atomic<bool> has_inbox{false};
  void* asan_fake_stack = nullptr;  // the worker thread's, while a fiber runs
  const void* home_stack_bottom = nullptr;
  size_t home_stack_size = 0;
  void* tsan_home = nullptr;  // TSan's state for the worker thread itself
  // The calling thread of a launch whose helpers come only when the work is worth them (run_helpers):
  // brings them in; the programs it has run alone, since `solo_start`.
  std::function<void()> call_helpers;
  int64_t solo_programs = 0;
  std::chrono::steady_clock::time_point solo_start;
};

namespace {

thread_local Worker* tl_worker = nullptr;

std::string bytes_text(int64_t n) {
  const char* unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && n >= (int64_t{1} << (10 * (u + 1)))) ++u;
  if (u == 0) return fmt::format("{} bytes", n);
  return fmt::format("{:.1f} {}", static_cast<double>(n) / static_cast<double>(int64_t{1} << (10 * u)),
                     unit[u]);
}

/// Throw when `frames` frames of `L` do not fit in its memory limit (LaunchOptions::max_memory).
void check_frames(const Launch& L, int64_t frames) {
  const int64_t frame = L.plan->frame_bytes + 64;
  if (frames <= L.max_memory / frame) return;
  const char* s = L.threads == 1 ? "" : "s";
  std::string why = frames <= L.threads ? fmt::format("{} worker thread{}", L.threads, s)
                                        : fmt::format(
                                              "{} programs in flight: {} thread{}, and programs parked "
                                              "while they wait on others through atomics",
                                              frames, L.threads, s);
  throw Error(fmt::format(
      "this launch needs at least {} for the values of its programs ({} per program frame x {}), more "
      "than the memory limit of {}; raise the limit with --max-memory SIZE (TILESCOPE_MAX_MEMORY for "
      "Python programs), or use fewer threads (--threads)",
      bytes_text(frame * frames), bytes_text(frame), why, bytes_text(L.max_memory)));
}

void init_program(Program& p, std::vector<std::byte>& storage, Launch& L, Worker& w) {
  const Plan& plan = *L.plan;
  storage.assign(static_cast<size_t>(plan.frame_bytes) + 64, std::byte{0});
  auto base = reinterpret_cast<uintptr_t>(storage.data());
  auto aligned = reinterpret_cast<std::byte*>((base + 63) & ~uintptr_t{63});
  p.slot.resize(plan.slots.size());
  p.frame = aligned;
  for (size_t i = 0; i < plan.slots.size(); ++i)  // a shared constant is only read (Planner::share_constant)
    p.slot[i] =
        plan.slot_shared[i] ? const_cast<std::byte*>(plan.slot_shared[i]) : aligned + plan.slot_offset[i];
  p.memory = L.memory;
  p.plan = &plan;
  p.launch = &L;
  p.observed = L.dispatch.observed;
  p.dispatch = L.dispatch.observers.empty() ? nullptr : &L.dispatch;
  p.state.assign(L.dispatch.observers.size(), nullptr);
  p.stop = &L.stop;
  p.max_steps = L.max_steps;
  p.cancel = L.cancel ? L.cancel : &kNeverStop;
  p.watched = L.fibers ? &L.waits.watched : &kNothingWatched;
  p.stats = &w.stats;
  for (int d = 0; d < 3; ++d) p.grid[d] = static_cast<int32_t>(L.grid[d]);
  for (auto& [s, bytes] : L.arg_values) std::memcpy(p.slot[s], bytes.data(), bytes.size());
}

void set_pid(Program& p, const Launch& L, int64_t i) {
  // x varies fastest, as CUDA enumerates blocks.
  p.pid[0] = static_cast<int32_t>(i % L.grid[0]);
  p.pid[1] = static_cast<int32_t>((i / L.grid[0]) % L.grid[1]);
  p.pid[2] = static_cast<int32_t>(i / (L.grid[0] * L.grid[1]));
}

void end_program(Program& p, const Dispatch& d) {
  for (int i : d.program) {
    d.observers[i]->on_program_end(p.pid, p.state[i]);
    p.state[i] = nullptr;
  }
}

void run_program(Program& p, const Launch& L) {
  const Dispatch& d = L.dispatch;
  p.halted = false;
  p.steps = 0;
  for (int i : d.program) p.state[i] = d.observers[i]->on_program_begin(p.pid);
  try {
    p.run(L.kernel->body);
  } catch (...) {
    end_program(p, d);  // every on_program_begin gets its on_program_end, also when the kernel fails
    throw;
  }
  end_program(p, d);
  p.stats->programs++;
}

void fiber_entry(unsigned lo, unsigned hi) {
  auto* f = reinterpret_cast<Fiber*>((static_cast<uintptr_t>(hi) << 32) | lo);
#ifdef TILESCOPE_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(nullptr, &f->worker->home_stack_bottom, &f->worker->home_stack_size);
#endif
  try {
    run_program(f->prog, *f->worker->launch);
  } catch (...) {
    f->error = std::current_exception();
  }
  f->done = true;
  // Back to the worker's home context for good; this fiber's stack is done with. An explicit switch,
  // not a return to uc_link: under TSan the return would run this function's exit hook on the
  // worker's shadow stack, after the switch below.
#ifdef TILESCOPE_ASAN_FIBERS
  __sanitizer_start_switch_fiber(nullptr, f->worker->home_stack_bottom, f->worker->home_stack_size);
#endif
#ifdef TILESCOPE_TSAN_FIBERS
  __tsan_switch_to_fiber(f->worker->tsan_home, 0);
#endif
  setcontext(&f->worker->home);
}

Fiber* new_fiber(Worker& w) {
  if (!w.free_fibers.empty()) {
    Fiber* f = w.free_fibers.back();
    w.free_fibers.pop_back();
    return f;
  }
  // A program that waits keeps its frame: count the fibers of every worker against the limit.
  check_frames(*w.launch, w.launch->frames.fetch_add(1, std::memory_order_relaxed) + 1);
  auto* f = new Fiber;
  f->worker = &w;
  f->stack =
      mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (f->stack == MAP_FAILED) {
    delete f;
    throw Error("cannot allocate a fiber stack");
  }
  init_program(f->prog, f->frame_storage, *w.launch, w);
  f->prog.fiber = f;
  return f;
}

void free_fiber(Fiber* f) {
#ifdef TILESCOPE_TSAN_FIBERS
  if (f->tsan_fiber) __tsan_destroy_fiber(f->tsan_fiber);
#endif
  munmap(f->stack, kStackBytes);
  delete f;
}

void start_fiber(Worker& w, Fiber* f, int64_t index) {
  f->index = index;
  f->done = false;
  f->error = nullptr;
  f->polls = {};
  f->polls_since_switch = 0;
  f->spin_budget = 0;
  f->next_spin_budget = kFirstSpinBudget;
  f->park_request = false;
  f->forced = false;
  f->woken_from = 0;
#ifdef TILESCOPE_TSAN_FIBERS
  f->tsan_fiber = __tsan_create_fiber(0);
#endif
  set_pid(f->prog, *w.launch, index);
  getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = f->stack;
  f->ctx.uc_stack.ss_size = kStackBytes;
  f->ctx.uc_link = &w.home;
  auto ptr = reinterpret_cast<uintptr_t>(f);
  makecontext(&f->ctx, reinterpret_cast<void (*)()>(fiber_entry), 2, static_cast<unsigned>(ptr & 0xffffffffu),
              static_cast<unsigned>(ptr >> 32));
}

/// The value at an in-bounds address `addr` (`bytes` of 1, 2, 4, 8), read atomically when aligned.
uint64_t read_bits(const Memory& m, uint64_t addr, int bytes) {
  std::byte* h = m.host(addr);
  auto load = [h](auto zero) -> uint64_t {
    using T = decltype(zero);
    if (reinterpret_cast<uintptr_t>(h) % std::atomic_ref<T>::required_alignment == 0)
      return std::atomic_ref<T>(*reinterpret_cast<T*>(h)).load(std::memory_order_acquire);
    T v;
    std::memcpy(&v, h, sizeof v);
    return v;
  };
  switch (bytes) {
    case 1: return load(uint8_t{});
    case 2: return load(uint16_t{});
    case 4: return load(uint32_t{});
    default: return load(uint64_t{});
  }
}

bool wait_changed(const Fiber& f) {
  return read_bits(*f.prog.memory, f.wait_addr, f.wait_bytes) != f.wait_bits;
}

int watch_bit(const Fiber& f) { return f.prog.memory->region(f.wait_addr) & 63; }

/// Park `f` on its wait address (under W.mu).
void link(Waits& W, Fiber* f) {
  Waits::List& l = W.by_addr[f->wait_addr];
  f->prev = l.tail;
  f->next = nullptr;
  (l.tail ? l.tail->next : l.head) = f;
  l.tail = f;
  int bit = watch_bit(*f);
  if (W.watchers[bit]++ == 0) W.watched.fetch_or(uint64_t{1} << bit, std::memory_order_seq_cst);
  f->parked = true;
  f->parked_at = f->worker->parked.size();
  f->worker->parked.push_back(f);
}

/// Take `f` off its wait address (under W.mu).
void unlink(Waits& W, Fiber* f) {
  assert(f->parked);
  auto it = W.by_addr.find(f->wait_addr);
  assert(it != W.by_addr.end());
  Waits::List& l = it->second;
  (f->prev ? f->prev->next : l.head) = f->next;
  (f->next ? f->next->prev : l.tail) = f->prev;
  if (!l.head) W.by_addr.erase(it);
  int bit = watch_bit(*f);
  if (--W.watchers[bit] == 0) W.watched.fetch_and(~(uint64_t{1} << bit), std::memory_order_relaxed);
  std::vector<Fiber*>& v = f->worker->parked;
  v[f->parked_at] = v.back();
  v[f->parked_at]->parked_at = f->parked_at;
  v.pop_back();
  f->parked = false;
  f->prev = f->next = nullptr;
}

/// Switch from the running fiber `f` to its worker's home context; returns when it is resumed.
void switch_home(Fiber& f) {
  Worker* w = f.worker;
  f.polls_since_switch = 0;
#ifdef TILESCOPE_ASAN_FIBERS
  __sanitizer_start_switch_fiber(&f.asan_fake_stack, w->home_stack_bottom, w->home_stack_size);
#endif
#ifdef TILESCOPE_TSAN_FIBERS
  __tsan_switch_to_fiber(w->tsan_home, 0);
#endif
  swapcontext(&f.ctx, &w->home);
#ifdef TILESCOPE_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(f.asan_fake_stack, nullptr, nullptr);
#endif
}

/// Wake the parked fiber `f`: off its address, into its worker's inbox (under W.mu).
void wake(Waits& W, Fiber* f) {
  unlink(W, f);
  f->woken_from = f->wait_addr;
  Worker& o = *f->worker;
  o.inbox.push_back(f);
  ++W.inboxed;
  o.has_inbox.store(true, std::memory_order_relaxed);
}

/// The first waiter of `addr`, when the value it waits on changed (under W.mu). True if one woke.
bool wake_next(Waits& W, uint64_t addr) {
  auto it = W.by_addr.find(addr);
  if (it == W.by_addr.end() || !wait_changed(*it->second.head)) return false;
  wake(W, it->second.head);
  return true;
}

/// Wake the first waiter of every address whose value changed (under W.mu): writes that raced with
/// a parking, or that other waiters of the address saw. True if one woke.
bool wake_changed(Waits& W) {
  std::vector<uint64_t> changed;
  for (auto& [addr, l] : W.by_addr)
    if (wait_changed(*l.head)) changed.push_back(addr);
  for (uint64_t a : changed) wake(W, W.by_addr[a].head);
  return !changed.empty();
}

/// Run `f` until it ends or switches out; then free it, park it, or queue it.
void resume(Worker& w, Fiber* f) {
  assert(!w.current && f->worker == &w);  // fibers never nest and never change worker
  w.current = f;
  f->park_request = false;
#ifdef TILESCOPE_ASAN_FIBERS
  __sanitizer_start_switch_fiber(&w.asan_fake_stack, f->stack, kStackBytes);
#endif
#ifdef TILESCOPE_TSAN_FIBERS
  __tsan_switch_to_fiber(f->tsan_fiber, 0);
#endif
  swapcontext(&w.home, &f->ctx);
#ifdef TILESCOPE_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(w.asan_fake_stack, nullptr, nullptr);
#endif
  w.current = nullptr;
  Launch& L = *w.launch;
  Waits& W = L.waits;
  if (f->done) {
#ifdef TILESCOPE_TSAN_FIBERS
    __tsan_destroy_fiber(f->tsan_fiber);
    f->tsan_fiber = nullptr;
#endif
    if (f->error && !w.error) w.error = f->error;
    if (f->woken_from) {  // it went on after its wake: so may the next waiter
      std::lock_guard<std::mutex> g(W.mu);
      if (!L.stop.load(std::memory_order_relaxed)) wake_next(W, f->woken_from);
      f->woken_from = 0;
    }
    w.free_fibers.push_back(f);
    return;
  }
  ++w.stats.switches;
  if (f->park_request) {
    std::lock_guard<std::mutex> g(W.mu);
    // Parked only while the value is still the one it read: a write since then (before this
    // fiber was on its address's list) found nobody to wake.
    if (!L.stop.load(std::memory_order_relaxed) && !wait_changed(*f)) {
      link(W, f);
      // Waiting again where it was woken: the change was not for it, nor for the next waiter.
      // Waiting elsewhere: it went on, and so may the next waiter of the old address.
      if (f->woken_from && f->woken_from != f->wait_addr) wake_next(W, f->woken_from);
      f->woken_from = 0;
      return;
    }
  }
  f->forced = !f->park_request;
  w.ready.push_back(f);
}

void take_inbox(Worker& w) {
  Waits& W = w.launch->waits;
  std::lock_guard<std::mutex> g(W.mu);
  for (Fiber* f : w.inbox) w.ready.push_back(f);
  W.inboxed -= static_cast<int64_t>(w.inbox.size());
  w.inbox.clear();
  w.has_inbox.store(false, std::memory_order_relaxed);
}

/// The worker has nothing to run and nothing to start. False when it has no parked program either
/// (it is done); else returns once some program of it may go on (in `ready` or the inbox), or after
/// a while, to be called again.
bool wait_for_work(Worker& w) {
  Launch& L = *w.launch;
  Waits& W = L.waits;
  std::unique_lock<std::mutex> lk(W.mu);
  if (!w.inbox.empty()) return true;
  if (w.parked.empty()) return false;
  if (wake_changed(W)) {
    W.cv.notify_all();
    return true;
  }
  const uint64_t round = W.all_idle;
  if (++W.idle == W.workers && W.inboxed == 0) {
    ++W.all_idle;
    W.cv.notify_all();
  } else {
    W.cv.wait_for(lk, kIdleRecheck, [&] {
      return !w.inbox.empty() || W.all_idle != round || L.stop.load(std::memory_order_relaxed) ||
             (L.cancel && L.cancel->load(std::memory_order_relaxed));
    });
  }
  --W.idle;
  if (W.all_idle != round) {
    // Every worker waits on memory that no running program changes: the waits may be bounded (a
    // poll with a retry count) or a hang. Parked programs resume and spin for a budget that doubles
    // each time before they park again: all of them while their budgets are small, then only the
    // one with the largest budget, so that a hang reaches the step limit after one program's worth
    // of spinning rather than every program's (a 70,000-program barrier that never opens).
    auto spin = [&](Fiber* f) {
      unlink(W, f);
      f->spin_budget = f->next_spin_budget;
      f->next_spin_budget = std::min(f->next_spin_budget * 2, kMaxSpinBudget);
      w.ready.push_back(f);
    };
    Fiber* largest = nullptr;
    for (size_t i = 0; i < w.parked.size();) {
      Fiber* f = w.parked[i];
      if (f->next_spin_budget <= kSharedSpinBudget) {
        spin(f);  // moves the last parked fiber to index i
        continue;
      }
      if (!largest || f->next_spin_budget > largest->next_spin_budget) largest = f;
      ++i;
    }
    if (w.ready.empty() && largest) spin(largest);
  }
  return true;
}

/// This worker stops scheduling: if every worker left is idle, they resume their parked programs.
void leave_scheduling(Worker& w) {
  Waits& W = w.launch->waits;
  std::lock_guard<std::mutex> g(W.mu);
  if (--W.workers > 0 && W.idle == W.workers && W.inboxed == 0) {
    ++W.all_idle;
    W.cv.notify_all();
  }
}

/// A stopping launch resumes its parked programs until each has returned: they end at their next
/// step boundary (Program::run), unwinding their frames normally, so no stack is dropped with live
/// objects on it and every on_program_begin gets its on_program_end.
void drain(Worker& w) {
  Launch& L = *w.launch;
  {
    std::lock_guard<std::mutex> g(L.waits.mu);
    assert((w.ready.empty() && w.parked.empty() && w.inbox.empty()) || L.stop.load());
    while (!w.parked.empty()) {
      Fiber* f = w.parked.back();
      unlink(L.waits, f);
      w.ready.push_back(f);
    }
    for (Fiber* f : w.inbox) w.ready.push_back(f);
    L.waits.inboxed -= static_cast<int64_t>(w.inbox.size());
    w.inbox.clear();
  }
  while (!w.ready.empty()) {
    Fiber* f = w.ready.front();
    w.ready.pop_front();
    resume(w, f);
  }
}

void check_cancel(Launch& L) {
  if (L.cancel && L.cancel->load(std::memory_order_relaxed)) {
    L.cancelled = true;
    L.stop = true;
  }
}

/// A launch's calling thread, running its programs alone: bring the helpers in once the programs left
/// would take kHelpersWorth at the pace so far (waking a helper and waiting for it at the end costs
/// tens of microseconds, more than a launch of a few small programs takes).
constexpr std::chrono::microseconds kHelpersWorth{100};

void maybe_call_helpers(Worker& w) {
  Launch& L = *w.launch;
  const int64_t left = L.programs - L.next.load(std::memory_order_relaxed);
  if (left <= 0) return;
  ++w.solo_programs;
  const auto spent = std::chrono::steady_clock::now() - w.solo_start;
  if (spent * left / w.solo_programs < kHelpersWorth) return;
  auto call = std::move(w.call_helpers);
  w.call_helpers = nullptr;
  call();
}

void run_direct(Worker& w) {
  Launch& L = *w.launch;
  init_program(w.direct, w.direct_frame, L, w);
  w.solo_start = std::chrono::steady_clock::now();
  for (;;) {
    check_cancel(L);
    if (L.stop.load(std::memory_order_relaxed)) break;
    int64_t i = L.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= L.programs) break;
    set_pid(w.direct, L, i);
    run_program(w.direct, L);
    if (w.call_helpers) maybe_call_helpers(w);
  }
}

void run_fibers(Worker& w) {
  Launch& L = *w.launch;
  for (;;) {
    if (w.error) L.stop = true;
    check_cancel(L);
    if (L.stop.load(std::memory_order_relaxed)) break;
    if (w.has_inbox.load(std::memory_order_relaxed)) take_inbox(w);
    // Start a program when none is ready, and after each full round of programs switched out by
    // force (they may wait for one not started yet).
    if (!w.exhausted && (w.ready.empty() || w.forced_round >= w.ready.size())) {
      int64_t i = L.next.fetch_add(1, std::memory_order_relaxed);
      if (i < L.programs) {
        w.forced_round = 0;
        Fiber* f = new_fiber(w);
        start_fiber(w, f, i);
        resume(w, f);
        continue;
      }
      w.exhausted = true;
    }
    if (!w.ready.empty()) {
      Fiber* f = w.ready.front();
      w.ready.pop_front();
      if (f->forced) ++w.forced_round;
      resume(w, f);
      continue;
    }
    if (!wait_for_work(w)) break;
  }
}

void worker_main(Worker& w) {
  tl_worker = &w;
#ifdef TILESCOPE_TSAN_FIBERS
  w.tsan_home = __tsan_get_current_fiber();
#endif
  Launch& L = *w.launch;
  try {
    if (L.fibers)
      run_fibers(w);
    else
      run_direct(w);
  } catch (...) {
    if (!w.error) w.error = std::current_exception();
  }
  if (w.error) L.stop = true;
  if (L.fibers) {
    leave_scheduling(w);
    drain(w);
  }
  for (Fiber* f : w.free_fibers) free_fiber(f);
  w.free_fibers.clear();
  tl_worker = nullptr;
}

/// Programs that never wait for each other (no fibers), on the calling thread and threads.size() - 1
/// helpers. The helpers take programs as they come (Launch::next), so the launch does not need a
/// helper that has not started when the work is done: next to a busy thread pool (torch's OpenMP
/// workers spin for milliseconds after each op) a helper can wait that long for a core, and the
/// calling thread has meanwhile run every program. A helper joins only if the launch is still open
/// (Gate), and the launch waits only for the helpers that joined; one that comes later touches nothing
/// of the launch (its Worker and Launch are gone). The helpers are threads of a process-wide pool
/// (HelperPool): starting a thread costs tens of microseconds, more than a launch of a few small
/// programs. When the thread count was asked for and the system will not start a thread the pool
/// needs (RLIMIT_NPROC, memory), the launch runs nothing and HelperNotStarted says which helper failed.
struct HelperNotStarted {
  size_t index;  // in `workers` (0 is the calling thread)
  std::string why;
};

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool closed = false;
  int running = 0;
};

/// Threads kept for the process, each waiting for a task (a Worker of an open launch). Started on
/// demand, up to the most helpers one launch has asked for; never stopped (they wait on a condition
/// variable until the process exits). A child of fork() has none of its parent's threads: it gets a
/// new, empty pool (the parent's, whose lock a thread may have held at the fork, is left alone).
class HelperPool {
 public:
  struct Task {
    std::shared_ptr<Gate> gate;
    Worker* worker;
  };

  static HelperPool& get() {
    static const bool registered = [] {
      pthread_atfork(nullptr, nullptr, [] { current() = new HelperPool(); });
      return true;
    }();
    (void)registered;
    return *current();
  }

  /// Have at least `n` threads; throws HelperNotStarted (index k + 1 for the k-th thread) when the
  /// system will not start one.
  void reserve(size_t n) {
    std::lock_guard<std::mutex> g(mu_);
    while (threads_ < n) {
      try {
        std::thread([this] { serve(); }).detach();
      } catch (const std::system_error& e) {
        throw HelperNotStarted{threads_ + 1, e.what()};
      }
      ++threads_;
    }
  }

  void post(std::vector<Task> tasks) {
    {
      std::lock_guard<std::mutex> g(mu_);
      for (Task& t : tasks) queue_.push_back(std::move(t));
    }
    if (tasks.size() == 1)
      cv_.notify_one();
    else
      cv_.notify_all();
  }

 private:
  static HelperPool*& current() {
    static HelperPool* pool = new HelperPool();  // never destroyed: its threads outlive static destructors
    return pool;
  }

  void serve() {
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return !queue_.empty(); });
        t = std::move(queue_.front());
        queue_.pop_front();
      }
      {
        std::lock_guard<std::mutex> g(t.gate->mu);
        if (t.gate->closed) continue;  // the launch ended without this helper
        ++t.gate->running;
      }
      worker_main(*t.worker);
      std::lock_guard<std::mutex> g(t.gate->mu);
      if (--t.gate->running == 0) t.gate->cv.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  size_t threads_ = 0;
};

/// `at_once`: the helpers are asked for before the first program (the thread count was asked for);
/// otherwise only when the calling thread finds the work worth them (maybe_call_helpers), and a
/// helper the system will not start then leaves the work to the threads there are.
void run_helpers(std::vector<Worker>& workers, bool at_once) {
  HelperPool& pool = HelperPool::get();
  auto gate = std::make_shared<Gate>();
  auto call = [&pool, &workers, gate] {
    pool.reserve(workers.size() - 1);
    std::vector<HelperPool::Task> tasks;
    for (size_t i = 1; i < workers.size(); ++i) tasks.push_back({gate, &workers[i]});
    pool.post(std::move(tasks));
  };
  if (at_once)
    call();
  else
    workers[0].call_helpers = [call] {
      try {
        call();
      } catch (const HelperNotStarted&) {  // the threads that did start are in the pool: go on without
      }
    };
  worker_main(workers[0]);
  std::unique_lock<std::mutex> g(gate->mu);
  gate->closed = true;
  gate->cv.wait(g, [&] { return gate->running == 0; });
}

}  // namespace

void Program::on_poll(const Step& s, int64_t n, const uint64_t* addrs, const uint8_t* mask,
                      const void* values, int elem_bytes) {
  Fiber& f = *fiber;
  assert(tl_worker && tl_worker->current == &f);  // polls come from the running fiber
  // What the op read: the address and value of its one active lane, or a hash of (a prefix of)
  // its lanes, which can show a spin but gives nothing to park on.
  constexpr int64_t kHashedLanes = 16;
  int64_t active = 0, lane = -1;
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* v = static_cast<const std::byte*>(values);
  for (int64_t i = 0; i < n && i < kHashedLanes; ++i) {
    uint64_t bits = 0;
    if (mask && !mask[i]) continue;
    if (active++ == 0) lane = i;
    std::memcpy(&bits, v + i * elem_bytes, static_cast<size_t>(elem_bytes));
    h = (h ^ addrs[i]) * 0x100000001b3ull;
    h = (h ^ bits) * 0x100000001b3ull;
  }
  const bool one = active == 1 && n <= kHashedLanes;
  uint64_t addr = 0, bits = h;
  if (one) {
    addr = addrs[lane];
    bits = 0;
    std::memcpy(&bits, v + lane * elem_bytes, static_cast<size_t>(elem_bytes));
  }
  Fiber::Poll& e = f.polls[static_cast<size_t>(s.id) & 3];
  if (e.step == s.id && e.addr == addr && e.bits == bits)
    ++e.repeats;
  else
    e = Fiber::Poll{s.id, addr, bits, 1};
  if (launch->stop.load(std::memory_order_relaxed)) return;  // ending: on to the next step boundary
  ++f.polls_since_switch;
  if (e.repeats >= kSpinRepeats) {
    if (f.spin_budget > 0) {
      --f.spin_budget;
    } else if (one && memory->where(addr, elem_bytes).in_bounds) {
      f.wait_addr = addr;
      f.wait_bits = bits;
      f.wait_bytes = elem_bytes;
      f.park_request = true;
      switch_home(f);
      return;
    } else {
      switch_home(f);  // a spin with nothing to park on: the next program's turn
      return;
    }
  }
  if (f.polls_since_switch >= kPollsPerTurn) switch_home(f);
}

void wake_waiters(Program& p, const uint64_t* addrs, int64_t n) {
  if (!p.launch || !p.fiber) return;
  Waits& W = p.launch->waits;
  bool woke = false;
  std::lock_guard<std::mutex> g(W.mu);
  for (int64_t i = 0; i < n; ++i) {
    auto it = W.by_addr.find(addrs[i]);
    if (it == W.by_addr.end()) continue;
    // The first waiter only: it polls again, and if it goes on (ends, or waits elsewhere), the next
    // one is woken in turn (resume); if it waits here again, the change was not for the others
    // either (a lock taken by another). A barrier opening wakes its waiters one after another.
    wake(W, it->second.head);
    woke = true;
  }
  if (woke) W.cv.notify_all();
}

bool Program::out_of_budget(const ir::Op& op) {
  if (cancel->load(std::memory_order_relaxed)) {
    if (launch) {
      launch->cancelled = true;
      launch->stop = true;
    }
    halted = true;
    return true;
  }
  fail_at(*plan->module, op,
          fmt::format("program ({}, {}, {}) executed {} operations without finishing: the limit is {} per "
                      "program (tilescope run --max-steps, TILESCOPE_MAX_STEPS)",
                      pid[0], pid[1], pid[2], steps, max_steps));
}

// ---------------------------------------------------------------------------------------------
// Engine

struct Engine::Impl {
  const ir::Module& module;
  Plan plan;
  Planner planner;
  std::mutex mu;
  std::map<const ir::Function*, bool> may_wait;
  explicit Impl(const ir::Module& m) : module(m), planner(m, plan) { plan.module = &m; }
};

Engine::Engine(const ir::Module& module) : impl_(std::make_unique<Impl>(module)) {}
Engine::~Engine() = default;

static bool region_may_wait(const RegionPlan& r);
static bool step_may_wait(const Step& s) {
  if (ir::may_wait(*s.op)) return true;
  for (auto& r : s.regions)
    if (region_may_wait(r)) return true;
  if (s.callee && region_may_wait(s.callee->body)) return true;
  return false;
}
static bool region_may_wait(const RegionPlan& r) {
  for (auto& b : r.blocks)
    for (auto& s : b.steps)
      if (step_may_wait(s)) return true;
  return false;
}

namespace {

/// The steps a launch of `kernel` can run (its body, its callees', their regions), by Step::id.
void reachable_steps(const RegionPlan& r, std::vector<const Step*>& by_id,
                     std::vector<const FunctionPlan*>& seen) {
  for (const auto& b : r.blocks)
    for (const Step& st : b.steps) {
      by_id[st.id] = &st;
      for (const auto& sub : st.regions) reachable_steps(sub, by_id, seen);
      if (st.callee && std::find(seen.begin(), seen.end(), st.callee) == seen.end()) {
        seen.push_back(st.callee);
        reachable_steps(st.callee->body, by_id, seen);
      }
    }
}

/// Turn the observers' subscriptions into `d`: per-kind lists, per-step watchers (each op asked once
/// per observer), per-slot transfer watches (each value asked once per observer).
void build_dispatch(Dispatch& d, const Plan& plan, const FunctionPlan& kernel,
                    const std::vector<Observer*>& observers, const std::vector<Subscription>& subs) {
  for (size_t i = 0; i < observers.size(); ++i) d.add(observers[i], subs[i]);
  if (d.observed & (kOpBegin | kOpResult)) {
    std::vector<const Step*> by_id(static_cast<size_t>(plan.num_steps), nullptr);
    std::vector<const FunctionPlan*> seen{&kernel};
    reachable_steps(kernel.body, by_id, seen);
    const size_t n = by_id.size();
    d.begin_first.assign(n + 1, 0);
    d.result_first.assign(n + 1, 0);
    for (size_t id = 0; id < n; ++id) {
      d.begin_first[id] = static_cast<uint32_t>(d.begin_watch.size());
      d.result_first[id] = static_cast<uint32_t>(d.result_watch.size());
      if (!by_id[id]) continue;
      const ir::Op& op = *by_id[id]->op;
      for (size_t i = 0; i < observers.size(); ++i) {
        unsigned k = subs[i].kinds & (kOpBegin | kOpResult);
        if (!k) continue;
        const void* tag = subs[i].ops ? subs[i].ops(op) : &op;
        if (!tag) continue;
        if (k & kOpBegin) d.begin_watch.push_back({static_cast<int>(i), tag});
        if (k & kOpResult) d.result_watch.push_back({static_cast<int>(i), tag});
      }
    }
    d.begin_first[n] = static_cast<uint32_t>(d.begin_watch.size());
    d.result_first[n] = static_cast<uint32_t>(d.result_watch.size());
    d.step_hooks.assign(n, 0);
    for (size_t id = 0; id < n; ++id)
      d.step_hooks[id] = (d.begin_first[id] != d.begin_first[id + 1] ? Dispatch::kBeginHook : 0) |
                         (d.result_first[id] != d.result_first[id + 1] ? Dispatch::kResultHook : 0);
  }
  if (d.observed & kOpResult) {
    d.slot_any.assign(plan.slots.size(), 0);
    for (int i : d.transfer) {
      std::vector<uint8_t> mine(plan.slots.size(), 0);
      for (size_t k = 0; k < plan.slots.size(); ++k) {
        mine[k] = !subs[i].values || subs[i].values(*plan.slot_value[k]);
        d.slot_any[k] |= mine[k];
      }
      d.slot_watch.push_back(std::move(mine));
    }
  }
}

}  // namespace

void check_threads(int64_t threads, std::string_view what) {
  if (threads < 0 || threads > kMaxThreads)
    throw Error(fmt::format("{} {}: the number of worker threads must be 0 (all cores) to {}", what, threads,
                            kMaxThreads));
}

int parse_threads(std::string_view text, std::string_view what) {
  int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (text.empty() || ptr != end || ec == std::errc::invalid_argument)
    throw Error(
        fmt::format("{} '{}': not a whole number (0 for all cores, up to {})", what, text, kMaxThreads));
  if (ec == std::errc::result_out_of_range) n = text[0] == '-' ? -1 : int64_t{kMaxThreads} + 1;
  if (n < 0 || n > kMaxThreads)  // the text as written, not the value it overflowed to
    throw Error(fmt::format("{} {}: the number of worker threads must be 0 (all cores) to {}", what, text,
                            kMaxThreads));
  return static_cast<int>(n);
}

int64_t default_max_memory() {
  // Read once per process (a file read and two system calls: a launch of a few programs must not pay
  // them each time).
  static const int64_t half = [] {
    int64_t total =
        static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGE_SIZE));
    // In a container the cgroup's limit is what the kernel enforces ("max": none).
    std::ifstream cg("/sys/fs/cgroup/memory.max");
    int64_t limit = 0;
    if (cg >> limit && limit > 0 && (total <= 0 || limit < total)) total = limit;
    return total > 0 ? total / 2 : int64_t{4} << 30;
  }();
  return half;
}

void check_grid(const std::array<int64_t, 3>& grid) {
  // CUDA's launch limits on sm_90 (cudaDeviceProp::maxGridSize): x < 2^31, y and z <= 65535. Their
  // product stays below 2^63, so the program count never overflows.
  static constexpr int64_t kMax[3] = {INT32_MAX, 65535, 65535};
  for (int d = 0; d < 3; ++d)
    if (grid[d] < 0 || grid[d] > kMax[d])
      throw Error(fmt::format("grid dimension {} is {}: CUDA allows 0 to {}", "xyz"[d], grid[d], kMax[d]));
}

LaunchStats Engine::launch(const std::string& kernel, const std::vector<Arg>& args, Memory& memory,
                           const LaunchOptions& opts) {
  const ir::Function* fn = impl_->module.find(kernel);
  if (!fn) throw Error(fmt::format("{}: no function named '{}'", impl_->module.filename, kernel));
  if (!fn->is_public)
    throw Error(fmt::format("{}: '{}' is a private helper, not a kernel", impl_->module.filename, kernel));
  Launch L;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    L.kernel = &impl_->planner.lower(*fn);
    auto it = impl_->may_wait.find(fn);
    if (it == impl_->may_wait.end()) it = impl_->may_wait.emplace(fn, region_may_wait(L.kernel->body)).first;
    L.fibers = it->second;
  }
  L.plan = &impl_->plan;
  L.memory = &memory;
  check_grid(opts.grid);
  check_threads(opts.threads, "threads");
  if (opts.max_steps < 0)
    throw Error(fmt::format("max_steps {}: the step limit must be positive (0: no limit)", opts.max_steps));
  L.max_steps = opts.max_steps == 0 ? INT64_MAX : opts.max_steps;
  L.grid = opts.grid;
  L.programs = L.grid[0] * L.grid[1] * L.grid[2];

  // Bind arguments to the entry block's argument slots.
  const auto& fargs = fn->args();
  if (args.size() != fargs.size())
    throw Error(fmt::format("kernel '{}' takes {} arguments, {} given", kernel, fargs.size(), args.size()));
  const auto& entry = L.kernel->body.blocks.at(0);
  for (size_t i = 0; i < fargs.size(); ++i) {
    const ir::Type& t = *fargs[i]->type;
    const Arg& a = args[i];
    int s = entry.args[i];
    std::vector<std::byte> bytes(static_cast<size_t>(L.plan->slots[s].bytes));
    const std::string& name = fargs[i]->name;
    if (t.elem == ir::Elem::ptr && !t.is_tensor) {
      if (a.kind == Arg::Kind::buffer) {
        if (a.buffer < 0 || a.buffer >= static_cast<int>(memory.buffers().size()))
          throw Error(fmt::format("argument '{}': no buffer {}", name, a.buffer));
        uint64_t v = memory.vaddr(a.buffer);
        std::memcpy(bytes.data(), &v, 8);
      } else {
        std::memcpy(bytes.data(), &a.bits, 8);  // a raw address (0 = null)
      }
    } else if (t.elem == ir::Elem::tensordesc) {
      // A host tensor descriptor: the base buffer here; shape (i32) and strides (i64) follow as
      // separate arguments (reference §1.8).
      if (a.kind != Arg::Kind::buffer)
        throw Error(fmt::format("argument '{}': a tensor descriptor needs a buffer", name));
      const ir::Type* block = t.pointee;
      int rank = block ? block->rank() : 0;
      if (rank < 1 || rank > TensorDesc::kMaxRank || i + 2 * static_cast<size_t>(rank) >= args.size())
        throw Error(
            fmt::format("argument '{}': descriptor of rank {} needs {} shape/stride arguments after it", name,
                        rank, 2 * rank));
      TensorDesc d;
      d.base = memory.vaddr(a.buffer);
      d.rank = rank;
      d.padding = a.bits == 2 ? 2 : 1;
      for (int k = 0; k < rank; ++k) {
        d.shape[k] = static_cast<int32_t>(args.at(i + 1 + k).bits);
        d.strides[k] = static_cast<int64_t>(args.at(i + 1 + rank + k).bits);
      }
      std::memcpy(bytes.data(), &d, sizeof d);
    } else if (!t.is_tensor && t.elem != ir::Elem::none) {
      if (a.kind != Arg::Kind::scalar)
        throw Error(fmt::format("argument '{}' of type {} needs a scalar", name, t.str()));
      std::memcpy(bytes.data(), &a.bits, bytes.size());
    } else {
      throw Error(fmt::format("argument '{}' has type {}, which a launch cannot pass", name, t.str()));
    }
    L.arg_values.emplace_back(s, std::move(bytes));
  }

  if (L.programs == 0) return LaunchStats{};  // an empty grid launches nothing, as on the GPU

  L.cancel = opts.cancel;
  static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));  // read once
  int threads = opts.threads > 0 ? opts.threads : cores;
  // By default a small grid of fibers runs on the calling thread: starting workers costs more than it
  // saves, and next to a busy thread pool (torch's OpenMP workers spin after each op) they wait for a
  // core. Programs that never wait start on the calling thread anyway and bring helpers in only when
  // the work is worth them (run_helpers).
  constexpr int64_t kProgramsPerThread = 8;
  if (opts.threads <= 0 && L.fibers)
    threads =
        static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(1, L.programs / kProgramsPerThread)));
  if (threads > L.programs) threads = static_cast<int>(L.programs);
  // Every worker takes a frame: by default no more workers than there are frames that fit the memory
  // limit; fail now, before allocating any, when the frames of the threads asked for do not fit.
  L.max_memory = opts.max_memory > 0 ? opts.max_memory : default_max_memory();
  if (opts.threads <= 0)
    threads = static_cast<int>(
        std::max<int64_t>(1, std::min<int64_t>(threads, L.max_memory / (L.plan->frame_bytes + 64))));
  L.threads = threads;
  check_frames(L, threads);

  LaunchContext ctx(L.stop);
  ctx.module = &impl_->module;
  ctx.kernel = fn;
  ctx.grid = L.grid;
  ctx.programs = L.programs;
  ctx.memory = &memory;
  ctx.threads = threads;
  for (size_t i = 0; i < fargs.size(); ++i) {
    BoundArg b;
    b.param = fargs[i].get();
    bool address = fargs[i]->type->elem == ir::Elem::ptr || fargs[i]->type->elem == ir::Elem::tensordesc;
    if (address && args[i].kind == Arg::Kind::buffer) {
      b.buffer = &memory.buffer(args[i].buffer);
      b.bits = memory.vaddr(args[i].buffer);
    } else {
      b.bits = args[i].bits;
    }
    ctx.args.push_back(b);
  }

  // Subscriptions, then the dispatch tables. Observers that began get on_launch_end whatever
  // happens next.
  size_t begun = 0;
  auto end_launch = [&](const LaunchStats& st) {
    for (size_t i = 0; i < begun; ++i) opts.observers[i]->on_launch_end(ctx, st);
  };
  try {
    std::vector<Subscription> subs;
    for (Observer* o : opts.observers) {
      subs.push_back(o->on_launch_begin(ctx));
      ++begun;
    }
    build_dispatch(L.dispatch, *L.plan, *L.kernel, opts.observers, subs);
  } catch (...) {
    end_launch(LaunchStats{});
    throw;
  }

  std::vector<Worker> workers(static_cast<size_t>(threads));
  for (auto& w : workers) w.launch = &L;
  L.waits.workers = threads;
  if (threads == 1) {
    worker_main(workers[0]);
  } else if (!L.fibers) {
    try {
      run_helpers(workers, opts.threads > 0);
    } catch (const HelperNotStarted& e) {
      end_launch(LaunchStats{});
      throw Error(fmt::format("cannot start worker thread {} of {}: {} (ask for fewer threads)", e.index + 1,
                              threads, e.why));
    }
  } else {
    std::vector<std::thread> pool;
    try {
      for (int t = 1; t < threads; ++t) pool.emplace_back(worker_main, std::ref(workers[t]));
    } catch (const std::system_error& e) {
      // The system would not start another thread (RLIMIT_NPROC, memory): stop the workers that
      // did start, let them end their programs, and say so.
      L.stop = true;
      L.waits.cv.notify_all();
      for (auto& th : pool) th.join();
      end_launch(LaunchStats{});
      throw Error(fmt::format("cannot start worker thread {} of {}: {} (ask for fewer threads)",
                              pool.size() + 2, threads, e.what()));
    }
    worker_main(workers[0]);
    for (auto& th : pool) th.join();
  }
  LaunchStats total;
  std::exception_ptr error;
  for (auto& w : workers) {
    if (w.error && !error) error = w.error;
    total.programs += w.stats.programs;
    total.out_of_bounds += w.stats.out_of_bounds;
    total.failed_asserts += w.stats.failed_asserts;
    total.switches += w.stats.switches;
  }
  total.stopped = ctx.stop_requested();
  end_launch(total);
  if (error) std::rethrow_exception(error);
  if (L.cancelled) throw Interrupted("launch interrupted");
  return total;
}

}  // namespace tilescope::exec
