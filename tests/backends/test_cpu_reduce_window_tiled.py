"""reduce_window with windows of more than 16 positions on the CPU backend: the window
loop outside, tiles of the results' last dimension inside (kernels_window.py
_reduce_window_tiled), positions along an inside last dimension combined in groups. Each
result still combines its window in the spec's order, so results equal the interpreter's
bit for bit; padding, strides, window and base dilation, tiles longer than one, groups with
a remainder, fused producers, max and integer bodies, variadic reductions."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402


@pytest.fixture(autouse=True)
def _used(calls_of):
    """Every test here must run through _reduce_window_tiled (tests/backends/conftest.py)."""
    calls = calls_of("axle.backends.cpu.kernels_window", "_reduce_window_tiled")
    yield
    assert calls, "the tiled reduce_window kernel was not used"


def _check(fn, *args):
    text = jax.jit(fn).lower(*args).as_text()
    got = axle.compile(text, backend="cpu").execute(list(args))
    want = axle.interpret(text, *args)
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    ref = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    for g, w in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-5, atol=1e-4)


R = np.random.default_rng(0)


def f32(*s):
    return R.standard_normal(s).astype(np.float32)


@pytest.mark.parametrize("window,stride,padding", [
    (64, 1, "VALID"),          # moving sum: groups of 8, 8 groups
    (21, 1, "VALID"),          # groups with a remainder of 5
    (33, 2, "SAME"),           # padded last dimension: bounds on the inner loop
    (17, 3, [(20, 7)]),        # padding wider than the stride
])
def test_moving_sum_1d(window, stride, padding):
    x = f32(5, 1500)  # three tiles of 512 per row
    pads = padding if isinstance(padding, list) else lax.padtype_to_pads((1500,), (window,), (stride,), padding)
    fn = lambda x: lax.reduce_window(x * 0.5 + 1.0, 0.0, lax.add, (1, window), (1, stride),  # noqa: E731
                                     [(0, 0)] + list(pads))
    _check(fn, x)


def test_dilated_window_max():
    x = f32(3, 700)
    fn = lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 20), (1, 1), [(0, 0), (9, 10)],  # noqa: E731
                                     window_dilation=(1, 3))
    _check(fn, x)


def test_two_dimensional_window_with_padding_nchw():
    x = f32(2, 3, 40, 37)
    fn = lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 1, 5, 5), (1, 1, 2, 1), "SAME")  # noqa: E731
    _check(fn, x)


def test_base_dilation_on_an_outer_dimension():
    x = f32(9, 64)
    fn = lambda x: lax.reduce_window(x, 0.0, lax.add, (3, 9), (1, 1), [(2, 2), (4, 4)],  # noqa: E731
                                     base_dilation=(2, 1))
    _check(fn, x)


def test_integer_moving_sum_wraps_like_the_interpreter():
    x = R.integers(-2**31, 2**31 - 1, (4, 300)).astype(np.int32)
    fn = lambda x: lax.reduce_window(x, np.int32(0), lax.add, (1, 40), (1, 1), "VALID")  # noqa: E731
    _check(fn, x)


def test_variadic_window_reduction():
    x, y = f32(2, 200), f32(2, 200)

    def body(a, b):
        return (jnp.maximum(a[0], b[0]), a[1] + b[1])

    fn = lambda x, y: lax.reduce_window((x, y), (-jnp.inf, 0.0), body, (1, 24), (1, 1), "SAME")  # noqa: E731
    _check(fn, x, y)


def test_large_pooling_window_over_rows():
    x = f32(2, 14, 14, 24)
    fn = lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 7, 7, 1), (1, 1, 1, 1), "SAME") / 49  # noqa: E731
    _check(fn, x)
