"""Scalar rules of the elemental emitter for complex operands (COMPLEX_RULES of
scalar_ops.py, which sends every rule's complex operands here). Registers are {re, im}
structs; complex<f32> arithmetic rounds as XLA does, the C library's complex functions
(cexp, clog, csqrt, ...) take and return {double, double} pairs.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import fastmath
from axle.codegen.scalar import F32, F64, reg_type
from axle.codegen.scalar_ops import COMPLEX_RULES, _narrow, _wide, im, make, re
from axle.errors import Unsupported
from axle.ir.types import ELEMENT_TYPES

# Add, subtract, multiply and abs compute in the parts' own precision, rounding as XLA does;
# division and the functions compute complex<f32> in double and round once.


def _crule(*names):
    def deco(fn):
        for n in names:
            COMPLEX_RULES["stablehlo." + n] = fn
        return fn
    return deco


def _parts(e, z):
    """(re, im) of z in its own precision: complex<f32> arithmetic rounds as XLA's does (in
    f64 the products would be exact and the results differ from XLA's in the last bit,
    which an escape-time loop such as the Mandelbrot iteration turns into different
    counts); f32 also vectorizes twice as wide."""
    return re(e.b, z), im(e.b, z)


def _fma(e, x, y, z):
    """x * y + z rounded once (llvm.fma; llvm.fmuladd where the target has no FMA)."""
    return e.intrinsic(e.target.fma_intrinsic, x.type, [x, y, z])


def _caddsub(subtract: bool):
    # the rule is chosen by the op it implements, never by `op` (kernels pass their own op)
    def rule_(e, et, a, op):
        b = e.b
        f = b.fsub if subtract else b.fadd
        (ar, ai), (br, bi) = _parts(e, a[0]), _parts(e, a[1])
        return make(b, reg_type(et), f(ar, br), f(ai, bi))
    return rule_


_crule("add")(_caddsub(False))
_crule("subtract")(_caddsub(True))


@_crule("multiply")
def _cmul(e, et, a, op):
    # XLA's rounding: re = fma(ar, br, -(ai bi)), im = fma(ai, br, ar bi)
    b = e.b
    (ar, ai), (br, bi) = _parts(e, a[0]), _parts(e, a[1])
    return make(b, reg_type(et), _fma(e, ar, br, b.fneg(b.fmul(ai, bi))), _fma(e, ai, br, b.fmul(ar, bi)))


def _libc(e, name, args, returns_complex=True):
    t = ir.LiteralStructType([F64, F64]) if returns_complex else F64
    fn = e.module.globals.get(name)
    if fn is None:
        fn = ir.Function(e.module, ir.FunctionType(t, [F64] * len(args)), name)
    return e.b.call(fn, args)


@_crule("divide")
def _cdiv(e, et, a, op):
    """Smith's algorithm (scale by the larger part of the divisor) in the parts' own
    precision with XLA's fused multiply-adds, bit for bit XLA's quotient; both scalings
    computed and one selected, so that a loop of it vectorizes (a branch per element ran
    4 ns per complex<f32> element)."""
    (ar, ai), (br, bi) = _parts(e, a[0]), _parts(e, a[1])
    b = e.b
    t = ar.type
    small = b.fcmp_ordered("<", e.intrinsic("llvm.fabs", t, [br]), e.intrinsic("llvm.fabs", t, [bi]))
    num, dnm = b.select(small, br, bi), b.select(small, bi, br)
    rat = b.fdiv(num, dnm)
    den = _fma(e, num, rat, dnm)
    r = b.select(small, _fma(e, ar, rat, ai), _fma(e, ai, rat, ar))
    i = b.select(small, _fma(e, ai, rat, b.fneg(ar)), _fma(e, b.fneg(ar), rat, ai))
    return make(b, reg_type(et), b.fdiv(r, den), b.fdiv(i, den))


@_crule("negate")
def _cneg(e, et, a, op):
    b = e.b
    return make(b, a[0].type, b.fneg(re(b, a[0])), b.fneg(im(b, a[0])))


@_crule("abs")
def _cabs(e, et, a, op):
    """|z| as XLA rounds it: with m = max(|re|, |im|) and d = min(...) / m, m * sqrt(fma(d,
    d, 1)) (no overflow or underflow in the squares; vectorizes); 0 for 0, and hypot's
    +inf for an infinite part even when the other is NaN (C99 and numpy; XLA gives NaN)."""
    b = e.b
    r, i = _parts(e, a[0])
    t = r.type
    ar, ai = e.intrinsic("llvm.fabs", t, [r]), e.intrinsic("llvm.fabs", t, [i])
    big = b.select(b.fcmp_ordered(">", ai, ar), ai, ar)
    small = b.select(b.fcmp_ordered(">", ai, ar), ar, ai)
    d = b.fdiv(small, big)
    v = b.fmul(big, e.intrinsic("llvm.sqrt", t, [_fma(e, d, d, ir.Constant(t, 1.0))]))
    inf, nan = ir.Constant(t, float("inf")), ir.Constant(t, float("nan"))
    v = b.select(b.fcmp_ordered("oeq", big, ir.Constant(t, 0.0)), ir.Constant(t, 0.0), v)
    v = b.select(b.fcmp_unordered("uno", ar, ai), nan, v)
    either = b.or_(b.fcmp_ordered("oeq", ar, inf), b.fcmp_ordered("oeq", ai, inf))
    return b.select(either, inf, v)


_CLIB = {"exponential": "cexp", "log": "clog", "sqrt": "csqrt", "sine": "csin", "cosine": "ccos",
         "tanh": "ctanh", "tan": "ctan"}


def _cfunc(name):
    def fn(e, et, a, op):
        r, i = _wide(e, a[0])
        z = _libc(e, _CLIB[name], [r, i])
        return _narrow(e, et, re(e.b, z), im(e.b, z))
    return fn


for _n in _CLIB:
    _crule(_n)(_cfunc(_n))


@_crule("exponential")
def _cexp(e, et, a, op):
    """complex<f32> exp: exp(re) (in f64, fastmath's 2^z) times cos and sin of im
    (fastmath's, within 1 ulp), each product rounded once: vectorizable, where cexp is a
    call per element. C99's special cases are selected: im = +-0 gives (exp(re), im); re =
    +inf with im infinite or NaN (inf, NaN); re = -inf with im infinite or NaN (0, 0 with im's sign); the
    rest follow from the arithmetic. complex<f64> keeps the C library's cexp."""
    if et.name != "complex<f32>":
        return _cfunc("exponential")(e, et, a, op)
    b = e.b
    r, i = re(b, a[0]), im(b, a[0])
    f = fastmath._Fn(e)
    er = fastmath._exp2_d(f, b.fmul(b.fpext(r, F64), f.dc(1.4426950408889634)))
    c, s = b.fpext(fastmath.cosine(e, i), F64), b.fpext(fastmath.sine(e, i), F64)
    out_r, out_i = b.fptrunc(b.fmul(er, c), F32), b.fptrunc(b.fmul(er, s), F32)
    zero = f.eq(i, f.c(0.0))
    out_r = b.select(zero, b.fptrunc(er, F32), out_r)
    out_i = b.select(zero, i, out_i)
    bad_i = b.not_(f.lt(f.call("llvm.fabs", i), f.c(float("inf"))))  # inf or NaN
    pinf = b.and_(f.eq(r, f.c(float("inf"))), bad_i)
    ninf = b.and_(f.eq(r, f.c(float("-inf"))), bad_i)
    out_r = b.select(pinf, f.c(float("inf")), b.select(ninf, f.c(0.0), out_r))
    zero_i = f.call("llvm.copysign", f.c(0.0), i)
    out_i = b.select(pinf, f.c(float("nan")), b.select(ninf, zero_i, out_i))
    return make(b, reg_type(et), out_r, out_i)


@_crule("power")
def _cpow(e, et, a, op):
    (ar, ai), (br, bi) = _wide(e, a[0]), _wide(e, a[1])
    z = _libc(e, "cpow", [ar, ai, br, bi])
    return _narrow(e, et, re(e.b, z), im(e.b, z))


@_crule("compare")
def _ccompare(e, et, a, op):
    b = e.b
    d = op.attr("comparison_direction")
    if d not in ("EQ", "NE"):
        raise Unsupported(f"{op.where()}: {d} on {et}")
    eq = b.and_(b.fcmp_ordered("oeq", re(b, a[0]), re(b, a[1])), b.fcmp_ordered("oeq", im(b, a[0]), im(b, a[1])))
    return eq if d == "EQ" else b.not_(eq)


@_crule("select")
def _cselect(e, et, a, op):
    return e.b.select(*a)


@_crule("rsqrt")
def _crsqrt(e, et, a, op):
    r, i = _wide(e, a[0])
    z = _libc(e, "csqrt", [r, i])
    one = _narrow(e, et, ir.Constant(F64, 1.0), ir.Constant(F64, 0.0))
    return _cdiv(e, et, [one, _narrow(e, et, re(e.b, z), im(e.b, z))], op)


@_crule("cbrt")
def _ccbrt(e, et, a, op):
    """The principal cube root, as the interpreter: |z|^(1/3) at a third of arg(z)."""
    b = e.b
    r, i = _wide(e, a[0])
    theta = b.fdiv(_libc(e, "atan2", [i, r], returns_complex=False), ir.Constant(F64, 3.0))
    norm2 = b.fadd(b.fmul(r, r), b.fmul(i, i))
    mag = _libc(e, "pow", [norm2, ir.Constant(F64, 1.0 / 6.0)], returns_complex=False)
    cos = _libc(e, "cos", [theta], returns_complex=False)
    sin = _libc(e, "sin", [theta], returns_complex=False)
    return _narrow(e, et, b.fmul(mag, cos), b.fmul(mag, sin))


@_crule("logistic")
def _clogistic(e, et, a, op):
    """1 / (1 + exp(-z)) in double, rounded once."""
    b = e.b
    r, i = _wide(e, a[0])
    z = _libc(e, "cexp", [b.fneg(r), b.fneg(i)])
    wide = ELEMENT_TYPES["complex<f64>"]
    den = make(b, reg_type(wide), b.fadd(ir.Constant(F64, 1.0), re(b, z)), im(b, z))
    one = make(b, reg_type(wide), ir.Constant(F64, 1.0), ir.Constant(F64, 0.0))
    q = _cdiv(e, wide, [one, den], op)
    return _narrow(e, et, re(b, q), im(b, q))


@_crule("sign")
def _csign(e, et, a, op):
    """z / |z|, and 0 for 0 (NaN stays NaN through the division)."""
    b = e.b
    r, i = _wide(e, a[0])
    mag = _libc(e, "hypot", [r, i], returns_complex=False)
    is_zero = b.fcmp_ordered("oeq", mag, ir.Constant(F64, 0.0))
    safe = b.select(is_zero, ir.Constant(F64, 1.0), mag)
    return _narrow(e, et, b.fdiv(r, safe), b.fdiv(i, safe))


def _cminmax(is_max: bool):
    def rule_(e, et, a, op):
        return _cpick(e, a, is_max)
    return rule_


def _cpick(e, a, is_max: bool):
    """Lexicographic order on (real, imaginary), as the interpreter orders complex numbers."""
    b = e.b
    x, y = a
    gt = b.or_(b.fcmp_ordered(">", re(b, x), re(b, y)),
               b.and_(b.fcmp_ordered("oeq", re(b, x), re(b, y)), b.fcmp_ordered(">", im(b, x), im(b, y))))
    lt = b.or_(b.fcmp_ordered("<", re(b, x), re(b, y)),
               b.and_(b.fcmp_ordered("oeq", re(b, x), re(b, y)), b.fcmp_ordered("<", im(b, x), im(b, y))))
    return b.select(gt if is_max else lt, x, y)


_crule("maximum")(_cminmax(True))
_crule("minimum")(_cminmax(False))

