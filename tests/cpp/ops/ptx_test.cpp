// The PTX evaluator of tt.elementwise_inline_asm (src/ops/ptx.h), one instruction at a time.
// Expected values are derived by hand from the PTX ISA sections cited in src/ops/ptx.cpp, or (the
// f32 -> bf16 / f16 / fp8 roundings of in-range values) printed by torch 2.13's RTNE casts:
//   torch.tensor([v], dtype=torch.float32).to(torch.bfloat16 / float16 / float8_e4m3fn / float8_e5m2)
#include "src/ops/ptx.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace tilescope::ops;

namespace {

uint64_t f32(float v) { return std::bit_cast<uint32_t>(v); }
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs `text` with $0 the 32-bit output and $1.. the 32-bit inputs `in`; returns $0.
uint64_t run32(const std::string& text, const std::vector<uint64_t>& in, int out_bits = 32,
               int in_bits = 32) {
  std::vector<int> widths{out_bits};
  for (size_t i = 0; i < in.size(); ++i) widths.push_back(in_bits);
  ptx::Program p = ptx::parse(text, widths);
  std::vector<uint64_t> regs(static_cast<size_t>(p.num_regs), 0);
  for (size_t i = 0; i < in.size(); ++i) regs[i + 1] = in[i];
  ptx::run(p, regs.data());
  return regs[0];
}

std::string error_of(const std::string& text, int operands = 2) {
  try {
    ptx::parse(text, std::vector<int>(static_cast<size_t>(operands), 32));
  } catch (const ptx::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Ptx, CvtBf16x2F32PacksARoundedToNearestEvenIntoTheUpperHalf) {
  // torch: 1.0 -> 0x3f80, -2.5 -> 0xc020; 1+2^-8 is a tie -> even 0x3f80; 1+3*2^-8 -> 0x3f82
  EXPECT_EQ(run32("cvt.rn.bf16x2.f32 $0, $1, $2;", {f32(1.0f), f32(-2.5f)}), 0x3F80C020u);
  EXPECT_EQ(run32("cvt.rn.bf16x2.f32 $0, $1, $2;", {f32(1.00390625f), f32(1.01171875f)}), 0x3F803F82u);
  // NaN -> the canonical NaN 0x7fff; 1e-40 (f32 subnormal) -> bf16 subnormal 0x0001 without .ftz
  EXPECT_EQ(run32("cvt.rn.bf16x2.f32 $0, $1, $2;", {f32(kNaN), f32(1e-40f)}), 0x7FFF0001u);
  // .rz truncates: 1.01171875 -> 0x3f81
  EXPECT_EQ(run32("cvt.rz.bf16x2.f32 $0, $1, $2;", {f32(1.01171875f), f32(-1.0f)}), 0x3F81BF80u);
  // .relu: negatives become +0
  EXPECT_EQ(run32("cvt.rn.relu.bf16x2.f32 $0, $1, $2;", {f32(-3.0f), f32(2.0f)}), 0x00004000u);
}

TEST(Ptx, CvtF16x2F32OverflowsToInfUnlessSatfinite) {
  // torch: 65504 -> 0x7bff, 0.1 -> 0x2e66
  EXPECT_EQ(run32("cvt.rn.f16x2.f32 $0, $1, $2;", {f32(65504.0f), f32(0.1f)}), 0x7BFF2E66u);
  EXPECT_EQ(run32("cvt.rn.f16x2.f32 $0, $1, $2;", {f32(70000.0f), f32(-kInf)}), 0x7C00FC00u);
  EXPECT_EQ(run32("cvt.rn.satfinite.f16x2.f32 $0, $1, $2;", {f32(70000.0f), f32(-kInf)}), 0x7BFFFBFFu);
}

TEST(Ptx, CvtFp8x2SaturatesToTheLargestFinite) {
  // torch: e4m3 1.0 -> 0x38, -2.5 -> 0xc2; e5m2 1.0 -> 0x3c, 0.1 -> 0x2e. The result is 16 bits.
  EXPECT_EQ(run32("cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;", {f32(1.0f), f32(-2.5f)}, 16), 0x38C2u);
  EXPECT_EQ(run32("cvt.rn.satfinite.e5m2x2.f32 $0, $1, $2;", {f32(1.0f), f32(0.1f)}, 16), 0x3C2Eu);
  // e4m3: 1000 and +inf -> 448 (0x7e), NaN -> 0x7f; e5m2: 1e6 -> 57344 (0x7b), -inf -> 0xfb
  EXPECT_EQ(run32("cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;", {f32(1000.0f), f32(kNaN)}, 16), 0x7E7Fu);
  EXPECT_EQ(run32("cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;", {f32(kInf), f32(-kInf)}, 16), 0x7EFEu);
  EXPECT_EQ(run32("cvt.rn.satfinite.e5m2x2.f32 $0, $1, $2;", {f32(1e6f), f32(-kInf)}, 16), 0x7BFBu);
  // from f16x2: the upper half goes to the upper byte (f16 1.0 = 0x3c00, -2.5 = 0xc100)
  EXPECT_EQ(run32("cvt.rn.satfinite.e4m3x2.f16x2 $0, $1;", {0x3C00C100u}, 16), 0x38C2u);
  // back to f16x2, exactly
  EXPECT_EQ(run32("cvt.rn.f16x2.e4m3x2 $0, $1;", {0x38C2u}, 32, 16), 0x3C00C100u);
  // fp8 needs .satfinite (PTX requires it)
  EXPECT_NE(error_of("cvt.rn.e4m3x2.f32 $0, $1, $2;", 3).find("unsupported PTX instruction"),
            std::string::npos);
}

TEST(Ptx, CvtScalars) {
  EXPECT_EQ(run32("cvt.u32.u8 $0, $1;", {0x1FFu}), 0xFFu);               // zero-extends the low byte
  EXPECT_EQ(run32("cvt.s32.s8 $0, $1;", {0x80u}), 0xFFFFFF80u);          // sign-extends
  EXPECT_EQ(run32("cvt.rn.f32.s32 $0, $1;", {16777217u}), 0x4B800000u);  // 2^24+1 -> 2^24 (even)
  EXPECT_EQ(run32("cvt.rn.f32.s32 $0, $1;", {0xFFFFFFFFu}), f32(-1.0f));
  EXPECT_EQ(run32("cvt.rzi.s32.f32 $0, $1;", {f32(-3.7f)}), 0xFFFFFFFDu);  // -3
  EXPECT_EQ(run32("cvt.rni.s32.f32 $0, $1;", {f32(2.5f)}), 2u);            // ties to even
  EXPECT_EQ(run32("cvt.rmi.s32.f32 $0, $1;", {f32(-0.5f)}), 0xFFFFFFFFu);
  EXPECT_EQ(run32("cvt.rzi.s32.f32 $0, $1;", {f32(3e9f)}), 0x7FFFFFFFu);  // saturates
  EXPECT_EQ(run32("cvt.rzi.s32.f32 $0, $1;", {f32(kNaN)}), 0u);           // NaN -> 0
  EXPECT_EQ(run32("cvt.rzi.u32.f32 $0, $1;", {f32(-5.0f)}), 0u);
  EXPECT_EQ(run32("cvt.f32.bf16 $0, $1;", {0xC020u}, 32, 16), f32(-2.5f));
  EXPECT_EQ(run32("cvt.f32.f16 $0, $1;", {0x2E66u}, 32, 16), f32(0.0999755859375f));
  EXPECT_EQ(run32("cvt.rn.bf16.f32 $0, $1;", {f32(3.14159265f)}, 16), 0x4049u);
  EXPECT_EQ(run32("cvt.rn.f16.f32 $0, $1;", {f32(300.0f)}, 16), 0x5CB0u);
}

TEST(Ptx, MovPacksAndUnpacksVectors) {
  // §9.7.9.9: element 0 of the vector is the least significant
  EXPECT_EQ(run32(".reg .b16 lo, hi; mov.b32 {lo, hi}, $1; mov.b32 $0, {hi, lo};", {0x12345678u}),
            0x56781234u);
  EXPECT_EQ(
      run32(".reg .b8 t<4>; mov.b32 {t0, t1, t2, t3}, $1; mov.b32 $0, {t3, t2, t1, t0};", {0x11223344u}),
      0x44332211u);
  EXPECT_EQ(run32("mov.b32 $0, 0x0000ABCD;", {}), 0xABCDu);
  EXPECT_EQ(run32("mov.b32 $0, 0f3F800000;", {}), f32(1.0f));
  EXPECT_EQ(run32("mov.u32 $0, -1;", {}), 0xFFFFFFFFu);
}

TEST(Ptx, PrmtSelectsBytesAndReplicatesSigns) {
  // §9.7.9.7: bytes of {b, a} are numbered 0-3 (a) and 4-7 (b); selector 0x7658: a.b0, b.b1, b.b2, b.b3
  // with bit 3 of the first nibble set: the sign of a.b0 = 0x10 (0) -> 0x00
  EXPECT_EQ(run32("prmt.b32 $0, $1, $2, $3;", {0x80402010u, 0x08040201u, 0x7658u}), 0x08040200u);
  EXPECT_EQ(run32("prmt.b32 $0, $1, $2, $3;", {0x80402010u, 0x08040201u, 0x0000000Bu}), 0x101010FFu);
  EXPECT_EQ(run32("prmt.b32 $0, $1, $2, 0x5410;", {0x03020100u, 0x07060504u}), 0x05040100u);
}

TEST(Ptx, Lop3AppliesTheLookupTable) {
  // §9.7.8.5: with a = 0xF0, b = 0xCC, c = 0xAA in every byte, every byte of the result is the table
  for (uint64_t lut : {0x96u, 0xE8u, 0x80u, 0x01u, 0xFEu})
    EXPECT_EQ(run32("lop3.b32 $0, $1, $2, $3, " + std::to_string(lut) + ";",
                    {0xF0F0F0F0u, 0xCCCCCCCCu, 0xAAAAAAAAu}),
              lut * 0x01010101u);
  EXPECT_EQ(run32("lop3.b32 $0, $1, $2, $3, 0xEA;", {0x0F000000u, 0xFF000000u, 0x000000FFu}), 0x0F0000FFu);
}

TEST(Ptx, LogicAndShifts) {
  EXPECT_EQ(run32("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", {0xFFFFFFFFu}), 0xF8F8F8F8u);
  EXPECT_EQ(run32("or.b32 $0, $1, $2;", {0xF0u, 0x0Fu}), 0xFFu);
  EXPECT_EQ(run32("xor.b32 $0, $1, $2;", {0xFFu, 0x0Fu}), 0xF0u);
  EXPECT_EQ(run32("not.b32 $0, $1;", {0u}), 0xFFFFFFFFu);
  EXPECT_EQ(run32("shl.b32 $0, $1, $2;", {1u, 33u}), 0u);  // §9.7.8.7: clamped to the width
  EXPECT_EQ(run32("shr.s32 $0, $1, $2;", {0x80000000u, 40u}), 0xFFFFFFFFu);
  EXPECT_EQ(run32("shr.u32 $0, $1, $2;", {0x80000000u, 31u}), 1u);
  EXPECT_EQ(run32("shr.b32 $0, $1, $2;", {0x80000000u, 32u}), 0u);
  // shf.l.wrap: (y << n) | (x >> (32 - n)) (Triton's test_inline_asm), n = 17
  const uint64_t x = 0x89ABCDEFu, y = 0x01234567u;
  EXPECT_EQ(run32("shf.l.wrap.b32 $0, $1, $2, $3;", {x, y, 17u}), ((y << 17) | (x >> 15)) & 0xFFFFFFFFu);
  EXPECT_EQ(run32("shf.l.wrap.b32 $0, $1, $2, $3;", {x, y, 49u}), ((y << 17) | (x >> 15)) & 0xFFFFFFFFu);
  EXPECT_EQ(run32("shf.r.clamp.b32 $0, $1, $2, $3;", {x, y, 40u}), y);  // n clamps to 32: the upper word
  EXPECT_EQ(run32("shf.r.wrap.b32 $0, $1, $2, $3;", {x, y, 4u}), 0x789ABCDEu);
}

TEST(Ptx, IntegerArithmetic) {
  EXPECT_EQ(run32("sub.u32 $0, $1, $2;", {1u, 2u}), 0xFFFFFFFFu);
  EXPECT_EQ(run32("add.s32 $0, $1, $2;", {0x7FFFFFFFu, 1u}), 0x80000000u);  // wraps
  EXPECT_EQ(run32("add.sat.s32 $0, $1, $2;", {0x7FFFFFFFu, 1u}), 0x7FFFFFFFu);
  EXPECT_EQ(run32("mul.lo.u32 $0, $1, $2;", {0x10000u, 0x10001u}), 0x10000u);
  EXPECT_EQ(run32("mul.hi.u32 $0, $1, $2;", {0xFFFFFFFFu, 0xFFFFFFFFu}), 0xFFFFFFFEu);
  EXPECT_EQ(run32("mul.hi.s32 $0, $1, $2;", {0xFFFFFFFFu, 5u}), 0xFFFFFFFFu);  // -5 >> 32 = -1
  EXPECT_EQ(run32("mul.wide.u16 $0, $1, $2;", {0xFFFFu, 0xFFFFu}, 32, 16), 0xFFFE0001u);
  EXPECT_EQ(run32("mad.lo.s32 $0, $1, $2, $3;", {6u, 7u, 0xFFFFFFFFu}), 41u);
  EXPECT_EQ(run32("min.s32 $0, $1, $2;", {0xFFFFFFFFu, 1u}), 0xFFFFFFFFu);
  EXPECT_EQ(run32("min.u32 $0, $1, $2;", {0xFFFFFFFFu, 1u}), 1u);
  EXPECT_EQ(run32("max.s32 $0, $1, $2;", {0xFFFFFFFFu, 1u}), 1u);
  EXPECT_EQ(run32("neg.s32 $0, $1;", {5u}), 0xFFFFFFFBu);
  EXPECT_EQ(run32("abs.s32 $0, $1;", {0xFFFFFFFBu}), 5u);
}

TEST(Ptx, FloatArithmetic) {
  EXPECT_EQ(run32("add.f32 $0, $1, $2;", {f32(1.5f), f32(2.25f)}), f32(3.75f));
  EXPECT_EQ(run32("add.rn.f32 $0, $1, $2;", {f32(kInf), f32(-kInf)}), 0x7FFFFFFFu);  // canonical NaN
  EXPECT_EQ(run32("mul.rn.f32 $0, $1, 0f40000000;", {f32(3.0f)}), f32(6.0f));
  // fma rounds once: (1+2^-12)^2 - 1 = 2^-11 + 2^-24 exactly (0x3a000400); mul then add gives 2^-11
  EXPECT_EQ(run32("fma.rn.f32 $0, $1, $1, $2;", {0x3F800800u, f32(-1.0f)}), 0x3A000400u);
  EXPECT_EQ(run32("mul.rn.f32 $0, $1, $1; add.rn.f32 $0, $0, $2;", {0x3F800800u, f32(-1.0f)}), 0x3A000000u);
  // div.rn is IEEE division: 1/3 = 0x3eaaaaab (RTNE of 0.3333...), 1/0 = +inf; div.approx is refused
  EXPECT_EQ(run32("div.rn.f32 $0, $1, $2;", {f32(1.0f), f32(3.0f)}), 0x3EAAAAABu);
  EXPECT_EQ(run32("div.rn.f32 $0, $1, $2;", {f32(1.0f), f32(0.0f)}), f32(kInf));
  EXPECT_NE(error_of("div.approx.f32 $0, $1, $1;").find("modifier '.approx'"), std::string::npos);
  // §9.7.3.10-11: a NaN operand gives the other; -0 < +0
  EXPECT_EQ(run32("min.f32 $0, $1, $2;", {f32(kNaN), f32(1.0f)}), f32(1.0f));
  EXPECT_EQ(run32("max.f32 $0, $1, $2;", {f32(2.0f), f32(kNaN)}), f32(2.0f));
  EXPECT_EQ(run32("min.f32 $0, $1, $2;", {f32(kNaN), f32(kNaN)}), 0x7FFFFFFFu);
  EXPECT_EQ(run32("min.f32 $0, $1, $2;", {f32(0.0f), f32(-0.0f)}), 0x80000000u);
  EXPECT_EQ(run32("max.f32 $0, $1, $2;", {f32(-0.0f), f32(0.0f)}), 0u);
  EXPECT_EQ(run32("add.ftz.f32 $0, $1, $2;", {1u, 0u}), 0u);  // subnormal flushed
  EXPECT_EQ(run32("add.sat.f32 $0, $1, $2;", {f32(0.75f), f32(0.5f)}), f32(1.0f));
  EXPECT_EQ(run32("neg.f32 $0, $1;", {f32(2.0f)}), f32(-2.0f));
  EXPECT_EQ(run32("abs.f32 $0, $1;", {f32(-2.0f)}), f32(2.0f));
  // a NaN operand gives the canonical NaN, not a sign flip (measured: tests/gpu/data/ptx_truth.json)
  EXPECT_EQ(run32("neg.f32 $0, $1;", {0x7FC00000u}), 0x7FFFFFFFu);
  EXPECT_EQ(run32("abs.f32 $0, $1;", {0xFFC00000u}), 0x7FFFFFFFu);
}

TEST(Ptx, SetpSelpAndGuards) {
  const std::string lt0 = ".reg .pred p; setp.lt.s32 p, $1, 0; selp.b32 $0, 1, 2, p;";
  EXPECT_EQ(run32(lt0, {0xFFFFFFFFu}), 1u);
  EXPECT_EQ(run32(lt0, {0u}), 2u);
  // ordered comparisons are false on NaN, the u forms true (§9.7.7.1)
  const std::string f = ".reg .pred p; setp.{}.f32 p, $1, $2; selp.u32 $0, 1, 0, p;";
  auto cmp = [&](const std::string& c, float a, float b) {
    std::string t = f;
    t.replace(t.find("{}"), 2, c);
    return run32(t, {f32(a), f32(b)});
  };
  EXPECT_EQ(cmp("lt", kNaN, 1.0f), 0u);
  EXPECT_EQ(cmp("ltu", kNaN, 1.0f), 1u);
  EXPECT_EQ(cmp("ne", kNaN, 1.0f), 0u);
  EXPECT_EQ(cmp("neu", kNaN, 1.0f), 1u);
  EXPECT_EQ(cmp("nan", 0.0f, kNaN), 1u);
  EXPECT_EQ(cmp("ge", 2.0f, 2.0f), 1u);
  EXPECT_EQ(run32(".reg .pred p; setp.lo.u32 p, $1, $2; selp.b32 $0, 7, 9, p;", {1u, 0xFFFFFFFFu}), 7u);
  // a guarded instruction runs only when its predicate holds
  EXPECT_EQ(run32(".reg .pred p; setp.eq.u32 p, $1, 0; mov.b32 $0, 5; @p mov.b32 $0, 6;", {0u}), 6u);
  EXPECT_EQ(run32(".reg .pred p; setp.eq.u32 p, $1, 0; mov.b32 $0, 5; @!p mov.b32 $0, 6;", {0u}), 5u);
}

TEST(Ptx, ScopesAndCommentsAreAccepted) {
  EXPECT_EQ(run32("{ // unpack\n .reg .b16 a, b; /* two halves */ mov.b32 {a, b}, $1; mov.b32 $0, {b, a}; }",
                  {0x00010002u}),
            0x00020001u);
}

TEST(Ptx, GridDependencyControlDoesNothing) {
  // As tl.extra.cuda.gdc_wait / gdc_launch_dependents emit them (Triton 3.6, tutorial 11): launches run to
  // completion one after another, so both are no-ops; the dummy output keeps its value.
  EXPECT_EQ(run32("griddepcontrol.wait; // dummy $0", {}), 0u);
  EXPECT_EQ(run32("griddepcontrol.launch_dependents; mov.b32 $0, $1;", {7u}), 7u);
  EXPECT_EQ(error_of("griddepcontrol.sync;"), "unsupported PTX instruction 'griddepcontrol.sync'");
}

TEST(Ptx, UnsupportedInstructionsNameThemselves) {
  EXPECT_EQ(error_of("ld.global.b8 $0, [$1];"), "unsupported PTX instruction 'ld.global.b8'");
  EXPECT_EQ(error_of("mov.u32 $0, %tid.x;"),
            "unsupported PTX instruction 'mov.u32 $0, %tid.x' (unknown register "
            "'%tid.x')");
  EXPECT_EQ(error_of("add.rz.f32 $0, $1, $1;"),
            "unsupported PTX instruction 'add.rz.f32' (only round-to-nearest .rn)");
  EXPECT_EQ(error_of("prmt.b32.f4e $0, $1, $1, $1;"),
            "unsupported PTX instruction 'prmt.b32.f4e' (modifier '.f4e')");
  EXPECT_EQ(error_of("bra DONE;"), "unsupported PTX instruction 'bra'");
  EXPECT_EQ(error_of("mov.b32 $0, $5;"),
            "PTX operand '$5' in 'mov.b32 $0, $5' is not one of the 2 operands of the op");
  EXPECT_EQ(error_of("mov.b32 $0, $1"), "PTX statement 'mov.b32 $0, $1' does not end with ';'");
  EXPECT_EQ(error_of("add.u32 $0, $1;"), "PTX instruction 'add.u32 $0, $1' takes 3 operands, not 2");
  // malformed numbers are errors, never std exceptions or undefined behaviour
  EXPECT_EQ(error_of("mov.b32 $0, $99999999999999999999;"),
            "PTX operand '$99999999999999999999' in 'mov.b32 $0, $99999999999999999999' is not one of the 2 "
            "operands "
            "of the op");
  EXPECT_NE(error_of("mov.b32 $0, 0fZZ;").find("malformed PTX immediate"), std::string::npos);
  EXPECT_NE(error_of("mov.b32 $0, 0f1234567890ABCDEF1234;").find("malformed PTX immediate"),
            std::string::npos);
  EXPECT_NE(error_of("mov.f32 $0, 1e99999;").find("malformed PTX immediate"), std::string::npos);
  EXPECT_NE(error_of(".reg .b32 r<99999999999>;").find("malformed PTX declaration"), std::string::npos);
}

}  // namespace
