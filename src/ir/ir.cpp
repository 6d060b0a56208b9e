// Types, interning and small helpers of the IR (see include/tilescope/ir/ir.h).
#include "tilescope/ir/ir.h"

#include <fmt/format.h>

#include <mutex>
#include <set>
#include <tuple>

#include "tilescope/ir/diag.h"

namespace tilescope::ir {

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

static std::string elem_str(const Type& t) {
  if (t.elem == Elem::ptr) {
    std::string s = "!tt.ptr<" + (t.pointee ? t.pointee->str() : std::string("?"));
    if (t.addr_space != 1) s += fmt::format(", {}", t.addr_space);
    return s + ">";
  }
  if (t.elem == Elem::tensordesc) return "!tt.tensordesc<" + (t.pointee ? t.pointee->str() : "?") + ">";
  return elem_name(t.elem);
}

std::string Type::str() const {
  if (!is_tensor) return elem_str(*this);
  std::string s = "tensor<";
  for (int64_t d : shape) s += fmt::format("{}x", d);
  Type e = *this;
  e.is_tensor = false;
  e.shape.clear();
  return s + elem_str(e) + ">";
}

std::string PyLoc::str() const {
  if (!known()) return "?";
  return fmt::format("{}:{}:{}", file, line, col);
}

struct Module::Types {
  struct Key {
    Elem elem;
    std::vector<int64_t> shape;
    bool is_tensor;
    const Type* pointee;
    int addr_space;
    bool operator<(const Key& o) const {
      return std::tie(elem, shape, is_tensor, pointee, addr_space) <
             std::tie(o.elem, o.shape, o.is_tensor, o.pointee, o.addr_space);
    }
  };
  std::map<Key, std::unique_ptr<Type>> all;
};

struct Module::Derived {
  std::mutex mu;
  std::vector<std::pair<const std::type_info*, std::shared_ptr<const void>>> all;
};

Module::Module() : types_(std::make_unique<Types>()), derived_(std::make_unique<Derived>()) {}
Module::~Module() = default;
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;

std::shared_ptr<const void> Module::find_derived(const std::type_info& t) const {
  std::lock_guard<std::mutex> g(derived_->mu);
  for (const auto& [type, p] : derived_->all)
    if (*type == t) return p;
  return nullptr;
}

std::shared_ptr<const void> Module::keep_derived(const std::type_info& t,
                                                 std::shared_ptr<const void> p) const {
  std::lock_guard<std::mutex> g(derived_->mu);
  for (const auto& [type, q] : derived_->all)
    if (*type == t) return q;  // another thread made it first
  derived_->all.emplace_back(&t, p);
  return p;
}

const Type* Module::intern(const Type& t) {
  Types::Key k{t.elem, t.shape, t.is_tensor, t.pointee, t.addr_space};
  auto it = types_->all.find(k);
  if (it != types_->all.end()) return it->second.get();
  auto p = std::make_unique<Type>(t);
  const Type* r = p.get();
  types_->all.emplace(std::move(k), std::move(p));
  return r;
}

const Type* Module::scalar(Elem e) { return intern(Type{e, {}, false, nullptr, 1}); }

const Type* Module::tensor(Elem e, std::vector<int64_t> shape, const Type* pointee) {
  return intern(Type{e, std::move(shape), true, pointee, 1});
}

const Type* Module::ptr(const Type* pointee, int addr_space) {
  return intern(Type{Elem::ptr, {}, false, pointee, addr_space});
}

const Type* Module::desc(const Type* block) { return intern(Type{Elem::tensordesc, {}, false, block, 1}); }

const Type* Module::element_of(const Type* t) {
  Type e = *t;
  e.is_tensor = false;
  e.shape.clear();
  return intern(e);
}

const Type* Module::with_elem(const Type* t, Elem el) {
  Type e = *t;
  e.elem = el;
  e.pointee = nullptr;
  e.addr_space = 1;
  return intern(e);
}

void FunctionList::push_back(std::unique_ptr<Function> f) {
  Function* raw = f.get();
  fns_.push_back(std::move(f));
  try {
    by_name_.emplace(raw->name, raw);  // keeps the first of a name
  } catch (...) {
    fns_.pop_back();  // never a function the index does not know
    throw;
  }
}

Function* FunctionList::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Function* Module::entry() const {
  for (auto& f : functions)
    if (f->is_public) return f.get();
  return nullptr;
}

}  // namespace tilescope::ir

namespace tilescope {

const char* severity_name(Diagnostic::Severity s) {
  switch (s) {
    case Diagnostic::Severity::error: return "error";
    case Diagnostic::Severity::warning: return "warning";
    case Diagnostic::Severity::note: return "note";
  }
  return "error";
}

std::string Diagnostic::str() const {
  std::string s;
  if (!ttir_file.empty())
    s = ttir.line > 0 ? fmt::format("{}:{}:{}: ", ttir_file, ttir.line, ttir.col) : ttir_file + ": ";
  s += message;
  if (python.known()) s += fmt::format(" ({})", python.str());
  return s;
}

Error::Error(const std::string& message) : std::runtime_error(message) { d_.message = message; }

Error::Error(Diagnostic d) : std::runtime_error(d.str()), d_(std::move(d)) {}

Diagnostic diagnostic_at(const ir::Module& m, const ir::Op& op, const std::string& msg) {
  Diagnostic d;
  d.message = msg;
  d.ttir_file = m.filename;
  d.ttir = op.pos;
  d.python = op.loc;
  d.op = op.name;
  return d;
}

std::string locate(const ir::Module& m, const ir::Op& op, const std::string& msg) {
  return diagnostic_at(m, op, msg).str();
}

void fail_at(const ir::Module& m, const ir::Op& op, const std::string& msg) {
  throw Error(diagnostic_at(m, op, msg));
}

void fail_at(const std::string& ttir_file, ir::TextPos pos, const std::string& msg) {
  Diagnostic d;
  d.message = msg;
  d.ttir_file = ttir_file;
  d.ttir = pos;
  throw Error(std::move(d));
}

}  // namespace tilescope
