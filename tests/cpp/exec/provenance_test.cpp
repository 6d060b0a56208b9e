#include <gtest/gtest.h>

#include "tilescope/exec/memory.h"

// Provenance lives in the address: an offset that lands inside another buffer's host memory still
// resolves to the buffer it was derived from (issue 2, item 5).
TEST(Memory, ProvenanceSurvivesOverlappingHostMemory) {
  std::vector<float> a(16), b(16);
  tilescope::exec::Memory m;
  int ia = m.add({"a", tilescope::ir::Elem::f32, reinterpret_cast<std::byte*>(a.data()), 64, {16}, {1}});
  int ib = m.add({"b", tilescope::ir::Elem::f32, reinterpret_cast<std::byte*>(b.data()), 64, {16}, {1}});
  int64_t delta = reinterpret_cast<std::byte*>(b.data()) - reinterpret_cast<std::byte*>(a.data());
  uint64_t addr = m.vaddr(ia) + delta;  // a + (b - a): b's host memory, derived from a
  auto w = m.where(addr, 4);
  ASSERT_NE(w.buffer, nullptr);
  EXPECT_EQ(w.buffer->id, ia);
  EXPECT_FALSE(w.in_bounds);
  EXPECT_TRUE(m.where(m.vaddr(ib) + 60, 4).in_bounds);
  EXPECT_FALSE(m.where(m.vaddr(ib) + 61, 4).in_bounds);
  EXPECT_FALSE(m.where(m.vaddr(ib) - 4, 4).in_bounds);
  EXPECT_EQ(m.where(m.vaddr(ib) - 4, 4).buffer->id, ib);
  EXPECT_EQ(m.where(0, 4).buffer, nullptr);
}
