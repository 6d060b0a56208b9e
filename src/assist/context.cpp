// The assistant's context (context.h).
#include "tilescope/assist/context.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "tilescope/ir/diag.h"

namespace tilescope::assist {

using json = nlohmann::json;

int64_t estimate_tokens(const std::string& text) { return static_cast<int64_t>((text.size() + 2) / 3); }

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

std::string op_id(int64_t site) { return fmt::format("op {}", site); }

double num(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v == "inf") return INFINITY;
  if (v == "-inf") return -INFINITY;
  return NAN;
}

/// A value as a few statistics and its first elements, over the lanes `mask` lets through (all when
/// there is no mask): what a masked load really read, what a masked store really wrote.
json summarize(const json& v, const json* mask) {
  json out = {{"type", v.value("type", "")}};
  if (!v.contains("values") || v["values"].is_null()) return out;
  const json& vals = v["values"];
  const bool masked = mask && mask->contains("values") && (*mask)["values"].is_array() &&
                      (*mask)["values"].size() == vals.size();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t n = 0, nan = 0, pos_inf = 0, neg_inf = 0, active = 0;
  json first = json::array();
  for (size_t i = 0; i < vals.size(); ++i) {
    if (masked && num((*mask)["values"][i]) == 0) continue;
    ++active;
    if (first.size() < 8) first.push_back(vals[i]);
    const double d = num(vals[i]);
    if (std::isnan(d)) {
      ++nan;
    } else if (std::isinf(d)) {
      ++(d > 0 ? pos_inf : neg_inf);
    } else {
      lo = std::min(lo, d);
      hi = std::max(hi, d);
      sum += d;
      ++n;
    }
  }
  if (masked) out["active_lanes"] = fmt::format("{} of {}", active, vals.size());
  if (n) out.update({{"min", lo}, {"max", hi}, {"mean", sum / static_cast<double>(n)}});
  if (nan) out["nan"] = nan;
  if (pos_inf) out["+inf"] = pos_inf;
  if (neg_inf) out["-inf"] = neg_inf;
  out["first"] = first;
  if (v.value("truncated", false)) out["truncated"] = true;
  return out;
}

/// The mask operand of a load or store execution: its first i1 operand of the value's shape (null if none).
const json* mask_of(const json& operands, const json& value) {
  for (size_t i = 1; i < operands.size(); ++i)
    if (operands[i].value("dtype", "") == "i1" &&
        operands[i].value("shape", json()) == value.value("shape", json()))
      return &operands[i];
  return nullptr;
}

}  // namespace

nlohmann::ordered_json build_context(const trace::Query& q, const Selection& sel, int64_t token_budget) {
  // The launch.
  int64_t launch_id = sel.launch;
  if (launch_id == 0) {
    const json ls = q.launches();
    if (ls.empty()) throw Error("the trace has no launches");
    launch_id = ls[0]["id"];
    for (const json& l : ls)
      if (l.value("findings", 0) > 0) {
        launch_id = l["id"];
        break;
      }
  }
  const json L = q.launch(launch_id);
  const json& findings = L["findings"];
  const json& sites = L["sites"];
  auto site_by_ttir = [&](int64_t line) -> const json* {
    for (const json& s : sites)
      if (s["ttir_line"] == line) return &s;
    return nullptr;
  };
  auto site_by_id = [&](int64_t id) -> const json* {
    for (const json& s : sites)
      if (s["site"] == id) return &s;
    return nullptr;
  };
  // Source and TTIR text.
  std::map<std::string, std::vector<std::string>> source_lines;
  for (const json& src : L["sources"]) source_lines[src["path"]] = lines_of(q.source(src["id"])["content"]);
  const std::vector<std::string> ttir = lines_of(q.kernel(L["kernel_id"])["ttir"]);
  auto source_at = [&](const std::string& file, int64_t line) -> std::string {
    auto it = source_lines.find(file);
    if (it == source_lines.end() || line < 1 || line > static_cast<int64_t>(it->second.size())) return "";
    return trim(it->second[line - 1]);
  };
  auto ttir_at = [&](int64_t line) -> std::string {
    return line >= 1 && line <= static_cast<int64_t>(ttir.size()) ? trim(ttir[line - 1]) : "";
  };
  auto site_json = [&](const json& s) {
    return json{{"id", op_id(s["site"])},
                {"op", s["op"]},
                {"python", fmt::format("{}:{}", s["file"].get<std::string>(), s["line"].get<int64_t>())},
                {"variable", s["var"]},
                {"source", source_at(s["file"], s["line"])},
                {"ttir_line", s["ttir_line"]},
                {"ttir", ttir_at(s["ttir_line"])}};
  };

  // The selection: the first finding's program and op unless given.
  std::array<int64_t, 3> pid{0, 0, 0};
  std::optional<int64_t> site;
  if (!findings.empty()) {
    const json& f = findings[0];
    if (f.contains("programs") && !f["programs"]["first"].empty()) pid = f["programs"]["first"][0];
    if (const json* s = site_by_ttir(f["ttir"]["line"])) site = (*s)["site"];
  }
  if (sel.pid) pid = *sel.pid;
  if (sel.site) {
    if (!site_by_id(*sel.site))
      throw trace::Query::NotFound(fmt::format("launch {} has no op site {}", launch_id, *sel.site));
    site = *sel.site;
  }
  const json program = q.program(launch_id, pid);

  json ctx = json::object();
  ctx["launch"] = {{"id", launch_id},   {"kernel", L["name"]},
                   {"grid", L["grid"]}, {"programs", L["programs"]},
                   {"args", L["args"]}, {"specialization", L["specialization"]}};
  // 1. Findings.
  json fs = json::array();
  for (size_t i = 0; i < findings.size(); ++i) {
    const json& f = findings[i];
    json item = {{"id", fmt::format("finding {}", i + 1)}, {"kind", f["kind"]}, {"summary", f["summary"]}};
    if (const json* s = site_by_ttir(f["ttir"]["line"])) item["site"] = site_json(*s);
    for (const char* k : {"programs", "lanes", "offsets", "buffer", "race", "hint", "allocation"})
      if (f.contains(k) && !f[k].is_null() &&
          !(f[k].is_string() && f[k].get_ref<const std::string&>().empty()))
        item[k] = f[k];
    if (f.contains("other") && f["other"].is_object()) {
      const json& o = f["other"];
      json other = {{"op", o.value("op", "")},
                    {"python", fmt::format("{}:{}", o.value("file", ""), o.value("line", 0))},
                    {"source", source_at(o.value("file", ""), o.value("line", 0))}};
      if (o.contains("programs")) other["programs"] = o["programs"];
      item["other"] = other;
    }
    fs.push_back(item);
  }
  // 2. The selection.
  json selected = {{"launch", launch_id}, {"program", pid}};
  if (site) {
    selected["op"] = site_json(*site_by_id(*site));
    json acc = json::array();
    for (const json& a : program["accesses"])
      if (a["site"] == *site) {
        json r = {{"execution", a["seq"]},
                  {"kind", a["kind"]},
                  {"lanes", a["lanes"]},
                  {"active", a["active"]},
                  {"out_of_bounds", a["oob"]}};
        int64_t n = 0, lo = INT64_MAX, hi = INT64_MIN;
        for (const json& run : a["runs"]) {
          n += run[1].get<int64_t>();
          lo = std::min(lo, run[0].get<int64_t>());
          hi = std::max(hi, run[0].get<int64_t>() + run[1].get<int64_t>() - 1);
        }
        if (n) r["elements"] = {{"count", n}, {"first", lo}, {"last", hi}};
        if (!a["oob_runs"].empty()) r["out_of_bounds_elements"] = a["oob_runs"];
        if (a["arg"].get<int64_t>() >= 0) r["argument"] = L["args"][a["arg"].get<size_t>()].value("name", "");
        acc.push_back(r);
        if (acc.size() >= 8) break;
      }
    selected["accesses_in_program"] = acc;
    if (!program["sampled"].get<bool>())
      selected["note"] = "the trace kept no per-program detail for this program";
  }
  // 3. Kernel source: the lines from the kernel's first op to its last, in its file.
  json kernel_source = nullptr;
  {
    std::map<std::string, std::pair<int64_t, int64_t>> span;
    for (const json& s : sites) {
      const std::string f = s["file"];
      const int64_t l = s["line"];
      if (f.empty() || l <= 0) continue;
      auto& sp = span.try_emplace(f, l, l).first->second;
      sp.first = std::min(sp.first, l);
      sp.second = std::max(sp.second, l);
    }
    // The file with the most op lines is the kernel's.
    std::string file;
    int64_t best = -1;
    for (const auto& [f, sp] : span)
      if (sp.second - sp.first > best && source_lines.count(f)) file = f, best = sp.second - sp.first;
    if (!file.empty()) {
      const auto& lines = source_lines[file];
      // From the `def` line (and its decorators) above the first op, at most 12 lines up.
      const int64_t last = span[file].second;
      int64_t first = std::min<int64_t>(span[file].first, static_cast<int64_t>(lines.size()));
      while (first > 1 && trim(lines[first - 1]).rfind("def ", 0) != 0 && span[file].first - first < 12)
        --first;
      while (first > 1 && trim(lines[first - 2]).rfind('@', 0) == 0) --first;
      json ls = json::array();
      for (int64_t l = first; l <= last && l <= static_cast<int64_t>(lines.size()); ++l)
        ls.push_back(fmt::format("{:>4}  {}", l, lines[l - 1]));
      kernel_source = {{"file", file}, {"lines", ls}};
    }
  }
  // 5. Access summaries.
  json accesses = json::array();
  for (const json& s : sites)
    if (s.contains("stats") && (s["op"] == "tt.load" || s["op"] == "tt.store" ||
                                s["op"].get<std::string>().rfind("tt.atomic", 0) == 0 ||
                                s["op"].get<std::string>().rfind("tt.descriptor", 0) == 0)) {
      json a = {{"id", op_id(s["site"])}, {"op", s["op"]}, {"line", s["line"]}, {"variable", s["var"]}};
      a.update(s["stats"]);
      accesses.push_back(a);
    }
  // 6. Values of the selected program at the findings' ops and the selected op.
  json values = nullptr;
  {
    std::vector<int> want;
    for (const json& f : fs)
      if (f.contains("site") && want.size() < 8)
        want.push_back(std::stoi(f["site"]["id"].get<std::string>().substr(3)));
    if (site && std::find(want.begin(), want.end(), *site) == want.end())
      want.push_back(static_cast<int>(*site));
    // Nothing found and nothing selected (a wrong-values bug the sanitizer cannot see): what the program
    // loaded and stored, the first 8 such ops in TTIR order.
    if (want.empty())
      for (const json& s : sites)
        if ((s["op"] == "tt.load" || s["op"] == "tt.store") && want.size() < 8)
          want.push_back(s["site"].get<int>());
    if (!want.empty()) {
      try {
        const json v = q.values(launch_id, pid, want);
        values = json::array();
        for (const json& s : v["sites"]) {
          json item = {
              {"id", op_id(s["site"])}, {"op", s["op"]}, {"program", pid}, {"executions", json::array()}};
          const json& ex = s["executions"];
          for (size_t i = 0; i < ex.size(); ++i) {
            if (i >= 3 && i + 1 < ex.size()) continue;  // the first three and the last
            json e = {{"execution", ex[i]["seq"]}};
            json res = json::array();
            const json& operands = ex[i]["operands"];
            const bool memory = s["op"] == "tt.load" || s["op"] == "tt.store";
            for (const json& r : ex[i]["results"])
              res.push_back(summarize(r, memory ? mask_of(operands, r) : nullptr));
            e["results"] = res;
            if (s["op"] == "tt.store" && operands.size() > 1)
              e["stored"] = summarize(operands[1], mask_of(operands, operands[1]));
            item["executions"].push_back(e);
          }
          item["executions_total"] = ex.size();
          values.push_back(item);
        }
      } catch (const std::exception& e) {
        values = {{"unavailable", e.what()}};
      }
    }
  }
  json profile = L["reports"].contains("profile") ? L["reports"]["profile"] : json();

  // Assemble in priority order, then fit the budget.
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["findings"] = fs;
  out["selected"] = selected;
  if (!kernel_source.is_null()) out["kernel_source"] = kernel_source;
  out["launch"] = ctx["launch"];
  out["accesses"] = accesses;
  if (!values.is_null()) out["values"] = values;
  if (!profile.is_null()) out["profile"] = profile;
  out["omitted"] = json::array();
  auto size = [&] {
    return estimate_tokens(out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  };
  auto drop = [&](const char* key, const std::string& why) {
    if (out.contains(key)) {
      out.erase(key);
      out["omitted"].push_back(why);
    }
  };
  if (size() > token_budget) drop("profile", "profile (budget)");
  if (size() > token_budget) drop("values", "values (budget)");
  if (size() > token_budget) drop("accesses", "access summaries (budget)");
  if (size() > token_budget && out["launch"]["args"].size() > 8) {
    out["launch"]["args"] =
        json(std::vector<json>(out["launch"]["args"].begin(), out["launch"]["args"].begin() + 8));
    out["omitted"].push_back("launch arguments past the first 8 (budget)");
  }
  if (size() > token_budget && out.contains("kernel_source") && out["kernel_source"]["lines"].size() > 60) {
    auto& ls = out["kernel_source"]["lines"];
    ls.erase(ls.begin() + 60, ls.end());
    out["omitted"].push_back("kernel source past 60 lines (budget)");
  }
  if (size() > token_budget && out["findings"].size() > 5) {
    auto& f = out["findings"];
    for (size_t i = 5; i < f.size(); ++i)
      f[i] = {{"id", f[i]["id"]}, {"kind", f[i]["kind"]}, {"summary", f[i]["summary"]}};
    out["omitted"].push_back("details of findings past the first 5 (budget)");
  }
  if (size() > token_budget) drop("kernel_source", "kernel source (budget)");
  if (size() > token_budget) drop("launch", "launch arguments (budget)");
  if (size() > token_budget) {
    auto& f = out["findings"];
    for (auto& x : f) x = {{"id", x["id"]}, {"kind", x["kind"]}, {"summary", x["summary"]}};
    out["omitted"].push_back("finding details (budget)");
  }
  while (size() > token_budget && !out["findings"].empty()) {
    out["findings"].erase(out["findings"].size() - 1);
    if (out["omitted"].back() != "later findings (budget)")
      out["omitted"].push_back("later findings (budget)");
  }
  out["tokens"] = size();
  return out;
}

}  // namespace tilescope::assist
