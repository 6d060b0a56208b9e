// tilescope/ir: the in-memory form of a TTIR module (what Triton prints as kernel.asm["ttir"]).
//
// A Module owns functions; a function owns a region of blocks; a block owns ops; an op owns its
// result values and nested regions. Types are interned in the Module, so type equality is pointer
// equality. Every op knows its TTIR position (line:col in the .ttir text) and its resolved Python
// location (file:line:col, variable name, call-site stack). Syntax and semantics follow
// ../shared/reference/ttir.md (§1-§3).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tilescope/ir/elem.h"
#include "tilescope/ir/ops.h"

namespace tilescope::ir {

/// A type: a scalar (shape empty, is_tensor false), a ranked tensor (is_tensor true, shape may be
/// empty for rank 0), a pointer (elem == ptr, pointee set; a block pointer has a tensor pointee),
/// or a tensor descriptor (elem == tensordesc, pointee = the block tensor type).
struct Type {
  Elem elem = Elem::none;
  std::vector<int64_t> shape;
  bool is_tensor = false;
  const Type* pointee = nullptr;
  int addr_space = 1;

  int64_t numel() const;
  int rank() const { return static_cast<int>(shape.size()); }
  /// The element type as a scalar Type (interned by the owning Module).
  bool is_ptr() const { return elem == Elem::ptr; }
  bool is_block_ptr() const { return elem == Elem::ptr && pointee && pointee->is_tensor; }
  std::string str() const;  // MLIR spelling, e.g. "tensor<128x!tt.ptr<f32>>"
};

/// Where an op comes from in Python: resolved from TTIR's loc(...) (reference §3.2).
struct PyLoc {
  std::string file;  // empty when unknown
  int line = 0;
  int col = 0;
  std::string var;  // the NameLoc: the Python variable the value was assigned to, if any
  /// Call-site chain, innermost first (callee positions inside inlined @jit helpers); the
  /// first entry in a user file is what file/line/col hold.
  std::vector<std::pair<std::string, int>> stack;  // (file, line)
  bool known() const { return !file.empty(); }
  std::string str() const;  // "kernel.py:33:9" or "?"
};

/// A position in the .ttir text (1-based line and column).
struct TextPos {
  int line = 0;
  int col = 0;
};

/// Dense elements attribute: `dense<...> : tensor<...>`; raw little-endian storage of the element
/// type (i1 as one byte), `splat` when every element is the same (then `bytes` holds one element).
struct DenseAttr {
  const Type* type = nullptr;
  bool splat = true;
  std::vector<uint8_t> bytes;
};

/// An attribute value. Integers keep their type (i32, i64, i1 ...); floats are stored as double
/// (plus the exact bits for typed float attributes); `Keyword` is a bare enum keyword
/// (`slt`, `acq_rel`, `tf32`); arrays are `array<i32: ...>` or `[...]` lists of integers.
struct Attr {
  enum class Kind {
    Unit,
    Bool,
    Int,
    Float,
    String,
    Keyword,
    IntArray,
    Dense,
    Type,
    Symbol
  } kind = Kind::Unit;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  uint64_t fbits = 0;  // exact bits of a typed float (for the attribute's type)
  std::string s;       // String / Keyword / Symbol
  std::vector<int64_t> ints;
  DenseAttr dense;
  const Type* type = nullptr;  // the attribute's type where written (`: i32`), or Type attrs
};

struct Op;
struct Block;
struct Region;
struct Function;

/// An SSA value: an op result or a block argument.
struct Value {
  const Type* type = nullptr;
  std::string name;        // as written, without '%' (and with "#k" for multi-results)
  Op* def = nullptr;       // defining op (null for block arguments)
  int index = 0;           // result index, or argument index
  Block* block = nullptr;  // owning block for block arguments
  int id = -1;             // dense id within the function (assigned by the reader)
  PyLoc loc;               // for block args / function args: their name location
};

struct Block {
  std::string label;  // "bb1", empty for the entry block of a region
  std::vector<std::unique_ptr<Value>> args;
  std::vector<std::unique_ptr<Op>> ops;
  Region* parent = nullptr;
};

struct Region {
  std::vector<std::unique_ptr<Block>> blocks;
  Op* parent = nullptr;  // null for a function body
};

struct Op {
  std::string name;            // "arith.addi"
  const OpDef* def = nullptr;  // its row in the op registry (tilescope/ir/ops.h); never null once read
  std::vector<Value*> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::map<std::string, Attr> attrs;  // attr-dict, properties and custom-syntax attributes
  std::vector<std::unique_ptr<Region>> regions;
  // Branch successors (cf.br, cf.cond_br): target block and the values passed to its arguments.
  std::vector<Block*> successors;
  std::vector<std::vector<Value*>> successor_operands;
  Block* parent = nullptr;
  TextPos pos;  // position of the op in the .ttir text
  PyLoc loc;    // resolved Python location

  const Attr* attr(const std::string& k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? nullptr : &it->second;
  }
  Value* result(int i = 0) const { return results.at(i).get(); }
  Opcode code() const { return def->code; }
};

struct Function {
  std::string name;  // without '@'
  bool is_public = true;
  std::vector<const Type*> result_types;
  std::vector<std::map<std::string, Attr>> arg_attrs;  // per argument ({tt.divisibility = 16})
  std::map<std::string, Attr> attrs;                   // `attributes {noinline = false}`
  Region body;                                         // args = body.blocks[0]->args
  TextPos pos;
  PyLoc loc;
  int num_values = 0;  // number of Values (dense ids 0..num_values-1)

  const std::vector<std::unique_ptr<Value>>& args() const { return body.blocks.at(0)->args; }
};

/// A module's functions in text order, indexed by name: `find` is one hash lookup, so reading a module
/// costs time linear in its functions and calls (a linear scan per tt.call and per definition made
/// 100,000 functions take minutes). Read like a vector; functions are added with `push_back` only,
/// which keeps the index, and keep their name once added.
class FunctionList {
 public:
  using Storage = std::vector<std::unique_ptr<Function>>;
  Storage::const_iterator begin() const { return fns_.begin(); }
  Storage::const_iterator end() const { return fns_.end(); }
  size_t size() const { return fns_.size(); }
  bool empty() const { return fns_.empty(); }
  const std::unique_ptr<Function>& operator[](size_t i) const { return fns_[i]; }
  const std::unique_ptr<Function>& front() const { return fns_.front(); }
  const std::unique_ptr<Function>& back() const { return fns_.back(); }
  /// Appends `f` (not null). With two functions of one name, `find` gives the first (the reader
  /// rejects the second as a redefinition).
  void push_back(std::unique_ptr<Function> f);
  /// The function named `name` (without '@'), or null.
  Function* find(std::string_view name) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  Storage fns_;
  std::unordered_map<std::string, Function*, Hash, std::equal_to<>> by_name_;
};

class Module {
 public:
  std::string filename;  // what diagnostics call the .ttir text
  FunctionList functions;

  Module();
  ~Module();
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;

  /// Interned types: the same description always gives the same pointer.
  const Type* scalar(Elem e);
  const Type* tensor(Elem e, std::vector<int64_t> shape, const Type* pointee = nullptr);
  const Type* ptr(const Type* pointee, int addr_space = 1);
  const Type* desc(const Type* block);
  const Type* intern(const Type& t);
  /// The element type of `t` as a scalar (the pointee-carrying ptr type for tensors of ptrs).
  const Type* element_of(const Type* t);
  /// `t`'s shape with another element (e.g. i1 for cmpi results).
  const Type* with_elem(const Type* t, Elem e);

  /// The function named `name` (without '@'), or null; a hash lookup (FunctionList).
  Function* find(std::string_view name) const { return functions.find(name); }
  /// The kernel: the first public function (Triton's get_entry_func_name), or null.
  Function* entry() const;

  /// Data derived from the module once and kept as long as it: an analysis's per-kernel plan, made
  /// at the first launch and shared by the later ones (exec and analyses never change a module once
  /// it is read and verified; whoever changes one after a launch must make a new Module). `make()`
  /// -> T runs on the first call for each T; thread-safe (two first calls may both make one, the
  /// first stored is kept).
  template <class T, class Make>
  std::shared_ptr<const T> derived(Make&& make) const {
    if (auto p = find_derived(typeid(T))) return std::static_pointer_cast<const T>(p);
    return std::static_pointer_cast<const T>(keep_derived(typeid(T), std::make_shared<const T>(make())));
  }

 private:
  struct Types;
  std::unique_ptr<Types> types_;
  struct Derived;
  std::unique_ptr<Derived> derived_;
  std::shared_ptr<const void> find_derived(const std::type_info& t) const;
  std::shared_ptr<const void> keep_derived(const std::type_info& t, std::shared_ptr<const void> p) const;
};

}  // namespace tilescope::ir
