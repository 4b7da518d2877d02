"""Scalar rules for the special functions of CHLO and the complex functions libm has no
single call for: sinh, cosh, erf_inv, bessel_i1e, digamma, polygamma, zeta, mulhi on 64-bit
integers, complex expm1 / log1p / atan2 and the complex inverse trigonometric and hyperbolic
functions. Registered into scalar_ops.RULES / COMPLEX_RULES when this module is imported.

Precision, as the interpreter (axle/interpreter/ops_chlo.py) computes each:

* erf_inv, bessel_i1e, digamma, polygamma and zeta are evaluated in f64 (by functions
  emitted once per LLVM module, `axle.special.*`) and rounded once to the result type (to
  bf16 through f32 rounded to odd, so that the two roundings make one).
* real sinh and cosh follow CHLO's decomposition step by step in the type it computes in
  (f32 for f16/bf16, else the type itself), rounding after every step, because the
  conformance expectations carry that rounding.
* complex functions are computed in complex<f64> with the C library (cacosh, csinh, ...)
  and rounded once.

The algorithms (series, asymptotic expansions, Euler-Maclaurin, Newton-Halley refinement)
are written here; their domain conventions (poles of digamma, the domain of zeta and
polygamma) are the interpreter's.
"""
from __future__ import annotations

import math
from fractions import Fraction

from llvmlite import ir

from axle.codegen import scalar_f8
from axle.codegen.scalar import F16, F32, F64, I32, reg_type
from axle.codegen.scalar_f8 import narrow_float, round_to_odd_f32
from axle.codegen.scalar_complex import _cdiv, _cmul, _libc, _narrow, _wide
from axle.codegen.scalar_ops import _ICMP, COMPLEX_RULES, RULES, _dispatcher, im, make, re
from axle.errors import Unsupported

# ---------------------------------------------------------------- a small f64 builder


class _M:
    """f64 arithmetic on an IRBuilder, with loops (while) built from phis."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b
        self.mod = b.module

    @staticmethod
    def c(v) -> ir.Constant:
        return ir.Constant(F64, float(v))

    def add(self, x, y):
        return self.b.fadd(x, y)

    def sub(self, x, y):
        return self.b.fsub(x, y)

    def mul(self, x, y):
        return self.b.fmul(x, y)

    def div(self, x, y):
        return self.b.fdiv(x, y)

    def neg(self, x):
        return self.b.fneg(x)

    def lt(self, x, y):
        return self.b.fcmp_ordered("<", x, y)

    def le(self, x, y):
        return self.b.fcmp_ordered("<=", x, y)

    def gt(self, x, y):
        return self.b.fcmp_ordered(">", x, y)

    def ge(self, x, y):
        return self.b.fcmp_ordered(">=", x, y)

    def eq(self, x, y):
        return self.b.fcmp_ordered("==", x, y)

    def ne(self, x, y):
        return self.b.fcmp_unordered("!=", x, y)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def sel(self, cond, x, y):
        return self.b.select(cond, x, y)

    def and_(self, *cs):
        out = cs[0]
        for c in cs[1:]:
            out = self.b.and_(out, c)
        return out

    def or_(self, *cs):
        out = cs[0]
        for c in cs[1:]:
            out = self.b.or_(out, c)
        return out

    def not_(self, c):
        return self.b.not_(c)

    def intr(self, name, *args):
        fnty = ir.FunctionType(F64, [F64] * len(args))
        return self.b.call(self.mod.declare_intrinsic(name, [F64], fnty), list(args))

    def abs(self, x):
        return self.intr("llvm.fabs", x)

    def floor(self, x):
        return self.intr("llvm.floor", x)

    def copysign(self, x, s):
        return self.intr("llvm.copysign", x, s)

    def sqrt(self, x):
        return self.intr("llvm.sqrt", x)

    def exp(self, x):
        return self.intr("llvm.exp", x)

    def log(self, x):
        return self.intr("llvm.log", x)

    def pow(self, x, y):
        return self.intr("llvm.pow", x, y)

    def libm(self, name, *args):
        fn = self.mod.globals.get(name)
        if fn is None:
            fn = ir.Function(self.mod, ir.FunctionType(F64, [F64] * len(args)), name)
        return self.b.call(fn, list(args))

    def loop(self, init: list, cond, body) -> list:
        """while cond(*vals): vals = body(*vals); returns the final vals. Each value is a
        register of any type; `cond` is evaluated at the top of every trip."""
        b = self.b
        pre = b.block
        head = b.append_basic_block("while.head")
        loop = b.append_basic_block("while.body")
        done = b.append_basic_block("while.end")
        b.branch(head)
        b.position_at_end(head)
        phis = []
        for v in init:
            p = b.phi(v.type)
            p.add_incoming(v, pre)
            phis.append(p)
        b.cbranch(cond(*phis), loop, done)
        b.position_at_end(loop)
        new = body(*phis)
        end = b.block
        for p, v in zip(phis, new):
            p.add_incoming(v, end)
        b.branch(head)
        b.position_at_end(done)
        return phis


NAN = float("nan")
INF = float("inf")


def _function(module: ir.Module, name: str, nargs: int, build, ret=F64, argtype=F64) -> ir.Function:
    """The module's internal function `name(argtype x nargs) -> ret`, emitted on first use."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, [argtype] * nargs), name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(build(_M(b), *fn.args))
    return fn


# ---------------------------------------------------------------- constants (computed here)


def _bernoulli(n: int) -> list:
    """B_0..B_n as Fractions (B_1 = -1/2), from the recurrence sum_k C(m+1, k) B_k = 0."""
    B = [Fraction(1)]
    for m in range(1, n + 1):
        B.append(-sum(math.comb(m + 1, k) * B[k] for k in range(m)) / (m + 1))
    return B


_B = _bernoulli(30)
# digamma's asymptotic series: psi(y) ~ ln y - 1/(2y) - sum_k B_2k / (2k y^2k)
_PSI_ASYM = [float(_B[2 * k] / (2 * k)) for k in range(1, 11)]
# Euler-Maclaurin tail of zeta: sum_j B_2j / (2j)! * x(x+1)...(x+2j-2) * a^(-x-2j+1)
_ZETA_EM = [float(_B[2 * j] / math.factorial(2 * j)) for j in range(1, 13)]
_EPS = 2.0 ** -53


# ---------------------------------------------------------------- digamma


def _digamma_body(m: _M, x):
    """psi(x): reflection for x < 0 (psi(1-x) - pi cot(pi x), with the fraction of x taken
    exactly), the recurrence psi(y) = psi(y+1) - 1/y up to y >= 10, then the asymptotic
    series. NaN at the poles (zero and the negative integers), as the interpreter."""
    pole = m.and_(m.le(x, m.c(0)), m.eq(x, m.floor(x)))
    neg = m.lt(x, m.c(0))
    frac = m.sub(x, m.intr("llvm.roundeven", x))  # exact, in [-1/2, 1/2]
    cot = m.div(m.c(math.pi), m.libm("tan", m.mul(m.c(math.pi), frac)))
    y0 = m.sel(neg, m.sub(m.c(1), x), x)
    y, acc = m.loop([y0, m.c(0)], lambda y, a: m.lt(y, m.c(10)),
                    lambda y, a: [m.add(y, m.c(1)), m.sub(a, m.div(m.c(1), y))])
    inv2 = m.div(m.c(1), m.mul(y, y))
    series = m.c(0)
    for coef in reversed(_PSI_ASYM):
        series = m.mul(inv2, m.add(m.c(coef), series))
    asym = m.sub(m.sub(m.log(y), m.div(m.c(0.5), y)), series)
    r = m.add(acc, asym)
    r = m.sel(neg, m.sub(r, cot), r)
    return m.sel(pole, m.c(NAN), r)


def digamma_fn(module):
    return _function(module, "axle.special.digamma", 1, _digamma_body)


# ---------------------------------------------------------------- zeta, polygamma


def _zeta_body(m: _M, x, q):
    """Hurwitz zeta(x, q) = sum_n (q + n)^-x by Euler-Maclaurin summation: terms up to
    a = q + N > 9 (N >= 9) summed directly, then the integral and Bernoulli corrections.
    Domain (the interpreter's): NaN for x < 1 and for q <= 0 with x not an integer; at the
    poles (q a non-positive integer) +inf for even x, else NaN; +inf for x = 1."""
    b = m.b
    nx = m.neg(x)
    s0 = m.pow(q, nx)
    # direct part: stop early when the terms no longer matter
    def cond(i, a, s, t):
        more = m.or_(b.icmp_signed("<", i, ir.Constant(I32, 9)), m.le(a, m.c(9)))
        small = m.lt(m.abs(m.div(t, s)), m.c(_EPS))
        return m.and_(more, m.not_(small), b.icmp_signed("<", i, ir.Constant(I32, 1 << 30)))

    def body(i, a, s, t):
        a1 = m.add(a, m.c(1))
        t1 = m.pow(a1, nx)
        return [b.add(i, ir.Constant(I32, 1)), a1, m.add(s, t1), t1]

    i, a, s, t = m.loop([ir.Constant(I32, 0), q, s0, s0], cond, body)
    converged = m.lt(m.abs(m.div(t, s)), m.c(_EPS))
    # tail: a^(1-x)/(x-1) - a^-x/2 + sum_j B_2j/(2j)! x(x+1)..(x+2j-2) a^(-x-2j+1), where t = a^-x
    tail = m.sub(m.div(m.mul(t, a), m.sub(x, m.c(1))), m.mul(m.c(0.5), t))
    rising = m.c(1)
    power = t
    terms = []
    k = 0
    for coef in _ZETA_EM:
        rising = m.mul(rising, m.add(x, m.c(k)))
        power = m.div(power, a)
        terms.append(m.mul(m.c(coef), m.mul(rising, power)))
        rising = m.mul(rising, m.add(x, m.c(k + 1)))
        power = m.div(power, a)
        k += 2
    corr = m.c(0)
    for term in reversed(terms):
        corr = m.add(term, corr)
    em = m.add(s, m.add(tail, corr))
    r = m.sel(converged, s, em)
    # far from the origin: the leading terms of the asymptotic expansion in q
    big = m.mul(m.add(m.div(m.c(1), m.sub(x, m.c(1))), m.div(m.c(0.5), q)), m.pow(q, m.sub(m.c(1), x)))
    r = m.sel(m.gt(q, m.c(1e8)), big, r)
    # domain
    x_int = m.eq(x, m.floor(x))
    q_pole = m.and_(m.le(q, m.c(0)), m.eq(q, m.floor(q)))
    even = m.and_(x_int, m.eq(m.libm("fmod", x, m.c(2)), m.c(0)))
    r = m.sel(m.lt(x, m.c(1)), m.c(NAN), r)
    r = m.sel(m.and_(m.le(q, m.c(0)), m.not_(x_int)), m.c(NAN), r)
    r = m.sel(q_pole, m.sel(even, m.c(INF), m.c(NAN)), r)
    r = m.sel(m.eq(x, m.c(1)), m.c(INF), r)
    return m.sel(m.or_(m.isnan(x), m.isnan(q)), m.c(NAN), r)


def zeta_fn(module):
    return _function(module, "axle.special.zeta", 2, _zeta_body)


def _polygamma_body(m: _M, n, x):
    """(-1)^(n+1) n! zeta(n+1, x); digamma for n = 0; NaN unless n is a natural number."""
    mod = m.mod
    sign = m.sub(m.mul(m.c(2), m.libm("fmod", n, m.c(2))), m.c(1))
    n1 = m.add(n, m.c(1))
    fact = m.exp(m.libm("lgamma", n1))
    z = m.b.call(zeta_fn(mod), [n1, x])
    r = m.mul(m.mul(sign, fact), z)
    r = m.sel(m.eq(n, m.c(0)), m.b.call(digamma_fn(mod), [x]), r)
    bad = m.or_(m.ne(n, m.floor(n)), m.lt(n, m.c(0)))
    return m.sel(bad, m.c(NAN), r)


def polygamma_fn(module):
    return _function(module, "axle.special.polygamma", 2, _polygamma_body)


# ---------------------------------------------------------------- erf_inv


def _erf_inv_body(m: _M, y):
    """erf^-1(y): a closed-form first guess (Winitzki's, written without cancellation), then
    three Halley steps on g(t) = erf(t) - |y|, evaluated as (1 - |y|) - erfc(t) for |y| > 1/2
    where that keeps its relative precision. +-inf at +-1, NaN outside [-1, 1]."""
    z = m.abs(y)
    a = 0.147
    upper = m.gt(z, m.c(0.5))
    L = m.sel(upper, m.log(m.mul(m.sub(m.c(1), z), m.add(m.c(1), z))),
              m.libm("log1p", m.neg(m.mul(z, z))))  # ln(1 - z^2) <= 0
    A = m.add(m.c(2 / (math.pi * a)), m.mul(m.c(0.5), L))
    B = m.div(m.neg(L), m.c(a))  # >= 0
    t = m.sqrt(m.div(B, m.add(m.sqrt(m.add(m.mul(A, A), B)), A)))
    one_minus = m.sub(m.c(1), z)
    for _ in range(3):
        g = m.sel(upper, m.sub(one_minus, m.libm("erfc", t)), m.sub(m.libm("erf", t), z))
        d = m.mul(m.c(2 / math.sqrt(math.pi)), m.exp(m.neg(m.mul(t, t))))
        step = m.div(g, m.add(d, m.mul(t, g)))
        t = m.sub(t, m.sel(m.eq(g, m.c(0)), m.c(0), step))
    t = m.sel(m.eq(z, m.c(1)), m.c(INF), t)
    t = m.sel(m.gt(z, m.c(1)), m.c(NAN), t)
    t = m.copysign(t, y)
    return m.sel(m.isnan(y), y, t)


def erf_inv_fn(module):
    return _function(module, "axle.special.erf_inv", 1, _erf_inv_body)


# ---------------------------------------------------------------- bessel_i1e

_I1E_SWITCH = 30.0


def _bessel_i1e_body(m: _M, x):
    """e^-|x| I1(x): the power series sum (x/2)^(2k+1) / (k! (k+1)!) for |x| <= 30, the
    asymptotic expansion e^x/sqrt(2 pi x) sum_k (-1)^k a_k(1) / x^k beyond."""
    b = m.b
    ax = m.abs(x)
    h = m.mul(m.c(0.5), ax)
    h2 = m.mul(h, h)

    def s_cond(k, s, t):
        return m.and_(m.gt(t, m.mul(s, m.c(_EPS / 4))), m.lt(k, m.c(1000)))

    def s_body(k, s, t):
        k1 = m.add(k, m.c(1))
        t1 = m.div(m.mul(t, h2), m.mul(k1, m.add(k1, m.c(1))))
        return [k1, m.add(s, t1), t1]

    # the series is emitted in a branch: it is only needed (and only short) for |x| <= 30
    small = m.le(ax, m.c(_I1E_SWITCH))
    pre = b.block
    with b.if_then(small):
        _, s, _ = m.loop([m.c(0), h, h], s_cond, s_body)
        ser = m.mul(s, m.exp(m.neg(ax)))
        in_block = b.block
    series = b.phi(F64)
    series.add_incoming(ser, in_block)
    series.add_incoming(m.c(0), pre)

    def a_cond(k, s, t):
        return m.and_(m.gt(m.abs(t), m.mul(m.abs(s), m.c(_EPS / 4))), m.lt(k, m.c(60)))

    def a_body(k, s, t):
        k1 = m.add(k, m.c(1))
        odd = m.sub(m.mul(m.c(2), k1), m.c(1))
        t1 = m.div(m.mul(t, m.sub(m.mul(odd, odd), m.c(4))), m.mul(m.mul(m.c(8), k1), ax))
        return [k1, m.add(s, t1), t1]

    safe = m.sel(small, m.c(_I1E_SWITCH), ax)  # keeps the loop short when it is not needed
    pre = b.block
    with b.if_then(m.not_(small)):
        ax_ = safe
        t1 = m.div(m.c(-3), m.mul(m.c(8), ax_))
        _, s, _ = m.loop([m.c(1), m.add(m.c(1), t1), t1], a_cond, a_body)
        asy = m.div(s, m.sqrt(m.mul(m.c(2 * math.pi), ax_)))
        in_block = b.block
    asym = b.phi(F64)
    asym.add_incoming(asy, in_block)
    asym.add_incoming(m.c(0), pre)
    r = m.sel(small, series, asym)
    r = m.sel(m.eq(ax, m.c(INF)), m.c(0), r)
    r = m.copysign(r, x)
    return m.sel(m.isnan(x), x, r)


_HX = float.fromhex
# bessel_i1e in f64 (fitted against mpmath's I1 by Chebyshev interpolation, converted to
# powers): i1e(x) / x on 0 <= x <= 8 in t = x / 4 - 1, degree 20, relative error 1.0e-10
# (2^-33); i1e(x) sqrt(x) on x >= 8 in t = 16 / x - 1, degree 11, relative error 6.7e-12
_I1E_SMALL_D = [_HX(c) for c in ("0x1.6e14eb8e68464p-5", "-0x1.f4bb0714e53e8p-5", "0x1.16c390d879b28p-4",
                                 "-0x1.1881386b1fa07p-4", "0x1.0530f8e7788f4p-4", "-0x1.c4da8305c8568p-5",
                                 "0x1.6df9456c3c659p-5", "-0x1.13d741d7edbb0p-5", "0x1.8413e9d22fb75p-6",
                                 "-0x1.fe217462dc62cp-7", "0x1.39fdb6297cecdp-7", "-0x1.6b6c57bc5ae13p-8",
                                 "0x1.8a9dd488bdeafp-9", "-0x1.8db2497ca3703p-10", "0x1.819bb3507f16cp-11",
                                 "-0x1.8279cc15389f0p-12", "0x1.4d551696f88eep-13", "-0x1.55803fab53c0ep-15",
                                 "0x1.191d03cc69004p-16", "-0x1.251039e4d5471p-16", "0x1.9cee0f438a4fcp-18")]
_I1E_LARGE_D = [_HX(c) for c in ("0x1.8ebe783a8707ap-2", "-0x1.3f7961959ef56p-7", "-0x1.cbc5548cd646ap-13",
                                 "-0x1.f89da64d6981cp-17", "-0x1.ec696e4c9f5fcp-20", "-0x1.74777250b4504p-22",
                                 "-0x1.b6513512cdd54p-24", "-0x1.a2fdc761c4752p-25", "-0x1.605b2cab7255ep-26",
                                 "0x1.648f7c7e88200p-29", "0x1.f101f4fa11a04p-28", "0x1.1e7d7809b405fp-29")]


def bessel_i1e_f32(e, x):
    """e^-|x| I1(x) of an f32, in f64 and rounded once (< 0.51 ulp): |x| <= 8: |x| P(|x| / 4
    - 1); beyond: Q(16 / |x| - 1) / sqrt(|x|) (0 at infinity); the sign of x (I1 is odd), a
    NaN in gives it back. No loop: the series and asymptotic expansion of the f64 function
    above iterate up to 1000 times per element and do not vectorize."""
    from axle.codegen.fastmath import _Fn
    f = _Fn(e)
    b = f.b
    xd = b.fpext(x, F64)
    ax = e.intrinsic("llvm.fabs", F64, [xd])
    small = b.fmul(ax, f.destrin(f.dfma(ax, f.dc(0.25), f.dc(-1.0)), _I1E_SMALL_D))
    big = b.select(b.fcmp_ordered(">", ax, f.dc(8.0)), ax, f.dc(8.0))
    large = b.fdiv(f.destrin(b.fsub(b.fdiv(f.dc(16.0), big), f.dc(1.0)), _I1E_LARGE_D),
                   e.intrinsic("llvm.sqrt", F64, [big]))
    r = b.select(b.fcmp_ordered("<=", ax, f.dc(8.0)), small, large)
    r = e.intrinsic("llvm.copysign", F64, [r, xd])
    return b.select(f.isnan(x), x, b.fptrunc(r, F32))


def bessel_i1e_fn(module):
    return _function(module, "axle.special.bessel_i1e", 1, _bessel_i1e_body)


# ---------------------------------------------------------------- register plumbing


def _to_f64(b, x):
    t = str(x.type)
    if t == "double":
        return x
    return b.fpext(x, F64)


def from_f64(b, et, x):
    """An f64 result as the register of float type `et`, rounded once to et (the caller's
    S.finish does the last rounding of the types kept in f32 registers)."""
    rt = reg_type(et)
    if rt == F64:
        return x
    if rt == F16:
        return narrow_float(b, x, F16)
    if et.name == "f32":
        return b.fptrunc(x, F32)
    return round_to_odd_f32(b, x)  # bf16, f8...: rounded once more by S.finish


def _f64_rule(opname, fn_getter, nargs):
    def rule(e, et, a, op):
        if not et.is_float:
            raise Unsupported(f"{opname} on {et}")
        b = e.b
        args = [_to_f64(b, v) for v in a[:nargs]]
        return from_f64(b, et, b.call(fn_getter(e.module), args))
    return rule


def _register(name, fn, complex_fn=None):
    RULES[name] = _dispatcher(name, fn)
    if complex_fn is not None:
        COMPLEX_RULES[name] = complex_fn


def _digamma_rule(e, et, a, op):
    """f32, bf16, f16: fastmath.digamma (vectorizable, the same method without the loop);
    f64: the function above."""
    if et.is_float and str(a[0].type) in ("float", "half"):
        from axle.codegen import fastmath
        odd = et.name in ("bf16", "f16")
        return fastmath.apply(e, lambda e_, x: fastmath.digamma(e_, x, _PSI_ASYM, odd), a[0])
    return _f64_rule("chlo.digamma", digamma_fn, 1)(e, et, a, op)


_register("chlo.digamma", _digamma_rule)
def _erf_inv_rule(e, et, a, op):
    """f32: fastmath.erf_inv (vectorizable, < 1.5 ulp; random normals are made with it);
    other float types: the f64 Halley iteration above, rounded once."""
    if getattr(et, "name", None) == "f32" and str(a[0].type) == "float":
        from axle.codegen import fastmath
        return fastmath.erf_inv(e, a[0])
    return _f64_rule("chlo.erf_inv", erf_inv_fn, 1)(e, et, a, op)


_register("chlo.erf_inv", _erf_inv_rule)
def _bessel_i1e_rule(e, et, a, op):
    """f32: bessel_i1e_f32 (polynomials in f64, vectorizable); other float types: the f64
    series / asymptotic expansion above, rounded once."""
    if getattr(et, "name", None) == "f32" and str(a[0].type) == "float":
        return bessel_i1e_f32(e, a[0])
    return _f64_rule("chlo.bessel_i1e", bessel_i1e_fn, 1)(e, et, a, op)


_register("chlo.bessel_i1e", _bessel_i1e_rule)
_register("chlo.zeta", _f64_rule("chlo.zeta", zeta_fn, 2))
_register("chlo.polygamma", _f64_rule("chlo.polygamma", polygamma_fn, 2))


# ---------------------------------------------------------------- sinh, cosh (decomposed)


def _stepwise(e, et, x, kind):
    """CHLO's decompositions of cosh / sinh with every step rounded to the working type
    (f32 for f16/bf16, else et):
    cosh x = e^(x + log 1/2) + e^(log 1/2 - x);
    sinh x = (expm1 + expm1 / (expm1 + 1)) / 2 for |x| < 1, else e^(x + log 1/2) - e^(log 1/2 - x).
    exp and expm1 are evaluated in f64 and rounded to the working type."""
    b = e.b
    wt = F64 if et.name == "f64" else F32
    xw = x if x.type == wt else b.fpext(x, wt)

    def c(v):
        return ir.Constant(wt, float(v))  # llvmlite rounds a float constant to its type

    def f64fn(name, v):
        v64 = v if wt == F64 else b.fpext(v, F64)
        if name == "exp":
            r = b.call(e.module.declare_intrinsic("llvm.exp", [F64], ir.FunctionType(F64, [F64])), [v64])
        else:
            fn = e.module.globals.get(name) or ir.Function(e.module, ir.FunctionType(F64, [F64]), name)
            r = b.call(fn, [v64])
        return r if wt == F64 else b.fptrunc(r, wt)

    log_half = c(math.log(0.5))
    big_a = f64fn("exp", b.fadd(xw, log_half))
    big_b = f64fn("exp", b.fsub(log_half, xw))
    if kind == "cosh":
        r = b.fadd(big_a, big_b)
    else:
        large = b.fsub(big_a, big_b)
        em1 = f64fn("expm1", xw)
        small = b.fmul(c(0.5), b.fadd(em1, b.fdiv(em1, b.fadd(em1, c(1.0)))))
        fabs = e.module.declare_intrinsic("llvm.fabs", [wt], ir.FunctionType(wt, [wt]))
        r = b.select(b.fcmp_ordered("<", b.call(fabs, [xw]), c(1.0)), small, large)
    rt = reg_type(et)
    if rt == wt:
        return r
    return narrow_float(b, r, rt)  # f16 (bf16 stays in an f32 register; S.finish rounds it)


def _hyperbolic(kind):
    clib = {"cosh": "ccosh", "sinh": "csinh"}[kind]

    def real(e, et, a, op):
        if not et.is_float:
            raise Unsupported(f"chlo.{kind} on {et}")
        return _stepwise(e, et, a[0], kind)

    def cplx(e, et, a, op):
        r, i = _wide(e, a[0])
        z = _libc(e, clib, [r, i])
        return _narrow(e, et, re(e.b, z), im(e.b, z))
    return real, cplx


for _k in ("cosh", "sinh"):
    _r, _c = _hyperbolic(_k)
    _register("chlo." + _k, _r, _c)


# ---------------------------------------------------------------- complex functions


def _cfunc(clib):
    def fn(e, et, a, op):
        r, i = _wide(e, a[0])
        z = _libc(e, clib, [r, i])
        return _narrow(e, et, re(e.b, z), im(e.b, z))
    return fn


for _name, _clib in {"acos": "cacos", "acosh": "cacosh", "asin": "casin", "asinh": "casinh",
                     "atan": "catan", "atanh": "catanh"}.items():
    COMPLEX_RULES["chlo." + _name] = _cfunc(_clib)


def _cexpm1(e, et, a, op):
    """e^z - 1 (as the interpreter: the complex exponential, then 1 subtracted)."""
    r, i = _wide(e, a[0])
    z = _libc(e, "cexp", [r, i])
    return _narrow(e, et, e.b.fsub(re(e.b, z), ir.Constant(F64, 1.0)), im(e.b, z))


def _clog1p(e, et, a, op):
    """log(1 + z) = log|1 + z| + i arg(1 + z)."""
    b = e.b
    r, i = _wide(e, a[0])
    r1 = b.fadd(r, ir.Constant(F64, 1.0))
    mag = _libc(e, "hypot", [r1, i], returns_complex=False)
    m = _M(b)
    return _narrow(e, et, m.log(mag), _libc(e, "atan2", [i, r1], returns_complex=False))


def _catan2(e, et, a, op):
    """atan2(y, x) = -i log((x + i y) / sqrt(x^2 + y^2)), in complex<f64> (the reference
    interpreter's formula)."""
    b = e.b
    wide = __import__("axle.ir.types", fromlist=["c128"]).c128
    y, x = (_narrow(e, wide, *_wide(e, v)) for v in a)
    t = y.type
    iy = _cmul(e, wide, [make(b, t, ir.Constant(F64, 0.0), ir.Constant(F64, 1.0)), y], op)
    num = make(b, t, b.fadd(re(b, x), re(b, iy)), b.fadd(im(b, x), im(b, iy)))
    x2, y2 = _cmul(e, wide, [x, x], op), _cmul(e, wide, [y, y], op)
    s = make(b, t, b.fadd(re(b, x2), re(b, y2)), b.fadd(im(b, x2), im(b, y2)))
    root = _libc(e, "csqrt", [re(b, s), im(b, s)])
    q = _cdiv(e, wide, [num, make(b, t, re(b, root), im(b, root))], op)
    lg = _libc(e, "clog", [re(b, q), im(b, q)])
    w = _cmul(e, wide, [make(b, t, ir.Constant(F64, 0.0), ir.Constant(F64, -1.0)),
                        make(b, t, re(b, lg), im(b, lg))], op)
    return _narrow(e, et, re(b, w), im(b, w))


COMPLEX_RULES["stablehlo.exponential_minus_one"] = _cexpm1
COMPLEX_RULES["stablehlo.log_plus_one"] = _clog1p
COMPLEX_RULES["stablehlo.atan2"] = _catan2


# ---------------------------------------------------------------- mulhi


def _mulhi(e, et, a, op):
    """The high half of the double-width product (any integer width, 64 bits included)."""
    if not et.is_int or et.is_bool:
        raise Unsupported(f"chlo.mulhi on {et}")
    b = e.b
    w = et.bitwidth
    wide = ir.IntType(2 * w)
    ext = b.zext if et.is_unsigned else b.sext
    p = b.mul(ext(a[0], wide), ext(a[1], wide))
    return b.trunc(b.lshr(p, ir.Constant(wide, w)), ir.IntType(w))


_register("chlo.mulhi", _mulhi)


def _wrap_compare():
    """TOTALORDER compares of 8-bit floats use the 8-bit patterns' keys."""
    base = RULES["stablehlo.compare"]
    if getattr(base, "_f8_wrapped", False):
        return

    def compare(e, et, a, op):
        if scalar_f8.is_f8(et) and op.attr("compare_type") == "TOTALORDER":
            keys = [scalar_f8.total_order_key(e.b, x, et) for x in a]
            return e.b.icmp_signed(_ICMP[op.attr("comparison_direction")], *keys)
        return base(e, et, a, op)
    compare._f8_wrapped = True
    RULES["stablehlo.compare"] = compare


_wrap_compare()  # TOTALORDER compares of 8-bit floats read their bit patterns
