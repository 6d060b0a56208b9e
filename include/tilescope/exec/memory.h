// tilescope/exec: registered buffers and checked addresses.
//
// Kernel pointers are 64-bit *virtual* addresses that carry their provenance: buffer k lives at
// vbase(k) = ((k + 1) << 40) + 2^39 + (host & 4095), so an address derived from argument X by any
// offset within +-2^39 bytes still names X (ARCHITECTURE "Memory"; issue 2 item 5), and the low 12
// bits keep the host pointer's alignment. Region 0 holds null and addresses made from integers.
// Every lane is checked before host memory is touched; an address outside its buffer is an event,
// never a dereference.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <vector>

#include "tilescope/ir/ir.h"

namespace tilescope::exec {

struct Buffer {
  std::string name;                // the kernel argument name ("x_ptr")
  ir::Elem dtype = ir::Elem::f32;  // element type as registered by the caller
  std::byte* host = nullptr;       // host memory (not owned)
  uint64_t bytes = 0;              // size in bytes
  std::vector<int64_t> shape;      // logical shape (elements), for reports
  std::vector<int64_t> strides;    // strides in elements, for reports
  int id = -1;
  uint64_t vbase = 0;  // virtual address of host[0]
};

/// Where an address points.
struct Where {
  const Buffer* buffer = nullptr;  // the buffer the address was derived from (null: region 0)
  int64_t offset = 0;              // byte offset from the buffer's start (may be out of range)
  bool in_bounds = false;          // [offset, offset + access_bytes) inside the buffer
};

class Memory {
 public:
  static constexpr int kRegionShift = 40;
  static constexpr uint64_t kRegionMid = uint64_t{1} << 39;

  /// Register a buffer; returns its id. The host memory must outlive every launch using it.
  int add(Buffer b);
  const Buffer& buffer(int id) const { return buffers_.at(id); }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  /// Virtual address of byte 0 of buffer `id`.
  uint64_t vaddr(int id) const { return buffers_.at(id).vbase; }

  /// Buffer index encoded in a virtual address (-1 for region 0 / unknown regions).
  int region(uint64_t addr) const {
    int64_t k = static_cast<int64_t>(addr >> kRegionShift) - 1;
    return (k >= 0 && k < static_cast<int64_t>(buffers_.size())) ? static_cast<int>(k) : -1;
  }
  /// Resolve `addr` for an access of `n` bytes.
  Where where(uint64_t addr, int n) const {
    Where w;
    int k = region(addr);
    if (k < 0) return w;
    const Buffer& b = buffers_[k];
    w.buffer = &b;
    w.offset = static_cast<int64_t>(addr - b.vbase);
    w.in_bounds = w.offset >= 0 && static_cast<uint64_t>(w.offset) + n <= b.bytes;
    return w;
  }
  /// Host pointer for an in-bounds address (call only after `where(...).in_bounds`).
  std::byte* host(uint64_t addr) const {
    assert(region(addr) >= 0 && "host() of an address that where() did not resolve");
    const Buffer& b = buffers_[region(addr)];
    assert(addr >= b.vbase && addr - b.vbase < b.bytes && "host() of an out-of-bounds address");
    return b.host + (addr - b.vbase);
  }

 private:
  std::vector<Buffer> buffers_;
};

}  // namespace tilescope::exec
