"""Code generation state of one CPU program (Context): the LLVM builder and the elemental
emitter, the functions kernels are emitted into, the buffers of values (BufRefs resolved
per function) and the temporaries' allocator. What to emit comes from the plans
(plan.py); block.py emits a planned block.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from axle.codegen import scalar as S
from axle.backends.cpu.abi import P8P, BufRef, Buffers
from axle.backends.cpu.block import emit_planned_block
from axle.backends.cpu.target import CPU
from axle.codegen.emitter import Emitter, _ty, is_constant
from axle.codegen.scalar import I8, I64
from axle.codegen.plans.arena import ALIGN, Pool, aligned, nbytes
from axle.codegen.plans.buffers import BufferAssignment
from axle.ir.core import Block, Value
from axle.ir.types import TensorType

# the BufRef offset of the arena's base pointer (the status word, kernel timers): in a
# kernel's buffer array an entry of its own, apart from the temporary at offset 0, whose
# entry a while loop may swap (kernels_control._swappable)
ARENA_BASE = -1


class Context:
    """Code generation state of one program: builder, emitter, arena and kernel list.

    Every top-level kernel is emitted into its own function `void kN(i8** buffers)` (not
    inlined: LLVM's work grows faster than linearly with function size, and a kernel is
    the unit the parallel runtime runs), called in order from the entry. Buffers are
    named by BufRef and resolved to pointers in the prologue of the function using them.

    A kernel function does not read the program's table of buffers: it gets an array of
    the addresses of the buffers it uses (slot and arena offset resolved by the caller, in
    the order the kernel first used them), and so do the functions it calls with its
    table (its `.par` chunk functions, outlined loop bodies). So two kernels that compute
    the same thing on different buffers are the same code, and a program keeps one
    function for them (`_dedupe`, flag cpu_dedupe_kernels): the layers of a deep model
    are compiled once, not once per layer.
    """

    def __init__(self, mod: ir.Module, func: ir.Function, arena_slot: int, split_kernels: bool = True):
        self.mod = mod
        self.arena_slot = arena_slot
        self.split_kernels = split_kernels
        self.in_kernel_function = False  # emitting the top level of a kernel's own function
        self._enter(func)
        self.em = Emitter(mod, self.b, {}, CPU)
        self.em.buffers = Buffers(self.resolve)
        # temporaries: the arena, and result buffers not yet written (see _result_pools)
        self.pools: dict[int, Pool] = {arena_slot: Pool(arena_slot)}
        self.allocations: list = []  # (offset, size, value, kernel index[, slot]) for the report
        self._offsets: dict = {}  # value (or a kernel's scratch token) -> (slot, offset) of its temporary
        self.kernels: list = []
        self.cacheable = True  # set False by kernels that bake process addresses into the code
        self.host_callbacks = False
        self.host_ops: list = []  # names of the ops computed by host callbacks (conformance counts them)
        self._level = 0  # nesting of the block being emitted (while/if/case bodies > 0)
        self.timer = None  # profile=True: a profiling.KernelTimer stamping each top-level kernel
        self.row_fusions: dict = {}  # host op -> RowFusion (row_fusion.py), from the fusion plans
        self.conv_rows: dict = {}  # reduce_window -> the convolution whose rows it computes (idem)
        self.plans = None  # ProgramPlans (codegen/plans/report.py): the fusion plans, schedules, buffers
        self.buffer_plan = BufferAssignment(arena_slot=arena_slot)  # every buffer as assigned (arena offsets)
        self.block_plan = None  # the plan of the block being emitted (block.py)
        self.aliases: dict = {}  # requested result k -> argument j (donation; aliasing.py)
        self.alias_rejections: list = []
        self._kargs: Optional[dict] = None  # in a kernel function: (slot, offset) -> index in its buffer array
        self._kernel_code: dict = {}  # kernel code with its own functions' names replaced -> its function
        self.function_texts: dict = {}  # function name -> its printed IR (kept kernels; module_text)

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
        if v is None and self._kargs is not None:  # a kernel's function: its buffer array
            i = self._kargs.setdefault(key, len(self._kargs))
            pb = self._prologue
            v = pb.load(pb.gep(self.table, [ir.Constant(I64, i)], inbounds=True))
            self._resolved[key] = v
        if v is None:
            pb = self._prologue
            base = self._resolved.get((ref.slot, 0))
            if base is None:
                base = pb.load(pb.gep(self.table, [ir.Constant(I64, ref.slot)], inbounds=True))
                self._resolved[(ref.slot, 0)] = base
            if ref.offset in (0, ARENA_BASE):
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
        return self.resolve(BufRef(self.arena_slot, ARENA_BASE))

    def kernel_function(self, name: str):
        """Context manager: emit into a new function `name(buffers)`, then call it here with
        the array of the buffers it used (or an earlier kernel's function that is the
        same code: _dedupe)."""
        first = len(self.mod.globals)
        fn = ir.Function(self.mod, ir.FunctionType(ir.VoidType(), [P8P]), name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.attributes.add("nounwind")
        return self.function_scope(fn, call=True, kernel=True, first_global=first)

    def function_scope(self, fn: ir.Function, call: bool, kernel: bool = False, first_global: int = -1):
        """Context manager: emit into `fn(table)` (fresh), then return here (and call it).
        With first_global (a kernel's own function): `table` is the kernel's buffer array."""
        ctx = self
        own_buffers = first_global >= 0

        class _Scope:
            def __enter__(self_):
                self_.saved = (ctx.b, ctx.table, ctx._resolved, ctx._prologue, ctx.in_kernel_function, ctx._kargs)
                ctx._enter(fn)
                ctx.in_kernel_function = kernel
                if own_buffers:
                    ctx._kargs = {}
                return fn

            def __exit__(self_, *exc):
                ctx.b.ret_void()
                kargs = ctx._kargs
                ctx.b, ctx.table, ctx._resolved, ctx._prologue, ctx.in_kernel_function, ctx._kargs = self_.saved
                ctx.em.b = ctx.b
                if exc[0] is None and call:
                    if own_buffers:
                        target = ctx._dedupe(fn, first_global)
                        if target is not fn:  # kN.op calls kM.op: kernel N shares kernel M's code
                            ctx.kernels[_kernel_index(fn)].shares = _kernel_index(target)
                        ctx._call_kernel(target, kargs)
                    else:
                        ctx.b.call(fn, [ctx.table])
                return False
        return _Scope()

    def _call_kernel(self, fn: ir.Function, kargs: dict) -> None:
        """Call kernel function fn with the addresses of its buffers (kargs: (slot, offset) ->
        position), resolved here."""
        arr = self.em.alloca(ir.ArrayType(I8.as_pointer(), max(len(kargs), 1)))
        b = self.b
        for (slot, off), i in kargs.items():
            b.store(self.resolve(BufRef(slot, off)), b.gep(arr, [ir.Constant(I64, 0), ir.Constant(I64, i)], inbounds=True))
        b.call(fn, [b.bitcast(arr, P8P)])

    def _dedupe(self, fn: ir.Function, first_global: int) -> ir.Function:
        """The function to call for the kernel just emitted into fn: an earlier kernel's when
        fn and the functions made while emitting it (its `.par` chunks, outlined bodies) are
        the same code as that kernel's up to their names; fn is then dropped from the module.
        A kernel that made any other global (a constant, a shared helper) stays itself."""
        from axle.flags import flag
        made = list(self.mod.globals.values())[first_global:]
        texts = {}
        for g in made:
            if not isinstance(g, ir.Function) or not g.blocks:
                continue
            if g is not fn and not (g.name.startswith(fn.name + ".") or g.name.startswith("while.body")):
                return self._keep(fn, None)
            texts[g.name] = str(g)
        if not flag("cpu_dedupe_kernels") or any(
                not isinstance(g, ir.Function) for g in made):
            return self._keep(fn, texts)
        code = "\n".join(texts.values())
        for k, name in enumerate(texts):  # (fn first: it was made first)
            code = code.replace(f'@"{name}"', f'@"#{k}"')
        code = _renumber_metadata(code)
        earlier = self._kernel_code.get(code)
        if earlier is not None and len(earlier[1]) == len(texts):
            for name in texts:
                del self.mod.globals[name]
            return earlier[0]
        self._kernel_code[code] = (fn, list(texts))
        return self._keep(fn, texts)

    def _keep(self, fn: ir.Function, texts: Optional[dict]) -> ir.Function:
        if texts:
            self.function_texts.update(texts)
        return fn

    def mark_library(self, name: str) -> None:
        """Record that the kernel being emitted calls library routine `name`."""
        self.kernels[-1].library = name

    def buffer(self, v: Value):
        """The pointer to v's buffer in the function being emitted. A constant never gets a
        buffer of its own (fused readers compute it in place): a kernel reading memory
        (BLAS, convolution, sort, a host call, ...) reads its data from a global instead."""
        if v not in self.em.buffers:
            g = _constant_global(self.em, v)
            if g is not None:
                return self.b.bitcast(g, I8.as_pointer())
        return self.em.buffers[v]

    def same_buffer(self, a: Value, b: Value) -> bool:
        """Whether a and b were given the same buffer (an in-place update)."""
        bufs = self.em.buffers
        if a not in bufs or b not in bufs:
            return False
        x, y = bufs.raw(a), bufs.raw(b)
        return x is y or (isinstance(x, BufRef) and x == y)

    def has_buffer(self, v: Value) -> bool:
        """Whether buffer(v) is a pointer: a planned buffer, or a constant's global."""
        return v in self.em.buffers or _is_constant(v)

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
        size = aligned(nbytes(t))
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
            self._offsets[value] = (slot, off)
        real = isinstance(value, Value)
        self.buffer_plan.add(value=value if real else None, place="temporary" if real else "scratch", size=size,
                             slot=slot, offset=off, depth=max(self._level - 1, 0), kernel=len(self.kernels) - 1)
        return BufRef(slot, off)

    def temp(self, t: TensorType, value: Optional[Value] = None):
        """A temporary (temp_ref) as a pointer in the function being emitted."""
        return self.resolve(self.temp_ref(t, value))

    def release(self, value: Value) -> None:
        key = self._offsets.pop(value, None)
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
                    self.pools[dst.slot] = Pool(dst.slot, size, first_write.get(dst.slot, 1 << 62))

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
            return emit_planned_block(self, block, results_into, self._level - 1)
        finally:
            self._level -= 1
            self.in_kernel_function = saved


def _kernel_index(fn: ir.Function) -> int:
    """N of a kernel function named `kN.<op>` (block.py names them)."""
    return int(fn.name[1:].split(".", 1)[0])


def module_text(mod: ir.Module, texts: dict) -> str:
    """str(mod), with the functions named in texts printed as given (as printed when their
    kernel was kept: printing a kernel twice cost as much as the deduplication saved)."""
    lines = ['; ModuleID = "%s"' % (mod.name,), 'target triple = "%s"' % (mod.triple,),
             'target datalayout = "%s"' % (mod.data_layout,), '']
    lines += [it.get_declaration() for it in mod.get_identified_types().values()]
    lines += [texts.get(name) or str(v) for name, v in mod.globals.items()]
    lines += mod._get_metadata_lines()
    return "\n".join(lines)


def _is_constant(v) -> bool:
    return is_constant(v)


def _constant_global(em: Emitter, v):
    """The global holding constant v's elements (Emitter.constant_global), or None."""
    return em.constant_global(v)


def _renumber_metadata(code: str) -> str:
    """Metadata references (!12: each kernel's own alias scopes) numbered in the order they
    first appear, so that kernels that are the same code compare equal."""
    import re
    seen: dict = {}
    return re.sub(r"!(\d+)\b", lambda m: "!m%d" % seen.setdefault(m.group(1), len(seen)), code)
