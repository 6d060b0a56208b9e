// Shape ops through the reader and the engine: splat, broadcast, expand_dims, reshape, trans, cat,
// join, split, gather, histogram, make_range, program ids, unsplat. Expected values are written by
// hand from the op definitions (reference §1.4, §1.5) or measured on an H200 (noted per test).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

#include "tests/cpp/ops/shape_util.h"

using namespace shapetest;

namespace {

std::vector<float> iota_f(size_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

}  // namespace

TEST(ShapeOps, SplatAndMakeRange) {
  Kernel k;
  std::string x = k.load("f32", {});
  std::string s = k.line("tt.splat " + x + " : f32 -> tensor<8xf32>");
  k.store(s, "f32", {8});
  std::string r = k.line("tt.make_range {end = 11 : i32, start = 3 : i32} : tensor<8xi32>");
  k.store(r, "i32", {8});
  Buf in = Buf::of<float>({2.5f}, Elem::f32), o1 = Buf::zeros<float>(8, Elem::f32),
      o2 = Buf::zeros<int32_t>(8, Elem::i32);
  run(k, {&in, &o1, &o2});
  EXPECT_EQ(o1.as<float>(), std::vector<float>(8, 2.5f));
  EXPECT_EQ(o2.as<int32_t>(), (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST(ShapeOps, BroadcastRowsAndColumns) {
  for (const char* e : {"f32", "i16", "i64"}) {
    Kernel k;
    std::string col = k.load(e, {4, 1});
    std::string row = k.load(e, {1, 8});
    std::string bc = k.line(fmt::format("tt.broadcast {} : {} -> {}", col, ty(e, {4, 1}), ty(e, {4, 8})));
    std::string br = k.line(fmt::format("tt.broadcast {} : {} -> {}", row, ty(e, {1, 8}), ty(e, {4, 8})));
    k.store(bc, e, {4, 8});
    k.store(br, e, {4, 8});
    if (std::string(e) == "f32") {
      Buf c = Buf::of<float>({1, 2, 3, 4}, Elem::f32), r = Buf::of<float>(iota_f(8, 10), Elem::f32);
      Buf oc = Buf::zeros<float>(32, Elem::f32), orr = Buf::zeros<float>(32, Elem::f32);
      run(k, {&c, &r, &oc, &orr});
      auto vc = oc.as<float>(), vr = orr.as<float>();
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 8; ++j) {
          EXPECT_EQ(vc[i * 8 + j], i + 1);
          EXPECT_EQ(vr[i * 8 + j], 10 + j);
        }
    } else if (std::string(e) == "i16") {
      Buf c = Buf::of<int16_t>({-1, 2, -3, 4}, Elem::i16),
          r = Buf::of<int16_t>({0, 1, 2, 3, 4, 5, 6, 7}, Elem::i16);
      Buf oc = Buf::zeros<int16_t>(32, Elem::i16), orr = Buf::zeros<int16_t>(32, Elem::i16);
      run(k, {&c, &r, &oc, &orr});
      auto vc = oc.as<int16_t>(), vr = orr.as<int16_t>();
      EXPECT_EQ(vc[0], -1);
      EXPECT_EQ(vc[8 * 2 + 5], -3);
      EXPECT_EQ(vr[8 * 3 + 7], 7);
    } else {
      Buf c = Buf::of<int64_t>({1LL << 40, 2, 3, 4}, Elem::i64),
          r = Buf::of<int64_t>({0, 1, 2, 3, 4, 5, 6, -7}, Elem::i64);
      Buf oc = Buf::zeros<int64_t>(32, Elem::i64), orr = Buf::zeros<int64_t>(32, Elem::i64);
      run(k, {&c, &r, &oc, &orr});
      EXPECT_EQ(oc.as<int64_t>()[7], 1LL << 40);
      EXPECT_EQ(orr.as<int64_t>()[31], -7);
    }
  }
}

TEST(ShapeOps, ReshapeAndExpandDimsKeepRowMajorOrder) {
  Kernel k;
  std::string x = k.load("f32", {2, 8});
  std::string r = k.line("tt.reshape " + x + " : tensor<2x8xf32> -> tensor<4x4xf32>");
  std::string r2 = k.line("tt.reshape " + x + " allow_reorder : tensor<2x8xf32> -> tensor<16xf32>");
  std::string e = k.line("tt.expand_dims " + r2 + " {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>");
  k.store(r, "f32", {4, 4});
  k.store(e, "f32", {1, 16});
  Buf in = Buf::of<float>(iota_f(16), Elem::f32), o1 = Buf::zeros<float>(16, Elem::f32),
      o2 = Buf::zeros<float>(16, Elem::f32);
  run(k, {&in, &o1, &o2});
  EXPECT_EQ(o1.as<float>(), iota_f(16));
  EXPECT_EQ(o2.as<float>(), iota_f(16));
}

TEST(ShapeOps, Trans2DAnd3D) {
  Kernel k;
  std::string x = k.load("f32", {4, 8});
  std::string t =
      k.line("tt.trans " + x + " {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>");
  k.store(t, "f32", {8, 4});
  std::string y = k.load("i16", {2, 4, 8});
  std::string t3 =
      k.line("tt.trans " + y + " {order = array<i32: 2, 0, 1>} : tensor<2x4x8xi16> -> tensor<8x2x4xi16>");
  k.store(t3, "i16", {8, 2, 4});
  std::vector<int16_t> y0(64);
  std::iota(y0.begin(), y0.end(), 0);
  Buf in = Buf::of<float>(iota_f(32), Elem::f32), o = Buf::zeros<float>(32, Elem::f32);
  Buf in3 = Buf::of<int16_t>(y0, Elem::i16), o3 = Buf::zeros<int16_t>(64, Elem::i16);
  run(k, {&in, &o, &in3, &o3});
  auto v = o.as<float>();
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(v[i * 4 + j], j * 8 + i);  // out[i][j] = in[j][i]
  auto v3 = o3.as<int16_t>();
  // result dim i = source dim order[i]: out[a][b][c] = src[b][c][a]
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 4; ++c) EXPECT_EQ(v3[(a * 2 + b) * 4 + c], (b * 4 + c) * 8 + a);
}

TEST(ShapeOps, CatJoinSplit) {
  Kernel k;
  std::string a = k.load("f32", {4});
  std::string b = k.load("f32", {4});
  std::string c = k.line("tt.cat " + a + ", " + b + " : tensor<4xf32> -> tensor<8xf32>");
  k.store(c, "f32", {8});
  std::string a2 = k.load("i32", {2, 4});
  std::string b2 = k.load("i32", {2, 4});
  std::string c2 = k.line("tt.cat " + a2 + ", " + b2 + " : tensor<2x4xi32> -> tensor<4x4xi32>");
  k.store(c2, "i32", {4, 4});
  std::string j = k.line("tt.join " + a2 + ", " + b2 + " : tensor<2x4xi32> -> tensor<2x4x2xi32>");
  k.store(j, "i32", {2, 4, 2});
  k.raw("%l, %r = tt.split " + j + " : tensor<2x4x2xi32> -> tensor<2x4xi32>");
  k.store("%r", "i32", {2, 4});
  Buf fa = Buf::of<float>({1, 2, 3, 4}, Elem::f32), fb = Buf::of<float>({5, 6, 7, 8}, Elem::f32);
  Buf fo = Buf::zeros<float>(8, Elem::f32);
  Buf ia = Buf::of<int32_t>({0, 1, 2, 3, 4, 5, 6, 7}, Elem::i32),
      ib = Buf::of<int32_t>({10, 11, 12, 13, 14, 15, 16, 17}, Elem::i32);
  Buf co = Buf::zeros<int32_t>(16, Elem::i32), jo = Buf::zeros<int32_t>(16, Elem::i32),
      so = Buf::zeros<int32_t>(8, Elem::i32);
  run(k, {&fa, &fb, &fo, &ia, &ib, &co, &jo, &so});
  EXPECT_EQ(fo.as<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(co.as<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17}));
  EXPECT_EQ(jo.as<int32_t>(), (std::vector<int32_t>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15, 6, 16, 7, 17}));
  EXPECT_EQ(so.as<int32_t>(), (std::vector<int32_t>{10, 11, 12, 13, 14, 15, 16, 17}));
}

TEST(ShapeOps, GatherAlongAxis1) {
  Kernel k;
  std::string x = k.load("f32", {2, 8});
  std::string i = k.load("i32", {2, 4});
  std::string g = k.line("tt.gather " + x + "[" + i +
                         "] {axis = 1 : i32} : (tensor<2x8xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>");
  k.store(g, "f32", {2, 4});
  Buf xs = Buf::of<float>(iota_f(16, 100), Elem::f32);
  Buf is = Buf::of<int32_t>({7, 0, 3, 3, 1, 6, 2, 5}, Elem::i32);
  Buf o = Buf::zeros<float>(8, Elem::f32);
  run(k, {&xs, &is, &o});
  EXPECT_EQ(o.as<float>(), (std::vector<float>{107, 100, 103, 103, 109, 114, 110, 113}));
}

TEST(ShapeOps, GatherOutOfRangeWrapsLikeTheGpu) {
  // Measured on an H200 (triton 3.6): a 16-element gather read src[idx mod 16] for indices outside
  // [0, 16): 16 -> 100, 17 -> 101, 31 -> 115, -1 -> 115, 100 -> 104, 1000 -> 108, 1 << 20 -> 100.
  Kernel k;
  std::string x = k.load("f32", {16});
  std::string i = k.load("i32", {16});
  std::string g = k.line("tt.gather " + x + "[" + i +
                         "] {axis = 0 : i32} : (tensor<16xf32>, tensor<16xi32>) -> tensor<16xf32>");
  k.store(g, "f32", {16});
  Buf xs = Buf::of<float>(iota_f(16, 100), Elem::f32);
  Buf is = Buf::of<int32_t>({0, 15, 16, 17, 31, 32, -1, -16, 100, 3, 1000, 5, 1 << 20, 7, -17, 2}, Elem::i32);
  Buf o = Buf::zeros<float>(16, Elem::f32);
  run(k, {&xs, &is, &o});
  EXPECT_EQ(o.as<float>(), (std::vector<float>{100, 115, 100, 101, 115, 100, 115, 100, 104, 103, 108, 105,
                                               100, 107, 115, 102}));
}

TEST(ShapeOps, HistogramWithAndWithoutMask) {
  Kernel k;
  std::string x = k.load("i32", {16});
  std::string h = k.line("tt.histogram " + x + " : tensor<16xi32> -> tensor<8xi32>");
  k.store(h, "i32", {8});
  std::string m8 = k.load("i8", {16});
  std::string z = k.line("arith.constant 0 : i8");
  std::string zs = k.line("tt.splat " + z + " : i8 -> tensor<16xi8>");
  std::string m = k.line("arith.cmpi ne, " + m8 + ", " + zs + " : tensor<16xi8>");
  std::string hm = k.line("tt.histogram " + x + ", " + m + " : tensor<16xi32> -> tensor<8xi32>");
  k.store(hm, "i32", {8});
  // In-range values only, plus out-of-range ones that are not counted (-1, 8, 9, -8, 15, 16).
  Buf xs = Buf::of<int32_t>({0, 1, 1, 2, 7, 8, 9, -1, -8, 3, 3, 3, 5, 15, 16, 4}, Elem::i32);
  Buf ms = Buf::of<int8_t>({1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0}, Elem::i8);
  Buf o = Buf::zeros<int32_t>(8, Elem::i32), om = Buf::zeros<int32_t>(8, Elem::i32);
  run(k, {&xs, &o, &ms, &om});
  EXPECT_EQ(o.as<int32_t>(), (std::vector<int32_t>{1, 2, 1, 3, 1, 1, 0, 1}));
  EXPECT_EQ(om.as<int32_t>(), (std::vector<int32_t>{1, 1, 1, 1, 0, 1, 0, 1}));
}

TEST(ShapeOps, ProgramIdsAndCounts) {
  // Each program stores pid_x + 10 * pid_y + 100 * npg_x + 1000 * npg_y at index pid_x + 3 * pid_y.
  Kernel k;
  std::string out = k.arg("i32");
  std::string px = k.line("tt.get_program_id x : i32");
  std::string py = k.line("tt.get_program_id y : i32");
  std::string pz = k.line("tt.get_program_id z : i32");
  std::string nx = k.line("tt.get_num_programs x : i32");
  std::string ny = k.line("tt.get_num_programs y : i32");
  std::string nz = k.line("tt.get_num_programs z : i32");
  std::string c10 = k.c32(10), c100 = k.c32(100), c1000 = k.c32(1000), c3 = k.c32(3);
  std::string a = k.line("arith.muli " + py + ", " + c10 + " : i32");
  std::string b = k.line("arith.muli " + nx + ", " + c100 + " : i32");
  std::string c = k.line("arith.muli " + ny + ", " + c1000 + " : i32");
  std::string v = k.line("arith.addi " + px + ", " + a + " : i32");
  v = k.line("arith.addi " + v + ", " + b + " : i32");
  v = k.line("arith.addi " + v + ", " + c + " : i32");
  v = k.line("arith.addi " + v + ", " + pz + " : i32");  // z is 0
  std::string zz = k.line("arith.subi " + nz + ", " + k.c32(1) + " : i32");
  v = k.line("arith.addi " + v + ", " + zz + " : i32");  // num_programs z is 1
  std::string idx = k.line("arith.muli " + py + ", " + c3 + " : i32");
  idx = k.line("arith.addi " + idx + ", " + px + " : i32");
  std::string p = k.line("tt.addptr " + out + ", " + idx + " : !tt.ptr<i32>, i32");
  k.raw("tt.store " + p + ", " + v + " : !tt.ptr<i32>");
  Buf o = Buf::zeros<int32_t>(6, Elem::i32);
  run(k, {&o}, {3, 2, 1});
  std::vector<int32_t> want;
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) want.push_back(x + 10 * y + 300 + 2000);
  EXPECT_EQ(o.as<int32_t>(), want);
}

TEST(ShapeOps, UnsplatAndPointerBroadcast) {
  Kernel k;
  std::string x = k.load("f64", {1, 1});
  std::string s = k.line("tt.unsplat " + x + " : tensor<1x1xf64>");
  k.store(s, "f64", {});
  Buf in = Buf::of<double>({-3.25}, Elem::f64), o = Buf::zeros<double>(1, Elem::f64);
  run(k, {&in, &o});
  EXPECT_EQ(o.as<double>()[0], -3.25);
}

TEST(ShapeOps, BadShapesAreLocatedErrors) {
  // trans with an order that is not a permutation must be a tilescope::Error, not a crash.
  Kernel k;
  std::string x = k.load("f32", {4, 4});
  std::string t =
      k.line("tt.trans " + x + " {order = array<i32: 0, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>");
  k.store(t, "f32", {4, 4});
  Buf in = Buf::zeros<float>(16, Elem::f32), o = Buf::zeros<float>(16, Elem::f32);
  EXPECT_THROW(run(k, {&in, &o}), tilescope::Error);
}
