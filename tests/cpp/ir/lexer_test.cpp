// The TTIR lexer: token kinds, spellings and 1-based positions on small hand-written inputs (the
// expected positions are counted by hand), comments skipped, and the value helpers.
#include "src/ir/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tilescope/ir/diag.h"

using namespace tilescope;
using namespace tilescope::ir;

namespace {

struct Want {
  Tok kind;
  std::string text;
  int line, col;
};

std::vector<Token> lex_all(const Lexer& lx) {
  std::vector<Token> v{lx.first()};
  while (v.back().kind != Tok::End) v.push_back(lx.after(v.back()));
  return v;
}

void expect_tokens(const std::string& text, const std::vector<Want>& want) {
  const std::string file = "t.ttir";
  Lexer lx(text, file);
  auto got = lex_all(lx);
  ASSERT_EQ(got.size(), want.size() + 1) << text;  // + End
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].text);
    EXPECT_EQ(got[i].kind, want[i].kind);
    EXPECT_EQ(got[i].text, want[i].text);
    EXPECT_EQ(got[i].line, want[i].line);
    EXPECT_EQ(got[i].col, want[i].col);
  }
  EXPECT_EQ(got.back().off, text.size());
}

}  // namespace

TEST(Lexer, KindsTextsAndPositions) {
  // Columns counted by hand: line 1 "%0 = ..." starts at column 1; line 2 is indented by two.
  std::string t =
      "%0 = \"tt.x\"(%a#1) : (i32) -> !tt.ptr<f32> // a comment: %no ^tokens\n"
      "  ^bb1 @f #loc -2 1.5e3 0x1F * | ? { } [ ] , = - + $ %c-1_i32 @\"q\"";
  expect_tokens(
      t,
      {
          {Tok::ValueId, "%0", 1, 1},      {Tok::Equal, "=", 1, 4},           {Tok::String, "\"tt.x\"", 1, 6},
          {Tok::LParen, "(", 1, 12},       {Tok::ValueId, "%a", 1, 13},       {Tok::HashId, "#1", 1, 15},
          {Tok::RParen, ")", 1, 17},       {Tok::Colon, ":", 1, 19},          {Tok::LParen, "(", 1, 21},
          {Tok::Ident, "i32", 1, 22},      {Tok::RParen, ")", 1, 25},         {Tok::Arrow, "->", 1, 27},
          {Tok::BangId, "!tt.ptr", 1, 30}, {Tok::Less, "<", 1, 37},           {Tok::Ident, "f32", 1, 38},
          {Tok::Greater, ">", 1, 41},      {Tok::BlockId, "^bb1", 2, 3},      {Tok::SymbolId, "@f", 2, 8},
          {Tok::HashId, "#loc", 2, 11},    {Tok::Integer, "-2", 2, 16},       {Tok::Float, "1.5e3", 2, 19},
          {Tok::Integer, "0x1F", 2, 25},   {Tok::Star, "*", 2, 30},           {Tok::Pipe, "|", 2, 32},
          {Tok::Question, "?", 2, 34},     {Tok::LBrace, "{", 2, 36},         {Tok::RBrace, "}", 2, 38},
          {Tok::LSquare, "[", 2, 40},      {Tok::RSquare, "]", 2, 42},        {Tok::Comma, ",", 2, 44},
          {Tok::Equal, "=", 2, 46},        {Tok::Minus, "-", 2, 48},          {Tok::Plus, "+", 2, 50},
          {Tok::Unknown, "$", 2, 52},      {Tok::ValueId, "%c-1_i32", 2, 54}, {Tok::SymbolId, "@", 2, 63},
          {Tok::String, "\"q\"", 2, 64},
      });
}

TEST(Lexer, CommentsAndWhitespaceAreSkipped) {
  // Only the tokens outside comments remain; a comment may end the input without a newline.
  expect_tokens("// header %x = \n\t\r\n  tt.return // %y\n}//", {
                                                                     {Tok::Ident, "tt.return", 3, 3},
                                                                     {Tok::RBrace, "}", 4, 1},
                                                                 });
  expect_tokens("", {});
  expect_tokens("   // only a comment", {});
}

TEST(Lexer, MlirSpellings) {
  // MLIR lexes a dimension list as an integer, then an identifier starting with 'x'.
  expect_tokens("16x32xf32", {{Tok::Integer, "16", 1, 1}, {Tok::Ident, "x32xf32", 1, 3}});
  // A numeric SSA name is digits only; other names take suffix characters.
  expect_tokens("%12abc %foo.x$",
                {{Tok::ValueId, "%12", 1, 1}, {Tok::Ident, "abc", 1, 4}, {Tok::ValueId, "%foo.x$", 1, 8}});
  // Floats need a fraction or an exponent; a sign is part of a number, not of an arrow.
  expect_tokens("1 1. 2e-3 -.5 -> -x 0xg",
                {{Tok::Integer, "1", 1, 1},
                 {Tok::Float, "1.", 1, 3},
                 {Tok::Float, "2e-3", 1, 6},
                 {Tok::Float, "-.5", 1, 11},
                 {Tok::Arrow, "->", 1, 15},
                 {Tok::Minus, "-", 1, 18},
                 {Tok::Ident, "x", 1, 19},
                 {Tok::Integer, "0", 1, 21},  // `0x` without a hex digit is 0, then `xg`
                 {Tok::Ident, "xg", 1, 22}});
  // Bare sigils keep an empty name; a string may span lines.
  expect_tokens("% ! \"a\nb\" x", {{Tok::ValueId, "%", 1, 1},
                                   {Tok::BangId, "!", 1, 3},
                                   {Tok::String, "\"a\nb\"", 1, 5},
                                   {Tok::Ident, "x", 2, 4}});
}

TEST(Lexer, WithinReReadsInsideAToken) {
  const std::string file = "t.ttir";
  std::string t = "4x8xf32>";
  Lexer lx(t, file);
  Token x = lx.after(lx.first());
  ASSERT_EQ(x.text, "x8xf32");
  Token eight = lx.within(x, x.off + 1);  // after the 'x'
  EXPECT_EQ(eight.kind, Tok::Integer);
  EXPECT_EQ(eight.text, "8");
  EXPECT_EQ(eight.col, 3);
}

TEST(Lexer, ValuesAndErrors) {
  const std::string file = "t.ttir";
  std::string t = "\"a\\\"b\\0A\\\\\" \"open";
  Lexer lx(t, file);
  Token s = lx.first();
  EXPECT_EQ(lx.string_value(s), "a\"b\n\\");
  Token open = lx.after(s);
  EXPECT_EQ(open.kind, Tok::String);
  EXPECT_EQ(open.end(), t.size());
  try {
    lx.string_value(open);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "t.ttir:1:13: unterminated string");
  }
  EXPECT_EQ(lx.int_value("-9223372036854775808", 0), INT64_MIN);
  EXPECT_EQ(lx.int_value("0xFFFFFFFFFFFFFFFF", 0), -1);
  EXPECT_THROW(lx.int_value("18446744073709551616", 0), Error);  // 2^64
  EXPECT_THROW(lx.int_value("0x10000000000000000", 0), Error);   // 17 hex digits
  EXPECT_EQ(lx.describe(t.size()), "end of input");
  EXPECT_EQ(lx.describe(0), "'\"'");
  EXPECT_EQ(lx.pos_of(13).line, 1);
  EXPECT_EQ(lx.pos_of(13).col, 14);
}
