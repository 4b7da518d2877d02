"""Batched matrix-vector dot_generals become a multiply and a reduce (dot-canonicalize's
batched_vector_dot): the same values as jax.jit's dots, with the batch dimensions anywhere,
the vector on either side, unit free dimensions, several contracting dimensions and
widening types; no GEMM left in the plan."""
import ml_dtypes
import numpy as np
import pytest

import axle

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

R = np.random.default_rng(23)


def _f32(*s):
    return R.standard_normal(s).astype(np.float32)


CASES = {
    "capsule_agreement": ("bijk,bjk->bij", (8, 96, 10, 16), (8, 10, 16)),
    "capsule_weighted_sum": ("bij,bijk->bjk", (8, 96, 10), (8, 96, 10, 16)),
    "vector_first_unit_free": ("xbd,bkd->bxk", (1, 6, 24), (6, 40, 24)),
    "two_contracting": ("cbd,bncd->bn", (5, 3, 7), (3, 11, 5, 7)),
    "batch_last": ("kb,mkb->mb", (12, 4), (9, 12, 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax_and_leaves_no_gemm(name):
    spec, sa, sb = CASES[name]
    fn = lambda a, b: jnp.einsum(spec, a, b)  # noqa: E731
    a, b = _f32(*sa), _f32(*sb)
    exe = axle.compile(jax.jit(fn).lower(a, b).as_text(), backend="cpu")
    assert not any(k.library for k in exe.program.kernels), [k.library for k in exe.program.kernels]
    np.testing.assert_allclose(exe(a, b), np.asarray(jax.jit(fn)(a, b)), rtol=2e-5, atol=2e-5)


def test_widening_types_are_exact():
    a = R.integers(-128, 128, (4, 50, 3, 16)).astype(np.int8)
    v = R.integers(-128, 128, (4, 3, 16)).astype(np.int8)
    fn = lambda a, v: jax.lax.dot_general(a, v, (([3], [2]), ([0, 2], [0, 1])),  # noqa: E731
                                          preferred_element_type=jnp.int32)
    got = axle.compile(jax.jit(fn).lower(a, v).as_text(), backend="cpu")(a, v)
    np.testing.assert_array_equal(got, np.asarray(jax.jit(fn)(a, v)))
    ab, vb = _f32(4, 50, 3, 16).astype(ml_dtypes.bfloat16), _f32(4, 3, 16).astype(ml_dtypes.bfloat16)
    fn32 = lambda a, v: jax.lax.dot_general(a, v, (([3], [2]), ([0, 2], [0, 1])),  # noqa: E731
                                            preferred_element_type=jnp.float32)
    got = axle.compile(jax.jit(fn32).lower(ab, vb).as_text(), backend="cpu")(ab, vb)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn32)(ab, vb)), rtol=1e-5, atol=1e-5)


def test_unbatched_batch_leading_and_matrix_products_stay_dots():
    # no batch dimension, or the batch dimensions in front of both (the skinny kernels read
    # each element's matrix in place: a decode step's scores), and a real batched GEMM
    for spec, sa, sb in (("mk,k->m", (64, 32), (32,)), ("bhd,bhkd->bhk", (2, 4, 32), (2, 4, 64, 32)),
                         ("bmk,bkn->bmn", (2, 16, 8), (2, 8, 12))):
        fn = lambda a, b: jnp.einsum(spec, a, b)  # noqa: E731
        a, b = _f32(*sa), _f32(*sb)
        exe = axle.compile(jax.jit(fn).lower(a, b).as_text(), backend="cpu")
        np.testing.assert_allclose(exe(a, b), np.asarray(jax.jit(fn)(a, b)), rtol=2e-5, atol=2e-5)
        assert any(k.library for k in exe.program.kernels)
