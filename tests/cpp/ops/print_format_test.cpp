// tt.print text against what Triton 3.6 prints on an NVIDIA GPU. Expected lines come from two
// sources, never from tilescope:
//  - lines an H200 printed (Triton 3.6.0, torch 2.11, driver 580; tests/gpu/print_reference.py
//    recorded them in tests/gpu/data/print_h200.txt.gz), written here as literals;
//  - a second writing of the rule, below, that follows the lowering's own code instead of
//    control.cpp's: the printf format PrintOpConversion (lib/Conversion/TritonGPUToLLVM/
//    PrintOpToLLVM.cpp, v3.6.0) builds, widths through std::log10 as it computes them, conversions
//    spelled as getFormatSubstr spells them, arguments widened as the NVIDIA backend's
//    printfPromoteValue widens them, and the C library's snprintf doing the formatting, as the CUDA
//    driver's host side does ("(nil)" and "-nan" on the H200 are glibc's spellings).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tests/cpp/harness.h"

using namespace tilescope;
using exec::Arg;
using ir::Elem;

namespace {

class PrintLog : public exec::Observer {
 public:
  std::string text;
  std::vector<uint64_t> arg_bits;  // BoundArg::bits: a pointer argument's address
  exec::Subscription on_launch_begin(const exec::LaunchContext& ctx) override {
    for (const auto& a : ctx.args) arg_bits.push_back(a.bits);
    return {exec::kPrint, {}, {}};
  }
  void on_print(const exec::PrintEvent& e, void*) override { text += e.text; }
};

std::string run(const std::string& ttir, exec::Memory& mem, const std::vector<Arg>& args = {},
                std::array<int64_t, 3> grid = {1, 1, 1}, PrintLog* log = nullptr) {
  PrintLog own;
  PrintLog& l = log ? *log : own;
  test::run_ttir(ttir, args, mem, grid, 1, {&l});
  return l.text;
}

std::string run(const std::string& ttir) {
  exec::Memory mem;
  return run(ttir, mem);
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  std::sort(v.begin(), v.end());
  return v;
}

// ---- the rule, written from the lowering ------------------------------------------------------

template <class... A>
std::string c_printf(const std::string& f, A... a) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f.c_str(), a...);
  return buf;
}

struct TypeInfo {
  const char* mlir;
  int bits;
  bool llvm_float;  // f16, bf16, f32, f64 stay floats in LLVM; fp8 becomes i8
};

TypeInfo info(Elem e) {
  switch (e) {
    case Elem::i1: return {"i1", 1, false};
    case Elem::i8: return {"i8", 8, false};
    case Elem::i16: return {"i16", 16, false};
    case Elem::i32: return {"i32", 32, false};
    case Elem::i64: return {"i64", 64, false};
    case Elem::f8e4m3fn: return {"f8E4M3FN", 8, false};
    case Elem::f8e5m2: return {"f8E5M2", 8, false};
    case Elem::f8e4m3fnuz: return {"f8E4M3FNUZ", 8, false};
    case Elem::f8e5m2fnuz: return {"f8E5M2FNUZ", 8, false};
    case Elem::f16: return {"f16", 16, true};
    case Elem::bf16: return {"bf16", 16, true};
    case Elem::f32: return {"f32", 32, true};
    case Elem::f64: return {"f64", 64, true};
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: break;
  }
  ADD_FAILURE() << "no print rule for this element type";
  return {"?", 0, false};
}

// getFormatSubstr(value, hex, width = nullopt, isSigned).
std::string conversion(Elem e, bool hex, bool is_signed) {
  if (e == Elem::ptr) return "%p";
  TypeInfo t = info(e);
  if (hex) return fmt::format("0x%0{}{}x", t.bits / 4, t.bits > 32 ? "ll" : "");
  if (t.llvm_float) return "%f";
  if (t.bits == 64) return is_signed ? "%lli" : "%llu";
  return is_signed ? "%i" : "%u";
}

// fpext of the stored bits to f64 (IEEE half and bfloat16 decoded by hand here).
double to_f64(Elem e, uint64_t raw) {
  switch (e) {
    case Elem::f64: return std::bit_cast<double>(raw);
    case Elem::f32: return std::bit_cast<float>(static_cast<uint32_t>(raw));
    case Elem::bf16: return std::bit_cast<float>(static_cast<uint32_t>(raw << 16));
    case Elem::f16: {
      uint32_t sign = (raw >> 15) & 1, exp = (raw >> 10) & 31, man = raw & 1023;
      if (exp == 31) return std::bit_cast<float>(sign << 31 | 0x7f800000u | man << 13);
      double mag = exp == 0 ? std::ldexp(man, -24) : std::ldexp(1024 + man, static_cast<int>(exp) - 25);
      return sign ? -mag : mag;
    }
    default: ADD_FAILURE() << "not an LLVM float"; return 0;
  }
}

// printfPromoteValue, then the driver's printf. `%x` on a promoted f64 reads the first 4 bytes of its
// 8-byte slot (little-endian: the low 32 bits), which the H200 shows for rank-1 tensors.
std::string rule_value(Elem e, uint64_t raw, bool hex, bool is_signed) {
  std::string f = conversion(e, hex, is_signed);
  if (e == Elem::ptr) return c_printf(f, reinterpret_cast<void*>(static_cast<uintptr_t>(raw)));
  TypeInfo t = info(e);
  if (t.llvm_float) {
    double d = to_f64(e, raw);
    if (!hex) return c_printf(f, d);
    uint64_t b = std::bit_cast<uint64_t>(d);
    return t.bits > 32 ? c_printf(f, static_cast<unsigned long long>(b))
                       : c_printf(f, static_cast<uint32_t>(b));
  }
  if (t.bits == 64) return c_printf(f, static_cast<long long>(raw));
  uint32_t v = static_cast<uint32_t>(raw & ((uint64_t{1} << t.bits) - 1));
  if (is_signed && t.bits < 32 && (v >> (t.bits - 1)) & 1) v |= ~uint32_t{0} << t.bits;  // sext
  return c_printf(f, v);
}

// printTensor's line for one element: "pid (%u, %u, %u) idx (%<w>u, ...)<prefix>[(operand N) ]<value>".
std::string rule_line(std::array<uint32_t, 3> pid, const std::vector<int64_t>& shape,
                      const std::vector<int64_t>& idx, const std::string& prefix, int operand, int operands,
                      const std::string& value) {
  std::string s = c_printf("pid (%u, %u, %u) ", pid[0], pid[1], pid[2]) + "idx (";
  for (size_t d = 0; d < idx.size(); ++d) {
    if (d) s += ", ";
    int w = shape[d] > 0 ? static_cast<int>(std::ceil(std::log10(shape[d]))) : 0;
    s += c_printf(fmt::format("%{}u", w), static_cast<uint32_t>(idx[d]));
  }
  s += ")" + prefix;
  if (operands > 1) s += fmt::format("(operand {}) ", operand);
  return s + value + "\n";
}

// Every line of one operand, row-major; `value(i)` gives element i's printed value.
template <class F>
std::string rule_tensor(const std::vector<int64_t>& shape, const std::string& prefix, F value,
                        int operand = 0, int operands = 1, std::array<uint32_t, 3> pid = {0, 0, 0}) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::string out;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    out += rule_line(pid, shape, idx, prefix, operand, operands, value(i));
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::string tensor_type(const std::vector<int64_t>& shape, const std::string& elem) {
  if (shape.empty()) return elem;
  std::string s = "tensor<";
  for (int64_t d : shape) s += std::to_string(d) + "x";
  return s + elem + ">";
}

// A kernel that loads `n` elements of type `ty` from %x and prints them.
std::string load_print_kernel(const std::string& ty, int n, bool hex, bool is_signed) {
  return fmt::format(R"(module {{
  tt.func public @k(%x: !tt.ptr<{0}>) attributes {{noinline = false}} {{
    %r = tt.make_range {{end = {1} : i32, start = 0 : i32}} : tensor<{1}xi32>
    %s = tt.splat %x : !tt.ptr<{0}> -> tensor<{1}x!tt.ptr<{0}>>
    %p = tt.addptr %s, %r : tensor<{1}x!tt.ptr<{0}>>, tensor<{1}xi32>
    %v = tt.load %p : tensor<{1}x!tt.ptr<{0}>>
    tt.print " v: " {{hex = {2}, isSigned = array<i32: {3}>}} : %v : tensor<{1}x{0}>
    tt.return
  }}
}}
)",
                     ty, n, hex ? "true" : "false", is_signed ? 1 : 0);
}

template <class T>
std::string print_bits(Elem e, std::vector<T> bits, bool hex, bool is_signed) {
  exec::Memory mem;
  int b = test::add_buffer(mem, bits, "x", e);
  return run(load_print_kernel(info(e).mlir, static_cast<int>(bits.size()), hex, is_signed), mem,
             {Arg::buf(b)});
}

template <class T>
std::string rule_bits(Elem e, const std::vector<T>& bits, bool hex, bool is_signed) {
  return rule_tensor({static_cast<int64_t>(bits.size())}, " v: ", [&](int64_t i) {
    return rule_value(e, static_cast<uint64_t>(bits[i]), hex, is_signed);
  });
}

// The line for element `i` of a 1-D print, to compare with a line the H200 printed.
std::string line_of(const std::string& text, int i) {
  std::istringstream in(text);
  std::string l;
  for (int k = 0; k <= i; ++k) std::getline(in, l);
  return l;
}

// ---- tests -------------------------------------------------------------------------------------

TEST(PrintFormat, IndexIsPaddedToCeilLog10OfItsDimension) {
  // H200, a 128-element i32 tensor (Triton's test_subprocess expects f"idx ({i:3})"), 1024 and
  // 4x32, 1x16, 2x4x8 (tests/lit/print_index_width.ttir).
  std::string t = run(R"(module {
  tt.func public @k() attributes {noinline = false} {
    %x = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    tt.print " x: " {hex = false, isSigned = array<i32: 1>} : %x : tensor<128xi32>
    tt.return
  }
}
)");
  EXPECT_EQ(line_of(t, 0), "pid (0, 0, 0) idx (  0) x: 0");
  EXPECT_EQ(line_of(t, 5), "pid (0, 0, 0) idx (  5) x: 5");
  EXPECT_EQ(line_of(t, 42), "pid (0, 0, 0) idx ( 42) x: 42");
  EXPECT_EQ(line_of(t, 127), "pid (0, 0, 0) idx (127) x: 127");
  EXPECT_EQ(t, rule_tensor({128}, " x: ", [](int64_t i) { return std::to_string(i); }));

  // Every power of two from 1 (width 0) to 8192 (width 4), and ranks 0 to 4 (Triton's tensors have
  // power-of-two sizes; the reader checks it).
  const std::vector<std::vector<int64_t>> shapes = {
      {},     {1},       {2},        {4},      {8},       {16},          {32},        {64},    {128},
      {256},  {512},     {1024},     {2048},   {4096},    {8192},        {1, 16},     {4, 32}, {16, 1},
      {1, 1}, {2, 4, 8}, {8, 1, 16}, {2, 128}, {1024, 2}, {2, 1, 4, 16}, {16, 16, 16}};
  for (const auto& shape : shapes) {
    std::string ty = tensor_type(shape, "i32");
    std::string k = fmt::format(R"(module {{
  tt.func public @k() attributes {{noinline = false}} {{
    %c = arith.constant {} : {}
    tt.print " c: " {{hex = false, isSigned = array<i32: 1>}} : %c : {}
    tt.return
  }}
}}
)",
                                shape.empty() ? "-7" : "dense<-7>", ty, ty);
    EXPECT_EQ(run(k), rule_tensor(shape, " c: ", [](int64_t) { return "-7"; })) << ty;
  }
}

TEST(PrintFormat, ScalarsPrintAnEmptyIndex) {
  // Triton's test_subprocess (device_print_scalar, no_arg_print) expects "idx () x: 42" and
  // "idx (): 0" (prefix ": " from an empty prefix); the H200 printed "idx () n: -5000000000".
  EXPECT_EQ(run(R"(module {
  tt.func public @k() attributes {noinline = false} {
    %a = arith.constant 42 : i32
    tt.print " x: " {hex = false, isSigned = array<i32: 1>} : %a : i32
    %b = arith.constant 42.0 : f32
    tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %b : f32
    %c = tt.get_program_id x : i32
    tt.print ": " {hex = false, isSigned = array<i32: 1>} : %c : i32
    %d = arith.constant -5000000000 : i64
    tt.print " n: " {hex = false, isSigned = array<i32: 1>} : %d : i64
    tt.print " h: " {hex = true, isSigned = array<i32: 1>} : %d : i64
    tt.return
  }
}
)"),
            "pid (0, 0, 0) idx () x: 42\n"
            "pid (0, 0, 0) idx () x: 42.000000\n"
            "pid (0, 0, 0) idx (): 0\n"
            "pid (0, 0, 0) idx () n: -5000000000\n"
            "pid (0, 0, 0) idx () h: 0xfffffffed5fa0e00\n");
}

TEST(PrintFormat, WithoutOperandsThePrefixFollowsThePid) {
  // "pid (%u, %u, %u)" then the prefix, pasted into the format string: test_subprocess expects
  // "pid (0, 0, 0) no arg" for print("no arg") (prefix " no arg"); the H200 printed
  // "pid (0, 0, 0)ab", "pid (0, 0, 0)" and "pid (0, 0, 0) 50%" for the prefixes "ab", "" and " 50%%".
  EXPECT_EQ(run(R"(module {
  tt.func public @k() attributes {noinline = false} {
    tt.print " no arg" {hex = false, isSigned = array<i32>}
    tt.print "ab" {hex = false, isSigned = array<i32>}
    tt.print "" {hex = false, isSigned = array<i32>}
    tt.print " 50%%" {hex = false, isSigned = array<i32>}
    tt.return
  }
}
)"),
            "pid (0, 0, 0) no arg\npid (0, 0, 0)ab\npid (0, 0, 0)\npid (0, 0, 0) 50%\n");
}

TEST(PrintFormat, SeveralOperandsNameEachOperand) {
  // test_subprocess (device_print_multiple_args): "idx ({i:3}): (operand 0) {i}" and
  // "idx ({i:3}): (operand 1) 1"; we print operand 0's lines, then operand 1's.
  std::string t = run(R"(module {
  tt.func public @k() attributes {noinline = false} {
    %x = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %y = arith.constant dense<1> : tensor<128xi32>
    tt.print ": " {hex = false, isSigned = array<i32: 1, 1>} : %x, %y : tensor<128xi32>, tensor<128xi32>
    tt.return
  }
}
)");
  EXPECT_EQ(line_of(t, 7), "pid (0, 0, 0) idx (  7): (operand 0) 7");
  EXPECT_EQ(line_of(t, 128 + 99), "pid (0, 0, 0) idx ( 99): (operand 1) 1");
  std::string want = rule_tensor(
                         {128}, ": ", [](int64_t i) { return std::to_string(i); }, 0, 2) +
                     rule_tensor(
                         {128}, ": ", [](int64_t) { return "1"; }, 1, 2);
  EXPECT_EQ(t, want);

  // Operands of different ranks and types, hex: each keeps its own index widths and conversion
  // (H200: "idx () both: (operand 0) 0x00000000", "idx (0) both: (operand 1) 0xfffffffe").
  t = run(R"(module {
  tt.func public @k() attributes {noinline = false} {
    %p = tt.get_program_id x : i32
    %c = arith.constant dense<2> : tensor<4xi32>
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %i = arith.subi %r, %c : tensor<4xi32>
    %e = arith.extsi %i : tensor<4xi32> to tensor<4xi64>
    %m = tt.reshape %i : tensor<4xi32> -> tensor<2x2xi32>
    %b = arith.trunci %m : tensor<2x2xi32> to tensor<2x2xi8>
    tt.print " both: " {hex = true, isSigned = array<i32: 1, 1, 1, 1>} : %p, %i, %e, %b : i32, tensor<4xi32>, tensor<4xi64>, tensor<2x2xi8>
    tt.return
  }
}
)");
  const int64_t v[4] = {-2, -1, 0, 1};
  want = rule_tensor(
             {}, " both: ", [](int64_t) { return rule_value(Elem::i32, 0, true, true); }, 0, 4) +
         rule_tensor(
             {4}, " both: ", [&](int64_t i) { return rule_value(Elem::i32, v[i], true, true); }, 1, 4) +
         rule_tensor(
             {4}, " both: ", [&](int64_t i) { return rule_value(Elem::i64, v[i], true, true); }, 2, 4) +
         rule_tensor(
             {2, 2}, " both: ", [&](int64_t i) { return rule_value(Elem::i8, v[i], true, true); }, 3, 4);
  EXPECT_EQ(t, want);
  EXPECT_EQ(line_of(t, 0), "pid (0, 0, 0) idx () both: (operand 0) 0x00000000");
  EXPECT_EQ(line_of(t, 1), "pid (0, 0, 0) idx (0) both: (operand 1) 0xfffffffe");
  EXPECT_EQ(line_of(t, 5), "pid (0, 0, 0) idx (0) both: (operand 2) 0xfffffffffffffffe");
  EXPECT_EQ(line_of(t, 9), "pid (0, 0, 0) idx (0, 0) both: (operand 3) 0xfffffffe");
}

TEST(PrintFormat, IntegersAsSignedOrUnsignedAndHexAfterPromotion) {
  // H200 lines (tests/lit/print_hex.ttir, print_dtypes.ttir): integers under 32 bits are widened to
  // i32 first, sign-extended when isSigned, so hex shows 8 digits for a negative i8 or i16.
  std::vector<uint8_t> b8{0xff, 0x80, 0x7f, 0x05, 0x00, 0x64, 0x9c, 0x2a};
  EXPECT_EQ(line_of(print_bits(Elem::i8, b8, false, true), 1), "pid (0, 0, 0) idx (1) v: -128");
  EXPECT_EQ(line_of(print_bits(Elem::i8, b8, false, false), 6), "pid (0, 0, 0) idx (6) v: 156");
  EXPECT_EQ(line_of(print_bits(Elem::i8, b8, true, true), 0), "pid (0, 0, 0) idx (0) v: 0xffffffff");
  EXPECT_EQ(line_of(print_bits(Elem::i8, b8, true, true), 2), "pid (0, 0, 0) idx (2) v: 0x7f");
  EXPECT_EQ(line_of(print_bits(Elem::i8, b8, true, false), 6), "pid (0, 0, 0) idx (6) v: 0x9c");
  std::vector<uint16_t> b16{0xffff, 0x8000, 0x7fff, 0x0005, 0x0000, 0x0064, 0xff9c, 0x002a};
  EXPECT_EQ(line_of(print_bits(Elem::i16, b16, true, true), 1), "pid (0, 0, 0) idx (1) v: 0xffff8000");
  EXPECT_EQ(line_of(print_bits(Elem::i16, b16, true, true), 3), "pid (0, 0, 0) idx (3) v: 0x0005");
  EXPECT_EQ(line_of(print_bits(Elem::i16, b16, true, false), 0), "pid (0, 0, 0) idx (0) v: 0xffff");
  EXPECT_EQ(line_of(print_bits(Elem::i16, b16, false, false), 6), "pid (0, 0, 0) idx (6) v: 65436");
  std::vector<uint32_t> b32{0xffffffff, 0x80000000, 0x7fffffff, 5, 0, 100, 0xffffff9c, 42};
  EXPECT_EQ(line_of(print_bits(Elem::i32, b32, false, true), 1), "pid (0, 0, 0) idx (1) v: -2147483648");
  EXPECT_EQ(line_of(print_bits(Elem::i32, b32, false, false), 0), "pid (0, 0, 0) idx (0) v: 4294967295");
  EXPECT_EQ(line_of(print_bits(Elem::i32, b32, true, false), 3), "pid (0, 0, 0) idx (3) v: 0x00000005");
  std::vector<uint64_t> b64{
      ~uint64_t{0}, uint64_t{1} << 63, (uint64_t{1} << 63) - 1, 5, 0, 100, static_cast<uint64_t>(-100), 42};
  EXPECT_EQ(line_of(print_bits(Elem::i64, b64, false, true), 1),
            "pid (0, 0, 0) idx (1) v: -9223372036854775808");
  EXPECT_EQ(line_of(print_bits(Elem::i64, b64, false, false), 0),
            "pid (0, 0, 0) idx (0) v: 18446744073709551615");
  EXPECT_EQ(line_of(print_bits(Elem::i64, b64, true, true), 6),
            "pid (0, 0, 0) idx (6) v: 0xffffffffffffff9c");
  std::vector<uint8_t> b1{1, 0, 1, 1};  // i1: "%u" and "0x%00x" (width 1/4 = 0)
  EXPECT_EQ(print_bits(Elem::i1, b1, false, false),
            "pid (0, 0, 0) idx (0) v: 1\npid (0, 0, 0) idx (1) v: 0\n"
            "pid (0, 0, 0) idx (2) v: 1\npid (0, 0, 0) idx (3) v: 1\n");
  EXPECT_EQ(line_of(print_bits(Elem::i1, b1, true, false), 0), "pid (0, 0, 0) idx (0) v: 0x1");

  for (bool hex : {false, true})
    for (bool sg : {false, true}) {
      SCOPED_TRACE(fmt::format("hex={} signed={}", hex, sg));
      EXPECT_EQ(print_bits(Elem::i1, b1, hex, sg), rule_bits(Elem::i1, b1, hex, sg));
      EXPECT_EQ(print_bits(Elem::i8, b8, hex, sg), rule_bits(Elem::i8, b8, hex, sg));
      EXPECT_EQ(print_bits(Elem::i16, b16, hex, sg), rule_bits(Elem::i16, b16, hex, sg));
      EXPECT_EQ(print_bits(Elem::i32, b32, hex, sg), rule_bits(Elem::i32, b32, hex, sg));
      EXPECT_EQ(print_bits(Elem::i64, b64, hex, sg), rule_bits(Elem::i64, b64, hex, sg));
    }
}

TEST(PrintFormat, FloatsAsPercentFOfTheirDoubleAndFp8AsBits) {
  // 16 values, each format's encoding of: 1, -2.5, 0.1, -0, inf, -inf, nan, 1e20, 3e-8, 65504,
  // 123456.789, 0.001, 0.5, 2^-24, 1e300, -nan (what the H200 run converted with torch).
  std::vector<uint16_t> h{0x3c00, 0xc100, 0x2e66, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c00,
                          0x0001, 0x7bff, 0x7c00, 0x1419, 0x3800, 0x0001, 0x7c00, 0xfe00};
  std::vector<uint16_t> bf{0x3f80, 0xc020, 0x3dcd, 0x8000, 0x7f80, 0xff80, 0xffff, 0x60ad,
                           0x3301, 0x4780, 0x47f1, 0x3a83, 0x3f00, 0x3380, 0x7f80, 0xffff};
  std::vector<uint32_t> f{0x3f800000, 0xc0200000, 0x3dcccccd, 0x80000000, 0x7f800000, 0xff800000,
                          0x7fc00000, 0x60ad78ec, 0x3300d959, 0x477fe000, 0x47f12065, 0x3a83126f,
                          0x3f000000, 0x33800000, 0x7f800000, 0xffc00000};
  std::vector<uint64_t> d{0x3ff0000000000000, 0xc004000000000000, 0x3fb999999999999a, 0x8000000000000000,
                          0x7ff0000000000000, 0xfff0000000000000, 0x7ff8000000000000, 0x4415af1d78b58c40,
                          0x3e601b2b29a4692b, 0x40effc0000000000, 0x40fe240c9fbe76c9, 0x3f50624dd2f1a9fc,
                          0x3fe0000000000000, 0x3e70000000000000, 0x7e37e43c8800759c, 0xfff8000000000000};
  std::vector<uint8_t> e4{0x38, 0xc2, 0x1d, 0x80, 0x7f, 0xff, 0x7f, 0x7f,
                          0x00, 0x7f, 0x7f, 0x01, 0x30, 0x00, 0x7f, 0xff};
  // What the H200 printed for them (non-hex, then hex where the value is not always 0).
  const char* f16_txt[16] = {"1.000000", "-2.500000", "0.099976", "-0.000000",    "inf", "-inf",
                             "nan",      "inf",       "0.000000", "65504.000000", "inf", "0.001000",
                             "0.500000", "0.000000",  "inf",      "-nan"};
  const char* bf16_txt[16] = {"1.000000", "-2.500000",    "0.100098",      "-0.000000",
                              "inf",      "-inf",         "-nan",          "99727710148492263424.000000",
                              "0.000000", "65536.000000", "123392.000000", "0.000999",
                              "0.500000", "0.000000",     "inf",           "-nan"};
  const char* f32_txt[16] = {"1.000000", "-2.500000",    "0.100000",      "-0.000000",
                             "inf",      "-inf",         "nan",           "100000002004087734272.000000",
                             "0.000000", "65504.000000", "123456.789062", "0.001000",
                             "0.500000", "0.000000",     "inf",           "-nan"};
  const char* f32_hex[16] = {"0x00000000", "0x00000000", "0xa0000000", "0x00000000",
                             "0x00000000", "0x00000000", "0x00000000", "0x80000000",
                             "0x20000000", "0x00000000", "0xa0000000", "0xe0000000",
                             "0x00000000", "0x00000000", "0x00000000", "0x00000000"};
  const char* e4_txt[16] = {"56", "194", "29",  "128", "127", "255", "127", "127",
                            "0",  "127", "127", "1",   "48",  "0",   "127", "255"};
  std::string t16 = print_bits(Elem::f16, h, false, false), t16h = print_bits(Elem::f16, h, true, false);
  std::string tbf = print_bits(Elem::bf16, bf, false, false), tbfh = print_bits(Elem::bf16, bf, true, false);
  std::string t32 = print_bits(Elem::f32, f, false, false), t32h = print_bits(Elem::f32, f, true, false);
  std::string t64h = print_bits(Elem::f64, d, true, false);
  std::string te4 = print_bits(Elem::f8e4m3fn, e4, false, false),
              te4h = print_bits(Elem::f8e4m3fn, e4, true, false);
  for (int i = 0; i < 16; ++i) {
    std::string at = fmt::format("pid (0, 0, 0) idx ({:2}) v: ", i);
    EXPECT_EQ(line_of(t16, i), at + f16_txt[i]);
    EXPECT_EQ(line_of(t16h, i), at + "0x0000");  // the f64's low 32 bits: 0 for every f16
    EXPECT_EQ(line_of(tbf, i), at + bf16_txt[i]);
    EXPECT_EQ(line_of(tbfh, i), at + "0x0000");
    EXPECT_EQ(line_of(t32, i), at + f32_txt[i]);
    EXPECT_EQ(line_of(t32h, i), at + f32_hex[i]);
    EXPECT_EQ(line_of(t64h, i), at + fmt::format("0x{:016x}", d[i]));  // "%016llx": the f64's bits
    EXPECT_EQ(line_of(te4, i), at + e4_txt[i]);
    EXPECT_EQ(line_of(te4h, i), at + fmt::format("0x{:02x}", e4[i]));
  }
  // f64 %f prints every digit (H200: 1e300 as 301 digits, .000000).
  EXPECT_EQ(line_of(print_bits(Elem::f64, d, false, false), 7),
            "pid (0, 0, 0) idx ( 7) v: 100000000000000000000.000000");

  std::vector<uint8_t> fp8_all(256);
  for (int i = 0; i < 256; ++i) fp8_all[i] = static_cast<uint8_t>(i);
  for (bool hex : {false, true}) {
    SCOPED_TRACE(fmt::format("hex={}", hex));
    EXPECT_EQ(print_bits(Elem::f16, h, hex, false), rule_bits(Elem::f16, h, hex, false));
    EXPECT_EQ(print_bits(Elem::bf16, bf, hex, false), rule_bits(Elem::bf16, bf, hex, false));
    EXPECT_EQ(print_bits(Elem::f32, f, hex, false), rule_bits(Elem::f32, f, hex, false));
    EXPECT_EQ(print_bits(Elem::f64, d, hex, false), rule_bits(Elem::f64, d, hex, false));
    for (Elem e : {Elem::f8e4m3fn, Elem::f8e5m2, Elem::f8e4m3fnuz, Elem::f8e5m2fnuz})
      EXPECT_EQ(print_bits(e, fp8_all, hex, false), rule_bits(e, fp8_all, hex, false)) << info(e).mlir;
  }
}

TEST(PrintFormat, PointersPrintAsPercentP) {
  // H200: "idx (0) q: (nil)" for an address of 0, "0x1234" for 0x1234, hex or not; a buffer's
  // addresses as 0x... of the address.
  const char* k = R"(module {
  tt.func public @k(%x: !tt.ptr<i32>) attributes {noinline = false} {
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %s = tt.splat %x : !tt.ptr<i32> -> tensor<4x!tt.ptr<i32>>
    %p = tt.addptr %s, %r : tensor<4x!tt.ptr<i32>>, tensor<4xi32>
    tt.print " p: " {hex = false, isSigned = array<i32: 0>} : %p : tensor<4x!tt.ptr<i32>>
    %c = arith.constant dense<4660> : tensor<4xi64>
    %m = arith.extsi %r : tensor<4xi32> to tensor<4xi64>
    %a = arith.muli %m, %c : tensor<4xi64>
    %q = tt.int_to_ptr %a : tensor<4xi64> -> tensor<4x!tt.ptr<i32>>
    tt.print " q: " {hex = true, isSigned = array<i32: 0>} : %q : tensor<4x!tt.ptr<i32>>
    tt.return
  }
}
)";
  std::vector<int32_t> x(4, 0);
  exec::Memory mem;
  int b = test::add_buffer(mem, x, "x", Elem::i32);
  PrintLog log;
  std::string t = run(k, mem, {Arg::buf(b)}, {1, 1, 1}, &log);
  ASSERT_EQ(log.arg_bits.size(), 1u);
  uint64_t base = log.arg_bits[0];
  ASSERT_NE(base, 0u);
  std::string want =
      rule_tensor({4}, " p: ", [&](int64_t i) { return rule_value(Elem::ptr, base + 4 * i, false, false); });
  want +=
      "pid (0, 0, 0) idx (0) q: (nil)\npid (0, 0, 0) idx (1) q: 0x1234\n"
      "pid (0, 0, 0) idx (2) q: 0x2468\npid (0, 0, 0) idx (3) q: 0x369c\n";
  EXPECT_EQ(t, want);
  EXPECT_EQ(line_of(t, 1), fmt::format("pid (0, 0, 0) idx (1) p: 0x{:x}", base + 4));
}

TEST(PrintFormat, PidIsUnpaddedAndEveryProgramPrints) {
  // H200, grid (2, 2, 1): "pid (1, 1, 0) idx () pid y: 1"; pids are "%u" with no padding.
  exec::Memory mem;
  std::string t = run(R"(module {
  tt.func public @k() attributes {noinline = false} {
    %y = tt.get_program_id y : i32
    tt.print " pid y: " {hex = false, isSigned = array<i32: 1>} : %y : i32
    tt.print " hello" {hex = false, isSigned = array<i32>}
    tt.return
  }
}
)",
                      mem, {}, {12, 3, 2});
  std::vector<std::string> want;
  for (uint32_t z = 0; z < 2; ++z)
    for (uint32_t y = 0; y < 3; ++y)
      for (uint32_t x = 0; x < 12; ++x) {
        want.push_back(c_printf("pid (%u, %u, %u) idx () pid y: %i", x, y, z, static_cast<int>(y)));
        want.push_back(c_printf("pid (%u, %u, %u) hello", x, y, z));
      }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(sorted_lines(t), want);
  EXPECT_NE(t.find("pid (11, 2, 1) idx () pid y: 2\n"), std::string::npos);
}

TEST(PrintFormat, HexFloatsOfEvenRankPrintTheLow32BitsToo) {
  // Our choice, not the GPU's text: at rank 0, 2, 4, ... the f64 argument sits after 4 bytes of
  // padding, and "%08x" on the H200 prints those bytes (seen: 0x00000000 to 0x0000000f, varying by
  // thread). We print the low 32 bits of the f64, as the GPU does at odd ranks.
  std::string t = run(R"(module {
  tt.func public @k() attributes {noinline = false} {
    %c = arith.constant dense<1.000000e-01> : tensor<2x2xf32>
    tt.print " w: " {hex = true, isSigned = array<i32: 0>} : %c : tensor<2x2xf32>
    %s = arith.constant 1.000000e-01 : f32
    tt.print " s: " {hex = true, isSigned = array<i32: 0>} : %s : f32
    tt.return
  }
}
)");
  EXPECT_EQ(t,
            "pid (0, 0, 0) idx (0, 0) w: 0xa0000000\npid (0, 0, 0) idx (0, 1) w: 0xa0000000\n"
            "pid (0, 0, 0) idx (1, 0) w: 0xa0000000\npid (0, 0, 0) idx (1, 1) w: 0xa0000000\n"
            "pid (0, 0, 0) idx () s: 0xa0000000\n");
}

}  // namespace
