"""Names of values in plan dumps: `%x` as the printer would write the function (a source
name when it is unique, else a number in order), so that a plan reads next to the module."""
from __future__ import annotations

from axle.ir.core import Block, Operation, Value
from axle.ir.text.printer import Namer
from axle.ir.types import TensorType


class ValueNames:
    """Names for every value of a function body, given in print order."""

    def __init__(self, body: Block):
        self._namer = Namer()
        self._order: dict = {}  # value -> its position in print order
        self._args(body)
        self._walk(body)

    def _args(self, block: Block) -> None:
        for a in block.arguments:
            self._namer.name_arg(a)
            self._order[a] = len(self._order)

    def _walk(self, block: Block) -> None:
        for op in block.operations:
            self._namer.name_results(op)
            for r in op.results:
                self._order[r] = len(self._order)
            for r in op.regions:
                for blk in r.blocks:
                    self._args(blk)
                    self._walk(blk)

    def sorted(self, values) -> list:
        """`values` in print order (values from elsewhere last)."""
        return sorted(values, key=lambda v: self._order.get(v, len(self._order)))

    def __call__(self, v: Value) -> str:
        return self._namer(v)

    def op(self, op: Operation) -> str:
        """`%5 = multiply` (the op's short name after its first result's name)."""
        short = op.name.split(".", 1)[-1]
        if not op.results:
            return short
        return f"{self(op.results[0])} = {short}"


def type_str(v) -> str:
    """`f32[128,256]` for a tensor value, else its type as printed."""
    t = getattr(v, "type", None)
    if isinstance(t, TensorType):
        return f"{t.element_type}[{','.join(str(d) for d in t.shape)}]"
    return str(t)
