// gen::lower: a valid kernel AST as TTIR text, in the form Triton 3.6 prints (reference §1-§3), without
// locations. Each AST name becomes the SSA name %name (names are identifiers, so they never collide with
// the numbered %N values the lowering adds). What an op becomes when it is not one TTIR op:
//   neg: 0 - x (arith.subi / arith.subf), as Triton 3.6's frontend emits it (its TritonGPU conversion
//        has no pattern for arith.negf);
//   cast: Triton's semantic.cast routing (f16 / bf16 to anything but f32 goes through f32; to i1 is x != 0;
//         from i1 is unsigned), reference §2.1;
//   tanh: tt.extern_elementwise __nv_tanhf / __nv_tanh, as libdevice.tanh is on CUDA;
//   reduce argmax / argmin: a two-operand tt.reduce over (x, index) with Triton's tie-break-left combine
//         (standard.py _argmax_combine), the index tensor made by make_range / expand_dims / broadcast;
//   atomic_rmw without a mask: an all-true mask, as the frontend always passes one;
//   constexpr arguments: arith.constant values at the top of the function (TTIR has no constexpr args).
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "table.h"
#include "tilescope/gen/ast.h"
#include "tilescope/ir/elem.h"

namespace tilescope::gen {
namespace {

ir::Elem to_ir(Dtype d) {
  switch (d) {
    case Dtype::i1: return ir::Elem::i1;
    case Dtype::i8: return ir::Elem::i8;
    case Dtype::i16: return ir::Elem::i16;
    case Dtype::i32: return ir::Elem::i32;
    case Dtype::i64: return ir::Elem::i64;
    case Dtype::f16: return ir::Elem::f16;
    case Dtype::bf16: return ir::Elem::bf16;
    case Dtype::f32: return ir::Elem::f32;
    case Dtype::f64: return ir::Elem::f64;
  }
  return ir::Elem::i32;
}

std::string mlir(const Type& t) {
  std::string e = t.ptr ? fmt::format("!tt.ptr<{}>", dtype_name(t.elem)) : dtype_name(t.elem);
  if (t.shape.empty()) return e;
  std::string s = "tensor<";
  for (int64_t d : t.shape) s += std::to_string(d) + "x";
  return s + e + ">";
}

Type with_elem(const Type& t, Dtype e) { return {false, e, t.shape}; }

// A literal of element type `d`, as an attribute value: 5, true, 1.50000000e+00, 0x7FC00000.
std::string literal(Dtype d, const Literal& v) {
  if (!is_float(d)) {
    if (d == Dtype::i1) return v.i ? "true" : "false";
    return std::to_string(v.i);
  }
  const double x = v.is_int ? static_cast<double>(v.i) : v.f;
  switch (d) {
    case Dtype::f32: {
      const auto f = static_cast<float>(x);
      if (std::isfinite(f)) return fmt::format("{:.8e}", f);
      return fmt::format("0x{:08X}", ir::float_to_bits(ir::Elem::f32, x));
    }
    case Dtype::f64:
      if (std::isfinite(x)) return fmt::format("{:.16e}", x);
      return fmt::format("0x{:016X}", ir::float_to_bits(ir::Elem::f64, x));
    default: return fmt::format("0x{:04X}", ir::float_to_bits(to_ir(d), x));
  }
}

class Lowerer {
 public:
  Lowerer(const Ast& ast, std::vector<std::string>* lines) : ast_(ast), lines_(lines) {}

  std::string run() {
    line("module {", "");
    std::string sig;
    for (const Arg& a : ast_.args) {
      if (a.kind == Arg::Kind::constexpr_) continue;
      const Type t{a.kind == Arg::Kind::pointer, a.dtype, {}};
      sig += fmt::format("{}%{}: {}", sig.empty() ? "" : ", ", a.name, mlir(t));
      bind(a.name, fmt::format("%{}", a.name), t);
    }
    indent_ = 1;
    line(fmt::format("tt.func public @{}({}) attributes {{noinline = false}} {{", ast_.name, sig), "");
    indent_ = 2;
    for (const Arg& a : ast_.args)
      if (a.kind == Arg::Kind::constexpr_) {
        line(fmt::format("%{} = arith.constant {} : i32", a.name, a.value), "");
        bind(a.name, fmt::format("%{}", a.name), {false, Dtype::i32, {}});
      }
    for (const Op& o : ast_.ops) op(o);
    line("tt.return", "");
    indent_ = 1;
    line("}", "");
    indent_ = 0;
    line("}", "");
    return out_;
  }

 private:
  void line(const std::string& text, const std::string& ptr) {
    out_.append(static_cast<size_t>(2) * indent_, ' ');
    out_ += text;
    out_ += '\n';
    if (lines_) lines_->push_back(ptr);
  }
  void bind(const std::string& name, const std::string& ssa, const Type& t) {
    ssa_[name] = ssa;
    types_[name] = t;
  }
  std::string tmp() { return fmt::format("%{}", next_++); }
  const std::string& v(const std::string& name) const { return ssa_.at(name); }
  const Type& t(const std::string& name) const { return types_.at(name); }
  // The SSA name of an op's first result: its AST name, or a new number when it has none.
  std::string res(const Op& o) { return o.results.empty() ? tmp() : fmt::format("%{}", o.results[0]); }
  void done(const Op& o, const std::string& ssa) {
    if (!o.results.empty()) bind(o.results[0], ssa, o.result_types[0]);
  }

  std::string constant(Dtype d, const Literal& lit, const std::vector<int64_t>& shape, const std::string& ptr,
                       std::string name = "") {
    if (name.empty()) name = tmp();
    const Type ty{false, d, shape};
    if (shape.empty())
      line(d == Dtype::i1 ? fmt::format("{} = arith.constant {}", name, literal(d, lit))
                          : fmt::format("{} = arith.constant {} : {}", name, literal(d, lit), mlir(ty)),
           ptr);
    else
      line(fmt::format("{} = arith.constant dense<{}> : {}", name, literal(d, lit), mlir(ty)), ptr);
    return name;
  }

  // x (of type `from`) converted to element type `to`; the result is `name` (a new number when "").
  std::string cast(const std::string& x, const Type& from, Dtype to, const std::string& ptr,
                   std::string name) {
    if (name.empty()) name = tmp();
    const Dtype f = from.elem;
    const Type dst = with_elem(from, to);
    auto conv = [&](const char* op, const Type& src, const Type& d, const std::string& in,
                    const std::string& out) {
      line(fmt::format("{} = {} {} : {} to {}", out, op, in, mlir(src), mlir(d)), ptr);
    };
    if (to == Dtype::i1) {
      const std::string zero = constant(f, Literal{!is_float(f), 0, 0.0}, from.shape, ptr);
      line(fmt::format("{} = {} {}, {}, {} : {}", name, is_float(f) ? "arith.cmpf" : "arith.cmpi",
                       is_float(f) ? "une" : "ne", x, zero, mlir(from)),
           ptr);
    } else if (f == Dtype::i1) {
      conv(is_float(to) ? "arith.uitofp" : "arith.extui", from, dst, x, name);
    } else if (!is_float(f) && !is_float(to)) {
      conv(dtype_bits(to) > dtype_bits(f) ? "arith.extsi" : "arith.trunci", from, dst, x, name);
    } else if (!is_float(f)) {
      conv("arith.sitofp", from, dst, x, name);
    } else if (!is_float(to)) {
      conv("arith.fptosi", from, dst, x, name);
    } else if ((f == Dtype::f16 || f == Dtype::bf16) && to != Dtype::f32) {
      const std::string mid = tmp();
      const Type t32 = with_elem(from, Dtype::f32);
      conv("arith.extf", from, t32, x, mid);
      return cast(mid, t32, to, ptr, name);
    } else {
      conv(dtype_bits(to) > dtype_bits(f) ? "arith.extf" : "arith.truncf", from, dst, x, name);
    }
    return name;
  }

  // The combine region of a one-operand reduce / scan over scalars of `e`.
  void combine(const std::string& how, Dtype e, const std::string& ptr, const char* ret) {
    const bool f = is_float(e);
    const char* op = how == "sum"    ? (f ? "arith.addf" : "arith.addi")
                     : how == "prod" ? (f ? "arith.mulf" : "arith.muli")
                     : how == "max"  ? (f ? "arith.maxnumf" : "arith.maxsi")
                                     : (f ? "arith.minnumf" : "arith.minsi");
    const std::string a = tmp(), b = tmp(), c = tmp();
    indent_--;
    line(fmt::format("^bb0({}: {}, {}: {}):", a, dtype_name(e), b, dtype_name(e)), ptr);
    indent_++;
    line(fmt::format("{} = {} {}, {} : {}", c, op, a, b, dtype_name(e)), ptr);
    line(fmt::format("{} {} : {}", ret, c, dtype_name(e)), ptr);
  }

  void reduce(const Op& o) {
    const Type& x = t(o.operands[0]);
    const Type& r = o.result_types[0];
    const bool arg = o.combine == "argmax" || o.combine == "argmin";
    if (!arg) {
      const std::string name = res(o);
      line(fmt::format("{} = \"tt.reduce\"({}) <{{axis = {} : i32}}> ({{", name, v(o.operands[0]), o.axis),
           o.pointer);
      indent_++;
      combine(o.combine, x.elem, o.pointer, "tt.reduce.return");
      indent_--;
      line(fmt::format("}}) : ({}) -> {}", mlir(x), mlir(r)), o.pointer);
      return done(o, name);
    }
    // The index of every element along the axis: make_range, size-1 dims everywhere else, broadcast.
    const int64_t n = x.shape[o.axis];
    std::string idx = tmp();
    Type it{false, Dtype::i32, {n}};
    line(fmt::format("{} = tt.make_range {{end = {} : i32, start = 0 : i32}} : {}", idx, n, mlir(it)),
         o.pointer);
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (static_cast<int64_t>(d) == o.axis) continue;
      Type next = it;
      next.shape.insert(next.shape.begin() + d, 1);
      const std::string e = tmp();
      line(fmt::format("{} = tt.expand_dims {} {{axis = {} : i32}} : {} -> {}", e, idx, d, mlir(it),
                       mlir(next)),
           o.pointer);
      idx = e;
      it = next;
    }
    if (it.shape != x.shape) {
      const Type full = with_elem(x, Dtype::i32);
      const std::string b = tmp();
      line(fmt::format("{} = tt.broadcast {} : {} -> {}", b, idx, mlir(it), mlir(full)), o.pointer);
      idx = b;
      it = full;
    }
    const std::string group = tmp();
    const Type rv = with_elem(r, x.elem);
    line(fmt::format("{}:2 = \"tt.reduce\"({}, {}) <{{axis = {} : i32}}> ({{", group, v(o.operands[0]), idx,
                     o.axis),
         o.pointer);
    const char* e = dtype_name(x.elem);
    const bool f = is_float(x.elem);
    const std::string v1 = tmp(), i1 = tmp(), v2 = tmp(), i2 = tmp();
    line(fmt::format("^bb0({}: {}, {}: i32, {}: {}, {}: i32):", v1, e, i1, v2, e, i2), o.pointer);
    indent_++;
    const std::string eq = tmp(), lt = tmp(), tie = tmp(), better = tmp(), pick = tmp(), rv_ = tmp(),
                      ri = tmp();
    const bool max = o.combine == "argmax";
    line(fmt::format("{} = {} {}, {}, {} : {}", eq, f ? "arith.cmpf" : "arith.cmpi", f ? "oeq" : "eq", v1, v2,
                     e),
         o.pointer);
    line(fmt::format("{} = arith.cmpi slt, {}, {} : i32", lt, i1, i2), o.pointer);
    line(fmt::format("{} = arith.andi {}, {} : i1", tie, eq, lt), o.pointer);
    line(fmt::format("{} = {} {}, {}, {} : {}", better, f ? "arith.cmpf" : "arith.cmpi",
                     f ? (max ? "ogt" : "olt") : (max ? "sgt" : "slt"), v1, v2, e),
         o.pointer);
    line(fmt::format("{} = arith.ori {}, {} : i1", pick, better, tie), o.pointer);
    line(fmt::format("{} = arith.select {}, {}, {} : {}", rv_, pick, v1, v2, e), o.pointer);
    line(fmt::format("{} = arith.select {}, {}, {} : i32", ri, pick, i1, i2), o.pointer);
    line(fmt::format("tt.reduce.return {}, {} : {}, i32", rv_, ri, e), o.pointer);
    indent_--;
    line(fmt::format("}}) : ({}, {}) -> ({}, {})", mlir(x), mlir(it), mlir(rv), mlir(r)), o.pointer);
    done(o, group + "#1");
  }

  // The op's results named for its uses: one result is %name, several are %N#i.
  void bind_results(const Op& o, const std::string& group) {
    if (o.results.size() == 1) {
      bind(o.results[0], group, o.result_types[0]);
      return;
    }
    for (size_t i = 0; i < o.results.size(); ++i)
      bind(o.results[i], fmt::format("{}#{}", group, i), o.result_types[i]);
  }

  std::string types_list(const std::vector<Type>& ts) const {
    std::string s;
    for (const auto& ty : ts) s += fmt::format("{}{}", s.empty() ? "" : ", ", mlir(ty));
    return s;
  }

  void yield(const Region& r) {
    if (r.yields.empty()) return;
    std::string vals, tys;
    for (const auto& y : r.yields) {
      vals += fmt::format("{}{}", vals.empty() ? "" : ", ", v(y));
      tys += fmt::format("{}{}", tys.empty() ? "" : ", ", mlir(t(y)));
    }
    line(fmt::format("scf.yield {} : {}", vals, tys), child_ptr(r.pointer, "yield"));
  }
  static std::string child_ptr(const std::string& base, const char* key) { return base + "/" + key; }

  void body(const Region& r) {
    indent_++;
    for (const Op& o : r.ops) op(o);
    yield(r);
    indent_--;
  }

  void for_op(const Op& o) {
    const Region& r = ast_.regions[o.body];
    // The bounds' type: the named bounds' (all equal), else i32.
    Dtype it = Dtype::i32;
    for (const auto& b : o.bounds)
      if (!b.empty()) it = t(b).elem;
    std::string b[3];
    for (size_t i = 0; i < 3; ++i)
      b[i] = o.bounds[i].empty() ? constant(it, o.bound_literals[i], {}, o.pointer) : v(o.bounds[i]);
    const size_t n = o.init.size();
    std::string head = fmt::format("scf.for %{} = {} to {} step {}", o.var, b[0], b[1], b[2]);
    std::vector<Type> ts;
    if (n > 0) {
      std::string iter;
      for (size_t i = 0; i < n; ++i) {
        iter += fmt::format("{}%{} = {}", i ? ", " : "", o.carried[i], v(o.init[i]));
        ts.push_back(t(o.init[i]));
      }
      head += fmt::format(" iter_args({}) -> ({})", iter, types_list(ts));
    }
    std::string group;
    if (n == 1) group = o.results.empty() ? tmp() : fmt::format("%{}", o.results[0]);
    if (n > 1) group = tmp();
    line(
        fmt::format("{}{} : {} {{", group.empty() ? "" : group + (n > 1 ? fmt::format(":{}", n) : "") + " = ",
                    head, dtype_name(it)),
        o.pointer);
    bind(o.var, fmt::format("%{}", o.var), {false, it, {}});
    for (size_t i = 0; i < n; ++i) bind(o.carried[i], fmt::format("%{}", o.carried[i]), ts[i]);
    body(r);
    line("}", o.pointer);
    if (!o.results.empty()) bind_results(o, group);
  }

  void if_op(const Op& o) {
    const size_t n = o.results.size();
    std::string group = n == 1 ? fmt::format("%{}", o.results[0]) : n > 1 ? tmp() : "";
    line(fmt::format("{}scf.if {}{} {{",
                     group.empty() ? "" : group + (n > 1 ? fmt::format(":{}", n) : "") + " = ", v(o.cond),
                     n ? fmt::format(" -> ({})", types_list(o.result_types)) : ""),
         o.pointer);
    body(ast_.regions[o.then_region]);
    if (o.else_region >= 0) {
      line("} else {", o.pointer);
      body(ast_.regions[o.else_region]);
    }
    line("}", o.pointer);
    if (n) bind_results(o, group);
  }

  void op(const Op& o) {
    const OpSpec& s = spec(o.kind);
    const std::string& p = o.pointer;
    auto operand = [&](size_t i) -> const std::string& { return v(o.operands[i]); };
    auto otype = [&](size_t i) -> const Type& { return t(o.operands[i]); };
    switch (o.kind) {
      case OpKind::program_id:
      case OpKind::num_programs: {
        const std::string r = res(o);
        line(fmt::format("{} = {} {} : i32", r,
                         o.kind == OpKind::program_id ? "tt.get_program_id" : "tt.get_num_programs",
                         "xyz"[o.axis]),
             p);
        return done(o, r);
      }
      case OpKind::constant: return done(o, constant(o.dtype, o.value, o.shape, p, res(o)));
      case OpKind::make_range: {
        const std::string r = res(o);
        line(fmt::format("{} = tt.make_range {{end = {} : i32, start = {} : i32}} : {}", r, o.end, o.start,
                         mlir(o.result_types[0])),
             p);
        return done(o, r);
      }
      case OpKind::splat:
      case OpKind::broadcast:
      case OpKind::reshape: {
        const std::string r = res(o);
        line(fmt::format("{} = tt.{} {} : {} -> {}", r, s.name, operand(0), mlir(otype(0)),
                         mlir(o.result_types[0])),
             p);
        return done(o, r);
      }
      case OpKind::expand_dims: {
        const std::string r = res(o);
        line(fmt::format("{} = tt.expand_dims {} {{axis = {} : i32}} : {} -> {}", r, operand(0), o.axis,
                         mlir(otype(0)), mlir(o.result_types[0])),
             p);
        return done(o, r);
      }
      case OpKind::trans: {
        const std::string r = res(o);
        std::string order;
        for (int64_t d : o.order) order += fmt::format("{}{}", order.empty() ? "" : ", ", std::to_string(d));
        line(fmt::format("{} = tt.trans {} {{order = array<i32: {}>}} : {} -> {}", r, operand(0), order,
                         mlir(otype(0)), mlir(o.result_types[0])),
             p);
        return done(o, r);
      }
      case OpKind::neg: {
        // 0 - x, as Triton 3.6's frontend writes -x (3.6's TritonGPU conversion rejects arith.negf).
        const bool f = is_float(otype(0).elem);
        const std::string zero = constant(otype(0).elem, Literal{!f, 0, 0.0}, otype(0).shape, p);
        const std::string r = res(o);
        line(fmt::format("{} = {} {}, {} : {}", r, f ? s.float_op : s.int_op, zero, operand(0),
                         mlir(otype(0))),
             p);
        return done(o, r);
      }
      case OpKind::add:
      case OpKind::sub:
      case OpKind::mul:
      case OpKind::div:
      case OpKind::rem:
      case OpKind::min:
      case OpKind::max:
      case OpKind::and_:
      case OpKind::or_:
      case OpKind::xor_:
      case OpKind::shl:
      case OpKind::shr:
      case OpKind::abs:
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
      case OpKind::fma: {
        const std::string r = res(o);
        std::string args;
        for (size_t i = 0; i < o.operands.size(); ++i) args += fmt::format("{}{}", i ? ", " : "", operand(i));
        line(fmt::format("{} = {} {} : {}", r, is_float(otype(0).elem) ? s.float_op : s.int_op, args,
                         mlir(otype(0))),
             p);
        return done(o, r);
      }
      case OpKind::tanh: {
        const std::string r = res(o);
        line(fmt::format("{} = tt.extern_elementwise {} {{libname = \"\", libpath = \"\", pure = true, "
                         "symbol = \"{}\"}} : "
                         "({}) -> {}",
                         r, operand(0), otype(0).elem == Dtype::f32 ? "__nv_tanhf" : "__nv_tanh",
                         mlir(otype(0)), mlir(otype(0))),
             p);
        return done(o, r);
      }
      case OpKind::eq:
      case OpKind::ne:
      case OpKind::lt:
      case OpKind::le:
      case OpKind::gt:
      case OpKind::ge: {
        const std::string r = res(o);
        const bool f = is_float(otype(0).elem);
        line(fmt::format("{} = {} {}, {}, {} : {}", r, f ? s.float_op : s.int_op,
                         f ? s.float_pred : s.int_pred, operand(0), operand(1), mlir(otype(0))),
             p);
        return done(o, r);
      }
      case OpKind::where: {
        const std::string r = res(o);
        if (otype(1).is_tensor())
          line(fmt::format("{} = arith.select {}, {}, {} : {}, {}", r, operand(0), operand(1), operand(2),
                           mlir(otype(0)), mlir(otype(1))),
               p);
        else
          line(fmt::format("{} = arith.select {}, {}, {} : {}", r, operand(0), operand(1), operand(2),
                           mlir(otype(1))),
               p);
        return done(o, r);
      }
      case OpKind::cast:
        // A cast to the operand's own type is the operand itself (Triton's frontend emits nothing for it).
        if (otype(0).elem == o.dtype) return done(o, operand(0));
        return done(o, cast(operand(0), otype(0), o.dtype, p, res(o)));
      case OpKind::addptr: {
        const std::string r = res(o);
        line(fmt::format("{} = tt.addptr {}, {} : {}, {}", r, operand(0), operand(1), mlir(otype(0)),
                         mlir(otype(1))),
             p);
        return done(o, r);
      }
      case OpKind::load: {
        const std::string r = res(o);
        std::string args;
        for (size_t i = 0; i < o.operands.size(); ++i) args += fmt::format("{}{}", i ? ", " : "", operand(i));
        line(fmt::format("{} = tt.load {} : {}", r, args, mlir(otype(0))), p);
        return done(o, r);
      }
      case OpKind::store: {
        std::string args;
        for (size_t i = 0; i < o.operands.size(); ++i) args += fmt::format("{}{}", i ? ", " : "", operand(i));
        line(fmt::format("tt.store {} : {}", args, mlir(otype(0))), p);
        return;
      }
      case OpKind::atomic_rmw: {
        const Type& pt = otype(0);
        const Type mt = with_elem(pt, Dtype::i1);
        const std::string m =
            o.operands.size() > 2 ? operand(2) : constant(Dtype::i1, Literal{true, 1, 1}, pt.shape, p);
        const bool f = is_float(pt.elem);
        const std::string kind = o.rmw == "add" ? (f ? "fadd" : "add") : o.rmw == "xchg" ? "exch" : o.rmw;
        const std::string r = res(o);
        line(fmt::format("{} = tt.atomic_rmw {}, {}, {}, {}, {}, {} : ({}, {}, {}) -> {}", r, kind, o.sem,
                         o.scope, operand(0), operand(1), m, mlir(pt), mlir(otype(1)), mlir(mt),
                         mlir(otype(1))),
             p);
        return done(o, r);
      }
      case OpKind::atomic_cas: {
        const std::string r = res(o);
        line(fmt::format("{} = tt.atomic_cas {}, {}, {}, {}, {} : ({}, {}, {}) -> {}", r, o.sem, o.scope,
                         operand(0), operand(1), operand(2), mlir(otype(0)), mlir(otype(1)), mlir(otype(2)),
                         mlir(otype(2))),
             p);
        return done(o, r);
      }
      case OpKind::reduce: return reduce(o);
      case OpKind::scan: {
        const std::string r = res(o);
        line(fmt::format("{} = \"tt.scan\"({}) <{{axis = {} : i32, reverse = {}}}> ({{", r, operand(0),
                         o.axis, o.reverse ? "true" : "false"),
             p);
        indent_++;
        combine(o.combine, otype(0).elem, p, "tt.scan.return");
        indent_--;
        line(fmt::format("}}) : ({}) -> {}", mlir(otype(0)), mlir(otype(0))), p);
        return done(o, r);
      }
      case OpKind::dot: {
        const std::string r = res(o);
        const std::string prec = o.precision.empty() || o.precision == "ieee"
                                     ? ""
                                     : fmt::format(", inputPrecision = {}", o.precision);
        line(fmt::format("{} = tt.dot {}, {}, {}{} : {} * {} -> {}", r, operand(0), operand(1), operand(2),
                         prec, mlir(otype(0)), mlir(otype(1)), mlir(otype(2))),
             p);
        return done(o, r);
      }
      case OpKind::gather: {
        const std::string r = res(o);
        line(fmt::format("{} = tt.gather {}[{}] {{axis = {} : i32}} : ({}, {}) -> {}", r, operand(0),
                         operand(1), o.axis, mlir(otype(0)), mlir(otype(1)), mlir(o.result_types[0])),
             p);
        return done(o, r);
      }
      case OpKind::for_: return for_op(o);
      case OpKind::if_: return if_op(o);
    }
  }

  const Ast& ast_;
  std::vector<std::string>* lines_;
  std::string out_;
  int indent_ = 0;
  int next_ = 0;
  std::map<std::string, std::string> ssa_;
  std::map<std::string, Type> types_;
};

}  // namespace

std::string lower(const Ast& ast, std::vector<std::string>* line_pointers) {
  if (line_pointers) line_pointers->clear();
  return Lowerer(ast, line_pointers).run();
}

}  // namespace tilescope::gen
