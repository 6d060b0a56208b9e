// Buffer registration (see include/tilescope/exec/memory.h).
#include "tilescope/exec/memory.h"

#include <algorithm>

#include "tilescope/ir/diag.h"

namespace tilescope::exec {

int Memory::add(Buffer b) {
  b.id = static_cast<int>(buffers_.size());
  auto host = reinterpret_cast<uint64_t>(b.host);
  if (static_cast<uint64_t>(b.id) + kFirstRegion >= (uint64_t{1} << (64 - kRegionShift)))
    throw Error("too many buffers in one launch (at most 2^24 - 256)");
  b.vbase = ((static_cast<uint64_t>(b.id) + kFirstRegion) << kRegionShift) + kRegionMid + (host & 4095);
  if (b.bytes >= kRegionMid) throw Error("buffer '" + b.name + "' is larger than 512 GiB");
  buffers_.push_back(std::move(b));
  // Keep the host-order index: insert, then recompute the running maximum of ends after it.
  const int id = buffers_.back().id;
  auto start = [&](int i) { return reinterpret_cast<uint64_t>(buffers_[i].host); };
  auto pos = std::upper_bound(by_host_.begin(), by_host_.end(), host,
                              [&](uint64_t h, int i) { return h < start(i); });
  const auto at = static_cast<size_t>(pos - by_host_.begin());
  by_host_.insert(pos, id);
  max_end_.resize(by_host_.size());
  for (size_t j = at; j < by_host_.size(); ++j) {
    const uint64_t end = start(by_host_[j]) + buffers_[by_host_[j]].bytes;
    max_end_[j] = j ? std::max(max_end_[j - 1], end) : end;
  }
  return id;
}

uint64_t Memory::from_host(uint64_t host) const {
  auto start = [&](int i) { return reinterpret_cast<uint64_t>(buffers_[i].host); };
  auto pos = std::upper_bound(by_host_.begin(), by_host_.end(), host,
                              [&](uint64_t h, int i) { return h < start(i); });
  int inside = -1, at_end = -1;  // lowest ids: containing `host`, ending exactly at `host`
  for (auto j = static_cast<size_t>(pos - by_host_.begin()); j-- > 0 && max_end_[j] >= host;) {
    const int i = by_host_[j];
    const uint64_t end = start(i) + buffers_[i].bytes;
    if (host < end) {
      if (inside < 0 || i < inside) inside = i;
    } else if (host == end) {
      if (at_end < 0 || i < at_end) at_end = i;
    }
  }
  const int k = inside >= 0 ? inside : at_end;
  if (k < 0) return host;
  return buffers_[k].vbase + (host - start(k));
}

}  // namespace tilescope::exec
