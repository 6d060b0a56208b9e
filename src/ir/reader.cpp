// TTIR reader: a recursive-descent reader for the MLIR text Triton prints (kernel.asm["ttir"] and
// asm["source"]), over the tokens of lexer.h. The grammar areas each have their file: types
// (parse_type), attributes (parse_attr), locations (parse_loc), SSA values (parse_value), op
// statements and the generic form (parse_op), custom forms by Syntax (parse_custom, parse_control),
// regions, functions and the module (parse_region); parser.h holds the state they share. Every
// error is a tilescope::Error "file:line:col: message"; nothing the text says can crash the reader
// or make it loop (recursion is bounded by kMaxDepth).
#include "tilescope/ir/reader.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "parse_attr.h"
#include "parse_region.h"
#include "parser.h"

namespace tilescope::ir {

namespace {

// `#name = loc(...)` or `#name = <attribute>` at the top level, before or after the module.
void alias_definition(Parser& p) {
  Token h = p.take();
  if (h.id().empty()) p.expected("an alias name");
  std::string n(h.id());
  p.expect(Tok::Equal, " in an alias definition");
  if (p.accept_kw("loc")) {
    p.expect(Tok::LParen, " after loc");
    int l = p.locs.parse(p);
    p.expect(Tok::RParen, " closing loc(");
    p.locs.define_alias(p, n, l, h.off);
    return;
  }
  size_t a = p.tok().off;
  parse_attr(p);
  if (!p.attr_alias.emplace(n, std::string(p.raw(a, p.prev_end()))).second)
    p.fail(h.off, fmt::format("redefinition of '#{}'", n));
}

void read_top_level(Parser& p) {
  bool seen_module = false;
  while (!p.at(Tok::End)) {
    if (p.at(Tok::HashId)) {
      alias_definition(p);
      continue;
    }
    size_t s = p.tok().off;
    if (!p.accept_kw("module")) p.expected("'module' or an alias definition '#name = ...'");
    if (seen_module) p.fail(s, "more than one module");
    seen_module = true;
    parse_module(p);
  }
  if (!seen_module) p.fail(p.tok().off, "no module found");
  // Locations last: aliases may be defined after their uses (reference §0.5).
  p.locs.resolve_all(p.lexer());
  for (auto& [y, parent] : p.implicit_yields) y->loc = parent->loc;
}

}  // namespace

Module read(std::string_view text, const std::string& filename) {
  Module m;
  m.filename = filename;
  Parser p(text, m.filename, m);
  read_top_level(p);
  return m;
}

Module read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{}: cannot read file", path));
  return read(ss.str(), path);
}

}  // namespace tilescope::ir
