// The table of finding kinds (see finding.h).
#include "tilescope/analysis/finding.h"

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

}  // namespace tilescope::analysis
