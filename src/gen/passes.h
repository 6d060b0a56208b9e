// The two passes of gen::parse (ast.h): structure (structure.cpp: what the schema says, read from the op
// table) and semantics (check.cpp: names, types, shapes, provenance, regions).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tilescope/gen/ast.h"

namespace tilescope::gen::detail {

class Problems {
 public:
  explicit Problems(Problem::Kind kind) : kind_(kind) {}
  void add(std::string pointer, std::string message, std::string expected = "", std::string found = "") {
    if (list_.size() < static_cast<size_t>(kMaxProblems))
      list_.push_back({kind_, std::move(pointer), std::move(message), std::move(expected), std::move(found)});
  }
  /// The pass that adds the next problems.
  void set_kind(Problem::Kind k) { kind_ = k; }
  bool empty() const { return list_.empty(); }
  bool full() const { return list_.size() >= static_cast<size_t>(kMaxProblems); }
  std::vector<Problem>& list() { return list_; }

 private:
  Problem::Kind kind_;
  std::vector<Problem> list_;
};

/// `base` + "/" + `token`, the token escaped as RFC 6901 says ('~' -> "~0", '/' -> "~1").
std::string child(const std::string& base, std::string_view token);
inline std::string child(const std::string& base, size_t index) { return base + "/" + std::to_string(index); }
/// A short description of a JSON value for "found ..." ("\"abc\"", "3.5", "an object", "an array of 2").
std::string describe(const nlohmann::json& j);
/// An integer, also a float with an integral value (JSON Schema's "integer"); false when `j` is none or
/// does not fit in int64.
bool as_int(const nlohmann::json& j, int64_t& out);

/// Pass 1: check `doc` against the format's structure and read it into `ast` (op results, operands and
/// fields as written; dims and types are pass 2's).
void read_structure(const nlohmann::json& doc, Ast& ast, Problems& p);
/// Pass 2: check names, types and shapes; fill every op's result_types and resolved dims.
void check_semantics(const nlohmann::json& doc, Ast& ast, Problems& p);

}  // namespace tilescope::gen::detail
