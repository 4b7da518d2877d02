"""Differential test: random programs compiled by the CPU backend give the interpreter's
results on random inputs (tight tolerance: the backend computes in the same precision
and order as the interpreter for these ops; libm transcendentals may differ by an ulp).

The suite must be able to fail: `test_the_suite_catches_a_broken_backend` runs it, with
the default number of examples, against CPU backends broken on purpose (max and min
swapped, add and subtract swapped, slices off by one) and requires each to be caught.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from axle.backends.cpu.executable import CpuExecutable
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from program_strategies import SHAPE, programs

EXAMPLES = int(os.environ.get("AXLE_DIFF_EXAMPLES", "60"))


def check_program(text: str, seed: int) -> None:
    r = np.random.default_rng(seed)
    args = [r.standard_normal(SHAPE).astype(np.float32), r.standard_normal(SHAPE).astype(np.float32),
            r.standard_normal(SHAPE[1]).astype(np.float32)]
    want = run_function(parse_module(text), args)
    got = CpuExecutable(parse_module(text)).execute(args)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-5, err_msg=f"result {k} of\n{text}")


def _suite(database=True):
    """The property, as hypothesis runs it (without its example database for the mutants:
    their failures must not be replayed by later runs)."""
    opts = dict(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    if not database:  # and stop at the first failure: no shrinking, one report
        opts.update(database=None, print_blob=False, report_multiple_bugs=False,
                    phases=[Phase.explicit, Phase.generate])
    return settings(**opts)(given(programs(control=True), st.integers(0, 2**31 - 1))(check_program))


def test_cpu_backend_matches_interpreter():
    """Programs of elementwise ops, broadcasts, reductions, dots (random dimension numbers),
    convolutions, sorts, reduce_windows, slices, concatenations, pads, gathers, scatters
    (repeated indices: updates combine in order) and while loops, on distinct operands."""
    _suite()()


# ---------------------------------------------------------------- broken backends


def _swap_rules(monkeypatch, a: str, b: str) -> None:
    from axle.codegen.scalar_ops import RULES
    ra, rb = RULES[a], RULES[b]
    monkeypatch.setitem(RULES, a, rb)
    monkeypatch.setitem(RULES, b, ra)


def _slice_off_by_one(monkeypatch) -> None:
    """Element i of a slice reads element i + 1 of the slice (the last one stays: in bounds)."""
    from axle.codegen.emitter import Emitter
    original = Emitter.op_at

    def op_at(self, op, idx):
        if op.name == "stablehlo.slice" and idx:
            last = op.results[0].type.shape[-1] - 1
            i = idx[-1]
            shifted = self.b.select(self.b.icmp_signed("<", i, self.const_i64(last)),
                                    self.b.add(i, self.const_i64(1)), i)
            idx = list(idx[:-1]) + [shifted]
        return original(self, op, idx)

    monkeypatch.setattr(Emitter, "op_at", op_at)


MUTANTS = {
    "max-min swapped": lambda mp: _swap_rules(mp, "stablehlo.maximum", "stablehlo.minimum"),
    "add-subtract swapped": lambda mp: _swap_rules(mp, "stablehlo.add", "stablehlo.subtract"),
    "slice off by one": _slice_off_by_one,
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_the_suite_catches_a_broken_backend(mutant, monkeypatch):
    from axle.backends.cpu.executable import clear_memory_cache
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")  # compile every program with the broken backend
    clear_memory_cache()
    MUTANTS[mutant](monkeypatch)
    try:
        with pytest.raises(AssertionError):
            _suite(database=False)()
    finally:
        clear_memory_cache()  # no broken program may outlive this test
