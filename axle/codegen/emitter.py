"""The elemental emitter: the value of any fusible op at an index, for every target.

`value_at(v, idx)` emits the code computing element `idx` of value `v`: a load when v
lives in a buffer, otherwise the op's scalar rule applied to its operands' values at
the mapped indices (broadcasts, transposes, reshapes, slices, pads, concatenations and
iotas become index arithmetic). Kernels wrap it in loop nests: a loop over the output
for an elementwise (fused) root, output loops around reduction loops for reduce and
dot_general. What differs between machines (math calls, FMA, constant globals) the
emitter asks its `target` (target.py), which the backend passes in.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Optional

import numpy as np
from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen import scalar_f8 as _f8
from axle.codegen import scalar_complex  # noqa: F401  (registers the complex operands' rules)
from axle.codegen import scalar_special  # noqa: F401  (registers the CHLO special functions' rules)
from axle.codegen.scalar import I1, I8, I64
from axle.codegen.scalar_ops import RULES, convert
from axle.codegen.target import Target
from axle.errors import Unsupported
from axle.ir.core import Operation, Value
from axle.ir.types import ElementType, TensorType, element_type

_F32_ET = element_type("f32")
# ops whose result is one of their operands (or its sign flipped): on bf16 registers (f32
# values that are bf16 values) nothing to round, and a reduction over them stays a plain
# max / min that LLVM vectorizes
EXACT_ON_INPUTS = frozenset(("stablehlo.maximum", "stablehlo.minimum", "stablehlo.negate", "stablehlo.abs",
                             "stablehlo.select", "stablehlo.clamp"))

# Extra fusible ops registered from other files: name -> fn(emitter, op, idx) -> register.
ELEMENT_MAPPERS: dict = {}


def element_mapper(*names):
    """Register how to compute one element of an op's result (makes the op fusible)."""
    def deco(fn):
        for n in names:
            ELEMENT_MAPPERS[n] = fn
        return fn
    return deco


class _Fusible:
    """The set of fusible op names: scalar rules, index-mapping ops, registered mappers."""

    BUILTIN = {"stablehlo.convert", "stablehlo.broadcast_in_dim", "stablehlo.reshape",
               "stablehlo.transpose", "stablehlo.slice", "stablehlo.iota", "stablehlo.constant",
               "stablehlo.concatenate", "stablehlo.pad", "stablehlo.reverse", "stablehlo.bitcast_convert"}

    def __contains__(self, name) -> bool:
        return name in RULES or name in self.BUILTIN or name in ELEMENT_MAPPERS


FUSIBLE = _Fusible()


def _ty(v: Value) -> TensorType:
    t = v.type
    if not isinstance(t, TensorType) or not t.is_static:
        raise Unsupported(f"value of type {t}")
    return t


def is_constant(v) -> bool:
    """Whether v is the tensor result of a stablehlo.constant."""
    owner = getattr(v, "owner", None)
    return isinstance(owner, Operation) and owner.name == "stablehlo.constant" \
        and isinstance(getattr(v, "type", None), TensorType)


def _strides(shape) -> list[int]:
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]



class CountedLoop:
    """`with CountedLoop(b, lo, hi, name) as i:` for i in [lo, hi) (i64, signed compare),
    a phi in a head block: for code built with a bare llvmlite builder (the runtime
    routines of backends/cpu/lowp_runtime.py and conv_runtime.py), outside an Emitter."""

    def __init__(self, b: ir.IRBuilder, lo, hi, name: str):
        self.b, self.lo, self.hi, self.name = b, lo, hi, name

    def __enter__(self):
        b = self.b
        self.pre = b.block
        self.head = b.append_basic_block(self.name + ".head")
        self.body = b.append_basic_block(self.name + ".body")
        self.end = b.append_basic_block(self.name + ".end")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(ir.IntType(64), self.name)
        self.i.add_incoming(self.lo, self.pre)
        b.cbranch(b.icmp_signed("<", self.i, self.hi), self.body, self.end)
        b.position_at_end(self.body)
        return self.i

    def __exit__(self, *exc):
        b = self.b
        nxt = b.add(self.i, ir.Constant(ir.IntType(64), 1))
        self.i.add_incoming(nxt, b.block)
        b.branch(self.head)
        b.position_at_end(self.end)


def entry_alloca(b: ir.IRBuilder, t: ir.Type):
    """A stack slot in the entry block of b's function (where mem2reg can promote it; an
    alloca inside a loop would grow the stack every iteration); b stays where it was."""
    here = b.block
    b.position_at_start(b.function.entry_basic_block)
    slot = b.alloca(t)
    b.position_at_end(here)
    return slot

class Emitter:
    def __init__(self, module: ir.Module, builder: ir.IRBuilder, buffers: dict, target: Target):
        self.module = module
        self.b = builder
        self.target = target  # what differs between machines (target.py): math calls, FMA, globals
        self.buffers = buffers  # value -> ir pointer (i8*) of its buffer
        # a concatenate -> (the operand a loop over its part reads, the ids of the index at
        # which that holds: the loop's own) (elementwise.py _concat_parts)
        self.concat_parts: dict = {}
        # index value (LLVM) -> (lo, hi): the value is in [lo, hi) wherever it is read (the
        # loop of a box of index_boxes.py, and offsets of such indices)
        self.index_ranges: dict = {}
        # index value (LLVM) -> [(digit value, extent)], outermost first: the value is the
        # row-major linear index of those digits (a loop over a refined shape, elementwise.py
        # _refined_loop), so a reshape that splits it takes the digits, with no division
        self.index_digits: dict = {}
        self._memo: dict = {}  # op_at's values: (op, index, block) ids -> (op, index, block, value)
        self.read_metadata = None  # LLVM metadata put on the loads of buffers (alias scopes)
        self.read_exclude: frozenset = frozenset()  # values whose loads get no read_metadata
        self._globals = 0
        self._const_globals: dict = {}  # constant op -> its global
        self.scalars: dict = {}  # value -> stack slot holding its value at the current row
        # value -> (f32* rows, first row, row count): a value of shape [N, H, ...] computed
        # a few rows (dimension 1, at one index of dimension 0) at a time into scratch
        # (kernels_window.py: a convolution's rows under its pooling)
        self.row_windows: dict = {}
        # value -> read(idx): its element from a tile staged on the stack, or None where the
        # tile does not hold it (elementwise._register_transpose: a transpose under its consumer)
        self.tiles: dict = {}

    # -- helpers
    def intrinsic(self, name: str, t: ir.Type, args):
        """LLVM intrinsic `name` on type t (the target may call something else instead)."""
        return self.target.intrinsic(self, name, t, args)

    def libm(self, name: str, args):
        """C math function `name` (`name`f for float) as the target provides it."""
        return self.target.libm(self, name, args)

    def const_i64(self, x: int) -> ir.Constant:
        return ir.Constant(I64, int(x))

    def ranged_index(self, i, lo: int, hi: int):
        """i + lo, known to lie in [lo, hi) (i counts a box's loop from 0)."""
        v = self.b.add(i, self.const_i64(lo)) if lo else i
        self.index_ranges[v] = (lo, hi)
        return v

    def index_range(self, i):
        """(lo, hi) when index value i is known to lie in [lo, hi), else None."""
        return self.index_ranges.get(i)

    def offset_index(self, i, c: int):
        """i + c, its range carried along when i's is known."""
        if c == 0:
            return i
        v = self.b.add(i, self.const_i64(c))
        r = self.index_range(i)
        if r is not None:
            self.index_ranges[v] = (r[0] + c, r[1] + c)
        return v

    def element_ptr(self, base, et: ElementType, linear):
        p = self.b.bitcast(base, S.mem_type(et).as_pointer())
        return self.b.gep(p, [linear], inbounds=True)

    def linear(self, idx, shape):
        b = self.b
        acc = None
        for i, s in zip(idx, _strides(shape)):
            term = i if s == 1 else b.mul(i, self.const_i64(s))
            acc = term if acc is None else b.add(acc, term)
        return acc if acc is not None else self.const_i64(0)

    def reshape_index(self, idx, out_shape: list, in_shape: list) -> list:
        """The operand index of a reshape's element `idx`. Both shapes are cut into the
        shortest runs of dimensions with equal products; a run that is one dimension on each
        side (after dropping unit dimensions) maps directly, only runs that really split or
        merge dimensions pay for a division (so [1,128,768] <-> [128,768] costs nothing and
        loops stay vectorizable)."""
        out = [None] * len(in_shape)
        i = j = 0
        no, ni = len(out_shape), len(in_shape)
        while i < no or j < ni:
            # one run: grow the smaller side until the products meet
            ri, rj = [], []
            po = pi = 1
            while True:
                if po == pi and (ri or rj) and not (i < no and out_shape[i] == 1 and po > 1) \
                        and not (j < ni and in_shape[j] == 1 and pi > 1):
                    break
                if (po <= pi and i < no) or j >= ni:
                    po *= out_shape[i]
                    ri.append(i)
                    i += 1
                else:
                    pi *= in_shape[j]
                    rj.append(j)
                    j += 1
                if i >= no and j >= ni:
                    break
            big_o = [d for d in ri if out_shape[d] != 1]
            big_i = [d for d in rj if in_shape[d] != 1]
            for d in rj:
                if in_shape[d] == 1:
                    out[d] = self.const_i64(0)
            if len(big_i) == 0:
                continue
            if [out_shape[d] for d in big_o] == [in_shape[d] for d in big_i]:
                # the same dimensions on both sides, unit ones aside (a run that took in a
                # unit dimension between two others: [64, 493] <-> [64, 1, 493])
                for do, di in zip(big_o, big_i):
                    out[di] = idx[do]
                continue
            grouped = self._regroup([idx[d] for d in big_o], [out_shape[d] for d in big_o],
                                    [in_shape[d] for d in big_i])
            if grouped is not None:
                for d, v in zip(big_i, grouped):
                    out[d] = v
                continue
            lin = self.linear([idx[d] for d in big_o], [out_shape[d] for d in big_o])
            for d, v in zip(big_i, self.delinear(lin, [in_shape[d] for d in big_i])):
                out[d] = v
        return out

    def _regroup(self, idx: list, shape: list, target: list):
        """idx (of `shape`) as an index of `target` (same product) without division, when the
        indices' digits (index_digits; an index without is one digit) group into target's
        dimensions; else None."""
        digits = []
        for i, n in zip(idx, shape):
            digits += self.index_digits.get(i, [(i, n)])
        if len(digits) == len(idx):
            return None
        out = []
        for n in target:
            group, p = [], 1
            while p < n and digits:
                group.append(digits.pop(0))
                p *= group[-1][1]
            if p != n:
                return None
            v = self.linear([g[0] for g in group], [g[1] for g in group])
            if len(group) > 1:
                self.index_digits[v] = group
            out.append(v)
        return out

    def delinear(self, lin, shape):
        b = self.b
        out = []
        for s, d in zip(_strides(shape), shape):
            q = b.udiv(lin, self.const_i64(s)) if s != 1 else lin
            out.append(b.urem(q, self.const_i64(d)) if d != 1 else self.const_i64(0))
        return out

    def global_bytes(self, data: bytes):
        """A read-only global holding `data` (target.constant_global), as a generic pointer."""
        g = self.target.constant_global(self.module, f"const_{self._globals}", data)
        self._globals += 1
        return g

    def constant_global(self, v):
        """The global holding constant v's elements in memory (numpy's layout: i1 as bytes,
        bf16 as i16), made once per constant op and shared by every read of it (op_at, and
        kernels that need the constant in memory); None when v is not a constant."""
        if not is_constant(v):
            return None
        op = v.owner
        g = self._const_globals.get(op)
        if g is None:
            from axle.limits import check_constant
            arr = op.attributes["value"].array
            check_constant(arr.size * arr.itemsize, "the constant", op)
            data = np.ascontiguousarray(arr.astype(np.uint8) if _ty(v).element_type.is_bool else arr).tobytes()
            g = self._const_globals[op] = self.global_bytes(data)
        return g

    @contextlib.contextmanager
    def reading(self, metadata: Optional[dict], exclude=()):
        """Buffer loads emitted inside carry `metadata` (an alias scope's noalias: see
        backends/cpu/scopes.py), except loads of the values in `exclude` (buffers a result
        shares); None adds nothing."""
        saved = self.read_metadata, self.read_exclude
        self.read_metadata, self.read_exclude = metadata, frozenset(exclude)
        try:
            yield
        finally:
            self.read_metadata, self.read_exclude = saved

    def smin(self, x, y):
        return self.b.select(self.b.icmp_signed("<", x, y), x, y)

    def smax(self, x, y):
        return self.b.select(self.b.icmp_signed(">", x, y), x, y)

    def tile_end(self, start, tile: int, extent: int):
        """min(start + tile, extent): the end of a tile of a dimension of `extent`."""
        return self.smin(self.b.add(start, self.const_i64(tile)), self.const_i64(extent))

    def strided_range(self, off, stride: int, extent: int, lo, hi):
        """The j in [lo, hi) with 0 <= j * stride + off < extent (a window position's
        results that read inside a dimension of `extent`), as (start, end); start >= end
        when there are none. lo, hi >= 0."""
        b, c = self.b, self.const_i64
        first = b.sdiv(b.add(b.neg(off), c(stride - 1)), c(stride))  # ceil(-off / stride)
        start = self.smax(lo, b.select(b.icmp_signed(">", off, c(0)), c(0), first))
        room = b.sub(c(extent - 1), off)
        end = b.select(b.icmp_signed("<", room, c(0)), c(0), b.add(b.sdiv(room, c(stride)), c(1)))
        return start, self.smin(hi, end)

    def alloca(self, t: ir.Type):
        """A stack slot in the function's entry block (where mem2reg can promote it; an
        alloca inside a loop would grow the stack every iteration)."""
        return entry_alloca(self.b, t)

    # -- loops
    def loop_nest(self, shape, body: Callable[[list], None], copy_nests: bool = False, unroll: int = 0) -> None:
        """for idx in ndindex(shape): body(idx). copy_nests: see for_range. unroll: a nest of
        at most this many trips in all is emitted straight, with constant indices (short
        rows: LLVM's loop vectorizer leaves loops of fewer than 16 trips alone, and its
        SLP vectorizer packs the straight code instead)."""
        total = 1
        for d in shape:
            total *= d
        if 0 < total <= unroll:
            for idx in np.ndindex(*shape):
                body([self.const_i64(int(i)) for i in idx])
            return
        self.loop_nest_range(shape, -1, None, None, body, copy_nests)

    UNROLL_MAX = 4  # loops of at most this many trips are unrolled here...
    UNROLL_COPIES = 16  # ...while the nest of unrolled loops makes at most this many copies
    loops_emitted = 0  # run-time loops emitted so far (for_range: does a body hold loops?)

    def loop_nest_range(self, shape, dim: int, lo, hi, body: Callable[[list], None], copy_nests: bool = False,
                        unroll_inner: int = 0) -> None:
        """Like loop_nest, but dimension `dim` runs over [lo, hi) (run-time values). With
        unroll_inner, an innermost dimension of at most that many trips is emitted straight
        (see loop_nest's unroll)."""
        if any(d == 0 for d in shape):
            return
        idx = []

        def level(k):
            if k == len(shape):
                body(list(idx))
                return
            step = lambda i: (idx.append(i), level(k + 1), idx.pop())  # noqa: E731
            if k == dim:
                self.for_range_dynamic(lo, hi, step)
            elif k == len(shape) - 1 and shape[k] <= unroll_inner:
                for i in range(shape[k]):
                    step(self.const_i64(i))
            else:
                self.for_range(shape[k], step, copy_nests)
        level(0)

    def for_range_dynamic(self, lo, hi, body: Callable) -> None:
        """for i in range(lo, hi): body(i), with run-time bounds (nothing when lo >= hi)."""
        self.loops_emitted += 1
        b = self.b
        head = b.append_basic_block("dloop")
        exit_ = b.append_basic_block("dloop.end")
        pre = b.block
        b.cbranch(b.icmp_unsigned("<", lo, hi), head, exit_)
        b.position_at_end(head)
        i = b.phi(I64, "i")
        i.add_incoming(lo, pre)
        body(i)
        nxt = b.add(i, self.const_i64(1))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_unsigned("<", nxt, hi), head, exit_)
        b.position_at_end(exit_)

    def for_range(self, n: int, body: Callable, copy_nests: bool = False) -> None:
        """for i in range(n): body(i). Short loops are unrolled while emitting (LLVM's own
        unroller is off: it costs more compile time than it gains on our loop nests). A short
        loop of 3 or 4 trips whose body holds run-time loops is unrolled once only: the
        other trips run as a run-time loop (one more copy of the nest instead of three, and
        LLVM's time follows the IR's size), unless copy_nests (where constant trip indices
        pay: measured)."""
        b = self.b
        copies = getattr(self, "_copies", 1)
        if n <= self.UNROLL_MAX and copies * n <= self.UNROLL_COPIES:
            self._copies = copies * n
            try:
                loops = self.loops_emitted
                body(self.const_i64(0))
                looped = self.loops_emitted > loops
                if not looped or n < 3 or copy_nests:
                    for k in range(1, n):
                        body(self.const_i64(k))
            finally:
                self._copies = copies
            if looped and n >= 3 and not copy_nests:  # the body holds loops: the other trips as one run-time loop
                self.for_range_dynamic(self.const_i64(1), self.const_i64(n), body)
            return
        self.loops_emitted += 1
        pre = b.block
        head = b.append_basic_block("loop")
        exit_ = b.append_basic_block("loop.end")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, "i")
        i.add_incoming(self.const_i64(0), pre)
        body(i)
        nxt = b.add(i, self.const_i64(1))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_unsigned("<", nxt, self.const_i64(n)), head, exit_)
        b.position_at_end(exit_)

    def if_else(self, cond, then_fn, else_fn, t: ir.Type):
        b = self.b
        with b.if_else(cond) as (then, otherwise):
            with then:
                tv = then_fn()
                tb = b.block
            with otherwise:
                ev = else_fn()
                eb = b.block
        phi = b.phi(t)
        phi.add_incoming(tv, tb)
        phi.add_incoming(ev, eb)
        return phi

    # -- element values
    def value_at(self, v: Value, idx: list):
        t = _ty(v)
        et = t.element_type
        slot = self.scalars.get(v)
        if slot is not None:  # a row-fused reduction: its value at this row (row_fusion.py)
            return self.b.load(slot)
        tile = self.tiles.get(v)
        if tile is not None:
            got = tile(idx)
            if got is not None:
                return got
        win = self.row_windows.get(v)
        if win is not None:
            rows, first, count = win
            local = [self.b.sub(idx[1], first)] + list(idx[2:])
            return S.load(self.b, self.element_ptr(rows, et, self.linear(local, [count] + list(t.shape[2:]))), et)
        if v in self.buffers:
            return S.load(self.b, self.element_ptr(self.buffers[v], et, self.linear(idx, t.shape)), et,
                          None if v in self.read_exclude else self.read_metadata)
        op = getattr(v, "owner", None)
        if not isinstance(op, Operation):
            raise Unsupported("block argument without a buffer")
        return self.op_at(op, idx)

    def op_at(self, op: Operation, idx: list):
        """The element of op's (first) result at idx. Computed once per point of the
        generated code: a value read by several fused ops at the same index (a DAG of
        elementwise ops: threefry's rounds, a residual added twice) is taken from `_memo`
        when the builder is still in the block where it was computed (which it dominates
        from there on)."""
        hit = self._memo.get((id(op), tuple(map(id, idx)), id(self.b.block)))
        if hit is not None and hit[0] is op and hit[2] is self.b.block:
            return hit[3]
        value = self._op_at(op, idx)
        # keyed by the block the value ends in (a mapper may branch); the references kept
        # in the entry keep the key's ids from being reused
        self._memo[(id(op), tuple(map(id, idx)), id(self.b.block))] = (op, tuple(idx), self.b.block, value)
        return value

    def _op_at(self, op: Operation, idx: list):
        name = op.name
        b = self.b
        mapper = ELEMENT_MAPPERS.get(name)
        if mapper is not None:
            return mapper(self, op, idx)
        rt = _ty(op.results[0])
        et = rt.element_type
        if name == "stablehlo.constant":
            arr = op.attributes["value"].array
            if arr.size > 1 and all(s == 0 for s in arr.strides):  # a lazy splat: one value
                v = arr.reshape(-1)[0]
                return S.constant(et, float(v) if arr.dtype.kind == "f" or et.name == "bf16" else v)
            flat = arr.reshape(-1)
            if arr.size and (flat == flat[0]).all() and not (et.is_float and np.isnan(flat[0]) and not
                                                              np.isnan(flat).all()):
                if arr.dtype.kind == "f" or et.name == "bf16":
                    bits = np.ascontiguousarray(flat).view(np.uint8).reshape(flat.size, -1)
                    if (bits == bits[:1]).all():
                        return S.constant(et, float(flat[0]))
                else:
                    return S.constant(et, flat[0])
            # the global is made once per constant; the pointer cast is made in each function
            g = self.constant_global(op.results[0])
            ptr = self.element_ptr(self.b.bitcast(g, I8.as_pointer()), et, self.linear(idx, rt.shape))
            return S.load(b, ptr, et)
        if name == "stablehlo.iota":
            d = op.attr("iota_dimension")
            return convert(self, _INDEX_ET, et, idx[d])
        if name == "stablehlo.broadcast_in_dim":
            src = op.operands[0]
            st = _ty(src)
            dims = op.attr("broadcast_dimensions")
            sidx = [self.const_i64(0) if st.shape[i] == 1 and rt.shape[d] != 1 else idx[d]
                    for i, d in enumerate(dims)]
            return self.value_at(src, sidx)
        if name == "stablehlo.transpose":
            perm = op.attr("permutation")
            sidx = [None] * len(perm)
            for i, p in enumerate(perm):
                sidx[p] = idx[i]
            return self.value_at(op.operands[0], sidx)
        if name == "stablehlo.reshape":
            # a chain of fused reshapes is one reshape (the row-major order is kept by each):
            # index the first operand straight from this shape, so that a reshape and its
            # inverse (around a library dot's result) cost no division and read the element
            # at the very address the loop writes
            src = op.operands[0]
            while (src not in self.buffers and src not in self.scalars and src not in self.row_windows
                   and getattr(getattr(src, "owner", None), "name", None) == "stablehlo.reshape"):
                src = src.owner.operands[0]
            st = _ty(src)
            if list(st.shape) == list(rt.shape):
                return self.value_at(src, idx)
            return self.value_at(src, self.reshape_index(idx, list(rt.shape), list(st.shape)))
        if name == "stablehlo.slice":
            starts, strides = op.attr("start_indices"), op.attr("strides")
            sidx = [self.offset_index(i, s0) if st == 1 else b.add(b.mul(i, self.const_i64(st)), self.const_i64(s0))
                    for i, s0, st in zip(idx, starts, strides)]
            return self.value_at(op.operands[0], sidx)
        if name == "stablehlo.reverse":
            dims = set(op.attr("dimensions"))
            sidx = [b.sub(self.const_i64(rt.shape[k] - 1), i) if k in dims else i for k, i in enumerate(idx)]
            return self.value_at(op.operands[0], sidx)
        if name == "stablehlo.concatenate":
            return self._concat_at(op, idx, rt)
        if name == "stablehlo.pad":
            return self._pad_at(op, idx, rt)
        if name == "stablehlo.convert":
            src = _ty(op.operands[0]).element_type
            return S.finish(b, convert(self, src, et, self.value_at(op.operands[0], idx)), et)
        if name == "stablehlo.bitcast_convert":
            src = _ty(op.operands[0]).element_type
            if src.bitwidth != et.bitwidth or src.is_bool or et.is_bool:
                from axle.codegen.bitcast import bitcast_wide  # other widths: bitcast.py
                return bitcast_wide(self, op, idx)
            return _bitcast_scalar(b, self.value_at(op.operands[0], idx), src, et)
        r = RULES.get(name)
        if r is None:
            raise Unsupported(op.where())
        args = [self.value_at(v, idx) for v in op.operands]
        in_et = _ty(op.operands[-1]).element_type
        out = r(self, in_et, args, op)
        return out if et.name == "bf16" and name in EXACT_ON_INPUTS else S.finish(b, out, et)

    def _concat_at(self, op, idx, rt):
        dim = op.attr("dimension")
        b = self.b
        offsets = []
        off = 0
        for v in op.operands:
            offsets.append(off)
            off += _ty(v).shape[dim]
        t = S.reg_type(rt.element_type)
        part = self.concat_parts.get(op)
        if part is not None and part[1] == tuple(map(id, idx)):
            # this loop runs over one operand's part and reads op at its own index (read
            # elsewhere, through a reverse or a slice, op still chooses per element): that
            # operand, and a nested concatenate of the split reads its part at this index
            k = part[0]
            sub = idx[:dim] + [b.sub(idx[dim], self.const_i64(offsets[k]))] + idx[dim + 1:]
            inner = getattr(op.operands[k], "owner", None)
            if inner in self.concat_parts:
                self.concat_parts[inner] = (self.concat_parts[inner][0], tuple(map(id, sub)))
            return self.value_at(op.operands[k], sub)

        def at(k):
            return self.value_at(op.operands[k], idx[:dim] + [self.offset_index(idx[dim], -offsets[k])] + idx[dim + 1:])
        known = self.index_range(idx[dim])
        if known is not None:  # in a box of index_boxes.py: one operand holds the whole range
            for k, v in enumerate(op.operands):
                if offsets[k] <= known[0] and known[1] <= offsets[k] + _ty(v).shape[dim]:
                    return at(k)

        def pick(k):
            v = op.operands[k]
            if k == len(op.operands) - 1:
                return at(k)
            end = offsets[k] + _ty(v).shape[dim]
            inside = b.icmp_unsigned("<", idx[dim], self.const_i64(end))
            return self.if_else(inside, lambda: at(k), lambda: pick(k + 1), t)

        return pick(0)

    def _pad_at(self, op, idx, rt):
        b = self.b
        lo, interior = op.attr("edge_padding_low"), op.attr("interior_padding")
        st = _ty(op.operands[0])
        cond = ir.Constant(I1, 1)
        sidx = []
        for k, i in enumerate(idx):
            known = self.index_range(i) if interior[k] == 0 else None
            if known is not None:  # in a box of index_boxes.py: all inside, or all padding
                if known[0] - lo[k] >= 0 and known[1] - lo[k] <= st.shape[k]:
                    sidx.append(self.offset_index(i, -lo[k]))
                    continue
                if known[1] - lo[k] <= 0 or known[0] - lo[k] >= st.shape[k]:
                    return self.value_at(op.operands[1], [])
            shifted = b.sub(i, self.const_i64(lo[k]))  # may be negative (as unsigned: huge)
            step = interior[k] + 1
            if step != 1:
                ok = b.icmp_unsigned("==", b.urem(shifted, self.const_i64(step)), self.const_i64(0))
                cond = b.and_(cond, ok)
                shifted = b.udiv(shifted, self.const_i64(step))
            cond = b.and_(cond, b.icmp_signed(">=", b.sub(i, self.const_i64(lo[k])), self.const_i64(0)))
            cond = b.and_(cond, b.icmp_signed("<", shifted, self.const_i64(st.shape[k])))
            sidx.append(shifted)
        if isinstance(cond, ir.Constant):  # every dimension inside (a box of index_boxes.py)
            return self.value_at(op.operands[0], sidx)
        t = S.reg_type(rt.element_type)
        return self.if_else(cond, lambda: self.value_at(op.operands[0], sidx),
                            lambda: self.value_at(op.operands[1], []), t)

    # -- scalar regions (reduce bodies)
    def region_scalars(self, region, args: list, bf16_in_f32: bool = False) -> list:
        """The region's results on scalar registers. bf16_in_f32: its bf16 ops compute in
        f32 without rounding each result to bf16 (bf16 registers are f32 already; the
        caller rounds what it stores): the excess precision XLA's CPU backend also takes."""
        block = region.blocks[0]
        env = {a: v for a, v in zip(block.arguments, args)}
        for op in block.operations:
            if op.name == "stablehlo.return":
                return [env[v] for v in op.operands]
            r = RULES.get(op.name)
            ins = [env[v] if v in env else self._outer_scalar(v) for v in op.operands]
            if op.name == "stablehlo.convert":
                out = convert(self, _ty(op.operands[0]).element_type, _ty(op.results[0]).element_type, ins[0])
            elif op.name == "stablehlo.constant":
                out = self.op_at(op, [])
            elif op.name in ("stablehlo.real", "stablehlo.imag", "stablehlo.complex"):
                out = _parts_scalar(self, op, ins)
            elif op.name == "stablehlo.bitcast_convert":  # (total-order sort comparators)
                src, dst = _ty(op.operands[0]).element_type, _ty(op.results[0]).element_type
                if src.bitwidth != dst.bitwidth or src.is_bool or dst.is_bool or _ty(op.results[0]).shape != ():
                    raise Unsupported(f"{op.where()}: bitcast_convert {src} -> {dst} in a region body")
                out = _bitcast_scalar(self.b, ins[0], src, dst)
            elif r is None:
                raise Unsupported(f"{op.where()} in a reduction body")
            else:
                in_et = _ty(op.operands[-1]).element_type
                out = r(self, _F32_ET if bf16_in_f32 and in_et.name == "bf16" else in_et, ins, op)
            et = _ty(op.results[0]).element_type
            exact = et.name == "bf16" and (bf16_in_f32 or op.name in EXACT_ON_INPUTS)
            env[op.results[0]] = out if exact else S.finish(self.b, out, et)
        raise Unsupported("reduction body without a return")

    def _outer_scalar(self, v):
        t = _ty(v)
        if t.shape != ():
            raise Unsupported("reduction body uses a non-scalar value from outside")
        return self.value_at(v, [])


def _bitcast_scalar(b, x, src, et):
    """bitcast_convert of one register between element types of the same width."""
    if src == et:
        return x
    if _f8.is_f8(src) or _f8.is_f8(et):
        return _f8.bitcast(b, x, src, et)
    if src.name == "bf16":  # the register is the f32 whose top half is the bf16
        x = b.trunc(b.lshr(b.bitcast(x, S.I32), ir.Constant(S.I32, 16)), S.I16)
        return x if et.is_int else b.bitcast(x, S.reg_type(et))
    if et.name == "bf16":
        bits = x if src.is_int else b.bitcast(x, S.I16)
        return b.bitcast(b.shl(b.zext(bits, S.I32), ir.Constant(S.I32, 16)), S.F32)
    return b.bitcast(x, S.reg_type(et))


def _parts_scalar(em, op, ins):
    """real / imag / complex on scalar registers (inside region bodies)."""
    et = _ty(op.operands[0]).element_type
    if op.name == "stablehlo.complex":
        from axle.codegen.scalar_ops import make
        return make(em.b, S.reg_type(_ty(op.results[0]).element_type), ins[0], ins[1])
    if not et.is_complex:
        return ins[0] if op.name == "stablehlo.real" else S.constant(et, 0)
    return em.b.extract_value(ins[0], 0 if op.name == "stablehlo.real" else 1)


_INDEX_ET = __import__("axle.ir.types", fromlist=["i64"]).i64
