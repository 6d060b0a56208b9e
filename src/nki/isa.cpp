// The NKI operations: one row of kOps per op, each checking a call against the documented constraints
// (an Error at the call's line) and returning what the instruction does when its program runs.
//
// Semantics: the NKI API reference, awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/
// nki.isa.<op>.html (cited per op as "isa/<op>"), the ALU and activation tables of nki.api.shared, and
// the architecture guides (nki/guides/architecture/). Arithmetic: the Vector, Scalar and GpSimd engines
// compute in float32 and round to the destination's dtype on write (isa/tensor_tensor, "Arithmetic
// operations"); the Tensor engine accumulates in float32 (isa/nc_matmul).
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <utility>

#include "machine.h"

namespace tilescope::nki {

namespace {

using Body = std::function<void(Exec&)>;
using Alu = float (*)(float, float);

// ------------------------------------------------------------------------------------------------
// Operators (nki.api.shared: "Supported Math Operators"; activation functions: "Supported Activation
// Functions"). The names are nki.language's (nl.add, nl.exp, ...).

struct AluRow {
  std::string_view name;
  Alu f;
  bool reduces;  // a legal reduction operator (tensor_reduce, activation's reduce_op)
};

float f_add(float a, float b) { return a + b; }
float f_sub(float a, float b) { return a - b; }
float f_mul(float a, float b) { return a * b; }
float f_div(float a, float b) { return a / b; }
float f_max(float a, float b) { return std::fmax(a, b); }
float f_min(float a, float b) { return std::fmin(a, b); }
float f_eq(float a, float b) { return a == b ? 1.0f : 0.0f; }
float f_ne(float a, float b) { return a != b ? 1.0f : 0.0f; }
float f_ge(float a, float b) { return a >= b ? 1.0f : 0.0f; }
float f_gt(float a, float b) { return a > b ? 1.0f : 0.0f; }
float f_le(float a, float b) { return a <= b ? 1.0f : 0.0f; }
float f_lt(float a, float b) { return a < b ? 1.0f : 0.0f; }
float f_land(float a, float b) { return (a != 0 && b != 0) ? 1.0f : 0.0f; }
float f_lor(float a, float b) { return (a != 0 || b != 0) ? 1.0f : 0.0f; }
float f_lxor(float a, float b) { return ((a != 0) != (b != 0)) ? 1.0f : 0.0f; }
float f_pow(float a, float b) { return std::pow(a, b); }
float f_abs_max(float a, float b) { return std::fmax(std::fabs(a), std::fabs(b)); }
float f_abs_min(float a, float b) { return std::fmin(std::fabs(a), std::fabs(b)); }
// Unary operators used as op0 (operand ignored).
float f_abs(float a, float) { return std::fabs(a); }
float f_rsqrt(float a, float) { return 1.0f / std::sqrt(a); }
float f_recip(float a, float) { return 1.0f / a; }
float f_square(float a, float) { return a * a; }
float f_relu(float a, float) { return a > 0 ? a : 0.0f; }

constexpr AluRow kAlu[] = {
    {"add", f_add, true},          {"subtract", f_sub, true},     {"multiply", f_mul, true},
    {"divide", f_div, false},      {"maximum", f_max, true},      {"minimum", f_min, true},
    {"equal", f_eq, false},        {"not_equal", f_ne, false},    {"greater_equal", f_ge, false},
    {"greater", f_gt, false},      {"less_equal", f_le, false},   {"less", f_lt, false},
    {"logical_and", f_land, true}, {"logical_or", f_lor, true},   {"logical_xor", f_lxor, true},
    {"power", f_pow, false},       {"abs_max", f_abs_max, false}, {"abs_min", f_abs_min, false},
    {"abs", f_abs, false},         {"rsqrt", f_rsqrt, false},     {"reciprocal", f_recip, false},
    {"square", f_square, false},   {"relu", f_relu, false},
};

// Bitvec operators: integer operands as raw bits, no conversion (nki.api.shared, "Bitvec operators").
struct BitRow {
  std::string_view name;
  uint64_t (*f)(uint64_t, uint64_t);
  bool reduces;
};
constexpr BitRow kBits[] = {
    {"bitwise_and", [](uint64_t a, uint64_t b) { return a & b; }, true},
    {"bitwise_or", [](uint64_t a, uint64_t b) { return a | b; }, true},
    {"bitwise_xor", [](uint64_t a, uint64_t b) { return a ^ b; }, true},
    {"left_shift", [](uint64_t a, uint64_t b) { return b >= 64 ? 0 : a << b; }, false},
    {"right_shift", [](uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }, false},  // logical
    {"invert", [](uint64_t a, uint64_t) { return ~a; }, false},
};

float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x / std::numbers::sqrt2_v<float>)); }
float gelu_tanh(float x) {
  const float c = std::sqrt(2.0f / std::numbers::pi_v<float>);
  return 0.5f * x * (1.0f + std::tanh(c * (x + 0.044715f * x * x * x)));
}
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

using Act = float (*)(float);
struct ActRow {
  std::string_view name;
  Act f;
};
// Exact float32 functions: AWS does not publish the Scalar engine's polynomials, only each function's
// valid input range (nki.api.shared, activation table).
constexpr ActRow kAct[] = {
    {"copy", [](float x) { return x; }},
    {"square", [](float x) { return x * x; }},
    {"sigmoid", sigmoid},
    {"relu", [](float x) { return x > 0 ? x : 0.0f; }},
    {"gelu", gelu},
    {"gelu_dx",
     [](float x) {
       return 0.5f * (1.0f + std::erf(x / std::numbers::sqrt2_v<float>)) +
              x * std::exp(-0.5f * x * x) / std::sqrt(2.0f * std::numbers::pi_v<float>);
     }},
    {"gelu_apprx_tanh", gelu_tanh},
    {"gelu_apprx_sigmoid", [](float x) { return x * sigmoid(1.702f * x); }},
    {"silu", [](float x) { return x * sigmoid(x); }},
    {"silu_dx", [](float x) { return sigmoid(x) * (1.0f + x * (1.0f - sigmoid(x))); }},
    {"tanh", [](float x) { return std::tanh(x); }},
    {"softplus", [](float x) { return std::log1p(std::exp(x)); }},
    {"mish", [](float x) { return x * std::tanh(std::log1p(std::exp(x))); }},
    {"erf", [](float x) { return std::erf(x); }},
    {"erf_dx", [](float x) { return 2.0f / std::sqrt(std::numbers::pi_v<float>) * std::exp(-x * x); }},
    {"exp", [](float x) { return std::exp(x); }},
    {"log", [](float x) { return std::log(x); }},
    {"sin", [](float x) { return std::sin(x); }},
    {"arctan", [](float x) { return std::atan(x); }},
    {"sqrt", [](float x) { return std::sqrt(x); }},
    {"rsqrt", [](float x) { return 1.0f / std::sqrt(x); }},
    {"reciprocal", [](float x) { return 1.0f / x; }},
    {"sign", [](float x) { return x > 0   ? 1.0f
                                  : x < 0 ? -1.0f
                                          : 0.0f; }},
    {"abs", [](float x) { return std::fabs(x); }},
};

const AluRow* find_alu(std::string_view n) {
  for (const AluRow& r : kAlu)
    if (r.name == n) return &r;
  return nullptr;
}
const BitRow* find_bits(std::string_view n) {
  for (const BitRow& r : kBits)
    if (r.name == n) return &r;
  return nullptr;
}
const ActRow* find_act(std::string_view n) {
  for (const ActRow& r : kAct)
    if (r.name == n) return &r;
  return nullptr;
}

/// For an operator an op does not take: which ops do take it (nki.api.shared's two tables), so that the
/// error says where nl.exp or nl.add belongs.
std::string where_it_goes(std::string_view n) {
  if (find_alu(n) || find_bits(n))
    return fmt::format(" (nl.{} is an ALU operator: nisa.tensor_tensor and nisa.tensor_scalar take it)", n);
  if (find_act(n))
    return fmt::format(" (nl.{} is an activation function: nisa.activation computes it on the Scalar engine)",
                       n);
  return "";
}

// ------------------------------------------------------------------------------------------------
// Shared checks

using K = Kernel::Impl;

/// dst and src have the same partitions and elements per partition (the usual rule: free-dim
/// reshapes are allowed; isa/tensor_tensor "same partition size and number of elements").
void same_tile(K& k, const View& a, std::string_view ka, const View& b, std::string_view kb) {
  const auto [pa, fa] = k.tile(a, ka);
  const auto [pb, fb] = k.tile(b, kb);
  if (pa != pb || fa != fb)
    k.fail(fmt::format("'{}' ({}) and '{}' ({}) must have the same partitions and elements per partition", ka,
                       fmt::join(a.shape, "x"), kb, fmt::join(b.shape, "x")));
}

const std::initializer_list<Space> kOnChip = {Space::sbuf, Space::psum};

/// A per-partition operand: a number, or a [P, 1] tile broadcast along the free dims.
struct Scalar {
  std::optional<View> tile;
  float value = 0;
};
Scalar scalar_operand(K& k, const Args& args, std::string_view key, int64_t partitions, float fallback,
                      bool required) {
  Scalar s{std::nullopt, fallback};
  auto it = args.find(key);
  if (it == args.end() || std::holds_alternative<std::monostate>(it->second)) {
    if (required) k.fail(fmt::format("argument '{}' is required", key));
    return s;
  }
  if (const double* d = std::get_if<double>(&it->second)) {
    s.value = static_cast<float>(*d);
    return s;
  }
  View v = *k.view(args, key);
  k.space(v, key, kOnChip);
  const auto [p, f] = k.tile(v, key);
  if (f != 1)
    k.fail(
        fmt::format("'{}' shape ({}) must be Nx1: one element per partition, broadcast along the free "
                    "dimensions",
                    key, fmt::join(v.shape, "x")));
  if (p != partitions) k.fail(fmt::format("'{}' spans {} partitions, the data {}", key, p, partitions));
  s.tile = v;
  return s;
}

/// The per-partition values of `s` for `partitions` partitions (read when it is a tile).
std::vector<float> scalar_values(Exec& ex, const Scalar& s, int64_t partitions) {
  if (!s.tile) return std::vector<float>(static_cast<size_t>(partitions), s.value);
  return ex.read(*s.tile);
}

/// Python passes None for an absent optional; this reads an optional name.
std::optional<std::string> opt_name(K& k, const Args& args, std::string_view key) {
  auto it = args.find(key);
  if (it == args.end() || std::holds_alternative<std::monostate>(it->second)) return std::nullopt;
  return k.name_arg(args, key);
}

bool flag(K& k, const Args& args, std::string_view key) { return k.number(args, key, 0.0) != 0; }

bool given(const Args& args, std::string_view key) {
  auto it = args.find(key);
  return it != args.end() && !std::holds_alternative<std::monostate>(it->second);
}

/// An error while the program runs, for a rule that depends on values (an index, an identity matrix),
/// located at the instruction's line.
[[noreturn]] void run_fail(const Exec& ex, std::string_view op, const std::string& message) {
  const std::string where = ex.site && ex.site->loc.known() ? ex.site->loc.str() + ": " : std::string();
  throw Error(fmt::format("{}nki.isa.{}: {}", where, op, message));
}

const std::string& dtype_name(K& k, const View& v) { return k.storage(v).info.dtype.name; }
bool is_float(K& k, const View& v) { return k.storage(v).info.dtype.is_float(); }

/// Fails unless `v`'s dtype is one of `names`.
void dtype_in(K& k, const View& v, std::string_view key, std::initializer_list<std::string_view> names) {
  const std::string& n = dtype_name(k, v);
  for (std::string_view a : names)
    if (a == n) return;
  k.fail(fmt::format("'{}' is {}; it must be {}", key, n, fmt::join(names, ", ")));
}

/// The arithmetic ALU operator args[key]; a bitvec operator or another name fails.
const AluRow* arith_op(K& k, const Args& args, std::string_view key) {
  const std::string n = k.name_arg(args, key);
  if (find_bits(n))
    k.fail(fmt::format("'{}' nl.{} is a bitvec operator; this op takes arithmetic operators only", key, n));
  const AluRow* r = find_alu(n);
  if (!r) k.fail(fmt::format("'{}' nl.{} is not an ALU operator{}", key, n, where_it_goes(n)));
  return r;
}

bool unary_alu(std::string_view n) {
  return n == "abs" || n == "rsqrt" || n == "reciprocal" || n == "square" || n == "relu" || n == "invert";
}

/// A unary op0 takes no operand: operand0 must be None or 0 (isa/tensor_scalar, "operand0").
void unary_operand(K& k, const Args& args, std::string_view op, std::string_view key) {
  auto it = args.find(key);
  if (it == args.end() || std::holds_alternative<std::monostate>(it->second)) return;
  const double* d = std::get_if<double>(&it->second);
  if (!d || *d != 0) k.fail(fmt::format("'{}' must be None or 0: nl.{} is a unary operator", key, op));
}

/// A [P, 1] tile argument such as reduce_res: exactly two dimensions, P partitions, one element each.
std::optional<View> column_tile(K& k, const Args& args, std::string_view key, int64_t p, bool required) {
  std::optional<View> v = k.view(args, key, required);
  if (!v) return v;
  k.space(*v, key, kOnChip);
  if (v->shape.size() != 2 || v->shape[0] != p || v->shape[1] != 1)
    k.fail(fmt::format("'{}' ({}) must be a ({}, 1) tile", key, fmt::join(v->shape, "x"), p));
  return v;
}

/// reduce_cmd (nki.isa.reduce_cmd's member name), one of `allowed`.
std::string reduce_cmd_arg(K& k, const Args& args, std::string_view fallback,
                           std::initializer_list<std::string_view> allowed) {
  std::string cmd = k.name_arg(args, "reduce_cmd", std::string(fallback));
  for (std::string_view a : allowed)
    if (a == cmd) return cmd;
  k.fail(fmt::format("'reduce_cmd' {} is not supported here (one of {})", cmd, fmt::join(allowed, ", ")));
}

/// A reduction operator's identity: what reset_reduce loads into an accumulator.
float reduce_identity(std::string_view op) {
  if (op == "multiply") return 1.0f;
  if (op == "maximum") return -std::numeric_limits<float>::infinity();
  if (op == "minimum") return std::numeric_limits<float>::infinity();
  return 0.0f;
}

/// An engine accumulator (one float32 per partition) after an instruction reducing `x` ([p, n],
/// row-major) with `f` under reduce_cmd `cmd`: reset loads the identity, load_reduce `init`, then
/// reset_reduce / load_reduce / reduce fold in every element; idle leaves it as it is.
void accumulate(std::vector<float>& acc, const std::string& cmd, Alu f, float identity,
                const std::vector<float>& x, int64_t p, int64_t n, const std::vector<float>& init = {}) {
  if (cmd == "idle") return;
  for (int64_t i = 0; i < p; ++i) {
    float& a = acc[static_cast<size_t>(i)];
    if (cmd == "reset" || cmd == "reset_reduce") a = identity;
    if (cmd == "load_reduce") a = init[static_cast<size_t>(i)];
    if (cmd == "reset") continue;
    for (int64_t j = 0; j < n; ++j) a = f(a, x[static_cast<size_t>(i * n + j)]);
  }
}

/// Writes the elements of `v` (row-major) where `sel` is set and leaves the others as they are: one
/// store per run of selected elements, so unselected elements are neither read nor written.
void write_selected(Exec& ex, const View& v, const std::vector<uint64_t>& bits,
                    const std::vector<uint8_t>& sel) {
  const std::vector<int64_t> idx = element_indexes(v);
  size_t i = 0;
  while (i < idx.size()) {
    if (!sel[i]) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    const int64_t step = j < idx.size() && sel[j] ? idx[j] - idx[i] : 1;
    while (j < idx.size() && sel[j] && idx[j] - idx[j - 1] == step) ++j;
    const View run{v.tensor, idx[i], {static_cast<int64_t>(j - i)}, {step}};
    ex.write_bits(run, std::span<const uint64_t>(bits.data() + i, j - i));
    i = j;
  }
}

/// A comparison operator (affine_select's cmp_op, range_select's comp_op0/1) among `allowed`.
Alu compare_op(K& k, const Args& args, std::string_view key, std::initializer_list<std::string_view> allowed,
               std::optional<std::string> fallback = std::nullopt) {
  const std::string n = k.name_arg(args, key, std::move(fallback));
  bool ok = false;
  for (std::string_view a : allowed) ok |= a == n;
  if (!ok)
    k.fail(
        fmt::format("'{}' nl.{} is not one of the comparisons nl.{}", key, n, fmt::join(allowed, ", nl.")));
  return find_alu(n)->f;
}

/// The engine an op runs on: its `engine` argument, or `fallback` when unknown. GpSimd cannot access
/// PSUM (isa/tensor_tensor, isa/tensor_copy: "GpSimd engine cannot access PSUM").
std::string engine_of(K& k, const Args& args, std::string_view fallback,
                      std::initializer_list<View> operands) {
  std::string e = k.name_arg(args, "engine", "unknown");
  if (e == "unknown") e = std::string(fallback);
  if (e == "gpsimd")
    for (const View& v : operands)
      if (k.storage(v).info.space == Space::psum) k.fail("the GpSimd engine cannot access PSUM");
  return e;
}

// ------------------------------------------------------------------------------------------------
// Data movement

/// dst = src element by element (bit-exact when `same`, else through float32), only the elements a
/// dynamic source read (View::vector_offset): a gather's rows outside its tensor are not written.
void copy(Exec& ex, const View& dst, const View& src, bool same) {
  std::vector<uint8_t> valid;
  const bool dynamic = src.dynamic();
  if (same)
    ex.write_bits(dst, ex.read_bits(src, &valid), dynamic ? &valid : nullptr);
  else
    ex.write(dst, ex.read(src, &valid), dynamic ? &valid : nullptr);
}

/// isa/dma_copy: dst = src element by element in the row-major order of both access patterns (equal
/// element counts), converting through float32 when the dtypes differ; HBM and SBUF on both sides.
/// Either side may be a gather / scatter (`.ap(vector_offset=)`, indirect DMA): elements it moves outside
/// its tensor are out-of-bounds accesses with oob_mode=error (on Trainium the DMA fails; here the
/// sanitizer reports them and they are not moved), dropped with oob_mode=skip. nl.load / nl.store
/// (nki.language, 0.3.0) are the same copy.
Body dma_copy(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), src = *k.view(args, "src");
  k.space(dst, "dst", {Space::hbm, Space::sbuf});
  k.space(src, "src", {Space::hbm, Space::sbuf});
  if (dst.numel() != src.numel())
    k.fail(fmt::format(
        "'dst' ({}, {} elements) and 'src' ({}, {} elements) must have the same number of elements",
        fmt::join(dst.shape, "x"), dst.numel(), fmt::join(src.shape, "x"), src.numel()));
  const auto rmw = opt_name(k, args, "dst_rmw_op");
  if (rmw && *rmw != "add") k.fail(fmt::format("dst_rmw_op must be nl.add, not nl.{}", *rmw));
  const std::string oob = k.name_arg(args, "oob_mode", "error");
  if (oob != "error" && oob != "skip")
    k.fail(fmt::format("oob_mode must be oob_mode.error or oob_mode.skip, not {}", oob));
  if (rmw && (dst.dynamic() || src.dynamic()))
    k.fail(
        "dst_rmw_op does not take dynamic offsets here (tilescope models the plain copy's gather and "
        "scatter)");
  const bool same = k.storage(dst).info.dtype.name == k.storage(src).info.dtype.name;
  return [dst, src, same, add = rmw.has_value(), skip = oob == "skip"](Exec& ex) {
    ex.oob_skip = skip;
    if (add) {
      std::vector<float> a = ex.read(dst), b = ex.read(src);
      for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
      ex.write(dst, a);
    } else {
      copy(ex, dst, src, same);
    }
  };
}

/// isa/tensor_copy: a copy within SBUF / PSUM (same partitions and elements per partition) on the
/// Vector, Scalar or GpSimd engine; bit-exact for equal dtypes, through float32 otherwise (and always on
/// the Scalar engine of NeuronCore-v2, where tensor_copy is not supported: activation(op=nl.copy)).
/// GpSimd cannot access PSUM.
Body tensor_copy(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), src = *k.view(args, "src");
  k.space(dst, "dst", kOnChip);
  k.space(src, "src", kOnChip);
  same_tile(k, dst, "dst", src, "src");
  const std::string e = engine_of(k, args, "vector", {dst, src});
  if (e != "vector" && e != "scalar" && e != "gpsimd")
    k.fail(fmt::format("'engine' {} cannot copy (the Vector, Scalar or GpSimd engine)", e));
  if (e == "scalar" && k.target->nc_version == 2)
    k.fail(
        "tensor_copy is not supported on the Scalar engine on NeuronCore-v2 (trn1): use nisa.activation with "
        "op=nl.copy");
  const bool same = k.storage(dst).info.dtype.name == k.storage(src).info.dtype.name;
  return [dst, src, same](Exec& ex) { copy(ex, dst, src, same); };
}

/// isa/memset: every element of dst = value (converted to dst's dtype), on the Vector or GpSimd engine
/// (GpSimd: not PSUM).
Body memset(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst");
  k.space(dst, "dst", kOnChip);
  k.tile(dst, "dst");
  const std::string e = engine_of(k, args, "vector", {dst});
  if (e != "vector" && e != "gpsimd")
    k.fail(fmt::format("'engine' {} cannot memset (the Vector or GpSimd engine)", e));
  const float value = static_cast<float>(k.number(args, "value"));
  return
      [dst, value](Exec& ex) { ex.write(dst, std::vector<float>(static_cast<size_t>(dst.numel()), value)); };
}

/// The affine `pattern` ([[step, num], ...], 1 to 4 pairs, outermost first) of iota / affine_select,
/// checked to make `f` elements per partition.
std::vector<double> affine_pattern(K& k, const Args& args, int64_t f) {
  auto it = args.find("pattern");
  const std::vector<double>* pat = it == args.end() ? nullptr : std::get_if<std::vector<double>>(&it->second);
  if (!pat || pat->size() % 2 != 0 || pat->empty() || pat->size() > 8)
    k.fail("'pattern' must be a list of 1 to 4 [step, num] pairs");
  int64_t count = 1;
  for (size_t i = 1; i < pat->size(); i += 2) count *= static_cast<int64_t>((*pat)[i]);
  if (count != f)
    k.fail(fmt::format("'pattern' makes {} elements per partition, but 'dst' holds {}", count, f));
  return *pat;
}

/// offset + c * channel_multiplier + sum_k i_k * step_k for every partition c < p and pattern index
/// (row-major), in int32 arithmetic.
std::vector<int32_t> affine_values(const std::vector<double>& pattern, int64_t offset, int64_t mult,
                                   int64_t p, int64_t f) {
  std::vector<int32_t> out(static_cast<size_t>(p * f));
  const size_t levels = pattern.size() / 2;
  for (int64_t c = 0; c < p; ++c) {
    std::vector<int64_t> idx(levels, 0);
    for (int64_t j = 0; j < f; ++j) {
      int64_t v = offset + c * mult;
      for (size_t l = 0; l < levels; ++l) v += idx[l] * static_cast<int64_t>(pattern[2 * l]);
      out[static_cast<size_t>(c * f + j)] = static_cast<int32_t>(v);
      for (size_t l = levels; l-- > 0;) {
        if (++idx[l] < static_cast<int64_t>(pattern[2 * l + 1])) break;
        idx[l] = 0;
      }
    }
  }
  return out;
}

/// isa/iota: dst[c, i...] = offset + c * channel_multiplier + sum_k i_k * step_k over `pattern`
/// ([[step, num], ...], outermost first), in int32, then converted to dst's dtype; GpSimd, SBUF only.
Body iota(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst");
  k.space(dst, "dst", {Space::sbuf});
  const auto [p, f] = k.tile(dst, "dst");
  const std::vector<double> pattern = affine_pattern(k, args, f);
  const auto offset = static_cast<int64_t>(k.number(args, "offset", 0.0));
  const auto mult = static_cast<int64_t>(k.number(args, "channel_multiplier", 0.0));
  return [dst, pattern, offset, mult, p = p, f = f](Exec& ex) {
    const std::vector<int32_t> v = affine_values(pattern, offset, mult, p, f);
    ex.write(dst, std::vector<float>(v.begin(), v.end()));
  };
}

/// isa/affine_select: dst = on_true_tile where cmp_op(a, 0), else on_false_value (a float32 number),
/// with a = offset + c * channel_multiplier + the affine `pattern` as in iota (int32); GpSimd, dst and
/// on_true_tile in SBUF with the same partitions and elements per partition (the pattern's count).
/// A selected element keeps its bits when the dtypes match, else goes through float32.
Body affine_select(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), src = *k.view(args, "on_true_tile");
  k.space(dst, "dst", {Space::sbuf});
  k.space(src, "on_true_tile", {Space::sbuf});
  same_tile(k, dst, "dst", src, "on_true_tile");
  const auto [p, f] = k.tile(dst, "dst");
  const std::vector<double> pattern = affine_pattern(k, args, f);
  const auto offset = static_cast<int64_t>(k.number(args, "offset", 0.0));
  const auto mult = static_cast<int64_t>(k.number(args, "channel_multiplier"));
  const auto off_value = static_cast<float>(k.number(args, "on_false_value"));
  const Alu cmp = compare_op(
      k, args, "cmp_op", {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}, "equal");
  const bool same = dtype_name(k, dst) == dtype_name(k, src);
  return [=, p = p, f = f](Exec& ex) {
    const std::vector<int32_t> a = affine_values(pattern, offset, mult, p, f);
    const DType& dt = ex.dtype(dst);
    const DType& st = ex.dtype(src);
    std::vector<uint64_t> x = ex.read_bits(src);
    const uint64_t off_bits = Exec::from_float(dt, off_value);
    for (size_t i = 0; i < x.size(); ++i) {
      if (cmp(static_cast<float>(a[i]), 0.0f) == 0.0f)
        x[i] = off_bits;
      else if (!same)
        x[i] = Exec::from_float(dt, Exec::to_float(st, x[i]));
    }
    ex.write_bits(dst, x);
  };
}

// ------------------------------------------------------------------------------------------------
// Vector / Scalar / GpSimd compute

/// Two-input Vector ops read at most one of their inputs from PSUM (isa/tensor_tensor: "data1 and data2
/// cannot both be in PSUM"; the same rule on every two-input Vector op).
void not_both_psum(K& k, Space sa, std::string_view ka, Space sb, std::string_view kb) {
  if (sa == Space::psum && sb == Space::psum)
    k.fail(fmt::format("'{}' and '{}' cannot both be in PSUM", ka, kb));
}

/// isa/tensor_tensor: dst = op(data1, data2) element-wise, no broadcasting; data1 and data2 not both
/// in PSUM.
Body tensor_tensor(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), a = *k.view(args, "data1"), b = *k.view(args, "data2");
  k.space(dst, "dst", kOnChip);
  const Space sa = k.space(a, "data1", kOnChip), sb = k.space(b, "data2", kOnChip);
  same_tile(k, dst, "dst", a, "data1");
  same_tile(k, dst, "dst", b, "data2");
  not_both_psum(k, sa, "data1", sb, "data2");
  const std::string op = k.name_arg(args, "op");
  engine_of(k, args, op == "power" ? "gpsimd" : "vector", {dst, a, b});
  if (const BitRow* r = find_bits(op)) {
    for (const View* v : {&dst, &a, &b})
      if (k.storage(*v).info.dtype.is_float()) k.fail(fmt::format("nl.{} takes integer tiles only", op));
    return [dst, a, b, f = r->f](Exec& ex) {
      std::vector<uint64_t> x = ex.read_bits(a), y = ex.read_bits(b);
      for (size_t i = 0; i < x.size(); ++i) x[i] = f(x[i], y[i]);
      ex.write_bits(dst, x);
    };
  }
  const AluRow* r = find_alu(op);
  if (!r) k.fail(fmt::format("'op' nl.{} is not an ALU operator{}", op, where_it_goes(op)));
  return [dst, a, b, f = r->f](Exec& ex) {
    std::vector<float> x = ex.read(a), y = ex.read(b);
    for (size_t i = 0; i < x.size(); ++i) x[i] = f(x[i], y[i]);
    ex.write(dst, x);
  };
}

/// isa/tensor_scalar: t = data op0 operand0 (operand0 op0 data with reverse0), then optionally
/// dst = t op1 operand1 (operand1 op1 t with reverse1); operands are numbers or [P, 1] tiles (float32
/// for arithmetic operators; None or 0 for a unary op0). op0 and op1 are both arithmetic (float32
/// math) or both bitvec (integer tiles, raw bits, Vector engine only). GpSimd runs only nl.rsqrt; the
/// Scalar engine of trn2 only (multiply, add), (multiply, None) and (add, None).
Body tensor_scalar(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", kOnChip);
  k.space(data, "data", kOnChip);
  same_tile(k, dst, "dst", data, "data");
  const int64_t p = k.tile(data, "data").first, f = k.tile(data, "data").second;
  const std::string op0 = k.name_arg(args, "op0");
  const auto op1 = opt_name(k, args, "op1");
  for (auto [n, key] : {std::pair{&op0, "op0"}, std::pair{op1 ? &*op1 : nullptr, "op1"}})
    if (n && !find_alu(*n) && !find_bits(*n))  // the operators first: an operand of a wrong one is moot
      k.fail(fmt::format("'{}' nl.{} is not an ALU operator{}", key, *n, where_it_goes(*n)));
  if (!op1 && given(args, "operand1")) k.fail("'operand1' must be None when 'op1' is None");
  const bool bits = find_bits(op0) != nullptr;
  if (op1 && (find_bits(*op1) != nullptr) != bits)
    k.fail(fmt::format("'op0' nl.{} and 'op1' nl.{} must both be arithmetic or both bitvec operators", op0,
                       *op1));
  if (unary_alu(op0)) unary_operand(k, args, op0, "operand0");
  const Scalar s0 = scalar_operand(k, args, "operand0", p, 0, !unary_alu(op0));
  Scalar s1;
  if (op1) s1 = scalar_operand(k, args, "operand1", p, 0, true);
  const bool rev0 = flag(k, args, "reverse0"), rev1 = flag(k, args, "reverse1");
  const std::string e = engine_of(k, args, "vector", {dst, data});
  if (e != "vector" && e != "scalar" && e != "gpsimd")
    k.fail(fmt::format("'engine' {} cannot run tensor_scalar (the Vector, Scalar or GpSimd engine)", e));
  if (bits) {
    if (e != "vector") k.fail(fmt::format("bitvec operators (nl.{}) run on the Vector engine only", op0));
    for (auto [v, key] : {std::pair{&dst, "dst"}, std::pair{&data, "data"}})
      if (is_float(k, *v))
        k.fail(fmt::format("bitvec operator nl.{} takes integer tiles only; '{}' is {}", op0, key,
                           dtype_name(k, *v)));
    for (auto [sc, key] : {std::pair<const Scalar*, const char*>{&s0, "operand0"},
                           std::pair<const Scalar*, const char*>{&s1, "operand1"}})
      if (sc->tile && is_float(k, *sc->tile))
        k.fail(fmt::format("bitvec operator nl.{} takes integer operands only; '{}' is {}", op0, key,
                           dtype_name(k, *sc->tile)));
    const auto f0 = find_bits(op0)->f;
    const auto f1 = op1 ? find_bits(*op1)->f : nullptr;
    return [=](Exec& ex) {
      std::vector<uint64_t> x = ex.read_bits(data);
      const auto values = [&](const Scalar& sc) {
        if (sc.tile) return ex.read_bits(*sc.tile);
        return std::vector<uint64_t>(static_cast<size_t>(p),
                                     static_cast<uint64_t>(static_cast<int64_t>(sc.value)));
      };
      const std::vector<uint64_t> v0 = values(s0);
      const std::vector<uint64_t> v1 = f1 ? values(s1) : std::vector<uint64_t>{};
      for (int64_t i = 0; i < p; ++i)
        for (int64_t j = 0; j < f; ++j) {
          uint64_t& b = x[static_cast<size_t>(i * f + j)];
          const uint64_t c0 = v0[static_cast<size_t>(i)];
          b = rev0 ? f0(c0, b) : f0(b, c0);
          if (f1) {
            const uint64_t c1 = v1[static_cast<size_t>(i)];
            b = rev1 ? f1(c1, b) : f1(b, c1);
          }
        }
      ex.write_bits(dst, x);
    };
  }
  const AluRow* r0 = arith_op(k, args, "op0");
  const AluRow* r1 = op1 ? arith_op(k, args, "op1") : nullptr;
  for (auto [sc, key] : {std::pair<const Scalar*, const char*>{&s0, "operand0"},
                         std::pair<const Scalar*, const char*>{&s1, "operand1"}})
    if (sc->tile && dtype_name(k, *sc->tile) != "float32")
      k.fail(fmt::format("'{}' is {}; a tile operand of an arithmetic operator must be float32", key,
                         dtype_name(k, *sc->tile)));
  if (e == "gpsimd" && (op0 != "rsqrt" || (op1 && *op1 != "rsqrt")))
    k.fail("the GpSimd engine runs tensor_scalar only with nl.rsqrt");
  if (e == "scalar" && k.target->nc_version == 3 &&
      !((op0 == "multiply" && (!op1 || *op1 == "add")) || (op0 == "add" && !op1)))
    k.fail(
        fmt::format("the Scalar engine of trn2 runs tensor_scalar only with (op0, op1) = (multiply, add), "
                    "(multiply, None) or (add, None), not (nl.{}, {})",
                    op0, op1 ? "nl." + *op1 : "None"));
  return [=](Exec& ex) {
    std::vector<float> x = ex.read(data);
    const std::vector<float> v0 = scalar_values(ex, s0, p);
    const std::vector<float> v1 = r1 ? scalar_values(ex, s1, p) : std::vector<float>{};
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j) {
        float& e2 = x[static_cast<size_t>(i * f + j)];
        const float c0 = v0[static_cast<size_t>(i)];
        e2 = rev0 ? r0->f(c0, e2) : r0->f(e2, c0);
        if (r1) {
          const float c1 = v1[static_cast<size_t>(i)];
          e2 = rev1 ? r1->f(c1, e2) : r1->f(e2, c1);
        }
      }
    ex.write(dst, x);
  };
}

/// isa/activation: out = op(data * scale + bias) per partition (scale a number or [P, 1] tile, bias a
/// [P, 1] tile); with reduce_op (nl.add), the sum over the free dims of each partition goes to the
/// Scalar engine's accumulator as reduce_cmd says and, with reduce_res, into reduce_res[P, 1].
/// isa/activation_reduce: the same with reduce_cmd = reset_reduce.
Body activation_common(K& k, const Args& args, bool always_reduce) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", kOnChip);
  k.space(data, "data", kOnChip);
  same_tile(k, dst, "dst", data, "data");
  const int64_t p = k.tile(data, "data").first, f = k.tile(data, "data").second;
  const std::string op = k.name_arg(args, "op");
  const ActRow* act = find_act(op);
  if (!act) k.fail(fmt::format("'op' nl.{} is not an activation function{}", op, where_it_goes(op)));
  const Act fn = act->f;
  const Scalar scale = scalar_operand(k, args, "scale", p, 1.0f, false);
  if (scale.tile && dtype_name(k, *scale.tile) != "float32")
    k.fail(fmt::format("'scale' is {}; a scale tile must be float32", dtype_name(k, *scale.tile)));
  const Scalar bias = scalar_operand(k, args, "bias", p, 0.0f, false);
  if (given(args, "bias") && !bias.tile && k.target->nc_version == 2)
    k.fail("'bias' must be an Nx1 tile on NeuronCore-v2 (trn1); a scalar bias needs NeuronCore-v3 or newer");
  if (bias.tile && dtype_name(k, *bias.tile) == "tfloat32") k.fail("'bias' cannot be tfloat32");
  if (given(args, "bias") && op == "reciprocal" && k.target->nc_version == 2)
    k.fail("nl.reciprocal takes no bias on NeuronCore-v2 (trn1)");
  const auto reduce_op = opt_name(k, args, "reduce_op");
  if (reduce_op && *reduce_op != "add")
    k.fail(fmt::format("'reduce_op' must be nl.add on the Scalar engine, not nl.{}", *reduce_op));
  std::optional<View> res = column_tile(k, args, "reduce_res", p, always_reduce);
  if (always_reduce && !reduce_op) k.fail("argument 'reduce_op' is required");
  const std::string cmd = always_reduce ? "reset_reduce" : k.name_arg(args, "reduce_cmd", "idle");
  if (cmd != "idle" && cmd != "reset" && cmd != "reduce" && cmd != "reset_reduce")
    k.fail(fmt::format("'reduce_cmd' {} is not idle, reset, reduce or reset_reduce", cmd));
  return [=](Exec& ex) {
    std::vector<float> x = ex.read(data);
    const std::vector<float> sc = scalar_values(ex, scale, p), bi = scalar_values(ex, bias, p);
    std::vector<float> sums(static_cast<size_t>(p), 0.0f);
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j) {
        float& e = x[static_cast<size_t>(i * f + j)];
        e = fn(e * sc[static_cast<size_t>(i)] + bi[static_cast<size_t>(i)]);
        sums[static_cast<size_t>(i)] += e;
      }
    ex.write(dst, x);
    std::vector<float>& acc = ex.scalar_accumulator();
    if (cmd == "reset" || cmd == "reset_reduce") std::fill(acc.begin(), acc.end(), 0.0f);
    if (reduce_op && (cmd == "reduce" || cmd == "reset_reduce"))
      for (int64_t i = 0; i < p; ++i) acc[static_cast<size_t>(i)] += sums[static_cast<size_t>(i)];
    if (res) ex.write(*res, std::span<const float>(acc.data(), static_cast<size_t>(p)));
  };
}
Body activation(K& k, int, const Args& args) { return activation_common(k, args, false); }
Body activation_reduce(K& k, int, const Args& args) { return activation_common(k, args, true); }

/// isa/reciprocal: dst = 1 / data in float32 on the Vector engine.
Body reciprocal(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", kOnChip);
  k.space(data, "data", kOnChip);
  same_tile(k, dst, "dst", data, "data");
  return [dst, data](Exec& ex) {
    std::vector<float> x = ex.read(data);
    for (float& e : x) e = 1.0f / e;
    ex.write(dst, x);
  };
}

/// isa/tensor_reduce: reduce the trailing free dims `axis` of each partition with `op` (a reduction
/// operator), negated with `negate`; dst keeps the partitions.
Body tensor_reduce(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", kOnChip);
  k.space(data, "data", kOnChip);
  const auto [p, f] = k.tile(data, "data");
  const std::string op = k.name_arg(args, "op");
  const AluRow* r = find_alu(op);
  if (!r || !r->reduces) k.fail(fmt::format("'op' nl.{} is not a reduction operator", op));
  // axis: an int or a list of ints; the reduced dims must be the last ones, never the partition dim.
  std::vector<int64_t> axes;
  auto it = args.find("axis");
  if (it == args.end()) k.fail("argument 'axis' is required");
  if (const double* d = std::get_if<double>(&it->second))
    axes.push_back(static_cast<int64_t>(*d));
  else if (const auto* l = std::get_if<std::vector<double>>(&it->second))
    for (double d2 : *l) axes.push_back(static_cast<int64_t>(d2));
  else
    k.fail("'axis' must be an int or a list of ints");
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0) axes[i] += rank;
    if (axes[i] <= 0 || axes[i] >= rank)
      k.fail(fmt::format("'axis' {} is not a free dimension of 'data' ({})", axes[i],
                         fmt::join(data.shape, "x")));
  }
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[axes.size() - 1 - i] != rank - 1 - static_cast<int64_t>(i))
      k.fail("'axis' must be the last free dimensions of 'data' (for a [P, A, B] tile: 2, or 1 and 2)");
  int64_t inner = 1;
  for (int64_t a : axes) inner *= data.shape[static_cast<size_t>(a)];
  const auto [dp, df] = k.tile(dst, "dst");
  if (dp != p || df * inner != f)
    k.fail(fmt::format("'dst' ({}) does not hold the reduction of 'data' ({}) over axis {}",
                       fmt::join(dst.shape, "x"), fmt::join(data.shape, "x"), fmt::join(axes, ",")));
  const bool negate = flag(k, args, "negate");
  return [dst, data, f = r->f, inner, negate](Exec& ex) {
    const std::vector<float> x = ex.read(data);
    std::vector<float> out(x.size() / static_cast<size_t>(inner));
    for (size_t o = 0; o < out.size(); ++o) {
      float acc = x[o * static_cast<size_t>(inner)];
      for (int64_t j = 1; j < inner; ++j)
        acc = f(acc, x[o * static_cast<size_t>(inner) + static_cast<size_t>(j)]);
      out[o] = negate ? -acc : acc;
    }
    ex.write(dst, out);
  };
}

// ------------------------------------------------------------------------------------------------
// Tensor engine

/// The list argument `key` (tile_position, tile_size): empty, or two ints.
std::vector<int64_t> pair_arg(K& k, const Args& args, std::string_view key) {
  auto it = args.find(key);
  if (it == args.end() || std::holds_alternative<std::monostate>(it->second)) return {};
  const auto* l = std::get_if<std::vector<double>>(&it->second);
  if (!l || (!l->empty() && l->size() != 2))
    k.fail(fmt::format("'{}' must be a tuple of two ints (or empty)", key));
  return {l->begin(), l->end()};
}

/// isa/nc_matmul: dst[M, N] (PSUM, float32; bfloat16 too on NeuronCore-v4) = stationary[K, M].T @
/// moving[K, N] (SBUF), contracting over the partition dim in float32 (K <= 128, M <= 128, N <= 512:
/// one PSUM bank; v4: 4096 for a float32 dst, 8192 for bfloat16). `accumulate` True adds to dst, False
/// overwrites, None (the default) overwrites the elements no matmul wrote since the tile was allocated
/// and adds to the others (the compiler's inference, "accumulate"). Tiling mode (both tile_position =
/// (start_row, start_col) and tile_size = (row_size, col_size), or neither): sizes 128, 64 or (v3+) 32,
/// starts multiples of the sizes inside the 128 x 128 array, K <= row_size, M <= col_size; it changes
/// no value. perf_mode double_row (v3+): float8 operands [K, 2, M] and [K, 2, N] contracting over K and
/// the 2, not with column tiling. is_transpose (v3+): the bit-accurate transpose mode, stationary[K, M]
/// with an identity moving[K, K]: dst[M, K] = stationary.T bit for bit (dst float32, or stationary's
/// own 2-byte dtype); on v2 the flag only labels the instruction (an ordinary matmul).
Body nc_matmul(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), st = *k.view(args, "stationary"), mv = *k.view(args, "moving");
  k.space(dst, "dst", {Space::psum});
  k.space(st, "stationary", {Space::sbuf});
  k.space(mv, "moving", {Space::sbuf});
  const int ver = k.target->nc_version;
  const std::string perf = k.name_arg(args, "perf_mode", "none");
  if (perf != "none" && perf != "double_row")
    k.fail(fmt::format("'perf_mode' {} is not none or double_row", perf));
  const bool dbl = perf == "double_row";
  const bool transpose = flag(k, args, "is_transpose") && ver >= 3;
  if (dbl && ver < 3) k.fail("perf_mode double_row needs NeuronCore-v3 or newer (trn2, trn3)");
  if (dbl && flag(k, args, "is_transpose"))
    k.fail("perf_mode double_row cannot be combined with is_transpose");
  // Input dtypes.
  const std::string& sd = dtype_name(k, st);
  const std::string& md = dtype_name(k, mv);
  for (auto [n, key] : {std::pair{&sd, "stationary"}, std::pair{&md, "moving"}}) {
    const bool fp8 = *n == "float8_e4m3" || *n == "float8_e5m2" || (*n == "float8_e4m3fn" && ver >= 4);
    if (dbl ? !fp8 : !(fp8 || *n == "bfloat16" || *n == "float16" || *n == "tfloat32" || *n == "float32"))
      k.fail(fmt::format("'{}' is {}; the Tensor engine takes {}", key, *n,
                         dbl ? "float8_e4m3 / float8_e5m2 with perf_mode double_row"
                             : "float8_e4m3, float8_e5m2, bfloat16, float16, tfloat32 or float32"));
  }
  if ((sd == "float8_e4m3" && md == "float8_e4m3fn") || (sd == "float8_e4m3fn" && md == "float8_e4m3"))
    k.fail("the legacy float8_e4m3 and the OCP float8_e4m3fn cannot be mixed in one matmul");
  const auto is32 = [](const std::string& nm) { return nm == "float32" || nm == "tfloat32"; };
  if (is32(sd) != is32(md))
    k.fail("'stationary' and 'moving' must both be float32 / tfloat32 when either is");
  // Shapes.
  const auto [kp, sf] = k.tile(st, "stationary");
  const auto [kp2, nf] = k.tile(mv, "moving");
  if (kp != kp2)
    k.fail(fmt::format("'stationary' ({}) and 'moving' ({}) must have the same partitions (the contraction)",
                       fmt::join(st.shape, "x"), fmt::join(mv.shape, "x")));
  int64_t m = sf, n = nf;
  if (dbl) {
    if (st.shape.size() != 3 || st.shape[1] != 2 || mv.shape.size() < 3 || mv.shape[1] != 2)
      k.fail(
          fmt::format("with perf_mode double_row, 'stationary' ({}) and 'moving' ({}) must be [K, 2, M] and "
                      "[K, 2, N]",
                      fmt::join(st.shape, "x"), fmt::join(mv.shape, "x")));
    m = sf / 2, n = nf / 2;
  } else if (st.shape.size() != 2) {
    k.fail(fmt::format("'stationary' ({}) must be a 2-D tile", fmt::join(st.shape, "x")));
  }
  // Tiling mode.
  const std::vector<int64_t> pos = pair_arg(k, args, "tile_position"), size = pair_arg(k, args, "tile_size");
  if (pos.empty() != size.empty())
    k.fail("'tile_position' and 'tile_size' must both be set (tiling mode) or neither");
  int64_t rows = 128, cols = 128;
  if (!size.empty()) {
    for (int i = 0; i < 2; ++i) {
      const char* what = i == 0 ? "row" : "column";
      const int64_t sz = size[static_cast<size_t>(i)], at = pos[static_cast<size_t>(i)];
      if (sz != 128 && sz != 64 && sz != 32)
        k.fail(fmt::format("'tile_size' {} size {} is not 128, 64 or 32", what, sz));
      if (sz == 32 && ver < 3)
        k.fail(fmt::format("'tile_size' {} size 32 needs NeuronCore-v3 or newer", what));
      if (at < 0 || at % sz != 0 || at + sz > 128)
        k.fail(fmt::format(
            "'tile_position' start {} {} must be a multiple of the {} size {} within the 128 x 128 "
            "array",
            what, at, what, sz));
    }
    rows = size[0], cols = size[1];
    if (dbl && cols != 128) k.fail("perf_mode double_row cannot be combined with column tiling");
  }
  if (kp > rows)
    k.fail(fmt::format("'stationary' spans {} partitions; at most {} (the {})", kp, rows,
                       size.empty() ? "Tensor engine's rows" : "tile_size row size"));
  if (m > cols)
    k.fail(fmt::format("'stationary' has {} elements per partition; at most {} (the {})", m, cols,
                       size.empty() ? "Tensor engine's columns" : "tile_size column size"));
  const DType& dt = k.storage(dst).info.dtype;
  const int64_t nmax = ver >= 4 ? (dt.name == "bfloat16" ? 8192 : 4096) : 512;
  if (n > nmax)
    k.fail(fmt::format("'moving' has {} elements per partition; at most {} ({})", n, nmax,
                       ver >= 4 ? "the 8 PSUM banks" : "one PSUM bank"));
  const auto [dp, df] = k.tile(dst, "dst");
  if (transpose) {
    if (mv.shape.size() != 2 || nf != kp)
      k.fail(fmt::format("with is_transpose, 'moving' ({}) must be a [{}, {}] identity matrix",
                         fmt::join(mv.shape, "x"), kp, kp));
    if (dp != m || df != kp)
      k.fail(fmt::format("'dst' ({}) must be [{}, {}]: the transpose of 'stationary' ({})",
                         fmt::join(dst.shape, "x"), m, kp, fmt::join(st.shape, "x")));
    const bool same16 = dt.name == sd && dt.bytes() == 2;
    if (dt.name != "float32" && !same16)
      k.fail(fmt::format("'dst' is {}; a transpose writes float32, or the 2-byte dtype of 'stationary' ({})",
                         dt.name, sd));
  } else {
    if (dp != m || df != n)
      k.fail(fmt::format("'dst' ({}) must be [{}, {}]: stationary's free size by moving's",
                         fmt::join(dst.shape, "x"), m, n));
    if (dt.name != "float32" && !(dt.name == "bfloat16" && ver >= 4))
      k.fail(fmt::format("'dst' is {}; the matmul result is float32{}", dt.name,
                         ver >= 4 ? " or bfloat16" : ""));
  }
  // The result accumulates in one PSUM bank of 2 KiB per partition (NeuronCore-v2 and v3; the
  // architecture guides, "PSUM"): the tile's bytes within a partition may not cross a bank boundary.
  if (ver < 4) {
    const Storage& ps = k.storage(dst);
    int64_t per_partition = 1;
    for (size_t d = 1; d < ps.info.shape.size(); ++d) per_partition *= ps.info.shape[d];
    int64_t first = dst.offset % std::max<int64_t>(1, per_partition), last = first;
    for (size_t d = 1; d < dst.shape.size(); ++d) last += dst.strides[d] * (dst.shape[d] - 1);
    const int64_t eb = dt.bytes(), bank = 2048;
    if (first * eb / bank != ((last + 1) * eb - 1) / bank)
      k.fail(fmt::format(
          "'dst' covers bytes {}..{} of each PSUM partition, across the 2 KiB bank boundary at {}: "
          "a matmul accumulates in one bank",
          first * eb, (last + 1) * eb - 1, (first * eb / bank + 1) * bank));
  }
  std::optional<bool> acc;
  if (given(args, "accumulate")) acc = k.number(args, "accumulate") != 0;
  if (transpose)
    return [dst, st, mv, m = m, kk = kp](Exec& ex) {
      const std::vector<float> id = ex.read(mv);
      for (int64_t i = 0; i < kk; ++i)
        for (int64_t j = 0; j < kk; ++j)
          if (id[static_cast<size_t>(i * kk + j)] != (i == j ? 1.0f : 0.0f))
            run_fail(ex, "nc_matmul",
                     fmt::format("is_transpose needs an identity matrix as 'moving'; element [{}, {}] is {}",
                                 i, j, id[static_cast<size_t>(i * kk + j)]));
      const std::vector<uint64_t> x = ex.read_bits(st);
      const DType& a = ex.dtype(st);
      const DType& b = ex.dtype(dst);
      std::vector<uint64_t> y(x.size());
      for (int64_t p = 0; p < kk; ++p)
        for (int64_t i = 0; i < m; ++i) {
          const uint64_t v = x[static_cast<size_t>(p * m + i)];
          y[static_cast<size_t>(i * kk + p)] =
              a.name == b.name ? v : Exec::from_float(b, Exec::to_float(a, v));
        }
      ex.write_bits(dst, y);
      Storage& out = ex.storage(dst);
      if (out.matmul_written.empty())
        out.matmul_written.assign(
            static_cast<size_t>(out.bytes / static_cast<uint64_t>(out.info.dtype.bytes())), 0);
      for (int64_t e : element_indexes(dst)) out.matmul_written[static_cast<size_t>(e)] = 1;
    };
  // The contraction runs over (partition, j) for j < `depth` (2 in double_row mode).
  const int64_t depth = dbl ? 2 : 1;
  return [dst, st, mv, m = m, n = n, kk = kp, depth, acc](Exec& ex) {
    Storage& out = ex.storage(dst);
    if (out.matmul_written.empty())
      out.matmul_written.assign(
          static_cast<size_t>(out.bytes / static_cast<uint64_t>(out.info.dtype.bytes())), 0);
    const std::vector<float> a = ex.read(st), b = ex.read(mv);
    std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
    // c[m, n] = a[K, m].T @ b[K, n] in float32 (K = partitions x depth), with Eigen's GEMM (as tt.dot).
    using Rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::Map<const Rows> am(a.data(), kk * depth, m), bm(b.data(), kk * depth, n);
    Eigen::Map<Rows> cm(c.data(), m, n);
    cm.noalias() = am.transpose() * bm;
    const std::vector<int64_t> idx = element_indexes(dst);
    bool any_add = acc.value_or(false);
    if (!acc)
      for (int64_t e : idx) any_add |= out.matmul_written[static_cast<size_t>(e)] != 0;
    if (any_add) {  // PSUM's near-memory accumulation: read, add, write
      const std::vector<float> old = ex.read(dst);
      for (size_t i = 0; i < c.size(); ++i)
        if (acc.value_or(false) || out.matmul_written[static_cast<size_t>(idx[i])]) c[i] += old[i];
    }
    ex.write(dst, c);
    for (int64_t e : idx) out.matmul_written[static_cast<size_t>(e)] = 1;
  };
}

/// isa/nc_transpose: dst[F, P] = data[P, F] (free dims flattened); the Vector engine for tiles up to
/// 32 x 32, else the Tensor engine (SBUF in, PSUM out, up to 128 x 128).
Body nc_transpose(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  const auto [p, f] = k.tile(data, "data");
  std::string e = k.name_arg(args, "engine", "unknown");
  if (e == "unknown") e = std::max(p, f) <= 32 ? "vector" : "tensor";
  if (std::max(p, f) > 128)
    k.fail(fmt::format("the tile ({}) is too large: at most 128 x 128", fmt::join(data.shape, "x")));
  if (e == "tensor") {
    k.space(data, "data", {Space::sbuf});
    k.space(dst, "dst", {Space::psum});
  } else if (e == "vector") {
    if (std::max(p, f) > 32)
      k.fail(fmt::format("the Vector engine transposes tiles up to 32 x 32, not {}",
                         fmt::join(data.shape, "x")));
    k.space(data, "data", kOnChip);
    k.space(dst, "dst", kOnChip);
  } else {
    k.fail(fmt::format("'engine' {} cannot transpose (nisa.tensor_engine or nisa.vector_engine)", e));
  }
  const auto [dp, df] = k.tile(dst, "dst");
  if (dp != f || df != p)
    k.fail(fmt::format("'dst' ({}) must be [{}, {}]: the transpose of 'data' ({})", fmt::join(dst.shape, "x"),
                       f, p, fmt::join(data.shape, "x")));
  return [dst, data, p = p, f = f](Exec& ex) {
    const std::vector<uint64_t> x = ex.read_bits(data);
    const DType& a = ex.dtype(data);
    const DType& b = ex.dtype(dst);
    if (a.name == b.name) {
      std::vector<uint64_t> y(x.size());
      for (int64_t i = 0; i < p; ++i)
        for (int64_t j = 0; j < f; ++j) y[static_cast<size_t>(j * p + i)] = x[static_cast<size_t>(i * f + j)];
      ex.write_bits(dst, y);
      return;
    }
    std::vector<float> y(x.size());
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j)
        y[static_cast<size_t>(j * p + i)] = Exec::to_float(a, x[static_cast<size_t>(i * f + j)]);
    ex.write(dst, y);
  };
}

// ------------------------------------------------------------------------------------------------
// More Vector / GpSimd compute

/// isa/tensor_partition_reduce: dst[0, ...] = op over the partitions of data (add, average, maximum in
/// float32; bitwise_or, bitwise_and on the raw bits of integer tiles); GpSimd, so SBUF only. dst has
/// one partition and data's elements per partition.
Body tensor_partition_reduce(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", {Space::sbuf});
  k.space(data, "data", {Space::sbuf});
  const auto [p, f] = k.tile(data, "data");
  const auto [dp, df] = k.tile(dst, "dst");
  if (dp != 1 || df != f)
    k.fail(
        fmt::format("'dst' ({}) must have 1 partition of {} elements: the reduction of 'data' ({}) over its "
                    "partitions",
                    fmt::join(dst.shape, "x"), f, fmt::join(data.shape, "x")));
  const std::string op = k.name_arg(args, "op");
  if (op == "bitwise_or" || op == "bitwise_and") {
    for (auto [v, key] : {std::pair{&dst, "dst"}, std::pair{&data, "data"}})
      if (is_float(k, *v))
        k.fail(fmt::format("nl.{} takes integer tiles only; '{}' is {}", op, key, dtype_name(k, *v)));
    const auto fb = find_bits(op)->f;
    return [=, p = p, f = f](Exec& ex) {
      const std::vector<uint64_t> x = ex.read_bits(data);
      std::vector<uint64_t> out(x.begin(), x.begin() + f);
      for (int64_t i = 1; i < p; ++i)
        for (int64_t j = 0; j < f; ++j)
          out[static_cast<size_t>(j)] = fb(out[static_cast<size_t>(j)], x[static_cast<size_t>(i * f + j)]);
      ex.write_bits(dst, out);
    };
  }
  if (op != "add" && op != "average" && op != "maximum")
    k.fail(
        fmt::format("'op' nl.{} is not a partition reduction (nl.add, nl.average, nl.maximum, nl.bitwise_or, "
                    "nl.bitwise_and)",
                    op));
  const bool avg = op == "average";
  const Alu fa = op == "maximum" ? f_max : f_add;
  return [=, p = p, f = f](Exec& ex) {
    const std::vector<float> x = ex.read(data);
    std::vector<float> out(x.begin(), x.begin() + f);
    for (int64_t i = 1; i < p; ++i)
      for (int64_t j = 0; j < f; ++j)
        out[static_cast<size_t>(j)] = fa(out[static_cast<size_t>(j)], x[static_cast<size_t>(i * f + j)]);
    if (avg)
      for (float& v : out) v /= static_cast<float>(p);
    ex.write(dst, out);
  };
}

/// isa/tensor_tensor_scan: per partition along the free elements, r[i] = op1(op0(data0[i], r[i-1]),
/// data1[i]) from r[-1] = initial (a number or an Nx1 tile); reverse0 makes data0 op0's rhs, reverse1
/// data1 op1's lhs. Arithmetic operators, float32 (the carried value stays float32), Vector engine;
/// data0 and data1 not both in PSUM.
Body tensor_tensor_scan(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), a = *k.view(args, "data0"), b = *k.view(args, "data1");
  k.space(dst, "dst", kOnChip);
  const Space sa = k.space(a, "data0", kOnChip), sb = k.space(b, "data1", kOnChip);
  same_tile(k, a, "data0", b, "data1");
  same_tile(k, dst, "dst", a, "data0");
  not_both_psum(k, sa, "data0", sb, "data1");
  const auto [p, f] = k.tile(a, "data0");
  const Scalar init = scalar_operand(k, args, "initial", p, 0, true);
  const AluRow* r0 = arith_op(k, args, "op0");
  const AluRow* r1 = arith_op(k, args, "op1");
  const bool rev0 = flag(k, args, "reverse0"), rev1 = flag(k, args, "reverse1");
  return [=, p = p, f = f](Exec& ex) {
    const std::vector<float> x = ex.read(a), y = ex.read(b);
    const std::vector<float> r0v = scalar_values(ex, init, p);
    std::vector<float> out(x.size());
    for (int64_t i = 0; i < p; ++i) {
      float r = r0v[static_cast<size_t>(i)];
      for (int64_t j = 0; j < f; ++j) {
        const size_t e = static_cast<size_t>(i * f + j);
        const float t = rev0 ? r0->f(r, x[e]) : r0->f(x[e], r);
        r = rev1 ? r1->f(y[e], t) : r1->f(t, y[e]);
        out[e] = r;
      }
    }
    ex.write(dst, out);
  };
}

/// isa/scalar_tensor_tensor: dst = (data op0 operand0) op1 operand1, operand0 a number or an Nx1 tile,
/// operand1 a tile like data; reverse0 / reverse1 swap each operator's operands. Arithmetic operators,
/// float32, Vector engine; data and operand1 not both in PSUM.
Body scalar_tensor_tensor(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data"), b = *k.view(args, "operand1");
  k.space(dst, "dst", kOnChip);
  const Space sd = k.space(data, "data", kOnChip), sb = k.space(b, "operand1", kOnChip);
  same_tile(k, dst, "dst", data, "data");
  same_tile(k, data, "data", b, "operand1");
  not_both_psum(k, sd, "data", sb, "operand1");
  const auto [p, f] = k.tile(data, "data");
  const AluRow* r0 = arith_op(k, args, "op0");
  const AluRow* r1 = arith_op(k, args, "op1");
  if (unary_alu(r0->name)) unary_operand(k, args, r0->name, "operand0");
  const Scalar s0 = scalar_operand(k, args, "operand0", p, 0, !unary_alu(r0->name));
  const bool rev0 = flag(k, args, "reverse0"), rev1 = flag(k, args, "reverse1");
  return [=, p = p, f = f](Exec& ex) {
    std::vector<float> x = ex.read(data);
    const std::vector<float> y = ex.read(b);
    const std::vector<float> v0 = scalar_values(ex, s0, p);
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j) {
        const size_t e = static_cast<size_t>(i * f + j);
        const float c0 = v0[static_cast<size_t>(i)];
        const float t = rev0 ? r0->f(c0, x[e]) : r0->f(x[e], c0);
        x[e] = rev1 ? r1->f(y[e], t) : r1->f(t, y[e]);
      }
    ex.write(dst, x);
  };
}

/// A reduction operator of the Vector engine's accumulator among `allowed` (nl.max / nl.min are
/// accepted for nl.maximum / nl.minimum, as the docs write them).
std::string vector_reduce_op(K& k, const Args& args, std::initializer_list<std::string_view> allowed,
                             std::optional<std::string> fallback = std::nullopt) {
  std::string n = k.name_arg(args, "reduce_op", std::move(fallback));
  if (n == "max") n = "maximum";
  if (n == "min") n = "minimum";
  for (std::string_view a : allowed)
    if (a == n) return n;
  k.fail(fmt::format("'reduce_op' nl.{} is not supported here (nl.{})", n, fmt::join(allowed, ", nl.")));
}

/// isa/tensor_scalar_reduce: dst = data op0 operand0 (one arithmetic operator, float32) and, through
/// the Vector engine's accumulator, reduce_op (add, multiply, maximum, minimum) over all free elements
/// of each partition: reset_reduce starts from reduce_op's identity, load_reduce from reduce_init (a
/// number or Nx1 tile; only with load_reduce), reduce continues; reduce_res (Nx1, optional) receives
/// the accumulator, negated with reduce_res_negate. reverse0 is not supported yet. The reduction sees
/// the float32 results, before dst's rounding.
Body tensor_scalar_reduce(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", kOnChip);
  k.space(data, "data", kOnChip);
  same_tile(k, dst, "dst", data, "data");
  const auto [p, f] = k.tile(data, "data");
  const AluRow* r0 = arith_op(k, args, "op0");
  if (unary_alu(r0->name)) unary_operand(k, args, r0->name, "operand0");
  const Scalar s0 = scalar_operand(k, args, "operand0", p, 0, !unary_alu(r0->name));
  if (flag(k, args, "reverse0")) k.fail("'reverse0' is not supported yet by tensor_scalar_reduce");
  const std::string rop = vector_reduce_op(k, args, {"add", "multiply", "maximum", "minimum"});
  const std::string cmd = reduce_cmd_arg(k, args, "reset_reduce", {"reset_reduce", "reduce", "load_reduce"});
  if (cmd == "load_reduce" && !given(args, "reduce_init"))
    k.fail("'reduce_init' is required with reduce_cmd.load_reduce");
  if (cmd != "load_reduce" && given(args, "reduce_init"))
    k.fail(fmt::format("'reduce_init' may only be set with reduce_cmd.load_reduce, not {}", cmd));
  const Scalar init = scalar_operand(k, args, "reduce_init", p, 0, false);
  const std::optional<View> res = column_tile(k, args, "reduce_res", p, false);
  const bool negate = flag(k, args, "reduce_res_negate");
  const Alu rf = find_alu(rop)->f;
  const float ident = reduce_identity(rop);
  return [=, p = p, f = f](Exec& ex) {
    std::vector<float> x = ex.read(data);
    const std::vector<float> v0 = scalar_values(ex, s0, p);
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j) {
        float& e = x[static_cast<size_t>(i * f + j)];
        e = r0->f(e, v0[static_cast<size_t>(i)]);
      }
    ex.write(dst, x);
    const std::vector<float> iv = cmd == "load_reduce" ? scalar_values(ex, init, p) : std::vector<float>{};
    std::vector<float>& acc = ex.vector_accumulator();
    accumulate(acc, cmd, rf, ident, x, p, f, iv);
    if (res) {
      std::vector<float> out(acc.begin(), acc.begin() + p);
      if (negate)
        for (float& v : out) v = -v;
      ex.write(*res, out);
    }
  };
}

/// The predicate dtypes of tensor_copy_predicated / select_reduce (bool_ is stored as uint8).
void predicate_dtype(K& k, const View& v, std::initializer_list<std::string_view> names) {
  const std::string& n = dtype_name(k, v);
  if (n == "bool_") return;
  for (std::string_view a : names)
    if (a == n) return;
  k.fail(fmt::format("'predicate' is {}; it must be {}", n, fmt::join(names, ", ")));
}

/// isa/tensor_copy_predicated: dst = src where predicate != 0 (== 0 with reverse_pred), dst unchanged
/// elsewhere; src a tile of dst's dtype (copied bit-exactly) or a number; Vector engine. predicate
/// uint8 / uint16 / uint32; src and predicate not both in PSUM; src, dst and predicate with the same
/// partitions and elements per partition.
Body tensor_copy_predicated(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), pred = *k.view(args, "predicate");
  k.space(dst, "dst", kOnChip);
  const Space sp = k.space(pred, "predicate", kOnChip);
  same_tile(k, dst, "dst", pred, "predicate");
  predicate_dtype(k, pred, {"uint8", "uint16", "uint32"});
  std::optional<View> src;
  float value = 0;
  if (auto it = args.find("src"); it != args.end() && std::holds_alternative<double>(it->second)) {
    value = static_cast<float>(std::get<double>(it->second));
  } else {
    src = k.view(args, "src");
    const Space ss = k.space(*src, "src", kOnChip);
    same_tile(k, dst, "dst", *src, "src");
    not_both_psum(k, ss, "src", sp, "predicate");
    if (dtype_name(k, *src) != dtype_name(k, dst))
      k.fail(fmt::format("'src' ({}) and 'dst' ({}) must have the same dtype", dtype_name(k, *src),
                         dtype_name(k, dst)));
  }
  const bool rev = flag(k, args, "reverse_pred");
  return [=](Exec& ex) {
    const std::vector<uint64_t> pb = ex.read_bits(pred);
    std::vector<uint64_t> bits =
        src ? ex.read_bits(*src) : std::vector<uint64_t>(pb.size(), Exec::from_float(ex.dtype(dst), value));
    std::vector<uint8_t> sel(pb.size());
    for (size_t i = 0; i < pb.size(); ++i) sel[i] = (pb[i] != 0) != rev;
    write_selected(ex, dst, bits, sel);
  };
}

/// Whether the target has NeuronCore-v`version` or newer; fails naming the op's requirement if not.
void needs_version(K& k, int version) {
  if (k.target->nc_version < version)
    k.fail(fmt::format("available only on NeuronCore-v{} and newer ({}), not {} (NeuronCore-v{})", version,
                       version == 3 ? "trn2, trn3" : "trn3", k.target->name, k.target->nc_version));
}

constexpr float kFp32Min = -std::numeric_limits<float>::max();

/// isa/range_select (NeuronCore-v3+): with i = range_start + the free index of each element (float32),
/// dst = on_true_tile where comp_op0(i, bound0) and comp_op1(i, bound1), else on_false_value (which
/// must be FP32_MIN); bound0 / bound1 float32 Nx1 tiles; the maximum of each partition goes to the
/// Vector engine's accumulator (reduce_cmd) and reduce_res. on_true_tile float; range_start + free
/// index below 2^24.
Body range_select(K& k, int, const Args& args) {
  needs_version(k, 3);
  const View dst = *k.view(args, "dst"), src = *k.view(args, "on_true_tile");
  k.space(dst, "dst", kOnChip);
  k.space(src, "on_true_tile", kOnChip);
  same_tile(k, dst, "dst", src, "on_true_tile");
  const auto [p, f] = k.tile(src, "on_true_tile");
  if (!is_float(k, src))
    k.fail(fmt::format("'on_true_tile' is {}; it must be a float dtype", dtype_name(k, src)));
  const std::initializer_list<std::string_view> cmps = {"equal", "less", "less_equal", "greater",
                                                        "greater_equal"};
  const Alu c0 = compare_op(k, args, "comp_op0", cmps), c1 = compare_op(k, args, "comp_op1", cmps);
  const std::optional<View> b0 = column_tile(k, args, "bound0", p, true),
                            b1 = column_tile(k, args, "bound1", p, true);
  dtype_in(k, *b0, "bound0", {"float32"});
  dtype_in(k, *b1, "bound1", {"float32"});
  vector_reduce_op(k, args, {"maximum"}, "maximum");
  const std::string cmd =
      reduce_cmd_arg(k, args, "reset_reduce", {"idle", "reset", "reduce", "reset_reduce"});
  const std::optional<View> res = column_tile(k, args, "reduce_res", p, false);
  const double start = k.number(args, "range_start", 0.0);
  if (start != std::floor(start)) k.fail(fmt::format("'range_start' must be an integer, not {}", start));
  if (std::fabs(start) + static_cast<double>(f - 1) >= 16777216.0)
    k.fail(fmt::format("range_start + the free index reaches {}; it must stay within 2^24",
                       start + static_cast<double>(f - 1)));
  const double off = k.number(args, "on_false_value", static_cast<double>(kFp32Min));
  if (static_cast<float>(off) != kFp32Min)
    k.fail(fmt::format("'on_false_value' must be FP32_MIN (-3.4028235e+38), not {}", off));
  return [=, p = p, f = f](Exec& ex) {
    std::vector<float> x = ex.read(src);
    const std::vector<float> lo = ex.read(*b0), hi = ex.read(*b1);
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j) {
        const float idx = static_cast<float>(start + static_cast<double>(j));
        float& e = x[static_cast<size_t>(i * f + j)];
        if (c0(idx, lo[static_cast<size_t>(i)]) == 0.0f || c1(idx, hi[static_cast<size_t>(i)]) == 0.0f)
          e = kFp32Min;
      }
    ex.write(dst, x);
    std::vector<float>& acc = ex.vector_accumulator();
    accumulate(acc, cmd, f_max, reduce_identity("maximum"), x, p, f);
    if (res) ex.write(*res, std::span<const float>(acc.data(), static_cast<size_t>(p)));
  };
}

/// isa/select_reduce: dst = on_true where predicate != 0 (== 0 with reverse_pred), else on_false (a
/// float32 number or an Nx1 tile); the maximum of each partition goes to the Vector engine's
/// accumulator (reduce_cmd) and reduce_res (Nx1, float). on_true not tfloat32 / int32 / uint32;
/// predicate int8 / uint8 / int16 / uint16; on_true and predicate not both in PSUM.
Body select_reduce(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), pred = *k.view(args, "predicate"), src = *k.view(args, "on_true");
  k.space(dst, "dst", kOnChip);
  const Space sp = k.space(pred, "predicate", kOnChip), ss = k.space(src, "on_true", kOnChip);
  not_both_psum(k, ss, "on_true", sp, "predicate");
  same_tile(k, dst, "dst", src, "on_true");
  same_tile(k, dst, "dst", pred, "predicate");
  const auto [p, f] = k.tile(src, "on_true");
  const std::string& st = dtype_name(k, src);
  if (st == "tfloat32" || st == "int32" || st == "uint32")
    k.fail(fmt::format("'on_true' is {}; it cannot be tfloat32, int32 or uint32", st));
  predicate_dtype(k, pred, {"int8", "uint8", "int16", "uint16"});
  const Scalar off = scalar_operand(k, args, "on_false", p, 0, true);
  const std::optional<View> res = column_tile(k, args, "reduce_res", p, false);
  if (res && !is_float(k, *res))
    k.fail(fmt::format("'reduce_res' is {}; it must be a float dtype", dtype_name(k, *res)));
  vector_reduce_op(k, args, {"maximum"}, "maximum");
  const std::string cmd = reduce_cmd_arg(k, args, "idle", {"idle", "reset", "reduce", "reset_reduce"});
  const bool rev = flag(k, args, "reverse_pred");
  return [=, p = p, f = f](Exec& ex) {
    const std::vector<uint64_t> pb = ex.read_bits(pred);
    std::vector<float> x = ex.read(src);
    const std::vector<float> ov = scalar_values(ex, off, p);
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j) {
        const size_t e = static_cast<size_t>(i * f + j);
        if ((pb[e] != 0) == rev) x[e] = ov[static_cast<size_t>(i)];
      }
    ex.write(dst, x);
    std::vector<float>& acc = ex.vector_accumulator();
    accumulate(acc, cmd, f_max, reduce_identity("maximum"), x, p, f);
    if (res) ex.write(*res, std::span<const float>(acc.data(), static_cast<size_t>(p)));
  };
}

/// isa/exponential (NeuronCore-v4): dst = exp(src - max_value) in float32, max_value a number or a
/// float32 Nx1 tile; with reduce_cmd other than idle the Vector engine's accumulator sums the float32
/// results (reset_reduce from 0, load_reduce from reduce_init, reduce continues) and reduce_res (Nx1)
/// receives it. Up to 4-D tiles; the dtype lists of the docs; reduce_init 0 / unset unless load_reduce.
Body exponential(K& k, int, const Args& args) {
  needs_version(k, 4);
  const View dst = *k.view(args, "dst"), src = *k.view(args, "src");
  k.space(dst, "dst", kOnChip);
  k.space(src, "src", kOnChip);
  same_tile(k, dst, "dst", src, "src");
  for (auto [v, key] : {std::pair{&dst, "dst"}, std::pair{&src, "src"}})
    if (v->shape.size() > 4)
      k.fail(fmt::format("'{}' ({}) has more than 4 dimensions", key, fmt::join(v->shape, "x")));
  dtype_in(k, dst, "dst",
           {"float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "tfloat32", "int8", "int16",
            "int32", "uint8", "uint16"});
  dtype_in(k, src, "src",
           {"float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "int8", "int16", "int32", "uint8",
            "uint16", "uint32"});
  const auto [p, f] = k.tile(src, "src");
  const Scalar mx = scalar_operand(k, args, "max_value", p, 0, false);
  if (mx.tile) dtype_in(k, *mx.tile, "max_value", {"float32"});
  const std::string cmd = reduce_cmd_arg(k, args, "idle", {"idle", "reset_reduce", "reduce", "load_reduce"});
  const Scalar init = scalar_operand(k, args, "reduce_init", p, 0, false);
  if (cmd != "load_reduce" && (init.tile || init.value != 0))
    k.fail(
        fmt::format("'reduce_init' must be unset or 0.0 unless reduce_cmd is load_reduce (it is {})", cmd));
  if (init.tile) dtype_in(k, *init.tile, "reduce_init", {"float32"});
  const std::optional<View> res = column_tile(k, args, "reduce_res", p, false);
  if (res)
    dtype_in(k, *res, "reduce_res",
             {"float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "tfloat32"});
  return [=, p = p, f = f](Exec& ex) {
    std::vector<float> x = ex.read(src);
    const std::vector<float> m = scalar_values(ex, mx, p);
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j) {
        float& e = x[static_cast<size_t>(i * f + j)];
        e = std::exp(e - m[static_cast<size_t>(i)]);
      }
    ex.write(dst, x);
    const std::vector<float> iv = cmd == "load_reduce" ? scalar_values(ex, init, p) : std::vector<float>{};
    std::vector<float>& acc = ex.vector_accumulator();
    accumulate(acc, cmd, f_add, 0.0f, x, p, f, iv);
    if (res) ex.write(*res, std::span<const float>(acc.data(), static_cast<size_t>(p)));
  };
}

/// isa/bn_stats: per partition, over the even- and the odd-indexed free elements (flattened), dst's 6
/// elements = count, mean, variance * count of the even ones, then the same of the odd ones (population
/// variance), in float32; at most 512 (nl.tile_size.bn_stats_fmax) elements per partition; Vector engine.
Body bn_stats(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", kOnChip);
  k.space(data, "data", kOnChip);
  const auto [p, f] = k.tile(data, "data");
  if (f > 512)
    k.fail(fmt::format("'data' has {} elements per partition; at most 512 (nl.tile_size.bn_stats_fmax)", f));
  const auto [dp, df] = k.tile(dst, "dst");
  if (dp != p || df != 6)
    k.fail(fmt::format("'dst' ({}) must hold 6 elements per partition on the {} partitions of 'data'",
                       fmt::join(dst.shape, "x"), p));
  return [=, p = p, f = f](Exec& ex) {
    const std::vector<float> x = ex.read(data);
    std::vector<float> out(static_cast<size_t>(p * 6));
    for (int64_t i = 0; i < p; ++i)
      for (int64_t half = 0; half < 2; ++half) {
        float n = 0, sum = 0;
        for (int64_t j = half; j < f; j += 2) n += 1, sum += x[static_cast<size_t>(i * f + j)];
        const float mean = n > 0 ? sum / n : 0.0f;
        float m2 = 0;
        for (int64_t j = half; j < f; j += 2) {
          const float d = x[static_cast<size_t>(i * f + j)] - mean;
          m2 += d * d;
        }
        float* o = &out[static_cast<size_t>(i * 6 + half * 3)];
        o[0] = n, o[1] = mean, o[2] = m2;
      }
    ex.write(dst, out);
  };
}

/// isa/bn_aggr: data holds (count, mean, variance * count) triples per partition (bn_stats outputs; a
/// multiple of 3 elements); dst's 2 elements = the mean and the (population) variance of their union,
/// combined in float32 (Chan's parallel formula; count-0 triples add nothing); Vector engine.
Body bn_aggr(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", kOnChip);
  k.space(data, "data", kOnChip);
  const auto [p, f] = k.tile(data, "data");
  if (f % 3 != 0)
    k.fail(
        fmt::format("'data' has {} elements per partition; bn_aggr takes (count, mean, variance * count) "
                    "triples, a multiple of 3",
                    f));
  const auto [dp, df] = k.tile(dst, "dst");
  if (dp != p || df != 2)
    k.fail(fmt::format(
        "'dst' ({}) must hold 2 elements per partition (mean, variance) on the {} partitions of 'data'",
        fmt::join(dst.shape, "x"), p));
  return [=, p = p, f = f](Exec& ex) {
    const std::vector<float> x = ex.read(data);
    std::vector<float> out(static_cast<size_t>(p * 2));
    for (int64_t i = 0; i < p; ++i) {
      float n = 0, mean = 0, m2 = 0;
      for (int64_t t = 0; t < f; t += 3) {
        const float* g = &x[static_cast<size_t>(i * f + t)];
        if (g[0] <= 0) continue;
        const float nn = n + g[0], d = g[1] - mean;
        mean += d * g[0] / nn;
        m2 += g[2] + d * d * n * g[0] / nn;
        n = nn;
      }
      out[static_cast<size_t>(i * 2)] = mean;
      out[static_cast<size_t>(i * 2 + 1)] = n > 0 ? m2 / n : 0.0f;
    }
    ex.write(dst, out);
  };
}

/// The top-8 family's shape rules: `data` on chip, up to `max_rank` dimensions, `lo`..16384 elements
/// per partition.
std::pair<int64_t, int64_t> top8_data(K& k, const View& v, std::string_view key, size_t max_rank,
                                      int64_t lo) {
  k.space(v, key, kOnChip);
  if (v.shape.size() > max_rank)
    k.fail(fmt::format("'{}' ({}) has more than {} dimensions", key, fmt::join(v.shape, "x"), max_rank));
  const auto [p, f] = k.tile(v, key);
  if (f < lo || f > 16384)
    k.fail(fmt::format("'{}' has {} elements per partition; it must have {} to 16384", key, f, lo));
  return {p, f};
}

/// An [P, 8] tile (max8's and nc_find_index8's dst).
void eight_per_partition(K& k, const View& v, std::string_view key, int64_t p, bool two_d) {
  k.space(v, key, kOnChip);
  const auto [vp, vf] = k.tile(v, key);
  if (vp != p || vf != 8 || (two_d && v.shape.size() != 2))
    k.fail(fmt::format("'{}' ({}) must be {}8 elements on each of the {} partitions", key,
                       fmt::join(v.shape, "x"), two_d ? "a 2-D tile of " : "", p));
}

/// isa/max8: dst[P, 8] = the 8 largest values of each partition of src (float32, descending); src up to
/// 5-D with 8 to 16384 elements per partition; Vector engine.
Body max8(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), src = *k.view(args, "src");
  const auto [p, f] = top8_data(k, src, "src", 5, 8);
  eight_per_partition(k, dst, "dst", p, true);
  return [=, p = p, f = f](Exec& ex) {
    std::vector<float> x = ex.read(src);
    std::vector<float> out(static_cast<size_t>(p * 8));
    for (int64_t i = 0; i < p; ++i) {
      auto b = x.begin() + i * f;
      std::partial_sort(b, b + 8, b + f, [](float a, float c) { return a > c; });
      std::copy(b, b + 8, out.begin() + i * 8);
    }
    ex.write(dst, out);
  };
}

/// isa/nc_find_index8: dst[P, 8] (uint16 / uint32) = the free index (flattened) of the first occurrence
/// of each of the 8 vals of the partition in data, compared in float32; equal vals take successive
/// occurrences in ascending order; a value not found gives all ones (0xFFFF / 0xFFFFFFFF). data up to
/// 5-D with 8 to 16384 elements per partition, vals 8 per partition (up to 3-D).
Body nc_find_index8(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data"), vals = *k.view(args, "vals");
  const auto [p, f] = top8_data(k, data, "data", 5, 8);
  if (vals.shape.size() > 3)
    k.fail(fmt::format("'vals' ({}) has more than 3 dimensions", fmt::join(vals.shape, "x")));
  eight_per_partition(k, vals, "vals", p, false);
  eight_per_partition(k, dst, "dst", p, true);
  dtype_in(k, dst, "dst", {"uint16", "uint32"});
  return [=, p = p, f = f](Exec& ex) {
    const std::vector<float> x = ex.read(data), v = ex.read(vals);
    const uint64_t none = ex.dtype(dst).bytes() == 2 ? 0xffffu : 0xffffffffu;
    std::vector<uint64_t> out(static_cast<size_t>(p * 8), none);
    std::vector<uint8_t> taken(static_cast<size_t>(f));
    for (int64_t i = 0; i < p; ++i) {
      std::fill(taken.begin(), taken.end(), 0);
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t e = 0; e < f; ++e)
          if (!taken[static_cast<size_t>(e)] &&
              x[static_cast<size_t>(i * f + e)] == v[static_cast<size_t>(i * 8 + j)]) {
            taken[static_cast<size_t>(e)] = 1;
            out[static_cast<size_t>(i * 8 + j)] = static_cast<uint64_t>(e);
            break;
          }
    }
    ex.write_bits(dst, out);
  };
}

/// isa/nc_match_replace8: dst = data with the first occurrence of each of the 8 vals of the partition
/// (float32 comparison, free dims flattened) replaced by imm; vals are processed from the last to the
/// first, so among equal vals the first occurrence goes to the highest slot; dst_idx (optional, 8
/// integers per partition) receives the indices (all ones for a value not found: undefined on the
/// hardware). data up to 5-D, at most 16384 per partition; vals up to 3-D; Vector engine.
Body nc_match_replace8(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data"), vals = *k.view(args, "vals");
  const auto [p, f] = top8_data(k, data, "data", 5, 1);
  k.space(dst, "dst", kOnChip);
  same_tile(k, dst, "dst", data, "data");
  if (vals.shape.size() > 3)
    k.fail(fmt::format("'vals' ({}) has more than 3 dimensions", fmt::join(vals.shape, "x")));
  eight_per_partition(k, vals, "vals", p, false);
  const float imm = static_cast<float>(k.number(args, "imm"));
  const std::optional<View> idx = k.view(args, "dst_idx", false);
  if (idx) {
    eight_per_partition(k, *idx, "dst_idx", p, false);
    if (is_float(k, *idx))
      k.fail(fmt::format("'dst_idx' is {}; it must be an integer dtype", dtype_name(k, *idx)));
  }
  const bool same = dtype_name(k, dst) == dtype_name(k, data);
  return [=, p = p, f = f](Exec& ex) {
    const std::vector<uint64_t> bits = ex.read_bits(data);
    const std::vector<float> v = ex.read(vals);
    const DType& st = ex.dtype(data);
    const DType& dt = ex.dtype(dst);
    std::vector<uint64_t> out(bits.size());
    for (size_t i = 0; i < bits.size(); ++i)
      out[i] = same ? bits[i] : Exec::from_float(dt, Exec::to_float(st, bits[i]));
    std::vector<uint64_t> where(static_cast<size_t>(p * 8), ~uint64_t{0});
    std::vector<uint8_t> taken(static_cast<size_t>(f));
    const uint64_t imm_bits = Exec::from_float(dt, imm);
    for (int64_t i = 0; i < p; ++i) {
      std::fill(taken.begin(), taken.end(), 0);
      for (int64_t j = 8; j-- > 0;)
        for (int64_t e = 0; e < f; ++e) {
          const size_t at = static_cast<size_t>(i * f + e);
          if (!taken[static_cast<size_t>(e)] &&
              Exec::to_float(st, bits[at]) == v[static_cast<size_t>(i * 8 + j)]) {
            taken[static_cast<size_t>(e)] = 1;
            out[at] = imm_bits;
            where[static_cast<size_t>(i * 8 + j)] = static_cast<uint64_t>(e);
            break;
          }
        }
    }
    ex.write_bits(dst, out);
    if (idx) {
      const int b = ex.dtype(*idx).bytes();
      for (uint64_t& w : where)
        if (b < 8) w &= (uint64_t{1} << (8 * b)) - 1;
      ex.write_bits(*idx, where);
    }
  };
}

/// isa/local_gather: GpSimd core c serves partitions [16c, 16c + 16): its indices are index's 16
/// partitions flattened partition-first (column by column), the first num_valid_indices of them (default
/// all); every partition q of the core gathers, for each index t, num_elem_per_idx contiguous elements
/// of its own row of src_buffer starting at element index[t] (flattened free dims), so dst[q] holds
/// num_valid_indices * num_elem_per_idx elements (the NumPy reference of AWS's example,
/// test_nki_isa_local_gather.py). SBUF only; index uint16; dst dtype = src dtype; src and index with the
/// same partitions, a multiple of 16; num_elem_per_idx in {1, 2, 4, 8, 16, 32}; at most 4096 indices
/// per core. An index past the row is undefined on the hardware: an error here.
Body local_gather(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), src = *k.view(args, "src_buffer"), index = *k.view(args, "index");
  k.space(dst, "dst", {Space::sbuf});
  k.space(src, "src_buffer", {Space::sbuf});
  k.space(index, "index", {Space::sbuf});
  const auto [p, f] = k.tile(src, "src_buffer");
  const auto [ip, ifree] = k.tile(index, "index");
  if (ip != p || p % 16 != 0)
    k.fail(fmt::format("'src_buffer' ({}) and 'index' ({}) must have the same partitions, a multiple of 16",
                       fmt::join(src.shape, "x"), fmt::join(index.shape, "x")));
  dtype_in(k, index, "index", {"uint16"});
  if (dtype_name(k, dst) != dtype_name(k, src))
    k.fail(fmt::format("'dst' ({}) must have the dtype of 'src_buffer' ({}): local_gather does not convert",
                       dtype_name(k, dst), dtype_name(k, src)));
  const auto n = static_cast<int64_t>(k.number(args, "num_elem_per_idx", 1.0));
  if (n != 1 && n != 2 && n != 4 && n != 8 && n != 16 && n != 32)
    k.fail(fmt::format("'num_elem_per_idx' {} is not one of 1, 2, 4, 8, 16, 32", n));
  const int64_t per_core = 16 * ifree;
  const auto valid = static_cast<int64_t>(k.number(args, "num_valid_indices", static_cast<double>(per_core)));
  if (valid < 1 || valid > per_core)
    k.fail(fmt::format(
        "'num_valid_indices' {} must be 1 to {} (the indices in each 16-partition slice of 'index')", valid,
        per_core));
  if (valid > 4096)
    k.fail(fmt::format("'num_valid_indices' {}: at most 4096 indices per GpSimd core", valid));
  const auto [dp, df] = k.tile(dst, "dst");
  if (dp != p || df != valid * n)
    k.fail(
        fmt::format("'dst' ({}) must hold num_valid_indices * num_elem_per_idx = {} elements on each of {} "
                    "partitions",
                    fmt::join(dst.shape, "x"), valid * n, p));
  return [=, p = p, f = f, ifree = ifree](Exec& ex) {
    const std::vector<uint64_t> x = ex.read_bits(src), ix = ex.read_bits(index);
    std::vector<uint64_t> out(static_cast<size_t>(p * valid * n));
    for (int64_t c = 0; c < p / 16; ++c) {
      std::vector<int64_t> list;
      for (int64_t col = 0; col < ifree && static_cast<int64_t>(list.size()) < valid; ++col)
        for (int64_t r = 0; r < 16 && static_cast<int64_t>(list.size()) < valid; ++r)
          list.push_back(static_cast<int64_t>(ix[static_cast<size_t>((16 * c + r) * ifree + col)]));
      for (int64_t t = 0; t < valid; ++t)
        if (list[static_cast<size_t>(t)] + n > f)
          run_fail(ex, "local_gather",
                   fmt::format(
                       "index {} (partition {}) + num_elem_per_idx {} is past the {} elements per partition "
                       "of 'src_buffer'",
                       list[static_cast<size_t>(t)], 16 * c + (t % 16), n, f));
      for (int64_t q = 16 * c; q < 16 * c + 16; ++q)
        for (int64_t t = 0; t < valid; ++t)
          for (int64_t e = 0; e < n; ++e)
            out[static_cast<size_t>((q * valid + t) * n + e)] =
                x[static_cast<size_t>(q * f + list[static_cast<size_t>(t)] + e)];
    }
    ex.write_bits(dst, out);
  };
}

/// isa/dma_transpose: dst = np.transpose(src, axes) through a DMA queue, bit-exact: src in HBM or SBUF,
/// dst in SBUF with src's dtype, 2 bytes wide (both documented lowerings require it), the same rank;
/// axes (1, 0), (2, 1, 0) or (3, 1, 2, 0), by default the one of src's rank. dge_mode unknown or hwdge
/// (NeuronCore-v3+; then 2-D src has 16 rows, 3-/4-D src.shape[0] in {1, 2, 4, 8, 16} with
/// src.shape[0] * src.shape[-2] a multiple of 16; src.shape[-1] <= 128). The indirect (swdge)
/// form needs vector_offset access patterns, which tilescope does not model: an error.
Body dma_transpose(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), src = *k.view(args, "src");
  k.space(dst, "dst", {Space::sbuf});
  k.space(src, "src", {Space::hbm, Space::sbuf});
  k.tile(dst, "dst");
  if (dtype_name(k, dst) != dtype_name(k, src))
    k.fail(fmt::format("'dst' ({}) and 'src' ({}) must have the same dtype", dtype_name(k, dst),
                       dtype_name(k, src)));
  if (k.storage(src).info.dtype.bytes() != 2)
    k.fail(fmt::format("'src' is {}; DMA transposes take 2-byte dtypes", dtype_name(k, src)));
  const size_t rank = src.shape.size();
  if (rank < 2 || rank > 4)
    k.fail(fmt::format("'src' ({}) must have 2 to 4 dimensions", fmt::join(src.shape, "x")));
  if (dst.shape.size() != rank)
    k.fail(fmt::format("'dst' ({}) must have the rank of 'src' ({})", fmt::join(dst.shape, "x"),
                       fmt::join(src.shape, "x")));
  static const std::vector<int64_t> kAxes[] = {{1, 0}, {2, 1, 0}, {3, 1, 2, 0}};
  std::vector<int64_t> axes = kAxes[rank - 2];
  if (given(args, "axes")) {
    auto it = args.find("axes");
    const auto* l = std::get_if<std::vector<double>>(&it->second);
    if (!l) k.fail("'axes' must be a tuple of ints");
    std::vector<int64_t> a(l->begin(), l->end());
    if (a != axes)
      k.fail(fmt::format(
          "'axes' ({}) is not supported for a {}-D 'src': the supported axes are (1, 0), (2, 1, 0) "
          "and (3, 1, 2, 0)",
          fmt::join(a, ", "), rank));
  }
  for (size_t i = 0; i < rank; ++i)
    if (dst.shape[i] != src.shape[static_cast<size_t>(axes[i])])
      k.fail(fmt::format("'dst' ({}) must be 'src' ({}) transposed by axes ({})", fmt::join(dst.shape, "x"),
                         fmt::join(src.shape, "x"), fmt::join(axes, ", ")));
  const std::string mode = k.name_arg(args, "dge_mode", "unknown");
  if (mode == "swdge")
    k.fail(
        "dge_mode swdge is the indirect (gather) transpose, whose vector_offset access patterns tilescope "
        "does not "
        "model");
  if (mode != "unknown" && mode != "hwdge")
    k.fail(fmt::format("'dge_mode' {} is not unknown or hwdge", mode));
  if (k.name_arg(args, "oob_mode", "error") != "error")
    k.fail("oob_mode.skip is only valid when 'src' uses indirect indexing");
  if (given(args, "priority")) {
    needs_version(k, 4);
    const double pr = k.number(args, "priority");
    if (pr < 0 || pr > 3 || pr != std::floor(pr))
      k.fail(fmt::format("'priority' {} is not 0, 1, 2 or 3", pr));
  }
  if (mode == "hwdge") {
    if (k.target->nc_version < 3) k.fail("hardware DGE (dge_mode hwdge) needs NeuronCore-v3 or newer");
    const int64_t s0 = src.shape[0];
    if (rank == 2 && s0 != 16) k.fail(fmt::format("with hwdge, a 2-D 'src' must have 16 rows, not {}", s0));
    if (rank > 2 &&
        ((s0 != 1 && s0 != 2 && s0 != 4 && s0 != 8 && s0 != 16) || (s0 * src.shape[rank - 2]) % 16 != 0))
      k.fail(fmt::format(
          "with hwdge, src.shape[0] ({}) must be 1, 2, 4, 8 or 16 and src.shape[0] * src.shape[-2] "
          "a multiple of 16",
          s0));
    // src.shape[-1] <= 128 holds already: it is dst's partition dim under every supported axes.
  }
  return [dst, src, axes](Exec& ex) {
    const std::vector<uint64_t> x = ex.read_bits(src);
    const size_t r = src.shape.size();
    std::vector<int64_t> sstride(r, 1);
    for (size_t d = r - 1; d > 0; --d) sstride[d - 1] = sstride[d] * src.shape[d];
    std::vector<uint64_t> out(x.size());
    std::vector<int64_t> di(r, 0);
    for (size_t o = 0; o < out.size(); ++o) {
      int64_t at = 0;
      for (size_t d = 0; d < r; ++d) at += di[d] * sstride[static_cast<size_t>(axes[d])];
      out[o] = x[static_cast<size_t>(at)];
      for (size_t d = r; d-- > 0;) {
        if (++di[d] < dst.shape[d]) break;
        di[d] = 0;
      }
    }
    ex.write_bits(dst, out);
  };
}

constexpr OpSpec kOps[] = {
    {"dma_copy", dma_copy},
    {"load", dma_copy},
    {"store", dma_copy},
    {"tensor_copy", tensor_copy},
    {"memset", memset},
    {"iota", iota},
    {"tensor_tensor", tensor_tensor},
    {"tensor_scalar", tensor_scalar},
    {"activation", activation},
    {"activation_reduce", activation_reduce},
    {"reciprocal", reciprocal},
    {"tensor_reduce", tensor_reduce},
    {"nc_matmul", nc_matmul},
    {"nc_transpose", nc_transpose},
    {"tensor_partition_reduce", tensor_partition_reduce},
    {"tensor_tensor_scan", tensor_tensor_scan},
    {"scalar_tensor_tensor", scalar_tensor_tensor},
    {"tensor_scalar_reduce", tensor_scalar_reduce},
    {"tensor_copy_predicated", tensor_copy_predicated},
    {"affine_select", affine_select},
    {"range_select", range_select},
    {"select_reduce", select_reduce},
    {"exponential", exponential},
    {"dma_transpose", dma_transpose},
    {"bn_stats", bn_stats},
    {"bn_aggr", bn_aggr},
    {"max8", max8},
    {"nc_find_index8", nc_find_index8},
    {"nc_match_replace8", nc_match_replace8},
    {"local_gather", local_gather},
};

}  // namespace

std::span<const OpSpec> op_table() { return kOps; }

}  // namespace tilescope::nki
