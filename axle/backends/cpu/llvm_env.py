"""LLVM for the host CPU: one target machine, the optimization pipeline, object code and the JIT.

This module imports nothing else of the backend: blas.py, parallel.py and lapack_symbols.py
put their routines' addresses into EXTERNAL_SYMBOLS, and linking.py links a program after
registering them (imports go one way: linking -> blas, parallel -> llvm_env).

Facts this relies on (measured, see ../shared/DESIGN.md): loops only vectorize 8-wide
when the target machine is built for the host CPU name and features and the pipeline
tuning options turn loop and SLP vectorization on; LLJIT reports unresolved symbols
as errors (MCJIT would bind them to NULL); an LLVM fatal error kills the process, so
every module is verified before code generation.
"""
from __future__ import annotations

import os
import struct
import threading
from ctypes import c_char_p, string_at
from functools import lru_cache

import llvmlite.binding as llvm

from axle import forks
from axle.profiler import phase

# re-entrant: building the thread pool links code too; held across fork() (axle/forks.py):
# a child forked while another thread was inside LLVM deadlocked on its first compile
_LOCK = forks.lock(rlock=True, guard_fork=True)
LOCK = _LOCK  # (linking.py registers the runtime's symbols under it)
try:  # ... and so is llvmlite's own lock, after ours (the order every llvmlite call nests them)
    from llvmlite.binding import ffi as _ffi
    forks.guard(_ffi.lib._lock._lock)
except (ImportError, AttributeError):  # pragma: no cover - another llvmlite layout
    pass


@lru_cache(maxsize=None)
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def target_machine(opt: int = 3):
    """A fresh target machine for the host (each JIT owns its own; sharing one crashes)."""
    _init()
    target = llvm.Target.from_default_triple()
    cpu, _ = host_cpu()
    return target.create_target_machine(cpu=cpu, features=_features(),
                                        opt=opt, reloc="pic", codemodel="small")


# Target machines for code generation, kept for the next compile: a fresh one costs ~0.6 ms
# to make and ~2 ms more on its first emission (the subtarget and its tables are built then),
# a fixed cost that every module part of every compile paid. One thread at a time uses a
# machine (borrowed, then given back); machines are never shared between threads at once.
_TM_FREE: dict = {}  # opt level -> [target machine]
_TM_LOCK = threading.Lock()


class _Borrowed:
    def __init__(self, opt: int):
        self.opt = opt

    def __enter__(self):
        with _TM_LOCK:
            free = _TM_FREE.get(self.opt)
            self.tm = free.pop() if free else None
        if self.tm is None:
            self.tm = target_machine(self.opt)
        return self.tm

    def __exit__(self, *exc):
        with _TM_LOCK:
            _TM_FREE.setdefault(self.opt, []).append(self.tm)
        return False


def borrowed_target_machine(opt: int = 3) -> _Borrowed:
    """`with borrowed_target_machine(opt) as tm:` a host target machine for this thread's
    code generation, from those earlier compiles gave back (else a new one)."""
    return _Borrowed(opt)


def _drop_target_machines() -> None:
    """A fork()ed child starts without the parent's kept machines (their LLVM state may be
    mid-use by a thread the child does not have)."""
    _TM_FREE.clear()


os.register_at_fork(after_in_child=_drop_target_machines)


@lru_cache(maxsize=None)
def _features() -> str:
    """The host's features; on AVX-512 machines also 512-bit vectors for loops (LLVM's
    Intel tuning prefers 256 bits; our elementwise kernels measured ~15% faster with 512)."""
    f = llvm.get_host_cpu_features().flatten()
    if "+avx512f" in f:
        f += ",-prefer-256-bit"
    return f


def triple() -> str:
    _init()
    return llvm.get_process_triple()


def data_layout() -> str:
    return str(target_machine().target_data)


def optimize(mod, tm, level: int = 3) -> None:
    """Run LLVM's O`level` pipeline with loop and SLP vectorization on, the unroller off."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    # LLVM's unroller multiplied compile time by 3-10 on real programs (the whole program
    # is one function) for no run-time gain once short loops are unrolled by the emitter
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)



# Symbols the generated code may call that the JIT cannot find by itself in the process
# (e.g. BLAS routines reached through scipy's function pointers): name -> address.
EXTERNAL_SYMBOLS: dict[str, int] = {}

# Compiler-runtime conversions LLVM may call where no instruction does the job: double ->
# half has none on x86 (F16C converts float <-> half), and LLVM folds a float -> half
# truncation into it when the float itself was truncated from a double (chlo.bessel_i1e
# computed in f64 for an f16 result failed to link: "Symbols not found: __truncdfhf2").
# GCC's libgcc_s has them since GCC 12; the process does not export them.
_LIBGCC_HALF = ("__truncdfhf2", "__truncsfhf2", "__extendhfsf2", "__extendhfdf2", "__truncdfbf2", "__truncsfbf2")


def _libgcc_half_conversions() -> None:
    import ctypes
    try:
        lib = ctypes.CDLL("libgcc_s.so.1")
    except OSError:
        return
    for name in _LIBGCC_HALF:
        try:
            EXTERNAL_SYMBOLS.setdefault(name, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
        except AttributeError:  # an older libgcc: the conversion stays unresolved (as before)
            pass


_libgcc_half_conversions()


@lru_cache(maxsize=None)
def host_cpu() -> tuple[str, str]:
    _init()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


# Loop strength reduction (LSR), which LLVM's code generator runs on every loop, took 8-17% of
# the LLVM time of a cold compile here and changed the run time of nothing in `axle bench`
# but the register-blocked direct convolution (3 input channels: 0.064 -> 0.084 ms without
# it; benchmarks/results/compile.md, round 3). A program module is therefore compiled with
# the code generator's LSR off (the cl::opt -disable-lsr, set only while compile_to_object
# holds _LOCK) unless one of its functions asks for it with this metadata
# (want_strength_reduction). It is a whole-module choice: LLVM's LSR pass run on single
# functions outside the code generator breaks the loop form its pass manager asserts
# (an abort in this LLVM build). Runtime kernels built once per process keep LSR.
LSR_METADATA = "axle.lsr"


def want_strength_reduction(fn) -> None:
    """Mark an llvmlite ir.Function whose loops need LSR (see LSR_METADATA)."""
    if LSR_METADATA not in fn.metadata:
        fn.set_metadata(LSR_METADATA, fn.module.add_metadata([]))


def _wants_lsr(ir_text: str) -> bool:
    return f"!{LSR_METADATA} " in ir_text


def compile_to_object(ir_text: str, opt: int = 3, strength_reduction: str = "all",
                      keep_ir: bool = True) -> tuple[str, bytes]:
    """Parse, verify and optimize LLVM IR; returns (optimized IR text, object code). A module
    with kernels worth splitting (axle/codegen/llvm_split.py) is compiled as several modules on as many
    threads (--cpu_compile_threads), each in its own LLVM context; its object code is then
    those objects packed into one (pack_objects), which link_object takes apart again.
    strength_reduction: LSR on "all" loops, or only in a module with a function "marked" by
    want_strength_reduction (then on all of its loops). keep_ir=False: the optimized IR is
    not printed (returned as ""): printing took 1-2% of a compile, under llvmlite's lock;
    optimized_text() makes it again when someone asks."""
    if strength_reduction not in ("all", "marked"):
        raise ValueError(f"compile_to_object: strength_reduction must be 'all' or 'marked', not {strength_reduction!r}")
    no_lsr = strength_reduction == "marked" and not _wants_lsr(ir_text)
    with _LOCK:
        _init()
        if no_lsr:
            llvm.set_option("axle", "-disable-lsr=1")
        try:
            parts = _split(ir_text)
            if parts is not None:
                return _compile_parts(parts, opt, keep_ir)
            with borrowed_target_machine(opt) as tm:
                mod = optimized_module(ir_text, tm, opt)
                with phase("llvm.object") as info:
                    optimized, obj = str(mod) if keep_ir else "", tm.emit_object(mod)
                    info["object_bytes"] = len(obj)
            return optimized, obj
        finally:
            if no_lsr:
                llvm.set_option("axle", "-disable-lsr=0")


SPLIT_MIN_CHARS = 4_000  # below this, a module is compiled whole (a part costs 1-5 ms of CPU to set up)


def compile_threads() -> int:
    """Threads a program's LLVM work may use (--cpu_compile_threads; 0: one per core, at most 8)."""
    from axle.flags import flag
    n = int(flag("cpu_compile_threads"))
    if n <= 0:
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # pragma: no cover - not Linux
            n = os.cpu_count() or 1
    return max(1, min(n, 8))


def _split(ir_text: str):
    n = compile_threads()
    if n < 2 or len(ir_text) < SPLIT_MIN_CHARS:
        return None
    try:
        _raw("LLVMPY_ParseAssembly")
    except (NameError, AttributeError):  # pragma: no cover - another llvmlite layout
        return None
    from axle.codegen.llvm_split import split_module
    return split_module(ir_text, n)


def _compile_parts(parts: list, opt: int, keep_ir: bool = True) -> tuple[str, bytes]:
    """Each part on its own thread (the first on this one), in its own context; llvmlite's
    lock is taken for the short calls only, so the threads' LLVM work overlaps. The caller
    holds _LOCK throughout (a fork waits until every thread is out of LLVM)."""
    results: list = [None] * len(parts)

    def work(k: int) -> None:
        try:
            results[k] = _compile_alone(parts[k], opt, keep_ir)
        except BaseException as e:  # noqa: BLE001 - re-raised on the calling thread
            results[k] = e

    with phase("llvm.compile_parts", parts=len(parts), ir_bytes=sum(map(len, parts))):
        threads = [threading.Thread(target=work, args=(k,), name=f"axle-llvm-{k}", daemon=True)
                   for k in range(1, len(parts))]
        for t in threads:
            t.start()
        work(0)
        for t in threads:
            t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    text = "\n".join(r[0] for r in results) if keep_ir else ""
    return text, pack_objects([r[1] for r in results])


def _compile_alone(ir_text: str, opt: int, keep_ir: bool = True) -> tuple[str, bytes]:
    """compile_to_object's steps for one module in a context of its own, the long LLVM calls
    (parse, verify, the pass pipeline, code generation) made without llvmlite's
    global lock (the ctypes calls release the GIL): LLVM is safe to run on several threads
    when each has its own context, module, target machine and pass builder."""
    raw = _raw
    ctx = llvm.create_context()
    with phase("llvm.parse", ir_bytes=len(ir_text)):
        buf = c_char_p(ir_text.encode("utf-8"))
        with _ffi.OutputString() as err:
            mod = llvm.ModuleRef(raw("LLVMPY_ParseAssembly")(ctx, buf, err), ctx)
            if err:
                mod.close()
                raise RuntimeError(f"LLVM IR parsing error\n{err}")
        with _ffi.OutputString() as err:
            if raw("LLVMPY_VerifyModule")(mod, err):
                raise RuntimeError(str(err))
    try:
        with borrowed_target_machine(opt) as tm:
            return _optimize_and_emit(mod, tm, opt, keep_ir)
    finally:
        mod.close()  # (before its context)
        ctx.close()


def _optimize_and_emit(mod, tm, opt: int, keep_ir: bool = True) -> tuple[str, bytes]:
    """_compile_alone's pipeline and code generation, on a module of its own context."""
    raw = _raw
    mod.triple = triple()
    mod.data_layout = str(tm.target_data)
    if opt:
        with phase("llvm.optimize", level=opt):
            pto = llvm.create_pipeline_tuning_options(speed_level=opt)
            pto.loop_vectorization = True
            pto.slp_vectorization = True
            pto.loop_unrolling = False  # (as optimize() does)
            pb = llvm.create_pass_builder(tm, pto)
            mpm = pb.getModulePassManager()
            raw("LLVMPY_RunNewModulePassManager")(mpm, mod, pb)
    with phase("llvm.object") as info:
        optimized = ""
        if keep_ir:
            with _ffi.OutputString() as out:
                # under llvmlite's lock, unlike the calls around it: llvmlite's printer switches
                # the process's locale to "C" and back (setlocale is process-wide), and two
                # threads printing at once left it at "C", after which Python's open() decoded
                # text as ASCII (a UnicodeDecodeError in an unrelated test of a full run)
                _ffi.lib.LLVMPY_PrintModuleToString(mod, out)
                optimized = str(out)
        with _ffi.OutputString() as err:
            mb = raw("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, err)
            if not mb:
                raise RuntimeError(str(err))
        try:
            obj = string_at(_ffi.lib.LLVMPY_GetBufferStart(mb), _ffi.lib.LLVMPY_GetBufferSize(mb))
        finally:
            _ffi.lib.LLVMPY_DisposeMemoryBuffer(mb)
        info["object_bytes"] = len(obj)
    return optimized, obj


def _raw(name: str):
    """llvmlite's ctypes function `name` itself, without the wrapper that takes its lock."""
    return getattr(_ffi.lib, name)._cfn


_PACKED = b"AXLEOBJS"


def pack_objects(objs: list) -> bytes:
    """Several object files as one byte string (count, sizes, then the files)."""
    head = _PACKED + struct.pack("<I", len(objs)) + b"".join(struct.pack("<Q", len(o)) for o in objs)
    return head + b"".join(objs)


def object_images(obj: bytes) -> list:
    """The object files in `obj`: itself, or the ones pack_objects packed into it."""
    if not obj.startswith(_PACKED):
        return [obj]
    try:
        (n,) = struct.unpack_from("<I", obj, len(_PACKED))
        pos = len(_PACKED) + 4
        sizes = struct.unpack_from(f"<{n}Q", obj, pos)
    except struct.error:
        raise ValueError("packed object code: truncated header") from None
    pos += 8 * n
    if n < 1 or pos + sum(sizes) != len(obj):
        raise ValueError(f"packed object code: {n} objects of {sum(sizes)} bytes do not fill {len(obj) - pos}")
    out = []
    for size in sizes:
        out.append(obj[pos:pos + size])
        pos += size
    return out


def link_object(obj: bytes, exports: list[str]):
    """JIT-link object code into this process; returns (keep-alive handle, {name: address}).
    Symbols the process does not export come from EXTERNAL_SYMBOLS only: a program that calls
    BLAS, the thread pool or LAPACK is linked by linking.link_object, which registers them.
    The code lives as long as the handle: whoever calls it keeps the handle (see below)."""
    with _LOCK:
        _init()
        _check_mappings()
        lib = llvm.JITLibraryBuilder()
        for img in object_images(obj):  # (several when compile_to_object split the module)
            lib.add_object_img(img)
        lib.add_current_process()
        for name, addr in EXTERNAL_SYMBOLS.items():
            lib.import_symbol(name, addr)
        for name in exports:
            lib.export_symbol(name)
        with phase("llvm.link", object_bytes=len(obj)):
            # JITLink, not RuntimeDyld: see "One allocation per object" below
            jit = llvm.create_lljit_compiler(target_machine(), use_jit_link=True)
            _link_count[0] += 1
            tracker = lib.link(jit, f"axle_{_link_count[0]}")
            addresses = {name: tracker[name] for name in exports}
        return (jit, tracker), addresses


_link_count = [0]

# One allocation per object (the "intermittent SIGABRT inside orcjit.link"). llvmlite's
# default LLJIT links with RuntimeDyld, whose SectionMemoryManager maps an object's code,
# read-only data and writable data with separate mmap calls, wherever the kernel finds room.
# The object's code reaches its constants and the .eh_frame reaches the code through 32-bit
# PC-relative relocations (small code model), so the link is only right when they land
# within 2 GiB of each other. In a long-lived process the free gaps get scattered (thousands
# of JITs, jaxlib, large arrays come and go) and one day the data went 2 GiB away from the
# code: RuntimeDyldELF's `assert(isInt<32>(RealOffset))` (llvmlite's LLVM keeps assertions)
# aborted the process; under pytest the message went to the captured stderr, so the worker
# died with nothing printed. Native stack of one such abort (a full test run, xdist worker):
#   abort <- __assert_fail("isInt<32>(RealOffset)", RuntimeDyldELF.cpp:318)
#   <- RuntimeDyldELF::resolveX86_64Relocation <- RuntimeDyldImpl::resolveLocalRelocations
#   <- RuntimeDyldImpl::finalizeAsync <- jitLinkForORC <- RTDyldObjectLinkingLayer::emit
#   <- ... <- LLJIT::lookup <- LLVMPY_LLJIT_Link
# JITLink (use_jit_link=True) lays out all of an object's segments in one allocation, so
# the references between them are always in reach; EH frames are still registered with
# libgcc, and deregistered when the JIT is freed. tests/backends/test_jit_lifetime.py makes
# the far placement happen on purpose (benchmarks/results/jitabort.md: the whole story).
#
# A JIT lives as long as its handle (the program, the runtime's module state): every live
# JIT holds two or more memory mappings, and keeping all of them for the process (as was
# tried against this abort) only moves it to the kernel's cap on mappings (vm.max_map_count,
# 65530), where LLVM aborts as well: after ~32,700 links of a small program, RuntimeDyld with
# "Unable to allocate section memory!", JITLink with an assertion on its failed allocation.
# _check_mappings turns that into a MemoryError before the link.
_MAPS_MARGIN = 1024  # mappings left for the rest of the process (thread stacks, large arrays)
_MAPS_PER_LINK = 16  # an upper bound on the mappings one link adds (a block per section kind, stubs)
_maps = {"count": -1, "links": 0}  # the last count read, links since


def _max_map_count() -> int:
    """The kernel's cap on this process's memory mappings (0: unknown, not Linux)."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def mapping_count() -> int:
    """This process's memory mappings now (0 where /proc is not there)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def _check_mappings() -> None:
    """Refuse a link (MemoryError) that could exhaust the kernel's mappings: LLVM would abort
    the process. /proc/self/maps is read only when the links since the last reading could
    have come near the cap; then unreferenced programs are collected before refusing."""
    cap = _max_map_count()
    if not cap:
        return
    room = cap - _MAPS_MARGIN
    if 0 <= _maps["count"] and _maps["count"] + _MAPS_PER_LINK * (_maps["links"] + 1) < room:
        _maps["links"] += 1
        return
    count = mapping_count()
    if count + _MAPS_PER_LINK >= room:
        import gc
        gc.collect()  # programs nobody holds any more free their JITs
        count = mapping_count()
    _maps.update(count=count, links=1)
    if count + _MAPS_PER_LINK >= room:
        raise MemoryError(
            f"JIT link refused: this process holds {count} memory mappings and the kernel allows "
            f"{cap} (/proc/sys/vm/max_map_count); LLVM would abort the process when it cannot map "
            f"the code. Drop compiled programs you no longer call (or lower "
            f"--memory_cache_programs), or raise vm.max_map_count.")


def optimized_text(ir_text: str, opt: int = 3) -> str:
    """The module after LLVM's pipeline as compile_to_object runs it, printed (the module
    whole: a split compile optimizes the same functions in parts)."""
    with _LOCK:
        _init()
        with borrowed_target_machine(opt) as tm:
            return str(optimized_module(ir_text, tm, opt))


def optimized_module(ir_text: str, tm, opt: int):
    """The module parsed (in the global context), verified and through LLVM's pipeline."""
    with phase("llvm.parse", ir_bytes=len(ir_text)):  # (phases: recorded by axle.profiler traces)
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    mod.triple = triple()
    mod.data_layout = str(tm.target_data)
    if opt:
        with phase("llvm.optimize", level=opt):
            optimize(mod, tm, opt)
    return mod


def compile_ir(ir_text: str, exports: list[str], opt: int = 3):
    """Optimize, compile and link LLVM IR; returns (keep-alive handle, {name: address}, optimized IR)."""
    optimized, obj = compile_to_object(ir_text, opt)
    handle, addresses = link_object(obj, exports)
    return handle, addresses, optimized
