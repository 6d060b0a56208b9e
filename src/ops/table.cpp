// The lowering column of ops.def, expanded (see table.h).
#include "table.h"

#include <iterator>
#include <mutex>
#include <vector>

#include "ops.h"

namespace tilescope::ops {

namespace {

constexpr LowerFn kBuiltin[] = {
#define TS_OP(id, name, syntax, verify, lower, roles, effects, taint) lower,
#include "tilescope/ir/ops.def"
#undef TS_OP
};
static_assert(std::size(kBuiltin) == ir::kNumBuiltinOps, "one lowering per Opcode");

std::mutex g_mu;
std::vector<LowerFn> g_registered;  // by opcode - kNumBuiltinOps

}  // namespace

LowerFn lowering(ir::Opcode code) {
  auto i = static_cast<size_t>(code);
  if (i < std::size(kBuiltin)) return kBuiltin[i];
  std::lock_guard<std::mutex> g(g_mu);
  i -= std::size(kBuiltin);
  return i < g_registered.size() ? g_registered[i] : nullptr;
}

void register_lowering(ir::Opcode code, LowerFn fn) {
  auto i = static_cast<size_t>(code);
  if (i < std::size(kBuiltin)) return;  // built-in ops keep the lowering ops.def gives them
  std::lock_guard<std::mutex> g(g_mu);
  i -= std::size(kBuiltin);
  if (g_registered.size() <= i) g_registered.resize(i + 1, nullptr);
  g_registered[i] = fn;
}

}  // namespace tilescope::ops
