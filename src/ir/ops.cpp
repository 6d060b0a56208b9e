// The op registry (see include/tilescope/ir/ops.h): ops.def expanded into OpDef rows, the name index,
// rows registered by dialects, and the queries over roles and effects.
#include "tilescope/ir/ops.h"

#include <fmt/format.h>

#include <cassert>
#include <deque>
#include <iterator>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tilescope/ir/diag.h"
#include "tilescope/ir/ir.h"
#include "verifiers.h"

namespace tilescope::ir {

namespace {

using namespace effect;

constexpr OpDef kBuiltin[] = {
#define TS_OP(id, name, syntax, verify, lower, roles, effects, taint) \
  {Opcode::id, name, Syntax::syntax, verifiers::verify, Roles::roles, effects, Taint::taint},
#include "tilescope/ir/ops.def"
#undef TS_OP
};
static_assert(std::size(kBuiltin) == kNumBuiltinOps, "one row per Opcode");

constexpr bool rows_in_order() {
  for (int i = 0; i < kNumBuiltinOps; ++i)
    if (static_cast<int>(kBuiltin[i].code) != i) return false;
  return true;
}
static_assert(rows_in_order(), "rows in Opcode order");

/// Rows added by dialects at run time, and the name index over every row.
struct Registry {
  std::mutex mu;
  std::deque<OpDef> extra;  // deque: rows never move, so pointers to them stay valid
  std::deque<std::string> names;
  std::unordered_map<std::string_view, const OpDef*> by_name;

  Registry() {
    for (const OpDef& d : kBuiltin) by_name.emplace(d.name, &d);
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const OpDef* find_op(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

const OpDef& op_def(Opcode code) {
  auto i = static_cast<size_t>(code);
  if (i < std::size(kBuiltin)) return kBuiltin[i];
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  assert(i - std::size(kBuiltin) < r.extra.size() && "an opcode from register_op");
  return r.extra.at(i - std::size(kBuiltin));
}

std::span<const OpDef> builtin_ops() { return kBuiltin; }

const OpDef& register_op(OpDef def) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  if (r.by_name.count(def.name)) throw Error(fmt::format("op '{}' is already registered", def.name));
  if (!def.verify) throw Error(fmt::format("op '{}' needs a verifier", def.name));
  def.name = r.names.emplace_back(def.name);
  def.code = static_cast<Opcode>(kNumBuiltinOps + r.extra.size());
  const OpDef& row = r.extra.emplace_back(def);
  r.by_name.emplace(row.name, &row);
  return row;
}

WhileProbe while_probe(const Op& op) {
  auto first_step = [&op](size_t region) -> const Op* {
    if (op.regions.size() <= region || op.regions[region]->blocks.empty()) return nullptr;
    for (const auto& o : op.regions[region]->blocks[0]->ops)
      if (!is_terminator(o->def->syntax)) return o.get();
    return nullptr;
  };
  if (const Op* before = first_step(0)) return {before, true};
  return {first_step(1), false};
}

bool is_terminator(Syntax s) {
  switch (s) {
    case Syntax::Return:
    case Syntax::Condition:
    case Syntax::Branch:
    case Syntax::CondBranch: return true;
    case Syntax::SameType:
    case Syntax::Compare:
    case Syntax::Select:
    case Syntax::Cast:
    case Syntax::Arrow:
    case Syntax::FirstType:
    case Syntax::Functional:
    case Syntax::Load:
    case Syntax::NoResult:
    case Syntax::Unsplat:
    case Syntax::Dot:
    case Syntax::DotScaled:
    case Syntax::StrippedPtr:
    case Syntax::MakeDesc:
    case Syntax::Print:
    case Syntax::Assert:
    case Syntax::Call:
    case Syntax::For:
    case Syntax::If:
    case Syntax::While:
    case Syntax::Barrier:
    case Syntax::GenericOnly: return false;
  }
  return false;
}

namespace {

/// tt.load's optional mask and other: named by operandSegmentSizes = [1, m, o] when the generic form
/// gives it (it may give other without mask), else by position.
Role load_role(const Op& op, size_t k) {
  if (k == 0) return Role::ptr;
  const Attr* seg = op.attr("operandSegmentSizes");
  if (seg && seg->ints.size() == 3) {
    if (seg->ints[1] && k == 1) return Role::mask;
    return Role::other;
  }
  return k == 1 ? Role::mask : Role::other;
}

/// Role `k` of a fixed layout `first...`, then `rest` for every further operand.
Role layout(size_t k, std::initializer_list<Role> first, Role rest = Role::value) {
  return k < first.size() ? *(first.begin() + k) : rest;
}

}  // namespace

Role operand_role(const Op& op, size_t k) {
  const size_t n = op.operands.size();
  switch (op.def->roles) {
    case Roles::none: return Role::value;
    case Roles::load: return load_role(op, k);
    case Roles::store:
    case Roles::rmw: return layout(k, {Role::ptr, Role::value, Role::mask});
    case Roles::cas: return layout(k, {Role::ptr, Role::cmp, Role::value});
    case Roles::atomic_load: return layout(k, {Role::ptr, Role::mask});
    case Roles::poll: return layout(k, {Role::ptr, Role::cmp, Role::timeout});
    case Roles::select:  // cond, value, value
    case Roles::cond: return layout(k, {Role::cond});
    case Roles::for_loop: return layout(k, {Role::bound, Role::bound, Role::bound}, Role::init);
    case Roles::addptr: return layout(k, {Role::ptr, Role::offset});
    case Roles::desc_load: return layout(k, {Role::desc}, Role::offset);
    case Roles::desc_store: return k + 1 == n ? Role::value : layout(k, {Role::desc}, Role::offset);
    case Roles::desc_gather: return layout(k, {Role::desc}, Role::offset);
    case Roles::desc_scatter: return layout(k, {Role::desc, Role::offset, Role::offset, Role::value});
    case Roles::base: return layout(k, {Role::base});
    case Roles::advance: return layout(k, {Role::ptr}, Role::offset);
    case Roles::histogram: return layout(k, {Role::value, Role::mask});
    case Roles::gather: return layout(k, {Role::value, Role::index});
    case Roles::dot: return layout(k, {Role::value, Role::value, Role::acc});
  }
  return Role::value;
}

int operand_index(const Op& op, Role r) {
  for (size_t k = 0; k < op.operands.size(); ++k)
    if (operand_role(op, k) == r) return static_cast<int>(k);
  return -1;
}

bool may_wait(const Op& op) {
  const unsigned e = op.def->effects;
  if (e & effect::waits) return true;
  if (e & effect::waits_if_volatile) {
    const Attr* v = op.attr("isVolatile");  // `isVolatile = true`, or a unit / integer flag
    return v && (v->kind == Attr::Kind::Unit || (v->kind == Attr::Kind::Bool && v->b) ||
                 (v->kind == Attr::Kind::Int && v->i != 0));
  }
  return false;
}

std::optional<MemoryOrder> memory_order(const Op& op) {
  if (!(op.def->effects & effect::ordered)) return std::nullopt;
  MemoryOrder m;
  if (const Attr* s = op.attr("sem")) {
    if (s->s == "relaxed")
      m.sem = MemSem::relaxed;
    else if (s->s == "acquire")
      m.sem = MemSem::acquire;
    else if (s->s == "release")
      m.sem = MemSem::release;
  }
  if (const Attr* s = op.attr("scope")) {
    if (s->s == "cta")
      m.scope = MemScope::cta;
    else if (s->s == "sys")
      m.scope = MemScope::sys;
  }
  return m;
}

}  // namespace tilescope::ir
