"""Native GEMM kernels for low-precision dots, built once per process from LLVM IR.

Kinds picked by the host's features (llvmlite's get_host_cpu_features); "f32" is in docs/gemm-f32.md:

* "vnni": int8 x int8 -> int32 with AVX512-VNNI `vpdpbusd` (16 lanes, each the sum of
  four u8 x s8 products added to an i32). A signed lhs is made unsigned by flipping its
  sign bit (a + 128) and the sums corrected by -128 * (column sums of the rhs), which are
  computed with the same instruction (lhs = all ones) while packing.
* "bf16": bf16 x bf16 -> f32 with AVX512-BF16 `vdpbf16ps` (16 lanes, each the sum of
  two bf16 products added to an f32).
* "pmaddwd": int8 x int8 -> int32 on AVX2 hosts without VNNI (AMD Zen 3, Intel before Ice
  Lake): `vpmaddwd` on 8 i32 lanes, each the sum of two i16 x i16 products. Both operands
  are widened to i16 while packing (the lhs sign- or zero-extended, so uint8 needs no
  correction); a pair's sum (at most 2 x 255 x 128) is exact in i32. Its register tile is
  6 x 16 (GEOMETRY), the AVX-512 kinds' 8 x 32.
* "pmaddwd16": int16 x int16 -> int32 on every AVX2 host, `vpmaddwd` on the operands as
  they are. Exact modulo 2**32, as the dot's wrapping int32 sums are: each product is
  exact, and the one pair whose sum overflows (-32768 * -32768 twice) wraps to what the
  int32 additions would. Mixed int8 x uint8 dots reach it widened to int16 (simplify.py).
* "bf16_fma", "f16_fma": bf16 / f16 x the same -> f32 on AVX2 hosts: the operands widened
  to f32 while packing (exact; f16 by F16C), 8-lane fma on a 6 x 16 tile.
* "f32_avx2": f32 dots of few rows on AVX2 hosts (kernels_dot_lowp.py picks them), the
  lhs read in place, a row-major rhs read in place by a single row tile (DIRECT_M_AVX2).

All work on groups of G (4, 2 or 1) consecutive k: the lhs is packed into rows of i32 words
(`pack_a`, one word = one group, broadcast to every lane), the rhs into panels of NR columns
x a block of KB groups (two vectors per group, made in `panels` on the caller's stack by
interleaving G rows with shuffles when the rhs is row-major, or by loading one word per
column when it is stored transposed). The micro-kernel keeps an MR x NR tile of C in
vector registers (16 of the 32 zmm; 12 of the 16 ymm). K longer than one block accumulates into C. Padding (k beyond K, columns
beyond N, rows beyond M) is zero in the packed rhs and never stored.

The generated code (kernels_dot_lowp.py) calls `axle_lowp_<kind>_pack_a` once per batch and
`axle_lowp_<kind>_panels` for ranges of panels claimed by the pool's threads. Addresses are
bound by the JIT like BLAS's (llvm_env.EXTERNAL_SYMBOLS), so object code stays cacheable.

The convolution routines (conv_runtime.py; the pseudo-kind "conv") are a second group,
built, cached and linked apart (`register("conv")`): a machine's first process pays
0.5-1 s for the GEMM kinds and 3-4 s for the convolutions (most of it the direct rows'
register blocks) on a Zen 3, each only when a program first needs it, then loads them
from the disk cache.
"""
from __future__ import annotations

import re
import threading
from functools import lru_cache

from llvmlite import ir

from axle.codegen.emitter import CountedLoop as _Loop  # (also lowp_f32_pack's loops)

MR, NR = 8, 32  # rows x columns of the register tile
KB = 512  # groups of k per packed block of the rhs (a panel block: KB * 128 bytes on the stack)
HALF_TILES = True  # panels of at most one vector's columns by one-vector tiles (_lhs_tiles)
DIRECT_M = 64  # f32: a row-major rhs is read in place by dots of fewer rows (more: packed per panel)
# AVX2 (f32_avx2): by one row tile only. Read in place by several, a panel of a matrix whose
# rows are a power of two apart maps to a few cache sets and is fetched from memory again
# per tile (32 x 1024 x 1024: 1.5 ms against 0.7 ms packed)
DIRECT_M_AVX2 = 7
# AVX2 f32 dots of fewer rows than this run in the kernel (more: OpenBLAS's Haswell sgemm,
# which matches it from ~192 rows on; at 64-128 rows the kernel was 1.1-1.6x faster in
# benchmarks/results/gemm_micro.py, OpenBLAS packing the whole rhs on every call)
AVX2_MAX_M = 160
# AVX2 f32: units of GROUP_PANELS panels for an rhs of at least GROUP_MIN_BYTES per batch
# (beyond the L2s): a block of GROUP_KB rows of k is packed for all of the unit's panels at
# once, each row read as one contiguous run of GROUP_PANELS x 64 bytes, where a panel alone
# reads 64 bytes of each row, every row in another page (12 x 1024 x 4096: 4.5 -> 2.6-2.9
# ms; docs/gemm-f32.md). The unit's block lives on the stack: 128 KiB
GROUP_PANELS = 8
GROUP_KB = 256
GROUP_MIN_BYTES = 4 << 20

I8, I16, I32, I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32 = ir.FloatType()
V16I32, V16F32 = ir.VectorType(I32, 16), ir.VectorType(F32, 16)
V8I32, V16I16, V8F32 = ir.VectorType(I32, 8), ir.VectorType(I16, 16), ir.VectorType(F32, 8)
P = I8.as_pointer()


class _BFloat(ir.Type):
    """LLVM's bfloat (llvmlite has no class for it; the intrinsic's operands need it)."""

    def _to_string(self):
        return "bfloat"

    def __eq__(self, other):
        return isinstance(other, _BFloat)

    def __hash__(self):
        return hash("bfloat")


KINDS = {  # kind: (group size G, element type, accumulator vector type)
    "vnni": (4, I8, V16I32),
    "bf16": (2, I16, V16F32),
    "f32": (1, I32, V16F32),  # f32 GEMMs (docs/gemm-f32.md): fma, operands read in place where they can be
    # int8 x int8 -> int32 on AVX2 hosts: pairs of k widened to i16 while packing, `vpmaddwd`
    "pmaddwd": (2, I8, V8I32),
    # int16 x int16 -> int32 on every AVX2 host (also mixed int8 / uint8 dots, which the
    # simplifier widens to a common int16): `vpmaddwd` as it stands, exact modulo 2**32
    "pmaddwd16": (2, I16, V8I32),
    # bf16 / f16 x the same -> f32 on AVX2 hosts: widened to f32 while packing, 8-lane fma
    "bf16_fma": (1, I16, V8F32),
    "f16_fma": (1, I16, V8F32),
    # f32 GEMMs of few rows on AVX2 hosts: a row-major rhs read in place (OpenBLAS packs it per call)
    "f32_avx2": (1, I32, V8F32),
}
F32_KINDS = ("f32", "f32_avx2")  # the lhs (and a row-major rhs of few rows) read in place
GEOMETRY = {kind: (MR, NR, 16) for kind in KINDS}  # kind: (tile rows, tile columns, i32 lanes of a vector)
for _k in ("pmaddwd", "pmaddwd16", "bf16_fma", "f16_fma", "f32_avx2"):  # 256-bit: 12 accumulators, 2 rhs vectors, 1 broadcast
    GEOMETRY[_k] = (6, 16, 8)
PACKED = {"pmaddwd": I16, "bf16_fma": I32, "f16_fma": I32}  # element type in the packed operands, where not the stored one


def _packed_et(kind):
    return PACKED.get(kind, KINDS[kind][1])


def _widen(b, kind, x, signed=True):
    """Stored elements (a scalar or a vector) as the packed ones: int8 -> i16 (sign- or
    zero-extended), bf16 / f16 -> the bits of the f32 of the same value (exact)."""
    n = x.type.count if isinstance(x.type, ir.VectorType) else None

    def ty(t):
        return t if n is None else ir.VectorType(t, n)
    if kind == "pmaddwd":
        return b.sext(x, ty(I16)) if signed else b.zext(x, ty(I16))
    if kind == "bf16_fma":  # bf16 is the upper half of an f32
        return b.shl(b.zext(x, ty(I32)), ir.Constant(ty(I32), 16 if n is None else [16] * n))
    return b.bitcast(b.fpext(b.bitcast(x, ty(ir.HalfType())), ty(F32)), ty(I32))  # f16 (vcvtph2ps)


@lru_cache(maxsize=None)
def supported_kinds() -> frozenset:
    """The kinds this host runs natively."""
    import llvmlite.binding as llvm
    try:
        f = llvm.get_host_cpu_features()
    except RuntimeError:
        return frozenset()
    have = {k for k, v in f.items() if v}
    out = set()
    base = {"avx512f", "avx512bw", "avx512vl"} <= have
    if base and "avx512vnni" in have:
        out.add("vnni")
    if base and "avx512bf16" in have:
        out.add("bf16")
    if base and "fma" in have:
        out.add("f32")
    if "avx2" in have and "vnni" not in out:
        out.add("pmaddwd")
    if "avx2" in have:
        out.add("pmaddwd16")
    if {"avx2", "fma"} <= have:
        if "bf16" not in out:
            out.add("bf16_fma")
        if "f16c" in have:
            out.add("f16_fma")
        if "f32" not in out:
            out.add("f32_avx2")
    return frozenset(out)


def _c(v, t=I64):
    return ir.Constant(t, v)


def _gep(b, ptr, elem_t, index):
    return b.gep(b.bitcast(ptr, elem_t.as_pointer()), [index])


def _vname(vt) -> str:
    t = vt.element
    return f"v{vt.count}" + ("f32" if isinstance(t, ir.FloatType) else f"i{t.width}")


def _lanes_below(b, first: int, count: int, limit):
    """<count x i1>: lane i set where first + i < limit (an i64)."""
    lanes = ir.Constant(ir.VectorType(I64, count), list(range(first, first + count)))
    lim = b.insert_element(ir.Constant(ir.VectorType(I64, count), None), limit, _c(0, I32))
    lim = b.shuffle_vector(lim, ir.Constant(ir.VectorType(I64, count), None),
                           ir.Constant(ir.VectorType(I32, count), [0] * count))
    return b.icmp_signed("<", lanes, lim)


def _masked_load(b, ptr, vt, mask, align=4):
    """Lanes of vt at ptr where mask is set, zero elsewhere (the others are not read)."""
    name = f"llvm.masked.load.{_vname(vt)}.p0"
    fn = b.module.globals.get(name) or ir.Function(
        b.module, ir.FunctionType(vt, [P, I32, mask.type, vt]), name)
    return b.call(fn, [b.bitcast(ptr, P), _c(align, I32), mask, ir.Constant(vt, None)])


def _masked_store(b, value, ptr, mask, align=4):
    """Store the lanes of value where mask is set (the others are not written)."""
    vt = value.type
    name = f"llvm.masked.store.{_vname(vt)}.p0"
    fn = b.module.globals.get(name) or ir.Function(
        b.module, ir.FunctionType(ir.VoidType(), [vt, P, I32, mask.type]), name)
    b.call(fn, [value, b.bitcast(ptr, P), _c(align, I32), mask])


def _pack_a(mod, kind):
    """pack_a(A, sa_m, sa_k, M, K, Ap, flip): Ap[Mpad][KG] words of G elements, rows past M
    and k past K zero; flip: vnni: xor each element with 0x80 (signed int8 -> unsigned);
    pmaddwd: the lhs is signed (elements sign-extended to i16, else zero-extended)."""
    g, et, _ = KINDS[kind]
    pt, mr = _packed_et(kind), GEOMETRY[kind][0]
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [P, I64, I64, I64, I64, P, I64]), f"axle_lowp_{kind}_pack_a")
    a, sam, sak, m, k, ap, flip = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    kg = b.udiv(b.add(k, _c(g - 1)), _c(g))
    mpad = b.mul(b.udiv(b.add(m, _c(mr - 1)), _c(mr)), _c(mr))
    fl = b.trunc(b.mul(flip, _c(0x80)), et)
    signed = b.icmp_signed("!=", flip, _c(0)) if kind == "pmaddwd" else None

    def convert(x):
        if kind == "pmaddwd":
            return b.select(signed, _widen(b, kind, x), _widen(b, kind, x, signed=False))
        if kind in PACKED:
            return _widen(b, kind, x)
        return b.xor(x, fl)

    def rows(k_run):
        """A row-major lhs (k contiguous): each row's K elements in one run the vectorizer
        takes (the element loop's bounds checks made it gathers: a bf16 8192 x 256 lhs
        packed in ~3 ms, longer than the GEMM against 64 columns), then the zero padding."""
        with _Loop(b, _c(0), m, "rr") as r:
            src, dst = b.mul(r, sam), b.mul(r, b.mul(kg, _c(g)))
            with _Loop(b, _c(0), k_run, "rq") as q:
                x = convert(b.load(_gep(b, a, et, b.add(src, q))))
                b.store(x, _gep(b, ap, pt, b.add(dst, q)))
            with _Loop(b, k_run, b.mul(kg, _c(g)), "rz") as q:
                b.store(ir.Constant(pt, 0), _gep(b, ap, pt, b.add(dst, q)))
        with _Loop(b, b.mul(m, b.mul(kg, _c(g))), b.mul(mpad, b.mul(kg, _c(g))), "rp") as q:
            b.store(ir.Constant(pt, 0), _gep(b, ap, pt, q))

    def elems(r_lo, r_hi, q_lo, q_hi):
        with _Loop(b, r_lo, r_hi, "r") as r:
            rv = b.icmp_signed("<", r, m)
            rr = b.select(rv, r, _c(0))
            with _Loop(b, q_lo, q_hi, "q") as q:
                ok = b.and_(rv, b.icmp_signed("<", q, k))
                qq = b.select(ok, q, _c(0))
                x = convert(b.load(_gep(b, a, et, b.add(b.mul(rr, sam), b.mul(qq, sak)))))
                x = b.select(ok, x, ir.Constant(pt, 0))
                b.store(x, _gep(b, ap, pt, b.add(b.mul(r, b.mul(kg, _c(g))), q)))
    m16 = k16 = _c(0)
    if kind == "f32":  # an lhs stored [K, M]: 16 x 16 blocks transposed in registers
        from axle.backends.cpu.lowp_f32_pack import pack_a_t
        tr = b.icmp_signed("==", sam, _c(1))
        pre = b.block
        with b.if_then(tr):
            m16t, k16t = pack_a_t(b, _Loop, a, sak, m, k, ap, kg)
            done = b.block
        m16, k16 = b.phi(I64), b.phi(I64)
        for ph, v in ((m16, m16t), (k16, k16t)):
            ph.add_incoming(v, done)
            ph.add_incoming(_c(0), pre)
    contiguous = b.icmp_signed("==", sak, _c(1))
    if kind == "f32":
        contiguous = b.and_(contiguous, b.icmp_signed("!=", sam, _c(1)))
    with b.if_else(contiguous) as (run, other):
        with run:
            rows(k)
        with other:
            elems(_c(0), m16, k16, b.mul(kg, _c(g)))
            elems(m16, mpad, _c(0), b.mul(kg, _c(g)))
    b.ret_void()


def _shuffle_interleave(b, x, y, n, unit):
    """Interleave vectors x, y of n elements in units of `unit` elements:
    x0 y0 x1 y1 ... (each a run of `unit` elements)."""
    mask = []
    for i in range(n // unit):
        mask += [i * unit + j for j in range(unit)] + [n + i * unit + j for j in range(unit)]
    return b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, len(mask)), mask))


def _panels(mod, kind):
    """panels(Ap, B, sb_k, sb_n, C, ldc, M, N, K, p0, p1, flip, lda, t0, t1, ldk): C[8t : 8t + 8,
    32p : 32p + 32] for the panels p0 <= p < p1 and row tiles t0 <= t < t1 (C row-major,
    ldc elements a row); flip: pack_a flipped the lhs's sign bits (vnni), subtract 128 x
    the rhs's column sums; lda, ldk: words from one row / one group of k of Ap to the next
    (ldk 1 for a packed lhs; an f32 lhs is read in place with its own strides, k
    contiguous or rows contiguous). For the f32 kinds `flip` means accumulate: C += A B (the
    strided convolutions sum several calls into one C, kernels_conv_strided.py)."""
    g, et, vt = KINDS[kind]
    mr, nr, _ = GEOMETRY[kind]
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [P, P] + [I64] * 2 + [P] + [I64] * 11),
                     f"axle_lowp_{kind}_panels")
    ap, bsrc, sbk, sbn, c, ldc, m, n, k, p0, p1, flip, lda, t0, t1, ldk = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    # the packed block (KB groups x 32 words) and the vnni column sums
    slots = []
    for words in (KB * nr, nr):
        s_ = b.alloca(ir.ArrayType(I32, words))
        s_.align = 64
        slots.append(b.bitcast(s_, P))
    bp, csum = slots
    fscale = ir.Constant(V16I32, None)
    if kind == "vnni":
        f128 = b.trunc(b.mul(flip, _c(128)), I32)
        fscale = b.shuffle_vector(b.insert_element(ir.Constant(V16I32, None), f128, _c(0, I32)),
                                  ir.Constant(V16I32, None), ir.Constant(ir.VectorType(I32, 16), [0] * 16))
    kg_all = b.udiv(b.add(k, _c(g - 1)), _c(g))
    mtiles = b.udiv(b.add(m, _c(mr - 1)), _c(mr))
    t1 = b.select(b.icmp_signed("<", t1, mtiles), t1, mtiles)
    npanels = b.udiv(b.add(n, _c(nr - 1)), _c(nr))
    p1 = b.select(b.icmp_signed("<", p1, npanels), p1, npanels)
    if kind == "vnni":
        dp = ir.Function(mod, ir.FunctionType(V16I32, [V16I32, V16I32, V16I32]), "llvm.x86.avx512.vpdpbusd.512")
    elif kind == "bf16":
        bft = ir.VectorType(_BFloat(), 32)
        dp = ir.Function(mod, ir.FunctionType(V16F32, [V16F32, bft, bft]), "llvm.x86.avx512bf16.dpbf16ps.512")
    elif kind in ("pmaddwd", "pmaddwd16"):  # i32 lanes += (i16 x i16 + i16 x i16)
        dp = mod.globals.get("llvm.x86.avx2.pmadd.wd") or ir.Function(
            mod, ir.FunctionType(V8I32, [V16I16, V16I16]), "llvm.x86.avx2.pmadd.wd")
    elif kind in ("bf16_fma", "f16_fma", "f32_avx2"):
        dp = mod.globals.get("llvm.fma.v8f32") or ir.Function(mod, ir.FunctionType(V8F32, [V8F32] * 3), "llvm.fma.v8f32")
    else:
        dp = ir.Function(mod, ir.FunctionType(V16F32, [V16F32, V16F32, V16F32]), "llvm.fma.v16f32")

    def dot(acc, x, y):
        if kind in ("pmaddwd", "pmaddwd16"):
            return b.add(acc, b.call(dp, [b.bitcast(x, V16I16), b.bitcast(y, V16I16)]))
        if kind in ("bf16_fma", "f16_fma", "f32_avx2"):
            return b.call(dp, [b.bitcast(x, V8F32), b.bitcast(y, V8F32), acc])
        if kind == "vnni":
            return b.call(dp, [acc, x, y])
        if kind == "f32":
            return b.call(dp, [b.bitcast(x, V16F32), b.bitcast(y, V16F32), acc])
        return b.call(dp, [acc, b.bitcast(x, bft), b.bitcast(y, bft)])
    zero = ir.Constant(vt, None)
    keep = b.icmp_signed("!=", flip, _c(0)) if kind in F32_KINDS else ir.Constant(ir.IntType(1), 0)
    if kind == "f32_avx2":  # several whole panels of a row-major rhs: packed together per block
        gs = b.alloca(ir.ArrayType(I32, GROUP_PANELS * GROUP_KB * nr))
        gs.align = 64
        gbuf = b.bitcast(gs, P)
        npan = b.sub(p1, p0)
        grouped = b.and_(b.and_(b.icmp_signed(">", npan, _c(1)), b.icmp_signed("<=", npan, _c(GROUP_PANELS))),
                         b.and_(b.icmp_signed("==", sbn, _c(1)),
                                b.and_(b.icmp_signed("<=", b.mul(p1, _c(nr)), n),
                                       b.icmp_signed(">=", m, _c(DIRECT_M_AVX2)))))
        with b.if_else(grouped) as (yes, no):
            with yes:
                _grouped_panels(b, kind, dot, zero, ap, bsrc, sbk, gbuf, csum, c, ldc, m, n, kg_all, p0, npan,
                                t0, t1, lda, ldk, fscale, keep)
            with no:
                _each_panel(b, kind, dot, zero, ap, bsrc, sbk, sbn, bp, csum, c, ldc, m, n, k, kg_all, p0, p1,
                            t0, t1, lda, ldk, fscale, keep)
    else:
        _each_panel(b, kind, dot, zero, ap, bsrc, sbk, sbn, bp, csum, c, ldc, m, n, k, kg_all, p0, p1,
                    t0, t1, lda, ldk, fscale, keep, dp)
    b.ret_void()
    return fn


def _lhs_tiles(b, kind, dot, zero, ap, bbase, bstride, csum, c, ldc, m, lda, g0, ng, t0, t1, col0, ncols,
               full_n, first, fscale, ldk):
    """The row tiles t0 <= t < t1 of one panel over one packed block. f32 on AVX2: the
    last rows of C, fewer than a tile, by a tile of that many rows (8 rows: a 6-row and a
    2-row tile, not two of 6)."""
    mr = GEOMETRY[kind][0]
    exact = kind == "f32_avx2"
    t_end = t1
    if exact:  # whole tiles first
        whole = b.udiv(m, _c(mr))
        t_end = b.select(b.icmp_signed("<", t1, whole), t1, whole)
        t_end = b.select(b.icmp_signed("<", t_end, t0), t0, t_end)

    lanes = GEOMETRY[kind][2]

    def tiles(t, rows=None, half=False):
        def tile_(ldk_):
            _tile(b, kind, dot, zero, ap, bbase, bstride, csum, c, ldc, m, lda, g0, ng, t, col0, ncols,
                  full_n, first, fscale, ldk_, rows, half)
        if kind in F32_KINDS:  # an lhs read in place: k contiguous, or rows contiguous ([K, M])
            with b.if_else(b.icmp_signed("==", ldk, _c(1))) as (unit, strided):
                with unit:
                    tile_(None)
                with strided:
                    tile_(ldk)
        else:
            tile_(None)
    # a panel of at most one vector's columns (N = 48 leaves one of 16) by tiles one vector
    # wide: half the products of a whole tile, all but the masked lanes wanted
    narrow_ok = b.icmp_signed("<=", ncols, _c(lanes if HALF_TILES else 0))
    with b.if_else(narrow_ok) as (narrow, wide):
        with narrow:
            with _Loop(b, t0, t_end, "t") as t:
                tiles(t, half=True)
        with wide:
            with _Loop(b, t0, t_end, "t") as t:
                tiles(t)
    if exact:  # the last partial tile, when it is one of t0 .. t1 - 1
        left = b.sub(m, b.mul(t_end, _c(mr)))
        with b.if_then(b.and_(b.icmp_signed("<", t_end, t1), b.icmp_signed(">", left, _c(0)))):
            for r in range(1, mr):
                with b.if_then(b.icmp_signed("==", left, _c(r))):
                    tiles(t_end, r)


def _grouped_panels(b, kind, dot, zero, ap, bsrc, sbk, gbuf, csum, c, ldc, m, n, kg_all, p0, npan, t0, t1,
                    lda, ldk, fscale, keep):
    """The whole panels p0 <= p < p0 + npan of a row-major f32 rhs: per block of GROUP_KB
    rows of k, every panel packed (row by row across the panels: contiguous reads), then
    each panel's row tiles."""
    nr = GEOMETRY[kind][1]
    vrow = ir.VectorType(I32, nr)
    col_first = b.mul(p0, _c(nr))
    with _Loop(b, _c(0), b.udiv(b.add(kg_all, _c(GROUP_KB - 1)), _c(GROUP_KB)), "gkb") as kb:
        g0 = b.mul(kb, _c(GROUP_KB))
        ng = b.sub(kg_all, g0)
        ng = b.select(b.icmp_signed("<", ng, _c(GROUP_KB)), ng, _c(GROUP_KB))
        with _Loop(b, _c(0), ng, "gq") as q:
            row = _gep(b, bsrc, I32, b.add(b.mul(b.add(g0, q), sbk), col_first))
            with _Loop(b, _c(0), npan, "gp") as pi:
                x = b.load(b.bitcast(_gep(b, row, I32, b.mul(pi, _c(nr))), vrow.as_pointer()), align=4)
                dst = _gep(b, gbuf, I32, b.mul(b.add(b.mul(pi, _c(GROUP_KB)), q), _c(nr)))
                b.store(x, b.bitcast(dst, vrow.as_pointer()), align=4)
        with _Loop(b, _c(0), npan, "gt") as pi:
            col0 = b.add(col_first, b.mul(pi, _c(nr)))
            bbase = b.bitcast(_gep(b, gbuf, I32, b.mul(pi, _c(GROUP_KB * nr))), P)
            _lhs_tiles(b, kind, dot, zero, ap, bbase, _c(nr), csum, c, ldc, m, lda, g0, ng, t0, t1, col0,
                       b.sub(n, col0), ir.Constant(ir.IntType(1), 1), _first(b, kb, keep), fscale, ldk)


def _each_panel(b, kind, dot, zero, ap, bsrc, sbk, sbn, bp, csum, c, ldc, m, n, k, kg_all, p0, p1, t0, t1,
                lda, ldk, fscale, keep, dp=None):
    """Panel by panel: per block of KB groups of k, the panel packed (or read in place),
    then its row tiles."""
    nr = GEOMETRY[kind][1]
    if kind == "vnni":
        ones = ir.Constant(V16I32, [0x01010101] * 16)
    with _Loop(b, p0, p1, "p") as p:
        col0 = b.mul(p, _c(nr))
        ncols = b.sub(n, col0)
        full_n = b.icmp_signed(">=", ncols, _c(nr))
        with _Loop(b, _c(0), b.udiv(b.add(kg_all, _c(KB - 1)), _c(KB)), "kb") as kb:
            g0 = b.mul(kb, _c(KB))
            ng = b.sub(kg_all, g0)
            ng = b.select(b.icmp_signed("<", ng, _c(KB)), ng, _c(KB))
            # f32: a whole panel of a row-major rhs is read where it is (rows sbk apart)
            direct = ir.Constant(ir.IntType(1), 0)
            if kind in F32_KINDS:
                direct = b.and_(b.and_(full_n, b.icmp_signed("==", sbn, _c(1))),
                                b.icmp_signed("<", m, _c(DIRECT_M if kind == "f32" else DIRECT_M_AVX2)))
            with b.if_then(b.not_(direct)):
                _pack_panel(b, kind, bsrc, sbk, sbn, bp, col0, ncols, full_n, g0, ng, k)
            src0 = b.bitcast(_gep(b, bsrc, I32, b.add(b.mul(g0, sbk), col0)), P)
            bbase = b.select(direct, src0, bp)
            bstride = b.select(direct, sbk, _c(nr))
            if kind == "vnni":  # column sums of this block (for a flipped lhs): ones . B
                s0 = s1 = ir.Constant(V16I32, None)
                with _Loop(b, _c(0), ng, "cs") as q:
                    base = b.mul(q, _c(NR))
                    v0 = b.load(b.bitcast(_gep(b, bp, I32, base), V16I32.as_pointer()), align=4)
                    v1 = b.load(b.bitcast(_gep(b, bp, I32, b.add(base, _c(16))), V16I32.as_pointer()), align=4)
                    # (phi-free: accumulate through memory)
                    old0 = b.load(b.bitcast(_gep(b, csum, I32, _c(0)), V16I32.as_pointer()), align=4)
                    old1 = b.load(b.bitcast(_gep(b, csum, I32, _c(16)), V16I32.as_pointer()), align=4)
                    first = b.icmp_signed("==", q, _c(0))
                    old0 = b.select(first, s0, old0)
                    old1 = b.select(first, s1, old1)
                    b.store(b.call(dp, [old0, ones, v0]), b.bitcast(_gep(b, csum, I32, _c(0)), V16I32.as_pointer()), align=4)
                    b.store(b.call(dp, [old1, ones, v1]), b.bitcast(_gep(b, csum, I32, _c(16)), V16I32.as_pointer()), align=4)
            _lhs_tiles(b, kind, dot, zero, ap, bbase, bstride, csum, c, ldc, m, lda, g0, ng, t0, t1, col0,
                       ncols, full_n, _first(b, kb, keep), fscale, ldk)


def _first(b, kb, keep):
    """Whether the tiles start from zero: the first block of k, unless accumulating into C."""
    return b.and_(b.icmp_signed("==", kb, _c(0)), b.not_(keep))


def _pack_panel(b, kind, bsrc, sbk, sbn, bp, col0, ncols, full_n, g0, ng, k):
    """Pack groups [g0, g0 + ng) of the panel at column col0 into bp (ng x NR words)."""
    g, et, _ = KINDS[kind]
    nr = GEOMETRY[kind][1]
    rowmajor = b.and_(b.icmp_signed("==", sbn, _c(1)), b.icmp_signed("<=", b.mul(b.add(g0, ng), _c(g)), k))
    vrow = ir.VectorType(et, nr)

    def rows_of(q, mask):
        rows = []
        for j in range(g):
            kk = b.add(b.mul(b.add(g0, q), _c(g)), _c(j))
            ptr = _gep(b, bsrc, et, b.add(b.mul(kk, sbk), col0))
            rows.append(b.load(b.bitcast(ptr, vrow.as_pointer()), align=1) if mask is None
                        else _masked_load(b, ptr, vrow, mask, align=1))
        return rows
    with b.if_else(rowmajor) as (vec, scalar):
        with vec:  # row-major rhs: G rows of NR elements (at the edge: the columns before N), interleaved
            mask = _lanes_below(b, 0, nr, ncols)
            with _Loop(b, _c(0), ng, "vq") as q:
                with b.if_else(full_n) as (whole, edge):
                    with whole:
                        r_whole, bb_whole = rows_of(q, None), b.block
                    with edge:
                        r_edge, bb_edge = rows_of(q, mask), b.block
                rows = []
                for x, y in zip(r_whole, r_edge):
                    ph = b.phi(vrow)
                    ph.add_incoming(x, bb_whole)
                    ph.add_incoming(y, bb_edge)
                    rows.append(ph)
                if kind in PACKED:  # rows widened (an int8 rhs is signed)
                    rows = [_widen(b, kind, x) for x in rows]
                if g == 1:
                    out = rows[0]
                elif g == 2:
                    out = _shuffle_interleave(b, rows[0], rows[1], nr, 1)
                else:
                    lo = _shuffle_interleave(b, rows[0], rows[1], NR, 1)  # 64 x i8: pairs
                    hi = _shuffle_interleave(b, rows[2], rows[3], NR, 1)
                    out = _shuffle_interleave(b, lo, hi, 2 * NR, 2)  # 128 x i8: quads
                dst = _gep(b, bp, I32, b.mul(q, _c(nr)))
                b.store(out, b.bitcast(dst, out.type.as_pointer()), align=4)
        with scalar:
            _pack_panel_other(b, kind, bsrc, sbk, sbn, bp, col0, ncols, full_n, g0, ng, k)


def _pack_panel_other(b, kind, bsrc, sbk, sbn, bp, col0, ncols, full_n, g0, ng, k):
    """_pack_panel for an rhs not stored row-major, or at the edges."""
    g, et, _ = KINDS[kind]
    pt, nr = _packed_et(kind), GEOMETRY[kind][1]
    if kind in F32_KINDS or kind not in PACKED and g > 1:
        # rhs stored [N, K], whole panel: a group of G consecutive k is one 4-byte word in
        # memory too (bf16 pairs, int8 quads), so the panel is a transpose of words: 16 x 16
        # transposes in registers. Element by element, packing a panel cost as much as its
        # tiles' dot products when the lhs has few rows (batched attention q @ k.T in bf16:
        # 256 rows of a 64-deep panel, 75 GFLOP/s against 125 for 8192 rows).
        from axle.backends.cpu.lowp_f32_pack import pack_panel_t
        tr = b.and_(full_n, b.and_(b.icmp_signed("==", sbk, _c(1)),
                                   b.icmp_signed("<=", b.mul(b.add(g0, ng), _c(g)), k)))
        if g > 1:  # rows a whole number of words apart, from a word boundary
            aligned = b.and_(b.ptrtoint(bsrc, I64), _c(3))
            tr = b.and_(tr, b.and_(b.icmp_signed("==", b.urem(sbn, _c(g)), _c(0)), b.icmp_signed("==", aligned, _c(0))))
        with b.if_then(tr):
            pack_panel_t(b, _Loop, bsrc, b.udiv(sbn, _c(g)) if g > 1 else sbn, bp, col0, g0, ng, nr)
        general = b.not_(tr)
    else:
        general = ir.Constant(ir.IntType(1), 1)
    with b.if_then(general):  # any strides, edges: element by element, zero outside
        with _Loop(b, _c(0), ng, "sq") as q:
            with _Loop(b, _c(0), _c(nr), "sc") as col:
                with _Loop(b, _c(0), _c(g), "sj") as j:
                    kk = b.add(b.mul(b.add(g0, q), _c(g)), j)
                    ok = b.and_(b.icmp_signed("<", kk, k), b.icmp_signed("<", col, ncols))
                    src = b.add(b.mul(b.select(ok, kk, _c(0)), sbk), b.mul(b.select(ok, b.add(col0, col), _c(0)), sbn))
                    x = b.load(_gep(b, bsrc, et, src))
                    if kind in PACKED:
                        x = _widen(b, kind, x)
                    x = b.select(ok, x, ir.Constant(pt, 0))
                    b.store(x, _gep(b, bp, pt, b.add(b.mul(b.add(b.mul(q, _c(nr)), col), _c(g)), j)))


def _tile(b, kind, dot, zero, ap, bp, bstride, csum, c, ldc, m, kg_all, g0, ng, t, col0, ncols, full_n, first,
          fscale, ldk=None, rows=None, half=False):
    """One MR x NR tile of C over the packed block: the k loop from zero, the sums stored
    (`first`) or added to C.
    With `rows` (< MR): the tile of the last rows of C, that many (row tile t still
    starts at row MR t). With `half`: the tile's first vector of columns only (a panel of
    at most that many columns)."""
    _, _, vt = KINDS[kind]
    geometry_rows, nr, lanes = GEOMETRY[kind]
    mr = rows or geometry_rows
    nv = 1 if half else nr // lanes  # vectors in a row of the tile
    if half:
        full_n = b.icmp_signed(">=", ncols, _c(lanes))
    bv = ir.VectorType(I32, lanes)
    row0 = b.mul(t, _c(geometry_rows))
    full = b.and_(full_n, b.icmp_signed("<=", b.add(row0, _c(mr)), m))
    vp = vt.as_pointer()

    def where(r, half):  # pointer to the lanes (r, half) of the tile in C (not dereferenced past M / N)
        return b.bitcast(_gep(b, c, I32, b.add(b.mul(b.add(row0, _c(r)), ldc), b.add(col0, _c(lanes * half)))), vp)
    # every block of k is summed from zero and then added to C (the sums of a long k are
    # two-level: a block's chain of at most KB products, then one addition per block)
    accs = [zero] * (mr * nv)
    # the k loop over the block: accumulators as phis
    pre = b.block
    head = b.append_basic_block("k.head")
    body = b.append_basic_block("k.body")
    end = b.append_basic_block("k.end")
    b.branch(head)
    b.position_at_end(head)
    q = b.phi(I64, "kq")
    q.add_incoming(_c(0), pre)
    phis = []
    for a in accs:
        ph = b.phi(vt)
        ph.add_incoming(a, pre)
        phis.append(ph)
    b.cbranch(b.icmp_signed("<", q, ng), body, end)
    b.position_at_end(body)
    base = b.mul(q, bstride)
    vs = [b.load(b.bitcast(_gep(b, bp, I32, b.add(base, _c(lanes * h)) if h else base), bv.as_pointer()), align=4)
          for h in range(nv)]
    arow = b.add(g0, q)
    new = []
    for r in range(mr):
        row = b.add(row0, _c(r))  # rows past M read row M - 1 (an unpacked lhs has no padding)
        row = b.select(b.icmp_signed("<", row, m), row, b.sub(m, _c(1)))
        w = b.load(_gep(b, ap, I32, b.add(b.mul(row, kg_all), arow if ldk is None else b.mul(arow, ldk))))
        bc = b.shuffle_vector(b.insert_element(ir.Constant(bv, None), w, _c(0, I32)),
                              ir.Constant(bv, None), ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))
        new += [dot(phis[nv * r + h], bc, vs[h]) for h in range(nv)]
    nq = b.add(q, _c(1))
    q.add_incoming(nq, b.block)
    for ph, v in zip(phis, new):
        ph.add_incoming(v, b.block)
    b.branch(head)
    b.position_at_end(end)
    outs = list(phis)
    if kind == "vnni":  # subtract 128 x this block's column sums (fscale 0 when unflipped)
        c0 = b.mul(b.load(b.bitcast(_gep(b, csum, I32, _c(0)), V16I32.as_pointer()), align=4), fscale)
        c1 = b.mul(b.load(b.bitcast(_gep(b, csum, I32, _c(16)), V16I32.as_pointer()), align=4), fscale)
        outs = [b.sub(v, c0 if i % nv == 0 else c1) for i, v in enumerate(outs)]
    add = b.fadd if isinstance(vt.element, ir.FloatType) else b.add
    with b.if_else(full) as (whole, part):
        with whole:
            with b.if_else(first) as (store, accumulate):  # (C is read only when added to)
                with store:
                    for r in range(mr):
                        for h in range(nv):
                            b.store(outs[nv * r + h], where(r, h), align=4)
                with accumulate:
                    for r in range(mr):
                        for h in range(nv):
                            ptr = where(r, h)
                            b.store(add(b.load(ptr, align=4), outs[nv * r + h]), ptr, align=4)
        with part:  # rows past M, columns past N: masked lanes, neither read nor written
            cols = [_lanes_below(b, lanes * h, lanes, ncols) for h in range(nv)]
            for r in range(mr):
                in_m = b.icmp_signed("<", b.add(row0, _c(r)), m)
                for h in range(nv):
                    mask = b.select(in_m, cols[h], ir.Constant(cols[h].type, None))
                    ptr = where(r, h)
                    old = _masked_load(b, ptr, vt, mask)
                    val = b.select(first, outs[nv * r + h], add(old, outs[nv * r + h]))
                    _masked_store(b, val, ptr, mask)


_LOCK = threading.RLock()
# group ("gemm": the host's GEMM kinds; "conv": conv_runtime's routines) -> {"handle",
# "object", "kinds", "done"}. Built, cached and linked apart, so that a program of GEMMs
# alone does not wait for the convolutions' build (0.5 against 3.3 s on a Zen 3).
_STATE: dict = {}
# {"object": bytes, "kinds": [...]}: the kernels' object code from an AOT artifact
# (artifact.py), linked instead of compiling (a loaded artifact needs no LLVM)
PRELOADED: dict = {}
GROUPS = ("gemm", "conv")


def saved_object() -> tuple:
    """(kinds, object code) of every routine as linked in this process, for an artifact
    (both groups' objects packed into one)."""
    from axle.backends.cpu.llvm_env import object_images, pack_objects
    register()
    kinds, images = [], []
    for group in GROUPS:
        st = _STATE.get(group) or {}
        kinds += st.get("kinds") or []
        if st.get("object") and st.get("object") not in images:
            images.append(st["object"])
    flat = [img for obj in images for img in object_images(obj)]
    return kinds, pack_objects(flat) if len(flat) > 1 else (flat[0] if flat else b"")


def _kinds(group: str) -> list:
    """What a group's object holds: this host's GEMM kinds, or "conv" (conv_runtime.py)."""
    return sorted(supported_kinds()) if group == "gemm" else ["conv"]


def _names(kind: str) -> list:
    if kind == "conv":
        from axle.backends.cpu.conv_runtime import routine_names
        return routine_names()
    return [f"axle_lowp_{kind}_{f}" for f in ("pack_a", "panels")]


def build_ir(kinds=None) -> str:
    mod = ir.Module("axle_lowp")
    panels = {}
    for kind in kinds if kinds is not None else _kinds("gemm") + _kinds("conv"):
        if kind == "conv":
            from axle.backends.cpu import conv_runtime
            f32 = panels.get("f32")
            if f32 is None and "f32" in supported_kinds():  # in the "gemm" group's object
                f32 = ir.Function(mod, ir.FunctionType(ir.VoidType(), [P, P] + [I64] * 2 + [P] + [I64] * 11),
                                  "axle_lowp_f32_panels")
            conv_runtime.build(mod, f32)
            continue
        _pack_a(mod, kind)
        panels[kind] = _panels(mod, kind)
    text = str(mod)
    from axle.backends.cpu.conv_runtime import NO_BUILTINS
    for name in NO_BUILTINS:  # (a string attribute, which llvmlite's builder cannot add)
        text = re.sub(r'(define [^\n]*@"%s"\([^\n]*\))' % re.escape(name), r'\1 "no-builtins"', text)
    return text


def _object(kinds: list, compile_to_object) -> bytes:
    """A group's object code: from the disk cache (its entries are valid only for this axle
    source, LLVM and host CPU: disk_cache.environment), else compiled and stored there, so
    that only a machine's first process pays for it."""
    import hashlib

    from axle.backends.cpu import disk_cache
    key = hashlib.sha256(("axle-lowp-runtime:" + ",".join(kinds)).encode()).hexdigest()
    entry = disk_cache.load(key)
    if entry is not None:
        return entry[1]
    obj = compile_to_object(build_ir(kinds), 3)[1]
    disk_cache.store(key, {"what": "lowp_runtime kernels", "kinds": kinds}, obj)
    return obj


def register(group: str = "") -> bool:
    """Compile (once) and link the routines of `group` ("gemm", "conv"; "": both) and bind
    their addresses for the JIT. The convolutions' f32 tiles call the GEMM group's f32 kernel
    where the host has it: that group is linked first."""
    groups = ["gemm", "conv"] if group in ("", "conv") else [group]

    def ok():
        return _STATE[group]["done"] if group else all(_STATE[g]["done"] for g in GROUPS)
    if all(g in _STATE for g in groups):
        return ok()
    with _LOCK:
        from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS, compile_to_object, link_object
        if PRELOADED.get("object") is not None and not _STATE:  # an artifact's: every group at once
            kinds = list(PRELOADED.get("kinds") or [])
            handle, addrs = link_object(PRELOADED["object"], [n for k in kinds for n in _names(k)])
            EXTERNAL_SYMBOLS.update(addrs)
            for g in GROUPS:
                _STATE[g] = {"handle": handle, "object": PRELOADED["object"],
                             "kinds": [k for k in kinds if (k == "conv") == (g == "conv")], "done": True}
        for g in groups:
            if g in _STATE:
                continue
            kinds = _kinds(g)
            if not kinds:
                _STATE[g] = {"kinds": [], "object": b"", "done": False}
                continue
            obj = _object(kinds, compile_to_object)
            handle, addrs = link_object(obj, [n for k in kinds for n in _names(k)])
            EXTERNAL_SYMBOLS.update(addrs)
            _STATE[g] = {"handle": handle, "object": obj, "kinds": kinds, "done": True}
    return ok()
