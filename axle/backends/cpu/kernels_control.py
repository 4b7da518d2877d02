"""Control flow of the CPU backend: while, if and case, compiled into branches of the
one entry function. Loop-carried values live in the while op's result buffers; a body
iteration writes its results to scratch buffers first, so every carried value is read
from the previous iteration (the spec's parallel assignment). In a kernel's own function
the carried and scratch buffers then trade places (their entries in the kernel's buffer
table are swapped: one copy after the loop at most); elsewhere the scratch is copied
back. A result the body can write into its carried buffer directly (an elementwise
update reading the carry only at its own index, a scan's dynamic_update_slice) has no
scratch. A value the body passes through unchanged (`return ..., %arg_k, ...` at position k: loop
invariants such as the weights of a scan) stays in its buffer: no scratch, no copies.
"""
from __future__ import annotations

from llvmlite import ir

from axle.backends.cpu import status
from axle.codegen.emitter import _ty
from axle.backends.cpu.abi import P8P, BufRef
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import check_supported, is_elementwise, kernel
from axle.codegen.plans.arena import nbytes
from axle.codegen.plans.graph import free_values, reads
from axle.ir.core import Operation


# Loops nested deeper than this run their bodies in functions of their own: LLVM's loop
# passes took time quadratic in the depth of a loop nest within one function (200 nested
# while loops: ~10 s), one loop per function keeps it linear
OUTLINE_DEPTH = 6
SWAP_BUFFERS = True  # carried values trade buffers with their scratch (_swappable)


def _check_regions(op: Operation) -> None:
    for r in op.regions:
        check_supported(r.blocks[0])


@kernel("stablehlo.while", check=_check_regions)
def while_(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    cond, body = op.regions
    outline = ctx._level >= OUTLINE_DEPTH and _table_buffers_only(ctx, op)
    carried = [ctx.buffer(r) for r in op.results]
    for v, r, dst in zip(op.operands, op.results, carried):
        if not ctx.same_buffer(v, r):  # (a pass-through carry may live in its operand's buffer)
            ctx.copy(v, dst)
    # the buffers as entered (BufRefs where they are table buffers: valid in any function)
    refs = [em.buffers.raw(r) for r in op.results]
    for blk in (cond.blocks[0], body.blocks[0]):
        for a, buf in zip(blk.arguments, refs):  # (refs: valid in every function)
            em.buffers[a] = buf
    rets = body.blocks[0].operations[-1].operands
    args = body.blocks[0].arguments
    through = [ret is arg for ret, arg in zip(rets, args)]
    direct = [not t and _updates_in_place(body.blocks[0], k) for k, t in enumerate(through)]
    tokens = [None if t or d else object() for t, d in zip(through, direct)]  # names the scratch buffers
    scratch = [carried[k] if direct[k] else None if through[k] else ctx.temp(_ty(r), tokens[k])
               for k, r in enumerate(op.results)]
    scratch_refs = [refs[k] if direct[k] else None if through[k] else BufRef(*ctx._offsets[tokens[k]])
                    for k in range(len(refs))]  # the same buffers, as refs
    head = b.append_basic_block("while.cond")
    loop = b.append_basic_block("while.body")
    done = b.append_basic_block("while.end")
    swaps = _swappable(ctx, op, refs, scratch_refs, tokens)
    b.branch(head)
    b.position_at_end(head)
    current = _swap_enter(ctx, swaps)
    (pred,) = ctx.emit_block(cond.blocks[0])
    b.cbranch(em.value_at(pred, []), loop, done)
    b.position_at_end(loop)
    # the scratch buffers are free until the body's result is written: producers of what
    # that result reads at its own index may be written there first (plan.py)
    ctx.fresh_results = {s for s, t in zip(scratch_refs, tokens) if t is not None}
    if outline:  # deep nests: the body in a function of its own
        fn = ir.Function(ctx.mod, ir.FunctionType(ir.VoidType(), [P8P]), ctx.mod.get_unique_name("while.body"))
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        with ctx.function_scope(fn, call=True):
            ctx.emit_block(body.blocks[0], scratch_refs)
    else:
        # the body's kernels may share their loops across the pool (a scan's GEMMs) when
        # every buffer they reach is a table buffer, valid in the pool's chunk functions
        ctx._parallel_body = ctx.in_kernel_function and _table_buffers_only(ctx, op)
        ctx.emit_block(body.blocks[0], scratch_refs)
    for k, (r, s, dst, d) in enumerate(zip(op.results, scratch, carried, direct)):
        if s is None or d or k in swaps:
            continue
        t = _ty(r)
        em.loop_nest(list(t.shape), lambda idx, s=s, dst=dst, t=t: _copy_elem(em, s, dst, t, idx))
    _swap_step(ctx, swaps, current)
    if ctx.host_callbacks:  # a callback raised (a custom call, a check): leave the loop now
        b.cbranch(status.failed(ctx), done, head)
    else:
        b.branch(head)
    b.position_at_end(done)
    _swap_exit(ctx, swaps)
    for tok in tokens:
        if tok is not None:
            ctx.release(tok)


def _table_buffers_only(ctx: Context, op: Operation) -> bool:
    """Whether every buffer the loop's body can reach is a BufRef (resolved through the
    table in any function), not a pointer local to the function being emitted: its
    results' buffers, and those of the values from outside it that it reads (through
    fused producers)."""
    bufs = ctx.em.buffers
    stack = list(op.results) + list(free_values(op))
    seen: set = set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in bufs:
            if not isinstance(bufs.raw(v), BufRef):
                return False
            continue
        owner = getattr(v, "owner", None)
        if isinstance(owner, Operation):  # a fused producer: what it reads
            stack.extend(owner.operands)
            if owner.regions:
                stack.extend(free_values(owner))
        else:
            return False  # a block argument without a buffer
    return True


def _updates_in_place(body, k: int) -> bool:
    """Whether the body can write its k-th result straight into carried buffer k: the
    result is made by an elementwise op P (not returned twice), and every use of block
    argument k lies in the tree of single-use elementwise ops that P computes in its own
    loop, so that element i of the argument is read only while computing element i of the
    result (an accumulator `acc + f(...)` where f does not read acc)."""
    ret = body.operations[-1]
    res = ret.operands[k]
    arg = body.arguments[k]
    p = getattr(res, "owner", None)
    if not isinstance(p, Operation) or p.parent is not body or sum(1 for v in ret.operands if v is res) != 1:
        return False
    rt = _ty(res)
    if not rt.is_static:
        return False
    uses: dict = {}
    for o in body.operations:  # a use inside o's regions counts as o's (o is not elementwise)
        for v in reads(o):  # (memoized: not a walk of every nested loop at every level)
            uses.setdefault(v, []).append(o)

    def linear(o) -> bool:
        return is_elementwise(o) and len(o.results) == 1 and list(_ty(o.results[0]).shape) == list(rt.shape)
    if _ty(arg) == rt and _in_place_kernel(p, arg, uses):
        return True
    if not linear(p) or _ty(arg).element_type != rt.element_type:
        return False
    tree = {p}
    stack = [p]
    while stack:  # single-use elementwise producers computed inside P's loop
        o = stack.pop()
        for v in o.operands:
            q = getattr(v, "owner", None)
            if isinstance(q, Operation) and q.parent is body and linear(q) and len(uses.get(v, [])) == 1 \
                    and q not in tree:
                tree.add(q)
                stack.append(q)
    users = uses.get(arg, [])
    return bool(users) and all(u in tree and list(_ty(u.results[0]).shape) == list(rt.shape) for u in users)


def _in_place_kernel(p: Operation, arg, uses: dict) -> bool:
    """Whether P is a kernel that updates its `in_place` operand (dynamic_update_slice,
    scatter) and that operand is block argument `arg`, read by nothing else in the body:
    then P writes only its update into the carried buffer (a scan's stacked outputs, a KV
    cache), not a copy of the whole buffer into scratch and back every iteration."""
    from axle.backends.cpu.registry import KERNELS
    kd = KERNELS.get(p.name)
    if kd is None or kd.in_place is None or len(p.results) != 1:
        return False
    if p.operands[kd.in_place] is not arg or sum(1 for v in p.operands if v is arg) != 1:
        return False
    users = uses.get(arg, [])
    if len(users) == 1 and users[0] is p:
        return True
    return _read_before(p, arg)


def _read_before(p: Operation, arg) -> bool:
    """Whether every read of block argument `arg` other than P's in-place operand happens in
    a kernel that runs before P (a loop writing row i + 1 of its carry from row i: fusion
    gives that update a buffer of its own, fusion._updates_reading_their_target): with the
    body's fusion plan as plan_block will make it, no operand of P and nothing after P
    reads arg, directly or through fused ops."""
    from axle.backends.cpu.fusion import materialized
    body = p.parent
    ops, ret = body.operations[:-1], body.operations[-1]
    uses: dict = {}
    for o in body.operations:
        for v in o.operands:
            uses[v] = uses.get(v, 0) + 1
    targets = {v: None for v in ret.operands
               if isinstance(getattr(v, "owner", None), Operation) and v.owner.parent is body
               and v.owner.name != "stablehlo.constant"}
    want = materialized(list(ops), body, targets, set(), uses)

    def reads_arg(values) -> bool:
        stack, seen = list(values), set()
        while stack:
            v = stack.pop()
            if v is arg:
                return True
            o = getattr(v, "owner", None)
            if v in want or not isinstance(o, Operation) or o.parent is not body or o in seen:
                continue
            seen.add(o)
            stack.extend(reads(o))
        return False
    from axle.backends.cpu.registry import KERNELS
    k = KERNELS[p.name].in_place
    if reads_arg([v for i, v in enumerate(reads(p)) if not (i == k and v is arg)]):
        return False
    after = body.operations[body.operations.index(p) + 1:]
    return not any(reads_arg(reads(o)) for o in after)


def _swappable(ctx: Context, op: Operation, refs: list, scratch_refs: list, tokens: list) -> dict:
    """The carried values that trade buffers with their scratch each iteration instead of
    being copied back (k -> (carried key, scratch key, carried table index, scratch table
    index, carried pointer, scratch pointer, type)): those with a scratch buffer, in a kernel's
    own function, both buffers table buffers. The kernel's buffer table is its own array
    (context._call_kernel), so the loop swaps the two entries after each iteration; the
    loop's code and the pool's chunk functions load the pointers from it (a stencil's
    new field, which reads its neighbours, written over the field of two iterations ago
    and no copy of the whole field per step)."""
    if not SWAP_BUFFERS or ctx._kargs is None:
        return {}
    found = {}
    for k, r in enumerate(op.results):
        c, s = refs[k], scratch_refs[k]
        if tokens[k] is None or not isinstance(c, BufRef) or not isinstance(s, BufRef) or not _ty(r).is_static:
            continue
        oc, os_ = ctx.resolve(c), ctx.resolve(s)  # (the entries as the kernel was called)
        kc, ks = (c.slot, c.offset), (s.slot, s.offset)
        found[k] = (kc, ks, ctx._kargs[kc], ctx._kargs[ks], oc, os_, _ty(r))
    return found


def _entry(ctx: Context, i: int):
    return ctx.b.gep(ctx.table, [ir.Constant(ir.IntType(64), i)], inbounds=True)


def _swap_enter(ctx: Context, swaps: dict) -> dict:
    """At the top of each iteration: the carried and scratch pointers from the table, used
    by everything emitted in this function until the loop ends."""
    current = {}
    for k, (kc, ks, ic, is_, _, _, _) in swaps.items():
        current[k] = (ctx.b.load(_entry(ctx, ic)), ctx.b.load(_entry(ctx, is_)))
        ctx._resolved[kc], ctx._resolved[ks] = current[k]
    return current


def _swap_step(ctx: Context, swaps: dict, current: dict) -> None:
    for k, (kc, ks, ic, is_, _, _, _) in swaps.items():
        c, s = current[k]
        ctx.b.store(s, _entry(ctx, ic))
        ctx.b.store(c, _entry(ctx, is_))


def _swap_exit(ctx: Context, swaps: dict) -> None:
    """After the loop: where the last value lies in the scratch buffer, one copy into the
    carried one; the table entries as they were."""
    b = ctx.b
    for k, (kc, ks, ic, is_, oc, os_, t) in swaps.items():
        ctx._resolved[kc], ctx._resolved[ks] = oc, os_
        cur = b.load(_entry(ctx, ic))
        with b.if_then(b.icmp_unsigned("!=", b.ptrtoint(cur, ir.IntType(64)), b.ptrtoint(oc, ir.IntType(64)))):
            memcpy = ctx.mod.declare_intrinsic("llvm.memcpy", [oc.type, cur.type, ir.IntType(64)])
            b.call(memcpy, [oc, cur, ir.Constant(ir.IntType(64), nbytes(t)), ir.Constant(ir.IntType(1), 0)])
        b.store(oc, _entry(ctx, ic))
        b.store(os_, _entry(ctx, is_))


def _copy_elem(em, src, dst, t, idx):
    lin = em.linear(idx, t.shape)
    p = em.element_ptr(src, t.element_type, lin)
    q = em.element_ptr(dst, t.element_type, lin)
    em.b.store(em.b.load(p), q)


def _emit_branch(ctx: Context, block, outs: list, parallel: bool) -> None:
    """One branch of an if / case: its kernels may share their loops across the pool (a
    branch's sine over 64K elements) when every buffer they reach is a table buffer, as a
    while body's may."""
    ctx._parallel_body = parallel
    ctx.emit_block(block, outs)


@kernel("stablehlo.if", check=_check_regions)
def if_(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    parallel = ctx.in_kernel_function and _table_buffers_only(ctx, op)
    # (table buffers as refs when the branches may run on the pool: valid in any function)
    outs = [em.buffers.raw(r) if parallel else ctx.buffer(r) for r in op.results]
    with b.if_else(em.value_at(op.operands[0], [])) as (then, otherwise):
        with then:
            _emit_branch(ctx, op.regions[0].blocks[0], outs, parallel)
        with otherwise:
            _emit_branch(ctx, op.regions[1].blocks[0], outs, parallel)


@kernel("stablehlo.case", check=_check_regions)
def case(ctx: Context, op: Operation) -> None:
    """Branch i runs for index i; an index out of range runs the last branch."""
    em, b = ctx.em, ctx.b
    parallel = ctx.in_kernel_function and _table_buffers_only(ctx, op)
    outs = [em.buffers.raw(r) if parallel else ctx.buffer(r) for r in op.results]
    index = em.value_at(op.operands[0], [])
    n = len(op.regions)
    done = b.append_basic_block("case.end")
    last = b.append_basic_block(f"case.{n - 1}")
    switch = b.switch(index, last)
    for i, region in enumerate(op.regions[:-1]):
        blk = b.append_basic_block(f"case.{i}")
        switch.add_case(ir.Constant(index.type, i), blk)
        b.position_at_end(blk)
        _emit_branch(ctx, region.blocks[0], outs, parallel)
        b.branch(done)
    b.position_at_end(last)
    _emit_branch(ctx, op.regions[-1].blocks[0], outs, parallel)
    b.branch(done)
    b.position_at_end(done)
