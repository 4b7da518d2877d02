"""Linking a CPU program's object code into this process, with the native routines it calls.

Generated programs (and object code from the disk cache or an AOT artifact) may call BLAS
(blas.py), the thread pool's entry point `axle_pool_run` (parallel.py) and LAPACK
(lapack_symbols.py) by name; the JIT binds those names to the addresses in
llvm_env.EXTERNAL_SYMBOLS. `link_object` registers them first, then links.

Imports go one way: linking -> blas, parallel, lapack_symbols -> llvm_env (llvm_env imports
none of them, so that building the thread pool, which links code itself, is no cycle).
"""
from __future__ import annotations

from axle.backends.cpu import blas, llvm_env, parallel


def register_runtime_symbols(obj: bytes) -> None:
    """Put the addresses of the routines `obj` may call into llvm_env.EXTERNAL_SYMBOLS."""
    blas.available()  # the BLAS routines (code from the disk cache may call them)
    parallel.available()  # the thread pool's entry point (axle_pool_run)
    if b"axle_lowp_" in obj:  # axle's GEMM kernels and convolution routines (lowp_runtime.py)
        from axle.backends.cpu.lowp_runtime import register
        conv = b"axle_lowp_conv_" in obj or b"axle_lowp_dconv_" in obj
        register("conv" if conv else "gemm")  # ("conv" links the GEMM group too)
    if b"axle_lapack_" in obj:  # LAPACK routines (kernels_lapack.py)
        from axle.backends.cpu.lapack_symbols import register_symbols  # (imports scipy's LAPACK: lazily)
        register_symbols()
    if b"axle_coll_" in obj:  # the native collectives' runtime (collectives_native.py)
        from axle.backends.cpu.collectives_native import runtime
        runtime()


def link_object(obj: bytes, exports: list[str]):
    """JIT-link a program's object code; returns (keep-alive handle, {name: address})."""
    with llvm_env.LOCK:
        register_runtime_symbols(obj)
        return llvm_env.link_object(obj, exports)
