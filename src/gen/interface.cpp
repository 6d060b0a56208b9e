// gen::check_interface (ast.h): whether a valid AST is the kernel a task asked for. Arguments are written
// as the task file's signature writes them ("x_ptr: *f32", "n: i32", "BLOCK: constexpr": docs/gen-tasks.md).
#include <fmt/format.h>

#include <algorithm>

#include "table.h"
#include "tilescope/gen/ast.h"

namespace tilescope::gen {
namespace {

std::string arg_text(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::pointer: return fmt::format("{}: *{}", a.name, dtype_name(a.dtype));
    case Arg::Kind::scalar: return fmt::format("{}: {}", a.name, dtype_name(a.dtype));
    case Arg::Kind::constexpr_: return fmt::format("{}: constexpr", a.name);
  }
  return a.name;
}

bool same(const Arg& a, const Arg& b) {
  return a.name == b.name && a.kind == b.kind && (a.kind == Arg::Kind::constexpr_ || a.dtype == b.dtype);
}

}  // namespace

std::optional<Dtype> dtype_from_name(std::string_view name) { return find_dtype(name); }

std::vector<Problem> check_interface(const Ast& ast, const Interface& iface) {
  std::vector<Problem> out;
  auto add = [&](std::string pointer, std::string message, std::string expected, std::string found) {
    if (out.size() < static_cast<size_t>(kMaxProblems))
      out.push_back({Problem::Kind::semantics, std::move(pointer), std::move(message), std::move(expected),
                     std::move(found)});
  };
  if (ast.name != iface.name) add("/name", "the kernel must have the task's name", iface.name, ast.name);
  const size_t n = std::max(ast.args.size(), iface.args.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string ptr = fmt::format("/args/{}", std::min(i, ast.args.size()));
    if (i >= ast.args.size()) {
      add(ptr,
          fmt::format("argument {} is missing: the task's kernel takes {} arguments", i, iface.args.size()),
          arg_text(iface.args[i]), "nothing");
    } else if (i >= iface.args.size()) {
      add(ptr,
          fmt::format("argument {} is one too many: the task's kernel takes {} arguments", i,
                      iface.args.size()),
          "nothing", arg_text(ast.args[i]));
    } else if (!same(ast.args[i], iface.args[i])) {
      add(ptr, fmt::format("argument {} differs from the task's signature", i), arg_text(iface.args[i]),
          arg_text(ast.args[i]));
    }
  }
  return out;
}

}  // namespace tilescope::gen
