"""Deterministic inputs for the TTIR fixtures (numpy only; torch only for fp8 rounding).

A fixture argument (an entry of manifest.json "args") is either a scalar
``{"name", "kind": "scalar", "dtype", "value"}`` or a buffer
``{"name", "kind": "ptr", "dtype", "shape", "gen", "role"}``. ``role`` is "in" (read only), "out"
(starts as zeros unless ``gen`` says otherwise) or "inout". ``gen`` is one of:

  zeros | ones | arange | arange_bits | eye | full(V) | randn | randn*S | uniform(LO,HI) | randint(LO,HI) (HI exclusive)
  | perm (a permutation of 0..n-1) | bits (the list ``arg["bits"]`` of raw bit patterns, tiled)
  | values (the list ``arg["values"]`` of numbers, tiled; strings "nan", "inf", "-inf" allowed)

Float generators for bf16 / fp8 produce float32 values first and round them to nearest-even into the
narrow format; the array holds the bit patterns (uint16 for bf16, uint8 for fp8), which is the form
the tilescope CLI reads and writes.

The same function is used by the Python tests, the GPU ground-truth script and the benchmark, so all
three see identical inputs for a fixture.
"""
from __future__ import annotations

import re
import zlib

import numpy as np

# Storage dtype of a buffer element, by fixture dtype name (TTIR names; u* are unsigned views of iN).
STORAGE = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.uint16,
    "f8e5": np.uint8, "f8e4nv": np.uint8,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
}

# Triton signature strings (reference §4.1) by fixture dtype name.
TRITON_SIG = {
    "f64": "fp64", "f32": "fp32", "f16": "fp16", "bf16": "bf16", "f8e5": "fp8e5", "f8e4nv": "fp8e4nv",
    "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "u8": "u8", "u16": "u16", "u32": "u32",
    "u64": "u64",
}

# TTIR scalar type for the CLI's `--arg name=TYPE:VALUE` (TTIR is signless, reference §0.2).
TTIR_SCALAR = {"i32": "i32", "u32": "i32", "i64": "i64", "u64": "i64", "f32": "f32", "f64": "f64",
               "f16": "f16", "i16": "i16", "i8": "i8", "i1": "i1"}


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def f32_to_bf16_bits(x) -> np.ndarray:
    """Round float32 to bfloat16 bit patterns, round-to-nearest-even; NaN stays a quiet NaN."""
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    return np.where(nan, ((b >> 16) | 0x40).astype(np.uint16), rounded).astype(np.uint16)


def bf16_bits_to_f32(bits) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_fp8_bits(x, dtype: str) -> np.ndarray:
    """Round float32 to fp8 (e5m2 or e4m3fn) bit patterns with torch's round-to-nearest-even."""
    import torch
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    tt = torch.float8_e5m2 if dtype == "f8e5" else torch.float8_e4m3fn
    return t.to(tt).view(torch.uint8).numpy().copy()


def fp8_bits_to_f32(bits, dtype: str) -> np.ndarray:
    import torch
    t = torch.from_numpy(np.ascontiguousarray(bits, dtype=np.uint8))
    tt = torch.float8_e5m2 if dtype == "f8e5" else torch.float8_e4m3fn
    return t.view(tt).to(torch.float32).numpy().copy()


def to_float(arr: np.ndarray, dtype: str) -> np.ndarray:
    """Storage array -> float32 values (identity for plain numpy float types)."""
    if dtype == "bf16":
        return bf16_bits_to_f32(arr)
    if dtype in ("f8e5", "f8e4nv"):
        return fp8_bits_to_f32(arr, dtype)
    return arr


def from_float(values: np.ndarray, dtype: str) -> np.ndarray:
    """float values -> storage array, rounding to nearest-even into narrow float formats."""
    if dtype == "bf16":
        return f32_to_bf16_bits(values.astype(np.float32))
    if dtype in ("f8e5", "f8e4nv"):
        return f32_to_fp8_bits(values.astype(np.float32), dtype)
    return values.astype(STORAGE[dtype])


def _parse_values(vals):
    out = []
    for v in vals:
        if isinstance(v, str):
            out.append(float(v))  # "nan", "inf", "-inf"
        else:
            out.append(v)
    return out


def make_array(arg: dict, rng: np.random.Generator) -> np.ndarray:
    dtype = arg["dtype"]
    shape = tuple(arg["shape"])
    n = int(np.prod(shape)) if shape else 1
    gen = arg.get("gen", "zeros")
    st = STORAGE[dtype]
    is_float = dtype in ("f64", "f32", "f16", "bf16", "f8e5", "f8e4nv")
    if gen == "zeros":
        return np.zeros(shape, dtype=st)
    if gen == "ones":
        return from_float(np.ones(shape, np.float32), dtype) if is_float else np.ones(shape, dtype=st)
    if gen == "arange":
        a = np.arange(n).reshape(shape)
        return from_float(a.astype(np.float32), dtype) if is_float else a.astype(st)
    if gen == "arange_bits":  # every bit pattern 0, 1, 2, ... (all fp8 codes for a 256-element buffer)
        ut = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(st).itemsize]
        return np.arange(n).astype(ut).view(st).reshape(shape)
    if gen == "eye":
        return from_float(np.eye(shape[0], shape[1], dtype=np.float32), dtype) if is_float else \
            np.eye(shape[0], shape[1]).astype(st)
    if gen == "perm":
        return rng.permutation(n).reshape(shape).astype(st)
    if gen == "bits":
        bits = np.array(arg["bits"], dtype=np.uint64)
        reps = -(-n // len(bits))
        raw = np.tile(bits, reps)[:n]
        ut = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(st).itemsize]
        return raw.astype(ut).view(st).reshape(shape)
    if gen == "values":
        vals = _parse_values(arg["values"])
        reps = -(-n // len(vals))
        if is_float:
            v = np.tile(np.array(vals, dtype=np.float64), reps)[:n].reshape(shape)
            if dtype == "f64":
                return v
            return from_float(v.astype(np.float32), dtype)
        v = np.tile(np.array(vals, dtype=object), reps)[:n]
        return np.array([int(x) for x in v], dtype=np.int64).astype(st).reshape(shape)
    m = re.fullmatch(r"full\((.+)\)", gen)
    if m:
        v = float(m.group(1)) if is_float else int(m.group(1))
        if is_float:
            return from_float(np.full(shape, v, np.float64), dtype)
        return np.full(shape, v, dtype=np.int64).astype(st)
    m = re.fullmatch(r"randn(?:\*([0-9.e+-]+))?", gen)
    if m:
        s = float(m.group(1)) if m.group(1) else 1.0
        return from_float(rng.standard_normal(shape) * s, dtype)
    m = re.fullmatch(r"uniform\(([^,]+),([^)]+)\)", gen)
    if m:
        return from_float(rng.uniform(float(m.group(1)), float(m.group(2)), shape), dtype)
    m = re.fullmatch(r"randint\(([^,]+),([^)]+)\)", gen)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        v = rng.integers(lo, hi, size=shape, dtype=np.int64)
        return from_float(v.astype(np.float64), dtype) if is_float else v.astype(st)
    raise ValueError(f"unknown generator {gen!r} for argument {arg['name']}")


def make_inputs(fixture: dict) -> dict[str, np.ndarray]:
    """All buffer arguments of a fixture (inputs and initial outputs), by argument name."""
    rng = np.random.default_rng(seed_of(fixture["name"]))
    out = {}
    for a in fixture["args"]:
        if a["kind"] == "ptr":
            out[a["name"]] = np.ascontiguousarray(make_array(a, rng))
    return out


def scalars(fixture: dict) -> dict:
    return {a["name"]: a["value"] for a in fixture["args"] if a["kind"] == "scalar"}
