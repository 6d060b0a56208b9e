"""Kernels compiled by gen_samples.py into the reader's TTIR samples (tests/cpp/ir)."""
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    c = acc.to(tl.float16)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def argmax_kernel(x_ptr, out_ptr):
    r = tl.arange(0, 16)
    x2 = tl.load(x_ptr + r[:, None] * 16 + r[None, :])
    am = tl.argmax(x2, axis=1)
    s = tl.sum(x2, axis=1)
    full = tl.max(x2, axis=1)
    tl.store(out_ptr + r, am + (s + full).to(tl.int32))


@triton.jit
def scan_kernel(x_ptr, out_ptr):
    r = tl.arange(0, 16)
    x2 = tl.load(x_ptr + r[:, None] * 16 + r[None, :])
    cs = tl.cumsum(x2, axis=1)
    cp = tl.cumprod(x2, axis=0, reverse=True)
    tl.store(out_ptr + r[:, None] * 16 + r[None, :], cs + cp)


@triton.jit
def _maxf(x, y):
    return tl.maximum(x, y)


@triton.jit
def map_kernel(x_ptr, y_ptr):
    r = tl.arange(0, 32)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    z = tl.map_elementwise(_maxf, x, y)
    tl.store(y_ptr + r, z)


@triton.jit
def early_ret_kernel(x_ptr, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    v = tl.load(x_ptr + pid)
    tl.store(x_ptr + pid, v + 1)


@triton.jit
def _helper_ret(x):
    if x > 10:
        return x * 2
    return x + 1


@triton.jit(noinline=True)
def _noinl(p, v):
    tl.store(p, v)


@triton.jit
def call_kernel(x_ptr, n):
    acc = 0
    for i in range(n):
        acc += _helper_ret(i)
    _noinl(x_ptr, acc)


@triton.jit
def while_kernel(x_ptr, n):
    j = 0
    while j < n:
        j += 3
    tl.store(x_ptr, j)


@triton.jit
def print_assert_kernel(x_ptr):
    r = tl.arange(0, 8)
    v = tl.load(x_ptr + r)
    tl.device_print(" rnd hex", v, hex=True)
    acc = tl.sum(v)
    tl.device_print("acc", acc)
    tl.device_assert(acc >= 0, "acc negative")
    tl.store(x_ptr + r, v + 1)


@triton.jit
def atomic_kernel(x_ptr, f_ptr, lock):
    r = tl.arange(0, 64)
    m = r < 40
    tl.atomic_add(x_ptr + r, 1, mask=m)
    tl.atomic_add(f_ptr + r, 1.5, sem="release", scope="sys")
    tl.atomic_min(x_ptr + r, 3, sem="relaxed", scope="cta")
    tl.atomic_max(f_ptr + r, 2.0)
    tl.atomic_xchg(x_ptr, 5)
    while tl.atomic_cas(lock, 0, 1) != 0:
        pass
    tl.atomic_xchg(lock, 0)


@triton.jit
def dot_kernel(x_ptr, h_ptr, q_ptr, e_ptr, o_ptr):
    r = tl.arange(0, 32)
    idx = r[:, None] * 32 + r[None, :]
    x = tl.load(x_ptr + idx)
    h = tl.load(h_ptr + idx)
    q = tl.load(q_ptr + idx)
    e = tl.load(e_ptr + idx)
    a = tl.dot(x, x, input_precision="ieee")
    b = tl.dot(x, x, input_precision="tf32x3")
    c = tl.dot(x, x)
    d = tl.dot(h, h)
    ci = tl.dot(q, q)
    cf8 = tl.dot(e, e)
    x3 = tl.reshape(x, (2, 16, 32))
    y3 = tl.reshape(x, (2, 32, 16))
    b3 = tl.dot(x3, y3, input_precision="bf16x3")
    t = a + b + c + d.to(tl.float32) + ci.to(tl.float32) + cf8
    tl.store(o_ptr + idx, t)
    tl.store(o_ptr + tl.arange(0, 512), tl.reshape(b3, (512,)))


@triton.jit
def desc_kernel(a_ptr, M, N):
    desc = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[16, 32])
    v = desc.load([0, 0])
    desc.store([16, 0], v + 1.0)


@triton.jit
def block_ptr_kernel(x_ptr, y_ptr, M, N):
    p = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(N, 1), offsets=(0, 0), block_shape=(16, 32),
                          order=(1, 0))
    q = tl.make_block_ptr(y_ptr, shape=(M, N), strides=(N, 1), offsets=(0, 0), block_shape=(16, 32),
                          order=(1, 0))
    for i in range(0, N, 32):
        v = tl.load(p, boundary_check=(0, 1), padding_option="nan")
        tl.store(q, v * 2.0, boundary_check=(0, 1))
        p = tl.advance(p, (0, 32))
        q = tl.advance(q, (0, 32))


@triton.jit
def fp8_kernel(x_ptr, y_ptr, b_ptr):
    r = tl.arange(0, 128)
    x = tl.load(x_ptr + r)
    f8 = x.to(tl.float8e5)
    f8b = x.to(tl.float8e4nv)
    h = x.to(tl.float16, fp_downcast_rounding="rtz")
    b16 = x.to(tl.bfloat16)
    tl.store(b_ptr + r, b16)
    y = f8.to(tl.float32) + f8b.to(tl.float32) + h.to(tl.float32)
    y = tl.where(y != y, float("nan"), y)
    y = tl.clamp(y, -1.0, float("inf"))
    tl.store(y_ptr + r, y)


@triton.jit
def hist_kernel(x_ptr, out_ptr, n):
    r = tl.arange(0, 256)
    x = tl.load(x_ptr + r)
    h = tl.histogram(x, 16, mask=r < n)
    tl.store(out_ptr + tl.arange(0, 16), h)


@triton.jit
def gather_kernel(x_ptr, i_ptr, o_ptr):
    r = tl.arange(0, 16)
    idx2 = r[:, None] * 16 + r[None, :]
    x2 = tl.load(x_ptr + idx2)
    ix = tl.load(i_ptr + idx2)
    g = tl.gather(x2, ix, axis=1)
    tl.store(o_ptr + idx2, g)


@triton.jit
def extern_kernel(x_ptr, y_ptr):
    r = tl.arange(0, 128)
    x = tl.load(x_ptr + r)
    y = libdevice.tanh(x) + libdevice.pow(x, x)
    tl.store(y_ptr + r, y)


@triton.jit
def asm_kernel(x_ptr, y_ptr):
    r = tl.arange(0, 32)
    x = tl.load(x_ptr + r)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(y_ptr + r, y)


@triton.jit
def shape_kernel(x_ptr, o_ptr):
    r = tl.arange(0, 16)
    x2 = tl.load(x_ptr + r[:, None] * 16 + r[None, :])
    t = tl.trans(x2)
    c = tl.cat(r.to(tl.float32), r.to(tl.float32) * 2.0, can_reorder=True)
    j = tl.join(x2, t)
    a, b = tl.split(j)
    p = tl.permute(j, (2, 0, 1))
    s = tl.sum(x2)
    rs = tl.reshape(x2, (256,), can_reorder=True)
    tl.store(o_ptr + tl.arange(0, 256), rs + s)
    tl.store(o_ptr + r[:, None] * 16 + r[None, :], a + b + tl.sum(p, axis=0))
    tl.store(o_ptr + tl.arange(0, 32), c)


@triton.jit
def elem_kernel(x_ptr, y_ptr, i_ptr, o_ptr, n):
    r = tl.arange(0, 128)
    m = r < n
    x = tl.load(x_ptr + r, mask=m, other=0.0, cache_modifier=".cg", eviction_policy="evict_last")
    y = tl.load(y_ptr + r, mask=m, other=float("-inf"), volatile=True)
    i = tl.load(i_ptr + r)
    u = i.to(tl.uint32)
    z = tl.sqrt_rn(x) + tl.div_rn(x, y) + tl.exp2(x) + tl.fma(x, y, x) + tl.minimum(x, y)
    z += tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    j = (i // 3) + (i % 5) + (i >> 2) + (u >> 1).to(tl.int32) + tl.umulhi(u, u).to(tl.int32) + tl.abs(i)
    z += j.to(tl.float32) + (x != y).to(tl.float32) + x.to(tl.int8).to(tl.float32)
    z += tl.where(x > y, x, y) + x.to(tl.int32, bitcast=True).to(tl.float32)
    tl.store(o_ptr + r, z, mask=m, cache_modifier=".wt", eviction_policy="evict_first")
    tl.store(o_ptr + n, tl.program_id(1).to(tl.float32) + tl.num_programs(2))


@triton.jit
def loop_annot_kernel(x_ptr, n):
    acc = tl.zeros((32,), dtype=tl.float32)
    for i in tl.range(0, n, 1, num_stages=2, disallow_acc_multi_buffer=True, flatten=True):
        acc += tl.load(x_ptr + i * 32 + tl.arange(0, 32))
    for i in tl.range(0, n, 1, loop_unroll_factor=2):
        acc += 1.0
    for i in tl.range(0, n, disable_licm=True):
        acc *= 2.0
    tl.store(x_ptr + tl.arange(0, 32), acc)


@triton.jit
def dot_scaled_kernel(a_ptr, as_ptr, b_ptr, o_ptr):
    r32 = tl.arange(0, 32)
    r64 = tl.arange(0, 64)
    r4 = tl.arange(0, 4)
    r128 = tl.arange(0, 128)
    a = tl.load(a_ptr + r32[:, None] * 64 + r64[None, :])
    sa = tl.load(as_ptr + r32[:, None] * 4 + r4[None, :])
    b = tl.load(b_ptr + r128[:, None] * 32 + r32[None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, None, "e4m3")
    tl.store(o_ptr + r32[:, None] * 32 + r32[None, :], c)


@triton.jit
def desc_arg_kernel(d, out_ptr):
    v = d.load([0, 0])
    d.atomic_add([0, 0], v)
    tl.store(out_ptr + tl.arange(0, 16)[:, None] * 32 + tl.arange(0, 32)[None, :], v)


@triton.jit
def tuple_kernel(foo, out_ptr):
    x = foo[0] + foo[1]
    tl.store(out_ptr, x)


@triton.jit
def rand_kernel(out_ptr, seed):
    r = tl.arange(0, 128)
    v = tl.rand(seed, r)
    i = tl.randint(seed, r)
    tl.store(out_ptr + r, v + i.to(tl.float32))
