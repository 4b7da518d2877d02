"""bitcast_convert between element types of different widths (the emitter does equal widths).

The spec reads the bits of the whole tensor in order: a result type k times wider takes one
element from k consecutive operand elements along the operand's last dimension (the first
one in the lowest bits); a result type k times narrower adds a last dimension of size k,
element j holding bits [j*w, (j+1)*w) of the operand element. Bit patterns are taken from
registers as the interpreter takes them from memory: bf16 is its 16 stored bits, 8-bit and
smaller floats their stored pattern, i1 one bit, complex numbers the real part's bits then
the imaginary part's.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen import scalar_f8 as F8
from axle.errors import Unsupported


def to_bits(b: ir.IRBuilder, x, et):
    """The bit pattern of register x of element type et, as an i<bitwidth> register."""
    w = et.bitwidth
    t = ir.IntType(w)
    if et.is_complex:
        half = w // 2
        re, im = (to_bits(b, b.extract_value(x, k), et.component) for k in (0, 1))
        return b.or_(b.zext(re, t), b.shl(b.zext(im, t), ir.Constant(t, half)))
    if et.is_bool or et.is_int:
        return x
    if et.name == "bf16":
        return b.trunc(b.lshr(b.bitcast(x, S.I32), ir.Constant(S.I32, 16)), S.I16)
    if F8.is_f8(et):
        code = F8.encode(b, x, et)
        return code if w == 8 else b.trunc(code, t)
    return b.bitcast(x, t)


def from_bits(b: ir.IRBuilder, bits, et):
    """The register of element type et whose bit pattern is `bits` (an i<bitwidth> register)."""
    w = et.bitwidth
    if et.is_complex:
        half = w // 2
        ht = ir.IntType(half)
        re = from_bits(b, b.trunc(bits, ht), et.component)
        im = from_bits(b, b.trunc(b.lshr(bits, ir.Constant(bits.type, half)), ht), et.component)
        z = ir.Constant(S.reg_type(et), ir.Undefined)
        return b.insert_value(b.insert_value(z, re, 0), im, 1)
    if et.is_bool or et.is_int:
        return bits
    if et.name == "bf16":
        return b.bitcast(b.shl(b.zext(bits, S.I32), ir.Constant(S.I32, 16)), S.F32)
    if F8.is_f8(et):
        return F8.decode(b, bits if w == 8 else b.zext(bits, S.I8), et)
    return b.bitcast(bits, S.reg_type(et))


def bitcast_wide(em, op, idx):
    """One element of a width-changing bitcast_convert (called by the emitter, which has
    checked that operand and result are static tensors)."""
    b = em.b
    src_v = op.operands[0]
    src, dst = src_v.type.element_type, op.results[0].type.element_type
    for et in (src, dst):
        S.reg_type(et)  # Unsupported for types without registers
    sw, dw = src.bitwidth, dst.bitwidth
    if dw == sw:
        return from_bits(b, to_bits(b, em.value_at(src_v, list(idx)), src), dst)
    if dw > sw:
        if dw % sw:
            raise Unsupported(f"bitcast_convert {src} -> {dst}")
        k = dw // sw
        t = ir.IntType(dw)
        acc = ir.Constant(t, 0)
        for j in range(k):
            part = to_bits(b, em.value_at(src_v, list(idx) + [em.const_i64(j)]), src)
            acc = b.or_(acc, b.shl(b.zext(part, t), ir.Constant(t, j * sw)))
        return from_bits(b, acc, dst)
    if sw % dw:
        raise Unsupported(f"bitcast_convert {src} -> {dst}")
    bits = to_bits(b, em.value_at(src_v, list(idx[:-1])), src)
    t = bits.type
    j = idx[-1]
    j = b.trunc(j, t) if t.width < 64 else (b.zext(j, t) if t.width > 64 else j)
    shifted = b.lshr(bits, b.mul(j, ir.Constant(t, dw)))
    return from_bits(b, b.trunc(shifted, ir.IntType(dw)), dst)
