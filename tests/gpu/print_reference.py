#!/usr/bin/env python3
"""What tl.device_print prints on an NVIDIA GPU: the reference for tilescope's tt.print text.

    python3 tests/gpu/print_reference.py run > raw.txt          # on a CUDA machine (triton 3.6.0, torch)
    python3 tests/gpu/print_reference.py dedupe raw.txt tests/gpu/data/print_h200.txt.gz
    python3 tests/gpu/print_reference.py ttir DIR               # no GPU: the lit kernels' TTIR

`run` launches every kernel below and prints "=== SECTION" before each launch's output (the GPU's
printf buffer reaches stdout at the synchronize). The GPU prints an element once per thread that
holds it, in thread order, so `dedupe` keeps each line once per section, in first-seen order.
tests/gpu/data/print_h200.txt.gz was recorded on an H200 (Triton 3.6.0, torch 2.11.0+cu130, driver
580). tests/python/test_print_gpu.py compares tilescope's lines with the first five sections, whose
kernels are the TTIR of tests/lit/print_*.ttir (`ttir` writes it, locations removed); the sections
after them are the values that tests/cpp/ops/print_format_test.cpp quotes.
"""
from __future__ import annotations

import gzip
import math
import re
import sys

import triton
import triton.language as tl

# ---- the kernels of tests/lit/print_*.ttir ------------------------------------------------------


@triton.jit
def print_index_width_kernel():
    x = tl.arange(0, 128)
    tl.device_print("i", x)
    tl.device_print("m", tl.reshape(x, (4, 32)))
    tl.device_print("r", tl.arange(0, 16)[None, :])
    tl.device_print("k", tl.arange(0, 1024))
    tl.device_print("c", tl.reshape(tl.arange(0, 64), (2, 4, 8)))


@triton.jit
def print_scalar_kernel(x_ptr, n):
    tl.device_print("", tl.program_id(0))
    tl.device_print("pid y", tl.program_id(1))
    tl.device_print("x0", tl.load(x_ptr))
    tl.device_print("n", n)
    tl.device_print("hello")
    tl.device_print("50%%")


@triton.jit
def print_operands_kernel(x_ptr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    i = offs - 2
    tl.device_print("", i, x)
    tl.device_print("both", tl.program_id(0), i, hex=True)
    tl.device_print("s", i.to(tl.int64), tl.reshape(i, (2, 2)).to(tl.int8))


@triton.jit
def print_hex_kernel():
    i = tl.arange(0, 4) - 2
    tl.device_print("i8", i.to(tl.int8), hex=True)
    tl.device_print("u8", i.to(tl.uint8), hex=True)
    tl.device_print("i16", i.to(tl.int16), hex=True)
    tl.device_print("u16", i.to(tl.uint16), hex=True)
    tl.device_print("i32", i, hex=True)
    tl.device_print("u32", i.to(tl.uint32), hex=True)
    tl.device_print("i64", i.to(tl.int64), hex=True)
    tl.device_print("u64", i.to(tl.uint64), hex=True)
    tl.device_print("i1", i > 0, hex=True)
    f = i.to(tl.float32) * 0.3 + 0.7
    tl.device_print("f32", f, hex=True)
    tl.device_print("f16", f.to(tl.float16), hex=True)
    tl.device_print("bf16", f.to(tl.bfloat16), hex=True)
    tl.device_print("f64", f.to(tl.float64), hex=True)
    tl.device_print("f8", f.to(tl.float8e4nv), hex=True)


@triton.jit
def print_dtypes_kernel(x_ptr):
    i = tl.arange(0, 4) - 2
    tl.device_print("i8", i.to(tl.int8))
    tl.device_print("u8", i.to(tl.uint8))
    tl.device_print("u16", i.to(tl.uint16))
    tl.device_print("u32", i.to(tl.uint32))
    tl.device_print("i64", i.to(tl.int64) * 3000000000)
    tl.device_print("u64", i.to(tl.uint64))
    tl.device_print("i1", i > 0)
    f = i.to(tl.float32) * 0.3 + 0.7
    tl.device_print("f16", f.to(tl.float16))
    tl.device_print("bf16", f.to(tl.bfloat16))
    tl.device_print("f64", f.to(tl.float64) * 1e20)
    tl.device_print("e4m3", f.to(tl.float8e4nv))
    tl.device_print("e5m2", f.to(tl.float8e5))
    tl.device_print("inf", tl.full((2, ), float("inf"), tl.float32))
    tl.device_print("nan", tl.full((2, ), float("nan"), tl.float32))
    tl.device_print("neg nan", tl.full((2, ), -float("nan"), tl.float32))
    tl.device_print("neg zero", tl.full((2, ), -0.0, tl.float32))  # the frontend makes it +0
    tl.device_print("ptr", x_ptr + i)


LIT = {  # kernel name -> (signature, tests/lit file)
    "print_index_width_kernel": ({}, "print_index_width.ttir"),
    "print_scalar_kernel": ({"x_ptr": "*fp32", "n": "i64"}, "print_scalar.ttir"),
    "print_operands_kernel": ({"x_ptr": "*fp32"}, "print_operands.ttir"),
    "print_hex_kernel": ({}, "print_hex.ttir"),
    "print_dtypes_kernel": ({"x_ptr": "*i32"}, "print_dtypes.ttir"),
}

# ---- a sweep of values per element type (quoted by tests/cpp/ops/print_format_test.cpp) ----------


@triton.jit
def print_vector_kernel(X, HEX: tl.constexpr, N: tl.constexpr):
    tl.device_print("v", tl.load(X + tl.arange(0, N)), hex=HEX)


@triton.jit
def print_matrix_kernel(X, HEX: tl.constexpr):
    o = tl.arange(0, 2)[:, None] * 4 + tl.arange(0, 4)[None, :]
    tl.device_print("w", tl.load(X + o), hex=HEX)


@triton.jit
def print_pointer_kernel(X):
    tl.device_print("p", X + tl.arange(0, 4))
    q = (tl.arange(0, 4) * 0x1234).to(tl.int64).to(tl.pointer_type(tl.int32))
    tl.device_print("q", q)
    tl.device_print("qh", q, hex=True)


@triton.jit
def print_shapes_kernel(X):
    tl.device_print("s1", tl.arange(0, 1))
    tl.device_print("s2", tl.arange(0, 2))
    tl.device_print("s16", tl.arange(0, 16))
    tl.device_print("s1024", tl.arange(0, 1024))
    tl.device_print("s1x4", tl.arange(0, 4)[None, :])
    tl.device_print("s4x1", tl.arange(0, 4)[:, None])
    tl.device_print("s248", tl.reshape(tl.arange(0, 64), (2, 4, 8)))
    tl.device_print("s64x16", tl.reshape(tl.arange(0, 1024), (64, 16)))
    tl.device_print("s16x64", tl.reshape(tl.arange(0, 1024), (16, 64)))


@triton.jit
def print_misc_kernel(X, F, L):
    pid = tl.program_id(0)
    x = tl.arange(0, 4) - 2
    y = tl.load(F + tl.arange(0, 4))
    tl.device_print("", pid)
    tl.device_print("pz", tl.program_id(2))
    tl.device_print("l", tl.load(L))
    tl.device_print("lh", tl.load(L), hex=True)
    tl.device_print("f", tl.load(F))
    tl.device_print("m", x, y)
    tl.device_print("mh", x, x.to(tl.int64), x.to(tl.int8), hex=True)
    tl.device_print("ms", pid, x)
    tl.device_print("hello")
    tl.device_print("")
    tl.device_print("ab")
    tl.device_print("a%%b", x)
    tl.device_print("50%%")


FLOATS = [1.0, -2.5, 0.1, -0.0, math.inf, -math.inf, math.nan, 1e20, 3e-8, 65504.0, 123456.789, 1e-3, 0.5,
          2.0**-24, 1e300, -math.nan]


def run() -> None:
    import torch

    def section(name: str) -> None:
        torch.cuda.synchronize()
        print("=== " + name, flush=True)

    d = "cuda"
    section("index")
    print_index_width_kernel[(1, )](num_warps=4)
    section("scalar")
    print_scalar_kernel[(2, 2, 1)](torch.tensor([1.25], device=d), -5000000000, num_warps=1)
    section("operands")
    print_operands_kernel[(1, )](torch.arange(4, dtype=torch.float32, device=d), num_warps=1)
    section("hex")
    print_hex_kernel[(1, )](num_warps=1)
    x = torch.zeros(4, dtype=torch.int32, device=d)
    section("dtypes")
    print_dtypes_kernel[(1, )](x, num_warps=1)
    for hx in (False, True):
        for name, b in (("int8", 8), ("int16", 16), ("int32", 32), ("int64", 64)):
            ends = [-1, -(1 << (b - 1)), (1 << (b - 1)) - 1, 5, 0, 100, -100, 42]
            sv = torch.tensor(ends, dtype=getattr(torch, name))
            section(f"{name} hex={hx}")
            print_vector_kernel[(1, )](sv.to(d), hx, 8, num_warps=1)
            section(f"u{name} hex={hx}")
            print_vector_kernel[(1, )](sv.view(getattr(torch, "u" + name)).to(d), hx, 8, num_warps=1)
        section(f"bool hex={hx}")
        print_vector_kernel[(1, )](torch.tensor([1, 0, 1, 1], dtype=torch.bool, device=d), hx, 4, num_warps=1)
        for name in ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"):
            section(f"{name} hex={hx}")
            v = torch.tensor(FLOATS, dtype=torch.float64).to(getattr(torch, name))
            print_vector_kernel[(1, )](v.to(d), hx, 16, num_warps=1)
        for name in ("float16", "float32", "float64", "int8", "int64"):
            section(f"2d {name} hex={hx}")
            v = torch.tensor([1.5, -2.0, 0.1, 3.0, -1.0, 7.0, 0.0, 1e6]).to(getattr(torch, name))
            print_matrix_kernel[(1, )](v.to(d), hx, num_warps=1)
    section("pointers")
    print_pointer_kernel[(1, )](x, num_warps=1)
    torch.cuda.synchronize()
    print(f"(X is {x.data_ptr():#x})", flush=True)
    section("shapes")
    print_shapes_kernel[(1, )](x, num_warps=1)
    section("misc, grid (2, 3, 2)")
    print_misc_kernel[(2, 3, 2)](x, torch.tensor([1.5, -2.25, 0.1, 7.0], device=d),
                                 torch.tensor([-3], dtype=torch.int64, device=d), num_warps=1)
    section("end")


def dedupe(src: str, dst: str) -> None:
    out, seen = [], set()
    with open(src) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("=== "):
                seen = set()
                out.append(line)
            elif line not in seen:
                seen.add(line)
                out.append(line)
    with gzip.open(dst, "wt") as f:
        f.write("\n".join(out) + "\n")


def ttir(out_dir: str) -> None:
    import os

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    loc = re.compile(r" loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
    for name, (sig, lit) in LIT.items():
        k = triton.compile(ASTSource(fn=globals()[name], signature=sig, constexprs={}),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        lines = [loc.sub("", line) for line in k.asm["ttir"].splitlines() if not line.startswith("#loc")]
        with open(os.path.join(out_dir, lit), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "run":
        run()
    elif cmd == "dedupe" and len(sys.argv) == 4:
        dedupe(sys.argv[2], sys.argv[3])
    elif cmd == "ttir" and len(sys.argv) == 3:
        ttir(sys.argv[2])
    else:
        sys.exit(__doc__)
