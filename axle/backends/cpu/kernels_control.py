"""Control flow of the CPU backend: while, if and case, compiled into branches of the
one entry function. Loop-carried values live in the while op's result buffers; a body
iteration writes its results to scratch buffers first and copies them back, so every
carried value is read from the previous iteration (the spec's parallel assignment).
A value the body passes through unchanged (`return ..., %arg_k, ...` at position k: loop
invariants such as the weights of a scan) stays in its buffer: no scratch, no copies.
"""
from __future__ import annotations

from llvmlite import ir

from axle.backends.cpu.compiler import Context, check_supported, kernel
from axle.backends.cpu.emitter import _ty
from axle.ir.core import Operation


def _check_regions(op: Operation) -> None:
    for r in op.regions:
        check_supported(r.blocks[0])


@kernel("stablehlo.while", memory_operands=True, check=_check_regions)
def while_(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    cond, body = op.regions
    carried = [ctx.buffer(r) for r in op.results]
    for v, dst in zip(op.operands, carried):
        ctx.copy(v, dst)
    for blk in (cond.blocks[0], body.blocks[0]):
        for a, buf in zip(blk.arguments, carried):
            em.buffers[id(a)] = buf
    rets = body.blocks[0].operations[-1].operands
    args = body.blocks[0].arguments
    through = [ret is arg for ret, arg in zip(rets, args)]
    tokens = [None if t else object() for t in through]  # names the scratch buffers
    scratch = [None if t else ctx.temp(_ty(r), tok) for r, t, tok in zip(op.results, through, tokens)]
    head = b.append_basic_block("while.cond")
    loop = b.append_basic_block("while.body")
    done = b.append_basic_block("while.end")
    b.branch(head)
    b.position_at_end(head)
    (pred,) = ctx.emit_block(cond.blocks[0])
    b.cbranch(em.value_at(pred, []), loop, done)
    b.position_at_end(loop)
    ctx.emit_block(body.blocks[0], scratch)
    for r, s, dst in zip(op.results, scratch, carried):
        if s is None:
            continue
        t = _ty(r)
        em.loop_nest(list(t.shape), lambda idx, s=s, dst=dst, t=t: _copy_elem(em, s, dst, t, idx))
    b.branch(head)
    b.position_at_end(done)
    for tok in tokens:
        if tok is not None:
            ctx.release(tok)


def _copy_elem(em, src, dst, t, idx):
    lin = em.linear(idx, t.shape)
    p = em.element_ptr(src, t.element_type, lin)
    q = em.element_ptr(dst, t.element_type, lin)
    em.b.store(em.b.load(p), q)


@kernel("stablehlo.if", check=_check_regions)
def if_(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    outs = [ctx.buffer(r) for r in op.results]
    with b.if_else(em.value_at(op.operands[0], [])) as (then, otherwise):
        with then:
            ctx.emit_block(op.regions[0].blocks[0], outs)
        with otherwise:
            ctx.emit_block(op.regions[1].blocks[0], outs)


@kernel("stablehlo.case", check=_check_regions)
def case(ctx: Context, op: Operation) -> None:
    """Branch i runs for index i; an index out of range runs the last branch."""
    em, b = ctx.em, ctx.b
    outs = [ctx.buffer(r) for r in op.results]
    index = em.value_at(op.operands[0], [])
    n = len(op.regions)
    done = b.append_basic_block("case.end")
    last = b.append_basic_block(f"case.{n - 1}")
    switch = b.switch(index, last)
    for i, region in enumerate(op.regions[:-1]):
        blk = b.append_basic_block(f"case.{i}")
        switch.add_case(ir.Constant(index.type, i), blk)
        b.position_at_end(blk)
        ctx.emit_block(region.blocks[0], outs)
        b.branch(done)
    b.position_at_end(last)
    ctx.emit_block(op.regions[-1].blocks[0], outs)
    b.branch(done)
    b.position_at_end(done)
