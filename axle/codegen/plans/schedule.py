"""The schedule of a block: the order its kernels run in, and why.

`list_schedule` is a list scheduler for low peak memory (XLA's default memory scheduler
is of the same family): among the kernels whose inputs are ready it runs the one that
frees the most temporary bytes net of what it allocates (ties: program order, which
keeps producers next to consumers). Kernels with effects keep their relative order. The
greedy order is kept only when its peak is lower than the program order's; otherwise
the program order stands, and the Schedule says so.

Text form:
    schedule: 4 kernels, reordered: peak 131072 -> 65536 bytes
      0 kernel 0 dot_general -> %a (frees 0, allocates 65536)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from axle.codegen.plans.names import ValueNames


@dataclass(eq=False)
class Schedule:
    """Kernels (root ops) in the order they run. `reason` says why this order; `peak` and
    `program_peak` are the planner's estimates of temporary bytes live at once in this order
    and in program order; `scores[op]` = (bytes freed, bytes allocated) when op was picked."""
    order: list
    program_order: list
    reason: str
    peak: int = 0
    program_peak: int = 0
    scores: dict = field(default_factory=dict)

    @property
    def reordered(self) -> bool:
        return self.order is not self.program_order and (
            len(self.order) != len(self.program_order)
            or any(a is not b for a, b in zip(self.order, self.program_order)))

    def lines(self, names: ValueNames, numbers: Optional[dict] = None) -> list:
        n = len(self.order)
        head = f"schedule: {n} kernel{'' if n == 1 else 's'}, {self.reason}"
        out = [head]
        for pos, op in enumerate(self.order):
            n = (numbers or {}).get(op)
            what = names.op(op) if op.results else op.name.split(".", 1)[-1]
            s = f"  {pos} " + (f"kernel {n} " if n is not None else "") + what
            if op in self.scores:
                freed, made = self.scores[op]
                s += f" (frees {freed}, allocates {made})"
            out.append(s)
        return out


def peak_bytes(seq: list, reads: dict, size: dict) -> int:
    """The most temporary bytes live at once when the kernels run in order `seq`: a result
    is live from its kernel to its last reader (`reads[k]`: the values kernel k reads;
    `size[v]`: v's bytes, 0 or absent when v is not a temporary)."""
    left: dict = {}
    for k in seq:
        for v in reads[k]:
            left[v] = left.get(v, 0) + 1
    live = high = 0
    for k in seq:
        live += sum(size.get(r, 0) for r in k.results)
        high = max(high, live)
        for v in reads[k]:
            left[v] -= 1
            if left[v] == 0:
                live -= size.get(v, 0)
    return high


def list_schedule(kernels: list, reads: dict, size: dict, effectful: Callable) -> Schedule:
    """Order `kernels` (root ops in program order) for low peak memory. `reads[k]`: the
    materialized values kernel k reads; `size[v]`: bytes of temporary v (results and
    arguments absent); `effectful(k)`: k's order relative to other such kernels is kept."""
    if len(kernels) < 3:
        return Schedule(kernels, kernels, "program order (fewer than 3 kernels)")
    index = {k: i for i, k in enumerate(kernels)}
    producer = {r: k for k in kernels for r in k.results}
    preds = {k: {producer[v] for v in reads[k] if v in producer and producer[v] is not k} for k in kernels}
    last_effect = None
    for k in kernels:
        if effectful(k):
            if last_effect is not None:
                preds[k].add(last_effect)
            last_effect = k
    readers: dict = {}
    for k in kernels:
        for v in reads[k]:
            readers.setdefault(v, set()).add(k)
    done: set = set()
    order: list = []
    scores: dict = {}
    waiting = {k: len(preds[k]) for k in kernels}
    succs: dict = {}
    for k in kernels:
        for p in preds[k]:
            succs.setdefault(p, []).append(k)
    ready = [k for k in kernels if waiting[k] == 0]

    def score(k):
        freed = sum(size.get(v, 0) for v in reads[k] if readers[v] - done == {k})
        made = sum(size.get(r, 0) for r in k.results)
        return (freed - made, -index[k])
    while ready:
        best = max(ready, key=score)
        freed = sum(size.get(v, 0) for v in reads[best] if readers[v] - done == {best})
        scores[best] = (freed, sum(size.get(r, 0) for r in best.results))
        ready.remove(best)
        done.add(best)
        order.append(best)
        for s_ in succs.get(best, ()):
            waiting[s_] -= 1
            if waiting[s_] == 0:
                ready.append(s_)
    if len(order) != len(kernels):  # a cycle cannot happen in SSA; keep program order if it did
        return Schedule(kernels, kernels, "program order (dependence cycle)")
    new, old = peak_bytes(order, reads, size), peak_bytes(kernels, reads, size)
    if new >= old:  # greedy is not always better: keep the program's order then
        return Schedule(kernels, kernels, f"program order (greedy peak {new} >= {old} bytes)",
                        old, old)
    return Schedule(order, kernels, f"reordered for peak memory: {old} -> {new} bytes", new, old, scores)
