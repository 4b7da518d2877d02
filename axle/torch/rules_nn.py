"""Normalization, softmax, dropout and attention ops that decompositions leave whole:
_softmax, _log_softmax, native_layer_norm, native_group_norm, _native_batch_norm_legit*, native_dropout,
scaled_dot_product attention (math form)."""
from __future__ import annotations

import math

from axle.torch.registry import Unsupported, V, aten, dim, opmath, rule, shape_of
from axle.torch.rules_reduce import dot, variance


def _keep(shape, ds):
    return [1 if i in ds else s for i, s in enumerate(shape)]


def _shifted_exp(em, x: V, d: int):
    """(max of x along d, reduced; x - that max; its exp; the sum of the exps, reduced). A
    row of -inf keeps its max at 0, so exp gives 0 rather than nan, as torch does."""
    m = em.reduce([x], [em.const(-math.inf, x.dtype)], [d], lambda e, l, r: [e.binary("maximum", l[0], r[0])])[0]
    m = em.select(em.compare("EQ", m, em.const(-math.inf, x.dtype, m.shape)), em.const(0, x.dtype, m.shape), m)
    z = em.binary("subtract", x, em.broadcast_to(em.reshape(m, _keep(x.shape, [d])), x.shape))
    e = em.unary("exponential", z)
    return m, z, e, em.reduce_simple(e, [d], "add", 0)


def softmax(em, x: V, d: int, log: bool = False) -> V:
    _, z, e, total = _shifted_exp(em, x, d)
    s = em.broadcast_to(em.reshape(total, _keep(x.shape, [d])), x.shape)
    if log:
        return em.binary("subtract", z, em.unary("log", s))
    return em.binary("divide", e, s)


def softmax_lse(em, x: V, d: int):
    """softmax(x) along d and its logsumexp (max + log of the sum), from one pass of exps."""
    m, _, e, total = _shifted_exp(em, x, d)
    p = em.binary("divide", e, em.broadcast_to(em.reshape(total, _keep(x.shape, [d])), x.shape))
    return p, em.binary("add", m, em.unary("log", total))


@rule(aten._softmax.default)
def _softmax(em, out, x, d, half_to_float=False):
    return em.convert(softmax(em, em.convert(x, opmath(x.dtype)), dim(d, x.rank)), out[1])


@rule(aten._log_softmax.default)
def _log_softmax(em, out, x, d, half_to_float=False):
    return em.convert(softmax(em, em.convert(x, opmath(x.dtype)), dim(d, x.rank), log=True), out[1])


@rule(aten._softmax_backward_data.default)
def _softmax_backward(em, out, g, y, d, in_dtype):
    ct = opmath(out[1])
    d = dim(d, y.rank)
    g, y = em.convert(g, ct), em.convert(y, ct)
    gy = em.binary("multiply", g, y)
    s = em.broadcast_to(em.reshape(em.reduce_simple(gy, [d], "add", 0), _keep(y.shape, [d])), y.shape)
    return em.convert(em.binary("subtract", gy, em.binary("multiply", y, s)), out[1])


@rule(aten._log_softmax_backward_data.default)
def _log_softmax_backward(em, out, g, y, d, in_dtype):
    ct = opmath(out[1])
    d = dim(d, y.rank)
    g, y = em.convert(g, ct), em.convert(y, ct)
    s = em.broadcast_to(em.reshape(em.reduce_simple(g, [d], "add", 0), _keep(y.shape, [d])), y.shape)
    return em.convert(em.binary("subtract", g, em.binary("multiply", em.unary("exponential", y), s)), out[1])


@rule(aten.native_layer_norm.default)
def _layer_norm(em, out, x, normalized_shape, w, b, eps):
    ct = opmath(x.dtype)
    xc = em.convert(x, ct)
    axis = x.rank - len(normalized_shape)
    ds = list(range(axis, x.rank))
    mean, var = variance(em, xc, ds, 0)
    rstd = em.unary("rsqrt", em.binary("add", var, em.const(eps, ct, var.shape)))
    rstd_k = em.reshape(rstd, mean.shape)
    y = em.binary("multiply", em.binary("subtract", xc, em.broadcast_to(mean, x.shape)), em.broadcast_to(rstd_k, x.shape))
    if w is not None:
        y = em.binary("multiply", y, em.broadcast_to(em.convert(w, ct), x.shape))
    if b is not None:
        y = em.binary("add", y, em.broadcast_to(em.convert(b, ct), x.shape))
    return (em.convert(y, out[0][1]), em.reshape(em.convert(mean, out[1][1]), shape_of(out[1])),
            em.reshape(em.convert(rstd_k, out[2][1]), shape_of(out[2])))


@rule(aten.native_group_norm.default)
def _group_norm(em, out, x, w, b, N, C, HxW, group, eps):
    """GroupNorm: statistics per (image, group of C / group channels) over the group's
    channels and every position; y scaled and shifted per channel; mean and rstd [N, group]."""
    ct = opmath(x.dtype)
    n, c = x.shape[0], x.shape[1]
    rest = math.prod(x.shape[2:])
    xg = em.reshape(em.convert(x, ct), (n, group, (c // group) * rest))
    mean, var = variance(em, xg, [2], 0)  # mean kept as [n, group, 1]
    rstd = em.reshape(em.unary("rsqrt", em.binary("add", var, em.const(eps, ct, var.shape))), mean.shape)
    y = em.binary("multiply", em.binary("subtract", xg, em.broadcast_to(mean, xg.shape)),
                  em.broadcast_to(rstd, xg.shape))
    y = em.reshape(y, x.shape)
    if w is not None:
        y = em.binary("multiply", y, em.broadcast_in_dim(em.convert(w, ct), x.shape, [1]))
    if b is not None:
        y = em.binary("add", y, em.broadcast_in_dim(em.convert(b, ct), x.shape, [1]))
    return (em.convert(y, out[0][1]), em.reshape(em.convert(mean, out[1][1]), shape_of(out[1])),
            em.reshape(em.convert(rstd, out[2][1]), shape_of(out[2])))


def _batch_norm(em, x, w, b, mean, var, eps, ct):
    """(x - mean) * rsqrt(var + eps) * w + b with per-channel (dim 1) statistics."""
    c = lambda v: em.broadcast_in_dim(em.convert(v, ct), x.shape, [1])
    rstd = em.unary("rsqrt", em.binary("add", var, em.const(eps, ct, var.shape)))
    y = em.binary("multiply", em.binary("subtract", em.convert(x, ct), c(mean)), c(rstd))
    if w is not None:
        y = em.binary("multiply", y, c(w))
    if b is not None:
        y = em.binary("add", y, c(b))
    return y, rstd


def _batch_stats(em, x, ct):
    ds = [0] + list(range(2, x.rank))
    mean, var = variance(em, em.convert(x, ct), ds, 0)
    return em.reshape(mean, (x.shape[1],)), var, math.prod(x.shape[d] for d in ds)


@rule(aten._native_batch_norm_legit_functional.default)
def _bn_functional(em, out, x, w, b, rm, rv, training, momentum, eps):
    ct = opmath(x.dtype)
    if not training:
        y, _ = _batch_norm(em, x, w, b, em.convert(rm, ct), em.convert(rv, ct), eps, ct)
        empty = em.const(0, out[1][1], shape_of(out[1]))
        return em.convert(y, out[0][1]), empty, empty, rm, rv
    mean, var, n = _batch_stats(em, x, ct)
    y, rstd = _batch_norm(em, x, w, b, mean, var, eps, ct)
    m = lambda v: em.const(v, ct, mean.shape)
    unbiased = em.binary("multiply", var, m(n / max(n - 1, 1)))
    new_rm = em.binary("add", em.binary("multiply", m(1 - momentum), em.convert(rm, ct)), em.binary("multiply", m(momentum), mean))
    new_rv = em.binary("add", em.binary("multiply", m(1 - momentum), em.convert(rv, ct)), em.binary("multiply", m(momentum), unbiased))
    return (em.convert(y, out[0][1]), em.convert(mean, out[1][1]), em.convert(rstd, out[2][1]),
            em.convert(new_rm, rm.dtype), em.convert(new_rv, rv.dtype))


@rule(aten._native_batch_norm_legit_no_training.default)
def _bn_no_training(em, out, x, w, b, rm, rv, momentum, eps):
    ct = opmath(x.dtype)
    y, _ = _batch_norm(em, x, w, b, em.convert(rm, ct), em.convert(rv, ct), eps, ct)
    return (em.convert(y, out[0][1]), em.const(0, out[1][1], shape_of(out[1])),
            em.const(0, out[2][1], shape_of(out[2])))


@rule(aten._native_batch_norm_legit.no_stats)
def _bn_no_stats(em, out, x, w, b, training, momentum, eps):
    ct = opmath(x.dtype)
    mean, var, _ = _batch_stats(em, x, ct)
    y, rstd = _batch_norm(em, x, w, b, mean, var, eps, ct)
    return em.convert(y, out[0][1]), em.convert(mean, out[1][1]), em.convert(rstd, out[2][1])


@rule(aten.native_dropout.default)
def _dropout(em, out, x, p, train):
    """Dropout in training: each element kept with probability 1 - p and scaled by
    1 / (1 - p); the mask comes back for the backward. The random numbers are axle's
    (Threefry, seeded from torch's generator on every call: torch.manual_seed decides
    them), not eager's own stream, as with inductor."""
    if not train or p == 0:
        return x, em.const(True, "i1", x.shape)
    if p >= 1:
        return em.const(0, x.dtype, x.shape), em.const(False, "i1", x.shape)
    keep = em.compare("LT", em.uniform(x.shape), em.const(1.0 - float(p), "f32", x.shape))
    scaled = em.binary("multiply", x, em.const(1.0 / (1.0 - float(p)), x.dtype, x.shape))
    return em.select(keep, scaled, em.const(0, x.dtype, x.shape)), keep


@rule(aten.bernoulli.p)
def _bernoulli_p(em, out, x, p=0.5, *, generator=None):
    """Ones with probability p, zeros otherwise, of x's shape and type (timm's stochastic
    depth); axle's random numbers, seeded from torch's generator (see native_dropout)."""
    if generator is not None:
        raise Unsupported("bernoulli with an explicit generator")
    hit = em.compare("LT", em.uniform(x.shape), em.const(float(p), "f32", x.shape))
    return em.convert(hit, x.dtype)


def _groups(q, k) -> int:
    """Query heads per key / value head (grouped-query attention: q [..., Hq, L, E] against
    k, v [..., Hkv, S, E], Hq = G Hkv, query head h reading key head h // G); 1 otherwise."""
    if q.rank < 3 or k.shape[-3] == q.shape[-3]:
        return 1
    hq, hkv = q.shape[-3], k.shape[-3]
    if hkv == 0 or hq % hkv:
        raise Unsupported(f"attention with {hq} query heads and {hkv} key heads")
    return hq // hkv


def _repeat_heads(em, t, g: int):
    """[..., H, S, E] -> [..., H g, S, E], head h repeated g times in a row."""
    if g == 1:
        return t
    lead = t.rank - 3
    wide = em.broadcast_in_dim(t, t.shape[:-2] + (g,) + t.shape[-2:], list(range(lead + 1)) + [lead + 2, lead + 3])
    return em.reshape(wide, t.shape[:-3] + (t.shape[-3] * g,) + t.shape[-2:])


def _sum_heads(em, t, g: int):
    """The inverse's gradient: [..., H g, S, E] -> [..., H, S, E], each head's g copies summed."""
    if g == 1:
        return t
    lead = t.rank - 3
    split = em.reshape(t, t.shape[:-3] + (t.shape[-3] // g, g) + t.shape[-2:])
    return em.reduce_simple(split, [lead + 1], "add", 0)


def attention(em, q, k, v, mask, causal, scale, ct):
    """softmax(q k^T * scale + mask) v over (..., L, E) x (..., S, E); also the logsumexp.
    Grouped-query attention (fewer key / value heads) repeats the key and value heads."""
    lead = q.rank - 2
    L, S = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    g = _groups(q, k)
    q, k, v = em.convert(q, ct), _repeat_heads(em, em.convert(k, ct), g), _repeat_heads(em, em.convert(v, ct), g)
    kt = em.transpose(k, list(range(lead)) + [lead + 1, lead])
    s = dot(em, q, kt, lead, ct)
    s = em.binary("multiply", s, em.const(scale, ct, s.shape))
    if causal:
        keep = em.compare("GE", em.iota((L, S), 0), em.iota((L, S), 1))
        s = em.select(em.broadcast_to(keep, s.shape), s, em.const(-math.inf, ct, s.shape))
    if mask is not None:
        if mask.dtype == "i1":
            s = em.select(em.broadcast_to(mask, s.shape), s, em.const(-math.inf, ct, s.shape))
        else:
            s = em.binary("add", s, em.broadcast_to(em.convert(mask, ct), s.shape))
    p, lse = softmax_lse(em, s, s.rank - 1)  # (one pass of exps for both)
    return dot(em, p, v, lead, ct), lse


@rule(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _sdpa_flash_cpu(em, out, q, k, v, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    if dropout_p > 0:
        raise Unsupported("scaled_dot_product attention with dropout")
    o, lse = attention(em, q, k, v, attn_mask, is_causal, scale, opmath(q.dtype))
    return em.convert(o, out[0][1]), em.convert(lse, out[1][1])


@rule(aten.scaled_dot_product_attention.default, aten._scaled_dot_product_attention_math.default)
def _sdpa(em, out, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *args, scale=None, enable_gqa=False, **_):
    if dropout_p > 0:
        raise Unsupported("scaled_dot_product attention with dropout")
    o, _ = attention(em, q, k, v, attn_mask, is_causal, scale, opmath(q.dtype))
    first = out[0] if isinstance(out, list) else out
    o = em.convert(o, first[1])
    return (o, em.const(0, out[1][1], shape_of(out[1]))) if isinstance(out, list) else o


@rule(aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
def _sdpa_flash_cpu_backward(em, out, g, q, k, v, o, lse, dropout_p, is_causal, *, attn_mask=None, scale=None):
    """dq, dk, dv of softmax(q k^T * scale) v, the probabilities recomputed from q and k."""
    if dropout_p > 0:
        raise Unsupported("scaled_dot_product attention backward with dropout")
    ct = opmath(q.dtype)
    lead = q.rank - 2
    L, S = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    groups = _groups(q, k)
    g, q, k, v, o = (em.convert(t, ct) for t in (g, q, k, v, o))
    k, v = _repeat_heads(em, k, groups), _repeat_heads(em, v, groups)
    tr = lambda t: em.transpose(t, list(range(lead)) + [lead + 1, lead])
    s = em.binary("multiply", dot(em, q, tr(k), lead, ct), em.const(scale, ct, q.shape[:-1] + (S,)))
    if is_causal:
        keep = em.compare("GE", em.iota((L, S), 0), em.iota((L, S), 1))
        s = em.select(em.broadcast_to(keep, s.shape), s, em.const(-math.inf, ct, s.shape))
    if attn_mask is not None:
        if attn_mask.dtype == "i1":
            s = em.select(em.broadcast_to(attn_mask, s.shape), s, em.const(-math.inf, ct, s.shape))
        else:
            s = em.binary("add", s, em.broadcast_to(em.convert(attn_mask, ct), s.shape))
    p = softmax(em, s, s.rank - 1)
    dv = dot(em, tr(p), g, lead, ct)
    dp = dot(em, g, tr(v), lead, ct)
    row = em.reduce_simple(em.binary("multiply", g, o), [o.rank - 1], "add", 0)
    row = em.broadcast_to(em.reshape(row, row.shape + (1,)), s.shape)
    ds = em.binary("multiply", p, em.binary("subtract", dp, row))
    ds = em.binary("multiply", ds, em.const(scale, ct, ds.shape))
    dq = dot(em, ds, k, lead, ct)
    dk = dot(em, tr(ds), q, lead, ct)
    dk, dv = _sum_heads(em, dk, groups), _sum_heads(em, dv, groups)
    return tuple(em.convert(t, spec[1]) for t, spec in zip((dq, dk, dv), out))


@rule(aten._weight_norm_interface_backward.default)
def _weight_norm_backward(em, out, grad_w, v, g, norms, dim):
    """w = g v / |v| (the norm over every dimension but `dim`): grad_g = sum(grad_w v) / |v|,
    grad_v = g / |v| (grad_w - v sum(grad_w v) / |v|^2)."""
    ct = opmath(out[0][1])
    gw, vv, gg, nn = (em.convert(t, ct) for t in (grad_w, v, g, norms))
    d = dim % v.rank
    others = [i for i in range(v.rank) if i != d]
    dot = em.reshape(em.reduce_simple(em.binary("multiply", gw, vv), others, "add", 0), g.shape)
    grad_g = em.binary("divide", dot, nn)
    full = lambda t: em.broadcast_in_dim(t, v.shape, list(range(v.rank)))  # noqa: E731  (size-1 dims spread)
    scale = em.binary("divide", dot, em.binary("multiply", nn, nn))
    inner = em.binary("subtract", gw, em.binary("multiply", vv, full(scale)))
    grad_v = em.binary("multiply", full(em.binary("divide", gg, nn)), inner)
    return em.convert(grad_v, out[0][1]), em.convert(grad_g, out[1][1])


@rule(aten._weight_norm_interface.default)
def _weight_norm(em, out, v, g, dim=0):
    """(g v / |v|, |v|), the norm over every dimension but `dim` (shaped like g)."""
    ct = opmath(out[0][1])
    vv, gg = em.convert(v, ct), em.convert(g, ct)
    d = dim % v.rank
    others = [i for i in range(v.rank) if i != d]
    n = em.reshape(em.unary("sqrt", em.reduce_simple(em.binary("multiply", vv, vv), others, "add", 0)), g.shape)
    w = em.binary("multiply", vv, em.broadcast_in_dim(em.binary("divide", gg, n), v.shape, list(range(v.rank))))
    return em.convert(w, out[0][1]), em.convert(n, out[1][1])
