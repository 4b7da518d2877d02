"""Real JAX programs (tests/jax_programs/programs_*.py) compiled by axle's CPU backend
and compared with XLA's results (harness.py).

`make test` runs the representative part (programs marked `core`); the whole sweep runs
with `AXLE_JAX_PROGRAMS=all` (`make jax-programs`). A program that needs a feature axle
does not have yet is a strict xfail naming that feature: it must fail, and the mark goes
once the feature lands.
"""
import os

import pytest

jax = pytest.importorskip("jax")

import harness  # noqa: E402
from registry import load_all  # noqa: E402

PROGRAMS = load_all()
ALL = os.environ.get("AXLE_JAX_PROGRAMS", "") == "all"


def _params():
    out = []
    for name in sorted(PROGRAMS):
        p = PROGRAMS[name]
        if not (ALL or p.core):
            continue
        marks = [pytest.mark.xfail(strict=True, reason=p.xfail)] if p.xfail else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.parametrize("name", _params())
def test_program_matches_xla(name):
    harness.run(PROGRAMS[name])


def test_the_sweep_is_large_enough():
    assert len(PROGRAMS) >= 150
    families = {p.family for p in PROGRAMS.values()}
    assert {"jnp", "lax", "nn", "scipy", "random", "fft", "linalg", "control", "grad", "vmap",
            "models", "dtypes", "sharding"} <= families
    core = [p for p in PROGRAMS.values() if p.core]
    assert len(core) >= 30 and {p.family for p in core} >= families - {"sharding", "linalg"}


def test_the_harness_can_fail():
    """A program whose axle result is made wrong on purpose must not pass."""
    import numpy as np
    from registry import Program, f32
    prog = Program("sum", lambda x: x.sum(), [f32(4)], "test")
    inputs = prog.inputs()
    want = harness.xla_results(harness.lower(prog, inputs), inputs)
    with pytest.raises(AssertionError):
        harness.compare([want[0] + np.float32(1e-2)], want)
