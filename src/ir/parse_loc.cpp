// Locations (see parse_loc.h): read while the text is read, resolved at the end.
#include "parse_loc.h"

#include <fmt/format.h>

#include <cassert>
#include <cstdint>

#include "parser.h"

namespace tilescope::ir {

int Locations::add(LocNode n) {
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size() - 1);
}

int Locations::parse(Parser& p) {
  size_t s = p.tok().off;
  Parser::Depth d(p, s);
  LocNode n;
  n.off = s;
  if (p.at(Tok::HashId)) {
    Token h = p.take();
    if (h.id().empty()) p.expected("a location alias");
    n.k = LocNode::K::Alias;
    n.s = std::string(h.id());
    return add(std::move(n));
  }
  if (p.accept_kw("unknown")) return add(std::move(n));
  if (p.accept_kw("callsite")) return callsite(p, std::move(n));
  if (p.accept_kw("fused")) return fused(p, std::move(n));
  if (p.at(Tok::String)) return file_or_name(p, std::move(n));
  p.expected("a location");
}

// `callsite(callee at caller)`
int Locations::callsite(Parser& p, LocNode n) {
  p.expect(Tok::LParen, " after callsite");
  int a = parse(p);
  p.expect_kw("at");
  int b = parse(p);
  p.expect(Tok::RParen, " closing callsite(");
  n.k = LocNode::K::CallSite;
  n.kids = {a, b};
  return add(std::move(n));
}

// `fused[a, b]` or `fused<"metadata">[a, b]`: the metadata carries nothing we use.
int Locations::fused(Parser& p, LocNode n) {
  if (p.at(Tok::Less)) p.skip_group();
  p.expect(Tok::LSquare, " after fused");
  n.k = LocNode::K::Fused;
  if (!p.accept(Tok::RSquare)) {
    do n.kids.push_back(parse(p));
    while (p.accept(Tok::Comma));
    p.expect(Tok::RSquare, " closing fused[");
  }
  return add(std::move(n));
}

// `"file":line:col` (optionally `to line:col`, a FileLineColRange) or a name `"x"` / `"x"(child)`.
int Locations::file_or_name(Parser& p, LocNode n) {
  n.s = p.string();
  if (p.accept(Tok::Colon)) {
    n.k = LocNode::K::File;
    n.line = p.small_int("line", 0, INT32_MAX);
    p.expect(Tok::Colon, " between line and column");
    n.col = p.small_int("column", 0, INT32_MAX);
    if (p.accept_kw("to")) {  // the range's end: `to L:C` or `to :C`
      if (starts_with_digit(p.tok())) p.parse_int();
      if (p.accept(Tok::Colon)) p.parse_int();
    }
    return add(std::move(n));
  }
  n.k = LocNode::K::Name;
  if (p.accept(Tok::LParen)) {
    n.kids.push_back(parse(p));
    p.expect(Tok::RParen, " closing a name location");
  }
  return add(std::move(n));
}

int Locations::trailing(Parser& p) {
  if (!p.accept_kw("loc")) return -1;
  p.expect(Tok::LParen, " after loc");
  int n = parse(p);
  p.expect(Tok::RParen, " closing loc(");
  return n;
}

void Locations::define_alias(const Parser& p, const std::string& name, int n, size_t off) {
  assert(n >= 0 && n < static_cast<int>(nodes_.size()));
  if (!aliases_.emplace(name, n).second) p.fail(off, fmt::format("redefinition of '#{}'", name));
}

int Locations::deref(const Lexer& lex, int n) const {
  for (int hops = 0; nodes_[n].k == LocNode::K::Alias; ++hops) {
    if (hops > 64) lex.fail(nodes_[n].off, "location alias cycle");
    auto it = aliases_.find(nodes_[n].s);
    if (it == aliases_.end())
      lex.fail(nodes_[n].off, fmt::format("undefined location alias '#{}'", nodes_[n].s));
    n = it->second;
  }
  return n;
}

// The file positions under node `n`, innermost call first; `name` is the NameLoc above them.
void Locations::frames(const Lexer& lex, int n, std::vector<Frame>& out, const std::string& name,
                       int depth) const {
  if (depth > kMaxDepth) lex.fail(nodes_[n].off, "location nesting too deep");
  n = deref(lex, n);
  const LocNode& l = nodes_[n];
  switch (l.k) {
    case LocNode::K::Unknown:
    case LocNode::K::Alias: return;
    case LocNode::K::File: out.push_back({l.s, l.line, l.col, name}); return;
    case LocNode::K::Name:
      if (!l.kids.empty()) frames(lex, l.kids[0], out, name.empty() ? l.s : name, depth + 1);
      return;
    case LocNode::K::CallSite:
      assert(l.kids.size() == 2);
      frames(lex, l.kids[0], out, "", depth + 1);
      frames(lex, l.kids[1], out, "", depth + 1);
      return;
    case LocNode::K::Fused:  // the first child that has a file position
      for (int k : l.kids) {
        size_t before = out.size();
        frames(lex, k, out, name, depth + 1);
        if (out.size() > before) return;
      }
      return;
  }
}

namespace {

bool triton_internal(const std::string& f) {
  return (f.find("site-packages/triton/") != std::string::npos ||
          f.find("dist-packages/triton/") != std::string::npos);
}

}  // namespace

// The Python location: the outermost name is the variable; the first frame outside Triton's own
// sources is the position; the whole chain is the stack when there is more than one frame.
PyLoc Locations::resolve(const Lexer& lex, int n) const {
  PyLoc p;
  int top = deref(lex, n);
  std::string var;
  for (int hops = 0; nodes_[top].k == LocNode::K::Name && hops < kMaxDepth; ++hops) {
    if (var.empty()) var = nodes_[top].s;
    if (nodes_[top].kids.empty()) break;
    top = deref(lex, nodes_[top].kids[0]);
  }
  std::vector<Frame> fs;
  frames(lex, n, fs, "", 0);
  if (!fs.empty()) {
    size_t pick = 0;
    while (pick < fs.size() && triton_internal(fs[pick].file)) ++pick;
    if (pick == fs.size()) pick = 0;
    p.file = fs[pick].file;
    p.line = fs[pick].line;
    p.col = fs[pick].col;
    if (var.empty()) var = fs[pick].name;
    if (fs.size() > 1)
      for (auto& f : fs) p.stack.emplace_back(f.file, f.line);
  }
  p.var = var;
  return p;
}

void Locations::resolve_all(const Lexer& lex) {
  for (int l : others_) resolve(lex, l);
  for (auto& [f, l] : functions_) f->loc = resolve(lex, l);
  for (auto& [v, l] : values_) v->loc = resolve(lex, l);
  for (auto& [o, l] : ops_) o->loc = resolve(lex, l);
}

}  // namespace tilescope::ir
