// Custom forms of value ops, one function per Syntax kind (see parse_custom.h), and the pieces
// shared by all custom forms.
#include "parse_custom.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "parse_attr.h"
#include "parse_type.h"
#include "parser.h"
#include "tilescope/ir/ops.h"

namespace tilescope::ir {

// ---------------------------------------------------------------- items

namespace {

// At a '%' inside a custom form: is this `%a = ` or `%a:2 = ` (the next statement) rather than an
// operand? A lookahead over the raw text, kept byte-exact with what the reader has always accepted:
// the name runs over all suffix characters, and only whitespace (no comment) may separate the parts.
bool statement_start(const Parser& p) {
  std::string_view t = p.lexer().text();
  size_t q = p.tok().off + 1;
  while (q < t.size() && is_suffix_char(t[q])) ++q;
  auto skip = [&] {
    while (q < t.size() && (t[q] == ' ' || t[q] == '\t' || t[q] == '\n' || t[q] == '\r')) ++q;
  };
  skip();
  if (q < t.size() && t[q] == ':') {
    ++q;
    skip();
    while (q < t.size() && is_digit(t[q])) ++q;
    skip();
  }
  return q < t.size() && t[q] == '=' && (q + 1 >= t.size() || t[q + 1] != '=');
}

// The value of `kw = value`: a string, an integer or a keyword.
Attr keyword_value(Parser& p) {
  Attr a;
  char c = first_char(p.tok());
  if (p.at(Tok::String)) {
    a.kind = Attr::Kind::String;
    a.s = p.string();
  } else if (is_digit(c) || c == '-') {
    a.kind = Attr::Kind::Int;
    a.i = p.parse_int();
  } else {
    a.kind = Attr::Kind::Keyword;
    a.s = p.ident("a keyword value");
  }
  return a;
}

// An identifier inside a custom form: `kw`, `kw = value` or `name<...>`; false at a trailing
// `loc(`, which ends the form.
bool keyword_item(Parser& p, Op& o, std::vector<Item>& v) {
  size_t s = p.tok().off;
  if (p.at_kw("loc")) {
    Token paren = p.peek_next();
    if (paren.kind == Tok::LParen && paren.off == p.tok().end()) return false;
  }
  std::string w = p.ident();
  if (p.at(Tok::Less) && p.adjacent()) {  // overflow<nsw>, fastmath<fast>: no semantics for TTIR (§2.1)
    Attr a;
    a.kind = Attr::Kind::String;
    a.s = w + p.skip_group();
    o.attrs[w] = std::move(a);
    return true;
  }
  Item it;
  it.word = w;
  it.off = s;
  if (p.at(Tok::Equal)) {
    Token second = p.peek_next();
    if (!(second.kind == Tok::Equal && second.off == p.tok().end())) {  // `==` is not `kw = value`
      p.take();
      it.k = Item::K::KwValue;
      it.val = keyword_value(p);
    }
  }
  v.push_back(std::move(it));
  return true;
}

Attr keyword(const std::string& s) {
  Attr a;
  a.kind = Attr::Kind::Keyword;
  a.s = s;
  return a;
}

// Leading keywords that are attribute values, by position (`arith.cmpi slt`, `tt.atomic_rmw fadd,
// acq_rel, gpu`), and unit keywords (`tt.reshape %x allow_reorder`): the assembly formats of these ops
// (reference §1-§2), by opcode. Empty for every other op.
using Keywords = std::vector<std::string>;
const Keywords& positional_keywords(Opcode code) {
  static const std::pair<Opcode, Keywords> kPositional[] = {
      {Opcode::arith_cmpi, {"predicate"}},
      {Opcode::arith_cmpf, {"predicate"}},
      {Opcode::tt_get_program_id, {"axis"}},
      {Opcode::tt_get_num_programs, {"axis"}},
      {Opcode::tt_atomic_rmw, {"atomic_rmw_op", "sem", "scope"}},
      {Opcode::tt_atomic_cas, {"sem", "scope"}},
      {Opcode::tt_atomic_load, {"sem", "scope"}},   // 3.9
      {Opcode::tt_atomic_store, {"sem", "scope"}},  // 3.9
      {Opcode::tt_atomic_poll, {"sem", "scope"}},   // 3.9
      {Opcode::tt_descriptor_reduce, {"kind"}},
  };
  static const Keywords kNone;
  for (const auto& [c, k] : kPositional)
    if (c == code) return k;
  return kNone;
}
const Keywords& unit_keywords(Opcode code) {
  static const std::pair<Opcode, Keywords> kUnits[] = {
      {Opcode::tt_reshape, {"allow_reorder", "efficient_layout"}},
      {Opcode::ttg_barrier, {"all", "local", "global_read", "global_write", "tensor_read", "tensor_write"}},
      {Opcode::tt_dot_scaled, {"scale"}},
      {Opcode::scf_for, {"unsigned"}},
      {Opcode::tt_atomic_poll, {"timeout"}},  // `timeout %t`: the operand after it is the i64 budget
  };
  static const Keywords kNone;
  for (const auto& [c, k] : kUnits)
    if (c == code) return k;
  return kNone;
}

// A positional keyword's attribute: program axes x/y/z become the i32 0/1/2.
Attr positional_value(const Parser& p, const std::string& key, const Item& it) {
  if (key != "axis") return keyword(it.word);
  int ax = it.word == "x" ? 0 : it.word == "y" ? 1 : it.word == "z" ? 2 : -1;
  if (ax < 0) p.fail(it.off, fmt::format("expected program axis x, y or z, found '{}'", it.word));
  Attr a;
  a.kind = Attr::Kind::Int;
  a.i = ax;
  a.type = p.m.scalar(Elem::i32);
  return a;
}

void no_strings(const Parser& p, const std::vector<Item>& its, const Op& o) {
  for (auto& it : its)
    if (it.k == Item::K::String) p.fail(it.off, fmt::format("unexpected string in '{}'", o.name));
}

}  // namespace

std::vector<Item> items(Parser& p, Op& o) {
  std::vector<Item> v;
  for (;;) {
    const Token& t = p.tok();
    if (t.kind == Tok::ValueId) {
      if (statement_start(p)) break;
      Item it;
      it.k = Item::K::Operand;
      it.off = t.off;
      it.ref = value_ref(p);
      v.push_back(std::move(it));
    } else if (t.kind == Tok::Comma || t.kind == Tok::LSquare || t.kind == Tok::RSquare) {
      p.take();
    } else if (t.kind == Tok::String) {
      Item it;
      it.k = Item::K::String;
      it.off = t.off;
      it.word = p.string();
      v.push_back(std::move(it));
    } else if (t.kind == Tok::LBrace) {
      attr_dict(p, o.attrs);
    } else if (t.kind != Tok::Ident || !keyword_item(p, o, v)) {
      break;  // the colon, the end, or what the form reads next
    }
  }
  return v;
}

void apply_keywords(Parser& p, Op& o, const std::vector<Item>& its) {
  const Keywords& pos = positional_keywords(o.code());
  const Keywords& units = unit_keywords(o.code());
  size_t k = 0;
  for (const Item& it : its) {
    if (it.k == Item::K::Keyword) {
      if (k < pos.size()) {
        const std::string& key = pos[k++];
        o.attrs[key] = positional_value(p, key, it);
        continue;
      }
      if (std::find(units.begin(), units.end(), it.word) != units.end()) {
        if (it.word != "scale") o.attrs[it.word] = Attr{};  // dot_scaled's `scale` marks an operand
        continue;
      }
      p.fail(it.off, fmt::format("unexpected keyword '{}' in '{}'", it.word, o.name));
    } else if (it.k == Item::K::KwValue) {
      std::string key = it.word == "cacheModifier"    ? "cache"
                        : it.word == "evictionPolicy" ? "evict"
                                                      : it.word;
      o.attrs[key] = it.val;
    }
  }
  if (k < pos.size())
    p.fail(p.op_off,
           fmt::format("'{}' expects {} leading keyword(s) ({})", o.name, pos.size(), fmt::join(pos, ", ")));
}

std::vector<Ref> operands_of(const std::vector<Item>& its) {
  std::vector<Ref> v;
  for (auto& it : its)
    if (it.k == Item::K::Operand) v.push_back(it.ref);
  return v;
}

std::vector<Ref> plain_operands(Parser& p, Op& o) {
  auto its = items(p, o);
  no_strings(p, its, o);
  apply_keywords(p, o, its);
  return operands_of(its);
}

void want_count(const Parser& p, const Op& o, const std::vector<Ref>& ops, size_t lo, size_t hi) {
  if (ops.size() < lo || ops.size() > hi) {
    std::string n = lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi);
    p.fail(p.op_off, fmt::format("'{}' expects {} operands, found {}", o.name, n, ops.size()));
  }
}

// ---------------------------------------------------------------- value ops, by Syntax

namespace {

using Types = std::vector<const Type*>;

// `arith.constant [{attrs}] value`: the value's type is the result type.
void read_constant(Parser& p, Op& o, Types& res) {
  if (p.at(Tok::LBrace)) attr_dict(p, o.attrs);
  size_t s = p.tok().off;
  Attr a = parse_attr(p);
  if (a.kind != Attr::Kind::Bool && a.kind != Attr::Kind::Int && a.kind != Attr::Kind::Float &&
      a.kind != Attr::Kind::Dense)
    p.fail(s, "arith.constant expects an integer, float, boolean or dense value");
  if (a.kind != Attr::Kind::Bool && !a.type) p.fail(s, "arith.constant value needs a type (`: i32`)");
  res.push_back(a.type);
  o.attrs["value"] = std::move(a);
}

void read_same_type(Parser& p, Op& o, Types& res) {
  if (o.code() == Opcode::arith_constant) return read_constant(p, o, res);
  auto ops = plain_operands(p, o);
  p.expect(Tok::Colon, fmt::format(" before the type of '{}'", o.name));
  const Type* t = parse_type(p);
  for (auto& r : ops) o.operands.push_back(use(p, r, t));
  res.push_back(t);
}

void read_compare(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  want_count(p, o, ops, 2, 2);
  p.expect(Tok::Colon);
  const Type* t = parse_type(p);
  for (auto& r : ops) o.operands.push_back(use(p, r, t));
  res.push_back(p.m.with_elem(t, Elem::i1));
}

void read_select(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  want_count(p, o, ops, 3, 3);
  p.expect(Tok::Colon);
  auto ts = type_list(p);
  if (ts.size() > 2) p.fail(p.op_off, "arith.select takes one or two types");
  const Type* t = ts.back();
  const Type* ct = ts.size() == 2 ? ts[0] : p.m.scalar(Elem::i1);
  o.operands = {use(p, ops[0], ct), use(p, ops[1], t), use(p, ops[2], t)};
  res.push_back(t);
}

void read_cast(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  want_count(p, o, ops, 1, 1);
  p.expect(Tok::Colon);
  const Type* a = parse_type(p);
  p.expect_kw("to");
  const Type* b = parse_type(p);
  o.operands.push_back(use(p, ops[0], a));
  res.push_back(b);
}

// tt.elementwise_inline_asm "asm" {attrs} %args : T -> R (reference §1.1), after its items.
void read_inline_asm(Parser& p, Op& o, const std::vector<Item>& its, Types& res) {
  for (auto& it : its)
    if (it.k == Item::K::String) {
      if (o.attrs.count("asm_string")) p.fail(it.off, fmt::format("unexpected string in '{}'", o.name));
      Attr a;
      a.kind = Attr::Kind::String;
      a.s = it.word;
      o.attrs["asm_string"] = a;
    }
  if (!o.attrs.count("asm_string")) p.fail(p.op_off, "tt.elementwise_inline_asm needs an asm string");
  apply_keywords(p, o, its);
  auto ops = operands_of(its);
  Types lhs;
  if (p.accept(Tok::Colon))
    lhs = type_list(p);
  else if (!ops.empty())
    p.expected("':' and the operand type");
  p.expect(Tok::Arrow);
  res = type_list(p);
  if (lhs.size() != ops.size())
    p.fail(p.op_off, fmt::format("{} operands but {} operand types", ops.size(), lhs.size()));
  for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(p, ops[i], lhs[i]));
}

void read_arrow(Parser& p, Op& o, Types& res) {
  auto its = items(p, o);
  if (o.code() == Opcode::tt_elementwise_inline_asm) return read_inline_asm(p, o, its, res);
  no_strings(p, its, o);
  apply_keywords(p, o, its);
  auto ops = operands_of(its);
  if (!p.accept(Tok::Colon)) p.expected("':' and the operand type");
  Types lhs = type_list(p);
  p.expect(Tok::Arrow);
  auto rhs = type_list(p);
  if (ops.empty()) p.fail(p.op_off, fmt::format("'{}' expects an operand", o.name));
  // Written types go to the leading operands (cat/join/histogram/descriptor_load write one).
  if (lhs.size() > ops.size()) p.fail(p.op_off, "more operand types than operands");
  for (size_t i = 0; i < ops.size(); ++i)
    o.operands.push_back(use(p, ops[i], i < lhs.size() ? lhs[i] : nullptr));
  if (o.code() == Opcode::tt_split) {
    if (rhs.size() != 1) p.fail(p.op_off, "tt.split takes one result type");
    res = {rhs[0], rhs[0]};
  } else {
    res = rhs;
  }
}

void read_first_type(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  want_count(p, o, ops, 2, 2);
  p.expect(Tok::Colon);
  auto ts = type_list(p);
  if (ts.size() != 2) p.fail(p.op_off, fmt::format("'{}' takes two types", o.name));
  o.operands = {use(p, ops[0], ts[0]), use(p, ops[1], ts[1])};
  res.push_back(ts[0]);
}

void read_functional(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  p.expect(Tok::Colon);
  auto in = paren_types(p);
  p.expect(Tok::Arrow);
  res = result_types(p);
  if (in.size() != ops.size())
    p.fail(p.op_off, fmt::format("{} operands but {} operand types", ops.size(), in.size()));
  for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(p, ops[i], in[i]));
}

// The result type of tt.load: the pointee with the pointer's shape.
const Type* loaded(Parser& p, const Type* t, size_t off) {
  if (!t->is_ptr()) p.fail(off, fmt::format("tt.load needs a pointer type, found {}", t->str()));
  if (t->is_block_ptr() || !t->is_tensor) return t->pointee;
  Type r = *t->pointee;
  if (r.is_tensor) p.fail(off, "tensor of block pointers is not supported");
  r.is_tensor = true;
  r.shape = t->shape;
  return p.m.intern(r);
}

void read_load(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  want_count(p, o, ops, 1, 3);
  p.expect(Tok::Colon);
  size_t ts = p.tok().off;
  const Type* pt = parse_type(p);
  const Type* r = loaded(p, pt, ts);
  o.operands.push_back(use(p, ops[0], pt));
  for (size_t i = 1; i < ops.size(); ++i) o.operands.push_back(use(p, ops[i]));
  res.push_back(r);
}

void read_no_result(Parser& p, Op& o) {
  auto ops = plain_operands(p, o);
  if (ops.empty()) p.fail(p.op_off, fmt::format("'{}' expects operands", o.name));
  p.expect(Tok::Colon);
  auto ts = type_list(p);
  Types want(ops.size(), nullptr);
  if (ts.size() == ops.size()) {
    want = ts;
  } else if (ts.size() == 2 &&
             (o.code() == Opcode::tt_descriptor_store || o.code() == Opcode::tt_descriptor_reduce)) {
    want.front() = ts[0];
    want.back() = ts[1];
  } else if (ts.size() == 1) {
    want.front() = ts[0];
  } else {
    p.fail(p.op_off, fmt::format("{} operands but {} types", ops.size(), ts.size()));
  }
  for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(p, ops[i], want[i]));
}

void read_unsplat(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  want_count(p, o, ops, 1, 1);
  p.expect(Tok::Colon);
  const Type* t = parse_type(p);
  o.operands.push_back(use(p, ops[0], t));
  res.push_back(p.m.element_of(t));
}

void read_dot(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  want_count(p, o, ops, 3, 3);
  p.expect(Tok::Colon);
  const Type* a = parse_type(p);
  p.expect(Tok::Star, " between dot operand types");
  const Type* b = parse_type(p);
  p.expect(Tok::Arrow);
  const Type* c = parse_type(p);
  o.operands = {use(p, ops[0], a), use(p, ops[1], b), use(p, ops[2], c)};
  res.push_back(c);
}

// tt.dot_scaled's operands in order a, [scale a_scale], b, [scale b_scale], c (reference §1.5);
// a missing scale is null.
std::array<std::optional<Ref>, 5> scaled_operands(const Parser& p, const std::vector<Item>& its) {
  std::vector<std::pair<Ref, bool>> seq;  // operand, follows `scale`
  bool pending_scale = false;
  for (auto& it : its) {
    if (it.k == Item::K::Keyword && it.word == "scale") {
      if (pending_scale || seq.empty()) p.fail(it.off, "misplaced 'scale'");
      pending_scale = true;
    } else if (it.k == Item::K::Operand) {
      seq.emplace_back(it.ref, pending_scale);
      pending_scale = false;
    }
  }
  if (pending_scale) p.fail(p.op_off, "'scale' without an operand");
  std::array<std::optional<Ref>, 5> v;
  size_t i = 0;
  for (size_t k = 0; k < 5; ++k)
    if (i < seq.size() && seq[i].second == (k % 2 == 1)) v[k] = seq[i++].first;
  if (!v[0] || !v[2] || !v[4] || i != seq.size())
    p.fail(p.op_off, "tt.dot_scaled expects a [scale s], b [scale s], c");
  return v;
}

// tt.dot_scaled a [scale as], b [scale bs], c lhs = t rhs = t {..} : A[, As] * B[, Bs] -> C
void read_dot_scaled(Parser& p, Op& o, Types& res) {
  auto its = items(p, o);
  no_strings(p, its, o);
  apply_keywords(p, o, its);
  auto ops = scaled_operands(p, its);
  if (!o.attrs.count("lhs") || !o.attrs.count("rhs"))
    p.fail(p.op_off, "tt.dot_scaled needs lhs = .. rhs = ..");
  Attr fa, fb;
  fa.kind = fb.kind = Attr::Kind::Bool;
  fa.b = ops[1].has_value();
  fb.b = ops[3].has_value();
  o.attrs["a_scale"] = fa;
  o.attrs["b_scale"] = fb;
  p.expect(Tok::Colon);
  std::array<const Type*, 5> ts{};
  for (size_t k = 0; k < 5; ++k) {
    if (k == 2) p.expect(Tok::Star);
    if (k == 4) p.expect(Tok::Arrow);
    if (k % 2 == 1 && !ops[k]) continue;
    if (k % 2 == 1) p.expect(Tok::Comma);
    ts[k] = parse_type(p);
  }
  for (size_t k = 0; k < 5; ++k)
    if (ops[k]) o.operands.push_back(use(p, *ops[k], ts[k]));
  res.push_back(ts[4]);
}

// tt.make_tensor_ptr / tt.advance: ... : <tensor<..>>, a block pointer.
void read_stripped_ptr(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  if (ops.empty()) p.fail(p.op_off, fmt::format("'{}' expects operands", o.name));
  p.expect(Tok::Colon);
  size_t ts = p.tok().off;
  const Type* t = parse_type(p);
  if (!t->is_block_ptr())
    p.fail(ts, fmt::format("'{}' produces a block pointer, found {}", o.name, t->str()));
  for (size_t i = 0; i < ops.size(); ++i)
    o.operands.push_back(use(p, ops[i], (i == 0 && o.code() == Opcode::tt_advance) ? t : nullptr));
  res.push_back(t);
}

void read_make_desc(Parser& p, Op& o, Types& res) {
  auto ops = plain_operands(p, o);
  if (ops.empty()) p.fail(p.op_off, "tt.make_tensor_descriptor expects operands");
  p.expect(Tok::Colon);
  const Type* base = parse_type(p);
  p.expect(Tok::Comma);
  size_t ds = p.tok().off;
  const Type* d = parse_type(p, true);
  if (d->elem != Elem::tensordesc) p.fail(ds, "expected a tensor descriptor type");
  o.operands.push_back(use(p, ops[0], base));
  for (size_t i = 1; i < ops.size(); ++i) o.operands.push_back(use(p, ops[i]));
  res.push_back(d);
}

// tt.print "prefix" {..} [: ops : types]
void read_print(Parser& p, Op& o) {
  Attr pre;
  pre.kind = Attr::Kind::String;
  pre.s = p.string();
  o.attrs["prefix"] = pre;
  if (p.at(Tok::LBrace)) attr_dict(p, o.attrs);
  if (!p.accept(Tok::Colon)) return;
  std::vector<Ref> ops{value_ref(p)};
  while (p.accept(Tok::Comma)) ops.push_back(value_ref(p));
  p.expect(Tok::Colon, " before the types of tt.print operands");
  auto ts = type_list(p);
  if (ts.size() != ops.size())
    p.fail(p.op_off, fmt::format("{} operands but {} types", ops.size(), ts.size()));
  for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(p, ops[i], ts[i]));
}

// tt.assert c, "message" : T
void read_assert(Parser& p, Op& o) {
  auto its = items(p, o);
  apply_keywords(p, o, its);
  auto ops = operands_of(its);
  want_count(p, o, ops, 1, 1);
  int strings = 0;
  for (auto& it : its)
    if (it.k == Item::K::String) {
      Attr a;
      a.kind = Attr::Kind::String;
      a.s = it.word;
      o.attrs["message"] = a;
      ++strings;
    }
  if (strings != 1) p.fail(p.op_off, "tt.assert expects one message string");
  p.expect(Tok::Colon);
  o.operands.push_back(use(p, ops[0], parse_type(p)));
}

// tt.call @f(ops) {attrs} : (A) -> R
void read_call(Parser& p, Op& o, Types& res) {
  Attr c;
  c.kind = Attr::Kind::Symbol;
  c.s = parse_symbol(p);
  o.attrs["callee"] = c;
  p.expect(Tok::LParen, " after the callee");
  std::vector<Ref> ops;
  if (!p.accept(Tok::RParen)) {
    do ops.push_back(value_ref(p));
    while (p.accept(Tok::Comma));
    p.expect(Tok::RParen, " closing call operands");
  }
  if (p.at(Tok::LBrace)) attr_dict(p, o.attrs);
  p.expect(Tok::Colon);
  auto in = paren_types(p);
  p.expect(Tok::Arrow);
  res = result_types(p);
  if (in.size() != ops.size())
    p.fail(p.op_off, fmt::format("{} operands but {} types", ops.size(), in.size()));
  for (size_t i = 0; i < ops.size(); ++i) o.operands.push_back(use(p, ops[i], in[i]));
}

// gpu.barrier and tt.grid_dependency_* (3.9) take nothing; ttg.barrier (3.7+) takes address-space
// keywords joined by '|'. Only known keywords are read, so a following op without a loc(...) is
// not swallowed.
void read_barrier(Parser& p, Op& o, size_t nres) {
  static const char* kinds[] = {"all", "local", "global_read", "global_write", "tensor_read", "tensor_write"};
  bool ttg = o.code() == Opcode::ttg_barrier;
  for (bool more = ttg; more;) {
    more = false;
    for (const char* k : kinds)
      if (p.accept_kw(k)) {
        o.attrs[k] = Attr{};
        more = p.accept(Tok::Pipe);
        break;
      }
  }
  // An operand here is an error, not the start of the next statement: one on the op's own line, or
  // (as the reader has always done) any '%' right after ttg.barrier's keywords.
  if (p.at(Tok::ValueId) && p.lexer().blank_between(ttg ? p.tok().off : p.prev_end(), p.tok().off))
    p.fail(p.tok().off, fmt::format("'{}' takes no operands", o.name));
  if (p.at(Tok::LBrace)) attr_dict(p, o.attrs);
  if (nres) p.fail(p.op_off, fmt::format("'{}' has no results", o.name));
}

}  // namespace

void parse_custom(Parser& p, Op& o, std::vector<const Type*>& res, size_t nres) {
  assert(o.def && res.empty());
  switch (o.def->syntax) {
    case Syntax::SameType: return read_same_type(p, o, res);
    case Syntax::Compare: return read_compare(p, o, res);
    case Syntax::Select: return read_select(p, o, res);
    case Syntax::Cast: return read_cast(p, o, res);
    case Syntax::Arrow: return read_arrow(p, o, res);
    case Syntax::FirstType: return read_first_type(p, o, res);
    case Syntax::Functional: return read_functional(p, o, res);
    case Syntax::Load: return read_load(p, o, res);
    case Syntax::NoResult: return read_no_result(p, o);
    case Syntax::Unsplat: return read_unsplat(p, o, res);
    case Syntax::Dot: return read_dot(p, o, res);
    case Syntax::DotScaled: return read_dot_scaled(p, o, res);
    case Syntax::StrippedPtr: return read_stripped_ptr(p, o, res);
    case Syntax::MakeDesc: return read_make_desc(p, o, res);
    case Syntax::Print: return read_print(p, o);
    case Syntax::Assert: return read_assert(p, o);
    case Syntax::Call: return read_call(p, o, res);
    case Syntax::Return: return read_return(p, o);
    case Syntax::For: return read_for(p, o, res);
    case Syntax::If: return read_if(p, o, res);
    case Syntax::While: return read_while(p, o, res);
    case Syntax::Condition: return read_condition(p, o);
    case Syntax::Branch: return read_branch(p, o);
    case Syntax::CondBranch: return read_cond_branch(p, o);
    case Syntax::Barrier: return read_barrier(p, o, nres);
    case Syntax::GenericOnly:
      p.fail(p.op_off, fmt::format("'{}' is only written in the generic form \"{}\"(...)", o.name, o.name));
  }
}

}  // namespace tilescope::ir
