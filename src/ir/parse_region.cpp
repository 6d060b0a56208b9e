// Regions, blocks, functions and the module (see parse_region.h).
#include "parse_region.h"

#include <fmt/format.h>

#include <cassert>
#include <map>

#include "parse_attr.h"
#include "parse_op.h"
#include "parse_type.h"
#include "parse_value.h"
#include "parser.h"

namespace tilescope::ir {

namespace {

// `%name : type [loc(...)]` (a block argument); `what` names the argument in errors.
ArgDef arg_def(Parser& p, const char* what, const char* colon_ctx) {
  ArgDef a;
  a.off = p.tok().off;
  a.name = value_name(p, what, "an argument name");
  p.expect(Tok::Colon, colon_ctx);
  a.type = parse_type(p);
  return a;
}

// `(%a: T, ...)` after the '(' of a block label.
std::vector<ArgDef> block_args(Parser& p) {
  std::vector<ArgDef> v;
  if (p.accept(Tok::RParen)) return v;
  do {
    v.push_back(arg_def(p, "a block argument '%name'", " after a block argument"));
    v.back().loc = p.locs.trailing(p);
  } while (p.accept(Tok::Comma));
  p.expect(Tok::RParen, " closing block arguments");
  return v;
}

void add_args(Parser& p, Block* b, const std::vector<ArgDef>& args) {
  for (auto& a : args) {
    auto v = new_value(p, a.type, a.name);
    v->block = b;
    v->index = static_cast<int>(b->args.size());
    Value* raw = v.get();
    b->args.push_back(std::move(v));
    define(p, a.name, {raw}, a.off);
    if (a.loc >= 0) p.locs.attach(raw, a.loc);
  }
}

Block* new_block(Region& r) {
  r.blocks.push_back(std::make_unique<Block>());
  r.blocks.back()->parent = &r;
  return r.blocks.back().get();
}

// `^label[(args)]:` starting a block; returns the block, which becomes the current one. The first
// label of a region whose entry arguments the op gives (`named_entry`) names that entry block.
Block* block_label(Parser& p, Region& r, Block* cur, bool named_entry) {
  Token t = p.take();
  assert(t.kind == Tok::BlockId);
  if (t.id().empty()) p.expected("a block label");
  std::string l(t.id());
  std::vector<ArgDef> args;
  if (p.accept(Tok::LParen)) args = block_args(p);
  p.expect(Tok::Colon, " after a block label");
  RegionState& rs = p.regions.back();
  if (rs.labels.count(l)) p.fail(t.off, fmt::format("redefinition of block '^{}'", l));
  if (named_entry) {
    if (!args.empty()) p.fail(t.off, "entry block arguments are already given by the op");
    cur->label = l;
  } else {
    std::unique_ptr<Block> b;
    auto f = rs.forward.find(l);
    if (f != rs.forward.end()) {
      b = std::move(f->second.block);
      rs.forward.erase(f);
    } else {
      b = std::make_unique<Block>();
      b->label = l;
      b->parent = &r;
    }
    cur = b.get();
    r.blocks.push_back(std::move(b));
    add_args(p, cur, args);
  }
  rs.labels[l] = cur;
  return cur;
}

// `tt.func [visibility] @name(%a: T {attrs} loc(..), ...) [-> results] [attributes {..}] [{ body }]`
void parse_func_args(Parser& p, Function& f, std::vector<ArgDef>& args) {
  p.expect(Tok::LParen, " opening the argument list");
  if (p.accept(Tok::RParen)) return;
  do {
    args.push_back(arg_def(p, "a function argument '%name'", ""));
    f.arg_attrs.emplace_back();
    if (p.at(Tok::LBrace)) attr_dict(p, f.arg_attrs.back());
    args.back().loc = p.locs.trailing(p);
  } while (p.accept(Tok::Comma));
  p.expect(Tok::RParen, " closing the argument list");
}

void parse_func_results(Parser& p, Function& f) {
  if (!p.accept(Tok::Arrow)) return;
  if (!p.accept(Tok::LParen)) {
    f.result_types.push_back(parse_type(p));
    return;
  }
  if (p.accept(Tok::RParen)) return;
  do {
    f.result_types.push_back(parse_type(p));
    if (p.at(Tok::LBrace)) {  // result attributes: nothing reads them
      std::map<std::string, Attr> ignored;
      attr_dict(p, ignored);
    }
  } while (p.accept(Tok::Comma));
  p.expect(Tok::RParen);
}

// After the keyword `tt.func` (the token `start`).
void parse_func(Parser& p, Token start) {
  auto f = std::make_unique<Function>();
  f->pos = TextPos{start.line, start.col};
  if (p.accept_kw("private") || p.accept_kw("nested"))
    f->is_public = false;
  else
    p.accept_kw("public");
  f->name = parse_symbol(p);
  if (p.m.find(f->name)) p.fail(start.off, fmt::format("redefinition of function '@{}'", f->name));
  p.fn = f.get();
  p.scopes.clear();
  p.scopes.emplace_back();
  std::vector<ArgDef> args;
  parse_func_args(p, *f, args);
  parse_func_results(p, *f);
  if (p.accept_kw("attributes")) attr_dict(p, f->attrs);
  if (p.at(Tok::LBrace)) {
    parse_region(p, f->body, nullptr, &args);
  } else {  // declaration: keep the signature in an entry block without ops
    p.scopes.emplace_back();
    add_args(p, new_block(f->body), args);
  }
  int l = p.locs.trailing(p);
  if (l >= 0) p.locs.attach(f.get(), l);
  p.m.functions.push_back(std::move(f));
  p.fn = nullptr;
}

}  // namespace

Block* block_ref(Parser& p) {
  size_t s = p.tok().off;
  if (!p.at(Tok::BlockId)) p.expected("a block label '^bb'");
  Token t = p.take();
  if (t.id().empty()) p.expected("a block label");
  std::string l(t.id());
  if (p.regions.empty()) p.fail(s, "block reference outside a region");
  RegionState& rs = p.regions.back();
  auto it = rs.labels.find(l);
  if (it != rs.labels.end()) return it->second;
  auto f = rs.forward.find(l);
  if (f != rs.forward.end()) return f->second.block.get();
  auto b = std::make_unique<Block>();
  b->label = l;
  b->parent = rs.r;
  Block* raw = b.get();
  rs.forward.emplace(l, RegionState::Pending{std::move(b), s});
  return raw;
}

void parse_region(Parser& p, Region& r, Op* parent, const std::vector<ArgDef>* entry) {
  size_t s = p.tok().off;
  Parser::Depth d(p, s);
  p.expect(Tok::LBrace, " opening a region");
  r.parent = parent;
  p.scopes.emplace_back();
  p.regions.push_back(RegionState{&r, {}, {}});
  Block* cur = nullptr;
  if (entry) add_args(p, cur = new_block(r), *entry);
  for (bool first = true;; first = false) {
    if (p.at(Tok::End)) p.fail(s, "unterminated region: expected '}'");
    if (p.accept(Tok::RBrace)) break;
    if (p.at(Tok::BlockId)) {
      cur = block_label(p, r, cur, first && entry);
      continue;
    }
    if (!cur) cur = new_block(r);
    parse_op(p, cur);
  }
  RegionState& rs = p.regions.back();
  assert(rs.r == &r);
  if (!rs.forward.empty()) {
    auto& [l, pend] = *rs.forward.begin();
    p.fail(pend.off, fmt::format("use of undefined block '^{}'", l));
  }
  p.regions.pop_back();
  p.scopes.pop_back();
}

void parse_module(Parser& p) {
  if (p.at(Tok::SymbolId)) parse_symbol(p);
  if (p.accept_kw("attributes")) {
    std::map<std::string, Attr> ignored;
    attr_dict(p, ignored);
  }
  size_t s = p.tok().off;
  p.expect(Tok::LBrace, " opening the module");
  for (;;) {
    if (p.at(Tok::End)) p.fail(s, "unterminated module: expected '}'");
    if (p.accept(Tok::RBrace)) break;
    if (!p.at_kw("tt.func")) p.expected("'tt.func' or '}' in the module");
    parse_func(p, p.take());
  }
  int l = p.locs.trailing(p);
  if (l >= 0) p.locs.check_later(l);
}

}  // namespace tilescope::ir
