"""Reading and writing the payload of `dense<...>` element attributes."""
from __future__ import annotations

import numpy as np

from axle.ir.float_text import format_float
from axle.ir.types import ElementType, QuantizedType, TensorType

HEX_THRESHOLD = 16  # tensors with more elements are printed as hex strings, like MLIR


def storage_type(t: TensorType) -> ElementType:
    et = t.element_type
    return et.storage_type if isinstance(et, QuantizedType) else et


def _float_bits_dtype(et: ElementType):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(et.np_dtype).itemsize]


def float_from_hex(text: str, et: ElementType) -> float:
    """A float element given as `0x7FC00000`: the bit pattern of the element type."""
    bits = int(text, 16)
    dt = np.dtype(et.np_dtype)
    return np.array([bits], dtype=_float_bits_dtype(et)).view(dt)[0]


def format_scalar(x, et: ElementType) -> str:
    if et.is_bool:
        return "true" if x else "false"
    if et.is_int:
        return str(int(x))
    if et.is_complex:
        c = et.component
        return f"({format_scalar(x.real, c)}, {format_scalar(x.imag, c)})"
    f = float(x)
    if np.isnan(f) or np.isinf(f):
        dt = np.dtype(et.np_dtype)
        bits = np.array([x], dtype=dt).view(_float_bits_dtype(et))[0]
        width = dt.itemsize * 2
        return f"0x{int(bits):0{width}X}"
    return format_float(f)


def hex_bytes(array: np.ndarray) -> str:
    a = np.ascontiguousarray(array)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    return "0x" + a.tobytes().hex().upper()


def format_dense(array: np.ndarray, t: TensorType) -> str:
    """The `dense<...>` text for `array` of tensor type `t`."""
    et = storage_type(t)
    if array.size == 0:
        return "dense<>" if array.ndim > 0 else "dense<>"
    if array.size > 1 and all(st == 0 for st in array.strides):  # a lazy splat: never copy it
        return f"dense<{format_scalar(array.reshape(-1)[0], et)}>"
    flat = np.ascontiguousarray(array).reshape(-1)
    rows = flat.view(np.uint8).reshape(flat.size, -1)
    if flat.size > 1 and bool(np.all(rows == rows[:1])):
        return f"dense<{format_scalar(flat[0], et)}>"
    if array.ndim == 0:
        return f"dense<{format_scalar(flat[0], et)}>"
    if flat.size > HEX_THRESHOLD and not et.is_bool and et.bitwidth >= 8:
        return f'dense<"{hex_bytes(array)}">'

    def nested(a):
        if a.ndim == 0:
            return format_scalar(a[()], et)
        return "[" + ", ".join(nested(x) for x in a) + "]"

    return f"dense<{nested(array)}>"


def array_from_hex(data: bytes, t: TensorType) -> np.ndarray:
    """Decode the bytes of a hex dense literal; one element's worth means a splat."""
    et = storage_type(t)
    dt = np.dtype(et.np_dtype)
    shape = tuple(t.shape)
    n = int(np.prod(shape, dtype=np.int64))
    item = 1 if et.is_bool else dt.itemsize
    if len(data) == item and n != 1:
        raw = np.frombuffer(data, dtype=np.uint8 if et.is_bool else dt)
        one = raw[:1].reshape(()).astype(np.bool_) if et.is_bool else raw[:1].reshape(())
        return np.broadcast_to(one, shape)  # a lazy splat, like the parser's
    if len(data) != n * item:
        raise ValueError(f"hex data has {len(data)} bytes; {t} needs {n * item}")
    if et.is_bool:
        return np.frombuffer(data, dtype=np.uint8).astype(np.bool_).reshape(shape)
    out = np.frombuffer(data, dtype=dt).reshape(shape).copy()
    if et.is_int and et.bitwidth < 8:
        # one sub-byte element per byte: bits above the element's (0xF8 for the i4 -8) are
        # not part of the value; keep the canonical byte, or equal constants differ
        out = out.astype(np.int16 if not et.is_unsigned else np.uint16).astype(dt)
    return out
