"""Differential test: random programs compiled by the CPU backend give the interpreter's
results on random inputs (tight tolerance: the backend computes in the same precision
and order as the interpreter for these ops; libm transcendentals may differ by an ulp)."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axle.backends.cpu.executable import CpuExecutable
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from program_strategies import SHAPE, programs


@settings(max_examples=int(__import__("os").environ.get("AXLE_DIFF_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(control=True), st.integers(0, 2**31 - 1))
def test_cpu_backend_matches_interpreter(text, seed):
    """Programs of elementwise ops, broadcasts, reductions, dots, slices, concatenations,
    pads, gathers, scatters (repeated indices: updates combine in order) and while loops."""
    r = np.random.default_rng(seed)
    args = [r.standard_normal(SHAPE).astype(np.float32), r.standard_normal(SHAPE).astype(np.float32),
            r.standard_normal(SHAPE[1]).astype(np.float32)]
    want = run_function(parse_module(text), args)
    got = CpuExecutable(parse_module(text)).execute(args)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-6, atol=1e-6, err_msg=text)
