// `tilescope run --arg` specs (src/cli/args.cpp; issue 8, item 16): scalars read as Python's int()
// and C's strtod read them, floats that do not fit their type are errors, empty buffers are legal,
// and an overflowing shape has its own message. Expected values come from the formats' definitions:
// FLT_MAX = (2 - 2^-23) * 2^127, so the f32 rounding boundary is 2^128 - 2^103 (about 3.4028235678e38);
// f16's largest finite value is 65504 with a last step of 32 (boundary 65520).
#include "src/cli/args.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <variant>

#include "tilescope/ir/diag.h"
#include "tilescope/ir/ir.h"

using namespace tilescope;
using namespace tilescope::cli;

namespace {

ir::Type scalar(ir::Elem e) {
  ir::Type t;
  t.elem = e;
  return t;
}

std::string error_of_scalar(const std::string& spec, ir::Elem e) {
  try {
    parse_scalar("n", spec, scalar(e));
  } catch (const Error& err) {
    return err.what();
  }
  return "(accepted)";
}

std::string error_of_buffer(const std::string& spec, ir::Elem pointee = ir::Elem::f32) {
  std::mt19937_64 rng(0);
  try {
    buffer_from_spec("x", spec, pointee, rng);
  } catch (const Error& err) {
    return err.what();
  }
  return "(accepted)";
}

template <class T>
T value_of(const std::string& spec, ir::Elem e) {
  launch::Scalar v = parse_scalar("n", spec, scalar(e));
  EXPECT_TRUE(std::holds_alternative<T>(v)) << spec;
  return std::holds_alternative<T>(v) ? std::get<T>(v) : T{};
}

}  // namespace

TEST(CliArgs, IntegersAreDecimalWithPythonPrefixes) {
  EXPECT_EQ(value_of<int64_t>("i32:010", ir::Elem::i32), 10);  // decimal, as int("010") in Python
  EXPECT_EQ(value_of<int64_t>("i32:0", ir::Elem::i32), 0);
  EXPECT_EQ(value_of<int64_t>("i32:-007", ir::Elem::i32), -7);
  EXPECT_EQ(value_of<int64_t>("i32:0x1F", ir::Elem::i32), 31);
  EXPECT_EQ(value_of<int64_t>("i32:0o17", ir::Elem::i32), 15);
  EXPECT_EQ(value_of<int64_t>("i32:0b101", ir::Elem::i32), 5);
  EXPECT_EQ(value_of<int64_t>("i32:-0x10", ir::Elem::i32), -16);
  EXPECT_EQ(value_of<int64_t>("4096", ir::Elem::i32), 4096);  // the type may be left out
  EXPECT_EQ(value_of<uint64_t>("u32:0xffffffff", ir::Elem::i32), 0xffffffffu);
  EXPECT_EQ(value_of<int64_t>("i64:-9223372036854775808", ir::Elem::i64),
            std::numeric_limits<int64_t>::min());
  // Past INT64_MAX: i64's unsigned range (TTIR is signless; launch::bind checks the width).
  EXPECT_EQ(value_of<uint64_t>("i64:18446744073709551615", ir::Elem::i64), ~uint64_t{0});
  EXPECT_EQ(value_of<bool>("i1:true", ir::Elem::i1), true);
}

TEST(CliArgs, BadIntegersAreErrors) {
  EXPECT_EQ(error_of_scalar("i32:1e3", ir::Elem::i32), "--arg n: cannot read '1e3' as i32");
  EXPECT_EQ(error_of_scalar("i32:0x", ir::Elem::i32), "--arg n: cannot read '0x' as i32");
  EXPECT_EQ(error_of_scalar("i32:08x", ir::Elem::i32), "--arg n: cannot read '08x' as i32");
  EXPECT_EQ(error_of_scalar("i32: 5", ir::Elem::i32), "--arg n: cannot read ' 5' as i32");
  EXPECT_EQ(error_of_scalar("i32:", ir::Elem::i32), "--arg n: cannot read '' as i32");
  EXPECT_EQ(error_of_scalar("i64:18446744073709551616", ir::Elem::i64),
            "--arg n: 18446744073709551616 does not fit in i64");
  EXPECT_EQ(error_of_scalar("i64:-9223372036854775809", ir::Elem::i64),
            "--arg n: -9223372036854775809 does not fit in i64");
  EXPECT_EQ(error_of_scalar("u32:-1", ir::Elem::i32), "--arg n: -1 has a sign, but u32 is unsigned");
}

TEST(CliArgs, FloatsMustRoundToAFiniteValueOfTheirType) {
  EXPECT_EQ(error_of_scalar("f32:1e39", ir::Elem::f32), "--arg n: 1e39 does not fit in f32");
  EXPECT_EQ(error_of_scalar("f32:-1e39", ir::Elem::f32), "--arg n: -1e39 does not fit in f32");
  EXPECT_EQ(error_of_scalar("f64:1e999", ir::Elem::f64), "--arg n: 1e999 does not fit in f64");
  EXPECT_EQ(error_of_scalar("f32:3.4028236e38", ir::Elem::f32), "--arg n: 3.4028236e38 does not fit in f32");
  EXPECT_EQ(value_of<double>("f32:3.4028235e38", ir::Elem::f32), 3.4028235e38);  // rounds to FLT_MAX
  EXPECT_EQ(error_of_scalar("f16:65520", ir::Elem::f16), "--arg n: 65520 does not fit in f16");
  EXPECT_EQ(value_of<double>("f16:65519", ir::Elem::f16), 65519.0);  // rounds to 65504
  EXPECT_EQ(error_of_scalar("bf16:1e39", ir::Elem::bf16), "--arg n: 1e39 does not fit in bf16");
  // Written as infinity or NaN: the user's choice. Below the smallest subnormal: rounds to 0.
  EXPECT_TRUE(std::isinf(value_of<double>("f32:inf", ir::Elem::f32)));
  EXPECT_TRUE(std::isnan(value_of<double>("f32:nan", ir::Elem::f32)));
  EXPECT_EQ(value_of<double>("f64:1e-400", ir::Elem::f64), 0.0);
  EXPECT_EQ(value_of<double>("f64:4.9406564584124654e-324", ir::Elem::f64),
            std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(value_of<double>("f32:1e-5", ir::Elem::f32), 1e-5);
  EXPECT_EQ(error_of_scalar("f32:1.5x", ir::Elem::f32), "--arg n: cannot read '1.5x' as f32");
}

TEST(CliArgs, EmptyBuffersAreLegal) {
  std::mt19937_64 rng(0);
  HostBuffer b = buffer_from_spec("x", "f32[0]:zeros", ir::Elem::f32, rng);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{0}));
  EXPECT_TRUE(b.data.empty());
  b = buffer_from_spec("x", "[4x0]:randn", ir::Elem::f32, rng);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{4, 0}));
  EXPECT_TRUE(b.data.empty());
}

// A buffer starts on a 64-byte boundary, as PyTorch's CPU allocator places a tensor (c10 alloc_cpu);
// malloc gives 16 bytes, and a buffer of a megabyte or more sits 16 bytes past a page boundary.
TEST(CliArgs, BuffersStartOnACacheLine) {
  std::mt19937_64 rng(0);
  for (const char* spec : {"[3]:zeros", "[1000]:randn", "[1048576]:ones", "[4194304]:zeros"}) {
    HostBuffer b = buffer_from_spec("x", spec, ir::Elem::f32, rng);
    ASSERT_FALSE(b.data.empty()) << spec;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data.data()) % 64, 0u) << spec;
  }
}

TEST(CliArgs, OversizedShapesHaveTheirOwnMessages) {
  EXPECT_EQ(error_of_buffer("f32[99999999999x99999999999]:zeros"),
            "--arg x: shape [99999999999x99999999999] has more elements than a 64-bit count can hold");
  EXPECT_EQ(error_of_buffer("f32[0x99999999999999999999]:zeros"),  // one size alone is past 64 bits
            "--arg x: shape [0x99999999999999999999] has more elements than a 64-bit count can hold");
  EXPECT_EQ(error_of_buffer("f32[17179869185]:zeros"),  // 2^34 + 1 floats: 4 bytes past 64 GiB
            "--arg x: shape [17179869185] is 17179869185 elements of 4 bytes, more than the 64 GiB a "
            "generated buffer may take");
}

TEST(CliArgs, FullValuesMustFitTheElementType) {
  std::mt19937_64 rng(0);
  HostBuffer b = buffer_from_spec("x", "i32[2]:full=010", ir::Elem::i32, rng);
  int32_t v[2];
  std::memcpy(v, b.data.data(), 8);
  EXPECT_EQ(v[0], 10);
  EXPECT_EQ(v[1], 10);
  b = buffer_from_spec("x", "i64[1]:full=9007199254740993", ir::Elem::i64, rng);  // 2^53 + 1: exact
  int64_t w;
  std::memcpy(&w, b.data.data(), 8);
  EXPECT_EQ(w, 9007199254740993);
  b = buffer_from_spec("x", "i8[1]:full=-128", ir::Elem::i8, rng);
  EXPECT_EQ(static_cast<int8_t>(b.data[0]), -128);
  EXPECT_EQ(error_of_buffer("f32[2]:full=1e39"), "--arg x: full=1e39 does not fit in f32");
  EXPECT_EQ(error_of_buffer("i8[2]:full=256", ir::Elem::i8), "--arg x: full=256 does not fit in i8");
  EXPECT_EQ(error_of_buffer("i32[2]:full=1.5", ir::Elem::i32),
            "--arg x: full=1.5 is not an integer, and the buffer is i32");
  EXPECT_EQ(error_of_buffer("f32[2]:full=abc"), "--arg x: full=abc is not a number");
}
