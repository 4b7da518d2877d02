"""Use lists stay exact after every pass of the CPU pipeline on the real JAX programs
(registry.py): the lowered StableHLO of each, parsed, run through the pipeline with
axle.ir.uses.check_use_lists after each pass. `make test` takes the core programs; the
slow run (or AXLE_JAX_PROGRAMS=all) takes them all."""
import os
import sys

import pytest

jax = pytest.importorskip("jax")

import harness  # noqa: E402
from registry import load_all  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ir"))
from test_use_lists import _pipeline_checked  # noqa: E402

PROGRAMS = load_all()


def _check(names):
    from axle.ir.text.reader import parse_module
    from axle.ir.uses import check_use_lists
    for name in names:
        prog = PROGRAMS[name]
        text = harness.lower(prog, prog.inputs()).as_text()
        m = parse_module(text, name)
        assert check_use_lists(m) == [], name
        assert _pipeline_checked(m), name


def test_use_lists_after_every_pass_on_the_core_programs():
    names = sorted(n for n, p in PROGRAMS.items() if p.core)
    assert len(names) >= 10
    _check(names)


@pytest.mark.slow
def test_use_lists_after_every_pass_on_every_program():
    _check(sorted(PROGRAMS))
