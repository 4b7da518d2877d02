"""Preparing a conformance program for an optimizing or compiling backend.

The programs of the suites compute on constants and check the results with `check.*`
ops. Left as they are, constant folding could compute the answer at compile time and
the backend would never run. So, for an entry function:

1. its calls are inlined (the suites keep inputs in @inputs() / @expected() functions);
2. the check ops at the function's top level are taken out; the values they check become
   extra results of the function, and the checks are kept aside to run on the host;
3. every non-splat constant at the top level becomes a function argument, whose value
   is passed at run time.

`lift(module, entry)` returns the new module, the argument values, and a function that
evaluates the checks on the results.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.types import FunctionType, TensorType


def _is_check(op: Operation) -> bool:
    return op.name.startswith("check.") and op.name != "check.eq" or (
        op.name == "stablehlo.custom_call" and str(op.attr("call_target_name", "")).startswith("check."))


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
            fn(call)


def lift(module: Module, entry: str) -> Lifted:
    from axle.passes import make_pass
    make_pass("inline").run(module)
    fn = module.functions[entry]
    block = fn.body
    ftype: FunctionType = fn.function_type
    ret = block.operations[-1]
    # 2. checks out, their operands as results (constants stay on the host)
    checks = []
    extra = []
    for op in list(block.operations):
        if not _is_check(op):
            continue
        sources = []
        for v in op.operands:
            owner = getattr(v, "owner", None)
            if isinstance(owner, Operation) and owner.name == "stablehlo.constant":
                sources.append(("const", owner.attributes["value"].array))
            else:
                sources.append(len(ftype.results) + len(extra))
                extra.append(v)
        checks.append((op, sources))
        block.operations.remove(op)
    ret.operands.extend(extra)
    # 3. non-splat constants become arguments
    args = []
    new_inputs = list(ftype.inputs)
    for op in list(block.operations):
        if op.name != "stablehlo.constant":
            continue
        value = op.attributes["value"]
        if not isinstance(value, A.DenseElementsAttr) or value.is_splat or value.array.size <= 1:
            continue
        t = op.results[0].type
        arg = block.add_argument(t, name=op.results[0].name_hint if isinstance(op.results[0].name_hint, str) else None)
        new_inputs.append(t)
        args.append(value.array)
        for user in module.walk():
            user.operands = [arg if v is op.results[0] else v for v in user.operands]
        block.operations.remove(op)
    fn.attributes["function_type"] = A.TypeAttr(FunctionType(tuple(new_inputs), tuple(ftype.results)
                                                             + tuple(v.type for v in extra)))
    for key in ("arg_attrs", "res_attrs"):
        fn.attributes.pop(key, None)
    return Lifted(module, entry, args, len(ftype.results), checks)
