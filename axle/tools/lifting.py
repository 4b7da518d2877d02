"""Preparing a conformance program for an optimizing or compiling backend.

The programs of the suites compute on constants and check the results with `check.*`
ops. Left as they are, constant folding could compute the answer at compile time and
the backend would never run. So, for an entry function:

1. its calls are inlined (the suites keep inputs in @inputs() / @expected() functions);
2. the check ops at the function's top level are taken out; the values they check become
   extra results of the function, and the checks are kept aside to run on the host (a
   constant in a check's *expected* slot stays on the host; the checked value always
   comes back from the backend, even when the program checks a constant as it is);
3. every constant at the top level, scalars and splats included, becomes a function
   argument whose value is passed at run time, so that nothing the checks read can be
   computed at compile time. Constants that reach a shape operand (the output shape of
   `dynamic_broadcast_in_dim`, `dynamic_reshape`, ...) stay: they are the program's
   shapes, not its data.

`lift(module, entry)` returns the new module, the argument values, and a function that
evaluates the checks on the results.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.ops import lookup
from axle.ir.types import FunctionType, TensorType


def check_name(op: Operation) -> str:
    """`check.expect_eq` for both `check.expect_eq` and `custom_call @check.expect_eq`; else ''."""
    if op.name.startswith("check."):
        return op.name
    if op.name == "stablehlo.custom_call" and str(op.attr("call_target_name", "")).startswith("check."):
        return op.attr("call_target_name")
    return ""


def _is_check(op: Operation) -> bool:
    # expect_serialized_eq reads probes recorded while the program runs: it stays in it
    return check_name(op) not in ("", "check.expect_serialized_eq")


@dataclass
class Lifted:
    module: Module
    entry: str
    args: list
    num_results: int  # the function's own results; the rest feed the checks
    checks: list  # (op, [index into results or ("const", array)])

    def run_checks(self, outputs: list) -> None:
        """Evaluate the checks on the host with the backend's outputs (raises CheckFailure)."""
        from axle.interpreter.evaluator import Evaluator
        from axle.interpreter.ops_check import CHECK_TARGETS
        from axle.interpreter.registry import OpCall, lookup
        for op, sources in self.checks:
            values = [outputs[s] if isinstance(s, int) else s[1] for s in sources]
            name = op.name
            fn = lookup(name)
            if name == "stablehlo.custom_call":
                name = op.attr("call_target_name")
                fn = CHECK_TARGETS[name]
            call = OpCall(name=name, operands=values, operand_types=[v.type for v in op.operands],
                          result_types=[], attrs={k: a.to_python() for k, a in op.attributes.items()},
                          location=op.where())
            out = fn(call)
            if op.results:  # check.eq returns whether the values are equal: it must say true
                ok = np.asarray(out[0] if isinstance(out, (list, tuple)) else out)
                if not bool(np.all(ok)):
                    from axle.interpreter.ops_check import CheckFailure
                    raise CheckFailure(f"{name} at {op.where()}: the values differ")


def _shape_operand_positions(op) -> tuple:
    """Operand positions that hold shapes, sizes or paddings rather than data (op table)."""
    d = lookup(op.name)
    return d.shape_operands if d is not None else ()


def _shape_sources(module: Module) -> set:
    """The ops whose results reach a shape operand (through any chain of ops)."""
    work = []
    for op in module.walk():
        for i in _shape_operand_positions(op):
            if i < len(op.operands):
                work.append(op.operands[i])
    seen: set = set()
    while work:
        owner = getattr(work.pop(), "owner", None)
        if isinstance(owner, Operation) and owner not in seen:
            seen.add(owner)
            work.extend(owner.operands)
    return seen


def lift(module: Module, entry: str) -> Lifted:
    from axle.passes import make_pass
    make_pass("inline").run(module)
    fn = module.functions[entry]
    block = fn.body
    ftype: FunctionType = fn.function_type
    ret = block.operations[-1]
    # 2. checks out, their operands as results (expected constants stay on the host)
    checks = []
    extra = []
    for op in list(block.operations):
        if not _is_check(op):
            continue
        sources = []
        for i, v in enumerate(op.operands):
            owner = getattr(v, "owner", None)
            if i > 0 and isinstance(owner, Operation) and owner.name == "stablehlo.constant":
                sources.append(("const", owner.attributes["value"].array))
            else:
                sources.append(("result", v))
                if v not in extra:
                    extra.append(v)
        checks.append((op, sources))
        block.operations.remove(op)
        if op.results:  # check.eq: its boolean result is checked on the host instead
            ret.operands = [v for v in ret.operands if v not in op.results]
    kept_results = tuple(v.type for v in ret.operands)
    ret.operands.extend(extra)
    # 3. constants become arguments (all of them but shapes)
    args = []
    new_inputs = list(ftype.inputs)
    shapes = _shape_sources(module)
    for op in list(block.operations):
        if op.name != "stablehlo.constant" or op in shapes:
            continue
        value = op.attributes["value"]
        if not isinstance(value, A.DenseElementsAttr):
            continue
        t = op.results[0].type
        hint = op.results[0].name_hint
        arg = block.add_argument(t, name=hint if isinstance(hint, str) else None)
        new_inputs.append(t)
        args.append(np.array(value.array))
        op.results[0].replace_all_uses_with(arg)
        block.operations.remove(op)
    fn.attributes["function_type"] = A.TypeAttr(FunctionType(tuple(new_inputs), kept_results
                                                             + tuple(v.type for v in extra)))
    for key in ("arg_attrs", "res_attrs"):
        fn.attributes.pop(key, None)
    n_kept = len(kept_results)
    for k, (op, sources) in enumerate(checks):
        checks[k] = (op, [n_kept + extra.index(s[1]) if s[0] == "result" else s for s in sources])
    return Lifted(module, entry, args, n_kept, checks)
