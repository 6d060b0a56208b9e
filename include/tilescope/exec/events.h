// tilescope/exec: the observer seam, what the engine tells analyses while it runs a launch.
//
// An analysis (sanitizer, race detector, profiler, trace recorder, ...) is an Observer. Per launch
// (Engine::launch) the engine calls, in this order:
//
//   on_launch_begin(ctx)        once, on the launching thread, before any program runs. The observer
//                               answers with a Subscription: the event kinds it wants and which ops
//                               and values it watches (asked once per op / value here, never per event).
//   on_program_begin(pid)       per program instance (kProgram): returns the observer's state for
//                               that program (opaque; it may come from a pool the observer keeps)
//   on_op_begin, on_op, on_transfer, on_access, on_print, on_assert
//                               events of that program, each with the state on_program_begin returned
//   on_program_end(pid, state)  (kProgram) the program has ended (also when it was stopped)
//   on_launch_end(ctx, stats)   once, on the launching thread, after every program has ended; also
//                               when the launch fails (the exception follows)
//
// Cost: dispatch is decided at launch begin (per observer and kind, per op, per value), so an event
// goes only to the observers that want it, with no virtual call to ask; a kind that nobody
// subscribed to costs one mask test where it would be emitted, and no event is built.
//
// Threads: the events of one program come from one worker thread, in program order. Programs run
// concurrently (several worker threads, and fibers that interleave programs on one thread), so
// anything an observer shares between programs must be thread-safe; the per-program state needs no
// lock, because it travels with its program.
//
// Stopping: any callback may call LaunchContext::request_stop(). The engine then starts no new
// program; running ones end at their next step boundary (they unwind normally: on_program_end is
// called), and Engine::launch returns with LaunchStats::stopped set.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tilescope/exec/memory.h"
#include "tilescope/exec/value.h"
#include "tilescope/ir/ir.h"

namespace tilescope::exec {

using ProgramId = std::array<int32_t, 3>;

/// A kind whose events show lane addresses or op operand / result values must also be in
/// exec::kSeesAddresses (src/exec/access.h): launches without such an observer skip making pointer
/// tiles that only fused accesses read (ops::fuse_addresses).
enum EventKind : unsigned {
  kAccess = 1u << 0,       // every checked load / store / atomic
  kOutOfBounds = 1u << 1,  // accesses with at least one lane outside its buffer (also in kAccess)
  kOpResult = 1u << 2,     // results of watched ops (on_op), and transfers into watched values
  kProgram = 1u << 3,      // program begin and end, and per-program state
  kPrint = 1u << 4,        // tt.print
  kAssert = 1u << 5,       // failed tt.assert
  kOpBegin = 1u << 6,      // a watched op is about to run (on_op_begin)
  /// Atomics in the order they took effect: each atomic op (tt.atomic_rmw / atomic_cas / atomic_load /
  /// atomic_store, volatile loads, descriptor reduces) runs all its lanes and delivers its on_access
  /// under one lock, so an observer sees atomic events in a total order consistent with the values
  /// they read (what a race detector needs for happens-before). Costs a lock per atomic op while
  /// subscribed, nothing otherwise. Implies nothing else: subscribe kAccess for the events.
  kAtomicOrder = 1u << 7,
};

enum class AccessKind : uint8_t { load, store, atomic };

/// One memory op of one program instance. Arrays have `lanes` entries, row-major over the
/// op's tile shape; `mask[i]` is 0 for masked-off lanes (never touched).
/// Emitted after the op's accesses are done (src/exec/access.h). `mask` is never null (all ones
/// when the op has no mask). `addrs` holds every lane's virtual address, masked-off lanes included
/// (their values are whatever the kernel computed). Block-pointer boundary checks and descriptor
/// ops (TMA: elements outside the descriptor's shape are padding, not errors) appear as masked-off
/// lanes. `bad_lanes` counts active lanes outside the buffer they were derived from (or in region 0,
/// null); those lanes were not dereferenced. tt.atomic_cas has no mask: all lanes are active.
/// The arrays are only valid during the callback.
struct AccessEvent {
  AccessKind kind;
  const ir::Op* op;
  ProgramId pid;
  int64_t lanes;
  const uint64_t* addrs;
  const uint8_t* mask;
  int elem_bytes;
  int64_t bad_lanes;  // active lanes outside their buffer (0 for a clean access)
  const Memory* memory;
  /// Which access of one execution of `op` this is: 0 for the first (a TTIR op makes one access per
  /// execution; an NKI instruction one per operand, nki/nki.h), so 0 marks a new execution.
  int part;
  /// Every lane is active, inside one buffer, at addrs[0] + i·elem_bytes (the engine's memcpy path):
  /// observers may treat the lanes as one byte range. False says nothing.
  bool dense = false;
  /// Not dense, but every lane is active and inside one buffer, in rows of `row_lanes` consecutive
  /// lanes at consecutive addresses (row k: lanes [k·row_lanes, (k+1)·row_lanes), at
  /// addrs[k·row_lanes] + j·elem_bytes; rows may be anywhere, overlap or repeat; the engine's copy per
  /// row of a 2-D tile): observers may treat each row as one byte range. 0 says nothing.
  int64_t row_lanes = 0;
  /// Not dense, but lanes [0, prefix_lanes) are active, inside one buffer, at consecutive addresses
  /// (addrs[0] + i·elem_bytes), and every later lane is inactive: a tile whose mask cuts off its tail
  /// (`offs < n` in a row's last tile). Observers may treat the active lanes as one byte range. 0 says
  /// nothing.
  int64_t prefix_lanes = 0;

  /// The lanes [0, run_lanes()) that observers may take as one byte range from addrs[0]: every lane of a
  /// dense tile, or the active prefix; 0 for any other access.
  int64_t run_lanes() const { return dense ? lanes : prefix_lanes; }
};

/// A watched op is about to run (kOpBegin: `results` do not hold its results yet) or has run
/// (kOpResult). Operand and result storage in op operand / result order, encoded as exec/value.h
/// says. Region ops (scf.for/if/while, tt.call, tt.reduce) begin before their regions run and send
/// their results after; a program stopped inside a region gets no result event for the region op.
/// Pointers are only valid during the callback.
struct OpEvent {
  const ir::Op* op;
  ProgramId pid;
  const void* const* operands;  // op->operands.size() pointers
  const void* const* results;   // op->results.size() pointers
  const void* tag;              // what the observer's Subscription::ops returned for this op

  ValueRef operand(size_t i) const { return ValueRef{op->operands[i]->type, operands[i]}; }
  ValueRef result(size_t i) const { return ValueRef{op->results[i]->type, results[i]}; }
};

/// Values copied into block arguments or op results by control flow (kOpResult): scf.for
/// init/yield to iter args and iter args to results, scf.if/while yields, cf.br operands to block
/// arguments, tt.call arguments and returns. `dst[i]` receives the value of `src[i]`. Sent to an
/// observer only when one of the destinations is a value it watches (Subscription::values).
struct TransferEvent {
  ProgramId pid;
  const ir::Value* const* dst;
  const ir::Value* const* src;
  int count;
};

/// tt.print (kPrint). `text` is exactly what the GPU prints (reference §5, device_print row): one
/// line per element, `pid (x, y, z) idx (i, j) <prefix><value>\n`, floats as "%f" (or hex floats
/// with hex=true), integers as decimal (or 0x-padded hex); a print without operands is one line
/// `pid (x, y, z) <prefix>\n`. The engine writes it nowhere: the front door decides.
struct PrintEvent {
  const ir::Op* op;
  ProgramId pid;
  std::string text;
};

/// A tt.assert with failing lanes (kAssert). The program keeps running (the GPU would stop the
/// kernel); the engine prints nothing.
struct AssertEvent {
  const ir::Op* op;
  ProgramId pid;
  std::string message;
  int64_t failed_lanes;
  int64_t first_lane;
};

struct LaunchStats {
  int64_t programs = 0;       // program instances run (a stopped launch counts those it stopped partway)
  int64_t out_of_bounds = 0;  // active lanes that pointed outside their buffer
  int64_t failed_asserts = 0;
  bool stopped = false;  // an observer called LaunchContext::request_stop()
  /// Times a program was set aside to run another (parked on an address it polls, or switched out):
  /// the scheduler's cost for programs that wait on each other (src/exec/engine.cpp); 0 when none can.
  int64_t switches = 0;
};

/// One kernel argument as bound, in TTIR signature order.
struct BoundArg {
  const ir::Value* param = nullptr;  // the kernel's TTIR argument (name, type)
  const Buffer* buffer = nullptr;    // pointer / tensor-descriptor arguments given a buffer; else null
  uint64_t bits = 0;  // scalars: raw bits of the TTIR type (ints sign-extended); pointers: the address
};

/// What an observer sees of the launch. Made by the engine; valid from on_launch_begin until
/// on_launch_end returns. request_stop may be called from any thread.
class LaunchContext {
 public:
  explicit LaunchContext(std::atomic<bool>& stop_flag) : stop_(&stop_flag) {}
  LaunchContext(const LaunchContext&) = delete;
  LaunchContext& operator=(const LaunchContext&) = delete;

  const ir::Module* module = nullptr;
  const ir::Function* kernel = nullptr;
  std::array<int64_t, 3> grid{1, 1, 1};
  int64_t programs = 0;            // grid[0] * grid[1] * grid[2]
  const Memory* memory = nullptr;  // every registered buffer: name, dtype, shape, strides, bytes
  std::vector<BoundArg> args;      // one per kernel argument
  int threads = 1;                 // worker threads running the grid

  /// Stop the launch early: no new program starts, running programs end at their next step.
  void request_stop() const noexcept {
    requested_.store(true, std::memory_order_relaxed);
    stop_->store(true, std::memory_order_relaxed);
  }
  bool stop_requested() const noexcept { return requested_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool>* stop_;
  mutable std::atomic<bool> requested_{false};
};

/// What an observer wants from one launch (returned by on_launch_begin).
struct Subscription {
  unsigned kinds = 0;  // EventKind bits
  /// kOpBegin / kOpResult: asked once per op the launch can run (the kernel, its callees, their
  /// regions), at launch begin. A non-null result watches the op and comes back as OpEvent::tag (e.g.
  /// the observer's own record for the op); null skips it. Empty: every op, with tag = the op.
  std::function<const void*(const ir::Op&)> ops;
  /// kOpResult: whether transfers into `v` interest the observer; asked once per value at launch
  /// begin. Empty: every value.
  std::function<bool(const ir::Value&)> values;
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual Subscription on_launch_begin(const LaunchContext& ctx) = 0;
  virtual void on_launch_end(const LaunchContext& ctx, const LaunchStats& stats) {}
  /// kProgram. The returned pointer is handed to every later event of this program and to
  /// on_program_end; without kProgram the state is null.
  virtual void* on_program_begin(ProgramId pid) { return nullptr; }
  virtual void on_program_end(ProgramId pid, void* state) {}
  virtual void on_op_begin(const OpEvent& e, void* state) {}
  virtual void on_op(const OpEvent& e, void* state) {}
  virtual void on_transfer(const TransferEvent& e, void* state) {}
  virtual void on_access(const AccessEvent& e, void* state) {}
  virtual void on_print(const PrintEvent& e, void* state) {}
  virtual void on_assert(const AssertEvent& e, void* state) {}
};

}  // namespace tilescope::exec
