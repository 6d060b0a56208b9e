// tilescope/analysis: the race detector, an exec::Observer that finds races through global memory.
//
// Kinds (the JSON `kind` strings; finding.h):
//   data-race           two program instances access overlapping bytes, at least one writes, and no
//                       happens-before orders them: RAW, WAR or WAW. Atomics never race with atomics; an
//                       atomic and a plain access can. Neighbouring elements (two f16 of one 32-bit word)
//                       do not overlap: the shadow state is per byte.
//   intra-program-race  lanes of one program: lanes of one tt.store that write one address with different
//                       values (the GPU's winner is undefined; the same value is fine), or a tt.load lane
//                       that reads bytes another lane of the same program stored, with no gpu.barrier
//                       (tl.debug_barrier()) in between (lanes may be different GPU threads).
//
// Happens-before (PTX memory model, simplified; reference/ttir.md §1 tt.atomic_rmw / tt.atomic_cas):
// program order within a program, and release -> acquire through atomics on the same address. Each
// program has a vector clock, sparse (programs that never synchronise hold only their own epoch), and
// each address an atomic released to has one (FastTrack-style). An atomic with sem = release or acq_rel
// releases; acquire or acq_rel acquires (Triton's default is acq_rel); relaxed does neither. Volatile
// loads are relaxed atomic reads. Scope cta orders nothing between programs (every program is its own
// CTA); gpu and sys do. An atomic RMW whose result the kernel never uses acquires nothing (the program
// cannot act on what it read). Happens-before is logical, not the engine's interleaving: two programs
// that run one after the other (--threads 1) still race if nothing orders them. The engine delivers
// atomics in the order they took effect (exec/events.h kAtomicOrder), so acquires see the releases
// whose values they read.
//
// Shadow state: exact per byte touched (pages of kShadowPageBytes allocated on first touch, keyed by host
// address, so aliasing buffers share it): the last write and up to two reads that are concurrent with
// each other (epoch, op, lane). A write is checked against the last write and those reads; a read
// against the last write. A page holds byte ranges that share one state, with lanes as a function of the
// byte (a tile row stored by one op is one range, updated once per row rather than per element), and
// turns into a cell per element or per byte only where a race is reported or the accesses are too
// fragmented (CONTRIBUTING.md, "The race detector"). Memory is proportional to the bytes touched, not to
// the grid; per finding, counts and the first few program ids and lanes (distinct programs counted up to
// kMaxCounted each side).
//
// The first access of a reported pair is the one of the lower program id (linear id, x fastest), so RAW /
// WAR and the sites' order do not depend on the schedule.
#pragma once

#include <memory>

#include "tilescope/analysis/analysis.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

struct RacesOptions {
  bool intra = true;  // intra-program-race
  int max_first = 5;  // how many program ids / lanes to keep per side
  /// Most MiB of shadow per launch (about 1/6 byte per byte touched by whole tile rows, 48 bytes per
  /// cell where the page is cells). Bytes past the budget are not checked (statistics:
  /// shadow_budget_exceeded), so a huge launch is checked in part, not killed.
  int max_shadow_mib = 4096;
  /// Pages start as segments, updated once per run of lanes (the fast path); false: cells from the
  /// first access (the reference the tests compare the fast path with; slower, same findings).
  bool segments = true;
};

class Races : public Analysis {
 public:
  static constexpr uint64_t kShadowPageBytes = 1024;
  static constexpr size_t kMaxCounted = 4096;

  /// `module` must outlive the detector. Observes launches of the module's kernels one at a time.
  Races(const ir::Module& module, const RacesOptions& opts);
  ~Races() override;

  exec::Subscription on_launch_begin(const exec::LaunchContext&) override;
  void on_launch_end(const exec::LaunchContext&, const exec::LaunchStats&) override;
  void* on_program_begin(exec::ProgramId) override;
  void on_program_end(exec::ProgramId, void* state) override;
  void on_op_begin(const exec::OpEvent&, void* state) override;
  void on_access(const exec::AccessEvent&, void* state) override;

  /// This launch's findings, grouped by (kind, pair of sites, buffer), ordered by kind and TTIR position;
  /// frees the shadow state.
  void collect(const LaunchInfo& info, std::vector<Finding>& out) override;
  /// Finding::evidence: every program of each side, with the elements at which it raced (the count is
  /// then exact past kMaxCounted too).
  void keep_evidence() override;
  /// {"shadow_bytes": bytes of shadow pages of the last launch, "sync_addresses": N,
  ///  "shadow_budget_exceeded": whether some bytes went unchecked}
  nlohmann::json statistics() const override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::analysis
