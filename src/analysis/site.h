// Shared by the analyses: program-id order, bounded first-N lists and a buffer's description for
// reports (SiteMaker, which makes an op's OpSite, is public: analysis/finding.h).
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tilescope/analysis/finding.h"
#include "tilescope/exec/events.h"
#include "tilescope/exec/memory.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

/// Program ids in (z, y, x) order, as findings list them.
inline bool pid_less(const exec::ProgramId& a, const exec::ProgramId& b) {
  return std::tie(a[2], a[1], a[0]) < std::tie(b[2], b[1], b[0]);
}
inline bool i64_less(const int64_t& a, const int64_t& b) { return a < b; }

/// Insert `x` into the sorted `v` (no duplicates) keeping only the `cap` smallest: a finding's first few
/// program ids or lanes, in memory bounded whatever the grid.
template <class T>
void keep_first(std::vector<T>& v, const T& x, size_t cap, bool (*less)(const T&, const T&)) {
  auto it = std::lower_bound(v.begin(), v.end(), x, less);
  if (it != v.end() && !less(x, *it) && !less(*it, x)) return;
  if (v.size() >= cap && it == v.end()) return;
  v.insert(it, x);
  if (v.size() > cap) v.pop_back();
}

/// Name, dtype, shape, strides, bytes and element count of `b`.
BufferInfo buffer_info(const exec::Buffer& b);

}  // namespace tilescope::analysis
