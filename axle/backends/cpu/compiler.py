"""The CPU backend's code generation: one LLVM function per program.

`compile_function(module, entry)` turns a function (after the default passes) into LLVM
IR with one native entry, `void axle_entry(i8** buffers)`: buffers[0..n) are the
arguments, then the results, then one arena holding every temporary at an offset
fixed at compile time.

Within a block, an op's value is *materialized* (given a buffer) when it is returned,
has several users, is produced by a kernel (an op that is not fusible), or is read by a
kernel that wants memory operands (dot, sort, ...). Every other fusible op is computed
inside the loop of whoever reads it (the elemental emitter, emitter.py).

Kernels are registered by op name in KERNELS (`@kernel(...)`): `fn(ctx, op)` emits the
code for `op`, writing each result into `ctx.buffer(result)`. Nested regions (while,
if, case bodies) are compiled by `ctx.emit_block`.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
from llvmlite import ir

from axle.backends.cpu import scalar as S
from axle.backends.cpu import status
from axle.backends.cpu.costs import MOVES
from axle.backends.cpu.emitter import FUSIBLE, Emitter, _ty
from axle.backends.cpu.scalar import I8, I64, Unsupported
from axle.ir.core import Block, Module, Operation, Value
from axle.ir.types import TensorType
from axle.limits import check_compile_time

ALIGN = 64
DUPLICATE_COST = 3  # a value read by several ops is recomputed by each when this cheap
# A fused chain longer than this gets a buffer: the elemental emitter and the planners walk
# fused producers recursively (a 5000-op elementwise chain was a RecursionError)
MAX_FUSION_DEPTH = 64


@dataclass
class KernelDef:
    fn: Callable
    memory_operands: bool = False  # operands must live in buffers (read many times)
    check: Optional[Callable] = None  # check(op) raises Unsupported for cases not handled
    in_place: Optional[int] = None  # operand whose buffer the (first) result may take over


KERNELS: dict[str, KernelDef] = {}


def kernel(*names: str, memory_operands: bool = False, check: Optional[Callable] = None,
           in_place: Optional[int] = None):
    """Register fn(ctx, op) for ops `names`. `in_place=k`: the result may live in operand k's
    buffer when that operand dies here and nothing else the kernel reads depends on it (the
    kernel must then skip copying operand k: Context.same_buffer tells)."""
    def deco(fn):
        for n in names:
            KERNELS[n] = KernelDef(fn, memory_operands, check, in_place)
        return fn
    return deco


@dataclass
class KernelInfo:
    """One emitted kernel: the op that owns the loop (or library call) and the ops fused into it.

    `fused` are the ops computed inside this kernel's loops instead of in their own buffers
    (elementwise producers, broadcasts, slices, ... read through the elemental emitter);
    `inputs` are the materialized values it reads (arguments, other kernels' results);
    `library` names the library routine the kernel calls, if any (e.g. "blas.sgemm").
    """
    index: int
    op: Operation
    fused: list
    inputs: list
    library: Optional[str] = None
    depth: int = 0  # 0 for the entry function, >0 inside while/if/case bodies

    @property
    def name(self) -> str:
        return self.op.name

    def where(self) -> str:
        return self.op.where()

    @property
    def shape(self) -> list:
        return list(_ty(self.op.results[0]).shape) if self.op.results else []

    def bytes_moved(self) -> int:
        """Bytes read from inputs plus bytes written to results (each buffer once)."""
        total = 0
        for v in list(self.inputs) + list(self.op.results):
            t = getattr(v, "type", None)
            if isinstance(t, TensorType) and t.is_static:
                total += nbytes(t)
        return total

    def flops(self) -> int:
        """Floating/integer operations, counted as XLA's cost analysis does roughly: one per
        element per elementwise op, 2*M*N*K for contractions."""
        from axle.backends.cpu.costs import kernel_flops
        return kernel_flops(self)

    # old tuple protocol: (op name, where, shape)
    def __iter__(self):
        return iter((self.name, self.where(), self.shape))

    def __getitem__(self, k):
        return (self.name, self.where(), self.shape)[k]


@dataclass
class Program:
    llvm_ir: str
    arg_types: list
    result_types: list
    arena_bytes: int
    kernels: list = field(default_factory=list)  # KernelInfo per emitted kernel, in program order
    allocations: list = field(default_factory=list)  # (offset, size, value, kernel index) per temporary
    cacheable: bool = True  # False when the code holds addresses valid only in this process
    host_callbacks: bool = False  # calls back into Python (errors are checked after a call)
    profile_offset: Optional[int] = None  # profile=True: arena offset of the kernel timestamps
    aliases: dict = field(default_factory=dict)  # result k -> argument j whose memory it is written into
    alias_rejections: list = field(default_factory=list)  # why requested aliases were not used (aliasing.py)
    host_ops: list = field(default_factory=list)  # ops computed in Python through host callbacks
    status_offset: Optional[int] = None  # arena offset of the status word (status.py), if used

    def buffer_report(self, top: int = 5) -> str:
        """Like XLA's buffer assignment summary: what the temporaries cost, and what is live
        at the peak (the op, where it is in the source, its shape) — for out-of-memory hunts.
        Temporaries held in a result buffer before the result is written count as the
        result's memory (as in XLA), not the arena's."""
        total = sum(a[1] for a in self.allocations)
        in_results = sum(a[1] for a in self.allocations if len(a) > 4)
        lines = [f"temporaries: {len(self.allocations)} buffers, {total} bytes if none shared; "
                 f"arena (peak) {self.arena_bytes} bytes "
                 f"({100.0 * self.arena_bytes / total if total else 0:.0f}% of the sum)"
                 + (f"; {in_results} bytes held in result buffers before they are written"
                    if in_results else "")]
        biggest = sorted(self.allocations, key=lambda a: -a[1])[:top]
        for a in biggest:
            off, size, v = a[:3]
            owner = getattr(v, "owner", None)
            where = owner.where() if owner is not None else "(kernel scratch)"
            place = f"offset {off:>10}" if len(a) == 4 else \
                f"result {a[4] - len(self.arg_types)} + {off}"
            lines.append(f"  {size:>12} bytes at {place}: {where} {getattr(v, 'type', '')}")
        return "\n".join(lines)


def nbytes(t: TensorType) -> int:
    return int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize


def check_supported(block: Block) -> None:
    checked = getattr(_FREE, "checked", None)  # blocks checked in this compilation
    if checked is not None:
        if id(block) in checked:
            return  # (nested loops: each level would check every block below it again)
        checked.add(id(block))
    for op in block.operations:
        if op.name in ("func.return", "stablehlo.return"):
            continue
        if op.name not in FUSIBLE and op.name not in KERNELS:
            raise Unsupported(f"{op.where()} is not supported by the cpu backend yet")
        k = KERNELS.get(op.name)
        if k is not None and k.check is not None:
            k.check(op)
        for r in op.results:
            _ty(r)


@dataclass(frozen=True)
class BufRef:
    """Where a buffer lives, valid in every function of the program: the pointer in table
    slot `slot`, plus `offset` bytes (temporaries: the arena's slot and their offset)."""
    slot: int
    offset: int = 0


class _Buffers(dict):
    """id(value) -> buffer pointer. BufRef entries resolve to a pointer in the function
    being emitted (each kernel is its own function), raw pointers are used as they are."""

    def __init__(self, ctx: "Context"):
        super().__init__()
        self._ctx = ctx

    def __getitem__(self, k):
        v = dict.__getitem__(self, k)
        return self._ctx.resolve(v) if isinstance(v, BufRef) else v

    def get(self, k, default=None):
        return self[k] if k in self else default


P8P = I8.as_pointer().as_pointer()


class _Pool:
    """Best-fit allocation of temporaries within one buffer: the arena (which grows to the
    peak) or a result buffer before its value is written (fixed size)."""

    def __init__(self, slot: int, limit: Optional[int] = None, free_until: int = 1 << 62):
        self.slot = slot
        self.limit = limit  # None: grows (the arena)
        self.free_until = free_until  # kernel position from which the buffer holds its result
        self.top = 0
        self.free: list[tuple[int, int]] = []  # (offset, size) of released blocks
        self.live: dict[int, tuple] = {}  # offset -> (size, value)

    def _fit(self, size: int) -> Optional[tuple]:
        """(block size, offset) of the smallest released block that fits, else of the room
        left at the end ((None, top) in the arena, which grows); None: no room."""
        fit = [(sz, off) for off, sz in self.free if sz >= size]
        if fit:
            return min(fit)
        if self.limit is None:
            return None, self.top
        return (self.limit - self.top, self.top) if self.top + size <= self.limit else None

    def alloc(self, size: int, value) -> Optional[int]:
        fit = self._fit(size)
        if fit is None:
            return None
        sz, off = fit
        if off == self.top:
            self.top += size
        else:
            self.free.remove((off, sz))
            if sz > size:
                self.free.append((off + size, sz - size))
        self.live[off] = (size, value)
        return off

    def best_fit(self, size: int) -> Optional[int]:
        """Size of the block alloc(size) would take (None: no room, or the growing arena)."""
        fit = self._fit(size)
        return None if fit is None else fit[0]

    def release(self, off: int) -> None:
        if off not in self.live:
            return
        size, _ = self.live.pop(off)
        self.free.append((off, size))
        self.free.sort()
        merged = []  # coalesce neighbours
        for o, sz in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + sz)
            else:
                merged.append((o, sz))
        self.free = merged


class Context:
    """Code generation state of one program: builder, emitter, arena and kernel list.

    Every top-level kernel is emitted into its own function `void kN(i8** table)` (not
    inlined: LLVM's work grows faster than linearly with function size, and a kernel is
    the unit the parallel runtime runs), called in order from the entry. Buffers are
    named by BufRef and resolved to pointers in the prologue of the function using them.
    """

    def __init__(self, mod: ir.Module, func: ir.Function, arena_slot: int, split_kernels: bool = True):
        self.mod = mod
        self.arena_slot = arena_slot
        self.split_kernels = split_kernels
        self.in_kernel_function = False  # emitting the top level of a kernel's own function
        self._enter(func)
        self.em = Emitter(mod, self.b, {})
        self.em.buffers = _Buffers(self)
        # temporaries: the arena, and result buffers not yet written (see _result_pools)
        self.pools: dict[int, _Pool] = {arena_slot: _Pool(arena_slot)}
        self.allocations: list = []  # (offset, size, value, kernel index[, slot]) for the report
        self._offsets: dict[int, tuple] = {}  # id(value) -> (slot, offset) of its temporary
        self.kernels: list = []
        self.cacheable = True  # set False by kernels that bake process addresses into the code
        self.host_callbacks = False
        self.host_ops: list = []  # names of the ops computed by host callbacks (conformance counts them)
        self._level = 0  # nesting of the block being emitted (while/if/case bodies > 0)
        self.timer = None  # profile=True: a profiling.KernelTimer stamping each top-level kernel
        self.row_fusions: dict = {}  # id(host op) -> (outer rank, reductions, index maps): row_fusion.py
        self.conv_rows: dict = {}  # id(reduce_window) -> the convolution whose rows it computes
        self.aliases: dict = {}  # requested result k -> argument j (donation; aliasing.py)
        self.alias_rejections: list = []

    # -- functions and buffers
    def _enter(self, fn: ir.Function) -> None:
        """Emit into `fn(i8** table)` from now on: an entry block of stack slots, then a
        prologue (buffer pointers), then the body."""
        slots = fn.append_basic_block("slots")  # the entry block: stack slots (Emitter.alloca)
        prologue = fn.append_basic_block("prologue")
        body = fn.append_basic_block("body")
        ir.IRBuilder(slots).branch(prologue)
        pb = ir.IRBuilder(prologue)
        term = pb.branch(body)
        pb.position_before(term)
        self._prologue = pb
        self.table = fn.args[0]
        self._resolved: dict = {}
        self.b = ir.IRBuilder(body)
        if hasattr(self, "em"):
            self.em.b = self.b

    def resolve(self, ref: BufRef):
        key = (ref.slot, ref.offset)
        v = self._resolved.get(key)
        if v is None:
            pb = self._prologue
            base = self._resolved.get((ref.slot, 0))
            if base is None:
                base = pb.load(pb.gep(self.table, [ir.Constant(I64, ref.slot)], inbounds=True))
                self._resolved[(ref.slot, 0)] = base
            if ref.offset == 0:
                v = base
            else:
                # an arena temporary: hide that it is `arena + offset` behind an empty asm, so
                # LLVM treats each temporary as its own object. Otherwise its dependence
                # analysis sees one object read and written at unrelated offsets and gives
                # up vectorizing; as separate objects it vectorizes (with overlap checks)
                v = pb.gep(base, [ir.Constant(I64, ref.offset)], inbounds=True)
                opaque = ir.InlineAsm(ir.FunctionType(v.type, [v.type]), "", "=r,0", side_effect=False)
                v = pb.call(opaque, [v])
            self._resolved[key] = v
        return v

    @property
    def arena(self):
        return self.resolve(BufRef(self.arena_slot))

    def kernel_function(self, name: str):
        """Context manager: emit into a new function `name(table)`, then call it here."""
        fn = ir.Function(self.mod, ir.FunctionType(ir.VoidType(), [P8P]), name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.attributes.add("nounwind")
        return self.function_scope(fn, call=True, kernel=True)

    def function_scope(self, fn: ir.Function, call: bool, kernel: bool = False):
        """Context manager: emit into `fn(table)` (fresh), then return here (and call it)."""
        ctx = self

        class _Scope:
            def __enter__(self_):
                self_.saved = (ctx.b, ctx.table, ctx._resolved, ctx._prologue, ctx.in_kernel_function)
                ctx._enter(fn)
                ctx.in_kernel_function = kernel
                return fn

            def __exit__(self_, *exc):
                ctx.b.ret_void()
                ctx.b, ctx.table, ctx._resolved, ctx._prologue, ctx.in_kernel_function = self_.saved
                ctx.em.b = ctx.b
                if exc[0] is None and call:
                    ctx.b.call(fn, [ctx.table])
                return False
        return _Scope()

    def _plan_pooled_convolutions(self, ops: list, want: set, targets: dict, returned: set, block: Block,
                                  uses: dict) -> None:
        """A convolution read only by a pooling (reduce_window over rows, through an
        elementwise epilogue such as batch norm and ReLU) gets no buffer: the pooling's
        kernel computes the few convolution rows each output row needs into scratch
        (kernels_window.py), so the full-size feature map never exists."""
        for op in ops:
            if op.name != "stablehlo.reduce_window" or len(op.results) != 1:
                continue
            conv = _pooled_convolution(op, want, uses, block)
            if conv is None or id(conv.results[0]) in targets or id(conv.results[0]) in returned:
                continue
            want.discard(id(conv.results[0]))
            self.conv_rows[id(op)] = conv

    def _plan_row_fusion(self, ops: list, want: set, targets: dict, returned: set, block: Block,
                         uses: dict) -> set:
        """Row fusions of the top-level block (row_fusion.plan) into self.row_fusions; returns
        the materialized values that remain. A value given a buffer only because two ops
        read it and it is too costly to compute twice (exp(x - max) under a masked
        softmax), whose two readers are a reduction row-fused into a kernel and that
        kernel at its own index, is left unmaterialized when planning again without it
        keeps it in that kernel's result row (row_fusion._row_kept): computed once, and
        neither a kernel nor a buffer of its own."""
        from axle.backends.cpu import row_fusion

        def plan(w):
            memo: dict = {}
            return row_fusion.plan(ops, w, targets, returned, block, lambda o: _op_deps(o, w, block, memo))
        chosen = set(want)  # plan() drops the row-fused reductions from the set it is given
        plans = plan(chosen)
        removed: set = set()
        tried: set = set()
        while True:
            candidates = [red.operands[0] for _, reds, _, _ in plans.values() for red in reds]
            candidates = [v for v in candidates if id(v) in chosen and id(v) not in tried
                          and _computed_here(v, block) and uses.get(id(v), 0) == 2
                          and id(v) not in targets and id(v) not in returned]
            if not candidates:
                break
            v = candidates[0]
            tried.add(id(v))
            trial = set(want) - removed - {id(v)}
            again = plan(trial)
            if any(kept is not None and kept.operands[0] is v for _, _, _, kept in again.values()):
                removed.add(id(v))
                chosen, plans = trial, again
        self.row_fusions.update(plans)
        return chosen

    def mark_library(self, name: str) -> None:
        """Record that the kernel being emitted calls library routine `name`."""
        self.kernels[-1].library = name

    def buffer(self, v: Value):
        """The pointer to v's buffer in the function being emitted. A constant never gets a
        buffer of its own (fused readers compute it in place): a kernel reading memory
        (BLAS, convolution, sort, a host call, ...) reads its data from a global instead."""
        if id(v) not in self.em.buffers:
            g = _constant_global(self.em, v)
            if g is not None:
                return self.b.bitcast(g, I8.as_pointer())
        return self.em.buffers[id(v)]

    def same_buffer(self, a: Value, b: Value) -> bool:
        """Whether a and b were given the same buffer (an in-place update)."""
        bufs = self.em.buffers
        if id(a) not in bufs or id(b) not in bufs:
            return False
        x, y = dict.__getitem__(bufs, id(a)), dict.__getitem__(bufs, id(b))
        return x is y or (isinstance(x, BufRef) and x == y)

    def has_buffer(self, v: Value) -> bool:
        """Whether buffer(v) is a pointer: a planned buffer, or a constant's global."""
        return id(v) in self.em.buffers or _is_constant(v)

    @property
    def offset(self) -> int:
        """The arena's size so far: the peak of temporary memory."""
        return self.pools[self.arena_slot].top

    @offset.setter
    def offset(self, value: int) -> None:
        self.pools[self.arena_slot].top = value

    def temp_ref(self, t: TensorType, value: Optional[Value] = None, until: Optional[int] = None) -> BufRef:
        """A temporary buffer: the smallest released block that fits (best fit), else fresh
        space at the end of the arena. `release(value)` returns it once its last reader ran.
        `until` (top level only): the position of the last kernel reading it; then a result
        buffer that is first written after that position may hold it instead (XLA does the
        same: such memory counts as the result's, not as temporary memory)."""
        size = (max(nbytes(t), 1) + ALIGN - 1) // ALIGN * ALIGN
        pool = self.pools[self.arena_slot]
        if until is not None:
            best = None
            for p in self.pools.values():
                if p.slot != self.arena_slot and p.free_until > until:
                    sz = p.best_fit(size)
                    if sz is not None and (best is None or sz < best[0]):
                        best = (sz, p)
            if best is not None:
                pool = best[1]
        off = pool.alloc(size, value)
        slot = pool.slot
        self.allocations.append((off, size, value, len(self.kernels)) + (() if slot == self.arena_slot else (slot,)))
        if value is not None:
            self._offsets[id(value)] = (slot, off)
        return BufRef(slot, off)

    def temp(self, t: TensorType, value: Optional[Value] = None):
        """A temporary (temp_ref) as a pointer in the function being emitted."""
        return self.resolve(self.temp_ref(t, value))

    def release(self, value: Value) -> None:
        key = self._offsets.pop(id(value), None)
        if key is not None:
            self.pools[key[0]].release(key[1])

    def _result_pools(self, results_into: list, values: list, first_write: dict) -> None:
        """Result buffers as room for temporaries until their value is first written:
        results_into[k] (a BufRef of a result slot, holding values[k]) is free before
        kernel position first_write[slot]."""
        for dst, v in zip(results_into, values):
            if isinstance(dst, BufRef) and dst.offset == 0 and dst.slot not in self.pools:
                size = nbytes(_ty(v)) // ALIGN * ALIGN
                if size >= ALIGN:
                    self.pools[dst.slot] = _Pool(dst.slot, size, first_write.get(dst.slot, 1 << 62))

    def copy(self, v: Value, dst) -> None:
        """Write every element of v into buffer dst."""
        t = _ty(v)
        em = self.em
        if isinstance(dst, BufRef):
            dst = self.resolve(dst)
        em.loop_nest(t.shape, lambda idx: S.store(self.b, em.value_at(v, idx),
                                                   em.element_ptr(dst, t.element_type, em.linear(idx, t.shape)),
                                                   t.element_type))

    def emit_block(self, block: Block, results_into: Optional[list] = None) -> list:
        """Emit a block's ops; returns its terminator's operands. `results_into[k]`, when
        given, is a buffer the k-th returned value is written to (directly by its producer
        when possible, else by a copy)."""
        saved = self.in_kernel_function
        # nested bodies may hold function-local buffers (a while body whose buffers are all
        # table buffers says otherwise: kernels_control sets _parallel_body for one block)
        if self._level > 0 and not self.__dict__.pop("_parallel_body", False):
            self.in_kernel_function = False
        self._level += 1
        try:
            return self._emit_block(block, results_into, self._level - 1)
        finally:
            self._level -= 1
            self.in_kernel_function = saved

    def _emit_block(self, block: Block, results_into: Optional[list], level: int) -> list:
        check_supported(block)
        ops = block.operations[:-1]
        ret = block.operations[-1]
        uses: dict[int, int] = {}
        for op in block.operations:
            for v in op.operands:
                uses[id(v)] = uses.get(id(v), 0) + 1
        targets: dict[int, object] = {}
        copies = []
        for k, v in enumerate(ret.operands):
            dst = results_into[k] if results_into is not None else None
            if dst is None:
                continue
            owner = getattr(v, "owner", None)
            if id(v) in targets or not isinstance(owner, Operation) or owner.parent is not block \
                    or (owner.name == "stablehlo.constant"):
                copies.append((v, dst))
            else:
                targets[id(v)] = dst
        want = set()
        cost: dict[int, int] = {}  # id(value) -> ops recomputed per element when it is read fused
        depth: dict[int, int] = {}  # id(value) -> length of the fused chain computing it
        for op in ops:
            kd = KERNELS.get(op.name)
            chain = 1 + max((depth.get(id(v), 0) for v in op.operands if id(v) not in want), default=0)
            cheap = op.name == "stablehlo.constant"  # read in place (splat or global data)
            if kd is None:
                c = (0 if op.name in MOVES else 1) + sum(cost.get(id(v), 0) for v in op.operands
                                                         if id(v) not in want)
            for r in op.results:
                if kd is not None or id(r) in targets or (results_into is None and r in ret.operands):
                    want.add(id(r))
                elif uses.get(id(r), 0) > 1 and not cheap:
                    # several readers: recompute it in each (as XLA duplicates cheap producers
                    # into consumers) when that costs at most DUPLICATE_COST ops per element,
                    # else give it a buffer
                    if c > DUPLICATE_COST:
                        want.add(id(r))
                    else:
                        cost[id(r)] = c
                else:
                    cost[id(r)] = c if kd is None else 0
                if chain > MAX_FUSION_DEPTH:  # the emitter recurses once per fused op
                    want.add(id(r))
                depth[id(r)] = 0 if id(r) in want else chain
            if kd is not None and kd.memory_operands:
                for v in op.operands:
                    o = getattr(v, "owner", None)
                    if isinstance(o, Operation) and o.parent is block and o.name != "stablehlo.constant":
                        want.add(id(v))
        top = level == 0 and results_into is not None  # the program's own block
        if top:
            returned = {id(v) for v in ret.operands}
            self._plan_pooled_convolutions(ops, want, targets, returned, block, uses)
            want = self._plan_row_fusion(ops, want, targets, returned, block, uses)
        order = None
        if top and SCHEDULE:
            order = _schedule(ops, want, block, targets, ret)
            ops = order
        last_read = _last_readers(block, want, order)
        by_id = {id(r): r for op in ops for r in op.results}
        # in place: an elementwise kernel whose result is returned lets the producer of an
        # operand it reads only at the same index (and last) write straight into the result
        # buffer, and then overwrites it element by element (XLA's in-place elementwise
        # buffer sharing; e.g. a weight update w - lr * dot(...) needs no temporary)
        if top and self.aliases:  # donated arguments: which results may be written into them
            from axle.backends.cpu.aliasing import plan_aliases
            self.aliases = plan_aliases(self, block, ops, want, targets, ret, results_into, self.aliases)
        alias_slots = set(self.aliases.values()) if top else set()
        if level == 0:
            for op in ops:
                if op.results and id(op.results[0]) in targets and getattr(
                        targets[id(op.results[0])], "slot", None) not in alias_slots:
                    v = _in_place_operand(op, want, block, last_read)
                    if v is not None and id(v) not in targets and v not in ret.operands:
                        targets[id(v)] = targets[id(op.results[0])]
        # ops without results (checks, effects) run for their effect
        emitted = _kernels(ops, want)
        until = None  # top level: id(value) -> position of the last kernel reading it
        if top:
            until = {}
            for k, op in enumerate(emitted):
                for r in op.results:
                    until[id(r)] = k
                for v_id in last_read.get(id(op), ()):
                    until[v_id] = max(until.get(v_id, k), k)
            first_write: dict = {}
            for k, op in enumerate(emitted):
                for r in op.results:
                    dst = targets.get(id(r))
                    if isinstance(dst, BufRef) and dst.slot not in first_write:
                        first_write[dst.slot] = k
            self._result_pools([None if k in self.aliases else d for k, d in enumerate(results_into)],
                               list(ret.operands), first_write)
        for k, op in enumerate(emitted):
            shared = None
            if op.results and id(op.results[0]) not in targets:
                shared = _in_place_operand(op, want, block, last_read)
                if shared is not None and id(shared) not in self._offsets:
                    shared = None  # only a temporary of this block can be taken over
                if shared is not None and until is not None:
                    pool = self.pools[self._offsets[id(shared)][0]]
                    if pool.free_until <= until.get(id(op.results[0]), k):
                        shared = None  # the result would outlive the room in a result buffer
            for r in op.results:
                if self.has_buffer(r):
                    continue
                if shared is not None:  # the result overwrites its operand's temporary
                    self.em.buffers[id(r)] = dict.__getitem__(self.em.buffers, id(shared))
                    slot, off = self._offsets.pop(id(shared))
                    self._offsets[id(r)] = (slot, off)
                    pool = self.pools[slot]
                    pool.live[off] = (pool.live[off][0], r)
                    continue
                self.em.buffers[id(r)] = targets.get(id(r)) or self.temp_ref(
                    _ty(r), r, until=None if until is None else until.get(id(r), k))
            fused, inputs = _fusion_of(op, want, block)
            self.kernels.append(KernelInfo(len(self.kernels), op, fused, inputs, depth=level))
            timer = self.timer if level == 0 else None
            if timer is not None:
                timer.start()
            kd = KERNELS.get(op.name)
            if level == 0:
                check_compile_time(f"kernel {len(self.kernels) - 1} ({op.name})")
            if level == 0 and self.split_kernels:
                with self.kernel_function(f"k{len(self.kernels) - 1}.{op.name.split('.')[-1]}"):
                    (kd.fn if kd is not None else emit_elementwise)(self, op)
            else:
                (kd.fn if kd is not None else emit_elementwise)(self, op)
            if timer is not None:
                timer.stop()
            if level == 0 and self.host_callbacks:  # a callback raised: stop now (status.py)
                status.return_if_failed(self)
            # buffer assignment: a temporary whose last reader has run can be reused
            for v_id in last_read.get(id(op), ()):
                v = by_id.get(v_id)
                if v is not None and id(v) not in targets and v not in ret.operands:
                    self.release(v)
        for v, dst in copies:
            self.copy(v, dst)
        return list(ret.operands)


def _is_constant(v) -> bool:
    owner = getattr(v, "owner", None)
    return isinstance(owner, Operation) and owner.name == "stablehlo.constant" \
        and isinstance(getattr(v, "type", None), TensorType)


def _constant_global(em: Emitter, v):
    """The global holding constant v's elements in memory (numpy's layout: i1 as bytes,
    bf16 as i16), made once per constant and shared with the elemental emitter's reads
    (Emitter.op_at); None when v is not a constant."""
    if not _is_constant(v):
        return None
    op = v.owner
    g = em._const_globals.get(id(op))
    if g is None:
        arr = op.attributes["value"].array
        et = _ty(v).element_type
        data = np.ascontiguousarray(arr.astype(np.uint8) if et.is_bool else arr).tobytes()
        g = em._const_globals[id(op)] = em.global_bytes(data)
    return g


def _fusion_of(op: Operation, want: set, block: Block) -> tuple[list, list]:
    """The ops of `block` computed inside op's kernel and the materialized values it reads."""
    fused: list = []
    inputs: list = []
    seen: set = set()
    inner: set = set()  # blocks nested in the kernel's ops: their values are not inputs

    def expand(o: Operation) -> list:
        return _reads(o)  # values defined outside o only (so none from `inner` blocks)

    stack = expand(op)
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        owner = getattr(v, "owner", None)
        home = owner if isinstance(owner, Block) else getattr(owner, "parent", None)
        if id(home) in inner:
            continue
        if id(v) in want or not isinstance(owner, Operation) or owner.parent is not block:
            if isinstance(getattr(v, "type", None), TensorType):
                inputs.append(v)
            continue
        if owner not in fused:
            fused.append(owner)
            stack.extend(expand(owner))
    order = {id(o): k for k, o in enumerate(block.operations)}
    fused.sort(key=lambda o: order.get(id(o), 0))
    return fused, inputs


ELEMENTWISE_EXTRA = ("stablehlo.convert",)


def is_elementwise(o: Operation) -> bool:
    """An op whose element i reads only element i of each same-shaped operand."""
    from axle.backends.cpu.scalar_ops import RULES
    return not o.regions and (o.name in RULES or o.name in ELEMENTWISE_EXTRA)


def _kernels(ops: list, want: set) -> list:
    """The ops of `ops` emitted as kernels: those with a materialized result, and the ones
    without results that run for their effect."""
    return [op for op in ops if any(id(r) in want for r in op.results) or (not op.results and op.name in KERNELS)]


POOL_SCRATCH_BYTES = 64 * 1024  # most stack per thread for the convolution rows of one pooled row


def _pooled_convolution(op: Operation, want: set, uses: dict, block: Block) -> Optional[Operation]:
    """The convolution whose rows reduce_window `op` can compute itself, or None. op pools
    NHWC rows without padding or dilation, windows one row-stride tall (each convolution
    row is read by one output row); its input is the convolution's result through
    elementwise ops of the same shape, each read once (nothing else reaches the
    convolution); the convolution runs as the direct kernel."""
    from axle.backends.cpu.kernels_conv import _direct_plan
    t = _ty(op.operands[0])
    if t.rank != 4 or not t.is_static:
        return None
    wd = list(op.attr("window_dimensions"))
    st = list(op.attr("window_strides") or [1] * 4)
    if wd[0] != 1 or wd[3] != 1 or st[0] != 1 or st[3] != 1 or st[1] != wd[1]:
        return None
    for name in ("base_dilations", "window_dilations"):
        if any(x != 1 for x in (op.attr(name) or [])):
            return None
    pad = op.attr("padding")
    if pad is not None and any(int(x) != 0 for p in pad for x in p):
        return None
    def same_shape(v) -> bool:
        return hasattr(v, "type") and list(_ty(v).shape) == list(t.shape)
    found = []
    stack = [op.operands[0]]
    while stack:
        v = stack.pop()
        o = getattr(v, "owner", None)
        if not isinstance(o, Operation) or o.parent is not block or uses.get(id(v), 0) != 1 or not same_shape(v):
            continue
        if o.name == "stablehlo.convolution":
            found.append(o)
        elif id(v) not in want and is_elementwise(o):
            stack.extend(x for x in o.operands if same_shape(x))
    if len(found) != 1 or _direct_plan(found[0]) is None:
        return None
    conv = found[0]
    if wd[1] * _ty(conv.results[0]).shape[2] * t.shape[3] * 4 > POOL_SCRATCH_BYTES:
        return None
    return conv


def _computed_here(v: Value, block: Block) -> bool:
    """v is the result of an elementwise-fusible op of `block` (no kernel of its own)."""
    o = getattr(v, "owner", None)
    return isinstance(o, Operation) and o.parent is block and KERNELS.get(o.name) is None \
        and o.name != "stablehlo.constant"


def _op_deps(op: Operation, want: set, block: Block, memo: dict) -> set:
    """The materialized values of `block` that kernel op reads (through fused ops)."""
    out: set = set()
    for x in _reads(op):
        out |= _deps(x, want, block, memo)
    return out


def _in_place_operand(op: Operation, want: set, block: Block, last_read: dict) -> Optional[Value]:
    """A materialized operand whose buffer can hold the result of elementwise kernel `op`:
    op is its last reader, reads it only at the linear index it writes (through elementwise
    ops and reshapes, which keep an element's row-major position: no broadcast, transpose,
    slice...), and it has the result's element count and size. None if there is none."""
    kd = KERNELS.get(op.name)
    if kd is not None:
        return _in_place_kernel_operand(op, kd, want, block, last_read)

    def linear(o: Operation) -> bool:  # element i of o's result reads element i of its operands
        return is_elementwise(o) or o.name == "stablehlo.reshape"
    if len(op.results) != 1 or not linear(op):
        return None
    rt = _ty(op.results[0])
    count = int(np.prod(rt.shape, dtype=np.int64)) if rt.is_static else -1
    size = np.dtype(rt.dtype).itemsize
    same: dict[int, Value] = {}
    other: set = set()
    memo: dict = {}

    def visit(o: Operation) -> None:
        for x in o.operands:
            owner = getattr(x, "owner", None)
            xt = getattr(x, "type", None)
            identical = isinstance(xt, TensorType) and xt.is_static \
                and int(np.prod(xt.shape, dtype=np.int64)) == count
            if id(x) in want:
                if identical and np.dtype(xt.dtype).itemsize == size:
                    same[id(x)] = x
                else:
                    other.add(id(x))
            elif isinstance(owner, Operation) and owner.parent is block and owner.name != "stablehlo.constant":
                if identical and linear(owner):
                    visit(owner)
                else:  # read through an index mapping: whatever it reads is read elsewhere
                    other.update(_deps(x, want, block, memo))
    visit(op)
    dying = set(last_read.get(id(op), ()))
    for vid, v in same.items():
        owner = getattr(v, "owner", None)
        if vid not in other and vid in dying and isinstance(owner, Operation) and owner.parent is block:
            return v
    return None


def _in_place_kernel_operand(op: Operation, kd: "KernelDef", want: set, block: Block,
                             last_read: dict) -> Optional[Value]:
    """Operand kd.in_place of kernel op, when its buffer can become the result's: it is a
    materialized value of this block of the result's size, op is its last reader, and no
    other operand (or region) of op reads it, directly or through fused ops."""
    if kd.in_place is None or len(op.results) != 1:
        return None
    v = op.operands[kd.in_place]
    owner = getattr(v, "owner", None)
    if id(v) not in want or not isinstance(owner, Operation) or owner.parent is not block:
        return None
    if id(v) not in set(last_read.get(id(op), ())):
        return None
    vt, rt = getattr(v, "type", None), _ty(op.results[0])
    if not isinstance(vt, TensorType) or nbytes(vt) != nbytes(rt):
        return None
    memo: dict = {}
    for k, x in enumerate(_reads(op)):
        if k == kd.in_place and x is v:
            continue
        if x is v or id(v) in _deps(x, want, block, memo):
            return None
    return v


def _deps(v: Value, want: set, block: Block, memo: dict) -> set:
    """The materialized values of `block` that computing v reads (through fused ops)."""
    if id(v) in memo:
        return memo[id(v)]
    owner = getattr(v, "owner", None)
    if id(v) in want or not isinstance(owner, Operation) or owner.parent is not block:
        out = {id(v)} if id(v) in want else set()
    else:
        out = set()
        for x in _reads(owner):
            out |= _deps(x, want, block, memo)
    memo[id(v)] = out
    return out


def _reads(op: Operation) -> list:
    """Operands of op and the outside values its regions use."""
    return list(op.operands) + _free_values(op) if op.regions else list(op.operands)


# during one _compile_function: .memo: id(op) -> its free values; .checked: ids of checked blocks
_FREE = threading.local()


def _free_values(op: Operation) -> list:
    """The values op's regions use that are defined outside op, each once, in order of
    first use. Memoized per compilation, so that nested while loops cost time linear in
    their depth (walking every subtree again at each level was quadratic)."""
    memo = getattr(_FREE, "memo", None)
    if memo is not None and id(op) in memo:
        return memo[id(op)]
    defined: set = set()
    for r in op.regions:
        for blk in r.blocks:
            defined.update(id(a) for a in blk.arguments)
            for inner in blk.operations:
                defined.update(id(x) for x in inner.results)
    out: list = []
    seen: set = set()
    for r in op.regions:
        for blk in r.blocks:
            for inner in blk.operations:
                for v in (_reads(inner) if inner.regions else inner.operands):
                    if id(v) not in defined and id(v) not in seen:
                        seen.add(id(v))
                        out.append(v)
    if memo is not None:
        memo[id(op)] = out
    return out


def _last_readers(block: Block, want: set, ops: Optional[list] = None) -> dict:
    """id(emitting op) -> ids of materialized values whose last reader that op is, with the
    kernels run in the order of `ops` (default: the block's)."""
    memo: dict = {}
    last: dict[int, int] = {}
    for op in _kernels(block.operations[:-1] if ops is None else ops, want):
        for d in _op_deps(op, want, block, memo):
            last[d] = id(op)
    out: dict[int, list] = {}
    for v, op_id in last.items():
        out.setdefault(op_id, []).append(v)
    return out


SCHEDULE = True  # order the top-level kernels for low peak memory (_schedule)
# ops whose relative order is observable (tokens are stripped before code generation)
EFFECTS = ("stablehlo.custom_call", "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send",
           "stablehlo.recv", "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.all_to_all",
           "stablehlo.reduce_scatter", "stablehlo.collective_permute", "stablehlo.collective_broadcast",
           "stablehlo.rng", "stablehlo.optimization_barrier")


def _effectful(op: Operation) -> bool:
    return not op.results or any(o.name in EFFECTS or (o is not op and o.name == "func.call") for o in op.walk())


def _schedule(ops: list, want: set, block: Block, targets: dict, ret: Operation) -> list:
    """The block's ops with the top-level kernels reordered for low peak memory: a list
    schedule that, among the kernels whose inputs are ready, runs the one that frees the
    most temporary bytes net of what it allocates (ties: program order, which keeps
    producers next to consumers). Ops with effects keep their relative order. Ops computed
    inside kernels (fused) keep their places; only kernels move."""
    kernels = _kernels(ops, want)
    if len(kernels) < 3:
        return ops
    memo: dict = {}
    index = {id(k): i for i, k in enumerate(kernels)}
    producer = {id(r): k for k in kernels for r in k.results if id(r) in want}
    returned = {id(v) for v in ret.operands}
    reads = {id(k): _op_deps(k, want, block, memo) for k in kernels}
    size = {}
    for k in kernels:
        for r in k.results:
            if id(r) in want and id(r) not in targets and id(r) not in returned and _ty(r).is_static:
                size[id(r)] = nbytes(_ty(r))
    preds = {id(k): {id(producer[v]) for v in reads[id(k)] if v in producer and producer[v] is not k}
             for k in kernels}
    last_effect = None
    for k in kernels:
        if _effectful(k):
            if last_effect is not None:
                preds[id(k)].add(id(last_effect))
            last_effect = k
    readers: dict = {}
    for k in kernels:
        for v in reads[id(k)]:
            readers.setdefault(v, set()).add(id(k))
    done: set = set()
    order = []
    waiting = {id(k): len(preds[id(k)]) for k in kernels}
    succs: dict = {}
    for k in kernels:
        for p in preds[id(k)]:
            succs.setdefault(p, []).append(k)
    ready = [k for k in kernels if waiting[id(k)] == 0]
    while ready:
        def score(k):
            freed = sum(size.get(v, 0) for v in reads[id(k)] if readers[v] - done == {id(k)})
            made = sum(size.get(id(r), 0) for r in k.results)
            return (freed - made, -index[id(k)])
        best = max(ready, key=score)
        ready.remove(best)
        done.add(id(best))
        order.append(best)
        for s_ in succs.get(id(best), ()):
            waiting[id(s_)] -= 1
            if waiting[id(s_)] == 0:
                ready.append(s_)
    if len(order) != len(kernels):  # a cycle cannot happen in SSA; keep program order if it did
        return ops

    def peak(seq):  # the most temporary bytes live at once, run in order seq
        left = {v: len(rs) for v, rs in readers.items()}
        live = high = 0
        for k in seq:
            live += sum(size.get(id(r), 0) for r in k.results)
            high = max(high, live)
            for v in reads[id(k)]:
                left[v] -= 1
                if left[v] == 0:
                    live -= size.get(v, 0)
        return high
    if peak(order) >= peak(kernels):  # greedy is not always better: keep the program's order then
        return ops
    rest = [op for op in ops if id(op) not in index]
    return order + rest


def _reads_buffer_of(ctx: Context, values: list, r: Value) -> bool:
    """Whether a value with a buffer among `values` or read through fused values from them
    shares r's buffer."""
    seen, stack = set(), list(values)
    while stack:
        v = stack.pop()
        if id(v) in seen or not hasattr(v, "type"):
            continue
        seen.add(id(v))
        if ctx.has_buffer(v):
            if ctx.same_buffer(v, r):
                return True
            continue
        o = getattr(v, "owner", None)
        if isinstance(o, Operation):
            stack.extend(o.operands)
    return False


def emit_elementwise(ctx: Context, op: Operation) -> None:
    r = op.results[0]
    t = _ty(r)
    et = t.element_type
    em = ctx.em
    from axle.backends.cpu.parallel import outer_dim, split_loop

    def body(idx):
        dst = ctx.buffer(r)  # resolved in whichever function the loop lands in
        S.store(em.b, em.op_at(op, idx), em.element_ptr(dst, et, em.linear(idx, t.shape)), et)
    work = 1 + sum(1 for o in ctx.kernels[-1].fused if o.name not in MOVES) if ctx.kernels else 1
    rows = ctx.row_fusions.get(id(op))
    if rows is None:
        split_loop(ctx, list(t.shape), outer_dim(t.shape), body, work)
        return
    # row fusion: per row of the outer `k` dimensions, the fused reductions, then the row
    from axle.backends.cpu.row_fusion import emit_row_reduction
    k, reds, maps, kept = rows
    shape = list(t.shape)
    if kept is not None and _reads_buffer_of(ctx, list(op.operands), r):
        kept = None  # the result shares a buffer with a value this kernel reads (in place)

    def row(outer):
        for red in reds:
            emit_row_reduction(ctx, red, outer, maps[id(red.results[0])], r if red is kept else None)
        if kept is not None:  # the row of the reduction's input, kept in the result row
            em.buffers[id(kept.operands[0])] = dict.__getitem__(em.buffers, id(r))
        em.loop_nest(shape[k:], lambda inner: body(outer + inner))
        if kept is not None:
            del em.buffers[id(kept.operands[0])]
        for red in reds:
            del em.scalars[id(red.results[0])]
    inner = int(np.prod(shape[k:], dtype=np.int64))
    split_loop(ctx, shape[:k], outer_dim(shape[:k]), row, work * inner * (1 + len(reds)))


KERNEL_MODULES = ('kernels', 'kernels_collective', 'kernels_control', 'kernels_indexing', 'kernels_window', 'kernels_conv', 'kernels_linalg', 'kernels_fft', 'kernels_dynamic', 'kernels_rng', 'kernels_extra', 'kernels_scan', 'kernels_ragged', 'kernels_cholesky', 'scalar_special', 'kernels_lapack')


def load_kernels() -> None:
    """Import the modules that register kernels and scalar rules (KERNELS, RULES)."""
    import importlib
    for m in KERNEL_MODULES:
        importlib.import_module("axle.backends.cpu." + m)


def compile_function(module: Module, entry: str = "main", profile: bool = False,
                     aliases: Optional[dict] = None) -> Program:
    """Generate the program of `entry`. With `profile`, the code also reads a clock before and
    after each top-level kernel and keeps the times in the arena (profiling.py); without it,
    the code is exactly what it would be otherwise. `aliases` {result k: argument j} asks
    for result k to be written into argument j's memory (donation); the pairs that are safe
    end up in Program.aliases (aliasing.py)."""
    from axle.profiler import phase
    with phase("codegen", entry=entry, profile=profile):
        return _compile_function(module, entry, profile, {int(k): int(j) for k, j in (aliases or {}).items()})


def _compile_function(module: Module, entry: str, profile: bool, aliases: dict) -> Program:
    _FREE.memo, _FREE.checked = {}, set()
    try:
        return _compile_function_body(module, entry, profile, aliases)
    finally:
        _FREE.memo = _FREE.checked = None


def _compile_function_body(module: Module, entry: str, profile: bool, aliases: dict) -> Program:
    load_kernels()
    from axle.passes.lower_quant import prepare_for_cpu
    module = prepare_for_cpu(module)  # quantized types -> integer/float ops (in a copy)
    from axle.backends.cpu.prepare import prepare
    module = prepare(module)  # tuples, barriers, shape ops with constant shapes (in a copy)
    fn = module.function(entry)
    block = fn.body
    for a in block.arguments:
        _ty(a)
    mod = ir.Module(name="axle")
    fnty = ir.FunctionType(ir.VoidType(), [I8.as_pointer().as_pointer()])
    func = ir.Function(mod, fnty, "axle_entry")
    n_args = len(block.arguments)
    n_res = len(fn.function_type.results)
    ctx = Context(mod, func, n_args + n_res)
    ctx.aliases = aliases
    if profile:
        from axle.backends.cpu.profiling import KernelTimer
        ctx.timer = KernelTimer(ctx)
    for i, a in enumerate(block.arguments):
        ctx.em.buffers[id(a)] = BufRef(i)
    ctx.emit_block(block, [BufRef(n_args + k) for k in range(n_res)])
    ctx.b.ret_void()
    _emit_trampoline(mod, func, n_args + n_res)
    profile_offset = ctx.timer.finish() if ctx.timer is not None else None
    status_offset = status.finish(ctx)
    return Program(str(mod), list(fn.function_type.inputs), list(fn.function_type.results), ctx.offset,
                   ctx.kernels, ctx.allocations, ctx.cacheable, ctx.host_callbacks, profile_offset,
                   ctx.aliases, ctx.alias_rejections,
                   sorted(set(ctx.host_ops)), status_offset)


PYARRAY_DATA_OFFSET = 16  # offsetof(PyArrayObject, data): after the object header (refcount, type)


def _emit_trampoline(mod: ir.Module, entry: ir.Function, n: int) -> None:
    """`void axle_call(PyArrayObject* a0, ..., PyArrayObject* a{n-1}, i8* arena)`: reads each
    array's data pointer (numpy's stable object layout), fills the table and calls the entry.
    The executable calls it only with exact np.ndarray objects it has checked (C-contiguous,
    right dtype and shape), so a call from Python costs one foreign call and no pointer
    extraction in Python."""
    p8 = I8.as_pointer()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [p8] * (n + 1)), "axle_call")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    table = b.alloca(ir.ArrayType(p8, n + 1))
    for i in range(n):
        field_ptr = b.bitcast(b.gep(fn.args[i], [ir.Constant(I64, PYARRAY_DATA_OFFSET)], inbounds=True),
                              p8.as_pointer())
        b.store(b.load(field_ptr), b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, i)], inbounds=True))
    b.store(fn.args[n], b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, n)], inbounds=True))
    b.call(entry, [b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, 0)], inbounds=True)])
    b.ret_void()
