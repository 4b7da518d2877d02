"""grid_sampler_2d and its backward (F.grid_sample: spatial transformers, flow warping):
bilinear and nearest interpolation, zeros and border padding, either align_corners.

The input is read as [N, H, W, C] rows: each sample point gathers the C-vector of its (up
to) four neighbours with one gather each, weighted; a neighbour outside the image has
weight 0 (zeros padding) and its index clamped so the gather stays inside. The backward
scatter-adds the weighted output gradient into the same rows (the input's gradient) and
differentiates the weights by the sample coordinates (the grid's gradient)."""
from __future__ import annotations

from axle.torch.registry import Unsupported, V, aten, opmath, rule

BILINEAR, NEAREST = 0, 1
ZEROS, BORDER = 0, 1


def _coords(em, grid: V, size: int, k: int, align: bool, padding: int, ct: str):
    """The unnormalized sample coordinate along grid component k ([N, Ho, Wo]) and the
    factor d coordinate / d grid value (0 where border padding clipped it)."""
    n, ho, wo, _ = grid.shape
    shape = (n, ho, wo)
    g = em.reshape(em.slice(grid, [0, 0, 0, k], [n, ho, wo, k + 1], [1, 1, 1, 1]), shape)
    c = lambda v: em.const(v, ct, shape)  # noqa: E731
    if align:
        x, scale = em.binary("multiply", em.binary("add", g, c(1.0)), c((size - 1) / 2)), (size - 1) / 2
    else:
        x = em.binary("multiply", em.binary("subtract", em.binary("multiply", em.binary("add", g, c(1.0)), c(size)),
                                            c(1.0)), c(0.5))
        scale = size / 2
    d = c(scale)
    if padding == BORDER:
        inside = em.binary("and", em.compare("GT", x, c(0.0)), em.compare("LT", x, c(size - 1.0)))
        x = em.binary("minimum", em.binary("maximum", x, c(0.0)), c(size - 1.0))
        d = em.select(inside, d, c(0.0))
    return x, d


def _rows(em, x: V, ct: str):
    """x [N, C, H, W] as [N, H, W, C] in the compute type."""
    return em.transpose(em.convert(x, ct), [0, 2, 3, 1])


def _corner_index(em, n, yi: V, xi: V, h: int, w: int):
    """(indices [N, Ho, Wo, 3] of (image, row, column), clamped inside; valid [N, Ho, Wo])."""
    shape = yi.shape
    zero = em.const(0, "i64", shape)
    valid = em.binary("and", em.binary("and", em.compare("GE", yi, zero), em.compare("LT", yi, em.const(h, "i64", shape))),
                      em.binary("and", em.compare("GE", xi, zero), em.compare("LT", xi, em.const(w, "i64", shape))))
    yc = em.binary("minimum", em.binary("maximum", yi, zero), em.const(h - 1, "i64", shape))
    xc = em.binary("minimum", em.binary("maximum", xi, zero), em.const(w - 1, "i64", shape))
    parts = [em.reshape(v, shape + (1,)) for v in (em.iota(shape, 0, "i64"), yc, xc)]
    return em.concat(parts, 3), valid


_DIMS = ("offset_dims = [3], collapsed_slice_dims = [0, 1, 2], start_index_map = [0, 1, 2], "
         "index_vector_dim = 3")


def _gather_rows(em, rows: V, idx: V) -> V:
    n, h, w, c = rows.shape
    out = idx.shape[:3] + (c,)
    return em.op("stablehlo.gather", [rows, idx], out, rows.dtype,
                 f"dimension_numbers = #stablehlo.gather<{_DIMS}>, slice_sizes = array<i64: 1, 1, 1, {c}>, "
                 f"indices_are_sorted = false")


def _scatter_rows(em, rows: V, idx: V, upd: V) -> V:
    dn = ("#stablehlo.scatter<update_window_dims = [3], inserted_window_dims = [0, 1, 2], "
          "scatter_dims_to_operand_dims = [0, 1, 2], index_vector_dim = 3>")
    region = em.scalar_region([rows.dtype], lambda e, l, r: [e.binary("add", l[0], r[0])])
    return em.op("stablehlo.scatter", [rows, idx, upd], rows.shape, rows.dtype,
                 f"scatter_dimension_numbers = {dn}, indices_are_sorted = false, unique_indices = false", region)


def _corners(em, x: V, y: V, ct: str, mode: int):
    """[(row index, column index, weight, d weight / dx, d weight / dy)] of the neighbours."""
    if mode == NEAREST:
        xi = em.convert(em.unary("round_nearest_even", x), "i64")
        yi = em.convert(em.unary("round_nearest_even", y), "i64")
        one, zero = em.const(1.0, ct, x.shape), em.const(0.0, ct, x.shape)
        return [(yi, xi, one, zero, zero)]
    x0, y0 = em.unary("floor", x), em.unary("floor", y)
    fx, fy = em.binary("subtract", x, x0), em.binary("subtract", y, y0)
    one = em.const(1.0, ct, x.shape)
    gx, gy = em.binary("subtract", one, fx), em.binary("subtract", one, fy)
    xi0, yi0 = em.convert(x0, "i64"), em.convert(y0, "i64")
    ione = em.const(1, "i64", x.shape)
    xi1, yi1 = em.binary("add", xi0, ione), em.binary("add", yi0, ione)
    neg = lambda v: em.unary("negate", v)  # noqa: E731
    mul = lambda a, b: em.binary("multiply", a, b)  # noqa: E731
    return [(yi0, xi0, mul(gx, gy), neg(gy), neg(gx)), (yi0, xi1, mul(fx, gy), gy, neg(fx)),
            (yi1, xi0, mul(gx, fy), neg(fy), gx), (yi1, xi1, mul(fx, fy), fy, fx)]


def _setup(em, x: V, grid: V, mode: int, padding: int, align: bool):
    """(compute type, (x coordinates, their factor), (y ...), the input as rows)."""
    if mode not in (BILINEAR, NEAREST) or padding not in (ZEROS, BORDER):
        raise Unsupported(f"grid_sampler_2d with interpolation {mode}, padding {padding} (bilinear / nearest, "
                          f"zeros / border are lowered)")
    if x.rank != 4 or grid.rank != 4 or grid.shape[-1] != 2:
        raise Unsupported("grid_sampler_2d expects [N, C, H, W] and [N, Ho, Wo, 2]")
    ct = opmath(x.dtype)
    g = em.convert(grid, ct)
    h, w = x.shape[2:]
    return ct, _coords(em, g, w, 0, align, padding, ct), _coords(em, g, h, 1, align, padding, ct), _rows(em, x, ct)


@rule(aten.grid_sampler_2d.default)
def _grid_sampler(em, out, x, grid, mode, padding, align):
    ct, (xs, _), (ys, _), rows = _setup(em, x, grid, mode, padding, align)
    n, c, h, w = x.shape
    total = None
    for yi, xi, wt, _, _ in _corners(em, xs, ys, ct, mode):
        idx, valid = _corner_index(em, n, yi, xi, h, w)
        wv = em.select(valid, wt, em.const(0.0, ct, wt.shape))
        term = em.binary("multiply", _gather_rows(em, rows, idx), em.broadcast_in_dim(wv, idx.shape[:3] + (c,), [0, 1, 2]))
        total = term if total is None else em.binary("add", total, term)
    return em.convert(em.transpose(total, [0, 3, 1, 2]), out[1])


@rule(aten.grid_sampler_2d_backward.default)
def _grid_sampler_backward(em, out, dy, x, grid, mode, padding, align, mask):
    ct, (xs, dxs), (ys, dys), rows = _setup(em, x, grid, mode, padding, align)
    n, c, h, w = x.shape
    dyr = _rows(em, dy, ct)  # [N, Ho, Wo, C]
    gin = em.const(0.0, ct, rows.shape)
    gx = gy = em.const(0.0, ct, xs.shape)
    for yi, xi, wt, dwx, dwy in _corners(em, xs, ys, ct, mode):
        idx, valid = _corner_index(em, n, yi, xi, h, w)
        zero = em.const(0.0, ct, wt.shape)
        wv = em.select(valid, wt, zero)
        full = dyr.shape
        gin = _scatter_rows(em, gin, idx, em.binary("multiply", dyr, em.broadcast_in_dim(wv, full, [0, 1, 2])))
        # d out / d coordinate: the neighbour's value times d weight, summed with dy over C
        vdy = em.reduce_simple(em.binary("multiply", _gather_rows(em, rows, idx), dyr), [3], "add", 0)
        vdy = em.select(valid, vdy, zero)
        gx = em.binary("add", gx, em.binary("multiply", vdy, dwx))
        gy = em.binary("add", gy, em.binary("multiply", vdy, dwy))
    gx, gy = em.binary("multiply", gx, dxs), em.binary("multiply", gy, dys)
    shape = xs.shape + (1,)
    ggrid = em.concat([em.reshape(gx, shape), em.reshape(gy, shape)], 3)
    return (em.convert(em.transpose(gin, [0, 3, 1, 2]), out[0][1]) if mask[0] and out[0] is not None else None,
            em.convert(ggrid, out[1][1]) if mask[1] and out[1] is not None else None)
