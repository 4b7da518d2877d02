"""Scalar code for one element: LLVM types of element types and the per-op scalar rules.

Registers hold f16 as half, f32/f64 as float/double, bf16 as float (rounded to bf16 after
every op, as the spec's bf16 semantics require), integers as iN (signedness chosen per
instruction), i1 as i1. In memory i1 is a byte (numpy's bool) and bf16 is an i16.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import scalar_f8 as _f8
from axle.ir.types import ElementType

F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)


from axle.errors import Unsupported  # noqa: E402  (the one error class every layer raises)


def reg_type(et: ElementType) -> ir.Type:
    if not isinstance(et, ElementType):
        raise Unsupported(f"element type {et}")
    if et.is_complex:  # a {re, im} pair, laid out in memory as numpy does
        part = F32 if et.name == "complex<f32>" else F64
        return ir.LiteralStructType([part, part])
    if et.is_bool:
        return I1
    if et.is_int:
        return ir.IntType(et.bitwidth)  # i2/i4 registers are 2/4 bits wide: LLVM wraps them
    if et.name == "f16":
        return F16
    if et.name in ("f32", "bf16") or _f8.is_f8(et):  # 8-bit floats: scalar_f8.py
        return F32
    if et.name == "f64":
        return F64
    raise Unsupported(f"element type {et}")


def mem_type(et: ElementType) -> ir.Type:
    if et.is_bool or (et.is_int and et.bitwidth < 8):  # ml_dtypes keeps i2/i4 in a byte's low bits
        return I8
    if et.name == "bf16":
        return I16
    if _f8.is_f8(et):
        return I8
    return reg_type(et)


def load(b: ir.IRBuilder, ptr, et: ElementType, metadata: dict = None):
    v = b.load(ptr)
    for kind, node in (metadata or {}).items():  # alias scopes (kernels.py's reductions)
        v.set_metadata(kind, node)
    if et.is_bool:
        return b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    if et.is_int and et.bitwidth < 8:
        return b.trunc(v, ir.IntType(et.bitwidth))
    if et.name == "bf16":
        wide = b.shl(b.zext(v, I32), ir.Constant(I32, 16))
        return b.bitcast(wide, F32)
    if _f8.is_f8(et):
        return _f8.decode(b, v, et)
    return v


def store(b: ir.IRBuilder, value, ptr, et: ElementType, metadata: dict = None):
    if et.is_bool or (et.is_int and et.bitwidth < 8):
        value = b.zext(value, I8)
    elif et.name == "bf16":
        value = b.trunc(b.lshr(b.bitcast(value, I32), ir.Constant(I32, 16)), I16)
    elif _f8.is_f8(et):
        value = _f8.encode(b, value, et)
    st = b.store(value, ptr)
    for kind, node in (metadata or {}).items():
        st.set_metadata(kind, node)


def round_bf16(b: ir.IRBuilder, x):
    """Round an f32 register to the nearest bf16 (ties to even), keeping NaN a NaN."""
    bits = b.bitcast(x, I32)
    lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.add(bits, b.add(ir.Constant(I32, 0x7FFF), lsb))
    cleared = b.and_(rounded, ir.Constant(I32, 0xFFFF0000))
    nan = b.fcmp_unordered("uno", x, x)
    quiet = b.or_(b.and_(bits, ir.Constant(I32, 0xFFFF0000)), ir.Constant(I32, 0x00400000))
    return b.bitcast(b.select(nan, quiet, cleared), F32)


def finish(b: ir.IRBuilder, value, et: ElementType):
    """Bring a freshly computed register to the element type's precision."""
    if et.name == "bf16":
        return round_bf16(b, value)
    if _f8.is_f8(et):
        return _f8.round_f8(b, value, et)
    return value


def constant(et: ElementType, x) -> ir.Constant:
    t = reg_type(et)
    if et.is_complex:
        z = complex(x)
        return ir.Constant(t, [ir.Constant(t.elements[0], z.real), ir.Constant(t.elements[1], z.imag)])
    if et.is_bool:
        return ir.Constant(I1, int(bool(x)))
    if et.is_int:
        v = int(x)
        return ir.Constant(t, v & ((1 << et.bitwidth) - 1))
    return ir.Constant(t, float(x))
