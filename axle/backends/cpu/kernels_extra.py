"""Smaller ops of the CPU backend that had no kernel:

* `map`: a fusible element mapper (its body runs as scalar code on the operands' elements);
* `broadcast` (the deprecated one: new leading dimensions): a fusible element mapper;
* `collective_reduce` and `interpreter.print`: host callbacks, run like the collectives and
  probes of kernels_collective.py (the interpreter's implementation on the buffers);
* `cpu.host_effect`: an infeed / outfeed / send / recv without its tokens (lower_effects.py):
  a host callback that runs the interpreter's implementation of the original op in the
  device's context, with TOKEN where the op takes or gives tokens. Errors are kept
  and raised after the native call returns (kernels_collective.check_errors).
"""
from __future__ import annotations

import numpy as np

from axle.backends.cpu import kernels_collective as _kc
from axle.codegen import elemental  # noqa: F401  (map and broadcast fuse: registers their element mappers)
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.backends.cpu.host_callback import HostCallback, materialize, pointer_table, view
from axle.ir.core import Operation


kernel("stablehlo.collective_reduce", "interpreter.print", memory_operands=True)(_kc.emit_collective)


def _effect_host(effect: tuple, table) -> None:
    """Run the effect (name, operand types, result types, attributes, where) on the buffers."""
    from axle.backends.cpu.tokens import is_token
    from axle.interpreter.registry import TOKEN, OpCall, lookup
    name, in_types, out_types, attrs, where = effect
    k = 0
    operands = []
    for t in in_types:
        if is_token(t):
            operands.append(TOKEN)
        else:
            operands.append(view(table[k], t).copy())
            k += 1
    call = OpCall(name=name, operands=operands, operand_types=list(in_types), result_types=list(out_types),
                  attrs={n: a.to_python() for n, a in attrs.items()}, regions=[],
                  ctx=getattr(_kc._local, "ctx", None), location=where)
    outs = lookup(name)(call)
    if len(out_types) == 1 and not isinstance(outs, list):
        outs = [outs]
    outs = list(outs)
    if len(outs) != len(out_types):
        raise RuntimeError(f"{where} produced {len(outs)} values for {len(out_types)} results")
    for t, v in zip(out_types, outs):
        if not is_token(t):
            out = view(table[k], t)
            np.copyto(out, np.asarray(v).astype(out.dtype, copy=False))
            k += 1


_EFFECT_CALLBACK = HostCallback(_effect_host)  # key -> the effect (kept as long as the process)


def _check_effect(op: Operation) -> None:
    if "effect" not in op.attributes:
        raise Unsupported(f"{op.where()}: cpu.host_effect without the effect it stands for")


@kernel("cpu.host_effect", memory_operands=True, check=_check_effect)
def host_effect(ctx: Context, op: Operation) -> None:
    from axle.backends.cpu.lower_effects import original_call
    b = ctx.b
    name, in_types, out_types, attrs = original_call(op)
    ctx.cacheable = False  # the callback's address and the key live in this process only
    ctx.host_callbacks = True
    ctx.host_ops.append(name)
    key = _EFFECT_CALLBACK.register((name, in_types, out_types, attrs, op.where()))
    ptrs = [ctx.buffer(v) if ctx.has_buffer(v) else materialize(ctx, v) for v in op.operands]
    ptrs += [ctx.buffer(r) for r in op.results]
    _EFFECT_CALLBACK.emit_call(b, key, pointer_table(ctx, ptrs))
