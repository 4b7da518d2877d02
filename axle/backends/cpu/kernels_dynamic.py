"""Dynamic-shape ops whose shape operands are only known at run time, on static result types:
dynamic_iota, dynamic_broadcast_in_dim, dynamic_reshape, dynamic_pad, real_dynamic_slice
and dynamic_gather. (With constant shape operands prepare.py has already made them static.)

Each kernel first checks at run time what the interpreter checks (the shape operand equals
the result type's shape, paddings and slice bounds are valid and give the result's shape,
slice sizes agree with the result type); a failed check calls a host callback that records
the error, which the executable raises once the native call has returned (as for
collectives: kernels_collective.check_errors). Then it writes its result with the static
sibling's index mapping, reading run-time paddings / starts / strides where the op has them.

`runtime_check(ctx, ok, message)` is the helper other kernels can use for such checks.
"""
from __future__ import annotations

from llvmlite import ir

from axle.backends.cpu import kernels_collective as _kc
from axle.codegen import scalar as S
from axle.codegen.elemental import gather_at
from axle.codegen.elemental import index_i64 as _index
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I1
from axle.codegen.scalar_ops import convert
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.backends.cpu.host_callback import HostCallback
from axle.ir.core import Operation
from axle.ir.types import i64


from axle.errors import RuntimeCheckError  # noqa: E402


def _fail(message: str, table) -> None:
    _kc.record_error(RuntimeCheckError(message or "run-time check failed"))


_CALLBACK = HostCallback(_fail)  # key -> the message (host_callback.py)


def runtime_check(ctx: Context, ok, message: str) -> None:
    """Emit: if not ok, record `message` as the error of this call (raised after it returns).
    The code after the check still runs (its results are never returned)."""
    b = ctx.b
    ctx.cacheable = False  # the callback's address and the message key live in this process
    ctx.host_callbacks = True
    key = _CALLBACK.register(message)
    with b.if_then(b.not_(ok), likely=False):
        _CALLBACK.emit_call(b, key)


def _values(ctx: Context, v) -> list:
    """The elements of a 1-D integer operand as i64 registers."""
    n = _ty(v).shape[0] if _ty(v).rank else 1
    return [_index(ctx.em, v, [ctx.em.const_i64(k)] if _ty(v).rank else []) for k in range(n)]


def _all(b, conds):
    ok = ir.Constant(I1, 1)
    for c in conds:
        ok = b.and_(ok, c)
    return ok


def _check_shape_operand(ctx: Context, op: Operation, v) -> None:
    """The run-time shape operand equals the static result shape."""
    b = ctx.b
    shape = _ty(op.results[0]).shape
    vals = _values(ctx, v)
    if len(vals) != len(shape):
        raise Unsupported(f"{op.where()}: shape operand of {len(vals)} elements for a rank-{len(shape)} result")
    ok = _all(b, [b.icmp_signed("==", x, ctx.em.const_i64(d)) for x, d in zip(vals, shape)])
    runtime_check(ctx, ok, f"{op.where()}: the shape operand does not match the result type {op.results[0].type}")


def _write(ctx: Context, op: Operation, value_fn) -> None:
    """result[idx] = value_fn(idx) over the result's shape."""
    em, b = ctx.em, ctx.b
    r = op.results[0]
    t = _ty(r)
    dst = ctx.buffer(r)
    em.loop_nest(list(t.shape), lambda idx: S.store(
        b, S.finish(b, value_fn(idx), t.element_type), em.element_ptr(dst, t.element_type, em.linear(idx, t.shape)),
        t.element_type))


def _check_rank1(*positions):
    def check(op: Operation) -> None:
        for p in positions:
            t = _ty(op.operands[p])
            if t.rank > 1 or not (t.element_type.is_int or t.element_type.is_bool):
                raise Unsupported(f"{op.where()}: operand {p} must be a 1-D integer tensor, got {t}")
    return check


@kernel("stablehlo.dynamic_iota", check=_check_rank1(0))
def dynamic_iota(ctx: Context, op: Operation) -> None:
    _check_shape_operand(ctx, op, op.operands[0])
    d = op.attr("iota_dimension")
    et = _ty(op.results[0]).element_type
    _write(ctx, op, lambda idx: convert(ctx.em, i64, et, idx[d]))


def _check_broadcast(op: Operation) -> None:
    _check_rank1(1)(op)
    st, rt = _ty(op.operands[0]), _ty(op.results[0])
    dims = op.attr("broadcast_dimensions")
    for i, d in enumerate(dims):
        if st.shape[i] not in (1, rt.shape[d]):
            raise Unsupported(f"{op.where()}: operand dimension {i} of size {st.shape[i]} cannot broadcast "
                              f"to size {rt.shape[d]}")


@kernel("stablehlo.dynamic_broadcast_in_dim", check=_check_broadcast)
def dynamic_broadcast_in_dim(ctx: Context, op: Operation) -> None:
    _check_shape_operand(ctx, op, op.operands[1])
    src = op.operands[0]
    st, rt = _ty(src), _ty(op.results[0])
    dims = op.attr("broadcast_dimensions")
    em = ctx.em

    def value(idx):
        return em.value_at(src, [em.const_i64(0) if st.shape[i] == 1 and rt.shape[d] != 1 else idx[d]
                                 for i, d in enumerate(dims)])
    _write(ctx, op, value)


def _check_reshape(op: Operation) -> None:
    _check_rank1(1)(op)
    if _ty(op.operands[0]).num_elements != _ty(op.results[0]).num_elements:
        raise Unsupported(f"{op.where()}: cannot reshape {op.operands[0].type} to {op.results[0].type}")


@kernel("stablehlo.dynamic_reshape", check=_check_reshape)
def dynamic_reshape(ctx: Context, op: Operation) -> None:
    _check_shape_operand(ctx, op, op.operands[1])
    src = op.operands[0]
    st, rt = _ty(src), _ty(op.results[0])
    em = ctx.em
    _write(ctx, op, lambda idx: em.value_at(src, em.delinear(em.linear(idx, rt.shape), st.shape)))


@kernel("stablehlo.dynamic_pad", check=_check_rank1(2, 3, 4))
def dynamic_pad(ctx: Context, op: Operation) -> None:
    """result[i] = operand[(i - low) / (interior + 1)] where that lands on an element."""
    em, b = ctx.em, ctx.b
    src, pad_value = op.operands[:2]
    st, rt = _ty(src), _ty(op.results[0])
    low, high, interior = (_values(ctx, v) for v in op.operands[2:])
    if not len(low) == len(high) == len(interior) == st.rank:
        raise Unsupported(f"{op.where()}: paddings do not match the operand rank")
    conds = []
    for k in range(st.rank):
        n = st.shape[k]
        conds.append(b.icmp_signed(">=", interior[k], em.const_i64(0)))
        spread = b.add(b.mul(em.const_i64(n - 1), b.add(interior[k], em.const_i64(1))), em.const_i64(1)) \
            if n > 0 else em.const_i64(0)
        size = b.add(b.add(low[k], spread), high[k])
        conds.append(b.icmp_signed("==", size, em.const_i64(rt.shape[k])))
    runtime_check(ctx, _all(b, conds), f"{op.where()}: the paddings do not give the result type "
                                       f"{op.results[0].type} (or an interior padding is negative)")
    steps = [b.select(b.icmp_signed(">", x, em.const_i64(0)), b.add(x, em.const_i64(1)), em.const_i64(1))
             for x in interior]  # >= 1, so no division by zero even when the check failed

    def value(idx):
        inside = ir.Constant(I1, 1)
        sidx = []
        for k, i in enumerate(idx):
            shifted = b.sub(i, low[k])
            nonneg = b.icmp_signed(">=", shifted, em.const_i64(0))
            safe = b.select(nonneg, shifted, em.const_i64(0))
            q = b.udiv(safe, steps[k])
            on_grid = b.icmp_unsigned("==", b.urem(safe, steps[k]), em.const_i64(0))
            inside = _all(b, [inside, nonneg, on_grid, b.icmp_signed("<", q, em.const_i64(st.shape[k]))])
            sidx.append(q)
        t = S.reg_type(rt.element_type)
        return em.if_else(inside, lambda: em.value_at(src, sidx), lambda: em.value_at(pad_value, []), t)
    _write(ctx, op, value)


@kernel("stablehlo.real_dynamic_slice", check=_check_rank1(1, 2, 3))
def real_dynamic_slice(ctx: Context, op: Operation) -> None:
    """result[i] = operand[start + i * stride], after checking the bounds as the interpreter."""
    em, b = ctx.em, ctx.b
    src = op.operands[0]
    st, rt = _ty(src), _ty(op.results[0])
    starts, limits, strides = (_values(ctx, v) for v in op.operands[1:])
    if not len(starts) == len(limits) == len(strides) == st.rank:
        raise Unsupported(f"{op.where()}: slice bounds do not match the operand rank")
    conds = []
    for k in range(st.rank):
        s, lim, stride = starts[k], limits[k], strides[k]
        conds += [b.icmp_signed("<=", em.const_i64(0), s), b.icmp_signed("<=", s, lim),
                  b.icmp_signed("<=", lim, em.const_i64(st.shape[k])), b.icmp_signed(">", stride, em.const_i64(0))]
        safe = b.select(b.icmp_signed(">", stride, em.const_i64(0)), stride, em.const_i64(1))
        count = b.sdiv(b.add(b.sub(lim, s), b.sub(safe, em.const_i64(1))), safe)
        conds.append(b.icmp_signed("==", count, em.const_i64(rt.shape[k])))
    runtime_check(ctx, _all(b, conds), f"{op.where()}: invalid slice bounds for {op.operands[0].type} "
                                       f"-> {op.results[0].type}")

    def value(idx):
        sidx = []
        for k, i in enumerate(idx):
            j = b.add(starts[k], b.mul(i, strides[k]))
            ok = b.and_(b.icmp_signed(">=", j, em.const_i64(0)), b.icmp_signed("<", j, em.const_i64(st.shape[k])))
            sidx.append(b.select(ok, j, em.const_i64(0)))  # stays in bounds even when the check failed
        return em.value_at(src, sidx)
    _write(ctx, op, value)


def gather_slice_sizes(op: Operation) -> list:
    """The slice sizes a gather's result type implies: the offset dimensions' sizes for the
    operand dimensions that are neither collapsed nor batching, 1 for those."""
    dn = op.attr("dimension_numbers")
    ot, rt = _ty(op.operands[0]), _ty(op.results[0])
    collapsed = set(dn["collapsed_slice_dims"]) | set(dn["operand_batching_dims"])
    offsets = iter(rt.shape[d] for d in dn["offset_dims"])
    return [1 if d in collapsed else next(offsets) for d in range(ot.rank)]


class _GatherView:
    """A dynamic_gather seen as the gather it is once its slice sizes are known."""

    def __init__(self, op: Operation, sizes: list):
        self.operands = op.operands[:2]
        self._op, self._sizes = op, sizes

    def attr(self, name, default=None):
        return self._sizes if name == "slice_sizes" else self._op.attr(name, default)


def _check_gather(op: Operation) -> None:
    _check_rank1(2)(op)
    dn = op.attr("dimension_numbers")
    ot = _ty(op.operands[0])
    if len(dn["offset_dims"]) + len(set(dn["collapsed_slice_dims"]) | set(dn["operand_batching_dims"])) \
            != ot.rank:
        raise Unsupported(f"{op.where()}: offset dimensions do not cover the operand")
    sizes = gather_slice_sizes(op)
    if any(s > n for s, n in zip(sizes, ot.shape)) or _ty(op.operands[2]).shape[0] != ot.rank:
        raise Unsupported(f"{op.where()}: slice sizes {sizes} do not fit {op.operands[0].type}")


@kernel("stablehlo.dynamic_gather", check=_check_gather)
def dynamic_gather(ctx: Context, op: Operation) -> None:
    b = ctx.b
    sizes = gather_slice_sizes(op)
    vals = _values(ctx, op.operands[2])
    runtime_check(ctx, _all(b, [b.icmp_signed("==", v, ctx.em.const_i64(s)) for v, s in zip(vals, sizes)]),
                  f"{op.where()}: slice_sizes do not match the result type {op.results[0].type}")
    view = _GatherView(op, sizes)
    _write(ctx, op, lambda idx: gather_at(ctx.em, view, idx))
