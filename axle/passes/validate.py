"""Translation validation: find the first pass that changes a program's results.

    report = validate(module, pipeline, args)
    if not report.ok: print(report)   # names the pass, the result index and the difference

The interpreter runs the module before the pipeline and after every pass (on a copy of
the module made by printing and parsing, so a pass that corrupts the IR is caught too)
and compares results: bit-exact for integers and booleans, and within `rtol`/`atol` for
floats (passes may reassociate nothing today, so the defaults are tight).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from axle.ir.core import Module


@dataclass
class ValidationReport:
    ok: bool
    pass_name: Optional[str] = None
    detail: str = ""
    passes_checked: list = field(default_factory=list)

    def __str__(self) -> str:
        if self.ok:
            return f"all {len(self.passes_checked)} passes preserve the results"
        return f"pass '{self.pass_name}' changed the results: {self.detail}"


def _differs(a, b, rtol: float, atol: float) -> Optional[str]:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    if a.dtype.kind in "fc" or a.dtype.name in ("bfloat16",) or "float" in a.dtype.name:
        x, y = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), \
            b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
        same_nan = np.isnan(x) & np.isnan(y)
        bad = ~(np.isclose(x, y, rtol=rtol, atol=atol) | same_nan)
    else:
        bad = a != b
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return f"{int(np.sum(bad))} elements differ; first at {idx}: {a[idx]!r} before vs {b[idx]!r} after"
    return None


def validate(module: Module, pipeline: list, args: Sequence = (), function: Optional[str] = None,
             rtol: float = 1e-6, atol: float = 0.0) -> ValidationReport:
    from axle.interpreter.evaluator import run_function
    from axle.ir import parse_module
    from axle.passes.pass_manager import PassManager

    reference = run_function(module, list(args), function)
    report = ValidationReport(ok=True)

    def after(name: str, m: Module) -> None:
        if not report.ok:
            return
        report.passes_checked.append(name)
        copy = parse_module(str(m))
        got = run_function(copy, list(args), function)
        if len(got) != len(reference):
            report.ok, report.pass_name = False, name
            report.detail = f"{len(got)} results instead of {len(reference)}"
            return
        for i, (r, g) in enumerate(zip(reference, got)):
            why = _differs(r, g, rtol, atol)
            if why:
                report.ok, report.pass_name = False, name
                report.detail = f"result {i}: {why}"
                return

    PassManager(pipeline, after_pass=after).run(module)
    return report
