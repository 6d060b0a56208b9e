// Op statements and the generic op form (see parse_op.h).
#include "parse_op.h"

#include <fmt/format.h>

#include <cassert>

#include "parse_attr.h"
#include "parse_custom.h"
#include "parse_region.h"
#include "parse_type.h"
#include "parse_value.h"
#include "parser.h"
#include "tilescope/ir/ops.h"

namespace tilescope::ir {

namespace {

struct ResultName {
  std::string name;
  int count = 1;  // `%q:2` names a group of results
  size_t off = 0;
};

// `%a, %q:2 =` before the op name; empty when the op defines no names.
std::vector<ResultName> result_names(Parser& p) {
  std::vector<ResultName> names;
  if (!p.at(Tok::ValueId)) return names;
  do {
    ResultName r;
    r.off = p.tok().off;
    r.name = value_name(p, "a result name", "a result name");
    if (p.accept(Tok::Colon)) r.count = p.small_int("result count", 1, 4096);
    names.push_back(std::move(r));
  } while (p.accept(Tok::Comma));
  p.expect(Tok::Equal, " after the result names");
  return names;
}

// Branches in generic form: operandSegmentSizes splits the operands into [own operands,
// successor 0 operands, ...].
void split_branch_operands(Parser& p, Op& o, const std::vector<Value*>& vals) {
  const Attr* seg = o.attr("operandSegmentSizes");
  std::vector<int64_t> sizes;
  if (seg && seg->kind == Attr::Kind::IntArray)
    sizes = seg->ints;
  else if (o.successors.size() == 1)
    sizes = {0, static_cast<int64_t>(vals.size())};
  if (sizes.size() == o.successors.size() && o.code() == Opcode::cf_cond_br) sizes.insert(sizes.begin(), 1);
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (sizes.size() != o.successors.size() + 1 || total != static_cast<int64_t>(vals.size()))
    p.fail(p.op_off, "cannot split the operands of a generic branch among its successors");
  size_t k = 0;
  for (int64_t j = 0; j < sizes[0]; ++j) o.operands.push_back(vals[k++]);
  for (size_t s = 0; s < o.successors.size(); ++s) {
    o.successor_operands.emplace_back();
    for (int64_t j = 0; j < sizes[s + 1]; ++j) o.successor_operands.back().push_back(vals[k++]);
  }
  assert(k == vals.size());
}

// `<{props}> ({regions}) {attrs}`, each optional, between the successors and the colon.
void generic_extras(Parser& p, Op& o) {
  if (p.at(Tok::Less)) {
    Token brace = p.peek_next();
    if (brace.kind == Tok::LBrace && brace.off == p.tok().end()) {
      p.take();
      attr_dict(p, o.attrs);
      p.expect(Tok::Greater, " closing properties");
    }
  }
  if (p.accept(Tok::LParen)) {
    do {
      o.regions.push_back(std::make_unique<Region>());
      parse_region(p, *o.regions.back(), &o, nullptr);
    } while (p.accept(Tok::Comma));
    p.expect(Tok::RParen, " closing the region list");
  }
  if (p.at(Tok::LBrace)) attr_dict(p, o.attrs);
}

void parse_generic(Parser& p, Op& o, std::vector<const Type*>& res) {
  p.expect(Tok::LParen, " after the generic op name");
  std::vector<Ref> ops;
  if (!p.accept(Tok::RParen)) {
    do ops.push_back(value_ref(p));
    while (p.accept(Tok::Comma));
    p.expect(Tok::RParen, " closing generic operands");
  }
  if (p.accept(Tok::LSquare)) {
    do o.successors.push_back(block_ref(p));
    while (p.accept(Tok::Comma));
    p.expect(Tok::RSquare, " closing successors");
  }
  generic_extras(p, o);
  p.expect(Tok::Colon, " before the generic op type");
  auto in = paren_types(p);
  p.expect(Tok::Arrow);
  res = result_types(p);
  if (in.size() != ops.size())
    p.fail(p.op_off, fmt::format("{} operands but {} operand types", ops.size(), in.size()));
  std::vector<Value*> vals;
  for (size_t i = 0; i < ops.size(); ++i) vals.push_back(use(p, ops[i], in[i]));
  if (o.successors.empty())
    o.operands = std::move(vals);
  else
    split_branch_operands(p, o, vals);
}

// Give the op's results their types and define the names written before it.
void define_results(Parser& p, Op& o, const std::vector<ResultName>& names,
                    const std::vector<const Type*>& res, size_t start) {
  size_t total = 0;
  for (auto& r : names) total += r.count;
  if (total != res.size())
    p.fail(start, fmt::format("'{}' has {} result(s) but {} name(s) are defined", o.name, res.size(), total));
  size_t k = 0;
  for (auto& r : names) {
    std::vector<Value*> group;
    for (int j = 0; j < r.count; ++j, ++k) {
      auto v = new_value(p, res[k], r.count > 1 ? fmt::format("{}#{}", r.name, j) : r.name);
      v->def = &o;
      v->index = static_cast<int>(k);
      group.push_back(v.get());
      o.results.push_back(std::move(v));
    }
    define(p, r.name, std::move(group), r.off);
  }
}

}  // namespace

void parse_op(Parser& p, Block* b) {
  Token start = p.tok();
  Parser::Depth d(p, start.off);
  std::vector<ResultName> names = result_names(p);
  size_t name_off = p.tok().off;
  bool is_generic = p.at(Tok::String);
  std::string name = is_generic ? p.string() : p.ident("an op name");
  const OpDef* def = find_op(name);
  if (!def) p.fail(name_off, fmt::format("unknown op '{}'", name));
  auto o = std::make_unique<Op>();
  o->name = name;
  o->def = def;
  o->parent = b;
  o->pos = TextPos{start.line, start.col};
  size_t saved = p.op_off;
  p.op_off = start.off;
  std::vector<const Type*> res;
  if (is_generic)
    parse_generic(p, *o, res);
  else
    parse_custom(p, *o, res, names.size());
  p.op_off = saved;
  define_results(p, *o, names, res, start.off);
  int l = p.locs.trailing(p);
  if (l >= 0) p.locs.attach(o.get(), l);
  b->ops.push_back(std::move(o));
}

}  // namespace tilescope::ir
