// Report writers: text (source line and caret), JSON (schema fields, round trip), SARIF 2.1.0 shape.
// Findings are built by hand so the expected text comes from the test, not from the sanitizer.
#include "tilescope/report/report.h"

#include <gtest/gtest.h>

#include "tilescope/ir/diag.h"
#include "tilescope/ir/reader.h"

namespace tilescope::report {
namespace {

using analysis::Finding;
using analysis::Kind;
using analysis::OpSite;

OpSite site(const std::string& op, int line, int col, const std::string& src, const std::string& var = "") {
  OpSite s;
  s.op = op;
  s.ttir_file = "k.ttir";
  s.ttir_line = line + 100;
  s.ttir_col = 5;
  s.file = "kern.py";
  s.line = line;
  s.col = col;
  s.var = var;
  s.source_line = src;
  return s;
}

Finding oob() {
  Finding f;
  f.kind = Kind::oob_store;
  f.kernel = "add_kernel";
  f.site = site("tt.store", 12, 13, "    tl.store(out_ptr + offs, x, mask=m)");
  f.programs = 7;
  f.first_programs = {{3, 0, 0}, {4, 0, 0}};
  f.last_program = {9, 0, 0};
  f.lanes = 104;
  f.first_lanes = {0, 1};
  f.occurrences = 7;
  f.buffer = analysis::BufferInfo{"out_ptr", "f32", {4096}, {1}, 16384, 4096};
  f.has_offsets = true;
  f.offset_min = 4096;
  f.offset_max = 4199;
  f.elements_past = 104;
  f.launch_stack = {"script.py:3 in <module>", "script.py:9 in main"};
  f.summary = "out-of-bounds store";
  return f;
}

Finding undef() {
  Finding f;
  f.kind = Kind::undefined_value;
  f.kernel = "row_sum";
  f.site = site("tt.reduce", 20, 15, "    s = tl.sum(x, axis=0)", "s");
  f.cause = site("tt.load", 19, 16, "    x = tl.load(p + offs, mask=m)", "x");
  f.use = site("tt.store", 21, 4, "    tl.store(o, s)");
  f.programs = 1;
  f.first_programs = {{0, 0, 0}};
  f.lanes = 6;
  f.first_lanes = {10, 11, 12, 13, 14};
  f.summary = "tt.reduce uses undefined values";
  return f;
}

TEST(ReportText, SourceLineWithCaretUnderTheColumn) {
  std::string t = to_text({oob()}, false);
  EXPECT_NE(t.find("error[out-of-bounds-store]: out-of-bounds store\n"), std::string::npos) << t;
  EXPECT_NE(t.find("--> kern.py:12:13 in kernel add_kernel"), std::string::npos) << t;
  EXPECT_NE(t.find(" 12 |     tl.store(out_ptr + offs, x, mask=m)\n"), std::string::npos) << t;
  // The caret line: gutter of the same width, then 13 spaces (Triton's 0-based column), then '^'.
  EXPECT_NE(t.find("    | " + std::string(13, ' ') + "^\n"), std::string::npos) << t;
  EXPECT_NE(t.find("TTIR: tt.store at k.ttir:112:5"), std::string::npos) << t;
  EXPECT_NE(t.find("programs: 7 (first: (3, 0, 0), (4, 0, 0), ...; last: (9, 0, 0))"), std::string::npos)
      << t;
  EXPECT_NE(t.find("lanes: 104 (first: 0, 1, ...)"), std::string::npos) << t;
  EXPECT_NE(t.find("buffer: out_ptr: f32, shape [4096], strides [1], 16384 bytes (4096 elements)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("element offsets: 4096..4199, up to 104 elements past the end"), std::string::npos) << t;
  EXPECT_NE(t.find("launched from:\n      script.py:3 in <module>\n      script.py:9 in main\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("\x1b["), std::string::npos);
}

Finding race(int other_line) {
  Finding f;
  f.kind = Kind::data_race;
  f.kernel = "scatter";
  f.race = "RAW";
  f.site = site("tt.store", 14, 4, "    tl.store(out_ptr + idx, cur + v)");
  f.other = site("tt.load", other_line, 10, "    cur = tl.load(out_ptr + idx)", "cur");
  f.programs = 1;
  f.first_programs = {{0, 0, 0}};
  f.other_programs = 2;
  f.other_first_programs = {{1, 0, 0}, {3, 0, 0}};
  f.lanes = 2;
  f.first_lanes = {3};
  f.other_first_lanes = {0, 5};
  f.occurrences = 2;
  f.buffer = analysis::BufferInfo{"out_ptr", "f32", {16}, {1}, 64, 16};
  f.has_offsets = true;
  f.offset_min = 3;
  f.offset_max = 3;
  f.hint = "use tl.atomic_add";
  f.summary = analysis::summarize(f);
  return f;
}

TEST(ReportRaces, BothSitesInTextJsonAndSarif) {
  const Finding f = race(13);
  EXPECT_EQ(
      f.summary,
      "data race (RAW) on 'out_ptr' (16 elements), element offsets 3..3: tt.store at kern.py:14 in program "
      "(0, 0, 0) and tt.load at kern.py:13 in program (1, 0, 0); 2 lanes in 1 program");
  const std::string t = to_text({f}, false);
  EXPECT_NE(t.find("= second access (RAW): tt.load ('cur') at kern.py:13:10 [TTIR k.ttir:113:5]"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("    cur = tl.load(out_ptr + idx)\n"), std::string::npos) << t;
  EXPECT_NE(t.find("= second programs: 2 ((1, 0, 0), (3, 0, 0))"), std::string::npos) << t;
  EXPECT_NE(t.find("= help: use tl.atomic_add"), std::string::npos) << t;
  nlohmann::json j = finding_to_json(f);
  EXPECT_EQ(j["kind"], "data-race");
  EXPECT_EQ(j["race"], "RAW");
  EXPECT_EQ(j["other"]["line"], 13);
  EXPECT_EQ(j["other"]["programs"]["count"], 2);
  EXPECT_EQ(j["other"]["lanes"]["first"], nlohmann::json({0, 5}));
  EXPECT_EQ(j["hint"], "use tl.atomic_add");
  std::vector<Finding> back = from_json(nlohmann::json::array({j}));
  EXPECT_EQ(finding_to_json(back.at(0)), j);
  nlohmann::json s = to_sarif({f});
  const auto& rel = s["runs"][0]["results"][0]["relatedLocations"];
  ASSERT_EQ(rel.size(), 2u);
  EXPECT_EQ(rel[1]["physicalLocation"]["region"]["startLine"], 13);
  EXPECT_EQ(rel[1]["message"]["text"], "second access (RAW): tt.load");
  EXPECT_EQ(s["runs"][0]["results"][0]["ruleId"], "data-race");
}

TEST(ReportRaces, MergeKeepsPairsOfSitesApart) {
  std::vector<Finding> m = merge({race(13), race(13), race(11)});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].other_programs, 4);
  EXPECT_EQ(m[0].other_first_programs, (std::vector<exec::ProgramId>{{1, 0, 0}, {3, 0, 0}}));
  EXPECT_EQ(m[1].other->line, 11);
}

TEST(ReportText, ColourOnlyWhenAsked) {
  std::string t = to_text({oob()}, true);
  EXPECT_NE(t.find("\x1b[1;31merror[out-of-bounds-store]\x1b[0m"), std::string::npos) << t;
  EXPECT_TRUE(to_text({}, true).empty());
}

TEST(ReportText, PoisonKindsNameTheCauseAndTheVariable) {
  std::string t = to_text({undef()}, false);
  EXPECT_NE(t.find("(variable 's')"), std::string::npos) << t;
  EXPECT_NE(t.find("^ s\n"), std::string::npos) << t;
  EXPECT_NE(t.find("undefined values from: tt.load ('x') at kern.py:19:16 [TTIR k.ttir:119:5]"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("19 | x = tl.load(p + offs, mask=m)"), std::string::npos) << t;
  EXPECT_NE(t.find("used by: tt.store at kern.py:21:4"), std::string::npos) << t;
}

TEST(ReportText, SummaryLineCountsKinds) {
  EXPECT_EQ(summary_line({}), "no findings");
  EXPECT_EQ(summary_line({oob(), undef(), oob()}), "3 findings (2 out-of-bounds-store, 1 undefined-value)");
}

TEST(ReportJson, DocumentedFields) {
  nlohmann::json j = to_json({oob(), undef()});
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  const auto& a = j[0];
  EXPECT_EQ(a["kind"], "out-of-bounds-store");
  EXPECT_EQ(a["kernel"], "add_kernel");
  EXPECT_EQ(a["file"], "kern.py");
  EXPECT_EQ(a["line"], 12);
  EXPECT_EQ(a["col"], 13);
  EXPECT_EQ(a["op"], "tt.store");
  EXPECT_EQ(a["source"], "    tl.store(out_ptr + offs, x, mask=m)");
  EXPECT_EQ(a["ttir"]["line"], 112);
  EXPECT_EQ(a["programs"]["count"], 7);
  EXPECT_EQ(a["programs"]["first"][1], nlohmann::json({4, 0, 0}));
  EXPECT_EQ(a["programs"]["last"], nlohmann::json({9, 0, 0}));
  EXPECT_EQ(a["launches"]["count"], 1);
  EXPECT_EQ(a["launches"]["stacks"], nlohmann::json::array({a["launch_stack"]}));
  EXPECT_EQ(a["lanes"]["count"], 104);
  EXPECT_EQ(a["buffer"]["name"], "out_ptr");
  EXPECT_EQ(a["buffer"]["shape"], nlohmann::json({4096}));
  EXPECT_EQ(a["buffer"]["bytes"], 16384);
  EXPECT_EQ(a["offsets"]["min"], 4096);
  EXPECT_EQ(a["offsets"]["elements_past"], 104);
  EXPECT_TRUE(a["cause"].is_null());
  EXPECT_TRUE(a["addresses"].is_null());
  EXPECT_EQ(a["launch_stack"].size(), 2u);
  const auto& b = j[1];
  EXPECT_EQ(b["cause"]["op"], "tt.load");
  EXPECT_EQ(b["cause"]["line"], 19);
  EXPECT_EQ(b["use"]["op"], "tt.store");
  EXPECT_EQ(b["var"], "s");
  EXPECT_TRUE(b["buffer"].is_null());
}

TEST(ReportJson, RoundTrip) {
  Finding n;
  n.kind = Kind::null_pointer;
  n.site = site("tt.load", 3, 4, "x");
  n.has_addresses = true;
  n.address_min = 0;
  n.address_max = 0x1fc;
  std::vector<Finding> in{oob(), undef(), n};
  nlohmann::json j = to_json(in);
  std::vector<Finding> back = from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back[2].address_max, 0x1fcu);
  EXPECT_EQ(to_text(back, false), to_text(in, false));
}

Finding uninit() {
  Finding f;
  f.kind = Kind::uninitialized_read;
  f.kernel = "hist";
  f.site = site("tt.atomic_rmw", 30, 4, "    tl.atomic_add(hist_ptr + b, 1, mask=mask)");
  f.programs = 2;
  f.first_programs = {{0, 0, 0}, {1, 0, 0}};
  f.last_program = {1, 0, 0};
  f.lanes = 20;
  f.first_lanes = {0, 1};
  f.buffer = analysis::BufferInfo{"hist_ptr", "i32", {20}, {1}, 80, 20};
  f.has_offsets = true;
  f.offset_min = 0;
  f.offset_max = 19;
  analysis::OpSite a;
  a.op = "torch.empty";
  a.file = "/src/prog.py";
  a.line = 41;
  a.source_line = "    hist = torch.empty(20, dtype=torch.int32)";
  f.allocation = a;
  f.hint = "zero the buffer";
  f.summary = analysis::summarize(f);
  return f;
}

TEST(ReportUninit, AllocationSiteAndHintInEveryFormat) {
  const Finding f = uninit();
  EXPECT_NE(f.summary.find("allocated by torch.empty at /src/prog.py:41"), std::string::npos) << f.summary;
  const std::string t = to_text({f}, false);
  EXPECT_NE(t.find("= allocated by: torch.empty at /src/prog.py:41\n      41 | hist = torch.empty(20, "
                   "dtype=torch.int32)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("= help: zero the buffer"), std::string::npos) << t;
  nlohmann::json j = to_json({f});
  EXPECT_EQ(j[0]["kind"], "uninitialized-read");
  EXPECT_EQ(j[0]["allocation"]["call"], "torch.empty");
  EXPECT_EQ(j[0]["allocation"]["line"], 41);
  EXPECT_EQ(j[0]["hint"], "zero the buffer");
  EXPECT_TRUE(to_json({oob()})[0]["allocation"].is_null());
  std::vector<Finding> back = from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(to_json(back), j);
  nlohmann::json r = to_sarif({f})["runs"][0]["results"][0];
  EXPECT_EQ(r["ruleId"], "uninitialized-read");
  ASSERT_EQ(r["relatedLocations"].size(), 2u);  // the TTIR op, the allocation
  EXPECT_EQ(r["relatedLocations"][1]["physicalLocation"]["artifactLocation"]["uri"], "/src/prog.py");
  EXPECT_EQ(r["relatedLocations"][1]["physicalLocation"]["region"]["startLine"], 41);
  EXPECT_EQ(r["relatedLocations"][1]["message"]["text"], "allocated by torch.empty");
}

TEST(ReportMerge, UninitializedReadsOfDifferentAllocationsStaySeparate) {
  Finding a = uninit(), b = uninit(), c = uninit();
  c.allocation->line = 50;
  std::vector<Finding> m = merge({a, b, c});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].lanes, 40);
  EXPECT_EQ(m[1].allocation->line, 50);
}

TEST(ReportJson, BadInputIsALocatedError) {
  EXPECT_THROW(from_json(nlohmann::json::object()), Error);
  EXPECT_THROW(from_json(nlohmann::json::parse(R"([{"kind": "no-such-kind"}])")), Error);
  EXPECT_THROW(from_json(nlohmann::json::parse(R"([{"kind": "null-pointer", "line": "x"}])")), Error);
  EXPECT_THROW(from_json(nlohmann::json::parse(R"([3])")), Error);
}

// ---------------------------------------------------------------------------------------------
// Merging across launches

namespace {

/// One launch's out-of-bounds store at kern.py:12 on an f32 buffer of `numel` elements, from `stack`,
/// with the summary the sanitizer writes.
Finding oob_launch(int64_t numel, int64_t off_min, int64_t off_max, std::vector<std::string> stack,
                   exec::ProgramId first) {
  Finding f = oob();
  f.buffer = analysis::BufferInfo{"out_ptr", "f32", {numel}, {1}, static_cast<uint64_t>(4 * numel), numel};
  f.offset_min = off_min;
  f.offset_max = off_max;
  f.elements_past = off_max - numel + 1;
  f.programs = 2;
  f.first_programs = {first, {first[0] + 1, 0, 0}};
  f.last_program = {first[0] + 1, 0, 0};
  f.lanes = off_max - off_min + 1;
  f.first_lanes = {0, 1};
  f.occurrences = 2;
  f.launch_stack = std::move(stack);
  f.summary = analysis::summarize(f);
  return f;
}

}  // namespace

// Regression (issue 8, item 13): launches of one kernel on buffers of other sizes were merged into one
// finding whose summary kept the first launch's offsets (60..63), whose details had every launch's
// (8..63) against the first launch's shape ([60]), and which listed one launch site.
TEST(ReportMerge, OnlyFindingsOnTheSameBufferShapeAreMergedAndEveryLaunchSiteIsListed) {
  const std::vector<std::string> a{"script.py:30 in <module>"}, b{"script.py:31 in <module>"},
      c{"script.py:32 in <module>"};
  std::vector<Finding> merged = merge({oob_launch(60, 60, 63, a, {15, 0, 0}),   // shape [60]
                                       oob_launch(8, 8, 15, b, {2, 0, 0}),      // shape [8]
                                       oob_launch(60, 61, 70, c, {7, 0, 0})});  // shape [60] again
  ASSERT_EQ(merged.size(), 2u);
  const Finding& big = merged[0];
  const Finding& small = merged[1];
  ASSERT_TRUE(big.buffer && small.buffer);
  EXPECT_EQ(big.buffer->shape, std::vector<int64_t>{60});
  EXPECT_EQ(small.buffer->shape, std::vector<int64_t>{8});
  // The [60] launches: offsets 60..70, 11 past the end, 2 + 2 programs, 4 + 10 lanes, both sites.
  EXPECT_EQ(big.offset_min, 60);
  EXPECT_EQ(big.offset_max, 70);
  EXPECT_EQ(big.elements_past, 11);
  EXPECT_EQ(big.programs, 4);
  EXPECT_EQ(big.lanes, 14);
  EXPECT_EQ(big.occurrences, 4);
  EXPECT_EQ(big.first_programs, (std::vector<exec::ProgramId>{{7, 0, 0}, {8, 0, 0}, {15, 0, 0}, {16, 0, 0}}));
  EXPECT_EQ(big.last_program, (exec::ProgramId{16, 0, 0}));
  EXPECT_EQ(big.launches, 2);
  EXPECT_EQ(big.launch_stacks, (std::vector<std::vector<std::string>>{a, c}));
  EXPECT_EQ(big.summary,
            "out-of-bounds store to 'out_ptr' (60 elements): element offsets 60..70 (up to 11 elements past "
            "the end); 14 lanes in 4 programs over 2 launches");
  // The [8] launch stays as it was.
  EXPECT_EQ(small.offset_min, 8);
  EXPECT_EQ(small.offset_max, 15);
  EXPECT_EQ(small.launches, 1);
  EXPECT_EQ(small.launch_stack, b);
  EXPECT_NE(
      small.summary.find("element offsets 8..15 (up to 8 elements past the end); 8 lanes in 2 programs"),
      std::string::npos)
      << small.summary;
  // Text and JSON say the same.
  std::string t = to_text(merged, false);
  EXPECT_NE(t.find("element offsets: 60..70, up to 11 elements past the end"), std::string::npos) << t;
  EXPECT_NE(t.find("launched from 2 places (2 launches):\n    [1] script.py:30 in <module>\n"
                   "    [2] script.py:32 in <module>\n"),
            std::string::npos)
      << t;
  nlohmann::json j = to_json(merged);
  EXPECT_EQ(j[0]["launches"]["count"], 2);
  EXPECT_EQ(j[0]["launches"]["stacks"], nlohmann::json({a, c}));
  EXPECT_EQ(j[0]["buffer"]["shape"], nlohmann::json({60}));
  EXPECT_EQ(j[0]["offsets"]["max"], 70);
  EXPECT_EQ(to_json(from_json(j)), j);  // the merged form reads back as it was written
}

TEST(ReportMerge, LaunchesFromOneSiteAreCountedOnce) {
  const std::vector<std::string> a{"script.py:30 in <module>", "script.py:9 in main"};
  std::vector<Finding> merged =
      merge({oob_launch(60, 60, 63, a, {15, 0, 0}), oob_launch(60, 60, 63, a, {15, 0, 0}),
             oob_launch(60, 60, 63, a, {15, 0, 0})});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].launches, 3);
  EXPECT_TRUE(merged[0].launch_stacks.empty());  // one place: launch_stack
  EXPECT_EQ(merged[0].programs, 6);
  EXPECT_EQ(merged[0].first_programs, (std::vector<exec::ProgramId>{{15, 0, 0}, {16, 0, 0}}));
  std::string t = to_text(merged, false);
  EXPECT_NE(
      t.find("launched from (3 launches):\n      script.py:30 in <module>\n      script.py:9 in main\n"),
      std::string::npos)
      << t;
}

TEST(ReportSarif, Shape) {
  nlohmann::json s = to_sarif({oob(), undef()});
  EXPECT_EQ(s["version"], "2.1.0");
  ASSERT_EQ(s["runs"].size(), 1u);
  const auto& run = s["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "tilescope");
  const auto& rules = run["tool"]["driver"]["rules"];
  ASSERT_EQ(rules.size(), 12u);  // one per kind
  ASSERT_EQ(run["results"].size(), 2u);
  const auto& r0 = run["results"][0];
  EXPECT_EQ(r0["ruleId"], "out-of-bounds-store");
  EXPECT_EQ(rules[r0["ruleIndex"].get<int>()]["id"], "out-of-bounds-store");
  const auto& loc = r0["locations"][0]["physicalLocation"];
  EXPECT_EQ(loc["artifactLocation"]["uri"], "kern.py");
  EXPECT_EQ(loc["region"]["startLine"], 12);
  EXPECT_EQ(loc["region"]["startColumn"], 14);  // SARIF columns are 1-based
  const auto& r1 = run["results"][1];
  EXPECT_EQ(r1["ruleId"], "undefined-value");
  // related: the TTIR op, the cause (load), the use (store)
  ASSERT_EQ(r1["relatedLocations"].size(), 3u);
  EXPECT_EQ(r1["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"], "k.ttir");
  EXPECT_EQ(r1["relatedLocations"][1]["physicalLocation"]["region"]["startLine"], 19);
  EXPECT_EQ(r1["level"], "error");
}

// A located error keeps its parts (structured Diagnostic) and renders them in the writers.
TEST(ReportDiagnostic, LocatedErrorTextAndJson) {
  const char* text = R"(module {
  tt.func public @k(%x: i32) {
    %0 = arith.divsi %x, %x : i32 loc(#loc1)
    tt.return
  }
}
#loc1 = loc("kern.py":7:12)
)";
  ir::Module m = ir::read(text, "k.ttir");
  const ir::Op& div = *m.entry()->body.blocks[0]->ops[0];
  Diagnostic d;
  try {
    fail_at(m, div, "division is not allowed here");
  } catch (const Error& e) {
    d = e.diagnostic();
    EXPECT_EQ(std::string(e.what()), "k.ttir:3:5: division is not allowed here (kern.py:7:12)");
  }
  EXPECT_EQ(d.op, "arith.divsi");
  EXPECT_EQ(d.ttir.line, 3);
  EXPECT_EQ(d.python.line, 7);
  d.notes.push_back("divide by a constant instead");
  EXPECT_EQ(diagnostic_to_text(d, false),
            "error: k.ttir:3:5: division is not allowed here (kern.py:7:12)\n  = note: divide by a constant "
            "instead\n");
  auto j = diagnostic_to_json(d);
  EXPECT_EQ(j["severity"], "error");
  EXPECT_EQ(j["ttir"]["line"], 3);
  EXPECT_EQ(j["ttir"]["col"], 5);
  EXPECT_EQ(j["python"]["file"], "kern.py");
  EXPECT_EQ(j["python"]["col"], 12);
  EXPECT_EQ(j["op"], "arith.divsi");
  EXPECT_EQ(j["notes"].size(), 1u);
  // An unlocated error is just its message.
  Error plain("cannot open file");
  EXPECT_EQ(diagnostic_to_text(plain.diagnostic(), false), "error: cannot open file\n");
  EXPECT_TRUE(diagnostic_to_json(plain.diagnostic())["ttir"].is_null());
}

}  // namespace
}  // namespace tilescope::report
