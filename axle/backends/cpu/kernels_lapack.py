"""jaxlib's LAPACK custom calls (`lapack_sgetrf_ffi`, ...) compiled to native calls of SciPy's LAPACK.

The call plan (axle/interpreter/lapack_builders.py, shared with the interpreter) names the
routine, its arguments and the per-batch arrays; this kernel emits, for one custom call:

1. one arena array per plan array (batch elements back to back, each matrix column-major),
   zero-filled; operands are copied in with their matrices transposed (the copy reads the
   operand through the elemental emitter, so producers fuse into it);
   (batches of matrices of PER_ELEMENT_MIN_SIZE elements or more: each element's copies in
   and out run next to its call, on the pool's thread that claimed it, while its matrices
   are in that core's cache);
2. a loop over the batch calling the routine through its SciPy address (bound at link time
   to the symbol `axle_lapack_<routine>`, so object code stays cacheable), every argument a
   pointer: constants (chars, ints, alpha) in stack slots, arrays at the batch element's
   offset. Workspace sizes were fixed at compile time (the plan queries LAPACK once, as
   jaxlib does at run time); workspaces are shared by the batch elements;
3. jaxlib's extra steps: geev skips a matrix holding an Inf or NaN (info = -4), real geev
   unpacks its eigenvectors into complex ones where info == 0;
4. copies of the arrays into the result buffers (transposed back to row-major); results no
   array produces are zeros.

LAPACK runs on the calling thread (OpenBLAS's own threads set to 1, as for GEMMs). Other
custom-call targets go to the kernel registered before this module.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from llvmlite import ir

from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import KERNELS, KernelDef
from axle.backends.cpu.lapack_symbols import register_symbols, symbol_name
from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS
from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I1, I8, I32, I64
from axle.errors import Unsupported
from axle.interpreter.lapack_builders import make_plan
from axle.interpreter.lapack_plans import LapackError, Plan, is_lapack_target
from axle.ir.core import Operation
from axle.ir.types import TensorType, element_type_of

P8 = I8.as_pointer()
PARALLEL_BATCH = True  # batch elements on the pool's threads (benchmarks switch it off)
# ...when the copies of the workspaces (one per thread) stay below this: a large SVD's
# workspace times 16 threads would be gigabytes; one matrix, or such a batch, runs serially
WORKSPACE_COPIES_MAX_BYTES = 64 << 20
# batches of matrices this large (elements) or larger run on the pool's threads and are
# copied element by element, next to each call; smaller ones run serially, copied in one
# pass over the whole batch before the calls and one after
PER_ELEMENT_MIN_SIZE = 256
TRSM_IN_PLACE = True  # real triangular solves on the row-major buffers, no copies (_trsm_in_place)


def plan_for(op: Operation) -> Plan:
    target = str(op.attr("call_target_name"))
    for v in list(op.operands) + list(op.results):
        if not isinstance(v.type, TensorType) or not v.type.is_static:
            raise Unsupported(f"{op.where()}: custom call '{target}' on a value of type {v.type}")
    attrs = {k: a.to_python() for k, a in op.attributes.items()}
    try:
        return make_plan(target, [(tuple(v.type.shape), np.dtype(v.type.dtype)) for v in op.operands],
                         [(tuple(r.type.shape), np.dtype(r.type.dtype)) for r in op.results], attrs)
    except LapackError as e:
        raise Unsupported(f"{op.where()}: {e}") from None


def _largest(plan: Plan) -> int:
    """Elements of the plan's largest per-batch array (0 without any)."""
    return max([a.size for a in plan.arrays if a.per_batch] or [0])


def symbol(plan: Plan) -> str:
    return symbol_name(plan.routine)


def _col_offset(em, idx: list, shape: tuple):
    """Column-major offset of a per-batch index (rank 0, 1 or 2)."""
    b = em.b
    if len(shape) == 2:
        return b.add(idx[0], b.mul(idx[1], em.const_i64(shape[0])))
    return idx[0] if shape else em.const_i64(0)


def _zero(ctx: Context, ptr, nbytes: int) -> None:
    if nbytes <= 0:
        return
    memset = ctx.em.module.declare_intrinsic("llvm.memset", [P8, I64])
    ctx.b.call(memset, [ctx.b.bitcast(ptr, P8), ir.Constant(I8, 0), ir.Constant(I64, nbytes), ir.Constant(I1, 0)])


TRANSPOSE_TILE = 16  # the row-major <-> column-major copies run over tiles of this many rows and columns


def _transposing_nest(em, shape: list, batch_rank: int, body) -> None:
    """body(idx) for every index of `shape`; when the last two (a matrix per batch element)
    are at least two tiles long, tile by tile (a 16 x 16 tile reads and writes whole cache
    lines on both sides of the transpose, where a plain nest writes one element per line)."""
    if len(shape) - batch_rank != 2 or min(shape[-2:]) < 2 * TRANSPOSE_TILE:
        em.loop_nest(shape, body)
        return
    m, n = shape[-2:]
    tile = TRANSPOSE_TILE
    c64 = em.const_i64

    def tiles(outer):
        i0 = em.b.mul(outer[-2], c64(tile))
        j0 = em.b.mul(outer[-1], c64(tile))
        em.for_range_dynamic(i0, em.tile_end(i0, tile, m), lambda i: em.for_range_dynamic(
            j0, em.tile_end(j0, tile, n), lambda j: body(list(outer[:-2]) + [i, j])))
    em.loop_nest(list(shape[:-2]) + [-(-m // tile), -(-n // tile)], tiles)


def _copy_in(ctx: Context, v, ptr, a, batch_rank: int, bi=None) -> None:
    """Operand v's matrices into the column-major array at ptr: all of them, or with `bi`
    (a linear batch index) that element's only."""
    em, b = ctx.em, ctx.b
    t = _ty(v)
    et = t.element_type
    bshape = list(t.shape[:batch_rank])
    if bi is not None:
        bidx = em.delinear(bi, bshape)
        base = b.mul(bi, em.const_i64(a.size))

        def one(idx):
            off = b.add(base, _col_offset(em, idx, a.shape))
            S.store(b, em.value_at(v, bidx + list(idx)), em.element_ptr(ptr, et, off), et)
        _transposing_nest(em, list(t.shape[batch_rank:]), 0, one)
        return

    def body(idx):
        blin = em.linear(idx[:batch_rank], bshape)
        off = b.add(b.mul(blin, em.const_i64(a.size)), _col_offset(em, idx[batch_rank:], a.shape))
        S.store(b, em.value_at(v, idx), em.element_ptr(ptr, et, off), et)
    _transposing_nest(em, list(t.shape), batch_rank, body)


def _copy_out(ctx: Context, ptr, r, shape: tuple, batch_rank: int, bi=None) -> None:
    """The column-major array at ptr into result r's buffer (row-major): every batch
    element, or with `bi` that one's."""
    em, b = ctx.em, ctx.b
    t = _ty(r)
    et = t.element_type
    out = ctx.buffer(r)
    bshape = list(t.shape[:batch_rank])
    size = int(np.prod(shape, dtype=np.int64))
    if bi is not None:
        base = b.mul(bi, em.const_i64(size))
        rows = b.mul(bi, em.const_i64(int(np.prod(t.shape[batch_rank:], dtype=np.int64))))

        def one(idx):
            src = em.element_ptr(ptr, et, b.add(base, _col_offset(em, idx, shape)))
            dst = em.element_ptr(out, et, b.add(rows, em.linear(idx, t.shape[batch_rank:])))
            S.store(b, S.load(b, src, et), dst, et)
        _transposing_nest(em, list(t.shape[batch_rank:]), 0, one)
        return

    def body(idx):
        blin = em.linear(idx[:batch_rank], bshape)
        off = b.add(b.mul(blin, em.const_i64(size)), _col_offset(em, idx[batch_rank:], shape))
        S.store(b, S.load(b, em.element_ptr(ptr, et, off), et), em.element_ptr(out, et, em.linear(idx, t.shape)), et)
    _transposing_nest(em, list(t.shape), batch_rank, body)


def _slot(ctx: Context, t, value):
    s = ctx.em.alloca(t)
    ctx.b.store(value, s)
    return ctx.b.bitcast(s, P8)


def _all_finite(ctx: Context, ptr, dtype: np.dtype, count: int):
    """i1: every element of the `count` elements at ptr is finite (x - x == 0)."""
    em, b = ctx.em, ctx.b
    real = S.F32 if np.dtype(dtype).itemsize // (2 if np.dtype(dtype).kind == "c" else 1) == 4 else S.F64
    parts = count * (2 if np.dtype(dtype).kind == "c" else 1)
    flag = em.alloca(I1)
    b.store(ir.Constant(I1, 1), flag)
    base = b.bitcast(ptr, real.as_pointer())

    def body(i):
        x = b.load(b.gep(base, [i], inbounds=True))
        ok = b.fcmp_ordered("==", b.fsub(x, x), ir.Constant(real, 0.0))
        b.store(b.and_(b.load(flag), ok), flag)
    em.for_range(parts, body)
    return b.load(flag)


def _unpack(ctx: Context, packed, wi, out, n: int, real) -> None:
    """jaxlib's UnpackEigenvectors for one matrix (pointers to this batch element's data)."""
    em, b = ctx.em, ctx.b
    pk = b.bitcast(packed, real.as_pointer())
    wv = b.bitcast(wi, real.as_pointer())
    ct = ir.LiteralStructType([real, real])
    ov = b.bitcast(out, ct.as_pointer())
    j_slot = em.alloca(I64)
    b.store(em.const_i64(0), j_slot)
    head = b.append_basic_block("unpack.head")
    body = b.append_basic_block("unpack.body")
    done = b.append_basic_block("unpack.end")
    b.branch(head)
    b.position_at_end(head)
    j = b.load(j_slot)
    b.cbranch(b.icmp_signed("<", j, em.const_i64(n)), body, done)
    b.position_at_end(body)
    j = b.load(j_slot)
    w = b.load(b.gep(wv, [j], inbounds=True))
    last = b.icmp_signed("==", b.add(j, em.const_i64(1)), em.const_i64(n))
    single = b.or_(b.or_(b.fcmp_ordered("==", w, ir.Constant(real, 0.0)), b.fcmp_unordered("uno", w, w)), last)

    def z(re_, im_):
        v = ir.Constant(ct, ir.Undefined)
        return b.insert_value(b.insert_value(v, re_, 0), im_, 1)
    with b.if_else(single) as (then, otherwise):
        with then:
            def one(i):
                k = b.add(b.mul(j, em.const_i64(n)), i)
                b.store(z(b.load(b.gep(pk, [k], inbounds=True)), ir.Constant(real, 0.0)), b.gep(ov, [k], inbounds=True))
            em.for_range(n, one)
            b.store(b.add(j, em.const_i64(1)), j_slot)
        with otherwise:
            def pair(i):
                k = b.add(b.mul(j, em.const_i64(n)), i)
                k2 = b.add(k, em.const_i64(n))
                re_ = b.load(b.gep(pk, [k], inbounds=True))
                im_ = b.load(b.gep(pk, [k2], inbounds=True))
                b.store(z(re_, im_), b.gep(ov, [k], inbounds=True))
                b.store(z(re_, b.fneg(im_)), b.gep(ov, [k2], inbounds=True))
            em.for_range(n, pair)
            b.store(b.add(j, em.const_i64(2)), j_slot)
    b.branch(head)
    b.position_at_end(done)


def _trsm_in_place(ctx: Context, op: Operation, plan: Plan) -> bool:
    """A real triangular solve called on the row-major buffers themselves
    (`trsm_row_major`): no arena copies transposing A and B in and X out. In a loop
    (ADMM's cho_solve, a Kalman filter) those moved the whole loop-invariant factor every
    trip (256 x 256 with 16 right-hand sides: twice the solve). False when it does not
    apply (complex, A without a buffer of its own)."""
    if plan.routine[1:] != "trsm" or plan.routine[0] not in "sd" or plan.skip:
        return False
    a, bv = op.operands
    if not ctx.has_buffer(a):
        return False
    args = plan.args  # side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb (column-major)
    side, uplo, trans, diag = (args[i][1] for i in range(4))
    trsm_row_major(ctx, a, bv, op.results[0], plan.batch, side == ord("L"), uplo == ord("L"), trans,
                   diag == ord("U"), args[4][1], args[5][1])
    return True


def trsm_row_major(ctx: Context, a, rhs, result, batch: int, left: bool, lower: bool, trans: int, unit: bool,
                   rows: int, cols: int) -> None:
    """op(A) X = B (left) or X op(A) = B, A [batch.., k, k] and B, X [batch.., rows, cols]
    row-major, real: BLAS's trsm on the buffers as they are. A row-major matrix is its
    transpose in column-major order, so the equation is X^T op(A)^T = B^T: the routine
    with the other side and the other triangle (the same transposition), on `cols` x
    `rows` column-major matrices. B is copied into X's buffer first (unless it is X's).
    One right-hand side (a vector: cols == 1 left, rows == 1 right) goes to trsv, which
    OpenBLAS runs 2-5x faster than trsm with one row or column (256 x 256: 8 against 15-37
    us): op(A) x = b on the row-major A is A's transpose's solve in column-major order, so
    the triangle flips and, for the left side, the transposition too."""
    from axle.backends.cpu import blas
    register_symbols()
    blas.available()  # binds OpenBLAS's per-thread thread-count setter
    em, b = ctx.em, ctx.b
    if not ctx.same_buffer(rhs, result):
        ctx.copy(rhs, ctx.buffer(result))
    dt = np.dtype(_ty(result).dtype)
    et = element_type_of(dt)
    k = rows if left else cols
    lda = _slot(ctx, I32, ir.Constant(I32, max(k, 1)))
    prefix = "s" if dt.itemsize == 4 else "d"
    vector = (cols == 1) if left else (rows == 1)
    if vector and symbol_name(prefix + "trsv") in EXTERNAL_SYMBOLS:
        if left:
            trans = ord("T") if trans == ord("N") else ord("N")
        chars = [ord("U" if lower else "L"), trans, ord("U" if unit else "N")]
        consts = [_slot(ctx, I8, ir.Constant(I8, c)) for c in chars] + [_slot(ctx, I32, ir.Constant(I32, k))]
        tail = [lda, None, _slot(ctx, I32, ir.Constant(I32, 1))]
        routine, nargs = prefix + "trsv", 8
    else:
        chars = [ord("R" if left else "L"), ord("U" if lower else "L"), trans, ord("U" if unit else "N")]
        consts = [_slot(ctx, I8, ir.Constant(I8, c)) for c in chars]
        consts += [_slot(ctx, I32, ir.Constant(I32, cols)), _slot(ctx, I32, ir.Constant(I32, rows)),
                   _slot(ctx, S.reg_type(et), S.constant(et, 1))]
        tail = [lda, None, _slot(ctx, I32, ir.Constant(I32, max(cols, 1)))]
        routine, nargs = prefix + "trsm", 11
    name = symbol_name(routine)
    fn = ctx.mod.globals.get(name) or ir.Function(ctx.mod, ir.FunctionType(ir.VoidType(), [P8] * nargs), name)
    blas.set_threads(ctx.mod, b, 1)
    pa, px = b.bitcast(ctx.buffer(a), P8), b.bitcast(ctx.buffer(result), P8)

    def one(bi):
        bb = em.b
        at_a = bb.gep(pa, [bb.mul(bi, em.const_i64(k * k * dt.itemsize))], inbounds=True)
        at_x = bb.gep(px, [bb.mul(bi, em.const_i64(rows * cols * dt.itemsize))], inbounds=True)
        bb.call(fn, consts + [at_a, tail[0], at_x, tail[2]])
    if rows * cols and batch:
        em.for_range_dynamic(em.const_i64(0), em.const_i64(batch), one)
    ctx.mark_library(f"blas.{routine}")


def _as_trsv(plan: Plan) -> Plan:
    """A real column-major trsm with one right-hand side (left: n == 1, right: m == 1) as
    trsv (see trsm_row_major); other plans as they are."""
    p = plan.routine[0]
    if plan.routine[1:] != "trsm" or p not in "sd" or symbol_name(p + "trsv") not in EXTERNAL_SYMBOLS:
        return plan
    side, uplo, trans, diag, m, n = (plan.args[i][1] for i in range(6))
    left = side == ord("L")
    if not ((left and n == 1) or (not left and m == 1)):
        return plan
    if not left:  # x op(A) = b is op(A)^T x = b
        trans = ord("T") if trans == ord("N") else ord("N")
    args = [("char", uplo), ("char", trans), ("char", diag), ("int", m if left else n), plan.args[7], plan.args[8],
            plan.args[9], ("int", 1)]
    return dataclasses.replace(plan, routine=p + "trsv", args=args)


def emit_lapack(ctx: Context, op: Operation) -> None:
    plan = plan_for(op)
    register_symbols()
    if TRSM_IN_PLACE and _trsm_in_place(ctx, op, plan):
        return
    plan = _as_trsv(plan)
    from axle.backends.cpu import blas
    blas.available()  # binds OpenBLAS's per-thread thread-count setter, called before the routine
    from axle.backends.cpu.parallel import max_threads
    workspace = sum(max(a.size, 1) * a.dtype.itemsize for a in plan.arrays if not a.per_batch)
    largest = _largest(plan)
    # tiny matrices stay on one thread: OpenBLAS's per-call setup then costs more than the
    # routine, and calls on two threads at once contend in it (4 x 4 solves ran 1.5x slower)
    parallel = PARALLEL_BATCH and plan.batch > 1 and largest >= PER_ELEMENT_MIN_SIZE \
        and workspace * max_threads() <= WORKSPACE_COPIES_MAX_BYTES
    slots = max_threads() if parallel else 1
    # a batch's elements are copied in, solved and copied out one at a time (on the thread
    # that claimed the element, while its matrices are in that core's cache)
    per_element = plan.batch > 1 and not plan.skip and largest >= PER_ELEMENT_MIN_SIZE
    ptrs, refs, batch_rank = {}, {}, {}
    for a in plan.arrays:
        # workspaces: one per thread (the batch elements run on the pool's threads)
        count = max(a.size, 1) * (plan.batch if a.per_batch else slots)
        ref = ctx.temp_ref(TensorType((count,), element_type_of(a.dtype)))
        refs[a.name] = ref
        ptr = ptrs[a.name] = ctx.resolve(ref)
        for idx, group in ((a.source, op.operands), (a.result, op.results)):
            if idx is not None:
                batch_rank[a.name] = _ty(group[idx]).rank - len(a.shape)
        if per_element and a.per_batch:
            continue
        _zero(ctx, ptr, count * a.dtype.itemsize if a.per_batch else 0)
        if a.source is not None and a.size and plan.batch:
            _copy_in(ctx, op.operands[a.source], ptr, a, batch_rank[a.name])
    unpacked, unpacked_refs = {}, {}
    for packed, _, r in plan.unpack:
        n = plan.array(packed).shape[0]
        count = max(n * n * plan.batch, 1)
        et = _ty(op.results[r]).element_type
        ref = ctx.temp_ref(TensorType((count,), et))
        unpacked[packed] = ctx.resolve(ref)
        unpacked_refs[packed] = ref
        _zero(ctx, unpacked[packed], count * np.dtype(et.dtype).itemsize)
    if not plan.skip:
        _emit_calls(ctx, plan, refs, unpacked_refs, slots, (op, batch_rank) if per_element else None)
    produced = set()
    for a in plan.arrays:
        if a.result is not None:
            produced.add(a.result)
            if a.size and plan.batch and not (per_element and a.per_batch):
                _copy_out(ctx, ptrs[a.name], op.results[a.result], a.shape, batch_rank[a.name])
    for packed, _, r in plan.unpack:
        produced.add(r)
        n = plan.array(packed).shape[0]
        _copy_out(ctx, unpacked[packed], op.results[r], (n, n), _ty(op.results[r]).rank - 2)
    for k, r in enumerate(op.results):
        if k not in produced:
            t = _ty(r)
            _zero(ctx, ctx.buffer(r), int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize)
    ctx.mark_library(f"{plan.library}.{plan.routine}")


def _emit_calls(ctx: Context, plan: Plan, refs: dict, unpacked_refs: dict, slots: int,
                copies=None) -> None:
    """The routine per batch element; the elements are claimed by the pool's threads when
    there is work enough (each thread with its own workspaces and OpenBLAS set to one
    thread in it), else called in order here. With `copies` (the op, each array's batch
    rank), each element's per-batch arrays are zeroed and copied in before its call and
    copied out after it."""
    from axle.backends.cpu.parallel import split_ranges
    name = symbol(plan)
    fn = ctx.mod.globals.get(name) or ir.Function(ctx.mod, ir.FunctionType(ir.VoidType(), [P8] * len(plan.args)), name)

    def run(lo, hi, w):
        em, b = ctx.em, ctx.b
        consts = {}
        for k, a in enumerate(plan.args):
            if a[0] == "char":
                consts[k] = _slot(ctx, I8, ir.Constant(I8, a[1]))
            elif a[0] == "int":
                consts[k] = _slot(ctx, I32, ir.Constant(I32, a[1]))
            elif a[0] == "one":
                et = element_type_of(a[1])
                consts[k] = _slot(ctx, S.reg_type(et), S.constant(et, 1))
            elif a[0] == "null":
                consts[k] = ir.Constant(P8, None)
        from axle.backends.cpu import blas
        blas.set_threads(ctx.mod, b, 1)
        bases = {n: ctx.resolve(r) for n, r in refs.items()}

        def at(name, bi, offset=0):
            a = plan.array(name)
            index = bi if a.per_batch else w  # a workspace: this thread's
            off = b.add(b.mul(index, em.const_i64(a.size * a.dtype.itemsize)),
                        em.const_i64(offset * a.dtype.itemsize))
            return b.gep(b.bitcast(bases[name], P8), [off], inbounds=True)

        def one(bi):
            if copies is not None:
                op, ranks = copies
                for a in plan.arrays:
                    if not a.per_batch:
                        continue
                    src = op.operands[a.source] if a.source is not None and a.size else None
                    if src is None or int(np.prod(_ty(src).shape[ranks[a.name]:], dtype=np.int64)) < a.size:
                        _zero(ctx, at(a.name, bi), a.size * a.dtype.itemsize)
                    if src is not None:
                        _copy_in(ctx, src, bases[a.name], a, ranks[a.name], bi)
            args = [consts[k] if k in consts else at(a[1], bi, a[2]) for k, a in enumerate(plan.args)]
            if plan.finite_check is None:
                b.call(fn, args)
            else:
                a = plan.array(plan.finite_check)
                ok = _all_finite(ctx, at(a.name, bi), a.dtype, a.size)
                with b.if_else(ok) as (then, otherwise):
                    with then:
                        b.call(fn, args)
                    with otherwise:
                        b.store(ir.Constant(I32, -4), b.bitcast(at(plan.info, bi), I32.as_pointer()))
            for packed, wi, _ in plan.unpack:
                n = plan.array(packed).shape[0]
                real = S.F32 if plan.array(packed).dtype.itemsize == 4 else S.F64
                info = b.load(b.bitcast(at(plan.info, bi), I32.as_pointer()))
                out = b.gep(b.bitcast(ctx.resolve(unpacked_refs[packed]), P8),
                            [b.mul(bi, em.const_i64(n * n * 2 * plan.array(packed).dtype.itemsize))], inbounds=True)
                with b.if_then(b.icmp_signed("==", info, ir.Constant(I32, 0))):
                    _unpack(ctx, at(packed, bi), at(wi, bi), out, n, real)
            if copies is not None:
                for a in plan.arrays:
                    if a.per_batch and a.result is not None and a.size:
                        _copy_out(ctx, bases[a.name], op.results[a.result], a.shape, ranks[a.name], bi)
        em.for_range_dynamic(lo, hi, one)
    # about n^3 operations per element (n^2 the largest per-element array)
    largest = max(_largest(plan), 1)
    work = plan.batch * largest * max(1, int(largest ** 0.5)) if slots > 1 else 0
    split_ranges(ctx, plan.batch, work, run, max_threads=slots)


# ---------------------------------------------------------------- hook into custom_call

_previous = KERNELS["stablehlo.custom_call"]


def _check(op: Operation) -> None:
    if is_lapack_target(str(op.attr("call_target_name"))):
        plan_for(op)
    elif _previous.check is not None:
        _previous.check(op)


def _emit(ctx: Context, op: Operation) -> None:
    if is_lapack_target(str(op.attr("call_target_name"))):
        emit_lapack(ctx, op)
    else:
        _previous.fn(ctx, op)


def _fused_operands(op: Operation) -> bool:
    """LAPACK calls copy their operands in through the elemental emitter (_copy_in): what
    produces them fuses into the copy. jaxlib's row-major -> column-major transpose before
    a factorization (cho_factor's of A + lambda I) was a kernel of its own, the copy-in a
    second transpose (2048 x 32 x 32: 3 ms more per call)."""
    return is_lapack_target(str(op.attr("call_target_name")))


KERNELS["stablehlo.custom_call"] = KernelDef(_emit, True, _check, _previous.in_place, _fused_operands)
