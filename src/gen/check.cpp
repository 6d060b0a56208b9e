// Pass 2 of gen::parse: the semantics of a structurally valid document.
//
// Names: every name (argument, op result, loop variable, carried value) is defined once in the whole
// kernel and used only where it is visible: after its definition, in its own list of ops or in a region
// nested below it (a region's values leave it only through its yield). Types: each op's rules are TTIR's
// (reference §1-§2): elementwise operands have equal types (TTIR has no implicit broadcast: splat and
// broadcast are explicit), loads and stores go through pointers derived from pointer arguments, carried
// values keep their type, dot shapes agree; block shapes are powers of two (Triton's validate_block_shape:
// every dim, and at most 2^20 elements). Each problem names the op's operand or field by JSON pointer.
// After a problem the op's results are "bad": later uses of them report nothing more (no cascades).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "passes.h"
#include "table.h"

namespace tilescope::gen::detail {
namespace {

using nlohmann::json;

struct Val {
  Type type;
  std::string def;   // JSON pointer of the definition
  int scope = 0;     // the scope (list of ops) it was defined in
  bool bad = false;  // its op had a problem: uses are not checked again
  int arg = -1;      // an argument's index
  bool is_constexpr = false;
  int64_t cval = 0;
  std::set<int> prov;  // pointers: the pointer arguments it derives from
};

bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", std::to_string(s[i]));
  return out + "]";
}

bool is_int_dtype(Dtype d) { return !is_float(d); }

class Checker {
 public:
  Checker(const json& doc, Ast& ast, Problems& p) : doc_(doc), ast_(ast), p_(p) {}

  void run() {
    predefine();
    for (size_t i = 0; i < ast_.regions.size(); ++i) {
      const Region& r = ast_.regions[i];
      for (size_t j = 0; j < i; ++j)
        if (ast_.regions[j].name == r.name)
          p_.add(child(r.pointer, "name"), fmt::format("a second region named '{}'", r.name),
                 "a name no other region has",
                 fmt::format("'{}' (also {})", r.name, ast_.regions[j].pointer));
    }
    region_users_.assign(ast_.regions.size(), "");
    scopes_.push_back(next_scope_++);
    for (size_t i = 0; i < ast_.args.size(); ++i) {
      const Arg& a = ast_.args[i];
      Val v;
      v.arg = static_cast<int>(i);
      v.def = child(child("/args", i), "name");
      if (a.kind == Arg::Kind::pointer) {
        v.type = {true, a.dtype, {}};
        v.prov = {static_cast<int>(i)};
      } else if (a.kind == Arg::Kind::scalar) {
        v.type = {false, a.dtype, {}};
      } else {
        v.type = {false, Dtype::i32, {}};
        v.is_constexpr = true;
        v.cval = a.value;
      }
      define(a.name, v.def, v);
    }
    ops(ast_.ops);
    for (size_t i = 0; i < ast_.regions.size(); ++i)
      if (region_users_[i].empty() && !p_.full())
        p_.add(child(ast_.regions[i].pointer, "name"),
               fmt::format("region '{}' is not the body of any for or if", ast_.regions[i].name),
               "a region that a for's body, an if's then or else names", "an unused region");
    if (!effects_ && p_.empty())
      p_.add("/ops", "the kernel writes nothing: it needs a store (or an atomic) of its output",
             "a store or atomic op", "none");
  }

 private:
  // ---------------------------------------------------------------------------------------------------
  // Names

  // Every definition in the document, so a use before the definition can say where it is.
  void predefine() {
    for (size_t i = 0; i < ast_.args.size(); ++i)
      first_def_.emplace(ast_.args[i].name, child(child("/args", i), "name"));
    auto list = [&](const std::vector<Op>& ops) {
      for (const Op& o : ops) {
        const char* key = spec(o.kind).results == Results::many ? "results" : "result";
        for (size_t r = 0; r < o.results.size(); ++r)
          first_def_.emplace(o.results[r], spec(o.kind).results == Results::many
                                               ? child(child(o.pointer, key), r)
                                               : child(o.pointer, key));
        if (o.kind == OpKind::for_) {
          first_def_.emplace(o.var, child(o.pointer, "var"));
          for (size_t c = 0; c < o.carried.size(); ++c)
            first_def_.emplace(o.carried[c], child(child(o.pointer, "carried"), c));
        }
      }
    };
    list(ast_.ops);
    for (const auto& r : ast_.regions) list(r.ops);
  }

  void define(const std::string& name, const std::string& ptr, Val v) {
    if (name.empty()) return;
    auto it = vals_.find(name);
    if (it != vals_.end()) {
      p_.add(ptr,
             fmt::format("'{}' is already defined at {}: every name is defined once", name, it->second.def),
             "a new name", "'" + name + "'");
      return;
    }
    v.def = ptr;
    v.scope = scopes_.back();
    vals_.emplace(name, std::move(v));
  }

  bool visible(const Val& v) const {
    return std::find(scopes_.begin(), scopes_.end(), v.scope) != scopes_.end();
  }

  // The value `name` used at `ptr` as `what`; null after reporting why it cannot be used (or when it is
  // bad: then nothing is reported again).
  const Val* use(const std::string& name, const std::string& ptr, const std::string& what) {
    auto it = vals_.find(name);
    if (it != vals_.end() && visible(it->second)) return it->second.bad ? nullptr : &it->second;
    if (it != vals_.end()) {
      p_.add(
          ptr,
          fmt::format("{} '{}' is defined at {}, inside a region, and is not visible here (a region's values "
                      "leave it only through its yield)",
                      what, name, it->second.def),
          "a value defined before this op in this list or an enclosing one", "'" + name + "'");
      return nullptr;
    }
    auto def = first_def_.find(name);
    if (def != first_def_.end()) {
      p_.add(ptr, fmt::format("{} '{}' is used before its definition at {}", what, name, def->second),
             "a value defined before this op", "'" + name + "'");
      return nullptr;
    }
    std::string best;
    size_t best_d = 3;
    for (const auto& [n, v] : vals_)
      if (visible(v))
        if (size_t d = edit_distance(n, name); d < best_d) {
          best_d = d;
          best = n;
        }
    p_.add(ptr,
           fmt::format("{} '{}' is not defined{}", what, name,
                       best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best)),
           "a defined value", "'" + name + "'");
    return nullptr;
  }

  // ---------------------------------------------------------------------------------------------------
  // Dims (a shape's entries, make_range's start and end): integers or constexpr arguments.

  // The dim's value into `out`; `name` (when given) receives the constexpr's name, "" for an integer.
  bool dim(const json& j, const std::string& ptr, bool power_of_two, int64_t& out,
           std::string* name = nullptr) {
    std::string label;
    if (name) name->clear();
    if (j.is_string()) {
      const std::string n = j.get<std::string>();
      auto it = vals_.find(n);
      if (it == vals_.end() || !it->second.is_constexpr) {
        std::string what = it == vals_.end()     ? "is not defined"
                           : it->second.arg >= 0 ? "is a runtime argument, not a constexpr"
                                                 : "is a runtime value";
        p_.add(ptr,
               fmt::format(
                   "'{}' {}: shapes are fixed when the kernel is compiled (use an integer or a constexpr "
                   "argument)",
                   n, what),
               "an integer or the name of a constexpr argument", "'" + n + "'");
        return false;
      }
      out = it->second.cval;
      label = fmt::format("{} = {}", n, out);
      if (name) *name = n;
    } else {
      as_int(j, out);
      label = std::to_string(out);
    }
    if (power_of_two && !pow2(out)) {
      if (j.is_string()) return bad_constexpr(j.get<std::string>(), ptr);
      p_.add(ptr, "block dims must be powers of two (Triton's rule for every tensor dim)", "a power of two",
             label);
      return false;
    }
    return true;
  }

  // Constexpr `name`, used as a block dim at `ptr`, is not a power of two: one problem at its value (where
  // it is fixed), however many ops use it. Returns false.
  bool bad_constexpr(const std::string& name, const std::string& ptr) {
    if (!bad_constexprs_.insert(name).second) return false;
    const Val& v = vals_.at(name);
    p_.add(child(child("/args", static_cast<size_t>(v.arg)), "value"),
           fmt::format("constexpr '{}' is a block dim (first at {}), and block dims must be powers of two "
                       "(Triton's rule for every tensor dim)",
                       name, ptr),
           "a power of two", std::to_string(v.cval));
    return false;
  }

  // The op's "shape" field into o.shape (the dims' values) and o.shape_names (the constexprs they name).
  bool shape_field(Op& o) {
    const std::string ptr = child(o.pointer, "shape");
    const json& j = doc_.at(json::json_pointer(ptr));
    std::vector<int64_t>& out = o.shape;
    out.clear();
    o.shape_names.clear();
    bool ok = true;
    int64_t numel = 1;
    for (size_t i = 0; i < j.size(); ++i) {
      int64_t d = 1;
      std::string name;
      ok = dim(j[i], child(ptr, i), true, d, &name) && ok;
      out.push_back(d);
      o.shape_names.push_back(name);
      numel = std::min<int64_t>(numel * d, kMaxNumel * 2);
    }
    if (ok && numel > kMaxNumel) {
      p_.add(ptr, "too many elements in one tensor", fmt::format("at most {} elements", kMaxNumel),
             fmt::format("{} = {} elements", shape_str(out),
                         numel > kMaxNumel * 2 - 1 ? "more than 2^21" : std::to_string(numel)));
      ok = false;
    }
    return ok;
  }

  // ---------------------------------------------------------------------------------------------------
  // Type checks

  std::string operand_ptr(const Op& o, size_t i) const { return child(child(o.pointer, "operands"), i); }
  std::string role(const Op& o, size_t i) const {
    return fmt::format("operand {} ({}) of {}", i, spec(o.kind).roles[i], spec(o.kind).name);
  }

  bool fail(const Op& o, size_t i, const std::string& msg, const std::string& expected, const Type& found) {
    p_.add(operand_ptr(o, i), fmt::format("{}: {}", role(o, i), msg), expected, found.str());
    return false;
  }

  // Operand i must have exactly type `want` (the type of another operand, or what the op needs).
  bool same(const Op& o, size_t i, const Val& v, const Type& want, const std::string& why) {
    if (v.type == want) return true;
    std::string hint;
    if (!v.type.ptr && !want.ptr && v.type.elem == want.elem && v.type.shape != want.shape) {
      hint = v.type.shape.empty()
                 ? " (splat it to the shape first: TTIR has no implicit broadcast)"
                 : " (TTIR has no implicit broadcast: expand_dims / broadcast / splat it first)";
    } else if (v.type.shape == want.shape && v.type.ptr == want.ptr && v.type.elem != want.elem) {
      hint = " (cast it first)";
    }
    return fail(o, i, why + hint, want.str(), v.type);
  }

  bool not_ptr(const Op& o, size_t i, const Val& v) {
    if (!v.type.ptr) return true;
    return fail(o, i, "pointers take part only in addptr, load, store, atomics, splat, broadcast, where",
                "a number", v.type);
  }

  bool dtype_in(const Op& o, size_t i, const Val& v, std::initializer_list<Dtype> ok,
                const std::string& what) {
    if (!v.type.ptr)
      for (Dtype d : ok)
        if (v.type.elem == d) return true;
    std::string list;
    for (Dtype d : ok) list += fmt::format("{}{}", list.empty() ? "" : ", ", std::string(dtype_name(d)));
    return fail(o, i, what, list + " elements", v.type);
  }

  bool mask(const Op& o, size_t i, const Val& v, const std::vector<int64_t>& shape) {
    Type want{false, Dtype::i1, shape};
    return same(o, i, v, want, "a mask is i1 with the pointer's shape");
  }

  bool pointer(const Op& o, size_t i, const Val& v) {
    if (v.type.ptr && !v.prov.empty()) return true;
    return fail(
        o, i,
        "memory is reached only through pointers derived from pointer arguments (splat / addptr of one)",
        "a pointer (e.g. addptr of a pointer argument and offsets)", v.type);
  }

  static const std::initializer_list<Dtype>& floats32() {
    static const std::initializer_list<Dtype> f = {Dtype::f32, Dtype::f64};
    return f;
  }
  static const std::initializer_list<Dtype>& numbers() {
    static const std::initializer_list<Dtype> n = {Dtype::i8,  Dtype::i16,  Dtype::i32, Dtype::i64,
                                                   Dtype::f16, Dtype::bf16, Dtype::f32, Dtype::f64};
    return n;
  }
  static const std::initializer_list<Dtype>& ints() {
    static const std::initializer_list<Dtype> n = {Dtype::i1, Dtype::i8, Dtype::i16, Dtype::i32, Dtype::i64};
    return n;
  }

  // Check op `o` whose operands are `in` (all resolved, none bad); its result types into `out`.
  bool check(Op& o, const std::vector<const Val*>& in, std::vector<Type>& out, std::set<int>& prov) {
    const OpSpec& s = spec(o.kind);
    auto a = [&](size_t i) -> const Val& { return *in[i]; };
    switch (o.kind) {
      case OpKind::program_id:
      case OpKind::num_programs: out = {{false, Dtype::i32, {}}}; return true;
      case OpKind::constant: {
        o.shape.clear();
        o.shape_names.clear();
        if (doc_.at(json::json_pointer(o.pointer)).contains("shape") && !shape_field(o)) return false;
        const std::vector<int64_t>& shape = o.shape;
        const std::string vptr = child(o.pointer, "value");
        const Literal& v = o.value;
        if (is_int_dtype(o.dtype)) {
          const int bits = dtype_bits(o.dtype);
          const int64_t lo = bits == 1 ? 0 : bits == 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
          const int64_t hi = bits == 1 ? 1 : bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
          if (!v.is_int || v.i < lo || v.i > hi) {
            p_.add(vptr, fmt::format("the value does not fit {}", dtype_name(o.dtype)),
                   fmt::format("an integer in {}..{}", lo, hi), describe(doc_.at(json::json_pointer(vptr))));
            return false;
          }
        } else if (std::isfinite(v.f)) {
          const double limit = o.dtype == Dtype::f16                             ? 65504.0
                               : o.dtype == Dtype::bf16 || o.dtype == Dtype::f32 ? 3.4028234663852886e38
                                                                                 : 1.7976931348623157e308;
          if (std::fabs(v.f) > limit * (1 + 1e-3)) {
            p_.add(vptr,
                   fmt::format("the value is out of {}'s range (write \"inf\" for infinity)",
                               dtype_name(o.dtype)),
                   fmt::format("a number of magnitude at most {:g}", limit),
                   describe(doc_.at(json::json_pointer(vptr))));
            return false;
          }
        }
        out = {{false, o.dtype, shape}};
        return true;
      }
      case OpKind::make_range: {
        int64_t lo = 0, hi = 0;
        // Both dims are checked (each may have its own problem) before either result is used.
        const bool ok_start = dim(doc_.at(json::json_pointer(child(o.pointer, "start"))),
                                  child(o.pointer, "start"), false, lo, &o.start_name);
        const bool ok_end = dim(doc_.at(json::json_pointer(child(o.pointer, "end"))), child(o.pointer, "end"),
                                false, hi, &o.end_name);
        if (!ok_start || !ok_end) return false;
        const json& end = doc_.at(json::json_pointer(child(o.pointer, "end")));
        if (lo == 0 && end.is_string() && hi > 0 && !pow2(hi))
          return bad_constexpr(end.get<std::string>(), child(o.pointer, "end"));
        if (hi <= lo || !pow2(hi - lo) || hi - lo > kMaxNumel) {
          p_.add(child(o.pointer, "end"),
                 "a range's length end - start must be a power of two (at most 2^20)",
                 "a power-of-two length", fmt::format("{} - {} = {}", hi, lo, hi - lo));
          return false;
        }
        o.start = lo;
        o.end = hi;
        out = {{false, Dtype::i32, {hi - lo}}};
        return true;
      }
      case OpKind::splat: {
        if (!shape_field(o)) return false;
        const std::vector<int64_t>& shape = o.shape;
        if (a(0).type.is_tensor())
          return fail(o, 0, "splat takes a scalar (use broadcast to grow a tensor)", "a scalar or pointer",
                      a(0).type);
        out = {{a(0).type.ptr, a(0).type.elem, shape}};
        prov = a(0).prov;
        return true;
      }
      case OpKind::broadcast: {
        if (!shape_field(o)) return false;
        const std::vector<int64_t>& shape = o.shape;
        const auto& src = a(0).type.shape;
        if (!a(0).type.is_tensor())
          return fail(o, 0, "broadcast takes a tensor (use splat for a scalar)", "a tensor", a(0).type);
        bool ok = src.size() == shape.size();
        for (size_t d = 0; ok && d < src.size(); ++d) ok = src[d] == shape[d] || src[d] == 1;
        if (!ok) {
          p_.add(child(o.pointer, "shape"),
                 "broadcast keeps the rank and changes only size-1 dims (expand_dims first to add a dim)",
                 fmt::format("a shape that {} broadcasts to", shape_str(src)), shape_str(shape));
          return false;
        }
        out = {{a(0).type.ptr, a(0).type.elem, shape}};
        prov = a(0).prov;
        return true;
      }
      case OpKind::expand_dims: {
        const auto& src = a(0).type.shape;
        if (!a(0).type.is_tensor()) return fail(o, 0, "expand_dims takes a tensor", "a tensor", a(0).type);
        if (o.axis > static_cast<int64_t>(src.size()) || src.size() >= static_cast<size_t>(kMaxDims)) {
          p_.add(child(o.pointer, "axis"), "the new dim must go at 0..rank, and the result fit kMaxDims dims",
                 fmt::format("an axis in 0..{} (rank {} now, at most {})", src.size(), src.size(), kMaxDims),
                 std::to_string(o.axis));
          return false;
        }
        std::vector<int64_t> shape = src;
        shape.insert(shape.begin() + o.axis, 1);
        out = {{a(0).type.ptr, a(0).type.elem, shape}};
        prov = a(0).prov;
        return true;
      }
      case OpKind::reshape: {
        if (!shape_field(o)) return false;
        const std::vector<int64_t>& shape = o.shape;
        if (!a(0).type.is_tensor()) return fail(o, 0, "reshape takes a tensor", "a tensor", a(0).type);
        int64_t n0 = 1, n1 = 1;
        for (int64_t d : a(0).type.shape) n0 *= d;
        for (int64_t d : shape) n1 *= d;
        if (n0 != n1) {
          p_.add(child(o.pointer, "shape"), "reshape keeps the number of elements",
                 fmt::format("a shape of {} elements (x is {})", n0, shape_str(a(0).type.shape)),
                 fmt::format("{} ({} elements)", shape_str(shape), n1));
          return false;
        }
        out = {{a(0).type.ptr, a(0).type.elem, shape}};
        prov = a(0).prov;
        return true;
      }
      case OpKind::trans: {
        const auto& src = a(0).type.shape;
        std::vector<int64_t> sorted = o.order;
        std::sort(sorted.begin(), sorted.end());
        bool ok = src.size() >= 2 && o.order.size() == src.size();
        for (size_t d = 0; ok && d < sorted.size(); ++d) ok = sorted[d] == static_cast<int64_t>(d);
        if (!ok) {
          if (src.size() < 2)
            return fail(o, 0, "trans takes a tensor of rank 2 or more", "a 2-D or higher tensor", a(0).type);
          p_.add(child(o.pointer, "order"), "order must be a permutation of x's dims",
                 fmt::format("a permutation of 0..{}", src.size() - 1),
                 describe(doc_.at(json::json_pointer(child(o.pointer, "order")))));
          return false;
        }
        std::vector<int64_t> shape;
        for (int64_t d : o.order) shape.push_back(src[d]);
        out = {{a(0).type.ptr, a(0).type.elem, shape}};
        prov = a(0).prov;
        return true;
      }
      case OpKind::add:
      case OpKind::sub:
      case OpKind::mul:
      case OpKind::div:
      case OpKind::rem:
      case OpKind::min:
      case OpKind::max: {
        if (a(0).type.ptr)
          return fail(o, 0, "pointer arithmetic is addptr(ptr, offset)", "a number", a(0).type);
        if (!dtype_in(o, 0, a(0), numbers(), "i1 values are masks: cast to i32 for arithmetic")) return false;
        // Triton's NVIDIA backend cannot lower an f16 / bf16 arith.divf (measured with Triton 3.6: the
        // ConvertTritonGPUToLLVM pass fails); Triton's own `/` divides in f32.
        if (o.kind == OpKind::div && (a(0).type.elem == Dtype::f16 || a(0).type.elem == Dtype::bf16))
          return fail(o, 0, "div of f16 / bf16 does not compile for a GPU: cast to f32, divide, cast back",
                      "an integer, f32 or f64 value", a(0).type);
        if (!not_ptr(o, 1, a(1)) || !same(o, 1, a(1), a(0).type, "operands must have equal types"))
          return false;
        out = {a(0).type};
        return true;
      }
      case OpKind::and_:
      case OpKind::or_:
      case OpKind::xor_:
      case OpKind::shl:
      case OpKind::shr: {
        const bool shift = o.kind == OpKind::shl || o.kind == OpKind::shr;
        if (!dtype_in(
                o, 0, a(0),
                shift ? std::initializer_list<Dtype>{Dtype::i8, Dtype::i16, Dtype::i32, Dtype::i64} : ints(),
                shift ? "shifts take integers" : "bitwise ops take integers or i1 masks"))
          return false;
        if (!same(o, 1, a(1), a(0).type, "operands must have equal types")) return false;
        out = {a(0).type};
        return true;
      }
      case OpKind::neg:
      case OpKind::abs:
        if (!dtype_in(o, 0, a(0), numbers(), fmt::format("{} takes numbers", s.name))) return false;
        out = {a(0).type};
        return true;
      case OpKind::exp:
      case OpKind::exp2:
      case OpKind::log:
      case OpKind::log2:
      case OpKind::sqrt:
      case OpKind::rsqrt:
      case OpKind::sin:
      case OpKind::cos:
      case OpKind::floor:
      case OpKind::ceil:
      case OpKind::erf:
      case OpKind::tanh:
        if (!dtype_in(o, 0, a(0), floats32(),
                      fmt::format("{} takes f32 or f64 (cast f16 / bf16 to f32 first)", s.name)))
          return false;
        out = {a(0).type};
        return true;
      case OpKind::fma:
        if (!dtype_in(o, 0, a(0), floats32(), "fma takes f32 or f64")) return false;
        if (!same(o, 1, a(1), a(0).type, "operands must have equal types") ||
            !same(o, 2, a(2), a(0).type, "operands must have equal types"))
          return false;
        out = {a(0).type};
        return true;
      case OpKind::eq:
      case OpKind::ne:
      case OpKind::lt:
      case OpKind::le:
      case OpKind::gt:
      case OpKind::ge:
        if (!not_ptr(o, 0, a(0)) || !not_ptr(o, 1, a(1)) ||
            !same(o, 1, a(1), a(0).type, "operands must have equal types"))
          return false;
        out = {{false, Dtype::i1, a(0).type.shape}};
        return true;
      case OpKind::where:
        if (!same(o, 0, a(0), {false, Dtype::i1, a(1).type.shape},
                  "the condition is i1 with the values' shape") ||
            !same(o, 2, a(2), a(1).type, "both values must have equal types"))
          return false;
        out = {a(1).type};
        prov = a(1).prov;
        prov.insert(a(2).prov.begin(), a(2).prov.end());
        return true;
      case OpKind::cast:
        if (!not_ptr(o, 0, a(0))) return false;
        out = {{false, o.dtype, a(0).type.shape}};
        return true;
      case OpKind::addptr:
        if (!a(0).type.ptr) return fail(o, 0, "addptr's first operand is a pointer", "a pointer", a(0).type);
        if (!dtype_in(o, 1, a(1), {Dtype::i32, Dtype::i64}, "offsets are i32 or i64 (in elements)"))
          return false;
        if (a(1).type.shape != a(0).type.shape)
          return fail(o, 1, "the offset must have the pointer's shape (splat the pointer, or broadcast)",
                      Type{false, a(1).type.elem, a(0).type.shape}.str(), a(1).type);
        out = {a(0).type};
        prov = a(0).prov;
        return true;
      case OpKind::load: {
        if (!pointer(o, 0, a(0))) return false;
        const Type value{false, a(0).type.elem, a(0).type.shape};
        if (in.size() > 1 && !mask(o, 1, a(1), a(0).type.shape)) return false;
        if (in.size() > 2 && !same(o, 2, a(2), value, "other has the loaded values' type")) return false;
        out = {value};
        return true;
      }
      case OpKind::store: {
        effects_ = true;
        if (!pointer(o, 0, a(0))) return false;
        const Type value{false, a(0).type.elem, a(0).type.shape};
        if (!same(o, 1, a(1), value, "the value has the pointee type and the pointer's shape")) return false;
        if (in.size() > 2 && !mask(o, 2, a(2), a(0).type.shape)) return false;
        return true;
      }
      case OpKind::atomic_rmw:
      case OpKind::atomic_cas: {
        effects_ = true;
        if (!pointer(o, 0, a(0))) return false;
        const Type value{false, a(0).type.elem, a(0).type.shape};
        const Dtype e = a(0).type.elem;
        bool ok_dtype = false;
        std::string allowed;
        if (o.kind == OpKind::atomic_cas || o.rmw == "xchg") {  // 32- and 64-bit words
          ok_dtype = e == Dtype::i32 || e == Dtype::i64 || e == Dtype::f32 || e == Dtype::f64;
          allowed = "i32, i64, f32, f64";
        } else if (o.rmw == "add") {
          ok_dtype =
              e == Dtype::i32 || e == Dtype::i64 || e == Dtype::f16 || e == Dtype::f32 || e == Dtype::f64;
          allowed = "i32, i64, f16, f32, f64";
        } else {
          ok_dtype = e == Dtype::i32 || e == Dtype::i64;
          allowed = "i32, i64 (Triton emulates float max / min with integer atomics)";
        }
        if (!ok_dtype)
          return fail(o, 0,
                      fmt::format("{} is not a TTIR atomic on {}",
                                  o.kind == OpKind::atomic_cas ? "cas" : o.rmw, dtype_name(e)),
                      "a pointer to " + allowed, a(0).type);
        for (size_t i = 1; i < in.size(); ++i) {
          if (o.kind == OpKind::atomic_rmw && i == 2) {
            if (!mask(o, 2, a(2), a(0).type.shape)) return false;
          } else if (!same(o, i, a(i), value, "the pointee type with the pointer's shape")) {
            return false;
          }
        }
        out = {value};
        return true;
      }
      case OpKind::reduce:
      case OpKind::scan: {
        if (!a(0).type.is_tensor() || a(0).type.ptr)
          return fail(o, 0, fmt::format("{} takes a tensor of numbers", s.name), "a tensor", a(0).type);
        const auto& src = a(0).type.shape;
        if (o.axis >= static_cast<int64_t>(src.size())) {
          p_.add(child(o.pointer, "axis"), "axis out of range",
                 fmt::format("an axis in 0..{}", src.size() - 1), std::to_string(o.axis));
          return false;
        }
        const bool sum = o.combine == "sum" || o.combine == "prod";
        if (!dtype_in(o, 0, a(0),
                      sum ? std::initializer_list<Dtype>{Dtype::i32, Dtype::i64, Dtype::f16, Dtype::bf16,
                                                         Dtype::f32, Dtype::f64}
                          : numbers(),
                      sum ? fmt::format("{} of narrow integers: cast to i32 first", o.combine)
                          : fmt::format("{} takes numbers", o.combine)))
          return false;
        if (o.kind == OpKind::scan) {
          out = {a(0).type};
          return true;
        }
        std::vector<int64_t> shape = src;
        shape.erase(shape.begin() + o.axis);
        const bool arg = o.combine == "argmax" || o.combine == "argmin";
        out = {{false, arg ? Dtype::i32 : a(0).type.elem, shape}};
        return true;
      }
      case OpKind::dot: {
        const Type &ta = a(0).type, &tb = a(1).type, &tc = a(2).type;
        for (size_t i = 0; i < 3; ++i)
          if (a(i).type.shape.size() != 2 || a(i).type.ptr)
            return fail(o, i, "dot takes 2-D tensors", "a 2-D tensor", a(i).type);
        const int64_t M = ta.shape[0], K = ta.shape[1], N = tb.shape[1];
        if (M < 16 || K < 16 || N < 16)
          return fail(o, M < 16 || K < 16 ? 0 : 1, "dot needs M, N and K of at least 16 (Triton's rule)",
                      "dims >= 16", M < 16 || K < 16 ? ta : tb);
        if (!dtype_in(o, 0, a(0), {Dtype::f16, Dtype::bf16, Dtype::f32, Dtype::i8},
                      "dot inputs are f16, bf16, f32 or i8"))
          return false;
        if (!same(o, 1, a(1), {false, ta.elem, {K, tb.shape[1]}}, "b is [K, N] with a's dtype and a's K"))
          return false;
        const Dtype acc = ta.elem == Dtype::i8 ? Dtype::i32 : Dtype::f32;
        const bool ok = tc == Type{false, acc, {M, N}} ||
                        (ta.elem == Dtype::f16 && tc == Type{false, Dtype::f16, {M, N}});
        if (!ok)
          return fail(o, 2, "the accumulator is [M, N] of the dot's result type",
                      Type{false, acc, {M, N}}.str() + (ta.elem == Dtype::f16 ? " (or f16)" : ""), tc);
        out = {tc};
        return true;
      }
      case OpKind::gather: {
        const Type &src = a(0).type, &idx = a(1).type;
        if (!src.is_tensor() || src.ptr)
          return fail(o, 0, "gather takes a tensor of numbers", "a tensor", src);
        if (o.axis >= static_cast<int64_t>(src.shape.size())) {
          p_.add(child(o.pointer, "axis"), "axis out of range",
                 fmt::format("an axis in 0..{}", src.shape.size() - 1), std::to_string(o.axis));
          return false;
        }
        if (!dtype_in(o, 1, a(1), {Dtype::i32, Dtype::i64}, "indices are i32 or i64")) return false;
        bool ok = idx.shape.size() == src.shape.size();
        for (size_t d = 0; ok && d < idx.shape.size(); ++d)
          ok = static_cast<int64_t>(d) == o.axis || idx.shape[d] == src.shape[d];
        if (!ok) {
          std::vector<int64_t> want = src.shape;
          return fail(o, 1, "indices have src's rank and src's dims except along axis",
                      fmt::format("{}[...] with dims {} except dim {}", dtype_name(idx.elem), shape_str(want),
                                  o.axis),
                      idx);
        }
        out = {{false, src.elem, idx.shape}};
        return true;
      }
      case OpKind::for_:
      case OpKind::if_: break;  // control(): never here
    }
    return false;
  }

  // ---------------------------------------------------------------------------------------------------
  // Ops and regions

  void ops(std::vector<Op>& list) {
    for (Op& o : list) {
      if (p_.full()) return;
      op(o);
    }
  }

  void op(Op& o) {
    const OpSpec& s = spec(o.kind);
    if (o.kind == OpKind::for_ || o.kind == OpKind::if_) return control(o);
    std::vector<const Val*> in;
    bool ok = true;
    for (size_t i = 0; i < o.operands.size(); ++i) {
      const Val* v = use(o.operands[i], operand_ptr(o, i), fmt::format("operand {} ({})", i, s.roles[i]));
      in.push_back(v);
      ok = ok && v;
    }
    std::vector<Type> out;
    std::set<int> prov;
    ok = ok && check(o, in, out, prov);
    if (o.kind == OpKind::store || o.kind == OpKind::atomic_rmw || o.kind == OpKind::atomic_cas)
      effects_ = true;
    if (ok) o.result_types = out;
    for (size_t r = 0; r < o.results.size(); ++r) {
      Val v;
      v.bad = !ok;
      if (ok) v.type = out[r];
      v.prov = prov;
      define(o.results[r], child(o.pointer, "result"), v);
    }
  }

  int region(const Op& o, const char* key) {
    const std::string ptr = child(o.pointer, key);
    const json& j = doc_.at(json::json_pointer(o.pointer));
    if (!j.contains(key)) return -1;
    const std::string name = j[key].get<std::string>();
    for (size_t i = 0; i < ast_.regions.size(); ++i) {
      if (ast_.regions[i].name != name) continue;
      if (!region_users_[i].empty()) {
        p_.add(
            ptr,
            fmt::format("region '{}' is already used by {}: each region belongs to one for or if (a region "
                        "cannot contain itself)",
                        name, region_users_[i]),
            "a region no other op uses", "'" + name + "'");
        return -2;
      }
      region_users_[i] = ptr;
      return static_cast<int>(i);
    }
    std::string names;
    for (const auto& r : ast_.regions) names += fmt::format("{}{}", names.empty() ? "" : ", ", r.name);
    p_.add(ptr, fmt::format("there is no region named '{}'", name),
           names.empty() ? "an entry of regions" : "one of " + names, "'" + name + "'");
    return -2;
  }

  // Walk region `r` in a new scope where `args` (name, pointer, value) are defined first; its yields'
  // values into `yields` (null entries for the ones that cannot be used).
  void walk(int r, const std::vector<std::tuple<std::string, std::string, Val>>& args,
            std::vector<const Val*>& yields) {
    if (depth_ + 1 > kMaxDepth) {
      p_.add(ast_.regions[r].pointer, fmt::format("regions nest at most {} deep", kMaxDepth),
             fmt::format("depth <= {}", kMaxDepth), std::to_string(depth_ + 1));
      return;
    }
    ++depth_;
    scopes_.push_back(next_scope_++);
    for (const auto& [n, ptr, v] : args) define(n, ptr, v);
    Region& reg = ast_.regions[r];
    ops(reg.ops);
    for (size_t i = 0; i < reg.yields.size(); ++i)
      yields.push_back(use(reg.yields[i], child(child(reg.pointer, "yield"), i), fmt::format("yield {}", i)));
    scopes_.pop_back();
    --depth_;
  }

  void control(Op& o) {
    std::vector<Type> out;
    bool ok = true;
    if (o.kind == OpKind::for_) {
      // Bounds: named scalars of one integer type (i32 or i64), or integer literals of that type.
      const char* keys[3] = {"lower", "upper", "step"};
      std::optional<Dtype> t;
      for (size_t i = 0; i < 3; ++i) {
        if (o.bounds[i].empty()) continue;
        const Val* v = use(o.bounds[i], child(o.pointer, keys[i]), std::string("bound '") + keys[i] + "'");
        if (!v) {
          ok = false;
          continue;
        }
        if (v->type.ptr || v->type.is_tensor() ||
            (v->type.elem != Dtype::i32 && v->type.elem != Dtype::i64)) {
          p_.add(child(o.pointer, keys[i]), "loop bounds are i32 or i64 scalars", "an i32 or i64 scalar",
                 v->type.str());
          ok = false;
        } else if (t && *t != v->type.elem) {
          p_.add(child(o.pointer, keys[i]), "lower, upper and step have one type",
                 std::string(dtype_name(*t)), v->type.str());
          ok = false;
        } else {
          t = v->type.elem;
        }
      }
      if (o.bound_literals[2].is_int && o.bound_literals[2].i <= 0) {
        p_.add(child(o.pointer, "step"), "the step must be positive", "an integer >= 1",
               std::to_string(o.bound_literals[2].i));
        ok = false;
      }
      const Type iv{false, t.value_or(Dtype::i32), {}};
      // Carried values: init (outside) -> carried (inside) -> yield (inside) -> results (outside).
      std::vector<std::tuple<std::string, std::string, Val>> args;
      Val var;
      var.type = iv;
      args.emplace_back(o.var, child(o.pointer, "var"), var);
      std::vector<const Val*> init;
      for (size_t i = 0; i < o.init.size(); ++i) {
        init.push_back(use(o.init[i], child(child(o.pointer, "init"), i), fmt::format("init {}", i)));
        ok = ok && init.back();
      }
      if (o.carried.size() != o.init.size()) {
        p_.add(child(o.pointer, "carried"), "one carried name per init value",
               fmt::format("{} names", o.init.size()), fmt::format("{}", o.carried.size()));
        ok = false;
      }
      if (!o.results.empty() && o.results.size() != o.init.size()) {
        p_.add(child(o.pointer, "results"), "a for has one result per carried value",
               fmt::format("{} names", o.init.size()), fmt::format("{}", o.results.size()));
        ok = false;
      }
      for (size_t i = 0; i < o.carried.size(); ++i) {
        Val c;
        c.bad = i >= init.size() || !init[i];
        if (!c.bad) {
          c.type = init[i]->type;
          c.prov = init[i]->prov;
        }
        args.emplace_back(o.carried[i], child(child(o.pointer, "carried"), i), c);
      }
      o.body = region(o, "body");
      std::vector<const Val*> yields;
      if (o.body >= 0) {
        walk(o.body, args, yields);
        const Region& reg = ast_.regions[o.body];
        if (yields.size() != o.init.size()) {
          p_.add(child(reg.pointer, "yield"),
                 fmt::format("the body of a for yields the next value of each carried value ({})",
                             o.init.size()),
                 fmt::format("{} names", o.init.size()), fmt::format("{}", yields.size()));
          ok = false;
        }
        for (size_t i = 0; i < yields.size() && i < init.size(); ++i) {
          if (!yields[i] || !init[i]) {
            ok = false;
            continue;
          }
          if (yields[i]->type != init[i]->type) {
            p_.add(child(child(reg.pointer, "yield"), i),
                   fmt::format("yield {} is the next value of carried '{}' and keeps its type", i,
                               i < o.carried.size() ? o.carried[i] : "?"),
                   init[i]->type.str(), yields[i]->type.str());
            ok = false;
          }
        }
      } else {
        ok = false;
      }
      for (const Val* v : init)
        if (v) out.push_back(v->type);
    } else {
      const Val* c = use(o.cond, child(o.pointer, "cond"), "the condition");
      if (c && !(c->type == Type{false, Dtype::i1, {}})) {
        p_.add(child(o.pointer, "cond"),
               "an if's condition is an i1 scalar (a tensor of conditions needs where)", "i1", c->type.str());
        ok = false;
      }
      ok = ok && c;
      o.then_region = region(o, "then");
      o.else_region = region(o, "else");
      std::vector<const Val*> ty, ey;
      if (o.then_region >= 0) walk(o.then_region, {}, ty);
      if (o.else_region >= 0) walk(o.else_region, {}, ey);
      if (o.then_region < 0 || o.else_region == -2) ok = false;
      const size_t n = o.results.size();
      auto count = [&](int r, const std::vector<const Val*>& ys) {
        if (r < 0 || ys.size() == n) return true;
        p_.add(child(ast_.regions[r].pointer, "yield"),
               fmt::format("a branch of an if yields one value per result of the if ({})", n),
               fmt::format("{} names", n), fmt::format("{}", ys.size()));
        return false;
      };
      ok = count(o.then_region, ty) && ok;
      if (n > 0 && o.else_region == -1) {
        p_.add(o.pointer, "an if with results needs an else region", "an \"else\" field", "none");
        ok = false;
      }
      ok = count(o.else_region, ey) && ok;
      for (size_t i = 0; ok && i < n; ++i) {
        if (!ty[i] || !ey[i]) {
          ok = false;
          break;
        }
        if (ty[i]->type != ey[i]->type) {
          p_.add(child(child(ast_.regions[o.else_region].pointer, "yield"), i),
                 fmt::format("both branches yield result {} ('{}') with one type", i, o.results[i]),
                 ty[i]->type.str(), ey[i]->type.str());
          ok = false;
        }
      }
      if (ok)
        for (size_t i = 0; i < n; ++i) out.push_back(ty[i]->type);
    }
    if (ok) o.result_types = out;
    for (size_t r = 0; r < o.results.size(); ++r) {
      Val v;
      v.bad = !ok || r >= out.size();
      if (!v.bad) v.type = out[r];
      define(o.results[r], child(child(o.pointer, "results"), r), v);
    }
  }

  const json& doc_;
  Ast& ast_;
  Problems& p_;
  std::map<std::string, Val> vals_;
  std::map<std::string, std::string> first_def_;
  std::vector<int> scopes_;
  int next_scope_ = 0;
  int depth_ = 0;
  std::vector<std::string> region_users_;
  std::set<std::string> bad_constexprs_;  // reported once each (bad_constexpr)
  bool effects_ = false;
};

}  // namespace

void check_semantics(const json& doc, Ast& ast, Problems& p) { Checker(doc, ast, p).run(); }

}  // namespace tilescope::gen::detail
