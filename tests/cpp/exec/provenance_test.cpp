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

// Integers are host addresses (issue 9 item 4): tt.int_to_ptr of an address inside a registered
// buffer gives a pointer into that buffer (from_host), tt.ptr_to_int gives the host address back.
TEST(Memory, FromHostGivesTheBufferAnAddressLiesIn) {
  std::vector<float> a(16), b(8);
  tilescope::exec::Memory m;
  int ia = m.add({"a", tilescope::ir::Elem::f32, reinterpret_cast<std::byte*>(a.data()), 64, {16}, {1}});
  int ib = m.add({"b", tilescope::ir::Elem::f32, reinterpret_cast<std::byte*>(b.data()), 32, {8}, {1}});
  auto host = [](const std::vector<float>& v) { return reinterpret_cast<uint64_t>(v.data()); };
  EXPECT_EQ(m.from_host(host(a)), m.vaddr(ia));
  EXPECT_EQ(m.from_host(host(a) + 40), m.vaddr(ia) + 40);
  EXPECT_EQ(m.from_host(host(b) + 4), m.vaddr(ib) + 4);
  EXPECT_TRUE(m.where(m.from_host(host(b) + 28), 4).in_bounds);
  // One past the end keeps its buffer (C's rule) and is out of bounds there.
  auto end = m.where(m.from_host(host(b) + 32), 4);
  ASSERT_NE(end.buffer, nullptr);
  EXPECT_EQ(end.buffer->id, ib);
  EXPECT_FALSE(end.in_bounds);
  EXPECT_EQ(end.offset, 32);
  // Round trip through the integer.
  EXPECT_EQ(m.to_host(m.vaddr(ib) + 12), host(b) + 12);
  EXPECT_EQ(m.from_host(m.to_host(m.vaddr(ia) + 12)), m.vaddr(ia) + 12);
  // Null and an address in no buffer stay as they are and resolve to nothing.
  EXPECT_EQ(m.from_host(0), 0u);
  EXPECT_EQ(m.to_host(0), 0u);
  const uint64_t wild = host(a) + (uint64_t{1} << 30);
  EXPECT_EQ(m.from_host(wild), wild);
  EXPECT_EQ(m.where(wild, 4).buffer, nullptr);
}

TEST(Memory, FromHostPrefersContainingThenLowestId) {
  std::vector<float> x(32);
  auto* h = reinterpret_cast<std::byte*>(x.data());
  tilescope::exec::Memory m;
  int lo = m.add({"lo", tilescope::ir::Elem::f32, h, 64, {16}, {1}});       // x[0..16)
  int hi = m.add({"hi", tilescope::ir::Elem::f32, h + 64, 64, {16}, {1}});  // x[16..32)
  int all = m.add({"all", tilescope::ir::Elem::f32, h, 128, {32}, {1}});    // x[0..32), overlaps both
  const auto host = reinterpret_cast<uint64_t>(h);
  EXPECT_EQ(m.where(m.from_host(host + 64), 4).buffer->id, hi);   // contains beats ends-at (lo)
  EXPECT_EQ(m.where(m.from_host(host + 8), 4).buffer->id, lo);    // lowest id among containing
  EXPECT_EQ(m.where(m.from_host(host + 128), 4).buffer->id, hi);  // ends-at: lowest id (hi < all)
  EXPECT_EQ(m.where(m.from_host(host + 100), 4).buffer->id, hi);
  (void)all;
}

// Regions start at 2^48, so a host address (below 2^47 in user space) never decodes as a buffer,
// however many buffers there are. Before, buffer k lived at (k + 1) << 40 and a host address such as
// 0x7fxx_xxxx_xxxx named buffer ~126 of a launch with that many buffers.
TEST(Memory, HostAddressesNeverDecodeAsBuffers) {
  std::vector<float> v(4);
  tilescope::exec::Memory m;
  for (int i = 0; i < 300; ++i)
    m.add({"b", tilescope::ir::Elem::f32, reinterpret_cast<std::byte*>(v.data()), 16, {4}, {1}});
  for (uint64_t a : {uint64_t{0x7f1234567000}, uint64_t{0x55aabbcc0000}, uint64_t{1} << 44})
    EXPECT_EQ(m.where(a, 4).buffer, nullptr) << std::hex << a;
  EXPECT_EQ(m.where(m.vaddr(299) + 4, 4).buffer->id, 299);
}
