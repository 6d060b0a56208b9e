// The table of finding kinds and the one-line summary of a finding (see finding.h).
#include "tilescope/analysis/finding.h"

#include <fmt/format.h>

#include <cassert>
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
    {Kind::data_race, "data-race",
     "Two program instances access the same bytes, at least one writes, and no atomic orders them (RAW, WAR, "
     "WAW through global memory)."},
    {Kind::intra_program_race, "intra-program-race",
     "Lanes of one program race through global memory: one store writes an address with different values, "
     "or a lane reads what another lane stored with no tl.debug_barrier() in between."},
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
    case Kind::data_race:
    case Kind::intra_program_race: {
      auto side = [&](const OpSite* s, const std::vector<exec::ProgramId>& pids) {
        std::string p =
            pids.empty() ? "" : fmt::format(" in program ({}, {}, {})", pids[0][0], pids[0][1], pids[0][2]);
        return s ? fmt::format("{} at {}{}", s->op, where_py(*s), f.kind == Kind::data_race ? p : "") : "?";
      };
      std::string where = f.buffer ? fmt::format(" on '{}' ({} elements), element offsets {}..{}",
                                                 f.buffer->name, f.buffer->numel, f.offset_min, f.offset_max)
                                   : "";
      if (f.kind == Kind::intra_program_race && f.race == "same-store")
        return fmt::format("lanes of one {} write the same address with different values{}",
                           side(&f.site, {}), where);
      const char* what = f.kind == Kind::data_race ? "data race" : "race between lanes of one program";
      return fmt::format("{} ({}){}: {} and {}", what, f.race, where, side(&f.site, f.first_programs),
                         side(f.other ? &*f.other : nullptr, f.other_first_programs));
    }
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
