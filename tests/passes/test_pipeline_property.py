"""Property: the default pipeline never changes what a program computes.

Hypothesis builds random programs from elementwise ops, broadcasts, transposes,
reshapes, reductions, dot_generals, constants and the identities the simplifier
targets (x*1, x+(-0), transpose of transpose, ...); the interpreter runs each on random
inputs before and after the pipeline.
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from axle.ir.verifier import verify
from axle.passes import PassManager, default_pipeline
from program_strategies import SHAPE, programs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31 - 1))
def test_default_pipeline_preserves_results(text, seed):
    m = parse_module(text)
    verify(m)
    r = np.random.default_rng(seed)
    args = [r.standard_normal(SHAPE).astype(np.float32), r.standard_normal(SHAPE).astype(np.float32),
            r.standard_normal(SHAPE[1]).astype(np.float32)]
    before = run_function(m, args)
    PassManager(default_pipeline(), verify_each=True).run(m)
    after = run_function(m, args)
    for a, b in zip(after, before):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=text)
