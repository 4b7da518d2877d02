"""What a compiled conformance case really ran, and the dynamic-shape cases on the CPU.

`how_computed` looks at the module that was compiled and at the compiled programs, and
says for each case one of:

* "native": every value the checks read is computed by compiled code from the run-time
  arguments (the case's inputs, lifted out of the program by lifting.py);
* "host-callback": as native, but some ops ran in Python through host callbacks (FFT,
  collectives, infeed/outfeed, probes); their names are kept;
* "compile-time": some checked value reads no argument in the compiled module and is a
  constant there (or a broadcast, reshape or conversion of one), although it was not one
  in the program: the passes computed it before the backend ran (constant folding). Such
  a case says nothing about the backend. (A value that is a constant in the program
  itself, `zeros_like(x)`, is written by the backend and counts as its work; sizes JAX
  computes from `get_dimension_size` are shapes, not data.)

The dynamic-shape suite (testdata/dynamic, JAX exports with shape polymorphism) has no
checks and no inputs: `run_dynamic_case` draws concrete sizes for its dimension
variables (the leading `tensor<i64>` arguments JAX passes the sizes in), random inputs
of those sizes, runs the interpreter on the original program as the oracle, and the CPU
backend on the program specialized to those sizes (the dimension variables become
constants, then the executable refines every shape from the arguments' shapes), and
compares the results.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.ir.core import BlockArgument, Module, Operation
from axle.ir.shape_inference import InferenceError
from axle.ir.types import TensorType

SIZES = (3, 2, 4, 5, 8, 1)  # sizes tried for the dimension variables, in order


# ops that only move or re-type a folded constant: a value made of these and constants
# is known at compile time, whatever kernel copies it into the result
_CONSTANT_SHAPING = {"stablehlo.constant", "stablehlo.broadcast_in_dim", "stablehlo.broadcast",
                     "stablehlo.reshape", "stablehlo.convert", "stablehlo.bitcast_convert",
                     "stablehlo.transpose", "stablehlo.optimization_barrier"}


def _shape_arithmetic(op: Operation) -> bool:
    """An op on a program's shapes: its results are short integer vectors (JAX computes the
    sizes of symbolic dimensions so), or it builds a tensor from such a shape."""
    if op.name in ("stablehlo.dynamic_broadcast_in_dim", "stablehlo.dynamic_reshape"):
        return True
    if not op.operands:  # an iota, an rng: values, not arithmetic on sizes
        return False
    for r in op.results:
        t = r.type
        if not (isinstance(t, TensorType) and t.is_static and t.rank <= 1 and t.num_elements <= 8
                and (t.element_type.is_int or t.element_type.is_bool)):
            return False
    return bool(op.results)


def _cone(v, args: set) -> tuple[bool, bool]:
    """(reads an argument of the entry block, computes with an op that is not a constant or
    a reshaping of one) for the values `v` depends on, through operands and through what
    the regions of those ops capture."""
    stack, seen = [v], set()
    reads = computes = False
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        owner = getattr(x, "owner", None)
        if isinstance(x, BlockArgument):
            reads = reads or x in args
            continue
        if not isinstance(owner, Operation):
            continue
        if owner.name == "stablehlo.get_dimension_size":  # reads a shape, not the data
            continue
        for inner in owner.walk():
            if inner.name not in _CONSTANT_SHAPING and not _shape_arithmetic(inner):
                computes = True
            stack.extend(inner.operands)
    return reads, computes


def constant_results(module: Module, entry: str, indices: list) -> list[bool]:
    """For each result position of `entry`: whether that result is known without running
    anything (it reads no argument, and is a constant or a broadcast, reshape or conversion
    of one; an iota or an rng op left to the backend is work)."""
    fn = module.function(entry)
    ret = fn.body.operations[-1]
    args = set(fn.body.arguments)
    out = []
    for i in indices:
        reads, computes = _cone(ret.operands[i], args)
        out.append(not reads and not computes)
    return out


def how_computed(module: Module, entry: str, checked: list, programs: list,
                 constant_before: Optional[list] = None) -> tuple[str, list]:
    """("native" | "host-callback" | "compile-time", names of host-callback ops) for a case
    whose entry's results at positions `checked` are what its checks read, `module` being
    what the backend compiled. A checked value is answered at compile time when the passes
    made it a constant (`constant_before`, from the module before the passes, tells the
    values that were constants in the program itself, like `zeros_like(x)`: the backend
    still writes them, and they count as its work)."""
    host = sorted({name for p in programs for name in getattr(p, "host_ops", [])})
    before = constant_before or [False] * len(checked)
    for now, was in zip(constant_results(module, entry, checked), before):
        if now and not was:
            return "compile-time", host
    return ("host-callback" if host else "native"), host


def dimension_variables(fn: Operation) -> int:
    """How many leading arguments are JAX's dimension variables (scalar i64 before the first
    argument with a dynamic dimension)."""
    n = 0
    for t in fn.function_type.inputs:
        if isinstance(t, TensorType) and t.rank == 0 and str(t.element_type) == "i64":
            n += 1
        else:
            break
    return n


def random_input(t: TensorType, shape: tuple, rng: np.random.Generator, ints: str = "signed") -> np.ndarray:
    """Random values of type t at `shape`; integers in [-4, 5) ("signed"), [0, 2) ("small",
    for index operands) or 0 ("zero")."""
    dt = np.dtype(t.dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dt, np.integer):
        if ints == "zero":
            return np.zeros(shape, dt)
        lo = 0 if np.issubdtype(dt, np.unsignedinteger) or ints == "small" else -4
        return rng.integers(lo, 5 if ints == "signed" else 2, shape).astype(dt)
    if np.issubdtype(dt, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _inputs(fn: Operation, n_dims: int, size: int, rng, ints: str) -> list:
    args = [np.array(size, np.int64) for _ in range(n_dims)]
    for t in fn.function_type.inputs[n_dims:]:
        shape = tuple(size if d is None else d for d in t.shape)
        args.append(random_input(t, shape, rng, ints))
    return args


def specialize_dimensions(module: Module, entry: str, values: list) -> Module:
    """`module` (a copy is made) with its leading dimension-variable arguments replaced by
    constants of `values` and removed from the signature."""
    from axle.ir import attributes as A
    from axle.ir import parse_module, print_module
    from axle.ir.types import FunctionType
    m = parse_module(print_module(module))
    fn = m.function(entry)
    block = fn.body
    n = len(values)
    consts = []
    for a, v in zip(block.arguments[:n], values):
        c = Operation("stablehlo.constant", [], [a.type],
                      {"value": A.DenseElementsAttr(a.type, np.array(v, np.int64))})
        consts.append(c)
    for a, c in zip(block.arguments[:n], consts):
        a.replace_all_uses_with(c.results[0])
    for c in reversed(consts):
        block.insert(0, c)
    del block.arguments[:n]
    for i, a in enumerate(block.arguments):
        a.index = i
    ft = fn.function_type
    fn.attributes["function_type"] = A.TypeAttr(FunctionType(tuple(ft.inputs[n:]), ft.results))
    for key in ("arg_attrs", "res_attrs"):
        fn.attributes.pop(key, None)
    return m


def close(got: np.ndarray, want: np.ndarray) -> Optional[str]:
    """None when the backend's result matches the interpreter's, else what differs."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    name = want.dtype.name
    if not (np.issubdtype(want.dtype, np.inexact) or name in ("bfloat16", "float16")):
        if not np.array_equal(got, want):
            return f"{int(np.sum(got != want))} of {want.size} elements differ"
        return None
    tol = {"bfloat16": 2e-2, "float16": 2e-3, "float32": 2e-5, "complex64": 2e-5}.get(name, 1e-10)
    g = got.astype(np.complex128 if np.iscomplexobj(want) else np.float64)
    w = want.astype(g.dtype)
    finite = np.abs(w[np.isfinite(w)])
    scale = max(1.0, float(finite.max(initial=0.0)))
    bad = ~np.isclose(g, w, rtol=tol, atol=tol * scale, equal_nan=True)
    if np.any(bad):
        i = np.argwhere(bad)[0]
        return (f"{int(bad.sum())} of {want.size} elements differ beyond {tol:g}; at "
                f"{tuple(int(k) for k in i)}: {g[tuple(i)]} vs {w[tuple(i)]}")
    return None


class InvalidProgram(Exception):
    """The case breaks a constraint of the spec that only shows at static shapes."""


def run_dynamic_case(module: Module, entry: str, seed: int = 0) -> tuple[str, list]:
    """Compile and run a dynamic-shape case on the CPU at concrete sizes; raises
    AssertionError on a wrong result. Returns how_computed's answer."""
    from axle.backends.cpu.executable import CpuExecutable
    from axle.interpreter.evaluator import run_function
    from axle.passes import PassManager, default_pipeline
    fn = module.function(entry)
    n_dims = dimension_variables(fn)
    rng = np.random.default_rng(seed)
    tried = []
    tries = [(size, ints) for ints in ("signed", "small", "zero") for size in SIZES]
    for size, ints in tries:
        args = _inputs(fn, n_dims, size, rng, ints)
        try:
            with np.errstate(all="ignore"):
                want = run_function(module, args, entry)
        except Exception as e:  # these sizes do not fit the program's constraints
            tried.append(f"{size} ({ints} ints): {str(e).splitlines()[0][:100] if str(e) else type(e).__name__}")
            continue
        special = specialize_dimensions(module, entry, [size] * n_dims)
        before = constant_results(special, entry, list(range(len(want))))

        def pipeline(m):
            PassManager(default_pipeline(), verify_each=True).run(m)

        exe = CpuExecutable(special, entry, pipeline=pipeline)
        try:
            got = exe.execute(args[n_dims:])
        except InferenceError as e:
            if e.constraint is None or not e.constraint.startswith("C"):
                raise
            raise InvalidProgram(f"once its shapes are static the program breaks {e} (upstream only "
                                 f"round-trips it; the interpreter is lenient)") from e
        for k, (g, w) in enumerate(zip(got, want)):
            why = close(g, w)
            if why is not None:
                raise AssertionError(f"result {k} at size {size}: {why}")
        programs = [p.program for p in exe._programs.values()]
        compiled = exe._optimized_module()
        from axle.passes.refine_shapes import specialize
        from axle.ir import parse_module, print_module
        static = specialize(parse_module(print_module(compiled)), entry, [a.shape for a in args[n_dims:]])
        return how_computed(static, entry, list(range(len(want))), programs, before)
    raise AssertionError("the interpreter rejects every size tried for the dimension variables: "
                         + "; ".join(tried))
