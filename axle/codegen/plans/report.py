"""All the plans of one program, and their text form (what `--dump_to` writes).

    fusion plan of @main
    kernel 0 library [%a = dot_general] -> %a f32[64,256] reads %x, %w
    ...
    schedule of @main: ...
    buffer assignment: ...

Blocks nested in control flow (while, if, case bodies) follow their kernel, indented.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from axle.codegen.plans.buffers import BufferAssignment
from axle.codegen.plans.names import ValueNames


@dataclass(eq=False)
class ProgramPlans:
    entry: str
    body: object  # the function's body block (for value names)
    blocks: list = field(default_factory=list)  # FusionPlan per block, in the order emitted
    schedules: list = field(default_factory=list)  # (FusionPlan, Schedule) per scheduled block
    buffers: BufferAssignment = field(default_factory=BufferAssignment)

    def fusion_text(self, names: ValueNames) -> list:
        """Every kernel in the order emitted; kernels of nested blocks (control flow bodies)
        right after their control kernel, indented."""
        out = [f"fusion plan of @{self.entry}"]
        kernels = [k for plan in self.blocks for k in plan.kernels if k.index is not None]
        for k in sorted(kernels, key=lambda k: k.index):
            out.append("  " * k.depth + k.line(names))
        return out

    def schedule_text(self, names: ValueNames) -> list:
        out = []
        for plan, sched in self.schedules:
            numbers = {k.root: k.index for k in plan.kernels}
            lines = sched.lines(names, numbers)
            lines[0] = lines[0].replace("schedule:", f"schedule of @{self.entry}:", 1) if plan.depth == 0 \
                else lines[0]
            out.extend("  " * plan.depth + line for line in lines)
        return out

    def __str__(self) -> str:
        names = ValueNames(self.body)
        parts = [self.fusion_text(names), self.schedule_text(names), self.buffers.lines(names)]
        return "\n\n".join("\n".join(p) for p in parts if p) + "\n"
