"""The TensorFlow bridge: TF lowers a function to StableHLO, axle compiles and runs it.

    model = tf.keras.Sequential([...])
    fast = axle.tf.function(lambda x: model(x))      # like tf.function; compiled per signature
    y = fast(x)                                        # tf.Tensor results, as the function returns
    exe = axle.tf.compile(tf_function, x)              # one signature, ahead of the call

TF writes the StableHLO (`f.experimental_get_compiler_ir(*args)(stage='stablehlo')`, which
needs `jit_compile=True`; functions without it are re-wrapped with it). The program's @main
takes the flattened tensor arguments and then the values of the variables the function
captures (Keras weights): they are read on every call, so a model trained further in TF is
run with its current weights. Needs tensorflow (`pip install axle[tf]`, tensorflow-cpu).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

__all__ = ["function", "compile", "TFCompiled"]


def _tf():
    try:
        import tensorflow as tf
    except ImportError as e:
        raise ImportError("axle.tf needs TensorFlow: pip install 'axle[tf]' (tensorflow-cpu)") from e
    return tf


def _jit_function(fn):
    tf = _tf()
    if hasattr(fn, "experimental_get_compiler_ir"):  # a tf.function
        if getattr(fn, "_jit_compile", None):
            return fn
        return tf.function(fn.python_function, jit_compile=True)
    if not callable(fn):
        raise TypeError(f"axle.tf: expected a function or tf.function, got {type(fn).__name__}")
    return tf.function(fn, jit_compile=True)


def _is_tensor_like(x) -> bool:
    tf = _tf()
    return isinstance(x, (tf.Tensor, tf.Variable, np.ndarray, np.generic))


class TFCompiled:
    """One signature of a TF function compiled by axle; call it with the same arguments."""

    def __init__(self, tf_function, args: tuple, kwargs: dict, backend: str = "cpu", **options):
        import axle
        from axle.ir import parse_module
        tf = _tf()
        self.function = _jit_function(tf_function)
        self.text = self.function.experimental_get_compiler_ir(*args, **kwargs)(stage="stablehlo")
        self.module = parse_module(self.text, f"<tf.function {getattr(self.function, '__name__', 'fn')}>")
        concrete = self.function.get_concrete_function(*args, **kwargs)
        self._captured = [self._reader(h, concrete) for h in concrete.captured_inputs]
        self._structure = concrete.structured_outputs
        main = self.module.function("main")
        self._dtypes = [np.dtype(t.dtype) for t in main.function_type.inputs]
        n_args = len([x for x in tf.nest.flatten((args, kwargs)) if _is_tensor_like(x)])
        if n_args + len(self._captured) != len(self._dtypes):
            raise NotImplementedError(
                f"axle.tf: @main takes {len(self._dtypes)} values, but the call gives {n_args} tensors and "
                f"the function captures {len(self._captured)} (non-tensor captures are not supported)")
        self.executable = axle.compile(self.module, backend=backend, **options)

    @staticmethod
    def _reader(handle, concrete) -> Callable:
        tf = _tf()
        if handle.dtype == tf.resource:
            for v in concrete.variables:
                if v.handle is handle:
                    return lambda v=v: v.numpy()
            raise NotImplementedError("axle.tf: a captured resource that is not one of the function's variables")
        value = handle.numpy()
        return lambda: value

    def __call__(self, *args, **kwargs):
        tf = _tf()
        flat = [np.asarray(x) for x in tf.nest.flatten((args, kwargs)) if _is_tensor_like(x)]
        flat += [read() for read in self._captured]
        flat = [np.asarray(x, dt) for x, dt in zip(flat, self._dtypes)]
        outs = self.executable.execute(flat)
        return tf.nest.pack_sequence_as(self._structure, [tf.constant(o) for o in outs])


def compile(tf_function, *args, backend: str = "cpu", **kwargs_and_options) -> TFCompiled:
    """Compile one signature of `tf_function` (a tf.function or a Python function of tensors)
    for the arguments given; the result is called with arguments of that signature."""
    options = {k: kwargs_and_options.pop(k) for k in list(kwargs_and_options) if k in ("passes", "profile")}
    return TFCompiled(tf_function, args, kwargs_and_options, backend, **options)


def _signature(x):
    if _is_tensor_like(x):
        return (tuple(np.shape(x)), np.dtype(getattr(x.dtype, "as_numpy_dtype", x.dtype)).str)
    return ("static", x)


class _Function:
    def __init__(self, fn, backend: str):
        self.fn, self.backend = fn, backend
        self.tf_function = _jit_function(fn)
        from axle.flags import flag
        from axle.lru import LRU
        self._cache = LRU(lambda: flag("jit_cache_entries"))  # per signature, least recently used out

    def __call__(self, *args, **kwargs):
        tf = _tf()
        leaves = tf.nest.flatten((args, kwargs))
        key = (str(tf.nest.map_structure(lambda _: 0, (args, kwargs))), tuple(_signature(x) for x in leaves))
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._cache[key] = TFCompiled(self.tf_function, args, kwargs, self.backend)
        return compiled(*args, **kwargs)


def function(fn: Optional[Callable] = None, *, backend: str = "cpu"):
    """Like tf.function, with axle compiling: one axle executable per argument signature
    (shapes, dtypes, structure, values of non-tensor arguments). Usable as a decorator."""
    if fn is None:
        return lambda f: _Function(f, backend)
    return _Function(fn, backend)
