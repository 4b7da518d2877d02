"""Python's cyclic garbage collector paused while a program is generated.

Code generation builds tens of thousands of small objects (llvmlite instructions, names,
index expressions); each 700 allocations start a collection, and every few of those walk
the whole heap, which in a process with JAX or PyTorch loaded holds millions of objects.
Measured on `axle bench`'s workloads: 5-8% of a cold compile's CPU time. What code
generation leaves behind (cycles between llvmlite values and their blocks) is collected
by the next collection after the pause. Threads may compile at once: the collector runs
again when the last of them is done, and is left alone where the caller had turned it off.
"""
from __future__ import annotations

import contextlib
import gc

from axle import forks

_LOCK = forks.lock()  # (unlocked again in a forked child)
_state = {"depth": 0, "restore": False}


def _after_fork_in_child() -> None:
    """A child forked while another thread generated code: no compile runs here any more."""
    if _state["depth"] and _state["restore"]:
        gc.enable()
    _state["depth"], _state["restore"] = 0, False


forks.after_in_child(_after_fork_in_child)


@contextlib.contextmanager
def paused():
    with _LOCK:
        if _state["depth"] == 0:
            _state["restore"] = gc.isenabled()
            gc.disable()
        _state["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _state["depth"] -= 1
            if _state["depth"] == 0 and _state["restore"]:
                gc.enable()
