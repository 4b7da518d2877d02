"""Shared machinery of rewriting passes: building ops, replacing values, and the
pattern driver that local rewrites (simplifier, canonicalizers, expanders) run on.

A pattern is a function `pattern(op, b) -> list[Value] | None`. It looks at `op` and,
to rewrite it, builds replacement ops with the builder `b` (they are inserted before
`op`) and returns the values that replace op's results; None leaves the op alone.
Patterns are registered per op name in a `Patterns` table and run by
`apply_patterns`, which walks every function once per round, replaces every use of a
replaced result at once (use lists: `Value.replace_all_uses_with`), and erases replaced ops.
"""
from __future__ import annotations

from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Block, Module, Operation, Region, Value
from axle.ir.ops import COLLECTIVE, OPAQUE_EFFECTS, SIDE_EFFECT, SYMBOL, TERMINATOR, lookup
from axle.ir.types import TensorType, Type, i64

Pattern = Callable[[Operation, "Builder"], Optional[Sequence[Value]]]


class Builder:
    """Creates ops before an anchor op (or at the end of a block)."""

    def __init__(self, block: Block, index: int, location=None, source=None):
        self.block = block
        self.index = index
        self.location = location
        self.source = source

    @classmethod
    def before(cls, op: Operation) -> "Builder":
        return cls(op.parent, op.parent.operations.index(op), op.location, op.source)

    def create(self, name: str, operands: Sequence[Value], result_types: Optional[Sequence[Type]] = None,
               attributes: Optional[dict] = None, regions: Sequence[Region] = ()) -> Operation:
        """Insert a new op; result types are inferred when not given."""
        attributes = dict(attributes or {})
        if result_types is None:
            from axle.ir.shape_inference import infer_result_types
            result_types = infer_result_types(name, [v.type for v in operands], attributes, list(regions))
        op = Operation(name, operands, result_types, attributes, regions, location=self.location)
        op.source = self.source
        self.block.insert(self.index, op)
        self.index += 1
        return op

    def value(self, name: str, operands: Sequence[Value], result_type: Optional[Type] = None, **attrs) -> Value:
        return self.create(name, operands, None if result_type is None else [result_type], attrs).result

    def constant(self, array: np.ndarray, type: TensorType) -> Value:
        array = np.asarray(array).astype(type.dtype).reshape(type.shape)
        return self.create("stablehlo.constant", [], [type],
                           {"value": A.DenseElementsAttr(type, array)}).result

    def splat(self, scalar, type: TensorType) -> Value:
        return self.constant(np.full(type.shape, scalar, dtype=type.dtype), type)


class Patterns:
    """A named table: op name -> patterns (tried in order); '*' applies to every op."""

    def __init__(self, name: str, erase_replaced: tuple = ()):
        self.name = name
        self.table: dict[str, list[Pattern]] = {}
        # ops that are erased once their results are replaced even though they are not pure
        # (their replacement does what they did, e.g. a composite replaced by its decomposition)
        self.erase_replaced = set(erase_replaced)

    def on(self, *op_names: str) -> Callable[[Pattern], Pattern]:
        def deco(fn: Pattern) -> Pattern:
            for n in op_names:
                self.table.setdefault(n, []).append(fn)
            return fn
        return deco

    def for_op(self, name: str) -> list[Pattern]:
        return self.table.get(name, []) + self.table.get("*", [])


def i64_array(vals) -> A.DenseArrayAttr:
    return A.DenseArrayAttr(i64, tuple(int(v) for v in vals))


def transposed(b: Builder, v: Value, perm) -> Value:
    """stablehlo.transpose of v by perm (v itself for the identity)."""
    perm = [int(p) for p in perm]
    if perm == list(range(len(perm))):
        return v
    t = v.type
    return b.create("stablehlo.transpose", [v], [TensorType(tuple(t.shape[p] for p in perm), t.element_type)],
                    {"permutation": i64_array(perm)}).result


def reshaped(b: Builder, v: Value, shape) -> Value:
    """stablehlo.reshape of v to shape (v itself when it has that shape)."""
    shape = tuple(int(n) for n in shape)
    if tuple(v.type.shape) == shape:
        return v
    return b.create("stablehlo.reshape", [v], [TensorType(shape, v.type.element_type)], {}).result


def padded(b: Builder, v: Value, low, high, interior=None) -> Value:
    """stablehlo.pad of v with zeros (negative edges cut)."""
    t = v.type
    interior = [0] * t.rank if interior is None else list(interior)
    zero = b.constant(np.zeros(()), TensorType((), t.element_type))
    shape = tuple(int(lo) + int(hi) + (int(n) - 1) * (int(k) + 1) + 1 if n else int(lo) + int(hi)
                  for n, lo, hi, k in zip(t.shape, low, high, interior))
    return b.create("stablehlo.pad", [v, zero], [TensorType(shape, t.element_type)],
                    {"edge_padding_low": i64_array(low), "edge_padding_high": i64_array(high),
                     "interior_padding": i64_array(interior)}).result


def sliced(b: Builder, v: Value, start, limit, strides=None) -> Value:
    """stablehlo.slice of v."""
    t = v.type
    strides = [1] * t.rank if strides is None else list(strides)
    shape = tuple(-(-(int(e) - int(s)) // int(k)) for s, e, k in zip(start, limit, strides))
    return b.create("stablehlo.slice", [v], [TensorType(shape, t.element_type)],
                    {"start_indices": i64_array(start), "limit_indices": i64_array(limit),
                     "strides": i64_array(strides)}).result


def sum_reduce(b: Builder, x: Value, dims) -> Value:
    """stablehlo.reduce of x over `dims` with an add and a zero init (x's element type)."""
    t = x.type
    scalar = TensorType((), t.element_type)
    block = Block([scalar, scalar])
    add = Operation("stablehlo.add", block.arguments, [scalar])
    block.append(add)
    block.append(Operation("stablehlo.return", add.results))
    zero = b.constant(np.zeros(()), scalar)
    kept = tuple(n for d, n in enumerate(t.shape) if d not in set(dims))
    return b.create("stablehlo.reduce", [x, zero], [TensorType(kept, t.element_type)],
                    {"dimensions": A.DenseArrayAttr(i64, tuple(sorted(dims)))}, [Region([block])]).result


def walk_blocks(module: Module) -> Iterator[Block]:
    """Every block of the module (function bodies and nested regions), outer first."""
    stack = [module.body]
    while stack:
        b = stack.pop()
        yield b
        for op in reversed(b.operations):
            for r in reversed(op.regions):
                stack.extend(reversed(r.blocks))


_IMPURE = frozenset({SIDE_EFFECT, TERMINATOR, SYMBOL, COLLECTIVE,
                     # calls, loops, conditionals, composites and rng may hide effects:
                     # conservative until a call-graph analysis exists
                     OPAQUE_EFFECTS})


def is_pure(op: Operation) -> bool:
    """Whether `op` may be removed when unused, merged with an equal op, or folded: no
    trait in _IMPURE, and only pure ops (and stablehlo.return) in its regions."""
    d = lookup(op.name)
    if d is None or not _IMPURE.isdisjoint(d.traits):
        return False
    for r in op.regions:
        for b in r.blocks:
            if not all(is_pure(o) or o.name == "stablehlo.return" for o in b.operations):
                return False
    return True


def replace_values(mapping: dict) -> None:
    """Replace every use of each key (a Value) by its value (chains followed)."""
    for old, new in mapping.items():
        while new in mapping:
            new = mapping[new]
        old.replace_all_uses_with(new)


def apply_patterns(module: Module, patterns: Patterns, max_rounds: int = 10) -> bool:
    """Run the patterns to a fixed point; returns whether anything changed."""
    changed_any = False
    for _ in range(max_rounds):
        changed = False
        for block in list(walk_blocks(module)):
            ops = block.operations
            i = 0
            while i < len(ops):
                op = ops[i]
                replaced = None
                for pat in patterns.for_op(op.name):
                    b = Builder(block, i, op.location, op.source)
                    out = pat(op, b)
                    if out is not None:
                        replaced = list(out)
                        i = b.index  # op's index now: the ops just built stand before it
                        break
                    if b.index != i:
                        raise ValueError(f"pattern {pat.__name__} built ops but returned None")
                if replaced is None:
                    i += 1
                    continue
                if len(replaced) != len(op.results):
                    raise ValueError(f"pattern for {op.name} returned {len(replaced)} values for "
                                     f"{len(op.results)} results")
                for r, new in zip(op.results, replaced):
                    if new is not r:
                        r.replace_all_uses_with(new)
                if all(new is not r for r, new in zip(op.results, replaced)) and (
                        is_pure(op) or op.name in patterns.erase_replaced):
                    del ops[i]
                else:
                    i += 1
                changed = True
        changed_any |= changed
        if not changed:
            break
    return changed_any
