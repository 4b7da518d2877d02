"""CPU programs as ahead-of-time artifacts (axle.save / axle.load; the container is
axle/runtime/aot.py): the program's object code, the thread pool runtime's object code, and
a header with what calling them needs, and the object code of axle's GEMM kernels
(lowp_runtime.py) when the program calls them. Loading links the object code (no LLVM
compiling).

Refused on load, with a message: another target triple; CPU features the artifact's code
may use that this host lacks (e.g. +avx512f on an AVX2 host: running it would stop the
process on an illegal instruction); split kernels sized for fewer threads than this
process would use.
"""
from __future__ import annotations

import numpy as np

from axle.backends.cpu.executable import NativeProgram, _own_donated, _program_from_header, _program_header
from axle.counters import add as _count
from axle.ir.types import TensorType, element_type


class ArtifactError(ValueError):
    """An artifact that cannot run here (see the message: CPU features, triple, threads) or
    a program that cannot be saved. Fix: compile on (or for) this host: `axle compile`."""


def serialize(exe) -> tuple[dict, bytes]:
    """(header, payload) of a compiled CpuExecutable (static shapes)."""
    from axle.backends.cpu import parallel
    from axle.backends.cpu.llvm_env import host_cpu, triple
    native = getattr(exe, "_static", None) or getattr(exe, "native", None)
    if native is None:
        raise ArtifactError(f"@{exe.entry} has dynamic shapes: save a program specialized to static "
                            f"shapes (axle opt --passes refine-shapes), not one compiled per call")
    prog = native.program
    if not prog.cacheable:
        raise ArtifactError(f"@{exe.entry} calls back into this process (custom calls, collectives, "
                            f"profiling): its code holds addresses valid only here and cannot be saved")
    pool = parallel.pool_object() if parallel.enabled() else None
    lowp_kinds, lowp = [], b""
    if b"axle_lowp_" in native.object_code:  # axle's GEMM kernels (lowp_runtime.py) travel along
        from axle.backends.cpu.lowp_runtime import saved_object
        lowp_kinds, lowp = saved_object()
    name, features = host_cpu()
    header = {"entry": exe.entry, "triple": triple(), "cpu": name, "features": features,
              "parallel": parallel.enabled(), "max_threads": parallel.max_threads(),
              "args": [[t.element_type.name, list(t.shape)] for t in prog.arg_types],
              "result_types": [[t.element_type.name, list(t.shape)] for t in prog.result_types],
              "program": _program_header(prog), "object_size": len(native.object_code),
              "pool_size": len(pool or b""), "lowp_size": len(lowp), "lowp_kinds": lowp_kinds}
    return header, native.object_code + lowp + (pool or b"")


def check_host(header: dict) -> None:
    """Raise ArtifactError when this host cannot run the artifact's code."""
    from axle.backends.cpu import parallel
    from axle.backends.cpu.llvm_env import host_cpu, triple
    if header.get("triple") != triple():
        raise ArtifactError(f"artifact built for target {header.get('triple')}; this host is {triple()}")
    name, features = host_cpu()
    have = {f[1:] for f in features.split(",") if f.startswith("+")}
    want = {f[1:] for f in str(header.get("features", "")).split(",") if f.startswith("+")}
    missing = sorted(want - have)
    if missing:
        raise ArtifactError(f"artifact built for a CPU with features this host lacks: {', '.join(missing)} "
                            f"(built on '{header.get('cpu')}', this host is '{name}'); its code could stop "
                            f"on an illegal instruction, so it is not loaded; recompile on this host")
    if header.get("parallel") and parallel.enabled() and parallel.thread_count() > int(header.get("max_threads", 1)):
        raise ArtifactError(f"artifact's split kernels are sized for at most {header.get('max_threads')} threads, "
                            f"this process uses {parallel.thread_count()}: set AXLE_NUM_THREADS="
                            f"{header.get('max_threads')} or recompile")


def deserialize(header: dict, payload: bytes) -> "LoadedCpuExecutable":
    from axle.backends.cpu import parallel
    n_pool = header.get("pool_size")
    if isinstance(n_pool, int) and 0 < n_pool <= len(payload) and "ready" not in parallel._STATE:
        parallel.PRELOADED["pool"] = payload[len(payload) - n_pool:]  # the pool starts without LLVM
    check_host(header)
    try:
        n_obj, n_pool, n_lowp = int(header["object_size"]), int(header["pool_size"]), int(header.get("lowp_size", 0))
        args = [TensorType(tuple(int(d) for d in s), element_type(e)) for e, s in header["args"]]
        results = [TensorType(tuple(int(d) for d in s), element_type(e)) for e, s in header["result_types"]]
        program = _program_from_header(header["program"], args, results)
    except (KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"artifact header is malformed: {type(e).__name__}: {e}") from None
    if n_obj + n_lowp + n_pool != len(payload):
        raise ArtifactError(f"artifact payload has {len(payload)} bytes, its header says {n_obj + n_lowp + n_pool}")
    if n_lowp:  # the GEMM kernels link without LLVM compiling them
        from axle.backends.cpu import lowp_runtime
        if not lowp_runtime._STATE:
            lowp_runtime.PRELOADED.update(object=payload[n_obj:n_obj + n_lowp],
                                          kinds=list(header.get("lowp_kinds", [])))
    if header.get("parallel") and not parallel.enabled():
        raise ArtifactError("artifact's kernels run on axle's thread pool, which is off in this process "
                            "(AXLE_FLAGS=--cpu_parallel=false or one core): recompile here")
    try:
        native = NativeProgram(program, payload[:n_obj], from_disk=True)
    except Exception as e:  # the JIT linker names the unresolved symbol
        raise ArtifactError(f"artifact's object code does not link in this process: {e}") from e
    return LoadedCpuExecutable(native, str(header.get("entry", "main")))


class LoadedCpuExecutable:
    """A CPU program read from an artifact: the same calling interface as CpuExecutable."""

    loaded_from_disk = True

    def __init__(self, native: NativeProgram, entry: str):
        self.native = native
        self.entry = entry
        self._arg_specs = [(tuple(t.shape), np.dtype(t.dtype)) for t in native.program.arg_types]

    @property
    def program(self):
        return self.native.program

    @property
    def aliases(self) -> dict:
        return dict(self.native.program.aliases)

    def _check(self, args) -> list:
        from axle.errors import ArgumentError
        if len(args) != len(self._arg_specs):
            raise ArgumentError(f"@{self.entry} takes {len(self._arg_specs)} argument(s), got {len(args)}")
        out = []
        for i, (a, (shape, dtype)) in enumerate(zip(args, self._arg_specs)):
            if not isinstance(a, np.ndarray):
                try:
                    a = np.asarray(a, dtype=dtype)
                except (TypeError, ValueError, OverflowError) as e:
                    raise ArgumentError(f"argument {i} of @{self.entry}: cannot convert to {dtype}: {e}") from None
            if a.dtype != dtype:
                raise ArgumentError(f"argument {i} of @{self.entry}: expected dtype {dtype}, got {a.dtype}")
            if a.shape != shape:
                raise ArgumentError(f"argument {i} of @{self.entry}: expected shape {list(shape)}, "
                                    f"got {list(a.shape)}")
            out.append(np.ascontiguousarray(a))
        return out

    def execute(self, args, donate=()) -> list:
        _count("executions")
        args = self._check(list(args))
        if self.native._alias:
            args = _own_donated(args, self.native._alias, donate)
        return self.native.run(args)

    def __call__(self, *args):
        out = self.execute(args)
        return out[0] if len(out) == 1 else tuple(out)
