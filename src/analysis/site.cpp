// OpSites and buffer descriptions for findings (see site.h).
#include "site.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

namespace tilescope::analysis {

std::string SiteMaker::source_line(const std::string& file, int line) {
  if (file.empty() || line <= 0) return "";
  auto it = files_.find(file);
  if (it == files_.end()) {
    std::vector<std::string> lines;
    std::ifstream in(file);
    for (std::string s; std::getline(in, s);) {
      if (!s.empty() && s.back() == '\r') s.pop_back();
      lines.push_back(std::move(s));
    }
    it = files_.emplace(file, std::move(lines)).first;
  }
  return line <= static_cast<int>(it->second.size()) ? it->second[line - 1] : "";
}

OpSite SiteMaker::of(const ir::Op* op) {
  OpSite s;
  s.op = op->name;
  s.ttir_file = m_.filename;
  s.ttir_line = op->pos.line;
  s.ttir_col = op->pos.col;
  s.file = op->loc.file;
  s.line = op->loc.line;
  s.col = op->loc.col;
  s.var = op->loc.var;
  s.source_line = source_line(s.file, s.line);
  for (auto& [f, l] : op->loc.stack) {
    bool triton_lib =
        f.find("/triton/language/") != std::string::npos || f.find("/triton/runtime/") != std::string::npos;
    if (!(f == s.file && l == s.line) && !triton_lib) s.inlined_from.push_back(fmt::format("{}:{}", f, l));
  }
  return s;
}

BufferInfo buffer_info(const exec::Buffer& b) {
  BufferInfo bi;
  const int eb = std::max(1, ir::elem_bytes(b.dtype));
  bi.name = b.name;
  bi.dtype = ir::elem_name(b.dtype);
  bi.shape = b.shape;
  bi.strides = b.strides;
  bi.bytes = b.bytes;
  bi.numel = static_cast<int64_t>(b.bytes / static_cast<uint64_t>(eb));
  return bi;
}

}  // namespace tilescope::analysis
