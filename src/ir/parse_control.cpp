// Custom forms of terminators and ops with regions, one function per Syntax kind (see
// parse_custom.h): Return, Condition, Branch, CondBranch, For, If, While.
#include <fmt/format.h>

#include <cassert>

#include "parse_attr.h"
#include "parse_custom.h"
#include "parse_region.h"
#include "parse_type.h"
#include "parser.h"
#include "tilescope/ir/ops.h"

namespace tilescope::ir {

namespace {

using Types = std::vector<const Type*>;

// `ops : types` after a terminator (none for an empty return), checked one type per operand.
void returned_values(Parser& p, Op& o) {
  auto ops = plain_operands(p, o);
  Types ts;
  if (!ops.empty()) {
    p.expect(Tok::Colon, " before the types of returned values");
    ts = type_list(p);
  }
  if (ts.size() != ops.size())
    p.fail(p.op_off, fmt::format("{} operands but {} types", ops.size(), ts.size()));
  for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(p, ops[i], ts[i]));
}

// `(%v : T, ...)` after a successor block; none when no '(' follows.
std::vector<Value*> successor_args(Parser& p) {
  std::vector<Value*> v;
  if (!p.accept(Tok::LParen)) return v;
  std::vector<Ref> ops{value_ref(p)};
  while (p.accept(Tok::Comma)) ops.push_back(value_ref(p));
  p.expect(Tok::Colon, " before successor operand types");
  auto ts = type_list(p);
  p.expect(Tok::RParen, " closing successor operands");
  if (ts.size() != ops.size())
    p.fail(ops[0].off, fmt::format("{} operands but {} types", ops.size(), ts.size()));
  for (size_t i = 0; i < ops.size(); ++i) v.push_back(use(p, ops[i], ts[i]));
  return v;
}

// `%a = %x, %b = %y, ...)`: block arguments and the values they start from (scf.for iter_args,
// scf.while), after the opening parenthesis, up to and including the closing one.
void assignments(Parser& p, const char* what, std::vector<ArgDef>& args, std::vector<Ref>& inits,
                 const char* closing) {
  do {
    ArgDef a;
    a.off = p.tok().off;
    a.name = value_name(p, what, what);
    p.expect(Tok::Equal);
    inits.push_back(value_ref(p));
    args.push_back(std::move(a));
  } while (p.accept(Tok::Comma));
  p.expect(Tok::RParen, closing);
}

// scf.for without iter_args and scf.if without results print their body without the empty
// `scf.yield` (MLIR elides implicit terminators); put it back so every body ends in a terminator.
// Called right after the region's closing '}', where the yield is placed.
void implicit_yield(Parser& p, Region& r, Op& parent) {
  assert(p.prev().kind == Tok::RBrace);
  if (r.blocks.empty()) {
    r.blocks.push_back(std::make_unique<Block>());
    r.blocks.back()->parent = &r;
  }
  Block* b = r.blocks.back().get();
  if (!b->ops.empty()) {
    Syntax sx = b->ops.back()->def->syntax;
    if (sx == Syntax::Return || sx == Syntax::Branch || sx == Syntax::CondBranch || sx == Syntax::Condition)
      return;
  }
  auto y = std::make_unique<Op>();
  y->def = &op_def(Opcode::scf_yield);
  y->name = std::string(y->def->name);
  assert(y->def);
  y->parent = b;
  y->pos = TextPos{p.prev().line, p.prev().col};
  p.implicit_yields.emplace_back(y.get(), &parent);
  b->ops.push_back(std::move(y));
}

Region& new_region(Op& o) {
  o.regions.push_back(std::make_unique<Region>());
  return *o.regions.back();
}

}  // namespace

void read_return(Parser& p, Op& o) { returned_values(p, o); }

// scf.condition(c) ops : types
void read_condition(Parser& p, Op& o) {
  p.expect(Tok::LParen, " after scf.condition");
  o.operands.push_back(use(p, value_ref(p), p.m.scalar(Elem::i1)));
  p.expect(Tok::RParen, " closing scf.condition(");
  returned_values(p, o);
}

// cf.br ^bb(ops : types)
void read_branch(Parser& p, Op& o) {
  o.successors.push_back(block_ref(p));
  o.successor_operands.push_back(successor_args(p));
}

// cf.cond_br c, ^bb1[(..)], ^bb2[(..)]
void read_cond_branch(Parser& p, Op& o) {
  o.operands.push_back(use(p, value_ref(p), p.m.scalar(Elem::i1)));
  p.expect(Tok::Comma);
  for (int k = 0; k < 2; ++k) {
    if (k) p.expect(Tok::Comma);
    o.successors.push_back(block_ref(p));
    o.successor_operands.push_back(successor_args(p));
  }
}

// scf.for [unsigned] %iv = lb to ub step s [iter_args(%a = %x, ..) -> (T, ..)] [: T] { body } {attrs}
void read_for(Parser& p, Op& o, std::vector<const Type*>& res) {
  if (p.accept_kw("unsigned")) o.attrs["unsigned"] = Attr{};
  ArgDef iv;
  iv.off = p.tok().off;
  iv.name = value_name(p, "the induction variable", "the induction variable");
  p.expect(Tok::Equal);
  Ref lb = value_ref(p);
  p.expect_kw("to");
  Ref ub = value_ref(p);
  p.expect_kw("step");
  Ref st = value_ref(p);
  std::vector<ArgDef> iters;
  std::vector<Ref> inits;
  if (p.accept_kw("iter_args")) {
    p.expect(Tok::LParen);
    if (!p.accept(Tok::RParen)) assignments(p, "an iter_args name", iters, inits, " closing iter_args");
    p.expect(Tok::Arrow);
    res = result_types(p);
    if (res.size() != iters.size())
      p.fail(p.op_off, fmt::format("{} iter_args but {} result types", iters.size(), res.size()));
  }
  iv.type = p.accept(Tok::Colon) ? parse_type(p) : lookup(p, lb)->type;
  o.operands = {use(p, lb, iv.type), use(p, ub, iv.type), use(p, st, iv.type)};
  for (size_t i = 0; i < inits.size(); ++i) {
    o.operands.push_back(use(p, inits[i], res[i]));
    iters[i].type = res[i];
  }
  std::vector<ArgDef> entry{iv};
  entry.insert(entry.end(), iters.begin(), iters.end());
  Region& body = new_region(o);
  parse_region(p, body, &o, &entry);
  implicit_yield(p, body, o);
  if (p.at(Tok::LBrace)) attr_dict(p, o.attrs);
}

// scf.if c [-> (T, ..)] { then } [else { else }] {attrs}
void read_if(Parser& p, Op& o, std::vector<const Type*>& res) {
  o.operands.push_back(use(p, value_ref(p), p.m.scalar(Elem::i1)));
  if (p.accept(Tok::Arrow)) res = result_types(p);
  Region& then = new_region(o);
  parse_region(p, then, &o, nullptr);
  implicit_yield(p, then, o);
  if (p.accept_kw("else")) {
    Region& other = new_region(o);
    parse_region(p, other, &o, nullptr);
    implicit_yield(p, other, o);
  }
  if (p.at(Tok::LBrace)) attr_dict(p, o.attrs);
}

// scf.while [(%a = %x, ..)] : (T, ..) -> (R, ..) { before } do { after } [attributes {..}]
void read_while(Parser& p, Op& o, std::vector<const Type*>& res) {
  std::vector<ArgDef> args;
  std::vector<Ref> inits;
  if (p.accept(Tok::LParen) && !p.accept(Tok::RParen)) assignments(p, "a while argument", args, inits, "");
  p.expect(Tok::Colon, " before the scf.while types");
  auto in = paren_types(p);
  p.expect(Tok::Arrow);
  res = result_types(p);
  if (in.size() != args.size())
    p.fail(p.op_off, fmt::format("{} while arguments but {} types", args.size(), in.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    o.operands.push_back(use(p, inits[i], in[i]));
    args[i].type = in[i];
  }
  parse_region(p, new_region(o), &o, &args);
  p.expect_kw("do");
  parse_region(p, new_region(o), &o, nullptr);
  if (p.accept_kw("attributes")) attr_dict(p, o.attrs);
}

}  // namespace tilescope::ir
