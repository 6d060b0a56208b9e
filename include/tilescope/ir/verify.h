// tilescope/ir: the verifier's checking API, for the per-op verifiers of the op registry (ops.def's
// Verify column, and dialects' rows added with register_op).
//
// ir::verify(module) walks every function; for each op it applies the registry's traits (Triton's
// TensorSizeTrait on tt ops) and then the op's own verifier, before the op's regions. The rules are
// Triton's ODS constraints and op verifiers (reference §1-§2). Every failure is a tilescope::Error
// located at the op: "file:line:col: 'op.name': message (python.py:L:C)".
#pragma once

#include <fmt/format.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "tilescope/ir/ir.h"

namespace tilescope::ir {

class Verifier {
 public:
  explicit Verifier(const Module& m) : m_(m) {}
  /// Verify every function of the module. Throws tilescope::Error.
  void run();

  const Module& module() const { return m_; }
  /// The function whose body is being verified.
  const Function& function() const { return *fn_; }

  [[noreturn]] void fail(const Op& o, const std::string& msg) const;
  /// Fails with fmt::format(f, a...) unless `ok`. The message is built only on failure: every op is
  /// checked dozens of times, and formatting each message up front was a quarter of ir::verify's time.
  /// Pass a Type as `*t` (its formatter below) rather than `t->str()`, which would build the string anyway.
  template <typename... A>
  void check(bool ok, const Op& o, fmt::format_string<A...> f, A&&... a) const {
    if (!ok) [[unlikely]]
      fail(o, fmt::format(f, std::forward<A>(a)...));
  }
  /// The type of operand / result `i` (fails when the op has fewer).
  const Type* in(const Op& o, size_t i) const;
  const Type* out(const Op& o, size_t i = 0) const;
  /// Exactly `nops` operands and `nres` results.
  void counts(const Op& o, size_t nops, size_t nres) const;
  void operands_between(const Op& o, size_t lo, size_t hi) const;
  /// The attribute `k`, which must exist with `kind`.
  const Attr* need(const Op& o, const char* k, Attr::Kind kind) const;
  /// Attribute `k` is a keyword among `allowed` (or absent, when not `required`).
  void keyword_in(const Op& o, const char* k, std::initializer_list<std::string_view> allowed,
                  bool required) const;
  /// Triton's TensorSizeTrait: a tensor (or a block pointer's / descriptor's block) has a power-of-two
  /// element count no larger than 2^20.
  void tensor_size(const Op& o, const Type* t) const;

 private:
  void region(const Region& r, const Op* parent);
  void op(const Op& o);

  const Module& m_;
  const Function* fn_ = nullptr;
};

}  // namespace tilescope::ir

/// A Type formats as its MLIR spelling, Type::str() ("tensor<128x!tt.ptr<f32>>").
template <>
struct fmt::formatter<tilescope::ir::Type> : fmt::formatter<std::string_view> {
  auto format(const tilescope::ir::Type& t, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(t.str(), ctx);
  }
};
