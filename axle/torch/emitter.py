"""A small StableHLO text builder: values carry their static shape and element type, every op
is printed in MLIR's generic form, which axle's parser (and any StableHLO consumer) reads.

The lowering rules (axle/torch/rules_*.py) only call these helpers; nothing here knows torch."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from axle.torch.dtypes import COMPLEX, MLIR_TO_NUMPY, is_float


@dataclass(frozen=True)
class V:
    """An SSA value of type tensor<shape x dtype>."""
    name: str
    shape: tuple
    dtype: str

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.dtype)

    @property
    def rank(self) -> int:
        return len(self.shape)


def tensor_type(shape, dtype: str) -> str:
    dims = "".join(f"{int(d)}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


def i64s(values) -> str:
    vals = ", ".join(str(int(v)) for v in values)
    return f"array<i64: {vals}>" if vals else "array<i64>"


def ilist(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def scalar_literal(value, dtype: str) -> str:
    """`value` as an element literal of `dtype` (hex bit patterns for inf/nan)."""
    if dtype == "i1":
        return "true" if bool(value) else "false"
    if dtype in COMPLEX:
        c = complex(value)
        return f"({scalar_literal(c.real, COMPLEX[dtype])}, {scalar_literal(c.imag, COMPLEX[dtype])})"
    if not is_float(dtype):
        return str(int(value))
    value = float(value)
    if math.isfinite(value):
        return repr(value) if "e" in repr(value) or "." in repr(value) else repr(value) + ".0"
    bits = np.array(value, dtype=MLIR_TO_NUMPY[dtype])
    width = bits.dtype.itemsize
    raw = int(bits.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[width]))
    return f"0x{raw:0{2 * width}X}"


class Emitter:
    """Collects the ops of one function body."""

    def __init__(self):
        self.lines: list[str] = []
        self._n = 0
        self.indent = "    "
        self.constants: dict = {}  # value name -> numpy array, for constants made by dense()
        self.quant: dict = {}  # value name -> quantization facts (rules_quant.py)
        self.rng_state = None  # the graph's random state argument, once a rule asks for bits
        self._rng_now = None  # the state after the bits drawn so far

    def fresh(self, hint: str = "v") -> str:
        self._n += 1
        return f"%{hint}{self._n}"

    def emit(self, text: str):
        self.lines.append(self.indent + text)

    # ---- generic op
    def op(self, name: str, operands, shape, dtype: str, attrs: str = "", region: str = "") -> V:
        out = V(self.fresh(), tuple(int(d) for d in shape), dtype)
        self._op_line([out], name, operands, attrs, region)
        return out

    def op_multi(self, name: str, operands, results, attrs: str = "", region: str = "") -> list[V]:
        base = self.fresh()
        outs = [V(f"{base}#{i}", tuple(int(d) for d in s), t) for i, (s, t) in enumerate(results)]
        self._op_line(outs, name, operands, attrs, region, base=f"{base}:{len(outs)}")
        return outs

    def _op_line(self, outs, name, operands, attrs, region, base=None):
        lhs = base if base is not None else outs[0].name
        args = ", ".join(o.name for o in operands)
        attr = f" {{{attrs}}}" if attrs else ""
        reg = f" ({region})" if region else ""
        in_types = ", ".join(o.type for o in operands)
        out_types = ", ".join(o.type for o in outs)
        if len(outs) != 1:
            out_types = f"({out_types})"
        self.emit(f'{lhs} = "{name}"({args}){reg}{attr} : ({in_types}) -> {out_types}')

    def scalar_region(self, dtypes, body, pairs: bool = False) -> str:
        """A region ^bb0(%a0, %a1, ..., %b0, %b1, ...) (a reduction's: accumulators, then
        elements; pairs=True: %a0, %b0, %a1, %b1, ..., a sort comparator's) whose body is
        built by body(emitter, lhs, rhs) -> list[V]: lhs/rhs are lists of 0-d values, one per
        dtype."""
        sub = Emitter()
        sub._n = self._n + 1000
        sub.indent = self.indent + "  "
        lhs = [V(f"%ra{self._n}_{i}", (), t) for i, t in enumerate(dtypes)]
        rhs = [V(f"%rb{self._n}_{i}", (), t) for i, t in enumerate(dtypes)]
        results = body(sub, lhs, rhs)
        self._n = sub._n
        order = [v for ab in zip(lhs, rhs) for v in ab] if pairs else lhs + rhs
        params = ", ".join(f"{v.name}: {v.type}" for v in order)
        ret = ", ".join(r.name for r in results)
        ret_t = ", ".join(r.type for r in results)
        lines = [f"{{\n{self.indent}^bb0({params}):"] + sub.lines
        lines.append(f'{sub.indent}"stablehlo.return"({ret}) : ({ret_t}) -> ()\n{self.indent}}}')
        return "\n".join(lines)

    def uniform(self, shape) -> V:
        """f32 values uniform in [0, 1) (24 random bits each), a fresh stream on every
        call: Threefry from a state the graph takes as an extra argument (`rng_state`, which
        the caller draws from torch's generator on every call)."""
        if self.rng_state is None:
            self.rng_state = self._rng_now = V("%rng_state", (2,), "ui64")
        state, bits = self.op_multi("stablehlo.rng_bit_generator", [self._rng_now],
                                    [((2,), "ui64"), (tuple(shape), "ui32")],
                                    "rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>")
        self._rng_now = state
        top = self.binary("shift_right_logical", bits, self.const(8, "ui32", tuple(shape)))
        return self.binary("multiply", self.convert(top, "f32"), self.const(2.0 ** -24, "f32", tuple(shape)))

    def while_loop(self, carried, cond, body) -> list[V]:
        """stablehlo.while over the values `carried`: cond(em, args) -> a 0-d i1 value,
        body(em, args) -> the next values (same types). Both regions see only their block
        arguments and what they build (constants made with const, not dense)."""
        regions = []
        for build in (cond, body):
            sub = Emitter()
            sub._n = self._n + 1000
            sub.indent = self.indent + "  "
            args = [V(f"%wa{self._n}_{i}", v.shape, v.dtype) for i, v in enumerate(carried)]
            results = build(sub, args)
            results = results if isinstance(results, list) else [results]
            self._n = sub._n
            params = ", ".join(f"{v.name}: {v.type}" for v in args)
            ret, ret_t = ", ".join(r.name for r in results), ", ".join(r.type for r in results)
            regions.append("\n".join([f"{{\n{self.indent}^bb0({params}):"] + sub.lines
                                     + [f'{sub.indent}"stablehlo.return"({ret}) : ({ret_t}) -> ()\n{self.indent}}}']))
        return self.op_multi("stablehlo.while", list(carried), [(v.shape, v.dtype) for v in carried],
                             region=", ".join(regions))

    # ---- constants
    def const(self, value, dtype: str, shape=()) -> V:
        lit = scalar_literal(value, dtype)
        c = self.op("stablehlo.constant", [], (), dtype, f"value = dense<{lit}> : {tensor_type((), dtype)}")
        return self.broadcast_in_dim(c, shape, []) if tuple(shape) else c

    def dense(self, array: np.ndarray, dtype: str) -> V:
        v = self._dense(array, dtype)
        self.constants[v.name] = np.asarray(array)
        return v

    def _dense(self, array: np.ndarray, dtype: str) -> V:
        flat = np.asarray(array).reshape(-1)
        body = ", ".join(scalar_literal(x, dtype) for x in flat)
        shape = np.shape(array)
        if len(shape) == 0:
            return self.const(flat[0], dtype)
        ty = tensor_type(shape, dtype)
        return self.op("stablehlo.reshape", [self.op("stablehlo.constant", [], (flat.size,), dtype,
                       f"value = dense<[{body}]> : {tensor_type((flat.size,), dtype)}")], shape, dtype) \
            if len(shape) != 1 else self.op("stablehlo.constant", [], shape, dtype, f"value = dense<[{body}]> : {ty}")

    # ---- shape ops
    def broadcast_in_dim(self, v: V, shape, dims) -> V:
        if tuple(shape) == v.shape and list(dims) == list(range(v.rank)):
            return v
        return self.op("stablehlo.broadcast_in_dim", [v], shape, v.dtype, f"broadcast_dimensions = {i64s(dims)}")

    def broadcast_to(self, v: V, shape) -> V:
        """numpy/torch broadcasting (trailing dimensions aligned)."""
        shape = tuple(int(d) for d in shape)
        if v.shape == shape:
            return v
        lead = len(shape) - v.rank
        keep = [i for i, d in enumerate(v.shape) if d == shape[lead + i] or d != 1]
        if len(keep) != v.rank:  # drop the size-1 dimensions that stretch
            v = self.reshape(v, [v.shape[i] for i in keep])
        return self.broadcast_in_dim(v, shape, [lead + i for i in keep])

    def reshape(self, v: V, shape) -> V:
        shape = tuple(int(d) for d in shape)
        if shape == v.shape:
            return v
        return self.op("stablehlo.reshape", [v], shape, v.dtype)

    def transpose(self, v: V, perm) -> V:
        perm = [int(p) for p in perm]
        if perm == list(range(v.rank)):
            return v
        return self.op("stablehlo.transpose", [v], [v.shape[p] for p in perm], v.dtype,
                       f"permutation = {i64s(perm)}")

    def convert(self, v: V, dtype: str) -> V:
        if v.dtype == dtype:
            return v
        if dtype == "i1" and v.dtype != "i1":  # torch: nonzero -> true
            return self.compare("NE", v, self.const(0, v.dtype, v.shape))
        return self.op("stablehlo.convert", [v], v.shape, dtype)

    def slice(self, v: V, start, limit, strides) -> V:
        shape = [max(0, -(-(hi - lo) // s)) for lo, hi, s in zip(start, limit, strides)]
        return self.op("stablehlo.slice", [v], shape, v.dtype,
                       f"start_indices = {i64s(start)}, limit_indices = {i64s(limit)}, strides = {i64s(strides)}")

    def concat(self, vals, dim: int) -> V:
        if len(vals) == 1:
            return vals[0]
        shape = list(vals[0].shape)
        shape[dim] = sum(v.shape[dim] for v in vals)
        return self.op("stablehlo.concatenate", vals, shape, vals[0].dtype, f"dimension = {dim} : i64")

    def iota(self, shape, dim: int, dtype: str = "i64") -> V:
        return self.op("stablehlo.iota", [], shape, dtype, f"iota_dimension = {dim} : i64")

    def pad(self, v: V, value: V, low, high, interior=None) -> V:
        interior = interior or [0] * v.rank
        shape = [lo + hi + d + max(d - 1, 0) * it for d, lo, hi, it in zip(v.shape, low, high, interior)]
        return self.op("stablehlo.pad", [v, value], shape, v.dtype,
                       f"edge_padding_low = {i64s(low)}, edge_padding_high = {i64s(high)}, "
                       f"interior_padding = {i64s(interior)}")

    # ---- elementwise
    def binary(self, name: str, a: V, b: V) -> V:
        return self.op(f"stablehlo.{name}", [a, b], a.shape, a.dtype)

    def unary(self, name: str, a: V) -> V:
        return self.op(f"stablehlo.{name}", [a], a.shape, a.dtype)

    def compare(self, direction: str, a: V, b: V) -> V:
        kind = "FLOAT" if is_float(a.dtype) else ("UNSIGNED" if a.dtype in ("ui8", "i1") else "SIGNED")
        return self.op("stablehlo.compare", [a, b], a.shape, "i1",
                       f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                       f"compare_type = #stablehlo<comparison_type {kind}>")

    def select(self, pred: V, a: V, b: V) -> V:
        return self.op("stablehlo.select", [pred, a, b], a.shape, a.dtype)

    # ---- reductions
    def reduce(self, vals, inits, dims, body) -> list[V]:
        """stablehlo.reduce over `dims`; body(em, lhs, rhs) -> results (0-d values)."""
        dims = sorted(int(d) for d in dims)
        shape = [d for i, d in enumerate(vals[0].shape) if i not in dims]
        region = self.scalar_region([v.dtype for v in vals], body)
        outs = self.op_multi("stablehlo.reduce", list(vals) + list(inits), [(shape, v.dtype) for v in vals],
                             f"dimensions = {i64s(dims)}", region)
        return outs

    def reduce_simple(self, v: V, dims, kind: str, init) -> V:
        c = self.const(init, v.dtype)
        if not dims:
            return v
        return self.reduce([v], [c], dims, lambda em, l, r: [em.binary(kind, l[0], r[0])])[0]
