"""Ground truth for tilescope's inline-PTX evaluator: each CASE's PTX run on a GPU, outputs saved.

    python3 tests/gpu/ptx_truth.py --out tests/gpu/data     # on a machine with a CUDA GPU and Triton

writes `ptx_truth.json`: device, versions, the input sets, and per case its 16 outputs (uint32) or the
error the GPU's compiler gave. `tests/python/test_inline_asm.py::test_gpu_ptx_truth` runs the same
cases through tilescope and compares bit for bit. Every case takes three int32 inputs ($1, $2, $3,
f32 values as their bit patterns) and writes one 32-bit $0.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import struct

import numpy as np


def f32_bits(values):
    return [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]


# f32 specials: ties to even for bf16 (1 + 2^-8, 1 + 3 * 2^-8), f16 overflow (70000), an f32 subnormal,
# infinities, NaN, fp8 e4m3 limits (448, 460 = between 448 and the next binade), a large value.
F = f32_bits([0.0, -0.0, 1.0, -2.5, 1.00390625, 1.01171875, 70000.0, 1e-40, math.inf, -math.inf, math.nan,
              448.0, 460.0, -1000.0, 3.0e9, 0.1])
_rs = np.random.RandomState(7)
I_A = [int(v) for v in _rs.randint(0, 2**32, size=16, dtype=np.uint64)]
I_B = [int(v) for v in _rs.randint(0, 2**32, size=16, dtype=np.uint64)]
I_C = [0, 1, 3, 7, 15, 16, 17, 31, 32, 33, 40, 63, 64, 0x7654, 0x3210, 0xB0A1]

# signed zeros and NaNs with sign and payload (0xffc00001, 0x7f800001 signalling) against each other
Z_A = f32_bits([0.0, -0.0, 0.0, -0.0, 1.0, -1.0]) + [0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FC00000] + \
    f32_bits([-0.0, 0.0, 2.0, -0.0, 1e-40, -1e-40])
Z_B = f32_bits([-0.0, 0.0, 0.0, -0.0]) + [0xFFC00001, 0x7F800001] + f32_bits([1.0, -1.0, 2.0, math.nan]) + \
    f32_bits([-1e-40, 1e-40, -0.0, 0.0, -0.0, 0.0])
INPUTS = {
    "z": [Z_A, Z_B, Z_A],
    "f": [F, F[5:] + F[:5], F[11:] + F[:11]],
    "i": [I_A, I_B, I_C],
}

U16 = ".reg .b16 t; {} cvt.u32.u16 $0, t;"  # a 16-bit result, zero-extended into $0

CASES = {
    # floats (f set)
    "min_f32": ("f", "min.f32 $0, $1, $2;"),
    "max_f32": ("f", "max.f32 $0, $1, $2;"),
    "min_ftz_f32": ("f", "min.ftz.f32 $0, $1, $2;"),
    "add_f32": ("f", "add.f32 $0, $1, $2;"),
    "sub_rn_f32": ("f", "sub.rn.f32 $0, $1, $2;"),
    "mul_rn_f32": ("f", "mul.rn.f32 $0, $1, $2;"),
    "fma_rn_f32": ("f", "fma.rn.f32 $0, $1, $2, $3;"),
    "add_sat_f32": ("f", "add.sat.f32 $0, $1, $2;"),
    "add_ftz_f32": ("f", "add.ftz.f32 $0, $1, $2;"),
    "neg_f32": ("f", "neg.f32 $0, $1;"),
    "abs_f32": ("f", "abs.f32 $0, $1;"),
    "cvt_rn_bf16x2": ("f", "cvt.rn.bf16x2.f32 $0, $1, $2;"),
    "cvt_rz_bf16x2": ("f", "cvt.rz.bf16x2.f32 $0, $1, $2;"),
    "cvt_rn_relu_bf16x2": ("f", "cvt.rn.relu.bf16x2.f32 $0, $1, $2;"),
    "cvt_rn_satfinite_bf16x2": ("f", "cvt.rn.satfinite.bf16x2.f32 $0, $1, $2;"),
    "cvt_rn_f16x2": ("f", "cvt.rn.f16x2.f32 $0, $1, $2;"),
    "cvt_rn_satfinite_f16x2": ("f", "cvt.rn.satfinite.f16x2.f32 $0, $1, $2;"),
    "cvt_rn_relu_f16x2": ("f", "cvt.rn.relu.f16x2.f32 $0, $1, $2;"),
    "cvt_e4m3x2": ("f", U16.format("cvt.rn.satfinite.e4m3x2.f32 t, $1, $2;")),
    "cvt_e5m2x2": ("f", U16.format("cvt.rn.satfinite.e5m2x2.f32 t, $1, $2;")),
    "cvt_relu_e4m3x2": ("f", U16.format("cvt.rn.satfinite.relu.e4m3x2.f32 t, $1, $2;")),
    "cvt_rn_f16": ("f", U16.format("cvt.rn.f16.f32 t, $1;")),
    "cvt_rn_bf16": ("f", U16.format("cvt.rn.bf16.f32 t, $1;")),
    "cvt_rzi_s32": ("f", "cvt.rzi.s32.f32 $0, $1;"),
    "cvt_rni_s32": ("f", "cvt.rni.s32.f32 $0, $1;"),
    "cvt_rmi_u32": ("f", "cvt.rmi.u32.f32 $0, $1;"),
    "cvt_rpi_s32": ("f", "cvt.rpi.s32.f32 $0, $1;"),
    "setp_lt_f32": ("f", ".reg .pred p; setp.lt.f32 p, $1, $2; selp.u32 $0, 1, 0, p;"),
    "setp_ltu_f32": ("f", ".reg .pred p; setp.ltu.f32 p, $1, $2; selp.u32 $0, 1, 0, p;"),
    "setp_ne_f32": ("f", ".reg .pred p; setp.ne.f32 p, $1, $2; selp.u32 $0, 1, 0, p;"),
    "setp_neu_f32": ("f", ".reg .pred p; setp.neu.f32 p, $1, $2; selp.u32 $0, 1, 0, p;"),
    "setp_nan_f32": ("f", ".reg .pred p; setp.nan.f32 p, $1, $2; selp.u32 $0, 1, 0, p;"),
    "fp8_roundtrip": ("f", ".reg .b16 t; .reg .b32 h; cvt.rn.satfinite.e4m3x2.f32 t, $1, $2; "
                           "cvt.rn.f16x2.e4m3x2 h, t; mov.b32 $0, h;"),
    # signed zeros and NaN payloads (z set)
    "min_f32_z": ("z", "min.f32 $0, $1, $2;"),
    "max_f32_z": ("z", "max.f32 $0, $1, $2;"),
    "add_f32_z": ("z", "add.f32 $0, $1, $2;"),
    "mul_f32_z": ("z", "mul.rn.f32 $0, $1, $2;"),
    "fma_f32_z": ("z", "fma.rn.f32 $0, $1, $2, $3;"),
    "div_rn_f32_z": ("z", "div.rn.f32 $0, $1, $2;"),
    "div_rn_f32": ("f", "div.rn.f32 $0, $1, $2;"),
    "cvt_bf16x2_z": ("z", "cvt.rn.bf16x2.f32 $0, $1, $2;"),
    "cvt_f32_f16_z": ("z", ".reg .b16 h; cvt.u16.u32 h, $1; cvt.f32.f16 $0, h;"),
    # integers (i set; $3 holds small counts and selectors)
    "shl_b32": ("i", "shl.b32 $0, $1, $3;"),
    "shr_s32": ("i", "shr.s32 $0, $1, $3;"),
    "shr_u32": ("i", "shr.u32 $0, $1, $3;"),
    "shf_l_wrap": ("i", "shf.l.wrap.b32 $0, $1, $2, $3;"),
    "shf_r_clamp": ("i", "shf.r.clamp.b32 $0, $1, $2, $3;"),
    "prmt": ("i", "prmt.b32 $0, $1, $2, $3;"),
    "lop3_e8": ("i", "lop3.b32 $0, $1, $2, $3, 0xE8;"),
    "lop3_96": ("i", "lop3.b32 $0, $1, $2, $3, 0x96;"),
    "lop3_1e": ("i", "lop3.b32 $0, $1, $2, $3, 0x1E;"),
    "mul_hi_s32": ("i", "mul.hi.s32 $0, $1, $2;"),
    "mul_hi_u32": ("i", "mul.hi.u32 $0, $1, $2;"),
    "mad_lo_s32": ("i", "mad.lo.s32 $0, $1, $2, $3;"),
    "min_s32": ("i", "min.s32 $0, $1, $2;"),
    "max_u32": ("i", "max.u32 $0, $1, $2;"),
    "add_sat_s32": ("i", "add.sat.s32 $0, $1, $2;"),
    "cvt_rn_f32_s32": ("i", "cvt.rn.f32.s32 $0, $1;"),
    "cvt_rn_f32_u32": ("i", "cvt.rn.f32.u32 $0, $1;"),
    "cvt_s32_s8": ("i", "cvt.s32.s8 $0, $1;"),
    "unpack_pack": ("i", ".reg .b8 b<4>; mov.b32 {b0, b1, b2, b3}, $1; mov.b32 $0, {b2, b0, b3, b1};"),
}


def kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def ptx_case(A, B, C, Z, ASM: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        a = tl.load(A + offs)
        b = tl.load(B + offs)
        c = tl.load(C + offs)
        z = tl.inline_asm_elementwise(ASM, "=r,r,r,r", [a, b, c], dtype=tl.int32, is_pure=True, pack=1)
        tl.store(Z + offs, z)

    return ptx_case


def run_case(k, asm, inputs, device):
    import torch
    args = [torch.tensor(np.array(x, dtype=np.uint32).view(np.int32), device=device) for x in inputs]
    z = torch.zeros(16, dtype=torch.int32, device=device)
    k[(1, )](*args, z, ASM=asm, BLOCK=16)
    return [int(v) for v in z.cpu().numpy().view(np.uint32)]


def main():
    import torch
    import triton
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    o = ap.parse_args()
    k = kernel()
    res = {"device": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
           "inputs": INPUTS, "cases": {}}
    for name, (s, asm) in CASES.items():
        try:
            res["cases"][name] = {"asm": asm, "set": s, "out": run_case(k, asm, INPUTS[s], "cuda")}
        except Exception as e:  # noqa: BLE001 - a PTX form the GPU's compiler rejects is recorded
            res["cases"][name] = {"asm": asm, "set": s, "error": str(e).splitlines()[0][:300]}
        print(name, res["cases"][name].get("error", "ok"), flush=True)
    os.makedirs(o.out, exist_ok=True)
    with open(os.path.join(o.out, "ptx_truth.json"), "w") as f:
        json.dump(res, f, indent=0)


if __name__ == "__main__":
    main()
