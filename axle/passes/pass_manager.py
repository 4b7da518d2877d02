"""The pass manager: pipelines of passes, fixed-point groups, timing and dumps.

A pass is an object with a `name` and `run(module) -> bool` (whether it changed
anything). A pipeline is a list of passes and `FixedPoint` groups. The manager records
the time of every pass run, can verify after each pass, and dumps the module:

    NNN.<module>.imported.mlir          before any pass
    NNN.<module>.after_<pass>.mlir      after each pass matching dump_pass_regex
    NNN.<module>.optimized.mlir         after the pipeline

(XLA's --xla_dump_to, with the numbering showing the order the passes ran in.)
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from axle import profiler as _profiler
from axle.ir.core import Module
from axle.limits import ResourceLimitError, check_compile_time


class Pass:
    """Base class of passes. Subclasses set `name` and implement `run`."""

    name = "pass"

    def run(self, module: Module) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


class FixedPoint(Pass):
    """Run `passes` in order, again and again, until none changes the module."""

    def __init__(self, passes: Sequence[Pass], name: str = "fixed-point", max_iterations: int = 20):
        self.passes = list(passes)
        self.name = name
        self.max_iterations = max_iterations

    def run(self, module: Module) -> bool:  # used when nested without a manager
        changed_any = False
        for _ in range(self.max_iterations):
            changed = False
            for p in self.passes:
                changed |= bool(p.run(module))
            changed_any |= changed
            if not changed:
                break
        return changed_any


@dataclass
class PassRecord:
    name: str
    seconds: float
    changed: bool


class PassError(Exception):
    """A pass raised, or left the module invalid. Names the pass."""


@dataclass
class PassManager:
    pipeline: list
    dump_to: Optional[str] = None
    dump_pass_regex: Optional[str] = None
    verify_each: bool = False
    after_pass: Optional[Callable[[str, Module], None]] = None  # instrument hook
    records: list = field(default_factory=list)

    def __post_init__(self):
        self._counter = 0
        self._regex = re.compile(self.dump_pass_regex) if self.dump_pass_regex else None

    @classmethod
    def from_flags(cls, pipeline: list, dump_to: Optional[str] = None, **kw) -> "PassManager":
        from axle.flags import parse_flags
        flags = parse_flags()
        return cls(pipeline, dump_to=dump_to or flags["dump_to"],
                   dump_pass_regex=kw.pop("dump_pass_regex", None) or flags["dump_pass_regex"],
                   verify_each=kw.pop("verify_each", None) or flags["verify_each_pass"], **kw)

    # -- dumps
    def dump(self, module: Module, what: str) -> Optional[str]:
        if not self.dump_to:
            return None
        os.makedirs(self.dump_to, exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", module.name or "module")
        # numbered after the dumps already in the folder: several compiles (a PyTorch
        # model's forward and backward graphs, both named "module") each keep theirs
        n = max(self._counter, sum(1 for f in os.listdir(self.dump_to) if f.endswith(".mlir")))
        path = os.path.join(self.dump_to, f"{n:03d}.{stem}.{what}.mlir")
        self._counter = n + 1
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(str(module))
        return path

    # -- running
    def run(self, module: Module) -> Module:
        with _profiler.phase("pipeline", passes=len(self.pipeline)):  # an axle.profiler trace event
            self.dump(module, "imported")
            for p in self.pipeline:
                self._run_one(p, module)
            self.dump(module, "optimized")
        return module

    def _run_one(self, p: Pass, module: Module) -> bool:
        if isinstance(p, FixedPoint):
            with _profiler.phase(p.name, "pass") as info:
                changed_any, k = False, -1
                for k in range(p.max_iterations):
                    changed = False
                    for q in p.passes:
                        changed |= self._run_one(q, module)
                    changed_any |= changed
                    if not changed:
                        break
                info.update(iterations=k + 1, changed=changed_any)
            return changed_any
        check_compile_time(f"pass '{p.name}'")
        t0 = time.perf_counter()
        t0_ns = _profiler.now_ns() if _profiler.ACTIVE is not None else 0
        try:
            changed = bool(p.run(module))
        except ResourceLimitError:
            raise
        except Exception as e:
            raise PassError(f"pass '{p.name}' failed: {type(e).__name__}: {e}") from e
        self.records.append(PassRecord(p.name, time.perf_counter() - t0, changed))
        if t0_ns and _profiler.ACTIVE is not None:
            _profiler.ACTIVE.complete(p.name, "pass", t0_ns, _profiler.now_ns(), {"changed": changed})
        if self.verify_each and changed:
            from axle.ir.uses import check_use_lists
            from axle.ir.verifier import VerificationError, verify
            try:
                verify(module)
            except VerificationError as e:
                raise PassError(f"pass '{p.name}' left the module invalid: {e}") from e
            stale = check_use_lists(module)
            if stale:
                raise PassError(f"pass '{p.name}' left the use lists wrong: " + "; ".join(stale[:3]))
        if self._regex is not None and self._regex.search(p.name):
            self.dump(module, f"after_{p.name}")
        if self.after_pass is not None:
            self.after_pass(p.name, module)
        return changed

    def timing_report(self) -> str:
        totals: dict[str, list] = {}
        for r in self.records:
            t = totals.setdefault(r.name, [0.0, 0, 0])
            t[0] += r.seconds
            t[1] += 1
            t[2] += r.changed
        lines = [f"{'pass':<28}{'runs':>6}{'changed':>9}{'ms':>10}"]
        for name, (s, n, c) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
            lines.append(f"{name:<28}{n:>6}{c:>9}{s * 1e3:>10.2f}")
        return "\n".join(lines)


def run_pipeline(module: Module, pipeline: list, **kw) -> PassManager:
    pm = PassManager.from_flags(pipeline, **kw)
    pm.run(module)
    return pm
