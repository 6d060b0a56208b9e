// The table of finding kinds and the one-line summary of a finding (see finding.h).
#include "tilescope/analysis/finding.h"

#include <fmt/format.h>

#include <cassert>
#include <fstream>
#include <iterator>

namespace tilescope::analysis {

namespace {

constexpr KindInfo kKinds[] = {
    {Kind::oob_load, "out-of-bounds-load", "A load reads outside the buffer its pointer was derived from."},
    {Kind::oob_store, "out-of-bounds-store",
     "A store writes outside the buffer its pointer was derived from."},
    {Kind::oob_atomic, "out-of-bounds-atomic",
     "An atomic accesses memory outside the buffer its pointer was derived from."},
    {Kind::null_pointer, "null-pointer", "An access through a null pointer (an address below 64 KiB)."},
    {Kind::assert_failed, "assert-failed", "A tl.device_assert condition is false."},
    {Kind::undefined_value, "undefined-value",
     "A value that a masked tl.load without `other` leaves undefined in masked-off lanes is used."},
    {Kind::int32_overflow, "int32-overflow",
     "32-bit integer arithmetic overflows and the wrapped value is used in an address."},
    {Kind::division_by_zero, "division-by-zero",
     "An integer division or remainder by zero, whose result is used."},
    {Kind::wild_pointer, "wild-pointer",
     "An access through an address made from an integer that lies in no live allocation (freed or "
     "unknown memory)."},
    {Kind::uninitialized_read, "uninitialized-read",
     "A kernel reads memory that the program allocated uninitialized (torch.empty, numpy.empty) and "
     "that nothing has written."},
};
static_assert(std::size(kKinds) == kNumKinds, "one row per finding kind");

constexpr bool rows_in_order() {
  for (int i = 0; i < kNumKinds; ++i)
    if (static_cast<int>(kKinds[i].kind) != i) return false;
  return true;
}
static_assert(rows_in_order(), "rows in Kind order");

}  // namespace

const KindInfo& kind_info(Kind k) {
  auto i = static_cast<size_t>(k);
  assert(i < std::size(kKinds));
  return kKinds[i];
}

std::optional<Kind> kind_from_name(std::string_view name) {
  for (const KindInfo& k : kKinds)
    if (name == k.name) return k.kind;
  return std::nullopt;
}

const std::string& SourceLines::get(const std::string& file, int line) {
  static const std::string kNone;
  if (file.empty() || line <= 0) return kNone;
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
  return line <= static_cast<int>(it->second.size()) ? it->second[line - 1] : kNone;
}

OpSite op_site(const ir::Module& module, const ir::Op& op, SourceLines& sources) {
  OpSite s;
  s.op = op.name;
  s.ttir_file = module.filename;
  s.ttir_line = op.pos.line;
  s.ttir_col = op.pos.col;
  s.file = op.loc.file;
  s.line = op.loc.line;
  s.col = op.loc.col;
  s.var = op.loc.var;
  s.source_line = sources.get(s.file, s.line);
  for (auto& [f, l] : op.loc.stack) {
    bool triton_lib =
        f.find("/triton/language/") != std::string::npos || f.find("/triton/runtime/") != std::string::npos;
    if (!(f == s.file && l == s.line) && !triton_lib) s.inlined_from.push_back(fmt::format("{}:{}", f, l));
  }
  return s;
}

namespace {

std::string where_py(const OpSite& s) {
  return s.file.empty() ? fmt::format("{}:{}:{}", s.ttir_file, s.ttir_line, s.ttir_col)
                        : fmt::format("{}:{}", s.file, s.line);
}

std::string plural(int64_t n, const char* w) { return fmt::format("{} {}{}", n, w, n == 1 ? "" : "s"); }

std::string what_happened(const Finding& f) {
  switch (f.kind) {
    case Kind::oob_load:
    case Kind::oob_store:
    case Kind::oob_atomic: {
      const char* what = f.kind == Kind::oob_load    ? "load from"
                         : f.kind == Kind::oob_store ? "store to"
                                                     : "atomic on";
      std::string far;
      if (f.elements_past > 0) far = fmt::format("up to {} past the end", plural(f.elements_past, "element"));
      if (f.elements_before > 0)
        far += fmt::format("{}up to {} before the start", far.empty() ? "" : ", ",
                           plural(f.elements_before, "element"));
      return fmt::format("out-of-bounds {} '{}' ({} elements): element offsets {}..{} ({})", what,
                         f.buffer ? f.buffer->name : "?", f.buffer ? f.buffer->numel : 0, f.offset_min,
                         f.offset_max, far);
    }
    case Kind::null_pointer:
      return fmt::format("access through a null pointer (addresses 0x{:x}..0x{:x})", f.address_min,
                         f.address_max);
    case Kind::wild_pointer:
      return fmt::format(
          "access through a wild pointer: addresses 0x{:x}..0x{:x} lie in no live allocation (freed or "
          "unknown memory), nothing was read or written",
          f.address_min, f.address_max);
    case Kind::assert_failed: return fmt::format("device assert failed: `{}`", f.message);
    case Kind::undefined_value:
      return fmt::format(
          "{} uses values that the masked {} at {} leaves undefined in masked-off lanes (no `other`)",
          f.site.op, f.cause ? f.cause->op : "load", f.cause ? where_py(*f.cause) : "?");
    case Kind::int32_overflow:
      return fmt::format("{} overflows int32 and the wrapped value is used as an address by {}", f.site.op,
                         f.use ? f.use->op : "a memory op");
    case Kind::uninitialized_read:
      return fmt::format(
          "{} reads never-written memory of '{}' ({} elements): element offsets {}..{}, "
          "allocated by {} at {} and not written since",
          f.site.op, f.buffer ? f.buffer->name : "?", f.buffer ? f.buffer->numel : 0, f.offset_min,
          f.offset_max, f.allocation ? f.allocation->op : "?", f.allocation ? where_py(*f.allocation) : "?");
    case Kind::division_by_zero:
      return fmt::format("{} divides by zero and the result is used by {}", f.site.op,
                         f.use ? f.use->op : "a later op");
  }
  return "";
}

}  // namespace

std::string summarize(const Finding& f) {
  std::string s =
      fmt::format("{}; {} in {}", what_happened(f), plural(f.lanes, "lane"), plural(f.programs, "program"));
  if (f.launches > 1) s += fmt::format(" over {} launches", f.launches);
  return s;
}

}  // namespace tilescope::analysis
