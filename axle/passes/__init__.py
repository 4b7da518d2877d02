"""Target-independent passes and the pass manager.

One pass per file; the file name is the pass name. `PASSES` maps names to pass
classes; `default_pipeline()` is what every backend starts from (pipelines.py).
"""
from __future__ import annotations

from axle.passes.pass_manager import FixedPoint, Pass, PassError, PassManager, run_pipeline
from axle.passes.registry import PASSES, make_pass, register_pass

# the passes (each registers itself into PASSES), in this order
from axle.passes import (inline, dead_code, cse, constant_folding, simplify, dot_canonicalize,  # noqa: E402,F401,I001
                         sink_transposes,
                         chlo_expand, expanders, refine_shapes, transpose_fold, lower_quant,
                         jax_custom_calls, forward_tuples, drop_barriers, static_shape_ops, unroll_loops,
                         while_licm, widen_lowp_reductions)
from axle.passes.pipelines import default_pipeline  # noqa: E402

__all__ = ["Pass", "FixedPoint", "PassManager", "PassError", "PASSES", "register_pass", "make_pass",
           "default_pipeline", "run_pipeline"]
