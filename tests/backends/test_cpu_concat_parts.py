"""A loop computing a concatenate at its own index runs one loop per operand over that
operand's part (elementwise.py _concat_parts), nested concatenates along the same
dimension included (jnp.concatenate of many arrays nests them): against jax.jit, with
empty operands, concatenation along the first, a middle and the last dimension, a single
row (each part split on its own) and a concatenate under elementwise ops."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402

R = np.random.default_rng(0)


def _check(fn, shapes):
    args = [R.standard_normal(s).astype(np.float32) for s in shapes]
    got = axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu").execute(args)[0]
    want = np.asarray(jax.jit(fn)(*args))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("fn,shapes", [
    (lambda *xs: jnp.concatenate([jnp.tanh(x) for x in xs], 1), [(64, 3), (64, 5), (64, 0), (64, 7)]),
    (lambda *xs: jnp.concatenate([x * 2 for x in xs], 0) + 1, [(3, 40), (5, 40), (7, 40)]),
    (lambda *xs: jnp.exp(jnp.concatenate(xs, 2)), [(2, 3, 4, 5), (2, 3, 1, 5), (2, 3, 9, 5)]),
    (lambda *xs: jnp.concatenate([xs[0], xs[1] + 1], 1), [(1, 4000), (1, 70000)]),
    (lambda *xs: jnp.concatenate([xs[0], xs[1] + 1], 0), [(600, 1000), (300, 1000)]),
    (lambda *xs: jnp.concatenate([jnp.sin(x) for x in xs], 1), [(300, 8)] * 40),  # nested by JAX
])
def test_concatenate_parts(fn, shapes, calls_of):
    parts = calls_of("axle.backends.cpu.elementwise", "_concat_parts")
    _check(fn, shapes)
    assert True in parts


def test_concatenate_read_at_another_index_keeps_the_choice():
    # the concatenate is read through a reverse: not at the loop's own index
    _check(lambda a, b: jnp.concatenate([a, b + 1], 1)[:, ::-1] * 2, [(50, 30), (50, 20)])


@pytest.mark.parametrize("fn,shapes", [
    # read at the loop's index and through a reverse in the same loop
    (lambda a, b: (lambda c: c * 2 + c[::-1])(jnp.concatenate([a, b + 1])), [(5,), (7,)]),
    # nested (an empty operand, one-element parts), also read through a reverse
    (lambda a, b, c: (lambda d: d + d[::-1] * 3)(jnp.concatenate([a[:0], jnp.concatenate([a, b, c])])),
     [(1,), (1,), (1,)]),
    (lambda a, b: (lambda c: c - jnp.flip(c, 1))(jnp.concatenate([jnp.tanh(a), b], 1)), [(40, 3), (40, 9)]),
])
def test_concatenate_read_at_its_index_and_another(fn, shapes):
    _check(fn, shapes)


def test_a_short_part_of_cheap_operands_stays_one_loop(calls_of):
    """A shift along the innermost dimension (a column of padding, then the row's slice,
    as a CTC-style scan step writes it): the one-column part would run the fused exp in
    scalar tails, so the loop is not split (it chooses among the two cheap operands per
    element and vectorizes); operands with a transcendental are still split."""
    parts = calls_of("axle.backends.cpu.elementwise", "_concat_parts")
    shift = lambda x: jnp.exp(jnp.concatenate([jnp.full_like(x[:, :1], -3.0), x[:, :-1]], 1))  # noqa: E731
    _check(shift, [(16, 64)])
    assert parts == [False]
    _check(lambda x: jnp.concatenate([jnp.tanh(x[:, :1]), x[:, 1:] * 2], 1), [(16, 64)])
    assert parts[-1] is True
