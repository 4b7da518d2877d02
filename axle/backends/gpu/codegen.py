"""Kernels for NVIDIA GPUs: axle/codegen's elemental emitter mapped onto a thread grid.

A program becomes a list of kernels, each one LLVM function with the `ptx_kernel` calling
convention whose parameters are the global-memory pointers of every buffer of the program
(arguments, results, temporaries, in that order), then one scratch buffer
(GpuProgram.scratch_bytes, for the one-thread fallbacks' temporaries). Which values get a buffer follows the CPU
backend's rule: results of ops that are not elementwise, returned values, and values read
by several ops (constants never: they are computed in place, or read from a global in the
global address space). Everything else is fused into its readers by the elemental emitter.

Kernel shapes:
* elementwise (fused) root: a grid-stride loop, one element per thread per trip;
* reduce: one thread per output element, looping over the reduced elements in index order
  (the interpreter's order, so the bits match the CPU's sequential reductions);
* dot_general: one thread per output element, the contracting dimensions in index order;
* reduce_window: the lent kernel with its loop over the output made the grid (grid_cpu);
* other ops with a lent kernel: that kernel run by one thread (serial.py, a fallback).
Ops with neither raise Unsupported naming the op and the gpu backend. Lent kernels are the
CPU backend's, reached through axle.codegen.kernel_library by name (this backend imports
nothing of axle.backends.cpu); without that library only the ops above with kernels of
their own compile.

The scalar rules (axle/codegen) are used as they are; what differs on NVPTX (math calls
through libdevice, constants in the global address space, FMA) is the GpuTarget's
(target.py). Calls left that NVPTX cannot lower are caught before code generation
(nvptx.check_calls), never by LLVM's fatal errors.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from axle.backends.gpu.target import GPU
from axle.codegen import elemental  # noqa: F401  (registers the element mappers: gather, ... fuse)
from axle.codegen import scalar as S
from axle.codegen.dot import DotDims, accumulator_type, check_dot
from axle.codegen.emitter import FUSIBLE, Emitter, _ty
from axle.codegen.kernel_library import library
from axle.codegen.scalar import I8, I32, I64
from axle.codegen.scalar_ops import RULES, convert
from axle.errors import Unsupported
from axle.ir.core import Block, Operation
from axle.ir.types import TensorType

P8G = ir.PointerType(I8, addrspace=GPU.buffer_addrspace)
P8 = I8.as_pointer()

# ops a reduce body may hold besides the scalar rules
_BODY_OPS = ("stablehlo.return", "stablehlo.convert", "stablehlo.constant", "stablehlo.real",
             "stablehlo.imag", "stablehlo.complex")


@dataclass
class KernelSpec:
    name: str  # the LLVM / PTX function name
    op: str  # the root op's name
    where: str  # the root op, for messages
    kind: str  # "elementwise" or "reduce"
    threads: int  # elements (elementwise) or output elements (reduce): the launch's extent
    work: int = 1  # elements each thread visits per output element (reduce)


@dataclass
class GpuProgram:
    llvm_ir: str
    kernels: list
    args: list  # TensorTypes of the entry's arguments
    results: list  # TensorTypes of its results
    temps: list  # TensorTypes of the temporaries (buffers after args and results)
    result_sources: list = field(default_factory=list)  # per result: its buffer index
    module: object = field(default=None, repr=False)  # the llvmlite ir.Module
    scratch_bytes: int = 0  # the last kernel parameter: scratch for one-thread kernels


class GpuEmitter(Emitter):
    """The elemental emitter for the GpuTarget, with one hook: the next loop nest over a
    given shape becomes the thread grid (grid_cpu)."""

    grid_hook = None  # (shape, fn(shape, body)): the next loop nest over `shape` becomes the grid

    def loop_nest_range(self, shape, dim, lo, hi, body, copy_nests=False, unroll_inner=0):
        hook = self.grid_hook
        if hook is not None and list(shape) == list(hook[0]):
            self.grid_hook = None
            hook[1](list(shape), body)
            return
        super().loop_nest_range(shape, dim, lo, hi, body, copy_nests, unroll_inner)


def _sreg(b: ir.IRBuilder, mod: ir.Module, name: str):
    fn = mod.globals.get(f"llvm.nvvm.read.ptx.sreg.{name}")
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(I32, []), f"llvm.nvvm.read.ptx.sreg.{name}")
    return b.zext(b.call(fn, []), I64)


def _uses(block: Block) -> dict:
    uses: dict = {}
    for op in block.operations:
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
    return uses


# ops with kernels of this backend's own (Builder.reduce, Builder.dot), lent kernels or not
OWN_KERNELS = ("stablehlo.reduce", "stablehlo.dot_general")


def plan(block: Block, kernels_table=None) -> tuple[list, set]:
    """The top-level ops that become kernels, and the values with a buffer. `kernels_table`:
    the lent kernels (op name -> definition), {} when there are none."""
    KERNELS = _lent_kernels() if kernels_table is None else kernels_table
    ops, ret = block.operations[:-1], block.operations[-1]
    uses = _uses(block)
    returned = set(ret.operands)
    forced = set()  # operands that kernels reading memory need in a buffer
    for op in ops:
        kd = KERNELS.get(op.name)
        if op.name == "stablehlo.dot_general" or (kd is not None and kd.memory_operands
                                                  and op.name != "stablehlo.reduce"):
            forced.update(op.operands)
    want: set = set()
    kernels = []
    for op in ops:
        kd = KERNELS.get(op.name)
        if op.name not in FUSIBLE and kd is None and op.name not in OWN_KERNELS:
            raise Unsupported(f"{op.where()}: not supported by the gpu backend yet")
        if not op.results:
            raise Unsupported(f"{op.where()}: not supported by the gpu backend yet (an op without results)")
        for r in op.results:
            if not isinstance(r.type, TensorType):
                raise Unsupported(f"{op.where()}: result of type {r.type} is not supported by the gpu backend")
        if op.name == "stablehlo.constant" and op.results[0] not in returned:
            continue
        fusible = op.name in FUSIBLE and len(op.results) == 1 and kd is None and op.name not in OWN_KERNELS
        if not fusible or any(r in returned or r in forced or uses.get(r, 0) > 1 for r in op.results):
            if kd is not None and kd.check is not None:
                kd.check(op)
            want.update(op.results)
            kernels.append(op)
    return kernels, want


class Builder:
    """Emits one LLVM module of ptx_kernel functions for a function's body."""

    def __init__(self, block: Block, n_args: int, n_res: int, kernels_table=None):
        self.mod = ir.Module(name="axle_gpu")
        GPU.setup_module(self.mod)
        self.block = block
        self.kernels_table = _lent_kernels() if kernels_table is None else kernels_table
        self.slots: dict = {}  # value -> buffer index
        self.types: list = []
        for a in block.arguments:
            self.slots[a] = len(self.types)
            self.types.append(_ty(a))
        self.n_args, self.n_res = n_args, n_res
        self.specs: list = []
        self.em = None
        self.scratch_bytes = 0

    def assign(self, ret: Operation, kernels: list) -> list:
        """Buffer indices: results written by their producing kernel, temporaries after."""
        res_slots = []
        for k, v in enumerate(ret.operands):
            self.types.append(_ty(v))
            res_slots.append(self.n_args + k)
        for k, v in enumerate(ret.operands):
            owner = getattr(v, "owner", None)
            if isinstance(owner, Operation) and v not in self.slots and owner in kernels:
                self.slots[v] = self.n_args + k
        self.temps = []
        for op in kernels:
            for r in op.results:
                if r not in self.slots:
                    self.slots[r] = len(self.types)
                    self.types.append(_ty(r))
                    self.temps.append(_ty(r))
        return res_slots

    def _function(self, name: str):
        fnty = ir.FunctionType(ir.VoidType(), [P8G] * (len(self.types) + 1))  # + scratch
        fn = ir.Function(self.mod, fnty, name)
        fn.calling_convention = "ptx_kernel"
        for a in fn.args:
            a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        em = GpuEmitter(self.mod, b, {}, GPU)
        if self.em is not None:  # constants' globals are made once per module
            em._globals, em._const_globals = self.em._globals, self.em._const_globals
        self.em = em
        for v, slot in self.slots.items():
            em.buffers[v] = b.addrspacecast(fn.args[slot], P8)
        return fn, b, em

    def _grid_loop(self, b: ir.IRBuilder, n: int, body) -> None:
        """for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)"""
        start = b.add(b.mul(_sreg(b, self.mod, "ctaid.x"), _sreg(b, self.mod, "ntid.x")),
                      _sreg(b, self.mod, "tid.x"))
        stride = b.mul(_sreg(b, self.mod, "nctaid.x"), _sreg(b, self.mod, "ntid.x"))
        pre = b.block
        head = b.append_basic_block("grid.head")
        loop = b.append_basic_block("grid.body")
        done = b.append_basic_block("grid.done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, "i")
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_unsigned("<", i, ir.Constant(I64, n)), loop, done)
        b.position_at_end(loop)
        body(i)
        i.add_incoming(b.add(i, stride), b.block)
        b.branch(head)
        b.position_at_end(done)

    def elementwise(self, op: Operation, k: int) -> None:
        name = f"k{k}_{op.name.split('.')[-1]}"
        fn, b, em = self._function(name)
        r = op.results[0]
        t = _ty(r)
        et = t.element_type
        dst = em.buffers[r]
        del em.buffers[r]  # computed here, not read back

        def body(i):
            idx = em.delinear(i, list(t.shape))
            S.store(em.b, em.op_at(op, idx), em.element_ptr(dst, et, i), et)
        self._grid_loop(b, _size(t), body)
        em.b.ret_void()
        self.specs.append(KernelSpec(name, op.name, op.where(), "elementwise", _size(t)))

    def reduce(self, op: Operation, k: int) -> None:
        for o in (o for rg in op.regions for o in rg.blocks[0].operations):
            if o.name not in RULES and o.name not in _BODY_OPS:
                raise Unsupported(f"{o.where()} inside the body of {op.where()}: not supported by the gpu backend")
        name = f"k{k}_reduce"
        fn, b, em = self._function(name)
        n = len(op.results)
        inputs, inits = op.operands[:n], op.operands[n:]
        dims = sorted(op.attr("dimensions"))
        in_t = _ty(inputs[0])
        out_t = _ty(op.results[0])
        kept = [d for d in range(in_t.rank) if d not in dims]
        dsts = [em.buffers.pop(r) for r in op.results]
        region = op.regions[0]

        def body(i):
            out_idx = em.delinear(i, list(out_t.shape)) if out_t.rank else []
            slots = []
            for init, arg in zip(inits, region.blocks[0].arguments):
                slot = em.alloca(S.reg_type(arg.type.element_type))
                em.b.store(em.value_at(init, []), slot)
                slots.append(slot)

            def inner(red_idx):
                full = [None] * in_t.rank
                for d, j in zip(kept, out_idx):
                    full[d] = j
                for d, j in zip(dims, red_idx):
                    full[d] = j
                elements = [em.value_at(v, full) for v in inputs]
                new = em.region_scalars(region, [em.b.load(s) for s in slots] + elements)
                for s, v in zip(slots, new):
                    em.b.store(v, s)
            em.loop_nest([in_t.shape[d] for d in dims], inner)
            for s, r, dst in zip(slots, op.results, dsts):
                et = _ty(r).element_type
                S.store(em.b, em.b.load(s), em.element_ptr(dst, et, i), et)
        self._grid_loop(b, _size(out_t), body)
        em.b.ret_void()
        work = _size(in_t) // max(_size(out_t), 1)
        self.specs.append(KernelSpec(name, op.name, op.where(), "reduce", _size(out_t), work))

    def dot(self, op: Operation, k: int) -> None:
        """dot_general: one thread per output element, summing over the contracting
        dimensions in index order in the accumulator type (as the CPU's generated dots)."""
        check_dot(op)
        name = f"k{k}_dot_general"
        fn, b, em = self._function(name)
        lhs, rhs = op.operands
        lt, rt_, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
        dims = DotDims(op)
        oet = ot.element_type
        acc_et = accumulator_type(oet)
        add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
        dst = em.buffers.pop(op.results[0])

        def body(i):
            oidx = em.delinear(i, list(ot.shape)) if ot.rank else []
            bidx, li, ri = dims.split_result_index(oidx)
            acc = em.alloca(S.reg_type(acc_et))
            em.b.store(S.constant(acc_et, 0), acc)

            def inner(cidx):
                lfull, rfull = dims.operand_indices(bidx, li, ri, cidx)
                x = convert(em, lt.element_type, acc_et, em.value_at(lhs, lfull))
                y = convert(em, rt_.element_type, acc_et, em.value_at(rhs, rfull))
                em.b.store(add(em, acc_et, [em.b.load(acc), mul(em, acc_et, [x, y], op)], op), acc)
            em.loop_nest([lt.shape[d] for d in dims.lc], inner)
            out = S.finish(em.b, convert(em, acc_et, oet, em.b.load(acc)), oet)
            S.store(em.b, out, em.element_ptr(dst, oet, i), oet)
        self._grid_loop(b, _size(ot), body)
        em.b.ret_void()
        work = 1
        for d in dims.lc:
            work *= lt.shape[d]
        self.specs.append(KernelSpec(name, op.name, op.where(), "dot", _size(ot), work))

    def grid_cpu(self, op: Operation, k: int) -> None:
        """A CPU kernel whose outer loop nest runs over the result's elements, each computed
        on its own (reduce_window): that nest becomes the grid-stride loop, one thread per
        output element; the rest of the CPU's code is used as it is."""
        from axle.backends.gpu.serial import SerialContext
        name = f"k{k}_{op.name.split('.')[-1]}"
        fn, b, em = self._function(name)
        shape = list(_ty(op.results[0]).shape)

        def grid(shape_, body):
            self._grid_loop(em.b, _size(_ty(op.results[0])), lambda i: body(em.delinear(i, shape_)))
        em.grid_hook = (shape, grid)
        ctx = SerialContext(em, op, b.addrspacecast(fn.args[len(self.types)], P8))
        self.kernels_table[op.name].fn(ctx, op)
        if em.grid_hook is not None:  # no loop over the result (e.g. a cumulative window):
            del self.mod.globals[name]  # drop this function, run the CPU kernel in one thread
            self.serial(op, k)
            return
        em.b.ret_void()
        self.scratch_bytes = max(self.scratch_bytes, ctx.scratch_used)
        self.specs.append(KernelSpec(name, op.name, op.where(), "grid", _size(_ty(op.results[0]))))

    def serial(self, op: Operation, k: int) -> None:
        """One thread runs the lent kernel for op (serial.py)."""
        from axle.backends.gpu.serial import SerialContext
        name = f"k{k}_{op.name.split('.')[-1]}_serial"
        fn, b, em = self._function(name)
        first = b.and_(b.icmp_unsigned("==", _sreg(b, self.mod, "ctaid.x"), ir.Constant(I64, 0)),
                       b.icmp_unsigned("==", _sreg(b, self.mod, "tid.x"), ir.Constant(I64, 0)))
        ctx = SerialContext(em, op, b.addrspacecast(fn.args[len(self.types)], P8))
        with b.if_then(first):
            self.kernels_table[op.name].fn(ctx, op)
        self.scratch_bytes = max(self.scratch_bytes, ctx.scratch_used)
        em.b.ret_void()
        self.specs.append(KernelSpec(name, op.name, op.where(), "serial", 1, _size(_ty(op.operands[0]))
                                     if op.operands else 1))

    def copy(self, v, slot: int, k: int) -> None:
        """A returned argument or constant: a kernel copying it into the result buffer."""
        name = f"k{k}_copy"
        fn, b, em = self._function(name)
        t = _ty(v)
        et = t.element_type
        dst = b.addrspacecast(fn.args[slot], P8)

        def body(i):
            idx = em.delinear(i, list(t.shape))
            S.store(em.b, em.value_at(v, idx), em.element_ptr(dst, et, i), et)
        self._grid_loop(b, _size(t), body)
        em.b.ret_void()
        self.specs.append(KernelSpec(name, "copy", str(t), "elementwise", _size(t)))


def _size(t: TensorType) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n


def _lent_kernels() -> dict:
    lib = library("cpu")
    return dict(lib.kernels) if lib is not None else {}


def emit_program(module, entry: str = "main") -> GpuProgram:
    """LLVM IR (text, NVPTX flavour) and kernel list for `entry` of an optimized module."""
    from axle.passes.lower_quant import prepare_for_cpu
    lib = library("cpu")  # kernels lent by the CPU backend (kernel_library), if present
    module = prepare_for_cpu(module)
    if lib is not None:
        module = lib.prepare(module)  # the rewrites its kernels expect
    table = dict(lib.kernels) if lib is not None else {}
    fn = module.function(entry)
    block = fn.body
    ret = block.operations[-1]
    kernels, want = plan(block, table)
    bld = Builder(block, len(block.arguments), len(ret.operands), table)
    res_slots = bld.assign(ret, kernels)
    for k, op in enumerate(kernels):
        try:
            _emit_kernel(bld, op, k)
        except Unsupported as e:
            if f"'{op.name}'" in str(e):
                raise
            raise Unsupported(f"{op.where()}: not supported by the gpu backend yet: {e}") from e
    for j, v in enumerate(ret.operands):
        if bld.slots.get(v) != res_slots[j]:
            bld.copy(v, res_slots[j], len(bld.specs))
    return GpuProgram(str(bld.mod), bld.specs, [_ty(a) for a in block.arguments],
                      [_ty(v) for v in ret.operands], bld.temps, res_slots, bld.mod, bld.scratch_bytes)


def _emit_kernel(bld: Builder, op: Operation, k: int) -> None:
    KERNELS = bld.kernels_table
    if op.name == "stablehlo.reduce":
        bld.reduce(op, k)
    elif op.name == "stablehlo.dot_general":
        bld.dot(op, k)
    elif op.name == "stablehlo.reduce_window" and _ty(op.results[0]).rank > 0:
        bld.grid_cpu(op, k)
    elif op.name in FUSIBLE and op.name not in KERNELS:
        bld.elementwise(op, k)
    else:
        bld.serial(op, k)
