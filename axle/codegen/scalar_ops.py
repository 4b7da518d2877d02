"""Per-op scalar rules of the elemental emitter: one small function per StableHLO op.

Each rule is `rule(e, et, args, op) -> register` where `e` is the Emitter (builder and
helpers), `et` the element type of the operands (for compare/convert the types differ:
see the rule) and `args` the operand registers. Integer division and shifts guard the
cases LLVM leaves undefined, with the results the interpreter gives.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import fastmath, fastmath_f64
from axle.codegen.scalar import F32, F64, I1, I32, reg_type
from axle.codegen.scalar_f8 import canonical_nan, is_f8, narrow_float, round_to_odd_f32
from axle.errors import Unsupported

RULES = {}
COMPLEX_RULES = {}  # op name -> rule for complex operands (see the end of this file)


def rule(*names):
    """Register a scalar rule; complex operands are sent to COMPLEX_RULES instead."""
    def deco(fn):
        for n in names:
            RULES["stablehlo." + n] = _dispatcher("stablehlo." + n, fn)
        return fn
    return deco


def _dispatcher(name: str, fn):
    def dispatch(e, et, a, op):
        if getattr(et, "is_complex", False):
            c = COMPLEX_RULES.get(name)
            if c is None:
                raise Unsupported(f"{name} on {et} (in {op.where()})")
            return c(e, et, a, op)
        return fn(e, et, a, op)
    dispatch.__name__ = fn.__name__
    return dispatch


def _is_float(et) -> bool:
    return et.is_float


# ---------------------------------------------------------------- arithmetic


@rule("add")
def _add(e, et, a, op):
    return e.b.fadd(*a) if _is_float(et) else (e.b.or_(*a) if et.is_bool else e.b.add(*a))


@rule("subtract")
def _sub(e, et, a, op):
    return e.b.fsub(*a) if _is_float(et) else e.b.sub(*a)


@rule("multiply")
def _mul(e, et, a, op):
    return e.b.fmul(*a) if _is_float(et) else (e.b.and_(*a) if et.is_bool else e.b.mul(*a))


@rule("divide")
def _div(e, et, a, op):
    b = e.b
    if _is_float(et):
        return b.fdiv(*a)
    x, y = a
    t = x.type
    zero, one, ones = ir.Constant(t, 0), ir.Constant(t, 1), ir.Constant(t, -1)
    by_zero = b.icmp_unsigned("==", y, zero)
    if et.is_unsigned:
        q = b.udiv(x, b.select(by_zero, one, y))
        return b.select(by_zero, ones, q)
    minv = ir.Constant(t, 1 << (et.bitwidth - 1))
    overflow = b.and_(b.icmp_signed("==", x, minv), b.icmp_signed("==", y, ones))
    bad = b.or_(by_zero, overflow)
    q = b.sdiv(x, b.select(bad, one, y))
    return b.select(by_zero, ones, b.select(overflow, minv, q))


@rule("remainder")
def _rem(e, et, a, op):
    b = e.b
    if _is_float(et):
        return b.frem(*a)
    x, y = a
    t = x.type
    zero, one, ones = ir.Constant(t, 0), ir.Constant(t, 1), ir.Constant(t, -1)
    by_zero = b.icmp_unsigned("==", y, zero)
    if et.is_unsigned:
        return b.select(by_zero, x, b.urem(x, b.select(by_zero, one, y)))
    minv = ir.Constant(t, 1 << (et.bitwidth - 1))
    overflow = b.and_(b.icmp_signed("==", x, minv), b.icmp_signed("==", y, ones))
    r = b.srem(x, b.select(b.or_(by_zero, overflow), one, y))
    return b.select(by_zero, x, b.select(overflow, zero, r))


def _minmax(e, et, a, is_max):
    b = e.b
    if _is_float(et):
        return e.intrinsic("llvm.maximum" if is_max else "llvm.minimum", a[0].type, a)
    if et.is_bool or et.is_unsigned:
        c = b.icmp_unsigned(">" if is_max else "<", *a)
    else:
        c = b.icmp_signed(">" if is_max else "<", *a)
    return b.select(c, a[0], a[1])


@rule("maximum")
def _max(e, et, a, op):
    return _minmax(e, et, a, True)


@rule("minimum")
def _min(e, et, a, op):
    return _minmax(e, et, a, False)


@rule("negate")
def _neg(e, et, a, op):
    return e.b.fneg(a[0]) if _is_float(et) else e.b.sub(ir.Constant(a[0].type, 0), a[0])


@rule("abs")
def _abs(e, et, a, op):
    if _is_float(et):
        return e.intrinsic("llvm.fabs", a[0].type, a)
    if et.is_unsigned:
        return a[0]
    x = a[0]
    return e.b.select(e.b.icmp_signed("<", x, ir.Constant(x.type, 0)), e.b.sub(ir.Constant(x.type, 0), x), x)


@rule("sign")
def _sign(e, et, a, op):
    b, x = e.b, a[0]
    t = x.type
    if _is_float(et):
        one, mone = ir.Constant(t, 1.0), ir.Constant(t, -1.0)
        return b.select(b.fcmp_ordered(">", x, ir.Constant(t, 0.0)), one,
                        b.select(b.fcmp_ordered("<", x, ir.Constant(t, 0.0)), mone, x))
    if et.is_unsigned:
        return b.zext(b.icmp_unsigned("!=", x, ir.Constant(t, 0)), t)
    pos = b.zext(b.icmp_signed(">", x, ir.Constant(t, 0)), t)
    neg = b.zext(b.icmp_signed("<", x, ir.Constant(t, 0)), t)
    return b.sub(pos, neg)


# ---------------------------------------------------------------- math functions

_INTRINSIC_MATH = {"sqrt": "llvm.sqrt", "exponential": "llvm.exp", "log": "llvm.log", "sine": "llvm.sin",
                   "cosine": "llvm.cos", "floor": "llvm.floor", "ceil": "llvm.ceil",
                   "round_nearest_even": "llvm.roundeven", "round_nearest_afz": "llvm.round"}
_LIBM = {"tanh": "tanh", "exponential_minus_one": "expm1", "log_plus_one": "log1p", "tan": "tan",
         "cbrt": "cbrt"}


def _math(name):
    def fn(e, et, a, op):
        if not _is_float(et):
            raise Unsupported(f"stablehlo.{name} on {et}")
        fast = fastmath.FUNCTIONS.get("stablehlo." + name)
        if fast is not None and fastmath.applies(a[0]):  # f32/f16/bf16: vectorizable code
            return fastmath.apply(e, fast, a[0])
        if name == "tanh" and str(a[0].type) == "double":
            return fastmath_f64.tanh_f64(e, a[0])
        if name in _INTRINSIC_MATH:
            return e.intrinsic(_INTRINSIC_MATH[name], a[0].type, a)
        return e.libm(_LIBM[name], a)
    return fn


for _n in list(_INTRINSIC_MATH) + list(_LIBM):
    rule(_n)(_math(_n))


@rule("round_nearest_afz")
def _round_afz(e, et, a, op):
    """Round half away from zero as trunc(x), plus sign(x) where |x - trunc(x)| >= 1/2 (both
    exact): vectorizes, where llvm.round has no x86 instruction and becomes a call of
    roundf per element. Infinities and NaN: x - trunc(x) is NaN, so trunc(x) (x) is kept;
    -0.3 gives -0, like roundf."""
    if not _is_float(et):
        raise Unsupported(f"stablehlo.round_nearest_afz on {et}")
    b, x = e.b, a[0]
    t = e.intrinsic("llvm.trunc", x.type, [x])
    d = e.intrinsic("llvm.fabs", x.type, [b.fsub(x, t)])
    step = e.intrinsic("llvm.copysign", x.type, [ir.Constant(x.type, 1.0), x])
    return b.select(b.fcmp_ordered(">=", d, ir.Constant(x.type, 0.5)), b.fadd(t, step), t)


@rule("rsqrt")
def _rsqrt(e, et, a, op):
    s = e.intrinsic("llvm.sqrt", a[0].type, a)
    return e.b.fdiv(ir.Constant(a[0].type, 1.0), s)


@rule("logistic")
def _logistic(e, et, a, op):
    t = a[0].type
    if fastmath.applies(a[0]):
        return fastmath.apply(e, fastmath.logistic, a[0])
    ex = e.intrinsic("llvm.exp", t, [e.b.fneg(a[0])])
    return e.b.fdiv(ir.Constant(t, 1.0), e.b.fadd(ir.Constant(t, 1.0), ex))


@rule("atan2")
def _atan2(e, et, a, op):
    if fastmath.applies(a[0]):  # f32 (bf16) and f16: vectorized, in f64 (fastmath.py)
        odd = et.name in ("bf16", "f16")  # rounded again to et: the first rounding to odd
        return fastmath.apply(e, lambda e_, y, x: fastmath.atan2(e_, y, x, odd), *a)
    return e.libm("atan2", a)


@rule("power")
def _pow(e, et, a, op):
    if _is_float(et):
        if fastmath.applies(a[0]):  # f32/f16/bf16: vectorizable code
            return fastmath.apply(e, fastmath.power, *a)
        return e.intrinsic("llvm.pow", a[0].type, a)
    if et.is_bool:
        raise Unsupported("stablehlo.power on i1")
    # integers: square-and-multiply over every bit of the exponent (no data-dependent
    # branches); a negative exponent gives 0 unless |base| is 1 (the interpreter's rule)
    b = e.b
    x, n = a
    t = x.type
    one, zero = ir.Constant(t, 1), ir.Constant(t, 0)
    result, base = one, x
    for k in range(et.bitwidth):
        bit = b.icmp_unsigned("!=", b.and_(b.lshr(n, ir.Constant(t, k)), one), zero)
        result = b.select(bit, b.mul(result, base), result)
        base = b.mul(base, base)
    if et.is_unsigned:
        return result
    negative = b.icmp_signed("<", n, zero)
    odd = b.icmp_unsigned("!=", b.and_(n, one), zero)
    minus_one = ir.Constant(t, -1)
    small = b.select(b.icmp_signed("==", x, one), one,
                     b.select(b.icmp_signed("==", x, minus_one), b.select(odd, minus_one, one), zero))
    return b.select(negative, small, result)


@rule("is_finite")
def _is_finite(e, et, a, op):
    x = a[0]
    ax = e.intrinsic("llvm.fabs", x.type, [x])
    return e.b.fcmp_ordered("<", ax, ir.Constant(x.type, float("inf")))


# ---------------------------------------------------------------- bits


@rule("and")
def _and(e, et, a, op):
    return e.b.and_(*a)


@rule("or")
def _or(e, et, a, op):
    return e.b.or_(*a)


@rule("xor")
def _xor(e, et, a, op):
    return e.b.xor(*a)


@rule("not")
def _not(e, et, a, op):
    return e.b.not_(a[0])


@rule("popcnt")
def _popcnt(e, et, a, op):
    return e.intrinsic("llvm.ctpop", a[0].type, a)


@rule("count_leading_zeros")
def _clz(e, et, a, op):
    t = a[0].type
    fn = e.module.declare_intrinsic("llvm.ctlz", [t], ir.FunctionType(t, [t, I1]))
    return e.b.call(fn, [a[0], ir.Constant(I1, 0)])


def _shift(kind):
    def fn(e, et, a, op):
        b = e.b
        x, n = a
        t = x.type
        big = b.icmp_unsigned(">=", n, ir.Constant(t, et.bitwidth))
        safe = b.select(big, ir.Constant(t, 0), n)
        if kind == "shl":
            return b.select(big, ir.Constant(t, 0), b.shl(x, safe))
        if kind == "lshr":
            return b.select(big, ir.Constant(t, 0), b.lshr(x, safe))
        fill = b.ashr(x, ir.Constant(t, et.bitwidth - 1))
        return b.select(big, fill, b.ashr(x, safe))
    return fn


rule("shift_left")(_shift("shl"))
rule("shift_right_logical")(_shift("lshr"))
rule("shift_right_arithmetic")(_shift("ashr"))


# ---------------------------------------------------------------- compare, select, clamp

_FCMP = {"EQ": ("oeq", True), "NE": ("une", False), "LT": ("olt", True), "LE": ("ole", True),
         "GT": ("ogt", True), "GE": ("oge", True)}
_ICMP = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


@rule("compare")
def _compare(e, et, a, op):
    b = e.b
    direction = op.attr("comparison_direction")
    ctype = op.attr("compare_type")
    if _is_float(et):
        if ctype == "TOTALORDER":  # IEEE total order: compare sign-magnitude bits as integers
            keys = [_total_order_key(b, x) for x in a]
            return b.icmp_signed(_ICMP[direction], *keys)
        pred, ordered = _FCMP[direction]
        return b.fcmp_ordered(pred, *a) if ordered else b.fcmp_unordered(pred, *a)
    if et.is_bool or et.is_unsigned:
        return b.icmp_unsigned(_ICMP[direction], *a)
    return b.icmp_signed(_ICMP[direction], *a)


def _total_order_key(b, x):
    """An integer that orders like IEEE totalOrder: negative floats get their magnitude
    bits flipped (so -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN)."""
    bits = {"half": 16, "float": 32, "double": 64}[str(x.type)]
    t = ir.IntType(bits)
    s = b.bitcast(x, t)
    flipped = b.xor(s, ir.Constant(t, (1 << (bits - 1)) - 1))
    return b.select(b.icmp_signed("<", s, ir.Constant(t, 0)), flipped, s)


@rule("select")
def _select(e, et, a, op):
    return e.b.select(*a)


@rule("clamp")
def _clamp(e, et, a, op):
    lo, x, hi = a
    return _minmax(e, et, [_minmax(e, et, [x, lo], True), hi], False)


# ---------------------------------------------------------------- conversions


def convert(e, src, dst, x):
    """Convert register x from element type src to dst (spec: convert)."""
    b = e.b
    if src.is_complex or dst.is_complex:
        return _convert_complex(e, src, dst, x)
    st, dt = reg_type(src), reg_type(dst)
    if dst.is_bool:
        if src.is_float:
            return b.fcmp_unordered("une", x, ir.Constant(st, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(st, 0))
    if src.is_bool:
        return b.uitofp(x, dt) if dst.is_float else b.zext(x, dt)
    if src.is_float and dst.is_float:
        if src != dst and is_f8(src):  # a small float's NaN leaves its tag behind
            x = canonical_nan(b, x)
        if st == dt:
            return x
        if st == F64 and dt == F32 and dst.name != "f32":  # bf16, f8: f32 is not the end
            return round_to_odd_f32(b, x)
        return b.fpext(x, dt) if _fbits(st) < _fbits(dt) else narrow_float(b, x, dt)
    if src.is_int and dst.is_float:
        return b.uitofp(x, dt) if src.is_unsigned else b.sitofp(x, dt)
    if src.is_float and dst.is_int:
        if dst.bitwidth <= 32:
            return _float_to_int_saturating(b, x, st, dt, dst.is_unsigned, dst.bitwidth)
        name = "llvm.fptoui.sat" if dst.is_unsigned else "llvm.fptosi.sat"
        fn = e.module.declare_intrinsic(name, [dt, st], ir.FunctionType(dt, [st]))
        return b.call(fn, [x])
    if src.is_int and dst.is_int:
        if src.bitwidth == dst.bitwidth:
            return x
        if src.bitwidth > dst.bitwidth:
            return b.trunc(x, dt)
        return b.zext(x, dt) if src.is_unsigned else b.sext(x, dt)
    raise Unsupported(f"convert {src} -> {dst}")


def _float_to_int_saturating(b, x, st, dt, unsigned: bool, bits: int):
    """Truncation toward zero, saturating at the integer type's bounds, NaN to 0 (what
    llvm.fpto[su]i.sat computes, and XLA's CPU conversions): out-of-range lanes are set to 0
    before a plain fpto[su]i (which then never sees a value it leaves undefined) and replaced
    by the bounds after it. x86 lowers the intrinsic's vector form lane by lane (a float to
    int32 conversion of 1M elements: 1.6 ms against 0.2 for an add); this form vectorizes
    to cvttps2dq and selects. Every bound is a power of two, exact in any float type."""
    lo = 0.0 if unsigned else -float(2 ** (bits - 1))
    hi = float(2 ** bits) if unsigned else float(2 ** (bits - 1))
    zero = ir.Constant(st, 0.0)
    if str(st) == "half":  # bounds beyond f16's range: only the infinities reach them
        lo, hi = (lo if lo >= -65504.0 else float("-inf")), (hi if hi <= 65504.0 else float("inf"))
    small = b.fcmp_ordered("<=" if unsigned or lo == float("-inf") else "<", x,
                           ir.Constant(st, -1.0 if unsigned else lo))
    big = b.fcmp_ordered(">=", x, ir.Constant(st, hi))
    bad = b.or_(b.or_(small, big), b.fcmp_unordered("uno", x, x))
    safe = b.select(bad, zero, x)
    r = b.fptoui(safe, dt) if unsigned else b.fptosi(safe, dt)
    top = (2 ** bits - 1) if unsigned else (2 ** (bits - 1) - 1)
    r = b.select(big, ir.Constant(dt, top), r)
    return b.select(small, ir.Constant(dt, 0 if unsigned else -(2 ** (bits - 1))), r)


def _fbits(t) -> int:
    return {"half": 16, "float": 32, "double": 64}[str(t)]



# ---------------------------------------------------------------- CHLO functions from libm
# Real CHLO special functions that the C library computes accurately (f16/bf16 go through
# f32 and are rounded once). Complex operands are not supported here.

_CHLO_LIBM = {"erf": "erf", "erfc": "erfc", "lgamma": "lgamma", "asin": "asin", "acos": "acos",
              "atan": "atan", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "tan": "tan"}
# Not sinh/cosh: the suites' f32 expectations carry the rounding of CHLO's own decomposition,
# which libm's correctly rounded values miss by 2-4 ulps; they stay unsupported until the
# decomposition is emitted.


def _chlo_libm(fname):
    def fn(e, et, a, op):
        if not _is_float(et):
            raise Unsupported(f"chlo.{fname} on {et}")
        fast = fastmath.FUNCTIONS.get("chlo." + fname)
        if fast is not None and fastmath.applies(a[0]):  # f32/f16/bf16: vectorizable code
            return fastmath.apply(e, fast, a[0])
        return e.libm(fname, a)
    return fn


for _n, _f in _CHLO_LIBM.items():
    RULES["chlo." + _n] = _dispatcher("chlo." + _n, _chlo_libm(_f))


def _next_after(e, et, a, op):
    if not _is_float(et):
        raise Unsupported(f"chlo.next_after on {et}")
    if et.name not in ("f16", "bf16", "f32", "f64"):
        return e.libm("nextafter", a)
    return _next_after_bits(e.b, et, *a)


def _next_after_bits(b, et, x, y):
    """C's nextafter on the bit patterns of `et` itself: computing it in a wider type and
    rounding back gave -inf for nextafter(-inf, 0) and 0 for nextafter(-0, 1) on f16/bf16.
    bf16 registers are f32 with 16 zero low bits: their top half is the bf16 pattern."""
    n = et.bitwidth
    it = ir.IntType(n)
    zero = ir.Constant(x.type, 0.0)

    def bits(v):
        if et.name == "bf16":
            return b.trunc(b.lshr(b.bitcast(v, I32), ir.Constant(I32, 16)), it)
        return b.bitcast(v, it)

    def value(i):
        if et.name == "bf16":
            return b.bitcast(b.shl(b.zext(i, I32), ir.Constant(I32, 16)), x.type)
        return b.bitcast(i, x.type)

    xi, yi = bits(x), bits(y)
    one = ir.Constant(it, 1)
    # away from zero when x > 0 and y > x, or x < 0 and y < x: the magnitude grows
    grow = b.icmp_unsigned("==", b.fcmp_ordered(">", x, zero), b.fcmp_ordered("<", x, y))
    step = b.select(grow, b.add(xi, one), b.sub(xi, one))
    tiniest = b.or_(b.and_(yi, ir.Constant(it, 1 << (n - 1))), one)  # toward y's sign
    r = b.select(b.fcmp_ordered("==", x, zero), tiniest, step)
    r = b.select(b.fcmp_ordered("==", x, y), yi, r)
    return b.select(b.fcmp_unordered("uno", x, y), b.fadd(x, y), value(r))


RULES["chlo.next_after"] = _dispatcher("chlo.next_after", _next_after)


# ---------------------------------------------------------------- reduce_precision

_FLOAT_BITS = {"f16": (16, 5, 10), "bf16": (16, 8, 7), "f32": (32, 8, 23), "f64": (64, 11, 52)}


@rule("reduce_precision")
def _reduce_precision(e, et, a, op):
    """Round the mantissa to `mantissa_bits` (ties to even) and flush exponents outside
    `exponent_bits` to +-0 / +-inf, on the element type's own bit pattern; NaN stays NaN
    (becomes inf when no mantissa bits are kept)."""
    if et.name not in _FLOAT_BITS:
        raise Unsupported(f"stablehlo.reduce_precision on {et}")
    b = e.b
    width, src_e, src_m = _FLOAT_BITS[et.name]
    t = ir.IntType(width)
    x = a[0]
    if et.name == "bf16":
        bits = b.trunc(b.lshr(b.bitcast(x, ir.IntType(32)), ir.Constant(ir.IntType(32), 16)), t)
    else:
        bits = b.bitcast(x, t)
    exp_bits, man_bits = op.attr("exponent_bits"), op.attr("mantissa_bits")

    def c(v):
        return ir.Constant(t, v & ((1 << width) - 1))

    if man_bits < src_m:
        dropped = src_m - man_bits
        last = b.lshr(b.and_(bits, c(1 << dropped)), c(dropped))
        bias = b.add(last, c((1 << (dropped - 1)) - 1))
        bits = b.and_(b.add(bits, bias), c(~((1 << dropped) - 1)))
    if exp_bits < src_e:
        exp_mask = ((1 << src_e) - 1) << src_m
        ebias = (1 << (src_e - 1)) - 1
        rbias = (1 << (exp_bits - 1)) - 1
        exponent = b.and_(bits, c(exp_mask))
        signed_zero = b.and_(bits, c(1 << (width - 1)))
        bits = b.select(b.icmp_unsigned(">", exponent, c((ebias + rbias) << src_m)),
                        b.or_(signed_zero, c(exp_mask)), bits)
        bits = b.select(b.icmp_unsigned("<=", exponent, c((ebias - rbias) << src_m)), signed_zero, bits)
    if et.name == "bf16":
        out = b.bitcast(b.shl(b.zext(bits, ir.IntType(32)), ir.Constant(ir.IntType(32), 16)), x.type)
    else:
        out = b.bitcast(bits, x.type)
    nan = b.fcmp_unordered("uno", x, x)
    return b.select(nan, x if man_bits > 0 else ir.Constant(x.type, float("inf")), out)


def re(b, z):
    return b.extract_value(z, 0)


def im(b, z):
    return b.extract_value(z, 1)


def make(b, t, r, i):
    z = ir.Constant(t, ir.Undefined)
    return b.insert_value(b.insert_value(z, r, 0), i, 1)


def _wide(e, z):
    """(re, im) of z as doubles."""
    b = e.b
    r, i = re(b, z), im(b, z)
    if str(r.type) == "float":
        r, i = b.fpext(r, F64), b.fpext(i, F64)
    return r, i


def _narrow(e, et, r, i):
    b = e.b
    t = reg_type(et)
    part = t.elements[0]
    if str(part) == "float":
        r, i = b.fptrunc(r, part), b.fptrunc(i, part)
    return make(b, t, r, i)


def _convert_complex(e, src, dst, x):
    b = e.b
    if src.is_complex and dst.is_complex:
        r, i = _wide(e, x)
        return _narrow(e, dst, r, i)
    if dst.is_complex:  # real -> complex: imaginary part 0
        comp = dst.component
        r = convert(e, src, comp, x)
        return make(b, reg_type(dst), r, ir.Constant(reg_type(comp), 0.0))
    return convert(e, src.component, dst, re(b, x))  # complex -> real: the real part
