"""Float sums over many elements keep the error of a cascade, not of one running total:
a batch norm's statistics over N, H, W of NCHW (rows summed on their own, the row sums in
blocks: kernels.cascaded_rows) and column sums over many rows (about sqrt(rows) parts:
kernels._reduce_leading_in_parts). Against float64 sums, with bounds near XLA's and
PyTorch's errors on the same data (one running total was 10-40x their error, and a batch
norm's backward, sum dy (x - mean), magnified it into wrong gradients)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402


@pytest.mark.parametrize("shape,axes,bound", [
    ((2, 16, 75, 99), (0, 2, 3), 4e-7),   # NCHW statistics (one running total: 1.1e-6)
    ((14850, 16), (0,), 8e-7),             # a column sum (4.1e-6)
    ((2, 75, 99, 16), (0, 1, 2), 8e-7),    # NHWC statistics: the leading dimensions as rows (3.6e-6)
    ((16, 14850), (1,), 4e-7),             # a row sum (vectorized partial sums already)
])
def test_sums_are_cascaded(shape, axes, bound):
    x = (np.random.default_rng(0).standard_normal(shape) + 3).astype(np.float32)
    f = jax.jit(lambda x: jnp.sum(x, axes))
    got = axle.compile(f.lower(x).as_text(), backend="cpu").execute([x])[0]
    ref = x.astype(np.float64).sum(axes)
    assert np.abs(got - ref).max() / np.abs(ref).max() < bound


def test_batch_norm_backward_term_is_accurate():
    """sum dy (x - mean(x)) per channel with an offset input and a nearly constant dy (the
    UNet decoder case: conv weight gradients off by 10% through it)."""
    r = np.random.default_rng(1)
    x = (r.standard_normal((2, 16, 75, 99)) + 3).astype(np.float32)
    dy = (r.standard_normal((2, 16, 75, 99)) * 0.01 + 1).astype(np.float32)
    f = jax.jit(lambda x, dy: jnp.sum(dy * (x - x.mean((0, 2, 3), keepdims=True)), (0, 2, 3)))
    got = axle.compile(f.lower(x, dy).as_text(), backend="cpu").execute([x, dy])[0]
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    ref = (dy64 * (x64 - x64.mean((0, 2, 3), keepdims=True))).sum((0, 2, 3))
    xla = np.asarray(f(x, dy))
    err, err_xla = np.abs(got - ref).max(), np.abs(xla - ref).max()
    assert err <= 4 * err_xla + 1e-3, (err, err_xla)


def test_row_fused_statistics_are_cascaded():
    """The mean and variance of a batch norm over N, H, W of NCHW computed inside the loop
    of the kernel that reads them (row fusion): the same cascade."""
    x = (np.random.default_rng(2).standard_normal((2, 16, 75, 99)) + 3).astype(np.float32)

    def f(x):
        m = x.mean((0, 2, 3), keepdims=True)
        return (x - m) / jnp.sqrt(((x - m) ** 2).mean((0, 2, 3), keepdims=True) + 1e-5)
    got = axle.compile(jax.jit(f).lower(x).as_text(), backend="cpu").execute([x])[0]
    x64 = x.astype(np.float64)
    m = x64.mean((0, 2, 3), keepdims=True)
    ref = (x64 - m) / np.sqrt(((x64 - m) ** 2).mean((0, 2, 3), keepdims=True) + 1e-5)
    assert np.abs(got - ref).max() < 3e-6
