// libFuzzer target: TTIR text -> ir::read -> ir::verify -> a launch of the module's kernel through
// the one launch path (launch::run_launch: binding, the sanitizer, the engine with its fibers and
// scheduler), with made-up arguments and a step limit so that every input ends quickly.
//
// The launch: grid (2, 1, 1) on one worker thread (deterministic), a 4 KiB buffer for every pointer
// and tensor-descriptor argument (64 zero bytes, then bytes 64, 65, ...: a lock or flag at the start
// is free, loads further on see varied values; stores and atomics stay inside or are findings), 16
// for every integer and 1.5 for every float scalar, at most 20000 operations per program. As in
// fuzz/reader_fuzz.cpp, a malformed module or launch must end in tilescope::Error (a located
// message); findings are normal results. Anything else is a bug: a crash, a sanitizer report, an
// assert, another exception, a timeout or a memory blow-up. Kernels whose frame of values would
// exceed 16 MiB are planned but not run (their tiles alone would make an input slow, not wrong).
// Seeds: every tests/ttir/**/*.ttir (`make fuzz`).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plan.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/reader.h"
#include "tilescope/launch/record.h"
#include "tilescope/launch/runner.h"

namespace {

constexpr int64_t kBufferBytes = 4096;
constexpr int64_t kMaxFrameBytes = int64_t{16} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilescope;
  try {
    std::string text(reinterpret_cast<const char*>(data), size);
    launch::Kernel kernel(text, "fuzz.ttir");  // read and verify; a module without a kernel is an Error
    const ir::Function& fn = kernel.function("");
    {
      exec::Plan plan;
      plan.module = &kernel.module();
      exec::Planner planner(kernel.module(), plan);
      planner.lower(fn);
      if (plan.frame_bytes > kMaxFrameBytes) return 0;
    }
    launch::LaunchRecord rec;
    rec.kernel = fn.name;
    rec.grid = {2, 1, 1};
    std::vector<std::vector<std::byte>> buffers;
    buffers.reserve(fn.args().size());
    for (const auto& a : fn.args()) {
      const ir::Type& t = *a->type;
      if (t.elem == ir::Elem::ptr || t.elem == ir::Elem::tensordesc) {
        const ir::Type* pointee = t.pointee;
        ir::Elem e = pointee && pointee->elem != ir::Elem::none ? pointee->elem : ir::Elem::i8;
        if (e == ir::Elem::ptr || e == ir::Elem::tensordesc) e = ir::Elem::i64;
        std::vector<std::byte> b(kBufferBytes);
        for (size_t i = 64; i < b.size(); ++i) b[i] = static_cast<std::byte>(i);
        buffers.push_back(std::move(b));
        const int64_t n = kBufferBytes / ir::elem_bytes(e);
        rec.args.push_back(
            launch::ArgRecord::buffer(a->name, e, buffers.back().data(), kBufferBytes, {n}, {1}));
      } else if (ir::is_float(t.elem)) {
        rec.args.push_back(launch::ArgRecord::scalar(a->name, 1.5));
      } else {
        rec.args.push_back(launch::ArgRecord::scalar(a->name, int64_t{16}));
      }
    }
    launch::RunOptions opts;
    opts.analyses.push_back({"sanitizer", nullptr});
    opts.threads = 1;
    opts.max_steps = 20000;
    launch::run_launch(kernel, rec, opts);
  } catch (const Error&) {
    // A rejected module or launch, or a program past the step limit: an expected outcome.
  }
  return 0;
}
