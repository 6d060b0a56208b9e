"""Generate the TTIR samples that tests/cpp/ir reads (triton 3.6.0, GPUTarget("cuda", 90, 32)).

Run: python3 tests/ttir/reader/gen_samples.py   (no GPU needed; writes <name>.ttir and, for block
pointer kernels, <name>.source.ttir = the IR before make_ttir, reference §4.2).
"""
import os
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend
from triton._C.libtriton import ir

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernels as K  # noqa: E402


def compile_ttir(fn, signature, constexprs=None, attrs=None, cap=90, debug=False):
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs or {}, attrs=attrs or {})
    target = GPUTarget("cuda", cap, 32)
    backend = make_backend(target)
    opts = backend.parse_options({"debug": debug})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
    source = str(mod)
    mod = backend.make_ttir(mod, {}, opts, cap)
    return str(mod), source


SAMPLES = {
    "add": (K.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
            {"BLOCK": 128}, {(0,): [["tt.divisibility", 16]]}),
    "matmul": (K.matmul_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                                 "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32", "scm": "i32", "scn": "i32",
                                 "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
               {"BM": 32, "BN": 32, "BK": 32}, None),
    "argmax": (K.argmax_kernel, {"x_ptr": "*fp32", "out_ptr": "*i32"}, None, None),
    "scan": (K.scan_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, None, None),
    "map_elementwise": (K.map_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, None, None),
    "cond_br": (K.early_ret_kernel, {"x_ptr": "*i32", "n": "i32"}, None, None),
    "call": (K.call_kernel, {"x_ptr": "*i32", "n": "i32"}, None, None),
    "while": (K.while_kernel, {"x_ptr": "*i32", "n": "i32"}, None, None),
    "print_assert": (K.print_assert_kernel, {"x_ptr": "*i32"}, None, None, {"debug": True}),
    "atomics": (K.atomic_kernel, {"x_ptr": "*i32", "f_ptr": "*fp32", "lock": "*i32"}, None, None),
    "dots": (K.dot_kernel, {"x_ptr": "*fp32", "h_ptr": "*fp16", "q_ptr": "*i8", "e_ptr": "*fp8e5", "o_ptr": "*fp32"}, None, None),
    "desc": (K.desc_kernel, {"a_ptr": "*fp16", "M": "i32", "N": "i32"}, None, None),
    "block_ptr": (K.block_ptr_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"}, None, None),
    "fp8": (K.fp8_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "b_ptr": "*bf16"}, None, None),
    "histogram": (K.hist_kernel, {"x_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}, None, None),
    "gather": (K.gather_kernel, {"x_ptr": "*fp32", "i_ptr": "*i32", "o_ptr": "*fp32"}, None, None),
    "extern": (K.extern_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, None, None),
    "inline_asm": (K.asm_kernel, {"x_ptr": "*i32", "y_ptr": "*i32"}, None, None),
    "shapes": (K.shape_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32"}, None, None),
    "elementwise": (K.elem_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "i_ptr": "*i32", "o_ptr": "*fp32", "n": "i32"},
                    None, None),
    "loop_annot": (K.loop_annot_kernel, {"x_ptr": "*fp32", "n": "i32"}, None, None),
    "dot_scaled": (K.dot_scaled_kernel, {"a_ptr": "*u8", "as_ptr": "*u8", "b_ptr": "*fp8e4nv", "o_ptr": "*fp32"}, None, None),
    "desc_arg": (K.desc_arg_kernel, {"d": "tensordesc<fp32[16,32]>", "out_ptr": "*fp32"}, None, None),
    "tuple_args": (K.tuple_kernel, {"foo": ("i32", "i32"), "out_ptr": "*i32"}, None, None),
    "rand": (K.rand_kernel, {"out_ptr": "*fp32", "seed": "i32"}, None, None),
}


def main():
    only = set(sys.argv[1:])
    for name, spec in SAMPLES.items():
        if only and name not in only:
            continue
        fn, sig, cx, attrs = spec[:4]
        extra = spec[4] if len(spec) > 4 else {}
        try:
            ttir, source = compile_ttir(fn, sig, cx, attrs, **extra)
        except Exception as e:  # report and continue: one bad kernel should not stop the rest
            print(f"{name}: FAILED {type(e).__name__}: {str(e)[-600:]}")
            continue
        with open(os.path.join(HERE, name + ".ttir"), "w") as f:
            f.write(ttir)
        if name in ("block_ptr",):
            with open(os.path.join(HERE, name + ".source.ttir"), "w") as f:
                f.write(source)
        print(f"{name}: {len(ttir)} bytes")


if __name__ == "__main__":
    main()
