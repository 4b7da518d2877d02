"""The CPU executable: native code behind one foreign call per execution.

Arguments are checked (count, shape, dtype) before any native code runs. The fast path
(every argument an exact, C-contiguous np.ndarray of the expected dtype and shape) costs
a few comparisons per argument, one np.empty per result and one foreign call of the
program's trampoline `axle_call(arrays..., arena)`, which reads the arrays' data pointers
in native code and runs `axle_entry(table)`. Anything else (lists, scalars, other dtypes,
strided views, wrong shapes) takes the checking path, which converts what may be converted
and raises ArgumentError naming the argument otherwise.

Programs with dynamic dimensions (`?`) are specialized to the shapes of the arguments at
call time (shape refinement, passes/refine_shapes.py) and one native program is kept per
concrete signature.

Donation: with `aliases` {result k: argument j} among the options, the code writes result
k into argument j's memory where that is safe (aliasing.py; the accepted pairs are
`Program.aliases`); `execute(args, donate=positions)` then returns the donated arrays
themselves as those results, and copies aliased arguments the caller did not donate.

Caches: compiled programs are kept in memory by (module fingerprint, entry, signature,
options) and on disk (disk_cache.py) as object code. The fingerprint is taken from the
module as given, before the optimization pipeline, printed without locations: a cache hit
skips the pipeline, code generation and LLVM entirely.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import Callable, Optional

import numpy as np

from axle import counters as _metrics
from axle import forks
from axle import profiler as _profiler
from axle.flags import flag
from axle.lru import LRU
from axle.backends.cpu import disk_cache, result_pool
from axle.backends.cpu.compiler import Program, compile_function
from axle.backends.cpu.linking import link_object
from axle.backends.cpu.llvm_env import compile_to_object
from axle.errors import Unsupported
from axle.ir.core import Module
from axle.ir.signature import check_arguments
from axle.ir.types import TensorType

# (module fingerprint, entry, signature, options, ...) -> NativeProgram, least recently used
# first out beyond --memory_cache_programs (an evicted program lives on in the executables
# that use it; the next compile of it loads it from the disk cache)
_CACHE = LRU(lambda: flag("memory_cache_programs"))
_CACHE_LOCK = forks.lock()  # unlocked again in a forked child (axle/forks.py)
_INHERITED: list = []  # in a forked child: the parent's programs, kept, never evicted


def _forget_inherited() -> None:
    """In a forked child: the parent's programs leave the cache without being freed (their
    JITs were made in the parent; the cache's bound never destroys them here)."""
    _INHERITED.extend(OrderedDict.values(_CACHE))
    _CACHE.clear()


forks.after_in_child(_forget_inherited)
MAX_TRAMPOLINE_ARGS = 250  # beyond this, the pointer table is filled from Python


def clear_memory_cache() -> None:
    """Forget every compiled program of this process (the disk cache stays)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def fingerprint(module: Module) -> str:
    from axle.ir.text.printer import print_module
    return hashlib.sha256(print_module(module, canonical=True).encode()).hexdigest()


class NativeProgram:
    """One compiled signature: the JIT-linked code and what calling it needs."""

    def __init__(self, program: Program, obj: bytes, optimized_ir: str = "", from_disk: bool = False):
        self.program = program
        self.object_code = obj
        self._optimized_ir = optimized_ir
        self.from_disk = from_disk
        self._jit, addrs = link_object(obj, ["axle_entry", "axle_call"])
        self._fn = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))(addrs["axle_entry"])
        from axle.limits import check_buffer
        check_buffer(program.arena_bytes, "the temporaries (one arena) of the program")
        self.n_args = len(program.arg_types)
        n = self.n_args + len(program.result_types)
        self._call: Optional[Callable] = None
        if n <= MAX_TRAMPOLINE_ARGS:
            self._call = ctypes.CFUNCTYPE(None, *([ctypes.py_object] * n + [ctypes.c_void_p]))(addrs["axle_call"])
        self._outs = [(tuple(t.shape), np.dtype(t.dtype)) for t in program.result_types]
        # donation: result k is written into argument j's array (the caller owns it)
        self._alias = sorted((int(k), int(j)) for k, j in program.aliases.items())
        self._local = threading.local()  # arena and pointer table per thread (devices run in threads)

    @property
    def optimized_ir(self) -> str:
        """The program's LLVM IR after LLVM's pipeline: made on first request (a compile does
        not print it), from the program's IR, or "" where that is not kept."""
        if not self._optimized_ir and self.program.llvm_ir:
            from axle.backends.cpu.llvm_env import optimized_text
            self._optimized_ir = optimized_text(self.program.llvm_ir)
        return self._optimized_ir

    @classmethod
    def compile(cls, program: Program) -> "NativeProgram":
        optimized, obj = compile_to_object(program.llvm_ir, strength_reduction="marked", keep_ir=False)
        return cls(program, obj, optimized)

    def _scratch(self):
        loc = self._local
        if not hasattr(loc, "table"):
            loc.arena = np.empty(max(self.program.arena_bytes, 1) + 64, dtype=np.uint8)
            base = loc.arena.ctypes.data
            loc.arena_ptr = base + (-base % 64)
            n = len(self.program.arg_types) + len(self.program.result_types) + 1
            loc.table = (ctypes.c_void_p * n)()
        return loc

    def run(self, args: list) -> list:
        """Run on checked arguments: exact, C-contiguous np.ndarrays of the right dtypes/shapes."""
        outs = [result_pool.empty(s, d) for s, d in self._outs]
        if self._alias:
            for k, j in self._alias:
                outs[k] = args[j]
        try:
            arena = self._local.arena_ptr
        except AttributeError:
            arena = self._scratch().arena_ptr
        if self.program.host_callbacks:  # where callbacks report an error (status.py)
            from axle.backends.cpu.kernels_collective import start_call
            off = self.program.status_offset
            start_call(None if off is None else arena + off)
        if self._call is not None:
            self._call(*args, *outs, arena)
        else:
            table = self._local.table
            k = 0
            for a in args:
                table[k] = a.ctypes.data
                k += 1
            for o in outs:
                table[k] = o.ctypes.data
                k += 1
            table[k] = arena
            self._fn(table)
        if self.program.host_callbacks:
            from axle.backends.cpu.kernels_collective import check_errors
            check_errors()  # an error raised by a host callback (collectives) during the call
        return outs


def _explain_miss(entry: str, key: tuple) -> None:
    """AXLE_FLAGS=--explain_cache_misses: log which part of the key changed."""
    from axle.flags import flag
    if not flag("explain_cache_misses"):
        return
    fingerprint, _, signature, opts, pipeline, parallel, flags = key
    from axle.backends.cpu.disk_cache import cache_dir
    message = _metrics.explain_miss(entry, {
        "module": fingerprint[:16], "signature": [list(s) for s in signature], "options": opts,
        "passes": pipeline, "cpu_parallel": parallel, "AXLE_FLAGS": flags})
    logging.getLogger("axle.compile").warning("%s (disk cache: %s)", message, cache_dir() or "off")


def _program_header(p: Program) -> dict:
    return {"results": [list(t.shape) for t in p.result_types], "arena_bytes": p.arena_bytes,
            "kernels": [[k.name, k.where(), k.shape, k.library] for k in p.kernels if k.depth == 0],
            "aliases": [[int(k), int(j)] for k, j in sorted(p.aliases.items())]}


def _program_from_header(h: dict, arg_types: list, result_types: list) -> Program:
    results = h["results"]
    if not isinstance(results, list) or len(results) != len(result_types):
        raise ValueError("result count")
    rtypes = [TensorType(tuple(int(d) for d in shape), t.element_type) for shape, t in zip(results, result_types)]
    prog = Program("", arg_types, rtypes, int(h["arena_bytes"]))
    prog.kernel_summary = h.get("kernels", [])
    aliases = h.get("aliases", [])
    n_args = len(arg_types)
    for k, j in aliases:
        if not (0 <= int(k) < len(rtypes) and 0 <= int(j) < n_args) or rtypes[int(k)] != arg_types[int(j)]:
            raise ValueError("aliases")
    prog.aliases = {int(k): int(j) for k, j in aliases}
    return prog


def _own_donated(args: list, alias: list, donate) -> list:
    """The arguments with every aliased one that the caller did not donate (or that cannot
    be written: read-only, shared with another argument) replaced by a copy."""
    args = list(args)
    donate = set(donate or ())
    for _, j in alias:
        a = args[j]
        shared = any(b is a or np.may_share_memory(a, b) for i, b in enumerate(args) if i != j)
        if j not in donate or not a.flags.writeable or shared:
            args[j] = a.copy()
        else:
            _metrics.add("donated_buffers")
    return args


def dump_llvm(program: Program, entry: str, dump_to: Optional[str] = None) -> Optional[str]:
    """Write the program's LLVM IR (before LLVM's optimizer) as NNN.<entry>.cpu.ll into the
    dump folder (`dump_to`, else AXLE_FLAGS' --dump_to), numbered in compile order; returns
    the path written, or None when no folder is set. axle.tools.replay compares these.
    Beside it, NNN.<entry>.cpu.plans.txt: the fusion plan, schedule and buffer assignment."""
    from axle.flags import flag
    folder = dump_to or flag("dump_to")
    if not folder:
        return None
    os.makedirs(folder, exist_ok=True)
    n = sum(1 for f in os.listdir(folder) if f.endswith(".cpu.ll"))
    path = os.path.join(folder, f"{n:03d}.{entry}.cpu.ll")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(program.llvm_ir)
    if program.plans is not None:
        with open(path[:-len(".ll")] + ".plans.txt", "w", encoding="utf-8") as fh:
            fh.write(str(program.plans))
    return path


@contextmanager
def _user_errors():
    """A pass that refuses the input (Unsupported inside a PassError) raises the Unsupported."""
    from axle.passes.pass_manager import PassError
    try:
        yield
    except PassError as e:
        if isinstance(e.__cause__, Unsupported):
            raise e.__cause__ from None
        raise


def lower(module: Module, entry: str = "main", dump_to: Optional[str] = "") -> None:
    """Run the CPU pipeline's lowering part (pipeline.py) on `module`, in place. With
    `dump_to` "" (AXLE_FLAGS' --dump_to) or a folder, through axle.reproducer with its dumps
    and crash reproducer; with None, quietly (a second run, which changes nothing)."""
    if dump_to is None:
        from axle.backends.cpu.pipeline import lowering_pipeline
        from axle.passes.pass_manager import PassManager
        PassManager(lowering_pipeline()).run(module)
        return
    from axle.reproducer import run_pipeline
    run_pipeline(module, "cpu-lowering", entry=entry, dump_to=dump_to or None)


class CpuExecutable:
    """A compiled entry function. The module given is never changed: a program is compiled
    from a deep copy of it, after `pipeline` (when given: the optimizing passes, run once,
    and only when a program must actually be compiled, not on a cache hit) and the CPU
    pipeline's lowering part (pipeline.py; a no-op after the full "cpu" pipeline).
    `module` is that copy once compiled, else the module given (`source_module`)."""

    def __init__(self, module: Module, entry: str = "main", pipeline: Optional[Callable] = None,
                 dump_to: Optional[str] = None, **options):
        self.source_module = module
        self._optimized: Optional[Module] = None
        self._dump_to = dump_to  # writes each generated LLVM module there (else AXLE_FLAGS' --dump_to)
        self.entry = entry
        self.options = dict(options)
        self._pipeline = pipeline
        self._optimizes = pipeline is not None  # part of the cache keys
        self._pipeline_lock = forks.lock()
        self.function = module.function(entry)
        self.fingerprint = fingerprint(module)
        types = list(self.function.function_type.inputs)
        self._result_types = list(self.function.function_type.results)
        for t in types + self._result_types:
            if not isinstance(t, TensorType):
                raise Unsupported(f"@{entry} takes or returns a value of type {t}; the cpu backend "
                                  f"passes only tensors across its entry")
        self.dynamic = any(not t.is_static for t in types)
        self._arg_specs = [(tuple(t.shape), np.dtype(t.dtype)) for t in types]
        self._programs = LRU(lambda: flag("jit_cache_entries"))  # signature -> NativeProgram
        self._static: Optional[NativeProgram] = None
        self.loaded_from_disk = False
        if not self.dynamic:
            self._static = self._native(tuple(t.shape for t in types))
            self.loaded_from_disk = self._static.from_disk

    @property
    def module(self) -> Module:
        """The module code was generated from (optimized and lowered) once a program was
        compiled here, else the module given."""
        return self._optimized if self._optimized is not None else self.source_module

    def _optimized_module(self) -> Module:
        """The copy of the module given, after the pipeline and the lowering (made once)."""
        with self._pipeline_lock:
            if self._optimized is None:
                module = self.source_module.clone()  # the caller's module stays as it is
                with _user_errors():
                    if self._pipeline is not None:
                        self._pipeline(module)
                        lower(module, dump_to=None)  # nothing left to do after the "cpu" pipeline
                    else:
                        lower(module, self.entry, dump_to=self._dump_to or "")
                self._pipeline = None
                self._optimized = module
        return self._optimized

    def _native(self, signature: tuple) -> NativeProgram:
        prog = self._programs.get(signature)
        if prog is not None:
            return prog
        opts = json.dumps(self.options, sort_keys=True, default=str)
        from axle.backends.cpu import parallel
        from axle.flags import flags_text  # (every flag: several choose the code generated)
        key = (self.fingerprint, self.entry, signature, opts, self._optimizes, parallel.enabled(), flags_text())
        with _CACHE_LOCK:
            prog = _CACHE.get(key)
        if prog is None:
            _metrics.add("memory_cache_misses")
            _explain_miss(self.entry, key)
            dkey = disk_cache.make_key(self.fingerprint, self.entry, signature,
                                       dict(self.options, pipeline=self._optimizes))
            prog = self._from_disk(dkey, signature)
            if prog is None:
                _metrics.add("disk_cache_misses")
                t0 = time.perf_counter()
                program = self._compile(signature)
                dump_llvm(program, self.entry, self._dump_to)
                prog = NativeProgram.compile(program)
                _metrics.add("native_compiles")
                _metrics.add("llvm_seconds", time.perf_counter() - t0)
                if prog.program.cacheable:
                    disk_cache.store(dkey, _program_header(prog.program), prog.object_code)
            else:
                _metrics.add("disk_cache_hits")
            with _CACHE_LOCK:
                _CACHE[key] = prog
        else:
            _metrics.add("memory_cache_hits")
        self._programs[signature] = prog
        return prog

    def _from_disk(self, key: str, signature: tuple) -> Optional[NativeProgram]:
        entry = disk_cache.load(key)
        if entry is None:
            return None
        header, obj = entry
        arg_types = [TensorType(tuple(s), t.element_type)
                     for s, t in zip(signature, self.function.function_type.inputs)]
        try:
            program = _program_from_header(header, arg_types, self._result_types)
        except (KeyError, TypeError, ValueError):
            return None
        return NativeProgram(program, obj, from_disk=True)

    def _compile(self, signature: tuple) -> Program:
        module = self._optimized_module()
        if self.dynamic:
            from axle.ir import parse_module, print_module
            from axle.passes.refine_shapes import fully_static, specialize
            module = specialize(parse_module(print_module(module)), self.entry, list(signature))
            with _user_errors():
                lower(module, dump_to=None)  # what specializing made lowerable (constant shapes)
            if not fully_static(module, self.entry):
                from axle.backends.cpu.kernels_jax import check_shape_assertions
                check_shape_assertions(module)  # shapes that break the export's assertions: say so
                raise Unsupported(f"@{self.entry}: shapes still dynamic after specializing to "
                                  f"{[list(s) for s in signature]} (they depend on data)")
        return compile_function(module, self.entry, **self.options)

    @property
    def program(self) -> Program:
        """The program of the (first) compiled signature."""
        return next(iter(self._programs.values())).program

    def _fast_ok(self, args) -> bool:
        if len(args) != len(self._arg_specs):
            return False
        for a, (shape, dtype) in zip(args, self._arg_specs):
            if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype or not a.flags.c_contiguous:
                return False
        return True

    def execute(self, args, _traced: bool = False, donate=()) -> list:
        """Run on numpy arrays; returns the results as fresh numpy arrays. With donation
        compiled in (`aliases`), result k is written into argument j's memory: an array
        listed in `donate` (argument positions) is used as it is and comes back as the
        result (the caller gives it up); any other aliased argument is copied first."""
        if _profiler.ACTIVE is not None and not _traced:  # axle.profiler is tracing: record the call
            return _profiler.ACTIVE.execute(self, args)
        _metrics.add("executions")
        if self._static is not None and not self._static._alias and self._fast_ok(args):
            return self._static.run(args)
        # np.asarray(order="C") keeps 0-d arrays 0-d (np.ascontiguousarray makes them 1-d)
        args = [np.asarray(a, order="C") for a in check_arguments(self.function, list(args))]
        prog = self._native(tuple(a.shape for a in args))
        if prog._alias:
            args = _own_donated(args, prog._alias, donate)
        return prog.run(args)

    @property
    def aliases(self) -> dict:
        """{result k: argument j} written in place (the accepted donations), of the first program."""
        return dict(self.program.aliases) if self._programs else {}

    def __call__(self, *args):
        out = self.execute(args)
        if len(out) == 1:
            return out[0]
        return tuple(out)
