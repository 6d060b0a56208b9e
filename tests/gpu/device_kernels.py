"""Kernels whose compiled forms (PTX, TTGIR, registers, spills, shared memory) were recorded on an
NVIDIA H200 by tests/gpu/record_device.py, and compared with what tilescope's emulated device makes
on the CPU (tests/python/test_device.py). Each entry of CASES: name -> (kernel, make_args(torch,
device), launch options)."""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # Triton's tutorial 02 (fused softmax), unchanged.
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, c, mask=c_mask)


@triton.jit
def sort_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # A large tile per thread (one warp, 8192 elements): ptxas spills registers to local memory.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sort(x) + tl.cumsum(x, 0))


def _add_args(torch, device):
    x = torch.rand(4096, device=device)
    return (x, torch.rand(4096, device=device), torch.empty(4096, device=device), 4096), {"BLOCK": 1024}


def _softmax_args(torch, device):
    x = torch.randn(1823, 781, device=device)
    y = torch.empty_like(x)
    return (y, x, x.stride(0), y.stride(0), 1823, 781), {"BLOCK_SIZE": 1024, "num_stages": 4}


def _matmul_args(torch, device):
    a = torch.randn(512, 512, device=device, dtype=torch.float16)
    b = torch.randn(512, 512, device=device, dtype=torch.float16)
    c = torch.empty(512, 512, device=device, dtype=torch.float16)
    return (a, b, c, 512, 512, 512, *a.stride(), *b.stride(), *c.stride()), {"BLOCK_M": 128, "BLOCK_N": 128,
                                                                              "BLOCK_K": 64}


def _sort_args(torch, device):
    return (torch.randn(8192, device=device), torch.empty(8192, device=device)), {"BLOCK": 8192}


# name -> (kernel, make_args, launch options)
CASES = {
    "add": (add_kernel, _add_args, {"num_warps": 4}),
    "softmax": (softmax_kernel, _softmax_args, {"num_warps": 8}),
    "matmul": (matmul_kernel, _matmul_args, {"num_warps": 8, "num_stages": 3}),
    "sort": (sort_kernel, _sort_args, {"num_warps": 1}),
}


def normalized(ext: str, text: str, kernel_dir: str) -> str:
    """The text of a compiled form without what depends on where files lie: the kernels' directory
    and Triton's installation in TTIR / TTGIR locations; PTX without its `.file` lines and its DWARF
    sections (which encode the same paths as bytes)."""
    import re

    text = text.replace(kernel_dir.rstrip("/") + "/", "")
    if ext == "ptx":
        text = text.split("\t.section\t.debug_", 1)[0]
        return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(".file"))
    return re.sub(r'"[^"]*/triton/language/', '"triton/language/', text)
