"""Grouped convolutions with 2-16 features per group (RegNet, ResNeXt) through the direct
kernel with block-diagonal weights (kernels_conv.grouped_block, conv_runtime's rows with
`grouped`): against jax.jit in NHWC and NCHW (moved to NHWC by conv_rows_layout), strides,
padding, rhs dilation, edges of the register blocks; their gradients; and the forms the
kernel leaves to the general path (unequal group widths, lhs dilation)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402
from axle.backends.cpu import kernels_conv  # noqa: E402

R = np.random.default_rng(3)
NHWC, NCHW = ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW")


def _direct_calls(monkeypatch):
    taken = []
    real = kernels_conv.grouped_block
    monkeypatch.setattr(kernels_conv, "grouped_block", lambda op: taken.append(real(op)) or taken[-1])
    return taken


def _check(fn, args, monkeypatch, direct: bool, rtol=2e-5):
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    cpu_exe.clear_memory_cache()
    taken = _direct_calls(monkeypatch)
    exe = axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")
    got = exe.execute(list(args))
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    for g, w in zip(got, want):
        w = np.asarray(w, np.float64)
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=rtol, atol=rtol * np.abs(w).max())
    assert (any(t is not None for t in taken)) == direct


@pytest.mark.parametrize("g", [2, 4, 8, 16])
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("stride,pad,dil", [(1, "SAME", 1), (2, ((1, 1), (1, 1)), 1), (1, "VALID", 2)])
def test_grouped_direct_matches_jax(g, layout, stride, pad, dil, monkeypatch):
    c = 48 if g != 16 else 64
    groups = c // g
    n, h, w = 2, 11, 13
    if layout == "NHWC":
        x, k, dn = R.standard_normal((n, h, w, c)), R.standard_normal((3, 3, g, c)), NHWC
    else:
        x, k, dn = R.standard_normal((n, c, h, w)), R.standard_normal((c, g, 3, 3)), NCHW
    x, k = x.astype(np.float32), k.astype(np.float32)

    def fn(x, k):
        return lax.conv_general_dilated(x, k, (stride, stride), pad, rhs_dilation=(dil, dil), dimension_numbers=dn,
                                        feature_group_count=groups)
    _check(fn, (x, k), monkeypatch, direct=True)


def test_grouped_gradients(monkeypatch):
    """A stride-1 grouped convolution's input gradient is a grouped convolution too (direct);
    the filter gradient goes wherever it goes: all against jax.grad."""
    x = R.standard_normal((2, 32, 9, 9)).astype(np.float32)
    k = R.standard_normal((32, 8, 3, 3)).astype(np.float32)

    def loss(x, k):
        y = lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=NCHW, feature_group_count=4)
        return jnp.sum(jnp.tanh(y))
    _check(jax.grad(loss, argnums=(0, 1)), (x, k), monkeypatch, direct=True, rtol=5e-5)


@pytest.mark.parametrize("case", ["unequal widths", "lhs dilated", "24 per group"])
def test_grouped_forms_left_to_the_general_path(case, monkeypatch):
    if case == "unequal widths":  # 4 input, 8 output features per group
        x, k, kw = R.standard_normal((2, 9, 9, 16)), R.standard_normal((3, 3, 4, 32)), {}
    elif case == "lhs dilated":
        x, k, kw = R.standard_normal((2, 9, 9, 16)), R.standard_normal((3, 3, 8, 16)), dict(lhs_dilation=(2, 2))
    else:
        x, k, kw = R.standard_normal((2, 9, 9, 48)), R.standard_normal((3, 3, 24, 48)), {}
    groups = {"unequal widths": 4, "lhs dilated": 2, "24 per group": 2}[case]
    x, k = x.astype(np.float32), k.astype(np.float32)

    def fn(x, k):
        return lax.conv_general_dilated(x, k, (1, 1), [(1, 1), (1, 1)], dimension_numbers=NHWC,
                                        feature_group_count=groups, **kw)
    _check(fn, (x, k), monkeypatch, direct=False)
