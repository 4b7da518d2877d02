"""The low-precision GEMM routines (lowp_runtime.py) called directly, for every kind this host
can execute (not only the ones it picks: an AVX-512 host also runs the AVX2 kinds), on the
edges: columns past the last whole panel (masked rhs rows, masked stores), rows past the
last whole tile, k over several packed blocks, a transposed rhs, C with a wider row pitch
whose padding must stay untouched, and the f32 kinds' accumulate mode. Against numpy."""
import ctypes

import ml_dtypes
import numpy as np
import pytest

from axle.backends.cpu import lowp_runtime as L


def _runnable() -> list:
    import llvmlite.binding as llvm
    try:
        have = {k for k, v in llvm.get_host_cpu_features().items() if v}
    except RuntimeError:
        return []
    avx512 = {"avx512f", "avx512bw", "avx512vl", "fma"} <= have
    need = {"vnni": avx512 and "avx512vnni" in have, "bf16": avx512 and "avx512bf16" in have, "f32": avx512,
            "pmaddwd": "avx2" in have, "pmaddwd16": "avx2" in have,
            "bf16_fma": {"avx2", "fma"} <= have, "f16_fma": {"avx2", "fma", "f16c"} <= have,
            "f32_avx2": {"avx2", "fma"} <= have}
    return [k for k, ok in need.items() if ok]


KINDS = _runnable()


@pytest.fixture(scope="module")
def routines():
    from axle.backends.cpu.llvm_env import compile_to_object, link_object
    if not KINDS:
        pytest.skip("this host runs none of the kinds")
    # (renamed: the process's JIT may have linked the host's kinds under their own names)
    obj = compile_to_object(L.build_ir(KINDS).replace("axle_lowp_", "axle_lowp_edges_"), 2)[1]
    handle, addrs = link_object(obj, [f"axle_lowp_edges_{k}_{f}" for k in KINDS for f in ("pack_a", "panels")])
    p, i = ctypes.c_void_p, ctypes.c_int64
    out = {}
    for k in KINDS:
        out[k] = (ctypes.CFUNCTYPE(None, p, i, i, i, i, p, i)(addrs[f"axle_lowp_edges_{k}_pack_a"]),
                  ctypes.CFUNCTYPE(None, p, p, i, i, p, *[i] * 11)(addrs[f"axle_lowp_edges_{k}_panels"]))
    yield out
    del handle


def _operands(kind, r, m, n, k):
    """(lhs, rhs, exact product as f64 / int64, result dtype, pack flip)."""
    if kind in ("vnni", "pmaddwd"):
        a, b = r.integers(-128, 128, (m, k)).astype(np.int8), r.integers(-128, 128, (k, n)).astype(np.int8)
        return a, b, a.astype(np.int64) @ b.astype(np.int64), np.int32, 1
    if kind == "pmaddwd16":
        a, b = r.integers(-300, 300, (m, k)).astype(np.int16), r.integers(-300, 300, (k, n)).astype(np.int16)
        return a, b, a.astype(np.int64) @ b.astype(np.int64), np.int32, 0
    dt = {"bf16": ml_dtypes.bfloat16, "bf16_fma": ml_dtypes.bfloat16, "f16_fma": np.float16}.get(kind, np.float32)
    a, b = r.standard_normal((m, k)).astype(dt), r.standard_normal((k, n)).astype(dt)
    return a, b, a.astype(np.float64) @ b.astype(np.float64), np.float32, 0


def _ptr(x):
    return x.ctypes.data_as(ctypes.c_void_p)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m,n,k,transposed", [(19, 40, 7, False), (8, 16, 1030, False), (70, 77, 1100, False),
                                              (13, 33, 300, True), (67, 31, 20, False), (5, 100, 64, False)])
def test_edges_against_numpy(routines, kind, m, n, k, transposed):
    pack_a, panels = routines[kind]
    g = L.KINDS[kind][0]
    mr = L.GEOMETRY[kind][0]
    r = np.random.default_rng(m * 7 + n * 3 + k)
    a, b, want, rdt, flip = _operands(kind, r, m, n, k)
    if transposed:  # the rhs stored [N, K]: sb_k 1, sb_n K
        bt = np.ascontiguousarray(b.T)
        src, sbk, sbn = bt, 1, k
    else:
        src, sbk, sbn = np.ascontiguousarray(b), n, 1
    f32 = kind in L.F32_KINDS
    if f32:  # the lhs read in place
        ap, lda, ldk = np.ascontiguousarray(a.view(np.int32) if a.dtype == np.float32 else a), k, 1
    else:
        kg = (k + g - 1) // g
        ap = np.zeros(((m + mr - 1) // mr * mr) * kg * 4, np.uint8)
        pack_a(_ptr(np.ascontiguousarray(a)), k, 1, m, k, _ptr(ap), flip)
        lda, ldk = kg, 1
    ldc = n + 5
    sentinel = np.array(-7, rdt)
    c = np.full((m + 3, ldc), sentinel, rdt)
    panels(_ptr(ap), _ptr(src), sbk, sbn, _ptr(c), ldc, m, n, k, 0, 1 << 20, flip, lda, 0, 1 << 20, ldk)
    got = c[:m, :n]
    if rdt == np.int32:
        np.testing.assert_array_equal(got, want.astype(np.int32))
    else:
        scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        assert np.all(np.abs(got - want) <= 2e-6 * scale + 1e-30), kind
    assert np.all(c[:m, n:] == sentinel) and np.all(c[m:] == sentinel), "written outside C"
    if f32:  # flip = accumulate: C += A B, the edges included
        panels(_ptr(ap), _ptr(src), sbk, sbn, _ptr(c), ldc, m, n, k, 0, 1 << 20, 1, lda, 0, 1 << 20, ldk)
        scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        assert np.all(np.abs(c[:m, :n] - 2 * want) <= 4e-6 * scale + 1e-30)
        assert np.all(c[:m, n:] == sentinel) and np.all(c[m:] == sentinel)
