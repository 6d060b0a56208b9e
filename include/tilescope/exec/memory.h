// tilescope/exec: registered buffers and checked addresses.
//
// Kernel pointers are 64-bit *virtual* addresses that carry their provenance: buffer k lives at
// vbase(k) = ((256 + k) << 40) + 2^39 + (host & 4095), so an address derived from argument X by any
// offset within +-2^39 bytes still names X (ARCHITECTURE "Memory"; issue 2 item 5), and the low 12
// bits keep the host pointer's alignment. Regions start at 2^48, above every user-space host address
// of x86-64 and AArch64 (48-bit virtual addresses), so an integer the program made (a data_ptr(), null)
// never decodes as a buffer by accident.
//
// The buffers are the live allocations the launch can reach: the kernel's arguments, then the
// program's other live tensors and arrays (LaunchRecord::allocations). Integers are host addresses:
// tt.int_to_ptr maps a host address inside a registered buffer to that buffer's virtual address
// (from_host: provenance = that buffer, checked against its bounds like any pointer), and
// tt.ptr_to_int maps back (to_host). An address in no buffer stays as it is: a null or wild pointer.
// Every lane is checked before host memory is touched; an address outside its buffer is an event,
// never a dereference.
#pragma once

#include <cassert>
#include <cstdint>
#include <span>
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
  static constexpr uint64_t kFirstRegion = 256;  // buffer 0's region: addresses from 2^48 up
  /// Addresses below this that name no buffer are null pointers (plus an offset); others are wild.
  static constexpr uint64_t kNullPage = uint64_t{1} << 16;

  /// Register a buffer; returns its id. The host memory must outlive every launch using it.
  /// Throws tilescope::Error for a buffer of 512 GiB or more, or past 2^24 - 256 buffers.
  int add(Buffer b);
  const Buffer& buffer(int id) const { return buffers_.at(id); }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  /// Virtual address of byte 0 of buffer `id`.
  uint64_t vaddr(int id) const { return buffers_.at(id).vbase; }

  /// Buffer index encoded in a virtual address (-1: null, wild or an unknown region).
  int region(uint64_t addr) const {
    int64_t k = static_cast<int64_t>(addr >> kRegionShift) - static_cast<int64_t>(kFirstRegion);
    return (k >= 0 && k < static_cast<int64_t>(buffers_.size())) ? static_cast<int>(k) : -1;
  }
  /// The pointer tt.int_to_ptr makes from the integer `host`: the virtual address of that byte when
  /// it lies in a registered buffer, one past its end included (C's rule for one-past-the-end
  /// pointers; a buffer that contains the byte wins over one that ends there, then the lowest id,
  /// so an argument wins over an overlapping allocation); else `host` itself, which resolves to no
  /// buffer (null or wild). O(log n) plus the buffers that overlap `host`.
  uint64_t from_host(uint64_t host) const;
  /// The integer tt.ptr_to_int makes from the pointer `addr`: its host address (base + offset, also
  /// for an out-of-bounds offset); `addr` itself when it is in no buffer's region.
  uint64_t to_host(uint64_t addr) const {
    int k = region(addr);
    if (k < 0) return addr;
    const Buffer& b = buffers_[k];
    return reinterpret_cast<uint64_t>(b.host) + (addr - b.vbase);
  }
  /// Apply from_host / to_host to `n` addresses in place.
  void from_host(std::span<uint64_t> addrs) const {
    for (uint64_t& a : addrs) a = from_host(a);
  }
  void to_host(std::span<uint64_t> addrs) const {
    for (uint64_t& a : addrs) a = to_host(a);
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
  /// Kind of an address that where() resolves to no buffer.
  static bool is_null(uint64_t addr) { return addr < kNullPage; }
  /// Host pointer for an in-bounds address (call only after `where(...).in_bounds`).
  std::byte* host(uint64_t addr) const {
    assert(region(addr) >= 0 && "host() of an address that where() did not resolve");
    const Buffer& b = buffers_[region(addr)];
    assert(addr >= b.vbase && addr - b.vbase < b.bytes && "host() of an out-of-bounds address");
    return b.host + (addr - b.vbase);
  }

 private:
  std::vector<Buffer> buffers_;
  // Buffer ids sorted by host start, and the running maximum of host end over that order (for
  // from_host: scan down from the last start <= host while an earlier buffer can still reach it).
  std::vector<int> by_host_;
  std::vector<uint64_t> max_end_;
};

}  // namespace tilescope::exec
