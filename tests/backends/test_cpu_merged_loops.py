"""Elementwise kernels whose innermost dimension is short run their trailing dimensions as
one loop (elementwise._merged_loop) when every read is at the same row-major offset of
those dimensions: NCHW activations over small maps, per-channel scales and biases,
scalars. Exact against jax.jit (the same operations per element), and the loops that may
not merge (a broadcast that varies along part of the merged dimensions, a transpose) keep
their nest."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import disk_cache, elementwise  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402

R = np.random.default_rng(0)


def _compile(fn, *args):
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(jax.jit(fn, keep_unused=True).lower(*args).as_text(), backend="cpu")
        cpu_exe.clear_memory_cache()
    return exe


CASES = {
    "silu": (lambda x, c, s: jax.nn.silu(x), True),
    "channel_affine": (lambda x, c, s: x * c[None, :, None, None] + c[None, :, None, None] ** 2, True),
    "se_gate": (lambda x, c, s: x * jax.nn.sigmoid(s), True),            # s [N, C, 1, 1]
    "scalar_select": (lambda x, c, s: jnp.where(x > 0.5, x, 0.1 * x) + 1.0, True),
    "row_varying": (lambda x, c, s: x + x[0, 0, :, :1], False),          # varies along H only
    "transposed": (lambda x, c, s: x + jnp.swapaxes(x, 2, 3), False),
    "unit_last": (lambda x, c, s: x[..., :1] * s + 1.0, False),          # [N, C, 7, 1]
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_merged_trailing_dimensions(name, monkeypatch):
    fn, merges = CASES[name]
    x = R.standard_normal((3, 12, 7, 7)).astype(np.float32)
    c = R.standard_normal(12).astype(np.float32)
    s = R.standard_normal((3, 12, 1, 1)).astype(np.float32)
    calls = []
    real = elementwise._merged_loop
    monkeypatch.setattr(elementwise, "_merged_loop", lambda *a: calls.append(real(*a)) or calls[-1])
    got = _compile(fn, x, c, s).execute([x, c, s])[0]
    assert any(calls) == merges
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(x, c, s)), rtol=1e-6, atol=1e-6)
    monkeypatch.setattr(elementwise, "_merged_loop", lambda *a: False)
    np.testing.assert_array_equal(got, _compile(fn, x, c, s).execute([x, c, s])[0])


def test_silu_over_small_maps_vectorizes():
    """SiLU over 4 x 240 x 14 x 14 (an EfficientNet block's): the merged loop of 196
    elements holds vector code (a 14-element innermost loop was left scalar)."""
    x = np.zeros((4, 240, 14, 14), np.float32)
    exe = _compile(jax.nn.silu, x)
    assert "x float>" in exe._native(((4, 240, 14, 14),)).optimized_ir
