// The TTIR lexer: MLIR's token grammar (reference §0.4) as the reader needs it. Private to src/ir.
//
// The lexer is a pure function of a position: `first()` and `after(t)` return tokens without
// changing any state, so the reader can look ahead and re-read from inside a token where MLIR's
// grammar is not context-free (`16x32xf32` dimension lists, integer prefixes of float spellings;
// see Parser). Whitespace and `//` comments are skipped. Bad bytes never stop it: a byte that starts
// no token is an `Unknown` token and the reader reports it where it expected something else.
// There is no `::` token: no rule of the TTIR grammar reads one (MLIR's lexer has none either), and
// `%a::` must stay "expected ..., found ':'" as before.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tilescope/ir/ir.h"

namespace tilescope::ir {

/// Nesting bound of the reader (types, attributes, locations, regions, groups): no input can
/// overflow the stack.
inline constexpr int kMaxDepth = 256;

enum class Tok : uint8_t {
  End,       // end of input (text empty, at the input's end)
  Ident,     // bare identifier [A-Za-z_][A-Za-z0-9_$.]*: op names, keywords, types
  ValueId,   // %name: SSA value; the name is empty when '%' is not followed by one
  BlockId,   // ^name: block label
  SymbolId,  // @name: symbol; '@' alone (name empty) is followed by a quoted name, `@"f"`
  HashId,    // #name: attribute / location alias, dialect attribute, result number (`%q#1`)
  BangId,    // !name: dialect type (`!tt.ptr`); the name is empty when no identifier follows
  Integer,   // [-+]digits, [-+]0x hexdigits
  Float,     // [-+]digits[.digits][e[-+]digits] with a '.' or an exponent (may be malformed: `-.`)
  String,    // "..." with escapes, quotes included; may be unterminated (decoded when read)
  Arrow,     // ->
  LParen,    // (
  RParen,    // )
  LSquare,   // [
  RSquare,   // ]
  LBrace,    // {
  RBrace,    // }
  Less,      // <
  Greater,   // >
  Colon,     // :
  Comma,     // ,
  Equal,     // =
  Star,      // *
  Pipe,      // |
  Question,  // ?
  Minus,     // - not starting a number or an arrow
  Plus,      // + not starting a number
  Unknown,   // one byte that starts no token
};

/// A token: its kind, its spelling (sigils and quotes included) and where it starts.
struct Token {
  Tok kind = Tok::End;
  std::string_view text;
  size_t off = 0;  // byte offset of `text` in the input
  int line = 1;    // 1-based line of the first byte
  int col = 1;     // 1-based column (in bytes) of the first byte

  size_t end() const { return off + text.size(); }
  /// The name after the sigil of ValueId, BlockId, SymbolId, HashId and BangId tokens.
  std::string_view id() const { return text.substr(1); }
  bool is_kw(std::string_view w) const { return kind == Tok::Ident && text == w; }
};

/// MLIR identifier characters (reference §0.4), ASCII only.
namespace char_class {
inline constexpr uint8_t kIdentStart = 1, kIdent = 2, kSuffix = 4, kHex = 8;
inline constexpr auto kTable = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), digit = c >= '0' && c <= '9';
    bool ident = alpha || digit || c == '_' || c == '$' || c == '.';
    t[c] = static_cast<uint8_t>((alpha || c == '_' ? kIdentStart : 0) | (ident ? kIdent : 0) |
                                (ident || c == '-' ? kSuffix : 0) |
                                (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ? kHex : 0));
  }
  return t;
}();
inline bool has(char c, uint8_t k) { return (kTable[static_cast<unsigned char>(c)] & k) != 0; }
}  // namespace char_class

inline bool is_ident_start(char c) { return char_class::has(c, char_class::kIdentStart); }  // [A-Za-z_]
inline bool is_ident_char(char c) { return char_class::has(c, char_class::kIdent); }        // [A-Za-z0-9_$.]
inline bool is_suffix_char(char c) { return char_class::has(c, char_class::kSuffix); }      // [A-Za-z0-9_$.-]
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_hex(char c) { return char_class::has(c, char_class::kHex); }
inline int hex_val(char c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }

class Lexer {
 public:
  /// `file` names the input in errors; both must outlive the lexer.
  Lexer(std::string_view text, const std::string& file) : t_(text), file_(file) {}

  std::string_view text() const { return t_; }
  Token first() const { return scan(0, 1, 0); }
  /// The token following `t`.
  Token after(const Token& t) const {
    // Only strings span lines: after any other token the line is the token's own.
    if (t.kind == Tok::String) return within(t, t.end());
    return scan(t.end(), t.line, t.off - static_cast<size_t>(t.col - 1));
  }
  /// The token starting at or after `off`, an offset at or after the start of `t` (re-reading
  /// part of a token, or going on after text read byte by byte).
  Token within(const Token& t, size_t off) const;

  /// The text of a String token with its escapes decoded (`\n \t \" \\` and MLIR's two-hex-digit
  /// `\0A`). Throws "unterminated string" / "invalid escape" errors located in the token.
  std::string string_value(const Token& t) const { return decode_string(t.off, nullptr); }
  /// The end of the balanced (), [], {} or <> group that opens at `off`: the body of a dialect
  /// attribute or type (`#llvm.loop_annotation<...>`, `overflow<nsw>`), scanned byte by byte as
  /// MLIR scans dialect bodies. Strings inside are checked; a '>' right after '-' does not close.
  /// Throws "unterminated", "unbalanced" and "nesting too deep" errors.
  size_t group_end(size_t off) const;
  /// The value of an integer spelling ([-+]digits or [-+]0x hex) at `off`; throws "integer literal
  /// out of range" past 64 bits (a negative value down to -2^63; hex up to 16 digits, as bits).
  int64_t int_value(std::string_view spelling, size_t off) const;

  /// What the input shows at `off` for "expected X, found Y": "'name'" (a run of up to 24 suffix
  /// characters, or one byte; unprintable bytes as '?') or "end of input".
  std::string describe(size_t off) const;
  /// Whether only spaces and tabs lie in [a, b).
  bool blank_between(size_t a, size_t b) const;
  /// 1-based line:col of a byte offset (clamped to the input); counts lines, for errors only.
  TextPos pos_of(size_t off) const;
  [[noreturn]] void fail(size_t off, const std::string& msg) const;

 private:
  // Lex the token at or after `off`; `line` and `line_start` describe `off`.
  Token scan(size_t p, int line, size_t line_start) const;
  // The kind of the token starting at `p` (not whitespace); `e` receives its end.
  Tok kind_at(size_t p, size_t& e) const;
  Tok number(size_t p, size_t& e) const;
  size_t string_end(size_t p) const;
  std::string decode_string(size_t off, size_t* end) const;
  size_t suffix_id_end(size_t p, bool digits_only_after_digit) const;

  std::string_view t_;
  const std::string& file_;
};

}  // namespace tilescope::ir
