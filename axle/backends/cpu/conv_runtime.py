"""Convolution as a library routine: im2col tiles + GEMM, every shape a run-time value.

kernels_conv_general.py used to generate, per convolution of a program, the loops that
gather a tile of patches, call the GEMM and scatter the result, with every size, stride
and window tap a constant of the code: 20-45 kB of LLVM IR per convolution (four copies
for a stride-2 transposed convolution, one per output phase), which this LLVM (with
assertions) compiles at 5-7 ms of CPU per kB, while XLA's compile only emits a call into
its runtime library. These routines are the same algorithm with the constants moved into
a descriptor (an array of i64 the program holds as a constant), compiled once per machine
with the low-precision GEMM kernels (lowp_runtime.py, same object, same disk cache and
linking), so that a program's convolution is a few calls.

Descriptor of one phase of one convolution (FIELDS, all i64; spatial dimensions padded to
three with one-tap, size-one dimensions):

* the GEMM: `rows` (the output's non-feature positions of the phase), `kdim` (window taps
  x input features of a group), `cg` (output features of a group), `groups`, `tile` (rows
  gathered at a time), `n_tiles`;
* rows: four row dimensions (outermost first, unused ones of extent 1) with, per
  dimension d, the coefficients of its index in the input offset of the row's batch
  (`rb<d>`), in the first input position per spatial dimension (`qb<d>_<i>`) and in the
  output offset (`ob<d>`); constants `q0_<i>`, `obase`, and per group `rb_g`, `ob_g`;
* window tap j of spatial dimension i reads input position `qb + j qs_<i>`, valid when
  non-negative, divisible by `hole_<i>` (lhs dilation) and, divided, below `in_<i>`
  (offset `sp_<i>` per position); input feature c at `c s_f`;
* patches: row-major [T, K] (column `j0 ks_0 + j1 ks_1 + j2 ks_2 + c ksc`) or, when
  `transposed`, [K, T] (for filter gradients, whose rows step through the input's
  smallest stride);
* output: written by the GEMM in place when `direct_out` (row r at `r ldo`), else through
  a scratch tile scattered at the row's offset + feature `j os_f`;
* the packed weights of group g at `w_off + g kdim cg`; `gemm` 0: BLAS ?gemm through the
  pointer the program passes, 1: axle's f32 kernel (hosts with AVX-512);
* `ginner` (grouped convolutions, row-major patches, output in place): a unit is a tile of
  rows for every group, the window offsets computed once per row for all groups, each
  group's patch `gstep` apart in rows of `ldp` (else ldp = kdim, gstep = 0);
* per-thread scratch: `slot_bytes` per thread, patches at 0, the output tile at `off_tmp`,
  the rows' offsets at `off_info` (INFO i64 per row), a transposed fill's input offsets of
  one tap at `off_toff` (one i64 per row), the rows' tap offsets per spatial dimension at
  `off_taps` (taps_0 + taps_1 + taps_2 i64 per row of a transposed tile, else per row).

Weight packing (`pack_w`, once per call): W[g, col, j] = rhs at `wbase + j_i wc_<i> + c
w_si + (g cg + j) w_so` (reversed windows have negative coefficients).
"""
from __future__ import annotations

from llvmlite import ir

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
P8 = I8.as_pointer()
ROW_DIMS = 4
INFO = 5  # i64 per row of a tile: input batch offset, first input position per spatial dimension, output offset

FIELDS = (["rows", "kdim", "cg", "groups", "tile", "n_tiles", "cin", "s_f", "ksc", "transposed", "direct_out",
           "ldo", "os_f", "w_off", "gemm", "slot_bytes", "off_tmp", "off_info", "off_toff", "off_taps", "ginner", "ldp", "gstep", "rb_g", "ob_g", "obase"]
          + [f"{f}_{i}" for i in range(3) for f in ("q0", "qs", "hole", "in", "sp", "taps", "ks")]
          + [f"{f}{d}" for d in range(ROW_DIMS) for f in ("re", "rb", "ob")]
          + [f"qb{d}_{i}" for d in range(ROW_DIMS) for i in range(3)]
          + ["wbase", "w_si", "w_so"] + [f"wc_{i}" for i in range(3)])
INDEX = {f: i for i, f in enumerate(FIELDS)}
assert len(INDEX) == len(FIELDS), "conv_runtime: two descriptor fields of one name"
TYPES = {"f32": ir.FloatType(), "f64": ir.DoubleType()}


# functions whose copy loops must stay loops: LLVM would make a 64-float copy per window tap
# a call of libc's memcpy (with its overhead per call), where the loop is inline vector moves
NO_BUILTINS = tuple(f"axle_lowp_conv_tiles_{t}" for t in TYPES)


def routine_names() -> list:
    return [f"axle_lowp_conv_{f}_{t}" for t in TYPES for f in ("tiles", "pack_w")] + dconv_names((8, 16))


def _c(v):
    return ir.Constant(I64, v)


class _Fn:
    """A function being built: a builder, descriptor loads, loops."""

    def __init__(self, fn, desc, index=None):
        self.fn = fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.desc = desc
        self.index = INDEX if index is None else index
        self._cache: dict = {}

    def d(self, name):
        """A descriptor field (loaded once, in the entry block)."""
        if name not in self._cache:
            b = self.b
            blk = b.block
            b.position_at_start(self.fn.entry_basic_block)
            v = b.load(b.gep(self.desc, [_c(self.index[name])]), name=name)
            self._cache[name] = v
            b.position_at_end(blk)
        return self._cache[name]

    def loop(self, lo, hi, body, name="i"):
        """for i in [lo, hi): body(i)."""
        from axle.codegen.emitter import CountedLoop
        with CountedLoop(self.b, lo, hi, name) as i:
            body(i)

    def taps(self, body, parts=(), name="j"):
        """body(js, sums) over a phase's window taps (three spatial dimensions); sums[k]: the
        sum over the dimensions i of parts[k](i, j_i), added level by level (hoisted out of
        the inner taps)."""
        js: list = []

        def level(i, acc):
            if i == 3:
                body(list(js), acc)
                return

            def step(j):
                nxt = [self.b.add(a, part(i, j)) for a, part in zip(acc, parts)]
                js.append(j)
                level(i + 1, nxt)
                js.pop()
            self.loop(_c(0), self.d(f"taps_{i}"), step, f"{name}{i}")
        level(0, [_c(0)] * len(parts))


def _tiles(mod, tname: str, panels) -> None:
    """tiles(desc, in, w, out, scratch, gemm, lo, hi, tid): the tiles [lo, hi) of one phase
    (tile t: group t / n_tiles, rows from (t % n_tiles) tile), in thread tid's scratch."""
    et = TYPES[tname]
    ep = et.as_pointer()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), P8, P8, P8, P8, P8, I64, I64, I64]),
                     f"axle_lowp_conv_tiles_{tname}")
    desc, src, w, out, scratch, gemm, lo, hi, tid = fn.args
    for a in (src, w, scratch):  # the input and the weights are only read, the scratch is this call's
        a.add_attribute("noalias")
    F = _Fn(fn, desc)
    b = F.b
    src, w, out = b.bitcast(src, ep), b.bitcast(w, ep), b.bitcast(out, ep)
    slot = b.gep(scratch, [b.mul(tid, F.d("slot_bytes"))])
    patches = b.bitcast(slot, ep)
    tmp = b.bitcast(b.gep(slot, [F.d("off_tmp")]), ep)
    info = b.bitcast(b.gep(slot, [F.d("off_info")]), I64.as_pointer())
    toff = b.bitcast(b.gep(slot, [F.d("off_toff")]), I64.as_pointer())
    tapo = b.bitcast(b.gep(slot, [F.d("off_taps")]), I64.as_pointer())
    idx = [b.alloca(I64) for _ in range(ROW_DIMS)]
    last = [[b.alloca(I64) for _ in range(2 if i == 0 else 1)] for i in range(3)]  # tap_offsets' keys
    zero = ir.Constant(et, 0)

    def at(ptr, off):
        return F.b.gep(ptr, [off])

    def row_info(row0, nrows):
        """info[ri] for the rows of the tile: an odometer over the four row dimensions."""
        b = F.b
        r = row0
        for d in reversed(range(ROW_DIMS)):
            b.store(b.urem(r, F.d(f"re{d}")), idx[d])
            r = b.udiv(r, F.d(f"re{d}"))

        def one(ri):
            b = F.b
            vals = [b.load(idx[d]) for d in range(ROW_DIMS)]
            rb = _c(0)
            ob = F.d("obase")
            qb = [F.d(f"q0_{i}") for i in range(3)]
            for d, v in enumerate(vals):
                rb = b.add(rb, b.mul(v, F.d(f"rb{d}")))
                ob = b.add(ob, b.mul(v, F.d(f"ob{d}")))
                qb = [b.add(q, b.mul(v, F.d(f"qb{d}_{i}"))) for i, q in enumerate(qb)]
            for k, v in enumerate([rb] + qb + [ob]):
                b.store(v, at(info, b.add(b.mul(ri, _c(INFO)), _c(k))))
            # advance the odometer (a carry out of the outermost dimension ends the tile)
            carry = ir.Constant(I1, 1)
            for d in reversed(range(ROW_DIMS)):
                nv = b.add(vals[d], b.zext(carry, I64))
                wrap = b.and_(carry, b.icmp_signed(">=", nv, F.d(f"re{d}")))
                b.store(b.select(wrap, _c(0), nv), idx[d])
                carry = wrap
        F.loop(_c(0), nrows, one, "ri")

    def position(i, q):
        """(valid, input position) of first-position q in spatial dimension i."""
        b = F.b
        nonneg = b.icmp_signed(">=", q, _c(0))
        qq = b.select(nonneg, q, _c(0))
        hole = F.d(f"hole_{i}")
        # lhs dilation: divide (a branch, not a select: a division costs 20-40 cycles and
        # most convolutions have no holes)
        pre = b.block
        with b.if_then(b.icmp_signed("!=", hole, _c(1))):
            dil = b.block
            hok = b.icmp_signed("==", b.urem(qq, hole), _c(0))
            hpos = b.udiv(qq, hole)
        ok, pos = b.phi(I1), b.phi(I64)
        ok.add_incoming(hok, dil)
        ok.add_incoming(ir.Constant(I1, 1), pre)
        pos.add_incoming(hpos, dil)
        pos.add_incoming(qq, pre)
        ok = b.and_(b.and_(ok, nonneg), b.icmp_signed("<", pos, F.d(f"in_{i}")))
        return ok, b.select(ok, pos, _c(0))

    def copy_run(ok, s, dst):
        """cin features of one tap: s[c s_f] -> dst[c ksc] where ok, else zeros (a loop of
        selects, not memcpy: a call per tap cost more than the copy for few features)."""
        b = F.b
        with b.if_else(b.icmp_signed("==", F.d("cin"), _c(1))) as (single, several):
            with single:  # one feature per tap (depthwise convolutions)
                b.store(b.select(ok, b.load(s), zero), dst)
            with several:
                copy_features(ok, s, dst)

    def copy_features(ok, s, dst):
        """Branches, not selects, around plain loops: LLVM vectorizes (or calls memcpy /
        memset for) the unit-stride ones; a select on the address would make a gather."""
        b = F.b
        unit = b.and_(b.icmp_signed("==", F.d("ksc"), _c(1)), b.icmp_signed("==", F.d("s_f"), _c(1)))
        with b.if_else(ok) as (inside, padding):
            with inside:
                with F.b.if_else(unit) as (contiguous, strided):
                    with contiguous:
                        F.loop(_c(0), F.d("cin"), lambda c: F.b.store(F.b.load(at(s, c)), at(dst, c)), "c")
                    with strided:
                        F.loop(_c(0), F.d("cin"), lambda c: F.b.store(F.b.load(at(s, F.b.mul(c, F.d("s_f")))),
                                                                      at(dst, F.b.mul(c, F.d("ksc")))), "c")
            with padding:
                with F.b.if_else(b.icmp_signed("==", F.d("ksc"), _c(1))) as (contiguous, strided):
                    with contiguous:
                        F.loop(_c(0), F.d("cin"), lambda c: F.b.store(zero, at(dst, c)), "z")
                    with strided:
                        F.loop(_c(0), F.d("cin"), lambda c: F.b.store(zero, at(dst, F.b.mul(c, F.d("ksc")))), "z")

    NEG = _c(-(1 << 60))  # a tap offset outside the input (a sum of three stays negative)

    def tap_offsets(ri, stride, at_ri, last=None):
        """Per spatial dimension i and tap j of tile row ri, into taps[(B_i + j) stride +
        at_ri] (B_i: the taps of the dimensions before i): the input offset of that part of
        the position (dimension 0's with the row's batch offset), or NEG where it falls
        outside the input. A tap's offset is then the sum of its three parts. `last`: the
        keys (first position, and the batch offset for dimension 0) the entries were made
        for, per dimension: a dimension whose key did not change since the previous row is
        left as it is (the rows of a tile step through the innermost dimension)."""
        b = F.b
        base = at(info, b.mul(ri, _c(INFO)))
        first = _c(0)
        for i in range(3):
            def one(j, i=i, first=first):
                b = F.b
                q = b.add(b.load(at(base, _c(1 + i))), b.mul(j, F.d(f"qs_{i}")))
                ok, pos = position(i, q)
                off = b.mul(pos, F.d(f"sp_{i}"))
                if i == 0:
                    off = b.add(off, b.load(base))
                b.store(b.select(ok, off, NEG), at(tapo, b.add(b.mul(b.add(first, j), stride), at_ri)))
            if last is None:
                F.loop(_c(0), F.d(f"taps_{i}"), one, f"o{i}")
            else:
                b = F.b
                keys = [b.load(at(base, _c(1 + i)))] + ([b.load(base)] if i == 0 else [])
                changed = ir.Constant(I1, 0)
                for key, slot in zip(keys, last[i]):
                    changed = b.or_(changed, b.icmp_signed("!=", key, b.load(slot)))
                with b.if_then(changed):
                    F.loop(_c(0), F.d(f"taps_{i}"), one, f"o{i}")
                    for key, slot in zip(keys, last[i]):
                        F.b.store(key, slot)
            first = F.b.add(first, F.d(f"taps_{i}"))

    def col_of(js):
        b = F.b
        col = _c(0)
        for i in range(3):
            col = b.add(col, b.mul(js[i], F.d(f"ks_{i}")))
        return col

    def dim_first(i):
        b = F.b
        return [_c(0), F.d("taps_0"), b.add(F.d("taps_0"), F.d("taps_1"))][i]

    def fill(nrows, g_lo, g_hi):
        """The tile's patches of groups [g_lo, g_hi) (several only with ginner: side by side
        in a row, gstep apart; rows ldp apart)."""
        b = F.b
        grb = b.mul(g_lo, F.d("rb_g"))
        with b.if_else(b.icmp_signed("!=", F.d("transposed"), _c(0))) as (tr, rm):
            with tr:  # [K, T]: every row's tap parts, then per tap the rows' offsets, per feature the rows
                F.loop(_c(0), nrows, lambda ri: tap_offsets(ri, F.d("tile"), ri), "tp")

                def tcol(js, _acc):
                    def offsets(ri):
                        b = F.b
                        t = _c(0)
                        for i in range(3):
                            t = b.add(t, b.load(at(tapo, b.add(b.mul(b.add(dim_first(i), js[i]), F.d("tile")), ri))))
                        b.store(b.select(b.icmp_signed(">=", t, _c(0)), b.add(t, grb), _c(-1)), at(toff, ri))
                    F.loop(_c(0), nrows, offsets, "to")

                    def feat(c):
                        b = F.b
                        col = b.add(col_of(js), b.mul(c, F.d("ksc")))
                        dst = at(patches, b.mul(col, F.d("tile")))
                        coff = b.mul(c, F.d("s_f"))

                        def row(ri):
                            b = F.b
                            t = b.load(at(toff, ri))
                            ok = b.icmp_signed(">=", t, _c(0))
                            x = b.load(at(src, b.select(ok, b.add(t, coff), _c(0))))
                            b.store(b.select(ok, x, zero), at(dst, ri))
                        F.loop(_c(0), nrows, row, "tr")
                    F.loop(_c(0), F.d("cin"), feat, "tc")
                F.taps(tcol)
            with rm:  # [T, K]: for each row, its tap parts, then its window
                for slots in last:  # (nothing made yet in this tile)
                    for slot in slots:
                        F.b.store(NEG, slot)

                def row(ri):
                    tap_offsets(ri, _c(1), _c(0), last)

                    row_dst = at(patches, F.b.mul(ri, F.d("ldp")))

                    def tap(js, sums):
                        b = F.b
                        t, col = sums
                        ok = b.icmp_signed(">=", t, _c(0))

                        def group(g):
                            b = F.b
                            gs = b.select(ok, b.add(t, b.mul(g, F.d("rb_g"))), _c(0))
                            copy_run(ok, at(src, gs), at(row_dst, b.add(col, b.mul(b.sub(g, g_lo), F.d("gstep")))))
                        F.loop(g_lo, g_hi, group, "g")
                    F.taps(tap, parts=(lambda i, j: F.b.load(at(tapo, F.b.add(dim_first(i), j))),
                                     lambda i, j: F.b.mul(j, F.d(f"ks_{i}"))))
                F.loop(_c(0), nrows, row, "rr")

    def scatter(nrows, g, have):
        """Group g's tile rows (zeros when `have` is false: a phase no tap reaches) into out."""
        def row(ri):
            b = F.b
            ob = b.add(b.load(at(info, b.add(b.mul(ri, _c(INFO)), _c(4)))), b.mul(g, F.d("ob_g")))

            def col(j):
                b = F.b
                x = b.load(at(tmp, b.select(have, b.add(b.mul(ri, F.d("cg")), j), _c(0))))
                b.store(b.select(have, x, zero), at(out, b.add(ob, b.mul(j, F.d("os_f")))))
            F.loop(_c(0), F.d("cg"), col, "sj")
        F.loop(_c(0), nrows, row, "sr")

    i32p = I32.as_pointer()
    gty = ir.FunctionType(ir.VoidType(), [P8, P8, i32p, i32p, i32p, P8, P8, i32p, P8, i32p, P8, P8, i32p])

    def slot32(v):
        s = _entry_alloca(F, I32)
        F.b.store(F.b.trunc(v, I32), s)
        return s

    def call_gemm(nrows, pp, wp, optr, ldc):
        b = F.b
        with b.if_else(b.icmp_signed("==", F.d("gemm"), _c(0))) as (blas, own):
            with blas:  # column-major view: out^T[cg, rows] = W^T[cg, K] @ patches^T
                b = F.b
                ch = [_entry_alloca(F, I8) for _ in range(2)]
                b.store(ir.Constant(I8, ord("N")), ch[0])
                b.store(b.select(b.icmp_signed("!=", F.d("transposed"), _c(0)), ir.Constant(I8, ord("T")),
                                 ir.Constant(I8, ord("N"))), ch[1])
                one, nought = _entry_alloca(F, et), _entry_alloca(F, et)
                b.store(ir.Constant(et, 1), one)
                b.store(ir.Constant(et, 0), nought)
                ldb = b.select(b.icmp_signed("!=", F.d("transposed"), _c(0)), F.d("tile"), F.d("ldp"))
                b.call(b.bitcast(gemm, gty.as_pointer()),
                       [ch[0], ch[1], slot32(F.d("cg")), slot32(nrows), slot32(F.d("kdim")), b.bitcast(one, P8),
                        b.bitcast(wp, P8), slot32(F.d("cg")), b.bitcast(pp, P8), slot32(ldb),
                        b.bitcast(nought, P8), b.bitcast(optr, P8), slot32(ldc)])
            with own:
                if panels is not None:  # axle's f32 kernel: rows of patches with lda / ldk
                    b = F.b
                    t = b.icmp_signed("!=", F.d("transposed"), _c(0))
                    lda = b.select(t, _c(1), F.d("ldp"))
                    ldk = b.select(t, F.d("tile"), _c(1))
                    nr = 32
                    npan = b.udiv(b.add(F.d("cg"), _c(nr - 1)), _c(nr))
                    b.call(panels, [b.bitcast(pp, P8), b.bitcast(wp, P8), F.d("cg"), _c(1), b.bitcast(optr, P8),
                                    ldc, nrows, F.d("cg"), F.d("kdim"), _c(0), npan, _c(0), lda, _c(0),
                                    _c(2 ** 40), ldk])

    def tile(t):
        """Unit t: group t / n_tiles, rows from (t % n_tiles) tile; with ginner, rows from
        t tile for every group."""
        b = F.b
        inner = b.icmp_signed("!=", F.d("ginner"), _c(0))
        g_lo = b.select(inner, _c(0), b.udiv(t, F.d("n_tiles")))
        g_hi = b.select(inner, F.d("groups"), b.add(g_lo, _c(1)))
        row0 = b.mul(b.select(inner, t, b.urem(t, F.d("n_tiles"))), F.d("tile"))
        left = b.sub(F.d("rows"), row0)
        nrows = b.select(b.icmp_signed("<", left, F.d("tile")), left, F.d("tile"))
        row_info(row0, nrows)
        have = b.icmp_signed(">", F.d("kdim"), _c(0))
        with b.if_else(have) as (work, empty):
            with work:
                fill(nrows, g_lo, g_hi)

                def group(g):
                    b = F.b
                    pp = at(patches, b.mul(b.sub(g, g_lo), F.d("gstep")))
                    wp = at(w, b.add(F.d("w_off"), b.mul(g, b.mul(F.d("kdim"), F.d("cg")))))
                    direct = b.icmp_signed("!=", F.d("direct_out"), _c(0))
                    with b.if_else(direct) as (inplace, through):
                        with inplace:
                            b = F.b
                            optr = at(out, b.add(b.mul(row0, F.d("ldo")), b.mul(g, F.d("cg"))))
                            call_gemm(nrows, pp, wp, optr, F.d("ldo"))
                        with through:
                            call_gemm(nrows, pp, wp, tmp, F.d("cg"))
                            scatter(nrows, g, ir.Constant(I1, 1))
                F.loop(g_lo, g_hi, group, "gg")
            with empty:
                F.loop(g_lo, g_hi, lambda g: scatter(nrows, g, ir.Constant(I1, 0)), "ge")
    F.loop(lo, hi, tile, "t")
    F.b.ret_void()


def _entry_alloca(F: _Fn, t):
    from axle.codegen.emitter import entry_alloca
    return entry_alloca(F.b, t)


def _pack_w(mod, tname: str) -> None:
    """pack_w(desc, rhs, wp): the phase's weights, W[g, col, j] (module docstring)."""
    et = TYPES[tname]
    ep = et.as_pointer()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), P8, P8]), f"axle_lowp_conv_pack_w_{tname}")
    desc, rhs, wp = fn.args
    F = _Fn(fn, desc)
    b = F.b
    rhs, wp = b.bitcast(rhs, ep), b.bitcast(wp, ep)

    def group(g):
        def tap(js):
            def feat(c):
                def outf(j):
                    b = F.b
                    s = F.d("wbase")
                    col = b.mul(c, F.d("ksc"))
                    for i in range(3):
                        s = b.add(s, b.mul(js[i], F.d(f"wc_{i}")))
                        col = b.add(col, b.mul(js[i], F.d(f"ks_{i}")))
                    s = b.add(s, b.add(b.mul(c, F.d("w_si")), b.mul(b.add(b.mul(g, F.d("cg")), j), F.d("w_so"))))
                    d = b.add(F.d("w_off"), b.add(b.mul(b.add(b.mul(g, F.d("kdim")), col), F.d("cg")), j))
                    b.store(b.load(b.gep(rhs, [s])), b.gep(wp, [d]))
                F.loop(_c(0), F.d("cg"), outf, "pj")
            F.loop(_c(0), F.d("cin"), feat, "pc")
        F.taps(lambda js, _sums: tap(js), name="pt")
    F.loop(_c(0), F.d("groups"), group, "pg")
    F.b.ret_void()


def build(mod, panels_f32) -> None:
    """Add the routines to the runtime module (panels_f32: axle's f32 GEMM kernel function
    when this host has it, else None)."""
    for tname in TYPES:
        _tiles(mod, tname, panels_f32 if tname == "f32" else None)
        _pack_w(mod, tname)
    for cb, pmax in dconv_widths().items():
        _dconv_row(mod, cb, pmax)


def dconv_widths() -> dict:
    """{cb: the widest register block} of the direct rows, as kernels_conv.DirectConv picks
    them on this host."""
    return {cb: max(1, ACCUMULATORS * vector_floats() // cb) for cb in (8, 16)}


# ----------------------------------------------------------------- direct convolution rows
# kernels_conv.DirectConv's row of a plain f32 2-D NHWC convolution (few input features per
# window: no patches, the input read in place, px output pixels x cb features in registers),
# with the sizes in a descriptor. One block function per register-block width P (the
# accumulators must be known to the code generator), checked (window columns may fall in
# padding) and unchecked; the row routine picks them at run time.
DIRECT_MAX_WINDOW = 512  # the direct kernel takes windows of up to this many height x width x features
# vector registers of output kept per register block: with 8 (AVX2), the multiply-adds of
# a block waited on each other (4 cycles of latency, 2 per cycle: at least 8 in flight) and
# the 3x3x32->64 convolution of the CNN ran at 35-80 GFLOP/s on one core; with 12 at 91-93
# (BLAS on patches: 64)
ACCUMULATORS = 12


def vector_floats() -> int:
    """f32 lanes of the host's vector registers as LLVM uses them here (llvm_env: 512-bit
    vectors on AVX-512 hosts)."""
    from axle.backends.cpu.llvm_env import host_cpu
    return 16 if "+avx512f" in host_cpu()[1] else 8


# ib: input features per window column that a block of output features reads (c; a grouped
# convolution's block: its own cb features from fb cb, block-diagonal weights)
DFIELDS = ["h", "w", "c", "kh", "kw", "f", "ow", "sy", "sx", "dy", "dx", "pt", "pl", "packed", "window", "px",
           "ib", "grouped"]
DINDEX = {f: i for i, f in enumerate(DFIELDS)}


def dconv_names(cbs) -> list:
    return [f"axle_lowp_dconv_row_f32x{cb}" for cb in cbs]


def _dconv_block(mod, cb: int, P: int, checked: bool):
    f32 = ir.FloatType()
    fp = f32.as_pointer()
    vt = ir.VectorType(f32, cb)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), fp, fp, fp] + [I64] * 4),
                     f"axle_lowp_dconv_blk{cb}_{P}{'c' if checked else 'u'}")
    fn.linkage = "internal"
    desc, src, wts, out_row, n, oy, ox0, fb = fn.args
    F = _Fn(fn, desc, DINDEX)
    b = F.b
    accs = [_entry_alloca(F, vt) for _ in range(P)]
    for a in accs:
        b.store(ir.Constant(vt, [0.0] * cb), a)
    name = f"llvm.fmuladd.v{cb}f32"
    fma = mod.globals.get(name) or ir.Function(mod, ir.FunctionType(vt, [vt, vt, vt]), name)
    lanes0 = ir.Constant(ir.VectorType(I32, cb), [0] * cb)
    c = F.d("c")
    zeros = None
    if checked:  # DIRECT_MAX_WINDOW zeros: a padding pixel's features (c <= the window)
        zt = ir.ArrayType(f32, DIRECT_MAX_WINDOW)
        zg = mod.globals.get("axle_lowp_dconv_zeros")
        if zg is None:
            zg = ir.GlobalVariable(mod, zt, "axle_lowp_dconv_zeros")
            zg.global_constant, zg.linkage, zg.align = True, "internal", 64
            zg.initializer = ir.Constant(zt, None)
        zeros = b.bitcast(zg, fp)
    packed = b.icmp_signed("!=", F.d("packed"), _c(0))
    wstep = b.select(packed, _c(cb), F.d("f"))
    ib = F.d("ib")
    grouped = b.icmp_signed("!=", F.d("grouped"), _c(0))
    coff = b.select(grouped, b.mul(fb, _c(cb)), _c(0))  # the block's first input feature

    def window_row(ky):
        b = F.b
        iy = b.sub(b.add(b.mul(oy, F.d("sy")), b.mul(ky, F.d("dy"))), F.d("pt"))
        inside = b.and_(b.icmp_signed(">=", iy, _c(0)), b.icmp_signed("<", iy, F.d("h")))
        with b.if_then(inside):
            b = F.b
            row = b.mul(b.add(b.mul(n, F.d("h")), iy), F.d("w"))

            def pointers(kx):
                """Each pixel's input features at window column kx (zeros: in padding)."""
                b = F.b
                ix0 = b.sub(b.add(b.mul(ox0, F.d("sx")), b.mul(kx, F.d("dx"))), F.d("pl"))
                ptrs = []
                for p in range(P):
                    ix = b.add(ix0, b.mul(_c(p), F.d("sx")))
                    ptr = b.gep(src, [b.add(b.mul(b.add(row, ix), c), coff)])
                    if checked:  # a pixel whose window column is in padding reads zeros
                        ok = b.and_(b.icmp_signed(">=", ix, _c(0)), b.icmp_signed("<", ix, F.d("w")))
                        ptr = b.select(ok, b.gep(src, [b.add(b.mul(b.add(row, b.select(ok, ix, _c(0))), c), coff)]),
                                       zeros)
                    ptrs.append(ptr)
                return ptrs

            def run(kx, count):
                """count products per pixel from window column kx: its features, or (count
                kw c) the whole window row, contiguous in the input and in the weights."""
                b = F.b
                ptrs = pointers(kx)
                wrow = b.mul(b.add(b.mul(ky, F.d("kw")), kx), ib)  # the weights' row (ky, kx, 0)
                wbase = b.gep(wts, [b.select(packed, b.mul(b.add(b.mul(fb, F.d("window")), wrow), _c(cb)),
                                             b.add(b.mul(wrow, F.d("f")), b.mul(fb, _c(cb))))])

                def channel(ci):
                    b = F.b
                    wv = b.load(b.bitcast(b.gep(wbase, [b.mul(ci, wstep)]), vt.as_pointer()), align=4)
                    for p in range(P):
                        x = b.load(b.gep(ptrs[p], [ci]))
                        xv = b.shuffle_vector(b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(I32, 0)),
                                              ir.Constant(vt, ir.Undefined), lanes0)
                        b.store(b.call(fma, [xv, wv, b.load(accs[p])]), accs[p])
                F.loop(_c(0), count, channel, "ci")
            if checked:
                F.loop(_c(0), F.d("kw"), lambda kx: run(kx, ib), "kx")
            else:  # undilated: the window row's columns follow each other, one loop over them
                whole = b.and_(b.icmp_signed("==", F.d("dx"), _c(1)), b.not_(grouped))
                with b.if_else(whole) as (dense, dilated):
                    with dense:
                        run(_c(0), F.b.mul(F.d("kw"), c))
                    with dilated:
                        F.loop(_c(0), F.d("kw"), lambda kx: run(kx, ib), "kx")
    F.loop(_c(0), F.d("kh"), window_row, "ky")
    b = F.b
    for p in range(P):
        at = b.add(b.mul(b.add(ox0, _c(p)), F.d("f")), b.mul(fb, _c(cb)))
        b.store(b.load(accs[p]), b.bitcast(b.gep(out_row, [at]), vt.as_pointer()), align=4)
    b.ret_void()
    return fn


def _dconv_row(mod, cb: int, pmax: int) -> None:
    """row(desc, src, wts, out_row, n, oy): output row (n, oy), ow x f floats, in blocks of
    px pixels (the remainder in one block of ow % px), per block of cb features."""
    blocks = {(P, ch): _dconv_block(mod, cb, P, ch) for P in range(1, pmax + 1) for ch in (False, True)}
    f32p = ir.FloatType().as_pointer()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), P8, P8, P8, I64, I64]),
                     f"axle_lowp_dconv_row_f32x{cb}")
    desc, src, wts, out_row, n, oy = fn.args
    F = _Fn(fn, desc, DINDEX)
    b = F.b
    src, wts, out_row = (b.bitcast(v, f32p) for v in (src, wts, out_row))
    px = F.d("px")

    def call(width, checked, ox0, fb):
        """The block of `width` (an i64) pixels: a switch over the compiled widths."""
        b = F.b
        done = b.append_basic_block("blk.done")
        sw = b.switch(width, done)
        for P in range(1, pmax + 1):
            bb = b.append_basic_block(f"blk.{P}")
            sw.add_case(_c(P), bb)
            b.position_at_end(bb)
            if checked is True:
                b.call(blocks[(P, True)], [desc, src, wts, out_row, n, oy, ox0, fb])
            else:
                with b.if_else(checked) as (checked_, unchecked_):
                    with checked_:
                        b.call(blocks[(P, True)], [desc, src, wts, out_row, n, oy, ox0, fb])
                    with unchecked_:
                        b.call(blocks[(P, False)], [desc, src, wts, out_row, n, oy, ox0, fb])
            b.branch(done)
        b.position_at_end(done)

    full = b.udiv(F.d("ow"), px)
    rem = b.urem(F.d("ow"), px)

    def features(fb):
        def block(j):
            b = F.b
            ox0 = b.mul(j, px)
            first = b.sub(b.mul(ox0, F.d("sx")), F.d("pl"))
            last = b.add(first, b.add(b.mul(b.sub(px, _c(1)), F.d("sx")), b.mul(b.sub(F.d("kw"), _c(1)), F.d("dx"))))
            inside = b.and_(b.icmp_signed(">=", first, _c(0)), b.icmp_signed("<", last, F.d("w")))
            call(px, b.not_(inside), ox0, fb)  # (checked unless every window column is inside)
        F.loop(_c(0), full, block, "j")
        b = F.b
        with b.if_then(b.icmp_signed(">", rem, _c(0))):
            call(rem, True, F.b.mul(full, px), fb)
    F.loop(_c(0), b.udiv(F.d("f"), _c(cb)), features, "fb")
    F.b.ret_void()
