"""A reduction over a middle axis with its input gathered (an embedding bag: t[i].sum(1)):
the results' accesses get an LLVM alias scope of their own and the operand reads a
noalias of it, so the index load is hoisted and the row loop vectorizes. Against jax.jit
and numpy."""
import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import axle  # noqa: E402


@pytest.mark.parametrize("dim", [128, 37])
def test_embedding_bag_sum(dim):
    r = np.random.default_rng(0)
    t = r.standard_normal((5000, dim)).astype(np.float32)
    i = r.integers(0, 5000, (64, 32)).astype(np.int32)
    fn = lambda t, i: t[i].sum(axis=1)  # noqa: E731
    exe = axle.compile(jax.jit(fn).lower(t, i).as_text(), backend="cpu")
    got = exe.execute([t, i])[0]
    np.testing.assert_allclose(got, t[i].astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(t, i)), rtol=1e-5, atol=1e-5)
    if dim == 128:
        ir = exe._native(((5000, dim), (64, 32))).optimized_ir
        assert re.search(r"load <(4|8|16) x float>", ir), "the row loop did not vectorize"


def test_max_and_argmax_over_middle_axis():
    """Two results (a variadic reduce) read back in the loop: both scoped."""
    r = np.random.default_rng(1)
    x = r.standard_normal((16, 300, 40)).astype(np.float32)
    fn = lambda x: (x.max(axis=1), x.argmax(axis=1))  # noqa: E731
    got = axle.compile(jax.jit(fn).lower(x).as_text(), backend="cpu").execute([x])
    np.testing.assert_array_equal(got[0], x.max(axis=1))
    np.testing.assert_array_equal(got[1], x.argmax(axis=1))
