// Reading custom op forms: one function per Syntax kind of the op registry (tilescope/ir/ops.def), whose
// formats are the ODS assembly formats listed in reference §1-§2. Value ops are in parse_custom.cpp,
// terminators and ops with regions in parse_control.cpp. Private to src/ir.
#pragma once

#include <string>
#include <vector>

#include "parse_value.h"
#include "tilescope/ir/ir.h"

namespace tilescope::ir {

class Parser;

/// The custom form of `o` (its name is read), by its Syntax; sets the operands and attributes and
/// returns the result types in `res`. `nres`: how many result names were written.
void parse_custom(Parser& p, Op& o, std::vector<const Type*>& res, size_t nres);

// ---------------------------------------------------------------- pieces shared by the forms

/// One piece of a custom form before the colon.
struct Item {
  enum class K { Operand, Keyword, KwValue, String } k = K::Keyword;
  Ref ref;           // Operand
  std::string word;  // Keyword, KwValue (the key), String (the text)
  Attr val;          // KwValue
  size_t off = 0;
};

/// Operands, keywords (`slt`, `allow_reorder`), `kw = value`, strings and `{attrs}` (read into o)
/// up to the colon, the end of the statement or the next statement.
std::vector<Item> items(Parser& p, Op& o);
/// Apply the keywords and `kw = value` items of a custom form to the op's attributes.
void apply_keywords(Parser& p, Op& o, const std::vector<Item>& its);
std::vector<Ref> operands_of(const std::vector<Item>& its);
/// The common custom form: operands, keywords and an attribute dictionary before the colon, no
/// strings. Keywords become attributes; returns the operands.
std::vector<Ref> plain_operands(Parser& p, Op& o);
/// "'op' expects N operands" unless lo <= ops.size() <= hi.
void want_count(const Parser& p, const Op& o, const std::vector<Ref>& ops, size_t lo, size_t hi);

// ---------------------------------------------------------------- forms in parse_control.cpp

void read_return(Parser& p, Op& o);
void read_condition(Parser& p, Op& o);
void read_branch(Parser& p, Op& o);
void read_cond_branch(Parser& p, Op& o);
void read_for(Parser& p, Op& o, std::vector<const Type*>& res);
void read_if(Parser& p, Op& o, std::vector<const Type*>& res);
void read_while(Parser& p, Op& o, std::vector<const Type*>& res);

}  // namespace tilescope::ir
