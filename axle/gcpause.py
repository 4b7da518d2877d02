"""Python's cyclic garbage collector held off while axle compiles.

A compile allocates hundreds of thousands of small objects (IR operations, llvmlite values,
strings) that are mostly alive until it ends. CPython 3.11's collector runs a full
collection of every tracked object in the process each time enough of them have survived
the younger generations; in a process that has imported JAX or PyTorch that is 150,000+
objects, traversed several times per compile. Measured on the mini-GPT training step
(benchmarks/results/compile.md, round 3): 0.82-0.85 s with the collector paused against
0.99-1.06 s with it running; smaller programs gain less.

`paused()` disables automatic collection from the first compile that enters until the last
one leaves (nested and concurrent compiles share one count) and puts the collector back as
it was, so a program that turned it off itself keeps it off. Garbage cycles made during the
compile are collected by the next automatic collection after it.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator

from axle import forks

_LOCK = forks.lock()
_DEPTH = 0
_WAS_ENABLED = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _DEPTH, _WAS_ENABLED
    with _LOCK:
        if _DEPTH == 0:
            _WAS_ENABLED = gc.isenabled()
            gc.disable()
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0 and _WAS_ENABLED:
                gc.enable()
