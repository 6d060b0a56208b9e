// tilescope/exec: run a kernel's launch grid on the CPU.
//
// The Engine verifies nothing itself: give it a Module that ir::verify accepted. It lowers each
// function once into a plan (value slots, kernels chosen by element type) and runs program
// instances of the grid on a thread pool. Results do not depend on the thread count for race-free
// kernels; programs spinning on an atomic_cas lock make progress (the scheduler interleaves them).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tilescope/exec/events.h"
#include "tilescope/exec/memory.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/ir.h"

namespace tilescope::exec {

/// One kernel argument, bound to the TTIR function argument of the same position.
struct Arg {
  enum class Kind { buffer, scalar } kind = Kind::scalar;
  int buffer = -1;    // Memory buffer id (kind == buffer): the pointer is its byte 0
  uint64_t bits = 0;  // scalar value as raw bits of the argument's TTIR type (sign-extended ints)

  static Arg buf(int id) { return Arg{Kind::buffer, id, 0}; }
  static Arg i64(int64_t v) { return Arg{Kind::scalar, -1, static_cast<uint64_t>(v)}; }
  static Arg f64(double v);
  static Arg f32(float v);
};

struct LaunchOptions {
  std::array<int64_t, 3> grid{1, 1, 1};
  int threads = 0;  // 0: all cores (fewer for small grids: at least 8 programs per thread; and no more
                    // than the program frames that fit max_memory)
  std::vector<Observer*> observers;  // the analyses, in call order (exec/events.h)
  /// When set (e.g. by a SIGINT handler), the launch stops starting programs and throws Interrupted.
  const std::atomic<bool>* cancel = nullptr;
  /// The most bytes the launch may take for the frames of its programs (the values of every program
  /// in flight: one frame per worker thread, and one per program parked while it waits on another
  /// through atomics); 0: default_max_memory(). A launch that needs more fails with an Error that says
  /// how much it needs, before allocating it.
  int64_t max_memory = 0;
};

/// The default LaunchOptions::max_memory: half of the machine's physical memory, or of the cgroup
/// memory limit (cgroup v2 `memory.max`) when that is lower.
int64_t default_max_memory();

/// Thrown by Engine::launch when LaunchOptions::cancel was set during the launch.
class Interrupted : public Error {
 public:
  using Error::Error;
};

/// Check a launch grid against CUDA's limits: x in [0, 2^31), y and z in [0, 65535]; a dimension of 0
/// launches no program (as on the GPU, where Triton skips the launch). Throws tilescope::Error. Every
/// entry point (the engine, the CLI, the Python front door, launch records) checks grids with it.
void check_grid(const std::array<int64_t, 3>& grid);

class Engine {
 public:
  /// `module` must outlive the Engine. Throws tilescope::Error for ops it cannot run.
  explicit Engine(const ir::Module& module);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Run `kernel` (a public tt.func) on `opts.grid` with `args` against `memory`, telling
  /// `opts.observers` what happens (exec/events.h). Returns normally when an observer stopped the
  /// launch (LaunchStats::stopped). Throws tilescope::Error for a bad launch (argument count or
  /// kinds, empty grid) or a kernel error, Interrupted when `opts.cancel` was set.
  LaunchStats launch(const std::string& kernel, const std::vector<Arg>& args, Memory& memory,
                     const LaunchOptions& opts);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::exec
