// The op table (table.h). Type rules live in check.cpp, TTIR syntax in lower.cpp; what Triton does for each
// op is ../shared/reference/ttir.md §1-§2.
#include "table.h"

#include <fmt/format.h>

#include <array>
#include <cassert>
#include <cstdint>
#include <string>

namespace tilescope::gen {
namespace {

constexpr std::array<const char*, kNumDtypes> kDtypeNames = {"i1",  "i8",   "i16", "i32", "i64",
                                                             "f16", "bf16", "f32", "f64"};

FieldSpec axis(int64_t max, const char* doc) {
  return {Field::axis, "axis", FieldType::integer, true, 0, max, {}, doc};
}
FieldSpec shape(bool required, const char* doc) {
  return {Field::shape, "shape", FieldType::shape, required, 1, kMaxNumel, {}, doc};
}
FieldSpec range_end(Field f, const char* key, const char* doc) {
  return {f, key, FieldType::dim, true, 0, INT32_MAX, {}, doc};
}
FieldSpec sem() {
  return {Field::sem,
          "sem",
          FieldType::choice,
          false,
          0,
          0,
          {"relaxed", "acquire", "release", "acq_rel"},
          "memory ordering (default acq_rel)"};
}
FieldSpec scope() {
  return {Field::scope,         "scope", FieldType::choice, false, 0, 0, {"gpu", "cta", "sys"},
          "scope (default gpu)"};
}
FieldSpec bound(Field f, const char* key, const char* doc) {
  return {f, key, FieldType::bound, true, INT32_MIN, INT32_MAX, {}, doc};
}

OpSpec binary(OpKind k, const char* name, const char* iop, const char* fop, const char* doc) {
  return {k, name, {"a", "b"}, 2, Results::one, {}, iop, fop, "", "", doc};
}
OpSpec bitwise(OpKind k, const char* name, const char* iop, const char* doc) {
  return {k, name, {"a", "b"}, 2, Results::one, {}, iop, "", "", "", doc};
}
OpSpec math(OpKind k, const char* name, const char* fop, const char* doc) {
  return {k, name, {"x"}, 1, Results::one, {}, "", fop, "", "", doc};
}
OpSpec compare(OpKind k, const char* name, const char* ipred, const char* fpred, const char* doc) {
  return {k, name, {"a", "b"}, 2, Results::one, {}, "arith.cmpi", "arith.cmpf", ipred, fpred, doc};
}

std::vector<OpSpec> make_table() {
  const char* dim_doc = "each dim a power of two: an integer, or the name of a constexpr argument";
  std::vector<OpSpec> t = {
      {OpKind::program_id,
       "program_id",
       {},
       0,
       Results::one,
       {axis(2, "grid axis: 0 x, 1 y, 2 z")},
       "",
       "",
       "",
       "",
       "this program's index along the grid axis: an i32 scalar (tt.get_program_id)"},
      {OpKind::num_programs,
       "num_programs",
       {},
       0,
       Results::one,
       {axis(2, "grid axis: 0 x, 1 y, 2 z")},
       "",
       "",
       "",
       "",
       "the number of programs along the grid axis: an i32 scalar (tt.get_num_programs)"},
      {OpKind::constant,
       "constant",
       {},
       0,
       Results::one,
       {{Field::dtype, "dtype", FieldType::dtype, true, 0, 0, {}, "element type"},
        {Field::value, "value", FieldType::literal, true, 0, 0, {}, "the value: a number, or inf, -inf, nan"},
        shape(false, "absent: a scalar; else a tensor of this shape filled with value")},
       "",
       "",
       "",
       "",
       "a scalar, or a tensor with every element equal to value (arith.constant)"},
      {OpKind::make_range,
       "make_range",
       {},
       0,
       Results::one,
       {range_end(Field::start, "start", "first value (an integer or a constexpr name)"),
        range_end(Field::end, "end", "one past the last; end - start a power of two")},
       "",
       "",
       "",
       "",
       "i32[end - start] holding start, start + 1, ..., end - 1 (tt.make_range)"},
      {OpKind::splat,
       "splat",
       {"x"},
       1,
       Results::one,
       {shape(true, dim_doc)},
       "",
       "",
       "",
       "",
       "a tensor of this shape with every element x (a scalar or pointer) (tt.splat)"},
      {OpKind::broadcast,
       "broadcast",
       {"x"},
       1,
       Results::one,
       {shape(true, "same rank as x; only x's size-1 dims may differ")},
       "",
       "",
       "",
       "",
       "x repeated along its size-1 dims (tt.broadcast); elementwise ops need equal shapes"},
      {OpKind::expand_dims,
       "expand_dims",
       {"x"},
       1,
       Results::one,
       {axis(kMaxDims - 1, "where the new size-1 dim goes (0..rank of x)")},
       "",
       "",
       "",
       "",
       "x with a size-1 dim inserted at axis (tt.expand_dims)"},
      {OpKind::reshape,
       "reshape",
       {"x"},
       1,
       Results::one,
       {shape(true, "the same number of elements as x")},
       "",
       "",
       "",
       "",
       "x's elements in row-major order, in a new shape (tt.reshape)"},
      {OpKind::trans,
       "trans",
       {"x"},
       1,
       Results::one,
       {{Field::order,
         "order",
         FieldType::int_list,
         true,
         0,
         kMaxDims - 1,
         {},
         "a permutation: result dim i is x's dim order[i]"}},
       "",
       "",
       "",
       "",
       "x with its dims permuted (tt.trans)"},
      binary(OpKind::add, "add", "arith.addi", "arith.addf", "a + b"),
      binary(OpKind::sub, "sub", "arith.subi", "arith.subf", "a - b"),
      binary(OpKind::mul, "mul", "arith.muli", "arith.mulf", "a * b"),
      binary(OpKind::div, "div", "arith.divsi", "arith.divf",
             "a / b (integers: truncated toward zero; floats: f32 and f64 only, cast f16 / bf16 to f32)"),
      binary(OpKind::rem, "rem", "arith.remsi", "arith.remf", "a % b (the sign of a, as C's fmod)"),
      binary(OpKind::min, "min", "arith.minsi", "arith.minnumf",
             "the smaller of a and b (floats: NaN ignored)"),
      binary(OpKind::max, "max", "arith.maxsi", "arith.maxnumf",
             "the larger of a and b (floats: NaN ignored)"),
      bitwise(OpKind::and_, "and", "arith.andi", "a & b (integers and i1 masks)"),
      bitwise(OpKind::or_, "or", "arith.ori", "a | b (integers and i1 masks)"),
      bitwise(OpKind::xor_, "xor", "arith.xori", "a ^ b (integers and i1 masks)"),
      bitwise(OpKind::shl, "shl", "arith.shli", "a << b"),
      bitwise(OpKind::shr, "shr", "arith.shrsi", "a >> b (arithmetic)"),
      {OpKind::neg,
       "neg",
       {"x"},
       1,
       Results::one,
       {},
       "arith.subi",
       "arith.subf",
       "",
       "",
       "0 - x (so neg(+0.0) is +0.0)"},
      {OpKind::abs, "abs", {"x"}, 1, Results::one, {}, "math.absi", "math.absf", "", "", "|x|"},
      math(OpKind::exp, "exp", "math.exp", "e^x (f32, f64)"),
      math(OpKind::exp2, "exp2", "math.exp2", "2^x (f32, f64)"),
      math(OpKind::log, "log", "math.log", "natural logarithm (f32, f64)"),
      math(OpKind::log2, "log2", "math.log2", "base-2 logarithm (f32, f64)"),
      math(OpKind::sqrt, "sqrt", "math.sqrt", "square root (f32, f64)"),
      math(OpKind::rsqrt, "rsqrt", "math.rsqrt", "1 / sqrt(x) (f32, f64)"),
      math(OpKind::sin, "sin", "math.sin", "sine (f32, f64)"),
      math(OpKind::cos, "cos", "math.cos", "cosine (f32, f64)"),
      math(OpKind::floor, "floor", "math.floor", "round down (f32, f64)"),
      math(OpKind::ceil, "ceil", "math.ceil", "round up (f32, f64)"),
      math(OpKind::erf, "erf", "math.erf", "the error function (f32, f64)"),
      math(OpKind::tanh, "tanh", "tt.extern_elementwise",
           "hyperbolic tangent (f32, f64; libdevice __nv_tanhf)"),
      {OpKind::fma,
       "fma",
       {"a", "b", "c"},
       3,
       Results::one,
       {},
       "",
       "math.fma",
       "",
       "",
       "a * b + c, rounded once (f32, f64)"},
      compare(OpKind::eq, "eq", "eq", "oeq", "a == b: i1"),
      compare(OpKind::ne, "ne", "ne", "une", "a != b: i1 (floats: true for NaN)"),
      compare(OpKind::lt, "lt", "slt", "olt", "a < b: i1"),
      compare(OpKind::le, "le", "sle", "ole", "a <= b: i1"),
      compare(OpKind::gt, "gt", "sgt", "ogt", "a > b: i1"),
      compare(OpKind::ge, "ge", "sge", "oge", "a >= b: i1"),
      {OpKind::where,
       "where",
       {"cond", "a", "b"},
       3,
       Results::one,
       {},
       "",
       "",
       "",
       "",
       "cond ? a : b elementwise; cond is i1 of a's shape (arith.select)"},
      {OpKind::cast,
       "cast",
       {"x"},
       1,
       Results::one,
       {{Field::dtype, "dtype", FieldType::dtype, true, 0, 0, {}, "the element type to convert to"}},
       "",
       "",
       "",
       "",
       "x converted to dtype (floats round to nearest even; float to int truncates; to i1: x != 0)"},
      {OpKind::addptr,
       "addptr",
       {"ptr", "offset"},
       2,
       Results::one,
       {},
       "",
       "",
       "",
       "",
       "ptr + offset elements (tt.addptr); offset i32 or i64 of ptr's shape"},
      {OpKind::load,
       "load",
       {"ptr", "mask", "other"},
       1,
       Results::one,
       {},
       "",
       "",
       "",
       "",
       "the elements at ptr; where mask is false no memory access and other, or an undefined value when "
       "there is no other (the sanitizer reports its uses) (tt.load)"},
      {OpKind::store,
       "store",
       {"ptr", "value", "mask"},
       2,
       Results::none,
       {},
       "",
       "",
       "",
       "",
       "write value at ptr where mask is true (tt.store)"},
      {OpKind::atomic_rmw,
       "atomic_rmw",
       {"ptr", "value", "mask"},
       2,
       Results::optional_one,
       {{Field::rmw,
         "kind",
         FieldType::choice,
         true,
         0,
         0,
         {"add", "max", "min", "and", "or", "xor", "xchg"},
         "add (ints, f16/f32/f64); max, min, and, or, xor (i32, i64); xchg"},
        sem(),
        scope()},
       "",
       "",
       "",
       "",
       "atomically *ptr = kind(*ptr, value) where mask; result: the old values (tt.atomic_rmw)"},
      {OpKind::atomic_cas,
       "atomic_cas",
       {"ptr", "cmp", "value"},
       3,
       Results::optional_one,
       {sem(), scope()},
       "",
       "",
       "",
       "",
       "atomically: if *ptr == cmp then *ptr = value; result: the old values (tt.atomic_cas)"},
      {OpKind::reduce,
       "reduce",
       {"x"},
       1,
       Results::one,
       {axis(kMaxDims - 1, "the dim reduced away"),
        {Field::combine,
         "combine",
         FieldType::choice,
         true,
         0,
         0,
         {"sum", "prod", "max", "min", "argmax", "argmin"},
         "argmax / argmin give the i32 index (the first one on ties)"}},
       "",
       "",
       "",
       "",
       "x reduced along axis: rank - 1 (a scalar from a 1-D x) (tt.reduce)"},
      {OpKind::scan,
       "scan",
       {"x"},
       1,
       Results::one,
       {axis(kMaxDims - 1, "the dim scanned along"),
        {Field::combine,
         "combine",
         FieldType::choice,
         true,
         0,
         0,
         {"sum", "prod", "max", "min"},
         "the operation"},
        {Field::reverse,
         "reverse",
         FieldType::boolean,
         false,
         0,
         0,
         {},
         "scan from the end (default false)"}},
       "",
       "",
       "",
       "",
       "inclusive scan of x along axis (cumsum, cumprod, ...), x's shape (tt.scan)"},
      {OpKind::dot,
       "dot",
       {"a", "b", "acc"},
       3,
       Results::one,
       {{Field::precision,
         "precision",
         FieldType::choice,
         false,
         0,
         0,
         {"ieee", "tf32", "tf32x3"},
         "f32 inputs: ieee (default, exact fp32), tf32, tf32x3"}},
       "",
       "",
       "",
       "",
       "a[M, K] @ b[K, N] + acc[M, N], dims >= 16: f16/bf16 -> f32 (or f16 -> f16), f32 -> f32, i8 -> i32 "
       "(tt.dot)"},
      {OpKind::gather,
       "gather",
       {"src", "index"},
       2,
       Results::one,
       {axis(kMaxDims - 1, "the dim indexed")},
       "",
       "",
       "",
       "",
       "out[..i..] = src[..index[..i..]..] along axis (take_along_axis), index's shape (tt.gather)"},
      {OpKind::for_,
       "for",
       {},
       0,
       Results::many,
       {{Field::var,
         "var",
         FieldType::name,
         true,
         0,
         0,
         {},
         "the induction variable's name, visible in the body"},
        bound(Field::lower, "lower", "first value: a scalar i32 / i64 name or an integer"),
        bound(Field::upper, "upper", "the loop runs while var < upper"),
        bound(Field::step, "step", "added to var after each iteration (positive)"),
        {Field::init, "init", FieldType::name_list, false, 0, 0, {}, "initial values of the carried values"},
        {Field::carried,
         "carried",
         FieldType::name_list,
         false,
         0,
         0,
         {},
         "names of the carried values in the body"},
        {Field::body,
         "body",
         FieldType::region,
         true,
         0,
         0,
         {},
         "the region run each iteration; it yields the next carried values"}},
       "",
       "",
       "",
       "",
       "for var in range(lower, upper, step), carrying values; results: the carried values after the loop "
       "(scf.for)"},
      {OpKind::if_,
       "if",
       {},
       0,
       Results::many,
       {{Field::cond, "cond", FieldType::name, true, 0, 0, {}, "an i1 scalar"},
        {Field::then_, "then", FieldType::region, true, 0, 0, {}, "the region run when cond is true"},
        {Field::else_,
         "else",
         FieldType::region,
         false,
         0,
         0,
         {},
         "the region run otherwise (needed when there are results)"}},
       "",
       "",
       "",
       "",
       "cond ? then : else; results: what the region that ran yields (scf.if)"},
  };
  return t;
}

}  // namespace

const std::vector<OpSpec>& op_table() {
  static const std::vector<OpSpec> t = [] {
    std::vector<OpSpec> rows = make_table();
    assert(rows.size() == static_cast<size_t>(kNumOpKinds));
    for (size_t i = 0; i < rows.size(); ++i) {
      assert(static_cast<size_t>(rows[i].kind) == i);
      assert(std::string_view(rows[i].name) == op_name(rows[i].kind));
      assert(rows[i].roles.size() <= 3 && rows[i].min_operands <= static_cast<int>(rows[i].roles.size()));
    }
    return rows;
  }();
  return t;
}

const FieldSpec* field_of(const OpSpec& s, Field f) {
  for (const auto& fs : s.fields)
    if (fs.field == f) return &fs;
  return nullptr;
}

const OpSpec* find_op(std::string_view name) {
  for (const auto& s : op_table())
    if (name == s.name) return &s;
  return nullptr;
}

const char* dtype_name(Dtype d) { return kDtypeNames[static_cast<size_t>(d)]; }
bool is_float(Dtype d) { return d == Dtype::f16 || d == Dtype::bf16 || d == Dtype::f32 || d == Dtype::f64; }
int dtype_bits(Dtype d) {
  constexpr std::array<int, kNumDtypes> bits = {1, 8, 16, 32, 64, 16, 16, 32, 64};
  return bits[static_cast<size_t>(d)];
}

std::optional<Dtype> find_dtype(std::string_view name) {
  for (size_t i = 0; i < kDtypeNames.size(); ++i)
    if (name == kDtypeNames[i]) return static_cast<Dtype>(i);
  return std::nullopt;
}

bool is_name(std::string_view s, size_t max_length) {
  if (s.empty() || s.size() > max_length) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

std::string Type::str() const {
  std::string s = fmt::format("{}{}", ptr ? "*" : "", std::string(dtype_name(elem)));
  if (!shape.empty()) {
    s += "[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += fmt::format("{}{}", i ? ", " : "", std::to_string(shape[i]));
    s += "]";
  }
  return s;
}

std::string Problem::str() const {
  std::string s = pointer.empty() ? "(document)" : pointer;
  s += ": " + message;
  if (!expected.empty() || !found.empty()) s += " (expected " + expected + ", found " + found + ")";
  return s;
}

}  // namespace tilescope::gen
