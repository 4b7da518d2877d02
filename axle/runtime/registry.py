"""Backends are plugins: found by name in the entry-point group `axle.backends`.

A distribution registers a backend in its pyproject.toml:

    [project.entry-points."axle.backends"]
    mybackend = "my_package.backend:MyBackend"

The entry point names a class (or a function of no arguments) whose instance has:

    name: str                      # the backend's name
    platform: str                  # the device platform ("cpu", "gpu", ...)
    def devices(self) -> list      # optional: the Devices it runs on (default: one)
    def compile(self, module, entry, options) -> backend executable
        # module: axle.ir.Module (verified signatures); options: a dict (CompileOptions.to_backend)
        # the executable: execute(list of numpy arrays, donate=()) -> list of numpy arrays,
        #                 optionally `aliases` ({result k: argument j} written in place)
    def deserialize(self, header: dict, payload: bytes) -> backend executable   # optional (axle.load)

axle's own `cpu` and `interpreter` backends are registered the same way (axle's
pyproject.toml). `register_backend(name, factory)` adds one in this process (tests);
`reset()` forgets the loaded instances and the added ones.
"""
from __future__ import annotations

import threading
from importlib import metadata
from typing import Callable

GROUP = "axle.backends"

# axle's own entry points (pyproject.toml), used when the installed metadata predates them
# (an editable install made before they were added): same names, same targets
_BUILTIN = {"cpu": "axle.backends.cpu.plugin:CpuBackend",
            "interpreter": "axle.backends.interpreter:InterpreterBackend"}

_LOCK = threading.RLock()
_loaded: dict = {}
_added: dict = {}


class BackendError(RuntimeError):
    """A backend that is not installed, or whose plugin fails to load.

    Fix: pick one of the backends the message lists (`axle.available_backends()`), or install the
    distribution that provides the backend (it must declare an entry point in the group
    `axle.backends`), or fix the plugin's import error shown as the cause."""


def _entry_points() -> dict:
    """name -> (target 'module:attr', distribution name or None)."""
    out = {name: (target, "axle (built in)") for name, target in _BUILTIN.items()}
    for ep in metadata.entry_points(group=GROUP):
        dist = getattr(ep, "dist", None)
        out[ep.name] = (ep.value, f"{dist.name} {dist.version}" if dist is not None else None)
    return out


def available() -> list[str]:
    """The names of every backend registered (entry points and register_backend)."""
    with _LOCK:
        return sorted(set(_entry_points()) | set(_added))


def register_backend(name: str, factory: Callable) -> None:
    """Register a backend in this process: `factory()` returns the backend object."""
    with _LOCK:
        _added[name] = factory
        _loaded.pop(name, None)


def reset() -> None:
    """Forget loaded backend instances and backends added with register_backend."""
    with _LOCK:
        _loaded.clear()
        _added.clear()


def get_backend(name: str):
    """The backend object registered as `name` (loaded once per process)."""
    with _LOCK:
        b = _loaded.get(name)
        if b is not None:
            return b
        if name in _added:
            factory, where = _added[name], "register_backend"
        else:
            eps = _entry_points()
            if name not in eps:
                raise BackendError(f"unknown backend '{name}': no entry point named '{name}' in the group "
                                   f"'{GROUP}'; available: {', '.join(available())}")
            target, dist = eps[name]
            where = f"entry point {name} = {target}" + (f" (from {dist})" if dist else "")
            try:
                factory = _load_target(target)
            except Exception as e:
                raise BackendError(f"backend '{name}' failed to load ({where}): {type(e).__name__}: {e}; "
                                   f"available: {', '.join(available())}") from e
        try:
            b = factory() if callable(factory) else factory
        except Exception as e:
            raise BackendError(f"backend '{name}' failed to start ({where}): {type(e).__name__}: {e}; "
                               f"available: {', '.join(available())}") from e
        missing = [m for m in ("compile",) if not callable(getattr(b, m, None))]
        if missing:
            raise BackendError(f"backend '{name}' ({where}) is not a backend: it has no "
                               f"{', '.join(missing)}() method; available: {', '.join(available())}")
        _loaded[name] = b
        return b


def _load_target(target: str):
    import importlib
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj
