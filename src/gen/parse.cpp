// gen::parse and gen::parse_text: the two passes of passes.h, in order; semantics only run on a document
// whose structure is valid.
#include <fmt/format.h>

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

Parsed parse_text(std::string_view text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    Parsed out;
    // nlohmann's message names the byte offset ("at line 3, column 7" for text with newlines).
    out.problems.push_back({Problem::Kind::json, "", fmt::format("not JSON: {}", e.what()), "a JSON object",
                            fmt::format("invalid JSON at byte {} of {}", e.byte, text.size())});
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
