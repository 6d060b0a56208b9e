// Reading types (reference §3.1): scalars, `tensor<16x32xf32>`, `!tt.ptr<T[, addrspace]>`,
// `!tt.tensordesc<...>` (both spellings) and the stripped `<T>` forms some custom op formats print.
// Private to src/ir.
#pragma once

#include <vector>

#include "tilescope/ir/ir.h"

namespace tilescope::ir {

class Parser;

/// A type. `as_desc`: a stripped `<tensor<..>>` or `<16x32xf32>` is a !tt.tensordesc (the second
/// type of tt.make_tensor_descriptor) rather than a pointer.
const Type* parse_type(Parser& p, bool as_desc = false);
/// `T, T, ...` (at least one).
std::vector<const Type*> type_list(Parser& p);
/// `(T, T)` or `()`.
std::vector<const Type*> paren_types(Parser& p);
/// Result types after '->': `(T, ...)`, `()` or a single type.
std::vector<const Type*> result_types(Parser& p);

}  // namespace tilescope::ir
