"""The fusion plan of a block: which ops form each kernel, and of which kind.

A backend's fusion planner decides, before any code is emitted, which values are
*materialized* (get a buffer, written by one kernel) and which are computed inside the
loop of the kernel that reads them. The result is a FusionPlan: one FusedKernel per
kernel, in program order, naming its root op (the op that owns the loop or the library
call), the ops fused into it and the materialized values it reads. Emission reads it.

Kinds (XLA's fusion kinds, plus what a CPU backend adds):
  loop               an elementwise root; fused producers computed per output element
  input              a reduction root (reduce, reduce_window) reading fused producers
  row                a loop whose outer rows first compute reductions it reads (softmax)
  library            a contraction or convolution (BLAS, a packed or direct kernel)
  pooled-convolution a pooling that computes the convolution rows it reads itself
  control            while / if / case / call: bodies are blocks with plans of their own
  kernel             any other op with a kernel of its own (sort, gather, a host call...)

Text form, one line per kernel (dumps and tests read it):
    kernel 3 loop [%5 = multiply, %6 = add] -> %6 f32[128,256] reads %x, %y
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from axle.codegen.plans.names import ValueNames, type_str
from axle.ir.core import Block, Operation

KINDS = ("loop", "input", "row", "library", "pooled-convolution", "control", "kernel")


@dataclass(eq=False)
class RowFusion:
    """Reductions computed per row inside their host's loop (row fusion): the host's first
    `rows` dimensions are the row loop; `maps[r]` gives, per dimension of reduction result
    r, the host dimension that indexes it (-1: index 0); `kept` is a reduction whose input
    row is kept in the host's result row instead of computed twice (None if none)."""
    rows: int
    reductions: list
    maps: dict
    kept: Optional[Operation] = None


@dataclass(eq=False)
class FusedKernel:
    """One kernel: `root` owns the loop (or library call); `fused` are the ops of the block
    computed inside it (block order); `inputs` the materialized values it reads."""
    kind: str
    root: Operation
    fused: list
    inputs: list
    depth: int = 0  # 0: the entry function's block; > 0: inside while/if/case bodies
    rows: Optional[RowFusion] = None  # kind "row"
    pooled: Optional[Operation] = None  # kind "pooled-convolution": the convolution in rows
    index: Optional[int] = None  # the program's kernel number, set when it is emitted

    @property
    def ops(self) -> list:
        """Every op of the kernel in block order (producers before the root)."""
        return list(self.fused) + [self.root]

    def line(self, names: ValueNames, number: Optional[int] = None) -> str:
        n = self.index if number is None else number
        ops = ", ".join(names.op(o) for o in self.ops)
        outs = ", ".join(f"{names(r)} {type_str(r)}" for r in self.root.results)
        s = f"kernel {n} {self.kind} [{ops}]"
        if outs:
            s += f" -> {outs}"
        if self.inputs:
            s += " reads " + ", ".join(names(v) for v in names.sorted(self.inputs))
        if self.rows is not None:
            s += f"; rows over {self.rows.rows} dim(s), per row " + ", ".join(
                names(r.results[0]) for r in self.rows.reductions)
            if self.rows.kept is not None:
                s += f"; keeps {names(self.rows.kept.operands[0])} in the result row"
        if self.pooled is not None:
            s += f"; computes {names(self.pooled.results[0])} a few rows at a time"
        return s


@dataclass(eq=False)
class FusionPlan:
    """The kernels of one block, in program order, and the values given buffers."""
    block: Block
    depth: int
    materialized: set  # values with a buffer of their own (written by their kernel)
    kernels: list = field(default_factory=list)
    row_fusions: dict = field(default_factory=dict)  # host op -> RowFusion
    conv_rows: dict = field(default_factory=dict)  # pooling op -> the convolution it computes in rows

    def kernel_of(self, op: Operation) -> Optional[FusedKernel]:
        for k in self.kernels:
            if k.root is op:
                return k
        return None

    def lines(self, names: ValueNames) -> list:
        return [k.line(names, k.index if k.index is not None else i) for i, k in enumerate(self.kernels)]

    def __str__(self) -> str:
        return "\n".join(self.lines(ValueNames(function_body(self.block))))


def function_body(block: Block) -> Block:
    """The body of the function that `block` is (or is nested in)."""
    while True:
        op = getattr(getattr(block, "parent", None), "parent", None)  # block -> region -> op
        outer = getattr(op, "parent", None)
        if not isinstance(outer, Block):
            return block
        block = outer
