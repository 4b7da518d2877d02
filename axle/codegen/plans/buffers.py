"""The buffer assignment of a program: where each materialized value lives, and when.

Planned before emission (per block): which values are written straight into a result
buffer, which take over the buffer of an operand that dies where they are made (in-place
reuse), which are temporaries, and each one's live range in kernel positions (from the
kernel that writes it to the last kernel that reads it). The allocator (arena.py) places
the temporaries at offsets as the kernels are emitted in schedule order (kernels may ask
for scratch of their own, known only then), and the offsets are recorded here, so the
dump shows the whole assignment, as XLA's BufferAssignment::ToString does.

Text form:
    buffer assignment: arena 65536 bytes at the peak; 3 temporaries, 131072 bytes if none shared
      %a f32[64,256] 65536 B  arena +0  live 0..1
      %c f32[64,256] 65536 B  arena +0  live 2..3
      %d f32[64,256]          result 0  live 3..
      %e f32[64,256]          result 0 in place of %d  live 4..
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from axle.codegen.plans.names import ValueNames, type_str


@dataclass(eq=False)
class Assigned:
    """One buffer of the program: table slot `slot` + `offset` bytes. `place`: "argument",
    "result" (written straight into the buffer its block returns it in), "temporary" (in
    the arena, or in a result buffer before that result is written), "scratch" (a kernel's
    own temporary memory, no value), "shared" (the buffer of `shares`, which holds the same
    value: a while loop's pass-through carry). `shares`: the value whose buffer this one takes over."""
    value: object
    place: str
    size: int = 0
    slot: Optional[int] = None
    offset: int = 0
    start: Optional[int] = None  # position of the writing kernel in its block's schedule
    end: Optional[int] = None  # position of the last reading kernel
    depth: int = 0
    shares: object = None
    kernel: Optional[int] = None  # the program's kernel number that writes it

    def line(self, names: ValueNames, n_args: int, arena_slot: int) -> str:
        v = self.value
        who = names(v) + " " + type_str(v) if hasattr(v, "type") else f"(scratch of kernel {self.kernel})"
        size = f"{self.size} B" if self.size else ""
        if self.slot is None:
            where = "a pointer of its function"
        elif self.slot < n_args:
            where = f"argument {self.slot}" + (" (donated)" if self.place == "result" else "")
        elif self.slot < arena_slot:
            where = f"result {self.slot - n_args}" + (f" +{self.offset}" if self.offset else "")
            if self.place != "result":
                where += " (before it is written)"
        else:
            where = f"arena +{self.offset}"
            if self.place == "result":
                where += " (its block's result)"
        if self.place == "shared":  # the same value's buffer (a loop's pass-through carry)
            where += f" shared with {names(self.shares)}"
        elif self.shares is not None:
            where += f" in place of {names(self.shares)}"
        live = ""
        if self.start is not None:
            live = f"live {self.start}.." + ("" if self.end is None else str(self.end))
        pad = "  " * (self.depth + 1)
        return pad + "  ".join(x for x in (who, size, where, live) if x)


@dataclass(eq=False)
class BufferAssignment:
    """Every buffer of the program in the order assigned; `arena_bytes`: the arena's peak.
    Table slots: arguments below `n_args`, then results, the arena at `arena_slot`."""
    n_args: int = 0
    arena_slot: int = 0
    arena_bytes: int = 0
    entries: list = field(default_factory=list)
    of: dict = field(default_factory=dict)  # value -> its latest entry

    def add(self, **kw) -> Assigned:
        a = Assigned(**kw)
        self.entries.append(a)
        if a.value is not None:
            self.of[a.value] = a
        return a

    def lines(self, names: ValueNames) -> list:
        temps = [a for a in self.entries if a.place in ("temporary", "scratch")]
        total = sum(a.size for a in temps)
        head = (f"buffer assignment: arena {self.arena_bytes} bytes at the peak; "
                f"{len(temps)} temporaries, {total} bytes if none shared")
        return [head] + [a.line(names, self.n_args, self.arena_slot) for a in self.entries]
