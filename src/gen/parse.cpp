// gen::parse and gen::parse_text: the two passes of passes.h, in order; semantics only run on a document
// whose structure is valid.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "passes.h"

namespace tilescope::gen {

Parsed parse(const nlohmann::json& doc) {
  detail::Problems p(Problem::Kind::schema);
  Ast ast;
  detail::read_structure(doc, ast, p);
  if (p.empty()) {
    p.set_kind(Problem::Kind::semantics);
    detail::check_semantics(doc, ast, p);
  }
  Parsed out;
  out.problems = std::move(p.list());
  if (out.problems.empty()) out.ast = std::move(ast);
  return out;
}

namespace {

// The line and column (both from 1; a UTF-8 character is one column) of byte `offset` (from 0) of `text`; an
// offset past the end is the place just after the text's last character.
std::pair<size_t, size_t> line_column(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

// `s` as valid UTF-8 (a problem's text goes into JSON): well-formed characters as they are, any other byte
// and control characters as \xNN.
std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    // The length of the character c starts, and the range of its second byte (RFC 3629: no overlong forms,
    // no surrogates, nothing past U+10FFFF); 0: c starts none.
    size_t n = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    const unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    for (size_t k = 1; k < n; ++k) {
      const auto b = i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
      if (k == 1 ? b < lo || b > hi : (b & 0xC0) != 0x80) n = 0;
    }
    if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7F))) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

// What the JSON reader found wrong, without its "[json.exception.parse_error.101] parse error at line 1,
// column 15: " head: "while parsing an object key: unexpected end of input; expected string literal".
std::string reason(const nlohmann::json::parse_error& e) {
  std::string_view w = e.what();
  if (size_t at = w.find("parse error"); at != std::string_view::npos)
    if (size_t colon = w.find(": ", at); colon != std::string_view::npos) w.remove_prefix(colon + 2);
  constexpr std::string_view kSyntax = "syntax error while parsing ";
  if (w.substr(0, kSyntax.size()) == kSyntax) {
    w.remove_prefix(kSyntax.size());
    if (size_t dash = w.find(" - "); dash != std::string_view::npos)
      return printable(fmt::format("while parsing {}: {}", w.substr(0, dash), w.substr(dash + 3)));
  }
  return printable(w);
}

// The JSON reader as SAX, only for the token at which it fails (json::parse's exception has only where the
// token ends).
struct LastToken {
  using json = nlohmann::json;
  std::string token;  // as read: the reader rejects raw control characters, the only ones it would rewrite
  bool null() { return true; }
  bool boolean(bool /*unused*/) { return true; }
  bool number_integer(json::number_integer_t /*unused*/) { return true; }
  bool number_unsigned(json::number_unsigned_t /*unused*/) { return true; }
  bool number_float(json::number_float_t /*unused*/, const json::string_t& /*unused*/) { return true; }
  bool string(json::string_t& /*unused*/) { return true; }
  bool binary(json::binary_t& /*unused*/) { return true; }
  bool start_object(size_t /*unused*/) { return true; }
  bool key(json::string_t& /*unused*/) { return true; }
  bool end_object() { return true; }
  bool start_array(size_t /*unused*/) { return true; }
  bool end_array() { return true; }
  bool parse_error(size_t /*unused*/, const std::string& last_token, const json::exception& /*unused*/) {
    token = last_token;
    return false;
  }
};

}  // namespace

Parsed parse_text(std::string_view text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    Parsed out;
    // e.byte counts the bytes the reader took, the one it failed at included (at the end of the text: one
    // past it). A character no JSON token has there ("last read" in the reason): the JSON stops being valid
    // at offset e.byte - 1. A whole token the grammar does not allow there (`"k" "args"`): at its start.
    const std::string why = reason(e);
    size_t at = e.byte > 0 ? e.byte - 1 : 0;
    if (at < text.size() && why.find("; last read: ") == std::string::npos) {
      LastToken sax;
      nlohmann::json::sax_parse(text, &sax);
      if (!sax.token.empty() && sax.token.size() <= at + 1) at = at + 1 - sax.token.size();
    }
    const auto [line, column] = line_column(text, at);
    Problem p{Problem::Kind::json, "", "", "a JSON object", ""};
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      p.message = "not JSON: the text is empty";
      p.found = text.empty() ? "no text" : "only white space";
    } else if (at >= text.size()) {
      p.message =
          fmt::format("not JSON: the document ends early, at line {}, column {} ({})", line, column, why);
      p.found = fmt::format("the end of the text ({} bytes)", text.size());
    } else {
      p.message = fmt::format("not JSON: invalid at line {}, column {} ({})", line, column, why);
      // What is there: the rest of that line, up to 24 bytes (and the rest of a character cut there).
      const std::string_view rest = text.substr(at);
      size_t n = std::min(rest.find_first_of("\r\n"), size_t{24});
      while (n < rest.size() && n < 28 && (static_cast<unsigned char>(rest[n]) & 0xC0) == 0x80) ++n;
      p.found = fmt::format("'{}'", printable(rest.substr(0, n)));
    }
    out.problems.push_back(std::move(p));
    return out;
  }
  return parse(doc);
}

const char* problem_kind_name(Problem::Kind k) {
  switch (k) {
    case Problem::Kind::json: return "json";
    case Problem::Kind::schema: return "schema";
    case Problem::Kind::semantics: return "semantics";
  }
  return "";
}

}  // namespace tilescope::gen
