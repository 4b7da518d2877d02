"""Pass "widen-lowp-reductions": a sum or product over bf16 / f16 values (stablehlo.reduce,
stablehlo.reduce_window) accumulates in f32 and is rounded once at the end.

Accumulating in the element type loses everything below the running total's last bit: a
bf16 sum of 4096 ones stops at 256 (256 + 1 rounds back to 256), an f16 sum at 2048. That
is what a gradient of a bias or of a broadcast becomes in a bf16 / f16 training step (the
transpose of a broadcast is a reduce in the element type, not jnp.sum, which JAX already
widens), and what bf16 pooling and windowed sums are. XLA's CPU and GPU compilers compute
these in f32 (its result is 4096, the operands' exact sum); so does axle's cumulative-sum
kernel. The rewrite: converts of the operands and init values to f32 (exact), the same
reduction with an f32 body, and a convert of the result back (one rounding).

Only reductions whose body is one add or multiply of its two arguments change: max, min
and the comparisons of an argmax are exact in any type, and other bodies are left as
written. Converts of the operand fuse into the reduction's loop (the CPU backend reads the
narrow values and widens them in registers), so nothing of the operand's size is
written."""
from __future__ import annotations

from axle.ir.core import Block, Module, Operation, Region
from axle.ir.types import TensorType, element_type
from axle.passes.pass_manager import Pass
from axle.passes.registry import register_pass
from axle.passes.rewrite import Builder

_LOW = ("bf16", "f16")
_OPS = ("stablehlo.reduce", "stablehlo.reduce_window")
_BODIES = ("stablehlo.add", "stablehlo.multiply")


def _accumulating_body(op: Operation):
    """The name of the body's one op (add or multiply of the two block arguments), else None."""
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    block = op.regions[0].blocks[0]
    ops = list(block.operations)
    if len(ops) != 2 or ops[0].name not in _BODIES or ops[1].name != "stablehlo.return":
        return None
    args = block.arguments
    if len(args) != 2 or set(map(id, ops[0].operands)) != {id(args[0]), id(args[1])}:
        return None
    if list(ops[1].operands) != [ops[0].results[0]]:
        return None
    return ops[0].name


def _rewrite(op: Operation) -> bool:
    if len(op.operands) != 2 or len(op.results) != 1:
        return False
    x, init = op.operands
    rt = op.results[0].type
    if not all(isinstance(t, TensorType) and t.is_static for t in (x.type, init.type, rt)):
        return False
    if x.type.element_type.name not in _LOW or init.type.element_type != x.type.element_type \
            or rt.element_type != x.type.element_type:
        return False
    body = _accumulating_body(op)
    if body is None:
        return False
    f32 = element_type("f32")
    b = Builder.before(op)
    wx = b.create("stablehlo.convert", [x], [TensorType(x.type.shape, f32)]).result
    wi = b.create("stablehlo.convert", [init], [TensorType(init.type.shape, f32)]).result
    scalar = TensorType((), f32)
    block = Block([scalar, scalar])
    acc = Operation(body, block.arguments, [scalar])
    block.append(acc)
    block.append(Operation("stablehlo.return", acc.results))
    wide = b.create(op.name, [wx, wi], [TensorType(rt.shape, f32)], dict(op.attributes),
                    [Region([block])]).result
    out = b.create("stablehlo.convert", [wide], [rt]).result
    op.results[0].replace_all_uses_with(out)
    op.erase()
    return True


@register_pass
class WidenLowpReductions(Pass):
    """Pass 'widen-lowp-reductions' (see the module docstring)."""

    name = "widen-lowp-reductions"

    def run(self, module: Module) -> bool:
        changed = False
        for op in [o for o in module.walk() if o.name in _OPS]:
            changed = _rewrite(op) or changed
        return changed
