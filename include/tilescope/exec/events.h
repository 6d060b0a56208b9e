// tilescope/exec: what the engine tells observers while it runs a grid.
//
// Observers subscribe to kinds (a bit set); a kind nobody observes costs nothing: the engine
// checks one mask before building an event. Callbacks come from worker threads concurrently
// (one program instance per thread at a time): observers must be thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "tilescope/exec/memory.h"
#include "tilescope/ir/ir.h"

namespace tilescope::exec {

using ProgramId = std::array<int32_t, 3>;

enum EventKind : unsigned {
  kAccess = 1u << 0,       // every checked load / store / atomic
  kOutOfBounds = 1u << 1,  // accesses with at least one lane outside its buffer (also in kAccess)
  kOpResult = 1u << 2,     // every op's results
  kProgram = 1u << 3,      // program start and end
  kPrint = 1u << 4,        // tt.print
  kAssert = 1u << 5,       // failed tt.assert
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
};

/// One op has run (kOpResult): its operand and result values in the engine's storage (see
/// src/exec/value.h for element encodings), in op operand / result order. Sent only for ops the
/// observer `watches`. Region ops (scf.for/if/while, tt.call) send theirs after the region ran.
struct OpEvent {
  const ir::Op* op;
  ProgramId pid;
  const void* const* operands;  // op->operands.size() pointers
  const void* const* results;   // op->results.size() pointers
};

/// Values copied into block arguments or op results by control flow (kOpResult): scf.for
/// init/yield to iter args and iter args to results, scf.if/while yields, cf.br operands to block
/// arguments, tt.call arguments and returns. `dst[i]` receives the value of `src[i]`.
struct TransferEvent {
  ProgramId pid;
  const ir::Value* const* dst;
  const ir::Value* const* src;
  int count;
};

struct PrintEvent {
  const ir::Op* op;
  ProgramId pid;
  std::string text;  // formatted as the GPU prints it, one line per element
};

struct AssertEvent {
  const ir::Op* op;
  ProgramId pid;
  std::string message;
  int64_t failed_lanes;
  int64_t first_lane;
};

class Observer {
 public:
  virtual ~Observer() = default;
  /// Bit set of EventKind this observer wants.
  virtual unsigned kinds() const = 0;
  virtual void on_access(const AccessEvent&) {}
  /// Which ops' kOpResult events this observer wants; asked once per op per launch.
  virtual bool watches(const ir::Op&) const { return true; }
  virtual void on_op(const OpEvent&) {}
  /// Whether transfers into `v` interest this observer; asked once per value per launch. A
  /// transfer is sent only when one of its destinations is watched by some observer.
  virtual bool watches_value(const ir::Value&) const { return true; }
  virtual void on_transfer(const TransferEvent&) {}
  virtual void on_program(ProgramId, bool begin) { (void)begin; }
  virtual void on_print(const PrintEvent&) {}
  virtual void on_assert(const AssertEvent&) {}
};

}  // namespace tilescope::exec
