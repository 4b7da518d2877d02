"""The functions of kernels_dot_skinny.py, emitted with llvmlite's builder: for a dot of R
(<= 7) rows, C[r, j] = sum_k A[r, k] B[k, j] over columns [j0, j1), operands and result
read and written through run-time element strides.

* axpy (B's columns contiguous): blocks of U vectors of columns, R x U accumulators in
  registers, k in blocks of KB rows outside the column blocks when C is contiguous (each
  block's fma chain starts from zero and its sum is added to C's: B is read row after
  row, and a sum is K / KB + KB additions deep instead of K); then single vectors, then
  single columns (scalar fma: the same arithmetic per lane).
* dot (A's rows and B's columns contiguous in k): J columns at once, R x J vector
  accumulators along k, each summed by a fixed tree of halvings, then the last k % W
  terms by scalar fma; then single columns by the same code.
"""
from __future__ import annotations

from llvmlite import ir

KB = 16  # rows of B per block of the axpy k loop...
# ...or fewer when B's rows are a multiple of 2 KiB apart: the L1's sets repeat every 4 KiB,
# so KB rows that far apart fall in one or two sets and evict each other before the next
# column block reads them again (1 x 1024 x 4096: 600 -> 300 us with 4 rows a block)
KB_SAME_SET, KB_TWO_SETS = 4, 8
I64 = ir.IntType(64)
P8 = ir.IntType(8).as_pointer()
TYPES = {"f32": ir.FloatType(), "f64": ir.DoubleType()}


def kernel(mod: ir.Module, et: str, rows: int, mode: str, unit_out: bool, unroll: int, width: int) -> ir.Function:
    """fn(a, b, c, j0, j1, k, sa_r, sa_k, sb_k, sb_c, sc_r, sc_c) computing columns [j0, j1)
    of C (rows r < `rows`, element strides as named; `unit_out`: sc_c is 1) with vectors of
    `width` lanes and `unroll` vectors (axpy) or columns (dot) at once. One per module."""
    name = f"axle_skinny_{et}_{mode}_r{rows}_u{unroll}_w{width}{'' if unit_out else '_s'}"
    fn = mod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [P8, P8, P8] + [I64] * 9), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    g = _Gen(mod, fn, TYPES[et], width, rows, unit_out)
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
        return b.shuffle_vector(v, ir.Constant(self.vt(w), ir.Undefined), _lanes([0] * w))

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
        b.cbranch(b.icmp_signed("<", i, hi) if last else
                  b.icmp_signed("<=", b.add(i, step if isinstance(step, ir.Value) else _c(step)), hi), loop_b, end)
        b.position_at_end(loop_b)
        new = body(i, phis)
        nxt = b.add(i, step if isinstance(step, ir.Value) else _c(step))
        for p, v in zip(phis, new):
            p.add_incoming(v, b.block)
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(end)
        return i, phis

    # axpy: C[r, j..] = sum_k A[r, k] * B[k, j..]
    def axpy(self, unroll: int) -> None:
        """Blocks of u vectors of columns over k. With a contiguous output, k runs in blocks
        of KB rows outside the column blocks (each block's sums added to C's), so that B is
        read row after row (KB streams the prefetcher follows), not one short piece of
        every row per column block."""
        def columns(k0, k1):
            j = self.j0
            for u, w in ((unroll, self.w), (1, self.w), (1, 1)):
                j, _ = self.loop(j, self.j1, u * w, [],
                                 lambda jj, _c_, u=u, w=w: self._axpy_block(jj, u, w, k0, k1) or [])
        if self.unit_out:
            b = self.b
            size = 4 if self.t == ir.FloatType() else 8
            offset = b.and_(b.mul(self.sb_k, _c(size)), _c(4095))  # of one row from the next, within a 4 KiB page
            rows_kb = b.select(b.icmp_unsigned("==", offset, _c(0)), _c(KB_SAME_SET),
                               b.select(b.icmp_unsigned("==", offset, _c(2048)), _c(KB_TWO_SETS), _c(KB)))

            def kblock(k0, _):
                k1 = b.add(k0, rows_kb)
                columns(k0, b.select(b.icmp_signed("<", k1, self.k), k1, self.k))
                return []
            self.loop(_c(0), self.k, rows_kb, [], kblock, last=True)
        else:
            columns(_c(0), self.k)
        self.b.ret_void()

    def _axpy_block(self, j, u, w, k0, k1):
        """C[:, j .. j + u w) (+)= A[:, k0:k1] B[k0:k1, j .. j + u w) (= when k0 is 0): an fma
        chain over the block's rows from zero, then added to C."""
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
        _, acc = self.loop(k0, k1, 1, [self.zero(w)] * (rows * u), step)
        if self.unit_out:  # the block's sum added to C's (a sum of KB-row sums: K / KB + KB additions deep)
            first = b.icmp_unsigned("==", k0, _c(0))
            acc = [b.select(first, x, b.fadd(self.load_c(_c(i // u), b.add(j, _c(i % u * w)), w), x))
                   for i, x in enumerate(acc)]
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
        if g > 1 and w >= g and g & (g - 1) == 0:  # the g columns of a row summed together
            sums = [x for r in range(rows) for x in self._hsums(acc[r * g:(r + 1) * g])]
        else:
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

    def _hsums(self, xs: list) -> list:
        """The lane sums of a power-of-two count of vectors, by the additions _hsum makes
        (lanes i and i + s/2 of each s-lane half, and so on: the same bits), two vectors
        merged into one at each step: [x's columns, y's columns], each column keeping half
        its lanes. About log2(g) times fewer shuffles and adds than g separate trees."""
        b = self.b
        w = self.w
        s = w  # lanes per column
        while len(xs) > 1:
            n = w // s  # columns per vector
            h = s // 2
            merged = []
            for x, y in zip(xs[0::2], xs[1::2]):
                lo = [c * s + i for c in range(n) for i in range(h)]
                lo += [w + i for i in lo]
                merged.append(b.fadd(b.shuffle_vector(x, y, _lanes(lo)), b.shuffle_vector(x, y, _lanes([i + h for i in lo]))))
            xs, s = merged, h
        x = xs[0]
        n = w // s  # columns in the one vector left
        while s > 1:
            h = s // 2
            lo = [c * s + i for c in range(n) for i in range(h)]
            undef = ir.Constant(x.type, ir.Undefined)
            x = b.fadd(b.shuffle_vector(x, undef, _lanes(lo)), b.shuffle_vector(x, undef, _lanes([i + h for i in lo])))
            s = h
        return [b.extract_element(x, ir.Constant(ir.IntType(32), c)) for c in range(n)]

    def _hsum(self, x):
        """The sum of x's lanes by halving: lanes i and i + w/2 added, and so on."""
        b = self.b
        w = self.w
        if w == 1:
            return x
        i32 = ir.IntType(32)
        while w > 1:
            h = w // 2
            lo = b.shuffle_vector(x, ir.Constant(x.type, ir.Undefined), _lanes(list(range(h))))
            hi = b.shuffle_vector(x, ir.Constant(x.type, ir.Undefined), _lanes(list(range(h, w))))
            x = b.fadd(lo, hi)
            w = h
        return b.extract_element(x, ir.Constant(i32, 0))


def _c(v):
    return ir.Constant(I64, v)


def _align(t) -> int:
    return 4 if t == ir.FloatType() else 8


def _lanes(idx: list):
    return ir.Constant(ir.VectorType(ir.IntType(32), len(idx)), idx)
