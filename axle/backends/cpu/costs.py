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
    if name == "stablehlo.fft":
        return _fft_flops(op)
    if name == "stablehlo.custom_call" and op.operands:
        return _lapack_flops(op, out)
    return out


def _fft_flops(op) -> int:
    """5 N log2 N per complex transform of N points (half for real ones), per batch row."""
    lengths = [int(n) for n in op.attr("fft_length")]
    n = int(np.prod(lengths, dtype=np.int64))
    rows = _elements(op.operands[0]) // max(int(np.prod(op.operands[0].type.shape[-len(lengths):])), 1)
    real = str(op.attr("fft_type")) in ("RFFT", "IRFFT")
    return int(rows * 5 * n * np.log2(max(n, 2)) / (2 if real else 1))


# LAPACK / BLAS routines (jaxlib's custom calls) by family: the textbook operation count of
# one m x n problem (k = min(m, n))
_LAPACK = {
    "getrf": lambda m, n, k, r: m * n * k - (m + n) * k * k / 2 + k ** 3 / 3 * 2,
    "potrf": lambda m, n, k, r: n ** 3 / 3,
    "trsm": lambda m, n, k, r: m * r,  # r: the right-hand side's elements
    "geqrf": lambda m, n, k, r: 2 * m * n * k - (m + n) * k * k + 2 * k ** 3 / 3,
    "orgqr": lambda m, n, k, r: 4 * m * n * k - 2 * (m + n) * k * k + 4 * k ** 3 / 3,
    "syevd": lambda m, n, k, r: 9 * n ** 3,
    "gesdd": lambda m, n, k, r: 4 * m * n * k + 22 * k ** 3,
    "gesvd": lambda m, n, k, r: 4 * m * n * k + 22 * k ** 3,
    "geev": lambda m, n, k, r: 25 * n ** 3,
    "gees": lambda m, n, k, r: 25 * n ** 3,
    "gehrd": lambda m, n, k, r: 10 * n ** 3 / 3,
    "sytrd": lambda m, n, k, r: 4 * n ** 3 / 3,
}


def _lapack_flops(op, out: int) -> int:
    """A LAPACK custom call's operation count (its matrices' trailing two dimensions,
    batched over the leading ones); other custom calls: one per result element."""
    target = str(op.attr("call_target_name")) if "call_target_name" in op.attributes else ""
    family = next((f for f in _LAPACK if f in target), None)
    t = op.operands[0].type
    if family is None or not isinstance(t, TensorType) or not t.is_static or t.rank < 2:
        return out
    m, n = int(t.shape[-2]), int(t.shape[-1])
    batch = int(np.prod(t.shape[:-2], dtype=np.int64))
    rhs = op.operands[1].type if len(op.operands) > 1 else None
    r = int(rhs.shape[-1]) * int(rhs.shape[-2]) if family == "trsm" and isinstance(rhs, TensorType) \
        and rhs.rank >= 2 else 1
    return int(batch * _LAPACK[family](m, n, min(m, n), r))


def kernel_flops(kernel) -> int:
    return op_flops(kernel.op) + sum(op_flops(o) for o in kernel.fused)
