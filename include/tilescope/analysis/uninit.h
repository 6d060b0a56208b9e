// tilescope/analysis: uninitialized memory (the `uninitialized-read` kind; issue 10 item 2).
//
// Memory the program allocated with torch.empty / empty_like / empty_strided / Tensor.new_empty or
// numpy.empty / empty_like starts undefined. The Python front door tracks each such allocation in the
// process-wide Definedness store (track: it fills the bytes with a sentinel pattern, which is legal
// since their contents are unspecified) and forgets it when its owner is collected (forget).
//
// Definedness, per byte of a tracked allocation:
//   - a kernel store or atomic defines the bytes it writes (the bits persist across launches);
//   - a host write (any torch op, numpy, ctypes, another C extension) is seen lazily: when a kernel
//     reads bytes the bits call undefined, the aligned 16-byte window (kWindow, counted from the
//     allocation's start) around each is compared with the sentinel; a window where any undefined byte
//     no longer holds its sentinel byte was written by the host, and all of it is defined from then on;
//   - a kernel load, or an atomic before it runs, that reads an undefined byte whose window still holds
//     the sentinel is a finding at that op, naming the allocation's Python line.
// So a host write is missed (a false finding) only when it writes exactly the sentinel bytes over a
// whole window's undefined bytes: for example copying another never-written torch.empty buffer, or a
// 1-byte write of the window's one undefined byte with that byte's sentinel value (1 in 256 for int8 /
// uint8 data written one byte at a time; 1-byte integer allocations get a pattern without the values
// such data holds most often: Sentinel::int_bytes). A host write next to never-written bytes of the same
// window hides them (a missed finding, never a false one).
//
// Cost: nothing for launches whose buffers overlap no tracked allocation with undefined bytes (the
// analysis subscribes to no event then); else a bitmap test per lane of each access to such buffers.
// Memory: 1 bit per byte, allocated per 4 KiB page at the first kernel write to that page and freed
// once the page is fully defined.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tilescope/analysis/analysis.h"

namespace tilescope::analysis {

/// Where the program allocated a tracked buffer: the call ("torch.empty") and the user's file and line.
struct AllocationSite {
  std::string call;
  std::string file;
  int line = 0;
};

/// Which sentinel pattern fills a tracked allocation, chosen by its element type.
enum class Sentinel : uint8_t {
  /// Floating-point and multi-byte data: each aligned 4-byte word is a float32 quiet NaN (its 0x7f
  /// bytes are NaN in float8e4m3fn and float8e5m2 as well).
  float_nan,
  /// 1-byte integers (int8, uint8, bool): 16 distinct bytes, none of 0x00, 0x01, 0x7f, 0x80, 0xff
  /// (zero, one, and the saturation values that clamped int8 / uint8 data takes most often).
  int_bytes,
};

/// One tracked allocation: host bytes [host, host + bytes) and their definedness bits.
class TrackedAllocation {
 public:
  TrackedAllocation(uint64_t id, std::byte* host, uint64_t bytes, AllocationSite site, Sentinel sentinel);
  const uint64_t id;
  std::byte* const host;
  const uint64_t bytes;
  const AllocationSite site;
  const Sentinel sentinel;

  /// Call with mu() held. Bytes [off, off + n) (inside the allocation) are defined from now on.
  void define(uint64_t off, uint64_t n);
  /// Call with mu() held. Whether a read of bytes [off, off + n) reads an undefined byte, after
  /// seeing host writes into the windows of the undefined ones (which are defined from then on).
  bool reads_undefined(uint64_t off, uint64_t n);
  /// Call with mu() held. Whether the bits say every byte of [off, off + n) is defined (host writes
  /// not looked at).
  bool all_defined(uint64_t off, uint64_t n) const;
  /// Call with mu() held. Whether byte `off` is defined by the bits (host writes not looked at).
  bool defined(uint64_t off) const;
  /// Bytes the bits call undefined (atomic: may be read without mu()).
  uint64_t undefined_bytes() const { return undefined_.load(std::memory_order_relaxed); }
  /// Bytes held for the bits (pages with some but not all bytes defined).
  uint64_t bitmap_bytes() const;
  std::mutex& mu() { return mu_; }

 private:
  static constexpr uint64_t kPage = 4096;
  static constexpr uint64_t kWords = kPage / 64;
  bool window_written(uint64_t w);  // the host wrote into window w (bytes [w*kWindow, ...))
  void define_range(uint64_t off, uint64_t n);
  std::mutex mu_;
  // Per page: null and !full_[p]: nothing defined; full_[p]: all defined; else kWords bits words.
  std::vector<std::unique_ptr<uint64_t[]>> pages_;
  std::vector<uint8_t> full_;
  std::vector<uint16_t> defined_in_page_;  // bits set per page (a page holds at most 4096 bytes)
  std::atomic<uint64_t> undefined_;
};

/// The process-wide store of tracked allocations (made at first use). Thread-safe.
class Definedness {
 public:
  /// Window of the host-write check, in bytes (see the file comment).
  static constexpr uint64_t kWindow = 16;
  /// The sentinel byte at byte offset `off` of a tracked allocation filled with pattern `s`. With
  /// float_nan each aligned 4-byte word is a float32 quiet NaN (a kernel that computes with
  /// never-written float32 data gets NaN, as with PyTorch's fill_uninitialized_memory); no byte of
  /// either pattern is 0x00, 0x01 or 0xff.
  static uint8_t sentinel(uint64_t off, Sentinel s = Sentinel::float_nan);

  static Definedness& process();

  /// Track [host, host + bytes) as allocated at `site`, all undefined, and fill it with the sentinel.
  /// An earlier allocation overlapping it is forgotten (its memory was reused). Returns the id that
  /// forget() takes; 0 for an empty range (nothing tracked).
  uint64_t track(std::byte* host, uint64_t bytes, AllocationSite site,
                 Sentinel sentinel = Sentinel::float_nan);
  /// Forget allocation `id` (its owner was freed); no-op for an unknown id.
  void forget(uint64_t id);
  /// Tracked allocations that overlap host bytes [host, host + bytes) and still have undefined bytes.
  std::vector<std::shared_ptr<TrackedAllocation>> overlapping(const std::byte* host, uint64_t bytes) const;
  /// The allocation containing host byte `p`, or null (for tests and tools).
  std::shared_ptr<TrackedAllocation> find(const std::byte* p) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  // By host address (ranges do not overlap), and each one's address by id: an NKI kernel tracks a tile
  // per allocation of every program, 10^5 of them, so both are O(log n).
  std::map<const std::byte*, std::shared_ptr<TrackedAllocation>> by_host_;
  std::unordered_map<uint64_t, const std::byte*> host_of_;
};

struct UninitOptions {
  int max_first = 5;  // how many program ids / lanes to keep
};

/// The `uninit` analysis: findings of kind uninitialized-read against Definedness::process().
class UninitAnalysis : public Analysis {
 public:
  explicit UninitAnalysis(const ir::Module& module, UninitOptions opts = {});
  ~UninitAnalysis() override;
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override;
  void on_launch_end(const exec::LaunchContext&, const exec::LaunchStats&) override;
  void* on_program_begin(exec::ProgramId) override;
  void on_program_end(exec::ProgramId, void* state) override;
  void on_op_begin(const exec::OpEvent&, void* state) override;
  void on_access(const exec::AccessEvent&, void* state) override;
  void collect(const LaunchInfo& info, std::vector<Finding>& out) override;
  /// Finding::evidence: per program and execution of the op, the elements read before anything wrote them.
  void keep_evidence() override;
  /// {"tracked_buffers": buffers of the last launch that overlap a tracked allocation}
  nlohmann::json statistics() const override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::analysis
