"""Order statistics and data-dependent placement: median / nanmedian / kthvalue (values and
indices, from the stable sort), bucketize / searchsorted (1-D or batched sequences),
masked_scatter and its backward, and nn.Embedding's max_norm renormalization."""
from __future__ import annotations

import math

from axle.torch.registry import RULES, Unsupported, V, aten, dim, is_float, opmath, rule, shape_of, value
from axle.torch.rules_reduce import _sorted
from axle.torch.rules_shape import _full_index, _gather_points, _scatter_points


# ---- order statistics

def _pick(em, out, a: V, d, pos, keepdim: bool):
    """(values, int64 indices) of a's element at sorted position `pos` along d (stable,
    NaN largest: PyTorch's order): pos an int, or an i64 value of a's shape with d of size 1."""
    if a.rank == 0:
        return a, em.const(0, "i64")
    d = dim(d, a.rank)
    v, i = _sorted(em, a, d, False)
    if isinstance(pos, int):
        lo = [0] * a.rank
        lo[d] = pos
        hi = list(a.shape)
        hi[d] = pos + 1
        v, i = (em.slice(t, lo, hi, [1] * a.rank) for t in (v, i))
    else:
        coords = _full_index(em, pos, d)
        v, i = _gather_points(em, v, coords, pos.shape), _gather_points(em, i, coords, pos.shape)
    return em.reshape(v, shape_of(out[0])), em.reshape(i, shape_of(out[1]))


def _nan_count(em, a: V, d: int) -> V:
    """The number of NaNs along d, keeping d as size 1 (i64)."""
    nan = em.convert(em.compare("NE", a, a), "i64")
    kept = tuple(1 if k == d else n for k, n in enumerate(a.shape))
    return em.reshape(em.reduce_simple(nan, [d], "add", 0), kept)


def _median(ignore_nan: bool):
    def lower(em, out, a, d=0, keepdim=False):
        """The lower median along d and its index, as eager: median of a row with a NaN is
        its first NaN; nanmedian the lower median of the row's other values (an all-NaN row:
        NaN at position 0). Eager's selection breaks ties by index, as the stable sort."""
        if a.rank == 0:
            return a, em.const(0, "i64")
        d = dim(d, a.rank)
        n = a.shape[d]
        if n == 0:
            raise Unsupported("median of an empty dimension")
        if not is_float(a.dtype):
            return _pick(em, out, a, d, (n - 1) // 2, keepdim)
        nans = _nan_count(em, a, d)
        shape = nans.shape
        c = lambda v: em.const(v, "i64", shape)  # noqa: E731
        if ignore_nan:  # (m - 1) / 2 of the m other values, truncated toward 0 as in C++
            pos = em.binary("divide", em.binary("subtract", em.binary("subtract", c(n), nans), c(1)), c(2))
        else:
            pos = em.select(em.compare("GT", nans, c(0)), em.binary("subtract", c(n), nans), c((n - 1) // 2))
        return _pick(em, out, a, d, pos, keepdim)
    return lower


def _median_all(ignore_nan: bool):
    def lower(em, out, a):
        flat = em.reshape(a, (math.prod(a.shape),))
        v, _ = _median(ignore_nan)(em, [out, ((), "i64")], flat, 0)
        return v
    return lower


rule(aten.median.dim)(_median(False))
rule(aten.nanmedian.dim)(_median(True))
rule(aten.median.default)(_median_all(False))
rule(aten.nanmedian.default)(_median_all(True))


@rule(aten.kthvalue.default)
def _kthvalue(em, out, a, k, d=-1, keepdim=False):
    """The k-th smallest along d (NaN largest) and its index (on ties an index of an equal
    element: the stable order's, where eager's quickselect picks any)."""
    n = a.shape[dim(d, a.rank)] if a.rank else 1
    if not 1 <= k <= n:
        raise Unsupported(f"kthvalue k={k} out of range")
    return _pick(em, out, a, d, k - 1, keepdim)


# ---- bucketize / searchsorted

def _below_by_counting(em, seq: V, x: V, right: bool, ct: str) -> V:
    """How many of the (sorted) entries of each row of seq are below x: one comparison per
    entry, counted (x NaN: all, as eager's search ends)."""
    m = seq.shape[-1]
    xs = em.broadcast_in_dim(x, tuple(x.shape) + (m,), list(range(x.rank)))
    sdims = [x.rank] if seq.rank == 1 else list(range(x.rank - 1)) + [x.rank]
    bs = em.broadcast_in_dim(seq, xs.shape, sdims)
    below = em.unary("not", em.compare("GT" if right else "GE", bs, xs))
    return em.reduce_simple(em.convert(below, "i64"), [x.rank], "add", 0)


def _below_by_bisection(em, seq: V, x: V, right: bool) -> V:
    """Eager's binary search, step for step: while start < end, mid = (start + end) / 2,
    start = mid + 1 where !(seq[mid] >= x) (> with right), else end = mid; floor(log2 m)
    + 1 steps of one gather each from seq's elements (unrolled: 1e5 values in 1000
    entries 1.2 ms, eager 9; as a while loop 1.7 ms, compiled no faster)."""
    m = seq.shape[-1]
    shape = x.shape
    c = lambda v: em.const(v, "i64", shape)  # noqa: E731
    start, end = c(0), c(m)
    flat = em.reshape(seq, (math.prod(seq.shape),))
    row = c(0)  # the offset of each value's row in seq's elements
    for k in range(seq.rank - 1):
        stride = math.prod(seq.shape[k + 1:])
        row = em.binary("add", row, em.binary("multiply", em.iota(shape, k, "i64"), c(stride)))
    for _ in range(m.bit_length()):
        mid = em.binary("shift_right_logical", em.binary("add", start, end), c(1))
        at = em.binary("add", row, em.binary("minimum", mid, c(m - 1)))
        val = _gather_points(em, flat, em.reshape(at, shape + (1,)), shape)
        go_right = em.unary("not", em.compare("GT" if right else "GE", val, x))
        live = em.compare("LT", start, end)
        start = em.select(em.binary("and", live, go_right), em.binary("add", mid, c(1)), start)
        end = em.select(em.binary("and", live, em.unary("not", go_right)), mid, end)
    return start


def _search(em, out, seq: V, x, right: bool, sorter=None) -> V:
    """The insertion points of x in seq (1-D, or rows matching x's leading dimensions):
    counted for up to 64 entries, bisected beyond (the two agree unless seq holds NaNs)."""
    if not isinstance(x, V):
        x = em.const(x, seq.dtype)
    if seq.rank > 1 and (x.rank != seq.rank or x.shape[:-1] != seq.shape[:-1]):
        raise Unsupported("searchsorted with mismatched leading dimensions")
    if sorter is not None:
        seq = _gather_points(em, seq, _full_index(em, sorter, seq.rank - 1), sorter.shape)
    ct = opmath(x.dtype) if is_float(x.dtype) or is_float(seq.dtype) else "i64"
    seq, x = em.convert(seq, ct), em.convert(x, ct)
    m = seq.shape[-1]
    if m == 0:
        return em.const(0, out[1], shape_of(out))
    r = _below_by_counting(em, seq, x, right, ct) if m <= 64 else _below_by_bisection(em, seq, x, right)
    return em.convert(r, out[1])


@rule(aten.bucketize.Tensor)
def _bucketize(em, out, x, boundaries, out_int32=False, right=False):
    return _search(em, out, boundaries, x, right)


@rule(aten.searchsorted.Tensor, aten.searchsorted.Scalar)
def _searchsorted(em, out, seq, x, out_int32=False, right=False, side=None, sorter=None):
    return _search(em, out, seq, x, right or side == "right", sorter)


# ---- masked_scatter

def _mask_positions(em, mask: V, shape):
    """The mask broadcast to shape, flattened (i1), and each element's position among the
    true ones in row-major order (an inclusive prefix count less one, i64)."""
    n = math.prod(shape)
    flat = em.reshape(em.broadcast_to(em.convert(mask, "i1"), shape), (n,))
    count = RULES[aten.cumsum.default](em, ((n,), "i64"), em.convert(flat, "i64"), 0)
    return flat, em.binary("subtract", count, em.const(1, "i64", (n,)))


@rule(aten.masked_scatter.default)
def _masked_scatter(em, out, a, mask, source):
    """The true positions of mask, in row-major order, take source's elements in order."""
    shape, dt = shape_of(out), out[1]
    n, s = math.prod(shape), math.prod(source.shape)
    base = em.reshape(value(em, a, dt, shape), (n,))
    if s == 0 or n == 0:
        return em.reshape(base, shape)
    flat, pos = _mask_positions(em, mask, shape)
    at = em.reshape(em.binary("minimum", em.binary("maximum", pos, em.const(0, "i64", (n,))),
                              em.const(s - 1, "i64", (n,))), (n, 1))
    taken = _gather_points(em, em.reshape(em.convert(source, dt), (s,)), at, (n,))
    return em.reshape(em.select(flat, taken, base), shape)


@rule(aten.masked_scatter_backward.default)
def _masked_scatter_backward(em, out, grad, mask, sizes):
    """source's gradient: grad at the true positions of mask, in order, zeros after them."""
    shape, dt = shape_of(out), out[1]
    s, n = math.prod(shape), math.prod(grad.shape)
    if s == 0 or n == 0:
        return em.const(0, dt, shape)
    flat, pos = _mask_positions(em, mask, grad.shape)
    at = em.reshape(em.select(flat, pos, em.const(s, "i64", (n,))), (n, 1))  # unmasked: a spare slot
    r = _scatter_points(em, em.const(0, dt, (s + 1,)), at, em.reshape(grad, (n,)), "add")
    return em.reshape(em.slice(r, [0], [s], [1]), shape)


# ---- nn.Embedding(max_norm=...)

@rule(aten.embedding_renorm.default)
def _embedding_renorm(em, out, weight, indices, max_norm, norm_type):
    """The rows of weight that indices name, scaled by max_norm / (norm + 1e-7) where their
    norm exceeds max_norm (eager's embedding_renorm_: the norm in the weight's type, the
    scale in double, rounded to the compute type, then multiplied)."""
    if weight.rank != 2:
        raise Unsupported("embedding_renorm of a weight that is not a matrix")
    rows, dt = weight.shape[0], weight.dtype
    ct = opmath(dt)
    k = math.prod(indices.shape)
    idx = em.reshape(em.convert(indices, "i64"), (k, 1))
    touched = _scatter_points(em, em.const(False, "i1", (rows,)), idx, em.const(True, "i1", (k,)), "or")
    norm = RULES[aten.linalg_vector_norm.default](em, ((rows,), dt), weight, norm_type, [1], False)
    wide = em.convert(norm, "f64")
    big = em.binary("and", touched, em.compare("GT", wide, em.const(max_norm, "f64", (rows,))))
    scale = em.binary("divide", em.const(max_norm, "f64", (rows,)),
                      em.binary("add", wide, em.const(1e-7, "f64", (rows,))))
    scale = em.broadcast_in_dim(em.convert(scale, ct), weight.shape, [0])
    scaled = em.convert(em.binary("multiply", em.convert(weight, ct), scale), dt)
    return em.select(em.broadcast_in_dim(big, weight.shape, [0]), scaled, weight)
