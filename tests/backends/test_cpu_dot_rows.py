"""dot_general outside the library routines as vectorized rows (kernels_dot_rows.py):
int32 / int64 / uint32 products wrapping as integer arithmetic does, small real dots, batch
and contracting dimensions in odd places, blocks of rows with a remainder, tiles of the
result longer than one. Each result sums its products in increasing k, so the results
equal the interpreter's bit for bit (and jax.jit's)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402


@pytest.fixture(autouse=True)
def _used(calls_of):
    """Every test here must run through emit_rows_dot (tests/backends/conftest.py)."""
    calls = calls_of("axle.backends.cpu.kernels_dot_rows", "emit_rows_dot")
    yield
    assert calls, "the rows dot kernel was not used"


def _check(fn, *args, jax_too=True):
    text = jax.jit(fn).lower(*args).as_text()
    got = axle.compile(text, backend="cpu").execute(list(args))[0]
    want = axle.interpret(text, *args)
    want = want[0] if isinstance(want, (list, tuple)) else want
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    if jax_too:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(jax.jit(fn)(*args)))


R = np.random.default_rng(0)


def test_int32_matmul_wraps():
    a = R.integers(-2**31, 2**31 - 1, (37, 61)).astype(np.int32)  # products overflow: mod 2^32
    b = R.integers(-2**31, 2**31 - 1, (61, 1100)).astype(np.int32)  # three tiles of 512
    _check(lambda a, b: a @ b, a, b)


def test_uint32_batched_with_batch_dimension_last_in_lhs():
    a = R.integers(0, 2**32 - 1, (24, 9, 3), dtype=np.uint64).astype(np.uint32)  # [k, m, batch]
    b = R.integers(0, 2**32 - 1, (3, 24, 40), dtype=np.uint64).astype(np.uint32)  # [batch, k, n]
    dn = (((0,), (1,)), ((2,), (0,)))
    _check(lambda a, b: lax.dot_general(a, b, dn), a, b)


def test_int64_two_contracting_dimensions():
    jax.config.update("jax_enable_x64", True)
    try:
        a = R.integers(-2**40, 2**40, (6, 5, 7)).astype(np.int64)
        b = R.integers(-2**40, 2**40, (5, 7, 3, 16)).astype(np.int64)
        dn = (((1, 2), (0, 1)), ((), ()))
        _check(lambda a, b: lax.dot_general(a, b, dn), a, b)
    finally:
        jax.config.update("jax_enable_x64", False)


def test_mixed_int8_int32_operands():
    a = R.integers(-128, 127, (13, 50)).astype(np.int8)
    b = R.integers(-2**20, 2**20, (50, 33)).astype(np.int32)
    _check(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32), a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_float_dot_sums_in_k_order(dtype):
    """Below BLAS's size: each result is ((0 + p0) + p1) + ..., rounded at every step."""
    jax.config.update("jax_enable_x64", dtype == np.float64)
    try:
        a = R.standard_normal((5, 3, 10)).astype(dtype)  # [k, batch, m]: not skinny, below BLAS (m n k < 512)
        b = R.standard_normal((3, 5, 9)).astype(dtype)  # [batch, k, n]
        dn = (((0,), (1,)), ((1,), (0,)))
        text = jax.jit(lambda a, b: lax.dot_general(a, b, dn)).lower(a, b).as_text()
        got = axle.compile(text, backend="cpu").execute([a, b])[0]
    finally:
        jax.config.update("jax_enable_x64", False)
    want = np.zeros((3, 10, 9), dtype)
    for k in range(5):
        want = want + a[k][:, :, None] * b[:, k][:, None, :]
    np.testing.assert_array_equal(got, want)
