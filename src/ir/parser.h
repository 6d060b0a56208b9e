// The reader's shared state: a token cursor over the lexer, located errors, the nesting bound, and
// what the grammar areas (parse_*.h) share while reading one module. Private to src/ir.
//
// The pieces consume tokens. Where raw text is read instead, it is documented at the place:
//   - `resume_at` re-reads from inside a token, where MLIR's own parser does the same or where the
//     reader's language has always split a spelling: dimension lists `16x32xf32` (an integer, then
//     an identifier starting with 'x'; parse_type.cpp), type names that stop at '.' and '$'
//     (`f32.x` is f32, then `.x`; parse_type.cpp), an integer where the text has a float spelling
//     (`1.5` reads 1, then `.5`; parse_int), result numbers `%q#1` (parse_value.cpp);
//   - dialect bodies (`#llvm.loop_annotation<...>`, `overflow<nsw>`, `array<f32: ...>`) are
//     balanced byte by byte, as MLIR scans them (Lexer::group_end, parse_attr.cpp);
//   - two lookaheads: whether a `%name` starts the next statement (parse_custom.cpp) and whether
//     an operand follows a barrier on its line (parse_custom.cpp);
//   - errors describe the text where they point (Lexer::describe).
#pragma once

#include <cassert>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lexer.h"
#include "parse_loc.h"
#include "tilescope/ir/ir.h"

namespace tilescope::ir {

inline constexpr int64_t kMaxNumel = int64_t(1) << 40;  // reader-side sanity bound; verify() applies 2^20

/// A block label's block inside the region being read; `forward` holds blocks used before their label.
struct RegionState {
  struct Pending {
    std::unique_ptr<Block> block;
    size_t off;  // the first use, for "use of undefined block"
  };
  Region* r;
  std::unordered_map<std::string, Block*> labels;
  std::unordered_map<std::string, Pending> forward;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& file, Module& m);

  // ---------------------------------------------------------------- tokens
  const Token& tok() const { return tok_; }
  bool at(Tok k) const { return tok_.kind == k; }
  bool at_kw(std::string_view w) const { return tok_.is_kw(w); }
  /// Whether the current token starts right where the previous one ended (`overflow<nsw>`).
  bool adjacent() const { return tok_.off == prev_end_; }
  size_t prev_end() const { return prev_end_; }
  /// The last token consumed.
  const Token& prev() const { return prev_; }
  /// The token after the current one, without consuming anything.
  Token peek_next() const { return lex_.after(tok_); }

  /// Consume the current token; returns it (valid until the next take).
  const Token& take() {
    assert(tok_.kind != Tok::End);
    prev_ = tok_;
    prev_end_ = prev_.end();
    tok_ = lex_.after(prev_);
    return prev_;
  }
  bool accept(Tok k) {
    if (tok_.kind != k) return false;
    take();
    return true;
  }
  void expect(Tok k, std::string_view ctx = "") {
    if (!accept(k)) expected_punctuation(k, ctx);
  }
  bool accept_kw(std::string_view w) {
    if (!tok_.is_kw(w)) return false;
    take();
    return true;
  }
  void expect_kw(std::string_view w);
  /// Consume the text up to `off` (inside the current token, or past text read byte by byte) and
  /// read on from there.
  void resume_at(size_t off);
  /// A saved cursor position, to read a stretch of tokens again.
  struct Mark {
    Token tok, prev;
    size_t prev_end;
  };
  Mark mark() const { return {tok_, prev_, prev_end_}; }
  void rewind(const Mark& m);

  /// An identifier's text, or "expected <what>".
  std::string ident(const char* what = "an identifier");
  /// A string's decoded text, or "expected a string".
  std::string string();
  /// An integer (its leading digits when the text is spelled as a float), or "expected <what>".
  int64_t parse_int(const char* what = "an integer");
  /// An integer in [lo, hi], else "<what> V out of range [lo, hi]" at its start.
  int small_int(const char* what, int64_t lo, int64_t hi);
  /// The balanced group (a dialect body, Lexer::group_end) opening at the current token; returns its text.
  std::string skip_group();
  std::string_view raw(size_t from, size_t to) const { return lex_.text().substr(from, to - from); }

  // ---------------------------------------------------------------- errors
  const Lexer& lexer() const { return lex_; }
  [[noreturn]] void fail(size_t off, const std::string& msg) const { lex_.fail(off, msg); }
  /// "expected <what>, found <the current token>" at the current token.
  [[noreturn]] void expected(const std::string& what) const;
  /// "expected '<k's spelling>'<ctx>, found ..."
  [[noreturn]] void expected_punctuation(Tok k, std::string_view ctx) const;

  /// Counts nesting (types, attributes, locations, regions, ops) and fails past kMaxDepth.
  class Depth {
   public:
    Depth(Parser& p, size_t off);
    ~Depth() {
      assert(p_.depth_ > 0);
      --p_.depth_;
    }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;

   private:
    Parser& p_;
  };

  // ---------------------------------------------------------------- shared reading state
  Module& m;
  Function* fn = nullptr;  // the function being read (owns value ids)
  size_t op_off = 0;       // start of the op being read: where its form errors point
  std::vector<std::unordered_map<std::string, std::vector<Value*>>> scopes;  // SSA names, innermost last
  std::vector<RegionState> regions;                                          // regions being read
  Locations locs;
  std::unordered_map<std::string, std::string> attr_alias;  // `#name = <attribute>`: its text
  std::vector<std::pair<Op*, Op*>> implicit_yields;         // an elided scf.yield and its parent op

 private:
  Lexer lex_;
  Token tok_;
  Token prev_;
  size_t prev_end_ = 0;
  int depth_ = 0;
};

/// Whether `t` is a number spelled with a leading digit (no sign).
inline bool starts_with_digit(const Token& t) {
  return (t.kind == Tok::Integer || t.kind == Tok::Float) && is_digit(t.text[0]);
}
/// The first byte of the token's spelling ('\0' at the end of input).
inline char first_char(const Token& t) { return t.text.empty() ? '\0' : t.text[0]; }

}  // namespace tilescope::ir
