"""Float -> integer conversions (saturating, NaN to 0, as XLA's CPU conversions) and
round-half-away-from-zero, both computed in vectorizable form (scalar_ops.py): bit for bit
against jax.jit over the boundary values of every source and destination type."""
import ml_dtypes
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402

import axle  # noqa: E402

SPECIAL = [0.0, -0.0, 0.5, -0.5, -0.99, -1.0, 1.5, -1.5, 127.9, 128.0, -128.0, -129.0, 255.5, 256.0, 32767.5,
           32768.0, -32768.5, 65535.9, 65536.0, 2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0,
           4294967040.0, 4294967296.0, 1e30, -1e30, np.inf, -np.inf, np.nan, 3.4e38]
SOURCES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]


def _values(dt):
    with np.errstate(over="ignore"):
        return np.concatenate([np.array(SPECIAL, np.float64),
                               np.random.default_rng(0).standard_normal(333) * 3e4]).astype(dt)


def _same(fn, x):
    with jax.enable_x64(x.dtype == np.float64):
        text = jax.jit(fn).lower(x).as_text()
        got = axle.compile(text, backend="cpu").execute([x])[0]
        want = np.asarray(jax.jit(fn)(x))
    assert got.dtype == want.dtype
    if got.dtype.kind == "V" or got.dtype == ml_dtypes.bfloat16:  # (numpy's NaN test needs a numpy float)
        got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("src", SOURCES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dst", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32],
                         ids=lambda d: np.dtype(d).name)
def test_float_to_int_saturates_like_xla(src, dst):
    _same(lambda v: v.astype(dst), _values(src))


@pytest.mark.parametrize("src", SOURCES, ids=lambda d: np.dtype(d).name)
def test_round_half_away_from_zero(src):
    x = np.concatenate([np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, -0.3, 0.49999997, -0.49999997, 8388607.5],
                                 np.float64).astype(src), _values(src)])
    _same(lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO), x)
