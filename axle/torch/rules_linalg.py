"""Triangular and Cholesky linear algebra (Gaussian processes, whitening, natural
gradients): eye, tril / triu, diagonal (and its backward and scatter), linalg_cholesky_ex,
cholesky_solve, linalg_solve_triangular, the effect token around linalg's error check; and
pairwise distances (torch.cdist: _cdist_forward / _cdist_backward, _euclidean_dist).

StableHLO has `cholesky` and `triangular_solve` (batched over leading dimensions), which
the CPU backend runs through LAPACK. A Cholesky factor of a matrix that is not positive
definite is what LAPACK leaves (NaNs below the failing minor): `info` is 0 here, as XLA
reports none either, so torch.linalg.cholesky's error check does not fire in compiled
code. LU, eigh, SVD, solves, inverses and determinants: rules_lapack.py."""
from __future__ import annotations

import torch

from axle.torch.registry import Unsupported, V, aten, rule, shape_of


def _plane_mask(em, shape, fn):
    """A boolean [shape] whose entry (..., i, j) is fn(i, j) (i64 iotas over the last two)."""
    rows = em.iota(shape, len(shape) - 2, "i64")
    cols = em.iota(shape, len(shape) - 1, "i64")
    return fn(rows, cols)


def _tri(lower: bool):
    def lower_fn(em, out, x, diagonal=0):
        def keep(i, j):  # tril: j - i <= k; triu: j - i >= k
            d = em.binary("subtract", j, i)
            return em.compare("LE" if lower else "GE", d, em.const(diagonal, "i64", x.shape))
        return em.select(_plane_mask(em, x.shape, keep), x, em.const(0, x.dtype, x.shape))
    return lower_fn


rule(aten.tril.default)(_tri(True))
rule(aten.triu.default)(_tri(False))


@rule(aten.eye.default, aten.eye.m)
def _eye(em, out, *_, **__):
    shape = shape_of(out)
    on = _plane_mask(em, shape, lambda i, j: em.compare("EQ", i, j))
    return em.select(on, em.const(1, out[1], shape), em.const(0, out[1], shape))


def _to_end(x_rank: int, d1: int, d2: int) -> list:
    d1, d2 = d1 % x_rank, d2 % x_rank
    return [d for d in range(x_rank) if d not in (d1, d2)] + [d1, d2]


def _diag_mask(em, shape, offset: int):
    """(..., i, j) on the diagonal j - i = offset."""
    return _plane_mask(em, shape, lambda i, j: em.compare("EQ", em.binary("subtract", j, i),
                                                           em.const(offset, "i64", shape)))


@rule(aten.diagonal.default)
def _diagonal(em, out, x, offset=0, dim1=0, dim2=1):
    """The diagonal moved last: the plane's two dimensions moved to the end, the diagonal's
    rows (offset >= 0) or columns (offset < 0) kept, the rest masked to 0 and summed."""
    perm = _to_end(x.rank, dim1, dim2)
    y = em.transpose(x, perm) if perm != list(range(x.rank)) else x
    n = shape_of(out)[-1]
    lead = list(y.shape[:-2])
    if offset >= 0:
        y = em.slice(y, [0] * y.rank, lead + [n, y.shape[-1]], [1] * y.rank)
    else:
        y = em.slice(y, [0] * y.rank, lead + [y.shape[-2], n], [1] * y.rank)
    kept = em.select(_diag_mask(em, y.shape, offset), y, em.const(0, y.dtype, y.shape))
    return em.reduce_simple(kept, [y.rank - 1 if offset >= 0 else y.rank - 2], "add", 0)


def _place_diagonal(em, shape_plane_last, src: V, offset: int, base: V):
    """base [.., r, c] with its offset diagonal replaced by src [.., n]: entry k sits in row
    k (offset >= 0) or column k (offset < 0), so src runs along that dimension (zeros past
    n) and a mask picks the diagonal."""
    rank = len(shape_plane_last)
    along = rank - 2 if offset >= 0 else rank - 1
    extra = shape_plane_last[along] - src.shape[-1]
    s = em.pad(src, em.const(0, src.dtype), [0] * (rank - 1), [0] * (rank - 2) + [extra]) if extra > 0 else src
    full = em.broadcast_in_dim(s, tuple(shape_plane_last), list(range(rank - 2)) + [along])
    return em.select(_diag_mask(em, tuple(shape_plane_last), offset), full, base)


@rule(aten.diagonal_scatter.default)
def _diagonal_scatter(em, out, x, src, offset=0, dim1=0, dim2=1):
    perm = _to_end(x.rank, dim1, dim2)
    y = em.transpose(x, perm)
    r = _place_diagonal(em, y.shape, em.convert(src, x.dtype), offset, y)
    return em.transpose(r, [perm.index(d) for d in range(x.rank)])


@rule(aten.diagonal_backward.default)
def _diagonal_backward(em, out, g, sizes, offset, dim1, dim2):
    shape = tuple(shape_of(out))
    perm = _to_end(len(shape), dim1, dim2)
    plane = tuple(shape[d] for d in perm)
    r = _place_diagonal(em, plane, em.convert(g, out[1]), offset, em.const(0, out[1], plane))
    return em.transpose(r, [perm.index(d) for d in range(len(shape))])


@rule(aten.linalg_cholesky_ex.default)
def _cholesky(em, out, a, upper=False, check_errors=False):
    lo = em.op("stablehlo.cholesky", [a], a.shape, a.dtype, "lower = true")
    lo = _tri(True)(em, (a.shape, a.dtype), lo)  # (the spec leaves the other triangle unspecified)
    if upper:
        lo = em.transpose(lo, list(range(a.rank - 2)) + [a.rank - 1, a.rank - 2])
    return lo, em.const(0, out[1][1], shape_of(out[1]))


def _broadcast_batch(em, a: V, b: V):
    """a [.., m, m] and b [.., m, k] broadcast to one batch shape."""
    batch = torch.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    lead = len(batch)

    def to(v):
        shape = tuple(batch) + tuple(v.shape[-2:])
        if tuple(v.shape) == shape:
            return v
        dims = list(range(lead - (v.rank - 2), lead + 2))
        return em.broadcast_in_dim(v, shape, dims)
    return to(a), to(b)


def _trsm(em, a: V, b: V, left: bool, lower: bool, transpose: bool, unit: bool = False) -> V:
    a, b = _broadcast_batch(em, a, b)
    flags = (f"left_side = {'true' if left else 'false'}, lower = {'true' if lower else 'false'}, "
             f"unit_diagonal = {'true' if unit else 'false'}, "
             f"transpose_a = #stablehlo<transpose {'TRANSPOSE' if transpose else 'NO_TRANSPOSE'}>")
    return em.op("stablehlo.triangular_solve", [a, b], b.shape, b.dtype, flags)


@rule(aten.linalg_solve_triangular.default)
def _solve_triangular(em, out, a, b, upper, left=True, unitriangular=False):
    if a.dtype != b.dtype:
        raise Unsupported("linalg_solve_triangular of mixed types")
    return _trsm(em, a, b, left, not upper, False, unitriangular)


@rule(aten.cholesky_solve.default)
def _cholesky_solve(em, out, b, factor, upper=False):
    """A x = b with A = L L^T (upper: U^T U): two triangular solves."""
    if upper:  # U^T y = b, then U x = y
        y = _trsm(em, factor, b, True, False, True)
        return _trsm(em, factor, y, True, False, False)
    y = _trsm(em, factor, b, True, True, False)
    return _trsm(em, factor, y, True, True, True)


@rule(torch.ops.higher_order.with_effects)
def _with_effects(em, out, token, op, *args, **kwargs):
    """An effectful op threaded by a token: linalg's error check on `info` (a no-op here:
    see the module docstring) passes the token through."""
    if op is not aten._linalg_check_errors.default:
        raise Unsupported(f"with_effects around {op}")
    return token, None


# ---- pairwise distances (torch.cdist): [.., P, M] x [.., R, M] -> [.., P, R]

def _diffs(em, x1: V, x2: V) -> V:
    """x1[.., i, None, :] - x2[.., None, j, :]: [.., P, R, M]."""
    lead = x1.rank - 2
    p, r, m = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    shape = tuple(x1.shape[:-2]) + (p, r, m)
    a = em.broadcast_in_dim(x1, shape, list(range(lead)) + [lead, lead + 2])
    b = em.broadcast_in_dim(x2, shape, list(range(lead)) + [lead + 1, lead + 2])
    return em.binary("subtract", a, b)


def _euclid_mm(em, x1: V, x2: V) -> V:
    """sqrt(max(|x1|^2 + |x2|^2 - 2 x1 x2^T, 0)) (PyTorch's matrix-product form)."""
    from axle.torch.rules_reduce import dot
    lead = x1.rank - 2
    x2t = em.transpose(x2, list(range(lead)) + [lead + 1, lead])
    prod = dot(em, x1, x2t, lead, x1.dtype)
    shape = prod.shape
    n1 = em.reduce_simple(em.binary("multiply", x1, x1), [x1.rank - 1], "add", 0)
    n2 = em.reduce_simple(em.binary("multiply", x2, x2), [x2.rank - 1], "add", 0)
    s = em.binary("add", em.broadcast_in_dim(n1, shape, list(range(lead + 1))),
                  em.broadcast_in_dim(n2, shape, list(range(lead)) + [lead + 1]))
    d2 = em.binary("subtract", s, em.binary("multiply", prod, em.const(2.0, prod.dtype, shape)))
    return em.unary("sqrt", em.binary("maximum", d2, em.const(0.0, prod.dtype, shape)))


@rule(aten._euclidean_dist.default)
def _euclidean_dist(em, out, x1, x2):
    return _euclid_mm(em, x1, x2)


@rule(aten._cdist_forward.default)
def _cdist(em, out, x1, x2, p, compute_mode=None):
    if x1.rank < 2 or x1.shape[-1] != x2.shape[-1] or x1.shape[:-2] != x2.shape[:-2]:
        raise Unsupported("_cdist_forward of operands with other batch shapes")
    mm = p == 2 and (compute_mode == 1 or compute_mode is None and (x1.shape[-2] > 25 or x2.shape[-2] > 25))
    if mm:
        return _euclid_mm(em, x1, x2)
    d = em.unary("abs", _diffs(em, x1, x2))
    last = d.rank - 1
    if p == float("inf"):
        return em.reduce([d], [em.const(0.0, d.dtype)], [last], lambda e, l, r: [e.binary("maximum", l[0], r[0])])[0]
    if p == 0:
        nz = em.convert(em.compare("NE", d, em.const(0.0, d.dtype, d.shape)), d.dtype)
        return em.reduce_simple(nz, [last], "add", 0)
    if p == 1:
        return em.reduce_simple(d, [last], "add", 0)
    if p == 2:
        return em.unary("sqrt", em.reduce_simple(em.binary("multiply", d, d), [last], "add", 0))
    s = em.reduce_simple(em.binary("power", d, em.const(float(p), d.dtype, d.shape)), [last], "add", 0)
    return em.binary("power", s, em.const(1.0 / p, s.dtype, s.shape))


@rule(aten._cdist_backward.default)
def _cdist_backward(em, out, g, x1, x2, p, dist):
    """d dist_ij / d x1_i: (x1_i - x2_j) |.|^(p-2) / dist_ij^(p-1) (p = 1: the sign), zero
    where the distance is 0; summed over j with the gradient."""
    if p in (0, float("inf")) or p < 1:
        raise Unsupported(f"_cdist_backward with p = {p}")
    diff = _diffs(em, x1, x2)
    shape = diff.shape
    lead = x1.rank - 2
    dims = list(range(lead + 2))
    zero = em.const(0.0, diff.dtype, shape)
    if p == 1:
        w = em.unary("sign", diff)
    else:
        db = em.broadcast_in_dim(dist, shape, dims)
        if p == 2:
            w = em.binary("divide", diff, db)
        else:
            mag = em.binary("power", em.unary("abs", diff), em.const(float(p) - 2, diff.dtype, shape))
            w = em.binary("divide", em.binary("multiply", diff, mag),
                          em.binary("power", db, em.const(float(p) - 1, diff.dtype, shape)))
        w = em.select(em.compare("EQ", db, zero), zero, w)
    gw = em.binary("multiply", w, em.broadcast_in_dim(em.convert(g, diff.dtype), shape, dims))
    return em.reduce_simple(gw, [lead + 1], "add", 0)
