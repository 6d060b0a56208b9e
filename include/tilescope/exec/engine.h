// tilescope/exec: run a kernel's launch grid on the CPU.
//
// The Engine verifies nothing itself: give it a Module that ir::verify accepted. It lowers each
// function once into a plan (value slots, kernels chosen by element type) and runs program
// instances of the grid on a thread pool. Results do not depend on the thread count for race-free
// kernels. Programs that wait on each other through memory (a lock built with atomic_cas, a grid
// barrier, a flag) make progress whatever the thread count: a program that keeps reading the same
// value at one address is parked until another program changes it (src/exec/engine.cpp).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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
  uint64_t bits = 0;  // scalar value as raw bits of the argument's TTIR type (sign-extended ints);
                      // for a buffer bound to a !tt.tensordesc: its padding (0 or 1 zero, 2 NaN)

  static Arg buf(int id) { return Arg{Kind::buffer, id, 0}; }
  static Arg i64(int64_t v) { return Arg{Kind::scalar, -1, static_cast<uint64_t>(v)}; }
  static Arg f64(double v);
  static Arg f32(float v);
};

/// The most worker threads one launch may use: a typo such as `--threads 100000` is an error, not
/// 100000 threads. Far more than any machine's cores.
inline constexpr int kMaxThreads = 1024;

/// The default step limit: operations one program may run before the launch fails with a located
/// "program (x, y, z) executed N operations without finishing". Real kernels run far fewer (a
/// 1024-iteration loop of 50 ops is 51,200); at the engine's speed, a hung program reaches it in
/// seconds, so a CI run of a kernel that never finishes ends by itself.
inline constexpr int64_t kDefaultMaxSteps = 1'000'000'000;

struct LaunchOptions {
  std::array<int64_t, 3> grid{1, 1, 1};
  int threads = 0;  // 0: all cores (fewer for small grids: at least 8 programs per thread; and no more
                    // than the program frames that fit max_memory)
  std::vector<Observer*> observers;  // the analyses, in call order (exec/events.h)
  /// When set (e.g. by a SIGINT handler), the launch stops, also inside a running program's loops
  /// (checked at every loop iteration and call), and Engine::launch throws Interrupted.
  const std::atomic<bool>* cancel = nullptr;
  /// Operations one program may run (each op of a block counts, and the block's terminator); 0: no
  /// limit. Counted per program, so it is deterministic; checked at loop iterations and calls.
  int64_t max_steps = kDefaultMaxSteps;
  /// The most bytes the launch may take for the frames of its programs (the values of every program
  /// in flight: one frame per worker thread, and one per program parked while it waits on another
  /// through atomics); 0: default_max_memory(). A launch that needs more fails with an Error that says
  /// how much it needs, before allocating it.
  int64_t max_memory = 0;
};

/// The default LaunchOptions::max_memory: half of the machine's physical memory, or of the cgroup
/// memory limit (cgroup v2 `memory.max`) when that is lower; read at the first call of the process.
int64_t default_max_memory();

/// Thrown by Engine::launch when LaunchOptions::cancel was set during the launch.
class Interrupted : public Error {
 public:
  using Error::Error;
};

/// Check a worker thread count: 0 (all cores) to kMaxThreads. Throws tilescope::Error naming `what`
/// (the option or variable that gave it). Every entry point checks thread counts with it.
void check_threads(int64_t threads, std::string_view what);
/// Read a thread count written as a decimal number (`--threads`, TILESCOPE_THREADS) and check it as
/// check_threads does. Throws tilescope::Error naming `what` for anything else.
int parse_threads(std::string_view text, std::string_view what);

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
  /// kinds, grid, thread count) or a kernel error (the step limit included), or when a worker
  /// thread cannot be started; Interrupted when `opts.cancel` was set.
  LaunchStats launch(const std::string& kernel, const std::vector<Arg>& args, Memory& memory,
                     const LaunchOptions& opts);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::exec
