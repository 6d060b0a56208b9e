// tt.extern_elementwise: every libdevice symbol Triton 3.6 exposes lowers with Triton's signature,
// runs, and the f32 variant of each unary/binary function agrees with its f64 variant.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/exec/plan.h"
#include "src/ops/ops.h"
#include "tilescope/ir/diag.h"

using namespace tilescope;
using ir::Elem;

namespace {

struct Sig {
  const char* name;
  const char* args;  // comma-separated element names
  const char* ret;
};
const Sig kSigs[] = {
#include "arith_libdevice_sigs.inc"
};

Elem elem_of(const std::string& s) {
  if (s == "f32") return Elem::f32;
  if (s == "f64") return Elem::f64;
  if (s == "i32") return Elem::i32;
  return Elem::i64;
}

std::vector<Elem> split(const std::string& s) {
  std::vector<Elem> v;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ',')) v.push_back(elem_of(t));
  return v;
}

constexpr int kLanes = 4;

// Runs `sym` on the given lanes (doubles converted to each operand type) and returns lanes as double.
std::vector<double> call(const std::string& sym, const std::vector<Elem>& args, Elem ret,
                         const std::vector<std::vector<double>>& in) {
  ir::Module m;
  exec::Plan plan;
  exec::Planner planner(m, plan);
  ir::Op op;
  op.name = "tt.extern_elementwise";
  ir::Attr a;
  a.kind = ir::Attr::Kind::String;
  a.s = sym;
  op.attrs["symbol"] = a;
  exec::Step s;
  s.op = &op;
  std::vector<std::vector<std::byte>> store(args.size() + 1, std::vector<std::byte>(8 * kLanes));
  exec::Program prog;
  for (size_t i = 0; i < args.size(); ++i) {
    s.in.push_back(static_cast<int>(i));
    s.in_types.push_back(m.tensor(args[i], {kLanes}));
    for (int l = 0; l < kLanes; ++l) {
      const double v = in[i][l];
      std::byte* p = store[i].data();
      switch (args[i]) {
        case Elem::f32: reinterpret_cast<float*>(p)[l] = static_cast<float>(v); break;
        case Elem::f64: reinterpret_cast<double*>(p)[l] = v; break;
        case Elem::i32: reinterpret_cast<int32_t*>(p)[l] = static_cast<int32_t>(v); break;
        default: reinterpret_cast<int64_t*>(p)[l] = static_cast<int64_t>(v); break;
      }
    }
    prog.slot.push_back(store[i].data());
  }
  s.out.push_back(static_cast<int>(args.size()));
  s.out_types.push_back(m.tensor(ret, {kLanes}));
  prog.slot.push_back(store.back().data());
  s.n = kLanes;
  ops::lower_extern(op, planner, s);
  EXPECT_NE(s.fn, nullptr) << sym;
  if (!s.fn) return {};
  s.fn(prog, s);
  std::vector<double> out;
  const std::byte* p = store.back().data();
  for (int l = 0; l < kLanes; ++l) {
    switch (ret) {
      case Elem::f32: out.push_back(reinterpret_cast<const float*>(p)[l]); break;
      case Elem::f64: out.push_back(reinterpret_cast<const double*>(p)[l]); break;
      case Elem::i32: out.push_back(reinterpret_cast<const int32_t*>(p)[l]); break;
      default: out.push_back(static_cast<double>(reinterpret_cast<const int64_t*>(p)[l])); break;
    }
  }
  return out;
}

std::vector<std::vector<double>> sample_inputs(const std::vector<Elem>& args) {
  std::vector<std::vector<double>> in;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == Elem::f32 || args[i] == Elem::f64)
      in.push_back(i == 0 ? std::vector<double>{0.5, -0.75, 2.5, 0.125}
                          : std::vector<double>{1.5, 0.25, 3.0, -2.0});
    else
      in.push_back(i == 0 ? std::vector<double>{3, -7, 0, 100} : std::vector<double>{2, 5, -1, 7});
  }
  return in;
}

}  // namespace

TEST(ArithLibdevice, EverySymbolLowersAndRuns) {
  EXPECT_EQ(std::size(kSigs), 313u);
  for (const Sig& sig : kSigs) {
    SCOPED_TRACE(sig.name);
    const auto args = split(sig.args);
    const auto out = call(sig.name, args, elem_of(sig.ret), sample_inputs(args));
    EXPECT_EQ(out.size(), static_cast<size_t>(kLanes));
  }
}

TEST(ArithLibdevice, FloatAndDoubleVariantsAgree) {
  std::map<std::string, const Sig*> by_name;
  for (const Sig& s : kSigs) by_name[s.name] = &s;
  int compared = 0;
  for (const Sig& s : kSigs) {
    const std::string n = s.name;
    if (n.back() != 'f' || std::string(s.ret) != "f32" || n.find("fast_") != std::string::npos) continue;
    auto it = by_name.find(n.substr(0, n.size() - 1));
    if (it == by_name.end() || std::string(it->second->ret) != "f64") continue;
    const auto fa = split(s.args), da = split(it->second->args);
    if (fa.size() != da.size()) continue;
    const auto in = sample_inputs(fa);
    const auto f = call(n, fa, Elem::f32, in);
    const auto d = call(it->first, da, Elem::f64, in);
    for (int l = 0; l < kLanes; ++l) {
      if (std::isnan(d[l])) {
        EXPECT_TRUE(std::isnan(f[l])) << n << " lane " << l;
        continue;
      }
      EXPECT_NEAR(f[l], d[l], 2e-6 * std::max(1.0, std::fabs(d[l]))) << n << " lane " << l;
    }
    ++compared;
  }
  EXPECT_GT(compared, 60);
}

TEST(ArithLibdevice, KnownValues) {
  using V = std::vector<double>;
  auto one = [&](const char* sym, Elem t, const V& x) { return call(sym, {t}, t, {x}); };
  EXPECT_EQ(one("__nv_erfcinv", Elem::f64, {1.0, 0.5, 1.5, 2.0})[0], 0.0);
  EXPECT_NEAR(std::erfc(one("__nv_erfcinv", Elem::f64, {1.0, 1e-300, 1.5, 1.0})[1]), 1e-300, 1e-313);
  EXPECT_NEAR(one("__nv_normcdfinv", Elem::f64, {0.975, 0.5, 0.5, 0.5})[0], 1.959963984540054, 1e-14);
  EXPECT_NEAR(one("__nv_normcdf", Elem::f64, {1.959963984540054, 0, 0, 0})[0], 0.975, 1e-15);
  EXPECT_NEAR(one("__nv_erfcx", Elem::f64, {30.0, 0, 0, 0})[0], std::exp(900.0L) * std::erfc(30.0L), 1e-16);
  auto sp = one("__nv_sinpi", Elem::f64, {1.0, 0.5, -2.5, 1.0 / 6});
  EXPECT_EQ(sp[0], 0.0);
  EXPECT_EQ(sp[1], 1.0);
  EXPECT_EQ(sp[2], -1.0);
  EXPECT_NEAR(sp[3], 0.5, 1e-16);
  EXPECT_EQ(one("__nv_cospi", Elem::f64, {0.5, 1.0, 0, 0})[0], 0.0);
  EXPECT_EQ(one("__nv_saturatef", Elem::f32, {-1, 0.25, 7, NAN}), (V{0, 0.25, 1, 0}));
  auto brev = call("__nv_brev", {Elem::i32}, Elem::i32, {{1, 2, 0, -1}});
  EXPECT_EQ(brev, (V{static_cast<double>(INT32_MIN), 1 << 30, 0, -1}));
  auto clz = call("__nv_clz", {Elem::i32}, Elem::i32, {{1, 0, -1, 256}});
  EXPECT_EQ(clz, (V{31, 32, 0, 23}));
  auto ffs = call("__nv_ffs", {Elem::i32}, Elem::i32, {{1, 0, 8, -2}});
  EXPECT_EQ(ffs, (V{1, 0, 4, 2}));
  // byte_perm(x=0x03020100 (50462976), y=0x07060504 (117835012), s=0x3210 / 0x7654 / 0x0000 / 0x4321).
  auto bp = call("__nv_byte_perm", {Elem::i32, Elem::i32, Elem::i32}, Elem::i32,
                 {{50462976, 50462976, 50462976, 50462976},
                  {117835012, 117835012, 117835012, 117835012},
                  {0x3210, 0x7654, 0, 0x4321}});
  EXPECT_EQ(bp, (V{50462976, 117835012, 0, 0x04030201}));
  auto mh =
      call("__nv_mulhi", {Elem::i32, Elem::i32}, Elem::i32, {{-1, 1 << 30, 7, -(1 << 30)}, {1, 8, 1, 8}});
  EXPECT_EQ(mh, (V{-1, 2, 0, -2}));
  auto sq = call("__nv_fsqrt_rd", {Elem::f32}, Elem::f32, {{2, 4, 0.5, -1}});
  auto squ = call("__nv_fsqrt_ru", {Elem::f32}, Elem::f32, {{2, 4, 0.5, -1}});
  EXPECT_LT(sq[0], std::sqrt(2.0));
  EXPECT_GT(squ[0], std::sqrt(2.0));
  EXPECT_EQ(sq[1], 2.0);
  EXPECT_EQ(squ[1], 2.0);
  EXPECT_TRUE(std::isnan(sq[3]));
  auto i2f = call("__nv_int2float_rz", {Elem::i32}, Elem::f32, {{16777217, -16777217, 3, 0}});
  EXPECT_EQ(i2f, (V{16777216, -16777216, 3, 0}));
  auto i2fu = call("__nv_int2float_ru", {Elem::i32}, Elem::f32, {{16777217, -16777217, 3, 0}});
  EXPECT_EQ(i2fu, (V{16777218, -16777216, 3, 0}));
  auto d2f = call("__nv_double2float_rd", {Elem::f64}, Elem::f32, {{0.1, -0.1, 1e300, 0.5}});
  EXPECT_LE(d2f[0], 0.1);
  EXPECT_LE(d2f[1], -0.1);
  EXPECT_EQ(d2f[2], 3.4028234663852886e38);  // rd of a huge positive: largest finite
  EXPECT_EQ(d2f[3], 0.5);
  auto fm = call("__nv_fmaf_rz", {Elem::f32, Elem::f32, Elem::f32}, Elem::f32,
                 {{1.0 + 0x1p-23, 1, 1, 3}, {1.0 + 0x1p-23, 1, 1, 3}, {0x1p-30, 0x1p-30, -0x1p-30, 1}});
  EXPECT_EQ(fm[0], 1.0 + 0x1p-22);               // 1 + 2^-22 + 2^-46 + 2^-30 truncated
  EXPECT_EQ(fm[1], 1.0);                         // 1 + 2^-30 truncated
  EXPECT_EQ(fm[2], std::nextafter(1.0f, 0.0f));  // 1 - 2^-30 truncated
  EXPECT_EQ(fm[3], 10.0);
}

TEST(ArithLibdevice, UnknownSymbolIsLocatedError) {
  ir::Module m;
  m.filename = "k.ttir";
  exec::Plan plan;
  exec::Planner planner(m, plan);
  ir::Op op;
  op.name = "tt.extern_elementwise";
  op.pos = {12, 7};
  ir::Attr a;
  a.kind = ir::Attr::Kind::String;
  a.s = "__nv_not_a_function";
  op.attrs["symbol"] = a;
  exec::Step s;
  s.in_types = {m.tensor(Elem::f32, {4})};
  s.out_types = {m.tensor(Elem::f32, {4})};
  s.in = {0};
  s.out = {1};
  try {
    ops::lower_extern(op, planner, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k.ttir:12:7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unsupported extern function '__nv_not_a_function'"),
              std::string::npos)
        << e.what();
  }
}
