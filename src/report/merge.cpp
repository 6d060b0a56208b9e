// Grouping findings across launches and processes (see report.h: merge).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tilescope/report/report.h"

namespace tilescope::report {

namespace {

using analysis::Finding;

// What makes two findings one: the same kind at the same op of the same kernel (Python and TTIR
// position), the same cause op, and for out-of-bounds kinds the same buffer: name, dtype, shape,
// strides and size; for races also the second access's op and the race ("RAW", ...); for reads of
// uninitialized memory the allocation site. Offsets are only comparable against one buffer shape, so
// launches on buffers of other sizes stay separate findings.
using Key = std::tuple<int, std::string, std::string, int, int, int, int, std::string, int, int, std::string,
                       std::string, std::vector<int64_t>, std::vector<int64_t>, uint64_t, int, int,
                       std::string, std::string>;

Key key_of(const Finding& f) {
  const analysis::BufferInfo none;
  const analysis::BufferInfo& b = f.buffer ? *f.buffer : none;
  return Key{static_cast<int>(f.kind),
             f.kernel,
             f.site.file,
             f.site.line,
             f.site.col,
             f.site.ttir_line,
             f.site.ttir_col,
             f.site.op,
             f.cause ? f.cause->ttir_line : 0,
             f.cause ? f.cause->ttir_col : 0,
             b.name,
             b.dtype,
             b.shape,
             b.strides,
             b.bytes,
             f.other ? f.other->ttir_line : 0,
             f.other ? f.other->ttir_col : 0,
             f.race,
             f.allocation ? fmt::format("{}:{}", f.allocation->file, f.allocation->line) : std::string()};
}

bool pid_less(const exec::ProgramId& a, const exec::ProgramId& b) {
  return std::tie(a[2], a[1], a[0]) < std::tie(b[2], b[1], b[0]);
}

/// The `keep` smallest distinct values of `a` and `b` (each sorted by `less`), sorted.
template <class T, class Less>
std::vector<T> smallest(const std::vector<T>& a, const std::vector<T>& b, size_t keep, Less less) {
  std::vector<T> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end(), less);
  all.erase(
      std::unique(all.begin(), all.end(), [&](const T& x, const T& y) { return !less(x, y) && !less(y, x); }),
      all.end());
  if (all.size() > keep) all.resize(keep);
  return all;
}

std::vector<std::vector<std::string>> stacks_of(const Finding& f) {
  if (!f.launch_stacks.empty()) return f.launch_stacks;
  if (f.launch_stack.empty()) return {};
  return {f.launch_stack};
}

void fold(Finding& g, const Finding& f, size_t keep) {
  if (f.programs > 0 && (g.programs == 0 || pid_less(g.last_program, f.last_program)))
    g.last_program = f.last_program;
  g.programs += f.programs;
  g.first_programs = smallest(g.first_programs, f.first_programs, keep, pid_less);
  g.lanes += f.lanes;
  g.first_lanes = smallest(g.first_lanes, f.first_lanes, keep, std::less<int64_t>());
  g.occurrences += f.occurrences;
  g.other_programs += f.other_programs;
  g.other_first_programs = smallest(g.other_first_programs, f.other_first_programs, keep, pid_less);
  g.other_first_lanes = smallest(g.other_first_lanes, f.other_first_lanes, keep, std::less<int64_t>());
  if (f.has_offsets) {
    if (!g.has_offsets) {
      g.has_offsets = true;
      g.offset_min = f.offset_min;
      g.offset_max = f.offset_max;
    }
    g.offset_min = std::min(g.offset_min, f.offset_min);
    g.offset_max = std::max(g.offset_max, f.offset_max);
    // The same buffer shape (the key): how far outside follows from the offsets, as in the sanitizer.
    const int64_t numel = g.buffer ? g.buffer->numel : 0;
    g.elements_before = g.offset_min < 0 ? -g.offset_min : 0;
    g.elements_past = g.offset_max >= numel ? g.offset_max - numel + 1 : 0;
  }
  if (f.has_addresses) {
    if (!g.has_addresses) {
      g.has_addresses = true;
      g.address_min = f.address_min;
      g.address_max = f.address_max;
    }
    g.address_min = std::min(g.address_min, f.address_min);
    g.address_max = std::max(g.address_max, f.address_max);
  }
  if (!g.use && f.use) g.use = f.use;
  if (g.message.empty()) g.message = f.message;
  if (g.hint.empty()) g.hint = f.hint;
  g.launches += f.launches;
  std::vector<std::vector<std::string>> stacks = stacks_of(g);
  for (auto& s : stacks_of(f))
    if (stacks.size() < analysis::kMaxLaunchStacks &&
        std::find(stacks.begin(), stacks.end(), s) == stacks.end())
      stacks.push_back(s);
  g.launch_stacks = stacks.size() > 1 ? std::move(stacks) : std::vector<std::vector<std::string>>{};
}

}  // namespace

std::vector<Finding> merge(const std::vector<Finding>& findings, size_t keep) {
  std::map<Key, size_t> index;
  std::vector<Finding> out;
  std::vector<bool> folded;  // whether another finding was folded into out[i]
  for (const auto& f : findings) {
    auto [it, fresh] = index.try_emplace(key_of(f), out.size());
    if (fresh) {
      out.push_back(f);
      folded.push_back(false);
      continue;
    }
    fold(out[it->second], f, keep);
    folded[it->second] = true;
  }
  // Every field of a merged finding describes all its launches, the summary too.
  for (size_t i = 0; i < out.size(); ++i)
    if (folded[i]) out[i].summary = analysis::summarize(out[i]);
  return out;
}

}  // namespace tilescope::report
