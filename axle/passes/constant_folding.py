"""Constant folding through the interpreter (pass "constant-folding").

Guarantees: a pure op (rewrite.is_pure; no side effects, calls, loops, collectives,
rng) whose operands are all `stablehlo.constant`s, whose results are static tensors,
and whose operands and results each hold at most `max_elements` elements, is replaced
by constants holding what the reference interpreter computes for it — the interpreter
is the one definition of every op's semantics. Ops with regions (reduce, sort, ...)
fold too when their regions are pure.
Leaves alone: anything bigger than the limit (folding must not blow up memory or
compile time), quantized results, tokens and tuples, and ops the interpreter rejects.
"""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.ops import NO_FOLD, has_trait
from axle.ir.types import TensorType
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Patterns, apply_patterns, is_pure



def _foldable_type(t, limit: int) -> bool:
    return (isinstance(t, TensorType) and t.is_static and not t.is_quantized
            and t.num_elements <= limit)


def fold(op: Operation, limit: int):
    """The folded values of op as numpy arrays, or None when it should not be folded."""
    if has_trait(op, NO_FOLD) or not op.results or not is_pure(op):
        return None
    consts = []
    for v in op.operands:
        o = getattr(v, "owner", None)
        if not isinstance(o, Operation) or o.name != "stablehlo.constant" or not _foldable_type(v.type, limit):
            return None
        consts.append(o.attributes["value"].array)
    if not all(_foldable_type(r.type, limit) for r in op.results):
        return None
    from axle.interpreter.evaluator import Evaluator
    from axle.interpreter.registry import InterpreterError
    ev = Evaluator.__new__(Evaluator)
    ev.module, ev.functions, ev.program_runner = None, {}, None
    frame = {v: c for v, c in zip(op.operands, consts)}
    try:
        with np.errstate(all="ignore"):
            return ev.eval_op(op, frame, None)
    except (InterpreterError, ValueError, TypeError, ArithmeticError, KeyError, IndexError):
        return None


@register_pass
class ConstantFolding(Pass):
    name = "constant-folding"
    max_elements = 65536

    def __init__(self, max_elements: int | None = None):
        if max_elements is not None:
            self.max_elements = max_elements
        self.folded = 0
        self.patterns = Patterns("constant-folding")
        self.patterns.on("*")(self._fold)

    def _fold(self, op, b):
        values = fold(op, self.max_elements)
        if values is None:
            return None
        self.folded += 1
        return [b.constant(np.asarray(v), r.type) for v, r in zip(values, op.results)]

    def run(self, module: Module) -> bool:
        return apply_patterns(module, self.patterns)
