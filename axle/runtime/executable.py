"""The runtime's executable: Buffers in, Buffers out (PJRT's PjRtLoadedExecutable).

    exe = axle.client().compile(text, donate_argnums=(0,))
    outs = exe.execute([axle.device_put(x), w])     # numpy arrays or Buffers -> list of Buffers
    outs = exe.execute_async([...])                 # returns at once; the Buffers fill in later
    y = exe(x, w)                                   # numpy in, numpy out (one array or a tuple)

It wraps a backend executable (whose `execute(arrays, donate=())` takes and returns numpy
arrays; that is what `axle.compile` returns). A Buffer passed at a donated position gives
its memory to the execution: the output aliased to it is written there and the Buffer is
marked deleted. A numpy array passed there is copied first (the caller keeps it).
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Optional, Sequence

import numpy as np

from axle.runtime.buffer import Buffer, BufferDeletedError


class Executable:
    """A compiled function loaded on one device."""

    def __init__(self, backend_executable, client, device, entry: str = "main",
                 donated: Sequence[int] = (), result_specs: Optional[list] = None):
        self.backend_executable = backend_executable
        self.client = client
        self.device = device
        self.entry = entry
        self.donated = frozenset(donated)  # argument positions the caller gives up
        self._result_specs = result_specs  # [(shape, dtype) or None] for pending Buffers

    @property
    def input_output_aliases(self) -> dict:
        """{result k: argument j}: outputs written into a donated argument's memory."""
        return dict(getattr(self.backend_executable, "aliases", {}) or {})

    def __getattr__(self, name):  # program, loaded_from_disk, kernel_durations, ...
        if name.startswith("__") or name == "backend_executable":
            raise AttributeError(name)
        return getattr(self.backend_executable, name)

    # -- running
    def _arrays(self, args) -> tuple[list, list]:
        """numpy arrays for the backend, and the donated Buffers (not yet marked)."""
        arrays, donated = [], []
        for i, a in enumerate(args):
            if isinstance(a, Buffer):
                try:
                    arrays.append(a._value())
                except BufferDeletedError as e:
                    raise BufferDeletedError(f"argument {i} of @{self.entry}: {e}") from None
                if i in self.donated:
                    donated.append((i, a))
            else:
                arrays.append(a)
        return arrays, donated

    def _run(self, arrays: list, donated: list) -> list:
        aliased = set(self.input_output_aliases.values())
        give = tuple(i for i, _ in donated if i in aliased)
        if give:
            outs = self.backend_executable.execute(arrays, donate=give)
        else:
            outs = self.backend_executable.execute(arrays)
        for i, b in donated:
            b._deleted = f"donated to argument {i} of @{self.entry}"
            b._array = None
        return outs

    def execute(self, args: Sequence) -> list:
        """Run on numpy arrays or Buffers; returns one Buffer per result."""
        device = self.device
        if not self.donated:  # the common case, kept short: no donation bookkeeping
            try:
                arrays = [a._value() if type(a) is Buffer else a for a in args]
            except BufferDeletedError:
                arrays, _ = self._arrays(args)  # raises, naming the argument
            return [Buffer._wrap(o, device) for o in self.backend_executable.execute(arrays)]
        arrays, donated = self._arrays(args)
        return [Buffer._wrap(o, device) for o in self._run(arrays, donated)]

    def execute_async(self, args: Sequence) -> list:
        """Queue the execution on the device's queue and return its output Buffers at once.
        Executions on one device run in the order they were queued; reading an output
        (np.asarray, block_until_ready, passing it to execute) waits for it. Donated Buffers
        are marked deleted now; an error surfaces when an output is read."""
        args = list(args)
        for i, a in enumerate(args):
            if isinstance(a, Buffer) and a.is_deleted:
                raise BufferDeletedError(f"argument {i} of @{self.entry}: {a!r} was {a._deleted}")
        for i, a in enumerate(args):  # the task keeps donated values; the caller's Buffers are deleted now
            if isinstance(a, Buffer) and i in self.donated:
                args[i] = a._detach(f"donated to argument {i} of @{self.entry} (execute_async)")

        def task():
            arrays, donated = self._arrays(args)
            return self._run(arrays, donated)
        fut: Future = self.client._submit(self.device, task)
        specs = self._result_specs or []
        outs = []
        for k in range(len(specs)):
            shape, dtype = specs[k] if specs[k] is not None else (None, None)
            if shape is None:  # a dynamic result: its shape is known when the call is done
                outs.append(Buffer(fut.result()[k], self.device))
            else:
                outs.append(Buffer(None, self.device, future=fut, index=k, shape=shape, dtype=dtype))
        return outs

    def __call__(self, *args):
        """numpy in, numpy out: one array, or a tuple for several results."""
        arrays, _ = self._arrays(args)
        out = self.backend_executable.execute(arrays)
        return out[0] if len(out) == 1 else tuple(out)


def result_specs(fn) -> list:
    """[(shape, dtype)] of a function's results (None for a dynamic one)."""
    from axle.ir.types import TensorType
    out = []
    for t in fn.function_type.results:
        out.append((tuple(t.shape), np.dtype(t.dtype)) if isinstance(t, TensorType) and t.is_static else None)
    return out


class CallableExecutable:
    """A backend executable that has only `execute` (the plugin protocol's minimum), given
    `__call__` as axle.compile promises: numpy in, one array or a tuple out."""

    def __init__(self, inner):
        self.backend_executable = inner

    def __getattr__(self, name):
        if name.startswith("__") or name == "backend_executable":
            raise AttributeError(name)
        return getattr(self.backend_executable, name)

    def execute(self, args, donate=()):
        if donate:
            return self.backend_executable.execute(args, donate=donate)
        return self.backend_executable.execute(args)

    def __call__(self, *args):
        out = self.execute(list(args))
        return out[0] if len(out) == 1 else tuple(out)
