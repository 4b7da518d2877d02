"""Target-independent passes and the pass manager.

One pass per file; the file name is the pass name. `PASSES` maps names to pass
classes; `default_pipeline()` is what every backend starts from (pipelines.py).
"""
from __future__ import annotations

import importlib

from axle.passes.pass_manager import FixedPoint, Pass, PassError, PassManager, run_pipeline

PASSES: dict[str, type] = {}


def register_pass(cls):
    """Class decorator: make a pass available by its `name` (e.g. to `axle opt --passes`)."""
    PASSES[cls.name] = cls
    return cls


_MODULES = ("inline", "dead_code", "cse", "constant_folding", "simplify", "dot_canonicalize",
            "chlo_expand", "expanders", "refine_shapes", "transpose_fold", "lower_quant",
            "jax_custom_calls", "forward_tuples", "drop_barriers", "static_shape_ops")
for _m in _MODULES:
    try:
        importlib.import_module(f"axle.passes.{_m}")
    except ModuleNotFoundError as _e:  # a pass still being written
        if _e.name != f"axle.passes.{_m}":
            raise


def make_pass(name: str) -> Pass:
    try:
        return PASSES[name]()
    except KeyError:
        raise KeyError(f"unknown pass '{name}'; known passes: {', '.join(sorted(PASSES))}") from None


def default_pipeline() -> list:
    from axle.passes.pipelines import default_pipeline as _d
    return _d()


__all__ = ["Pass", "FixedPoint", "PassManager", "PassError", "PASSES", "register_pass", "make_pass",
           "default_pipeline", "run_pipeline"]
