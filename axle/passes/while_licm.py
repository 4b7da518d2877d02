"""Loop-invariant code motion for while loops (pass "while-licm").

JAX writes every value a loop body reads as loop-carried state: the weights of an RNN
cell in a `lax.scan` enter the loop as operands and the body hands them back unchanged.
What the body computes from them alone (the slices of a stacked weight, a reshape, a
widening convert, a product of two weights) is then recomputed on every trip. This pass

1. drops pass-through state: where the body returns its own block argument i as result
   i, the value is the loop's operand i on every trip and after the loop, so uses of that
   argument (in the condition and the body) and of result i are given the operand
   itself, and the loop carries the rest (nothing to copy into loop state either);
2. hoists the body's pure operations whose operands are all defined outside the loop
   (or are themselves hoisted, or are constants) to just before the loop, in order.

Left in the loop: operations with regions or effects (custom calls, RNG, send / recv,
infeed / outfeed, tokens, calls), and operations whose result is larger than their
operands (broadcasts, iotas, pads: hoisting them only keeps more memory live across the
loop), except a widening convert of at most MAX_CONVERT_BYTES (a bf16 weight converted to
f32 once, not on every trip: the one trade of memory for time made here). A loop that
runs zero times computes the hoisted values for nothing; they are pure, so nothing
observable changes. Inner loops are processed first, so invariants move out level by
level. XLA's WhileLoopInvariantCodeMotion makes the same move.
"""
from __future__ import annotations

from axle.ir.core import Module, Operation
from axle.ir.types import TensorType
from axle.passes.pass_manager import Pass
from axle.passes.registry import register_pass

MAX_CONVERT_BYTES = 64 << 20  # a hoisted widening convert's result at most this large

_EFFECTS = ("stablehlo.custom_call", "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv",
            "stablehlo.rng", "stablehlo.rng_bit_generator", "stablehlo.after_all", "stablehlo.create_token",
            "func.call", "func.return", "stablehlo.return", "stablehlo.optimization_barrier",
            "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.all_to_all", "stablehlo.reduce_scatter",
            "stablehlo.collective_permute", "stablehlo.collective_broadcast", "stablehlo.partition_id",
            "stablehlo.replica_id", "stablehlo.get_tuple_element", "stablehlo.tuple")


def _bytes(t) -> int:
    if not isinstance(t, TensorType) or not t.is_static:
        return -1
    return t.num_elements * max(1, t.element_type.bitwidth // 8)


def defined_inside(v, loop: Operation) -> bool:
    """Whether value v is defined inside loop (by an op nested in it, or as a block
    argument of one of its regions)."""
    owner = getattr(v, "owner", None)
    block = owner if not isinstance(owner, Operation) else owner.parent
    while block is not None:
        op = block.parent_op
        if op is loop:
            return True
        if op is None:
            return False
        block = op.parent
    return False


def _hoistable(op: Operation) -> bool:
    if op.regions or op.name in _EFFECTS or not op.results:
        return False
    if op.name == "stablehlo.constant":
        return False  # free where it is; cloned out when a hoisted op reads it
    if any(not isinstance(r.type, TensorType) for r in op.results):
        return False
    out = sum(_bytes(r.type) for r in op.results)
    ins = sum(_bytes(v.type) for v in op.operands)
    if out < 0 or ins < 0:
        return False
    if op.name == "stablehlo.convert":
        return out <= MAX_CONVERT_BYTES
    return out <= ins


def _drop_pass_through(loop: Operation) -> Operation:
    """The loop without its pass-through state (the body returns its own block argument
    i as result i: the value is operand i on every trip, and after the loop). Uses of
    those arguments and results are given the operand itself; a new while op carries
    the rest (returned; `loop` itself when nothing passes through, or everything does)."""
    cond, body = loop.regions[0].blocks[0], loop.regions[1].blocks[0]
    ret = body.terminator
    n = len(loop.operands)
    if ret is None or len(ret.operands) != n or len(cond.arguments) != n or len(body.arguments) != n:
        return loop
    keep = [i for i in range(n) if ret.operands[i] is not body.arguments[i]]
    if len(keep) == n or not keep:
        return loop
    for i in range(n):
        if i in keep:
            continue
        init = loop.operands[i]
        body.arguments[i].replace_all_uses_with(init)  # the terminator's use too
        cond.arguments[i].replace_all_uses_with(init)
        loop.results[i].replace_all_uses_with(init)
    ret.operands = [ret.operands[i] for i in keep]
    for block in (cond, body):
        block.arguments[:] = [block.arguments[i] for i in keep]
        for j, a in enumerate(block.arguments):
            a.index = j
    regions = list(loop.regions)
    loop.regions = []
    new = Operation(loop.name, [loop.operands[i] for i in keep], [loop.results[i].type for i in keep],
                    dict(loop.attributes), regions, location=loop.location)
    new.source = loop.source
    for j, i in enumerate(keep):
        new.results[j].name_hint = loop.results[i].name_hint
    block = loop.parent
    block.insert(block.operations.index(loop), new)
    for j, i in enumerate(keep):
        loop.results[i].replace_all_uses_with(new.results[j])
    loop.erase()
    return new


def _hoist(loop: Operation) -> bool:
    body = loop.regions[1].blocks[0]
    changed = False
    for op in list(body.operations):
        if not _hoistable(op):
            continue
        outside = True
        consts = []
        for v in op.operands:
            if not defined_inside(v, loop):
                continue
            p = getattr(v, "owner", None)
            if isinstance(p, Operation) and p.name == "stablehlo.constant" and p.parent is body:
                consts.append(v)
                continue
            outside = False
            break
        if not outside:
            continue
        for v in consts:  # a copy of the constant before the loop (the body may read it too)
            copy = v.owner.clone()
            copy_block = loop.parent
            copy_block.insert(copy_block.operations.index(loop), copy)
            op.operands = [copy.results[0] if w is v else w for w in op.operands]
        op.move_before(loop)
        changed = True
    return changed


@register_pass
class WhileLicm(Pass):
    """Pass 'while-licm' (see the module docstring)."""

    name = "while-licm"

    def run(self, module: Module) -> bool:
        loops = [o for o in module.walk() if o.name == "stablehlo.while" and len(o.regions) == 2]
        changed = False
        for loop in reversed(loops):  # inner loops first (walk lists an outer loop before its inner ones)
            new = _drop_pass_through(loop)
            changed = changed or new is not loop
            changed = _hoist(new) | changed
        return changed
