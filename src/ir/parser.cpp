// The reader's token cursor (see parser.h).
#include "parser.h"

#include <fmt/format.h>

#include <cassert>

namespace tilescope::ir {

namespace {

const char* spelling(Tok k) {
  switch (k) {
    case Tok::Arrow: return "->";
    case Tok::LParen: return "(";
    case Tok::RParen: return ")";
    case Tok::LSquare: return "[";
    case Tok::RSquare: return "]";
    case Tok::LBrace: return "{";
    case Tok::RBrace: return "}";
    case Tok::Less: return "<";
    case Tok::Greater: return ">";
    case Tok::Colon: return ":";
    case Tok::Comma: return ",";
    case Tok::Equal: return "=";
    case Tok::Star: return "*";
    case Tok::Pipe: return "|";
    case Tok::Question: return "?";
    case Tok::Minus: return "-";
    case Tok::Plus: return "+";
    case Tok::End:
    case Tok::Ident:
    case Tok::ValueId:
    case Tok::BlockId:
    case Tok::SymbolId:
    case Tok::HashId:
    case Tok::BangId:
    case Tok::Integer:
    case Tok::Float:
    case Tok::String:
    case Tok::Unknown: break;
  }
  assert(false && "expect() is for punctuation");
  return "?";
}

}  // namespace

Parser::Parser(std::string_view text, const std::string& file, Module& module)
    : m(module), lex_(text, file), tok_(lex_.first()) {}

void Parser::expected_punctuation(Tok k, std::string_view ctx) const {
  expected(fmt::format("'{}'{}", spelling(k), ctx));
}

void Parser::expect_kw(std::string_view w) {
  if (!accept_kw(w)) expected(fmt::format("'{}'", w));
}

void Parser::resume_at(size_t off) {
  assert(off > tok_.off);
  prev_end_ = off;
  tok_ = lex_.within(tok_, off);
}

void Parser::rewind(const Mark& mk) {
  tok_ = mk.tok;
  prev_ = mk.prev;
  prev_end_ = mk.prev_end;
}

std::string Parser::ident(const char* what) {
  if (!at(Tok::Ident)) expected(what);
  return std::string(take().text);
}

std::string Parser::string() {
  if (!at(Tok::String)) expected("a string");
  std::string s = lex_.string_value(tok_);
  take();
  return s;
}

int64_t Parser::parse_int(const char* what) {
  if (tok_.kind == Tok::Integer) {
    int64_t v = lex_.int_value(tok_.text, tok_.off);
    take();
    return v;
  }
  if (tok_.kind != Tok::Float) expected(what);
  // A float spelling (`1.5`, `2e3`): the integer is its sign and leading digits; the rest is read next.
  std::string_view s = tok_.text;
  size_t sign = s[0] == '-' || s[0] == '+' ? 1 : 0;
  size_t n = sign;
  while (n < s.size() && is_digit(s[n])) ++n;
  if (n == sign) expected(what);
  int64_t v = lex_.int_value(s.substr(0, n), tok_.off);
  resume_at(tok_.off + n);
  return v;
}

int Parser::small_int(const char* what, int64_t lo, int64_t hi) {
  size_t s = tok_.off;
  int64_t v = parse_int(what);
  if (v < lo || v > hi) fail(s, fmt::format("{} {} out of range [{}, {}]", what, v, lo, hi));
  return static_cast<int>(v);
}

std::string Parser::skip_group() {
  size_t s = tok_.off;
  size_t e = lex_.group_end(s);
  resume_at(e);
  return std::string(raw(s, e));
}

void Parser::expected(const std::string& what) const {
  fail(tok_.off, fmt::format("expected {}, found {}", what, lex_.describe(tok_.off)));
}

Parser::Depth::Depth(Parser& p, size_t off) : p_(p) {
  if (++p_.depth_ > kMaxDepth) p_.fail(off, fmt::format("nesting deeper than {} levels", kMaxDepth));
}

}  // namespace tilescope::ir
