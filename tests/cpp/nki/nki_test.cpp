// The NKI machine from C++ (tilescope/nki/nki.h): targets and dtypes from AWS's documentation, access
// patterns, checked instructions, and a run whose findings come from the analyses of the registry.
#include "tilescope/nki/nki.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "src/nki/machine.h"
#include "tilescope/ir/diag.h"

namespace tilescope::nki {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

ir::PyLoc at(int line) {
  ir::PyLoc l;
  l.file = "k.py";
  l.line = line;
  return l;
}

View whole(const Kernel& k, int t) {
  const TensorInfo& info = k.tensor(t);
  View v{t, 0, info.shape, std::vector<int64_t>(info.shape.size(), 1)};
  for (size_t d = info.shape.size() - 1; d > 0; --d) v.strides[d - 1] = v.strides[d] * info.shape[d];
  return v;
}

TEST(Nki, TargetsAndDtypesAreTheDocumentedOnes) {
  EXPECT_EQ(target("trn1").sbuf_bytes, 180224);
  EXPECT_EQ(target("trn2").sbuf_bytes, 212984);
  EXPECT_EQ(target("gen4").name, "trn3");
  EXPECT_EQ(target("trn3").psum_bytes, 16 * 1024);
  EXPECT_NE(error_of([] { target("trn9"); }).find("unknown NKI target 'trn9'"), std::string::npos);
  EXPECT_EQ(dtype("bfloat16").elem, ir::Elem::bf16);
  EXPECT_TRUE(dtype("nl.uint16").is_unsigned);
  EXPECT_TRUE(dtype("tfloat32").tf32);
  EXPECT_EQ(dtype("torch.float32").name, "float32");
  EXPECT_NE(error_of([] { dtype("complex64"); }).find("unsupported NKI dtype 'complex64'"),
            std::string::npos);
}

TEST(Nki, ElementIndexesAreRowMajorOverTheView) {
  const View v{0, 5, {2, 3}, {10, 2}};
  EXPECT_EQ(element_indexes(v), (std::vector<int64_t>{5, 7, 9, 15, 17, 19}));
  EXPECT_TRUE(element_indexes(View{0, 0, {0, 4}, {4, 1}}).empty());
}

TEST(Nki, AddRoundsToBfloat16AndReadsOfUnwrittenTilesAreFindings) {
  // out = a + b through SBUF; bf16 output: 1 + 2^-8 is not a bf16 value and rounds to 1 (to even).
  std::vector<float> a(128 * 4, 1.0f), b(128 * 4, 1.0f / 256);
  std::vector<uint16_t> out(128 * 4, 0);
  Kernel k("add", target("trn2"), 1);
  const int ta = k.add_argument("a", dtype("float32"), reinterpret_cast<std::byte*>(a.data()), a.size() * 4,
                                {128, 4}, {4, 1});
  const int tb = k.add_argument("b", dtype("float32"), reinterpret_cast<std::byte*>(b.data()), b.size() * 4,
                                {128, 4}, {4, 1});
  const int to = k.add_argument("out", dtype("bfloat16"), reinterpret_cast<std::byte*>(out.data()),
                                out.size() * 2, {128, 4}, {4, 1});
  const int sa = k.allocate(0, "sa", Space::sbuf, dtype("float32"), {128, 4}, at(3));
  const int sb = k.allocate(0, "sb", Space::sbuf, dtype("float32"), {128, 4}, at(4));
  const int sc = k.allocate(0, "sc", Space::sbuf, dtype("bfloat16"), {128, 4}, at(5));
  const int never = k.allocate(0, "never", Space::sbuf, dtype("float32"), {128, 4}, at(6));
  k.append(0, "dma_copy", {{"dst", whole(k, sa)}, {"src", whole(k, ta)}}, at(7));
  k.append(0, "dma_copy", {{"dst", whole(k, sb)}, {"src", whole(k, tb)}}, at(8));
  k.append(
      0, "tensor_tensor",
      {{"dst", whole(k, sc)}, {"data1", whole(k, sa)}, {"data2", whole(k, sb)}, {"op", std::string("add")}},
      at(9));
  k.append(0, "dma_copy", {{"dst", whole(k, to)}, {"src", whole(k, sc)}}, at(10));
  k.append(0, "tensor_copy", {{"dst", whole(k, sa)}, {"src", whole(k, never)}}, at(11));
  // A broken constraint is an Error at its line, and the instruction is not appended.
  EXPECT_EQ(error_of([&] {
              k.append(0, "nc_matmul",
                       {{"dst", whole(k, sa)}, {"stationary", whole(k, sa)}, {"moving", whole(k, sb)}},
                       at(12));
            }),
            "k.py:12:0: nki.isa.nc_matmul: argument 'dst' is in sbuf, but this op takes it only from psum");
  EXPECT_NE(error_of([&] {
              k.append(0, "tensor_tensor", {{"dst", whole(k, sc)}, {"data1", whole(k, sa)}}, at(13));
            }).find("k.py:13:0: nki.isa.tensor_tensor: argument 'data2' is required"),
            std::string::npos);
  launch::RunOptions o;
  o.analyses.push_back({"sanitizer", nullptr});
  o.analyses.push_back({"races", nullptr});
  o.analyses.push_back({"uninit", nullptr});
  launch::RunResult r = k.run(o);
  for (uint16_t bits : out) ASSERT_EQ(bits, 0x3f80);  // bf16 1.0
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, analysis::Kind::uninitialized_read);
  EXPECT_EQ(r.findings[0].site.line, 11);
  EXPECT_EQ(r.findings[0].site.op, "nki.isa.tensor_copy");
  EXPECT_NE(error_of([&] { k.run(o); }).find("has already run"), std::string::npos);
}

}  // namespace
}  // namespace tilescope::nki
