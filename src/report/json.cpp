// Findings as JSON (the interchange format; schema in the README) and as SARIF 2.1.0
// (https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html).
#include <fmt/format.h>

#include "tilescope/ir/diag.h"
#include "tilescope/report/report.h"

namespace tilescope::report {

using analysis::Finding;
using analysis::Kind;
using analysis::OpSite;
using nlohmann::json;

namespace {

json site_json(const OpSite& s) {
  return json{{"op", s.op},
              {"file", s.file},
              {"line", s.line},
              {"col", s.col},
              {"var", s.var},
              {"source", s.source_line},
              {"inlined_from", s.inlined_from},
              {"ttir", json{{"file", s.ttir_file}, {"line", s.ttir_line}, {"col", s.ttir_col}}}};
}

OpSite site_from(const json& j) {
  OpSite s;
  s.op = j.value("op", "");
  s.file = j.value("file", "");
  s.line = j.value("line", 0);
  s.col = j.value("col", 0);
  s.var = j.value("var", "");
  s.source_line = j.value("source", "");
  if (j.contains("inlined_from")) s.inlined_from = j["inlined_from"].get<std::vector<std::string>>();
  if (j.contains("ttir")) {
    const json& t = j["ttir"];
    s.ttir_file = t.value("file", "");
    s.ttir_line = t.value("line", 0);
    s.ttir_col = t.value("col", 0);
  }
  return s;
}

std::string hex(uint64_t v) { return fmt::format("0x{:x}", v); }

Kind kind_from(const std::string& s) {
  if (auto k = analysis::kind_from_name(s)) return *k;
  throw Error(fmt::format("findings JSON: unknown kind '{}'", s));
}

}  // namespace

json finding_to_json(const Finding& f) {
  json j = site_json(f.site);  // the site's fields at top level: file, line, col, var, source, op, ttir
  j["kind"] = analysis::kind_name(f.kind);
  j["kernel"] = f.kernel;
  j["summary"] = f.summary;
  j["cause"] = f.cause ? site_json(*f.cause) : json(nullptr);
  j["use"] = f.use ? site_json(*f.use) : json(nullptr);
  json pids = json::array();
  for (auto& p : f.first_programs) pids.push_back({p[0], p[1], p[2]});
  json programs{{"count", f.programs}, {"first", pids}};
  programs["last"] =
      f.programs > 0 ? json{f.last_program[0], f.last_program[1], f.last_program[2]} : json(nullptr);
  j["programs"] = programs;
  j["lanes"] = json{{"count", f.lanes}, {"first", f.first_lanes}};
  j["occurrences"] = f.occurrences;
  j["buffer"] =
      f.buffer ? json{{"name", f.buffer->name},       {"dtype", f.buffer->dtype}, {"shape", f.buffer->shape},
                      {"strides", f.buffer->strides}, {"bytes", f.buffer->bytes}, {"numel", f.buffer->numel}}
               : json(nullptr);
  j["offsets"] = f.has_offsets ? json{{"min", f.offset_min},
                                      {"max", f.offset_max},
                                      {"elements_before", f.elements_before},
                                      {"elements_past", f.elements_past}}
                               : json(nullptr);
  j["addresses"] =
      f.has_addresses ? json{{"min", hex(f.address_min)}, {"max", hex(f.address_max)}} : json(nullptr);
  j["message"] = f.message;
  j["allocation"] = f.allocation ? json{{"call", f.allocation->op},
                                        {"file", f.allocation->file},
                                        {"line", f.allocation->line},
                                        {"source", f.allocation->source_line}}
                                 : json(nullptr);
  j["hint"] = f.hint;
  j["launch_stack"] = f.launch_stack;
  json stacks = json::array();
  if (!f.launch_stacks.empty())
    for (auto& st : f.launch_stacks) stacks.push_back(st);
  else if (!f.launch_stack.empty())
    stacks.push_back(f.launch_stack);
  j["launches"] = json{{"count", f.launches}, {"stacks", stacks}};
  j["race"] = f.race.empty() ? json(nullptr) : json(f.race);
  if (f.other) {
    json o = site_json(*f.other);
    json opids = json::array();
    for (auto& p : f.other_first_programs) opids.push_back({p[0], p[1], p[2]});
    o["programs"] = json{{"count", f.other_programs}, {"first", opids}};
    o["lanes"] = json{{"first", f.other_first_lanes}};
    j["other"] = o;
  } else {
    j["other"] = nullptr;
  }
  return j;
}

json to_json(const std::vector<Finding>& findings) {
  json a = json::array();
  for (auto& f : findings) a.push_back(finding_to_json(f));
  return a;
}

std::vector<Finding> from_json(const json& j) {
  if (!j.is_array()) throw Error("findings JSON: expected an array of findings");
  std::vector<Finding> out;
  try {
    for (const json& x : j) {
      if (!x.is_object()) throw Error("findings JSON: every finding must be an object");
      Finding f;
      f.kind = kind_from(x.value("kind", ""));
      f.kernel = x.value("kernel", "");
      f.summary = x.value("summary", "");
      f.site = site_from(x);
      if (x.contains("cause") && x["cause"].is_object()) f.cause = site_from(x["cause"]);
      if (x.contains("use") && x["use"].is_object()) f.use = site_from(x["use"]);
      if (x.contains("programs")) {
        f.programs = x["programs"].value("count", int64_t{0});
        auto pid = [](const json& p) {
          return exec::ProgramId{p.at(0).get<int32_t>(), p.at(1).get<int32_t>(), p.at(2).get<int32_t>()};
        };
        for (auto& p : x["programs"].value("first", json::array())) f.first_programs.push_back(pid(p));
        const json last = x["programs"].value("last", json(nullptr));
        if (!last.is_null())
          f.last_program = pid(last);
        else if (!f.first_programs.empty())  // written before `last` existed: the best lower bound
          f.last_program = f.first_programs.back();
      }
      if (x.contains("lanes")) {
        f.lanes = x["lanes"].value("count", int64_t{0});
        f.first_lanes = x["lanes"].value("first", std::vector<int64_t>{});
      }
      f.occurrences = x.value("occurrences", int64_t{0});
      if (x.contains("buffer") && x["buffer"].is_object()) {
        const json& b = x["buffer"];
        analysis::BufferInfo bi;
        bi.name = b.value("name", "");
        bi.dtype = b.value("dtype", "");
        bi.shape = b.value("shape", std::vector<int64_t>{});
        bi.strides = b.value("strides", std::vector<int64_t>{});
        bi.bytes = b.value("bytes", uint64_t{0});
        bi.numel = b.value("numel", int64_t{0});
        f.buffer = bi;
      }
      if (x.contains("offsets") && x["offsets"].is_object()) {
        const json& o = x["offsets"];
        f.has_offsets = true;
        f.offset_min = o.value("min", int64_t{0});
        f.offset_max = o.value("max", int64_t{0});
        f.elements_before = o.value("elements_before", int64_t{0});
        f.elements_past = o.value("elements_past", int64_t{0});
      }
      if (x.contains("addresses") && x["addresses"].is_object()) {
        f.has_addresses = true;
        f.address_min = std::stoull(x["addresses"].value("min", "0"), nullptr, 16);
        f.address_max = std::stoull(x["addresses"].value("max", "0"), nullptr, 16);
      }
      f.message = x.value("message", "");
      if (x.contains("race") && x["race"].is_string()) f.race = x["race"].get<std::string>();
      if (x.contains("other") && x["other"].is_object()) {
        const json& o = x["other"];
        f.other = site_from(o);
        if (o.contains("programs") && o["programs"].is_object()) {
          f.other_programs = o["programs"].value("count", int64_t{0});
          for (auto& p : o["programs"].value("first", json::array()))
            f.other_first_programs.push_back(
                exec::ProgramId{p.at(0).get<int32_t>(), p.at(1).get<int32_t>(), p.at(2).get<int32_t>()});
        }
        if (o.contains("lanes") && o["lanes"].is_object())
          f.other_first_lanes = o["lanes"].value("first", std::vector<int64_t>{});
      }
      if (x.contains("allocation") && x["allocation"].is_object()) {
        const json& a = x["allocation"];
        OpSite s;
        s.op = a.value("call", "");
        s.file = a.value("file", "");
        s.line = a.value("line", 0);
        s.source_line = a.value("source", "");
        f.allocation = s;
      }
      f.hint = x.value("hint", "");
      f.launch_stack = x.value("launch_stack", std::vector<std::string>{});
      if (x.contains("launches") && x["launches"].is_object()) {
        f.launches = x["launches"].value("count", int64_t{1});
        f.launch_stacks = x["launches"].value("stacks", std::vector<std::vector<std::string>>{});
        if (f.launch_stacks.size() == 1 && f.launch_stacks[0] == f.launch_stack) f.launch_stacks.clear();
      }
      out.push_back(std::move(f));
    }
  } catch (const json::exception& e) {
    throw Error(fmt::format("findings JSON: {}", e.what()));
  } catch (const std::logic_error& e) {
    throw Error(fmt::format("findings JSON: bad address ({})", e.what()));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// SARIF 2.1.0

namespace {

std::string rule_name(Kind k) {
  // PascalCase of the kind: out-of-bounds-load -> OutOfBoundsLoad
  std::string s = analysis::kind_name(k), out;
  bool up = true;
  for (char c : s) {
    if (c == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

json physical(const OpSite& s) {
  if (s.file.empty()) {  // no Python location: point into the TTIR text
    return json{
        {"artifactLocation", {{"uri", s.ttir_file}}},
        {"region", {{"startLine", std::max(1, s.ttir_line)}, {"startColumn", std::max(1, s.ttir_col)}}}};
  }
  json region = {{"startLine", std::max(1, s.line)}, {"startColumn", s.col + 1}};  // Triton's col is 0-based
  if (!s.source_line.empty()) region["snippet"] = {{"text", s.source_line}};
  return json{{"artifactLocation", {{"uri", s.file}}}, {"region", region}};
}

json ttir_location(const OpSite& s, int id, const std::string& what) {
  return json{
      {"id", id},
      {"physicalLocation",
       {{"artifactLocation", {{"uri", s.ttir_file}}},
        {"region", {{"startLine", std::max(1, s.ttir_line)}, {"startColumn", std::max(1, s.ttir_col)}}}}},
      {"message", {{"text", fmt::format("{}: {}", what, s.op)}}}};
}

}  // namespace

json to_sarif(const std::vector<Finding>& findings) {
  json rules = json::array();
  for (int k = 0; k < analysis::kNumKinds; ++k) {
    Kind kk = static_cast<Kind>(k);
    rules.push_back({{"id", analysis::kind_name(kk)},
                     {"name", rule_name(kk)},
                     {"shortDescription", {{"text", analysis::kind_description(kk)}}},
                     {"defaultConfiguration", {{"level", "error"}}}});
  }
  json results = json::array();
  for (const Finding& f : findings) {
    json related = json::array();
    related.push_back(ttir_location(f.site, 0, "TTIR op"));
    int id = 1;
    if (f.cause) {
      json c = {{"id", id++},
                {"physicalLocation", physical(*f.cause)},
                {"message", {{"text", fmt::format("cause: {}", f.cause->op)}}}};
      related.push_back(c);
    }
    if (f.other) {
      json o = {{"id", id++},
                {"physicalLocation", physical(*f.other)},
                {"message", {{"text", fmt::format("second access ({}): {}", f.race, f.other->op)}}}};
      related.push_back(o);
    }
    if (f.use) {
      json u = {{"id", id++},
                {"physicalLocation", physical(*f.use)},
                {"message", {{"text", fmt::format("used by: {}", f.use->op)}}}};
      related.push_back(u);
    }
    if (f.allocation) {
      json a = {{"id", id++},
                {"physicalLocation", physical(*f.allocation)},
                {"message", {{"text", fmt::format("allocated by {}", f.allocation->op)}}}};
      related.push_back(a);
    }
    json r = {{"ruleId", analysis::kind_name(f.kind)},
              {"ruleIndex", static_cast<int>(f.kind)},
              {"level", "error"},
              {"message", {{"text", fmt::format("{}: {}", f.kernel, f.summary)}}},
              {"locations", json::array({json{{"physicalLocation", physical(f.site)}}})},
              {"relatedLocations", related},
              {"properties", finding_to_json(f)}};
    results.push_back(r);
  }
  return json{
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs", json::array({json{
                   {"tool", {{"driver", {{"name", "tilescope"}, {"version", "0.1.0"}, {"rules", rules}}}}},
                   {"results", results}}})}};
}

}  // namespace tilescope::report
