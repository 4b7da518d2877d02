"""2-D filter gradients as 1-D ones over the flattened pixel stream (conv_flat.py): stride-1
gradients in NCHW (PyTorch's and JAX's) and NHWC, padding on either side, few channels
(the window's rows stacked into the features), strided forward convolutions (through the
input's phases); against jax.jit and the interpreter, with the strided path counted."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import disk_cache  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402
from axle.backends.cpu.lowp_runtime import supported_kinds  # noqa: E402

pytestmark = pytest.mark.skipif(not ({"f32", "f32_avx2"} & supported_kinds()),
                                reason="the host has neither of axle's f32 GEMM kernels (AVX2 or AVX-512)")
R = np.random.default_rng(44)
NCHW = ("NCHW", "OIHW", "NCHW")
NHWC = ("NHWC", "HWIO", "NHWC")


def f32(*s, scale=1.0):
    return (R.standard_normal(s) * scale).astype(np.float32)


def _filter_grad(xs, ws, dn, stride=(1, 1), pad=((1, 1), (1, 1))):
    def conv(x, w):
        return lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=dn)
    x, w = f32(*xs), f32(*ws, scale=0.1)
    dy = f32(*jax.eval_shape(conv, x, w).shape)
    return (lambda x, dy: jax.vjp(lambda w: conv(x, w), w)[1](dy)[0]), (x, dy)


def _run(fn, args, interpret):
    text = jax.jit(fn).lower(*args).as_text()
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text, backend="cpu")
    cpu_exe.clear_memory_cache()
    got = exe.execute(list(args))[0]
    want = np.asarray(jax.jit(fn)(*args))
    tol = 2e-4 * max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=tol)
    if interpret:
        ref = axle.interpret(text, *args)
        ref = ref[0] if isinstance(ref, (list, tuple)) else ref
        np.testing.assert_allclose(got, np.asarray(ref), rtol=2e-4, atol=tol)
    return sum(1 for k in exe.program.kernels if (getattr(k, "library", None) or "").endswith(".strided"))


CASES = [  # (name, input, kernel, dimension numbers, stride, padding)
    ("nchw_16_32", (4, 16, 12, 12), (32, 16, 3, 3), NCHW, (1, 1), ((1, 1), (1, 1))),
    ("nhwc_16_32", (4, 12, 12, 16), (3, 3, 16, 32), NHWC, (1, 1), ((1, 1), (1, 1))),
    ("uneven_padding", (2, 16, 11, 9), (24, 16, 3, 5), NCHW, (1, 1), ((2, 0), (0, 3))),
    ("few_channels_stacked", (4, 3, 16, 16), (32, 3, 3, 3), NCHW, (1, 1), ((1, 1), (1, 1))),
    ("stride_2_phases", (2, 3, 32, 32), (32, 3, 7, 7), NCHW, (2, 2), ((3, 3), (3, 3))),
    ("stride_2_4x4", (2, 3, 31, 33), (32, 3, 4, 4), NCHW, (2, 2), ((1, 1), (1, 1))),  # a DCGAN critic's first
]


@pytest.mark.parametrize("xs,ws,stride", [((2, 16, 15, 13), (32, 16, 3, 3), (2, 2)),
                                          ((2, 8, 10, 12), (16, 8, 3, 3), (2, 1)),
                                          ((2, 16, 32, 32), (32, 16, 4, 4), (2, 2))])
def test_strided_3x3_left_alone(xs, ws, stride):
    """A 3 x 3 stride-2 gradient would make 16 phase taps of 9 (1.78x the work): not rewritten,
    still right. (Also strided gradients of 8 or more input features: PHASES_MAX_CHANNELS.)"""
    fn, args = _filter_grad(xs, ws, NCHW, stride, ((1, 1), (1, 1)))
    assert _run(fn, args, interpret=True) == 0


@pytest.mark.parametrize("name,xs,ws,dn,stride,pad", CASES, ids=[c[0] for c in CASES])
def test_filter_gradients(name, xs, ws, dn, stride, pad):
    fn, args = _filter_grad(xs, ws, dn, stride, pad)
    strided = _run(fn, args, interpret=np.prod(xs) <= 20000)
    assert strided > 0, "the flat 1-D gradients did not take the strided path"


def test_valid_padding_and_wide_window():
    fn, args = _filter_grad((2, 16, 10, 40), (16, 16, 3, 9), NCHW, (1, 1), ((0, 0), (0, 0)))
    assert _run(fn, args, interpret=True) > 0


def test_too_few_output_features_keeps_the_general_path():
    """Fewer than 8 output features (kernels_conv_strided.MIN_N): the strided kernel's
    one-vector tiles would be mostly empty. With 8 (a half-used tile) the flat path takes
    it: a folded Conv3d 16 -> 8 filter gradient ran 51 ms on the general path's gathered
    patches, 23 ms as strided GEMMs."""
    fn, args = _filter_grad((4, 12, 12, 16), (3, 3, 16, 4), NHWC, (1, 1), ((1, 1), (1, 1)))
    assert _run(fn, args, interpret=True) == 0
    fn, args = _filter_grad((4, 12, 12, 16), (3, 3, 16, 8), NHWC, (1, 1), ((1, 1), (1, 1)))
    assert _run(fn, args, interpret=True) > 0


def test_many_input_channels_keep_the_general_path():
    """64 input features or more: the general path's patches copy runs of C floats and are
    as fast, without the stream's copies (conv_flat.MAX_CHANNELS)."""
    fn, args = _filter_grad((2, 12, 12, 64), (3, 3, 64, 32), NHWC, (1, 1), ((1, 1), (1, 1)))
    assert _run(fn, args, interpret=False) == 0
    # ...unless the output features are fewer than WIDE_OUTPUTS (Glow's 64 -> 12)
    fn, args = _filter_grad((2, 12, 12, 64), (3, 3, 64, 12), NHWC, (1, 1), ((1, 1), (1, 1)))
    assert _run(fn, args, interpret=False) > 0
