"""ATen reductions and matrix products (accumulating in f32 for f16/bf16, as PyTorch's CPU
kernels do)."""
from __future__ import annotations

import math

from axle.torch.dtypes import COMPLEX
from axle.torch.registry import V, aten, dims_of, is_float, opmath, rule, shape_of, value


def _acc_type(dt: str) -> str:
    if dt in ("i1", "ui8", "i8", "i16", "i32"):
        return "i64"
    return opmath(dt)


def _finish(em, r: V, out) -> V:
    return em.reshape(em.convert(r, out[1]), shape_of(out))


@rule(aten.sum.dim_IntList, aten.sum.default)
def _sum(em, out, a, dims=None, keepdim=False, *, dtype=None):
    ct = opmath(out[1]) if is_float(out[1]) or out[1] in COMPLEX else "i64"
    x = value(em, a, ct)
    return _finish(em, em.reduce_simple(x, dims_of(dims, a.rank), "add", 0), out)


@rule(aten.prod.dim_int, aten.prod.default)
def _prod(em, out, a, d=None, keepdim=False, *, dtype=None):
    ct = opmath(out[1]) if is_float(out[1]) or out[1] in COMPLEX else "i64"
    return _finish(em, em.reduce_simple(value(em, a, ct), dims_of(d, a.rank), "multiply", 1), out)


@rule(aten.mean.dim, aten.mean.default)
def _mean(em, out, a, dims=None, keepdim=False, *, dtype=None):
    ct = opmath(out[1])
    ds = dims_of(dims, a.rank)
    s = em.reduce_simple(value(em, a, ct), ds, "add", 0)
    n = math.prod(a.shape[d] for d in ds)
    return _finish(em, em.binary("divide", s, em.const(n, ct, s.shape)), out)


def _extreme(dt: str, largest: bool):
    if is_float(dt):
        return -math.inf if largest else math.inf
    if dt == "i1":
        return not largest
    bits = {"i64": 64, "i32": 32, "i16": 16, "i8": 8, "ui8": 8}[dt]
    if dt == "ui8":
        return 0 if largest else 255
    return -(2 ** (bits - 1)) if largest else 2 ** (bits - 1) - 1


def _nan_aware(kind):
    """max/min that propagate NaN (stablehlo.maximum does, per the spec)."""
    def body(e, l, r):
        return [e.binary(kind, l[0], r[0])]
    return body


@rule(aten.amax.default, aten.max.default)
def _amax(em, out, a, dims=None, keepdim=False):
    return _finish(em, em.reduce([a], [em.const(_extreme(a.dtype, True), a.dtype)], dims_of(dims, a.rank),
                                 _nan_aware("maximum"))[0], out)


@rule(aten.amin.default, aten.min.default)
def _amin(em, out, a, dims=None, keepdim=False):
    return _finish(em, em.reduce([a], [em.const(_extreme(a.dtype, False), a.dtype)], dims_of(dims, a.rank),
                                 _nan_aware("minimum"))[0], out)


def _arg_reduce(em, a: V, d: int, largest: bool):
    """(values, first index of the extreme) along d; NaN counts as the extreme (torch)."""
    idx = em.iota(a.shape, d, "i64")
    direction = "GT" if largest else "LT"

    def body(e, l, r):
        lv, li, rv, ri = l[0], l[1], r[0], r[1]
        better = e.compare(direction, lv, rv)
        if is_float(lv.dtype):
            better = e.binary("or", better, e.compare("NE", lv, lv))
            rnan = e.binary("and", e.compare("NE", rv, rv), e.compare("EQ", lv, lv))
        eq = e.compare("EQ", lv, rv)
        take_l = e.binary("or", better, e.binary("and", eq, e.compare("LT", li, ri)))
        if is_float(lv.dtype):
            take_l = e.binary("and", take_l, e.unary("not", rnan))
            both_nan = e.binary("and", e.compare("NE", lv, lv), e.compare("NE", rv, rv))
            take_l = e.binary("or", take_l, e.binary("and", both_nan, e.compare("LT", li, ri)))
        return [e.select(take_l, lv, rv), e.select(take_l, li, ri)]

    return em.reduce([a, idx], [em.const(_extreme(a.dtype, largest), a.dtype), em.const(0, "i64")], [d], body)


@rule(aten.max.dim)
def _max_dim(em, out, a, d, keepdim=False):
    v, i = _arg_reduce(em, a, d + a.rank if d < 0 else d, True)
    return em.reshape(v, shape_of(out[0])), em.reshape(i, shape_of(out[1]))


@rule(aten.min.dim)
def _min_dim(em, out, a, d, keepdim=False):
    v, i = _arg_reduce(em, a, d + a.rank if d < 0 else d, False)
    return em.reshape(v, shape_of(out[0])), em.reshape(i, shape_of(out[1]))


def _arg(largest):
    def lower(em, out, a, d=None, keepdim=False):
        if d is None:
            a, d = em.reshape(a, (max(1, math.prod(a.shape)),) if a.shape else (1,)), 0
        _, i = _arg_reduce(em, a, d + a.rank if d < 0 else d, largest)
        return em.reshape(i, shape_of(out))
    return lower


rule(aten.argmax.default)(_arg(True))
rule(aten.argmin.default)(_arg(False))


@rule(aten.any.dim, aten.any.dims, aten.any.default)
def _any(em, out, a, dims=None, keepdim=False):
    return _finish(em, em.reduce_simple(value(em, a, "i1"), dims_of(dims, a.rank), "or", False), out)


@rule(aten.all.dim, aten.all.dims, aten.all.default)
def _all(em, out, a, dims=None, keepdim=False):
    return _finish(em, em.reduce_simple(value(em, a, "i1"), dims_of(dims, a.rank), "and", True), out)


def variance(em, x: V, ds, correction):
    """(mean with kept dims, variance summed / (N - correction)) of x along ds."""
    n = math.prod(x.shape[d] for d in ds)
    kept = [1 if i in ds else s for i, s in enumerate(x.shape)]
    mean = em.binary("divide", em.reduce_simple(x, ds, "add", 0), em.const(n, x.dtype, [s for i, s in enumerate(x.shape) if i not in ds]))
    mean = em.reshape(mean, kept)
    diff = em.binary("subtract", x, em.broadcast_to(mean, x.shape))
    ss = em.reduce_simple(em.binary("multiply", diff, diff), ds, "add", 0)
    var = em.binary("divide", ss, em.const(max(n - correction, 0), x.dtype, ss.shape))
    return mean, var


@rule(aten.var.correction, aten.var.dim)
def _var(em, out, a, dims=None, *args, correction=None, keepdim=False, **_):
    unbiased = args[0] if args and isinstance(args[0], bool) else None
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    ct = opmath(out[1])
    _, var = variance(em, value(em, a, ct), dims_of(dims, a.rank), correction)
    return _finish(em, var, out)


@rule(aten.var_mean.correction)
def _var_mean(em, out, a, dims=None, *, correction=None, keepdim=False):
    correction = 1 if correction is None else correction
    ct = opmath(out[0][1])
    mean, var = variance(em, value(em, a, ct), dims_of(dims, a.rank), correction)
    return _finish(em, var, out[0]), _finish(em, mean, out[1])


def dot(em, a: V, b: V, batch: int, dt: str) -> V:
    """Batched matrix product over the last dim of a and dim batch of b; the first `batch`
    dims are batch dims. Computed in opmath precision, rounded to dt."""
    ct = opmath(dt)
    a, b = em.convert(a, ct), em.convert(b, ct)
    bd = ", ".join(map(str, range(batch)))
    shape = list(a.shape[:-1]) + [b.shape[-1]]
    dn = (f"#stablehlo.dot<lhs_batching_dimensions = [{bd}], rhs_batching_dimensions = [{bd}], "
          f"lhs_contracting_dimensions = [{a.rank - 1}], rhs_contracting_dimensions = [{batch}]>")
    return em.convert(em.op("stablehlo.dot_general", [a, b], shape, ct, f"dot_dimension_numbers = {dn}"), dt)


@rule(aten.mm.default)
def _mm(em, out, a, b):
    return dot(em, a, b, 0, out[1])


@rule(aten.bmm.default)
def _bmm(em, out, a, b):
    return dot(em, a, b, 1, out[1])


@rule(aten.addmm.default)
def _addmm(em, out, bias, a, b, *, beta=1, alpha=1):
    shape, dt = shape_of(out), out[1]
    ct = opmath(dt)
    p = dot(em, a, b, 0, ct)
    if alpha != 1:
        p = em.binary("multiply", p, em.const(alpha, ct, shape))
    c = value(em, bias, ct, shape)
    if beta != 1:
        c = em.binary("multiply", c, em.const(beta, ct, shape))
    return em.convert(em.binary("add", p, c) if beta != 0 else p, dt)


@rule(aten.dot.default)
def _dot1(em, out, a, b):
    return em.reshape(dot(em, em.reshape(a, (1, a.shape[0])), em.reshape(b, (b.shape[0], 1)), 0, out[1]), ())


# ---- cumulative reductions and sorting (as JAX writes them: the CPU backend runs a
# reduce_window as long as its axis as a prefix scan, and a sort read as its first k
# elements as a partial selection)

def _prefix_window(a: V, d: int) -> str:
    """reduce_window attributes of a prefix scan along d: a window as long as the axis,
    padded by all but one element in front."""
    n = a.shape[d]
    window = [n if i == d else 1 for i in range(a.rank)]
    pads = ", ".join(f"[{n - 1 if i == d else 0}, 0]" for i in range(a.rank))
    arr = lambda v: "array<i64: " + ", ".join(str(i) for i in v) + ">"  # noqa: E731
    return (f"window_dimensions = {arr(window)}, window_strides = {arr([1] * a.rank)}, "
            f"padding = dense<[{pads}]> : tensor<{a.rank}x2xi64>")


def _cumulative(em, out, a, dim, kind, init, *, dtype=None):
    ct = opmath(out[1]) if is_float(out[1]) else "i64"
    x = value(em, a, ct)
    d = dim % a.rank if a.rank else 0
    if a.rank == 0:
        return em.convert(x, out[1])
    region = em.scalar_region([ct], lambda e, l, r: [kind(e, l[0], r[0])])
    r = em.op("stablehlo.reduce_window", [x, em.const(init, ct)], x.shape, ct, _prefix_window(a, d), region)
    return em.convert(r, out[1])


def _log_add_exp(e, l, r):
    """log(exp(l) + exp(r)) = max + log1p(exp(-|l - r|)); l + r where l - r is NaN (both
    infinite of one sign, or a NaN)."""
    diff = e.binary("subtract", l, r)
    tail = e.unary("log_plus_one", e.unary("exponential", e.unary("negate", e.unary("abs", diff))))
    return e.select(e.compare("NE", diff, diff), e.binary("add", l, r), e.binary("add", e.binary("maximum", l, r), tail))


@rule(aten.cumsum.default)
def _cumsum(em, out, a, dim, *, dtype=None):
    return _cumulative(em, out, a, dim, lambda e, l, r: e.binary("add", l, r), 0)


@rule(aten.cumprod.default)
def _cumprod(em, out, a, dim, *, dtype=None):
    return _cumulative(em, out, a, dim, lambda e, l, r: e.binary("multiply", l, r), 1)


@rule(aten.logcumsumexp.default)
def _logcumsumexp(em, out, a, dim):
    return _cumulative(em, out, a, dim, _log_add_exp, -math.inf)


def _cum_extreme(largest: bool):
    def lower(em, out, a, dim):
        """(values, int64 indices) of the running maximum / minimum along dim: PyTorch's
        recurrence, a NaN or a value at least as large (small) as the running one takes
        over, so the last of equal values and the last NaN give the index; one variadic
        reduce_window as long as the axis (a prefix scan on the CPU backend)."""
        d = dim % a.rank if a.rank else 0
        if a.rank == 0:
            return a, em.const(0, "i64")
        idx = em.iota(a.shape, d, "i64")
        attrs = _prefix_window(a, d)

        def body(e, l, r):
            take = e.compare("GE" if largest else "LE", r[0], l[0])
            if is_float(a.dtype):
                lnan, rnan = e.compare("NE", l[0], l[0]), e.compare("NE", r[0], r[0])
                take = e.binary("or", rnan, e.binary("and", e.unary("not", lnan), take))
            return [e.select(take, r[0], l[0]), e.select(take, r[1], l[1])]
        region = em.scalar_region([a.dtype, "i64"], body)
        inits = [em.const(_extreme(a.dtype, largest), a.dtype), em.const(-1, "i64")]
        v, i = em.op_multi("stablehlo.reduce_window", [a, idx] + inits, [(a.shape, a.dtype), (a.shape, "i64")],
                           attrs, region)
        return v, i
    return lower


rule(aten.cummax.default)(_cum_extreme(True))
rule(aten.cummin.default)(_cum_extreme(False))


def _sorted(em, a, d: int, descending: bool):
    """(values, int64 indices) of a sorted along d, stable, NaN as the largest value (PyTorch's order)."""
    idx = em.iota(a.shape, d, "i64")

    def before(e, l, r):  # l before r
        strict = e.compare("GT" if descending else "LT", l[0], r[0])
        if not is_float(a.dtype):
            return [strict]
        lnan, rnan = e.compare("NE", l[0], l[0]), e.compare("NE", r[0], r[0])
        first, second = (lnan, rnan) if descending else (rnan, lnan)  # NaN: the largest
        return [e.binary("or", strict, e.binary("and", first, e.unary("not", second)))]
    region = em.scalar_region([a.dtype, "i64"], before, pairs=True)
    return em.op_multi("stablehlo.sort", [a, idx], [(a.shape, a.dtype), (a.shape, "i64")],
                       f"dimension = {d} : i64, is_stable = true", region)


@rule(aten.sort.default, aten.sort.stable)
def _sort(em, out, a, *args, **kw):
    if args and isinstance(args[0], bool) or "stable" in kw:  # sort.stable(self, *, stable, dim, descending)
        dim, descending = kw.get("dim", -1), kw.get("descending", False)
    else:
        dim = args[0] if args else kw.get("dim", -1)
        descending = args[1] if len(args) > 1 else kw.get("descending", False)
    if a.rank == 0:
        return a, em.const(0, "i64")
    v, i = _sorted(em, a, dim % a.rank, bool(descending))
    return v, i


@rule(aten.topk.default)
def _topk(em, out, a, k, dim=-1, largest=True, sorted=True):
    if a.rank == 0:
        return a, em.const(0, "i64")
    d = dim % a.rank
    v, i = _sorted(em, a, d, bool(largest))
    limit = list(a.shape)
    limit[d] = k
    return (em.slice(v, [0] * a.rank, limit, [1] * a.rank), em.slice(i, [0] * a.rank, limit, [1] * a.rank))


@rule(aten.linalg_vector_norm.default)
def _vector_norm(em, out, a, ord=2, dim=None, keepdim=False, *, dtype=None):
    """sum(|x|^ord)^(1/ord) over dim (all when None); ord inf / -inf: max / min of |x|; 0:
    the count of nonzeros."""
    ct = opmath(out[1])
    x = em.unary("abs", value(em, a, ct))
    ds = dims_of(dim, a.rank)
    if ord in (math.inf, -math.inf):
        r = em.reduce_simple(x, ds, "maximum" if ord > 0 else "minimum", math.inf if ord < 0 else 0)
    elif ord == 0:
        nz = em.convert(em.compare("NE", x, em.const(0, ct, x.shape)), ct)
        r = em.reduce_simple(nz, ds, "add", 0)
    elif ord == 1:
        r = em.reduce_simple(x, ds, "add", 0)
    elif ord == 2:
        r = em.unary("sqrt", em.reduce_simple(em.binary("multiply", x, x), ds, "add", 0))
    else:
        p = em.binary("power", x, em.const(float(ord), ct, x.shape))
        s = em.reduce_simple(p, ds, "add", 0)
        r = em.binary("power", s, em.const(1.0 / float(ord), ct, s.shape))
    return _finish(em, r, out)


@rule(aten._trilinear.default)
def _trilinear(em, out, i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """sum over sumdim of i1 * i2 * i3, each with unit dimensions inserted at its expand
    list (nn.Bilinear's form, and its own gradients)."""
    ct = opmath(out[1])
    rank = i1.rank + len(expand1)
    vals = []
    for t, ex in ((i1, expand1), (i2, expand2), (i3, expand3)):
        shape, it = [], iter(t.shape)
        for d in range(rank):
            shape.append(1 if d in ex else next(it))
        vals.append(em.reshape(value(em, t, ct), tuple(shape)))
    full = tuple(max(v.shape[d] for v in vals) for d in range(rank))
    prod = None
    for v in vals:
        kept = [d for d in range(rank) if v.shape[d] == full[d]]
        b = em.broadcast_in_dim(em.reshape(v, tuple(full[d] for d in kept)), full, kept)
        prod = b if prod is None else em.binary("multiply", prod, b)
    return _finish(em, em.reduce_simple(prod, sorted(sumdim), "add", 0), out)
