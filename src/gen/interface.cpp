// gen::check_interface (ast.h): whether a valid AST is the kernel a task asked for. Arguments are written
// as the task file's signature writes them ("x_ptr: *f32", "n: i32", "BLOCK: constexpr": docs/gen-tasks.md).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

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

namespace tilescope::gen {

std::vector<std::string> writers(const Ast& ast, const std::string& arg) {
  // Where each name's pointers may come from: the names it is made of.
  std::map<std::string, std::vector<std::string>> from;
  std::vector<const Op*> stores;
  std::function<void(const std::vector<Op>&)> walk = [&](const std::vector<Op>& ops) {
    for (const Op& o : ops) {
      auto add = [&](const std::string& to, const std::string& src) {
        if (!to.empty() && !src.empty()) from[to].push_back(src);
      };
      switch (o.kind) {
        case OpKind::splat:
        case OpKind::broadcast:
        case OpKind::expand_dims:
        case OpKind::reshape:
        case OpKind::trans:
        case OpKind::addptr:
          if (!o.results.empty() && !o.operands.empty()) add(o.results[0], o.operands[0]);
          break;
        case OpKind::where:
          if (!o.results.empty() && o.operands.size() == 3) {
            add(o.results[0], o.operands[1]);
            add(o.results[0], o.operands[2]);
          }
          break;
        case OpKind::store:
        case OpKind::atomic_rmw:
        case OpKind::atomic_cas: stores.push_back(&o); break;
        case OpKind::for_: {
          const Region& body = ast.regions[static_cast<size_t>(o.body)];
          for (size_t i = 0; i < o.init.size(); ++i) {
            const std::string& yielded = i < body.yields.size() ? body.yields[i] : std::string();
            for (const std::string* to : {i < o.carried.size() ? &o.carried[i] : nullptr,
                                          i < o.results.size() ? &o.results[i] : nullptr}) {
              if (!to) continue;
              add(*to, o.init[i]);
              add(*to, yielded);
            }
          }
          walk(body.ops);
          break;
        }
        case OpKind::if_:
          for (int r : {o.then_region, o.else_region}) {
            if (r < 0) continue;
            const Region& branch = ast.regions[static_cast<size_t>(r)];
            for (size_t i = 0; i < o.results.size() && i < branch.yields.size(); ++i)
              add(o.results[i], branch.yields[i]);
            walk(branch.ops);
          }
          break;
        default: break;
      }
    }
  };
  walk(ast.ops);
  // Depth first from a name back to the argument; each name once per question (loops make cycles).
  auto derives = [&](const std::string& start) {
    std::vector<std::string> todo{start};
    std::set<std::string> seen{start};
    while (!todo.empty()) {
      const std::string name = todo.back();
      todo.pop_back();
      if (name == arg) return true;
      if (auto it = from.find(name); it != from.end())
        for (const auto& src : it->second)
          if (seen.insert(src).second) todo.push_back(src);
    }
    return false;
  };
  std::vector<std::string> out;
  for (const Op* o : stores)
    if (!o->operands.empty() && derives(o->operands[0])) out.push_back(o->pointer);
  return out;
}

}  // namespace tilescope::gen
