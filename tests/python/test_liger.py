"""Real third-party kernels: Liger-Kernel (PyPI `liger-kernel`) run through `tilescope sanitize -- pytest`.

This file has two modes.
- Outer (plain `pytest tests/python`): one run of
  `tilescope sanitize --json F -- python -m pytest tests/python/test_liger.py` with TILESCOPE_LIGER_INNER=1,
  then one test per Liger case asserting that the case passed inside the sanitizer (its outputs and
  gradients match a torch reference) and that the sanitizer reported zero findings for its kernels.
- Inner (TILESCOPE_LIGER_INNER=1, what the sanitizer runs): one test per case; each calls Liger's own
  autograd function on torch CPU tensors (Liger launches its Triton kernels on tensor.device; tilescope
  captures the launches and runs them on its CPU engine) and compares with plain torch.

Liger's ops are called unmodified. Which ones run is recorded in /work/notes/liger.md (and the README).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

INNER = os.environ.get("TILESCOPE_LIGER_INNER") == "1"
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

liger = pytest.importorskip("liger_kernel")
import torch  # noqa: E402

torch.manual_seed(0)


def close(got, want, rtol=1e-4, atol=1e-4):
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


def grads(fn, *xs):
    """Run fn on leaf copies of xs, backprop a fixed random cotangent, return (out, [grad per x])."""
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in xs]
    out = fn(*leaves)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=out.dtype)
    out.backward(g)
    return out.detach(), [x.grad for x in leaves]


# ---- cases: name -> callable (each raises on a mismatch) ------------------------------------------------


def case_rms_norm():
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    x, w = torch.randn(6, 40), torch.randn(40)

    def ref(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    got, (gx, gw) = grads(lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6), x, w)
    want, (rx, rw) = grads(ref, x, w)
    close(got, want)
    close(gx, rx)
    close(gw, rw)


def case_layer_norm():
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction

    x, w, b = torch.randn(6, 48), torch.randn(48), torch.randn(48)
    got, gg = grads(lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, 1e-5), x, w, b)
    want, rg = grads(lambda x, w, b: torch.nn.functional.layer_norm(x, (48,), w, b, 1e-5), x, w, b)
    close(got, want)
    for a, r in zip(gg, rg):
        close(a, r)


def case_swiglu():
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    a, b = torch.randn(4, 70), torch.randn(4, 70)
    got, gg = grads(LigerSiLUMulFunction.apply, a, b)
    want, rg = grads(lambda a, b: torch.nn.functional.silu(a) * b, a, b)
    close(got, want)
    for x, r in zip(gg, rg):
        close(x, r)


def case_geglu():
    from liger_kernel.ops.geglu import LigerGELUMulFunction

    a, b = torch.randn(4, 70), torch.randn(4, 70)
    got, gg = grads(LigerGELUMulFunction.apply, a, b)
    want, rg = grads(lambda a, b: torch.nn.functional.gelu(a, approximate="tanh") * b, a, b)
    close(got, want)
    for x, r in zip(gg, rg):
        close(x, r)


def case_cross_entropy():
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

    x = torch.randn(8, 300) * 3
    t = torch.randint(0, 300, (8,))
    t[2] = -100  # an ignored position
    got, (gx,) = grads(lambda x: LigerCrossEntropyFunction.apply(x, t, None, -100)[0], x)
    want, (rx,) = grads(lambda x: torch.nn.functional.cross_entropy(x, t, ignore_index=-100), x)
    close(got, want)
    close(gx, rx)


def case_cross_entropy_label_smoothing():
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

    x = torch.randn(5, 200)
    t = torch.randint(0, 200, (5,))
    got, (gx,) = grads(lambda x: LigerCrossEntropyFunction.apply(x, t, None, -100, 0.0, 0.1, "sum")[0], x)
    want, (rx,) = grads(lambda x: torch.nn.functional.cross_entropy(x, t, label_smoothing=0.1, reduction="sum"), x)
    close(got, want)
    close(gx, rx)


def case_fused_linear_cross_entropy():
    from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction

    h, w = torch.randn(8, 32), torch.randn(120, 32) * 0.3
    t = torch.randint(0, 120, (8,))
    got, (gh, gw) = grads(lambda h, w: LigerFusedLinearCrossEntropyFunction.apply(h, w, t)[0], h, w)
    want, (rh, rw) = grads(lambda h, w: torch.nn.functional.cross_entropy(h @ w.t(), t), h, w)
    close(got, want)
    close(gh, rh)
    close(gw, rw)


def case_jsd():
    from liger_kernel.ops.jsd import LigerJSDFunction

    q = torch.log_softmax(torch.randn(6, 100), dim=-1)  # student (input), log space
    p = torch.log_softmax(torch.randn(6, 100), dim=-1)  # teacher (target), log space

    def ref(q, p):
        m = 0.5 * (q.exp() + p.exp())
        kl_pm = (p.exp() * (p - m.log())).sum(-1)
        kl_qm = (q.exp() * (q - m.log())).sum(-1)
        return (0.5 * kl_pm + 0.5 * kl_qm).sum() / q.shape[0]

    got, (gq,) = grads(lambda q: LigerJSDFunction.apply(q, p, None, 0.5), q)
    want, (rq,) = grads(lambda q: ref(q, p), q)
    close(got, want)
    close(gq, rq)


def case_kl_div():
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction

    y_pred = torch.log_softmax(torch.randn(6, 90), dim=-1)
    y_true = torch.softmax(torch.randn(6, 90), dim=-1)
    got, (gp,) = grads(lambda y: LigerKLDivLossFunction.apply(y, y_true, "batchmean"), y_pred)
    want, (rp,) = grads(lambda y: torch.nn.functional.kl_div(y, y_true, reduction="batchmean"), y_pred)
    close(got, want)
    close(gp, rp)


def case_tvd():
    from liger_kernel.ops.tvd import LigerTVDLossFunction

    p = torch.softmax(torch.randn(6, 90), dim=-1)
    q = torch.softmax(torch.randn(6, 90), dim=-1)
    got, (gp,) = grads(lambda p: LigerTVDLossFunction.apply(p, q), p)
    want, (rp,) = grads(lambda p: 0.5 * (p - q).abs().sum() / p.shape[0], p)
    close(got, want)
    close(gp, rp)


def case_rope():
    from liger_kernel.ops.rope import LigerRopeFunction

    bsz, hq, hk, seq, d = 2, 4, 2, 10, 16
    q, k = torch.randn(bsz, hq, seq, d), torch.randn(bsz, hk, seq, d)
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    ang = torch.outer(torch.arange(seq).float(), inv)
    emb = torch.cat([ang, ang], dim=-1)[None]  # (1, seq, d)
    cos, sin = emb.cos(), emb.sin()

    def rot(x):
        return torch.cat([-x[..., d // 2:], x[..., : d // 2]], dim=-1)

    def ref(q, k):
        c, s = cos[:, None], sin[:, None]
        return q * c + rot(q) * s, k * c + rot(k) * s

    got, (gq, gk) = grads(lambda q, k: torch.cat([t.flatten() for t in LigerRopeFunction.apply(q, k, cos, sin)]),
                          q, k)
    want, (rq, rk) = grads(lambda q, k: torch.cat([t.flatten() for t in ref(q, k)]), q, k)
    close(got, want)
    close(gq, rq)
    close(gk, rk)


def case_softmax():
    from liger_kernel.ops.softmax import LigerSoftmaxFunction

    x = torch.randn(7, 130) * 2
    got, (gx,) = grads(LigerSoftmaxFunction.apply, x)
    want, (rx,) = grads(lambda x: torch.softmax(x, dim=-1), x)
    close(got, want)
    close(gx, rx)


def case_sparsemax():
    from liger_kernel.ops.sparsemax import LigerSparsemaxFunction

    x = torch.randn(5, 40)

    def ref(x):  # sparsemax by sorting (Martins & Astudillo 2016)
        z, _ = torch.sort(x, dim=-1, descending=True)
        k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
        cs = z.cumsum(-1)
        support = (1 + k * z) > cs
        kz = support.sum(-1, keepdim=True)
        tau = (cs.gather(-1, kz - 1) - 1) / kz
        return torch.clamp(x - tau, min=0)

    close(LigerSparsemaxFunction.apply(x, -1), ref(x))


def case_dyt():
    from liger_kernel.ops.dyt import LigerDyTFunction

    x = torch.randn(6, 64)
    alpha, gamma, beta = torch.tensor([0.7]), torch.randn(64), torch.randn(64)
    # forward only: Liger's DyT backward sizes its partial sums from the CUDA/XPU SM count and has no CPU
    # branch (UnboundLocalError: NUM_SMS in liger_dyt_bwd), before any kernel is launched
    got = LigerDyTFunction.apply(x, alpha, gamma, beta)
    close(got, gamma * torch.tanh(alpha * x) + beta)


def case_group_norm():
    from liger_kernel.ops.group_norm import LigerGroupNormFunction

    x = torch.randn(2, 6, 20)
    w, b = torch.randn(6), torch.randn(6)
    got, gg = grads(lambda x, w, b: LigerGroupNormFunction.apply(x, w, b, 6, 3, 1e-6), x, w, b)
    want, rg = grads(lambda x, w, b: torch.nn.functional.group_norm(x, 3, w, b, 1e-6), x, w, b)
    close(got, want)
    for a, r in zip(gg, rg):
        close(a, r)


def case_fused_add_rms_norm():
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction

    x, r, w = torch.randn(6, 40), torch.randn(6, 40), torch.randn(40)
    y, s = LigerFusedAddRMSNormFunction.apply(x, r, w, 1e-6)
    hs = x + r
    close(s, hs)
    close(y, hs * torch.rsqrt(hs.pow(2).mean(-1, keepdim=True) + 1e-6) * w)


def case_relu_squared():
    from liger_kernel.ops.relu_squared import LigerReLUSquaredFunction

    x = torch.randn(5, 33)
    got, (gx,) = grads(LigerReLUSquaredFunction.apply, x)
    want, (rx,) = grads(lambda x: torch.relu(x) ** 2, x)
    close(got, want)
    close(gx, rx)


def case_poly_norm():
    from liger_kernel.ops.poly_norm import LigerPolyNormFunction

    x, w, b = torch.randn(6, 40), torch.tensor([0.3, 0.5, 0.2]), torch.tensor(0.1)

    def norm(v):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6)

    got, gg = grads(lambda x, w, b: LigerPolyNormFunction.apply(x, w, b, 1e-6), x, w, b)
    want, rg = grads(lambda x, w, b: w[0] * norm(x**3) + w[1] * norm(x**2) + w[2] * norm(x) + b, x, w, b)
    close(got, want)
    for a, r in zip(gg, rg):
        close(a, r, rtol=1e-4, atol=5e-4)


def case_cross_entropy_softcap_z_loss_bf16():
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

    x = (torch.randn(6, 260) * 4).to(torch.bfloat16)
    t = torch.randint(0, 260, (6,))
    loss, z_loss, _, _ = LigerCrossEntropyFunction.apply(x, t, None, -100, 1e-4, 0.0, "mean", 30.0, True)
    xf = 30.0 * torch.tanh(x.float() / 30.0)
    lse = torch.logsumexp(xf, dim=-1)
    ce = torch.nn.functional.cross_entropy(xf, t)
    z = (1e-4 * lse.pow(2)).mean()
    close(z_loss.float(), z, rtol=2e-2, atol=1e-4)
    close(loss.float(), ce + z, rtol=2e-2, atol=2e-2)


def case_rms_norm_gemma_fp16():
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    x, w = torch.randn(5, 64).half(), (torch.randn(64) * 0.1).half()
    got = LigerRMSNormFunction.apply(x, w, 1e-6, 1.0, "gemma")
    xf = x.float()
    want = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + w.float())).half()
    close(got, want, rtol=2e-3, atol=2e-3)


def case_fused_linear_jsd():
    from liger_kernel.ops.fused_linear_jsd import LigerFusedLinearJSDFunction

    hs, ht = torch.randn(6, 16), torch.randn(6, 16)
    ws, wt = torch.randn(50, 16) * 0.3, torch.randn(50, 16) * 0.3

    def ref(hs, ws):
        q = torch.log_softmax(hs @ ws.t(), dim=-1)
        p = torch.log_softmax(ht @ wt.t(), dim=-1)
        m = 0.5 * (q.exp() + p.exp())
        return (0.5 * (p.exp() * (p - m.log())).sum(-1) + 0.5 * (q.exp() * (q - m.log())).sum(-1)).sum() / 6

    got, (gh, gw) = grads(lambda hs, ws: LigerFusedLinearJSDFunction.apply(hs, ws, ht, wt), hs, ws)
    want, (rh, rw) = grads(ref, hs, ws)
    close(got, want)
    close(gh, rh)
    close(gw, rw)


def case_qwen2vl_mrope():
    from liger_kernel.ops.qwen2vl_mrope import LigerQwen2VLMRopeFunction

    bsz, hq, hk, seq, d = 1, 2, 1, 6, 16
    section = [2, 3, 3]  # sums to d // 2
    q, k = torch.randn(bsz, hq, seq, d), torch.randn(bsz, hk, seq, d)
    ang = torch.randn(3, bsz, seq, d // 2)
    emb = torch.cat([ang, ang], dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def pick(t):  # Qwen2-VL: section i of the rotary dims takes its angles from position axis i % 3
        parts = t.split(section * 2, dim=-1)
        return torch.cat([m[i % 3] for i, m in enumerate(parts)], dim=-1).unsqueeze(1)

    c, s_ = pick(cos), pick(sin)

    def rot(x):
        return torch.cat([-x[..., d // 2:], x[..., : d // 2]], dim=-1)

    qg, kg = LigerQwen2VLMRopeFunction.apply(q.clone(), k.clone(), cos, sin, section)
    close(qg, q * c + rot(q) * s_)
    close(kg, k * c + rot(k) * s_)


def case_llama4_rope():
    from liger_kernel.ops.llama4_rope import LigerLlama4RopeFunction

    q, k = torch.randn(2, 6, 4, 16), torch.randn(2, 6, 2, 16)  # (batch, seq, heads, head_dim)
    f = torch.polar(torch.ones(6, 8), torch.randn(6, 8))  # complex frequencies (seq, head_dim / 2)

    def ref(x):  # rotate each (even, odd) pair as a complex number
        xc = torch.view_as_complex(x.reshape(*x.shape[:-1], 8, 2))
        return torch.view_as_real(xc * f[None, :, None, :]).reshape(x.shape)

    qo, ko = LigerLlama4RopeFunction.apply(q.clone(), k.clone(), f)  # Liger rotates q and k in place
    close(qo, ref(q))
    close(ko, ref(k))


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


# ---- inner mode: one pytest test per case (what `tilescope sanitize -- pytest` runs) --------------------

if INNER:

    @pytest.mark.parametrize("name", sorted(CASES))
    def test_case(name):
        CASES[name]()

# ---- outer mode: run the inner suite under the sanitizer once, then assert per case ---------------------

else:

    def tilescope_cmd() -> list[str]:
        exe = os.environ.get("TILESCOPE_BIN")
        if exe and os.path.exists(exe):
            return [exe]
        return [sys.executable, "-m", "tilescope"]

    @pytest.fixture(scope="module")
    def sanitized(tmp_path_factory):
        d = tmp_path_factory.mktemp("liger")
        findings_path, junit = d / "findings.json", d / "junit.xml"
        env = dict(os.environ, TILESCOPE_LIGER_INNER="1")
        cmd = tilescope_cmd() + ["sanitize", "--json", str(findings_path), "--", sys.executable, "-m", "pytest",
                                 "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", __file__]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=1800)
        log = f"$ {' '.join(cmd)}\nexit {p.returncode}\n{p.stdout[-6000:]}\n{p.stderr[-6000:]}"
        if not junit.exists():
            pytest.fail(f"the sanitized pytest run did not produce a report\n{log}")
        results = {}
        for tc in ET.parse(junit).getroot().iter("testcase"):
            name = tc.get("name", "")
            case = name[name.index("[") + 1: -1] if "[" in name else name
            bad = [c for c in tc if c.tag in ("failure", "error", "skipped")]
            results[case] = (bad[0].tag + ": " + (bad[0].get("message") or "")[:2000]) if bad else None
        findings = json.loads(findings_path.read_text()) if findings_path.exists() else None
        return {"results": results, "findings": findings, "log": log, "rc": p.returncode}

    @pytest.mark.parametrize("name", sorted(CASES))
    def test_liger_kernel_under_sanitizer(sanitized, name):
        assert name in sanitized["results"], f"case {name} did not run\n{sanitized['log']}"
        err = sanitized["results"][name]
        assert err is None, f"Liger {name} under tilescope sanitize: {err}"

    def test_liger_zero_findings(sanitized):
        assert sanitized["findings"] is not None, f"no --json findings file was written\n{sanitized['log']}"
        found = sanitized["findings"]
        found = found.get("findings", found) if isinstance(found, dict) else found
        summary = [f"{f.get('kind')} in {f.get('kernel')} at {f.get('file')}:{f.get('line')}" for f in found]
        assert found == [], "false positives on Liger kernels:\n" + "\n".join(summary)

    def test_liger_exit_status(sanitized):
        # all inner tests passed and there were no findings: pytest's 0 comes back through the sanitizer
        assert sanitized["rc"] == 0, sanitized["log"]
