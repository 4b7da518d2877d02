"""torch._foreach_* ops (optimizers' multi-tensor updates, an EMA teacher's _foreach_lerp_
after its decomposition): the per-tensor rule applied to each tensor of the lists.

Every list argument as long as the first is taken element by element (tensor lists and
scalar lists alike); a single tensor or scalar is shared. out is the list of the results'
specs."""
from __future__ import annotations

from axle.torch.registry import RULES, Unsupported, V, aten, opmath, rule

BINARY = {"add": aten.add.Tensor, "sub": aten.sub.Tensor, "mul": aten.mul.Tensor, "div": aten.div.Tensor,
          "maximum": aten.maximum.default, "minimum": aten.minimum.default, "pow": aten.pow.Tensor_Tensor}
UNARY = ("neg", "sqrt", "rsqrt", "exp", "log", "abs", "reciprocal", "sign", "sigmoid", "tanh", "sin", "cos",
         "floor", "ceil", "round", "trunc", "erf", "expm1", "log1p", "frac")


def _each(em, out, args, kwargs, one):
    first = args[0]
    if not isinstance(first, (list, tuple)):
        raise Unsupported("a _foreach op without a tensor list")
    n = len(first)

    def pick(x, i):
        return x[i] if isinstance(x, (list, tuple)) and len(x) == n else x
    return [one(em, out[i], *[pick(a, i) for a in args], **{k: pick(v, i) for k, v in kwargs.items()})
            for i in range(n)]


def _call(op, em, spec, *args, **kwargs):
    fn = RULES.get(op)
    if fn is None:
        raise Unsupported(f"_foreach over {op}, which has no rule")
    return fn(em, spec, *args, **kwargs)


def _scalar_first(op):
    """A binary rule that also takes a Python scalar on the right (pow's Tensor_Scalar)."""
    def one(em, spec, a, b, **kw):
        if op is aten.pow.Tensor_Tensor and not isinstance(b, V):
            return _call(aten.pow.Tensor_Scalar, em, spec, a, b)
        return _call(op, em, spec, a, b, **kw)
    return one


for _name, _op in BINARY.items():
    for _variant in ("List", "Scalar", "ScalarList", "Tensor"):
        _overload = getattr(getattr(aten, f"_foreach_{_name}"), _variant, None)
        if _overload is not None:
            rule(_overload)(lambda em, out, *a, _one=_scalar_first(_op), **k: _each(em, out, a, k, _one))

for _name in UNARY:
    _packet = getattr(aten, f"_foreach_{_name}", None)
    _base = getattr(getattr(aten, _name, None), "default", None)
    if _packet is not None and _base is not None:
        rule(_packet.default)(lambda em, out, *a, _b=_base, **k: _each(
            em, out, a, k, lambda em, spec, x: _call(_b, em, spec, x)))


def _addc(combine):
    """self + value * combine(t1, t2), value a scalar, one per tensor, or a tensor of them."""
    def one(em, spec, x, t1, t2, value=1):
        prod = _call(combine, em, spec, t1, t2)
        if isinstance(value, V) and value.rank == 1 and value.shape[0] == 1:
            value = em.reshape(value, ())
        return _call(aten.add.Tensor, em, spec, x, _call(aten.mul.Tensor, em, spec, prod, value))
    return one


for _name, _combine in (("addcmul", aten.mul.Tensor), ("addcdiv", aten.div.Tensor)):
    for _variant in ("Scalar", "ScalarList", "Tensor"):
        _overload = getattr(getattr(aten, f"_foreach_{_name}"), _variant, None)
        if _overload is not None:
            rule(_overload)(lambda em, out, *a, _one=_addc(_combine), **k: _each(em, out, a, k, _one))


def _lerp_one(em, spec, x, end, weight):
    """x + weight (end - x)."""
    return _call(aten.add.Tensor, em, spec, x,
                 _call(aten.mul.Tensor, em, spec, _call(aten.sub.Tensor, em, spec, end, x), weight))


for _variant in ("Scalar", "List", "ScalarList"):
    _overload = getattr(aten._foreach_lerp, _variant, None)
    if _overload is not None:
        rule(_overload)(lambda em, out, *a, **k: _each(em, out, a, k, _lerp_one))


@rule(aten._foreach_norm.Scalar)
def _foreach_norm(em, out, tensors, ord=2, dtype=None):
    """Each tensor's vector norm (clip_grad_norm_'s per-parameter norms)."""
    return [_call(aten.linalg_vector_norm.default, em, spec, x, ord, None, False, dtype=dtype)
            for spec, x in zip(out, tensors)]


@rule(aten._foreach_copy.default)
def _foreach_copy(em, out, tensors, sources, non_blocking=False):
    """Each source in its destination's type and shape (the functional form of _foreach_copy_)."""
    return [_call(aten.copy.default, em, spec, x, s) for spec, x, s in zip(out, tensors, sources)]


@rule(aten._foreach_pow.ScalarAndTensor)
def _foreach_pow_scalar_base(em, out, base, exponents):
    """A Python scalar to the power of each tensor (Adam's bias corrections beta ** step)."""
    return [_call(aten.pow.Scalar, em, spec, base, e) for spec, e in zip(out, exponents)]


@rule(aten._amp_foreach_non_finite_check_and_unscale.default)
def _amp_unscale(em, out, grads, found_inf, inv_scale):
    """GradScaler's unscale: each gradient times inv_scale (in its opmath type), and
    found_inf set to 1 where any element of any gradient is inf or NaN (else kept)."""
    grad_specs, found_spec = out
    if not isinstance(found_inf, V) or not isinstance(inv_scale, V):
        raise Unsupported("_amp unscale without found_inf / inv_scale tensors")
    scaled, bad = [], None
    for spec, g in zip(grad_specs, grads):
        ct = opmath(g.dtype)
        x = em.convert(g, ct)
        s = em.broadcast_to(em.convert(em.reshape(inv_scale, ()), ct), x.shape)
        scaled.append(em.convert(em.binary("multiply", x, s), g.dtype))
        finite = em.op("stablehlo.is_finite", [x], x.shape, "i1")
        any_bad = em.reduce_simple(em.unary("not", finite), list(range(x.rank)), "or", False)
        bad = any_bad if bad is None else em.binary("or", bad, any_bad)
    if bad is None:
        return scaled, found_inf
    one = em.const(1, found_inf.dtype, found_inf.shape)
    return scaled, em.select(em.broadcast_to(bad, found_inf.shape), one, found_inf)
