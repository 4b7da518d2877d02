"""The PyTorch bridge (torch 2.13, CPU): never imported by axle's core.

    model = torch.compile(model, backend="axle")      # after `pip install axle[torch]`
    text = axle.torch.export(module, *args)           # StableHLO text, weights as arguments
    run = axle.torch.compile_exported(text, module)   # run it with torch tensors
"""
from __future__ import annotations

__all__ = ["axle_backend", "export", "export_quantized", "compile_exported", "to_numpy", "from_numpy", "lower_graph"]


def __getattr__(name):
    if name == "axle_backend":
        from axle.torch.backend import axle_backend
        return axle_backend
    if name in ("export", "compile_exported", "ExportedModule", "export_quantized"):
        import axle.torch.exporter as _export
        return getattr(_export, name if name != "export" else "export_stablehlo")
    if name in ("to_numpy", "from_numpy"):
        from axle.torch import dtypes
        return getattr(dtypes, name)
    if name == "lower_graph":
        from axle.torch.lowering import lower_graph
        return lower_graph
    raise AttributeError(f"module 'axle.torch' has no attribute {name!r}")
