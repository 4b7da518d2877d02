"""The GPU backend as a plugin (entry point `gpu` in the group axle.backends).

Loading the plugin never needs CUDA: the error about a missing GPU comes at compile time,
naming the fallback backend."""
from __future__ import annotations


class GpuBackend:
    name = "gpu"
    platform = "gpu"

    def device_count(self) -> int:
        from axle.backends.gpu import gpu_present
        ok, _ = gpu_present()
        if not ok:
            return 0
        import cupy
        return int(cupy.cuda.runtime.getDeviceCount())

    def compile(self, module, entry: str = "main", options: dict = None):
        from axle.backends.gpu import compile as gpu_compile
        return gpu_compile(module, entry, **dict(options or {}))
