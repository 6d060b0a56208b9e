// Reading attributes (reference §2.1, §3.1): attribute values in attribute dictionaries,
// properties `<{...}>` and custom `kw = value` forms; typed numbers, `dense<...>` literals,
// `array<i32: ...>`, lists, symbols, types, and dialect attributes and `#alias` uses (kept as
// text). Private to src/ir.
#pragma once

#include <map>
#include <string>

#include "tilescope/ir/ir.h"

namespace tilescope::ir {

class Parser;

/// An attribute value.
Attr parse_attr(Parser& p);
/// `{name = value, flag, "quoted" = value}` into `out`; a duplicate name is an error.
void attr_dict(Parser& p, std::map<std::string, Attr>& out);
/// `@name` or `@"name"`; returns the name.
std::string parse_symbol(Parser& p);

}  // namespace tilescope::ir
