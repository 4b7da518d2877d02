"""chlo.scan on the CPU backend: a loop over the scanned dimension running the body once per
position (forward, or backward with is_reverse), as the interpreter (ops_reduce.py) does.

Operands are the inputs then the initial carries; results the outputs then the final
carries (the split comes from `operandSegmentSizes`, or else from the body's argument
types). Per step the inputs' slices at the position are copied to scratch buffers that the
body's first arguments read, the carries live in the carry results' buffers, and the body
writes its outputs and new carries to scratch buffers: the outputs are copied into place
along the scanned dimension, the carries back into the carry buffers (so each step reads
the previous step's carries, even when the body returns them in another order).
"""
from __future__ import annotations

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I64
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import check_supported, kernel
from axle.ir.core import Operation


def scan_split(op: Operation) -> tuple[int, int]:
    """(number of inputs, number of outputs)."""
    n_ops, n_res = len(op.operands), len(op.results)
    seg = op.attr("operandSegmentSizes", op.attr("operand_segment_sizes"))
    if seg is not None:
        n_in, n_carry = (int(s) for s in seg)
        return n_in, n_res - n_carry
    d = int(op.attr("dimension", 0))
    args = [tuple(a.type.shape) for a in op.regions[0].blocks[0].arguments]
    for n_in in range(1, n_ops + 1):
        sliced = [tuple(s for k, s in enumerate(_ty(v).shape) if k != d) for v in op.operands[:n_in]]
        carried = [tuple(_ty(v).shape) for v in op.operands[n_in:]]
        if args == sliced + carried:
            return n_in, n_res - (n_ops - n_in)
    raise Unsupported(f"{op.where()}: cannot tell the inputs from the carries")


def _check(op: Operation) -> None:
    check_supported(op.regions[0].blocks[0])
    n_in, n_out = scan_split(op)
    d = int(op.attr("dimension", 0))
    if n_in < 1 or n_out < 0 or len(op.operands) - n_in != len(op.results) - n_out:
        raise Unsupported(f"{op.where()}: inputs, carries and outputs do not match")
    length = _ty(op.operands[0]).shape[d]
    for v in list(op.operands[:n_in]) + list(op.results[:n_out]):
        if _ty(v).rank <= d or _ty(v).shape[d] != length:
            raise Unsupported(f"{op.where()}: {v.type} is not scanned along dimension {d} of length {length}")


def _with(idx, d, i):
    return list(idx[:d]) + [i] + list(idx[d:])


@kernel("chlo.scan", memory_operands=True, check=_check)
def scan(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    d = int(op.attr("dimension", 0))
    reverse = bool(op.attr("is_reverse", False))
    n_in, n_out = scan_split(op)
    inputs, inits = op.operands[:n_in], op.operands[n_in:]
    outputs, finals = op.results[:n_out], op.results[n_out:]
    block = op.regions[0].blocks[0]
    length = _ty(inputs[0]).shape[d]
    carries = [ctx.buffer(r) for r in finals]
    for v, dst in zip(inits, carries):
        ctx.copy(v, dst)
    if length == 0:
        return
    slices = []
    for v, a in zip(inputs, block.arguments[:n_in]):
        buf = ctx.temp(_ty(a))
        em.buffers[a] = buf
        slices.append(buf)
    for a, buf in zip(block.arguments[n_in:], carries):
        em.buffers[a] = buf
    out_scratch = [ctx.temp(_ty(a)) for a in block.operations[-1].operands[:n_out]]
    carry_scratch = [ctx.temp(_ty(r)) for r in finals]

    pre = b.block
    loop = b.append_basic_block("scan.step")
    done = b.append_basic_block("scan.end")
    b.branch(loop)
    b.position_at_end(loop)
    step = b.phi(I64, "step")
    step.add_incoming(em.const_i64(0), pre)
    pos = b.sub(em.const_i64(length - 1), step) if reverse else step
    for v, a, buf in zip(inputs, block.arguments[:n_in], slices):
        t = _ty(a)
        em.loop_nest(list(t.shape), lambda idx, v=v, buf=buf, t=t: S.store(
            b, em.value_at(v, _with(idx, d, pos)), em.element_ptr(buf, t.element_type, em.linear(idx, t.shape)),
            t.element_type))
    ctx.emit_block(block, out_scratch + carry_scratch)
    for r, s in zip(outputs, out_scratch):
        rt = _ty(r)
        st = [n for k, n in enumerate(rt.shape) if k != d]
        em.loop_nest(st, lambda idx, r=r, s=s, rt=rt, st=st: b.store(
            b.load(em.element_ptr(s, rt.element_type, em.linear(idx, st))),
            em.element_ptr(ctx.buffer(r), rt.element_type, em.linear(_with(idx, d, pos), rt.shape))))
    for r, s, dst in zip(finals, carry_scratch, carries):
        t = _ty(r)
        em.loop_nest(list(t.shape), lambda idx, s=s, dst=dst, t=t: b.store(
            b.load(em.element_ptr(s, t.element_type, em.linear(idx, t.shape))),
            em.element_ptr(dst, t.element_type, em.linear(idx, t.shape))))
    nxt = b.add(step, em.const_i64(1))
    step.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_unsigned("<", nxt, em.const_i64(length)), loop, done)
    b.position_at_end(done)
