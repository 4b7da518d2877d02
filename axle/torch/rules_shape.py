"""ATen view, layout, indexing and creation ops (results are always fresh, contiguous tensors:
StableHLO has values, not views; as_strided reads its input in memory order, from the strides
the lowering passes), scatters with reductions (bucketize / searchsorted: rules_select.py)."""
from __future__ import annotations

import math

from axle.torch.registry import Unsupported, V, aten, dim, is_float, rule, shape_of, value, opmath


@rule(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.view_copy.default,
      aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
      aten.flatten.using_ints, aten.unflatten.int)
def _reshape(em, out, a, *_):
    return em.reshape(a, shape_of(out))


@rule(aten.alias.default, aten.detach.default, aten.clone.default, aten.lift_fresh_copy.default,
      aten.contiguous.default)
def _identity(em, out, a, *_, **__):
    return a


@rule(aten.permute.default)
def _permute(em, out, a, dims):
    return em.transpose(a, [dim(d, a.rank) for d in dims])


@rule(aten.t.default)
def _t(em, out, a):
    return em.transpose(a, list(range(a.rank))[::-1])


@rule(aten.transpose.int)
def _transpose(em, out, a, d0, d1):
    perm = list(range(a.rank))
    d0, d1 = dim(d0, a.rank), dim(d1, a.rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return em.transpose(a, perm)


@rule(aten.expand.default, aten.expand_copy.default)
def _expand(em, out, a, *_, **__):
    return em.broadcast_to(a, shape_of(out))


@rule(aten.repeat.default)
def _repeat(em, out, a, repeats):
    """Tensor.repeat: the tensor tiled `repeats` times per dimension (leading repeats add
    dimensions): each dimension of extent n broadcast to [r, n] and merged to r * n."""
    reps = [int(r) for r in repeats]
    shape = (1,) * (len(reps) - a.rank) + tuple(a.shape)
    x = em.reshape(a, shape)
    wide = []
    for r, n in zip(reps, shape):
        wide += [r, n]
    x = em.broadcast_in_dim(x, tuple(wide), [2 * i + 1 for i in range(len(shape))])
    return em.reshape(x, tuple(r * n for r, n in zip(reps, shape)))


def _replication_pad(nd: int):
    def lower(em, out, a, padding):
        """Replicate padding of the last nd dimensions: per dimension, the edge elements
        broadcast over the bands and concatenated around the tensor."""
        pads = [int(p) for p in padding]
        x = a
        for i in range(nd):
            d = a.rank - 1 - i
            lo, hi = pads[2 * i], pads[2 * i + 1]
            n = x.shape[d]
            parts = []
            for at, width in ((0, lo), (None, 0), (n - 1, hi)):
                if at is None:
                    parts.append(x)
                    continue
                if width <= 0:
                    continue
                b0, b1 = [0] * x.rank, list(x.shape)
                b0[d], b1[d] = at, at + 1
                edge = em.slice(x, b0, b1, [1] * x.rank)
                shape = list(x.shape)
                shape[d] = width
                parts.append(em.broadcast_in_dim(edge, tuple(shape), list(range(x.rank))))
            x = em.concat(parts, d)
        return x
    return lower


def _replication_pad_backward(nd: int):
    def lower(em, out, grad, a, padding):
        """The gradient of replicate padding over the last nd dimensions, one dimension at a
        time (the padding is separable): the middle of the gradient, plus the sums over the
        padded bands added to the first and the last element."""
        pads = [int(p) for p in padding]  # (left, right) of the last dimension first
        g = em.convert(grad, opmath(grad.dtype))  # (summed in f32 for bf16 / f16, rounded once)
        for i in range(nd):
            d = a.rank - 1 - i
            lo, hi = pads[2 * i], pads[2 * i + 1]
            n = a.shape[d]
            start, limit = [0] * g.rank, list(g.shape)

            def band(first, last):
                b0, b1 = list(start), list(limit)
                b0[d], b1[d] = first, last
                return em.slice(g, b0, b1, [1] * g.rank)
            core = band(lo, lo + n)
            for first, last, at in ((0, lo, 0), (lo + n, lo + n + hi, n - 1)):
                if last <= first:
                    continue
                total = em.reduce_simple(band(first, last), [d], "add", 0)
                shape = list(g.shape)
                shape[d] = 1
                total = em.reshape(total, tuple(shape))
                low, high = [0] * g.rank, [0] * g.rank
                low[d], high[d] = at, n - 1 - at
                core = em.binary("add", core, em.pad(total, em.const(0, g.dtype), low, high))
            g = core
        return em.convert(g, grad.dtype)
    return lower


for _nd in (1, 2, 3):
    rule(getattr(aten, f"replication_pad{_nd}d").default)(_replication_pad(_nd))
    rule(getattr(aten, f"replication_pad{_nd}d_backward").default)(_replication_pad_backward(_nd))


@rule(aten._to_copy.default, aten.copy.default, aten.to.dtype)
def _to_copy(em, out, a, *args, **kwargs):
    if isinstance(a, V) and args and isinstance(args[0], V):  # copy(dst, src)
        a = args[0]
    return em.broadcast_to(em.convert(a, out[1]), shape_of(out))


def _norm_slice(size, start, end, step):
    start = 0 if start is None else start
    end = size if end is None else end
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end, step


@rule(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice(em, out, a, d=0, start=None, end=None, step=1):
    d = dim(d, a.rank)
    s, e, st = _norm_slice(a.shape[d], start, end, step)
    n = shape_of(out)[d]
    lo, hi, stride = [0] * a.rank, list(a.shape), [1] * a.rank
    lo[d], hi[d], stride[d] = s, (s + (n - 1) * st + 1) if n else s, st
    return em.slice(a, lo, hi, stride)


@rule(aten.select.int, aten.select_copy.int)
def _select(em, out, a, d, index):
    d = dim(d, a.rank)
    index = index + a.shape[d] if index < 0 else index
    lo, hi = [0] * a.rank, list(a.shape)
    lo[d], hi[d] = index, index + 1
    return em.reshape(em.slice(a, lo, hi, [1] * a.rank), shape_of(out))


@rule(aten.slice_scatter.default)
def _slice_scatter(em, out, a, src, d=0, start=None, end=None, step=1):
    d = dim(d, a.rank)
    s, _, st = _norm_slice(a.shape[d], start, end, step)
    n = src.shape[d]
    low, high, inner = [0] * a.rank, [0] * a.rank, [0] * a.rank
    low[d], inner[d] = s, st - 1
    high[d] = a.shape[d] - (s + (n - 1) * st + 1) if n else a.shape[d] - s
    src = em.convert(src, a.dtype)
    placed = em.pad(src, em.const(0, a.dtype), low, high, inner)
    mask = em.pad(em.const(True, "i1", src.shape), em.const(False, "i1"), low, high, inner)
    return em.select(mask, placed, a)


@rule(aten.select_scatter.default)
def _select_scatter(em, out, a, src, d, index):
    d = dim(d, a.rank)
    index = index + a.shape[d] if index < 0 else index
    shape = list(a.shape)
    shape[d] = 1
    return _slice_scatter(em, out, a, em.reshape(src, shape), d, index, index + 1, 1)


@rule(aten.cat.default)
def _cat(em, out, tensors, d=0):
    shape, dt = shape_of(out), out[1]
    d = dim(d, len(shape))
    parts = [em.convert(t, dt) for t in tensors if not (t.rank == 1 and t.shape[0] == 0 and len(shape) != 1)]
    parts = [p for p in parts if p.shape[d] != 0] or parts[:1]
    return em.concat(parts, d)


@rule(aten.split_with_sizes.default, aten.split.Tensor)
def _split(em, out, a, sizes, d=0):
    d = dim(d, a.rank)
    outs, at = [], 0
    for shape, _ in out:
        lo, hi = [0] * a.rank, list(a.shape)
        lo[d], hi[d] = at, at + shape[d]
        outs.append(em.slice(a, lo, hi, [1] * a.rank))
        at += shape[d]
    return outs


@rule(aten.flip.default)
def _flip(em, out, a, dims):
    ds = sorted(dim(x, a.rank) for x in dims)
    return em.op("stablehlo.reverse", [a], a.shape, a.dtype, f"dimensions = array<i64: {', '.join(map(str, ds))}>")


@rule(aten.constant_pad_nd.default)
def _pad(em, out, a, pad, fill=0):
    low, high = [0] * a.rank, [0] * a.rank
    for i in range(len(pad) // 2):
        d = a.rank - 1 - i
        low[d], high[d] = pad[2 * i], pad[2 * i + 1]
    return em.pad(a, em.const(fill, a.dtype), low, high)


@rule(aten.full.default, aten.full_like.default, aten.new_full.default)
def _full(em, out, *args, **_):
    fill = args[-1] if not isinstance(args[-1], (list, tuple, V)) else args[0]
    return em.const(fill, out[1], shape_of(out))


@rule(aten.scalar_tensor.default)
def _scalar_tensor(em, out, s, **_):
    return em.const(s, out[1])


@rule(aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default, aten.empty.memory_format,
      aten.empty_strided.default, aten.empty_like.default, aten.new_empty.default,
      aten.new_empty_strided.default, aten.empty_permuted.default, aten._efficientzerotensor.default)
def _zeros(em, out, *_, **__):
    return em.const(0, out[1], shape_of(out))


@rule(aten.ones.default, aten.ones_like.default, aten.new_ones.default)
def _ones(em, out, *_, **__):
    return em.const(1, out[1], shape_of(out))


@rule(aten.fill.Scalar, aten.fill.Tensor)
def _fill(em, out, a, v):
    return value(em, v, out[1], shape_of(out))


@rule(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(em, out, *args, **_):
    nums = [x for x in args if isinstance(x, (int, float)) and not isinstance(x, bool)]
    start, step = (0, 1) if len(nums) == 1 else (nums[0], nums[2] if len(nums) > 2 else 1)
    shape, dt = shape_of(out), out[1]
    wide = "f64" if dt in ("f16", "bf16", "f32", "f64") else "i64"
    i = em.iota(shape, 0, wide)
    r = em.binary("add", em.binary("multiply", i, em.const(step, wide, shape)), em.const(start, wide, shape))
    return em.convert(r, dt)


def _gather_indices(em, a: V, indices):
    """torch advanced indexing a[indices] (None: a whole dimension) as stablehlo.gather."""
    idx_dims = [i for i, t in enumerate(indices) if t is not None]
    tensors = [indices[i] for i in idx_dims]
    if any(t.dtype == "i1" for t in tensors):
        raise Unsupported("index with a boolean mask (data-dependent shape)")
    bshape = ()
    for t in tensors:
        bshape = _broadcast_shapes(bshape, t.shape)
    cols = []
    for d, t in zip(idx_dims, tensors):
        t = em.broadcast_to(em.convert(t, "i64"), bshape)
        size = em.const(a.shape[d], "i64", bshape)
        t = em.select(em.compare("LT", t, em.const(0, "i64", bshape)), em.binary("add", t, size), t)
        cols.append(em.reshape(t, bshape + (1,)))
    start = em.concat(cols, len(bshape))
    consecutive = idx_dims == list(range(idx_dims[0], idx_dims[-1] + 1))
    rest = [d for d in range(a.rank) if d not in idx_dims]
    nb = len(bshape)
    if consecutive:
        p = idx_dims[0]
        offset_dims = list(range(p)) + list(range(p + nb, p + nb + len(rest) - p))
        out_shape = [a.shape[d] for d in rest[:p]] + list(bshape) + [a.shape[d] for d in rest[p:]]
    else:
        offset_dims = list(range(nb, nb + len(rest)))
        out_shape = list(bshape) + [a.shape[d] for d in rest]
    sizes = [1 if d in idx_dims else a.shape[d] for d in range(a.rank)]
    dn = (f"#stablehlo.gather<offset_dims = [{', '.join(map(str, offset_dims))}], "
          f"collapsed_slice_dims = [{', '.join(map(str, idx_dims))}], "
          f"start_index_map = [{', '.join(map(str, idx_dims))}], index_vector_dim = {nb}>")
    return em.op("stablehlo.gather", [a, start], out_shape, a.dtype,
                 f"dimension_numbers = {dn}, slice_sizes = array<i64: {', '.join(map(str, sizes))}>, "
                 f"indices_are_sorted = false")


def _broadcast_shapes(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(a, b))


@rule(aten.index.Tensor)
def _index(em, out, a, indices):
    return em.reshape(_gather_indices(em, a, list(indices)), shape_of(out))


@rule(aten.index_select.default)
def _index_select(em, out, a, d, index):
    d = dim(d, a.rank)
    return em.reshape(_gather_indices(em, a, [None] * d + [index]), shape_of(out))


@rule(aten.embedding.default)
def _embedding(em, out, weight, indices, *_):
    return em.reshape(_gather_indices(em, weight, [indices]), shape_of(out))


@rule(aten.gather.default)
def _gather(em, out, a, d, index, sparse_grad=False):
    d = dim(d, a.rank)
    full = _full_index(em, index, d)
    return _gather_points(em, a, full, index.shape)


def _full_index(em, index: V, d: int) -> V:
    """(*index.shape, rank) coordinates: iota along every dimension, `index` along d."""
    shape = index.shape
    cols = []
    for k in range(index.rank):
        col = em.convert(index, "i64") if k == d else em.iota(shape, k, "i64")
        cols.append(em.reshape(col, shape + (1,)))
    return em.concat(cols, index.rank)


def _gather_points(em, a, coords, shape):
    ds = ", ".join(map(str, range(a.rank)))
    dn = (f"#stablehlo.gather<collapsed_slice_dims = [{ds}], start_index_map = [{ds}], "
          f"index_vector_dim = {len(shape)}>")
    return em.op("stablehlo.gather", [a, coords], shape, a.dtype,
                 f"dimension_numbers = {dn}, slice_sizes = array<i64: {', '.join(['1'] * a.rank)}>, "
                 f"indices_are_sorted = false")


def _scatter_points(em, a, coords, updates, combine: str):
    ds = ", ".join(map(str, range(a.rank)))
    dn = (f"#stablehlo.scatter<inserted_window_dims = [{ds}], scatter_dims_to_operand_dims = [{ds}], "
          f"index_vector_dim = {updates.rank}>")
    region = em.scalar_region([a.dtype], lambda e, l, r: [r[0] if combine == "replace" else e.binary(combine, l[0], r[0])])
    return em.op("stablehlo.scatter", [a, coords, updates], a.shape, a.dtype,
                 f"scatter_dimension_numbers = {dn}, indices_are_sorted = false, unique_indices = false",
                 region)


def _window_positions(em, length: int, size: int, step: int):
    """Tensor.unfold's windows over a dimension of `length`: their count n, and the i64
    positions i step + j of window i's element j, flattened ([n size])."""
    if size < 0 or step <= 0 or size > length:
        raise Unsupported(f"unfold of size {size} step {step} over a dimension of {length}")
    n = (length - size) // step + 1
    pos = em.binary("add", em.binary("multiply", em.iota((n, size), 0), em.const(step, "i64", (n, size))),
                    em.iota((n, size), 1))
    return n, em.reshape(pos, (n * size,))


@rule(aten.unfold.default)
def _unfold(em, out, a, d, size, step):
    """a.unfold(d, size, step): dimension d becomes the n windows, a last dimension their
    `size` elements (a gather of positions i step + j)."""
    d = dim(d, max(a.rank, 1))
    if a.rank == 0:
        return em.reshape(a, (1,))
    n, pos = _window_positions(em, a.shape[d], size, step)
    g = em.reshape(_gather_indices(em, a, [None] * d + [pos]), a.shape[:d] + (n, size) + a.shape[d + 1:])
    return em.transpose(g, [i for i in range(g.rank) if i != d + 1] + [d + 1])


@rule(aten.unfold_backward.default)
def _unfold_backward(em, out, grad, input_sizes, d, size, step):
    """The gradient of unfold: each window element's gradient added at its position."""
    shape = tuple(int(x) for x in input_sizes)
    d = dim(d, max(len(shape), 1))
    if not shape:
        return em.reshape(grad, ())
    n, pos = _window_positions(em, shape[d], size, step)
    last = grad.rank - 1
    g = em.transpose(grad, list(range(d + 1)) + [last] + list(range(d + 1, last)))
    g = em.reshape(g, shape[:d] + (n * size,) + shape[d + 1:])
    index = em.broadcast_in_dim(pos, g.shape, [d])
    zeros = em.const(0, grad.dtype, shape)
    return _scatter_points(em, zeros, _full_index(em, index, d), g, "add")


@rule(aten.scatter_add.default)
def _scatter_add(em, out, a, d, index, src):
    d = dim(d, a.rank)
    src = em.slice(src, [0] * src.rank, list(index.shape), [1] * src.rank) if src.shape != index.shape else src
    return _scatter_points(em, a, _full_index(em, index, d), em.convert(src, a.dtype), "add")


@rule(aten.scatter.src, aten.scatter.value)
def _scatter(em, out, a, d, index, src, reduce=None):
    if reduce is not None:
        raise Unsupported("scatter with reduce")
    d = dim(d, a.rank)
    if isinstance(src, V):
        src = em.slice(src, [0] * src.rank, list(index.shape), [1] * src.rank) if src.shape != index.shape else src
        src = em.convert(src, a.dtype)
    else:
        src = em.const(src, a.dtype, index.shape)
    return _scatter_points(em, a, _full_index(em, index, d), src, "replace")


_REDUCE_COMBINE = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


@rule(aten.scatter_reduce.two)
def _scatter_reduce(em, out, a, d, index, src, reduce, include_self=True):
    """a with src combined in at index along d by sum / prod / mean / amax / amin; without
    include_self a position's old value is left out wherever something lands (the
    reduction's identity instead); mean divides by the count of what was combined."""
    from axle.torch.rules_reduce import _extreme
    combine = _REDUCE_COMBINE.get(reduce)
    if combine is None or reduce == "mean" and not is_float(a.dtype):
        raise Unsupported(f"scatter_reduce with reduce={reduce!r} on {a.dtype}")
    d = dim(d, a.rank)
    src = em.slice(src, [0] * src.rank, list(index.shape), [1] * src.rank) if src.shape != index.shape else src
    src = em.convert(src, a.dtype)
    coords = _full_index(em, index, d)
    base = a
    if not include_self:
        touched = _scatter_points(em, em.const(False, "i1", a.shape), coords, em.const(True, "i1", index.shape), "or")
        ident = {"add": 0, "multiply": 1}.get(combine)
        ident = _extreme(a.dtype, combine == "maximum") if ident is None else ident
        base = em.select(touched, em.const(ident, a.dtype, a.shape), a)
    r = _scatter_points(em, base, coords, src, combine)
    if reduce == "mean":
        count = _scatter_points(em, em.const(1 if include_self else 0, a.dtype, a.shape), coords,
                                em.const(1, a.dtype, index.shape), "add")
        r = em.select(em.compare("GT", count, em.const(0, a.dtype, a.shape)),
                      em.binary("divide", r, em.binary("maximum", count, em.const(1, a.dtype, a.shape))), a)
    return r


def _storage(em, x: V, strides):
    """x's elements in memory order (1-D) and x's strides, when x is dense (its strides a
    permutation of a row-major layout's); else Unsupported."""
    if strides is None or len(strides) != x.rank:
        raise Unsupported("as_strided of a value without strides")
    order = sorted(range(x.rank), key=lambda d: (-strides[d], d))
    acc = 1
    for d in reversed(order):
        if x.shape[d] != 1 and strides[d] != acc:
            raise Unsupported("as_strided of a tensor that is not dense in memory")
        acc *= x.shape[d]
    return em.reshape(em.transpose(x, order), (math.prod(x.shape),)), order


def _storage_positions(em, size, stride, offset: int, numel: int) -> V:
    """The memory position of each element of an as_strided view [size] (i64)."""
    lo = offset + sum(min(0, s) * (n - 1) for s, n in zip(stride, size))
    hi = offset + sum(max(0, s) * (n - 1) for s, n in zip(stride, size))
    if 0 in size:
        lo = hi = 0
    if lo < 0 or hi >= max(numel, 1):
        raise Unsupported("as_strided reading outside its input's elements")
    pos = em.const(offset, "i64", tuple(size))
    for d, (n, s) in enumerate(zip(size, stride)):
        if n > 1 and s:
            pos = em.binary("add", pos, em.binary("multiply", em.iota(tuple(size), d, "i64"), em.const(s, "i64", tuple(size))))
    return pos


@rule(aten.as_strided.default)
def _as_strided(em, out, x, size, stride, offset=None, _strides=None, _base=0):
    """A view of x's memory (channels-last pooling's flatten, a functionalized backward):
    the element at each position gathered from x in memory order. (_strides, _base: x's
    strides and storage offset, which the lowering passes.)"""
    size, stride, offset = list(size), list(stride), int(offset or 0) - _base
    flat, _ = _storage(em, x, _strides)
    n = flat.shape[0]
    contiguous = [math.prod(size[d + 1:]) for d in range(len(size))]
    if offset == 0 and math.prod(size) == n and all(s == c for s, c, m in zip(stride, contiguous, size) if m != 1):
        return em.reshape(flat, tuple(size))  # memory order itself
    pos = _storage_positions(em, size, stride, offset, n)
    return _gather_points(em, flat, em.reshape(pos, tuple(size) + (1,)), tuple(size))


@rule(aten.as_strided_scatter.default)
def _as_strided_scatter(em, out, x, src, size, stride, offset=None, _strides=None, _base=0):
    """x with the elements of its as_strided view [size, stride, offset] replaced by src."""
    size, stride, offset = list(size), list(stride), int(offset or 0) - _base
    flat, order = _storage(em, x, _strides)
    pos = _storage_positions(em, size, stride, offset, flat.shape[0])
    upd = _scatter_points(em, flat, em.reshape(pos, tuple(size) + (1,)), em.convert(src, x.dtype), "replace")
    mem = em.reshape(upd, tuple(x.shape[d] for d in order))
    return em.transpose(mem, [order.index(d) for d in range(x.rank)])


@rule(aten.index_put.default)
def _index_put(em, out, a, indices, values, accumulate=False):
    """a[indices] = values (or += when accumulate). None entries (and the dimensions after
    the last index) are whole slices: the indexed dimensions are moved in front, the values
    laid out as PyTorch's advanced indexing does (the broadcast index shape where adjacent
    indexed dimensions stood, else in front), and the result moved back."""
    indices = list(indices)
    if any(t is not None and t.dtype == "i1" for t in indices):
        raise Unsupported("index_put with boolean indices")
    idx_dims = [d for d, t in enumerate(indices) if t is not None]
    if not idx_dims:
        raise Unsupported("index_put without indices")
    idx = [indices[d] for d in idx_dims]
    others = [d for d in range(a.rank) if d not in idx_dims]
    bshape = ()
    for t in idx:
        bshape = _broadcast_shapes(bshape, t.shape)
    nb, p0 = len(bshape), idx_dims[0]
    adjacent = idx_dims == list(range(p0, idx_dims[-1] + 1))
    if adjacent:  # values [a before, index shape, a after]
        vshape = tuple(a.shape[:p0]) + tuple(bshape) + tuple(a.shape[idx_dims[-1] + 1:])
    else:  # [index shape, the other dimensions]
        vshape = tuple(bshape) + tuple(a.shape[d] for d in others)
    upd = em.broadcast_to(em.convert(values, a.dtype), vshape)
    if adjacent and p0 > 0:
        upd = em.transpose(upd, list(range(p0, p0 + nb)) + list(range(p0)) + list(range(p0 + nb, len(vshape))))
    # (the scatter addresses the indexed dimensions where they are: moving them in front
    # and back cost two passes over `a`, a whole KV cache per index_copy_ of one token)
    return _scatter_leading(em, a, idx, bshape, upd, accumulate, dims=idx_dims)


def _scatter_leading(em, a, indices, bshape, upd, accumulate, dims=None):
    """a with a[i0, i1, ..., :] = upd (or +=), the index tensors on a's leading dimensions
    (or on `dims`, increasing) broadcast to bshape (negative indices count from the end); upd
    is [bshape, a's other dims in order]."""
    k = len(indices)
    dims = list(range(k)) if dims is None else list(dims)
    cols = []
    for d, t in zip(dims, indices):
        t = em.broadcast_to(em.convert(t, "i64"), bshape)
        size = em.const(a.shape[d], "i64", bshape)
        t = em.select(em.compare("LT", t, em.const(0, "i64", bshape)), em.binary("add", t, size), t)
        cols.append(em.reshape(t, tuple(bshape) + (1,)))
    nb = len(bshape)
    start = em.concat(cols, nb)
    window = ", ".join(map(str, range(nb, nb + a.rank - k)))
    inserted = ", ".join(map(str, dims))
    dn = (f"#stablehlo.scatter<update_window_dims = [{window}], inserted_window_dims = [{inserted}], "
          f"scatter_dims_to_operand_dims = [{inserted}], index_vector_dim = {nb}>")
    region = em.scalar_region([a.dtype], lambda e, l, r: [e.binary("add", l[0], r[0]) if accumulate else r[0]])
    return em.op("stablehlo.scatter", [a, start, upd], a.shape, a.dtype,
                 f"scatter_dimension_numbers = {dn}, indices_are_sorted = false, unique_indices = false",
                 region)


@rule(aten._assert_tensor_metadata.default, aten._assert_scalar.default,
      aten.sym_constrain_range_for_size.default, aten.sym_constrain_range.default)
def _checks(em, out, *_, **__):
    """Shape and metadata assertions torch.export records: true for the concrete sizes the
    program is compiled for, so they lower to nothing."""
    return None


@rule(aten._assert_async.msg, aten._assert_async.default)
def _assert_async(em, out, *_, **__):
    """A data-dependent check (F.one_hot's indices in range, torch._assert_async): eager
    raises when it fails; a compiled program does not stop on a value (as XLA's do not),
    so it lowers to nothing and out-of-range indices give what the ops after it give."""
    return None


# ---- embedding bags (sum and mean; offsets into one flat index list)

def _bag_of_each(em, indices: V, offsets: V, n_bags: int) -> V:
    """offset2bag: the bag of each index (ones scattered at the bags' starts, summed)."""
    n = indices.shape[0]
    starts = em.slice(offsets, [0], [n_bags], [1]) if offsets.shape[0] != n_bags else offsets
    marks = em.const(0, "i64", (n,))
    ones = em.const(1, "i64", (n_bags,))
    marks = _scatter_leading(em, marks, [em.convert(starts, "i64")], (n_bags,), ones, True)  # (n: dropped)
    region = em.scalar_region(["i64"], lambda e, l, r: [e.binary("add", l[0], r[0])])
    attrs = (f"window_dimensions = array<i64: {n}>, window_strides = array<i64: 1>, "
             f"padding = dense<[[{n - 1}, 0]]> : tensor<1x2xi64>")
    total = em.op("stablehlo.reduce_window", [marks, em.const(0, "i64")], (n,), "i64", attrs, region)
    return em.binary("subtract", total, em.const(1, "i64", (n,)))


def _bag_rows(em, rows: V, indices: V, per_sample_weights, padding_idx):
    """rows [L, D] weighted per sample and zero at padding_idx; and the 0/1 count of each."""
    n, dd = rows.shape
    keep = em.const(1, rows.dtype, (n,))
    if padding_idx is not None and padding_idx >= 0:
        keep = em.convert(em.compare("NE", em.convert(indices, "i64"), em.const(padding_idx, "i64", (n,))), rows.dtype)
    scale = keep if per_sample_weights is None else em.binary("multiply", keep, em.convert(per_sample_weights, rows.dtype))
    return em.binary("multiply", rows, em.broadcast_in_dim(scale, (n, dd), [0])), keep


@rule(aten._embedding_bag.default, aten._embedding_bag_forward_only.default)
def _embedding_bag(em, out, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """Sums (mode 0), means (mode 1) or maxima (mode 2) of weight's rows per bag; a bag is the
    indices from its offset to the next (empty bags give zeros)."""
    if mode not in (0, 1, 2) or indices.rank != 1:
        raise Unsupported("_embedding_bag over indices that are not 1-D")
    n_bags = offsets.shape[0] - (1 if include_last_offset else 0)
    if mode == 2:
        return _bag_max(em, out, weight, indices, offsets, n_bags, padding_idx)
    ct = opmath(weight.dtype)
    o2b = _bag_of_each(em, indices, offsets, n_bags)
    rows = em.convert(_gather_indices(em, weight, [indices]), ct)
    rows, keep = _bag_rows(em, rows, indices, per_sample_weights, padding_idx)
    dd = weight.shape[1]
    total = _scatter_leading(em, em.const(0, ct, (n_bags, dd)), [o2b], indices.shape, rows, True)
    count = _scatter_leading(em, em.const(0, ct, (n_bags,)), [o2b], indices.shape, keep, True)
    if mode == 1:
        den = em.binary("maximum", count, em.const(1, ct, (n_bags,)))
        total = em.binary("divide", total, em.broadcast_in_dim(den, (n_bags, dd), [0]))
    res = [em.convert(total, out[0][1])]
    for o, v in zip(out[1:], (o2b, em.convert(count, "i64"))):  # offset2bag, bag_size as recorded
        res.append(em.convert(v, o[1]) if tuple(shape_of(o)) == tuple(v.shape) else em.const(0, o[1], shape_of(o)))
    res.append(em.const(0, out[3][1], shape_of(out[3])))  # max_indices (unused by sum / mean)
    return tuple(res)


def _bag_max(em, out, weight, indices, offsets, n_bags, padding_idx):
    """Max-mode bags as PyTorch's kernel makes them: per feature the bag's first value, then
    any strictly larger one (so a NaN is kept only where it comes first, and the first of
    equal values gives max_indices); padding rows skipped; empty bags 0 with index 0. The
    maximum of the non-NaN values by a scatter-max, the first position reaching it (and the
    first position of the bag) by scatter-mins."""
    from axle.torch.rules_reduce import _extreme
    n, dd = indices.shape[0], weight.shape[1]
    o2b = _bag_of_each(em, indices, offsets, n_bags)
    rows = _gather_indices(em, weight, [indices])
    et = rows.dtype
    shape, bshape = (n, dd), (n_bags, dd)
    use = em.const(True, "i1", shape)
    if padding_idx is not None and padding_idx >= 0:
        use = em.broadcast_in_dim(em.compare("NE", em.convert(indices, "i64"), em.const(padding_idx, "i64", (n,))),
                                  shape, [0])
    nan = em.compare("NE", rows, rows)
    low = em.const(_extreme(et, True), et, shape)
    plain = em.select(em.binary("and", use, em.unary("not", nan)), rows, low)

    def per_bag(v):  # [n, dd] coordinates (bag, feature) of each row's values
        return em.concat([em.reshape(em.broadcast_in_dim(v, shape, [0]), shape + (1,)),
                          em.reshape(em.iota(shape, 1, "i64"), shape + (1,))], 2)
    coords = per_bag(o2b)
    m = _scatter_points(em, em.const(_extreme(et, True), et, bshape), coords, plain, "maximum")
    pos = em.iota(shape, 0, "i64")
    never = em.const(n, "i64", shape)
    first = _scatter_points(em, em.const(n, "i64", bshape), coords, em.select(use, pos, never), "minimum")
    hit = em.binary("and", em.binary("and", use, em.unary("not", nan)),
                    em.compare("EQ", rows, _gather_points(em, m, coords, shape)))
    best = _scatter_points(em, em.const(n, "i64", bshape), coords, em.select(hit, pos, never), "minimum")
    has = em.compare("LT", first, em.const(n, "i64", bshape))

    def at(position):  # rows / indices at [bag's position, feature]
        safe = em.binary("minimum", position, em.const(n - 1, "i64", bshape))
        c = em.concat([em.reshape(safe, bshape + (1,)), em.reshape(em.iota(bshape, 1, "i64"), bshape + (1,))], 2)
        return c
    first_value = _gather_points(em, rows, at(first), bshape)
    nan_first = em.binary("and", has, em.compare("NE", first_value, first_value))
    chosen = em.select(nan_first, first, best)
    value = em.select(has, em.select(nan_first, first_value, m), em.const(0, et, bshape))
    which = _gather_points(em, em.broadcast_in_dim(em.convert(indices, "i64"), shape, [0]), at(chosen), bshape)
    which = em.select(has, which, em.const(0, "i64", bshape))
    count = _scatter_leading(em, em.const(0, "i64", (n_bags,)), [o2b], (n,), em.const(1, "i64", (n,)), True)
    res = [em.convert(value, out[0][1])]
    for o, v in zip(out[1:], (o2b, count, which)):
        res.append(em.convert(v, o[1]) if tuple(shape_of(o)) == tuple(v.shape) else em.const(0, o[1], shape_of(o)))
    return tuple(res)


def _bag_max_grad(em, out, grad, bag_size, maximum_indices, num_weights):
    """Each bag's gradient to the rows its maxima came from (non-empty bags only)."""
    n_bags, dd = grad.shape
    ct = opmath(grad.dtype)
    g = em.convert(grad, ct)
    nonempty = em.broadcast_in_dim(em.compare("GT", em.convert(bag_size, "i64"), em.const(0, "i64", (n_bags,))),
                                   (n_bags, dd), [0])
    g = em.select(nonempty, g, em.const(0, ct, (n_bags, dd)))
    coords = em.concat([em.reshape(em.convert(maximum_indices, "i64"), (n_bags, dd, 1)),
                        em.reshape(em.iota((n_bags, dd), 1, "i64"), (n_bags, dd, 1))], 2)
    gw = _scatter_points(em, em.const(0, ct, (num_weights, dd)), coords, g, "add")
    return em.convert(gw, out[1])


def _bag_grad(em, out, grad, indices, o2b, num_weights, scale_grad_by_freq, mode, per_sample_weights,
              padding_idx):
    """The dense gradient of the weight: each bag's gradient (over its size for means) added
    to the rows of its indices."""
    if scale_grad_by_freq or mode not in (0, 1):
        raise Unsupported("embedding_bag gradient with scale_grad_by_freq or mode max")
    n_bags, dd = grad.shape
    ct = opmath(grad.dtype)
    rows = _gather_indices(em, em.convert(grad, ct), [o2b])
    if mode == 1:
        _, keep = _bag_rows(em, em.const(0, ct, (indices.shape[0], 1)), indices, None, padding_idx)
        count = _scatter_leading(em, em.const(0, ct, (n_bags,)), [o2b], indices.shape, keep, True)
        per = _gather_indices(em, em.binary("maximum", count, em.const(1, ct, (n_bags,))), [o2b])
        rows = em.binary("divide", rows, em.broadcast_in_dim(per, rows.shape, [0]))
    rows, _ = _bag_rows(em, rows, indices, per_sample_weights, padding_idx)
    gw = _scatter_leading(em, em.const(0, ct, (num_weights, dd)), [em.convert(indices, "i64")], indices.shape, rows, True)
    return em.convert(gw, out[1])


@rule(aten._embedding_bag_backward.default)
def _embedding_bag_backward(em, out, grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
                            scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx=-1):
    """(the bags recomputed from the offsets)"""
    if sparse:
        raise Unsupported("sparse embedding_bag gradients")
    if mode == 2:
        return _bag_max_grad(em, out, grad, bag_size, maximum_indices, num_weights)
    o2b = _bag_of_each(em, indices, offsets, grad.shape[0])
    return _bag_grad(em, out, grad, indices, o2b, num_weights, scale_grad_by_freq, mode, per_sample_weights,
                     padding_idx)


@rule(aten._embedding_bag_dense_backward.default)
def _embedding_bag_dense_backward(em, out, grad, indices, offset2bag, bag_size, maximum_indices, num_weights,
                                  scale_grad_by_freq, mode, per_sample_weights, padding_idx=-1):
    if mode == 2:
        return _bag_max_grad(em, out, grad, bag_size, maximum_indices, num_weights)
    if offset2bag.shape != indices.shape:
        raise Unsupported("_embedding_bag_dense_backward without the bag of each index")
    return _bag_grad(em, out, grad, indices, em.convert(offset2bag, "i64"), num_weights, scale_grad_by_freq, mode,
                     per_sample_weights, padding_idx)


@rule(aten.histc.default)
def _histc(em, out, x, bins=100, min=0, max=0):
    """Counts of x's values in `bins` equal bins over [min, max] (the data's own range when
    both are 0, widened by 1 each way when that is one value); values outside (and NaN)
    are not counted, the top edge belongs to the last bin. A scatter-add of ones at
    floor((x - min) bins / (max - min)) (Mixtral's load-balancing loss)."""
    if not is_float(x.dtype) or bins <= 0:
        raise Unsupported(f"histc of {x.dtype} into {bins} bins")
    n = int(math.prod(x.shape))
    flat = em.reshape(x, (n,))
    if min == max:
        if min != 0 or n == 0:
            lo, hi = em.const(min - 1 if n else min, x.dtype), em.const(max + 1 if n else max, x.dtype)
        else:
            lo = em.reduce_simple(flat, [0], "minimum", math.inf)
            hi = em.reduce_simple(flat, [0], "maximum", -math.inf)
            same = em.compare("EQ", lo, hi)
            one = em.const(1, x.dtype)
            lo, hi = em.select(same, em.binary("subtract", lo, one), lo), em.select(same, em.binary("add", hi, one), hi)
    else:
        lo, hi = em.const(min, x.dtype), em.const(max, x.dtype)
    if n == 0:
        return em.const(0, x.dtype, (bins,))
    lo_b, hi_b = em.broadcast_in_dim(lo, (n,), []), em.broadcast_in_dim(hi, (n,), [])
    pos = em.binary("divide", em.binary("multiply", em.binary("subtract", flat, lo_b), em.const(bins, x.dtype, (n,))),
                    em.binary("subtract", hi_b, lo_b))
    idx = em.binary("minimum", em.convert(em.unary("floor", pos), "i64"), em.const(bins - 1, "i64", (n,)))
    inside = em.binary("and", em.compare("GE", flat, lo_b), em.compare("LE", flat, hi_b))
    idx = em.select(inside, idx, em.const(bins, "i64", (n,)))  # (out of range: the scatter skips it)
    return _scatter_points(em, em.const(0, x.dtype, (bins,)), em.reshape(idx, (n, 1)), em.const(1, x.dtype, (n,)), "add")
