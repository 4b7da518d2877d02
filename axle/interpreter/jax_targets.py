"""Custom-call targets that JAX emits for the CPU, with their single-device meaning.

* `Sharding`, `SPMDFullToShardShape`, `SPMDShardToFullShape` (GSPMD annotations from
  `with_sharding_constraint` / `shard_map` without Shardy): the identity on one device,
  where a shard is the whole array (operand and result types are equal).
* `ApproxTopK` (`lax.approx_max_k` / `approx_min_k`): its contract is satisfied by the
  exact top k, which is what XLA's CPU fallback computes: a stable sort of the operands
  along `reduction_dim` with the comparator in `called_computations`, cut to the
  result's size there (k, or more when `aggregate_to_topk = false`). The init operands
  only pad approximate implementations and are not read.
* `shape_assertion` (`jax.export` with symbolic shapes): `%ok` is false -> raise
  `ShapeAssertionError` with `error_message` formatted with the other operands' values.

Targets that call back into the Python process that lowered the program (host callbacks)
cannot run in axle; `unsupported_target_message` names the JAX API that emits each.
The CPU backend reads the same facts (passes/jax_custom_calls.py, backends/cpu/kernels_jax.py).
"""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np

from axle.errors import ArgumentError
from axle.interpreter.registry import InterpreterError

IDENTITY_TARGETS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")

# target -> the JAX APIs that emit it (for the error a user sees)
ORIGINS = {
    "xla_ffi_python_cpu_callback": "jax.pure_callback, jax.debug.print, jax.debug.callback or "
                                   "jax.experimental.io_callback",
    "xla_ffi_partitioned_python_cpu_callback": "jax.pure_callback / jax.experimental.io_callback "
                                               "under a sharded jit",
    "xla_python_cpu_callback": "jax.pure_callback, jax.debug.print or io_callback (older jaxlib)",
    "xla_ffi_python_gpu_callback": "jax.pure_callback, jax.debug.print or io_callback on a GPU",
    "xla_python_gpu_callback": "jax.pure_callback, jax.debug.print or io_callback on a GPU (older jaxlib)",
    "tpu_custom_call": "jax.experimental.pallas (pallas_call) for TPU",
    "mosaic_gpu": "jax.experimental.pallas / mosaic for GPU",
    "__gpu$xla.gpu.triton": "jax.experimental.pallas (pallas_call) for GPU (Triton)",
    "annotate_device_placement": "jax.device_put / memory kinds (host offloading)",
    "MoveToHost": "host offloading (jax.device_put to pinned_host memory)",
    "MoveToDevice": "host offloading (jax.device_put from pinned_host memory)",
}
HOST_CALLBACKS = {t for t in ORIGINS if "callback" in t}


class ShapeAssertionError(ArgumentError, ValueError):
    """A `shape_assertion` of a program exported with symbolic shapes failed: the arguments'
    shapes do not satisfy the shape specification the program was exported with. Call it
    with shapes that do (the message says which dimension variable is wrong)."""


def unsupported_target_message(target: str, where: str, backend: str = "axle") -> str:
    """Why `custom_call @target` cannot run, naming the JAX API that emitted it when known."""
    origin = ORIGINS.get(target)
    if target in HOST_CALLBACKS:
        return (f"{where}: custom call target '{target}' (emitted by {origin}) calls back into the "
                f"Python process that lowered the program; {backend} cannot run it. Remove the "
                f"callback from the jitted function, or register a target of your own with "
                f"axle.register_custom_call and call it instead")
    if origin is not None:
        return (f"{where}: custom call target '{target}' (emitted by {origin}) is not supported "
                f"by {backend}")
    return (f"{where}: custom call target '{target}' is not registered "
            f"(register one with axle.register_custom_call)")


def explain_target(op, backend: str) -> Optional[str]:
    """Why a JAX target the rewrite to one-device ops left in place cannot be compiled, or
    None when `op` is not one of them."""
    target = op.attr("call_target_name")
    if target in IDENTITY_TARGETS:
        return (f"{op.where()}: custom call '{target}' from {[str(v.type) for v in op.operands]} to "
                f"{[str(r.type) for r in op.results]} splits arrays across devices; {backend} runs "
                f"sharded programs on one device, where a shard is the whole array")
    if target == "ApproxTopK":
        try:
            approx_top_k_params(op)
        except InterpreterError as e:
            return str(e)
        return f"{op.where()}: ApproxTopK on operands of dynamic shape is not supported by {backend}"
    return None


def format_assertion(message: str, values: list) -> str:
    """`error_message` with {0}, {1}, ... replaced by the operands' values (as JAX does)."""
    ints = [int(np.asarray(v).reshape(-1)[0]) if np.asarray(v).size == 1 else np.asarray(v).tolist()
            for v in values]
    try:
        return message.format(*ints)
    except (IndexError, KeyError, ValueError):
        return f"{message} (operands: {ints})"


def backend_config(op) -> dict:
    """The target's options: `mhlo.backend_config = {...}` (JAX >= 0.4.3x), else plain attributes."""
    cfg = op.attributes.get("mhlo.backend_config")
    out = {k: a.to_python() for k, a in op.attributes.items()}
    if cfg is not None and isinstance(cfg.to_python(), dict):
        out.update(cfg.to_python())
    return out


def approx_top_k_params(op) -> tuple[int, int, str]:
    """(number of sorted operands, reduction dimension, comparator function name), checked."""
    where = op.where()
    cfg = backend_config(op)
    n = len(op.operands)
    if n % 2 or n == 0 or len(op.results) != n // 2:
        raise InterpreterError(f"{where}: ApproxTopK takes N operands and N init values for N results, "
                               f"got {n} operands and {len(op.results)} results")
    k = n // 2
    rank = len(op.operands[0].type.shape)
    dim = int(cfg.get("reduction_dim", rank - 1))
    if dim < 0:
        dim += rank
    if not 0 <= dim < rank:
        raise InterpreterError(f"{where}: ApproxTopK reduction_dim {cfg.get('reduction_dim')} out of range "
                               f"for rank {rank}")
    comps = cfg.get("called_computations") or []
    if len(comps) != 1:
        raise InterpreterError(f"{where}: ApproxTopK needs one comparator in called_computations")
    top_k = int(cfg.get("top_k", 0))
    size = op.results[0].type.shape[dim]
    if size is not None and top_k and size < top_k:
        raise InterpreterError(f"{where}: ApproxTopK result size {size} along dimension {dim} is less "
                               f"than top_k = {top_k}")
    return k, dim, comps[0]


def _approx_top_k(ev, op, frame, ctx):
    k, dim, comp = approx_top_k_params(op)
    inputs = [np.asarray(frame[v]) for v in op.operands[:k]]
    size = op.results[0].type.shape[dim]
    moved = [np.moveaxis(a, dim, -1) for a in inputs]
    lanes = moved[0].shape[:-1]
    n = moved[0].shape[-1]
    size = n if size is None else size
    outs = [np.empty(m.shape[:-1] + (size,), m.dtype) for m in moved]
    for lane in np.ndindex(*lanes):
        cols = [m[lane] for m in moved]

        def less(i, j, cols=cols):
            args = []
            for c in cols:
                args += [c[i:i + 1].reshape(()), c[j:j + 1].reshape(())]
            if bool(np.asarray(ev.call_function(comp, args, ctx)[0])):
                return -1
            args = []
            for c in cols:
                args += [c[j:j + 1].reshape(()), c[i:i + 1].reshape(())]
            return 1 if bool(np.asarray(ev.call_function(comp, args, ctx)[0])) else 0
        order = sorted(range(n), key=functools.cmp_to_key(less))[:size]  # stable
        for o, c in zip(outs, cols):
            o[lane] = c[order]
    return ev.results_of(op, [np.moveaxis(o, -1, dim) for o in outs])


def _identity(ev, op, frame, ctx):
    target = op.attr("call_target_name")
    if len(op.operands) != 1 or len(op.results) != 1:
        raise InterpreterError(f"{op.where()}: custom call '{target}' takes one operand and has one result")
    if op.operands[0].type != op.results[0].type:
        raise InterpreterError(f"{op.where()}: custom call '{target}' from {op.operands[0].type} to "
                               f"{op.results[0].type} splits the array across devices; on one device a "
                               f"shard is the whole array (axle has no multi-device partitioner yet)")
    return ev.results_of(op, [frame[op.operands[0]]])


def check_shape_assertion(op, values: list) -> None:
    """Raise ShapeAssertionError when values[0] (the predicate) is false."""
    if not values:
        raise InterpreterError(f"{op.where()}: shape_assertion needs a predicate operand")
    if not bool(np.asarray(values[0]).reshape(-1)[0]):
        msg = op.attr("error_message") or "shape assertion failed"
        raise ShapeAssertionError(format_assertion(str(msg), values[1:]))


def _shape_assertion(ev, op, frame, ctx):
    check_shape_assertion(op, [frame[v] for v in op.operands])
    return ev.results_of(op, [])


JAX_TARGETS = {"ApproxTopK": _approx_top_k, "shape_assertion": _shape_assertion,
               **{t: _identity for t in IDENTITY_TARGETS}}


def run_jax_target(ev, op, frame, ctx) -> Optional[list]:
    """The results of a JAX custom call, or None when `op`'s target is not one of them."""
    fn = JAX_TARGETS.get(op.attr("call_target_name"))
    return None if fn is None else fn(ev, op, frame, ctx)
