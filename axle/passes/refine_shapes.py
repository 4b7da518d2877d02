"""Shape refinement: make every type static once the arguments' shapes are known.

Programs exported with shape polymorphism (`?` dimensions) compute their shapes at run
time: `get_dimension_size`, arithmetic on the sizes, then `dynamic_reshape`,
`dynamic_broadcast_in_dim`, `dynamic_iota`, `dynamic_pad`, `real_dynamic_slice`,
`dynamic_gather`, `dynamic_conv`. Given static argument types (`specialize`), this pass
repeatedly: replaces `get_dimension_size` of a static dimension by a constant, folds the
arithmetic on constants (with the constant-folding pass), turns each dynamic shape op
whose shape operands are now constants into its static form, and re-infers the result
types of the other ops. It guarantees: when it returns True for `fully_static`, no `?`
is left in the function. It leaves alone shapes that really depend on data.
"""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.types import FunctionType, TensorType, i32, i64
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder, Patterns, apply_patterns

PATTERNS = Patterns("refine-shapes")


def _const(v):
    o = getattr(v, "owner", None)
    if isinstance(o, Operation) and o.name == "stablehlo.constant":
        return o.attributes["value"].array
    return None


def _arr(vals, et=i64):
    return A.DenseArrayAttr(et, tuple(int(x) for x in vals))


@PATTERNS.on("stablehlo.get_dimension_size")
def _dim_size(op, b: Builder):
    """get_dimension_size of a static dimension -> constant."""
    t = op.operands[0].type
    d = op.attr("dimension")
    if not isinstance(t, TensorType) or t.shape[d] is None:
        return None
    return [b.constant(np.array(t.shape[d]), op.results[0].type)]


def _static(shape) -> bool:
    return all(x is not None for x in shape)


def _with_shape(v, shape):
    return TensorType(tuple(int(s) for s in shape), v.type.element_type)


@PATTERNS.on("stablehlo.dynamic_broadcast_in_dim")
def _dbid(op, b):
    """dynamic_broadcast_in_dim with a constant shape -> broadcast_in_dim."""
    shape = _const(op.operands[1])
    if shape is None or not _static(op.operands[0].type.shape):
        return None
    attrs = {"broadcast_dimensions": op.attributes["broadcast_dimensions"]}
    return [b.create("stablehlo.broadcast_in_dim", [op.operands[0]], [_with_shape(op.results[0], shape)],
                     attrs).result]


@PATTERNS.on("stablehlo.dynamic_reshape")
def _dreshape(op, b):
    """dynamic_reshape with a constant shape -> reshape."""
    shape = _const(op.operands[1])
    if shape is None or not _static(op.operands[0].type.shape):
        return None
    return [b.create("stablehlo.reshape", [op.operands[0]], [_with_shape(op.results[0], shape)]).result]


@PATTERNS.on("stablehlo.dynamic_iota")
def _diota(op, b):
    """dynamic_iota with a constant shape -> iota."""
    shape = _const(op.operands[0])
    if shape is None:
        return None
    return [b.create("stablehlo.iota", [], [_with_shape(op.results[0], shape)],
                     {"iota_dimension": op.attributes["iota_dimension"]}).result]


@PATTERNS.on("stablehlo.dynamic_pad")
def _dpad(op, b):
    """dynamic_pad with constant paddings -> pad."""
    lo, hi, interior = (_const(v) for v in op.operands[2:])
    if lo is None or hi is None or interior is None or not _static(op.operands[0].type.shape):
        return None
    attrs = {"edge_padding_low": _arr(lo), "edge_padding_high": _arr(hi), "interior_padding": _arr(interior)}
    return [b.create("stablehlo.pad", op.operands[:2], None, attrs).result]


@PATTERNS.on("stablehlo.real_dynamic_slice")
def _drslice(op, b):
    """real_dynamic_slice with constant bounds -> slice."""
    start, limit, strides = (_const(v) for v in op.operands[1:])
    if start is None or limit is None or strides is None or not _static(op.operands[0].type.shape):
        return None
    attrs = {"start_indices": _arr(start), "limit_indices": _arr(limit), "strides": _arr(strides)}
    return [b.create("stablehlo.slice", [op.operands[0]], None, attrs).result]


@PATTERNS.on("stablehlo.real_dynamic_slice")
def _drslice_sized(op, b):
    """real_dynamic_slice(x, s, s + C, 1) with a constant C -> dynamic_slice(x, s..., sizes C).
    JAX writes `lax.dynamic_slice` with symbolic shapes so; the two take the same elements
    wherever real_dynamic_slice is defined (its slice within bounds)."""
    x, start, limit, strides = op.operands
    st = _const(strides)
    if st is None or not np.all(st == 1) or not _static(x.type.shape):
        return None
    add = getattr(limit, "owner", None)
    if not isinstance(add, Operation) or add.name != "stablehlo.add":
        return None
    a, c = add.operands
    if a is not start:
        a, c = c, a
    sizes = _const(c)
    if a is not start or sizes is None or sizes.shape != (x.type.rank,):
        return None
    et = start.type.element_type
    starts = []
    for d in range(x.type.rank):
        one = b.create("stablehlo.slice", [start], [TensorType((1,), et)],
                       {"start_indices": _arr([d]), "limit_indices": _arr([d + 1]), "strides": _arr([1])})
        starts.append(b.create("stablehlo.reshape", [one.result], [TensorType((), et)]).result)
    out = TensorType(tuple(int(n) for n in sizes), op.results[0].type.element_type)
    return [b.create("stablehlo.dynamic_slice", [x] + starts, [out], {"slice_sizes": _arr(sizes)}).result]


@PATTERNS.on("stablehlo.dynamic_gather")
def _dgather(op, b):
    """dynamic_gather with constant slice sizes -> gather."""
    sizes = _const(op.operands[2])
    if sizes is None:
        return None
    attrs = {k: v for k, v in op.attributes.items()}
    attrs["slice_sizes"] = _arr(sizes)
    return [b.create("stablehlo.gather", op.operands[:2], None, attrs).result]


@PATTERNS.on("stablehlo.dynamic_conv")
def _dconv(op, b):
    """dynamic_conv with constant padding -> convolution."""
    pad = _const(op.operands[2])
    if pad is None:
        return None
    attrs = dict(op.attributes)
    attrs["padding"] = A.DenseElementsAttr(TensorType(pad.shape, i64), pad.astype(np.int64))
    return [b.create("stablehlo.convolution", op.operands[:2], None, attrs).result]


def _elementwise_types(op: Operation) -> list:
    """An elementwise op's results (and a bitcast_convert's between types of one width) take
    the shape of its static operands, with their own element types; [] for other ops or
    when no operand is static."""
    from axle.ir.ops import ELEMENTWISE, lookup
    d = lookup(op.name)
    same_width = op.name == "stablehlo.bitcast_convert" and \
        getattr(op.operands[0].type.element_type, "bitwidth", -1) == getattr(op.results[0].type.element_type, "bitwidth", -2)
    if d is None or not (d.has(ELEMENTWISE) or same_width):
        return []
    for v in op.operands:
        t = v.type
        if isinstance(t, TensorType) and t.is_static and t.rank == op.results[0].type.rank:
            return [TensorType(t.shape, r.type.element_type) for r in op.results]
    return []


def refine_types(module: Module) -> bool:
    """Re-infer result types that are less static than they could be."""
    from axle.ir.shape_inference import infer_result_types, InferenceError
    changed = False
    for fn in module.functions.values():
        if fn.is_declaration:
            continue
        for op in fn.walk():
            if op is fn:
                continue
            if op.name == "stablehlo.while":
                for r in op.regions:
                    for a, v in zip(r.blocks[0].arguments, op.operands):
                        if a.type != v.type:
                            a.type = v.type
                            changed = True
            if all(not isinstance(r.type, TensorType) or r.type.is_static for r in op.results):
                continue
            try:
                types = infer_result_types(op.name, [v.type for v in op.operands], op.attributes, op.regions)
            except (InferenceError, KeyError, ValueError, TypeError):
                types = _elementwise_types(op)  # convert: only the element type is not inferred
            for r, t in zip(op.results, types):
                if isinstance(t, TensorType) and t.is_static and isinstance(r.type, TensorType) \
                        and t.rank == r.type.rank:
                    # only the shape is refined: the declared element type stays (a dot_general
                    # may declare a wider result than its operands, f32 x f32 -> f64)
                    t = TensorType(t.shape, r.type.element_type)
                    if r.type != t:
                        r.type = t
                        changed = True
        ret = fn.body.operations[-1]
        res = tuple(v.type for v in ret.operands)
        ft = fn.function_type
        if res != ft.results:
            fn.attributes["function_type"] = A.TypeAttr(FunctionType(ft.inputs, res))
            changed = True
    return changed


@register_pass
class RefineShapes(Pass):
    name = "refine-shapes"

    def run(self, module: Module) -> bool:
        from axle.passes.registry import PASSES
        changed_any = False
        for _ in range(20):
            changed = apply_patterns(module, PATTERNS)
            changed |= refine_types(module)
            for helper in ("constant-folding", "dce"):
                if helper in PASSES:
                    changed |= bool(PASSES[helper]().run(module))
            changed_any |= changed
            if not changed:
                break
        return changed_any


def specialize(module: Module, function: str, shapes: list) -> Module:
    """Give `function`'s arguments the static `shapes` and refine the whole module."""
    fn = module.function(function)
    ft = fn.function_type
    new_inputs = []
    for a, t, s in zip(fn.body.arguments, ft.inputs, shapes):
        if isinstance(t, TensorType):
            t = TensorType(tuple(s), t.element_type)
            a.type = t
        new_inputs.append(t)
    fn.attributes["function_type"] = A.TypeAttr(FunctionType(tuple(new_inputs), ft.results))
    RefineShapes().run(module)
    return module


def fully_static(module: Module, function: str) -> bool:
    fn = module.function(function)
    for op in fn.walk():
        for v in list(op.results) + list(op.operands):
            if isinstance(v.type, TensorType) and not v.type.is_static:
                return False
    return True
