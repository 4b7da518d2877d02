"""The CPU backend's kernel registry: which ops have a kernel of their own, and how.

Kernels are registered by op name (`@kernel(...)`): `fn(ctx, op)` emits the code for
`op`, writing each result into `ctx.buffer(result)`. Every other op the backend supports
is fusible (emitter.FUSIBLE): computed inside the loop of whoever reads it, and, where it
must have a buffer, by the loop kernel (`loop_kernel`). Kernel modules import this module
and context.py, never the compiler; kernel_set.py lists them and is imported last.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Optional

from axle.codegen.emitter import FUSIBLE, _ty
from axle.errors import Unsupported
from axle.ir.core import Block, Operation
from axle.ir.ops import ELEMENTWISE, has_trait


@dataclass
class KernelDef:
    fn: Callable
    memory_operands: bool = False  # operands must live in buffers (read many times)
    check: Optional[Callable] = None  # check(op) raises Unsupported for cases not handled
    in_place: Optional[int] = None  # operand whose buffer the (first) result may take over
    # op -> whether this op's kernel reads its operands through the elemental emitter after
    # all (memory_operands notwithstanding): their producers may fuse into it
    fused_operands: Optional[Callable] = None


KERNELS: dict[str, KernelDef] = {}
# op name -> plan(op) (None: cannot) for kernels that can compute their result a few rows at
# a time for a pooling that reads it (kernels_conv.py registers the direct convolution)
ROW_PRODUCERS: dict[str, Callable] = {}
_LOOP: list = []  # [fn(ctx, op)]: the kernel of an op without one of its own (elementwise.py)


def kernel(*names: str, memory_operands: bool = False, check: Optional[Callable] = None,
           in_place: Optional[int] = None):
    """Register fn(ctx, op) for ops `names`. `in_place=k`: the result may live in operand k's
    buffer when that operand dies here and nothing else the kernel reads depends on it (the
    kernel must then skip copying operand k: Context.same_buffer tells)."""
    def deco(fn):
        for n in names:
            KERNELS[n] = KernelDef(fn, memory_operands, check, in_place)
        return fn
    return deco


def loop_kernel(fn: Callable) -> Callable:
    """Register fn(ctx, op): the loop that writes a fusible op's materialized result."""
    _LOOP[:] = [fn]
    return fn


def emitter_of(op: Operation) -> Callable:
    """The function that emits op's kernel."""
    kd = KERNELS.get(op.name)
    return kd.fn if kd is not None else _LOOP[0]


def is_elementwise(o: Operation) -> bool:
    """An op whose element i reads only element i of each same-shaped operand (the op
    table's ELEMENTWISE trait) that the loop kernel computes: it has a scalar rule, or is a
    convert (which the elemental emitter does itself)."""
    from axle.codegen.scalar_ops import RULES
    return not o.regions and has_trait(o, ELEMENTWISE) and (o.name in RULES or o.name == "stablehlo.convert")


def keeps_positions(o: Operation) -> bool:
    """An op whose element at row-major position i reads only position i of each operand of
    its element count: elementwise ops and reshapes (in-place reuse and donation ask this)."""
    return is_elementwise(o) or o.name == "stablehlo.reshape"


# during one compilation: .checked: the blocks already checked
_CHECKED = threading.local()


class checking:
    """Context manager: check each block once during one compilation (nested loops would
    check every block below them again at each level)."""

    def __enter__(self):
        self.saved = getattr(_CHECKED, "blocks", None)
        _CHECKED.blocks = set()
        return self

    def __exit__(self, *exc):
        _CHECKED.blocks = self.saved
        return False


def check_supported(block: Block) -> None:
    checked = getattr(_CHECKED, "blocks", None)  # blocks checked in this compilation
    if checked is not None:
        if block in checked:
            return  # (nested loops: each level would check every block below it again)
        checked.add(block)
    for op in block.operations:
        if op.name in ("func.return", "stablehlo.return"):
            continue
        if op.name not in FUSIBLE and op.name not in KERNELS:
            raise Unsupported(f"{op.where()} is not supported by the cpu backend yet")
        k = KERNELS.get(op.name)
        if k is not None and k.check is not None:
            k.check(op)
        for r in op.results:
            _ty(r)
