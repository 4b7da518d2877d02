"""Backends: a compile pipeline + code emission + an executable format, one folder each.

One backend never imports another. What one lends another goes through axle/codegen by
name: the CPU backend's loop kernels are the kernel library "cpu"
(axle.codegen.kernel_library), registered here and loaded on first use; the gpu backend
borrows them as fallbacks. Without backends/cpu the library is absent and the gpu backend
compiles the ops it has kernels of its own for.
"""
from axle.codegen.kernel_library import KernelLibrary, register_library


def _cpu_kernel_library() -> KernelLibrary:
    from axle.backends.cpu.compiler import KERNELS, load_kernels
    from axle.backends.cpu.prepare import prepare
    load_kernels()
    return KernelLibrary(KERNELS, prepare)


register_library("cpu", _cpu_kernel_library)
