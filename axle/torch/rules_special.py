"""Special functions: lgamma, digamma, polygamma, erfc, erfcx, the exponentially scaled
Bessel functions i0e / i1e, and ndtri (torch.special's log_ndtr decomposes into erfcx and
erfc). lgamma, digamma, polygamma, erfc and i1e are CHLO ops (the CPU backend evaluates
them, polygamma in f64); erfcx, i0e and ndtri are written here in f64 (series, asymptotic
expansions, Halley steps on erfc) and rounded once to the result type. Results follow
eager PyTorch at its special points (poles, 0, 1, infinities) as the rules say."""
from __future__ import annotations

import math

from axle.torch.registry import Unsupported, V, aten, opmath, rule, value


class _F:
    """Elementwise arithmetic on values of one shape and float type."""

    def __init__(self, em, like: V):
        self.em, self.shape, self.dtype = em, like.shape, like.dtype

    def c(self, v) -> V:
        return self.em.const(v, self.dtype, self.shape)

    def __getattr__(self, kind):  # add, subtract, multiply, divide, maximum, minimum, power
        return lambda a, b: self.em.binary(kind, self._v(a), self._v(b))

    def _v(self, x):
        return x if isinstance(x, V) else self.c(x)

    def u(self, kind, a) -> V:
        return self.em.unary(kind, a)

    def chlo(self, kind, a) -> V:
        return self.em.op(f"chlo.{kind}", [a], a.shape, a.dtype)

    def cmp(self, direction, a, b) -> V:
        return self.em.compare(direction, self._v(a), self._v(b))

    def where(self, pred, a, b) -> V:
        return self.em.select(pred, self._v(a), self._v(b))

    def poly(self, x, coeffs) -> V:
        """sum_k coeffs[k] x^k (Horner)."""
        r = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            r = self.add(self.multiply(r, x), k)
        return r

    def is_nan(self, x) -> V:
        return self.em.compare("NE", x, x)


def _unary(build, wide=()):
    """A rule computing build(_F, x) in the op's opmath type (f64 for the result types in
    `wide`, where the method needs it) and rounding once to the result type."""
    def lower(em, out, a):
        dt = out[1]
        ct = "f64" if dt in wide else opmath(dt)
        x = value(em, a, ct)
        r = build(_F(em, x), x, dt)
        if ct == "f64" and dt in ("f16", "bf16"):  # (the CPU backend has no f64 -> f16 conversion)
            r = em.convert(r, "f32")
        return em.convert(r, dt)
    return lower


_ALL = ("f16", "bf16", "f32", "f64")


# ---- the gamma family

def _lgamma(f, x, dt):
    return f.chlo("lgamma", x)


def _digamma(f, x, dt):
    """chlo.digamma; at +-0 eager's -+inf (chlo: NaN at every pole, eager NaN only at the
    negative integers)."""
    return f.where(f.cmp("EQ", x, 0), f.u("negate", f.divide(1.0, x)), f.chlo("digamma", x))


rule(aten.lgamma.default)(_unary(_lgamma))
rule(aten.digamma.default)(_unary(_digamma))


@rule(aten.polygamma.default)
def _polygamma(em, out, n, a):
    """The n-th derivative of digamma (chlo.polygamma, f64 inside the CPU backend); at the
    poles (0 and the negative integers) (-1)^(n+1) inf for n >= 1 (chlo's zeta is NaN there
    for even n; eager's trigamma gives large finite values, from sin(pi x) of an integer),
    at -inf eager's NaN for n = 1 and (-1)^(n+1) inf beyond."""
    if isinstance(n, V):
        raise Unsupported("polygamma with a tensor order")
    if n < 0:
        raise Unsupported("polygamma of negative order")
    dt = out[1]
    x = value(em, a, opmath(dt))
    f = _F(em, x)
    if n == 0:
        return em.convert(_digamma(f, x, dt), dt)
    pole = em.binary("and", f.cmp("LE", x, 0), f.cmp("EQ", f.u("floor", x), x))
    # (the poles replaced: the backend's zeta sums |x| terms before it sees one, 2^30 for -1e30)
    r = em.op("chlo.polygamma", [f.c(float(n)), f.where(pole, 1.0, x)], x.shape, x.dtype)
    r = f.where(pole, math.inf if n % 2 else -math.inf, r)
    if n == 1:
        r = f.where(f.cmp("EQ", x, -math.inf), math.nan, r)
    return em.convert(r, dt)


# ---- error functions

rule(aten.erfc.default)(_unary(lambda f, x, dt: f.chlo("erfc", x)))


def _erfcx(f, x, dt):
    """exp(x^2) erfc(x) in f64 below 12 (x^2 is exact for f32 inputs); above, the
    asymptotic series 1/(x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k, 10 terms (the
    first omitted < 2e-16 relative at 12), 5 for the narrower types."""
    terms = 10 if dt == "f64" else 5
    coeffs = [1.0]
    for k in range(1, terms + 1):
        coeffs.append(-coeffs[-1] * (2 * k - 1))
    small = f.multiply(f.u("exponential", f.multiply(x, x)), f.chlo("erfc", x))
    z = f.divide(1.0, f.multiply(f.multiply(x, x), 2.0))
    big = f.divide(f.poly(z, coeffs), f.multiply(x, math.sqrt(math.pi)))
    return f.where(f.cmp("LT", x, 12.0), small, big)


rule(aten.special_erfcx.default)(_unary(_erfcx, wide=_ALL))


def _ndtri(f, p, dt):
    """The standard normal quantile sqrt(2) erfcinv(2 min(p, 1 - p)), signed (1 - p is exact
    for p >= 1/2, so both tails keep their precision). erfcinv(q) starts at Winitzki's
    closed form (relative error ~2e-3) and takes three Halley steps on erfc(t) = q,
    evaluated as (1 - q) - erf(t) for q > 1/2 (t small, where erfc(t) - q cancels):
    ~3e-15 relative against scipy from p = 1e-307 to 1 - 1e-16. Eager's -inf at 0, inf at
    1, NaN outside [0, 1]."""
    q = f.multiply(f.minimum(p, f.subtract(1.0, p)), 2.0)
    a = 0.147
    lg = f.u("log", f.multiply(q, f.subtract(2.0, q)))
    b = f.add(f.multiply(lg, 0.5), 2 / (math.pi * a))
    t = f.u("sqrt", f.subtract(f.u("sqrt", f.subtract(f.multiply(b, b), f.divide(lg, a))), b))
    center = f.cmp("GT", q, 0.5)
    for _ in range(3):
        resid = f.where(center, f.subtract(f.subtract(1.0, q), f.chlo("erf", t)), f.subtract(f.chlo("erfc", t), q))
        slope = f.multiply(f.u("exponential", f.u("negate", f.multiply(t, t))), -2 / math.sqrt(math.pi))
        step = f.divide(resid, slope)
        t = f.subtract(t, f.divide(step, f.add(f.multiply(t, step), 1.0)))
    r = f.multiply(t, math.sqrt(2))
    r = f.where(f.cmp("LT", p, 0.5), f.u("negate", r), r)
    r = f.where(f.cmp("EQ", p, 0.0), -math.inf, f.where(f.cmp("EQ", p, 1.0), math.inf, r))
    outside = f.em.binary("or", f.cmp("LT", p, 0.0), f.cmp("GT", p, 1.0))
    return f.where(outside, math.nan, r)


rule(aten.special_ndtri.default)(_unary(_ndtri, wide=_ALL))


# ---- exponentially scaled modified Bessel functions

def _i0e(f, x, dt):
    """exp(-|x|) I0(x) in f64: the power series sum_k (x^2/4)^k / k!^2 times exp(-|x|) up
    to |x| = 18, above it the asymptotic series 1/sqrt(2 pi |x|) sum_k c_k / |x|^k,
    c_k = c_(k-1) (2k-1)^2 / (8k) (32 and 24 terms: ~1e-15 relative; 24 and 10 up to
    |x| = 12 for the narrower types: ~2e-9)."""
    cut, n_series, n_asym = (18.0, 32, 24) if dt == "f64" else (12.0, 24, 10)
    ax = f.u("abs", x)
    series = [1.0 / math.factorial(k) ** 2 for k in range(n_series + 1)]
    small = f.multiply(f.poly(f.multiply(f.multiply(ax, ax), 0.25), series), f.u("exponential", f.u("negate", ax)))
    asym = [1.0]
    for k in range(1, n_asym + 1):
        asym.append(asym[-1] * (2 * k - 1) ** 2 / (8 * k))
    big = f.divide(f.poly(f.divide(1.0, ax), asym), f.u("sqrt", f.multiply(ax, 2 * math.pi)))
    return f.where(f.cmp("LE", ax, cut), small, big)


rule(aten.special_i0e.default)(_unary(_i0e, wide=_ALL))
# (f16 / bf16 through f64: the CPU backend's f32 bessel_i1e rounded to f16 fails to link)
rule(aten.special_i1e.default)(_unary(lambda f, x, dt: f.chlo("bessel_i1e", x), wide=("f16", "bf16")))

