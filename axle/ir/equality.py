"""Structural equality of modules: same ops, same operand wiring, same types and
attributes, same regions. SSA names do not matter; locations do."""
from __future__ import annotations

from axle.ir.core import Block, Module, Operation


class _Matcher:
    def __init__(self):
        self.map: dict = {}  # value in a -> value in b (Values hash by identity)

    def bind(self, a, b):
        self.map[a] = b

    def same_value(self, a, b) -> bool:
        return self.map.get(a) is b

    def blocks(self, a: Block, b: Block) -> bool:
        if len(a.arguments) != len(b.arguments) or len(a.operations) != len(b.operations):
            return False
        for x, y in zip(a.arguments, b.arguments):
            if x.type != y.type:
                return False
            self.bind(x, y)
        return all(self.ops(x, y) for x, y in zip(a.operations, b.operations))

    def ops(self, a: Operation, b: Operation) -> bool:
        if (a.name != b.name or len(a.operands) != len(b.operands)
                or a.result_types != b.result_types or a.attributes != b.attributes
                or len(a.regions) != len(b.regions) or a.location != b.location):
            return False
        if not all(self.same_value(x, y) for x, y in zip(a.operands, b.operands)):
            return False
        for ra, rb in zip(a.regions, b.regions):
            if len(ra.blocks) != len(rb.blocks):
                return False
            for ba, bb in zip(ra.blocks, rb.blocks):  # bind args before walking (forward refs)
                for x, y in zip(ba.arguments, bb.arguments):
                    self.bind(x, y)
            if not all(self.blocks(ba, bb) for ba, bb in zip(ra.blocks, rb.blocks)):
                return False
        for x, y in zip(a.results, b.results):
            self.bind(x, y)
        return True


def modules_equal(a: Module, b: Module) -> bool:
    if a.name != b.name or a.attributes != b.attributes:
        return False
    return _Matcher().blocks(a.body, b.body)


def first_difference(a: Module, b: Module) -> str:
    """A short description of where two modules differ (for test failure messages)."""
    if a.name != b.name:
        return f"module names {a.name!r} vs {b.name!r}"
    if a.attributes != b.attributes:
        return f"module attributes {a.attributes} vs {b.attributes}"
    m = _Matcher()
    for x, y in zip(a.walk(), b.walk()):
        if x.name != y.name or x.attributes != y.attributes or x.result_types != y.result_types:
            return f"op {x.name} vs {y.name}: attrs {x.attributes} vs {y.attributes}; types {x.result_types} vs {y.result_types}"
    return "structure differs" if not modules_equal(a, b) else "equal"
