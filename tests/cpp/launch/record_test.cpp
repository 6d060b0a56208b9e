// The launch record: its JSON form round-trips, malformed JSON gives errors naming the field, and
// binding converts scalars to the TTIR argument types (expected bits computed by hand or with the C++
// standard library, independently of tilescope) and registers buffers.
#include "tilescope/launch/record.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "tilescope/ir/diag.h"
#include "tilescope/ir/reader.h"

namespace tilescope::launch {
namespace {

using nlohmann::json;

LaunchRecord sample() {
  static float host[6] = {};
  LaunchRecord r;
  r.kernel = "k";
  r.ttir = "module {}";
  r.ttir_file = "k.ttir";
  r.grid = {4, 2, 1};
  r.args.push_back(
      ArgRecord::buffer("x_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(host), 24, {2, 3}, {3, 1}));
  r.args.push_back(ArgRecord::scalar("n", int64_t{-7}));
  r.args.push_back(ArgRecord::scalar("big", uint64_t{1} << 63));
  r.args.push_back(ArgRecord::scalar("eps", 1e-5));
  r.args.push_back(ArgRecord::scalar("flag", true));
  r.specialization.constexprs = {{"BLOCK", "128"}};
  r.specialization.divisible_by_16 = {"x_ptr"};
  r.stack = {"prog.py:10 in <module>"};
  return r;
}

TEST(LaunchRecord, JsonRoundTrip) {
  LaunchRecord r = sample();
  json j = to_json(r);
  EXPECT_EQ(j["args"][0]["dtype"], "f32");
  EXPECT_EQ(j["args"][0]["shape"], json::array({2, 3}));
  EXPECT_EQ(j["args"][1]["value"], -7);
  EXPECT_EQ(j["grid"], json::array({4, 2, 1}));
  LaunchRecord back = record_from_json(json::parse(j.dump()));
  EXPECT_EQ(back.kernel, "k");
  EXPECT_EQ(back.ttir, "module {}");
  EXPECT_EQ(back.grid, r.grid);
  ASSERT_EQ(back.args.size(), 5u);
  EXPECT_EQ(back.args[0].kind, ArgRecord::Kind::buffer);
  EXPECT_EQ(back.args[0].dtype, ir::Elem::f32);
  EXPECT_EQ(back.args[0].strides, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(back.args[0].bytes, 24u);
  EXPECT_EQ(back.args[0].host, nullptr);  // memory is never serialized
  EXPECT_EQ(std::get<int64_t>(back.args[1].value), -7);
  EXPECT_EQ(std::get<uint64_t>(back.args[2].value), uint64_t{1} << 63);
  EXPECT_EQ(std::get<double>(back.args[3].value), 1e-5);
  EXPECT_EQ(std::get<bool>(back.args[4].value), true);
  EXPECT_EQ(back.specialization.constexprs, r.specialization.constexprs);
  EXPECT_EQ(back.specialization.divisible_by_16, r.specialization.divisible_by_16);
  EXPECT_EQ(back.stack, r.stack);
  EXPECT_FALSE(to_json(r, false).contains("ttir"));
}

TEST(LaunchRecord, MalformedJsonNamesTheField) {
  auto error_of = [](const std::string& text) {
    try {
      record_from_json(json::parse(text));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(R"({"grid": [1], "args": []})").find("'kernel'"), std::string::npos);
  EXPECT_NE(error_of(R"({"kernel": "k", "grid": [1, 1, 1, 1], "args": []})").find("1 to 3 dimensions"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kernel": "k", "grid": [1], "args": [{"name": "x", "kind": "buffer", "dtype": "f33",
            "shape": [1], "strides": [1], "bytes": 4}]})")
                .find("args[0].dtype 'f33'"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"kernel": "k", "grid": [1], "args": [{"name": "n", "kind": "scalar", "value": "3"}]})")
          .find("args[0].value"),
      std::string::npos);
  EXPECT_NE(
      error_of(R"({"kernel": "k", "grid": [1], "args": [{"name": "n", "kind": "tensor"}]})").find("kind"),
      std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("not a JSON object"), std::string::npos);
  // The grid is checked as every launch checks it (exec::check_grid: CUDA's limits), so that a record
  // whose product of dimensions overflows is refused when it is read (issue 8, item 1).
  EXPECT_EQ(error_of(R"({"kernel": "k", "grid": [4194304, 2097152, 2097152], "args": []})"),
            "launch record: grid dimension y is 2097152: CUDA allows 0 to 65535");
  EXPECT_EQ(error_of(R"({"kernel": "k", "grid": [2147483648], "args": []})"),
            "launch record: grid dimension x is 2147483648: CUDA allows 0 to 2147483647");
  // Past INT64_MAX: refused, not wrapped to a negative size (18446744073709551615 would read as -1).
  EXPECT_EQ(error_of(R"({"kernel": "k", "grid": [18446744073709551615], "args": []})"),
            "launch record: 'grid' must hold integers of 64 bits");
  EXPECT_EQ(error_of(R"({"kernel": "k", "grid": [1], "args": [{"name": "x", "kind": "buffer", "dtype": "f32",
            "shape": [18446744073709551615], "strides": [1], "bytes": 4}]})"),
            "launch record: args[0].'shape' must hold integers of 64 bits");
}

const char* kSignature = R"(module {
  tt.func public @k(%p: !tt.ptr<f32>, %a: i32, %b: i64, %h: f16, %f: f32, %one: i1) attributes {noinline = false} {
    tt.return
  }
})";

std::vector<exec::Arg> bind_values(exec::Memory& mem, Scalar a, Scalar b, Scalar h, Scalar f, Scalar one) {
  static float host[4] = {};
  ir::Module m = ir::read(kSignature, "sig.ttir");
  LaunchRecord r;
  r.args = {ArgRecord::buffer("p", ir::Elem::f32, reinterpret_cast<std::byte*>(host), 16, {4}, {1}),
            ArgRecord::scalar("a", a),
            ArgRecord::scalar("b", b),
            ArgRecord::scalar("h", h),
            ArgRecord::scalar("f", f),
            ArgRecord::scalar("one", one)};
  return bind(r, *m.entry(), mem);
}

TEST(LaunchRecord, BindConvertsScalarsToTheTtirTypes) {
  exec::Memory mem;
  auto args = bind_values(mem, int64_t{-1}, uint64_t{1} << 63, 1.0 / 3.0, 0.1, int64_t{5});
  ASSERT_EQ(args.size(), 6u);
  EXPECT_EQ(args[0].kind, exec::Arg::Kind::buffer);
  EXPECT_EQ(mem.buffer(args[0].buffer).name, "p");
  EXPECT_EQ(mem.buffer(args[0].buffer).bytes, 16u);
  EXPECT_EQ(args[1].bits, ~uint64_t{0});       // -1 sign-extended
  EXPECT_EQ(args[2].bits, uint64_t{1} << 63);  // u64 kept
  EXPECT_EQ(args[3].bits, 0x3555u);            // 1/3 to f16, round to nearest even (0x3555 = 0.33325)
  EXPECT_EQ(args[4].bits, std::bit_cast<uint32_t>(0.1f));
  EXPECT_EQ(args[5].bits, 1u);  // any non-zero integer is true
  // An i32 argument takes the unsigned range too (TTIR is signless): 0xFFFFFFFF is -1 as i32.
  exec::Memory mem2;
  auto args2 = bind_values(mem2, int64_t{0xFFFFFFFF}, int64_t{1}, int64_t{2}, true, false);
  EXPECT_EQ(args2[1].bits, ~uint64_t{0});
  EXPECT_EQ(args2[3].bits, 0x4000u);  // 2.0 in f16
  EXPECT_EQ(args2[4].bits, std::bit_cast<uint32_t>(1.0f));
  EXPECT_EQ(args2[5].bits, 0u);
}

TEST(LaunchRecord, BindRejectsWhatTheKernelCannotTake) {
  auto error_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  exec::Memory mem;
  EXPECT_EQ(error_of([&] { bind_values(mem, int64_t{1} << 32, int64_t{0}, 0.0, 0.0, false); }),
            "argument 'a': 4294967296 does not fit in i32");
  EXPECT_EQ(
      error_of([&] { bind_values(mem, int64_t{-(int64_t{1} << 31) - 1}, int64_t{0}, 0.0, 0.0, false); }),
      "argument 'a': -2147483649 does not fit in i32");
  EXPECT_EQ(error_of([&] { bind_values(mem, 1.5, int64_t{0}, 0.0, 0.0, false); }),
            "argument 'a': 1.5 is not an integer, and the kernel's argument is i32");
  ir::Module m = ir::read(kSignature, "sig.ttir");
  LaunchRecord r;
  r.args.resize(2);
  EXPECT_EQ(error_of([&] { bind(r, *m.entry(), mem); }),
            "kernel 'k' takes 6 runtime arguments in its TTIR signature, 2 were given");
  r.args = {ArgRecord::scalar("p", int64_t{0}), ArgRecord::scalar("a", int64_t{0}),
            ArgRecord::scalar("b", int64_t{0}), ArgRecord::scalar("h", 0.0),
            ArgRecord::scalar("f", 0.0),        ArgRecord::scalar("one", false)};
  EXPECT_EQ(error_of([&] { bind(r, *m.entry(), mem); }),
            "argument 'p' is !tt.ptr<f32> in the kernel, but a scalar was passed");
  r.args[0] = ArgRecord{};
  r.args[0].kind = ArgRecord::Kind::none;
  r.args[0].name = "p";
  EXPECT_EQ(error_of([&] { bind(r, *m.entry(), mem); }), "argument 'p' (!tt.ptr<f32>) was passed None");
  static float host[1];
  r.args[0] = ArgRecord::buffer("p", ir::Elem::f32, reinterpret_cast<std::byte*>(host), 4, {1}, {1});
  r.args[1] = ArgRecord::buffer("a", ir::Elem::f32, reinterpret_cast<std::byte*>(host), 4, {1}, {1});
  EXPECT_EQ(error_of([&] { bind(r, *m.entry(), mem); }),
            "argument 'a' is i32 in the kernel, but a tensor was passed");
}

}  // namespace
}  // namespace tilescope::launch
