"""Convolutions through the library routines (conv_runtime.py): one compiled routine with
run-time shapes gives the same bits as the loops generated per convolution
(--cpu_conv_library=false) in every form, and the program carries calls, not the loops."""
import os
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import axle  # noqa: E402
from axle.backends.cpu import disk_cache  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402

NHWC = ("NHWC", "HWIO", "NHWC")
NCHW = ("NCHW", "OIHW", "NCHW")
CASES = {  # name: (input shape, kernel shape, keyword arguments of conv_general_dilated): the forms
    # kernels_conv.py's direct / im2col NHWC paths leave to kernels_conv_general.py
    "strided NCHW": ((2, 5, 9, 10), (7, 5, 3, 3), dict(window_strides=(2, 2), padding="SAME", dimension_numbers=NCHW)),
    "rhs dilated NCHW": ((2, 4, 9, 9), (6, 4, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                                          rhs_dilation=(2, 2), dimension_numbers=NCHW)),
    "transposed (lhs dilated, 4 phases)": ((2, 6, 7, 5), (3, 3, 5, 4),
                                           dict(window_strides=(1, 1), padding=[(2, 1), (1, 2)],
                                                lhs_dilation=(2, 2))),
    "phases without taps": ((2, 6, 6, 3), (1, 1, 3, 4), dict(window_strides=(1, 1), padding=[(0, 1), (2, 0)],
                                                             lhs_dilation=(2, 3))),
    "lhs dilated and strided": ((1, 7, 6, 3), (3, 2, 3, 4), dict(window_strides=(2, 3), padding=[(1, 1), (2, 0)],
                                                                 lhs_dilation=(2, 2))),
    "NCHW": ((2, 5, 8, 9), (6, 5, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                              dimension_numbers=("NCHW", "OIHW", "NCHW"))),
    "depthwise": ((2, 8, 8, 6), (3, 3, 1, 12), dict(window_strides=(1, 1), padding="SAME",
                                                    feature_group_count=6)),
    "grouped": ((2, 7, 7, 8), (3, 3, 4, 6), dict(window_strides=(1, 1), padding="VALID", feature_group_count=2)),
    "batch groups (filter gradient of a grouped conv)": ((4, 6, 6, 3), (3, 3, 3, 6),
                                                         dict(window_strides=(1, 1), padding="SAME",
                                                              batch_group_count=2)),
    "flipped kernel, 1-D NCW": ((3, 4, 20), (6, 4, 5), dict(window_strides=(1,), padding=[(3, 1)], rhs_dilation=(2,),
                                                            dimension_numbers=("NCW", "OIW", "NCW"))),
    "3-D NCDHW": ((1, 3, 5, 6, 4), (4, 3, 2, 3, 2), dict(window_strides=(1, 2, 1), padding="SAME",
                                                        dimension_numbers=("NCDHW", "OIDHW", "NCDHW"))),
    # NHWC: the direct kernel's rows (conv_runtime's dconv routines) and im2col tiles
    "direct NHWC strided": ((2, 9, 10, 5), (3, 3, 5, 16), dict(window_strides=(2, 2), padding="SAME")),
    "direct NHWC rhs dilated": ((2, 11, 9, 4), (3, 3, 4, 8), dict(window_strides=(1, 1), padding="SAME",
                                                                  rhs_dilation=(2, 2))),
    "direct NHWC 3 channels, rows of 13": ((3, 7, 13, 3), (3, 3, 3, 32), dict(window_strides=(1, 1), padding="SAME")),
    "direct NHWC asymmetric padding": ((1, 8, 8, 6), (2, 3, 6, 16), dict(window_strides=(1, 2),
                                                                         padding=[(0, 2), (3, 1)])),
    "im2col NHWC (6 output features)": ((2, 9, 9, 4), (3, 3, 4, 6), dict(window_strides=(1, 1), padding="SAME")),
}
ROUTINES = ("axle_lowp_conv_tiles", "axle_lowp_dconv_row")


def _compile(text, library: bool, monkeypatch):
    monkeypatch.setenv("AXLE_FLAGS", f"--cpu_conv_library={'true' if library else 'false'}")
    cpu_exe.clear_memory_cache()
    with disk_cache.disabled():
        return axle.compile(text, backend="cpu")


def _fn(kw, ndim):
    kw = dict(kw)
    dn = kw.pop("dimension_numbers", NHWC if ndim == 4 else None)

    def fn(x, w):
        return jax.lax.conv_general_dilated(x, w, dimension_numbers=dn, **kw)
    return fn


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_library_gives_the_generated_bits(name, dtype, monkeypatch):
    xs, ws, kw = CASES[name]
    if name.startswith("direct") and dtype == np.float64:
        pytest.skip("the direct kernel is f32 only (f64 takes im2col, covered by the other cases)")
    r = np.random.default_rng(len(name))
    x, w = r.standard_normal(xs).astype(dtype), r.standard_normal(ws).astype(dtype)
    fn = _fn(kw, len(xs))
    if name.startswith("flipped"):  # a flipped kernel (as input gradients have)
        base = fn
        fn = lambda x, w: base(x, jax.numpy.flip(w, 2))  # noqa: E731
    with jax.enable_x64(dtype == np.float64):
        text = jax.jit(fn).lower(x, w).as_text()
        want = np.asarray(jax.jit(fn)(x, w))
    lib = _compile(text, True, monkeypatch)
    gen = _compile(text, False, monkeypatch)
    assert any(r in lib.program.llvm_ir for r in ROUTINES)
    assert not any(r in gen.program.llvm_ir for r in ROUTINES)
    assert len(lib.program.llvm_ir) < len(gen.program.llvm_ir)
    got, ref = np.asarray(lib(x, w)), np.asarray(gen(x, w))
    np.testing.assert_array_equal(got, ref)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_gradients_of_a_strided_conv(monkeypatch):
    """Input and filter gradients (lhs-dilated conv with a flipped kernel; a conv contracting
    over batch and space with transposed patches) through the library, against jax.grad."""
    r = np.random.default_rng(3)
    x = r.standard_normal((4, 10, 10, 6)).astype(np.float32)
    w = r.standard_normal((3, 3, 6, 8)).astype(np.float32)

    def loss(x, w):
        y = jax.lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=NHWC)
        return (y * y).sum()
    fn = jax.grad(loss, argnums=(0, 1))
    text = jax.jit(fn).lower(x, w).as_text()
    exe = _compile(text, True, monkeypatch)
    assert exe.program.llvm_ir.count("call void @\"axle_lowp_conv_tiles_f32\"") >= 2
    got = exe(x, w)
    for g, want in zip(got, jax.jit(fn)(x, w)):
        want = np.asarray(want)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_wrong_descriptor_is_an_internal_error_not_a_write_out_of_bounds():
    from axle.backends.cpu import kernels_conv_general as K
    from axle.backends.cpu.conv_runtime import FIELDS
    x = np.ones((1, 6, 6, 6), np.float32)
    w = np.ones((3, 3, 1, 12), np.float32)
    fn = _fn(CASES["depthwise"][2], 4)
    text = jax.jit(fn).lower(x, w).as_text()
    seen = []
    orig = K._check_descriptor

    def spy(op, d, L, itemsize):
        orig(op, d, L, itemsize)  # the real descriptor passes
        seen.append(1)
        bad = dict(d, obase=d["obase"] + 10 ** 6)
        with pytest.raises(AssertionError, match="output"):
            orig(op, bad, L, itemsize)
        bad = dict(d, sp_0=d["sp_0"] * 1000)
        with pytest.raises(AssertionError, match="input"):
            orig(op, bad, L, itemsize)
    K._check_descriptor = spy
    try:
        cpu_exe.clear_memory_cache()
        with disk_cache.disabled():
            axle.compile(text, backend="cpu")
    finally:
        K._check_descriptor = orig
    assert seen and len(FIELDS) > 50


def test_pooled_convolution_rows_through_the_library(monkeypatch):
    """conv + bias + relu + 2x2 max pool: the pooling kernel computes the convolution's rows
    (one fused kernel) by calls of the library's row routine; same bits as generated."""
    r = np.random.default_rng(9)
    x = r.standard_normal((4, 18, 18, 3)).astype(np.float32)
    w = r.standard_normal((3, 3, 3, 16)).astype(np.float32)
    bias = r.standard_normal(16).astype(np.float32)

    def fn(x, w, bias):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC)
        y = jax.nn.relu(y + bias)
        return jax.lax.reduce_window(y, -np.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    text = jax.jit(fn).lower(x, w, bias).as_text()
    lib = _compile(text, True, monkeypatch)
    gen = _compile(text, False, monkeypatch)
    assert [k.name for k in lib.program.kernels if k.depth == 0] == ["stablehlo.reduce_window"]
    assert "axle_lowp_dconv_row" in lib.program.llvm_ir
    got = np.asarray(lib(x, w, bias))
    np.testing.assert_array_equal(got, np.asarray(gen(x, w, bias)))
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(x, w, bias)), rtol=1e-4, atol=1e-4)


def test_avx512_gemm_branch_of_the_library():
    """The tiles routine's own-GEMM branch (axle's f32 kernel, taken on AVX-512 hosts) run on
    any x86 host: a fresh process whose runtime is built with the "f32" kind forced in
    (LLVM legalizes its 16-lane vectors to the host's), against jax.jit."""
    script = '''
import numpy as np, jax
from axle.backends.cpu import lowp_runtime as L
real = L.supported_kinds()
L.supported_kinds = lambda: frozenset((set(real) - {"f32_avx2"}) | {"f32"})
import axle
r = np.random.default_rng(0)
NHWC = ("NHWC", "HWIO", "NHWC")
x = r.standard_normal((2, 10, 10, 8)).astype(np.float32)
cases = [
    (lambda a, b: jax.lax.conv_transpose(a, b, (2, 2), "SAME", dimension_numbers=NHWC),
     x, r.standard_normal((3, 3, 8, 40)).astype(np.float32)),
    (lambda a, b: jax.lax.conv_general_dilated(a, b, (1, 1), "SAME", dimension_numbers=NHWC, feature_group_count=2),
     x, r.standard_normal((3, 3, 4, 64)).astype(np.float32)),
    (jax.grad(lambda a, b: (jax.lax.conv_general_dilated(a, b, (2, 2), "SAME", dimension_numbers=NHWC) ** 2).sum(),
              argnums=1), x, r.standard_normal((3, 3, 8, 32)).astype(np.float32)),  # (stride 2: not conv_flat's)
]
for fn, a, b in cases:
    exe = axle.compile(jax.jit(fn).lower(a, b).as_text(), backend="cpu")
    assert "axle_lowp_conv_tiles_f32" in exe.program.llvm_ir
    assert {k.library for k in exe.program.kernels if k.library} == {"lowp.f32"}
    want = np.asarray(jax.jit(fn)(a, b))
    np.testing.assert_allclose(np.asarray(exe(a, b)), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
print("ok")
'''
    env = dict(os.environ, AXLE_CACHE_DIR="off")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().endswith("ok")
