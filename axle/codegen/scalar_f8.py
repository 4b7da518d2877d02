"""Small floats on the CPU backend: f8E4M3FN, f8E5M2, f8E4M3FNUZ, f8E5M2FNUZ, f8E4M3B11FNUZ,
f8E4M3, f8E3M4, the exponent-only f8E8M0FNU (powers of two, no sign, no zero; 0xFF is NaN)
and the 6/4-bit f6E2M3FN, f6E3M2FN, f4E2M1FN. "8-bit floats" below means all of these.

Registers hold them as f32, like bf16: every op computes in f32 and the result is rounded
to the small type (`finish`), which for + - * / and sqrt is the correctly rounded result
(f32 has more than twice their precision plus two bits). In memory an element is a byte
(6/4-bit types in its low bits, as ml_dtypes keeps them).

* decode (byte -> f32): a lookup in a table of the 2^bits values made from ml_dtypes;
* encode (f32 -> byte): round to nearest, ties to even, on the f32 bit pattern (normal
  numbers: drop mantissa bits with the carry running into the exponent; subnormals: scale
  to an integer multiple of the smallest subnormal and round), then the type's rules for
  overflow (inf for the IEEE-like types, NaN for the FN / FNUZ ones, the largest value for
  the 6/4-bit types, which have neither), NaN (the type's quiet NaN, with the sign where the
  type has signed NaNs; the 6/4-bit types make it a zero of the opposite sign, as ml_dtypes
  does) and zero (FNUZ types have no -0).
  This is what ml_dtypes' f32 -> f8 cast gives for every f32 (the tests sweep it).
* compare in TOTALORDER reads the 8-bit patterns, as the interpreter does (an FNUZ NaN,
  pattern 0x80, orders as the interpreter's key says, not as an f32 NaN would).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from llvmlite import ir

F32 = ir.FloatType()
I8, I32 = ir.IntType(8), ir.IntType(32)


@dataclass(frozen=True)
class Format:
    name: str
    exponent: int  # exponent bits
    mantissa: int  # mantissa bits (without the implicit one)
    bias: int
    kind: str  # "ieee" (inf and NaNs), "fn" (no inf; S.1111.111 is NaN), "fnuz" (0x80 is the NaN),
    # "sat" (neither inf nor NaN: overflow saturates), "e8m0" (exponent only, unsigned)
    dtype: object
    bits: int = 8


FORMATS = {f.name: f for f in (
    Format("f8E4M3FN", 4, 3, 7, "fn", ml_dtypes.float8_e4m3fn),
    Format("f8E5M2", 5, 2, 15, "ieee", ml_dtypes.float8_e5m2),
    Format("f8E4M3FNUZ", 4, 3, 8, "fnuz", ml_dtypes.float8_e4m3fnuz),
    Format("f8E5M2FNUZ", 5, 2, 16, "fnuz", ml_dtypes.float8_e5m2fnuz),
    Format("f8E4M3B11FNUZ", 4, 3, 11, "fnuz", ml_dtypes.float8_e4m3b11fnuz),
    Format("f8E4M3", 4, 3, 7, "ieee", ml_dtypes.float8_e4m3),
    Format("f8E3M4", 3, 4, 3, "ieee", ml_dtypes.float8_e3m4),
    Format("f6E2M3FN", 2, 3, 1, "sat", ml_dtypes.float6_e2m3fn, 6),
    Format("f6E3M2FN", 3, 2, 3, "sat", ml_dtypes.float6_e3m2fn, 6),
    Format("f4E2M1FN", 2, 1, 1, "sat", ml_dtypes.float4_e2m1fn, 4),
    Format("f8E8M0FNU", 8, 0, 127, "e8m0", ml_dtypes.float8_e8m0fnu),
)}


# The payload marking an f32 NaN made from a small float's NaN pattern (which sits in the
# low 8 bits): 14 bits an f32 NaN from elsewhere matches by chance once in 16384.
NAN_TAG = 0x2A5B << 8
NAN_TAG_MASK = 0x3FFF << 8


def is_f8(et) -> bool:
    return getattr(et, "name", None) in FORMATS


def _table(b: ir.IRBuilder, f: Format):
    """The module's constant table of the 2^bits values as f32 bit patterns. A NaN pattern
    c becomes the quiet f32 NaN of its sign whose payload is NAN_TAG | c, so that a value
    only moved (copied, transposed, bitcast) is stored back as the very same pattern."""
    mod = b.module
    name = f"axle.f8table.{f.name}"
    g = mod.globals.get(name)
    if g is None:
        n = 1 << f.bits
        codes = np.arange(n, dtype=np.uint8)
        values = codes.view(f.dtype).astype(np.float32)
        bits = values.view(np.uint32).copy()
        nan = np.isnan(values)
        sign = np.where(codes & 0x80, np.uint32(0x80000000), np.uint32(0)) if f.bits == 8 else 0
        bits[nan] = (sign | np.uint32(0x7FC00000 | NAN_TAG) | codes.astype(np.uint32))[nan]
        t = ir.ArrayType(I32, n)
        g = ir.GlobalVariable(mod, t, name)
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ir.Constant(t, [ir.Constant(I32, int(v)) for v in bits])
    return g


def decode(b: ir.IRBuilder, code, et):
    """The f32 value of an 8-bit pattern (an i8 register; for 6/4-bit types its low bits)."""
    f = FORMATS[et.name]
    idx = b.zext(code, I32)
    if f.bits < 8:
        idx = b.and_(idx, ir.Constant(I32, (1 << f.bits) - 1))
    return b.bitcast(b.load(b.gep(_table(b, f), [ir.Constant(I32, 0), idx], inbounds=True)), F32)


def encode(b: ir.IRBuilder, x, et):
    """The 8-bit pattern (i8) nearest to the f32 register x (ties to even)."""
    f = FORMATS[et.name]
    M, E, bias = f.mantissa, f.exponent, f.bias

    def c(v):
        return ir.Constant(I32, v)

    bits = b.bitcast(x, I32)
    sign = b.lshr(bits, c(31))
    abits = b.and_(bits, c(0x7FFFFFFF))
    if f.kind == "e8m0":
        return _encode_e8m0(b, bits, abits)
    emin = 1 - bias  # exponent of the smallest normal number
    # normal numbers: round away the low 23 - M mantissa bits (ties to even) and rebias
    shift = 23 - M
    odd = b.and_(b.lshr(abits, c(shift)), c(1))
    r = b.lshr(b.add(abits, b.add(c((1 << (shift - 1)) - 1), odd)), c(shift))
    normal = b.sub(r, c((127 - bias) << M))
    # subnormals: |x| / 2^(emin - M) rounded to an integer (2^M is the smallest normal)
    ax = b.bitcast(abits, F32)
    scaled = b.fmul(ax, ir.Constant(F32, 2.0 ** (M - emin)))
    rint = b.call(b.module.declare_intrinsic("llvm.roundeven", [F32], ir.FunctionType(F32, [F32])), [scaled])
    sub = b.fptosi(rint, I32)
    tiny = b.icmp_unsigned("<", abits, c((127 + emin) << 23))
    code = b.select(tiny, sub, normal)
    nan = b.icmp_unsigned(">", abits, c(0x7F800000))
    if f.kind == "ieee":
        max_code, over = (((1 << E) - 1) << M) - 1, ((1 << E) - 1) << M
        nan_code = over | (1 << (M - 1))
    elif f.kind == "fn":
        max_code, over = (1 << (E + M)) - 2, (1 << (E + M)) - 1
        nan_code = over
    else:
        max_code, over = (1 << (E + M)) - 1, (1 << (E + M)) - 1
        nan_code = None
    overflow = b.icmp_signed(">", code, c(max_code))
    top = f.bits - 1  # the sign bit
    if f.kind == "sat":
        out = b.or_(b.shl(sign, c(top)), b.select(overflow, c(over), code))
        out = b.select(nan, b.shl(b.xor(sign, c(1)), c(top)), out)
    elif f.kind == "fnuz":
        signed = b.or_(b.shl(sign, c(7)), code)
        out = b.select(b.icmp_signed("==", code, c(0)), c(0), signed)  # no -0
        out = b.select(b.or_(nan, overflow), c(0x80), out)
    else:
        code = b.select(overflow, c(over), code)
        if f.kind == "ieee":  # a NaN pattern carried in the payload (see _table) comes back
            low = b.and_(bits, c(0x7F))
            tagged = b.icmp_unsigned("==", b.and_(bits, c(NAN_TAG_MASK)), c(NAN_TAG))
            nan_code = b.select(b.and_(tagged, b.icmp_unsigned(">", low, c(over))), low, c(nan_code))
        else:
            nan_code = c(nan_code)
        code = b.select(nan, nan_code, code)
        out = b.or_(b.shl(sign, c(7)), code)
    return b.trunc(out, I8)


def _encode_e8m0(b: ir.IRBuilder, bits, abits):
    """f8E8M0FNU (2^(code - 127)): the f32 exponent rounded half up on the mantissa, as
    ml_dtypes does; an f32 subnormal above 2^-127 goes to 2^-126, the others to 2^-127; negative numbers, zeros,
    infinities, NaNs and overflows (past 2^127) are the NaN 0xFF."""
    def c(v):
        return ir.Constant(I32, v)

    normal = b.lshr(b.add(abits, c(1 << 22)), c(23))
    tiny = b.zext(b.icmp_unsigned(">", abits, c(0x400000)), I32)  # as ml_dtypes rounds them
    code = b.select(b.icmp_unsigned("<", abits, c(1 << 23)), tiny, normal)
    bad = b.or_(b.icmp_signed("<", bits, c(0)), b.icmp_unsigned(">", code, c(254)))
    bad = b.or_(bad, b.or_(b.icmp_unsigned("==", abits, c(0)), b.icmp_unsigned(">=", abits, c(0x7F800000))))
    return b.trunc(b.select(bad, c(0xFF), code), I8)


def round_f8(b: ir.IRBuilder, x, et):
    """An f32 register rounded to the nearest value of the 8-bit type."""
    return decode(b, encode(b, x, et), et)


def total_order_key(b: ir.IRBuilder, x, et):
    """The interpreter's total-order key of an 8-bit float held in an f32 register:
    magnitude bits, negated (minus one) when the sign bit is set."""
    top = FORMATS[et.name].bits - 1
    code = b.zext(encode(b, x, et), I32)
    if FORMATS[et.name].kind == "e8m0":  # no sign bit: the code is the order
        return code
    mag = b.and_(code, ir.Constant(I32, (1 << top) - 1))
    neg = b.icmp_unsigned("!=", b.and_(code, ir.Constant(I32, 1 << top)), ir.Constant(I32, 0))
    return b.select(neg, b.sub(ir.Constant(I32, -1), mag), mag)


def bitcast(b: ir.IRBuilder, x, src, dst):
    """bitcast_convert between 8-bit types where one side is an 8-bit float (registers: f32
    for those, i8 for 8-bit integers)."""
    if is_f8(src):
        code = encode(b, x, src)
    else:
        code = x if x.type == I8 else b.zext(x, I8)  # i4 registers are 4 bits wide
    if is_f8(dst):
        return decode(b, code, dst)
    width = dst.bitwidth
    return code if width == 8 else b.trunc(code, ir.IntType(width))


def round_to_odd_f32(b: ir.IRBuilder, x):
    """f64 -> f32 rounded to odd (truncate, and set the last bit when inexact): rounding the
    result once more to a type of at most 22 mantissa bits (bf16, 8-bit floats) gives the
    correctly rounded f64, where two roundings to nearest could be off in rare ties."""
    f64 = ir.DoubleType()
    fabs = b.module.declare_intrinsic("llvm.fabs", [f64], ir.FunctionType(f64, [f64]))
    near = b.fptrunc(x, F32)
    back = b.fpext(near, f64)
    ax = b.call(fabs, [x])
    inexact = b.and_(b.fcmp_ordered("<", ax, ir.Constant(f64, float("inf"))), b.fcmp_unordered("!=", back, x))
    away = b.and_(inexact, b.fcmp_ordered(">", b.call(fabs, [back]), ax))
    bits = b.bitcast(near, I32)
    bits = b.select(away, b.sub(bits, ir.Constant(I32, 1)), bits)
    bits = b.select(inexact, b.or_(bits, ir.Constant(I32, 1)), bits)
    return b.bitcast(bits, F32)


def narrow_float(b: ir.IRBuilder, x, dt):
    """fptrunc x to the narrower float type dt, correctly rounded. f64 -> f16 goes through
    f32 rounded to odd: without native f16 conversions (AVX-512 FP16) LLVM lowers the direct
    truncation to a runtime call (__truncdfhf2) that the JIT cannot resolve."""
    if x.type == ir.DoubleType() and dt == ir.HalfType():
        x = round_to_odd_f32(b, x)
    return b.fptrunc(x, dt)


def canonical_nan(b: ir.IRBuilder, x):
    """x with a NaN made the quiet NaN of its sign (what ml_dtypes gives when it widens a
    small float's NaN): a value leaving its small type does not carry the NaN tag."""
    bits = b.bitcast(x, I32)
    sign = b.and_(bits, ir.Constant(I32, 0x80000000))
    quiet = b.bitcast(b.or_(sign, ir.Constant(I32, 0x7FC00000)), F32)
    return b.select(b.fcmp_unordered("uno", x, x), quiet, x)
