// libFuzzer target: TTIR text -> ir::read -> ir::verify -> plan every function (exec::Planner, the
// lowering Engine::launch does before running anything).
//
// A malformed module must end in tilescope::Error, the user error with a located message; anything
// else is a bug in tilescope: a crash, a sanitizer report (the target is built with ASan and UBSan),
// an assert, another exception type (it escapes and aborts), or a timeout or memory blow-up
// (libFuzzer's -timeout and -rss_limit_mb). Seeds: every tests/ttir/**/*.ttir (`make fuzz`).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "plan.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilescope;
  try {
    ir::Module m = ir::read(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.ttir");
    ir::verify(m);
    exec::Plan plan;
    plan.module = &m;
    exec::Planner planner(m, plan);
    for (const auto& f : m.functions) planner.lower(*f);
  } catch (const Error&) {
    // A rejected module: the expected outcome for most inputs.
  }
  return 0;
}
