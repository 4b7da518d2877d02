"""Full unrolling of short counted while loops (pass "unroll-loops").

A `stablehlo.while` whose trip count is known at compile time (a loop-carried integer
starting at a constant, stepped by a constant in the body, compared with a constant in
the condition: what `lax.fori_loop` with static bounds writes, and what JAX's threefry
random-bit generator writes, five rounds of four) and whose body is small is replaced by
that many copies of its body, one after another.

Why: a loop body is compiled on its own, every loop-carried tensor goes through memory
on every trip, and what the loop feeds or is fed by cannot be fused with it. Unrolled,
the rounds of threefry, the iota before them and the uniform-to-normal transform after
them become one elementwise loop, with no tensor in memory between them (1M normals:
119 -> under 10 ms), and constants the body reads through the loop (threefry's rotation
table, swapped every trip) fold.

Guarantees: the copies compute exactly what the trips computed, in the same order (the
trip count is found by running the condition on the counter with the counter's own
integer arithmetic, wrapping included). Leaves alone: loops whose trip count is not
static, longer than MAX_TRIPS, or whose copies would exceed MAX_OPS operations in all;
loops whose body has a side effect (a copy would not change the order, but a body with
tokens or effects is left to the backends that lower it), and loops whose body has a GEMM,
convolution, sort, scatter or loop of its own (their copies would only grow the program).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.ir.clone import clone_ops
from axle.ir.core import Module, Operation
from axle.ir.types import TensorType
from axle.passes.pass_manager import Pass
from axle.passes.registry import register_pass

MAX_TRIPS = 8  # loops of at most this many trips are unrolled...
MAX_OPS = 600  # ...when their copies have at most this many operations in all

# a body with one of these stays a loop: copies of a GEMM, convolution, sort or inner loop
# would grow the program for nothing (their time is their own, not the trip's overhead)
_HEAVY = ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution", "stablehlo.sort", "stablehlo.fft",
          "stablehlo.while", "stablehlo.cholesky", "stablehlo.triangular_solve", "stablehlo.scatter",
          "stablehlo.reduce_window", "stablehlo.select_and_scatter")
_EFFECTS = ("stablehlo.custom_call", "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv",
            "stablehlo.rng", "stablehlo.after_all", "stablehlo.create_token", "func.call")


def _const_int(v) -> Optional[int]:
    """The integer a scalar (or one-element) integer constant holds, else None."""
    o = getattr(v, "owner", None)
    if not isinstance(o, Operation) or o.name != "stablehlo.constant":
        return None
    t = v.type
    if not isinstance(t, TensorType) or not getattr(t.element_type, "is_int", False):
        return None
    a = np.asarray(o.attributes["value"].array)
    return int(a.reshape(-1)[0]) if a.size == 1 else None


def _wrap(x: int, et) -> int:
    bits = et.bitwidth
    x &= (1 << bits) - 1
    if not et.is_unsigned and x >= 1 << (bits - 1):
        x -= 1 << bits
    return x


_CMP = {"LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
        "GE": lambda a, b: a >= b, "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b}


def trip_count(op: Operation, limit: int = MAX_TRIPS) -> Optional[int]:
    """The number of trips of a while loop, when it is static and at most `limit`."""
    cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
    ops = [o for o in cond.operations if o.name != "stablehlo.constant"]
    if len(ops) != 2 or ops[0].name != "stablehlo.compare" or ops[1].name != "stablehlo.return" \
            or ops[1].operands[0] is not ops[0].results[0]:
        return None
    cmp = ops[0]
    lhs, rhs = cmp.operands
    direction = str(cmp.attr("comparison_direction"))
    if direction not in _CMP:
        return None
    args = list(cond.arguments)
    if lhs in args and _const_int(rhs) is not None:
        j, bound, flip = args.index(lhs), _const_int(rhs), False
    elif rhs in args and _const_int(lhs) is not None:
        j, bound, flip = args.index(rhs), _const_int(lhs), True
    else:
        return None
    et = lhs.type.element_type
    start = _const_int(op.operands[j])
    nxt = body.operations[-1].operands[j]  # the body's new counter: counter + constant
    add = getattr(nxt, "owner", None)
    if start is None or not isinstance(add, Operation) or add.name != "stablehlo.add":
        return None
    arg = body.arguments[j]
    a, b = add.operands
    step = _const_int(b) if a is arg else _const_int(a) if b is arg else None
    if not step:
        return None
    test = _CMP[direction]
    i, n = start, 0
    while (test(bound, i) if flip else test(i, bound)):
        n += 1
        if n > limit:
            return None
        i = _wrap(i + step, et)
    return n


def _size(ops) -> int:
    return sum(1 for o in ops for _ in o.walk())


def _unroll(op: Operation, trips: int) -> None:
    body = op.regions[1].blocks[0]
    block = op.parent
    at = block.operations.index(op)
    values = list(op.operands)
    for _ in range(trips):
        mapping = dict(zip(body.arguments, values))
        copies = clone_ops(body.operations, mapping)
        ret = copies.pop()  # stablehlo.return
        for new in copies:
            block.insert(at, new)
            at += 1
        values = list(ret.operands)
        ret.drop_all_references()
    for r, v in zip(op.results, values):
        r.replace_all_uses_with(v)
    op.erase()


@register_pass
class UnrollLoops(Pass):
    name = "unroll-loops"

    def run(self, module: Module) -> bool:
        changed = False
        for op in list(module.walk()):
            if op.name != "stablehlo.while" or op.parent is None:
                continue
            body = op.regions[1].blocks[0].operations
            if any(o.name in _EFFECTS or o.name in _HEAVY for b in body for o in b.walk()):
                continue
            trips = trip_count(op)
            if trips is None or trips * _size(body) > MAX_OPS:
                continue
            _unroll(op, trips)
            changed = True
        return changed
