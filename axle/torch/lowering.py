"""An ATen FX graph (from aot_autograd or torch.export) -> one StableHLO function, as text.

Shapes are concrete: symbolic sizes (dynamic=True) are bound to the sizes of the call being
compiled, so each distinct shape gets its own program (axle specializes per signature too).
Every op is lowered by one rule of the table in axle/torch/rules.py, keyed by the ATen
overload; an op with no rule raises UnsupportedOp naming it, before anything is emitted.
Each rule's result is checked against the shape and dtype torch recorded for the node."""
from __future__ import annotations

import operator
from typing import Optional
from dataclasses import dataclass, field

import torch
import torch.fx

from axle.torch.dtypes import mlir_type
from axle.torch.emitter import Emitter, V
from axle.torch.rules import RULES, Unsupported


class UnsupportedOp(Exception):
    """An ATen op (or an argument form of it) with no axle lowering: the graph runs eagerly."""

    def __init__(self, op: str, why: str = ""):
        self.op = op
        super().__init__(f"{op}{': ' + why if why else ''}")


class LoweringError(Exception):
    """A rule produced a value whose shape or dtype differs from torch's (a bridge bug)."""


_SYM_OPS = {operator.mul, operator.add, operator.sub, operator.floordiv, operator.truediv,
            operator.mod, operator.neg, operator.pow, operator.eq, operator.ne, operator.lt,
            operator.le, operator.gt, operator.ge, torch.sym_max, torch.sym_min, torch.sym_float,
            torch.sym_int, torch.sym_not, torch.sym_sum}
_PASSIVE = {operator.getitem}


def _op_name(target) -> str:
    return str(getattr(target, "_name", None) or getattr(target, "__name__", target))


def _is_sym_node(node) -> bool:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool))


def unsupported_ops(gm: torch.fx.GraphModule) -> list[str]:
    """Names of the ATen ops in `gm` that have no rule (empty when all can be lowered)."""
    missing = []
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target in _PASSIVE or n.target in _SYM_OPS:
            continue
        if _is_sym_node(n) or n.target in RULES:
            continue
        name = _op_name(n.target)
        if name not in missing:
            missing.append(name)
    return missing


@dataclass
class Lowered:
    """The text and how to map its results back: `outputs[i]` is ('tensor', k, strides,
    order) for result k of @main, ('value', x) for a Python value (a size, None), ('view',
    input index, steps) for a view of an input that torch makes (replay_view)."""
    text: str
    outputs: list = field(default_factory=list)
    arg_names: list = field(default_factory=list)
    # per tensor argument: the dimension order it is passed in (call with t.permute(order)),
    # None for row-major
    arg_perms: list = field(default_factory=list)
    # whether @main takes a last argument tensor<2xui64>: the state of the graph's random
    # numbers (dropout, bernoulli), a fresh draw from torch's generator on every call
    rng_state: bool = False


class _Sizes:
    """Binds the symbols of a graph's symbolic sizes to the sizes of concrete inputs."""

    def __init__(self):
        self.bindings = {}

    def bind(self, val, concrete):
        if concrete is None:  # (an effect token: aot passes None for it at run time)
            return
        if isinstance(val, torch.Tensor):
            for d, c in zip(val.shape, concrete):
                self.bind(d, c)
        elif isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            expr = val.node.expr
            if expr.is_Symbol:
                self.bindings[expr] = concrete

    def value(self, x):
        if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            expr = x.node.expr.xreplace({k: v for k, v in self.bindings.items()})
            if isinstance(x, torch.SymInt):
                return int(expr)
            if isinstance(x, torch.SymBool):
                return bool(expr)
            return float(expr)
        if isinstance(x, (list, tuple)):
            return type(x)(self.value(e) for e in x)
        return x

    def spec(self, val):
        """(shape, mlir dtype) of a fake tensor, sizes made concrete."""
        return tuple(self.value(d) for d in val.shape), mlir_type(val.dtype)


def lower_graph(gm: torch.fx.GraphModule, args, arg_names=None, arg_attrs=None, constants=(),
                result_attrs=None, input_views: bool = False) -> Lowered:
    """Lower `gm` for concrete `args` (tensors, or Python numbers for symbolic-size inputs).
    Placeholders whose index is in `constants` become constants in the text (their tensor in
    args gives the value); `arg_attrs`/`result_attrs` are extra attribute text per argument /
    result. With `input_views`, an output that is a view of an input (a transposed weight a
    training graph saves for its backward) is not a result: outputs[i] is ('view', input
    index, the view nodes), made by torch from the input at call time."""
    missing = unsupported_ops(gm)
    if missing:
        raise UnsupportedOp(missing[0])
    sizes = _Sizes()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args):
        raise ValueError(f"axle.torch: graph takes {len(placeholders)} inputs, got {len(args)}")
    for n, a in zip(placeholders, args):
        val = n.meta.get("val")
        sizes.bind(val, tuple(a.shape) if isinstance(a, torch.Tensor) else a)
    em = Emitter()
    env = {}
    params = []
    names = []
    arg_perms = []  # per tensor argument: its physical dimension order (None: row-major)
    for i, (n, a) in enumerate(zip(placeholders, args)):
        if i in constants:
            from axle.torch.dtypes import to_numpy
            env[n] = em.dense(to_numpy(a), mlir_type(a.dtype))
        elif isinstance(a, torch.Tensor):
            perm = physical_order(a) if input_views else None
            shape = tuple(a.shape) if perm is None else tuple(a.shape[d] for d in perm)
            v = V(f"%arg{i}", shape, mlir_type(a.dtype))
            # a transposed view (a saved weight's .t()) arrives in its memory order, transposed
            # here, where transpose-fold can fold it into the dot that reads it
            env[n] = v if perm is None else em.transpose(v, [perm.index(d) for d in range(len(perm))])
            arg_perms.append(perm)
            name = arg_names[i] if arg_names else n.name
            attrs = (arg_attrs[i] if arg_attrs else None) or f'axle.name = "{name}"'
            params.append(f"{v.name}: {v.type} {{{attrs}}}")
            names.append(name)
        else:
            env[n] = a
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "output"):
            continue
        if n.op == "get_attr":
            env[n] = _get_attr_const(em, gm, n.target)
            continue
        if n.op != "call_function":
            raise UnsupportedOp(f"{n.op} {n.target}")
        if n.target is operator.getitem:
            env[n] = env[n.args[0]][n.args[1]]
            continue
        if _is_sym_node(n) or n.target in _SYM_OPS:
            env[n] = sizes.value(n.meta.get("val"))
            continue
        fn = RULES[n.target]
        a = torch.fx.node.map_aggregate(n.args, lambda x: env[x] if isinstance(x, torch.fx.Node) else sizes.value(x))
        k = torch.fx.node.map_aggregate(n.kwargs, lambda x: env[x] if isinstance(x, torch.fx.Node) else sizes.value(x))
        out = _spec_of(sizes, n.meta.get("val"))
        if n.target in STORAGE_OPS:  # views of the input's memory: its strides say where each element is
            val = n.args[0].meta.get("val")
            if isinstance(val, torch.Tensor):
                k = dict(k, _strides=tuple(sizes.value(tuple(val.stride()))), _base=int(val.storage_offset()))
        try:
            result = fn(em, out, *a, **k)
        except Unsupported as e:
            raise UnsupportedOp(_op_name(n.target), str(e)) from None
        _check(n, result, out)
        env[n] = result
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    results, plan = [], []
    for x in _flatten(out_node.args[0]):
        v = env[x] if isinstance(x, torch.fx.Node) else x
        view = _view_of_input(x, placeholders) if input_views and isinstance(v, V) else None
        if view is not None:  # its sizes made concrete: this lowering is for this call's sizes
            resolve = lambda a: env[a] if isinstance(a, torch.fx.Node) else sizes.value(a)  # noqa: E731
            steps = tuple((n.target, torch.fx.node.map_aggregate(n.args[1:], resolve),
                           torch.fx.node.map_aggregate(n.kwargs, resolve)) for n in view[1])
            plan.append(("view", view[0], steps))
            continue
        if isinstance(v, V):
            val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
            stride = sizes.value(tuple(val.stride())) if isinstance(val, torch.Tensor) else None
            if stride is not None and stride == _contiguous_strides(v.shape):
                stride = None
            order = physical_order(val) if input_views and stride is not None and v.rank >= 2 else None
            if order is not None:  # (channels-last) returned in memory order: torch gets a view, no copy
                v = em.transpose(v, order)
            plan.append(("tensor", len(results), stride, order))
            results.append(v)
        else:
            plan.append(("value", sizes.value(v)))
    if em.rng_state is not None:
        params.append(f'{em.rng_state.name}: {em.rng_state.type} {{axle.name = "rng_state"}}')
    ret = ", ".join(v.name for v in results)
    ret_t = ", ".join(v.type for v in results)
    sig_t = ", ".join(v.type + (f" {{{result_attrs[k]}}}" if result_attrs and result_attrs[k] else "")
                      for k, v in enumerate(results))
    text = (f"func.func @main({', '.join(params)}) -> ({sig_t}) {{\n" + "\n".join(em.lines)
            + f'\n    "func.return"({ret}) : ({ret_t}) -> ()\n}}\n')
    return Lowered(text, plan, names, arg_perms, rng_state=em.rng_state is not None)


_VIEW_OPS = {torch.ops.aten.t.default, torch.ops.aten.permute.default, torch.ops.aten.transpose.int,
             torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default, torch.ops.aten.unsqueeze.default,
             torch.ops.aten.squeeze.dim, torch.ops.aten.squeeze.default, torch.ops.aten.expand.default,
             torch.ops.aten.alias.default}


def _view_of_input(x, placeholders) -> Optional[tuple]:
    """(placeholder index, the view nodes from it to x in order) when x is a chain of view
    ops on a graph input, or the input itself (a training forward returns each weight it
    saves for the backward: handed back as torch's tensor, as eager saves it, not copied on
    every call: 45 of a ResNet-18 forward's 52 MB of results), else None. The views' size
    arguments may be symbolic (nodes computing sizes, anywhere in their lists: a view to
    [s0, s1 * s2] with dynamic shapes); lower_graph makes them concrete."""
    chain = []
    while isinstance(x, torch.fx.Node) and x.op == "call_function" and x.target in _VIEW_OPS:
        rest = list(x.args[1:]) + list(x.kwargs.values())
        if not all(_size_argument(a) for a in rest):
            return None
        chain.append(x)
        x = x.args[0]
    if not isinstance(x, torch.fx.Node) or x.op != "placeholder":
        return None
    return placeholders.index(x), tuple(reversed(chain))


def _size_argument(a) -> bool:
    """a is a size, a dimension, a list of them, or a node computing one (no tensor)."""
    if isinstance(a, (list, tuple)):
        return all(_size_argument(b) for b in a)
    if isinstance(a, torch.fx.Node):
        return _is_sym_node(a)
    return not isinstance(a, torch.Tensor)


def physical_order(t: torch.Tensor) -> Optional[list]:
    """The order of t's dimensions in memory (outermost first) when t is a permutation of a
    row-major tensor other than row-major itself (a transposed view), else None."""
    if t.is_contiguous() or t.dim() < 2 or 0 in t.shape:
        return None
    order = sorted(range(t.dim()), key=lambda d: (-t.stride(d), d))
    if t.permute(order).is_contiguous():
        return order
    return None


def replay_view(base: torch.Tensor, steps) -> torch.Tensor:
    """The view of `base` that `steps` ((view op, its other arguments, its keyword
    arguments), sizes concrete: a "view" entry of Lowered.outputs) describes, made by torch."""
    for target, args, kwargs in steps:
        base = target(base, *args, **kwargs)
    return base


def _flatten(x) -> list:
    """Graph outputs in order, nested lists/tuples flattened (None and sizes kept in place)."""
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _flatten(item)]
    return [x]


STORAGE_OPS = (torch.ops.aten.as_strided.default, torch.ops.aten.as_strided_scatter.default)


def _contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def _spec_of(sizes: _Sizes, val):
    if isinstance(val, torch.Tensor):
        return sizes.spec(val)
    if isinstance(val, (list, tuple)):
        return [_spec_of(sizes, v) for v in val]
    return None


def _check(node, result, spec):
    if spec is None or result is None:
        return
    if isinstance(spec, list):
        for r, s in zip(result, spec):
            _check(node, r, s)
        return
    if isinstance(result, V) and result.dtype.startswith("!quant"):  # torch stores it as ints
        if result.shape != tuple(spec[0]):
            raise LoweringError(f"{_op_name(node.target)} ({node.name}): lowered to {result.type}, "
                                f"torch expects shape {tuple(spec[0])}")
        return
    if isinstance(result, V) and (result.shape, result.dtype) != (tuple(spec[0]), spec[1]):
        raise LoweringError(f"{_op_name(node.target)} ({node.name}): lowered to {result.type}, "
                            f"torch expects shape {tuple(spec[0])} {spec[1]}")


def _get_attr_const(em: Emitter, gm, target: str):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, torch.Tensor):
        return obj
    from axle.torch.dtypes import to_numpy
    return em.dense(to_numpy(obj), mlir_type(obj.dtype))
