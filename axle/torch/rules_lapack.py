"""LU, symmetric eigendecompositions, SVD and Householder products: torch.linalg through the
LAPACK custom calls JAX emits on the CPU (`lapack_sgetrf_ffi`, `lapack_ssyevd_ffi`,
`lapack_sgesdd_ffi`, `lapack_sorgqr_ffi`), which axle's CPU backend calls natively and its
interpreter runs the same way (axle/interpreter/lapack_builders.py): slogdet and det (a
Glow-style invertible 1x1 convolution), solve, inv, lu_factor / lu_solve (their
backward graphs), eigh (ZCA whitening), svd (Procrustes alignment), the orthogonal
parametrization's householder_product.

The custom calls take and give logical (row-major) tensors here: axle moves them to and
from LAPACK's column-major order itself. Pivots are LAPACK's (1-based, int32), as torch's
are. Real types only; complex inputs stay eager (Unsupported). Like torch.linalg.cholesky
(rules_linalg.py) the error `info` is reported as 0: a singular matrix gives what LAPACK
leaves (infinities, NaNs), as in XLA."""
from __future__ import annotations

import math

from axle.torch.registry import RULES, Unsupported, V, aten, rule, shape_of
from axle.torch.rules_linalg import _diag_mask, _plane_mask, _trsm
from axle.torch.rules_reduce import dot

_PREFIX = {"f32": "s", "f64": "d"}


def _lapack(em, routine: str, operands: list, results: list, config: str = "") -> list:
    """One jaxlib LAPACK custom call (results: [(shape, dtype)])."""
    p = _PREFIX.get(operands[0].dtype)
    if p is None:
        raise Unsupported(f"torch.linalg ({routine}) of {operands[0].dtype}: real f32 / f64 only")
    attrs = (f'call_target_name = "lapack_{p}{routine}_ffi", api_version = 4 : i32, '
             f"mhlo.backend_config = {{{config}}}")
    return em.op_multi("stablehlo.custom_call", operands, results, attrs)


def _square(a: V, what: str) -> int:
    if a.rank < 2 or a.shape[-1] != a.shape[-2]:
        raise Unsupported(f"{what} of a non-square shape {list(a.shape)}")
    return a.shape[-1]


def _lu(em, a: V):
    """(LU, pivots) of a [.., m, n]: getrf's packed factors, 1-based int32 row interchanges."""
    lead, m, n = tuple(a.shape[:-2]), a.shape[-2], a.shape[-1]
    lu, piv, _ = _lapack(em, "getrf", [a], [(a.shape, a.dtype), (lead + (min(m, n),), "i32"), (lead, "i32")])
    return lu, piv


def _diag(em, x: V) -> V:
    """The main diagonal of x [.., n, n] as [.., n]."""
    kept = em.select(_diag_mask(em, x.shape, 0), x, em.const(0, x.dtype, x.shape))
    return em.reduce_simple(kept, [x.rank - 1], "add", 0)


def _swaps_odd(em, piv: V, dtype: str) -> V:
    """-1 where an odd number of the pivots interchange rows (piv[i] != i + 1), else 1."""
    moved = em.compare("NE", piv, em.binary("add", em.iota(piv.shape, piv.rank - 1, "i32"),
                                             em.const(1, "i32", piv.shape)))
    count = em.reduce_simple(em.convert(moved, "i32"), [piv.rank - 1], "add", 0)
    odd = em.binary("and", count, em.const(1, "i32", count.shape))
    one = em.const(1, dtype, count.shape)
    return em.select(em.compare("EQ", odd, em.const(0, "i32", count.shape)), one, em.unary("negate", one))


def _sign_logabs(em, lu: V, piv: V):
    d = _diag(em, lu)
    neg = em.reduce_simple(em.convert(em.compare("LT", d, em.const(0, d.dtype, d.shape)), "i32"),
                           [d.rank - 1], "add", 0)
    zero = em.reduce_simple(em.convert(em.compare("EQ", d, em.const(0, d.dtype, d.shape)), "i32"),
                            [d.rank - 1], "add", 0)
    parity = _swaps_odd(em, piv, d.dtype)
    flip = em.compare("EQ", em.binary("and", neg, em.const(1, "i32", neg.shape)), em.const(1, "i32", neg.shape))
    sign = em.select(flip, em.unary("negate", parity), parity)
    sign = em.select(em.compare("GT", zero, em.const(0, "i32", zero.shape)), em.const(0, d.dtype, sign.shape), sign)
    logabs = em.reduce_simple(em.unary("log", em.unary("abs", d)), [d.rank - 1], "add", 0)
    return sign, logabs


@rule(aten._linalg_slogdet.default)
def _slogdet(em, out, a):
    _square(a, "slogdet")
    lu, piv = _lu(em, a)
    sign, logabs = _sign_logabs(em, lu, piv)
    return sign, logabs, lu, piv


@rule(aten._linalg_det.default)
def _det(em, out, a):
    _square(a, "det")
    lu, piv = _lu(em, a)
    d = _diag(em, lu)
    det = em.binary("multiply", em.reduce_simple(d, [d.rank - 1], "multiply", 1), _swaps_odd(em, piv, d.dtype))
    return det, lu, piv


def _permutation(em, piv: V) -> V:
    """The rows piv's interchanges bring to each position ([.., n] int32): row i of P^T B
    is row perm[i] of B (LAPACK applies the interchanges i = 0, 1, .. in order)."""
    n = piv.shape[-1]
    pos = em.iota(piv.shape, piv.rank - 1, "i32")
    perm = pos
    lead = tuple(piv.shape[:-1])
    for i in range(n):
        p = em.binary("subtract", em.slice(piv, [0] * len(lead) + [i], lead + (i + 1,), [1] * piv.rank),
                      em.const(1, "i32", lead + (1,)))
        pb = em.broadcast_in_dim(em.reshape(p, lead), piv.shape, list(range(len(lead))))
        at_p = em.compare("EQ", pos, pb)
        # perm[p] and perm[i], broadcast along the row
        val_p = em.reduce_simple(em.select(at_p, perm, em.const(0, "i32", perm.shape)), [perm.rank - 1], "add", 0)
        val_i = em.reshape(em.slice(perm, [0] * len(lead) + [i], lead + (i + 1,), [1] * perm.rank), lead)
        at_i = em.compare("EQ", pos, em.const(i, "i32", pos.shape))
        perm = em.select(at_i, em.broadcast_in_dim(val_p, perm.shape, list(range(len(lead)))),
                         em.select(at_p, em.broadcast_in_dim(val_i, perm.shape, list(range(len(lead)))), perm))
    return perm


def _inverse_permutation(em, perm: V) -> V:
    """inv with inv[perm[i]] = i."""
    n = perm.shape[-1]
    shape = perm.shape + (n,)
    pi = em.broadcast_in_dim(perm, shape, list(range(perm.rank)))  # [.., i, j] = perm[i]
    j = em.iota(shape, perm.rank, "i32")
    i = em.iota(shape, perm.rank - 1, "i32")
    hit = em.select(em.compare("EQ", pi, j), i, em.const(0, "i32", shape))
    return em.reduce_simple(hit, [perm.rank - 1], "add", 0)


def _take_rows(em, b: V, rows: V) -> V:
    """b [.., n, k] with row r replaced by row rows[r] (rows [.., n])."""
    if rows.rank != b.rank - 1:  # (_lu_solve broadcasts the factors over B's batch first)
        raise Unsupported("lu_solve with pivots of other batch dimensions than B")
    index = em.broadcast_in_dim(rows, b.shape, list(range(rows.rank)))
    return RULES[aten.gather.default](em, (b.shape, b.dtype), b, b.rank - 2, index)


def _batch_like(em, lu: V, piv: V, b: V):
    """The factors and B broadcast to one batch shape."""
    import torch
    lead = tuple(torch.broadcast_shapes(tuple(lu.shape[:-2]), tuple(b.shape[:-2])))

    def to(v, inner):
        shape = lead + tuple(v.shape[v.rank - inner:])
        if tuple(v.shape) == shape:
            return v
        return em.broadcast_in_dim(v, shape, list(range(len(shape) - v.rank, len(shape))))
    return to(lu, 2), to(piv, 1), to(b, 2)


def _lu_solve(em, lu: V, piv: V, b: V, left: bool = True, adjoint: bool = False) -> V:
    if not left:  # X A = B  <=>  A^T X^T = B^T (real types)
        t = list(range(b.rank - 2)) + [b.rank - 1, b.rank - 2]
        return em.transpose(_lu_solve(em, lu, piv, em.transpose(b, t), True, not adjoint), t)
    lu, piv, b = _batch_like(em, lu, piv, b)
    perm = _permutation(em, piv)
    if not adjoint:  # L U X = P^T B
        y = _trsm(em, lu, _take_rows(em, b, perm), True, True, False, True)
        return _trsm(em, lu, y, True, False, False)
    # U^T L^T P^T X = B: X = P (L^-T U^-T B)
    z = _trsm(em, lu, b, True, False, True)
    w = _trsm(em, lu, z, True, True, True, True)
    return _take_rows(em, w, _inverse_permutation(em, perm))


@rule(aten.linalg_lu_solve.default)
def _linalg_lu_solve(em, out, lu, pivots, b, *, left=True, adjoint=False):
    if lu.dtype != b.dtype:
        raise Unsupported("lu_solve of mixed types")
    return _lu_solve(em, lu, pivots, b, left, adjoint)


@rule(aten.linalg_lu_factor_ex.default)
def _lu_factor_ex(em, out, a, *, pivot=True, check_errors=False):
    if not pivot:
        raise Unsupported("lu_factor without pivoting")
    lu, piv = _lu(em, a)
    return lu, piv, em.const(0, out[2][1], shape_of(out[2]))


@rule(aten._linalg_solve_ex.default)
def _solve_ex(em, out, a, b, *, left=True, check_errors=False):
    _square(a, "solve")
    if a.dtype != b.dtype:
        raise Unsupported("linalg.solve of mixed types")
    vector = b.rank == 1 or (b.rank == a.rank - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    lu, piv = _lu(em, a)
    bb = em.reshape(b, tuple(b.shape) + (1,)) if vector else b
    x = _lu_solve(em, lu, piv, bb, left, False)
    if vector:
        x = em.reshape(x, tuple(x.shape[:-1]))
    return x, lu, piv, em.const(0, out[3][1], shape_of(out[3]))


@rule(aten.linalg_inv_ex.default)
def _inv_ex(em, out, a, *, check_errors=False):
    _square(a, "inv")
    eye = em.convert(_diag_mask(em, a.shape, 0), a.dtype)
    lu, piv = _lu(em, a)
    return _lu_solve(em, lu, piv, eye), em.const(0, out[1][1], shape_of(out[1]))


@rule(aten._linalg_eigh.default)
def _eigh(em, out, a, UPLO="L", compute_v=True):
    n = _square(a, "eigh")
    lead = tuple(a.shape[:-2])
    mode, uplo = ord("V" if compute_v else "N"), ord(UPLO.upper())
    vecs, w, _ = _lapack(em, "syevd", [a], [(a.shape, a.dtype), (lead + (n,), a.dtype), (lead, "i32")],
                         f"mode = {mode} : ui8, uplo = {uplo} : ui8")
    if not compute_v:
        return w, em.const(0, out[1][1], shape_of(out[1]))
    return w, vecs


@rule(aten._linalg_svd.default)
def _svd(em, out, a, full_matrices=False, compute_uv=True, *, driver=None):
    if driver not in (None, "gesdd"):
        raise Unsupported(f"svd with driver {driver!r}")
    lead, m, n = tuple(a.shape[:-2]), a.shape[-2], a.shape[-1]
    k = min(m, n)
    full = full_matrices and compute_uv
    ushape = lead + ((m, m) if full else (m, k))
    vshape = lead + ((n, n) if full else (k, n))
    _, s, u, vt, _ = _lapack(em, "gesdd", [a], [(a.shape, a.dtype), (lead + (k,), a.dtype), (ushape, a.dtype),
                                                 (vshape, a.dtype), (lead, "i32")],
                             f"mode = {ord('A' if full else 'S')} : ui8")
    if not compute_uv:
        return (em.const(0, out[0][1], shape_of(out[0])), s, em.const(0, out[2][1], shape_of(out[2])))
    return u, s, vt


@rule(aten.linalg_householder_product.default)
def _householder_product(em, out, a, tau):
    if a.dtype != tau.dtype or a.shape[-2] < a.shape[-1] or tau.shape[-1] > a.shape[-1]:
        raise Unsupported("householder_product: m >= n >= k and one dtype")
    (q,) = _lapack(em, "orgqr", [a, tau], [(a.shape, a.dtype)])
    return q


# the Pade degree used per type and the largest 1-norm it keeps within the type's rounding
# error (Higham, "The scaling and squaring method for the matrix exponential revisited",
# 2005: theta_7 for single, theta_13 for double precision)
_EXPM = {"f32": (7, 3.925724783138660, 23, 127, "i32"), "f64": (13, 5.371920351148152, 52, 1023, "i64")}


def _pade(m: int) -> list:
    """The [m/m] Pade coefficients of exp: b_k = (2m - k)! m! / ((2m)! k! (m - k)!)."""
    f = math.factorial
    return [f(2 * m - k) * f(m) / (f(2 * m) * f(k) * f(m - k)) for k in range(m + 1)]


@rule(aten.linalg_matrix_exp.default)
def _matrix_exp(em, out, a):
    """exp(A) by scaling and squaring: A / 2^s with s = max(0, ceil(log2(|A|_1 / theta))) per
    matrix, the [m/m] Pade approximant (m = 7 in f32, 13 in f64) by one LU solve, then s
    squarings in a while loop (as many trips as the largest s of the batch; a matrix that
    needs fewer keeps its value). The backward graph's block-matrix exponential comes here too."""
    n = _square(a, "matrix_exp")
    dtype = a.dtype
    if dtype not in ("f32", "f64"):
        if dtype not in ("f16", "bf16"):
            raise Unsupported(f"matrix_exp of {dtype}")
        a = em.convert(a, "f32")
    if n == 0:
        return em.convert(a, dtype)
    m, theta, mant, bias, ity = _EXPM[a.dtype]
    lead, dt = tuple(a.shape[:-2]), a.dtype
    batch = list(range(len(lead)))
    norm = em.reduce_simple(em.reduce_simple(em.unary("abs", a), [a.rank - 2], "add", 0), [a.rank - 2], "maximum",
                            -math.inf)
    s = em.unary("ceil", em.binary("divide", em.unary("log", em.binary("divide", norm, em.const(theta, dt, lead))),
                                   em.const(math.log(2.0), dt, lead)))
    s = em.binary("minimum", em.binary("maximum", s, em.const(0, dt, lead)), em.const(bias - 2, dt, lead))
    s = em.convert(em.select(em.compare("EQ", s, s), s, em.const(0, dt, lead)), "i32")  # NaN: no scaling
    bits = em.binary("shift_left", em.binary("subtract", em.const(bias, ity, lead), em.convert(s, ity)),
                     em.const(mant, ity, lead))
    scale = em.op("stablehlo.bitcast_convert", [bits], lead, dt)  # 2^-s exactly
    x = em.binary("multiply", a, em.broadcast_in_dim(scale, a.shape, batch))
    c = _pade(m)
    eye = em.convert(_diag_mask(em, a.shape, 0), dt)

    def comb(*terms):  # sum of coefficient x matrix
        acc = None
        for k, mat in terms:
            t = em.binary("multiply", em.const(c[k], dt, a.shape), mat)
            acc = t if acc is None else em.binary("add", acc, t)
        return acc
    x2 = dot(em, x, x, len(lead), dt)
    x4 = dot(em, x2, x2, len(lead), dt)
    x6 = dot(em, x4, x2, len(lead), dt)
    if m == 7:
        u = dot(em, x, comb((7, x6), (5, x4), (3, x2), (1, eye)), len(lead), dt)
        v = comb((6, x6), (4, x4), (2, x2), (0, eye))
    else:
        inner_u = em.binary("add", dot(em, x6, comb((13, x6), (11, x4), (9, x2)), len(lead), dt),
                            comb((7, x6), (5, x4), (3, x2), (1, eye)))
        u = dot(em, x, inner_u, len(lead), dt)
        v = em.binary("add", dot(em, x6, comb((12, x6), (10, x4), (8, x2)), len(lead), dt),
                      comb((6, x6), (4, x4), (2, x2), (0, eye)))
    lu, piv = _lu(em, em.binary("subtract", v, u))
    r = _lu_solve(em, lu, piv, em.binary("add", v, u))
    most = em.reduce_simple(s, list(range(len(lead))), "maximum", 0) if lead else s

    def cond(sub, args):
        return sub.compare("LT", args[0], args[3])

    def body(sub, args):
        i, cur, need, top = args
        sq = dot(sub, cur, cur, len(lead), dt)
        keep = sub.broadcast_in_dim(sub.compare("LT", sub.broadcast_in_dim(i, lead, []), need), cur.shape, batch)
        return [sub.binary("add", i, sub.const(1, "i32")), sub.select(keep, sq, cur), need, top]
    r = em.while_loop([em.const(0, "i32"), r, s, most], cond, body)[1]
    return em.convert(r, dtype)


@rule(aten.linalg_qr.default)
def _qr(em, out, a, mode="reduced"):
    """Householder QR (geqrf), Q formed by orgqr from the packed reflectors (zero columns
    appended first where mode="complete" asks for all m columns of a tall A), R the upper
    triangle of the packed factor."""
    if mode not in ("reduced", "complete", "r"):
        raise Unsupported(f"linalg_qr mode {mode!r}")
    lead, m, n = tuple(a.shape[:-2]), a.shape[-2], a.shape[-1]
    k = min(m, n)
    packed, tau = _lapack(em, "geqrf", [a], [(a.shape, a.dtype), (lead + (k,), a.dtype)])
    rows = m if mode == "complete" else k
    r = packed if rows == m else em.slice(packed, [0] * a.rank, lead + (rows, n), [1] * a.rank)
    upper = _plane_mask(em, r.shape, lambda i, j: em.compare("GE", j, i))
    r = em.select(upper, r, em.const(0, a.dtype, r.shape))
    if mode == "r":
        return em.const(0, out[0][1], shape_of(out[0])), r
    cols = m if mode == "complete" else k
    if cols > n:  # a tall A's complete Q: orgqr over m columns, the reflectors in the first n
        zero = em.const(0, a.dtype)
        basis = em.pad(packed, zero, [0] * a.rank, [0] * (a.rank - 1) + [cols - n])
    elif cols < n:  # a wide A: Q from the first m columns
        basis = em.slice(packed, [0] * a.rank, lead + (m, cols), [1] * a.rank)
    else:
        basis = packed
    (q,) = _lapack(em, "orgqr", [basis, tau], [(basis.shape, a.dtype)])
    return q, r
