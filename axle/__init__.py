"""axle: an ML compiler and runtime for StableHLO, written in Python.

    import axle
    m = axle.parse_module(text)          # axle.ir.Module
    out = axle.interpret(m, x, y)        # reference semantics, numpy in and out
"""
from axle.version import __version__

__all__ = ["compile", "interpret", "parse_module", "register_custom_call", "load_exported", "__version__",
           "client", "devices", "device_put", "save", "load", "metrics", "reset_metrics", "available_backends",
           "CompileOptions", "register_ffi_target"]

# the runtime's API (axle/runtime, docs/runtime.md), imported on first use
_RUNTIME = {"client": "client", "devices": "devices", "device_put": "device_put", "Buffer": "Buffer",
            "Executable": "Executable", "CompileOptions": "CompileOptions", "Device": "Device",
            "available_backends": "available_backends"}


def __getattr__(name):  # lazy: `import axle` stays cheap
    if name == "interpret":
        from axle.interpreter import interpret
        return interpret
    if name == "register_custom_call":
        # register_custom_call("my.target", fn): `stablehlo.custom_call @my.target` then runs
        # fn(call) (call.operands: numpy arrays, call.attrs: attributes) in the interpreter
        # and, as a host call, in compiled CPU programs
        from axle.interpreter.evaluator import register_custom_call
        return register_custom_call
    if name == "load_exported":  # a jax.export artifact (bytes or path) compiled by axle; needs jax
        from axle.jax.export import load_exported
        return load_exported
    if name == "parse_module":
        from axle.ir import parse_module
        return parse_module
    if name in _RUNTIME:
        import axle.runtime
        return getattr(axle.runtime, _RUNTIME[name])
    if name in ("save", "load"):
        from axle.runtime import aot
        return getattr(aot, name)
    if name == "register_ffi_target":
        # register_ffi_target("my_op", fn_ptr): a native handler with XLA's typed FFI ABI
        from axle.backends.ffi import register_ffi_target
        return register_ffi_target
    raise AttributeError(f"module 'axle' has no attribute {name!r}")


def metrics() -> dict:
    """Counters of this process: compiles, memory and disk cache hits and misses, compile
    seconds, executions, donations, AOT saves and loads (axle/counters.py says what each is)."""
    from axle import counters as _m
    return _m.snapshot()


def reset_metrics() -> None:
    from axle import counters as _m
    _m.reset()


def compile(module, backend: str = "cpu", entry: str = "main", **options):
    """Compile a module (an axle.ir.Module or StableHLO text) for a backend (any name in
    `axle.available_backends()`: entry points of the group `axle.backends`); returns the backend's
    executable: call it with numpy arrays (`exe(*arrays)`: one array or a tuple;
    `exe.execute(list)`: a list). Options are CompileOptions' fields (passes, dump_to,
    profile, donate_argnums / donate, device_assignment); others go to the backend.
    `axle.client(backend).compile(...)` gives the runtime's Executable (Buffers in and out)."""
    from axle.runtime.client import compile_callable
    return compile_callable(module, backend, entry, **options)
