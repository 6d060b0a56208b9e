// Attributes (see parse_attr.h).
#include "parse_attr.h"

#include <fmt/format.h>

#include <bit>
#include <cassert>
#include <charconv>

#include "parse_type.h"
#include "parser.h"

namespace tilescope::ir {

namespace {

// ---------------------------------------------------------------- numbers

struct Num {
  bool is_float = false, is_hex = false;
  int64_t i = 0;
  double f = 0;
  size_t off = 0;
};

// Whether the token is read as a number where an attribute value or a dense element may be one:
// a spelling that starts with a digit or a sign (a sign alone is then "expected a number").
bool at_number(const Parser& p) {
  Tok k = p.tok().kind;
  return k == Tok::Integer || k == Tok::Float || k == Tok::Minus || k == Tok::Plus || k == Tok::Arrow;
}

Num parse_number(Parser& p) {
  const Token& t = p.tok();
  Num n;
  n.off = t.off;
  if (t.kind == Tok::Float) {
    std::string_view txt = t.text[0] == '+' ? t.text.substr(1) : t.text;
    double v = 0;
    auto r = std::from_chars(txt.data(), txt.data() + txt.size(), v);
    if (r.ec != std::errc() || r.ptr != txt.data() + txt.size()) p.fail(t.off, "malformed float literal");
    n.is_float = true;
    n.f = v;
    p.take();
    return n;
  }
  std::string_view digits = t.text.substr(t.text.empty() || is_digit(t.text[0]) ? 0 : 1);
  n.is_hex = t.kind == Tok::Integer && digits.size() > 1 && (digits[1] == 'x' || digits[1] == 'X');
  n.i = p.parse_int("a number");
  return n;
}

int64_t sext(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t m = uint64_t(1) << (bits - 1);
  v &= (uint64_t(1) << bits) - 1;
  return static_cast<int64_t>((v ^ m) - m);
}
uint64_t float_bits(Elem e, double v) {
  if (e == Elem::f64) return std::bit_cast<uint64_t>(v);
  if (e == Elem::f32) return std::bit_cast<uint32_t>(static_cast<float>(v));
  return float_to_bits(e, v);
}
double float_value(Elem e, uint64_t bits) {
  if (e == Elem::f64) return std::bit_cast<double>(bits);
  if (e == Elem::f32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
  return float_from_bits(e, bits);
}

// A scalar attribute value typed by `t` (`3 : i32`, `0x7E00 : f16`, `1.5 : f32`).
Attr typed_number(const Parser& p, const Num& n, const Type* t) {
  Attr a;
  a.type = t;
  int bits = elem_bits(t->elem);
  if (is_int(t->elem)) {
    if (n.is_float) p.fail(n.off, fmt::format("float literal for integer type {}", t->str()));
    a.kind = Attr::Kind::Int;
    a.i = t->elem == Elem::i1 ? (n.i & 1) : sext(static_cast<uint64_t>(n.i), bits);
    if (!n.is_hex && bits < 64 && t->elem != Elem::i1 &&
        (n.i < -(int64_t(1) << (bits - 1)) || n.i >= (int64_t(1) << bits)))
      p.fail(n.off, fmt::format("integer {} does not fit {}", n.i, t->str()));
    return a;
  }
  if (is_float(t->elem)) {
    a.kind = Attr::Kind::Float;
    if (n.is_hex) {  // hex spells the float's bits
      uint64_t b = static_cast<uint64_t>(n.i);
      if (bits < 64 && (b >> bits) != 0) p.fail(n.off, fmt::format("hex literal too wide for {}", t->str()));
      a.fbits = b;
      a.f = float_value(t->elem, b);
    } else {
      a.f = n.is_float ? n.f : static_cast<double>(n.i);
      a.fbits = float_bits(t->elem, a.f);
    }
    return a;
  }
  p.fail(n.off, fmt::format("numeric literal of non-numeric type {}", t->str()));
}

// A number with an optional type; untyped numbers keep their spelling's kind.
Attr number_attr(Parser& p) {
  Num n = parse_number(p);
  if (p.accept(Tok::Colon)) return typed_number(p, n, parse_type(p));
  Attr a;
  if (n.is_float) {
    a.kind = Attr::Kind::Float;
    a.f = n.f;
    a.fbits = std::bit_cast<uint64_t>(n.f);
  } else {
    a.kind = Attr::Kind::Int;
    a.i = n.i;
  }
  return a;
}

// ---------------------------------------------------------------- dense<...>

struct DenseLit {
  Num n;
  int boolv = -1;  // 0 / 1 for false / true
  size_t off;
};

// One element of a dense literal, encoded little-endian into `out` (reference: i1 one byte,
// f16/bf16/fp8 as bits, f32 float, f64 double).
void dense_elem(const Parser& p, const DenseLit& l, Elem e, std::vector<uint8_t>& out) {
  uint64_t bits = 0;
  if (l.boolv >= 0) {
    if (!is_int(e)) p.fail(l.off, "boolean literal in a non-integer dense attribute");
    bits = static_cast<uint64_t>(l.boolv);
  } else if (is_int(e)) {
    if (l.n.is_float) p.fail(l.off, "float literal in an integer dense attribute");
    bits = static_cast<uint64_t>(l.n.i);
    if (e == Elem::i1) bits &= 1;
  } else if (is_float(e)) {
    if (l.n.is_hex) {
      bits = static_cast<uint64_t>(l.n.i);
      if (elem_bits(e) < 64 && (bits >> elem_bits(e)) != 0)
        p.fail(l.off, "hex literal too wide for the element");
    } else {
      bits = float_bits(e, l.n.is_float ? l.n.f : static_cast<double>(l.n.i));
    }
  } else {
    p.fail(l.off, "dense attribute of non-numeric elements");
  }
  for (int k = 0; k < elem_bytes(e); ++k) out.push_back(static_cast<uint8_t>(bits >> (8 * k)));
}

// A nested list `[[1, 2], [3, 4]]` or a single element, flattened into `out`.
void dense_list(Parser& p, std::vector<DenseLit>& out) {
  Parser::Depth d(p, p.tok().off);
  if (p.accept(Tok::LSquare)) {
    if (p.accept(Tok::RSquare)) return;
    do dense_list(p, out);
    while (p.accept(Tok::Comma));
    p.expect(Tok::RSquare, " in a dense literal");
    return;
  }
  DenseLit l;
  l.off = p.tok().off;
  if (p.accept_kw("true")) {
    l.boolv = 1;
  } else if (p.accept_kw("false")) {
    l.boolv = 0;
  } else if (p.at(Tok::LParen)) {
    p.fail(l.off, "complex dense literals are not supported");
  } else {
    if (!at_number(p)) p.expected("a dense element");
    l.n = parse_number(p);
  }
  out.push_back(l);
}

// `dense<"0x0100...">`: the raw bytes of one element (a splat) or of all of them.
void dense_hex(const Parser& p, const std::string& hex, size_t hs, Attr& a) {
  Elem e = a.type->elem;
  int64_t eb = elem_bytes(e), numel = a.type->numel();
  if (hex.size() < 2 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X') || hex.size() % 2)
    p.fail(hs, "malformed hex dense literal");
  std::vector<uint8_t> bytes;
  for (size_t i = 2; i < hex.size(); i += 2) {
    if (!is_hex(hex[i]) || !is_hex(hex[i + 1])) p.fail(hs, "malformed hex dense literal");
    bytes.push_back(static_cast<uint8_t>(hex_val(hex[i]) * 16 + hex_val(hex[i + 1])));
  }
  if (static_cast<int64_t>(bytes.size()) == eb) {
    a.dense.splat = true;
  } else if (static_cast<int64_t>(bytes.size()) == eb * numel) {
    a.dense.splat = false;
  } else {
    p.fail(hs,
           fmt::format("hex dense literal has {} bytes, expected {} or {}", bytes.size(), eb, eb * numel));
  }
  if (e == Elem::i1)
    for (auto& b : bytes) b &= 1;
  a.dense.bytes = std::move(bytes);
}

// `dense<...> : tensor<...>`, after the keyword `dense` (at `s`).
Attr parse_dense(Parser& p, size_t s) {
  p.expect(Tok::Less, " after dense");
  std::vector<DenseLit> lits;
  std::string hex;
  bool bracketed = p.at(Tok::LSquare);
  size_t hs = p.tok().off;
  if (p.at(Tok::String)) {
    hex = p.string();
  } else if (!p.at(Tok::Greater)) {
    dense_list(p, lits);
  }
  p.expect(Tok::Greater, " closing dense<");
  p.expect(Tok::Colon, " and the type of a dense attribute");
  size_t ts = p.tok().off;
  const Type* t = parse_type(p);
  if (!t->is_tensor) p.fail(ts, "dense attribute type must be a tensor");
  if (!is_int(t->elem) && !is_float(t->elem)) p.fail(ts, "dense attribute of non-numeric elements");
  Attr a;
  a.kind = Attr::Kind::Dense;
  a.type = a.dense.type = t;
  if (!hex.empty()) {
    dense_hex(p, hex, hs, a);
    return a;
  }
  int64_t numel = t->numel();
  if (lits.empty()) p.fail(s, "empty dense attribute");
  if (!bracketed && lits.size() == 1) {
    a.dense.splat = true;
  } else if (static_cast<int64_t>(lits.size()) == numel) {
    a.dense.splat = false;
  } else {
    p.fail(s,
           fmt::format("dense attribute has {} elements, its type {} has {}", lits.size(), t->str(), numel));
  }
  for (auto& l : lits) dense_elem(p, l, t->elem, a.dense.bytes);
  return a;
}

// ---------------------------------------------------------------- other forms

// `array<i32: 1, 2>` (integers or booleans); another element type is kept as text (no TTIR op reads
// one).
Attr parse_array(Parser& p) {
  p.expect(Tok::Less, " after array");
  Attr a;
  a.kind = Attr::Kind::IntArray;
  Parser::Mark start = p.mark();
  const Type* t = parse_type(p);
  if (t->is_tensor || !is_int(t->elem)) {  // up to the first '>' outside a <...>, like a dialect body
    std::string_view text = p.lexer().text();
    size_t q = start.tok.off;
    while (q < text.size() && text[q] != '>') q = text[q] == '<' ? p.lexer().group_end(q) : q + 1;
    p.rewind(start);
    p.resume_at(q);
    a.kind = Attr::Kind::String;
    a.s = "array<" + std::string(p.raw(start.tok.off, q)) + ">";
    p.expect(Tok::Greater);
    return a;
  }
  a.type = t;
  if (p.accept(Tok::Colon)) {
    do {
      if (p.accept_kw("true"))
        a.ints.push_back(1);
      else if (p.accept_kw("false"))
        a.ints.push_back(0);
      else
        a.ints.push_back(p.parse_int("an array element"));
    } while (p.accept(Tok::Comma));
  }
  p.expect(Tok::Greater, " closing array<");
  return a;
}

// `[a, b, ...]`: an IntArray when every element is an integer, else its text.
Attr list_attr(Parser& p, size_t s) {
  p.expect(Tok::LSquare);
  std::vector<Attr> items;
  bool all_int = true;
  if (!p.accept(Tok::RSquare)) {
    do {
      items.push_back(parse_attr(p));
      if (items.back().kind != Attr::Kind::Int) all_int = false;
    } while (p.accept(Tok::Comma));
    p.expect(Tok::RSquare, " closing a list attribute");
  }
  Attr a;
  if (all_int) {
    a.kind = Attr::Kind::IntArray;
    for (auto& it : items) a.ints.push_back(it.i);
  } else {
    a.kind = Attr::Kind::String;
    a.s = std::string(p.raw(s, p.prev_end()));
  }
  return a;
}

// `#name` or `#dialect.attr<...>`: kept as text; a use of an attribute alias is its definition's text.
Attr hash_attr(Parser& p, size_t s) {
  Token h = p.take();
  if (h.id().empty()) p.expected("an attribute alias or dialect attribute");
  if (p.at(Tok::Less) && p.adjacent()) p.skip_group();
  Attr a;
  a.kind = Attr::Kind::String;
  a.s = std::string(p.raw(s, p.prev_end()));
  auto it = p.attr_alias.find(std::string(h.id()));
  if (it != p.attr_alias.end() && a.s == h.text) a.s = it->second;
  return a;
}

// An attribute that starts with an identifier: true/false, unit, dense<..>, array<..>, a type, an
// opaque `name<...>` / `name(...)` (affine_map<..>, overflow<..>), or an enum keyword.
Attr word_attr(Parser& p, size_t s) {
  Attr a;
  if (p.at_kw("true") || p.at_kw("false")) {
    a.kind = Attr::Kind::Bool;
    a.b = p.take().text == "true";
    a.type = p.m.scalar(Elem::i1);
    return a;
  }
  if (p.accept_kw("unit")) return a;
  if (p.accept_kw("dense")) return parse_dense(p, s);
  if (p.accept_kw("array")) return parse_array(p);
  if (p.at_kw("tensor") || elem_from_mlir(p.tok().text)) {
    a.kind = Attr::Kind::Type;
    a.type = parse_type(p);
    return a;
  }
  std::string w = p.ident();
  if ((p.at(Tok::Less) || p.at(Tok::LParen)) && p.adjacent()) {
    p.skip_group();
    a.kind = Attr::Kind::String;
    a.s = std::string(p.raw(s, p.prev_end()));
    return a;
  }
  a.kind = Attr::Kind::Keyword;
  a.s = w;
  return a;
}

}  // namespace

Attr parse_attr(Parser& p) {
  size_t s = p.tok().off;
  Parser::Depth d(p, s);
  Attr a;
  switch (p.tok().kind) {
    case Tok::String:
      a.kind = Attr::Kind::String;
      a.s = p.string();
      return a;
    case Tok::LSquare: return list_attr(p, s);
    case Tok::LBrace:
      a.kind = Attr::Kind::String;
      a.s = p.skip_group();
      return a;
    case Tok::HashId: return hash_attr(p, s);
    case Tok::SymbolId:
      a.kind = Attr::Kind::Symbol;
      a.s = parse_symbol(p);
      return a;
    case Tok::Integer:
    case Tok::Float:
    case Tok::Minus:
    case Tok::Plus:
    case Tok::Arrow: return number_attr(p);
    case Tok::BangId:
    case Tok::Less:
      a.kind = Attr::Kind::Type;
      a.type = parse_type(p);
      return a;
    case Tok::Ident: return word_attr(p, s);
    case Tok::End:
    case Tok::ValueId:
    case Tok::BlockId:
    case Tok::LParen:
    case Tok::RParen:
    case Tok::RSquare:
    case Tok::RBrace:
    case Tok::Greater:
    case Tok::Colon:
    case Tok::Comma:
    case Tok::Equal:
    case Tok::Star:
    case Tok::Pipe:
    case Tok::Question:
    case Tok::Unknown: break;
  }
  p.expected("an attribute value");
}

void attr_dict(Parser& p, std::map<std::string, Attr>& out) {
  p.expect(Tok::LBrace);
  if (p.accept(Tok::RBrace)) return;
  do {
    size_t ks = p.tok().off;
    std::string k = p.at(Tok::String) ? p.string() : p.ident("an attribute name");
    Attr v;
    if (p.accept(Tok::Equal)) v = parse_attr(p);
    if (!out.emplace(k, std::move(v)).second) p.fail(ks, fmt::format("duplicate attribute '{}'", k));
  } while (p.accept(Tok::Comma));
  p.expect(Tok::RBrace, " closing an attribute dictionary");
}

std::string parse_symbol(Parser& p) {
  if (!p.at(Tok::SymbolId)) p.expected("a symbol '@name'");
  Token t = p.take();
  if (!t.id().empty()) return std::string(t.id());
  if (p.at(Tok::String) && p.adjacent()) return p.string();  // `@"name"`
  p.expected("a symbol name");
}

}  // namespace tilescope::ir
