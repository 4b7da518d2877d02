"""Real programs from JAX: lowered to StableHLO, parsed, verified, interpreted, and
optimized by the default pipeline; results must match jax.jit's on the same inputs."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")

from axle.interpreter.evaluator import run_function  # noqa: E402
from axle.ir import parse_module, print_module  # noqa: E402
from axle.ir.verifier import verify  # noqa: E402
from axle.tools.workloads import WORKLOADS, lower  # noqa: E402


def _count(m):
    return sum(1 for op in m.walk() if op.name not in ("func.func",))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_matches_jax_before_and_after_default_pipeline(name):
    from axle.passes import PassManager, default_pipeline
    text, flat, fn, args = lower(name)
    m = parse_module(text, name)
    verify(m)
    assert parse_module(print_module(m)) == m
    ref = [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
    got = run_function(m, flat)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    before = _count(m)
    pm = PassManager(default_pipeline(), verify_each=True)
    pm.run(m)
    after = _count(m)
    print(f"{name}: {before} ops before the default pipeline, {after} after")
    assert after <= before
    got = run_function(m, flat)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
