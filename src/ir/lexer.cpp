// The TTIR lexer (see lexer.h). Token spellings follow MLIR's lexer (reference §0.4), with two
// differences the reader's language already had: a sign directly before a number is part of the
// number (`-1`, `-.5`, `+2`), and `1e5` is a float without a '.'.
#include "lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "tilescope/ir/diag.h"

namespace tilescope::ir {

namespace {

Tok punctuation(char c) {
  switch (c) {
    case '(': return Tok::LParen;
    case ')': return Tok::RParen;
    case '[': return Tok::LSquare;
    case ']': return Tok::RSquare;
    case '{': return Tok::LBrace;
    case '}': return Tok::RBrace;
    case '<': return Tok::Less;
    case '>': return Tok::Greater;
    case ':': return Tok::Colon;
    case ',': return Tok::Comma;
    case '=': return Tok::Equal;
    case '*': return Tok::Star;
    case '|': return Tok::Pipe;
    case '?': return Tok::Question;
    default: return Tok::Unknown;
  }
}

}  // namespace

Token Lexer::within(const Token& t, size_t off) const {
  assert(off >= t.off && off <= t_.size());
  int line = t.line;
  size_t line_start = t.off - static_cast<size_t>(t.col - 1);
  for (const char* p = t_.data() + t.off;
       (p = static_cast<const char*>(std::memchr(p, '\n', t_.data() + off - p)));) {
    ++line;
    line_start = static_cast<size_t>(++p - t_.data());
  }
  return scan(off, line, line_start);
}

// Inlined into scan: one call per token.
[[gnu::always_inline]] inline Tok Lexer::kind_at(size_t p, size_t& e) const {
  const size_t n = t_.size();
  char c = t_[p];
  auto c1 = [&] { return p + 1 < n ? t_[p + 1] : '\0'; };
  e = p + 1;
  switch (c) {
    case '%': e = suffix_id_end(p + 1, true); return Tok::ValueId;
    case '^': e = suffix_id_end(p + 1, true); return Tok::BlockId;
    case '#': e = suffix_id_end(p + 1, true); return Tok::HashId;
    case '@': e = suffix_id_end(p + 1, false); return Tok::SymbolId;
    case '!':
      if (is_ident_start(c1()))
        for (e = p + 2; e < n && is_ident_char(t_[e]);) ++e;
      return Tok::BangId;
    case '"': e = string_end(p); return Tok::String;
    case '-':
    case '+':
      if (c == '-' && c1() == '>') {
        e = p + 2;
        return Tok::Arrow;
      }
      return number(p, e);
    default:
      if (is_digit(c)) return number(p, e);
      if (is_ident_start(c)) {
        while (e < n && is_ident_char(t_[e])) ++e;
        return Tok::Ident;
      }
      return punctuation(c);
  }
}

Token Lexer::scan(size_t p, int line, size_t line_start) const {
  const size_t n = t_.size();
  while (p < n) {  // whitespace and comments
    char c = t_[p];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++p;
    } else if (c == '\n') {
      ++line;
      line_start = ++p;
    } else if (c == '/' && p + 1 < n && t_[p + 1] == '/') {
      const void* nl = std::memchr(t_.data() + p, '\n', n - p);
      p = nl ? static_cast<size_t>(static_cast<const char*>(nl) - t_.data()) : n;
    } else {
      break;
    }
  }
  Token tok;
  tok.off = p;
  tok.line = line;
  tok.col = static_cast<int>(p - line_start + 1);
  size_t e = p;
  if (p < n) tok.kind = kind_at(p, e);
  assert(e > p || p == n);
  tok.text = std::string_view(t_.data() + p, e - p);
  return tok;
}

// MLIR suffix-id after '%', '^', '#': digits only when it starts with a digit (`%12`), else
// [A-Za-z0-9_$.-]+ (`%c-1_i32`, `%foo.x`). Symbols take suffix characters throughout.
size_t Lexer::suffix_id_end(size_t p, bool digits_only_after_digit) const {
  const size_t n = t_.size();
  if (digits_only_after_digit && p < n && is_digit(t_[p])) {
    while (p < n && is_digit(t_[p])) ++p;
    return p;
  }
  while (p < n && is_suffix_char(t_[p])) ++p;
  return p;
}

// A number at `p` (a digit or a sign): [-+] then 0x hexdigits, or digits with an optional fraction
// and exponent (then a float); `0x` without a hex digit is the integer 0. A lone sign is Minus/Plus.
Tok Lexer::number(size_t p, size_t& e) const {
  const size_t n = t_.size();
  auto at = [&](size_t i) { return i < n ? t_[i] : '\0'; };
  size_t q = p;
  if (at(q) == '-' || at(q) == '+') ++q;
  if (at(q) == '0' && (at(q + 1) == 'x' || at(q + 1) == 'X')) {
    if (!is_hex(at(q + 2))) {
      e = q + 1;
      return Tok::Integer;
    }
    for (q += 2; is_hex(at(q));) ++q;
    e = q;
    return Tok::Integer;
  }
  size_t digits = q;
  while (is_digit(at(q))) ++q;
  bool fraction = at(q) == '.', exponent = false;
  if (fraction)
    for (++q; is_digit(at(q));) ++q;
  if (at(q) == 'e' || at(q) == 'E') {
    size_t r = q + 1;
    if (at(r) == '-' || at(r) == '+') ++r;
    if ((exponent = is_digit(at(r))))
      for (q = r; is_digit(at(q));) ++q;
  }
  if (q == digits && !fraction) {  // a sign and no number
    e = p + 1;
    return t_[p] == '-' ? Tok::Minus : Tok::Plus;
  }
  e = q;
  return fraction || exponent ? Tok::Float : Tok::Integer;
}

size_t Lexer::string_end(size_t p) const {
  const size_t n = t_.size();
  for (size_t q = p + 1; q < n; ++q) {
    if (t_[q] == '"') return q + 1;
    if (t_[q] == '\\') ++q;
  }
  return n;  // unterminated: string_value reports it
}

std::string Lexer::decode_string(size_t off, size_t* end) const {
  assert(t_[off] == '"');
  const size_t n = t_.size();
  size_t p = off + 1;
  size_t plain = p;  // no escape up to here
  while (plain < n && t_[plain] != '"' && t_[plain] != '\\') ++plain;
  if (plain < n && t_[plain] == '"') {  // the common case: nothing to decode
    if (end) *end = plain + 1;
    return std::string(t_.substr(p, plain - p));
  }
  std::string out(t_.substr(p, plain - p));
  p = plain;
  for (;;) {
    if (p >= n) fail(off, "unterminated string");
    char c = t_[p++];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (p >= n) fail(off, "unterminated string");
    char e = t_[p++];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      default:
        // MLIR prints other bytes as two hex digits (`\0A`).
        if (is_hex(e) && p < n && is_hex(t_[p])) {
          out += static_cast<char>(hex_val(e) * 16 + hex_val(t_[p++]));
        } else {
          fail(p - 2, fmt::format("invalid escape '\\{}' in string", e == '\0' ? '0' : e));
        }
    }
  }
  assert(p == string_end(off));
  if (end) *end = p;
  return out;
}

size_t Lexer::group_end(size_t off) const {
  const size_t n = t_.size();
  assert(off < n && std::strchr("([{<", t_[off]));
  std::string stack;
  size_t p = off;
  do {
    if (p >= n) fail(off, fmt::format("unterminated '{}'", t_[off]));
    char c = t_[p];
    if (c == '"') {
      decode_string(p, &p);
      continue;
    }
    ++p;
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (stack.size() >= kMaxDepth) fail(p - 1, "nesting too deep");
      stack += c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>';
    } else if (c == ')' || c == ']' || c == '}' || (c == '>' && !(p >= 2 && t_[p - 2] == '-'))) {
      if (stack.empty() || stack.back() != c) fail(p - 1, fmt::format("unbalanced '{}'", c));
      stack.pop_back();
    }
  } while (!stack.empty());
  return p;
}

int64_t Lexer::int_value(std::string_view s, size_t off) const {
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    ++i;
  }
  uint64_t v = 0;
  if (s.size() > i + 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    if (s.size() - i - 2 > 16) fail(off, "integer literal out of range");
    for (i += 2; i < s.size(); ++i) v = v * 16 + hex_val(s[i]);
  } else {
    assert(i < s.size());
    for (; i < s.size(); ++i) {
      assert(is_digit(s[i]));
      uint64_t d = s[i] - '0';
      if (v > (UINT64_MAX - d) / 10) fail(off, "integer literal out of range");
      v = v * 10 + d;
    }
  }
  if (neg) {
    if (v > uint64_t(1) << 63) fail(off, "integer literal out of range");
    return static_cast<int64_t>(~v + 1);
  }
  return static_cast<int64_t>(v);
}

std::string Lexer::describe(size_t off) const {
  if (off >= t_.size()) return "end of input";
  size_t e = off;
  if (is_suffix_char(t_[e])) {
    while (e < t_.size() && e - off < 24 && is_suffix_char(t_[e])) ++e;
  } else {
    ++e;
  }
  std::string s(t_.substr(off, e - off));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) >= 127) c = '?';
  return "'" + s + "'";
}

bool Lexer::blank_between(size_t a, size_t b) const {
  for (size_t i = a; i < b && i < t_.size(); ++i)
    if (t_[i] != ' ' && t_[i] != '\t') return false;
  return true;
}

TextPos Lexer::pos_of(size_t off) const {
  off = std::min(off, t_.size());
  int line = 1;
  size_t line_start = 0;
  for (const char* p = t_.data();
       (p = static_cast<const char*>(std::memchr(p, '\n', t_.data() + off - p)));) {
    ++line;
    line_start = static_cast<size_t>(++p - t_.data());
  }
  return TextPos{line, static_cast<int>(off - line_start + 1)};
}

void Lexer::fail(size_t off, const std::string& msg) const { fail_at(file_, pos_of(off), msg); }

}  // namespace tilescope::ir
