"""Smaller ops of the CPU backend that had no kernel:

* `map`: a fusible element mapper (its body runs as scalar code on the operands' elements);
* `broadcast` (the deprecated one: new leading dimensions): a fusible element mapper;
* `collective_reduce` and `interpreter.print`: host callbacks, run like the collectives and
  probes of kernels_collective.py (the interpreter's implementation on the buffers);
* `cpu.host_effect`: an infeed / outfeed / send / recv without its tokens (prepare.py and
  tokens.py): a host callback that runs the interpreter's implementation of the original op
  in the device's context, with TOKEN where the op takes or gives tokens. Errors are kept
  and raised after the native call returns (kernels_collective.check_errors).
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from axle import forks
from axle.backends.cpu import kernels_collective as _kc
from axle.codegen import elemental  # noqa: F401  (map and broadcast fuse: registers their element mappers)
from axle.codegen.scalar import I8, I64
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.ir.core import Operation


kernel("stablehlo.collective_reduce", "interpreter.print", memory_operands=True)(_kc.emit_collective)


_EFFECTS: dict[int, Operation] = {}  # key -> the original op (kept alive as long as the process)
_LOCK = forks.lock()  # unlocked again in a forked child (axle/forks.py)
_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p))


def _effect_host(key: int, table) -> None:
    try:
        from axle.backends.cpu.tokens import is_token
        from axle.interpreter.evaluator import Evaluator
        from axle.interpreter.registry import TOKEN, OpCall, lookup
        op = _EFFECTS[key]
        k = 0
        operands = []
        for v in op.operands:
            if is_token(v.type):
                operands.append(TOKEN)
            else:
                operands.append(_kc._view(table[k], v.type).copy())
                k += 1
        call = OpCall(name=op.name, operands=operands, operand_types=[v.type for v in op.operands],
                      result_types=[r.type for r in op.results],
                      attrs={n: a.to_python() for n, a in op.attributes.items()}, regions=[],
                      ctx=getattr(_kc._local, "ctx", None), location=op.where())
        outs = Evaluator.results_of(op, lookup(op.name)(call))
        for r, v in zip(op.results, outs):
            if not is_token(r.type):
                np.copyto(_kc._view(table[k], r.type), v)
                k += 1
    except BaseException as e:  # must not unwind through native frames
        _kc.record_error(e)


_EFFECT_CALLBACK = _CALLBACK_TYPE(_effect_host)
_EFFECT_ADDRESS = ctypes.cast(_EFFECT_CALLBACK, ctypes.c_void_p).value


def _check_effect(op: Operation) -> None:
    if getattr(op, "original", None) is None:
        raise Unsupported(f"{op.where()}: cpu.host_effect without its original op")


@kernel("cpu.host_effect", memory_operands=True, check=_check_effect)
def host_effect(ctx: Context, op: Operation) -> None:
    b = ctx.b
    ctx.cacheable = False  # the callback's address and the key live in this process only
    ctx.host_callbacks = True
    ctx.host_ops.append(op.original.name)
    with _LOCK:
        key = len(_EFFECTS)
        _EFFECTS[key] = op.original
    ptrs = [ctx.buffer(v) if ctx.has_buffer(v) else _kc._materialize(ctx, v) for v in op.operands]
    ptrs += [ctx.buffer(r) for r in op.results]
    table = ctx.em.alloca(ir.ArrayType(I8.as_pointer(), max(len(ptrs), 1)))
    for i, p in enumerate(ptrs):
        b.store(b.bitcast(p, I8.as_pointer()), b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, i)], inbounds=True))
    fnty = ir.FunctionType(ir.VoidType(), [I64, I8.as_pointer().as_pointer()])
    fn = b.inttoptr(ir.Constant(I64, _EFFECT_ADDRESS), fnty.as_pointer())
    b.call(fn, [ir.Constant(I64, key), b.bitcast(table, I8.as_pointer().as_pointer())])
