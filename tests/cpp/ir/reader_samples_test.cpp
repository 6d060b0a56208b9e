// Reader tests on real Triton 3.6 TTIR (tests/ttir/reader/*.ttir, made by gen_samples.py from
// kernels.py). Expected values come from the kernel source and the printed text, not from the reader.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "src/ops/table.h"
#include "tilescope/ir/reader.h"

namespace fs = std::filesystem;
using namespace tilescope;
using namespace tilescope::ir;

namespace {

std::string sample(const std::string& name) {
  return (fs::path(__FILE__).parent_path() / ".." / ".." / "ttir" / "reader" / name).lexically_normal().string();
}

void walk(const Region& r, const std::function<void(const Op&)>& f) {
  for (auto& b : r.blocks)
    for (auto& o : b->ops) {
      f(*o);
      for (auto& sub : o->regions) walk(*sub, f);
    }
}

std::vector<const Op*> find_ops(const Function& fn, const std::string& name) {
  std::vector<const Op*> v;
  walk(fn.body, [&](const Op& o) {
    if (o.name == name) v.push_back(&o);
  });
  return v;
}

const Op* find_result(const Function& fn, const std::string& value) {
  const Op* hit = nullptr;
  walk(fn.body, [&](const Op& o) {
    for (auto& r : o.results)
      if (r->name == value) hit = &o;
  });
  return hit;
}

}  // namespace

TEST(ReaderSamples, AllSamplesReadAndVerify) {
  int n = 0;
  for (auto& e : fs::directory_iterator(fs::path(sample("")))) {
    if (e.path().extension() != ".ttir") continue;
    SCOPED_TRACE(e.path().string());
    try {
      Module m = read_file(e.path().string());
      verify(m);
      EXPECT_NE(m.entry(), nullptr);
    } catch (const Error& err) {
      ADD_FAILURE() << err.what();
    }
    ++n;
  }
  EXPECT_GE(n, 20);
}

namespace {

Module load(const std::string& name) {
  Module m = read_file(sample(name));
  verify(m);
  return m;
}

const Attr& attr(const Op& o, const std::string& k) {
  const Attr* a = o.attr(k);
  if (!a) throw std::runtime_error(o.name + " lacks attribute " + k);
  return *a;
}

int64_t attr_i(const std::map<std::string, Attr>& m, const std::string& k) {
  auto it = m.find(k);
  if (it == m.end() || it->second.kind != Attr::Kind::Int) throw std::runtime_error("no int attribute " + k);
  return it->second.i;
}

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

}  // namespace

// add.ttir (kernels.py add_kernel, lines 8-14): the vector-add module of reference §3.3.
TEST(ReaderSamples, VectorAdd) {
  Module m = load("add.ttir");
  ASSERT_EQ(m.functions.size(), 1u);
  const Function& f = *m.entry();
  EXPECT_EQ(f.name, "add_kernel");
  EXPECT_TRUE(f.is_public);
  ASSERT_EQ(f.args().size(), 4u);
  EXPECT_EQ(f.args()[0]->type->str(), "!tt.ptr<f32>");
  EXPECT_EQ(f.args()[3]->type->str(), "i32");
  EXPECT_EQ(f.args()[0]->name, "x_ptr");
  // attrs={(0,): [["tt.divisibility", 16]]} in gen_samples.py
  ASSERT_EQ(f.arg_attrs.size(), 4u);
  EXPECT_EQ(attr_i(f.arg_attrs[0], "tt.divisibility"), 16);
  EXPECT_TRUE(f.arg_attrs[1].empty());
  EXPECT_EQ(f.attrs.at("noinline").kind, Attr::Kind::Bool);
  EXPECT_FALSE(f.attrs.at("noinline").b);
  EXPECT_TRUE(ends_with(f.loc.file, "kernels.py"));
  EXPECT_EQ(f.loc.line, 8);
  EXPECT_EQ(f.args()[2]->loc.var, "out_ptr");
  EXPECT_EQ(f.args()[2]->loc.line, 8);

  const Op* pid = find_result(f, "pid");
  ASSERT_NE(pid, nullptr);
  EXPECT_EQ(pid->name, "tt.get_program_id");
  EXPECT_EQ(attr(*pid, "axis").i, 0);
  // `%pid = ...` is line 9 of add.ttir, indented by 4; Python: `pid = tl.program_id(0)` at 9:24 (§3.2).
  EXPECT_EQ(pid->pos.line, 9);
  EXPECT_EQ(pid->pos.col, 5);
  EXPECT_EQ(pid->loc.line, 9);
  EXPECT_EQ(pid->loc.col, 24);
  EXPECT_EQ(pid->loc.var, "pid");
  EXPECT_TRUE(ends_with(pid->loc.file, "tests/ttir/reader/kernels.py"));

  const Op* range = find_result(f, "offs_0");
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->name, "tt.make_range");
  EXPECT_EQ(attr(*range, "start").i, 0);
  EXPECT_EQ(attr(*range, "end").i, 128);
  EXPECT_EQ(range->result()->type->str(), "tensor<128xi32>");

  const Op* mask = find_result(f, "mask_3");
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->name, "arith.cmpi");
  EXPECT_EQ(attr(*mask, "predicate").s, "slt");
  EXPECT_EQ(mask->result()->type->str(), "tensor<128xi1>");

  auto loads = find_ops(f, "tt.load");
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0]->operands.size(), 2u);  // ptr, mask; no other
  EXPECT_EQ(loads[0]->operands[1], mask->result());
  EXPECT_EQ(loads[0]->result()->type->str(), "tensor<128xf32>");
  auto stores = find_ops(f, "tt.store");
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(stores[0]->operands.size(), 3u);
  EXPECT_EQ(stores[0]->results.size(), 0u);
  EXPECT_EQ(stores[0]->loc.line, 14);

  // Dense value ids, parents and defs.
  std::vector<bool> seen(f.num_values, false);
  walk(f.body, [&](const Op& o) {
    EXPECT_NE(o.def, nullptr);
    EXPECT_EQ(o.def->name, o.name);
    for (auto& r : o.results) {
      ASSERT_GE(r->id, 0);
      ASSERT_LT(r->id, f.num_values);
      EXPECT_FALSE(seen[r->id]);
      seen[r->id] = true;
      EXPECT_EQ(r->def, &o);
    }
  });
  for (auto& a : f.args()) seen.at(a->id) = true;
  for (bool s : seen) EXPECT_TRUE(s);
  EXPECT_EQ(f.body.blocks[0]->ops.back()->name, "tt.return");
  EXPECT_EQ(f.body.blocks[0]->ops.back()->parent, f.body.blocks[0].get());
}
