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
