"""Types of the StableHLO type system.

Element types map to numpy dtypes (ml_dtypes for bf16, the f8/f6/f4 families and the
sub-byte integers). Types are immutable and hashable; equal types compare equal, so
modules can be compared structurally.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import ml_dtypes
import numpy as np

DYNAMIC = None  # a `?` dimension


class Type:
    """Base class of every type."""

    def __str__(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


# ---------------------------------------------------------------- element types


@dataclass(frozen=True)
class ElementType(Type):
    """A scalar element type: integer, boolean, float or complex.

    `name` is the MLIR spelling (`i32`, `ui8`, `f32`, `bf16`, `f8E4M3FN`, `complex<f32>`).
    """

    name: str
    kind: str  # "bool" | "int" | "uint" | "float" | "complex" | "index"
    bitwidth: int
    np_dtype: np.dtype = field(compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        return self.name

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_int(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.kind in ("int", "uint", "index")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "index")

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "uint"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def dtype(self) -> np.dtype:
        return self.np_dtype

    @property
    def component(self) -> "ElementType":
        """For complex<fN> the real element type fN; otherwise self."""
        if self.kind == "complex":
            return ELEMENT_TYPES[self.name[len("complex<"):-1]]
        return self


def _mk(name: str, kind: str, bits: int, dtype) -> ElementType:
    return ElementType(name, kind, bits, np.dtype(dtype))


_FLOATS = [
    ("f16", 16, np.float16), ("bf16", 16, ml_dtypes.bfloat16), ("f32", 32, np.float32),
    ("f64", 64, np.float64),
    ("f8E4M3FN", 8, ml_dtypes.float8_e4m3fn), ("f8E5M2", 8, ml_dtypes.float8_e5m2),
    ("f8E4M3FNUZ", 8, ml_dtypes.float8_e4m3fnuz), ("f8E5M2FNUZ", 8, ml_dtypes.float8_e5m2fnuz),
    ("f8E4M3B11FNUZ", 8, ml_dtypes.float8_e4m3b11fnuz), ("f8E4M3", 8, ml_dtypes.float8_e4m3),
    ("f8E3M4", 8, ml_dtypes.float8_e3m4), ("f8E8M0FNU", 8, ml_dtypes.float8_e8m0fnu),
    ("f4E2M1FN", 4, ml_dtypes.float4_e2m1fn), ("f6E2M3FN", 6, ml_dtypes.float6_e2m3fn),
    ("f6E3M2FN", 6, ml_dtypes.float6_e3m2fn),
]
_INTS = [(2, ml_dtypes.int2, ml_dtypes.uint2), (4, ml_dtypes.int4, ml_dtypes.uint4),
         (8, np.int8, np.uint8), (16, np.int16, np.uint16), (32, np.int32, np.uint32),
         (64, np.int64, np.uint64)]

ELEMENT_TYPES: dict[str, ElementType] = {"i1": _mk("i1", "bool", 1, np.bool_),
                                         "index": _mk("index", "index", 64, np.int64)}
for _bits, _s, _u in _INTS:
    ELEMENT_TYPES[f"i{_bits}"] = _mk(f"i{_bits}", "int", _bits, _s)
    ELEMENT_TYPES[f"ui{_bits}"] = _mk(f"ui{_bits}", "uint", _bits, _u)
for _name, _bits, _dt in _FLOATS:
    ELEMENT_TYPES[_name] = _mk(_name, "float", _bits, _dt)
ELEMENT_TYPES["complex<f32>"] = _mk("complex<f32>", "complex", 64, np.complex64)
ELEMENT_TYPES["complex<f64>"] = _mk("complex<f64>", "complex", 128, np.complex128)
# `si32` spellings are accepted by the parser and mean the same as `i32`.

i1 = ELEMENT_TYPES["i1"]
i8, i16, i32, i64 = (ELEMENT_TYPES[f"i{b}"] for b in (8, 16, 32, 64))
ui8, ui32, ui64 = (ELEMENT_TYPES[f"ui{b}"] for b in (8, 32, 64))
f16, bf16, f32, f64 = (ELEMENT_TYPES[n] for n in ("f16", "bf16", "f32", "f64"))
c64, c128 = ELEMENT_TYPES["complex<f32>"], ELEMENT_TYPES["complex<f64>"]


def element_type(name: str) -> ElementType:
    """Look up an element type by its MLIR name (`si8` is an alias of `i8`)."""
    if name.startswith("si") and name[2:].isdigit():
        name = "i" + name[2:]
    return ELEMENT_TYPES[name]


_BY_DTYPE = {}
for _et in ELEMENT_TYPES.values():
    if _et.kind != "index":
        _BY_DTYPE.setdefault(_et.np_dtype, _et)


def element_type_of(dtype) -> ElementType:
    """The element type whose numpy dtype is `dtype`."""
    dt = np.dtype(dtype)
    try:
        return _BY_DTYPE[dt]
    except KeyError:
        raise TypeError(f"no StableHLO element type for numpy dtype {dt}") from None


# ---------------------------------------------------------------- quantized types


@dataclass(frozen=True)
class QuantizedType(Type):
    """`!quant.uniform<storage[:min:max]:expressed[:axis], scale:zp | {s:zp, ...}>`.

    Per-tensor when `quantized_dimension` is None (one scale and zero point), per-axis
    otherwise.
    """

    storage_type: ElementType
    expressed_type: ElementType
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    quantized_dimension: Optional[int] = None
    storage_min: Optional[int] = None
    storage_max: Optional[int] = None

    @property
    def name(self) -> str:
        return str(self)

    kind = "quant"
    is_bool = is_int = is_float = is_complex = is_unsigned = False

    @property
    def np_dtype(self) -> np.dtype:
        return self.storage_type.np_dtype

    dtype = np_dtype

    @property
    def bitwidth(self) -> int:
        return self.storage_type.bitwidth

    @property
    def min_value(self) -> int:
        if self.storage_min is not None:
            return self.storage_min
        return _int_range(self.storage_type)[0]

    @property
    def max_value(self) -> int:
        if self.storage_max is not None:
            return self.storage_max
        return _int_range(self.storage_type)[1]

    def __str__(self) -> str:
        st = self.storage_type.name
        if self.storage_min is not None:
            st += f"<{self.storage_min}:{self.storage_max}>"
        s = f"{st}:{self.expressed_type.name}"
        if self.quantized_dimension is not None:
            s += f":{self.quantized_dimension}"
            params = ",".join(f"{_fmt_scale(sc)}:{zp}" for sc, zp in zip(self.scales, self.zero_points))
            return f"!quant.uniform<{s}, {{{params}}}>"
        return f"!quant.uniform<{s}, {_fmt_scale(self.scales[0])}:{self.zero_points[0]}>"


def _fmt_scale(x: float) -> str:
    return repr(float(x))


def _int_range(et: ElementType) -> tuple[int, int]:
    b = et.bitwidth
    if et.kind == "uint":
        return 0, (1 << b) - 1
    if et.kind == "bool":
        return 0, 1
    return -(1 << (b - 1)), (1 << (b - 1)) - 1


def int_range(et: ElementType) -> tuple[int, int]:
    """(min, max) of an integer element type."""
    return _int_range(et)


# ---------------------------------------------------------------- shaped types


@dataclass(frozen=True)
class TensorType(Type):
    """`tensor<2x?x3xf32>`; `shape` holds None for a dynamic dimension.

    `bounds` (same length as shape, None where unbounded) comes from
    `#stablehlo.bounds<...>` / `#stablehlo.type_extensions<bounds = [...]>` encodings;
    `encoding` keeps any other encoding attribute verbatim (as an Attribute).
    """

    shape: tuple[Optional[int], ...]
    element_type: Type  # ElementType or QuantizedType
    bounds: Optional[tuple[Optional[int], ...]] = None
    encoding: object = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def dtype(self) -> np.dtype:
        """numpy dtype of the stored values (storage type for quantized tensors)."""
        return self.element_type.np_dtype

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            if d is None:
                raise ValueError(f"{self} has a dynamic dimension")
            n *= d
        return n

    @property
    def is_quantized(self) -> bool:
        return isinstance(self.element_type, QuantizedType)

    def with_shape(self, shape) -> "TensorType":
        return TensorType(tuple(shape), self.element_type)

    def with_element_type(self, et: Type) -> "TensorType":
        return TensorType(self.shape, et, self.bounds, self.encoding)

    def __str__(self) -> str:
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        enc = ""
        if self.bounds is not None:
            b = ", ".join("?" if x is None else str(x) for x in self.bounds)
            enc = f", #stablehlo.bounds<{b}>"
        elif self.encoding is not None:
            enc = f", {self.encoding}"
        return f"tensor<{dims}{self.element_type}{enc}>"


@dataclass(frozen=True)
class TupleType(Type):
    types: tuple[Type, ...]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(str(t) for t in self.types) + ">"


@dataclass(frozen=True)
class TokenType(Type):
    def __str__(self) -> str:
        return "!stablehlo.token"


@dataclass(frozen=True)
class FunctionType(Type):
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        ins = ", ".join(str(t) for t in self.inputs)
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {self.results[0]}"
        return f"({ins}) -> (" + ", ".join(str(t) for t in self.results) + ")"


@dataclass(frozen=True)
class OpaqueType(Type):
    """Any other `!dialect.name<...>` type, kept verbatim."""

    text: str

    def __str__(self) -> str:
        return self.text


TOKEN = TokenType()


def tensor(shape, element: ElementType | str) -> TensorType:
    """Convenience constructor: `tensor((2, 3), "f32")`."""
    if isinstance(element, str):
        element = element_type(element)
    return TensorType(tuple(shape), element)
