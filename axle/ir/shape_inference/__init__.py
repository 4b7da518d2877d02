"""Result-type inference: the result types of an op from its operand types, attributes
and (for ops with bodies) the signatures of its regions.

    infer_result_types("stablehlo.transpose", [tensor<2x3xf32>], {"permutation": array<i64: 1, 0>})
        -> [tensor<3x2xf32>]

Each rule also checks the spec constraints that involve only operands, attributes and
regions (dimension numbers in range, matching contracting sizes, reducer signatures...)
and raises `InferenceError` naming the constraint (`(C3)`) when one fails. Ops whose
result type is not determined by their inputs (reshape, broadcast_in_dim, convert, iota,
the dynamic_* shape ops, custom_call, ...) raise `ResultTypeRequired`.

Some results are only partly determined: dot_general's result element type is free
(a "preferred element type"), and the scales and zero points of a quantized result may
differ from the operands'. `infer_results` returns, per result, the natural type and a
`match` mode saying how much of it is fixed; the verifier compares with that mode.
`infer_result_types` returns just the natural types.

Dynamic dimensions (`?`, None) propagate: a result dimension computed from a dynamic
operand dimension is dynamic; dynamic dimensions are compatible with any size.

The rules live in one module per op family (as the interpreter's): core.py (errors, the
rule context, type helpers, the RULES table), elementwise.py, shapes.py (constants, tuples,
data movement), dot_conv.py, indexing.py (gather, scatter), reduction.py (reductions,
windows, sort, map), control_flow.py, misc.py (linear algebra, fft, batch norm,
collectives, chlo.top_k). Importing this package registers them all.
"""
from __future__ import annotations

from typing import Optional, Sequence

from axle.ir.shape_inference.core import (RULES, InferenceError, Inferred, ResultTypeRequired, _Ctx,
                                          baseline_element, ints_of, is_compatible, is_promotable,
                                          kind_matches, kinds_text, region_signature, shapes_compatible)
from axle.ir.shape_inference import (control_flow, dot_conv, elementwise, indexing, misc,  # noqa: F401
                                     reduction, shapes)  # (each registers its rules in RULES)
from axle.ir.shape_inference.elementwise import (ANY, FLOAT_Q, FLOATISH, INT, INT_BOOL,  # noqa: F401
                                                 NUMERIC, SIGNED_NUM)
from axle.ir.types import Type

__all__ = ["InferenceError", "ResultTypeRequired", "Inferred", "infer_result_types", "infer_results",
           "supports", "SUPPORTED_OPS", "is_compatible", "shapes_compatible", "baseline_element",
           "region_signature", "ints_of", "kind_matches", "kinds_text", "is_promotable", "RULES"]

# ======================================================================= public API


SUPPORTED_OPS = frozenset(RULES)


def supports(op_name: str) -> bool:
    """Whether infer_result_types has a rule for this op."""
    return op_name in RULES


def infer_results(op_name: str, operand_types: Sequence[Type], attributes: Optional[dict] = None,
                  regions: Sequence = ()) -> list[Inferred]:
    """Inferred results with their match modes (see `Inferred`). Raises InferenceError
    when a constraint fails, ResultTypeRequired when the op has no rule or needs more
    (e.g. a branch region) than it was given."""
    rule = RULES.get(op_name)
    if rule is None:
        raise ResultTypeRequired("the result type is not determined by the operands and attributes; "
                                 "it must be given explicitly", None, op_name)
    return rule(_Ctx(op_name, operand_types, attributes, regions))


def infer_result_types(op_name: str, operand_types: Sequence[Type], attributes: Optional[dict] = None,
                       regions: Sequence = ()) -> list[Type]:
    """The result types of `op_name` applied to operands of `operand_types` with
    `attributes` (name -> Attribute) and `regions` (core.Region or FunctionType per
    region, for ops whose results depend on their bodies).

    Where the spec leaves part of the result free (dot_general's element type, a
    quantized result's scales), the natural choice is returned: the lhs element type,
    the operand's quantization parameters."""
    return [r.type for r in infer_results(op_name, operand_types, attributes, regions)]
