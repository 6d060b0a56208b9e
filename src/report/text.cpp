// Findings as terminal text: one block per finding, compiler-diagnostic style.
#include <fmt/format.h>

#include <map>

#include "tilescope/report/report.h"

namespace tilescope::report {

using analysis::Finding;
using analysis::Kind;
using analysis::OpSite;

namespace {

struct Style {
  bool on;
  std::string wrap(const char* code, const std::string& s) const {
    return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
  }
  std::string err(const std::string& s) const { return wrap("1;31", s); }
  std::string bold(const std::string& s) const { return wrap("1", s); }
  std::string blue(const std::string& s) const { return wrap("1;34", s); }
  std::string caret(const std::string& s) const { return wrap("1;32", s); }
  std::string dim(const std::string& s) const { return wrap("2", s); }
};

template <class T>
std::string join(const std::vector<T>& v, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + fmt::format("{}", v[i]);
  return s;
}

std::string first_of(int64_t count, const std::string& listed, size_t shown) {
  if (count <= 0) return "0";
  if (static_cast<int64_t>(shown) >= count) return fmt::format("{} ({})", count, listed);
  return fmt::format("{} (first: {}, ...)", count, listed);
}

std::string py_where(const OpSite& s) {
  return s.file.empty() ? "?" : fmt::format("{}:{}:{}", s.file, s.line, s.col);
}

std::string ttir_where(const OpSite& s) {
  return fmt::format("{}:{}:{}", s.ttir_file, s.ttir_line, s.ttir_col);
}

// The source line with a caret under Triton's column (a 0-based offset into the line).
void source_block(std::string& out, const OpSite& s, const Style& st) {
  if (s.source_line.empty()) return;
  std::string num = std::to_string(s.line);
  std::string pad(num.size(), ' ');
  std::string text = s.source_line;
  for (auto& c : text)
    if (c == '\t') c = ' ';
  int col = std::clamp(s.col, 0, static_cast<int>(text.size()));
  out += fmt::format(" {} {}\n", pad, st.blue("|"));
  out += fmt::format(" {} {} {}\n", st.blue(num), st.blue("|"), text);
  out += fmt::format(" {} {} {}{}\n", pad, st.blue("|"), std::string(static_cast<size_t>(col), ' '),
                     st.caret(s.var.empty() ? "^" : fmt::format("^ {}", s.var)));
}

/// Whether the site is an NKI instruction (tilescope/nki/nki.h): it has no TTIR text to point at.
bool is_nki(const OpSite& s) { return s.ttir_file.ends_with(".nki"); }

std::string site_line(const OpSite& s) {
  std::string py = s.file.empty() ? "" : fmt::format(" at {}", py_where(s));
  std::string var = s.var.empty() ? "" : fmt::format(" ('{}')", s.var);
  if (is_nki(s)) return fmt::format("{}{}{}", s.op, var, py);
  return fmt::format("{}{}{} [TTIR {}]", s.op, var, py, ttir_where(s));
}

}  // namespace

std::string summary_line(const std::vector<Finding>& findings) {
  if (findings.empty()) return "no findings";
  std::map<std::string, int> by;
  for (auto& f : findings) by[analysis::kind_name(f.kind)]++;
  std::string parts;
  for (auto& [k, n] : by) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, k);
  return fmt::format("{} finding{} ({})", findings.size(), findings.size() == 1 ? "" : "s", parts);
}

std::string to_text(const std::vector<Finding>& findings, bool color) {
  Style st{color};
  std::string out;
  for (const Finding& f : findings) {
    out += fmt::format("{}: {}\n", st.err(fmt::format("error[{}]", analysis::kind_name(f.kind))),
                       st.bold(f.summary));
    const OpSite& s = f.site;
    std::string var = s.var.empty() ? "" : fmt::format(" (variable '{}')", s.var);
    if (!s.file.empty())
      out += fmt::format("  {} {}{} in kernel {}\n", st.blue("-->"), py_where(s), var, f.kernel);
    else
      out += fmt::format("  {} {} in kernel {}\n", st.blue("-->"), ttir_where(s), f.kernel);
    source_block(out, s, st);
    auto note = [&](const std::string& label, const std::string& text) {
      out += fmt::format("  {} {}: {}\n", st.blue("="), label, text);
    };
    if (!is_nki(s)) note("TTIR", fmt::format("{} at {}", s.op, ttir_where(s)));
    for (auto& i : s.inlined_from) note("inlined from", i);
    std::vector<std::string> pids;
    for (auto& p : f.first_programs) pids.push_back(fmt::format("({}, {}, {})", p[0], p[1], p[2]));
    std::string programs = first_of(f.programs, join(pids), pids.size());
    if (f.programs > static_cast<int64_t>(pids.size()) && f.programs > 0) {  // "... (first: a, b, ...)"
      programs.pop_back();
      programs +=
          fmt::format("; last: ({}, {}, {}))", f.last_program[0], f.last_program[1], f.last_program[2]);
    }
    note(f.other && f.kind == Kind::data_race ? "first programs" : "programs", programs);
    if (f.other) {  // races: lanes of the first side; the second access follows
      note("lanes", fmt::format("{} racing lane pairs; first access lanes {}", f.lanes, join(f.first_lanes)));
    } else {
      note("lanes", first_of(f.lanes, join(f.first_lanes), f.first_lanes.size()));
    }
    if (f.buffer) {
      const auto& b = *f.buffer;
      note("buffer", fmt::format("{}: {}, shape [{}], strides [{}], {} bytes ({} elements)", b.name, b.dtype,
                                 join(b.shape), join(b.strides), b.bytes, b.numel));
    }
    if (f.has_offsets) {
      std::string far;
      if (f.elements_past > 0)
        far = fmt::format(", up to {} element{} past the end", f.elements_past,
                          f.elements_past == 1 ? "" : "s");
      if (f.elements_before > 0)
        far += fmt::format(", up to {} element{} before the start", f.elements_before,
                           f.elements_before == 1 ? "" : "s");
      note("element offsets", fmt::format("{}..{}{}", f.offset_min, f.offset_max, far));
    }
    if (f.has_addresses) note("addresses", fmt::format("0x{:x}..0x{:x}", f.address_min, f.address_max));
    if (!f.message.empty()) note("message", f.message);
    if (f.cause) {
      const char* label = f.kind == Kind::undefined_value ? "undefined values from" : "cause";
      note(label, site_line(*f.cause));
      if (!f.cause->source_line.empty()) {
        std::string t = f.cause->source_line;
        size_t b = t.find_first_not_of(" \t");
        out += fmt::format("      {} {} {}\n", st.blue(std::to_string(f.cause->line)), st.blue("|"),
                           st.dim(b == std::string::npos ? t : t.substr(b)));
      }
    }
    if (f.use) note("used by", site_line(*f.use));
    if (f.other) {
      const OpSite& o = *f.other;
      note(fmt::format("second access ({})", f.race), site_line(o));
      source_block(out, o, st);
      std::vector<std::string> opids;
      for (auto& p : f.other_first_programs) opids.push_back(fmt::format("({}, {}, {})", p[0], p[1], p[2]));
      if (f.kind == Kind::data_race)
        note("second programs", first_of(f.other_programs, join(opids), opids.size()));
      note("second lanes", join(f.other_first_lanes));
    }
    if (f.allocation) {
      note("allocated by",
           fmt::format("{} at {}:{}", f.allocation->op, f.allocation->file, f.allocation->line));
      if (!f.allocation->source_line.empty()) {
        std::string t = f.allocation->source_line;
        size_t b = t.find_first_not_of(" \t");
        out += fmt::format("      {} {} {}\n", st.blue(std::to_string(f.allocation->line)), st.blue("|"),
                           st.dim(b == std::string::npos ? t : t.substr(b)));
      }
    }
    if (!f.hint.empty()) note("help", f.hint);
    if (f.launch_stacks.size() > 1) {
      out += fmt::format("  {} launched from {} places ({} launches{}):\n", st.blue("="),
                         f.launch_stacks.size(), f.launches,
                         f.launch_stacks.size() >= analysis::kMaxLaunchStacks ? "; the first places" : "");
      for (size_t i = 0; i < f.launch_stacks.size(); ++i)
        for (size_t k = 0; k < f.launch_stacks[i].size(); ++k)
          out += fmt::format("    {:<4}{}\n", k ? "" : fmt::format("[{}]", i + 1), f.launch_stacks[i][k]);
    } else if (!f.launch_stack.empty()) {
      out += fmt::format("  {} launched from{}:\n", st.blue("="),
                         f.launches > 1 ? fmt::format(" ({} launches)", f.launches) : "");
      for (auto& fr : f.launch_stack) out += fmt::format("      {}\n", fr);
    }
    out += "\n";
  }
  return out;
}

}  // namespace tilescope::report
