// tt.elementwise_inline_asm (reference §1.1): the asm string is parsed once here, at plan time, into
// a ptx::Program (ptx.h); the kernel runs it once per packed group of `packed_element` elements.
//
// Operand layout, as Triton's NVIDIA lowering builds the LLVM inline asm
// (ElementwiseInlineAsmOpConversion, lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp):
// outputs first, then inputs, each value's registers in element order. An element narrower than 32
// bits shares a register with its neighbours: min(32 / bits, pack) elements per register, element k
// of the register in bits [k*bits, (k+1)*bits). So with pack = 4, an i8 input is one 32-bit $n and
// an f32 input is four; with pack = 1 an f16 is one 16-bit register ("h").
#include <fmt/format.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops.h"
#include "ptx.h"
#include "tilescope/ir/elem.h"

namespace tilescope::ops {

namespace {

struct AsmValue {
  int bytes = 0;    // storage bytes of one element
  int bits = 0;     // element width in the register
  int per_reg = 1;  // elements per register
  int first = 0;    // register of the value's first element
  bool splat = false;
};

constexpr int kMaxRegs = 512;

struct AsmPlan {
  ptx::Program prog;
  int pack = 1;
  std::vector<AsmValue> ins, outs;
};

uint64_t load_bits(const std::byte* p, int bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, static_cast<size_t>(bytes));  // little-endian host: the low bytes
  return v;
}

void inline_asm_kernel(exec::Program& pr, const Step& s) {
  const auto& a = s.data<AsmPlan>();
  std::array<uint64_t, kMaxRegs> regs{};
  const int64_t groups = s.n / a.pack;
  for (int64_t g = 0; g < groups; ++g) {
    std::fill(regs.begin(), regs.begin() + a.prog.num_regs, 0);
    for (size_t i = 0; i < a.ins.size(); ++i) {
      const AsmValue& v = a.ins[i];
      const std::byte* base = pr.at<std::byte>(s.in[i]);
      for (int j = 0; j < a.pack; ++j) {
        const int64_t e = v.splat ? 0 : g * a.pack + j;
        uint64_t bits = load_bits(base + e * v.bytes, v.bytes);
        if (v.bits < 64) bits &= (uint64_t{1} << v.bits) - 1;
        regs[v.first + j / v.per_reg] |= bits << ((j % v.per_reg) * v.bits);
      }
    }
    ptx::run(a.prog, regs.data());
    for (size_t i = 0; i < a.outs.size(); ++i) {
      const AsmValue& v = a.outs[i];
      std::byte* base = pr.at<std::byte>(s.out[i]);
      for (int j = 0; j < a.pack; ++j) {
        uint64_t bits = regs[v.first + j / v.per_reg] >> ((j % v.per_reg) * v.bits);
        std::memcpy(base + (g * a.pack + j) * v.bytes, &bits, static_cast<size_t>(v.bytes));
      }
    }
  }
}

}  // namespace

void lower_inline_asm(const Op& op, Planner& p, Step& s) {
  auto a = std::make_shared<AsmPlan>();
  const ir::Attr* pk = op.attr("packed_element");
  a->pack = pk ? static_cast<int>(pk->i) : 1;
  if (a->pack < 1 || a->pack > 64) p.unsupported(op, fmt::format("packed_element = {}", a->pack));
  if (s.n % a->pack != 0)
    p.unsupported(op, fmt::format("{} elements are not a multiple of packed_element = {}", s.n, a->pack));
  std::vector<int> widths;
  auto layout = [&](const ir::Type& t, bool input) {
    AsmValue v;
    if (t.elem == ir::Elem::i1 || t.elem == ir::Elem::ptr || !(ir::is_int(t.elem) || ir::is_float(t.elem)))
      p.unsupported(op, fmt::format("inline PTX on {} values", t.str()));
    v.bytes = ir::elem_bytes(t.elem);
    v.bits = ir::elem_bits(t.elem);
    v.per_reg = v.bits < 32 ? std::min(32 / v.bits, a->pack) : 1;
    if (a->pack % v.per_reg != 0)
      p.unsupported(op, fmt::format("packed_element = {} for {}", a->pack, t.str()));
    v.first = static_cast<int>(widths.size());
    v.splat = input && t.numel() == 1 && s.n > 1;
    for (int r = 0; r < a->pack / v.per_reg; ++r) widths.push_back(v.bits * v.per_reg);
    return v;
  };
  for (const ir::Type* t : s.out_types) a->outs.push_back(layout(*t, false));
  const size_t num_outputs = widths.size();
  for (const ir::Type* t : s.in_types) a->ins.push_back(layout(*t, true));
  // The constraint string must name the same registers: "=r,=r,r,h" (clobbers "~{...}" aside).
  const ir::Attr* c = op.attr("constraints");
  if (c) {
    size_t outs = 0, all = 0, pos = 0;
    const std::string& cs = c->s;
    while (pos <= cs.size()) {
      size_t e = cs.find(',', pos);
      std::string item = cs.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
      item.erase(0, item.find_first_not_of(" \t"));
      if (!item.empty() && item[0] != '~') ++all, outs += item[0] == '=';
      if (e == std::string::npos) break;
      pos = e + 1;
    }
    if (outs != num_outputs || all != widths.size())
      p.unsupported(op, fmt::format("constraints \"{}\" name {} outputs and {} inputs, but the results and "
                                    "operands with packed_element = {} need {} and {}",
                                    cs, outs, all - outs, a->pack, num_outputs, widths.size() - num_outputs));
  }
  const ir::Attr* text = op.attr("asm_string");
  try {
    a->prog = ptx::parse(text ? text->s : std::string{}, widths);
  } catch (const ptx::Error& e) {
    p.unsupported(op, e.what());
  }
  if (a->prog.num_regs > kMaxRegs) p.unsupported(op, fmt::format("more than {} PTX registers", kMaxRegs));
  s.aux = std::move(a);
  s.fn = inline_asm_kernel;
}

}  // namespace tilescope::ops
