// Structured control flow, calls, print and assert (reference §2.3, §1.6, §1.7).
#include <fmt/format.h>

#include <bit>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "dispatch.h"
#include "ops.h"
#include "tilescope/exec/value.h"

namespace tilescope::exec {
void parallel_copy(Program& p, const std::vector<int>& dst, const std::vector<int>& src);
}

namespace tilescope::ops {

using exec::parallel_copy;
using exec::Program;
using exec::Terminator;

namespace {

int64_t read_int(const Program& p, int slot, const ir::Type* t) {
  switch (t->elem) {
    case ir::Elem::i1:
    case ir::Elem::i8: return *p.at<int8_t>(slot);
    case ir::Elem::i16: return *p.at<int16_t>(slot);
    case ir::Elem::i32: return *p.at<int32_t>(slot);
    case ir::Elem::i64: return *p.at<int64_t>(slot);
    case ir::Elem::f8e4m3fn:
    case ir::Elem::f8e5m2:
    case ir::Elem::f8e4m3fnuz:
    case ir::Elem::f8e5m2fnuz:
    case ir::Elem::f16:
    case ir::Elem::bf16:
    case ir::Elem::f32:
    case ir::Elem::f64:
    case ir::Elem::ptr:
    case ir::Elem::tensordesc:
    case ir::Elem::none: break;
  }
  assert(false && "the verifier: scf.for bounds and induction variable are integers");
  return *p.at<int64_t>(slot);
}

void write_int(Program& p, int slot, const ir::Type* t, int64_t v) {
  switch (t->elem) {
    case ir::Elem::i1:
    case ir::Elem::i8: *p.at<int8_t>(slot) = static_cast<int8_t>(v); return;
    case ir::Elem::i16: *p.at<int16_t>(slot) = static_cast<int16_t>(v); return;
    case ir::Elem::i32: *p.at<int32_t>(slot) = static_cast<int32_t>(v); return;
    case ir::Elem::i64: *p.at<int64_t>(slot) = v; return;
    case ir::Elem::f8e4m3fn:
    case ir::Elem::f8e5m2:
    case ir::Elem::f8e4m3fnuz:
    case ir::Elem::f8e5m2fnuz:
    case ir::Elem::f16:
    case ir::Elem::bf16:
    case ir::Elem::f32:
    case ir::Elem::f64:
    case ir::Elem::ptr:
    case ir::Elem::tensordesc:
    case ir::Elem::none: break;
  }
  assert(false && "the verifier: scf.for bounds and induction variable are integers");
  *p.at<int64_t>(slot) = v;
}

// scf.for %iv = lb to ub step s iter_args(...): signed bounds of the IV's integer type; the
// body's entry block args are [iv, iter...]; results are the final iter values.
void run_for(Program& p, const Step& s) {
  const exec::RegionPlan& body = s.regions[0];
  const auto& args = body.blocks[0].args;
  const ir::Type* ivt = s.in_types[0];
  int64_t lb = read_int(p, s.in[0], ivt), ub = read_int(p, s.in[1], ivt), step = read_int(p, s.in[2], ivt);
  assert(args.size() == s.in.size() - 2);  // checked by lower_for
  std::vector<int> iter(args.begin() + 1, args.end());
  std::vector<int> init(s.in.begin() + 3, s.in.end());
  parallel_copy(p, iter, init);
  if (step <= 0 && lb < ub)
    fail_at(*p.plan->module, *s.op, fmt::format("scf.for step is {}: it must be positive", step));
  for (int64_t iv = lb; iv < ub; iv += step) {
    if (p.at_back_edge(*s.op)) return;  // cancelled: halted, as by a stop
    write_int(p, args[0], ivt, iv);
    const Terminator& t = p.run(body);
    if (p.halted) return;                      // the launch is stopping: unwind without using the terminator
    assert(t.operands.size() == iter.size());  // the verifier: yield types == iter_args types
    parallel_copy(p, iter, t.operands);
  }
  parallel_copy(p, s.out, iter);
}

void run_if(Program& p, const Step& s) {
  bool c = *p.at<uint8_t>(s.in[0]) != 0;
  const exec::RegionPlan* r = nullptr;
  if (c)
    r = &s.regions[0];
  else if (s.regions.size() > 1 && !s.regions[1].blocks.empty())
    r = &s.regions[1];
  if (!r) return;
  const Terminator& t = p.run(*r);
  if (p.halted) return;
  parallel_copy(p, s.out, t.operands);
}

void run_while(Program& p, const Step& s) {
  const exec::RegionPlan& before = s.regions[0];
  const exec::RegionPlan& after = s.regions[1];
  parallel_copy(p, before.blocks[0].args, s.in);
  for (;;) {
    if (p.at_back_edge(*s.op)) return;
    const Terminator& c = p.run(before);
    if (p.halted) return;
    assert(c.kind == Terminator::Kind::condition);  // the verifier: before ends in scf.condition
    if (!*p.at<uint8_t>(c.cond)) {
      parallel_copy(p, s.out, c.operands);
      return;
    }
    parallel_copy(p, after.blocks[0].args, c.operands);
    const Terminator& y = p.run(after);
    if (p.halted) return;
    parallel_copy(p, before.blocks[0].args, y.operands);
  }
}

void run_call(Program& p, const Step& s) {
  assert(s.callee);  // set by lower_call
  const exec::RegionPlan& body = s.callee->body;
  if (p.at_back_edge(*s.op)) return;
  parallel_copy(p, body.blocks[0].args, s.in);
  const Terminator& t = p.run(body);
  if (p.halted) return;
  parallel_copy(p, s.out, t.operands);
}

void run_nop(Program&, const Step&) {}

}  // namespace

void lower_for(const Op& op, Planner& pl, Step& s) {
  if (s.in.size() < 3 || s.regions.size() != 1 || s.regions[0].blocks.empty())
    pl.unsupported(op, "malformed scf.for");
  if (s.regions[0].blocks[0].args.size() != s.in.size() - 2)
    pl.unsupported(op, "scf.for block arguments do not match");
  s.fn = run_for;
}

void lower_if(const Op& op, Planner& pl, Step& s) {
  if (s.regions.empty()) pl.unsupported(op, "scf.if without a then region");
  s.fn = run_if;
}

void lower_while(const Op& op, Planner& pl, Step& s) {
  if (s.regions.size() != 2) pl.unsupported(op, "scf.while needs a before and an after region");
  s.fn = run_while;
}

void lower_call(const Op& op, Planner& pl, Step& s) {
  const ir::Attr* callee = op.attr("callee");
  const ir::Function* f = callee ? pl.module().find(callee->s) : nullptr;
  if (!f) pl.unsupported(op, fmt::format("call to unknown function '@{}'", callee ? callee->s : "?"));
  s.callee = &pl.lower_callee(op, *f);
  s.fn = run_call;
}

void lower_nop(const Op&, Planner&, Step& s) { s.fn = run_nop; }

// ---------------------------------------------------------------------------------------------
// tt.print: the text Triton 3.6's CUDA lowering makes the GPU print, one line per element:
//
//   pid (X, Y, Z) idx (I, J, ...)<prefix>[(operand N) ]<value>
//
// Source: PrintOpConversion in lib/Conversion/TritonGPUToLLVM/PrintOpToLLVM.cpp (v3.6.0):
// matchAndRewrite (no operands: "pid (%u, %u, %u)" then the prefix, no space between; index widths),
// printTensor (the line; "(operand N) " only when the op has several operands; its cut of indices
// past rank 27 never applies, the reader allows rank 16) and getFormatSubstr (the conversions), with the
// argument promotion of the NVIDIA backend, printfPromoteValue in
// third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/TargetInfo.cpp. The prefix arrives as the frontend
// normalised it (" x: "); the lowering pastes it into the printf format, so "%%" in it prints "%".
// Checked on an H200 for every element type, hex and not (tests/gpu/print_reference.py and the lines
// it recorded, tests/gpu/data/print_h200.txt.gz).
//
// Where we differ from the GPU, on purpose:
// - Lines come once per element, row-major, operand by operand. The GPU prints the elements each
//   thread holds, so lines come in thread order, and an element that several threads hold (a scalar,
//   a print without operands, a broadcast layout) comes once per thread: 32 * num_warps times for a
//   scalar. Triton's own tests compare the lines as a multiset for that reason.
// - hex=true on f16/bf16/f32: the lowering passes the value as an f64 and prints it with "%0<n>x",
//   which reads the first 4 bytes of the argument slot. When that slot is 8-byte aligned (3 pid words
//   plus an odd number of index words: rank 1, 3, ...) the GPU prints the low 32 bits of the f64
//   (always 0 for f16/bf16); otherwise it prints the 4 padding bytes before the f64, which hold
//   whatever the stack held (seen: varying small numbers). We print the low 32 bits for every rank.
// The text of one print op of one program is one PrintEvent; the engine writes it nowhere (the front
// door does).

namespace {

// Index field width: getFormatSubstr(index, width = ceil(log10(dim))) for dim > 0, else 0, i.e.
// printf "%<w>u". Integer form of the same rule: the least w with 10^w >= dim (1 -> 0, 8 -> 1,
// 10 -> 1, 16 -> 2, 1024 -> 4).
int index_width(int64_t dim) {
  int w = 0;
  for (int64_t p = 1; p < dim; p *= 10) ++w;  // dim <= 2^20 (the verifier's bound on a tensor)
  return w;
}

// printf into a std::string. The GPU's text is formatted on the host by glibc's printf, whose
// spellings ("(nil)", "-nan") we write ourselves so that another C library cannot change them.
template <class... A>
std::string c_format(const char* f, A... a) {
  int n = std::snprintf(nullptr, 0, f, a...);
  std::string s(static_cast<size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, f, a...);
  return s;
}

// One element as vprintf prints it. getFormatSubstr picks the conversion from the LLVM type of the
// value: a pointer "%p" (hex or not); hex=true "0x%0<bits/4>x", with "ll" above 32 bits (so i1 is
// "0x%00x"); f16/bf16/f32/f64 "%f"; other integers "%i" / "%lli" when isSigned, else "%u" / "%llu".
// fp8 values are i8 in LLVM, so they print as their bit pattern (isSigned is 0 for floats).
// printfPromoteValue widens integers under 32 bits to i32 (sign-extended when isSigned, so an i8 -1
// prints as 0xffffffff under hex) and f16/bf16/f32 to f64.
std::string format_element(const std::byte* at, ir::Elem e, bool hex, bool is_signed) {
  if (e == ir::Elem::ptr) {
    uint64_t a;
    std::memcpy(&a, at, 8);
    return a ? fmt::format("0x{:x}", a) : "(nil)";
  }
  const int bits = ir::elem_bits(e);
  uint64_t raw = 0;
  std::memcpy(&raw, at, static_cast<size_t>(ir::elem_bytes(e)));
  if (bits < 64) raw &= (uint64_t{1} << bits) - 1;
  if (ir::is_float(e) && bits >= 16) {
    const double v = ir::float_from_bits(e, raw);  // fpext to f64 (exact)
    if (!hex) {
      // fpext keeps a NaN's sign, which decoding f16/bf16 drops: take it from the bits.
      if (std::isnan(v)) return (raw >> (bits - 1)) & 1 ? "-nan" : "nan";
      if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
      return c_format("%f", v);
    }
    uint64_t b = std::bit_cast<uint64_t>(v);
    if (bits > 32) return c_format("0x%016llx", static_cast<unsigned long long>(b));
    return c_format("0x%0*x", bits / 4, static_cast<unsigned>(b));  // the f64's low 32 bits
  }
  if (bits > 32) {
    if (hex) return c_format("0x%016llx", static_cast<unsigned long long>(raw));
    return is_signed ? c_format("%lli", static_cast<long long>(raw))
                     : c_format("%llu", static_cast<unsigned long long>(raw));
  }
  uint32_t w = static_cast<uint32_t>(raw);  // i1, i8, i16, fp8 bits: extended to 32 bits
  if (is_signed && bits < 32 && ((raw >> (bits - 1)) & 1)) w |= ~((uint32_t{1} << bits) - 1);
  if (hex) return c_format("0x%0*x", bits / 4, w);
  return is_signed ? c_format("%i", static_cast<int>(w)) : c_format("%u", w);
}

// The prefix as printf prints it: the lowering puts it into the format string, where "%%" is one
// "%". Any other "%" would make the GPU read arguments that are not there; we keep it as written.
std::string printf_literal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '%' && i + 1 < s.size() && s[i + 1] == '%') ++i;
  }
  return out;
}

void run_print(Program& p, const Step& s) {
  if (!(p.observed & exec::kPrint)) return;  // nobody takes the text: nothing to format
  const Op& op = *s.op;
  const ir::Attr* pre = op.attr("prefix");
  const ir::Attr* hexa = op.attr("hex");
  const ir::Attr* sg = op.attr("isSigned");
  const bool hex = hexa && hexa->b;
  const std::string prefix = printf_literal(pre ? pre->s : "");
  const std::string pid = fmt::format("pid ({}, {}, {})", static_cast<uint32_t>(p.pid[0]),
                                      static_cast<uint32_t>(p.pid[1]), static_cast<uint32_t>(p.pid[2]));
  std::string out;
  if (s.in.empty()) out = pid + prefix + "\n";
  for (size_t a = 0; a < s.in.size(); ++a) {
    const ir::Type* t = s.in_types[a];
    // Missing isSigned (older TTIR): signed, as before.
    const bool is_signed = !sg || a >= sg->ints.size() || sg->ints[a] > 0;
    const std::string operand = s.in.size() > 1 ? fmt::format("(operand {}) ", a) : "";
    const size_t rank = t->shape.size();
    std::vector<int> width(rank);
    for (size_t d = 0; d < rank; ++d) width[d] = index_width(t->shape[d]);
    const std::byte* base = p.slot[s.in[a]];
    const int64_t eb = ir::elem_bytes(t->elem);
    std::vector<int64_t> coord(rank, 0);
    for (int64_t i = 0, n = t->numel(); i < n; ++i) {
      out += pid;
      out += " idx (";
      for (size_t d = 0; d < rank; ++d) out += fmt::format("{}{:>{}}", d ? ", " : "", coord[d], width[d]);
      out += ")";
      out += prefix;
      out += operand;
      out += format_element(base + i * eb, t->elem, hex, is_signed);
      out += "\n";
      for (size_t d = rank; d-- > 0;) {  // next row-major index
        if (++coord[d] < t->shape[d]) break;
        coord[d] = 0;
      }
    }
  }
  exec::PrintEvent e{&op, p.pid, std::move(out)};
  const exec::Dispatch& d = *p.dispatch;
  for (int i : d.print) d.observers[i]->on_print(e, p.state[i]);
}

// tt.assert: the GPU stops the kernel with "Assertion `msg` failed" per failing thread; we count
// the failure, send the failing lanes (count and first) to the observers and keep running so every
// finding is seen.
void run_assert(Program& p, const Step& s) {
  const uint8_t* c = p.at<uint8_t>(s.in[0]);
  int64_t n = s.in_types[0]->numel(), failed = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (!c[i]) {
      if (first < 0) first = i;
      ++failed;
    }
  if (!failed) return;
  p.stats->failed_asserts += 1;
  if (!(p.observed & exec::kAssert)) return;
  const ir::Attr* m = s.op->attr("message");
  exec::AssertEvent e{s.op, p.pid, m ? m->s : "", failed, first};
  const exec::Dispatch& d = *p.dispatch;
  for (int i : d.assert_) d.observers[i]->on_assert(e, p.state[i]);
}

}  // namespace

void lower_print(const Op&, Planner&, Step& s) { s.fn = run_print; }

void lower_assert(const Op& op, Planner& pl, Step& s) {
  if (s.in.empty() || s.in_types[0]->elem != ir::Elem::i1)
    pl.unsupported(op, "tt.assert needs an i1 condition");
  s.fn = run_assert;
}

}  // namespace tilescope::ops
