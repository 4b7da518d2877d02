"""Convolutions that run as tiled im2col + BLAS GEMM give the interpreter's results."""
import numpy as np
import pytest

import axle


def conv_text(n, spatial, cin, cout, ksz, strides, pads, rdil, dtype="f32"):
    nsp = len(spatial)
    letters = "01234"[:nsp]
    out_sp = []
    for s, k, st, (lo, hi), d in zip(spatial, ksz, strides, pads, rdil):
        eff = (k - 1) * d + 1
        out_sp.append((s + lo + hi - eff) // st + 1)
    it = f"tensor<{n}x{'x'.join(map(str, spatial))}x{cin}x{dtype}>"
    kt = f"tensor<{'x'.join(map(str, ksz))}x{cin}x{cout}x{dtype}>"
    ot = f"tensor<{n}x{'x'.join(map(str, out_sp))}x{cout}x{dtype}>"
    sp = ", ".join(letters)
    pad = ", ".join(f"[{lo}, {hi}]" for lo, hi in pads)
    text = f"""func.func @main(%x: {it}, %w: {kt}) -> {ot} {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, {sp}, f]x[{sp}, i, o]->[b, {sp}, f],
       window = {{stride = [{', '.join(map(str, strides))}], pad = [{pad}], rhs_dilate = [{', '.join(map(str, rdil))}]}}
       {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : ({it}, {kt}) -> {ot}
  return %0 : {ot}
}}"""
    return text, (n, *spatial, cin), (*ksz, cin, cout)


CASES = [
    (2, (9, 9), 3, 8, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    (3, (17, 11), 5, 7, (3, 2), (2, 1), ((0, 2), (1, 0)), (1, 2)),
    (1, (40,), 16, 24, (5,), (3,), ((2, 2),), (1,)),
    (2, (5, 6, 7), 4, 6, (2, 3, 2), (1, 2, 1), ((1, 0), (0, 1), (1, 1)), (1, 1, 2)),
    (4, (32, 32), 8, 16, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1)),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_conv_gemm_matches_interpreter(case, dtype):
    text, xs, ws = conv_text(*case, dtype=dtype)
    r = np.random.default_rng(2)
    npd = np.float32 if dtype == "f32" else np.float64
    x = r.standard_normal(xs).astype(npd)
    w = r.standard_normal(ws).astype(npd)
    exe = axle.compile(text)
    assert [k.library for k in exe.program.kernels] == [f"blas.{'s' if dtype == 'f32' else 'd'}gemm"]
    want = axle.interpret(text, x, w)
    np.testing.assert_allclose(exe(x, w), want, rtol=1e-4 if dtype == "f32" else 1e-10,
                               atol=1e-4 if dtype == "f32" else 1e-10)


def test_tiles_with_a_remainder(monkeypatch):
    from axle.backends.cpu import kernels_conv
    monkeypatch.setattr(kernels_conv, "PATCH_BYTES", 27 * 4 * 7)  # 7 rows per tile, 2*9*9 = 162 rows
    text, xs, ws = conv_text(*CASES[0])
    r = np.random.default_rng(3)
    x, w = r.standard_normal(xs).astype(np.float32), r.standard_normal(ws).astype(np.float32)
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu import executable as cpu_exe
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        got = axle.compile(text)(x, w)
        cpu_exe.clear_memory_cache()
    np.testing.assert_allclose(got, axle.interpret(text, x, w), rtol=1e-4, atol=1e-4)
