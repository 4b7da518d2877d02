"""`axle.load_exported`: run a `jax.export` artifact with axle.

    blob = jax.export.export(jax.jit(f))(*args).serialize()     # in a JAX program
    fn = axle.load_exported(blob)                                 # bytes, or a path to them
    out = fn(*args)                                               # the same pytrees in and out

jax's own deserializer reads the envelope (calling convention, pytree structure, avals);
the module inside is a StableHLO portable artifact that `axle.ir.parse_bytecode` reads (see
axle/ir/text/bytecode.py for what a version skew does). Results are numpy arrays.
"""
from __future__ import annotations

import os
from typing import Union

import numpy as np


class LoadedExport:
    """A deserialized jax.export.Exported compiled by axle; call it with the exported pytrees."""

    def __init__(self, exported, backend: str = "cpu", **options):
        from axle.ir.text.bytecode import parse_bytecode
        from axle.runtime.client import compile_callable
        self.exported = exported
        name = f"<jax.export {exported.fun_name}>"
        if "cpu" not in exported.platforms:
            raise NotImplementedError(f"{name}: exported for platforms {exported.platforms}; axle runs "
                                      f"artifacts that include 'cpu' (jax.export.export(..., platforms=[..., 'cpu']))")
        # a multi-platform export's @main takes the platform's index first
        self._platform = ([np.int32(exported.platforms.index("cpu"))] if len(exported.platforms) > 1 else [])
        if exported.ordered_effects or exported.unordered_effects:
            raise NotImplementedError(f"{name}: exported with effects {exported.ordered_effects + exported.unordered_effects}"
                                      f" (tokens across the entry are not supported)")
        self.module = parse_bytecode(exported.mlir_module_serialized, name)
        self.kept = tuple(exported.module_kept_var_idx)
        main = self.module.function("main")
        self._dtypes = [np.dtype(t.dtype) for t in main.function_type.inputs][len(self._platform):]
        if len(self._dtypes) != len(self.kept):
            raise NotImplementedError(f"{name}: @main takes {len(self._dtypes)} arguments for "
                                      f"{len(self.kept)} kept inputs (dimension variables or tokens)")
        self.executable = compile_callable(self.module, backend=backend, **options)

    @property
    def in_tree(self):
        return self.exported.in_tree

    @property
    def out_tree(self):
        return self.exported.out_tree

    def __call__(self, *args, **kwargs):
        from jax import tree_util
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        if tree != self.exported.in_tree:
            raise TypeError(f"{self.exported.fun_name}: arguments of structure {tree}, but the export "
                            f"takes {self.exported.in_tree}")
        for i, (x, aval) in enumerate(zip(leaves, self.exported.in_avals)):
            if tuple(np.shape(x)) != tuple(aval.shape):
                raise TypeError(f"{self.exported.fun_name}: input leaf {i} has shape {tuple(np.shape(x))}, "
                                f"the export takes {aval.str_short()}")
        flat = self._platform + [np.asarray(leaves[k], dt) for k, dt in zip(self.kept, self._dtypes)]
        return tree_util.tree_unflatten(self.exported.out_tree, self.executable.execute(flat))


def load_exported(source: Union[bytes, bytearray, str, os.PathLike], backend: str = "cpu", **options) -> LoadedExport:
    """Read a serialized `jax.export.Exported` (bytes, or a path to a file of them) and
    compile it with axle; the result is called with the pytrees the export was made for."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            source = f.read()
    if not isinstance(source, (bytes, bytearray)):
        raise TypeError(f"axle.load_exported: expected bytes or a path, got {type(source).__name__}")
    try:
        from jax import export as jax_export
    except ImportError as e:
        raise ImportError("axle.load_exported needs jax (pip install 'axle[jax]')") from e
    try:
        exported = jax_export.deserialize(bytearray(source))
    except Exception as e:
        raise ValueError(f"axle.load_exported: not a jax.export artifact jax can read ({e})") from e
    return LoadedExport(exported, backend=backend, **options)
