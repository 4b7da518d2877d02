"""Shape inference rules of contractions: dot_general, dot, convolution."""
from __future__ import annotations

import numpy as np

from axle.ir.attributes import ArrayAttr, ConvDimensionNumbersAttr, DenseArrayAttr
from axle.ir.types import TensorType
from axle.ir.shape_inference.core import (Inferred, _Ctx, _as_int, _is_quant, _merge_dims, _per_axis,
                                          _result, _rule)

# ---------------------------------------------------------------- contractions


def _dot_dims(c: _Ctx):
    a = c.raw("dot_dimension_numbers")
    d = a.to_python() if a is not None else {}
    get = lambda k: [_as_int(x) for x in d.get(k, [])]  # noqa: E731
    return (get("lhs_batching_dimensions"), get("rhs_batching_dimensions"),
            get("lhs_contracting_dimensions"), get("rhs_contracting_dimensions"))


def _dot_quant(c: _Ctx, lhs: TensorType, rhs: TensorType, rc, shape, first_c: int):
    """Element-type constraints shared by dot_general (first_c = 13) and convolution (27)."""
    le, re_ = lhs.element_type, rhs.element_type
    C = lambda k: f"C{first_c + k}"  # noqa: E731
    if not _is_quant(le) and not _is_quant(re_):
        c.need(le == re_, C(0), f"lhs and rhs element types must match, found {le} and {re_}")
        # The spec ties the result element type to the operands only for convolution
        # (C27), but StableHLO accepts e.g. i8 x i8 -> i32 convolutions (a preferred
        # element type, as dot_general has); the suite has one, so it is free for both.
        return _result(TensorType(shape, le), "shape", C(0))
    if _is_quant(le):
        c.need(_is_quant(re_), C(1), f"a quantized lhs needs a quantized rhs, found {rhs}")
        c.need(le.storage_type == re_.storage_type, C(4),
               f"lhs and rhs storage types must match, found {le.storage_type} and {re_.storage_type}")
        c.need(le.expressed_type == re_.expressed_type, C(5),
               f"lhs and rhs expressed types must match, found {le.expressed_type} and {re_.expressed_type}")
        return _result(TensorType(shape, le), "shape", C(1))
    # hybrid: float lhs, quantized rhs
    c.need(le == re_.expressed_type, C(7),
           f"lhs element type {le} must be the rhs's expressed type {re_.expressed_type}")
    return _result(TensorType(shape, le), "exact", C(7))


@_rule("dot_general")
def _dot_general(c: _Ctx):
    c.count(2)
    lhs, rhs = c.tensors()
    lb, rb, lc, rc = _dot_dims(c)
    c.need(len(lb) == len(rb), "C1", f"lhs_batching_dimensions {lb} and rhs_batching_dimensions {rb} "
           "must have the same size")
    c.need(len(lc) == len(rc), "C2", f"lhs_contracting_dimensions {lc} and rhs_contracting_dimensions {rc} "
           "must have the same size")
    c.need(len(set(lb + lc)) == len(lb + lc), "C3",
           f"lhs batching {lb} and contracting {lc} dimensions must be unique")
    c.need(len(set(rb + rc)) == len(rb + rc), "C4",
           f"rhs batching {rb} and contracting {rc} dimensions must be unique")
    for dims, t, cons, what in ((lb, lhs, "C5", "lhs_batching"), (lc, lhs, "C6", "lhs_contracting"),
                                (rb, rhs, "C7", "rhs_batching"), (rc, rhs, "C8", "rhs_contracting")):
        for d in dims:
            c.need(0 <= d < t.rank, cons, f"{what}_dimensions {dims}: {d} is out of range for rank {t.rank}")
    for cons, ld, rd, what in (("C9", lb, rb, "batching"), ("C10", lc, rc, "contracting")):
        for a, b in zip(ld, rd):
            x, y = lhs.shape[a], rhs.shape[b]
            c.need(x is None or y is None or x == y, cons,
                   f"{what} dimension sizes differ: lhs dim {a} is {x}, rhs dim {b} is {y}")
    pc = c.raw("precision_config")
    if isinstance(pc, ArrayAttr):
        c.need(len(pc.elements) in (0, 2), "C11", f"precision_config must have 2 entries, found {pc}")
    lfree = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    shape = tuple([_merge_dims(lhs.shape[a], rhs.shape[b]) for a, b in zip(lb, rb)]
                  + [lhs.shape[d] for d in lfree] + [rhs.shape[d] for d in rfree])
    if _is_quant(rhs.element_type):
        re_ = rhs.element_type
        c.need(all(z == 0 for z in re_.zero_points), "C15", f"rhs zero points must be 0, found {re_}")
        if _per_axis(re_):
            c.need(re_.quantized_dimension not in rc, "C16",
                   f"rhs quantization dimension {re_.quantized_dimension} must not be a contracting dimension")
    return [_dot_quant(c, lhs, rhs, rc, shape, 13)]


@_rule("dot")
def _dot(c: _Ctx):
    c.count(2)
    lhs, rhs = c.tensors()
    c.need(lhs.rank in (1, 2) and rhs.rank in (1, 2), None,
           f"operands must have rank 1 or 2, found {lhs} and {rhs}")
    x, y = lhs.shape[-1], rhs.shape[0]
    c.need(x is None or y is None or x == y, None, f"contracting dimension sizes differ: {x} and {y}")
    shape = tuple(lhs.shape[:-1]) + tuple(rhs.shape[1:])
    return [_dot_quant(c, lhs, rhs, [0], shape, 13)]


def _num_windows(size, window, stride, lo, hi, base_dil=1, win_dil=1):
    if size is None:
        return None
    dilated = 0 if size == 0 else (size - 1) * base_dil + 1
    padded = lo + dilated + hi
    dwin = 0 if window == 0 else (window - 1) * win_dil + 1
    if padded <= 0 or dwin > padded:
        return 0
    return (padded - dwin) // stride + 1


@_rule("convolution")
def _convolution(c: _Ctx):
    c.count(2)
    lhs, rhs = c.tensors()
    return [_conv_common(c, lhs, rhs)]


def _conv_common(c: _Ctx, lhs: TensorType, rhs: TensorType) -> Inferred:
    N = lhs.rank
    c.need(N == rhs.rank, "C1", f"lhs and rhs must have the same rank, found {lhs} and {rhs}")
    c.need(N >= 2, "C1", f"operands must have rank >= 2, found {N}")
    S = N - 2
    strides = c.ints("window_strides", [1] * S)
    c.need(len(strides) == S, "C2", f"window_strides must have {S} entries, found {strides}")
    c.need(all(s > 0 for s in strides), "C3", f"window_strides must be positive, found {strides}")
    pad, pshape = c.matrix("padding", S)
    c.need(tuple(pshape) == (S, 2), "C4", f"padding must have shape [{S}, 2], found {list(pshape)}")
    lhs_dil = c.ints("lhs_dilation", [1] * S)
    rhs_dil = c.ints("rhs_dilation", [1] * S)
    c.need(len(lhs_dil) == S, "C5", f"lhs_dilation must have {S} entries, found {lhs_dil}")
    c.need(all(s > 0 for s in lhs_dil), "C6", f"lhs_dilation must be positive, found {lhs_dil}")
    c.need(len(rhs_dil) == S, "C7", f"rhs_dilation must have {S} entries, found {rhs_dil}")
    c.need(all(s > 0 for s in rhs_dil), "C8", f"rhs_dilation must be positive, found {rhs_dil}")
    rev = c.raw("window_reversal")
    if rev is not None:
        n = len(rev.values) if isinstance(rev, DenseArrayAttr) else len(np.asarray(rev.to_python()).reshape(-1))
        c.need(n == S, "C9", f"window_reversal must have {S} entries, found {n}")
    dn = c.raw("dimension_numbers")
    if not isinstance(dn, ConvDimensionNumbersAttr):
        c.fail(None, "missing or malformed attribute 'dimension_numbers'")
    fgc = c.int("feature_group_count", 1)
    bgc = c.int("batch_group_count", 1)
    c.need(fgc > 0, "C21", f"feature_group_count must be positive, found {fgc}")
    c.need(bgc > 0, "C22", f"batch_group_count must be positive, found {bgc}")
    c.need(fgc == 1 or bgc == 1, "C23", f"feature_group_count ({fgc}) or batch_group_count ({bgc}) must be 1")
    ib, if_, isp = dn.input_batch_dimension, dn.input_feature_dimension, list(dn.input_spatial_dimensions)
    ki, ko, ksp = (dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension,
                   list(dn.kernel_spatial_dimensions))
    ob, of, osp = dn.output_batch_dimension, dn.output_feature_dimension, list(dn.output_spatial_dimensions)
    c.need(len(isp) == S, "C12", f"input_spatial_dimensions must have {S} entries, found {isp}")
    c.need(len(ksp) == S, "C17", f"kernel_spatial_dimensions must have {S} entries, found {ksp}")
    c.need(len(osp) == S, "C19", f"output_spatial_dimensions must have {S} entries, found {osp}")
    for dims, cons, what in (([ib] + isp + [if_], "C13", "input"), (ksp + [ki, ko], "C18", "kernel"),
                             ([ob] + osp + [of], "C20", "output")):
        c.need(len(set(dims)) == len(dims) and all(0 <= d < N for d in dims), cons,
               f"{what} dimensions {dims} must be unique and in [0, {N})")
    bdim, fdim = lhs.shape[ib], lhs.shape[if_]
    c.need(bdim is None or bdim % bgc == 0, "C10",
           f"input batch dimension size {bdim} must be divisible by batch_group_count {bgc}")
    c.need(fdim is None or fdim % fgc == 0, "C11",
           f"input feature dimension size {fdim} must be divisible by feature_group_count {fgc}")
    kin, kout = rhs.shape[ki], rhs.shape[ko]
    c.need(fdim is None or kin is None or kin == fdim // fgc, "C14",
           f"kernel input feature size {kin} must be input feature size {fdim} / feature_group_count {fgc}")
    c.need(kout is None or kout % bgc == 0, "C15",
           f"kernel output feature size {kout} must be divisible by batch_group_count {bgc}")
    c.need(kout is None or kout % fgc == 0, "C16",
           f"kernel output feature size {kout} must be divisible by feature_group_count {fgc}")
    pc = c.raw("precision_config")
    if isinstance(pc, ArrayAttr):
        c.need(len(pc.elements) in (0, 2), "C24", f"precision_config must have 2 entries, found {pc}")
    shape: list = [None] * N
    shape[ob] = None if bdim is None else bdim // bgc
    shape[of] = kout
    for s in range(S):
        lo, hi = pad[s]
        win = rhs.shape[ksp[s]]
        if win is None:  # a dynamic window: a dynamic result dimension
            shape[osp[s]] = None
            continue
        shape[osp[s]] = _num_windows(lhs.shape[isp[s]], win, strides[s], lo, hi, lhs_dil[s], rhs_dil[s])
    le, re_ = lhs.element_type, rhs.element_type
    if _per_axis(re_):
        c.need(re_.quantized_dimension == ko, "C29", f"rhs quantization dimension {re_.quantized_dimension} "
               f"must be kernel_output_feature_dimension {ko}")
    res = _dot_quant(c, lhs, rhs, [], tuple(shape), 27)
    return Inferred(res.type, res.match, "C25" if res.match == "shape" else res.constraint)
