// NumPy .npy files (format versions 1.0, 2.0 and 3.0; little-endian, C order), as the `run`
// command's buffer inputs and `--save` outputs. Format: numpy.lib.format (NEP 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace tilescope::cli {

/// Allocates on 64-byte (cache-line) boundaries, as PyTorch's CPU allocator places a tensor's data
/// (c10's alloc_cpu); malloc gives 16. A buffer the `run` command passes to a kernel then starts where
/// a torch tensor's would, and a contiguous tile copied from it is as aligned as its frame slot:
/// `make bench`'s vector add about 5% faster (bench/SPEED.md, "Streaming").
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};

/// An array's bytes, cache-line aligned (CacheLineAllocator).
using ArrayBytes = std::vector<std::byte, CacheLineAllocator<std::byte>>;

struct NpyArray {
  std::string descr;           // "<f4", "<u2", "|b1": byte order, kind (f i u b), item size
  std::vector<int64_t> shape;  // () for a 0-d array (one element)
  ArrayBytes data;
  /// The item size in bytes that `descr` gives (1, 2, 4 or 8); 0 for a descr tilescope does not read.
  int item_bytes() const;
};

/// The array in the bytes `file` of a .npy file called `path` (used in messages). Every field of
/// the header is checked as numpy's reader does: magic and version, a dict of exactly `descr`,
/// `fortran_order` and `shape`, a descr of a little-endian bool, int, uint or float type (stored
/// normalized: "|" for 1-byte items, "<" otherwise), non-negative dimensions whose product (in
/// bytes) fits in int64, and at least that much data (more is ignored, as numpy does). Throws
/// tilescope::Error "PATH: ..." saying what is wrong.
NpyArray parse_npy(std::string_view file, const std::string& path);
/// read `path` and parse_npy it; a file that cannot be read is a tilescope::Error with the reason.
NpyArray read_npy(const std::string& path);
/// Write `a` as a version 1.0 .npy file through write_file_atomically (every write checked, never a
/// partial file); throws tilescope::Error with the reason.
void write_npy(const std::string& path, const NpyArray& a);

}  // namespace tilescope::cli
