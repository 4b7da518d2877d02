"""The lowering table: ATen overload -> rule, and the helpers the rules share.

A rule is `rule(em, out, *args, **kwargs)`: `em` the Emitter, `out` the (shape, element type)
torch recorded for the node (a list of them for ops with several results), then the op's own
arguments with tensors as emitter values (V) and sizes as Python ints. It returns a V (or a
tuple of V / None). Rules raise Unsupported for argument forms they do not lower."""
from __future__ import annotations

import torch

from axle.torch.dtypes import MLIR_TO_TORCH, TORCH_TO_MLIR, is_float
from axle.torch.emitter import Emitter, V

class _Rules(dict):
    """op overload -> rule. An op that torch defines only once some module is imported
    (inductor's prims.fma, which its optimizer decompositions emit) is registered by
    name in `by_name` ("prims.fma.default"): importing that module here cost seconds."""

    def __init__(self):
        super().__init__()
        self.by_name: dict = {}

    def __missing__(self, op):
        fn = self.by_name.get(str(op))
        if fn is None:
            raise KeyError(op)
        return fn

    def __contains__(self, op) -> bool:
        return dict.__contains__(self, op) or str(op) in self.by_name

    def get(self, op, default=None):
        return self[op] if op in self else default


RULES = _Rules()
aten = torch.ops.aten


class Unsupported(Exception):
    """This argument form of an op has no lowering (the graph then runs eagerly)."""


def rule(*ops):
    def register(fn):
        for op in ops:
            RULES[op] = fn
        return fn
    return register


def opmath(dtype: str) -> str:
    """The type PyTorch's CPU kernels compute a low-precision float op in."""
    return "f32" if dtype in ("f16", "bf16") else dtype


def promote(a, b) -> str:
    """torch's result type of a binary op on tensors (V) and Python scalars."""
    def probe(x):
        if isinstance(x, V):
            return torch.empty((1,) * min(x.rank, 1), dtype=MLIR_TO_TORCH[x.dtype], device="meta")
        return x
    if not isinstance(a, V) and not isinstance(b, V):
        return TORCH_TO_MLIR[torch.result_type(torch.tensor(a), b)]
    return TORCH_TO_MLIR[torch.result_type(probe(a), probe(b))]


def value(em: Emitter, x, dtype: str, shape=None) -> V:
    """x (a V or a Python scalar) as a tensor of `dtype`, broadcast to `shape` when given."""
    if not isinstance(x, V):
        return em.const(x, dtype, shape if shape is not None else ())
    x = em.convert(x, dtype)
    return em.broadcast_to(x, shape) if shape is not None else x


def dim(d: int, rank: int) -> int:
    return d + max(rank, 1) if d < 0 else d


def dims_of(ds, rank: int) -> list:
    if ds is None or (isinstance(ds, (list, tuple)) and len(ds) == 0):
        return list(range(rank))
    if isinstance(ds, int):
        ds = [ds]
    return sorted(dim(d, rank) for d in ds)


def shape_of(out):
    return tuple(out[0])


__all__ = ["RULES", "aten", "rule", "Unsupported", "opmath", "promote", "value", "dim", "dims_of",
           "Emitter", "V", "is_float", "TORCH_TO_MLIR", "MLIR_TO_TORCH"]
