"""RMSNorm as an NKI (AWS Trainium) Beta 2 kernel, run on the CPU by tilescope.

The kernel is ordinary NKI: `import nki`, explicit SBUF tiles, `nisa.*` calls with the destination first.
Rows go to the 128 partitions, 128 rows per tile; the last tile is partial. The Scalar engine squares
and sums each row in one instruction (activation_reduce), the Vector engine scales.

Run: tilescope sanitize -- python examples/nki_rmsnorm.py   (`import nki` is tilescope's NKI there)
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_kernel(x, w, eps):
    n, d = x.shape
    out = nl.ndarray((n, d), dtype=x.dtype, buffer=nl.shared_hbm)
    wt = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
    for p in nl.static_range(128):  # the weights on every partition
        nisa.dma_copy(dst=wt[p:p + 1, :], src=w)
    for i in nl.affine_range((n + 127) // 128):
        rows = min(128, n - i * 128)
        t = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:rows], src=x[i * 128:i * 128 + rows])
        sq = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=sq[:rows], op=nl.square, data=t[:rows], reduce_op=nl.add, reduce_res=ss[:rows])
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv[:rows], data=ss[:rows], op0=nl.multiply, operand0=1.0 / d, op1=nl.add,
                           operand1=eps)
        nisa.activation(dst=inv[:rows], op=nl.rsqrt, data=inv[:rows])
        y = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[:rows], data=t[:rows], op0=nl.multiply, operand0=inv[:rows])
        nisa.tensor_tensor(dst=y[:rows], data1=y[:rows], data2=wt[:rows], op=nl.multiply)
        nisa.dma_copy(dst=out[i * 128:i * 128 + rows], src=y[:rows])
    return out


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 256), dtype=np.float32)
    w = rng.standard_normal((1, 256), dtype=np.float32)
    y = rmsnorm_kernel(x, w, 1e-6)
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
    print("nki_rmsnorm:", "OK" if np.allclose(y, ref, rtol=1e-5, atol=1e-6) else "WRONG")


if __name__ == "__main__":
    main()
