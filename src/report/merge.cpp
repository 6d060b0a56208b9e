// Grouping findings across launches and processes (see report.h: merge).
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tilescope/report/report.h"

namespace tilescope::report {

std::vector<analysis::Finding> merge(const std::vector<analysis::Finding>& findings, size_t keep) {
  using Key =
      std::tuple<int, std::string, std::string, int, int, int, int, std::string, std::string, int, int>;
  std::map<Key, size_t> index;
  std::vector<analysis::Finding> out;
  std::vector<int64_t> merged;  // launches folded into each output finding
  for (const auto& f : findings) {
    Key k{static_cast<int>(f.kind),
          f.kernel,
          f.site.file,
          f.site.line,
          f.site.col,
          f.site.ttir_line,
          f.site.ttir_col,
          f.site.op,
          f.buffer ? f.buffer->name : std::string(),
          f.cause ? f.cause->ttir_line : 0,
          f.cause ? f.cause->ttir_col : 0};
    auto it = index.find(k);
    if (it == index.end()) {
      index.emplace(k, out.size());
      out.push_back(f);
      merged.push_back(1);
      continue;
    }
    analysis::Finding& g = out[it->second];
    merged[it->second] += 1;
    g.programs += f.programs;
    g.lanes += f.lanes;
    g.occurrences += f.occurrences;
    for (auto& p : f.first_programs)
      if (g.first_programs.size() < keep &&
          std::find(g.first_programs.begin(), g.first_programs.end(), p) == g.first_programs.end())
        g.first_programs.push_back(p);
    for (auto l : f.first_lanes)
      if (g.first_lanes.size() < keep &&
          std::find(g.first_lanes.begin(), g.first_lanes.end(), l) == g.first_lanes.end())
        g.first_lanes.push_back(l);
    if (f.has_offsets) {
      if (!g.has_offsets) {
        g.has_offsets = true;
        g.offset_min = f.offset_min;
        g.offset_max = f.offset_max;
      }
      g.offset_min = std::min(g.offset_min, f.offset_min);
      g.offset_max = std::max(g.offset_max, f.offset_max);
      g.elements_before = std::max(g.elements_before, f.elements_before);
      g.elements_past = std::max(g.elements_past, f.elements_past);
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
  }
  // The per-launch summary ends with "; N lanes in M programs": restate the summed counts.
  for (size_t i = 0; i < out.size(); ++i) {
    if (merged[i] < 2) continue;
    analysis::Finding& g = out[i];
    auto cut = g.summary.rfind("; ");
    if (cut == std::string::npos) continue;
    auto plural = [](int64_t n, const char* w) { return std::to_string(n) + " " + w + (n == 1 ? "" : "s"); };
    g.summary = g.summary.substr(0, cut) + "; " + plural(g.lanes, "lane") + " in " +
                plural(g.programs, "program") + " over " + std::to_string(merged[i]) + " launches";
  }
  return out;
}

}  // namespace tilescope::report
