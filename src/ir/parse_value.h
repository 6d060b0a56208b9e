// SSA values (reference §0.4, §3.3): uses `%name` / `%name#k`, definitions, and the scopes that
// hold them (a region sees the names of the regions around it). Private to src/ir.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tilescope/ir/ir.h"

namespace tilescope::ir {

class Parser;

/// A use of an SSA value as written: `%name` or `%name#idx` (idx -1 when not written).
struct Ref {
  std::string name;
  int idx = -1;
  size_t off = 0;
};

/// `%name` or `%name#idx`.
Ref value_ref(Parser& p);
/// The name of a `%name` being defined (a result, an argument); "expected <what>" when there is no
/// '%', "expected <name_what>" when no name follows it.
std::string value_name(Parser& p, const char* what, const char* name_what);
/// The value `r` names, or "use of undefined value".
Value* lookup(const Parser& p, const Ref& r);
/// The value `r` names, checked to have type `want` when given.
Value* use(const Parser& p, const Ref& r, const Type* want = nullptr);
/// Define `name` (one value, or a group `%q:2`) in the innermost scope.
void define(Parser& p, const std::string& name, std::vector<Value*> vals, size_t off);
/// A new value of the current function (its dense id assigned).
std::unique_ptr<Value> new_value(Parser& p, const Type* t, std::string name);

}  // namespace tilescope::ir
