"""Shape inference rules of reductions and windows: reduce, reduce_window,
select_and_scatter, map, sort."""
from __future__ import annotations

from axle.ir.types import TensorType
from axle.ir.shape_inference.core import (ResultTypeRequired, _Ctx, _result, _rule, _shape_text, _sig_text,
                                          i1, region_signature, shapes_compatible)
from axle.ir.shape_inference.dot_conv import _num_windows
from axle.ir.shape_inference.elementwise import _same_shape
from axle.ir.shape_inference.indexing import _check_reducer

# ---------------------------------------------------------------- reductions, windows


@_rule("reduce")
def _reduce(c: _Ctx):
    n2 = len(c.types)
    c.need(n2 >= 2 and n2 % 2 == 0, "C3", f"needs N inputs and N init values, found {n2} operands")
    N = n2 // 2
    inputs, inits = c.tensors(0, N), c.tensors(N)
    shape = _same_shape(c, inputs, "C1")
    for i, (a, b) in enumerate(zip(inputs, inits)):
        c.need(a.element_type == b.element_type, "C2",
               f"init value #{i} element type {b.element_type} must be the input's {a.element_type}")
        c.need(b.rank == 0, "I2", f"init value #{i} must be a 0-d tensor, found {b}")
    dims = c.ints("dimensions")
    for x in dims:
        c.need(0 <= x < len(shape), "C4", f"dimensions {dims}: {x} is out of range for rank {len(shape)}")
    c.need(len(set(dims)) == len(dims), "C5", f"dimensions {dims} must be unique")
    es = _check_reducer(c, 0, [t.element_type for t in inputs], "C6") or [t.element_type for t in inputs]
    out = tuple(n for k, n in enumerate(shape) if k not in dims)
    return [_result(TensorType(out, e), "exact", "C7") for e in es]


def _window_attrs(c: _Ctx, rank: int, first_c: int):
    C = lambda k: f"C{first_c + k}"  # noqa: E731
    wd = c.ints("window_dimensions")
    c.need(len(wd) == rank, C(0), f"window_dimensions must have {rank} entries, found {wd}")
    c.need(all(x > 0 for x in wd), C(1), f"window_dimensions must be positive, found {wd}")
    ws = c.ints("window_strides", [1] * rank)
    c.need(len(ws) == rank, C(2), f"window_strides must have {rank} entries, found {ws}")
    c.need(all(x > 0 for x in ws), C(3), f"window_strides must be positive, found {ws}")
    return wd, ws


@_rule("reduce_window")
def _reduce_window(c: _Ctx):
    n2 = len(c.types)
    c.need(n2 >= 2 and n2 % 2 == 0, "C1", f"needs N inputs and N init values, found {n2} operands")
    N = n2 // 2
    inputs, inits = c.tensors(0, N), c.tensors(N)
    shape = _same_shape(c, inputs, "C2")
    for i, (a, b) in enumerate(zip(inputs, inits)):
        c.need(a.element_type == b.element_type, "C3",
               f"init value #{i} element type {b.element_type} must be the input's {a.element_type}")
    R = len(shape)
    wd, ws = _window_attrs(c, R, 4)
    bd = c.ints("base_dilations", [1] * R)
    c.need(len(bd) == R, "C8", f"base_dilations must have {R} entries, found {bd}")
    c.need(all(x > 0 for x in bd), "C9", f"base_dilations must be positive, found {bd}")
    wdl = c.ints("window_dilations", [1] * R)
    c.need(len(wdl) == R, "C10", f"window_dilations must have {R} entries, found {wdl}")
    c.need(all(x > 0 for x in wdl), "C11", f"window_dilations must be positive, found {wdl}")
    pad, pshape = c.matrix("padding", R)
    c.need(tuple(pshape) == (R, 2), "C12", f"padding must have shape [{R}, 2], found {list(pshape)}")
    es = _check_reducer(c, 0, [t.element_type for t in inputs], "C13") or [t.element_type for t in inputs]
    out = tuple(_num_windows(shape[k], wd[k], ws[k], pad[k][0], pad[k][1], bd[k], wdl[k]) for k in range(R))
    return [_result(TensorType(out, e), "exact", "C15") for e in es]


@_rule("select_and_scatter")
def _select_and_scatter(c: _Ctx):
    c.count(3)
    operand, source, init = c.tensors()
    c.need(operand.element_type == source.element_type, "C1",
           f"source element type {source.element_type} must be the operand's {operand.element_type}")
    c.need(init.element_type == operand.element_type and init.rank == 0, "C3",
           f"init_value must be a 0-d tensor of {operand.element_type}, found {init}")
    R = operand.rank
    wd, ws = _window_attrs(c, R, 4)
    pad, pshape = c.matrix("padding", R)
    c.need(tuple(pshape) == (R, 2), "C8", f"padding must have shape [{R}, 2], found {list(pshape)}")
    want = tuple(_num_windows(operand.shape[k], wd[k], ws[k], pad[k][0], pad[k][1]) for k in range(R))
    c.need(shapes_compatible(want, source.shape), "C2",
           f"source shape must be the number of windows {_shape_text(want)}, found {source}")
    E = operand.element_type
    if len(c.regions) >= 1:
        ins, outs = region_signature(c.regions[0])
        s = TensorType((), E)
        c.need(len(ins) == 2 and ins[0] == s and ins[1] == s and len(outs) == 1
               and outs[0] == TensorType((), i1), "C9",
               f"select must have type ({s}, {s}) -> tensor<i1>, found {_sig_text(ins, outs)}")
    es = _check_reducer(c, 1, [E], "C10", "scatter")
    E2 = es[0] if es else E
    return [_result(TensorType(operand.shape, E2), "exact", "C11")]


@_rule("map")
def _map(c: _Ctx):
    c.need(len(c.types) > 0, "C2", "needs at least one input")
    ts = c.tensors()
    shape = _same_shape(c, ts, "C1")
    dims = c.ints("dimensions", list(range(len(shape))))
    c.need(dims == list(range(len(shape))), "C3", f"dimensions must be {list(range(len(shape)))}, found {dims}")
    if not c.regions:
        raise ResultTypeRequired("needs its computation region to infer the result type", None, c.name)
    ins, outs = region_signature(c.regions[0])
    want = [TensorType((), t.element_type) for t in ts]
    c.need(ins == want and len(outs) == 1 and isinstance(outs[0], TensorType) and outs[0].rank == 0, "C4",
           f"computation must have type ({', '.join(map(str, want))}) -> tensor<E>, found {_sig_text(ins, outs)}")
    return [_result(TensorType(shape, outs[0].element_type), "exact", "C4")]


@_rule("sort")
def _sort(c: _Ctx):
    c.need(len(c.types) > 0, "C1", "needs at least one input")
    ts = c.tensors()
    _same_shape(c, ts, "C3")
    R = ts[0].rank
    dim = c.int("dimension", -1)
    c.need(-R <= dim < R, "C4", f"dimension {dim} must be in [{-R}, {R})")
    if c.regions:
        ins, outs = region_signature(c.regions[0])
        want = []
        for t in ts:
            want += [TensorType((), t.element_type)] * 2
        c.need(ins == want and outs == [TensorType((), i1)], "C5",
               f"comparator must have type ({', '.join(map(str, want))}) -> tensor<i1>, found "
               f"{_sig_text(ins, outs)}")
    return [_result(t, "exact", "C2") for t in ts]
