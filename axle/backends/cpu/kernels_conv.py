"""Convolution on the CPU: a direct loop nest following the spec's definition.

For each output element (batch, feature, spatial...), sum over the input features of its
feature group and over the kernel window: the input position in the padded, lhs-dilated
input is out * stride + k * rhs_dilation - pad_low; positions in padding or between
dilated elements contribute nothing. Kernel windows may be reversed. batch_group_count
and feature_group_count pick the contiguous block of input batches / features that each
output feature reads. Accumulation is in f32 for floats of 32 bits or less, like dot.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen.dot import accumulator_type
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I1
from axle.codegen.scalar_ops import RULES, convert
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
# the window limit, register-block size and vector width live with the library's rows
# (conv_runtime.py), which are built for them
from axle.backends.cpu.conv_runtime import ACCUMULATORS, DIRECT_MAX_WINDOW, vector_floats as _vector_floats
from axle.backends.cpu.llvm_env import want_strength_reduction
from axle.backends.cpu.registry import ROW_PRODUCERS, kernel
from axle.backends.cpu.kernels_conv_general import conv_window
from axle.ir.core import Operation


def _check_conv(op: Operation) -> None:
    for v in list(op.operands) + list(op.results):
        S.reg_type(_ty(v).element_type)
        if _ty(v).is_quantized:
            raise Unsupported(f"quantized {op.where()}")


@kernel("stablehlo.convolution", memory_operands=True, check=_check_conv)
def convolution(ctx: Context, op: Operation) -> None:
    cb = _direct_plan(op)
    if cb is not None:
        _conv_direct(ctx, op, cb)
        return
    from axle.backends.cpu.kernels_conv_rows import channels_plan, emit_channels_conv, emit_rows_conv, rows_plan
    rows = rows_plan(op)
    if rows is not None:  # depthwise NCHW, one-channel filters: vectorized along the innermost spatial dimension
        emit_rows_conv(ctx, op, rows)
        return
    chans = channels_plan(op)
    if chans is not None:  # depthwise NHWC: vectorized along the channels
        emit_channels_conv(ctx, op, chans)
        return
    from axle.backends.cpu.kernels_conv_rows import emit_window_dot_conv, window_dot_plan
    wdot = window_dot_plan(op)
    if wdot is not None:  # a large window, few outputs (NCHW filter gradients): dot products along rows
        emit_window_dot_conv(ctx, op, wdot)
        return
    from axle.backends.cpu.kernels_conv_strided import emit_strided_conv, strided_plan
    strided = strided_plan(op)
    if strided is not None:  # the patch matrix a strided view of the input (1-D filter gradients): GEMMs in place
        emit_strided_conv(ctx, op, strided)
        return
    from axle.backends.cpu.kernels_conv_general import library_enabled, emit_general_conv, general_plan
    plan = None if library_enabled() else _gemm_plan(op)  # (the library's routine does the same)
    if plan is not None:
        _conv_as_gemm(ctx, op, *plan)
        return
    general = general_plan(op)
    if general is not None:  # other layouts, groups, lhs dilation, reversal: im2col + GEMM
        emit_general_conv(ctx, op, general)
        return
    em, b = ctx.em, ctx.b
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    dn = op.attr("dimension_numbers")
    nsp = len(dn["input_spatial_dimensions"])
    strides, pad_lo, lhs_dil, rhs_dil, reverse, fgc, bgc = conv_window(op)
    ib, if_, isp = dn["input_batch_dimension"], dn["input_feature_dimension"], dn["input_spatial_dimensions"]
    ki, ko, ksp = (dn["kernel_input_feature_dimension"], dn["kernel_output_feature_dimension"],
                   dn["kernel_spatial_dimensions"])
    ob, of, osp = dn["output_batch_dimension"], dn["output_feature_dimension"], dn["output_spatial_dimensions"]
    out_features = ot.shape[of]
    out_batch = ot.shape[ob]
    cin = kt.shape[ki]  # input features per group
    ksizes = [kt.shape[d] for d in ksp]
    oet = ot.element_type
    acc_et = accumulator_type(oet)
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    dst = ctx.buffer(op.results[0])

    def body(oidx):
        fo = oidx[of]
        acc = em.alloca(S.reg_type(acc_et))
        b.store(S.constant(acc_et, 0), acc)
        fgroup = b.udiv(fo, em.const_i64(out_features // fgc))
        bgroup = b.udiv(fo, em.const_i64(out_features // bgc))
        batch_in = b.add(b.mul(bgroup, em.const_i64(out_batch)), oidx[ob]) if bgc > 1 else oidx[ob]

        def inner(widx):
            c, ks = widx[0], widx[1:]
            ok = ir.Constant(I1, 1)
            lidx = [None] * lt.rank
            kidx = [None] * kt.rank
            lidx[ib] = batch_in
            lidx[if_] = b.add(b.mul(fgroup, em.const_i64(cin)), c) if fgc > 1 else c
            kidx[ki] = c
            kidx[ko] = fo
            for i in range(nsp):
                p = b.sub(b.add(b.mul(oidx[osp[i]], em.const_i64(strides[i])),
                                b.mul(ks[i], em.const_i64(rhs_dil[i]))), em.const_i64(pad_lo[i]))
                ok = b.and_(ok, b.icmp_signed(">=", p, em.const_i64(0)))
                if lhs_dil[i] != 1:
                    ok = b.and_(ok, b.icmp_unsigned("==", b.urem(p, em.const_i64(lhs_dil[i])), em.const_i64(0)))
                    p = b.udiv(p, em.const_i64(lhs_dil[i]))
                ok = b.and_(ok, b.icmp_signed("<", p, em.const_i64(lt.shape[isp[i]])))
                lidx[isp[i]] = p
                kidx[ksp[i]] = b.sub(em.const_i64(ksizes[i] - 1), ks[i]) if reverse[i] else ks[i]
            with b.if_then(ok):
                x = convert(em, lt.element_type, acc_et, em.value_at(lhs, lidx))
                y = convert(em, kt.element_type, acc_et, em.value_at(rhs, kidx))
                b.store(add(em, acc_et, [b.load(acc), mul(em, acc_et, [x, y], op)], op), acc)

        em.loop_nest([cin] + ksizes, inner)
        out = S.finish(b, convert(em, acc_et, oet, b.load(acc)), oet)
        S.store(b, out, em.element_ptr(dst, oet, em.linear(oidx, ot.shape)), oet)

    em.loop_nest(list(ot.shape), body)


# ----------------------------------------------------------------- convolution as GEMM
PATCH_BYTES = 256 * 1024  # target size of one tile of patches (stays in L2)


def _nhwc_hwio(op: Operation, grouped: bool = False):
    """The number of spatial dimensions when op is a plain convolution in the layout the fast
    paths take: output [N, spatial..., F], kernel [spatial..., I, O], no grouping (unless
    `grouped`: feature groups), no lhs dilation, no window reversal; else None."""
    dn = op.attr("dimension_numbers")
    nsp = len(dn["input_spatial_dimensions"])
    if op.attr("feature_group_count", 1) != 1 and not grouped or op.attr("batch_group_count", 1) != 1:
        return None
    if any(d != 1 for d in (op.attr("lhs_dilation") or [1] * nsp)) or any(op.attr("window_reversal") or []):
        return None
    if list(dn["output_spatial_dimensions"]) != list(range(1, nsp + 1)) or dn["output_batch_dimension"] != 0 \
            or dn["output_feature_dimension"] != nsp + 1:
        return None
    if list(dn["kernel_spatial_dimensions"]) != list(range(nsp)) or dn["kernel_input_feature_dimension"] != nsp \
            or dn["kernel_output_feature_dimension"] != nsp + 1:
        return None
    return nsp


def _gemm_plan(op: Operation):
    """(prefix, nsp, rows P, patch width Kdim, Cout) when op can run as tiled im2col + GEMM:
    one element type BLAS has, the layout of _nhwc_hwio. Else None (the direct loop runs)."""
    from axle.backends.cpu import blas
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    key = str(ot.element_type)
    if key not in ("f32", "f64") or str(lt.element_type) != key or str(kt.element_type) != key:
        return None
    if blas.PREFIX[key] not in blas.available():
        return None
    nsp = _nhwc_hwio(op)
    if nsp is None:
        return None
    rows = 1
    for d in ot.shape[:-1]:
        rows *= d
    kdim = 1
    for d in kt.shape[:-1]:
        kdim *= d
    cout = ot.shape[-1]
    if min(rows, kdim, cout) < 1 or max(rows, kdim, cout) >= 2 ** 31 or rows * kdim * cout < blas.MIN_WORK:
        return None
    return blas.PREFIX[key], nsp, rows, kdim, cout


def _conv_as_gemm(ctx: Context, op: Operation, p: str, nsp: int, rows: int, kdim: int, cout: int) -> None:
    """Tiles of T output pixels: gather their input windows into a [T, Kdim] patch matrix
    (zeros where the window is in padding), then out[T, Cout] = patches @ W[Kdim, Cout]."""
    import numpy as np

    from axle.backends.cpu import blas
    from axle.ir.types import TensorType
    em = ctx.em
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    et = ot.element_type
    dn = op.attr("dimension_numbers")
    ib, if_, isp = dn["input_batch_dimension"], dn["input_feature_dimension"], dn["input_spatial_dimensions"]
    strides, pad_lo, _, rhs_dil, _, _, _ = conv_window(op)
    ksizes = list(kt.shape[:nsp])
    cin = kt.shape[nsp]
    out_sp = list(ot.shape[1:nsp + 1])
    itemsize = np.dtype(et.dtype).itemsize
    tile = max(1, min(rows, PATCH_BYTES // (kdim * itemsize)))
    n_tiles = (rows + tile - 1) // tile
    from axle.backends.cpu.parallel import max_threads, split_ranges
    slots = max_threads() if n_tiles > 1 else 1  # one patch matrix per thread of the pool
    token = object()  # names the scratch buffer for the buffer report
    patches_ref = ctx.temp_ref(TensorType((slots, tile, kdim), et), token)
    zero = S.constant(et, 0)

    from axle.backends.cpu.patch_runs import copy_or_zero
    from axle.backends.cpu.kernels_dot_lowp import call_f32_gemm, f32_kernel_fits
    f32_kernel = p == "s" and f32_kernel_fits(cout)
    runs = if_ == lt.rank - 1 and str(lt.element_type) == str(et)  # features innermost

    def fill(patches, row0, nrows):
        lhs_buf = ctx.buffer(lhs)

        def row_body(ri):
            b = ctx.b
            r = b.add(row0, ri)
            # r -> (batch, output position...)
            pos = []
            rem = r
            for extent in reversed(out_sp):
                pos.append(b.urem(rem, em.const_i64(extent)))
                rem = b.udiv(rem, em.const_i64(extent))
            pos.reverse()
            batch = rem

            def col_body(kidx):
                ks, c = kidx[:nsp], (kidx[nsp] if len(kidx) > nsp else em.const_i64(0))
                ok = ir.Constant(I1, 1)
                lidx = [None] * lt.rank
                lidx[ib] = batch
                lidx[if_] = c
                for i in range(nsp):
                    q = b.sub(b.add(b.mul(pos[i], em.const_i64(strides[i])),
                                    b.mul(ks[i], em.const_i64(rhs_dil[i]))), em.const_i64(pad_lo[i]))
                    inside = b.and_(b.icmp_signed(">=", q, em.const_i64(0)),
                                    b.icmp_signed("<", q, em.const_i64(lt.shape[isp[i]])))
                    ok = b.and_(ok, inside)
                    lidx[isp[i]] = b.select(inside, q, em.const_i64(0))  # always a valid address
                src = em.element_ptr(lhs_buf, lt.element_type, em.linear(lidx, lt.shape))
                col = em.linear(list(ks) + [c], ksizes + [cin])
                dst = em.element_ptr(patches, et, b.add(b.mul(ri, em.const_i64(kdim)), col))
                if runs:  # Cin features of one input pixel: one contiguous run, or padding
                    copy_or_zero(ctx, ok, src, dst, cin * itemsize)
                    return
                S.store(b, b.select(ok, S.load(b, src, lt.element_type), zero), dst, et)
            em.loop_nest(ksizes if runs else ksizes + [cin], col_body)
        em.for_range_dynamic(em.const_i64(0), nrows, row_body)

    def tiles(lo, hi, tid):
        b = ctx.b
        patches = b.gep(ctx.resolve(patches_ref), [b.mul(tid, em.const_i64(tile * kdim * itemsize))], inbounds=True)

        def one_tile(t):
            b = ctx.b
            row0 = b.mul(t, em.const_i64(tile))
            left = b.sub(em.const_i64(rows), row0)
            nrows = b.select(b.icmp_unsigned("<", left, em.const_i64(tile)), left, em.const_i64(tile))
            fill(patches, row0, nrows)
            if f32_kernel:  # axle's own f32 kernel (AVX-512 hosts): no repacking of W per tile
                out = ctx.b.gep(ctx.b.bitcast(ctx.buffer(op.results[0]), patches.type),
                                [ctx.b.mul(row0, em.const_i64(cout * itemsize))])
                call_f32_gemm(ctx, nrows, cout, kdim, patches, kdim, ctx.buffer(rhs), cout, 1, out, cout)
                return
            blas.call_gemm(ctx, p, et, m=tile, n=cout, k=kdim, lhs=patches, rhs=ctx.buffer(rhs),
                           out=ctx.buffer(op.results[0]), out_offset=b.mul(row0, em.const_i64(cout * itemsize)),
                           m_count=nrows)
        em.for_range_dynamic(lo, hi, one_tile)
    split_ranges(ctx, n_tiles, rows * kdim * cout // 8, tiles, max_threads=slots)
    ctx.release(token)
    ctx.mark_library("lowp.f32" if f32_kernel else f"blas.{p}gemm")


# ----------------------------------------------------------------- direct 2-D convolution
DIRECT = True  # plain f32 2-D convolutions with few input features per window run direct
def _direct_plan(op: Operation):
    """The output-feature block width (elements of one vector) when op runs as a direct
    convolution: f32, 2-D, the layout of _nhwc_hwio, a window of at most DIRECT_MAX_WINDOW
    products and output features in blocks of 16 or 8. Else None."""
    if not DIRECT:
        return None
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    if any(str(t.element_type) != "f32" for t in (lt, kt, ot)) or _nhwc_hwio(op, grouped=True) != 2:
        return None
    dn = op.attr("dimension_numbers")
    if dn["input_batch_dimension"] != 0 or dn["input_feature_dimension"] != 3:  # (DirectConv reads NHWC)
        return None
    kh, kw, cin, cout = kt.shape
    if max(lt.shape) >= 2 ** 31 or 0 in ot.shape or 0 in lt.shape:
        return None
    groups = op.attr("feature_group_count", 1)
    if groups != 1:
        return grouped_block(op)
    if kh * kw * cin > DIRECT_MAX_WINDOW:
        return None
    for cb in (16, 8):
        if cout % cb == 0:
            return cb
    return None


# Grouped convolutions with as many input as output features per group, GROUPED_WIDTHS of
# them, run direct too: a block of cb output features covers cb / g whole groups and reads
# just their cb input features, through block-diagonal weights (zero across groups: cb / g
# times the products, on vectors instead of GEMMs of g columns). 128 channels in groups of
# 8, 3 x 3 on 8 x 28 x 28: 4.3 -> 3.2 ms on one thread in NHWC (im2col + one GEMM of 8
# columns per group before), 8.2 -> 3.9 ms in NCHW.
GROUPED_WIDTHS = (2, 4, 8, 16)


def grouped_block(op: Operation):
    """cb for a grouped convolution the direct kernel takes (see GROUPED_WIDTHS), else None."""
    _, kt, _ = (_ty(v) for v in (*op.operands, op.results[0]))
    kh, kw, g, cout = kt.shape
    return grouped_width(g, op.attr("feature_group_count", 1), _ty(op.operands[0]).shape[-1], cout, kh * kw)


def grouped_width(g: int, groups: int, cin: int, cout: int, taps: int):
    """cb for `groups` groups of g input features each (cin in all) into cout outputs over a
    window of `taps`, when the direct kernel takes them, else None."""
    from axle.backends.cpu.kernels_conv_general import library_enabled
    if groups * g != cin or cout != cin or g not in GROUPED_WIDTHS or not library_enabled():
        return None
    cb = 16 if g == 16 else 8
    if cout % cb or taps * cb > DIRECT_MAX_WINDOW:
        return None
    return cb


ROW_PRODUCERS["stablehlo.convolution"] = _direct_plan  # a pooling may compute its rows (fusion.py)


def _conv_direct(ctx: Context, op: Operation, cb: int) -> None:
    """The convolution into its result buffer, rows (n, oy) shared across threads."""
    from axle.backends.cpu.parallel import split_ranges
    conv = DirectConv(ctx, op, cb)
    em = ctx.em
    c64 = em.const_i64
    conv.prepare()

    def rows(lo, hi):
        def row(r):
            b = ctx.b
            n, oy = b.udiv(r, c64(conv.oh)), b.urem(r, c64(conv.oh))
            dst = b.bitcast(ctx.buffer(op.results[0]), ir.FloatType().as_pointer())
            conv.row(n, oy, b.gep(dst, [b.mul(r, c64(conv.ow * conv.f))], inbounds=True))
        em.for_range_dynamic(lo, hi, row)
    split_ranges(ctx, conv.n * conv.oh, conv.work, rows)
    conv.release()


LSR_CHANNELS = 4  # up to this many input channels, the direct kernel asks for LSR (row())


class DirectConv:
    """out[n, oy, ox, f] = sum over (ky, kx, c) in order of in[n, iy, ix, c] * w[ky, kx, c, f]
    with iy = oy * sy + ky * dy - pad_top (likewise x); window rows in padding are skipped,
    columns in padding add 0 x weight (as in the spec's zero-padded input).
    row() emits one output row (n, oy) into a row of ow x f floats: one block of cb output
    features after the other (that block's weights stay in L1) over blocks of `px` output
    pixels: a register block of px vectors of cb features, into which, per (ky, kx, c), one
    vector of weights and one broadcast input value per pixel feed px multiply-adds. No
    patch matrix: the input is read in place. prepare() (before the rows, in the kernel
    function) regroups the weights by feature block when there are several; release()
    after the last row frees that scratch. Used by the convolution kernel and by
    reduce_window kernels that compute the rows of a convolution they pool
    (kernels_window.py)."""

    def __init__(self, ctx: Context, op: Operation, cb: int):
        self.ctx, self.op, self.cb = ctx, op, cb
        lhs, rhs = op.operands
        lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
        self.n, self.h, self.w, self.c = lt.shape
        self.kh, self.kw, _, self.f = kt.shape
        _, self.oh, self.ow, _ = ot.shape
        self.sy, self.sx = op.attr("window_strides") or [1, 1]
        self.dy, self.dx = op.attr("rhs_dilation") or [1, 1]
        pad = op.attr("padding")
        self.pt, self.pl = (int(pad[0][0]), int(pad[1][0])) if pad is not None else (0, 0)
        self.grouped = op.attr("feature_group_count", 1) != 1
        self.gsize = kt.shape[2]  # input features per group
        self.ib = cb if self.grouped else self.c  # input features a block of outputs reads per pixel
        self.window = self.kh * self.kw * self.ib
        most = max(1, min(self.ow, ACCUMULATORS * _vector_floats() // cb))
        # a block width that divides the row, if one is near the most: no third copy of
        # the pixel code for the remainder (rows of 16, 32, 64 take blocks of 8)
        self.px = next((p for p in range(most, (2 * most + 2) // 3 - 1, -1) if self.ow % p == 0), most)
        self.work = self.n * self.oh * self.ow * self.f * self.window
        self.vt = ir.VectorType(ir.FloatType(), cb)
        self.token = None
        self.packed_ref = None

    def prepare(self) -> None:
        """Regroup the weights by blocks of cb output features, each block contiguous: read
        in place, a block's rows (f floats apart) would fall into a fraction of L1's sets
        and thrash it. packed[fb, r, :] = w[r, fb cb : fb cb + cb] for the window rows r."""
        if self.f <= self.cb and not self.grouped:
            return
        from axle.ir.types import TensorType
        ctx, em, cb, vt = self.ctx, self.ctx.em, self.cb, self.vt
        c64 = em.const_i64
        f32 = ir.FloatType()
        rhs = self.op.operands[1]
        self.token = object()
        self.packed_ref = ctx.temp_ref(TensorType((self.f // cb, self.window, cb), _ty(rhs).element_type), self.token)
        b = ctx.b
        wsrc = b.bitcast(ctx.buffer(rhs), f32.as_pointer())
        wdst = b.bitcast(ctx.resolve(self.packed_ref), f32.as_pointer())

        def pack(fb):
            def one(r):
                b = ctx.b
                frm = b.gep(wsrc, [b.add(b.mul(r, c64(self.f)), b.mul(fb, c64(cb)))], inbounds=True)
                to = b.gep(wdst, [b.mul(b.add(b.mul(fb, c64(self.window)), r), c64(cb))], inbounds=True)
                b.store(b.load(b.bitcast(frm, vt.as_pointer()), align=4), b.bitcast(to, vt.as_pointer()), align=4)
            em.for_range_dynamic(c64(0), c64(self.window), one)

        def pack_grouped(fb):
            """packed[fb, (tap, i), j] = w[tap, i mod g, fb cb + j] where input feature fb cb + i
            and output feature fb cb + j are of one group, else 0."""
            g = self.gsize

            def one(r):
                def lane(j):
                    b = ctx.b
                    tap, i = b.udiv(r, c64(cb)), b.urem(r, c64(cb))
                    same = b.icmp_unsigned("==", b.udiv(i, c64(g)), b.udiv(j, c64(g)))
                    at = b.add(b.mul(b.add(b.mul(tap, c64(g)), b.urem(i, c64(g))), c64(self.f)), b.add(b.mul(fb, c64(cb)), j))
                    x = b.select(same, b.load(b.gep(wsrc, [at], inbounds=True)), ir.Constant(f32, 0.0))
                    b.store(x, b.gep(wdst, [b.add(b.mul(b.add(b.mul(fb, c64(self.window)), r), c64(cb)), j)], inbounds=True))
                em.for_range_dynamic(c64(0), c64(cb), lane)
            em.for_range_dynamic(c64(0), c64(self.window), one)
        em.for_range_dynamic(c64(0), c64(self.f // cb), pack_grouped if self.grouped else pack)

    def release(self) -> None:
        if self.token is not None:
            self.ctx.release(self.token)

    def row(self, n, oy, out_row) -> None:
        """Output row (n, oy) (i64 values) into out_row (f32*: ow x f floats)."""
        from axle.backends.cpu.kernels_conv_general import library_enabled
        if library_enabled() or self.grouped:  # (grouped: the library's rows only; grouped_block)
            self._library_row(n, oy, out_row)
            return
        ctx, em, px = self.ctx, self.ctx.em, self.px
        if self.c <= LSR_CHANNELS:
            # with an image's few input channels the short window loops are most of the work,
            # and LLVM's loop strength reduction (llvm_env: off unless asked for) takes 15-25%
            # off them; with more channels the channel loop, whose addresses are a pointer plus
            # the channel, is the work and LSR gains 2% for 25% of the kernel's compile time
            want_strength_reduction(ctx.b.function)
        c64 = em.const_i64
        accs = [em.alloca(self.vt) for _ in range(px)]
        full = self.ow // px

        def block(fb, j):
            b = ctx.b
            ox0 = b.mul(j, c64(px))
            # every window column inside the input: no bounds checks
            first = b.sub(b.mul(ox0, c64(self.sx)), c64(self.pl))
            last = b.add(first, c64((px - 1) * self.sx + (self.kw - 1) * self.dx))
            inside = b.and_(b.icmp_signed(">=", first, c64(0)), b.icmp_signed("<", last, c64(self.w)))
            with b.if_else(inside) as (then, otherwise):
                with then:
                    self._pixels(n, oy, ox0, px, fb, accs, out_row, checked=False)
                with otherwise:
                    self._pixels(n, oy, ox0, px, fb, accs, out_row)

        def features(fb):
            em.for_range_dynamic(c64(0), c64(full), lambda j: block(fb, j))
            if self.ow % px:
                self._pixels(n, oy, c64(full * px), self.ow % px, fb, accs, out_row)
        em.for_range_dynamic(c64(0), c64(self.f // self.cb), features)

    def _library_row(self, n, oy, out_row) -> None:
        """row() as a call of conv_runtime's routine (the same loops, sizes in a descriptor)."""
        from axle.backends.cpu.conv_runtime import DFIELDS
        from axle.backends.cpu.lowp_runtime import register
        register("conv")
        ctx = self.ctx
        mod, b = ctx.mod, ctx.b
        vals = dict(h=self.h, w=self.w, c=self.c, kh=self.kh, kw=self.kw, f=self.f, ow=self.ow, sy=self.sy,
                    sx=self.sx, dy=self.dy, dx=self.dx, pt=self.pt, pl=self.pl, packed=int(self.token is not None),
                    window=self.window, px=self.px, ib=self.ib, grouped=int(self.grouped))
        arr = ir.ArrayType(ir.IntType(64), len(DFIELDS))
        g = ir.GlobalVariable(mod, arr, mod.get_unique_name("dconv.desc"))
        g.global_constant, g.linkage = True, "private"
        g.initializer = ir.Constant(arr, [int(vals[f]) for f in DFIELDS])
        p8, i64 = ir.IntType(8).as_pointer(), ir.IntType(64)
        name = f"axle_lowp_dconv_row_f32x{self.cb}"
        fn = mod.globals.get(name) or ir.Function(
            mod, ir.FunctionType(ir.VoidType(), [i64.as_pointer(), p8, p8, p8, i64, i64]), name)
        lhs, rhs = self.op.operands
        wts = ctx.resolve(self.packed_ref) if self.token is not None else ctx.buffer(rhs)
        b.call(fn, [b.bitcast(g, i64.as_pointer()), b.bitcast(ctx.buffer(lhs), p8), b.bitcast(wts, p8),
                    b.bitcast(out_row, p8), n, oy])

    def _pixels(self, n, oy, ox0, npx, fb, accs, out_row, checked=True):
        """Accumulate the block of npx pixels from ox0, features [fb cb, fb cb + cb), and
        store it. Unchecked: every window column of the block is inside the input."""
        ctx, em, cb, vt = self.ctx, self.ctx.em, self.cb, self.vt
        c64 = em.const_i64
        f32 = ir.FloatType()
        i32 = ir.IntType(32)
        name = f"llvm.fmuladd.v{cb}f32"
        fma = ctx.mod.globals.get(name) or ir.Function(ctx.mod, ir.FunctionType(vt, [vt, vt, vt]), name)
        lanes0 = ir.Constant(ir.VectorType(i32, cb), [0] * cb)
        zero = ir.Constant(f32, 0.0)
        b = ctx.b
        for a in accs:
            b.store(ir.Constant(vt, [0.0] * cb), a)
        lhs, rhs = self.op.operands
        src = b.bitcast(ctx.buffer(lhs), f32.as_pointer())
        packed = self.token is not None
        wts = b.bitcast(ctx.resolve(self.packed_ref) if packed else ctx.buffer(rhs), f32.as_pointer())

        def window_row(ky):  # run-time loops over the window: one copy of the code
            b = ctx.b
            iy = b.add(b.mul(oy, c64(self.sy)), b.sub(b.mul(ky, c64(self.dy)), c64(self.pt)))
            inside = b.and_(b.icmp_signed(">=", iy, c64(0)), b.icmp_signed("<", iy, c64(self.h)))
            with b.if_then(inside):
                b = ctx.b
                row = b.mul(b.add(b.mul(n, c64(self.h)), iy), c64(self.w))

                def window_column(kx):
                    # Addresses in the channel loop are a pointer made here plus the channel
                    # (and a constant): no multiply per channel, so the code generator's loop
                    # strength reduction, which this LLVM spends much time on, has nothing to do.
                    b = ctx.b
                    ptrs, oks = [], []
                    for p in range(npx):
                        ok = None
                        if checked or p == 0:
                            ix = b.add(b.mul(b.add(ox0, c64(p)), c64(self.sx)),
                                       b.sub(b.mul(kx, c64(self.dx)), c64(self.pl)))
                        if checked:
                            ok = b.and_(b.icmp_signed(">=", ix, c64(0)), b.icmp_signed("<", ix, c64(self.w)))
                            ix = b.select(ok, ix, c64(0))  # always a valid address
                            ptrs.append(b.gep(src, [b.mul(b.add(row, ix), c64(self.c))], inbounds=True))
                        elif p == 0:
                            ptrs.append(b.gep(src, [b.mul(b.add(row, ix), c64(self.c))], inbounds=True))
                        else:  # every pixel inside: the first pixel's pointer, sx * c floats on each
                            ptrs.append(None)
                        oks.append(ok)
                    wrow = b.mul(b.add(b.mul(ky, c64(self.kw)), kx), c64(self.c))  # weights' row (ky, kx, 0)
                    if packed:  # packed[fb, r, :]
                        wbase = b.gep(wts, [b.mul(b.add(b.mul(fb, c64(self.window)), wrow), c64(cb))], inbounds=True)
                    else:  # w[r, fb cb:]
                        wbase = b.gep(wts, [b.add(b.mul(wrow, c64(self.f)), b.mul(fb, c64(cb)))], inbounds=True)
                    wstep = cb if packed else self.f

                    def channel(ci):
                        b = ctx.b
                        at = b.mul(ci, c64(wstep))
                        wv = b.load(b.bitcast(b.gep(wbase, [at], inbounds=True), vt.as_pointer()), align=4)
                        for p in range(npx):
                            if ptrs[p] is None:
                                x = b.load(b.gep(ptrs[0], [b.add(ci, c64(p * self.sx * self.c))], inbounds=True))
                            else:
                                x = b.load(b.gep(ptrs[p], [ci], inbounds=True))
                            if oks[p] is not None:
                                x = b.select(oks[p], x, zero)
                            xv = b.shuffle_vector(b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(i32, 0)),
                                                  ir.Constant(vt, ir.Undefined), lanes0)
                            b.store(b.call(fma, [xv, wv, b.load(accs[p])]), accs[p])
                    em.for_range_dynamic(c64(0), c64(self.c), channel)  # short too: one copy
                em.for_range_dynamic(c64(0), c64(self.kw), window_column)
        em.for_range_dynamic(c64(0), c64(self.kh), window_row)
        b = ctx.b
        for p in range(npx):
            at = b.add(b.mul(b.add(ox0, c64(p)), c64(self.f)), b.mul(fb, c64(cb)))
            b.store(b.load(accs[p]), b.bitcast(b.gep(out_row, [at], inbounds=True), vt.as_pointer()), align=4)
