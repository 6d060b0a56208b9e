"""NKI launches in the trace and under the profiler (README "NKI kernels", "NKI profile").

Expected values come from the kernels' own tiling (which rows each program copies) and from the NKI API
reference's instruction-cost formulas and the architecture guides' clocks, written out here, never from
tilescope."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tilescope
import tilescope.nki as nki
import tilescope.nki.isa as nisa
import tilescope.nki.language as nl
from nki_programs import SCALE_ROWS

PROGRAM = SCALE_ROWS


def run(tmp_path, *args, program=PROGRAM):
    prog = tmp_path / "prog.py"
    prog.write_text(program)
    return subprocess.run([sys.executable, "-m", "tilescope", *args, "--", sys.executable, str(prog)],
                          capture_output=True, text=True, timeout=180)


def test_an_nki_launch_is_recorded_with_what_each_program_touched(tmp_path):
    trace = tmp_path / "t.tstrace"
    p = run(tmp_path, "sanitize", "--trace", str(trace))
    assert p.returncode == 0 and "ok" in p.stdout, p.stdout + p.stderr
    assert "no findings (1 launch(es)" in p.stderr, p.stderr
    t = tilescope.load_trace(trace)
    (launch,) = t.launches
    assert launch["language"] == "nki" and launch["name"] == "scale_rows"
    assert launch["grid"] == (3, 1, 1) and launch["programs"] == 3 and launch["error"] is None
    names = [a["name"] for a in launch["record"]["args"]]
    assert names[0] == "x" and len(names) == 2  # the argument, then the kernel's HBM output
    ops = [s["op"] for s in t.sites[launch["kernel"]]]
    assert ops == ["nki.isa.dma_copy", "nki.isa.tensor_scalar", "nki.isa.dma_copy"]
    # Each program read its 128 rows (the last 44) of x once, and wrote the same rows of the output.
    x = np.arange(300 * 64, dtype=np.float32).reshape(300, 64)
    loads, stores = t.element_counts(launch["id"], 0)
    assert np.array_equal(loads, np.ones(300 * 64)) and not stores.any()
    loads_out, stores_out = t.element_counts(launch["id"], 1)
    assert np.array_equal(stores_out, np.ones(300 * 64)) and not loads_out.any()
    a = t.accesses
    for prog in range(3):
        rows = min(128, 300 - prog * 128)
        sel = (a["launch"] == launch["id"]) & (a["pid"][:, 0] == prog) & (a["arg"] == 0)
        (i,) = np.nonzero(sel)[0]
        assert a["kind"][i] == "load" and a["site"][i] == 0 and a["seq"][i] == 0
        assert a["runs"][i].tolist() == [[prog * 128 * 64, rows * 64]]
        sel = (a["launch"] == launch["id"]) & (a["pid"][:, 0] == prog) & (a["arg"] == 1)
        (i,) = np.nonzero(sel)[0]
        assert a["kind"][i] == "store" and a["site"][i] == 2
        assert a["runs"][i].tolist() == [[prog * 128 * 64, rows * 64]]
    # One execution per instruction and program; the copies move 300 x 64 floats in and out.
    st = t.site_stats
    mine = st["launch"] == launch["id"]
    assert st["executions"][mine].tolist() == [3, 3, 3]
    assert st["bytes"][mine].tolist()[0] == 2 * 300 * 64 * 4 and st["stored"][mine].tolist()[0] == 300 * 64 * 4
    # The contents before and after, and the launch's estimated profile.
    assert np.array_equal(t.contents(launch["id"], 0, "before"), x.ravel())
    assert np.array_equal(t.contents(launch["id"], 1, "after"), x.ravel() * 3)
    prof = launch["reports"]["profile"]
    assert prof["kind"] == "nki" and prof["programs"] == 3
    assert prof["engines"]["dma"]["instructions"] == 6 and prof["engines"]["vector"]["instructions"] == 3
    # `tilescope show` lists it; replay refuses it plainly.
    s = subprocess.run([sys.executable, "-m", "tilescope", "show", str(trace)], capture_output=True, text=True,
                       timeout=60)
    assert s.returncode == 0 and "scale_rows" in s.stdout and "nki.isa.dma_copy" in s.stdout, s.stdout + s.stderr
    r = subprocess.run([sys.executable, "-m", "tilescope", "replay", str(trace), "--launch", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "an NKI kernel's launch cannot be replayed" in r.stderr, r.stderr


def test_an_nki_race_in_the_trace_names_its_programs(tmp_path):
    trace = tmp_path / "t.tstrace"
    racy = PROGRAM.replace("out[p * 128:p * 128 + rows]", "out[p * 100:p * 100 + rows]").replace(
        'assert np.array_equal(y, x * 3), "wrong values"', "")
    p = run(tmp_path, "sanitize", "--trace", str(trace), program=racy)
    assert p.returncode == 1 and "data-race" in p.stderr, p.stdout + p.stderr
    t = tilescope.load_trace(trace)
    races = [i for i, f in enumerate(t.launches[0]["findings"]) if f["kind"] == "data-race"]
    assert races
    # Program p writes rows [100p, 100p + 128) (the last 44 rows): programs 0 and 1, and 1 and 2, overlap.
    progs = {tuple(r) for i in races for r in t.programs_of(1, i)}
    assert progs == {(0, 0, 0), (1, 0, 0), (2, 0, 0)}


# ------------------------------------------------------------------------------------------------
# The profile: counts, DMA bytes and the documented costs.

@nki.jit(platform_target="trn2")
def chain_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=y, data1=t, data2=t, op=nl.add)       # depends on the copy
    z = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.activation(dst=z, op=nl.exp, data=t)                    # independent of y: overlaps it
    nisa.tensor_tensor(dst=y, data1=y, data2=z, op=nl.multiply)  # waits for both
    nisa.dma_copy(dst=out, src=y)
    return out


def test_profile_counts_engines_dma_bytes_and_the_documented_costs():
    x = np.ones((128, 512), dtype=np.float32)
    with tilescope.profile() as p:
        y = chain_kernel(x)
    assert np.allclose(y, np.exp(x) * 2, rtol=1e-6)
    (prof,) = p.launches
    assert prof["kind"] == "nki" and prof["target"] == "trn2"
    e = prof["engines"]
    assert (e["dma"]["instructions"], e["vector"]["instructions"], e["scalar"]["instructions"],
            e["tensor"]["instructions"], e["gpsimd"]["instructions"]) == (2, 2, 1, 0, 0)
    assert prof["dma"]["hbm_to_sbuf"] == {"transfers": 1, "read_bytes": x.nbytes, "written_bytes": x.nbytes}
    assert prof["dma"]["sbuf_to_hbm"] == {"transfers": 1, "read_bytes": x.nbytes, "written_bytes": x.nbytes}
    # All traffic: the engines read five SBUF operands of x's size (2 + 1 + 2) into SBUF.
    assert prof["flows"] == {"hbm_to_sbuf": x.nbytes, "sbuf_to_sbuf": 5 * x.nbytes, "sbuf_to_hbm": x.nbytes}
    # The API reference's costs on trn2 (NeuronCore-v3): tensor_tensor of two float32 SBUF inputs
    # max(MIN_II, 2N) Vector cycles at 0.96 GHz; activation max(MIN_II, N) Scalar cycles at 1.2 GHz;
    # N = 512 elements per partition. A DMA: ~1300 ns fixed, then 23 bytes/ns on each of 16 queues.
    n = 512
    vector_ns, scalar_ns = max(64, 2 * n) / 0.96, max(64, n) / 1.2
    dma_ns = 1300 + x.nbytes / (16 * 23)
    rows = prof["timeline"]["rows"]
    cols = prof["timeline"]["columns"]
    ev = [dict(zip(cols, r)) for r in rows]
    assert [r["engine"] for r in ev] == ["dma", "vector", "scalar", "vector", "dma"]
    for r, ns in zip(ev, (dma_ns, vector_ns, scalar_ns, vector_ns, dma_ns)):
        assert r["end_ns"] - r["start_ns"] == pytest.approx(ns, rel=1e-9)
    load, add, act, mul, store = ev
    assert load["start_ns"] == 0
    assert add["start_ns"] == pytest.approx(load["end_ns"]) and act["start_ns"] == pytest.approx(load["end_ns"])
    assert mul["start_ns"] == pytest.approx(max(add["end_ns"], act["end_ns"]))
    assert store["start_ns"] == pytest.approx(mul["end_ns"])
    assert prof["estimate"]["seconds"] == pytest.approx(store["end_ns"] * 1e-9)
    assert prof["estimate"]["serial_seconds"] == pytest.approx(prof["estimate"]["seconds"])  # one program
    # SBUF in use: t, y and z (2 KiB per partition each) at most, all freed by the end.
    (mem,) = prof["memory"]
    assert mem["sbuf_peak"] == 3 * n * 4 and mem["psum_peak"] == 0
    assert mem["points"][-1][1:] == [0, 0]
    # Lines: the five calls, each with its engine.
    assert sorted(l["line"] for l in prof["lines"]) == sorted(
        chain_kernel.fn.__code__.co_firstlineno + k for k in (4, 6, 8, 9, 10))  # from the decorator


@nki.jit(platform_target="trn1")
def matmul_kernel(a_t, b):
    k, m = a_t.shape
    _, n = b.shape
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((k, m), dtype=a_t.dtype, buffer=nl.sbuf)
    bt = nl.ndarray((k, n), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a_t)
    nisa.dma_copy(dst=bt, src=b)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=at, moving=bt)
    r = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=acc)
    nisa.dma_copy(dst=out, src=r)
    return out


def test_profile_of_a_matmul_counts_its_flops_and_tensor_engine_time():
    import ml_dtypes

    a_t = np.ones((128, 128), dtype=ml_dtypes.bfloat16)
    b = np.ones((128, 256), dtype=ml_dtypes.bfloat16)
    with tilescope.profile() as p:
        y = matmul_kernel(a_t, b)
    assert np.array_equal(y, np.full((128, 256), 128, dtype=np.float32))
    (prof,) = p.launches
    assert prof["flops"]["matmul"] == 2 * 128 * 128 * 256
    ev = [dict(zip(prof["timeline"]["columns"], r)) for r in prof["timeline"]["rows"]]
    (mm,) = [r for r in ev if r["engine"] == "tensor"]
    # nc_matmul: max(min(64, N_stationary), N_moving) Tensor cycles for bf16, at 2.8 GHz on trn1.
    assert mm["end_ns"] - mm["start_ns"] == pytest.approx(max(min(64, 128), 256) / 2.8)
    # The matmul waits for both loads (each spread over all 16 queues, one after the other).
    loads = [r for r in ev if r["engine"] == "dma"][:2]
    assert mm["start_ns"] == pytest.approx(max(r["end_ns"] for r in loads))
    assert prof["memory"][0]["psum_peak"] == 256 * 4


def test_profile_text_and_json_under_tilescope_profile(tmp_path):
    out = tmp_path / "p.json"
    p = run(tmp_path, "profile", "--json", str(out))
    assert p.returncode == 0 and "ok" in p.stdout, p.stdout + p.stderr
    assert "NKI launch(es) of 1 kernel(s)" in p.stderr and "kernel scale_rows (NKI, trn2): 1 launch(es), 3 program(s)" \
        in p.stderr, p.stderr
    assert "DMA: hbm -> sbuf 75.0 KiB in 3 transfer(s), sbuf -> hbm 75.0 KiB in 3 transfer(s)" in p.stderr, p.stderr
    assert "roofline" not in p.stderr
    assert "on one NeuronCore, one after another:" in p.stderr
    doc = json.loads(out.read_text())
    (prof,) = doc["launches"]
    assert prof["kind"] == "nki" and prof["dma"]["hbm_to_sbuf"]["read_bytes"] == 300 * 64 * 4
    assert len(prof["timeline"]["rows"]) == 9 and len(prof["memory"]) == 3
