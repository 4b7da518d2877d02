"""dot_general with fewer than 8 rows: matrix-vector products, decode attention over a cache.

A dot whose lhs (or rhs) has at most MAX_ROWS free elements per batch is bound by reading
the other operand once; BLAS would pack that operand (a copy per call) and run a register
tile mostly of padding. Here the small operand gives R <= MAX_ROWS "rows", the large one N
"columns", and both are read where they are, through their strides:

* "axpy" (the large operand's free dimension contiguous, e.g. x @ W, p @ V): for a block
  of U vectors of columns, C[r, block] += A[r, k] * B[k, block] over k, with R x U vector
  accumulators held in registers, one pass over each row of B.
* "dot" (contracting dimension contiguous in both, e.g. q . K^T over a key cache): for J
  columns at once, R x J vector accumulators along k, each reduced to a scalar by a fixed
  tree of halvings, then the last k % W terms by scalar fma.

The vector width W is the host's (target.py: 16 f32 with AVX-512, 8 with AVX2), U and J as
many as fit the registers (32 or 16). Work is split across the pool (parallel.py) by
batch x blocks of BLOCK columns; a column's value is computed by the same sequence of
operations whichever block or thread computes it (every path is an fma chain over k in
order; the "dot" reduction tree does not depend on the grouping), so results do not
depend on the number of threads. The code is one internal function per (type, R, mode,
U or J, output layout) per module, called per (batch, block) with run-time strides.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from axle.codegen.emitter import _ty
from axle.ir.core import Operation

MAX_ROWS = 7  # dots with at most this many rows per batch (8 or more: BLAS / the GEMM kernels)
BLOCK = 128  # columns per unit of parallel work (fixed: results do not depend on threads)
MAX_UNROLL = 4  # vectors of columns per axpy block / columns per dot group (at most)
KB = 16  # rows of B per block of the axpy k loop
KPARTS = 8  # parts of k of an axpy dot over a large operand (fixed: results do not depend on threads)
SPLIT_K_BYTES = 8 << 20  # large operand bytes (per batch, beyond the L2 caches) from which k is cut into parts
PARTIAL_BYTES = 4 << 20  # most arena bytes for the parts' partial results
I64 = ir.IntType(64)
P8 = ir.IntType(8).as_pointer()
_TYPES = {"f32": ir.FloatType(), "f64": ir.DoubleType()}


def _run_stride(t, dims: list) -> Optional[int]:
    """The element stride of dimensions `dims` (in order, as one linear index) of row-major
    t, or None when they do not form one strided run (0 when all have extent 1)."""
    strides = [1] * t.rank
    for d in range(t.rank - 2, -1, -1):
        strides[d] = strides[d + 1] * t.shape[d + 1]
    dims = [d for d in dims if t.shape[d] != 1]
    if not dims:
        return 0
    for a, b in zip(dims, dims[1:]):
        if strides[a] != strides[b] * t.shape[b]:
            return None
    return strides[dims[-1]]


def _prod(t, dims) -> int:
    p = 1
    for d in dims:
        p *= t.shape[d]
    return p


ENABLED = [True]  # [False]: every dot takes the other paths (benchmarks compare; clear the caches)


def _enabled() -> bool:
    return ENABLED[0]


def _vector_bits() -> int:
    """The host's vector width (target.py): 512 with AVX-512, 256 with AVX2 (Zen 3), else 128."""
    from axle.backends.cpu.target import CPU
    return CPU.vector_bits


def _width(et: str) -> int:
    return max(1, _vector_bits() // (32 if et == "f32" else 64))


def _registers() -> int:
    return 32 if _vector_bits() >= 512 else 16


def skinny_plan(op: Operation, ctx=None) -> Optional[dict]:
    """The plan of a dot this kernel takes, or None: f32 / f64 throughout, static shapes,
    operands in memory (with ctx: not computed in place by a fused producer from an
    enclosing block), at most MAX_ROWS free elements on one side, every group of
    dimensions one strided run, and a layout with one of the two modes' unit strides."""
    lhs, rhs = op.operands
    if ctx is not None and not (ctx.has_buffer(lhs) and ctx.has_buffer(rhs)):
        return None
    lt, rt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    if not (lt.is_static and rt.is_static and ot.is_static):
        return None
    et = str(ot.element_type)
    if et not in _TYPES or str(lt.element_type) != et or str(rt.element_type) != et or not _enabled():
        return None
    from axle.codegen.dot import DotDims
    d = DotDims(op)
    batch, m, n, k = _prod(lt, d.lb), _prod(lt, d.lfree), _prod(rt, d.rfree), _prod(lt, d.lc)
    if min(m, n) > MAX_ROWS or batch * m * n * k == 0 or max(batch * m * k, batch * k * n, batch * m * n) >= 2 ** 40:
        return None
    s = [_run_stride(lt, d.lb), _run_stride(lt, d.lfree), _run_stride(lt, d.lc),
         _run_stride(rt, d.rb), _run_stride(rt, d.rc), _run_stride(rt, d.rfree)]
    if any(x is None for x in s):
        return None
    sa_b, sa_m, sa_k, sb_b, sb_k, sb_n = s
    if k <= 1:
        sa_k = sb_k = 1
    w = _width(et)
    sides = []  # (rows, cols, small (batch, row, k) strides, large (batch, k, col) strides, out (row, col))
    if m <= MAX_ROWS:
        sides.append((m, n, (0, sa_b, sa_m, sa_k), (1, sb_b, sb_k, sb_n), (n, 1)))
    if n <= MAX_ROWS:
        sides.append((n, m, (1, sb_b, sb_n, sb_k), (0, sa_b, sa_k, sa_m), (1, n)))
    plans = []
    for rows, cols, a, bb, out in sides:
        col_unit = bb[3] == 1 or cols == 1
        k_unit = bb[2] == 1
        if col_unit and (cols >= w or not k_unit):
            mode = "axpy"
        elif k_unit:
            mode = "dot"  # the small operand packed first when its k is strided
        else:
            continue
        plans.append(dict(et=et, mode=mode, batch=batch, rows=rows, cols=cols, k=k, a=a, b=bb, out=out,
                          c_batch=m * n, pack=mode == "dot" and a[3] != 1))
    return min(plans, key=lambda p: (p["pack"], p["rows"]), default=None)  # no packing, fewest rows


def _unroll(mode: str, rows: int) -> int:
    regs = _registers()
    if mode == "axpy":  # rows x U accumulators, U loads, one broadcast
        return max(1, min(MAX_UNROLL, (regs - 2) // (rows + 1)))
    return max(1, min(2 * MAX_UNROLL, (regs - rows) // (rows + 1)))  # rows x J accumulators, J + rows loads


def emit_skinny_dot(ctx, op: Operation, plan: dict) -> None:
    from axle.backends.cpu.parallel import split_ranges
    em = ctx.em
    et, rows, cols, k, batch = plan["et"], plan["rows"], plan["cols"], plan["k"], plan["batch"]
    a_side, sa_b, sa_r, sa_k = plan["a"]
    b_side, sb_b, sb_k, sb_c = plan["b"]
    sc_r, sc_c = plan["out"]
    esize = 4 if et == "f32" else 8
    if (plan["mode"] == "axpy" and k * cols * esize >= SPLIT_K_BYTES and k >= 2 * KPARTS * KB
            and batch * KPARTS * rows * cols * esize <= PARTIAL_BYTES):
        _emit_k_parts(ctx, op, plan, esize)
        return
    fn = _kernel(ctx.mod, et, rows, plan["mode"], sc_c == 1)
    nblocks = (cols + BLOCK - 1) // BLOCK
    c64 = em.const_i64
    token = object()
    packed = _pack_small(ctx, op, plan, token) if plan["pack"] else None
    if packed is not None:
        sa_b, sa_r, sa_k = rows * k, k, 1

    def at(v, elems):
        b = ctx.b
        base = ctx.resolve(packed) if v is None else ctx.buffer(v)
        return b.gep(b.bitcast(base, P8), [b.mul(elems, c64(esize))], inbounds=True)

    def emit(lo, hi):
        def one(u):
            b = ctx.b
            bi = b.udiv(u, c64(nblocks))
            j0 = b.mul(b.urem(u, c64(nblocks)), c64(BLOCK))
            j1 = b.add(j0, c64(BLOCK))
            j1 = b.select(b.icmp_unsigned("<", j1, c64(cols)), j1, c64(cols))
            b.call(fn, [at(None if packed is not None else op.operands[a_side], b.mul(bi, c64(sa_b))),
                        at(op.operands[b_side], b.mul(bi, c64(sb_b))),
                        at(op.results[0], b.mul(bi, c64(plan["c_batch"]))), j0, j1, c64(k),
                        c64(sa_r), c64(sa_k), c64(sb_k), c64(sb_c), c64(sc_r), c64(sc_c)])
        em.for_range_dynamic(lo, hi, one)
    split_ranges(ctx, batch * nblocks, batch * rows * cols * max(k, 1), emit)
    if packed is not None:
        ctx.release(token)
    ctx.mark_library(f"skinny.{plan['mode']}")


def _pack_small(ctx, op: Operation, plan: dict, token):
    """The small operand copied into rows contiguous in k (batch x rows x k on the arena),
    for the "dot" mode when its k is strided (W @ X with X of a few columns): a pass over
    the small operand only. Returns the temporary's reference."""
    from axle.ir.types import TensorType, element_type
    em = ctx.em
    et, rows, k, batch = plan["et"], plan["rows"], plan["k"], plan["batch"]
    a_side, sa_b, sa_r, sa_k = plan["a"]
    ref = ctx.temp_ref(TensorType((batch * rows * k,), element_type(et)), token)
    pt = _TYPES[et].as_pointer()
    c64 = em.const_i64
    src = ctx.b.bitcast(ctx.buffer(op.operands[a_side]), pt)
    dst = ctx.b.bitcast(ctx.resolve(ref), pt)

    def row(bi, r):
        def one(kk):
            b = ctx.b
            x = b.load(b.gep(src, [b.add(b.add(b.mul(bi, c64(sa_b)), b.mul(r, c64(sa_r))), b.mul(kk, c64(sa_k)))]))
            b.store(x, b.gep(dst, [b.add(b.mul(b.add(b.mul(bi, c64(rows)), r), c64(k)), kk)]))
        em.for_range_dynamic(c64(0), c64(k), one)
    em.for_range_dynamic(c64(0), c64(batch), lambda bi: em.for_range_dynamic(c64(0), c64(rows),
                                                                              lambda r: row(bi, r)))
    return ref


def _emit_k_parts(ctx, op: Operation, plan: dict, esize: int) -> None:
    """An axpy dot whose large operand does not fit the caches: k cut into KPARTS parts,
    each (batch, part) a unit of work reading its rows of B from first to last into partial
    results (on the arena), which are then added in part order. Columns split across
    threads would each read a short piece of every row (a pattern that reaches half the
    memory bandwidth or less). Fixed parts: the results do not depend on the threads."""
    from axle.backends.cpu.parallel import split_ranges
    from axle.ir.types import TensorType, element_type
    em = ctx.em
    et, rows, cols, k, batch = plan["et"], plan["rows"], plan["cols"], plan["k"], plan["batch"]
    a_side, sa_b, sa_r, sa_k = plan["a"]
    b_side, sb_b, sb_k, sb_c = plan["b"]
    sc_r, sc_c = plan["out"]
    t = _TYPES[et]
    part = rows * cols
    token = object()
    ref = ctx.temp_ref(TensorType((batch * KPARTS * part,), element_type(et)), token)
    fn = _kernel(ctx.mod, et, rows, "axpy", True)
    c64 = em.const_i64

    def at(ptr, elems):
        b = ctx.b
        return b.gep(b.bitcast(ptr, P8), [b.mul(elems, c64(esize))], inbounds=True)

    def emit(lo, hi):
        def one(u):
            b = ctx.b
            bi, p = b.udiv(u, c64(KPARTS)), b.urem(u, c64(KPARTS))
            k0 = b.udiv(b.mul(p, c64(k)), c64(KPARTS))
            k1 = b.udiv(b.mul(b.add(p, c64(1)), c64(k)), c64(KPARTS))
            b.call(fn, [at(ctx.buffer(op.operands[a_side]), b.add(b.mul(bi, c64(sa_b)), b.mul(k0, c64(sa_k)))),
                        at(ctx.buffer(op.operands[b_side]), b.add(b.mul(bi, c64(sb_b)), b.mul(k0, c64(sb_k)))),
                        at(ctx.resolve(ref), b.mul(u, c64(part))), c64(0), c64(cols), b.sub(k1, k0),
                        c64(sa_r), c64(sa_k), c64(sb_k), c64(sb_c), c64(cols), c64(1)])
        em.for_range_dynamic(lo, hi, one)
    split_ranges(ctx, batch * KPARTS, batch * rows * cols * k, emit)
    tmp = ctx.b.bitcast(ctx.resolve(ref), t.as_pointer())
    out = ctx.b.bitcast(ctx.buffer(op.results[0]), t.as_pointer())

    def combine(bi, r):
        def col(j):
            b = ctx.b
            e = b.add(b.mul(r, c64(cols)), j)
            total = None
            for p in range(KPARTS):  # in part order
                x = b.load(b.gep(tmp, [b.add(b.mul(b.add(b.mul(bi, c64(KPARTS)), c64(p)), c64(part)), e)]))
                total = x if total is None else b.fadd(total, x)
            dst = b.add(b.mul(bi, c64(plan["c_batch"])), b.add(b.mul(r, c64(sc_r)), b.mul(j, c64(sc_c))))
            b.store(total, b.gep(out, [dst]))
        em.for_range_dynamic(c64(0), c64(cols), col)
    em.for_range_dynamic(c64(0), c64(batch), lambda bi: em.for_range_dynamic(c64(0), c64(rows),
                                                                              lambda r: combine(bi, r)))
    ctx.release(token)
    ctx.mark_library("skinny.axpy")


# --- the generated functions ---------------------------------------------------------------

def _kernel(mod: ir.Module, et: str, rows: int, mode: str, unit_out: bool) -> ir.Function:
    """fn(a, b, c, j0, j1, k, sa_r, sa_k, sb_k, sb_c, sc_r, sc_c): columns [j0, j1) of C."""
    unroll = _unroll(mode, rows)
    name = f"axle_skinny_{et}_{mode}_r{rows}_u{unroll}_w{_width(et)}{'' if unit_out else '_s'}"
    fn = mod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [P8, P8, P8] + [I64] * 9), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    g = _Gen(mod, fn, _TYPES[et], _width(et), rows, unit_out)
    (g.axpy if mode == "axpy" else g.dot)(unroll)
    return fn


class _Gen:
    """Emits one kernel function with llvmlite's builder."""

    def __init__(self, mod, fn, t, w, rows, unit_out):
        self.mod, self.fn, self.t, self.w, self.rows, self.unit_out = mod, fn, t, w, rows, unit_out
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        (self.a, self.bm, self.c, self.j0, self.j1, self.k,
         self.sa_r, self.sa_k, self.sb_k, self.sb_c, self.sc_r, self.sc_c) = fn.args
        self.pt = t.as_pointer()
        self.a, self.bm, self.c = (self.b.bitcast(x, self.pt) for x in (self.a, self.bm, self.c))

    # helpers
    def vt(self, w):
        return self.t if w == 1 else ir.VectorType(self.t, w)

    def zero(self, w):
        return ir.Constant(self.vt(w), 0.0 if w == 1 else [0.0] * w)

    def fma(self, x, y, z, w):
        vt = self.vt(w)
        suffix = ("v%d" % w if w > 1 else "") + ("f32" if self.t == ir.FloatType() else "f64")
        f = self.mod.globals.get("llvm.fma." + suffix) or ir.Function(
            self.mod, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma." + suffix)
        return self.b.call(f, [x, y, z])

    def load(self, ptr, w):
        b = self.b
        if w == 1:
            x = b.load(ptr)
        else:
            x = b.load(b.bitcast(ptr, self.vt(w).as_pointer()))
        x.align = _align(self.t)
        return x

    def ptr(self, base, *terms):
        """base + sum of index terms (elements)."""
        b = self.b
        off = terms[0]
        for x in terms[1:]:
            off = b.add(off, x)
        return b.gep(base, [off])

    def splat(self, x, w):
        if w == 1:
            return x
        b = self.b
        v = b.insert_element(ir.Constant(self.vt(w), ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
        return b.shuffle_vector(v, ir.Constant(self.vt(w), ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), w), [0] * w))

    def store(self, x, row, col, w):
        """C[row, col .. col + w) = x."""
        b = self.b
        base = self.ptr(self.c, b.mul(row, self.sc_r))
        if w == 1 or self.unit_out:
            p = self.ptr(base, b.mul(col, self.sc_c))
            st = b.store(x, p if w == 1 else b.bitcast(p, self.vt(w).as_pointer()))
            st.align = _align(self.t)
            return
        for lane in range(w):
            p = self.ptr(base, b.mul(b.add(col, _c(lane)), self.sc_c))
            b.store(b.extract_element(x, ir.Constant(ir.IntType(32), lane)), p).align = _align(self.t)

    def loop(self, lo, hi, step, carried, body, last=False):
        """for i = lo; i + step <= hi; i += step: carried = body(i, carried) (with `last`:
        while i < hi, a last partial step included). Returns (i at exit, carried at exit)."""
        b = self.b
        pre = b.block
        head = b.append_basic_block("head")
        loop_b = b.append_basic_block("body")
        end = b.append_basic_block("end")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(lo, pre)
        phis = []
        for v in carried:
            p = b.phi(v.type)
            p.add_incoming(v, pre)
            phis.append(p)
        b.cbranch(b.icmp_signed("<", i, hi) if last else b.icmp_signed("<=", b.add(i, _c(step)), hi), loop_b, end)
        b.position_at_end(loop_b)
        new = body(i, phis)
        nxt = b.add(i, _c(step))
        for p, v in zip(phis, new):
            p.add_incoming(v, b.block)
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(end)
        return i, phis

    # axpy: C[r, j..] = sum_k A[r, k] * B[k, j..]
    def axpy(self, unroll: int) -> None:
        """Blocks of u vectors of columns over k. With a contiguous output, k runs in blocks
        of KB rows outside the column blocks (the accumulators stored into C and loaded
        again between k blocks: the same fma chain), so that B is read row after row (KB
        streams the prefetcher follows), not one short piece of every row per column
        block."""
        def columns(k0, k1):
            j = self.j0
            for u, w in ((unroll, self.w), (1, self.w), (1, 1)):
                j, _ = self.loop(j, self.j1, u * w, [],
                                 lambda jj, _c_, u=u, w=w: self._axpy_block(jj, u, w, k0, k1) or [])
        if self.unit_out:
            def kblock(k0, _):
                b = self.b
                k1 = b.add(k0, _c(KB))
                columns(k0, b.select(b.icmp_signed("<", k1, self.k), k1, self.k))
                return []
            self.loop(_c(0), self.k, KB, [], kblock, last=True)
        else:
            columns(_c(0), self.k)
        self.b.ret_void()

    def _axpy_block(self, j, u, w, k0, k1):
        """C[:, j .. j + u w) (+)= A[:, k0:k1] B[k0:k1, j .. j + u w) (= when k0 is 0)."""
        b = self.b
        rows = self.rows
        arows = [self.ptr(self.a, b.mul(_c(r), self.sa_r)) for r in range(rows)]
        bcol = self.ptr(self.bm, b.mul(j, self.sb_c))

        def step(kk, acc):
            bk = self.ptr(bcol, b.mul(kk, self.sb_k))
            xs = [self.load(self.ptr(bk, _c(v * w)), w) for v in range(u)]
            out = list(acc)
            for r in range(rows):
                a = self.splat(self.load(self.ptr(arows[r], b.mul(kk, self.sa_k)), 1), w)
                for v in range(u):
                    out[r * u + v] = self.fma(a, xs[v], acc[r * u + v], w)
            return out
        if self.unit_out:
            first = b.icmp_unsigned("==", k0, _c(0))
            init = [b.select(first, self.zero(w), self.load_c(_c(r), b.add(j, _c(v * w)), w))
                    for r in range(rows) for v in range(u)]
        else:
            init = [self.zero(w)] * (rows * u)
        _, acc = self.loop(k0, k1, 1, init, step)
        for r in range(rows):
            for v in range(u):
                self.store(acc[r * u + v], _c(r), b.add(j, _c(v * w)), w)

    def load_c(self, row, col, w):
        b = self.b
        return self.load(self.ptr(self.ptr(self.c, b.mul(row, self.sc_r)), col), w)

    # dot: C[r, j] = sum_k A[r, k] * B[j, k] (k contiguous in both)
    def dot(self, unroll: int) -> None:
        j = self.j0
        for g in sorted({unroll, 1}, reverse=True):
            j, _ = self.loop(j, self.j1, g, [], lambda jj, _c_, g=g: self._dot_group(jj, g) or [])
        self.b.ret_void()

    def _dot_group(self, j, g):
        b = self.b
        rows, w = self.rows, self.w
        arows = [self.ptr(self.a, b.mul(_c(r), self.sa_r)) for r in range(rows)]
        bcols = [self.ptr(self.bm, b.mul(b.add(j, _c(c)), self.sb_c)) for c in range(g)]
        init = [self.zero(w)] * (rows * g)
        kv = b.mul(b.udiv(self.k, _c(w)), _c(w))  # k rounded down to whole vectors

        def step(kk, acc):
            xs = [self.load(self.ptr(bc, kk), w) for bc in bcols]
            out = list(acc)
            for r in range(rows):
                a = self.load(self.ptr(arows[r], kk), w)
                for c in range(g):
                    out[r * g + c] = self.fma(a, xs[c], acc[r * g + c], w)
            return out
        _, acc = self.loop(_c(0), kv, w, init, step) if w > 1 else (None, init)
        sums = [self._hsum(x) for x in acc]

        def tail(kk, s):
            xs = [self.load(self.ptr(bc, kk), 1) for bc in bcols]
            out = list(s)
            for r in range(rows):
                a = self.load(self.ptr(arows[r], kk), 1)
                for c in range(g):
                    out[r * g + c] = self.fma(a, xs[c], s[r * g + c], 1)
            return out
        _, sums = self.loop(kv if w > 1 else _c(0), self.k, 1, sums, tail)
        for r in range(rows):
            for c in range(g):
                self.store(sums[r * g + c], _c(r), b.add(j, _c(c)), 1)

    def _hsum(self, x):
        """The sum of x's lanes by halving: lanes i and i + w/2 added, and so on."""
        b = self.b
        w = self.w
        if w == 1:
            return x
        i32 = ir.IntType(32)
        while w > 1:
            h = w // 2
            lo = b.shuffle_vector(x, ir.Constant(x.type, ir.Undefined), ir.Constant(ir.VectorType(i32, h), list(range(h))))
            hi = b.shuffle_vector(x, ir.Constant(x.type, ir.Undefined), ir.Constant(ir.VectorType(i32, h), list(range(h, w))))
            x = b.fadd(lo, hi)
            w = h
        return b.extract_element(x, ir.Constant(i32, 0))


def _c(v):
    return ir.Constant(I64, v)


def _align(t) -> int:
    return 4 if t == ir.FloatType() else 8
