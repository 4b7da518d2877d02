"""The GPU backend as a plugin (entry point `gpu` in the group axle.backends).

Loading the plugin never needs CUDA: the error about a missing GPU comes at compile time,
naming the fallback backend."""
from __future__ import annotations


class GpuBackend:
    name = "gpu"
    platform = "gpu"

    def device_count(self) -> int:
        """The CUDA devices CuPy sees; without any, NoGpuError naming the fallback (as
        jax.devices("gpu") raises without a GPU), so that `axle.client("gpu")` users learn
        why and what to use instead."""
        from axle.backends.gpu import require_gpu
        require_gpu()
        import cupy
        return int(cupy.cuda.runtime.getDeviceCount())

    def compile(self, module, entry: str = "main", options: dict = None):
        from axle.backends.gpu import compile as gpu_compile
        return gpu_compile(module, entry, **dict(options or {}))
