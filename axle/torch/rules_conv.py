"""Convolutions and pooling (N-d, channels first): convolution, convolution_backward,
max_pool2d / 3d_with_indices(_backward), avg_pool2d / 3d(_backward), adaptive average and max
pooling over 2-D and 3-D planes (and their gradients), any output size."""
from __future__ import annotations

import math

import numpy as np

from axle.torch.registry import Unsupported, V, aten, opmath, rule, shape_of
from axle.torch.rules_reduce import _extreme


def _layout(n: int) -> str:
    sp = ", ".join(str(i) for i in range(n))
    return f"[b, f, {sp}]x[o, i, {sp}]->[b, f, {sp}]"


def conv(em, x: V, w: V, shape, stride, pad_lo, pad_hi, dilation, groups=1, lhs_dilation=None,
         layout=None, batch_groups=1) -> V:
    n = len(stride)
    lhs_dilation = lhs_dilation or [1] * n
    pad = ", ".join(f"[{lo}, {hi}]" for lo, hi in zip(pad_lo, pad_hi))
    attrs = (f"dimension_numbers = #stablehlo.conv<{layout or _layout(n)}>, "
             f"window_strides = array<i64: {', '.join(map(str, stride))}>, "
             f"padding = dense<[{pad}]> : tensor<{n}x2xi64>, "
             f"lhs_dilation = array<i64: {', '.join(map(str, lhs_dilation))}>, "
             f"rhs_dilation = array<i64: {', '.join(map(str, dilation))}>, "
             f"feature_group_count = {groups} : i64, batch_group_count = {batch_groups} : i64")
    return em.op("stablehlo.convolution", [x, w], shape, x.dtype, attrs)


def _expand(v, n):
    v = [v] if isinstance(v, int) else list(v)
    return v * n if len(v) == 1 else v


@rule(aten.convolution.default)
def _convolution(em, out, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    shape, dt = shape_of(out), out[1]
    n = x.rank - 2
    stride, padding, dilation = _expand(stride, n), _expand(padding, n), _expand(dilation, n)
    ct = opmath(dt)
    xc, wc = em.convert(x, ct), em.convert(w, ct)
    if transposed:
        y = _conv_input_grad(em, xc, wc, shape, stride, padding, dilation, groups)
    else:
        y = conv(em, xc, wc, shape, stride, padding, padding, dilation, groups)
    if bias is not None:
        y = em.binary("add", y, em.broadcast_in_dim(em.convert(bias, ct), shape, [1]))
    return em.convert(y, dt)


def _conv_input_grad(em, g: V, w: V, in_shape, stride, padding, dilation, groups) -> V:
    """The gradient of a convolution wrt its input (= a transposed convolution of g by w)."""
    n = len(stride)
    k = w.shape[2:]
    o, ig = w.shape[0], w.shape[1]
    sp = ", ".join(str(i) for i in range(n))
    layout = None
    if groups > 1:  # (O, I/g, k) -> (g, O/g, I/g, k) -> (g, I/g, O/g, k) -> (I, O/g, k)
        w = em.reshape(w, (groups, o // groups, ig) + tuple(k))
        w = em.transpose(w, [0, 2, 1] + list(range(3, 3 + n)))
        w = em.reshape(w, (groups * ig, o // groups) + tuple(k))
    else:  # w read as [i, o, k...] (as JAX writes it): no transpose to materialize, only the flip
        layout = f"[b, f, {sp}]x[i, o, {sp}]->[b, f, {sp}]"
    w = em.op("stablehlo.reverse", [w], w.shape, w.dtype,
              f"dimensions = array<i64: {', '.join(str(2 + i) for i in range(n))}>")
    lo, hi = [], []
    for d in range(n):
        ek = dilation[d] * (k[d] - 1)
        lo.append(ek - padding[d])
        # output size lo + (G-1)*stride + 1 + hi - ek must be the input's (rows the forward
        # convolution never read get zero gradient)
        hi.append(in_shape[2 + d] + padding[d] - (g.shape[2 + d] - 1) * stride[d] - 1)
    return conv(em, g, w, in_shape, [1] * n, lo, hi, dilation, groups, lhs_dilation=stride, layout=layout)


@rule(aten.convolution_backward.default)
def _convolution_backward(em, out, g, x, w, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, mask):
    n = x.rank - 2
    stride, padding, dilation = _expand(stride, n), _expand(padding, n), _expand(dilation, n)
    ct = opmath(x.dtype)
    gc, xc, wc = em.convert(g, ct), em.convert(x, ct), em.convert(w, ct)
    results = [None, None, None]
    k = w.shape[2:]
    if mask[0]:
        if transposed:  # the adjoint of the transposed convolution: the plain one, g -> x
            hi = [max(0, (x.shape[2 + d] - 1) * stride[d] + dilation[d] * (k[d] - 1) + 1 - g.shape[2 + d] - padding[d])
                  for d in range(n)]
            dx = conv(em, gc, wc, x.shape, stride, padding, hi, dilation, groups)
        else:
            dx = _conv_input_grad(em, gc, wc, x.shape, stride, padding, dilation, groups)
        results[0] = em.convert(dx, x.dtype)
    if mask[1]:  # a transposed convolution's weight is that of the plain one from g to x
        inp, grad = (gc, xc) if transposed else (xc, gc)
        results[1] = em.convert(_filter_grad(em, inp, grad, w.shape, stride, padding, dilation, groups), w.dtype)
    if mask[2]:
        s = em.reduce_simple(gc, [0] + list(range(2, 2 + n)), "add", 0)
        results[2] = em.convert(s, g.dtype)
    return tuple(results)


def _filter_grad(em, x: V, g: V, w_shape, stride, padding, dilation, groups) -> V:
    """The gradient of the weight [O, I / groups, k...] of the convolution x -> g: the input
    (channels as batch) correlated with the gradient (batch as features), one group at a
    time; depthwise, all at once (a batch group per channel, as JAX writes it)."""
    n = x.rank - 2
    k = w_shape[2:]
    hi = [(k[d] - 1) * dilation[d] + (g.shape[2 + d] - 1) * stride[d] + 1 - x.shape[2 + d] - padding[d]
          for d in range(n)]
    if any(h < 0 for h in hi):  # (output_padding beyond the padding) the last rows are never read
        limit = list(x.shape)
        for d in range(n):
            if hi[d] < 0:
                limit[2 + d] += hi[d]
                hi[d] = 0
        x = em.slice(x, [0] * x.rank, limit, [1] * x.rank)
    sp = ", ".join(str(i) for i in range(n))
    ci, co = x.shape[1] // groups, g.shape[1] // groups
    if groups > 1 and ci == 1 and co == 1:
        return conv(em, x, g, tuple(w_shape), dilation, padding, hi, stride,
                    layout=f"[f, b, {sp}]x[i, o, {sp}]->[f, b, {sp}]", batch_groups=groups)
    parts = []
    for j in range(groups):
        xj = _channels(em, x, j * ci, (j + 1) * ci)
        gj = _channels(em, g, j * co, (j + 1) * co)
        part = conv(em, xj, gj, (ci, co) + tuple(k), dilation, padding, hi, stride,
                    layout=f"[f, b, {sp}]x[i, o, {sp}]->[b, f, {sp}]")
        parts.append(em.transpose(part, [1, 0] + list(range(2, 2 + n))))
    return em.concat(parts, 0)


def _channels(em, v: V, lo: int, hi: int) -> V:
    if lo == 0 and hi == v.shape[1]:
        return v
    start, limit = [0] * v.rank, list(v.shape)
    start[1], limit[1] = lo, hi
    return em.slice(v, start, limit, [1] * v.rank)


def _pool_geometry(x, kernel, stride, padding, dilation, ceil_mode, n=2):
    kernel = _expand(kernel, n)
    stride = _expand(stride, n) if stride else kernel
    padding, dilation = _expand(padding, n), _expand(dilation, n)
    lo, hi, outs = [], [], []
    for d in range(n):
        size = x.shape[x.rank - n + d]
        span = dilation[d] * (kernel[d] - 1) + 1
        num = size + 2 * padding[d] - span
        o = (-(-num // stride[d]) if ceil_mode else num // stride[d]) + 1
        if ceil_mode and (o - 1) * stride[d] >= size + padding[d]:
            o -= 1
        lo.append(padding[d])
        hi.append((o - 1) * stride[d] + span - size - padding[d])
        outs.append(o)
    return kernel, stride, dilation, lo, hi, outs


def _window_attrs(rank, kernel, stride, dilation, lo, hi):
    lead = rank - len(kernel)
    pads = ", ".join(["[0, 0]"] * lead + [f"[{a}, {b}]" for a, b in zip(lo, hi)])
    arr = lambda v: "array<i64: " + ", ".join(str(x) for x in [1] * lead + list(v)) + ">"
    return (f"window_dimensions = {arr(kernel)}, window_strides = {arr(stride)}, "
            f"window_dilations = {arr(dilation)}, padding = dense<[{pads}]> : tensor<{rank}x2xi64>")


def _max_pool_nd(n):
    def lower(em, out, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
        """The window maxima and the flat index of each within its (spatial) plane."""
        kernel, stride, dilation, lo, hi, _ = _pool_geometry(x, kernel, stride, padding, dilation, ceil_mode, n)
        plane = x.shape[-n:]
        idx = None
        for d in range(n):  # row-major position over the last n dimensions
            term = em.iota(x.shape, x.rank - n + d, "i64")
            idx = term if idx is None else em.binary("add", em.binary("multiply", idx, em.const(plane[d], "i64", x.shape)), term)

        region = em.scalar_region([x.dtype, "i64"], _first_max)
        shape = shape_of(out[0])
        init = [em.const(_extreme(x.dtype, True), x.dtype), em.const(-1, "i64")]
        v, i = em.op_multi("stablehlo.reduce_window", [x, idx] + init, [(shape, x.dtype), (shape, "i64")],
                           _window_attrs(x.rank, kernel, stride, dilation, lo, hi), region)
        return v, i
    return lower


rule(aten.max_pool2d_with_indices.default)(_max_pool_nd(2))
rule(aten.max_pool3d_with_indices.default)(_max_pool_nd(3))


def _max_pool_backward_nd(n):
    def lower(em, out, g, x, kernel, stride, padding, dilation, ceil_mode, indices):
        """Scatter-add each gradient to the flat input position its window's maximum came from."""
        lead = x.rank - n
        flat_x = x.shape[:lead] + (math.prod(x.shape[lead:]),)
        flat_i = indices.shape[:lead] + (math.prod(indices.shape[lead:]),)
        idx = em.reshape(indices, flat_i)
        gf = em.reshape(em.convert(g, x.dtype), flat_i)
        cols = [em.reshape(em.iota(flat_i, d, "i64"), flat_i + (1,)) for d in range(lead)]
        cols.append(em.reshape(idx, flat_i + (1,)))
        coords = em.concat(cols, len(flat_i))
        ct = opmath(x.dtype)
        zero = em.const(0, ct, flat_x)
        ds = ", ".join(map(str, range(len(flat_x))))
        dn = (f"#stablehlo.scatter<inserted_window_dims = [{ds}], scatter_dims_to_operand_dims = [{ds}], "
              f"index_vector_dim = {len(flat_i)}>")
        region = em.scalar_region([ct], lambda e, l, r: [e.binary("add", l[0], r[0])])
        r = em.op("stablehlo.scatter", [zero, coords, em.convert(gf, ct)], flat_x, ct,
                  f"scatter_dimension_numbers = {dn}, indices_are_sorted = false, unique_indices = false", region)
        return em.convert(em.reshape(r, x.shape), x.dtype)
    return lower


rule(aten.max_pool2d_with_indices_backward.default)(_max_pool_backward_nd(2))
rule(aten.max_pool3d_with_indices_backward.default)(_max_pool_backward_nd(3))


def _window_sum(em, x, kernel, stride, lo, hi):
    n = len(kernel)
    region = em.scalar_region([x.dtype], lambda e, l, r: [e.binary("add", l[0], r[0])])
    rank = x.rank
    out = [x.shape[d] for d in range(rank - n)] + [
        (x.shape[rank - n + d] + lo[d] + hi[d] - kernel[d]) // stride[d] + 1 for d in range(n)]
    return em.op("stablehlo.reduce_window", [x, em.const(0, x.dtype)], out, x.dtype,
                 _window_attrs(rank, kernel, stride, [1] * n, lo, hi), region)


def _avg_counts(em, x, ct, kernel, stride, padding, lo, hi, out_shape, count_include_pad, divisor_override):
    """Each window's divisor, broadcast to the pooled shape."""
    n = len(kernel)
    if divisor_override:
        return em.const(divisor_override, ct, out_shape)
    # the count of each window: inside the padded input (count_include_pad) or the input
    ones = em.const(1, ct, x.shape[-n:])
    if count_include_pad:
        ones = em.pad(ones, em.const(1, ct), padding, padding)
        ones = em.pad(ones, em.const(0, ct), [0] * n, [h - p for h, p in zip(hi, padding)])
    else:
        ones = em.pad(ones, em.const(0, ct), lo, hi)
    c = _window_sum(em, em.reshape(ones, (1, 1) + ones.shape), kernel, stride, [0] * n, [0] * n)
    return em.broadcast_in_dim(em.reshape(c, c.shape[-n:]), out_shape, list(range(len(out_shape) - n, len(out_shape))))


def _avg_pool_nd(n):
    def lower(em, out, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
        kernel, stride, _, lo, hi, _ = _pool_geometry(x, kernel, stride, padding, 1, ceil_mode, n)
        ct = opmath(x.dtype)
        s = _window_sum(em, em.convert(x, ct), kernel, stride, lo, hi)
        cnt = _avg_counts(em, x, ct, kernel, stride, _expand(padding, n), lo, hi, s.shape, count_include_pad,
                          divisor_override)
        return em.convert(em.binary("divide", s, cnt), out[1])
    return lower


_avg_pool = _avg_pool_nd(2)
rule(aten.avg_pool2d.default)(_avg_pool)
rule(aten.avg_pool3d.default)(_avg_pool_nd(3))


def _avg_pool_backward_nd(n):
    def lower(em, out, g, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
        """Each window's gradient over its divisor, spread over the window: the gradient
        dilated by the stride, padded by the window less the forward padding, window-summed."""
        kernel, stride, _, lo, hi, _ = _pool_geometry(x, kernel, stride, padding, 1, ceil_mode, n)
        ct = opmath(x.dtype)
        cnt = _avg_counts(em, x, ct, kernel, stride, _expand(padding, n), lo, hi, g.shape, count_include_pad,
                          divisor_override)
        gs = em.binary("divide", em.convert(g, ct), cnt)
        lead = g.rank - n
        low = [0] * lead + [k - 1 - p for k, p in zip(kernel, lo)]
        high = [0] * lead + [x.shape[lead + d] - (g.shape[lead + d] - 1) * stride[d] - 1 + lo[d] for d in range(n)]
        padded = em.pad(gs, em.const(0, ct), low, high, [0] * lead + [s_ - 1 for s_ in stride])
        return em.convert(_window_sum(em, padded, kernel, [1] * n, [0] * n, [0] * n), out[1])
    return lower


rule(aten.avg_pool2d_backward.default)(_avg_pool_backward_nd(2))
rule(aten.avg_pool3d_backward.default)(_avg_pool_backward_nd(3))


def _bins(size: int, out: int) -> list:
    """Adaptive pooling's bins along one dimension: [floor(i size / out), ceil((i + 1) size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _along(em, x: V, d: int, m, ct: str) -> V:
    """x with dimension d replaced by m @ x along it (m a constant [out, size] matrix)."""
    mat = em.dense(np.asarray(m, np.float64), ct)
    dn = (f"#stablehlo.dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], "
          f"lhs_contracting_dimensions = [{d}], rhs_contracting_dimensions = [1]>")
    shape = [n for i, n in enumerate(x.shape) if i != d] + [len(m)]
    y = em.op("stablehlo.dot_general", [x, mat], shape, ct, f"dot_dimension_numbers = {dn}")
    perm = list(range(d)) + [x.rank - 1] + list(range(d, x.rank - 1))
    return em.transpose(y, perm)


def _adaptive_avg_nd(n, backward=False):
    def lower(em, out, *args):
        """The mean over each bin, separable: one constant matrix per spatial dimension (1 /
        bin length over the bin), applied along it; the gradient applies the transposes."""
        g, x, size = (args[0], args[1], None) if backward else (None, args[0], args[1])
        lead = x.rank - n
        ct = opmath(x.dtype)
        insize = x.shape[lead:]
        outsize = g.shape[lead:] if backward else _expand(size, n)
        if not backward and all(i % o == 0 for i, o in zip(insize, outsize)):
            k = [i // o for i, o in zip(insize, outsize)]
            return _avg_pool_nd(n)(em, out, x, k, k, 0)
        y = em.convert(g if backward else x, ct)
        for d in range(n):
            m = np.zeros((outsize[d], insize[d]))
            for i, (a, b) in enumerate(_bins(insize[d], outsize[d])):
                m[i, a:b] = 1.0 / (b - a)
            y = _along(em, y, lead + d, m.T if backward else m, ct)
        return em.convert(y, out[1])
    return lower


rule(aten._adaptive_avg_pool2d.default)(_adaptive_avg_nd(2))
rule(aten._adaptive_avg_pool3d.default)(_adaptive_avg_nd(3))
rule(aten._adaptive_avg_pool2d_backward.default)(_adaptive_avg_nd(2, backward=True))
rule(aten._adaptive_avg_pool3d_backward.default)(_adaptive_avg_nd(3, backward=True))


def _adaptive_max_nd(n):
    def lower(em, out, x, size):
        """Each bin's maximum and its flat index in the plane: the bins gathered along each
        spatial dimension as [out, longest bin] (a shorter bin repeats its last position:
        the maximum is unchanged, and the first of equal values keeps the smaller index),
        then one reduction over the bins' positions."""
        from axle.torch.rules_shape import _gather_indices
        lead = x.rank - n
        insize = x.shape[lead:]
        outsize = _expand(size, n)
        if all(o == 1 for o in outsize):  # global: an argmax over the flattened plane (as a
            # window of the whole plane it ran at 0.9 GB/s: 1.3 ms against eager's 0.09 for
            # 4 x 64 x 32 x 32)
            flat = tuple(x.shape[:lead]) + (int(np.prod(insize)),)
            xf = em.reshape(x, flat)
            idx = em.iota(flat, lead, "i64")
            v, i = em.reduce([xf, idx], [em.const(_extreme(x.dtype, True), x.dtype), em.const(-1, "i64")],
                             [lead], _first_max)
            return em.reshape(v, shape_of(out[0])), em.reshape(i, shape_of(out[1]))
        if all(i % o == 0 for i, o in zip(insize, outsize)):
            k = [i // o for i, o in zip(insize, outsize)]
            return _max_pool_nd(n)(em, out, x, k, k, 0)
        idx = None
        for d in range(n):  # row-major position over the plane
            term = em.iota(x.shape, lead + d, "i64")
            idx = term if idx is None else em.binary("add", em.binary("multiply", idx, em.const(insize[d], "i64", x.shape)), term)
        vals = x
        for d in reversed(range(n)):  # from the last, so earlier dimensions keep their positions
            bins = _bins(insize[d], outsize[d])
            k = max(b - a for a, b in bins)
            table = em.dense(np.asarray([[min(a + j, b - 1) for j in range(k)] for a, b in bins], np.int64), "i64")
            vals = _gather_indices(em, vals, [None] * (lead + d) + [table])
            idx = _gather_indices(em, idx, [None] * (lead + d) + [table])
        # dims: lead..., (out_0, k_0), (out_1, k_1), ...: reduce the k's
        red = [lead + 2 * d + 1 for d in range(n)]
        v, i = em.reduce([vals, idx], [em.const(_extreme(x.dtype, True), x.dtype), em.const(-1, "i64")], red,
                         _first_max)
        return em.reshape(v, shape_of(out[0])), em.reshape(i, shape_of(out[1]))
    return lower


def _first_max(e, l, r):
    """The larger value; the first (smallest index) among equals; NaN wins."""
    lv, li, rv, ri = l[0], l[1], r[0], r[1]
    take_l = e.binary("or", e.compare("GT", lv, rv), e.compare("NE", lv, lv))
    tie = e.binary("and", e.compare("EQ", lv, rv), e.compare("LT", li, ri))
    take_l = e.binary("or", take_l, tie)
    take_l = e.binary("and", take_l, e.unary("not", e.binary("and", e.compare("NE", rv, rv), e.compare("EQ", lv, lv))))
    return [e.select(take_l, lv, rv), e.select(take_l, li, ri)]


rule(aten.adaptive_max_pool2d.default)(_adaptive_max_nd(2))
rule(aten.adaptive_max_pool3d.default)(_adaptive_max_nd(3))


def _adaptive_max_backward_nd(n):
    def lower(em, out, g, x, indices):
        return _max_pool_backward_nd(n)(em, out, g, x, None, None, None, None, None, indices)
    return lower


rule(aten.adaptive_max_pool2d_backward.default)(_adaptive_max_backward_nd(2))
rule(aten.adaptive_max_pool3d_backward.default)(_adaptive_max_backward_nd(3))
