"""torch dtypes <-> StableHLO element types <-> numpy, and tensors in and out without copies.

torch.from_numpy and Tensor.numpy() share memory; bfloat16 (which numpy lacks) travels as
int16 bits reinterpreted as ml_dtypes.bfloat16, still without a copy."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

TORCH_TO_MLIR = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "ui8", torch.bool: "i1", torch.complex64: "complex<f32>", torch.complex128: "complex<f64>",
}
MLIR_TO_TORCH = {v: k for k, v in TORCH_TO_MLIR.items()}
MLIR_TO_NUMPY = {
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16), "i64": np.dtype(np.int64), "i32": np.dtype(np.int32),
    "i16": np.dtype(np.int16), "i8": np.dtype(np.int8), "ui8": np.dtype(np.uint8),
    "i1": np.dtype(np.bool_), "complex<f32>": np.dtype(np.complex64), "complex<f64>": np.dtype(np.complex128),
}
FLOATS = ("f16", "bf16", "f32", "f64")
COMPLEX = {"complex<f32>": "f32", "complex<f64>": "f64"}  # -> the type of its parts


class UnsupportedDtype(TypeError):
    """A tensor of a dtype the bridge does not map (float8, quantized torch dtypes)."""


def mlir_type(dtype: torch.dtype) -> str:
    try:
        return TORCH_TO_MLIR[dtype]
    except KeyError:
        raise UnsupportedDtype(f"axle.torch: no StableHLO element type for {dtype}; supported: "
                               f"{', '.join(str(d) for d in TORCH_TO_MLIR)}") from None


def is_float(et: str) -> bool:
    return et in FLOATS


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A numpy view of a CPU tensor (copied only when it is not contiguous or not on the CPU)."""
    if t.requires_grad:
        t = t.detach()
    if t._is_zerotensor():  # (autograd's all-zero gradients, which have no memory to share)
        t = torch.zeros(t.shape, dtype=t.dtype)
    if not t.is_cpu:
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype is torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype not in TORCH_TO_MLIR:
        mlir_type(t.dtype)  # raises UnsupportedDtype naming it
    return t.numpy()


def from_numpy(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing `a`'s memory (axle's results are fresh arrays each call)."""
    a = np.asarray(a)
    if a.dtype == ml_dtypes.bfloat16:
        a = a if a.flags.c_contiguous else np.ascontiguousarray(a)  # (keeps a 0-d array 0-d)
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if not a.flags.writeable:
        a = a.copy()
    return torch.from_numpy(a if a.flags.c_contiguous else np.ascontiguousarray(a))
