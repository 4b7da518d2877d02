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

# functions computed by a polynomial or a series per element (fastmath.py): a vectorized
# one costs about TRANSCENDENTAL_WORK simple ops per element
TRANSCENDENTAL = frozenset("stablehlo." + n for n in (
    "exponential", "exponential_minus_one", "log", "log_plus_one", "logistic", "tanh", "sine", "cosine",
    "tan", "power", "atan2", "cbrt")) | frozenset("chlo." + n for n in (
        "erf", "erfc", "erf_inv", "lgamma", "digamma", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh",
        "atanh", "tan", "bessel_i1e", "polygamma", "zeta"))
TRANSCENDENTAL_WORK = 8


def element_work(o) -> int:
    """Simple ops per result element of a fused op, for the pool's split decision
    (parallel.PARALLEL_MIN_WORK): 1; TRANSCENDENTAL_WORK for a transcendental function; for
    a reduction computed inside the loop (a row sum read by its row's elements) the
    elements it combines per result, so that such a loop is split across threads like the
    work it is (logsumexp over 2048 x 2048)."""
    if o.name in ("stablehlo.reduce", "stablehlo.reduce_window") and o.operands:
        n_in, n_out = _elements(o.operands[0]), _elements(o.results[0])
        if n_in and n_out:
            return max(1, n_in // n_out)
    return TRANSCENDENTAL_WORK if o.name in TRANSCENDENTAL else 1


def fused_work(fused) -> int:
    """Simple ops per element of a loop kernel that computes the ops `fused` (moves free)."""
    return 1 + sum(element_work(o) for o in fused if o.name not in MOVES)


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
