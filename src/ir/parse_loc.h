// Reading locations (reference §3.2): `loc(...)` after ops, arguments, functions and the module;
// file, name, call-site and fused locations; `#name = loc(...)` aliases, which may be defined after
// their uses (reference §0.5), so everything is resolved once the whole text is read. Private to src/ir.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tilescope/ir/ir.h"

namespace tilescope::ir {

class Parser;
class Lexer;

/// A location expression as written, before aliases are resolved.
struct LocNode {
  enum class K { Unknown, File, Name, CallSite, Fused, Alias } k = K::Unknown;
  std::string s;  // file, name or alias
  int line = 0, col = 0;
  std::vector<int> kids;  // Name: [child]; CallSite: [callee, caller]; Fused: children
  size_t off = 0;         // where it is written, for errors
};

class Locations {
 public:
  /// A location expression (what `loc(...)` holds); returns its node.
  int parse(Parser& p);
  /// An optional trailing `loc(...)`; returns its node or -1.
  int trailing(Parser& p);
  /// `#name = loc(...)` read at `off`: node `n` is the alias's location.
  void define_alias(const Parser& p, const std::string& name, int n, size_t off);

  void attach(Op* o, int n) { ops_.emplace_back(o, n); }
  void attach(Value* v, int n) { values_.emplace_back(v, n); }
  void attach(Function* f, int n) { functions_.emplace_back(f, n); }
  /// A location nothing keeps (the module's): still resolved, so a bad alias in it is an error.
  void check_later(int n) { others_.push_back(n); }
  /// Resolve every attached location into its PyLoc (errors: undefined aliases, alias cycles).
  void resolve_all(const Lexer& lex);

 private:
  struct Frame {
    std::string file;
    int line = 0, col = 0;
    std::string name;
  };
  int add(LocNode n);
  int callsite(Parser& p, LocNode n);
  int fused(Parser& p, LocNode n);
  int file_or_name(Parser& p, LocNode n);
  int deref(const Lexer& lex, int n) const;
  void frames(const Lexer& lex, int n, std::vector<Frame>& out, const std::string& name, int depth) const;
  PyLoc resolve(const Lexer& lex, int n) const;

  std::vector<LocNode> nodes_;
  std::unordered_map<std::string, int> aliases_;
  std::vector<std::pair<Op*, int>> ops_;
  std::vector<std::pair<Value*, int>> values_;
  std::vector<std::pair<Function*, int>> functions_;
  std::vector<int> others_;
};

}  // namespace tilescope::ir
