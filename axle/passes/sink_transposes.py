"""Transpose sinking (pass "sink-transposes"): elementwise work runs in the layout a value
was produced in, and transposes move down to where they are needed, or cancel.

A convolution in another layout than its kernel's (PyTorch's NCHW on the CPU's NHWC
kernels) is wrapped in transposes: NHWC result -> NCHW, then the bias, batch norm, ReLU
in NCHW, then NCHW -> NHWC for the next convolution. The elementwise ops in between then
read their input across the innermost dimension (a strided loop that does not vectorize),
and the two transposes around them move the data twice. Rewriting

    e(transpose(x, p), broadcast(b), ...) -> transpose(e(x, broadcast'(b), ...), p)

computes e along x's layout, and pushes the transpose below it; repeated, the transpose
reaches the next convolution's transpose, and the pair composes to nothing. A training
graph that also returns the NCHW activation keeps one plain transpose of it (a tiled
copy), where it had two strided loops before.

The rewrite applies to a transpose only when every one of its readers can take x
instead (so no value ends up transposed twice):
* an elementwise op in the same block; its other operands are read as their x-layout
  forms: a transpose by the same permutation as its operand, a broadcast made along x's
  layout, a splat constant or scalar as it is, any other value through the inverse
  transpose (a residual's skip, a saved NCHW activation: the transpose moves to it);
* a reduce of it alone whose kept dimensions stay in order (the batch-norm statistics);
* a reduce_window of it (pooling: its window permuted) or a concatenate (the dimension
  permuted, the other parts as above);
* another transpose (the two compose, whatever else reads t).
Where some readers cannot take x (a returned activation), t stays for them, and the others
move below it only where every path from them ends in a transpose that cancels (or a
reduce), so that no transpose is added.

Which transposes start it: those of a convolution's result (what a layout change around a
convolution leaves), and then the transposes the rewrite itself moves down. Other
transposes (a program's own) start it only where every reader takes x and every path from
them ends in a transpose that cancels (or a reduce): a channels-last PyTorch backward
reads a saved NHWC activation as NCHW for SiLU's derivative and transposes the product
back (a fused loop that read both operands across the innermost dimension: 0.85 ms for
8 x 16 x 16 x 64 values, 0.06 ms once the pair cancels). Elsewhere they are left where they
are: sinking those could move them away from a dot that reads them for free
(transpose-fold) or make a value live in two layouts.
"""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Module, Operation, Value
from axle.ir.ops import ELEMENTWISE, lookup
from axle.ir.types import TensorType
from axle.passes.pass_manager import Pass
from axle.passes.registry import register_pass
from axle.passes.rewrite import Builder, i64_array, transposed

STARTS = ("stablehlo.convolution",)  # ops whose transposed results start a sinking


def _perm(t: Operation) -> list:
    return [int(p) for p in t.attr("permutation")]


def _is_transpose(v: Value, perm) -> bool:
    op = getattr(v, "owner", None)
    return isinstance(op, Operation) and op.name == "stablehlo.transpose" and _perm(op) == perm


def _splat(v: Value):
    op = getattr(v, "owner", None)
    if not isinstance(op, Operation) or op.name != "stablehlo.constant":
        return None
    attr = op.attributes.get("value")
    if not isinstance(attr, A.DenseElementsAttr) or attr.array.size == 0 or not attr.is_splat:
        return None
    return attr.array.reshape(-1)[0]


def _operand_ok(v: Value, t: Operation, perm) -> bool:
    """Whether operand v of an elementwise reader of t's result has an x-layout form."""
    if v is t.results[0] or _is_transpose(v, perm):
        return True
    if not isinstance(v.type, TensorType) or v.type.rank == 0:
        return True
    return v.type.is_static  # (any other value: read through the inverse transpose)


def _reader_ok(u: Operation, t: Operation, perm) -> bool:
    if u.parent is not t.parent:
        return False
    if u.name == "stablehlo.transpose":
        return True
    if u.name == "stablehlo.reduce":
        if len(u.operands) != 2 or u.operands[0] is not t.results[0] or u.operands[1] is t.results[0]:
            return False
        dims = {int(d) for d in u.attr("dimensions")}
        kept = [perm[i] for i in range(len(perm)) if i not in dims]
        return kept == sorted(kept)
    if u.name == "stablehlo.reduce_window":  # pooling: its window read along x's dimensions
        return (len(u.operands) == 2 and u.operands[0] is t.results[0] and u.operands[1].type.rank == 0
                and u.results[0].type.is_static)
    if u.name == "stablehlo.concatenate":  # (the other parts read through the inverse transpose)
        return u.results[0].type.is_static and all(_operand_ok(v, t, perm) for v in u.operands)
    d = lookup(u.name)
    if d is None or ELEMENTWISE not in d.traits or u.regions or len(u.results) != 1:
        return False
    if not isinstance(u.results[0].type, TensorType) or u.results[0].type.shape != t.results[0].type.shape:
        return False
    return all(_operand_ok(v, t, perm) for v in u.operands)


def _in_x_layout(b: Builder, v: Value, t: Operation, perm, shape) -> Value:
    """Operand v (in t's result layout) as the value in x's layout whose transpose it is."""
    if v is t.results[0]:
        return t.operands[0]
    if _is_transpose(v, perm):
        return v.owner.operands[0]
    if v.type.rank == 0:
        return v
    ty = TensorType(shape, v.type.element_type)
    op = v.owner
    if isinstance(op, Operation) and op.name == "stablehlo.broadcast_in_dim" and op.operands[0].type.is_static:
        src = op.operands[0]
        dims = [perm[int(d)] for d in op.attr("broadcast_dimensions")]
        if dims != sorted(dims):  # keep the broadcast's dimensions increasing: transpose its (small) operand
            order = [int(i) for i in np.argsort(dims)]
            src = transposed(b, src, order)
            dims = sorted(dims)
        return b.create("stablehlo.broadcast_in_dim", [src], [ty],
                        {"broadcast_dimensions": i64_array(dims)}).result
    if _splat(v) is not None:
        return b.splat(_splat(v), ty)
    return transposed(b, v, [int(i) for i in np.argsort(perm)])


def _permuted(b: Builder, u: Operation, t: Operation, perm) -> Value:
    """A reduce_window or concatenate reader u of t's result, computed along x's dimensions
    (its per-dimension attributes permuted), and transposed back."""
    inv = [int(i) for i in np.argsort(perm)]
    res_t = u.results[0].type
    shape = tuple(res_t.shape[inv[j]] for j in range(len(perm)))
    if u.name == "stablehlo.concatenate":
        operands = [_in_x_layout(b, v, t, perm, tuple(v.type.shape[inv[j]] for j in range(len(perm))))
                    for v in u.operands]
        attrs = dict(u.attributes)
        attrs["dimension"] = A.IntegerAttr(perm[int(u.attr("dimension"))], u.attributes["dimension"].type)
        inner = b.create(u.name, operands, [TensorType(shape, res_t.element_type)], attrs)
        return transposed(b, inner.results[0], perm)
    new = u.clone({t.results[0]: t.operands[0]})
    for name in ("window_dimensions", "window_strides", "base_dilations", "window_dilations"):
        if name in u.attributes:
            vals = [int(v) for v in u.attr(name)]
            new.attributes[name] = i64_array([vals[inv[j]] for j in range(len(perm))])
    if "padding" in u.attributes:
        pads = np.asarray(u.attributes["padding"].array, np.int64).reshape(len(perm), 2)
        new.attributes["padding"] = A.DenseElementsAttr(u.attributes["padding"].type, pads[inv])
    new.results[0].type = TensorType(shape, res_t.element_type)
    b.block.insert(b.index, new)
    b.index += 1
    return transposed(b, new.results[0], perm)


def _cancels_below(v: Value, perm, budget: int) -> bool:
    """Whether every reader of v (in t's layout, perm from x's) ends, through ops the pass
    sinks through, in a transpose composing with perm to the identity or in a reduce."""
    if budget <= 0:
        return False
    readers = list(dict.fromkeys(v.users))
    if not readers:
        return False
    for w in readers:
        if w.name == "stablehlo.transpose":
            if [perm[i] for i in _perm(w)] != list(range(len(perm))):
                return False
        elif w.name == "stablehlo.reduce":
            continue
        elif w.name in ("stablehlo.reduce_window", "stablehlo.concatenate") or (
                lookup(w.name) is not None and ELEMENTWISE in lookup(w.name).traits and len(w.results) == 1):
            if not _cancels_below(w.results[0], perm, budget - 1):
                return False
        else:
            return False
    return True


def _sink(t: Operation, work: list, gone: set) -> bool:
    """Move transpose t below its readers when all of them allow it (module docstring)."""
    perm = _perm(t)
    x = t.operands[0]
    res = t.results[0]
    changed = False
    for u in list(dict.fromkeys(res.users)):  # transpose(transpose(x)): one transpose of x, whatever else reads t
        if u.name == "stablehlo.transpose" and u.parent is t.parent:
            new = transposed(Builder.before(u), x, [perm[i] for i in _perm(u)])
            if new is not x:
                work.append(new.owner)
            u.results[0].replace_all_uses_with(new)
            u.erase()
            gone.add(u)
            changed = True
    readers = list(dict.fromkeys(res.users))
    if not readers:
        t.erase()
        gone.add(t)
        return changed
    if not all(_reader_ok(u, t, perm) for u in readers):
        # t stays for the readers that cannot take x; the others move below it only where
        # every path from them ends in a cancelling transpose (or a reduce), so that no
        # transpose is added: a pooled activation returned for the backward and also
        # concatenated into the next convolution's input
        readers = [u for u in readers if _reader_ok(u, t, perm) and u.name != "stablehlo.reduce"
                   and _cancels_below(u.results[0], perm, 8)]
        if not readers:
            return changed
    for u in readers:
        b = Builder.before(u)
        if u.name == "stablehlo.reduce":  # in place: its result keeps its layout
            dims = sorted(perm[int(d)] for d in u.attr("dimensions"))
            u.attributes["dimensions"] = i64_array(dims)
            u.operands = [x, u.operands[1]]
            continue
        elif u.name in ("stablehlo.reduce_window", "stablehlo.concatenate"):
            new = _permuted(b, u, t, perm)
            work.append(new.owner)
        else:
            operands = [_in_x_layout(b, v, t, perm, x.type.shape) for v in u.operands]
            ty = TensorType(x.type.shape, u.results[0].type.element_type)
            inner = b.create(u.name, operands, [ty], dict(u.attributes))
            new = transposed(b, inner.results[0], perm)
            work.append(new.owner)
        u.results[0].replace_all_uses_with(new)
        u.erase()
        gone.add(u)
    if res.use_empty():
        t.erase()
        gone.add(t)
    return True


def _all_cancel(t: Operation) -> bool:
    """Whether every reader of t takes x and every path from t ends in a cancelling
    transpose or a reduce (sinking t then adds no transpose anywhere)."""
    perm = _perm(t)
    readers = list(dict.fromkeys(t.results[0].users))
    return (bool(readers) and all(_reader_ok(u, t, perm) for u in readers)
            and _cancels_below(t.results[0], perm, 8))


@register_pass
class SinkTransposes(Pass):
    """Pass 'sink-transposes' (see the module docstring)."""

    name = "sink-transposes"

    def run(self, module: Module) -> bool:
        work = [op for op in module.walk() if op.name == "stablehlo.transpose" and (
            (isinstance(getattr(op.operands[0], "owner", None), Operation) and op.operands[0].owner.name in STARTS)
            or _all_cancel(op))]
        changed = False
        gone: set = set()  # ops erased on the way (a worklist entry may be one)
        while work:
            t = work.pop()
            if t not in gone:
                changed = _sink(t, work, gone) or changed
        return changed
