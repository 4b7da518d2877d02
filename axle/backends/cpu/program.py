"""What code generation hands to the executable: the program (LLVM IR, types, arena size)
and what it decided (kernels, temporaries, aliases, plans) for reports and dumps."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from axle.backends.cpu.costs import kernel_flops
from axle.codegen.emitter import _ty
from axle.codegen.plans.arena import nbytes
from axle.ir.core import Operation
from axle.ir.types import TensorType


@dataclass
class KernelInfo:
    """One emitted kernel: the op that owns the loop (or library call) and the ops fused into it.

    `fused` are the ops computed inside this kernel's loops instead of in their own buffers
    (elementwise producers, broadcasts, slices, ... read through the elemental emitter);
    `inputs` are the materialized values it reads (arguments, other kernels' results);
    `library` names the library routine the kernel calls, if any (e.g. "blas.sgemm").
    """
    index: int
    op: Operation
    fused: list
    inputs: list
    library: Optional[str] = None
    depth: int = 0  # 0 for the entry function, >0 inside while/if/case bodies
    kind: str = "kernel"  # its fusion kind (codegen/plans/fusion.py: loop, input, row, library, ...)
    shares: Optional[int] = None  # the earlier kernel whose function (the same code) it calls (context._dedupe)

    @property
    def name(self) -> str:
        return self.op.name

    def where(self) -> str:
        return self.op.where()

    @property
    def shape(self) -> list:
        return list(_ty(self.op.results[0]).shape) if self.op.results else []

    def bytes_moved(self) -> int:
        """Bytes read from inputs plus bytes written to results (each buffer once)."""
        total = 0
        for v in list(self.inputs) + list(self.op.results):
            t = getattr(v, "type", None)
            if isinstance(t, TensorType) and t.is_static:
                total += nbytes(t)
        return total

    def flops(self) -> int:
        """Floating/integer operations, counted as XLA's cost analysis does roughly: one per
        element per elementwise op, 2*M*N*K for contractions."""
        return kernel_flops(self)

    # old tuple protocol: (op name, where, shape)
    def __iter__(self):
        return iter((self.name, self.where(), self.shape))

    def __getitem__(self, k):
        return (self.name, self.where(), self.shape)[k]


@dataclass
class Program:
    llvm_ir: str
    arg_types: list
    result_types: list
    arena_bytes: int
    kernels: list = field(default_factory=list)  # KernelInfo per emitted kernel, in program order
    allocations: list = field(default_factory=list)  # (offset, size, value, kernel index) per temporary
    cacheable: bool = True  # False when the code holds addresses valid only in this process
    host_callbacks: bool = False  # calls back into Python (errors are checked after a call)
    profile_offset: Optional[int] = None  # profile=True: arena offset of the kernel timestamps
    aliases: dict = field(default_factory=dict)  # result k -> argument j whose memory it is written into
    alias_rejections: list = field(default_factory=list)  # why requested aliases were not used (aliasing.py)
    host_ops: list = field(default_factory=list)  # ops computed in Python through host callbacks
    status_offset: Optional[int] = None  # arena offset of the status word (status.py), if used
    plans: Optional[object] = None  # ProgramPlans: fusion plan, schedule, buffer assignment (text: str())

    def buffer_report(self, top: int = 5) -> str:
        """Like XLA's buffer assignment summary: what the temporaries cost, and what is live
        at the peak (the op, where it is in the source, its shape) — for out-of-memory hunts.
        Temporaries held in a result buffer before the result is written count as the
        result's memory (as in XLA), not the arena's."""
        total = sum(a[1] for a in self.allocations)
        in_results = sum(a[1] for a in self.allocations if len(a) > 4)
        lines = [f"temporaries: {len(self.allocations)} buffers, {total} bytes if none shared; "
                 f"arena (peak) {self.arena_bytes} bytes "
                 f"({100.0 * self.arena_bytes / total if total else 0:.0f}% of the sum)"
                 + (f"; {in_results} bytes held in result buffers before they are written"
                    if in_results else "")]
        biggest = sorted(self.allocations, key=lambda a: -a[1])[:top]
        for a in biggest:
            off, size, v = a[:3]
            owner = getattr(v, "owner", None)
            where = owner.where() if owner is not None else "(kernel scratch)"
            place = f"offset {off:>10}" if len(a) == 4 else \
                f"result {a[4] - len(self.arg_types)} + {off}"
            lines.append(f"  {size:>12} bytes at {place}: {where} {getattr(v, 'type', '')}")
        return "\n".join(lines)
