"""JAX custom calls that compiled CPU code runs itself (the others are rewritten by the
jax-custom-calls pass before code generation, or refused with the JAX API that made them).

`shape_assertion` (jax.export with symbolic shapes): when its predicate is known at compile
time (the usual case: programs with dynamic shapes are specialized to the arguments'
shapes before compiling, and the dimension sizes fold), a false predicate raises
ShapeAssertionError while compiling for that signature, before any native code runs; a
predicate computed at run time is tested natively, and a false one calls back into Python
with the operands' values to format the message, which the call then raises.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from axle.codegen.emitter import _ty
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.host_callback import HostCallback, materialize, pointer_table, set_error, view
from axle.interpreter.jax_targets import ShapeAssertionError, check_shape_assertion
from axle.ir.core import Operation

def _failed(op: Operation, table) -> None:
    try:
        values = [view(table[i], v.type).copy() for i, v in enumerate(op.operands)]
        try:
            check_shape_assertion(op, values)
            err = ShapeAssertionError(f"{op.where()}: shape assertion failed")
        except ShapeAssertionError as e:
            err = e
        set_error(err)
    except BaseException as e:  # must not unwind through native frames
        set_error(e, first=False)


_CALLBACK = HostCallback(_failed)  # key -> the shape_assertion op (host_callback.py)


def _constant(v):
    o = getattr(v, "owner", None)
    if isinstance(o, Operation) and o.name == "stablehlo.constant":
        return np.asarray(o.attributes["value"].array)
    return None


def check_shape_assertion_op(op: Operation) -> None:
    if not op.operands:
        raise Unsupported(f"{op.where()}: shape_assertion needs a predicate operand")
    t = _ty(op.operands[0])
    if t.element_type.name != "i1" or t.rank != 0:
        raise Unsupported(f"{op.where()}: shape_assertion predicate must be tensor<i1>, got {t}")
    for v in op.operands:
        _ty(v)


def emit_shape_assertion(ctx: Context, op: Operation) -> None:
    known = [_constant(v) for v in op.operands]
    if known[0] is not None:
        if bool(known[0].reshape(-1)[0]):
            return  # holds for this program (these shapes): nothing to run
        if all(k is not None for k in known):
            check_shape_assertion(op, known)  # raises ShapeAssertionError now, before any run
    b = ctx.b
    em = ctx.em
    ctx.cacheable = False  # the callback's address and the op key live in this process only
    ctx.host_callbacks = True
    key = _CALLBACK.register(op)
    ok = em.value_at(op.operands[0], [])
    if ok.type != ir.IntType(1):
        ok = b.icmp_unsigned("!=", ok, ir.Constant(ok.type, 0))
    with b.if_then(b.not_(ok), likely=False):
        ptrs = [ctx.buffer(v) if ctx.has_buffer(v) else materialize(ctx, v) for v in op.operands]
        _CALLBACK.emit_call(b, key, pointer_table(ctx, ptrs, cast=False))


def check_shape_assertions(module) -> None:
    """Raise ShapeAssertionError for the first shape_assertion of `module` (specialized to
    the arguments' shapes) whose operands fold to constants and whose predicate is false.
    Used when arguments whose shapes contradict each other leave the program dynamic."""
    from axle.passes import make_pass
    try:
        for name in ("constant-folding", "simplify", "constant-folding"):
            make_pass(name).run(module)
    except Exception:  # nothing to learn from a module that does not fold
        return
    for op in module.walk():
        if op.name == "stablehlo.custom_call" and op.attr("call_target_name") == "shape_assertion":
            known = [_constant(v) for v in op.operands]
            if known and all(k is not None for k in known):
                check_shape_assertion(op, known)


# target -> (check(op) raising Unsupported, emit(ctx, op)); dispatched from the custom_call
# kernel (kernels_collective.py) for targets the user has not registered
NATIVE_TARGETS = {"shape_assertion": (check_shape_assertion_op, emit_shape_assertion)}
