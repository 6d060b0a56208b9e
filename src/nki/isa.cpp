// The NKI operations: one row of kOps per op, each checking a call against the documented constraints
// (an Error at the call's line) and returning what the instruction does when its program runs.
//
// Semantics: the NKI API reference, awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/
// nki.isa.<op>.html (cited per op as "isa/<op>"), the ALU and activation tables of nki.api.shared, and
// the architecture guides (nki/guides/architecture/). Arithmetic: the Vector, Scalar and GpSimd engines
// compute in float32 and round to the destination's dtype on write (isa/tensor_tensor, "Arithmetic
// operations"); the Tensor engine accumulates in float32 (isa/nc_matmul).
#include <cmath>
#include <numbers>

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
        fmt::format("'{}' ({}) must hold one element per partition (a [P, 1] tile broadcast along the free "
                    "dimensions)",
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

// ------------------------------------------------------------------------------------------------
// Data movement

/// isa/dma_copy: dst = src element by element in the row-major order of both access patterns (equal
/// element counts), converting through float32 when the dtypes differ; HBM and SBUF on both sides.
/// nl.load / nl.store (nki.language, 0.3.0) are the same copy.
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
  const bool same = k.storage(dst).info.dtype.name == k.storage(src).info.dtype.name;
  return [dst, src, same, add = rmw.has_value()](Exec& ex) {
    if (add) {
      std::vector<float> a = ex.read(dst), b = ex.read(src);
      for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
      ex.write(dst, a);
    } else if (same) {
      ex.write_bits(dst, ex.read_bits(src));
    } else {
      ex.write(dst, ex.read(src));
    }
  };
}

/// isa/tensor_copy: a copy within SBUF / PSUM (same partitions and elements per partition); bit-exact
/// for equal dtypes, through float32 otherwise.
Body tensor_copy(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), src = *k.view(args, "src");
  k.space(dst, "dst", kOnChip);
  k.space(src, "src", kOnChip);
  same_tile(k, dst, "dst", src, "src");
  const bool same = k.storage(dst).info.dtype.name == k.storage(src).info.dtype.name;
  return [dst, src, same](Exec& ex) {
    if (same)
      ex.write_bits(dst, ex.read_bits(src));
    else
      ex.write(dst, ex.read(src));
  };
}

/// isa/memset: every element of dst = value (converted to dst's dtype).
Body memset(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst");
  k.space(dst, "dst", kOnChip);
  k.tile(dst, "dst");
  const float value = static_cast<float>(k.number(args, "value"));
  return
      [dst, value](Exec& ex) { ex.write(dst, std::vector<float>(static_cast<size_t>(dst.numel()), value)); };
}

/// isa/iota: dst[c, i...] = offset + c * channel_multiplier + sum_k i_k * step_k over `pattern`
/// ([[step, num], ...], outermost first), in int32, then converted to dst's dtype; GpSimd, SBUF only.
Body iota(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst");
  k.space(dst, "dst", {Space::sbuf});
  const auto [p, f] = k.tile(dst, "dst");
  auto it = args.find("pattern");
  const std::vector<double>* pat = it == args.end() ? nullptr : std::get_if<std::vector<double>>(&it->second);
  if (!pat || pat->size() % 2 != 0 || pat->empty() || pat->size() > 8)
    k.fail("'pattern' must be a list of 1 to 4 [step, num] pairs");
  int64_t count = 1;
  for (size_t i = 1; i < pat->size(); i += 2) count *= static_cast<int64_t>((*pat)[i]);
  if (count != f)
    k.fail(fmt::format("'pattern' makes {} elements per partition, but 'dst' holds {}", count, f));
  const auto offset = static_cast<int64_t>(k.number(args, "offset", 0.0));
  const auto mult = static_cast<int64_t>(k.number(args, "channel_multiplier", 0.0));
  return [dst, pattern = *pat, offset, mult, p = p, f = f](Exec& ex) {
    std::vector<float> out(static_cast<size_t>(p * f));
    const size_t levels = pattern.size() / 2;
    for (int64_t c = 0; c < p; ++c) {
      std::vector<int64_t> idx(levels, 0);
      for (int64_t j = 0; j < f; ++j) {
        int64_t v = offset + c * mult;
        for (size_t l = 0; l < levels; ++l) v += idx[l] * static_cast<int64_t>(pattern[2 * l]);
        out[static_cast<size_t>(c * f + j)] = static_cast<float>(static_cast<int32_t>(v));
        for (size_t l = levels; l-- > 0;) {
          if (++idx[l] < static_cast<int64_t>(pattern[2 * l + 1])) break;
          idx[l] = 0;
        }
      }
    }
    ex.write(dst, out);
  };
}

// ------------------------------------------------------------------------------------------------
// Vector / Scalar / GpSimd compute

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

/// isa/tensor_tensor: dst = op(data1, data2) element-wise, no broadcasting; data1 and data2 not both
/// in PSUM.
Body tensor_tensor(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), a = *k.view(args, "data1"), b = *k.view(args, "data2");
  k.space(dst, "dst", kOnChip);
  const Space sa = k.space(a, "data1", kOnChip), sb = k.space(b, "data2", kOnChip);
  same_tile(k, dst, "dst", a, "data1");
  same_tile(k, dst, "dst", b, "data2");
  if (sa == Space::psum && sb == Space::psum) k.fail("'data1' and 'data2' cannot both be in PSUM");
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
  if (!r) k.fail(fmt::format("'op' nl.{} is not an ALU operator", op));
  return [dst, a, b, f = r->f](Exec& ex) {
    std::vector<float> x = ex.read(a), y = ex.read(b);
    for (size_t i = 0; i < x.size(); ++i) x[i] = f(x[i], y[i]);
    ex.write(dst, x);
  };
}

/// isa/tensor_scalar: t = data op0 operand0 (operand0 op0 data with reverse0), then optionally
/// dst = t op1 operand1 (reverse1 likewise); operands are numbers or [P, 1] tiles.
Body tensor_scalar(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), data = *k.view(args, "data");
  k.space(dst, "dst", kOnChip);
  k.space(data, "data", kOnChip);
  same_tile(k, dst, "dst", data, "data");
  const int64_t p = k.tile(data, "data").first, f = k.tile(data, "data").second;
  const std::string op0 = k.name_arg(args, "op0");
  const AluRow* r0 = find_alu(op0);
  if (!r0) k.fail(fmt::format("'op0' nl.{} is not an arithmetic operator", op0));
  const Scalar s0 = scalar_operand(k, args, "operand0", p, 0, false);
  const auto op1 = opt_name(k, args, "op1");
  const AluRow* r1 = nullptr;
  Scalar s1;
  if (op1) {
    r1 = find_alu(*op1);
    if (!r1) k.fail(fmt::format("'op1' nl.{} is not an arithmetic operator", *op1));
    s1 = scalar_operand(k, args, "operand1", p, 0, true);
  }
  const bool rev0 = flag(k, args, "reverse0"), rev1 = flag(k, args, "reverse1");
  engine_of(k, args, "vector", {dst, data});
  return [=](Exec& ex) {
    std::vector<float> x = ex.read(data);
    const std::vector<float> v0 = scalar_values(ex, s0, p);
    const std::vector<float> v1 = r1 ? scalar_values(ex, s1, p) : std::vector<float>{};
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < f; ++j) {
        float& e = x[static_cast<size_t>(i * f + j)];
        const float c0 = v0[static_cast<size_t>(i)];
        e = rev0 ? r0->f(c0, e) : r0->f(e, c0);
        if (r1) {
          const float c1 = v1[static_cast<size_t>(i)];
          e = rev1 ? r1->f(c1, e) : r1->f(e, c1);
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
  Act fn = nullptr;
  for (const ActRow& r : kAct)
    if (r.name == op) fn = r.f;
  if (!fn) k.fail(fmt::format("'op' nl.{} is not an activation function", op));
  const Scalar scale = scalar_operand(k, args, "scale", p, 1.0f, false);
  const Scalar bias = scalar_operand(k, args, "bias", p, 0.0f, false);
  const auto reduce_op = opt_name(k, args, "reduce_op");
  if (reduce_op && *reduce_op != "add")
    k.fail(fmt::format("'reduce_op' must be nl.add on the Scalar engine, not nl.{}", *reduce_op));
  std::optional<View> res = k.view(args, "reduce_res", always_reduce);
  if (res) {
    k.space(*res, "reduce_res", kOnChip);
    if (res->shape.size() != 2 || res->shape[0] != p || res->shape[1] != 1)
      k.fail(fmt::format("'reduce_res' ({}) must be a [{}, 1] tile", fmt::join(res->shape, "x"), p));
  }
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

/// isa/nc_matmul: dst[M, N] (PSUM, float32) = stationary[K, M].T @ moving[K, N] (SBUF), contracting
/// over the partition dim (K <= 128, M <= 128, N <= 512: one PSUM bank). `accumulate` True adds to dst,
/// False overwrites, None (the default) overwrites the elements no matmul wrote since the tile was
/// allocated and adds to the others (the compiler's inference, isa/nc_matmul "accumulate").
Body nc_matmul(K& k, int, const Args& args) {
  const View dst = *k.view(args, "dst"), st = *k.view(args, "stationary"), mv = *k.view(args, "moving");
  k.space(dst, "dst", {Space::psum});
  k.space(st, "stationary", {Space::sbuf});
  k.space(mv, "moving", {Space::sbuf});
  const auto [kp, m] = k.tile(st, "stationary");
  const auto [kp2, n] = k.tile(mv, "moving");
  if (st.shape.size() != 2)
    k.fail(fmt::format("'stationary' ({}) must be a 2-D tile", fmt::join(st.shape, "x")));
  if (kp != kp2)
    k.fail(fmt::format("'stationary' ({}) and 'moving' ({}) must have the same partitions (the contraction)",
                       fmt::join(st.shape, "x"), fmt::join(mv.shape, "x")));
  if (m > 128) k.fail(fmt::format("'stationary' has {} elements per partition; at most 128", m));
  if (n > 512) k.fail(fmt::format("'moving' has {} elements per partition; at most 512 (one PSUM bank)", n));
  const auto [dp, df] = k.tile(dst, "dst");
  if (dp != m || df != n)
    k.fail(fmt::format("'dst' ({}) must be [{}, {}]: stationary's free size by moving's",
                       fmt::join(dst.shape, "x"), m, n));
  const DType& dt = k.storage(dst).info.dtype;
  if (dt.name != "float32" && !(dt.name == "bfloat16" && k.target->nc_version >= 4))
    k.fail(fmt::format("'dst' is {}; the matmul result is float32{}", dt.name,
                       k.target->nc_version >= 4 ? " or bfloat16" : ""));
  const auto is32 = [&](const View& v) {
    const std::string& nm = k.storage(v).info.dtype.name;
    return nm == "float32" || nm == "tfloat32";
  };
  if (is32(st) != is32(mv))
    k.fail("'stationary' and 'moving' must both be float32 / tfloat32 when either is");
  std::optional<bool> acc;
  if (auto it = args.find("accumulate");
      it != args.end() && !std::holds_alternative<std::monostate>(it->second))
    acc = k.number(args, "accumulate") != 0;
  return [dst, st, mv, m = m, n = n, kk = kp, acc](Exec& ex) {
    Storage& out = ex.storage(dst);
    if (out.matmul_written.empty()) out.matmul_written.assign(static_cast<size_t>(out.bytes / 4 + 1), 0);
    const std::vector<float> a = ex.read(st), b = ex.read(mv);
    std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
    for (int64_t p = 0; p < kk; ++p)
      for (int64_t i = 0; i < m; ++i) {
        const float s = a[static_cast<size_t>(p * m + i)];
        for (int64_t j = 0; j < n; ++j)
          c[static_cast<size_t>(i * n + j)] += s * b[static_cast<size_t>(p * n + j)];
      }
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
};

}  // namespace

std::span<const OpSpec> op_table() { return kOps; }

}  // namespace tilescope::nki
