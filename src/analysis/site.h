// Where a finding happened, shared by the analyses: an op's TTIR and Python position with its source
// line (files read once per analysis), and a buffer's description for reports.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tilescope/analysis/finding.h"
#include "tilescope/exec/memory.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

/// Builds OpSites for ops of one module. Not thread-safe (call it from one thread, e.g. collect()).
class SiteMaker {
 public:
  explicit SiteMaker(const ir::Module& m) : m_(m) {}
  /// `op`'s TTIR position, Python file:line:col, variable, source line and inlined-from chain (frames
  /// inside triton/language and triton/runtime are left out).
  OpSite of(const ir::Op* op);
  /// Line `line` (1-based) of `file` without its newline; "" when the file or line cannot be read.
  std::string source_line(const std::string& file, int line);

 private:
  const ir::Module& m_;
  std::map<std::string, std::vector<std::string>> files_;  // file -> lines ("" when unreadable)
};

/// Name, dtype, shape, strides, bytes and element count of `b`.
BufferInfo buffer_info(const exec::Buffer& b);

}  // namespace tilescope::analysis
