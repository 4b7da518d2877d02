"""Branch-free f32 transcendental functions in LLVM IR, for loops that vectorize.

A call to libm (expf, log1pf, tanhf, powf, ...) inside a fused elementwise loop keeps LLVM
from vectorizing it. The functions here are built only from arithmetic, fma, compares,
selects, bitcasts, integer ops on the bits and intrinsics with vector forms
(llvm.fma/fabs/copysign/floor), and (sin, cos) loads from a small constant table that
vectorize as gathers, so a loop over them becomes 8-wide (AVX2) code (4-wide where f64).

Each function takes and returns f32 registers; f16 registers are computed in f32 and
rounded once (`apply`; bf16 registers are f32 already). f64 keeps libm (these
polynomials are fitted for f32), except tanh (fastmath_f64.py: Cody and Waite's
rational form and exp, whose scalar libm call was 2.4x XLA's time).

Accuracy, measured over every f32 input against float64 references (errors in ulps of
the exact value; tests/backends/test_cpu_fastmath.py checks samples of the whole range):
exp 0.87, expm1 1.22, log 1.00, log1p 1.01, tanh 1.46, logistic 1.81, erf 1.20, and pow
0.52 on random samples, so at most 1 or 2 ulp from the correctly rounded result; erf_inv
0.90 on 4M random inputs of [-1, 1] (f32 only, evaluated in f64 from f32 logarithms;
XLA's own misses by millions of ulps on denormal inputs, which it flushes). erfc, sin and
cos are evaluated in f64 and rounded once (< 0.51 ulp; within 1 ulp of the f64 reference
rounded to f32 on 2^26 random bit patterns, the whole range: sin and cos reduce huge
arguments exactly through a table of 2^s mod 2 pi, where XLA calls libm per element).
(XLA's own f32 approximations, measured the same way on normal numbers: exp 5.1, expm1
5.7, log 1.1, log1p 1.2, tanh 4.5, logistic 2.3, erf 6.6; XLA flushes denormals.)
Special values give what the C library gives: +-inf, NaN (a NaN in, a NaN out), -0,
denormal inputs and results, overflow and underflow.

Coefficients are minimax fits of the stated relative (or absolute) error, computed by
linear programming on a dense grid in 80-bit precision, then rounded to f32 one at a time
(lowest degree first) with the remaining ones refitted; the bound quoted with each table
is that of the rounded coefficients, before f32 evaluation error (about 0.5 ulp for the
final operation plus a fraction of an ulp from Horner's steps).

Without FMA on the target (Target.fma_intrinsic), llvm.fmuladd replaces llvm.fma (a multiply and an add):
the range reductions below stay exact (Cody-Waite constants with short high parts), the
polynomials lose a fraction of an ulp.
"""
from __future__ import annotations

import math

from llvmlite import ir

from axle.codegen.scalar import F16, F32, F64, I32, I64

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
# log2(erfc(t)) on 7/8 <= t <= 4: c0 + c1 t + ... + c6 t^6; the error of 1 - 2^poly
# relative to erf(t) is 1.9e-9 (2^-29.0)
_ERF_LOG2 = [_H(c) for c in ("-0x1.93cfb6p-13", "-0x1.a094acp+0", "-0x1.d654e2p-1", "-0x1.3440b4p-3",
                             "0x1.08faf2p-5", "-0x1.24625ep-8", "0x1.301602p-12")]
# 2^f on |f| <= 1/2: 1 + c1 f + ... + c6 f^6, relative error 3.0e-9 (2^-28.3)
_EXP2 = [_H(c) for c in ("0x1.62e430p-1", "0x1.ebfbdcp-3", "0x1.c6af7cp-5", "0x1.3b2de0p-7",
                         "0x1.5f0834p-10", "0x1.416b64p-13")]
# pow's log2 and exp2, in f64 (see power):
# log2(1 + f) on sqrt(1/2)-1 <= f <= sqrt(2)-1: f (c1 + c2 f + ... + c13 f^12), relative
# error 1.6e-11 (2^-35.8)
_LOG2_D = [_H(c) for c in (
    "0x1.71547652a1e22p+0", "-0x1.715476565e3c9p-1", "0x1.ec709ebbda5d4p-2", "-0x1.715470964d470p-2",
    "0x1.277651e18b3dep-2", "-0x1.ec72b5f1634a5p-3", "0x1.a63f4b8b0d2eap-3", "-0x1.7141700e52bd7p-3",
    "0x1.4528b41ba292ep-3", "-0x1.252edef96c9aap-3", "0x1.2873d82e93a50p-3", "-0x1.248bfcf3f98bep-3",
    "0x1.3ce8ee27fb5afp-4")]
# 2^f on |f| <= 1/2: 1 + c1 f + ... + c7 f^7, relative error 4.7e-11 (2^-34.3)
_EXP2_D = [_H(c) for c in (
    "0x1.62e42ff0e1d2cp-1", "0x1.ebfbe0779a951p-3", "0x1.c6b08ac002aa9p-5", "0x1.3b29f3896492dp-7",
    "0x1.5d8a8640b6488p-10", "0x1.445c95566893cp-13", "0x1.fde5e55df8b5ap-17")]
# erf_inv in f64: erfinv(x) / x in t = w / 2.5 - 1 for w = -ln(1 - x^2) <= 5, relative
# error 2.4e-11; and in t = (sqrt(w) - (sqrt(5) + 4) / 2) / ((4 - sqrt(5)) / 2) for
# 5 <= w <= 16, relative error 6.7e-11 (no rounding to f32: evaluated in f64)
_ERFINV_W_D = [_H(c) for c in (
    "0x1.805c5cfd15123p+0", "0x1.3bb315fc6134dp-1", "-0x1.abc1e4269c172p-6", "-0x1.40b1777ce5907p-6",
    "0x1.175ca4b2dc35fp-7", "-0x1.ff97ecbb94588p-12", "-0x1.b5770349f706cp-11", "0x1.325e7c9e59303p-12",
    "0x1.632e9d4ada350p-16", "-0x1.5ba49dbb9d3dcp-15", "0x1.01fc8f7be354dp-17", "0x1.8b818642a0c81p-19",
    "-0x1.3c49b48ae3ef1p-20")]
_ERFINV_S_D = [_H(c) for c in (
    "0x1.79c52285e244fp+1", "0x1.c5337e4375bedp-1", "0x1.6cfdec670e1f6p-8", "-0x1.e64def9a7e81ep-9",
    "0x1.33f5fde4752d1p-9", "-0x1.67c7d1e448647p-10", "0x1.3b0b114729760p-11", "-0x1.1ddfaf5b6f420p-13",
    "-0x1.2f215ed5d35dbp-15", "0x1.99d823f6cd505p-15", "-0x1.16917eaab6129p-16", "-0x1.7e4df395485d4p-19",
    "0x1.6434cd872f0d0p-19")]
# erfc in f64: erfc(x) exp(x^2) for 0 <= x <= 10.2 as a polynomial of degree 11 in
# t = 2 / (2 + x), relative error 1.7e-9 (2^-29.1; no rounding to f32: evaluated in f64)
_ERFC_D = [_H(c) for c in (
    "0x1.aef36ee563a34p-19", "0x1.20c41eca88bd5p-2", "0x1.22291bd999f59p-2", "0x1.e626b91f0f5e4p-3",
    "0x1.c404ea2625780p-3", "-0x1.a4eb6a6ddf73fp-5", "0x1.067bffa6b0365p-2", "-0x1.5a5e658915de3p-2",
    "0x1.1111d6d1764f8p-6", "0x1.850f04403c810p-3", "-0x1.f10211129e577p-4", "0x1.923d44482d8b1p-6")]
# sin / cos in f64 on |r| <= pi/4 (x 1.002): sin r = r + r^3 S(r^2), relative error 5.4e-12
# (2^-37.5); cos r = 1 - r^2/2 + r^4 C(r^2), relative error 1.3e-13 (2^-42.9)
_SIN_D = [_H(c) for c in ("-0x1.5555554c4cf2cp-3", "0x1.1111084f935b5p-7", "-0x1.a00f6989c1aa5p-13",
                          "0x1.6cccc7e02038cp-19")]
_COS_D = [_H(c) for c in ("0x1.5555554ebe4cap-5", "-0x1.6c16b80d14b07p-10", "0x1.a010cbd3f6087p-16",
                          "-0x1.241ab596f8543p-22")]
# pi/2 = PIO2_1 + PIO2_2 + PIO2_3 (f64 parts)
_PIO2 = [_H("0x1.921fb54442d18p+0"), _H("0x1.1a62633145c07p-54"), _H("-0x1.f1976b7ed8fbcp-110")]
_ATAN_D = [_H(c) for c in ("-0x1.555554c2d3f70p-2", "0x1.999916466d11fp-3", "-0x1.247e93603c56fp-3",
                            "0x1.c45cc83b7bb5dp-4", "-0x1.5b06106f814d9p-4", "0x1.83ecb85938464p-5")]
_TWO_OVER_PI = 0.6366197723675814
SINCOS_TABLE_SIZE = 105  # 2^s mod 2 pi for s = 0 .. 104 (an f32 is m 2^s with m < 2^24, s <= 104)
_SQRT_HALF_BITS = 0x3F3504F3  # f32 sqrt(1/2): log's mantissa is reduced to [sqrt(1/2), sqrt(2))


class _Fn:
    """Small helpers over the builder for f32 scalar code."""

    def __init__(self, e):
        self.e, self.b = e, e.b
        self.fma_name = e.target.fma_intrinsic  # llvm.fma, or llvm.fmuladd without hardware FMA

    def c(self, v: float):
        return ir.Constant(F32, v)

    def i(self, v: int):
        return ir.Constant(I32, v)

    def fma(self, a, b, c):
        return self.e.intrinsic(self.fma_name, F32, [a, b, c])

    def horner(self, x, coeffs):
        """c0 + c1 x + c2 x^2 + ... by Estrin's scheme: pairs c_2i + c_2i+1 x, then pairs of
        those with x^2, x^4, ... A chain of log2(n) multiply-adds instead of Horner's n - 1:
        the out-of-order window holds only a few iterations of a long loop body, so the
        length of its dependency chain, not its instruction count, set the speed of the
        transcendental kernels (exp over 1M floats on one Zen 3 core: 24 cycles per vector
        with Horner)."""
        return self._estrin(x, [self.c(c) for c in coeffs], self.fma)

    def _estrin(self, x, terms, fma):
        power = x
        while len(terms) > 1:
            terms = [fma(power, terms[i + 1], terms[i]) if i + 1 < len(terms) else terms[i]
                     for i in range(0, len(terms), 2)]
            if len(terms) > 1:
                power = self.b.fmul(power, power)
        return terms[0]

    def dc(self, v: float):
        return ir.Constant(F64, v)

    def dfma(self, a, b, c):
        return self.e.intrinsic(self.fma_name, F64, [a, b, c])

    def dhorner(self, x, coeffs):
        acc = self.dc(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.dfma(x, acc, self.dc(c))
        return acc

    def destrin(self, x, coeffs):
        """f64 c0 + c1 x + ... by Estrin's scheme (see horner)."""
        return self._estrin(x, [self.dc(c) for c in coeffs], self.dfma)

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
        """min(max(x, lo), hi); a NaN stays NaN (one vminps/vmaxps each on x86)."""
        b = self.b
        x = b.select(self.gt(x, self.c(hi)), self.c(hi), x)
        return b.select(self.lt(x, self.c(lo)), self.c(lo), x)

    def pow2(self, k):
        """2^k as f32 for an i32 k in [-126, 127]."""
        b = self.b
        return b.bitcast(b.shl(b.add(k, self.i(127)), self.i(23)), F32)

    def reduce_ln2(self, x, half=None):
        """x = k ln2 + r with k = rint(x / ln2), |r| <= ln2/2 (plus rounding); (k as i32, r).
        x must be finite with |x| < 2^21. k comes from the 1.5 * 2^23 shifter: the fma rounds
        x/ln2 + 1.5 * 2^23 to an integer, whose low bits are k (no float->int conversion).
        x - k LN2_HI is exact; r has one rounding. `half` (x = 2 half, exactly): k is found
        from half, in parallel with the doubling (one step less on the dependency chain)."""
        b = self.b
        if half is not None:
            shifted = self.fma(half, self.c(2 * _LOG2E), self.c(_SHIFTER))
        else:
            shifted = self.fma(x, self.c(_LOG2E), self.c(_SHIFTER))
        nk = b.fsub(self.c(_SHIFTER), shifted)  # -k, exactly
        r = self.fma(nk, self.c(_LN2_LO), self.fma(nk, self.c(_LN2_HI), x))
        return b.sub(b.bitcast(shifted, I32), self.i(_SHIFTER_BITS)), r


# ---------------------------------------------------------------- exp family


def _exp_poly(f: _Fn, r):
    """exp(r) for |r| <= ln2/2: 1 + r (1 + r (c2 + ...))."""
    return f.fma(r, f.fma(r, f.horner(r, _EXP), f.c(1.0)), f.c(1.0))


def _exp_full(f: _Fn, x):
    """exp(x) for any x (NaN gives NaN): x is clamped to [-104, 89], where the results are 0
    (below -103.97 exp rounds to 0) and inf (above 88.73); 2^k is applied as two factors
    2^(k>>1) 2^(k-(k>>1)), both normal, so that denormal results are rounded once and
    overflow gives inf."""
    b = f.b
    k, r = f.reduce_ln2(f.clamp(x, -104.0, 89.0))
    p = _exp_poly(f, r)
    k1 = b.ashr(k, f.i(1))
    return b.fmul(b.fmul(p, f.pow2(k1)), f.pow2(b.sub(k, k1)))


EXP_ZERO_BELOW = -103.972077  # -150 ln2: exp(x) <= 2^-150 rounds to 0


def exp(e, x):
    """exp(x) = 2^k exp(r), x = k ln2 + r (_exp_full; a NaN flows through as NaN). Error
    < 0.9 ulp (0.5 ulp rounding, Horner's inner steps, 2^-28 polynomial).
    Inputs below -150 ln2, whose result rounds to 0, give 0 without computing it: an
    underflowing multiply costs a microcode assist of ~150 cycles on x86 (per vector
    instruction), and masked attention scores (-1e9) hit it on every element."""
    f = _Fn(e)
    b = f.b
    gone = b.fcmp_ordered("<", x, f.c(EXP_ZERO_BELOW))
    y = _exp_full(f, b.select(gone, f.c(0.0), x))
    return b.select(gone, f.c(0.0), y)


def _exp_small(f: _Fn, x):
    """exp(x) for finite x in [-125 ln2, 126 ln2] (normal results): one 2^k factor."""
    k, r = f.reduce_ln2(x)
    return f.b.fmul(_exp_poly(f, r), f.pow2(k))


def _expm1_core(f: _Fn, x, half=None, small=False):
    """expm1(x) for x in [-30, 89] or NaN (x = -0 gives +0): with x = k ln2 + r and
    q = expm1(r) = r + r^2 P(r), expm1(x) = 2^k q + (2^k - 1), computed as
    (2^k r + (2^k - 1)) + 2^k r^2 P(r) so that the large part is rounded once (2^k - 1 is
    exact for k <= 24; beyond, the -1 does not matter). k = 128 (x >= 88.38) uses 2^127 and
    doubles the result, which overflows to inf where it should."""
    b = f.b
    k, r = f.reduce_ln2(x, half)
    if small:  # the caller knows x <= 88 (k <= 127)
        big = None
        s = f.pow2(k)
    else:
        big = b.icmp_signed(">", k, f.i(127))
        s = f.pow2(b.select(big, f.i(127), k))
    p = f.horner(r, _EXPM1)
    head = f.fma(s, r, b.fsub(s, f.c(1.0)))
    y = f.fma(b.fmul(s, b.fmul(r, r)), p, head)
    return y if big is None else b.fmul(y, b.select(big, f.c(2.0), f.c(1.0)))


def expm1(e, x):
    """expm1(x); x is clamped to [-30, 89] (below -17.33 the result rounds to -1, above 88.73
    to inf). Error < 1.3 ulp (the head's rounding for k != 0, plus 0.5 ulp)."""
    f = _Fn(e)
    b = f.b
    y = _expm1_core(f, f.clamp(x, -30.0, 89.0))  # NaN flows through
    return b.select(f.eq(x, f.c(0.0)), x, y)  # keeps -0


def logistic(e, x):
    """1 / (1 + exp(-x)) as  n / (1 + t)  with t = exp(-|x|) in (0, 1] (never overflows) and
    n = 1 for x >= 0, t for x < 0 (so that tiny results keep their precision and denormal
    results are right). The rounding of d = fl(1 + t) is compensated: c = t - (d - 1) is
    its exact error and n/(d + c) = q - q c / d with q = n/d, where 1/d is q (n = 1) or
    1 - q (n = t). Error < 1.9 ulp (exp's < 0.9 ulp, the division's 0.5, the rest)."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    t = _exp_full(f, b.fneg(ax))
    neg = f.lt(x, f.c(0.0))
    d = b.fadd(f.c(1.0), t)
    c = b.fsub(t, b.fsub(d, f.c(1.0)))
    q = b.fdiv(b.select(neg, t, f.c(1.0)), d)
    inv_d = b.select(neg, b.fsub(f.c(1.0), q), q)
    return f.fma(b.fneg(b.fmul(q, c)), inv_d, q)  # NaN flows through t


def tanh(e, x):
    """tanh(|x|) = t / (t + 2) with t = expm1(2|x|), sign copied from x; |x| clamped to 9.1
    (tanh rounds to 1 above 9.01). One path for every x: t is within 1.3 ulp, and
    d(t/(t+2))/dt * t / (t/(t+2)) = 2/(t+2) <= 1 carries no more than that into the result;
    t + 2 and the division round once each. Tiny and denormal x give x (t = 2x exactly,
    t + 2 rounds to 2). A NaN stays NaN."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    a = f.clamp(ax, 0.0, 9.1)
    t = _expm1_core(f, b.fadd(a, a), half=a, small=True)
    y = b.fdiv(t, b.fadd(t, f.c(2.0)))
    return f.call("llvm.copysign", y, x)


# ---------------------------------------------------------------- log family


def _combine(f: _Fn, kf, t, t_err=None):
    """k ln2 + log1p(t + t_err) = (k LN2_HI + t) + (t^2 P(t) + k LN2_LO + t_err/(1 + t)):
    k LN2_HI is exact, and the sum with t is made error-free (Fast2Sum: |k LN2_HI| >= |t|
    unless k = 0, where it is exact anyway), so only the small rest and the final sum are
    rounded. t_err (a rounding error of t, if any) enters as t_err (1 - t): 1/(1 + t) to
    within t^2 <= 0.18 of a term below 2^-25."""
    b = f.b
    kh = b.fmul(kf, f.c(_LN2_HI))
    hi = b.fadd(kh, t)
    err = b.fsub(t, b.fsub(hi, kh))
    if t_err is not None:
        err = f.fma(t_err, b.fsub(f.c(1.0), t), err)
    lo = f.fma(b.fmul(t, t), f.horner(t, _LOG1P), f.fma(kf, f.c(_LN2_LO), err))
    return b.fadd(hi, lo)


def _split(f: _Fn, bits):
    """bits of a positive normal float u -> (k, m bits) with u = 2^k m, m in [sqrt(1/2), sqrt(2))."""
    b = f.b
    k = b.ashr(b.sub(bits, f.i(_SQRT_HALF_BITS)), f.i(23))
    return k, b.sub(bits, b.shl(k, f.i(23)))


def log(e, x):
    """log(x) = k ln2 + log1p(m - 1), x = 2^k m, m in [sqrt(1/2), sqrt(2)) (m - 1 is exact).
    Denormals are scaled by 2^23 first. log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
    Error < 1.1 ulp (0.5 ulp rounding + 2^-27.8 polynomial + the small rest's rounding)."""
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
    t = (1 + x) 2^-k - 1 is computed from x itself as x 2^-k + (2^-k - 1): both terms are
    exact (2^-k - 1 for -24 <= k <= 24), and their sum's rounding error is recovered by
    TwoSum and passed to _combine, so neither fl(1 + x) nor fl(t) costs accuracy. For
    k > 24 (x > 2^24) t = m - 1 (exact) is used. log1p(-1) = -inf, log1p(x < -1) = NaN,
    log1p(inf) = inf, log1p(-0) = -0. Error < 0.9 ulp."""
    f = _Fn(e)
    b = f.b
    u = b.fadd(x, f.c(1.0))
    k, mbits = _split(f, b.bitcast(u, I32))
    large = b.icmp_signed(">", k, f.i(24))
    s = f.pow2(b.sub(f.i(0), b.select(large, f.i(0), k)))  # 2^-k (k >= -25 for x > -1)
    xs, sm1 = b.fmul(x, s), b.fneg(b.fsub(f.c(1.0), s))
    t = b.fadd(xs, sm1)
    back = b.fsub(t, xs)  # TwoSum: t + t_err = xs + sm1 exactly
    t_err = b.fadd(b.fsub(xs, b.fsub(t, back)), b.fsub(sm1, back))
    t = b.select(large, b.fsub(b.bitcast(mbits, F32), f.c(1.0)), t)
    t_err = b.select(large, f.c(0.0), t_err)
    y = _combine(f, b.sitofp(k, F32), t, t_err)
    y = b.select(f.eq(x, f.c(0.0)), x, y)
    y = b.select(f.eq(x, f.c(float("inf"))), x, y)
    y = b.select(f.eq(x, f.c(-1.0)), f.c(float("-inf")), y)
    y = b.select(f.lt(x, f.c(-1.0)), f.c(float("nan")), y)
    return b.select(f.isnan(x), x, y)


# ---------------------------------------------------------------- erf


def erf(e, x):
    """erf(x): for |x| <= 7/8, x (2/sqrt(pi) + x^2 P(x^2)) with the constant term split in two
    (the product x * 2/sqrt(pi) would otherwise carry the constant's rounding); for larger
    |x|, 1 - 2^Q(t) with t = min(|x|, 4) and Q(t) ~ log2(erfc(t)) (erf rounds to 1 above
    3.92): 2^Q = 2^k 2^f with k = rint(Q) and f = Q - k exact (no ln2 reduction needed).
    The sign is copied from x. Both branches are computed and one selected. Error < 1.3 ulp
    (erfc <= 0.22 scales the error of 2^Q down)."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    s = b.fmul(ax, ax)
    tail = f.fma(s, f.horner(s, _ERF_SMALL), f.c(_ERF_C0_LO))
    small = f.fma(ax, f.c(_ERF_C0_HI), b.fmul(ax, tail))
    t = b.select(f.lt(ax, f.c(4.0)), ax, f.c(4.0))
    q = f.horner(t, _ERF_LOG2)  # in [-26, -2.2]
    shifted = b.fadd(q, f.c(_SHIFTER))  # rounds q to the integer k in its low bits
    k = b.sub(b.bitcast(shifted, I32), f.i(_SHIFTER_BITS))
    frac = b.fsub(q, b.fsub(shifted, f.c(_SHIFTER)))
    two_q = b.fmul(f.fma(frac, f.horner(frac, _EXP2), f.c(1.0)), f.pow2(k))
    large = b.fsub(f.c(1.0), two_q)
    # unordered compare: a NaN takes the polynomial, which returns it
    return f.call("llvm.copysign", b.select(b.fcmp_unordered("<", ax, f.c(0.875)), small, large), x)


ERFC_ZERO_ABOVE = 10.2  # erfc(10.06) is below half the smallest f32 denormal


def erfc(e, x):
    """erfc(x) of an f32, in f64 and rounded once: for a = min(|x|, 10.2),
    erfc(a) = 2^(-a^2 log2(e)) P(2 / (2 + a)) (P ~ erfc(a) exp(a^2), the exponent exact
    to 2^-50 and 2^z by _exp2_d), and 2 - erfc(|x|) for x < 0. One function for the whole
    range, no cancellation (1 - erf loses erfc's relative accuracy above 1/2), denormal
    results rounded once by the f64 -> f32 conversion. Error < 0.51 ulp. erfc(+inf) = 0,
    erfc(-inf) = 2, a NaN in gives it back."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    ax = b.select(f.gt(ax, f.c(ERFC_ZERO_ABOVE)), f.c(ERFC_ZERO_ABOVE), ax)
    d = b.fpext(ax, F64)
    t = b.fdiv(f.dc(2.0), b.fadd(d, f.dc(2.0)))
    z = b.fmul(b.fmul(d, d), f.dc(-1.4426950408889634))  # -a^2 log2(e)
    r = b.fmul(f.destrin(t, _ERFC_D), _exp2_d(f, z))
    r = b.select(f.lt(x, f.c(0.0)), b.fsub(f.dc(2.0), r), r)
    return b.select(f.isnan(x), x, b.fptrunc(r, F32))


def _pow2_mod_2pi(e):
    """The module's constant table of 2^s mod 2 pi as double-doubles (all hi parts, then
    all lo parts; computed with mpmath when a module first needs it)."""
    mod = e.module
    g = mod.globals.get("axle.fastmath.pow2_mod_2pi")
    if g is None:
        import mpmath
        with mpmath.workdps(60):
            vals = [mpmath.fmod(mpmath.mpf(2) ** k, 2 * mpmath.pi) for k in range(SINCOS_TABLE_SIZE)]
            hi = [float(v) for v in vals]
            lo = [float(v - mpmath.mpf(h)) for v, h in zip(vals, hi)]
        t = ir.ArrayType(F64, 2 * SINCOS_TABLE_SIZE)
        g = ir.GlobalVariable(mod, t, "axle.fastmath.pow2_mod_2pi")
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ir.Constant(t, hi + lo)
    return g


def _sincos(e, x, cosine: bool):
    """sin(x) or cos(x) of an f32, in f64 and rounded once. |x| = m 2^s exactly with m < 2^24
    and s = max(exponent - 23, 0); y = m (2^s mod 2 pi) from a table of double-doubles
    (~2^-79 absolute: |y| < 2^26.7), so that y = |x| plus a multiple of 2 pi (m is an
    integer when s > 0) for every f32, huge ones included; then y = k pi/2 + r by a
    three-part pi/2 (the first step exact), |r| <= pi/4, and sin or cos of r by polynomials, chosen and
    signed by k mod 4. Error < 0.51 ulp (polynomials 2^-37, reduction 2^-79 absolute).
    sin keeps the sign of x (-0 -> -0); inf and NaN give NaN."""
    f = _Fn(e)
    b = f.b
    bits = b.bitcast(x, I32)
    ax = f.call("llvm.fabs", x)
    ex = b.and_(b.lshr(bits, f.i(23)), f.i(0xFF))
    sh = b.sub(ex, f.i(150))
    sh = b.select(b.icmp_signed("<", sh, f.i(0)), f.i(0), sh)
    sh = b.select(b.icmp_signed(">", sh, f.i(SINCOS_TABLE_SIZE - 1)), f.i(SINCOS_TABLE_SIZE - 1), sh)
    m = b.fpext(b.fmul(ax, f.pow2(b.neg(sh))), F64)  # exact: a power of two, m < 2^24
    table = _pow2_mod_2pi(e)
    i64 = b.zext(sh, I64)
    zero = ir.Constant(I64, 0)
    ch = b.load(b.gep(table, [zero, i64], inbounds=True))
    cl = b.load(b.gep(table, [zero, b.add(i64, ir.Constant(I64, SINCOS_TABLE_SIZE))], inbounds=True))
    yh = b.fmul(m, ch)
    yl = f.dfma(m, cl, f.dfma(m, ch, b.fneg(yh)))
    shifter = _H("0x1.8p52")
    shifted = f.dfma(yh, f.dc(_TWO_OVER_PI), f.dc(shifter))
    nk = b.fsub(f.dc(shifter), shifted)  # -k
    r = f.dfma(nk, f.dc(_PIO2[0]), yh)  # exact
    r = f.dfma(nk, f.dc(_PIO2[1]), r)
    r = b.fadd(r, yl)
    r = f.dfma(nk, f.dc(_PIO2[2]), r)
    r2 = b.fmul(r, r)
    sn = f.dfma(b.fmul(r, r2), f.destrin(r2, _SIN_D), r)
    cs = f.dfma(b.fmul(r2, r2), f.destrin(r2, _COS_D), f.dfma(r2, f.dc(-0.5), f.dc(1.0)))
    q = b.trunc(b.bitcast(shifted, I64), I32)
    if cosine:
        q = b.add(q, f.i(1))
    v = b.select(b.icmp_unsigned("!=", b.and_(q, f.i(1)), f.i(0)), cs, sn)
    v = b.select(b.icmp_unsigned("!=", b.and_(q, f.i(2)), f.i(0)), b.fneg(v), v)
    y = b.fptrunc(v, F32)
    if not cosine:  # sin(-x) = -sin(x), -0 included
        y = b.bitcast(b.xor(b.bitcast(y, I32), b.and_(bits, f.i(-0x80000000))), F32)
    return b.select(b.icmp_unsigned("==", ex, f.i(0xFF)), b.fsub(x, x), y)


def sine(e, x):
    return _sincos(e, x, False)


def cosine(e, x):
    return _sincos(e, x, True)


# ---------------------------------------------------------------- power


def _log2_d(f: _Fn, ax):
    """log2(ax) in f64 (about 2^-36 relative) for a finite positive f32 ax: ax = 2^k m with m in
    [sqrt(1/2), sqrt(2)) split on the f32 bits (denormals scaled by 2^23 first), then
    k + m' P(m'), m' = m - 1 exact in f64."""
    b = f.b
    den = f.lt(ax, f.c(_H("0x1p-126")))
    axs = b.select(den, b.fmul(ax, f.c(_H("0x1p23"))), ax)
    k, mbits = _split(f, b.bitcast(axs, I32))
    k = b.sub(k, b.select(den, f.i(23), f.i(0)))
    t = b.fsub(b.fpext(b.bitcast(mbits, F32), F64), f.dc(1.0))
    return b.fadd(b.sitofp(k, F64), b.fmul(t, f.dhorner(t, _LOG2_D)))


def _exp2_d(f: _Fn, z):
    """2^z in f64 for any z (NaN gives NaN): z clamped to [-200, 200] (beyond the f32 range
    either way), k = rint(z) from the 1.5 * 2^52 shifter, 2^(z - k) by the polynomial."""
    b = f.b
    z = b.select(b.fcmp_ordered(">", z, f.dc(200.0)), f.dc(200.0), z)
    z = b.select(b.fcmp_ordered("<", z, f.dc(-200.0)), f.dc(-200.0), z)
    shifter = _H("0x1.8p52")
    shifted = b.fadd(z, f.dc(shifter))
    frac = b.fsub(z, b.fsub(shifted, f.dc(shifter)))  # exact, |frac| <= 1/2
    k = b.sub(b.bitcast(shifted, I64), ir.Constant(I64, 0x4338000000000000))
    scale = b.bitcast(b.shl(b.add(k, ir.Constant(I64, 1023)), ir.Constant(I64, 52)), F64)
    return b.fmul(f.dfma(frac, f.dhorner(frac, _EXP2_D), f.dc(1.0)), scale)


def power(e, x, y):
    """pow(x, y) = 2^(y log2|x|), both in f64 (log2 to 2^-36 relative, so y log2|x| is
    within 2^-28 absolute wherever the result is a finite nonzero f32, and 2^z to 2^-34):
    the f64 result is rounded once to f32, which also gives denormal results and overflow.
    Error < 0.51 ulp. The C library's special cases follow from the core or are selected:
      x = +-0 or +-inf: log2|x| is -inf or inf, so 2^(y log2|x|) is already 0 or inf (and
      y = +-inf with |x| != 1 gives 0 or inf the same way);
      x with the sign bit set (-0 and -inf included) and y an odd integer: negated;
      finite x < 0 with y not an integer, and x NaN: NaN;
      x = 1, y = +-0, and x = -1 with y = +-inf: 1 (even when the other operand is NaN)."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    lx = _log2_d(f, ax)
    lx = b.select(f.eq(ax, f.c(0.0)), f.dc(float("-inf")), lx)
    lx = b.select(f.eq(ax, f.c(float("inf"))), f.dc(float("inf")), lx)
    r = b.fptrunc(_exp2_d(f, b.fmul(b.fpext(y, F64), lx)), F32)
    fl = f.call("llvm.floor", y)
    y_int = f.eq(fl, y)  # false for NaN, true for +-inf
    half_fl = f.call("llvm.floor", b.fmul(y, f.c(0.5)))
    y_odd = f.eq(b.fsub(y, b.fadd(half_fl, half_fl)), f.c(1.0))  # exact below 2^25; false above
    neg = b.icmp_signed("<", b.bitcast(x, I32), f.i(0))  # sign bit: -0 and -inf too
    r = b.select(b.and_(neg, y_odd), b.fneg(r), r)
    finite_neg = b.and_(f.lt(x, f.c(0.0)), f.gt(x, f.c(float("-inf"))))
    nan = b.or_(b.and_(finite_neg, b.not_(y_int)), f.isnan(x))
    r = b.select(nan, f.c(float("nan")), r)
    minus_one_inf = b.and_(f.eq(x, f.c(-1.0)), f.eq(f.call("llvm.fabs", y), f.c(float("inf"))))
    one = b.or_(b.or_(f.eq(x, f.c(1.0)), f.eq(y, f.c(0.0))), minus_one_inf)
    return b.select(one, f.c(1.0), r)


def erf_inv(e, x):
    """erf^-1(x) of an f32, computed in f64 and rounded once: x * P(w) with w = -ln(1 - x^2)
    (P of t = w / 2.5 - 1 for w <= 5, of t linear in sqrt(w) up to 16, both computed and
    one selected). w comes from this module's f32 log1p(-x^2) for |x| <= 1/2, else from
    u = (1 - |x|)(1 + |x|), exact in f64, as log(f32(u)) + (u - f32(u)) / f32(u): the only
    error is the f32 logarithm's (1 ulp of w, which moves the result by at most half an
    ulp: erfinv grows like sqrt(w)). Error < 1.5 ulp. +-inf at +-1, NaN outside [-1, 1],
    a NaN in gives it back, -0 stays -0, denormals keep their sign."""
    f = _Fn(e)
    b = f.b
    ax = f.call("llvm.fabs", x)
    small = log1p(e, b.fneg(b.fmul(ax, ax)))
    ad = b.fpext(ax, F64)
    u = b.fmul(b.fsub(f.dc(1.0), ad), b.fadd(f.dc(1.0), ad))
    u32 = b.fptrunc(u, F32)
    u32 = b.select(f.gt(u32, f.c(0.0)), u32, f.c(1.0))  # |x| >= 1: any positive value (selected away)
    big = b.fadd(b.fpext(log(e, u32), F64), b.fdiv(b.fsub(u, b.fpext(u32, F64)), b.fpext(u32, F64)))
    w = b.fneg(b.select(f.gt(ax, f.c(0.5)), big, b.fpext(small, F64)))
    near = f.dhorner(b.fsub(b.fmul(w, f.dc(0.4)), f.dc(1.0)), _ERFINV_W_D)
    r5 = 5.0 ** 0.5
    st = b.fmul(b.fsub(e.intrinsic("llvm.sqrt", F64, [w]), f.dc((r5 + 4) / 2)), f.dc(2 / (4 - r5)))
    far = f.dhorner(st, _ERFINV_S_D)
    p = b.select(b.fcmp_ordered("<=", w, f.dc(5.0)), near, far)
    y = b.fptrunc(b.fmul(b.fpext(x, F64), p), F32)
    y = b.select(f.eq(ax, f.c(1.0)), f.call("llvm.copysign", f.c(float("inf")), x), y)
    y = b.select(f.gt(ax, f.c(1.0)), f.c(float("nan")), y)
    return b.select(f.isnan(x), x, y)


# ---------------------------------------------------------------- atan2


def atan2(e, y, x, odd: bool = False):
    """atan2(y, x) of f32s, computed in f64 and rounded once (< 0.51 ulp): a = min / max of
    |x| and |y| in [0, 1]; above tan(pi/8), t = (a - 1) / (a + 1) and pi/4 added; atan(t) =
    t + t^3 P(t^2) (2^-35 relative); then pi/2 - r when |y| > |x|, pi - r when x has its
    sign bit set (-0 included), the sign of y. The C library's special cases follow: both
    zero gives +-0 or +-pi by the signs, both infinite +-pi/4 or +-3pi/4 (a taken as 1), an
    infinite y +-pi/2, an infinite x 0 or pi; a NaN operand gives NaN. `odd`: the f32 is
    rounded to odd, for a result rounded once more to f16 or bf16 (the two roundings then
    make one, and LLVM gets no f64 -> f16 truncation to lower to a runtime call)."""
    f = _Fn(e)
    b = f.b
    yd, xd = b.fpext(y, F64), b.fpext(x, F64)
    ay, ax = f.e.intrinsic("llvm.fabs", F64, [yd]), f.e.intrinsic("llvm.fabs", F64, [xd])
    big = b.fcmp_ordered(">", ay, ax)
    num, den = b.select(big, ax, ay), b.select(big, ay, ax)
    a = b.fdiv(num, den)
    a = b.select(b.fcmp_ordered("==", den, f.dc(0.0)), f.dc(0.0), a)
    a = b.select(b.fcmp_ordered("==", num, f.dc(float("inf"))), f.dc(1.0), a)
    hi = b.fcmp_ordered(">", a, f.dc(0.41421356237309503))
    t = b.select(hi, b.fdiv(b.fsub(a, f.dc(1.0)), b.fadd(a, f.dc(1.0))), a)
    s = b.fmul(t, t)
    r = f.dfma(b.fmul(t, s), f.destrin(s, _ATAN_D), t)
    r = b.fadd(r, b.select(hi, f.dc(math.pi / 4), f.dc(0.0)))
    r = b.select(big, b.fsub(f.dc(math.pi / 2), r), r)
    r = b.select(b.icmp_signed("<", b.bitcast(x, I32), f.i(0)), b.fsub(f.dc(math.pi), r), r)
    r = f.e.intrinsic("llvm.copysign", F64, [r, yd])
    nan = b.or_(f.isnan(x), f.isnan(y))
    if odd:
        from axle.codegen.scalar_f8 import round_to_odd_f32
        return round_to_odd_f32(b, b.select(nan, f.dc(float("nan")), r))
    # the NaN taken from x + y (NaN when either is), an f32 operation: with a constant
    # there, LLVM moves the rounding after the select, and a convert to f16 that follows
    # merges with it into an f64 -> f16 truncation, a runtime call the JIT cannot resolve
    return b.select(nan, b.fadd(x, y), b.fptrunc(r, F32))


# ---------------------------------------------------------------- lgamma


def _log_d(f: _Fn, x):
    """ln x for a positive finite f64 x (to about 2^-52 relative): x = 2^k m with m in
    [sqrt(1/2), sqrt(2)) split on the bits, ln m = 2 atanh(s) with s = (m - 1) / (m + 1),
    |s| <= 0.172, by its series (odd powers over odd integers, to s^23)."""
    b = f.b
    bits = b.bitcast(x, I64)
    k = b.sub(b.lshr(bits, ir.Constant(I64, 52)), ir.Constant(I64, 1023))
    m = b.bitcast(b.or_(b.and_(bits, ir.Constant(I64, (1 << 52) - 1)), ir.Constant(I64, 1023 << 52)), F64)
    big = b.fcmp_ordered(">", m, f.dc(math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, f.dc(0.5)), m)
    k = b.add(k, b.zext(big, I64))
    s_ = b.fdiv(b.fsub(m, f.dc(1.0)), b.fadd(m, f.dc(1.0)))
    s2 = b.fmul(s_, s_)
    series = f.destrin(s2, [2.0 / (2 * j + 1) for j in range(12)])
    return f.dfma(b.sitofp(k, F64), f.dc(math.log(2.0)), b.fmul(s_, series))


def _sinpi_abs_d(f: _Fn, x):
    """|sin(pi x)| for an f32 x widened to f64: x reduced exactly to r in [0, 1/2] (the
    distance to the nearest even integer, folded at 1/2), then sin(pi r) for r <= 1/4 and
    cos(pi (1/2 - r)) above, by the polynomials of sine and cosine."""
    b = f.b
    ax = f.e.intrinsic("llvm.fabs", F64, [x])
    r = b.fsub(ax, b.fmul(f.dc(2.0), f.e.intrinsic("llvm.floor", F64, [b.fmul(ax, f.dc(0.5))])))  # [0, 2)
    r = b.select(b.fcmp_ordered(">", r, f.dc(1.0)), b.fsub(f.dc(2.0), r), r)  # |sin| is even about 1
    r = b.select(b.fcmp_ordered(">", r, f.dc(0.5)), b.fsub(f.dc(1.0), r), r)  # [0, 1/2]
    low = b.fcmp_ordered("<=", r, f.dc(0.25))
    a = b.fmul(b.select(low, r, b.fsub(f.dc(0.5), r)), f.dc(math.pi))  # [0, pi/4]
    a2 = b.fmul(a, a)
    sin = f.dfma(b.fmul(a, a2), f.dhorner(a2, _SIN_D), a)
    cos = f.dfma(b.fmul(a2, a2), f.dhorner(a2, _COS_D), f.dfma(a2, f.dc(-0.5), f.dc(1.0)))
    return b.select(low, sin, cos)


def _shift_up(f: _Fn, y, limit: int):
    """The recurrence steps of lgamma and digamma, branch-free: [(y + j, y + j < limit)]
    for j < limit, and z = y + (the number of those below limit) >= limit for y > 0."""
    b = f.b
    steps, z = [], y
    for j in range(limit):
        yj = b.fadd(y, f.dc(float(j)))
        below = b.fcmp_ordered("<", yj, f.dc(float(limit)))
        steps.append((yj, below))
        z = b.select(below, b.fadd(y, f.dc(float(j + 1))), z)
    return steps, z


_STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156]  # B_2k / (2k (2k - 1))
LGAMMA_SHIFT = 8  # y below this is shifted up by whole steps before Stirling's series


def lgamma(e, x):
    """ln |Gamma(x)| of an f32, in f64, rounded once (within 2 ulp; exact zeros at 1 and 2):
    for y >= 1/2, y is shifted up to y + n >= 8 by whole steps (ln Gamma(y) = ln Gamma(y +
    n) - ln(y (y + 1) ... (y + n - 1)), the product taken branch-free over 8 factors), then
    Stirling's series (7 terms: below 2^-45 at 8); below 1/2, the reflection ln Gamma(x) =
    ln(pi / |sin(pi x)|) - ln Gamma(1 - x). Logarithms by the atanh series in f64 (about
    2^-52), so the cancellation near the zeros at 1 and 2 costs no more than an ulp or two.
    Poles (zero and the negative integers) and infinities give +inf, NaN gives NaN."""
    f = _Fn(e)
    b = f.b
    xd = b.fpext(x, F64)
    refl = b.fcmp_ordered("<", xd, f.dc(0.5))
    y = b.select(refl, b.fsub(f.dc(1.0), xd), xd)
    steps, z = _shift_up(f, y, LGAMMA_SHIFT)
    prod = f.dc(1.0)
    for yj, below in steps:
        prod = b.fmul(prod, b.select(below, yj, f.dc(1.0)))
    inv = b.fdiv(f.dc(1.0), z)
    inv2 = b.fmul(inv, inv)
    series = b.fmul(inv, f.dhorner(inv2, _STIRLING))
    lz = _log_d(f, z)
    st = b.fadd(b.fadd(b.fmul(b.fsub(z, f.dc(0.5)), lz), b.fsub(f.dc(0.5 * math.log(2 * math.pi)), z)), series)
    # ln Gamma(y) = st - ln(prod); reflected, ln(pi / |sin(pi x)|) - ln Gamma(y): one
    # logarithm of either prod or pi prod / |sin(pi x)|, the sign chosen
    sinpi = _sinpi_abs_d(f, xd)
    q = b.select(refl, b.fdiv(b.fmul(prod, f.dc(math.pi)), sinpi), prod)
    d = b.fsub(_log_d(f, q), st)
    r = b.select(refl, d, b.fneg(d))
    one_two = b.or_(b.fcmp_ordered("==", xd, f.dc(1.0)), b.fcmp_ordered("==", xd, f.dc(2.0)))
    r = b.select(one_two, f.dc(0.0), r)
    # poles (sin(pi x) = 0, huge negative x included), +-inf and NaN: |x| + inf (inf, or NaN
    # for NaN), an f32 operation, so that LLVM keeps the rounding of r where it is (see atan2)
    special = b.or_(b.and_(refl, b.fcmp_ordered("==", sinpi, f.dc(0.0))),
                    b.not_(f.lt(f.call("llvm.fabs", x), f.c(float("inf")))))
    return b.select(special, b.fadd(f.call("llvm.fabs", x), f.c(float("inf"))), b.fptrunc(r, F32))


DIGAMMA_SHIFT = 10  # y below this is shifted up by whole steps before the asymptotic series


def digamma(e, x, psi_asym, odd: bool = False):
    """psi(x) of an f32, in f64, rounded once: for x < 0 the reflection psi(1 - x) - pi
    cot(pi x) (x reduced exactly to the nearest integer's distance); y shifted up to y + n
    >= 10 by whole steps, branch-free (psi(y) = psi(y + n) - sum 1/(y + j)); then the
    asymptotic series ln z - 1/(2z) - sum B_2k / (2k z^2k) (`psi_asym`, from the f64
    implementation). NaN at the poles (zero and the negative integers) and -inf, +inf at
    +inf, as the f64 implementation. `odd`: rounded to odd for a result rounded again to
    f16 or bf16 (see atan2)."""
    f = _Fn(e)
    b = f.b
    xd = b.fpext(x, F64)
    refl = b.fcmp_ordered("<", xd, f.dc(0.0))
    y = b.select(refl, b.fsub(f.dc(1.0), xd), xd)
    steps, z = _shift_up(f, y, DIGAMMA_SHIFT)
    acc = f.dc(0.0)
    for yj, below in steps:
        acc = b.fsub(acc, b.select(below, b.fdiv(f.dc(1.0), yj), f.dc(0.0)))
    inv = b.fdiv(f.dc(1.0), z)
    inv2 = b.fmul(inv, inv)
    series = b.fmul(inv2, f.dhorner(inv2, psi_asym))
    r = b.fadd(acc, b.fsub(b.fsub(_log_d(f, z), b.fmul(f.dc(0.5), inv)), series))
    # pi cot(pi x): r0 = x - nearest integer in [-1/2, 1/2], exactly; sin and cos of pi |r0|
    r0 = b.fsub(xd, f.e.intrinsic("llvm.roundeven", F64, [xd]))
    ar = f.e.intrinsic("llvm.fabs", F64, [r0])
    low = b.fcmp_ordered("<=", ar, f.dc(0.25))
    a = b.fmul(b.select(low, ar, b.fsub(f.dc(0.5), ar)), f.dc(math.pi))
    a2 = b.fmul(a, a)
    sn = f.dfma(b.fmul(a, a2), f.dhorner(a2, _SIN_D), a)
    cs = f.dfma(b.fmul(a2, a2), f.dhorner(a2, _COS_D), f.dfma(a2, f.dc(-0.5), f.dc(1.0)))
    cot = b.fdiv(b.select(low, cs, sn), b.select(low, sn, cs))
    cot = f.e.intrinsic("llvm.copysign", F64, [b.fmul(cot, f.dc(math.pi)), r0])
    r = b.select(refl, b.fsub(r, cot), r)
    r = b.select(b.fcmp_ordered("==", xd, f.dc(float("inf"))), f.dc(float("inf")), r)
    pole = b.and_(b.fcmp_unordered("<=", xd, f.dc(0.0)), b.fcmp_unordered("==", xd, f.e.intrinsic("llvm.floor", F64, [xd])))
    if odd:
        from axle.codegen.scalar_f8 import round_to_odd_f32
        return round_to_odd_f32(b, b.select(pole, f.dc(float("nan")), r))
    # the NaN as x - x (NaN for NaN and +-inf... only selected at poles and NaN), an f32
    # operation: see atan2
    nan = b.fdiv(b.fsub(x, x), b.fsub(x, x))
    return b.select(pole, nan, b.fptrunc(r, F32))


# ---------------------------------------------------------------- dispatch

FUNCTIONS = {
    "stablehlo.exponential": exp, "stablehlo.exponential_minus_one": expm1, "stablehlo.log": log,
    "stablehlo.log_plus_one": log1p, "stablehlo.tanh": tanh, "stablehlo.logistic": logistic,
    "chlo.erf": erf, "chlo.erfc": erfc, "stablehlo.sine": sine, "stablehlo.cosine": cosine,
    "chlo.lgamma": lgamma,
}


def applies(x) -> bool:
    """True for the registers these functions serve: f32 (f32, bf16) and f16."""
    return x.type in (F32, F16)


def apply(e, fn, *args):
    """fn on f32 or f16 registers (f16 computes in f32, rounded once at the end)."""
    if args[0].type == F16:
        return e.b.fptrunc(fn(e, *[e.b.fpext(a, F32) for a in args]), F16)
    return fn(e, *args)
