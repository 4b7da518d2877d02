"""Clients and devices: PJRT's PjRtClient, one per backend.

    c = axle.client()                 # the default backend's client ("cpu")
    c.devices()                       # [Device(platform='cpu', id=0)]
    exe = c.compile(text)             # an axle.runtime.Executable (Buffers in and out)
    b = axle.device_put(x, c.devices()[0])
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import numpy as np

from axle import counters as _metrics
from axle import gcpause
from axle.runtime.buffer import Buffer
from axle.runtime.devices import Device
from axle.runtime.options import CompileOptions
from axle.runtime.registry import get_backend

DEFAULT_BACKEND = "cpu"
_log = logging.getLogger("axle.compile")
_CLIENTS: dict = {}
_LOCK = threading.Lock()


class Client:
    """The runtime of one backend: its devices, compiles, and per-device execution queues."""

    def __init__(self, backend: str):
        self.backend_name = backend
        self.backend = get_backend(backend)
        self.platform = getattr(self.backend, "platform", backend)
        self._queues: dict = {}
        self._qlock = threading.Lock()

    def __repr__(self) -> str:
        return f"Client(backend={self.backend_name!r}, devices={len(self.devices())})"

    def devices(self) -> list:
        from axle.runtime.devices import cpu_device_count_override
        count = getattr(self.backend, "device_count", None)
        n = count() if callable(count) else 1
        if self.platform == "cpu" and cpu_device_count_override() is not None:
            n = cpu_device_count_override()
        return [Device(self.platform, i) for i in range(n)]

    def _device(self, options: CompileOptions) -> Device:
        devs = self.devices()
        ids = list(options.device_assignment or [0])
        if len(ids) != 1:
            raise ValueError(f"device_assignment {ids}: an executable runs on one device; compile one "
                             f"per device")
        if not 0 <= ids[0] < len(devs):
            raise ValueError(f"device_assignment {ids}: backend '{self.backend_name}' has "
                             f"{len(devs)} device(s)")
        return devs[ids[0]]

    def compile(self, module, options: Optional[CompileOptions] = None, **kw):
        """Compile StableHLO text or an axle.ir.Module; returns an axle.runtime.Executable."""
        from axle.runtime.executable import Executable, result_specs
        if options is None:
            options = CompileOptions.from_kwargs(backend=self.backend_name, **kw)
        options.backend = self.backend_name
        device = self._device(options)
        exe, fn, donated = compile_backend(module, options, self.backend)
        return Executable(exe, self, device, options.entry, donated, result_specs(fn))

    def load(self, path: str):
        """An executable saved with axle.save, as an axle.runtime.Executable."""
        from axle.runtime.aot import load_backend_executable
        from axle.runtime.executable import Executable
        exe, info = load_backend_executable(path, self.backend_name)
        return Executable(exe, self, self.devices()[0], info["entry"], info["donated"], info["result_specs"])

    def buffer_from_pyval(self, array, device: Optional[Device] = None):
        return device_put(array, device or self.devices()[0])

    def _submit(self, device: Device, fn):
        with self._qlock:
            q = self._queues.get(device)
            if q is None:  # one worker per device: executions on it run in queue order
                q = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"axle-{device}")
                self._queues[device] = q
        return q.submit(fn)


def client(backend: Optional[str] = None) -> Client:
    """The client of a backend (default "cpu"), made once per process."""
    name = backend or DEFAULT_BACKEND
    with _LOCK:
        c = _CLIENTS.get(name)
        if c is None:
            c = _CLIENTS[name] = Client(name)
        return c


def devices(backend: Optional[str] = None) -> list:
    """The devices of a backend (default "cpu")."""
    return client(backend).devices()


def reset_clients() -> None:
    with _LOCK:
        _CLIENTS.clear()


def compile_backend(module, options: CompileOptions, backend=None):
    """The one entry point of every compile (axle.compile and Client.compile): parse, find
    the backend, work out the donations, compile, count (axle.metrics) and log one line on
    the logger 'axle.compile'. Returns (backend executable, function op, donated positions)."""
    from axle.runtime.donation import donated_arguments, requested_aliases
    t0 = time.perf_counter()
    name = options.backend or DEFAULT_BACKEND
    _metrics.add("compiles")
    ok = False
    try:
        with gcpause.paused():  # (a full collection per few thousand IR objects: axle/gcpause.py)
            if isinstance(module, str):
                from axle.ir import parse_module
                module = parse_module(module)
            if backend is None:
                backend = get_backend(name)
            fn = module.function(options.entry)
            aliases = requested_aliases(fn, options.donate_argnums)
            donated = donated_arguments(fn, options.donate_argnums)
            before = _metrics.snapshot()
            exe = backend.compile(module, options.entry, options.to_backend(aliases))
            after = _metrics.snapshot()
        ok = True
    finally:
        dt = time.perf_counter() - t0
        _metrics.add("compile_seconds", dt)
        if not ok:
            _log.info("compile @%s on %s: failed after %.3f s", options.entry, name, dt)
    how = ("compiled by LLVM" if after["native_compiles"] > before["native_compiles"] else
           "disk cache" if after["disk_cache_hits"] > before["disk_cache_hits"] else
           "memory cache" if after["memory_cache_hits"] > before["memory_cache_hits"] else "")
    got = getattr(exe, "aliases", None) or {}
    _log.info("compile @%s on %s: %.3f s%s%s", options.entry, name, dt, f" ({how})" if how else "",
              f"; aliases {got} of requested {aliases}" if aliases else "")
    return exe, fn, donated


def device_put(array, device=None) -> Buffer:
    """Put an array on a device (default: the first device of the default backend).
    On the CPU the Buffer keeps a C-contiguous copy of the array (it owns its memory, so it
    can be donated; `np.asarray(buffer)` then reads it without a copy)."""
    if isinstance(array, Buffer):
        array = array.to_numpy()
    if device is None:
        device = client().devices()[0]
    return Buffer(np.array(array, order="C", copy=True), device)


def compile_callable(module, backend: str = "cpu", entry: str = "main", **options):
    """`axle.compile`: the backend's executable, callable with numpy arrays (a plugin's
    executable with only execute() gets wrapped)."""
    from axle.runtime.options import CompileOptions
    exe, _, _ = compile_backend(module, CompileOptions.from_kwargs(backend=backend, entry=entry, **options))
    if not callable(exe):  # a plugin's executable with only execute()
        from axle.runtime.executable import CallableExecutable
        exe = CallableExecutable(exe)
    return exe
