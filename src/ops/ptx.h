// A small, exact evaluator for the subset of PTX that Triton kernels put in
// `tl.inline_asm_elementwise` (tt.elementwise_inline_asm, reference §1.1).
//
// The asm text is parsed once (at plan time) into a Program over numbered registers: registers
// 0..num_operands-1 are the inline-asm operands $0, $1, ... (outputs first, then inputs, as in the
// constraint string), the rest are the registers the text declares (`.reg .b32 r<4>;`). Every
// register holds up to 64 bits, the value's bits in the low end. `run` executes the program for one
// packed group of elements.
//
// Semantics follow the PTX ISA (version 8.x) sections cited at each instruction in ptx.cpp. The
// supported subset is listed in README.md ("Inline PTX"); anything else is an Error naming the
// instruction, raised by `parse`.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tilescope::ops::ptx {

/// A parse failure: `what()` is the message, e.g. "unsupported PTX instruction 'ld.global.b8'".
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Kind : uint8_t { b, u, s, f, pred };

/// A PTX scalar type as spelled in a type suffix: .b32 -> {b, 32}; .bf16 -> {f, 16, bf16=true};
/// .f16x2 -> {f, 16, lanes 2}; .e4m3x2 -> {f, 8, lanes 2, fp8 = 4}.
struct Type {
  Kind kind = Kind::b;
  int bits = 0;
  int lanes = 1;
  bool bf16 = false;
  int fp8 = 0;  // 4: e4m3, 5: e5m2
  int total_bits() const { return bits * lanes; }
};

enum class Opc : uint8_t {
  mov,
  cvt,
  and_,
  or_,
  xor_,
  not_,
  cnot,
  shl,
  shr,
  shf,
  add,
  sub,
  mul,
  mad,
  fma,
  div,
  min,
  max,
  neg,
  abs,
  setp,
  selp,
  prmt,
  lop3
};

struct Operand {
  enum class K : uint8_t { reg, imm, vec } k = K::reg;
  int reg = -1;
  uint64_t imm = 0;        // raw bits (0fXXXXXXXX floats keep their bits)
  bool imm_float = false;  // written as 0f / 0d / a decimal with a '.'
  double imm_value = 0;    // the value of a decimal float immediate
  std::vector<int> regs;   // vec: {a, b, ...}, element 0 first (least significant)
};

struct Instr {
  Opc opc = Opc::mov;
  std::string text;  // the instruction as written, for messages
  Type t;            // the instruction type (cvt: the destination type)
  Type t2;           // cvt: the source type
  std::string cmp;   // setp: eq, lt, ... ; shf: "l" / "r"
  bool rnd_set = false;
  char rnd = 'n';  // rounding: n, z, m, p (cvt .rni/.rzi/... set `int_rnd`)
  bool int_rnd = false;
  bool sat = false, satfinite = false, relu = false, ftz = false, wrap = false;
  char mode = 0;   // mul/mad: 'l' lo, 'h' hi, 'w' wide
  int guard = -1;  // @p: predicate register, or -1
  bool guard_neg = false;
  std::vector<Operand> ops;
};

struct Program {
  int num_operands = 0;
  int num_regs = 0;
  std::vector<int> reg_bits;  // width of every register (operands: from the constraints)
  std::vector<Instr> code;
};

/// Parses `asm_text`. `operand_bits[i]` is the width of $i (16, 32 or 64). Throws Error.
Program parse(std::string_view asm_text, const std::vector<int>& operand_bits);

/// Runs `p` once. `regs` has p.num_regs entries; $i is regs[i] (inputs set by the caller, outputs
/// read back, each masked to its width).
void run(const Program& p, uint64_t* regs);

}  // namespace tilescope::ops::ptx
