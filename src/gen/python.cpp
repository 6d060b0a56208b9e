// gen::python: a valid kernel AST as a readable Triton Python module: the @triton.jit kernel, one statement
// per op that assigns the op's value to its AST name, and a launcher (docs/gen-format.md, "Triton Python").
//
// Each statement is spelled so that Triton 3.6's frontend (triton/language/semantic.py, standard.py) builds
// the TTIR that gen::lower writes for the op. Where Python's spelling would change a type, it is spelled
// otherwise:
//   scalar arguments are annotated with their dtype (`n: tl.int32`): unannotated, Triton makes an int equal
//     to 1 a constexpr, types ints by value (i64 past 2^31) and floats as f32;
//   constants are tl.full(shape, value, dtype) (a Python literal would take Triton's scalar typing); a
//     constexpr used as a value where Triton would keep it a Python int (unary ops, splat, stores, carried
//     values, ops of constexprs only) is tl.full((), NAME, tl.int32), the i32 the lowering makes of it;
//   integer div is `//` (Triton's // is arith.divsi, truncating; `/` of ints is f32 division); the format
//     has no f16 / bf16 div (check.cpp);
//   reduce max / min of types narrower than 32 bits or bf16 is tl.reduce with a combine function (tl.max
//     widens them), prod is tl.reduce (there is no tl.prod); scans max / min are tl.associative_scan, and
//     sum / prod of bf16 too (tl.cumsum / tl.cumprod widen bf16 to f32); the max / min combine functions cast
//     back to their operands' dtype, which tl.maximum / tl.minimum change for bf16 only (see below);
//   dot passes input_precision (Triton's default for f32 is tf32) and out_dtype, the accumulator's.
// Where no spelling gives the same TTIR, one gives the same values, and says why in a comment:
//   rem of f16 / bf16: Triton's % computes it in f32; the remainder is exact in f32 and representable in
//     f16 / bf16, so `(a % b).to(f16)` is the f16 remainder;
//   a float constant -0.0: Triton's tl.full turns a zero into +0.0, so -0.0 is the bitcast of its bits;
//   an f16 / bf16 literal that Triton would round twice (its builder takes a C float, so double -> f32 ->
//     f16) is written as the f16 value the lowering rounds it to (once, from the double);
//   argmax / argmin of bf16: tl.argmax widens bf16 to f32 first, which is exact and keeps every comparison;
//   min / max of bf16: tl.minimum / tl.maximum compute them in f32 (Triton: no bf16 min / max in hardware),
//     so the result is cast back, exactly: the f32 extremum of two widened bf16 values is one of them.
// Shapes and ranges name the constexprs the AST names (`tl.arange(0, BLOCK)`, `(BLOCK_M, BLOCK_N)`) and write
// the integers it writes, so that a launch with another constexpr value changes every tile size that uses it
// (the TTIR, which has only numbers, is the AST's values').
// Names: the AST's, except Python keywords and the names the module itself uses (tl, triton, range, ...,
// Triton's launch options, which a kernel parameter must not shadow): those get a `_` suffix.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tilescope/gen/ast.h"
#include "tilescope/ir/elem.h"

namespace tilescope::gen {
namespace {

// Names the module itself uses or that Triton's launch takes as keywords (CUDAOptions of Triton 3.6, `grid`,
// `warmup`), besides Python's keywords.
const std::set<std::string>& reserved() {
  static const std::set<std::string> r = {
      // Python's keywords
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
      "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
      "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
      // what the module uses
      "tl", "triton", "libdevice", "range", "float", "launch", "_add_combine", "_mul_combine", "_max_combine",
      "_min_combine",
      // Triton's launch: its keywords and the options it reads from the call's keywords
      "grid", "warmup", "_semantic", "_builder", "_generator", "num_warps", "num_ctas", "num_stages",
      "warp_size", "maxnreg", "ptx_version", "ptx_options", "ir_override", "enable_fp_fusion",
      "enable_reflect_ftz", "launch_cooperative_grid", "launch_pdl", "supported_fp8_dtypes",
      "deprecated_fp8_dot_operand_dtypes", "default_dot_input_precision", "allowed_dot_input_precisions",
      "max_num_imprecise_acc_default", "extern_libs", "debug", "backend_name", "sanitize_overflow", "arch",
      "instrumentation_mode"};
  return r;
}

const char* tl_dtype(Dtype d) {
  switch (d) {
    case Dtype::i1: return "tl.int1";
    case Dtype::i8: return "tl.int8";
    case Dtype::i16: return "tl.int16";
    case Dtype::i32: return "tl.int32";
    case Dtype::i64: return "tl.int64";
    case Dtype::f16: return "tl.float16";
    case Dtype::bf16: return "tl.bfloat16";
    case Dtype::f32: return "tl.float32";
    case Dtype::f64: return "tl.float64";
  }
  return "tl.int32";
}

// The codec's element type of a 16-bit float dtype (f16 or bf16).
ir::Elem half_elem(Dtype d) { return d == Dtype::f16 ? ir::Elem::f16 : ir::Elem::bf16; }

// A Python float literal that reads back as exactly `x` (shortest round trip), "1.0" rather than "1".
std::string py_float(double x) {
  if (std::isnan(x)) return "float(\"nan\")";
  if (std::isinf(x)) return x > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  std::string s = fmt::format("{}", x);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// "()", "(256,)", "(BLOCK_M, 32)": a Python tuple of dims already spelled.
std::string py_tuple(const std::vector<std::string>& dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", dims[i]);
  return s + ")";
}

// "()", "(256,)", "(16, 32)".
std::string py_shape(const std::vector<int64_t>& shape) {
  std::vector<std::string> dims;
  dims.reserve(shape.size());
  for (int64_t d : shape) dims.push_back(std::to_string(d));
  return py_tuple(dims);
}

// `head(item, item, ...)tail` on one line when it fits in 110 columns, else with the items filled into lines
// aligned after the parenthesis (PEP 8's continuation lines).
std::string wrap(const std::string& head, const std::vector<std::string>& items, const std::string& tail) {
  constexpr size_t kWidth = 110;
  std::string out = head + "(";
  const std::string pad(out.size(), ' ');
  size_t col = out.size();
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string piece = items[i] + (i + 1 < items.size() ? "," : ")" + tail);
    if (i > 0 && col + 1 + piece.size() > kWidth) {
      out += "\n" + pad;
      col = pad.size();
    } else if (i > 0) {
      out += " ";
      ++col;
    }
    out += piece;
    col += piece.size();
  }
  if (items.empty()) out += ")" + tail;
  return out;
}

class Emitter {
 public:
  explicit Emitter(const Ast& ast) : ast_(ast) {}

  std::string run() {
    name_everything();
    std::vector<std::string> sig, params, call;
    bool keyword = false;  // the launch passes runtime arguments by position until the first constexpr
    for (const Arg& a : ast_.args) {
      const std::string& n = py(a.name);
      switch (a.kind) {
        case Arg::Kind::pointer:
          sig.push_back(n);
          types_[a.name] = {true, a.dtype, {}};
          break;
        case Arg::Kind::scalar:
          sig.push_back(fmt::format("{}: {}", n, tl_dtype(a.dtype)));
          types_[a.name] = {false, a.dtype, {}};
          break;
        case Arg::Kind::constexpr_:
          sig.push_back(fmt::format("{}: tl.constexpr", n));
          types_[a.name] = {false, Dtype::i32, {}};
          constexprs_.insert(a.name);
          keyword = true;
          call.push_back(fmt::format("{}={}", n, a.value));
          continue;
      }
      params.push_back(n);
      call.push_back(keyword ? fmt::format("{}={}", n, n) : n);
    }
    params.emplace_back("grid");
    indent_ = 1;
    ops(ast_.ops);
    if (ast_.ops.empty()) line("pass");

    std::string out = fmt::format(
        "# {0}: Triton Python generated by tilescope from a kernel AST (format version {1}).\n"
        "# One statement per op of the AST, named as the AST names its values; running {2} computes\n"
        "# what the AST's TTIR (`tilescope gen lower`) computes. As in TTIR, integer // and % truncate\n"
        "# toward zero; scalar arguments are annotated with their dtype, so that Triton neither makes a 1 a\n"
        "# constexpr nor retypes them.\n"
        "import triton\n"
        "import triton.language as tl\n",
        ast_.name, kVersion, kernel_);
    if (libdevice_) out += "from triton.language.extra import libdevice\n";
    // tl.maximum / tl.minimum compute bf16 in f32: back to bf16 (exact), a no-op for every other dtype.
    static const std::map<std::string, const char*> kCombines = {
        {"_add_combine", "a + b"},
        {"_max_combine", "tl.maximum(a, b).to(a.dtype)"},
        {"_min_combine", "tl.minimum(a, b).to(a.dtype)"},
        {"_mul_combine", "a * b"}};
    for (const auto& [name, body] : kCombines)
      if (combines_.count(name))
        out += fmt::format("\n\n@triton.jit\ndef {}(a, b):\n    return {}\n", name, body);
    out += fmt::format("\n\n@triton.jit\n{}\n{}", wrap("def " + kernel_, sig, ":"), body_);
    out += fmt::format(
        "\n\n{}\n"
        "    \"\"\"Launch {} on `grid`: a tuple, or a function of the constexprs (as Triton's launch takes "
        "it).\"\"\"\n"
        "{}\n",
        wrap("def launch", params, ":"), kernel_,
        wrap(fmt::format("    return {}[grid]", kernel_), call, ""));
    return out;
  }

 private:
  // ---------------------------------------------------------------------------------------------------
  // Names

  void name_everything() {
    std::set<std::string> all;
    std::vector<std::string> order;
    auto add = [&](const std::string& n) {
      if (!n.empty() && all.insert(n).second) order.push_back(n);
    };
    for (const Arg& a : ast_.args) add(a.name);
    auto list = [&](const std::vector<Op>& ops) {
      for (const Op& o : ops) {
        for (const auto& r : o.results) add(r);
        add(o.var);
        for (const auto& c : o.carried) add(c);
      }
    };
    list(ast_.ops);
    for (const Region& r : ast_.regions) list(r.ops);
    auto taken = [&](const std::string& n) { return reserved().count(n) > 0 || all.count(n) > 0; };
    kernel_ = ast_.name;
    while (reserved().count(kernel_)) kernel_ += "_";
    std::set<std::string> used = {kernel_};
    for (const auto& n : order) {
      std::string p = n;
      if (reserved().count(p) || used.count(p)) {
        p = n + "_";
        for (int k = 2; taken(p) || used.count(p); ++k) p = fmt::format("{}_{}", n, k);
      }
      used.insert(p);
      py_[n] = p;
    }
  }

  const std::string& py(const std::string& name) const { return py_.at(name); }
  bool is_constexpr(const std::string& name) const { return constexprs_.count(name) > 0; }
  const Type& type(const std::string& name) const { return types_.at(name); }

  // A dim as the document wrote it: the constexpr's (Python) name where it named one, else the number. So a
  // launch with another value of the constexpr changes every tile size that uses it.
  std::string dim(int64_t value, const std::string& name) const {
    return name.empty() ? std::to_string(value) : py(name);
  }
  // The op's shape field as a Python tuple of its dims ("(BLOCK_M, BLOCK_N)", "(16,)"; "()" for a scalar).
  std::string shape(const Op& o) const {
    std::vector<std::string> dims;
    for (size_t i = 0; i < o.shape.size(); ++i)
      dims.push_back(dim(o.shape[i], i < o.shape_names.size() ? o.shape_names[i] : ""));
    return py_tuple(dims);
  }

  // `name` as a tensor: a constexpr is the i32 scalar the lowering makes of it.
  std::string val(const std::string& name) const {
    return is_constexpr(name) ? fmt::format("tl.full((), {}, tl.int32)", py(name)) : py(name);
  }
  // The operands of an elementwise op: Triton makes a constexpr beside a tensor that tensor's type (i32
  // here), so only when every operand is a constexpr is the first one made a tensor (else Python computes the
  // op).
  std::vector<std::string> elementwise(const Op& o) const {
    std::vector<std::string> v;
    bool tensor = false;
    for (const auto& n : o.operands) {
      v.push_back(py(n));
      tensor = tensor || !is_constexpr(n);
    }
    if (!tensor && !v.empty()) v[0] = val(o.operands[0]);
    return v;
  }

  // ---------------------------------------------------------------------------------------------------
  // Statements

  void line(const std::string& text) {
    body_.append(static_cast<size_t>(4) * indent_, ' ');
    body_ += text;
    body_ += '\n';
  }
  // `result = expr` (only expr when the op's value is unnamed), with an optional comment.
  void assign(const Op& o, const std::string& expr, const std::string& comment = "") {
    std::string s = o.results.empty() ? expr : fmt::format("{} = {}", py(o.results[0]), expr);
    if (!comment.empty()) s += "  # " + comment;
    line(s);
  }

  // A constant of dtype `d` and shape `sh` (a Python tuple, "()" for a scalar); `comment` says why when it
  // is not written plainly.
  static std::string constant(Dtype d, const Literal& v, const std::string& sh, std::string& comment) {
    if (!is_float(d)) {
      if (d == Dtype::i1) return fmt::format("tl.full({}, {}, tl.int1)", sh, v.i ? "True" : "False");
      return fmt::format("tl.full({}, {}, {})", sh, v.i, tl_dtype(d));
    }
    const double x = v.is_int ? static_cast<double>(v.i) : v.f;
    if (x == 0 && std::signbit(x)) {
      comment = "-0.0 (tl.full makes a zero +0.0)";
      const int bits = dtype_bits(d);
      return fmt::format("tl.full({}, {}, {}).to({}, bitcast=True)", sh,
                         bits == 64   ? "-9223372036854775808"
                         : bits == 32 ? "-2147483648"
                                      : "-32768",
                         bits == 64   ? "tl.int64"
                         : bits == 32 ? "tl.int32"
                                      : "tl.int16",
                         tl_dtype(d));
    }
    std::string lit = py_float(x);
    if ((d == Dtype::f16 || d == Dtype::bf16) && std::isfinite(x)) {
      const uint64_t once = ir::float_to_bits(half_elem(d), x);
      const uint64_t twice = ir::float_to_bits(half_elem(d), static_cast<double>(static_cast<float>(x)));
      if (once != twice) {
        lit = py_float(ir::float_from_bits(half_elem(d), once));
        comment =
            fmt::format("{} rounded to {} (Triton would round it through f32)", py_float(x), dtype_name(d));
      }
    }
    return fmt::format("tl.full({}, {}, {})", sh, lit, tl_dtype(d));
  }

  std::string reduce(const Op& o) {
    const std::string x = py(o.operands[0]);
    const Dtype e = type(o.operands[0]).elem;
    const bool keeps = e == Dtype::i32 || e == Dtype::i64 || e == Dtype::f32 || e == Dtype::f64;
    const std::string& c = o.combine;
    if (c == "sum") return fmt::format("tl.sum({}, axis={})", x, o.axis);
    if (c == "argmax" || c == "argmin") return fmt::format("tl.{}({}, axis={})", c, x, o.axis);
    if ((c == "max" || c == "min") && keeps) return fmt::format("tl.{}({}, axis={})", c, x, o.axis);
    return fmt::format("tl.reduce({}, {}, {})", x, o.axis, combine(c));
  }

  std::string scan(const Op& o) {
    const std::string x = py(o.operands[0]);
    const Dtype e = type(o.operands[0]).elem;
    const std::string rev = o.reverse ? ", reverse=True" : "";
    if ((o.combine == "sum" || o.combine == "prod") && e != Dtype::bf16)
      return fmt::format("tl.{}({}, axis={}{})", o.combine == "sum" ? "cumsum" : "cumprod", x, o.axis, rev);
    return fmt::format("tl.associative_scan({}, {}, {}{})", x, o.axis, combine(o.combine), rev);
  }

  // The module-level combine function of `how` (sum prod max min), emitted once.
  std::string combine(const std::string& how) {
    std::string name = how == "sum"    ? "_add_combine"
                       : how == "prod" ? "_mul_combine"
                                       : "_" + how + "_combine";
    combines_.insert(name);
    return name;
  }

  void ops(const std::vector<Op>& list) {
    for (const Op& o : list) op(o);
  }

  // A region's ops, then its yields assigned to `targets` (Python names), `pass` when that is nothing.
  void region(const Region& r, const std::vector<std::string>& targets) {
    indent_++;
    ops(r.ops);
    if (!targets.empty()) {
      std::string lhs, rhs;
      for (size_t i = 0; i < targets.size(); ++i) {
        lhs += fmt::format("{}{}", i ? ", " : "", targets[i]);
        rhs += fmt::format("{}{}", i ? ", " : "", val(r.yields[i]));
      }
      line(fmt::format("{} = {}", lhs, rhs));
    }
    if (r.ops.empty() && targets.empty()) line("pass");
    indent_--;
  }

  void for_op(const Op& o) {
    const Region& r = ast_.regions[static_cast<size_t>(o.body)];
    // The induction variable's type: the named bounds' (all one type), else i32; Triton promotes literal
    // bounds to it as the lowering types them.
    Dtype it = Dtype::i32;
    for (const auto& b : o.bounds)
      if (!b.empty()) it = type(b).elem;
    std::string bound[3];
    for (size_t i = 0; i < 3; ++i)
      bound[i] = o.bounds[i].empty() ? std::to_string(o.bound_literals[i].i) : py(o.bounds[i]);
    std::vector<std::string> carried;
    for (size_t i = 0; i < o.carried.size(); ++i) {
      line(fmt::format("{} = {}", py(o.carried[i]), val(o.init[i])));
      types_[o.carried[i]] = type(o.init[i]);
      carried.push_back(py(o.carried[i]));
    }
    const bool unit = o.bounds[2].empty() && o.bound_literals[2].i == 1;
    line(fmt::format("for {} in range({}, {}{}):", py(o.var), bound[0], bound[1],
                     unit ? "" : ", " + bound[2]));
    types_[o.var] = {false, it, {}};
    region(r, carried);
    for (size_t i = 0; i < o.results.size(); ++i) {
      line(fmt::format("{} = {}", py(o.results[i]), carried[i]));
      types_[o.results[i]] = o.result_types[i];
    }
  }

  void if_op(const Op& o) {
    std::vector<std::string> results;
    for (const auto& n : o.results) results.push_back(py(n));
    line(fmt::format("if {}:", py(o.cond)));
    region(ast_.regions[static_cast<size_t>(o.then_region)], results);
    if (o.else_region >= 0) {
      line("else:");
      region(ast_.regions[static_cast<size_t>(o.else_region)], results);
    }
    for (size_t i = 0; i < o.results.size(); ++i) types_[o.results[i]] = o.result_types[i];
  }

  void op(const Op& o) {
    auto x = [&](size_t i) { return val(o.operands[i]); };
    auto plain = [&](size_t i) -> const std::string& { return py(o.operands[i]); };
    auto t = [&](size_t i) -> const Type& { return type(o.operands[i]); };
    auto binary = [&](const char* op) {
      const auto v = elementwise(o);
      assign(o, fmt::format("{} {} {}", v[0], op, v[1]));
    };
    auto call = [&](const std::string& fn) {
      std::string args;
      const auto v = elementwise(o);
      for (size_t i = 0; i < v.size(); ++i) args += fmt::format("{}{}", i ? ", " : "", v[i]);
      assign(o, fmt::format("{}({})", fn, args));
    };
    auto unary = [&](const std::string& fn) { assign(o, fmt::format("{}({})", fn, x(0))); };
    // The optional keyword operands of load / store / atomic_rmw: `, mask=m` and `, other=o`.
    auto optional = [&](size_t first, std::initializer_list<const char*> keys) {
      std::string s;
      size_t i = first;
      for (const char* k : keys) {
        if (i >= o.operands.size()) break;
        s += fmt::format(", {}={}", k, i == first ? plain(i) : x(i));
        ++i;
      }
      return s;
    };
    switch (o.kind) {
      case OpKind::program_id: assign(o, fmt::format("tl.program_id({})", o.axis)); break;
      case OpKind::num_programs: assign(o, fmt::format("tl.num_programs({})", o.axis)); break;
      case OpKind::constant: {
        std::string why;
        const std::string c = constant(o.dtype, o.value, shape(o), why);
        assign(o, c, why);
        break;
      }
      case OpKind::make_range:
        assign(o, fmt::format("tl.arange({}, {})", dim(o.start, o.start_name), dim(o.end, o.end_name)));
        break;
      case OpKind::splat:
        if (is_constexpr(o.operands[0]))
          assign(o, fmt::format("tl.full({}, {}, tl.int32)", shape(o), plain(0)));
        else
          assign(o, fmt::format("tl.broadcast_to({}, {})", x(0), shape(o)));
        break;
      case OpKind::broadcast: assign(o, fmt::format("tl.broadcast_to({}, {})", x(0), shape(o))); break;
      case OpKind::expand_dims: assign(o, fmt::format("tl.expand_dims({}, {})", x(0), o.axis)); break;
      case OpKind::reshape: assign(o, fmt::format("tl.reshape({}, {})", x(0), shape(o))); break;
      case OpKind::trans:
        if (o.order == std::vector<int64_t>{1, 0})
          assign(o, fmt::format("tl.trans({})", x(0)));
        else
          assign(o, fmt::format("tl.permute({}, {})", x(0), py_shape(o.order)));
        break;
      case OpKind::add: binary("+"); break;
      case OpKind::sub: binary("-"); break;
      case OpKind::mul: binary("*"); break;
      case OpKind::div: binary(is_float(t(0).elem) ? "/" : "//"); break;
      case OpKind::rem:
        if (t(0).elem == Dtype::f16 || t(0).elem == Dtype::bf16) {
          const auto v = elementwise(o);
          assign(o, fmt::format("({} % {}).to({})", v[0], v[1], tl_dtype(t(0).elem)),
                 "Triton's % computes in f32, where the remainder is exact");
        } else {
          binary("%");
        }
        break;
      case OpKind::min:
      case OpKind::max: {
        const auto v = elementwise(o);
        const std::string e =
            fmt::format("tl.{}({}, {})", o.kind == OpKind::min ? "minimum" : "maximum", v[0], v[1]);
        if (t(0).elem == Dtype::bf16)
          assign(o, e + ".to(tl.bfloat16)", "Triton computes bf16 minima / maxima in f32: exact");
        else
          assign(o, e);
        break;
      }
      case OpKind::and_: binary("&"); break;
      case OpKind::or_: binary("|"); break;
      case OpKind::xor_: binary("^"); break;
      case OpKind::shl: binary("<<"); break;
      case OpKind::shr: binary(">>"); break;
      case OpKind::neg: assign(o, "-" + x(0)); break;
      case OpKind::abs: unary("tl.abs"); break;
      case OpKind::exp: unary("tl.exp"); break;
      case OpKind::exp2: unary("tl.exp2"); break;
      case OpKind::log: unary("tl.log"); break;
      case OpKind::log2: unary("tl.log2"); break;
      case OpKind::sqrt: unary("tl.sqrt"); break;
      case OpKind::rsqrt: unary("tl.rsqrt"); break;
      case OpKind::sin: unary("tl.sin"); break;
      case OpKind::cos: unary("tl.cos"); break;
      case OpKind::floor: unary("tl.floor"); break;
      case OpKind::ceil: unary("tl.ceil"); break;
      case OpKind::erf: unary("tl.erf"); break;
      case OpKind::tanh:
        libdevice_ = true;
        unary("libdevice.tanh");
        break;
      case OpKind::fma: call("tl.fma"); break;
      case OpKind::eq: binary("=="); break;
      case OpKind::ne: binary("!="); break;
      case OpKind::lt: binary("<"); break;
      case OpKind::le: binary("<="); break;
      case OpKind::gt: binary(">"); break;
      case OpKind::ge: binary(">="); break;
      case OpKind::where: assign(o, fmt::format("tl.where({}, {}, {})", plain(0), plain(1), plain(2))); break;
      case OpKind::cast:
        // A cast to the operand's own type is the operand (the lowering emits nothing for it either).
        if (t(0).elem == o.dtype)
          assign(o, x(0));
        else
          assign(o, fmt::format("{}.to({})", x(0), tl_dtype(o.dtype)));
        break;
      case OpKind::addptr: assign(o, fmt::format("{} + {}", plain(0), plain(1))); break;
      case OpKind::load:
        assign(o, fmt::format("tl.load({}{})", plain(0), optional(1, {"mask", "other"})));
        break;
      case OpKind::store:
        line(fmt::format("tl.store({}, {}{})", plain(0), x(1), optional(2, {"mask"})));
        break;
      case OpKind::atomic_rmw:
        assign(o, fmt::format("tl.atomic_{}({}, {}{}, sem=\"{}\", scope=\"{}\")", o.rmw, plain(0), x(1),
                              optional(2, {"mask"}), o.sem, o.scope));
        break;
      case OpKind::atomic_cas:
        assign(o, fmt::format("tl.atomic_cas({}, {}, {}, sem=\"{}\", scope=\"{}\")", plain(0), x(1), x(2),
                              o.sem, o.scope));
        break;
      case OpKind::reduce: {
        const bool bf16_arg = (o.combine == "argmax" || o.combine == "argmin") && t(0).elem == Dtype::bf16;
        assign(o, reduce(o),
               bf16_arg ? "Triton compares bf16 as f32 (exact: the same order, the same index)" : "");
        break;
      }
      case OpKind::scan: assign(o, scan(o)); break;
      case OpKind::dot:
        assign(o, fmt::format("tl.dot({}, {}, {}, input_precision=\"{}\", out_dtype={})", plain(0), plain(1),
                              plain(2), o.precision.empty() ? "ieee" : o.precision, tl_dtype(t(2).elem)));
        break;
      case OpKind::gather: assign(o, fmt::format("tl.gather({}, {}, {})", plain(0), plain(1), o.axis)); break;
      case OpKind::for_: return for_op(o);
      case OpKind::if_: return if_op(o);
    }
    for (size_t i = 0; i < o.results.size(); ++i) types_[o.results[i]] = o.result_types[i];
  }

  const Ast& ast_;
  std::string kernel_;
  std::map<std::string, std::string> py_;  // AST name -> Python name
  std::map<std::string, Type> types_;
  std::set<std::string> constexprs_;
  std::set<std::string> combines_;
  bool libdevice_ = false;
  std::string body_;
  int indent_ = 0;
};

}  // namespace

std::string python(const Ast& ast) { return Emitter(ast).run(); }

}  // namespace tilescope::gen
