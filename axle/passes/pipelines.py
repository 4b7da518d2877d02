"""Pipelines: plain lists of passes, one comment per ordering constraint."""
from __future__ import annotations

from axle.passes.pass_manager import FixedPoint
from axle.passes.registry import PASSES


def _have(*names):
    return [PASSES[n]() for n in names if n in PASSES]


def default_pipeline() -> list:
    """The target-independent pipeline every backend starts from."""
    return [
        # JAX's custom calls and Shardy ops get their one-device meaning first (ApproxTopK
        # reads its comparator function, which inline then erases as unreferenced)
        *_have("jax-custom-calls"),
        # inline first: the other passes work within one function and see through calls then
        *_have("inline"),
        # expand CHLO and composites into StableHLO before simplifying, so the simplifier
        # and the folder see the ops the expansions produce
        *_have("chlo-expand"),
        # short counted loops (threefry's rounds, small fori_loops) become straight-line code
        # before simplifying: what they carry around folds, and the fusion sees one chain
        *_have("unroll-loops"),
        # canonical dots (batch dims leading, one contracting dim) expose transposes and
        # reshapes that the simplifier then merges with their neighbours
        *_have("dot-canonicalize"),
        # the local rewrites feed each other (a fold makes a simplification possible and the
        # other way round); CSE after them merges what they made equal; DCE sweeps the rest
        # while-licm in the group: what simplifying a loop body makes invariant moves out, and
        # what moved out is simplified and shared with what was there
        FixedPoint(_have("simplify", "constant-folding", "cse", "dce", "while-licm"), name="simplify-fold-cse-dce"),
    ]


def cpu_pipeline() -> list:
    """The CPU backend's pipeline: the default one, then rewrites for its kernels."""
    return default_pipeline() + [
        # after dot-canonicalize: transposes feeding or fed by dots become GEMM flags
        *_have("transpose-fold"),
    ]
