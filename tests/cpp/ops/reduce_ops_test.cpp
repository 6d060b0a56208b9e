// tt.reduce, tt.scan and tt.map_elementwise through the reader and the engine. Expected values are
// hand-computed from the op definitions (reference §1.1, §1.5), or measured on an H200 (noted).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "src/ops/elementwise.h"
#include "tests/cpp/ops/shape_util.h"

using namespace shapetest;

namespace {

/// `"tt.reduce"(x) <{axis}> ({ ^bb0(a, b): r = OP a, b; return r })` on one operand.
std::string reduce1(Kernel& k, const std::string& x, const std::string& e, const std::vector<int64_t>& shape,
                    int axis, const std::string& op, const std::string& kind = "reduce",
                    bool reverse = false) {
  std::vector<int64_t> rs = shape;
  if (kind == "reduce") rs.erase(rs.begin() + axis);
  std::string props = fmt::format("axis = {} : i32", axis);
  if (kind == "scan") props += reverse ? ", reverse = true" : ", reverse = false";
  std::string v = k.fresh();
  k.body += fmt::format(
      "    {} = \"tt.{}\"({}) <{{{}}}> ({{\n    ^bb0(%a{}: {}, %b{}: {}):\n      %r{} = {} %a{}, %b{} : {}\n"
      "      tt.{}.return %r{} : {}\n    }}) : ({}) -> {}\n",
      v, kind, x, props, k.n, e, k.n, e, k.n, op, k.n, k.n, e, kind, k.n, e, ty(e, shape), ty(e, rs));
  ++k.n;
  return v;
}

float f16v(uint16_t h) { return tilescope::ops::ew::f16_to_f32(h); }
uint16_t f16b(float f) { return tilescope::ops::ew::f32_to_f16(f); }

}  // namespace

TEST(ReduceOps, SumAlongEachAxisOf2D) {
  Kernel k;
  std::string x = k.load("f32", {4, 8});
  k.store(reduce1(k, x, "f32", {4, 8}, 1, "arith.addf"), "f32", {4});
  k.store(reduce1(k, x, "f32", {4, 8}, 0, "arith.addf"), "f32", {8});
  std::vector<float> xv(32);
  std::iota(xv.begin(), xv.end(), 0.0f);
  Buf in = Buf::of(xv, Elem::f32), r1 = Buf::zeros<float>(4, Elem::f32), r0 = Buf::zeros<float>(8, Elem::f32);
  run(k, {&in, &r1, &r0});
  // row i: sum_{j<8} 8i + j = 64 i + 28; column j: sum_{i<4} 8i + j = 48 + 4j
  EXPECT_EQ(r1.as<float>(), (std::vector<float>{28, 92, 156, 220}));
  for (int j = 0; j < 8; ++j) EXPECT_EQ(r0.as<float>()[j], 48 + 4 * j);
}

TEST(ReduceOps, Rank1ReduceGivesScalarAnd3DMiddleAxis) {
  Kernel k;
  std::string x = k.load("i32", {8});
  k.store(reduce1(k, x, "i32", {8}, 0, "arith.addi"), "i32", {});
  std::string y = k.load("i32", {2, 4, 2});
  k.store(reduce1(k, y, "i32", {2, 4, 2}, 1, "arith.maxsi"), "i32", {2, 2});
  Buf xs = Buf::of<int32_t>({INT32_MAX, 1, 2, 3, 4, 5, 6, 7}, Elem::i32),
      o = Buf::zeros<int32_t>(1, Elem::i32);
  // y[a][b][c] = values; max over b
  std::vector<int32_t> yv = {1, -5, 7, 2, -3, 9, 0, 0, /**/ -1, -2, -8, -4, -6, -3, -7, -9};
  Buf ys = Buf::of(yv, Elem::i32), oy = Buf::zeros<int32_t>(4, Elem::i32);
  run(k, {&xs, &o, &ys, &oy});
  EXPECT_EQ(o.as<int32_t>()[0], static_cast<int32_t>(static_cast<uint32_t>(INT32_MAX) + 28u));  // wraps
  EXPECT_EQ(oy.as<int32_t>(), (std::vector<int32_t>{7, 9, -1, -2}));
}

TEST(ReduceOps, FloatSumIsATreeNotALeftFold) {
  // [1e8, 1, -1e8, 1] in f32: a left fold gives ((1e8+1)-1e8)+1 = 1; the pairwise tree gives
  // (1e8+1) + (-1e8+1) = 1e8 + -1e8 = 0 (1 is below half an ulp of 1e8, which is 8).
  Kernel k;
  std::string x = k.load("f32", {4});
  k.store(reduce1(k, x, "f32", {4}, 0, "arith.addf"), "f32", {});
  Buf in = Buf::of<float>({1e8f, 1.0f, -1e8f, 1.0f}, Elem::f32), o = Buf::zeros<float>(1, Elem::f32);
  run(k, {&in, &o});
  EXPECT_EQ(o.as<float>()[0], 0.0f);
}

TEST(ReduceOps, F16SumMatchesH200) {
  // Measured on an H200 (triton 3.6, tl.sum of f16 ones with one element 2048, result f16):
  // n = 16 -> 2062, n = 128 -> 2174, wherever the 2048 is (each partial sum rounds to f16).
  for (int n : {16, 128}) {
    for (int pos : {0, n / 2, n - 1}) {
      Kernel k;
      std::string x = k.load("f16", {n});
      k.store(reduce1(k, x, "f16", {n}, 0, "arith.addf"), "f16", {});
      std::vector<uint16_t> v(n, f16b(1.0f));
      v[pos] = f16b(2048.0f);
      Buf in = Buf::of(v, Elem::f16), o = Buf::zeros<uint16_t>(1, Elem::f16);
      run(k, {&in, &o});
      EXPECT_EQ(f16v(o.as<uint16_t>()[0]), n == 16 ? 2062.0f : 2174.0f) << n << " " << pos;
    }
  }
}

TEST(ReduceOps, MinMaxNanRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Kernel k;
  std::string x = k.load("f32", {4});
  k.store(reduce1(k, x, "f32", {4}, 0, "arith.maxnumf"), "f32", {});
  k.store(reduce1(k, x, "f32", {4}, 0, "arith.maximumf"), "f32", {});
  k.store(reduce1(k, x, "f32", {4}, 0, "arith.minnumf"), "f32", {});
  Buf in = Buf::of<float>({1.0f, nan, -3.0f, 2.0f}, Elem::f32);
  Buf a = Buf::zeros<float>(1, Elem::f32), b = Buf::zeros<float>(1, Elem::f32),
      c = Buf::zeros<float>(1, Elem::f32);
  run(k, {&in, &a, &b, &c});
  EXPECT_EQ(a.as<float>()[0], 2.0f);          // maxNum ignores NaN
  EXPECT_TRUE(std::isnan(b.as<float>()[0]));  // maximum propagates it
  EXPECT_EQ(c.as<float>()[0], -3.0f);
}

TEST(ReduceOps, IntegerKinds) {
  Kernel k;
  std::string x = k.load("i8", {4});
  k.store(reduce1(k, x, "i8", {4}, 0, "arith.maxsi"), "i8", {});
  k.store(reduce1(k, x, "i8", {4}, 0, "arith.maxui"), "i8", {});
  k.store(reduce1(k, x, "i8", {4}, 0, "arith.xori"), "i8", {});
  k.store(reduce1(k, x, "i8", {4}, 0, "arith.muli"), "i8", {});
  Buf in = Buf::of<int8_t>({-1, 5, -128, 3}, Elem::i8);
  Buf a = Buf::zeros<int8_t>(1, Elem::i8), b = Buf::zeros<int8_t>(1, Elem::i8),
      c = Buf::zeros<int8_t>(1, Elem::i8), d = Buf::zeros<int8_t>(1, Elem::i8);
  run(k, {&in, &a, &b, &c, &d});
  EXPECT_EQ(a.as<int8_t>()[0], 5);
  EXPECT_EQ(b.as<int8_t>()[0], -1);  // 0xFF is the largest unsigned
  EXPECT_EQ(c.as<int8_t>()[0], static_cast<int8_t>(0xFF ^ 5 ^ 0x80 ^ 3));
  EXPECT_EQ(d.as<int8_t>()[0], static_cast<int8_t>((-1 * 5 * -128 * 3) & 0xFF));  // wraps mod 256
}

TEST(ReduceOps, ArgmaxTwoOperandRegion) {
  // The shape of tl.argmax's combine (reference §1.5): larger value wins, ties take the lower index.
  Kernel k;
  std::string x = k.load("f32", {2, 8});
  std::string i = k.load("i32", {2, 8});
  k.body += "    %am:2 = \"tt.reduce\"(" + x + ", " + i + R"() <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
      %gt = arith.cmpf ogt, %a, %b : f32
      %eq = arith.cmpf oeq, %a, %b : f32
      %lt = arith.cmpi slt, %ai, %bi : i32
      %tie = arith.andi %eq, %lt : i1
      %take = arith.ori %gt, %tie : i1
      %v = arith.select %take, %a, %b : f32
      %j = arith.select %take, %ai, %bi : i32
      tt.reduce.return %v, %j : f32, i32
    }) : (tensor<2x8xf32>, tensor<2x8xi32>) -> (tensor<2xf32>, tensor<2xi32>)
)";
  k.store("%am#0", "f32", {2});
  k.store("%am#1", "i32", {2});
  Buf xs = Buf::of<float>({1, 9, 3, 9, 2, 0, 9, 1, /**/ -5, -4, -3, -2, -1, -7, -1, -8}, Elem::f32);
  Buf is = Buf::of<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7}, Elem::i32);
  Buf ov = Buf::zeros<float>(2, Elem::f32), oi = Buf::zeros<int32_t>(2, Elem::i32);
  run(k, {&xs, &is, &ov, &oi});
  EXPECT_EQ(ov.as<float>(), (std::vector<float>{9, -1}));
  EXPECT_EQ(oi.as<int32_t>(), (std::vector<int32_t>{1, 4}));
}

TEST(ReduceOps, GenericSingleOperandRegionMatchesDefinition) {
  // A combine the fast path does not recognise (max through cmpf + select) runs the region.
  Kernel k;
  std::string x = k.load("f32", {4, 4});
  k.body += "    %m = \"tt.reduce\"(" + x + R"() <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %gt = arith.cmpf ogt, %a, %b : f32
      %v = arith.select %gt, %a, %b : f32
      tt.reduce.return %v : f32
    }) : (tensor<4x4xf32>) -> tensor<4xf32>
)";
  k.store("%m", "f32", {4});
  Buf xs = Buf::of<float>({1, 8, 3, -4, 5, 2, 7, -8, 0, 6, -1, -2, 4, 3, 2, -1}, Elem::f32);
  Buf o = Buf::zeros<float>(4, Elem::f32);
  run(k, {&xs, &o});
  EXPECT_EQ(o.as<float>(), (std::vector<float>{5, 8, 7, -1}));
}

TEST(ReduceOps, ScanInclusiveForwardAndReverse) {
  Kernel k;
  std::string x = k.load("i32", {2, 4});
  k.store(reduce1(k, x, "i32", {2, 4}, 1, "arith.addi", "scan", false), "i32", {2, 4});
  k.store(reduce1(k, x, "i32", {2, 4}, 1, "arith.addi", "scan", true), "i32", {2, 4});
  k.store(reduce1(k, x, "i32", {2, 4}, 0, "arith.muli", "scan", false), "i32", {2, 4});
  std::string f = k.load("f32", {4});
  k.store(reduce1(k, f, "f32", {4}, 0, "arith.mulf", "scan", true), "f32", {4});
  Buf xs = Buf::of<int32_t>({1, 2, 3, 4, 5, 6, 7, 8}, Elem::i32);
  Buf a = Buf::zeros<int32_t>(8, Elem::i32), b = Buf::zeros<int32_t>(8, Elem::i32),
      c = Buf::zeros<int32_t>(8, Elem::i32);
  Buf fs = Buf::of<float>({2, 3, 0.5f, 4}, Elem::f32), fo = Buf::zeros<float>(4, Elem::f32);
  run(k, {&xs, &a, &b, &c, &fs, &fo});
  EXPECT_EQ(a.as<int32_t>(), (std::vector<int32_t>{1, 3, 6, 10, 5, 11, 18, 26}));
  EXPECT_EQ(b.as<int32_t>(), (std::vector<int32_t>{10, 9, 7, 4, 26, 21, 15, 8}));
  EXPECT_EQ(c.as<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 12, 21, 32}));
  EXPECT_EQ(fo.as<float>(), (std::vector<float>{12, 6, 2, 4}));
}

TEST(ReduceOps, GenericScan) {
  Kernel k;
  std::string x = k.load("f32", {8});
  k.body += "    %s = \"tt.scan\"(" + x + R"() <{axis = 0 : i32, reverse = false}> ({
    ^bb0(%a: f32, %b: f32):
      %gt = arith.cmpf ogt, %a, %b : f32
      %v = arith.select %gt, %a, %b : f32
      tt.scan.return %v : f32
    }) : (tensor<8xf32>) -> tensor<8xf32>
)";
  k.store("%s", "f32", {8});
  Buf xs = Buf::of<float>({3, 1, 4, 1, 5, 9, 2, 6}, Elem::f32), o = Buf::zeros<float>(8, Elem::f32);
  run(k, {&xs, &o});
  EXPECT_EQ(o.as<float>(), (std::vector<float>{3, 3, 4, 4, 5, 9, 9, 9}));
}

TEST(ReduceOps, MapElementwisePackGroupsArgumentsPerOperand) {
  // pack = 2, two operands: region args are (x0, x1, y0, y1) (Triton's repeat-interleave); this
  // region returns (x0 + y1, x1 - y0), so out[2c] = x[2c] + y[2c+1], out[2c+1] = x[2c+1] - y[2c].
  Kernel k;
  std::string x = k.load("f32", {8});
  std::string y = k.load("f32", {8});
  k.body += "    %m = \"tt.map_elementwise\"(" + x + ", " + y + R"() <{pack = 2 : i32}> ({
    ^bb0(%x0: f32, %x1: f32, %y0: f32, %y1: f32):
      %s = arith.addf %x0, %y1 : f32
      %d = arith.subf %x1, %y0 : f32
      tt.map_elementwise.return %s, %d : f32, f32
    }) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
)";
  k.store("%m", "f32", {8});
  k.body += "    %m1 = \"tt.map_elementwise\"(" + x + ", " + y + R"() <{pack = 1 : i32}> ({
    ^bb0(%p: f32, %q: f32):
      %r = arith.maxnumf %p, %q : f32
      tt.map_elementwise.return %r : f32
    }) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
)";
  k.store("%m1", "f32", {8});
  Buf xs = Buf::of<float>({1, 2, 3, 4, 5, 6, 7, 8}, Elem::f32),
      ys = Buf::of<float>({10, 20, 30, 40, 0, 1, 2, 3}, Elem::f32);
  Buf o = Buf::zeros<float>(8, Elem::f32), o1 = Buf::zeros<float>(8, Elem::f32);
  run(k, {&xs, &ys, &o, &o1});
  EXPECT_EQ(o.as<float>(), (std::vector<float>{21, -8, 43, -26, 6, 6, 10, 6}));
  EXPECT_EQ(o1.as<float>(), (std::vector<float>{10, 20, 30, 40, 5, 6, 7, 8}));
}

TEST(ReduceOps, I1ReductionsUseOneBitMeanings) {
  // On i1, addi is xor and muli is and; as a signed 1-bit number true is -1, so maxsi is and, minsi is or.
  Kernel k;
  std::string x8 = k.load("i8", {4});
  std::string z = k.line("arith.constant 0 : i8");
  std::string zs = k.line("tt.splat " + z + " : i8 -> tensor<4xi8>");
  std::string x = k.line("arith.cmpi ne, " + x8 + ", " + zs + " : tensor<4xi8>");
  for (const char* op :
       {"arith.addi", "arith.muli", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.xori"}) {
    std::string r = reduce1(k, x, "i1", {4}, 0, op);
    k.store(k.line("arith.extui " + r + " : i1 to i8"), "i8", {});
  }
  Buf in = Buf::of<int8_t>({1, 0, 1, 1}, Elem::i8);
  std::vector<Buf> outs(6, Buf::zeros<int8_t>(1, Elem::i8));
  std::vector<Buf*> bufs{&in};
  for (auto& o : outs) bufs.push_back(&o);
  run(k, bufs);
  const int8_t want[6] = {1, 0, 0, 1, 1, 1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(outs[i].as<int8_t>()[0], want[i]) << i;
}

namespace {

/// The reduction tree of reference §1.5 written out here: level by level, c[i] = x[2i] op x[2i + 1], an
/// odd last element moving up as is.
template <class T, class F>
T tree(std::vector<T> v, F op) {
  while (v.size() > 1) {
    std::vector<T> next;
    for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(op(v[i], v[i + 1]));
    if (v.size() % 2) next.push_back(v.back());
    v = std::move(next);
  }
  return v[0];
}

/// IEEE 754-2019 maximumNumber / maximum (and the minimum pair) with +0 > -0: what arith.maxnumf,
/// maximumf, minnumf and minimumf reduce to, whatever the order (they are associative and commutative).
template <class T>
T ieee_max(T a, T b, bool propagate) {
  if (std::isnan(a) || std::isnan(b))
    return propagate || (std::isnan(a) && std::isnan(b)) ? NAN : std::isnan(a) ? b : a;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class T>
T ieee_min(T a, T b, bool propagate) {
  if (std::isnan(a) || std::isnan(b))
    return propagate || (std::isnan(a) && std::isnan(b)) ? NAN : std::isnan(a) ? b : a;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

template <class T>
bool same_value(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

/// Rows of `len` values: magnitudes from 1e-6 to 1e8 and both signs (so the order of a sum shows in
/// its rounding), with NaN, +-0 and +-inf planted in some rows for min and max.
template <class T>
std::vector<T> rows_of(int64_t rows, int64_t len, uint32_t seed, bool specials) {
  std::vector<T> v(static_cast<size_t>(rows * len));
  uint32_t s = seed;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return s;
  };
  for (T& x : v)
    x = static_cast<T>((next() % 2 ? 1 : -1) *
                       std::ldexp(1.0 + (next() % 1000) / 1000.0, static_cast<int>(next() % 47) - 20));
  if (specials) {
    for (int64_t r = 0; r < rows; ++r) {
      const T kinds[] = {static_cast<T>(NAN), T{0}, -T{0}, static_cast<T>(INFINITY),
                         -static_cast<T>(INFINITY)};
      const int64_t count = r % 4 == 3 ? len : r % 4;  // row 3 mod 4: all specials (all NaN when r % 8 == 3)
      for (int64_t k = 0; k < count; ++k)
        v[static_cast<size_t>(r * len + (next() % len))] = r % 8 == 3 ? kinds[0] : kinds[next() % 5];
      if (r % 8 == 5 || r % 8 == 6) {  // zeros of one sign but one (row 5: -0s, +0; row 6: +0s, -0)
        const T many = r % 8 == 5 ? -T{0} : T{0};
        for (int64_t i = 0; i < len; ++i) {
          T& x = v[static_cast<size_t>(r * len + i)];
          x = i % 3 ? many : r % 8 == 5 ? -std::fabs(x) : std::fabs(x);
        }
        v[static_cast<size_t>(r * len + (next() % len))] = -many;
      }
    }
  }
  return v;
}

template <class T>
void check_float_reductions(const char* e, Elem elem) {
  for (int64_t len : {8, 16, 32, 64, 128, 1024, 4096})
    for (int64_t rows : {1, 8}) {
      Kernel k;
      const std::string x = k.load(e, {rows, len});
      const char* ops[] = {"arith.addf", "arith.maxnumf", "arith.maximumf", "arith.minnumf",
                           "arith.minimumf"};
      for (const char* op : ops) k.store(reduce1(k, x, e, {rows, len}, 1, op), e, {rows});
      for (bool specials : {false, true}) {
        const std::vector<T> xv = rows_of<T>(rows, len, static_cast<uint32_t>(len * 31 + rows), specials);
        Buf in = Buf::of(xv, elem);
        std::vector<Buf> outs;
        for (size_t i = 0; i < std::size(ops); ++i)
          outs.push_back(Buf::zeros<T>(static_cast<size_t>(rows), elem));
        std::vector<Buf*> bufs{&in};
        for (Buf& b : outs) bufs.push_back(&b);
        run(k, bufs);
        int order_shows = 0;
        for (int64_t r = 0; r < rows; ++r) {
          const std::vector<T> row(xv.begin() + r * len, xv.begin() + (r + 1) * len);
          const T want[] = {tree(row, [](T a, T b) { return a + b; }),
                            tree(row, [](T a, T b) { return ieee_max(a, b, false); }),
                            tree(row, [](T a, T b) { return ieee_max(a, b, true); }),
                            tree(row, [](T a, T b) { return ieee_min(a, b, false); }),
                            tree(row, [](T a, T b) { return ieee_min(a, b, true); })};
          T fold = 0;
          for (T v : row) fold += v;
          order_shows += !same_value(fold, want[0]);
          for (size_t i = 0; i < std::size(ops); ++i) {
            EXPECT_TRUE(same_value(outs[i].as<T>()[r], want[i]))
                << e << " " << ops[i] << " len " << len << " row " << r << " specials " << specials
                << ": got " << outs[i].as<T>()[r] << ", want " << want[i];
          }
        }
        if (!specials && len >= 1024) {
          EXPECT_GT(order_shows, 0) << "these sums do not tell a tree from a fold";
        }
      }
    }
}

}  // namespace

// Sums in the tree's order and min / max with their NaN and signed-zero rules, over rows long enough for
// the SIMD paths (registers of lanes) and short enough for the scalar ones, against the definitions above.
TEST(ReduceOps, FloatRowReductionsMatchTheTreeAndIeeeRules) {
  check_float_reductions<float>("f32", Elem::f32);
  check_float_reductions<double>("f64", Elem::f64);
}
