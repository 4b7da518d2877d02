"""Convolutions that run as tiled im2col + BLAS GEMM, or as the direct 2-D kernel, give the
interpreter's results."""
import numpy as np
import pytest

import axle
from axle.backends.cpu.kernels_dot_lowp import f32_kernel_fits
from axle.backends.cpu import disk_cache, kernels_conv, parallel
from axle.backends.cpu import executable as cpu_exe


def _fresh(text):
    """Compiled now (module flags differ between tests: no cache may answer)."""
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text)
        cpu_exe.clear_memory_cache()
    return exe


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
def test_conv_gemm_matches_interpreter(case, dtype, monkeypatch):
    text, xs, ws = conv_text(*case, dtype=dtype)
    r = np.random.default_rng(2)
    npd = np.float32 if dtype == "f32" else np.float64
    x = r.standard_normal(xs).astype(npd)
    w = r.standard_normal(ws).astype(npd)
    monkeypatch.setattr(kernels_conv, "DIRECT", False)
    exe = _fresh(text)
    # (a 1-D convolution runs as 2-D between reshapes, which share their operands' buffers)
    # f32 GEMMs of 8 or more output features on axle's kernel where the host has it (AVX-512)
    own = dtype == "f32" and f32_kernel_fits(case[3])
    assert [k.library for k in exe.program.kernels if k.library] == \
        ["lowp.f32" if own else f"blas.{'s' if dtype == 'f32' else 'd'}gemm"]
    want = axle.interpret(text, x, w)
    np.testing.assert_allclose(exe(x, w), want, rtol=1e-4 if dtype == "f32" else 1e-10,
                               atol=1e-4 if dtype == "f32" else 1e-10)


def test_tiles_with_a_remainder(monkeypatch):
    monkeypatch.setattr(kernels_conv, "DIRECT", False)
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


# f32 2-D convolutions with output features in blocks of 16 or 8: the direct kernel
DIRECT_CASES = [
    (2, (9, 9), 3, 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),  # 'SAME', a partial pixel block
    (3, (17, 11), 5, 8, (3, 2), (2, 1), ((0, 2), (1, 0)), (1, 2)),  # blocks of 8 features
    (1, (20, 23), 32, 48, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),  # three packed weight blocks
    (2, (12, 14), 4, 16, (5, 5), (2, 3), ((2, 1), (0, 3)), (2, 1)),  # strides, dilation, uneven pads
    (1, (6, 40), 2, 32, (1, 3), (1, 1), ((-1, 0), (1, 1)), (1, 1)),  # negative padding
    (4, (16, 16), 8, 16, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1)),  # 1x1
]


@pytest.mark.parametrize("case", DIRECT_CASES)
def test_direct_conv_matches_interpreter_serial_or_split(case, monkeypatch):
    """Same bits on one thread or split by rows; the interpreter's values."""
    text, xs, ws = conv_text(*case)
    r = np.random.default_rng(4)
    x, w = r.standard_normal(xs).astype(np.float32), r.standard_normal(ws).astype(np.float32)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_parallel=true")
    par = _fresh(text)
    assert [k.library for k in par.program.kernels] == [None]  # no BLAS, no patches
    if parallel.available():  # a pool (more than one thread)
        assert ".par" in par._static.optimized_ir
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_parallel=false")
    ser = _fresh(text)
    assert ".par" not in ser._static.optimized_ir
    got = par(x, w)
    np.testing.assert_array_equal(got, ser(x, w))
    np.testing.assert_allclose(got, axle.interpret(text, x, w), rtol=1e-4, atol=1e-4)
    # temporaries: only the weights regrouped by feature block, when there is more than one
    cout = case[3]
    packed = 0 if cout == 16 or cout == 8 else int(np.prod(ws)) * 4
    assert par.program.arena_bytes == (packed + 63) // 64 * 64


def test_direct_conv_rejects_what_it_does_not_cover(monkeypatch):
    """Other element types and feature counts fall back to BLAS (f64) or the loop nest."""
    text, xs, ws = conv_text(2, (9, 9), 3, 12, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1))  # 12 features
    assert [k.library for k in _fresh(text).program.kernels] == ["lowp.f32" if f32_kernel_fits(12) else "blas.sgemm"]
    text, xs, ws = conv_text(2, (9, 9), 3, 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), dtype="f64")
    assert [k.library for k in _fresh(text).program.kernels] == ["blas.dgemm"]


def pooled_text(n, hw, cin, cout, k, pool, pool_strides, conv_pad=1, pool_pad=0, extra_use=False):
    """conv (SAME-style padding) -> x * scale + shift -> relu -> reduce_window max."""
    h, w = hw
    oh, ow = h + 2 * conv_pad - k + 1, w + 2 * conv_pad - k + 1
    ph = (oh + 2 * pool_pad - pool[0]) // pool_strides[0] + 1
    pw = (ow + 2 * pool_pad - pool[1]) // pool_strides[1] + 1
    ct = f"tensor<{n}x{oh}x{ow}x{cout}xf32>"
    pt = f"tensor<{n}x{ph}x{pw}x{cout}xf32>"
    ret_t = f"{pt}, {ct}" if extra_use else pt
    ret_v = "%p, %c" if extra_use else "%p"
    text = f"""func.func @main(%x: tensor<{n}x{h}x{w}x{cin}xf32>, %w: tensor<{k}x{k}x{cin}x{cout}xf32>,
                 %s: tensor<{cout}xf32>, %t: tensor<{cout}xf32>) -> ({ret_t}) {{
  %c = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {{stride = [1, 1], pad = [[{conv_pad}, {conv_pad}], [{conv_pad}, {conv_pad}]], rhs_dilate = [1, 1]}}
       {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : (tensor<{n}x{h}x{w}x{cin}xf32>, tensor<{k}x{k}x{cin}x{cout}xf32>) -> {ct}
  %sb = stablehlo.broadcast_in_dim %s, dims = [3] : (tensor<{cout}xf32>) -> {ct}
  %tb = stablehlo.broadcast_in_dim %t, dims = [3] : (tensor<{cout}xf32>) -> {ct}
  %y = stablehlo.multiply %c, %sb : {ct}
  %z = stablehlo.add %y, %tb : {ct}
  %zero = stablehlo.constant dense<0.0> : {ct}
  %r = stablehlo.maximum %z, %zero : {ct}
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p = "stablehlo.reduce_window"(%r, %ninf) ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }}) {{window_dimensions = array<i64: 1, {pool[0]}, {pool[1]}, 1>,
         window_strides = array<i64: 1, {pool_strides[0]}, {pool_strides[1]}, 1>,
         padding = dense<[[0, 0], [{pool_pad}, {pool_pad}], [{pool_pad}, {pool_pad}], [0, 0]]> : tensor<4x2xi64>}}
       : ({ct}, tensor<f32>) -> {pt}
  return {ret_v} : {ret_t}
}}"""
    return text, [(n, h, w, cin), (k, k, cin, cout), (cout,), (cout,)], (n, ph, pw, cout)


POOLED = [
    ((2, (12, 10), 3, 16, 3, (2, 2), (2, 2)), True),   # the CNN's stage
    ((1, (9, 13), 5, 8, 3, (3, 3), (3, 3)), True),     # 3x3 windows, a last partial row dropped
    ((2, (8, 11), 4, 32, 3, (2, 3), (2, 1)), True),    # columns overlapping (stride 1 across)
    ((1, (8, 8), 4, 16, 3, (2, 2), (1, 1)), False),    # rows overlapping: the conv keeps its buffer
]


@pytest.mark.parametrize("case,fused", POOLED)
def test_pooling_computes_the_rows_of_its_convolution(case, fused, monkeypatch):
    """conv -> batch norm -> relu -> max pool: with non-overlapping window rows the pooling
    kernel computes the convolution's rows itself (no kernel and no buffer for the feature
    map), on one thread or split, with the interpreter's values."""
    text, shapes, pooled = pooled_text(*case)
    r = np.random.default_rng(8)
    args = [r.standard_normal(s).astype(np.float32) for s in shapes]
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_parallel=true")
    par = _fresh(text)
    names = [k.name for k in par.program.kernels if k.depth == 0]
    assert ("stablehlo.convolution" not in names) == fused, names
    if fused:  # the pooled map, the regrouped weights when there are several feature blocks
        cout, cin = case[3], case[2]
        packed = 9 * cin * cout * 4 if cout > 16 else 0
        assert par.program.arena_bytes <= int(np.prod(pooled)) * 4 + packed + 128
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_parallel=false")
    ser = _fresh(text)
    got = par(*args)
    np.testing.assert_array_equal(got, ser(*args))
    np.testing.assert_allclose(got, axle.interpret(text, *args), rtol=1e-5, atol=1e-5)


def test_convolution_read_elsewhere_keeps_its_buffer():
    text, shapes, _ = pooled_text(1, (8, 8), 3, 16, 3, (2, 2), (2, 2), extra_use=True)
    exe = _fresh(text)
    assert "stablehlo.convolution" in [k.name for k in exe.program.kernels if k.depth == 0]
    r = np.random.default_rng(9)
    args = [r.standard_normal(s).astype(np.float32) for s in shapes]
    for g, w in zip(exe(*args), axle.interpret(text, *args)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
