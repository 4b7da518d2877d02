"""Branch-free f32 transcendental functions in LLVM IR, for loops that vectorize.

A call to libm (expf, log1pf, tanhf, ...) inside a fused elementwise loop keeps LLVM
from vectorizing it. The functions here are built only from arithmetic, fma, compares,
selects, bitcasts and integer ops on the bits, and intrinsics with vector forms
(llvm.fma/rint/fabs/copysign), so a loop over them becomes 8-wide (AVX2) code.

Each function takes and returns an f32 register; f16 registers are computed in f32 and
rounded once (`apply`). f64 keeps libm: these polynomials are fitted for f32.

Accuracy, measured over every f32 input against float64 references rounded to f32
(tests/backends/test_cpu_fastmath.py samples it): exp, log, log1p within 1 ulp; expm1,
logistic, erf within 2 ulp, tanh within 2 ulp. Special values: +-inf, NaN, -0, denormal
inputs and results, overflow and underflow give what the C library gives (a NaN input
returns that NaN).

Coefficients are minimax fits of the stated relative (or absolute) error, computed by
linear programming on a dense grid in 80-bit precision, then rounded to f32 one at a time
(lowest degree first) with the remaining ones refitted; the bound quoted with each table
is that of the rounded coefficients, before f32 evaluation error (about 0.5 ulp for the
final operation plus a fraction of an ulp from Horner's steps).

Without FMA in the host CPU, llvm.fmuladd replaces llvm.fma (a multiply and an add):
the range reductions below stay exact (Cody-Waite constants with short high parts), the
polynomials lose a fraction of an ulp.
"""
from __future__ import annotations

from functools import lru_cache

from llvmlite import ir

from axle.backends.cpu.scalar import F16, F32, I32

_H = float.fromhex
_LOG2E = _H("0x1.715476p+0")
_SHIFTER, _SHIFTER_BITS = _H("0x1.8p23"), 0x4B400000
# ln 2 = LN2_HI + LN2_LO: LN2_HI has 15 significant bits, so k * LN2_HI is exact for
# |k| < 512 and x - k * LN2_HI is exact (Sterbenz) wherever it is used below
_LN2_HI = _H("0x1.62e400p-1")
_LN2_LO = _H("0x1.7f7d1cp-20")

# exp(r) on |r| <= ln2/2: 1 + r + c2 r^2 + ... + c6 r^6, relative error 3.1e-9 (2^-28.3)
_EXP = [_H(c) for c in ("0x1.fffffcp-2", "0x1.555492p-3", "0x1.5558aap-5", "0x1.12396ep-7",
                        "0x1.6a524ep-10")]
# expm1(r) on |r| <= ln2/2: r + r^2 (1/2 + c3 r + ... + c7 r^5), relative error 4.3e-10 (2^-31.1)
_EXPM1 = [_H(c) for c in ("0x1p-1", "0x1.555554p-3", "0x1.5554f8p-5", "0x1.1112dcp-7",
                          "0x1.6d3a3cp-10", "0x1.9e697ap-13")]
# log1p(f) on sqrt(1/2)-1 <= f <= sqrt(2)-1: f + f^2 (c2 + c3 f + ... + c10 f^8),
# relative error 4.2e-9 (2^-27.8)
_LOG1P = [_H(c) for c in ("-0x1.fffff8p-2", "0x1.555550p-2", "-0x1.000438p-2", "0x1.99a41cp-3",
                          "-0x1.5423e8p-3", "0x1.226c84p-3", "-0x1.0f5208p-3", "0x1.087500p-3",
                          "-0x1.38138ep-4")]
# erf(x) on |x| <= 7/8: x (2/sqrt(pi) + s (c1 + c2 s + ... + c5 s^4)), s = x^2, relative
# error 9.8e-9 (2^-26.6); 2/sqrt(pi) = ERF_C0_HI + ERF_C0_LO
_ERF_C0_HI = _H("0x1.20dd76p+0")
_ERF_C0_LO = _H("-0x1.f7ac92p-25")
_ERF_SMALL = [_H(c) for c in ("-0x1.81271cp-2", "0x1.ce22f2p-4", "-0x1.b70850p-6", "0x1.4a3146p-8",
                              "-0x1.46b124p-11")]
# log(erfc(t)) on 7/8 <= t <= 4: c0 + c1 t + ... + c6 t^6; the error of 1 - exp(poly)
# relative to erf(t) is 1.9e-9 (2^-29.0)
_ERF_LARGE = [_H(c) for c in ("-0x1.17e696p-13", "-0x1.20c074p+0", "-0x1.460250p-1", "-0x1.ab541ap-4",
                              "0x1.6f56aep-6", "-0x1.9552c8p-9", "0x1.a58884p-13")]
# tanh(x) on |x| <= 0.55: x + x^3 (c0 + c1 s + ... + c4 s^4), s = x^2, relative error
# 1.1e-9 (2^-29.7)
_TANH = [_H(c) for c in ("-0x1.55554ap-2", "0x1.110ceep-3", "-0x1.b91e7ep-5", "0x1.58e518p-6",
                         "-0x1.9921a2p-8")]
_SQRT_HALF_BITS = 0x3F3504F3  # f32 sqrt(1/2): log's mantissa is reduced to [sqrt(1/2), sqrt(2))


@lru_cache(maxsize=None)
def _host_has_fma() -> bool:
    from axle.backends.cpu.llvm_env import host_cpu
    return "+fma" in host_cpu()[1].split(",")


class _Fn:
    """Small helpers over the builder for f32 scalar code."""

    def __init__(self, e):
        self.e, self.b = e, e.b

    def c(self, v: float):
        return ir.Constant(F32, v)

    def i(self, v: int):
        return ir.Constant(I32, v)

    def fma(self, a, b, c):
        return self.e.intrinsic("llvm.fma" if _host_has_fma() else "llvm.fmuladd", F32, [a, b, c])

    def horner(self, x, coeffs, last=None):
        """c0 + x (c1 + x (c2 + ...)) (+ x * last, when given, as the innermost term)."""
        acc = self.c(coeffs[-1]) if last is None else self.fma(x, last, self.c(coeffs[-1]))
        for c in reversed(coeffs[:-1]):
            acc = self.fma(x, acc, self.c(c))
        return acc

    def call(self, name, *args):
        return self.e.intrinsic(name, F32, list(args))

    def lt(self, a, b):  # false for NaN
        return self.b.fcmp_ordered("<", a, b)

    def gt(self, a, b):
        return self.b.fcmp_ordered(">", a, b)

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", a, b)

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def clamp(self, x, lo, hi):
        """min(max(x, lo), hi), NaN -> hi (callers put NaN back at the end)."""
        b = self.b
        x = b.select(self.lt(x, self.c(hi)), x, self.c(hi))
        return b.select(self.gt(x, self.c(lo)), x, self.c(lo))

    def pow2(self, k):
        """2^k as f32 for an i32 k in [-126, 127]."""
        b = self.b
        return b.bitcast(b.shl(b.add(k, self.i(127)), self.i(23)), F32)

    def reduce_ln2(self, x):
        """x = k ln2 + r with k = rint(x / ln2), |r| <= ln2/2 (plus rounding); (k as i32, r).
        x must be finite with |x| < 2^21. k comes from the 1.5 * 2^23 shifter: the fma rounds
        x/ln2 + 1.5 * 2^23 to an integer, whose low bits are k (no float->int conversion).
        x - k LN2_HI is exact; r has one rounding."""
        b = self.b
        shifted = self.fma(x, self.c(_LOG2E), self.c(_SHIFTER))
        nk = b.fsub(self.c(_SHIFTER), shifted)  # -k, exactly
        r = self.fma(nk, self.c(_LN2_LO), self.fma(nk, self.c(_LN2_HI), x))
        return b.sub(b.bitcast(shifted, I32), self.i(_SHIFTER_BITS)), r


# ---------------------------------------------------------------- exp family


def _exp_poly(f: _Fn, r):
    """exp(r) for |r| <= ln2/2: 1 + r (1 + r (c2 + ...))."""
    return f.fma(r, f.fma(r, f.horner(r, _EXP), f.c(1.0)), f.c(1.0))


def _exp_full(f: _Fn, x):
    """exp(x) for any non-NaN x: x is clamped to [-104, 89], where the results are 0 (below
    -103.97 exp rounds to 0) and inf (above 88.73); 2^k is applied as two factors
    2^(k>>1) 2^(k-(k>>1)), both normal, so that denormal results are rounded once and
    overflow gives inf."""
    b = f.b
    k, r = f.reduce_ln2(f.clamp(x, -104.0, 89.0))
    p = _exp_poly(f, r)
    k1 = b.ashr(k, f.i(1))
    return b.fmul(b.fmul(p, f.pow2(k1)), f.pow2(b.sub(k, k1)))


def exp(e, x):
    """exp(x) = 2^k exp(r), x = k ln2 + r (_exp_full). Error < 0.9 ulp (0.5 ulp rounding,
    Horner's inner steps, 2^-28 polynomial)."""
    f = _Fn(e)
    return f.b.select(f.isnan(x), x, _exp_full(f, x))


def _exp_small(f: _Fn, x):
    """exp(x) for x in [-125 ln2, 126 ln2] (normal results), no special values."""
    k, r = f.reduce_ln2(x)
    return f.b.fmul(_exp_poly(f, r), f.pow2(k))


def _expm1_core(f: _Fn, x):
    """expm1(x) for finite x in [-30, 89] (x = -0 gives +0): with x = k ln2 + r and
    q = expm1(r) = r + r^2 P(r), expm1(x) = 2^k q + (2^k - 1), computed as
    (2^k r + (2^k - 1)) + 2^k r^2 P(r) so that the large part is rounded once (2^k - 1 is
    exact for k <= 24; beyond, the -1 does not matter). k = 128 (x >= 88.38) uses 2^127 and
    doubles the result, which overflows to inf where it should."""
    b = f.b
    k, r = f.reduce_ln2(x)
    big = b.icmp_signed(">", k, f.i(127))
    s = f.pow2(b.select(big, f.i(127), k))
    p = f.horner(r, _EXPM1)
    head = f.fma(s, r, b.fsub(s, f.c(1.0)))
    y = f.fma(b.fmul(s, b.fmul(r, r)), p, head)
    return b.fmul(y, b.select(big, f.c(2.0), f.c(1.0)))


def expm1(e, x):
    """expm1(x); x is clamped to [-30, 89] (below -17.33 the result rounds to -1, above 88.73
    to inf). Error <= 2 ulp (the 2^k r rounding near |x| ~ ln2/2, plus 0.5 ulp)."""
    f = _Fn(e)
    b = f.b
    y = _expm1_core(f, f.clamp(x, -30.0, 89.0))
    y = b.select(f.eq(x, f.c(0.0)), x, y)  # keeps -0
    return b.select(f.isnan(x), x, y)


def logistic(e, x):
    """1 / (1 + exp(-x)) as  n / (1 + t)  with t = exp(-|x|) in (0, 1] (never overflows) and
    n = 1 for x >= 0, t for x < 0 (so that tiny results keep their precision and denormal
    results are right). The rounding of d = fl(1 + t) is compensated: c = t - (d - 1) is
    its exact error and n/(d + c) = q - q c / d with q = n/d, where 1/d is q (n = 1) or
    1 - q (n = t). Error <= 1.5 ulp (exp's <= 1 ulp, the division's 0.5)."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    t = _exp_full(f, b.fneg(ax))
    neg = f.lt(x, f.c(0.0))
    d = b.fadd(f.c(1.0), t)
    c = b.fsub(t, b.fsub(d, f.c(1.0)))
    q = b.fdiv(b.select(neg, t, f.c(1.0)), d)
    inv_d = b.select(neg, b.fsub(f.c(1.0), q), q)
    y = f.fma(b.fneg(b.fmul(q, c)), inv_d, q)
    return b.select(f.isnan(x), x, y)


def tanh(e, x):
    """tanh(|x|), sign copied from x:
    |x| < 0.55: |x| + |x|^3 P(x^2) (the polynomial below; tiny and denormal x give x).
    |x| >= 0.55: 1 - 2 / (1 + exp(2|x|)), |x| clamped to 9.1 (tanh rounds to 1 above 9.01):
      z = 2/(1 + E) <= 1/2 carries about 2 ulp of relative error (E's, 1 + E's rounding,
      the division's), which is at most 1 ulp of the result >= 1/2.
    Error < 1.5 ulp."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    s = b.fmul(ax, ax)
    small = f.fma(b.fmul(ax, s), f.horner(s, _TANH), ax)
    a = b.select(f.lt(ax, f.c(9.1)), ax, f.c(9.1))
    z = b.fdiv(f.c(2.0), b.fadd(f.c(1.0), _exp_small(f, b.fadd(a, a))))
    y = b.select(f.lt(ax, f.c(0.55)), small, b.fsub(f.c(1.0), z))
    y = f.call("llvm.copysign", y, x)
    return b.select(f.isnan(x), x, y)


# ---------------------------------------------------------------- log family


def _log1p_poly(f: _Fn, t):
    """log1p(t) - t for t in [sqrt(1/2) - 1, sqrt(2) - 1]: t^2 (c2 + c3 t + ...)."""
    return f.b.fmul(f.b.fmul(t, t), f.horner(t, _LOG1P))


def _combine(f: _Fn, kf, t):
    """k ln2 + log1p(t): (k LN2_HI + t) is exact for |k| <= 1 (the case where the terms
    nearly cancel) and the small rest (t^2 part + k LN2_LO) is added last."""
    b = f.b
    hi = f.fma(kf, f.c(_LN2_HI), t)
    lo = f.fma(b.fmul(t, t), f.horner(t, _LOG1P), b.fmul(kf, f.c(_LN2_LO)))
    return b.fadd(hi, lo)


def _split(f: _Fn, bits):
    """bits of a positive normal float u -> (k, m bits) with u = 2^k m, m in [sqrt(1/2), sqrt(2))."""
    b = f.b
    k = b.ashr(b.sub(bits, f.i(_SQRT_HALF_BITS)), f.i(23))
    return k, b.sub(bits, b.shl(k, f.i(23)))


def log(e, x):
    """log(x) = k ln2 + log1p(m - 1), x = 2^k m, m in [sqrt(1/2), sqrt(2)) (m - 1 is exact).
    Denormals are scaled by 2^23 first. log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
    Error <= 1 ulp (0.5 ulp rounding + 2^-27.8 polynomial + the small rest's rounding)."""
    f = _Fn(e)
    b = f.b
    den = f.lt(x, f.c(_H("0x1p-126")))
    xs = b.select(den, b.fmul(x, f.c(_H("0x1p23"))), x)
    k, mbits = _split(f, b.bitcast(xs, I32))
    k = b.sub(k, b.select(den, f.i(23), f.i(0)))
    t = b.fsub(b.bitcast(mbits, F32), f.c(1.0))
    y = _combine(f, b.sitofp(k, F32), t)
    y = b.select(f.eq(x, f.c(float("inf"))), x, y)
    y = b.select(f.eq(x, f.c(0.0)), f.c(float("-inf")), y)
    y = b.select(f.lt(x, f.c(0.0)), f.c(float("nan")), y)
    return b.select(f.isnan(x), x, y)


def log1p(e, x):
    """log1p(x) = k ln2 + log1p(t) where u = fl(1 + x) = 2^k m, m in [sqrt(1/2), sqrt(2)), and
    t = (1 + x) 2^-k - 1 is computed from x itself as fma(x, 2^-k, 2^-k - 1) (one rounding,
    so the error of fl(1 + x) is not inherited; 2^-k - 1 is exact for -24 <= k <= 24). For
    k > 24 (x > 2^24) t = m - 1 is used. log1p(-1) = -inf, log1p(x < -1) = NaN,
    log1p(inf) = inf, log1p(-0) = -0. Error <= 1 ulp."""
    f = _Fn(e)
    b = f.b
    u = b.fadd(x, f.c(1.0))
    k, mbits = _split(f, b.bitcast(u, I32))
    large = b.icmp_signed(">", k, f.i(24))
    s = f.pow2(b.sub(f.i(0), b.select(large, f.i(0), k)))  # 2^-k (k >= -25 for x > -1)
    t = f.fma(x, s, b.fneg(b.fsub(f.c(1.0), s)))
    t = b.select(large, b.fsub(b.bitcast(mbits, F32), f.c(1.0)), t)
    y = _combine(f, b.sitofp(k, F32), t)
    y = b.select(f.eq(x, f.c(0.0)), x, y)
    y = b.select(f.eq(x, f.c(float("inf"))), x, y)
    y = b.select(f.eq(x, f.c(-1.0)), f.c(float("-inf")), y)
    y = b.select(f.lt(x, f.c(-1.0)), f.c(float("nan")), y)
    return b.select(f.isnan(x), x, y)


# ---------------------------------------------------------------- erf


def erf(e, x):
    """erf(x): for |x| <= 7/8, x (2/sqrt(pi) + x^2 P(x^2)) with the constant term split in two
    (the product x * 2/sqrt(pi) would otherwise carry the constant's rounding); for larger
    |x|, 1 - exp(Q(t)) with t = min(|x|, 4) and Q(t) ~ log(erfc(t)) (erf rounds to 1 above
    3.92), sign copied from x. Both are computed and one selected. Error <= 2 ulp."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    s = b.fmul(ax, ax)
    tail = f.fma(s, f.horner(s, _ERF_SMALL), f.c(_ERF_C0_LO))
    small = f.fma(ax, f.c(_ERF_C0_HI), b.fmul(ax, tail))
    t = b.select(f.lt(ax, f.c(4.0)), ax, f.c(4.0))
    large = b.fsub(f.c(1.0), _exp_small(f, f.horner(t, _ERF_LARGE)))
    y = f.call("llvm.copysign", b.select(f.lt(ax, f.c(0.875)), small, large), x)
    return b.select(f.isnan(x), x, y)


# ---------------------------------------------------------------- dispatch

FUNCTIONS = {
    "stablehlo.exponential": exp, "stablehlo.exponential_minus_one": expm1, "stablehlo.log": log,
    "stablehlo.log_plus_one": log1p, "stablehlo.tanh": tanh, "stablehlo.logistic": logistic,
    "chlo.erf": erf,
}


def applies(x) -> bool:
    """True for the registers these functions serve: f32 (f32, bf16) and f16."""
    return x.type in (F32, F16)


def apply(e, fn, x):
    """fn on an f32 or f16 register (f16 computes in f32, rounded once at the end)."""
    if x.type == F16:
        return e.b.fptrunc(fn(e, e.b.fpext(x, F32)), F16)
    return fn(e, x)
