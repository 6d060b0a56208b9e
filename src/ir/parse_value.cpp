// SSA values (see parse_value.h).
#include "parse_value.h"

#include <fmt/format.h>

#include <cassert>

#include "parser.h"

namespace tilescope::ir {

namespace {

std::string spelled(const Ref& r) {
  return fmt::format("%{}{}", r.name, r.idx >= 0 ? fmt::format("#{}", r.idx) : "");
}

}  // namespace

std::string value_name(Parser& p, const char* what, const char* name_what) {
  if (!p.at(Tok::ValueId)) p.expected(what);
  Token v = p.take();
  if (v.id().empty()) p.expected(name_what);
  return std::string(v.id());
}

Ref value_ref(Parser& p) {
  Ref r;
  r.off = p.tok().off;
  r.name = value_name(p, "an SSA value '%name'", "a value name");
  if (p.at(Tok::HashId) && p.adjacent()) {
    // `%q#1`: the result number is the integer spelled right after the '#'.
    p.resume_at(p.tok().off + 1);
    if (!p.adjacent() || !starts_with_digit(p.tok())) p.expected("a result number after '#'");
    r.idx = p.small_int("result number", 0, 1 << 20);
  }
  return r;
}

Value* lookup(const Parser& p, const Ref& r) {
  for (auto it = p.scopes.rbegin(); it != p.scopes.rend(); ++it) {
    auto f = it->find(r.name);
    if (f == it->end()) continue;
    assert(!f->second.empty());
    int idx = r.idx < 0 ? 0 : r.idx;
    if (idx >= static_cast<int>(f->second.size()))
      p.fail(r.off, fmt::format("'%{}' has {} results, no result #{}", r.name, f->second.size(), idx));
    return f->second[idx];
  }
  p.fail(r.off, fmt::format("use of undefined value '{}'", spelled(r)));
}

Value* use(const Parser& p, const Ref& r, const Type* want) {
  Value* v = lookup(p, r);
  if (want && v->type != want)
    p.fail(r.off,
           fmt::format("'{}' has type {}, but the op expects {}", spelled(r), v->type->str(), want->str()));
  return v;
}

void define(Parser& p, const std::string& name, std::vector<Value*> vals, size_t off) {
  assert(!p.scopes.empty());
  for (auto& sc : p.scopes)
    if (sc.count(name)) p.fail(off, fmt::format("redefinition of '%{}'", name));
  p.scopes.back().emplace(name, std::move(vals));
}

std::unique_ptr<Value> new_value(Parser& p, const Type* t, std::string name) {
  assert(p.fn);
  auto v = std::make_unique<Value>();
  v->type = t;
  v->name = std::move(name);
  v->id = p.fn->num_values++;
  return v;
}

}  // namespace tilescope::ir
