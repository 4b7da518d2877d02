"""Collectives (and probes) on CPU devices of one host: compiled code calls back into the runtime.

Each CPU device runs its program in its own thread. A collective op (all_reduce,
all_gather, reduce_scatter, all_to_all, collective_permute, collective_broadcast) and
replica_id / partition_id compile to a call of one host callback with the op's key and
a table of buffer pointers (operands, then results). The callback views the buffers as
numpy arrays, meets the other devices through the same rendezvous the interpreter uses
(axle/interpreter/collectives.py), and writes the results in place. The reduction body
of all_reduce / reduce_scatter runs in the interpreter on whole arrays.

The device a thread runs for is set with `device_context(ctx)`; an error raised in the
callback is kept and re-raised by `check_errors()` after the native call returns.
"""
from __future__ import annotations

import numpy as np

from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.ir.core import Operation

COLLECTIVES = ("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
               "stablehlo.all_to_all", "stablehlo.collective_permute", "stablehlo.collective_broadcast",
               "stablehlo.replica_id", "stablehlo.partition_id")
# The interpreter's probes run the same way: a probe records a value for a later
# check.expect_serialized_eq, which reads the same store.
HOST_OPS = COLLECTIVES + ("interpreter.probe", "check.expect_serialized_eq")

# the host-callback mechanism (host_callback.py); these names stay importable from here
from axle.backends.cpu.host_callback import (HostCallback, _local, check_errors, device_context,  # noqa: E402,F401
                                             materialize as _materialize, pointer_table, record_error,
                                             start_call, view as _view)


def _host(op: Operation, table) -> None:
    from axle.interpreter.evaluator import Evaluator
    from axle.interpreter.registry import OpCall, lookup
    ctx = getattr(_local, "ctx", None)
    n_in = len(op.operands)
    operands = [_view(table[i], v.type).copy() for i, v in enumerate(op.operands)]
    ev = Evaluator.__new__(Evaluator)
    ev.module, ev.functions = None, {}
    regions = [ev.region_callable(r, {}, ctx) for r in op.regions]
    call = OpCall(name=op.name, operands=operands, operand_types=[v.type for v in op.operands],
                  result_types=[r.type for r in op.results],
                  attrs={k: a.to_python() for k, a in op.attributes.items()}, regions=regions, ctx=ctx,
                  location=op.where())
    if op.name == "stablehlo.custom_call":  # a target registered by the user
        from axle.interpreter.evaluator import _CUSTOM_CALLS
        call.name = op.attr("call_target_name")
        out = _CUSTOM_CALLS[call.name](call)
    else:
        out = lookup(op.name)(call)
    outs = Evaluator.results_of(op, out)
    for j, (r, v) in enumerate(zip(op.results, outs)):
        np.copyto(_view(table[n_in + j], r.type), v)


CALLBACK = HostCallback(_host)  # key -> the op (kept alive as long as the process)


@kernel(*HOST_OPS, memory_operands=True)
def emit_collective(ctx: Context, op: Operation) -> None:
    """A call of the host callback with (key, [operand pointers..., result pointers...])."""
    from axle.backends.cpu.kernels_collective_native import emit_native
    if emit_native(ctx, op):  # compiled call of the native runtime (collectives_native.py)
        return
    ctx.cacheable = False  # the callback's address and the op key live in this process only
    ctx.host_callbacks = True
    ctx.host_ops.append(op.name)
    key = CALLBACK.register(op)
    ptrs = [ctx.buffer(v) if ctx.has_buffer(v) else _materialize(ctx, v) for v in op.operands]
    ptrs += [ctx.buffer(r) for r in op.results]
    CALLBACK.emit_call(ctx.b, key, pointer_table(ctx, ptrs, cast=False))


def _check_custom_call(op: Operation) -> None:
    """Targets registered with axle.register_custom_call, on tensors, native handlers
    registered with axle.register_ffi_target (kernels_ffi.py), and the JAX targets compiled
    code runs itself (kernels_jax.py); others name the JAX API that emitted them."""
    from axle.backends.ffi import lookup
    from axle.interpreter.evaluator import _CUSTOM_CALLS
    from axle.ir.types import TensorType
    target = op.attr("call_target_name")
    if lookup(target) is not None:
        from axle.backends.cpu.kernels_ffi import check_ffi_call
        check_ffi_call(op)
        return
    if target not in _CUSTOM_CALLS:
        from axle.backends.cpu.kernels_jax import NATIVE_TARGETS
        if target in NATIVE_TARGETS:
            return NATIVE_TARGETS[target][0](op)
        from axle.interpreter.jax_targets import explain_target, unsupported_target_message
        raise Unsupported(explain_target(op, "the cpu backend")
                          or unsupported_target_message(target, op.where(), "the cpu backend"))
    for v in list(op.operands) + list(op.results):
        if not isinstance(v.type, TensorType) or not v.type.is_static:
            raise Unsupported(f"{op.where()}: custom call '{target}' on a value of type {v.type}")
    if op.regions:
        raise Unsupported(f"{op.where()}: custom call '{target}' with regions")


# A custom call runs its registered Python function on the host (the same callback as the
# collectives): operands are copied out of the buffers, results copied back in.
@kernel("stablehlo.custom_call", memory_operands=True, check=_check_custom_call)
def emit_custom_call(ctx: Context, op: Operation) -> None:
    from axle.backends.ffi import lookup
    from axle.interpreter.evaluator import _CUSTOM_CALLS
    target = op.attr("call_target_name")
    handler = lookup(target)
    if handler is not None:  # a native handler with XLA's FFI ABI
        from axle.backends.cpu.kernels_ffi import emit_ffi_call
        return emit_ffi_call(ctx, op, handler)
    if target not in _CUSTOM_CALLS:
        from axle.backends.cpu.kernels_jax import NATIVE_TARGETS
        if target in NATIVE_TARGETS:
            return NATIVE_TARGETS[target][1](ctx, op)
    emit_collective(ctx, op)
