"""The evaluator: runs a module op by op with the numpy implementations of the registry.

Functions run in frames (a dict from value to runtime value). Ops whose semantics are
about the program itself — calls, returns, while/if/case, composite, custom_call,
interpreter.run_parallel — are evaluated here; every other op is looked up in the
registry (registry.py) and receives an OpCall. Quantized operands are handled by
ops_quant.quantized_call (dequantize -> float op -> quantize), as the spec defines.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from axle.ir.core import Block, Module, Operation, Region, Value
from axle.ir.types import TensorType, Type
from axle.interpreter.ops_quant import is_quantized_call, quantized_call
from axle.interpreter.registry import InterpreterError, OpCall, lookup
from axle.limits import check_buffer, tensor_bytes

_CUSTOM_CALLS: dict[str, Callable[[OpCall], Any]] = {}


def register_custom_call(target: str, fn: Callable[[OpCall], Any]) -> None:
    """Make `stablehlo.custom_call @target` callable in the interpreter: fn(OpCall) -> results."""
    _CUSTOM_CALLS[target] = fn


from axle.errors import ArgumentError  # noqa: E402


from axle.ir.signature import check_arguments, format_type as _fmt_type  # noqa: E402,F401  (moved to the IR)


class Evaluator:
    """Runs functions of one module. Thread-safe: frames are per call."""

    def __init__(self, module: Module, program_runner: Optional[Callable] = None):
        self.module = module
        self.functions = module.functions
        # how interpreter.run_parallel runs each process's program: (name, args, ctx) -> results;
        # None means this interpreter. A compiling backend passes its own (compiled per device).
        self.program_runner = program_runner

    # -- functions
    def call_function(self, name: str, args: Sequence, ctx=None) -> list:
        try:
            fn = self.functions[name]
        except KeyError:
            raise InterpreterError(f"call to unknown function @{name}") from None
        if fn.is_declaration:
            raise InterpreterError(f"function @{name} has no body")
        return self.run_block(fn.body, list(args), {}, ctx)

    def run_block(self, block: Block, args: list, frame: dict, ctx, batched: bool = False) -> list:
        """Run a block's ops; returns the operands of its terminator.

        `batched`: the block's scalar ops are applied to whole arrays at once (used by
        reductions whose bodies are elementwise); result shapes are then not checked.
        """
        for a, v in zip(block.arguments, args):
            frame[a] = v
        for op in block.operations:
            name = op.name
            if name == "func.return" or name == "stablehlo.return" or name == "sdy.return":
                return [frame[v] for v in op.operands]
            results = self.eval_op(op, frame, ctx, batched)
            for r, v in zip(op.results, results):
                frame[r] = v
        return []

    def region_callable(self, region: Region, frame: dict, ctx) -> Callable:
        """The region as a function of its block arguments. It also carries `.region` (the
        IR, so that callers can see whether the body is elementwise) and `.batched(*arrays)`,
        which evaluates an elementwise body on whole arrays."""
        block = region.blocks[0]

        def run(*args):
            return self.run_block(block, list(args), frame, ctx)

        def batched(*args):
            return self.run_block(block, list(args), dict(frame), ctx, batched=True)

        run.region = region
        run.batched = batched
        return run

    # -- ops
    def eval_op(self, op: Operation, frame: dict, ctx, batched: bool = False) -> list:
        name = op.name
        special = _SPECIAL.get(name)
        if special is not None:
            return special(self, op, frame, ctx)
        impl = lookup(name)
        if impl is None:
            raise InterpreterError(f"the interpreter has no implementation of {op.where()}")
        if not batched:  # before numpy allocates it (a clear error, not an OOM kill)
            for r in op.results:
                check_buffer(tensor_bytes(r.type), "the result", op)
        call = self.make_call(op, frame, ctx)
        try:
            if is_quantized_call(call):
                out = quantized_call(impl, call)
            else:
                out = impl(call)
        except InterpreterError:
            raise
        except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, OverflowError,
                AttributeError, FloatingPointError, np.linalg.LinAlgError) as e:
            raise InterpreterError(f"{op.where()}: {type(e).__name__}: {e}") from e
        return self.results_of(op, out, check_shapes=not batched)

    def make_call(self, op: Operation, frame: dict, ctx) -> OpCall:
        return OpCall(name=op.name, operands=[frame[v] for v in op.operands],
                      operand_types=[v.type for v in op.operands],
                      result_types=[r.type for r in op.results],
                      attrs={k: a.to_python() for k, a in op.attributes.items()},
                      regions=[self.region_callable(r, frame, ctx) for r in op.regions],
                      ctx=ctx, location=op.location.short() if op.location is not None else "")

    @staticmethod
    def results_of(op: Operation, out, check_shapes: bool = True) -> list:
        n = len(op.results)
        if n == 0:
            return []
        if n == 1 and not isinstance(out, list):
            out = [out]
        out = list(out)
        if len(out) != n:
            raise InterpreterError(f"{op.where()} produced {len(out)} values for {n} results")
        return [_coerce(v, r.type, op, check_shapes) for v, r in zip(out, op.results)]


def _coerce(v, t: Type, op: Operation, check_shapes: bool = True):
    if isinstance(t, TensorType):
        if not isinstance(v, np.ndarray) or v.dtype != t.dtype:
            v = np.asarray(v).astype(t.dtype) if not isinstance(v, np.ndarray) else v.astype(t.dtype)
        if not check_shapes:
            return v
        if len(v.shape) != len(t.shape) or any(d is not None and d != s for d, s in zip(t.shape, v.shape)):
            raise InterpreterError(f"{op.where()} produced shape {list(v.shape)}, expected {t}")
    return v


# ---------------------------------------------------------------- ops about the program


def _call(ev: Evaluator, op, frame, ctx):
    callee = op.attributes["callee"].name
    return ev.call_function(callee, [frame[v] for v in op.operands], ctx)


def _while(ev: Evaluator, op, frame, ctx):
    vals = [frame[v] for v in op.operands]
    cond, body = op.regions
    cb, bb = cond.blocks[0], body.blocks[0]
    while True:
        (c,) = ev.run_block(cb, vals, frame, ctx)
        if not bool(np.asarray(c)):
            return vals
        vals = ev.run_block(bb, vals, frame, ctx)


def _if(ev: Evaluator, op, frame, ctx):
    pred = bool(np.asarray(frame[op.operands[0]]))
    region = op.regions[0] if pred else op.regions[1]
    return ev.run_block(region.blocks[0], [], frame, ctx)


def _case(ev: Evaluator, op, frame, ctx):
    index = int(np.asarray(frame[op.operands[0]]))
    n = len(op.regions)
    if index < 0 or index >= n:
        index = n - 1  # spec: out-of-range index runs the last branch
    return ev.run_block(op.regions[index].blocks[0], [], frame, ctx)


def _composite(ev: Evaluator, op, frame, ctx):
    callee = op.attributes["decomposition"].name
    return ev.call_function(callee, [frame[v] for v in op.operands], ctx)


def _custom_call(ev: Evaluator, op, frame, ctx):
    target = op.attr("call_target_name")
    from axle.interpreter.jax_targets import run_jax_target, unsupported_target_message
    if target not in _CUSTOM_CALLS:  # a target the user registered comes first
        out = run_jax_target(ev, op, frame, ctx)
        if out is not None:
            return out
    from axle.interpreter.ops_check import CHECK_TARGETS
    from axle.interpreter.ops_lapack import LAPACK_TARGETS
    fn = CHECK_TARGETS.get(target) or LAPACK_TARGETS.get(target) or _CUSTOM_CALLS.get(target)
    if fn is None:
        raise InterpreterError(unsupported_target_message(target, op.where(), "the interpreter"))
    call = ev.make_call(op, frame, ctx)
    call.name = target
    # copies: a target that writes to its operands must not change the program's values
    # (or the caller's arrays); compiled code hands it copies too
    call.operands = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in call.operands]
    return ev.results_of(op, fn(call))


def _run_parallel(ev: Evaluator, op, frame, ctx):
    from axle.interpreter.collectives import run_parallel
    programs = [[s.name for s in row.elements] for row in op.attributes["programs"].elements]
    infeed = op.attr("infeed", [])
    args = [frame[v] for v in op.operands]

    def run_function(name, fargs, pctx):
        if ev.program_runner is not None:
            return ev.program_runner(name, fargs, pctx)
        return ev.call_function(name, fargs, pctx)

    def num_inputs(name):
        return len(ev.functions[name].function_type.inputs)

    probes = getattr(ctx, "probes", None)
    results, _grid = run_parallel(programs, args, run_function, num_inputs, infeed=infeed, probes=probes)
    return ev.results_of(op, list(results))


_SPECIAL = {
    "func.call": _call, "stablehlo.while": _while, "stablehlo.if": _if, "stablehlo.case": _case,
    "stablehlo.composite": _composite, "stablehlo.custom_call": _custom_call,
    "interpreter.run_parallel": _run_parallel,
}


def run_function(module: Module, args: Sequence, function: Optional[str] = None, ctx=None,
                 program_runner: Optional[Callable] = None) -> list:
    """Run a function of `module` (default: main) and return the list of its results."""
    ev = Evaluator(module, program_runner)
    fn = module.function(function) if function else module.main
    # the program works on its own copies: `return %a` must not hand back the caller's
    # array (compiled code returns fresh buffers), nor may anything write to it
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in check_arguments(fn, args)]
    if ctx is None:
        from axle.interpreter.collectives import ExecContext
        ctx = ExecContext.single_process(lambda name, a, c: ev.call_function(name, a, c))
    return ev.call_function(fn.sym_name, args, ctx)


def interpret(module, *args, function: Optional[str] = None, ctx=None):
    """Run `module`'s main function (or `function`) on numpy arrays with the reference
    semantics. Returns one array for one result, a tuple for several, None for none."""
    from axle.ir import parse_module
    if isinstance(module, str):
        module = parse_module(module)
    out = run_function(module, args, function, ctx)
    if len(out) == 1:
        return out[0]
    return tuple(out) if out else None
