// The op table of the kernel AST: one row per op kind (ast.h's TILESCOPE_GEN_OPS order) with its operands,
// its fields (key, type, bounds, choices), its results and the TTIR it lowers to. The schema
// (schema.cpp), the structural pass (structure.cpp), the op reference and the lowering read it; nothing
// else lists op names or fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tilescope/gen/ast.h"

namespace tilescope::gen {

/// Every field an op can have (its JSON key is FieldSpec::key).
enum class Field : uint8_t {
  axis,
  dtype,
  value,
  shape,
  start,
  end,
  order,
  combine,
  reverse,
  precision,
  rmw,
  sem,
  scope,
  var,
  lower,
  upper,
  step,
  init,
  carried,
  body,
  then_,
  else_,
  cond,
};

enum class FieldType : uint8_t {
  integer,    // a JSON integer in [min, max]
  dtype,      // one of the Dtype names
  literal,    // a number, or "inf" / "-inf" / "nan"
  shape,      // 1..kMaxDims dims
  dim,        // a positive integer, or the name of a constexpr argument
  int_list,   // [min, max]-bounded integers, 2..kMaxDims of them (trans's order)
  choice,     // one of FieldSpec::choices
  boolean,    // true / false
  name,       // a value name
  name_list,  // 0..kMaxCarried value names
  bound,      // a value name, or an integer (a for loop's lower / upper / step)
  region,     // the name of an entry of "regions"
};

struct FieldSpec {
  Field field;
  const char* key;
  FieldType type;
  bool required;
  int64_t min = 0, max = 0;          // integer, int_list, bound; dim and shape: each dim
  std::vector<const char*> choices;  // choice
  const char* doc = "";
};

/// What an op defines: no value (store), exactly one ("result"), one that may be left unnamed
/// (atomics: the old value), or a list ("results" of for / if).
enum class Results : uint8_t { none, one, optional_one, many };

struct OpSpec {
  OpKind kind;
  const char* name;
  std::vector<const char*> roles;  // operand names, in order; the first min_operands are required
  int min_operands;
  Results results;
  std::vector<FieldSpec> fields;
  // The TTIR of the elementwise ops: the op for integer and for float elements ("" when the kind does not
  // take them), and the predicate of the comparisons.
  const char* int_op = "";
  const char* float_op = "";
  const char* int_pred = "";
  const char* float_pred = "";
  const char* doc = "";
};

/// The rows, index = static_cast<int>(OpKind).
const std::vector<OpSpec>& op_table();
inline const OpSpec& spec(OpKind k) { return op_table()[static_cast<size_t>(k)]; }
/// The row of a field of `s`, or null when the op has no such field.
const FieldSpec* field_of(const OpSpec& s, Field f);

/// The op kind called `name`, or null.
const OpSpec* find_op(std::string_view name);
/// The dtype called `name` ("f32"), or nothing.
std::optional<Dtype> find_dtype(std::string_view name);

// Names: an identifier ([A-Za-z_][A-Za-z0-9_]*) of at most kMaxNameLength characters (the schema's pattern).
bool is_name(std::string_view s, size_t max_length = kMaxNameLength);

}  // namespace tilescope::gen
