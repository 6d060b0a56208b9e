// The elementwise op families (arith, math, tt casts, extern_elementwise) run end to end: a small
// TTIR kernel loads its operands, applies the op under test and stores the result. Expected values
// come from the reference §5 table (measured on an H200), C/C++ std math, GCC's _Float16, or by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/cpp/harness.h"
#include "tilescope/ir/diag.h"

using namespace tilescope;
using exec::Arg;
using ir::Elem;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A kernel `k(a, b, out)` over N lanes: %x = a[i], %y = b[i]; `body` must define %z of type tensor<N x to>.
std::string kernel(const std::string& ta, const std::string& tb, const std::string& to,
                   const std::string& body, int n) {
  return fmt::format(R"(module {{
  tt.func public @k(%a: !tt.ptr<{ta}>, %b: !tt.ptr<{tb}>, %out: !tt.ptr<{to}>) attributes {{noinline = false}} {{
    %r = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32>
    %pa0 = tt.splat %a : !tt.ptr<{ta}> -> tensor<{n}x!tt.ptr<{ta}>>
    %pa = tt.addptr %pa0, %r : tensor<{n}x!tt.ptr<{ta}>>, tensor<{n}xi32>
    %x = tt.load %pa : tensor<{n}x!tt.ptr<{ta}>>
    %pb0 = tt.splat %b : !tt.ptr<{tb}> -> tensor<{n}x!tt.ptr<{tb}>>
    %pb = tt.addptr %pb0, %r : tensor<{n}x!tt.ptr<{tb}>>, tensor<{n}xi32>
    %y = tt.load %pb : tensor<{n}x!tt.ptr<{tb}>>
{body}
    %po0 = tt.splat %out : !tt.ptr<{to}> -> tensor<{n}x!tt.ptr<{to}>>
    %po = tt.addptr %po0, %r : tensor<{n}x!tt.ptr<{to}>>, tensor<{n}xi32>
    tt.store %po, %z : tensor<{n}x!tt.ptr<{to}>>
    tt.return
  }}
}})",
                     fmt::arg("ta", ta), fmt::arg("tb", tb), fmt::arg("to", to), fmt::arg("body", body),
                     fmt::arg("n", n));
}

Elem elem_named(const std::string& t) {
  for (Elem e : {Elem::i1, Elem::i8, Elem::i16, Elem::i32, Elem::i64, Elem::f16, Elem::bf16, Elem::f32,
                 Elem::f64, Elem::f8e4m3fn, Elem::f8e5m2})
    if (t == ir::elem_name(e)) return e;
  return Elem::none;
}

// Runs the op body over vectors a, b (padded to a power of two by repeating the last lane).
template <class O, class A, class B>
std::vector<O> run(const std::string& ta, const std::string& tb, const std::string& to,
                   const std::string& body, std::vector<A> a, std::vector<B> b) {
  const size_t len = std::max(a.size(), b.size());
  size_t n = 1;
  while (n < len) n *= 2;
  a.resize(n, a.back());
  b.resize(n, b.back());
  std::vector<O> out(n);
  exec::Memory mem;
  const int ia = test::add_buffer(mem, a, "a", elem_named(ta));
  const int ib = test::add_buffer(mem, b, "b", elem_named(tb));
  const int io = test::add_buffer(mem, out, "out", elem_named(to));
  test::run_ttir(kernel(ta, tb, to, body, static_cast<int>(n)), {Arg::buf(ia), Arg::buf(ib), Arg::buf(io)},
                 mem);
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(len), out.end());  // drop the padding lanes
  return out;
}

// Same element type everywhere: `op` is e.g. "arith.addi" applied as `%z = op %x, %y : tensor<N x t>`.
template <class T>
std::vector<T> binary(const std::string& op, const std::string& t, std::vector<T> a, std::vector<T> b) {
  size_t n = 1;
  while (n < std::max(a.size(), b.size())) n *= 2;
  return run<T>(t, t, t, fmt::format("    %z = {} %x, %y : tensor<{}x{}>", op, n, t), a, b);
}

std::string tensor_of(size_t len, const std::string& t) {
  size_t n = 1;
  while (n < len) n *= 2;
  return fmt::format("tensor<{}x{}>", n, t);
}

uint16_t h(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
float from_h(uint16_t b) { return static_cast<float>(std::bit_cast<_Float16>(b)); }

}  // namespace

// ------------------------------------------------------------------------------------------------
// Integers

TEST(ArithInt, WrapDivRemPerGpu) {
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  // §5: 1e6*1e6 wraps to -727379968; 7 + INT_MAX wraps to -2147483642.
  EXPECT_EQ(binary<int32_t>("arith.muli", "i32", {1000000}, {1000000})[0], -727379968);
  EXPECT_EQ(binary<int32_t>("arith.addi", "i32", {7}, {kMax})[0], -2147483642);
  EXPECT_EQ(binary<int32_t>("arith.subi", "i32", {kMin}, {1})[0], kMax);
  // §5: -7 // 2 = -3, 7 // -2 = -3 (truncation); -7 % 2 = -1, 7 % -2 = 1; x/0 = -1, x%0 = x;
  // INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
  std::vector<int32_t> a{-7, 7, 5, kMin, kMin, 0, -5}, b{2, -2, 0, -1, 1, 0, 0};
  EXPECT_EQ(binary<int32_t>("arith.divsi", "i32", a, b),
            (std::vector<int32_t>{-3, -3, -1, kMin, kMin, -1, -1}));
  EXPECT_EQ(binary<int32_t>("arith.remsi", "i32", a, b), (std::vector<int32_t>{-1, 1, 5, 0, 0, 0, -5}));
  // Unsigned: -7 is 4294967289.
  EXPECT_EQ(binary<int32_t>("arith.divui", "i32", {-7, 7, 5}, {2, 2, 0}),
            (std::vector<int32_t>{int32_t(4294967289u / 2), 3, -1}));
  EXPECT_EQ(binary<int32_t>("arith.remui", "i32", {-7, 7, 5}, {2, 2, 0}), (std::vector<int32_t>{1, 1, 5}));
}

TEST(ArithInt, NarrowAndWideWidths) {
  // i8 wraps at 8 bits; i16 0xFFFF * 0xFFFF must not go through signed int (wraps to 1).
  EXPECT_EQ(binary<int8_t>("arith.addi", "i8", {127, -128}, {1, -1}), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(binary<int16_t>("arith.muli", "i16", {-1, 300}, {-1, 300}),
            (std::vector<int16_t>{1, int16_t(90000 - 65536)}));
  EXPECT_EQ(binary<int8_t>("arith.divsi", "i8", {-128, 100}, {-1, 0}), (std::vector<int8_t>{-128, -1}));
  const int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(binary<int64_t>("arith.divsi", "i64", {kMin64, -9}, {-1, 4}), (std::vector<int64_t>{kMin64, -2}));
  EXPECT_EQ(binary<int64_t>("arith.maxui", "i64", {-1, 5}, {3, 6}), (std::vector<int64_t>{-1, 6}));
}

TEST(ArithInt, ShiftsBitwiseMinMax) {
  // §5: -7 >> 1 = -4 (shrsi). Amounts >= width: 0 for shli/shrui, sign fill for shrsi (PTX clamp).
  std::vector<int32_t> a{-7, -7, 1, -8, 5, -1}, b{1, 31, 31, 32, 40, -1};
  EXPECT_EQ(binary<int32_t>("arith.shrsi", "i32", a, b), (std::vector<int32_t>{-4, -1, 0, -1, 0, -1}));
  EXPECT_EQ(binary<int32_t>("arith.shrui", "i32", a, b),
            (std::vector<int32_t>{int32_t(0xFFFFFFF9u >> 1), 1, 0, 0, 0, 0}));
  EXPECT_EQ(binary<int32_t>("arith.shli", "i32", a, b),
            (std::vector<int32_t>{-14, int32_t(0x80000000u), int32_t(0x80000000u), 0, 0, 0}));
  EXPECT_EQ(binary<int32_t>("arith.andi", "i32", {0x0F0F}, {0x00FF})[0], 0x000F);
  EXPECT_EQ(binary<int32_t>("arith.ori", "i32", {0x0F0F}, {0x00FF})[0], 0x0FFF);
  EXPECT_EQ(binary<int32_t>("arith.xori", "i32", {0x0F0F}, {-1})[0], ~0x0F0F);
  EXPECT_EQ(binary<int32_t>("arith.minsi", "i32", {-1, 3}, {2, 2}), (std::vector<int32_t>{-1, 2}));
  EXPECT_EQ(binary<int32_t>("arith.maxsi", "i32", {-1, 3}, {2, 2}), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(binary<int32_t>("arith.minui", "i32", {-1, 3}, {2, 2}), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(binary<int32_t>("arith.maxui", "i32", {-1, 3}, {2, 2}), (std::vector<int32_t>{-1, 3}));
}

TEST(ArithInt, MulhiAbsi) {
  EXPECT_EQ(binary<int32_t>("tt.mulhiui", "i32", {-1, 0x10000}, {-1, 0x10000}),
            (std::vector<int32_t>{-2, 1}));  // 0xFFFFFFFF^2 = 0xFFFFFFFE00000001
  EXPECT_EQ(binary<int64_t>("tt.mulhiui", "i64", {-1, int64_t{1} << 40}, {-1, int64_t{1} << 40}),
            (std::vector<int64_t>{-2, int64_t{1} << 16}));
  auto r = run<int32_t>("i32", "i32", "i32", "    %z = math.absi %x : tensor<4xi32>",
                        std::vector<int32_t>{-5, 5, 0, std::numeric_limits<int32_t>::min()},
                        std::vector<int32_t>{0});
  EXPECT_EQ(r, (std::vector<int32_t>{5, 5, 0, std::numeric_limits<int32_t>::min()}));
}

TEST(ArithInt, I1Logic) {
  // i1 values come from comparisons; andi/xori/addi on i1 are one-bit ops; extsi of true is -1.
  const std::string body = R"(    %c0 = arith.constant dense<0> : tensor<4xi32>
    %p = arith.cmpi sgt, %x, %c0 : tensor<4xi32>
    %q = arith.cmpi sgt, %y, %c0 : tensor<4xi32>
    %s = arith.addi %p, %q : tensor<4xi1>
    %t = arith.andi %p, %q : tensor<4xi1>
    %u = arith.extsi %s : tensor<4xi1> to tensor<4xi32>
    %v = arith.extui %t : tensor<4xi1> to tensor<4xi32>
    %c10 = arith.constant dense<10> : tensor<4xi32>
    %w = arith.muli %v, %c10 : tensor<4xi32>
    %z = arith.addi %u, %w : tensor<4xi32>)";
  auto r = run<int32_t>("i32", "i32", "i32", body, std::vector<int32_t>{0, 1, 0, 1},
                        std::vector<int32_t>{0, 0, 1, 1});
  // lanes: (F,F): s=0,t=0 -> 0; (T,F): s=1 -> -1; (F,T): -1; (T,T): s=0, t=1 -> 10.
  EXPECT_EQ(r, (std::vector<int32_t>{0, -1, -1, 10}));
}

// ------------------------------------------------------------------------------------------------
// Floats

TEST(ArithFloat, F32BinariesAndNaNRules) {
  EXPECT_EQ(binary<float>("arith.addf", "f32", {1.5f, 1e30f}, {2.25f, 1e30f}),
            (std::vector<float>{3.75f, 2e30f}));
  EXPECT_EQ(binary<float>("arith.divf", "f32", {1.0f, -1.0f}, {3.0f, 0.0f}),
            (std::vector<float>{1.0f / 3.0f, -kInf}));
  EXPECT_EQ(binary<float>("tt.precise_divf", "f32", {1.0f}, {3.0f})[0], 1.0f / 3.0f);
  // §5: -3e9 % 3.0 = +0.0 on the GPU (C fmod gives -0.0), -1.5 % 3.0 = -1.5.
  auto rem = binary<float>("arith.remf", "f32", {-3e9f, -1.5f, 7.5f}, {3.0f, 3.0f, -2.0f});
  EXPECT_EQ(std::bit_cast<uint32_t>(rem[0]), 0u);
  EXPECT_EQ(rem[1], -1.5f);
  EXPECT_EQ(rem[2], 1.5f);
  // §5: tl.minimum(NaN, 0.0) = 0.0 (minnumf); tl.maximum(NaN, 0, ALL) = NaN (maximumf).
  auto mn = binary<float>("arith.minnumf", "f32", {kNaN, 1.0f, kNaN}, {0.0f, kNaN, kNaN});
  EXPECT_EQ(mn[0], 0.0f);
  EXPECT_EQ(mn[1], 1.0f);
  EXPECT_TRUE(std::isnan(mn[2]));
  EXPECT_EQ(binary<float>("arith.maxnumf", "f32", {kNaN, 3.0f}, {0.0f, 2.0f}),
            (std::vector<float>{0.0f, 3.0f}));
  auto mx = binary<float>("arith.maximumf", "f32", {kNaN, 0.0f, 1.0f}, {0.0f, kNaN, 2.0f});
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 2.0f);
  // -0 < +0 for minimumf / maximumf.
  auto mz = binary<float>("arith.minimumf", "f32", {0.0f, -0.0f}, {-0.0f, 0.0f});
  EXPECT_TRUE(std::signbit(mz[0]) && std::signbit(mz[1]));
  auto Mz = binary<float>("arith.maximumf", "f32", {0.0f, -0.0f}, {-0.0f, 0.0f});
  EXPECT_TRUE(!std::signbit(Mz[0]) && !std::signbit(Mz[1]));
}

TEST(ArithFloat, F16AndBf16RoundOncePerOp) {
  // f16: GCC's _Float16 arithmetic is correctly rounded (computed in float, rounded once).
  std::vector<float> xs{0.1f, 1.0f + 0x1p-10f, 65504.0f, 3.3f, -0.0004f, 1000.0f};
  std::vector<float> ys{0.2f, 1.0f + 0x1p-10f, 2.0f, 7.7f, 0.0001f, 3.0f};
  std::vector<uint16_t> a, b;
  for (size_t i = 0; i < xs.size(); ++i) a.push_back(h(xs[i])), b.push_back(h(ys[i]));
  auto mul = binary<uint16_t>("arith.mulf", "f16", a, b);
  auto add = binary<uint16_t>("arith.addf", "f16", a, b);
  auto div = binary<uint16_t>("arith.divf", "f16", a, b);
  for (size_t i = 0; i < a.size(); ++i) {
    const _Float16 x = std::bit_cast<_Float16>(a[i]), y = std::bit_cast<_Float16>(b[i]);
    EXPECT_EQ(mul[i], std::bit_cast<uint16_t>(static_cast<_Float16>(x * y))) << i;
    EXPECT_EQ(add[i], std::bit_cast<uint16_t>(static_cast<_Float16>(x + y))) << i;
    EXPECT_EQ(div[i], std::bit_cast<uint16_t>(static_cast<_Float16>(x / y))) << i;
  }
  EXPECT_EQ(mul[2], 0x7C00);  // 65504 * 2 overflows to inf
  // bf16: 1 + 2^-7 (0x3F81) + 2^-8 (0x3B80) = 1 + 3*2^-8 -> ties to even 1 + 2^-6 (0x3F82).
  EXPECT_EQ(binary<uint16_t>("arith.addf", "bf16", {0x3F81}, {0x3B80})[0], 0x3F82);
  // 255 (0x437F) + 0.7 (bf16 0x3F33 = 0.69921875) = 255.69921875 -> 256 (0x4380), RTNE.
  EXPECT_EQ(binary<uint16_t>("arith.addf", "bf16", {0x437F}, {0x3F33})[0], 0x4380);
}

TEST(ArithFloat, FmaIsFused) {
  // (1 + 2^-23)(1 - 2^-23) - 1 = -2^-46 exactly; an unfused x*y+z gives 0.
  const std::string body = "    %z = math.fma %x, %x, %y : tensor<1xf32>";
  auto r =
      run<float>("f32", "f32", "f32", body, std::vector<float>{1.0f + 0x1p-23f}, std::vector<float>{-1.0f});
  EXPECT_EQ(r[0], std::fma(1.0f + 0x1p-23f, 1.0f + 0x1p-23f, -1.0f));
  EXPECT_NE(r[0], 0.0f);
}

// Distance in units in the last place between two finite floats of the same sign or near zero.
int64_t ulps(float a, float b) {
  auto key = [](float f) {
    const auto u = std::bit_cast<int32_t>(f);
    return u < 0 ? int64_t(INT32_MIN) - u : int64_t(u);
  };
  return std::llabs(key(a) - key(b));
}

TEST(ArithFloat, MathUnaryMatchesLibm) {
  std::vector<float> xs{0.5f, 2.5f, 0.125f, 0.75f, 3.5f, 0.9f, 1.5f, 0.3f};
  const std::string T = tensor_of(xs.size(), "f32");
  auto un = [&](const std::string& op) {
    return run<float>("f32", "f32", "f32", fmt::format("    %z = {} %x : {}", op, T), xs,
                      std::vector<float>{0});
  };
  // Exact ops: libm's (correctly rounded) float result, bit for bit.
  struct Case {
    const char* op;
    float (*f)(float);
  } cases[] = {
      {"math.sqrt", [](float x) { return std::sqrt(x); }},
      {"math.rsqrt", [](float x) { return 1.0f / std::sqrt(x); }},
      {"math.floor", [](float x) { return std::floor(x); }},
      {"math.ceil", [](float x) { return std::ceil(x); }},
      {"math.round", [](float x) { return std::round(x); }},
      {"math.roundeven", [](float x) { return std::nearbyint(x); }},
      {"tt.precise_sqrt", [](float x) { return std::sqrt(x); }},
      {"arith.negf", [](float x) { return -x; }},
  };
  for (const Case& c : cases) {
    auto r = un(c.op);
    for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(r[i], c.f(xs[i])) << c.op << " " << xs[i];
  }
  // Transcendental ops (SLEEF, src/ops/vmath.h): within 1 ulp of the exact value, taken from double libm.
  struct Approx {
    const char* op;
    double (*f)(double);
  } approx[] = {
      {"math.exp", [](double x) { return std::exp(x); }},
      {"math.exp2", [](double x) { return std::exp2(x); }},
      {"math.log", [](double x) { return std::log(x); }},
      {"math.log2", [](double x) { return std::log2(x); }},
      {"math.erf", [](double x) { return std::erf(x); }},
      {"math.sin", [](double x) { return std::sin(x); }},
      {"math.cos", [](double x) { return std::cos(x); }},
      {"math.tanh", [](double x) { return std::tanh(x); }},
      {"math.atanh", [](double x) { return std::atanh(x); }},
      {"math.asin", [](double x) { return std::asin(x); }},
  };
  for (const Approx& c : approx) {
    auto r = un(c.op);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = c.f(xs[i]);
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(r[i])) << c.op << " " << xs[i];
      else
        EXPECT_LE(ulps(r[i], static_cast<float>(want)), 1)
            << c.op << " " << xs[i] << ": " << r[i] << " vs " << want;
    }
  }
  EXPECT_EQ(un("math.roundeven")[4], 4.0f);  // ties to even: 3.5 -> 4, 2.5 -> 2
  EXPECT_EQ(un("math.roundeven")[1], 2.0f);
  EXPECT_EQ(un("math.round")[1], 3.0f);  // ties away from zero
  // f64 goes through the double routines; f16 through float with one rounding.
  auto d = run<double>("f64", "f64", "f64", "    %z = math.exp %x : tensor<2xf64>",
                       std::vector<double>{1.0, -2.0}, std::vector<double>{0});
  EXPECT_NEAR(d[0], std::exp(1.0), 2 * (std::nextafter(std::exp(1.0), 10.0) - std::exp(1.0)));
  EXPECT_NEAR(d[1], std::exp(-2.0), 2 * (std::nextafter(std::exp(-2.0), 10.0) - std::exp(-2.0)));
  auto hh = run<uint16_t>("f16", "f16", "f16", "    %z = math.sqrt %x : tensor<1xf16>",
                          std::vector<uint16_t>{h(2.0f)}, std::vector<uint16_t>{0});
  EXPECT_EQ(hh[0], h(std::sqrt(2.0f)));
  auto he = run<uint16_t>("f16", "f16", "f16", "    %z = math.exp %x : tensor<1xf16>",
                          std::vector<uint16_t>{h(1.0f)}, std::vector<uint16_t>{0});
  EXPECT_EQ(he[0], h(std::exp(1.0f)));  // f16 has 13 fewer bits: 1 ulp of float does not reach it here
}

TEST(ArithFloat, Compare) {
  // Lanes: (1,2) (2,1) (1,1) (NaN,1) (1,NaN) (-0,+0)
  std::vector<float> a{1, 2, 1, kNaN, 1, -0.0f}, b{2, 1, 1, 1, kNaN, 0.0f};
  auto cmp = [&](const std::string& pred) {
    return run<int8_t>("f32", "f32", "i8",
                       fmt::format("    %c = arith.cmpf {}, %x, %y : {}\n    %z = arith.extui %c : {} to {}",
                                   pred, tensor_of(6, "f32"), tensor_of(6, "i1"), tensor_of(6, "i8")),
                       a, b);
  };
  using V = std::vector<int8_t>;
  EXPECT_EQ(cmp("oeq"), (V{0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("ogt"), (V{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(cmp("oge"), (V{0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("olt"), (V{1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(cmp("ole"), (V{1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("one"), (V{1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(cmp("ord"), (V{1, 1, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("ueq"), (V{0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(cmp("ugt"), (V{0, 1, 0, 1, 1, 0}));
  EXPECT_EQ(cmp("uge"), (V{0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(cmp("ult"), (V{1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(cmp("ule"), (V{1, 0, 1, 1, 1, 1}));
  EXPECT_EQ(cmp("une"), (V{1, 1, 0, 1, 1, 0}));
  EXPECT_EQ(cmp("uno"), (V{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(cmp("true"), (V{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(cmp("false"), (V{0, 0, 0, 0, 0, 0}));
}

TEST(ArithInt, Compare) {
  std::vector<int32_t> a{-1, 1, 5}, b{1, -1, 5};
  auto cmp = [&](const std::string& pred) {
    return run<int8_t>("i32", "i32", "i8",
                       fmt::format("    %c = arith.cmpi {}, %x, %y : {}\n    %z = arith.extui %c : {} to {}",
                                   pred, tensor_of(3, "i32"), tensor_of(3, "i1"), tensor_of(3, "i8")),
                       a, b);
  };
  using V = std::vector<int8_t>;
  EXPECT_EQ(cmp("eq"), (V{0, 0, 1}));
  EXPECT_EQ(cmp("ne"), (V{1, 1, 0}));
  EXPECT_EQ(cmp("slt"), (V{1, 0, 0}));
  EXPECT_EQ(cmp("sle"), (V{1, 0, 1}));
  EXPECT_EQ(cmp("sgt"), (V{0, 1, 0}));
  EXPECT_EQ(cmp("sge"), (V{0, 1, 1}));
  EXPECT_EQ(cmp("ult"), (V{0, 1, 0}));  // -1 is the largest unsigned
  EXPECT_EQ(cmp("ule"), (V{0, 1, 1}));
  EXPECT_EQ(cmp("ugt"), (V{1, 0, 0}));
  EXPECT_EQ(cmp("uge"), (V{1, 0, 1}));
}

TEST(ArithSelect, TensorAndScalarCondition) {
  const std::string body = R"(    %c0 = arith.constant dense<0> : tensor<4xi32>
    %p = arith.cmpi sgt, %x, %c0 : tensor<4xi32>
    %z = arith.select %p, %x, %y : tensor<4xi1>, tensor<4xi32>)";
  EXPECT_EQ(run<int32_t>("i32", "i32", "i32", body, std::vector<int32_t>{3, -1, 0, 9},
                         std::vector<int32_t>{7, 8, 9, 10}),
            (std::vector<int32_t>{3, 8, 9, 9}));
  const std::string scalar = R"(    %t = arith.constant true
    %f = arith.constant false
    %s1 = arith.select %t, %x, %y : tensor<4xi32>
    %s2 = arith.select %f, %x, %y : tensor<4xi32>
    %z = arith.subi %s1, %s2 : tensor<4xi32>)";
  EXPECT_EQ(run<int32_t>("i32", "i32", "i32", scalar, std::vector<int32_t>{10, 20, 30, 40},
                         std::vector<int32_t>{1, 2, 3, 4}),
            (std::vector<int32_t>{9, 18, 27, 36}));
}

// ------------------------------------------------------------------------------------------------
// Casts

TEST(ArithCast, FloatToIntSaturates) {
  // §5: f.to(i32) for 3e9, -3e9, NaN, +inf, -inf -> INT_MAX, INT_MIN, 0, INT_MAX, INT_MIN.
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  std::vector<float> xs{3e9f, -3e9f, kNaN, kInf, -kInf, -2.9f, 2.9f, 2147483520.0f};
  auto r = run<int32_t>(
      "f32", "f32", "i32",
      fmt::format("    %z = arith.fptosi %x : {} to {}", tensor_of(8, "f32"), tensor_of(8, "i32")), xs,
      std::vector<float>{0});
  EXPECT_EQ(r, (std::vector<int32_t>{kMax, kMin, 0, kMax, kMin, -2, 2, 2147483520}));
  // §5: f.to(i64).to(i32) for +inf, -inf -> -1, 0.
  auto w = run<int32_t>("f32", "f32", "i32",
                        "    %w = arith.fptosi %x : tensor<2xf32> to tensor<2xi64>\n"
                        "    %z = arith.trunci %w : tensor<2xi64> to tensor<2xi32>",
                        std::vector<float>{kInf, -kInf}, std::vector<float>{0});
  EXPECT_EQ(w, (std::vector<int32_t>{-1, 0}));
  // fptoui to i8: the GPU converts at 16 bits (cvt.rzi.u16) and an i8 keeps the low byte; §5 measured
  // the 16-bit register (0, 256, 65504) for -1.5, 256.0, 65504: low bytes 0, 0x00, 0xE0.
  auto u = run<uint8_t>("f32", "f32", "i8", "    %z = arith.fptoui %x : tensor<4xf32> to tensor<4xi8>",
                        std::vector<float>{-1.5f, 256.0f, 65504.0f, 3.7f}, std::vector<float>{0});
  EXPECT_EQ(u, (std::vector<uint8_t>{0, 0, 0xE0, 3}));
  auto u32 = run<uint32_t>("f64", "f64", "i32", "    %z = arith.fptoui %x : tensor<2xf64> to tensor<2xi32>",
                           std::vector<double>{4294967295.9, 1e20}, std::vector<double>{0});
  EXPECT_EQ(u32, (std::vector<uint32_t>{4294967295u, 4294967295u}));
  // Other widths and sources saturate at their own bounds.
  auto s16 = run<int16_t>("f16", "f16", "i16", "    %z = arith.fptosi %x : tensor<4xf16> to tensor<4xi16>",
                          std::vector<uint16_t>{h(65504.0f), h(-65504.0f), h(-3.75f), 0x7E00},
                          std::vector<uint16_t>{0});
  EXPECT_EQ(s16, (std::vector<int16_t>{32767, -32768, -3, 0}));
  const int64_t kMax64 = std::numeric_limits<int64_t>::max(), kMin64 = std::numeric_limits<int64_t>::min();
  auto s64 = run<int64_t>("f64", "f64", "i64", "    %z = arith.fptosi %x : tensor<4xf64> to tensor<4xi64>",
                          std::vector<double>{9.3e18, -9.3e18, -9223372036854775808.0, 9007199254740993.0},
                          std::vector<double>{0});
  EXPECT_EQ(s64, (std::vector<int64_t>{kMax64, kMin64, kMin64, 9007199254740992}));
  auto u64 = run<uint64_t>("f32", "f32", "i64", "    %z = arith.fptoui %x : tensor<4xf32> to tensor<4xi64>",
                           std::vector<float>{-0.5f, 1e20f, 1.8e19f, kInf}, std::vector<float>{0});
  EXPECT_EQ(u64, (std::vector<uint64_t>{0, ~uint64_t{0}, static_cast<uint64_t>(1.8e19f), ~uint64_t{0}}));
}

TEST(ArithCast, FloatToIntNaNFollowsPtxCvt) {
  // PTX ISA, cvt "Integer Notes": NaN -> 0 unless the source is .f64 or the destination .s64/.u64, then
  // 1 << (N-1). Measured on the H200 (tests/gpu/data, edge_f2i): f32 NaN -> i64 is INT64_MIN, -> i32 0.
  const std::vector<float> nf{kNaN, -kNaN};
  const std::vector<double> nd{std::numeric_limits<double>::quiet_NaN(),
                               -std::numeric_limits<double>::quiet_NaN()};
  auto f_i64 = run<int64_t>("f32", "f32", "i64", "    %z = arith.fptosi %x : tensor<2xf32> to tensor<2xi64>",
                            nf, std::vector<float>{0});
  EXPECT_EQ(f_i64, (std::vector<int64_t>(2, std::numeric_limits<int64_t>::min())));
  auto f_u64 = run<uint64_t>("f32", "f32", "i64", "    %z = arith.fptoui %x : tensor<2xf32> to tensor<2xi64>",
                             nf, std::vector<float>{0});
  EXPECT_EQ(f_u64, (std::vector<uint64_t>(2, uint64_t{1} << 63)));
  auto f_i32 = run<int32_t>("f32", "f32", "i32", "    %z = arith.fptosi %x : tensor<2xf32> to tensor<2xi32>",
                            nf, std::vector<float>{0});
  EXPECT_EQ(f_i32, (std::vector<int32_t>{0, 0}));
  auto f_u32 = run<uint32_t>("f32", "f32", "i32", "    %z = arith.fptoui %x : tensor<2xf32> to tensor<2xi32>",
                             nf, std::vector<float>{0});
  EXPECT_EQ(f_u32, (std::vector<uint32_t>{0, 0}));
  auto h_i64 = run<int64_t>("f16", "f16", "i64", "    %z = arith.fptosi %x : tensor<2xf16> to tensor<2xi64>",
                            std::vector<uint16_t>{0x7E00, 0xFE00}, std::vector<uint16_t>{0});
  EXPECT_EQ(h_i64, (std::vector<int64_t>(2, std::numeric_limits<int64_t>::min())));
  // From f64 every width gets 1 << (N-1); an i8 converts at 16 bits (0x8000) and keeps the low byte.
  auto d_i32 = run<int32_t>("f64", "f64", "i32", "    %z = arith.fptosi %x : tensor<2xf64> to tensor<2xi32>",
                            nd, std::vector<double>{0});
  EXPECT_EQ(d_i32, (std::vector<int32_t>(2, std::numeric_limits<int32_t>::min())));
  auto d_u32 = run<uint32_t>("f64", "f64", "i32", "    %z = arith.fptoui %x : tensor<2xf64> to tensor<2xi32>",
                             nd, std::vector<double>{0});
  EXPECT_EQ(d_u32, (std::vector<uint32_t>(2, 0x80000000u)));
  auto d_i16 = run<uint16_t>("f64", "f64", "i16", "    %z = arith.fptosi %x : tensor<2xf64> to tensor<2xi16>",
                             nd, std::vector<double>{0});
  EXPECT_EQ(d_i16, (std::vector<uint16_t>(2, 0x8000)));
  auto d_i8 = run<uint8_t>("f64", "f64", "i8", "    %z = arith.fptosi %x : tensor<2xf64> to tensor<2xi8>", nd,
                           std::vector<double>{0});
  EXPECT_EQ(d_i8, (std::vector<uint8_t>{0, 0}));
}

TEST(ArithCast, FloatToI8ConvertsAtSixteenBits) {
  // Measured on the H200 (tests/gpu/data, edge_f2i i8_ptr): the stored byte is the low byte of the
  // 16-bit saturating conversion: 3e9 -> 0x7FFF -> -1, -3e9 -> 0x8000 -> 0, 256 -> 0, 65504 -> -1,
  // -32769 -> 0, 255.7 -> 0xFF -> -1; in-range values convert normally.
  auto r = run<int8_t>("f32", "f32", "i8", "    %z = arith.fptosi %x : tensor<16xf32> to tensor<16xi8>",
                       std::vector<float>{3e9f, -3e9f, 256.0f, 65504.0f, -32769.0f, 255.7f, -128.5f, 127.9f,
                                          kInf, -kInf, kNaN, -2.5f, 32767.9f, 1e-40f, -0.999f, 100.99f},
                       std::vector<float>{0});
  EXPECT_EQ(r, (std::vector<int8_t>{-1, 0, 0, -1, 0, -1, -128, 127, -1, 0, 0, -2, -1, 0, 0, 100}));
}

TEST(ArithCast, IntToFloatAndWidth) {
  // sitofp/uitofp of -1; i32 16777217 -> f32 rounds to even 16777216.
  auto f = run<float>("i32", "i32", "f32",
                      "    %s = arith.sitofp %x : tensor<2xi32> to tensor<2xf32>\n"
                      "    %u = arith.uitofp %x : tensor<2xi32> to tensor<2xf32>\n"
                      "    %z = arith.addf %s, %u : tensor<2xf32>",
                      std::vector<int32_t>{-1, 16777217}, std::vector<int32_t>{0});
  EXPECT_EQ(f[0], -1.0f + 4294967295.0f);
  EXPECT_EQ(f[1], 2 * 16777216.0f);
  // i32 -> bf16 rounds once: 2^24 + 2^16 + 1 is just above the bf16 midpoint -> 2^24 + 2^17 (a float
  // intermediate would land exactly on the midpoint and round to even 2^24).
  auto b = run<uint16_t>("i32", "i32", "bf16", "    %z = arith.sitofp %x : tensor<2xi32> to tensor<2xbf16>",
                         std::vector<int32_t>{(1 << 24) + (1 << 16) + 1, -3}, std::vector<int32_t>{0});
  EXPECT_EQ(b[0], 0x4B81);  // 2^24 * (1 + 2^-7)
  EXPECT_EQ(b[1], 0xC040);  // -3
  // extsi / extui / trunci.
  auto e = run<int64_t>("i8", "i8", "i64",
                        "    %s = arith.extsi %x : tensor<2xi8> to tensor<2xi64>\n"
                        "    %u = arith.extui %x : tensor<2xi8> to tensor<2xi64>\n"
                        "    %c = arith.constant dense<1000> : tensor<2xi64>\n"
                        "    %m = arith.muli %u, %c : tensor<2xi64>\n"
                        "    %z = arith.addi %s, %m : tensor<2xi64>",
                        std::vector<int8_t>{-1, 5}, std::vector<int8_t>{0});
  EXPECT_EQ(e, (std::vector<int64_t>{-1 + 255000, 5 + 5000}));
  auto t = run<int8_t>("i32", "i32", "i8", "    %z = arith.trunci %x : tensor<2xi32> to tensor<2xi8>",
                       std::vector<int32_t>{0x1FF, -129}, std::vector<int32_t>{0});
  EXPECT_EQ(t, (std::vector<int8_t>{-1, 127}));
}

TEST(ArithCast, FloatToFloat) {
  // §5: f.to(bf16) 255.7 -> 256, 0.1 -> 0x3DCD, 65504 -> 65536; extf back is exact.
  auto b = run<float>("f32", "f32", "f32",
                      "    %t = arith.truncf %x : tensor<4xf32> to tensor<4xbf16>\n"
                      "    %z = arith.extf %t : tensor<4xbf16> to tensor<4xf32>",
                      std::vector<float>{255.7f, 0.1f, 65504.0f, kNaN}, std::vector<float>{0});
  EXPECT_EQ(b[0], 256.0f);
  EXPECT_EQ(b[1], 0.10009765625f);
  EXPECT_EQ(b[2], 65536.0f);
  EXPECT_TRUE(std::isnan(b[3]));
  // §5: f.to(f16, rtz) 3e9 -> 65504, 70000 -> 65504; f.to(f16) 70000 -> inf, 1e-8 -> 0.
  auto z = run<uint16_t>("f32", "f32", "f16",
                         "    %z = tt.fp_to_fp %x, rounding = rtz : tensor<2xf32> -> tensor<2xf16>",
                         std::vector<float>{3e9f, 70000.0f}, std::vector<float>{0});
  EXPECT_EQ(from_h(z[0]), 65504.0f);
  EXPECT_EQ(from_h(z[1]), 65504.0f);
  auto n = run<uint16_t>("f32", "f32", "f16", "    %z = arith.truncf %x : tensor<4xf32> to tensor<4xf16>",
                         std::vector<float>{70000.0f, 1e-8f, 0.1f, -2.5f}, std::vector<float>{0});
  EXPECT_EQ(n[0], 0x7C00);
  EXPECT_EQ(n[1], 0);
  EXPECT_EQ(from_h(n[2]), 0.0999755859375f);
  EXPECT_EQ(from_h(n[3]), -2.5f);
  // f64 -> f16 rounds once from the double.
  const double just_above = 1.0 + 0x1p-11 + 0x1p-40;  // above the midpoint of 1 and 1 + 2^-10
  auto d = run<uint16_t>("f64", "f64", "f16", "    %z = arith.truncf %x : tensor<1xf64> to tensor<1xf16>",
                         std::vector<double>{just_above}, std::vector<double>{0});
  EXPECT_EQ(d[0], h(1.0f + 0x1p-10f));
  // fp8 round trip through tt.fp_to_fp: 0.3 -> e4m3fn 0.3125 (0x2A, torch agrees), 1000 saturates to 448.
  auto f8 = run<float>("f32", "f32", "f32",
                       "    %q = tt.fp_to_fp %x, rounding = rtne : tensor<2xf32> -> tensor<2xf8E4M3FN>\n"
                       "    %z = tt.fp_to_fp %q : tensor<2xf8E4M3FN> -> tensor<2xf32>",
                       std::vector<float>{0.3f, 1000.0f}, std::vector<float>{0});
  EXPECT_EQ(f8, (std::vector<float>{0.3125f, 448.0f}));
}

TEST(ArithCast, Bitcasts) {
  auto r = run<int32_t>("f32", "f32", "i32", "    %z = tt.bitcast %x : tensor<2xf32> -> tensor<2xi32>",
                        std::vector<float>{1.0f, -0.0f}, std::vector<float>{0});
  EXPECT_EQ(r, (std::vector<int32_t>{0x3F800000, int32_t(0x80000000u)}));
  auto s = run<uint16_t>("i16", "i16", "f16", "    %z = arith.bitcast %x : tensor<1xi16> to tensor<1xf16>",
                         std::vector<int16_t>{0x3C00}, std::vector<int16_t>{0});
  EXPECT_EQ(s[0], 0x3C00);
}

// ------------------------------------------------------------------------------------------------
// Constants, clampf, poison, extern, errors

TEST(ArithConst, DenseSplatFullAndRawBits) {
  const std::string body = R"(    %c1 = arith.constant dense<[1.5, -2.0, 0.25, 8.0]> : tensor<4xf32>
    %c2 = arith.constant dense<0x7FC00000> : tensor<4xf32>
    %c3 = arith.constant dense<1.000000e+00> : tensor<4xf16>
    %e = arith.extf %c3 : tensor<4xf16> to tensor<4xf32>
    %s = arith.addf %c1, %e : tensor<4xf32>
    %n = arith.maxnumf %s, %c2 : tensor<4xf32>
    %z = arith.addf %n, %x : tensor<4xf32>)";
  auto r = run<float>("f32", "f32", "f32", body, std::vector<float>{0, 0, 0, 100}, std::vector<float>{0});
  EXPECT_EQ(r, (std::vector<float>{2.5f, -1.0f, 1.25f, 109.0f}));
  const std::string scal = R"(    %k = arith.constant 0x7E00 : f16
    %kk = arith.extf %k : f16 to f32
    %ks = tt.splat %kk : f32 -> tensor<2xf32>
    %z = arith.addf %ks, %x : tensor<2xf32>)";
  auto nan = run<float>("f32", "f32", "f32", scal, std::vector<float>{0, 1}, std::vector<float>{0});
  EXPECT_TRUE(std::isnan(nan[0]) && std::isnan(nan[1]));
}

TEST(ArithClampf, PropagateNan) {
  std::vector<float> xs{-5, 0.5f, 5, kNaN};
  auto none = run<float>("f32", "f32", "f32",
                         "    %lo = arith.constant dense<0.0> : tensor<4xf32>\n"
                         "    %hi = arith.constant dense<1.0> : tensor<4xf32>\n"
                         "    %z = tt.clampf %x, %lo, %hi, propagateNan = none : tensor<4xf32>",
                         xs, std::vector<float>{0});
  EXPECT_EQ(none[0], 0.0f);
  EXPECT_EQ(none[1], 0.5f);
  EXPECT_EQ(none[2], 1.0f);
  EXPECT_FALSE(std::isnan(none[3]));
  auto all = run<float>("f32", "f32", "f32",
                        "    %lo = arith.constant dense<0.0> : tensor<4xf32>\n"
                        "    %hi = arith.constant dense<1.0> : tensor<4xf32>\n"
                        "    %z = tt.clampf %x, %lo, %hi, propagateNan = all : tensor<4xf32>",
                        xs, std::vector<float>{0});
  EXPECT_EQ(all[2], 1.0f);
  EXPECT_TRUE(std::isnan(all[3]));
}

TEST(ArithClampf, ClipPatternIsMinXorsignAbs) {
  // clamp(x, -c, c) with constants lowers to PTX min.xorsign.abs(x, c) on sm_90 (Triton
  // ClampFOpConversion::isClipPattern). Measured on the H200 (edge_float row 11, c = 1): NaN -> 1.0,
  // -0.0 -> -0.0. PTX ISA (min): a single NaN operand is ignored, and the sign is the xor of both
  // signs, so a negative NaN gives -1.0.
  const float neg_nan = std::bit_cast<float>(0xFFC00000u);
  std::vector<float> xs{-5, 0.5f, 5, kNaN, neg_nan, -0.0f, 0.0f, -1.0f};
  const std::string cst =
      "    %lo = arith.constant dense<-1.0> : tensor<8xf32>\n"
      "    %hi = arith.constant dense<1.0> : tensor<8xf32>\n";
  auto none = run<float>("f32", "f32", "f32",
                         cst + "    %z = tt.clampf %x, %lo, %hi, propagateNan = none : tensor<8xf32>", xs,
                         std::vector<float>{0});
  const std::vector<uint32_t> want{0xBF800000u, 0x3F000000u, 0x3F800000u, 0x3F800000u,
                                   0xBF800000u, 0x80000000u, 0x00000000u, 0xBF800000u};
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(none[i]), want[i]) << i;
  auto all = run<float>("f32", "f32", "f32",
                        cst + "    %z = tt.clampf %x, %lo, %hi, propagateNan = all : tensor<8xf32>", xs,
                        std::vector<float>{0});
  EXPECT_TRUE(std::isnan(all[3]) && std::isnan(all[4]));
  EXPECT_EQ(all[0], -1.0f);
  // lo = 0 - hi with a runtime hi: also the clip pattern. With hi = -1 the sign flips (xorsign), where
  // min(max(x, lo), hi) would give -1 for every x.
  auto sub =
      run<float>("f32", "f32", "f32",
                 "    %c0 = arith.constant dense<0.0> : tensor<4xf32>\n"
                 "    %lo = arith.subf %c0, %y : tensor<4xf32>\n"
                 "    %z = tt.clampf %x, %lo, %y, propagateNan = none : tensor<4xf32>",
                 std::vector<float>{0.5f, -0.5f, 3.0f, kNaN}, std::vector<float>{-1.0f, -1.0f, 2.0f, 2.0f});
  EXPECT_EQ(sub, (std::vector<float>{-0.5f, 0.5f, 2.0f, 2.0f}));
  // Asymmetric bounds keep the generic lowering: max(NaN, lo) = lo.
  auto gen = run<float>("f32", "f32", "f32",
                        "    %lo = arith.constant dense<-1.0> : tensor<2xf32>\n"
                        "    %hi = arith.constant dense<2.0> : tensor<2xf32>\n"
                        "    %z = tt.clampf %x, %lo, %hi, propagateNan = none : tensor<2xf32>",
                        std::vector<float>{kNaN, -0.0f}, std::vector<float>{0});
  EXPECT_EQ(gen[0], -1.0f);
  EXPECT_EQ(std::bit_cast<uint32_t>(gen[1]), 0x80000000u);
}

TEST(ArithFloat, RemfIsNvptxFremExpansion) {
  // LLVM NVPTX lowerFREM: fma(-trunc(x / y), y, x), or x when |y| is inf. Measured on the H200
  // (tests/gpu/data, edge_float row 4): 3e38 % 10 = -0x1p103 (-1.0141205e31; C fmod gives 2),
  // -3e9 % 3 = +0, -7.5 % inf = -7.5, 2 % -inf = 2, 7 % 0 and inf % 2 are NaN.
  auto r = binary<float>("arith.remf", "f32", {3e38f, -3e9f, -7.5f, 2.0f, 7.0f, kInf, kInf, 1e-45f},
                         {10.0f, 3.0f, kInf, -kInf, 0.0f, 2.0f, kInf, 2.0f});
  EXPECT_EQ(r[0], -0x1p103f);
  EXPECT_EQ(std::bit_cast<uint32_t>(r[1]), 0u);
  EXPECT_EQ(r[2], -7.5f);
  EXPECT_EQ(r[3], 2.0f);
  EXPECT_TRUE(std::isnan(r[4]));
  EXPECT_TRUE(std::isnan(r[5]));
  EXPECT_EQ(r[6], kInf);  // |y| == inf selects x, even for x = inf (fmod: NaN)
  EXPECT_EQ(r[7], 1e-45f);
  // f64 uses the same expansion with div.rn.f64: -6 % 3 = +0 (fmod: -0). 1e20 % 0.3: with
  // q = trunc(RN(1e20 / 0.3)), RN(1e20 - q * 0.3) computed exactly in rationals (Python fractions) is
  // -0x1.25f3a715d1584p+13 (C fmod: 0.0434...).
  auto d = binary<double>("arith.remf", "f64", {-6.0, 1e20}, {3.0, 0.3});
  EXPECT_EQ(std::bit_cast<uint64_t>(d[0]), 0u);
  EXPECT_EQ(d[1], -0x1.25f3a715d1584p+13);
  // f16 and bf16 FREM are promoted to f32 and rounded back: -6 % 3 = +0 there too.
  auto hr = binary<uint16_t>("arith.remf", "f16", {h(-6.0f), h(7.5f)}, {h(3.0f), h(-2.0f)});
  EXPECT_EQ(hr, (std::vector<uint16_t>{0x0000, h(1.5f)}));
  auto br =
      binary<uint16_t>("arith.remf", "bf16", {0xC0C0 /* -6 */, 0x40F0 /* 7.5 */}, {0x4040 /* 3 */, 0x7F80});
  EXPECT_EQ(br, (std::vector<uint16_t>{0x0000, 0x40F0}));
}

TEST(ArithPoison, Zeros) {
  auto r = run<int32_t>("i32", "i32", "i32",
                        "    %p = ub.poison : tensor<2xi32>\n    %z = arith.addi %p, %x : tensor<2xi32>",
                        std::vector<int32_t>{4, 5}, std::vector<int32_t>{0});
  EXPECT_EQ(r, (std::vector<int32_t>{4, 5}));
}

TEST(ArithExtern, LibdeviceFunctions) {
  auto ext = [](const std::string& sym, const std::string& ta, const std::string& to, int nargs) {
    return fmt::format(
        "    %z = tt.extern_elementwise {} {{libname = \"\", libpath = \"\", pure = true, symbol = \"{}\"}} "
        ": ({}) -> "
        "tensor<4x{}>",
        nargs == 1 ? "%x" : "%x, %y", sym,
        nargs == 1 ? fmt::format("tensor<4x{}>", ta) : fmt::format("tensor<4x{}>, tensor<4x{}>", ta, ta), to);
  };
  std::vector<float> xs{0.5f, -1.0f, 2.0f, kNaN}, ys{2.0f, 3.0f, 0.5f, 1.0f};
  auto th = run<float>("f32", "f32", "f32", ext("__nv_tanhf", "f32", "f32", 1), xs, ys);
  EXPECT_EQ(th[0], std::tanh(0.5f));
  EXPECT_EQ(th[1], std::tanh(-1.0f));
  auto pw = run<float>("f32", "f32", "f32", ext("__nv_powf", "f32", "f32", 2), xs, ys);
  EXPECT_EQ(pw[0], std::pow(0.5f, 2.0f));
  EXPECT_EQ(pw[1], -1.0f);
  EXPECT_EQ(pw[2], std::pow(2.0f, 0.5f));
  auto isn = run<int32_t>("f32", "f32", "i32", ext("__nv_isnanf", "f32", "i32", 1), xs, ys);
  EXPECT_EQ(isn, (std::vector<int32_t>{0, 0, 0, 1}));
  auto rd = run<float>("f32", "f32", "f32", ext("__nv_fdiv_rd", "f32", "f32", 2),
                       std::vector<float>{1, -1, 1, 6}, std::vector<float>{3, 3, 4, 3});
  auto ru = run<float>("f32", "f32", "f32", ext("__nv_fdiv_ru", "f32", "f32", 2),
                       std::vector<float>{1, -1, 1, 6}, std::vector<float>{3, 3, 4, 3});
  // 1/3 is inexact: rd and ru bracket it one ulp apart; exact quotients are unchanged.
  EXPECT_LT(rd[0], 1.0 / 3.0);
  EXPECT_GT(ru[0], 1.0 / 3.0);
  EXPECT_EQ(std::nextafter(rd[0], 1.0f), ru[0]);
  EXPECT_LT(rd[1], -1.0 / 3.0);
  EXPECT_EQ(rd[2], 0.25f);
  EXPECT_EQ(ru[3], 2.0f);
  auto dbl =
      run<double>("f64", "f64", "f64", ext("__nv_dadd_rz", "f64", "f64", 2),
                  std::vector<double>{1, -1, 1e308, 1}, std::vector<double>{0x1p-60, -0x1p-60, 1e308, 2});
  EXPECT_EQ(dbl[0], 1.0);
  EXPECT_EQ(dbl[1], -1.0);
  EXPECT_EQ(dbl[2], std::numeric_limits<double>::max());  // rz overflow: largest finite
  EXPECT_EQ(dbl[3], 3.0);
  auto f2i = run<int32_t>("f32", "f32", "i32", ext("__nv_float2int_rd", "f32", "i32", 1),
                          std::vector<float>{-1.5f, 2.5f, 3e9f, kNaN}, ys);
  EXPECT_EQ(f2i, (std::vector<int32_t>{-2, 2, std::numeric_limits<int32_t>::max(), 0}));
  // These wrap cvt.r*i: a NaN into 64 bits, or from a double, gives 1 << (N-1) (PTX ISA, cvt).
  auto f2ll = run<int64_t>("f32", "f32", "i64", ext("__nv_float2ll_rz", "f32", "i64", 1),
                           std::vector<float>{-1.5f, 2.5f, 1e30f, kNaN}, ys);
  EXPECT_EQ(f2ll, (std::vector<int64_t>{-1, 2, std::numeric_limits<int64_t>::max(),
                                        std::numeric_limits<int64_t>::min()}));
  auto d2i = run<int32_t>("f64", "f64", "i32", ext("__nv_double2int_rz", "f64", "i32", 1),
                          std::vector<double>{-1.5, 2.5, -1e30, std::numeric_limits<double>::quiet_NaN()},
                          std::vector<double>{0});
  EXPECT_EQ(d2i, (std::vector<int32_t>{-1, 2, std::numeric_limits<int32_t>::min(),
                                       std::numeric_limits<int32_t>::min()}));
  auto mh = run<int32_t>("i32", "i32", "i32", ext("__nv_umulhi", "i32", "i32", 2),
                         std::vector<int32_t>{-1, 3, 0, 1}, std::vector<int32_t>{-1, 5, 7, 1});
  EXPECT_EQ(mh, (std::vector<int32_t>{-2, 0, 0, 0}));
  auto pc = run<int32_t>("i32", "i32", "i32", ext("__nv_popc", "i32", "i32", 1),
                         std::vector<int32_t>{0, 7, -1, 256}, std::vector<int32_t>{0});
  EXPECT_EQ(pc, (std::vector<int32_t>{0, 3, 32, 1}));
  // erfinv inverts erf (checked through std::erf, an independent implementation).
  auto ei = run<double>("f64", "f64", "f64", ext("__nv_erfinv", "f64", "f64", 1),
                        std::vector<double>{0.1, -0.5, 0.9, 0.999999}, std::vector<double>{0});
  const double want[] = {0.1, -0.5, 0.9, 0.999999};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(std::erf(ei[i]), want[i], 4e-16) << want[i];
}

TEST(ArithErrors, UnknownExternAndInlineAsmAreLocated) {
  const std::string bad_ext =
      kernel("f32", "f32", "f32",
             "    %z = tt.extern_elementwise %x {libname = \"\", libpath = \"\", pure = true, "
             "symbol = \"__nv_nosuchf\"} : (tensor<4xf32>) -> tensor<4xf32>",
             4);
  std::vector<float> v(4);
  exec::Memory mem;
  int b = test::add_buffer(mem, v, "a", Elem::f32);
  try {
    test::run_ttir(bad_ext, {Arg::buf(b), Arg::buf(b), Arg::buf(b)}, mem);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported extern function '__nv_nosuchf'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("test.ttir:"), std::string::npos) << e.what();
  }
  const std::string bad_asm =
      kernel("i32", "i32", "i32",
             "    %z = tt.elementwise_inline_asm \"ld.global.b32 $0, [$1];\" {constraints = \"=r,r\", "
             "packed_element = 1 : i32, pure = true} %x : tensor<4xi32> -> tensor<4xi32>",
             4);
  try {
    test::run_ttir(bad_asm, {Arg::buf(b), Arg::buf(b), Arg::buf(b)}, mem);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported PTX instruction 'ld.global.b32'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("test.ttir:"), std::string::npos) << e.what();
  }
  // Wrong operand types for a known symbol.
  const std::string bad_sig =
      kernel("f64", "f64", "f64",
             "    %z = tt.extern_elementwise %x {libname = \"\", libpath = \"\", pure = true, "
             "symbol = \"__nv_tanhf\"} : (tensor<4xf64>) -> tensor<4xf64>",
             4);
  std::vector<double> w(4);
  int bw = test::add_buffer(mem, w, "w", Elem::f64);
  EXPECT_THROW(test::run_ttir(bad_sig, {Arg::buf(bw), Arg::buf(bw), Arg::buf(bw)}, mem), Error);
}
