"""Rough operation counts per kernel, for profiles and roofline reports.

Counts follow the usual conventions of cost models (XLA's HloCostAnalysis among them):
an elementwise op costs one operation per output element, a transcendental one too (they
are reported separately by nobody here: a CPU user wants one number), a reduction one per
input element, a contraction 2 * (output elements) * (contracted size), a convolution
2 * (output elements) * (kernel window * input features per group). Moves (copies,
transposes, slices, gathers) cost none.
"""
from __future__ import annotations

import numpy as np

from axle.ir.ops import CONSTANT_LIKE, MOVEMENT, names_with
from axle.ir.types import TensorType

# ops that only move, copy or make data (op-table traits), and the structural ones
MOVES = (names_with(MOVEMENT) | names_with(CONSTANT_LIKE)
         | {"stablehlo.bitcast_convert", "stablehlo.get_tuple_element", "stablehlo.tuple",
            "stablehlo.copy", "stablehlo.while", "stablehlo.if", "stablehlo.case"})


def _elements(v) -> int:
    t = getattr(v, "type", None)
    if isinstance(t, TensorType) and t.is_static:
        return int(np.prod(t.shape, dtype=np.int64))
    return 0


def op_flops(op) -> int:
    name = op.name
    if name in MOVES or not op.results:
        return 0
    out = _elements(op.results[0])
    if name == "stablehlo.dot_general":
        lhs = op.operands[0].type
        dims = op.attributes["dot_dimension_numbers"].to_python() if hasattr(
            op.attributes["dot_dimension_numbers"], "to_python") else {}
        contract = dims.get("lhs_contracting_dimensions", []) if isinstance(dims, dict) else []
        k = int(np.prod([lhs.shape[d] for d in contract], dtype=np.int64)) if contract else 1
        return 2 * out * k
    if name == "stablehlo.dot":
        lhs = op.operands[0].type
        return 2 * out * (lhs.shape[-1] if lhs.shape else 1)
    if name == "stablehlo.convolution":
        rhs = op.operands[1].type
        # every output element reads the whole kernel window of one group's input features
        window = int(np.prod(rhs.shape, dtype=np.int64))
        dn = op.attributes.get("dimension_numbers")
        out_feat = rhs.shape[getattr(dn, "kernel_output_feature_dimension", len(rhs.shape) - 1)] if dn else 1
        return 2 * out * max(window // max(out_feat, 1), 1)
    if name in ("stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.select_and_scatter",
                "stablehlo.scatter", "stablehlo.sort"):
        return sum(_elements(v) for v in op.operands[: max(len(op.operands) // 2, 1)])
    return out


def kernel_flops(kernel) -> int:
    return op_flops(kernel.op) + sum(op_flops(o) for o in kernel.fused)
