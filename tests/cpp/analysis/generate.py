#!/usr/bin/env python3
"""Write tests/cpp/analysis/<kernel>.ttir from kernels.py with Triton (cuda:90, no GPU); run from the
repository root so locations read "tests/cpp/analysis/kernels.py". Arguments: the kernels to write
(default: all)."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
HERE = os.path.join("tests", "cpp", "analysis")

KERNELS = {
    "undef_sum_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 16}),
    "where_sum_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 16}),
    "overflow_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32"}, {"BLOCK": 16}),
    "divide_kernel": ({"a_ptr": "*i32", "b_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}, {"BLOCK": 16}),
    "undef_store_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 16}),
    "atomic_hist_kernel": ({"idx_ptr": "*i32", "hist_ptr": "*i32"}, {"BLOCK": 16}),
    "undef_rows_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "rows": "i32"}, {"ROWS": 4, "COLS": 8}),
    "loop_undef_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 16}),
    "undef_branch_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {}),
    "lock_release_kernel": ({"lock_ptr": "*i32", "counter_ptr": "*i32"}, {}),
    "lock_relaxed_kernel": ({"lock_ptr": "*i32", "counter_ptr": "*i32"}, {}),
    "half_pairs_kernel": ({"out_ptr": "*fp16"}, {}),
    "slice_copy_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 16}),
    "last_reduce_kernel": ({"x_ptr": "*fp32", "partial_ptr": "*fp32", "counter_ptr": "*i32", "out_ptr": "*fp32"},
                           {"NPROG": 4, "BLOCK": 16}),
    "same_out_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 16}),
    "scatter_add_kernel": ({"idx_ptr": "*i32", "src_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 8}),
    "dup_store_kernel": ({"out_ptr": "*i32"}, {"BLOCK": 8}),
    "dup_same_kernel": ({"out_ptr": "*i32"}, {"BLOCK": 8}),
    "shift_kernel": ({"buf_ptr": "*i32", "out_ptr": "*i32"}, {"BLOCK": 8}),
    "shift_barrier_kernel": ({"buf_ptr": "*i32", "out_ptr": "*i32"}, {"BLOCK": 8}),
}


def main():
    os.chdir(ROOT)
    sys.path.insert(0, HERE)
    import kernels
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton._C.libtriton import ir
    only = sys.argv[1:]  # kernel names to write (default: all)
    for name, (sig, const) in KERNELS.items():
        if only and name not in only:
            continue
        fn = getattr(kernels, name)
        full = {a: (sig[a] if a in sig else "constexpr") for a in fn.arg_names}
        src = ASTSource(fn=fn, signature=full, constexprs=const)
        target = GPUTarget("cuda", 90, 32)
        backend = make_backend(target)
        opts = backend.parse_options({"debug": False, "num_warps": 4})
        ctx = ir.context()
        ir.load_dialects(ctx)
        backend.load_dialects(ctx)
        mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
        mod = backend.make_ttir(mod, {}, opts, 90)
        text = str(mod).replace(f'"{ROOT}/', '"')
        with open(os.path.join(HERE, name.replace("_kernel", "") + ".ttir"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
