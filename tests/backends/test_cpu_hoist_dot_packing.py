"""cpu-hoist-dot-packing: a loop-invariant dot operand whose dimensions BLAS does not read
in order (Hartree-Fock's exchange term einsum("ikjl,kl->ij", eri, D) in the SCF loop) is
transposed once before the loop instead of packed on every trip. Against jax.jit; the
transpose sits outside the loop, the dot inside reads it; operands computed in the loop,
and dots BLAS reads in place, are left alone."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import axle  # noqa: E402
from axle.ir import parse_module  # noqa: E402
from axle.passes.pass_manager import PassManager  # noqa: E402
from axle.backends.cpu.pipeline import cpu_pipeline  # noqa: E402

R = np.random.default_rng(5)


def _optimized(fn, *args):
    m = parse_module(jax.jit(fn).lower(*args).as_text())
    PassManager(cpu_pipeline()).run(m)
    return m


def _placement(m):
    """(transposes outside any loop, transposes inside one, dots inside one)."""
    out = {"outside": 0, "inside": 0, "dots": 0}

    def visit(block, looped):
        for op in block.operations:
            if op.name == "stablehlo.transpose":
                out["inside" if looped else "outside"] += 1
            if op.name == "stablehlo.dot_general" and looped:
                out["dots"] += 1
            for r in op.regions:
                for b in r.blocks:
                    visit(b, looped or op.name == "stablehlo.while")
    for f in m.walk():
        if f.name == "func.func":
            for r in f.regions:
                for b in r.blocks:
                    visit(b, False)
    return out


def _check(fn, *args, rtol=1e-5):
    exe = axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")
    got = exe.execute(list(args))
    for g, w in zip(got, jax.tree_util.tree_leaves(jax.jit(fn)(*args))):
        w = np.asarray(w, np.float64)
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=rtol, atol=rtol * np.abs(w).max())


def test_exchange_term_packed_once():
    eri = R.standard_normal((24, 24, 24, 24)).astype(np.float32)
    d = R.standard_normal((24, 24)).astype(np.float32)

    def scf(eri, d):
        return lax.fori_loop(0, 5, lambda i, c: c + jnp.einsum("ikjl,kl->ij", eri, c) * 1e-3, d)
    _check(scf, eri, d)
    assert _placement(_optimized(scf, eri, d)) == {"outside": 1, "inside": 0, "dots": 1}


def test_rhs_and_nested_loops():
    """The rhs in an odd order (contracting dimensions 0 and 2), invariant in two nested
    loops: one transpose, before the outer loop."""
    w = R.standard_normal((24, 24, 24, 24)).astype(np.float32)
    x = R.standard_normal((8, 24, 24)).astype(np.float32)

    def f(w, x):
        def inner(i, c):
            return jnp.tanh(jnp.einsum("aij,ikjl->akl", c, w) * 0.01 + c)
        return lax.fori_loop(0, 3, lambda j, c: lax.fori_loop(0, 2, inner, c) * 0.5, x)
    _check(f, w, x, rtol=2e-5)
    assert _placement(_optimized(f, w, x)) == {"outside": 1, "inside": 0, "dots": 1}


def test_operand_computed_in_the_loop_is_left():
    e = R.standard_normal((24, 24, 24, 24)).astype(np.float32)
    d = R.standard_normal((24, 24)).astype(np.float32)

    def f(e, d):
        def body(i, c):
            ei = e * c[0, 0]  # a new operand every trip: packed in the loop as before
            return c + jnp.einsum("ikjl,kl->ij", ei, c) * 1e-3
        return lax.fori_loop(0, 4, body, d)
    _check(f, e, d)
    assert _placement(_optimized(f, e, d))["outside"] == 0
