"""Tracing what axle does: compile phases and executions, as a Chrome trace.

    import axle, axle.profiler
    with axle.profiler.trace("trace.json"):
        ex = axle.compile(text, backend="cpu", profile=True)
        ex(*args)
    # open trace.json in https://ui.perfetto.dev or chrome://tracing

While a trace is active it records, each as a complete ("ph": "X") event:

  compile   `parse`; every pass the PassManager runs (inside its `pipeline` event, fixed-point
            groups around their passes); `codegen` (compile_function); `llvm.parse`,
            `llvm.optimize`, `llvm.object` (compile_to_object) and `llvm.link` (the JIT)
  execute   every call of a CPU executable; for one compiled with `profile=True`, one event
            per top-level kernel per call, nested inside the call, with the kernel's op,
            source location, shape, fused op count, bytes moved, flops and library routine

The trace file is `{"traceEvents": [...], "displayTimeUnit": "ns"}` with `ts`/`dur` in
microseconds (the format's unit) since the trace began.

Hooks: `ACTIVE` is the profiler being recorded into, or None. Instrumented code reads it
(one module attribute) and does nothing more when it is None, so an untraced program pays
nothing else. All times come from one clock, CLOCK_MONOTONIC in nanoseconds (`now_ns`),
the clock the profiled native code reads too (clock_gettime), so native kernel events
line up with the Python-side call events.

This module imports nothing heavy: it is imported by the parser, the pass manager and
the backends.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from typing import Iterator, Optional

from axle import forks

ACTIVE: Optional["Profiler"] = None  # the profiler being recorded into, or None

if hasattr(time, "clock_gettime_ns") and hasattr(time, "CLOCK_MONOTONIC"):
    CLOCK_ID: Optional[int] = time.CLOCK_MONOTONIC

    def now_ns() -> int:
        """CLOCK_MONOTONIC in nanoseconds: the clock profiled native code reads."""
        return time.clock_gettime_ns(CLOCK_ID)
else:  # pragma: no cover - no clock_gettime (Windows): no native kernel timing either
    CLOCK_ID = None
    now_ns = time.perf_counter_ns


class Profiler:
    """The events of one trace. Times are CLOCK_MONOTONIC nanoseconds (`now_ns`)."""

    def __init__(self):
        self.start_ns = now_ns()
        self.pid = os.getpid()
        self.events: list[dict] = []  # complete events with absolute ns times (converted on output)
        self._tids: dict[int, int] = {}
        self._lock = forks.lock()

    # -- recording
    def _tid(self) -> int:
        ident = threading.get_ident()
        tid = self._tids.get(ident)
        if tid is None:
            with self._lock:
                tid = self._tids.setdefault(ident, len(self._tids) + 1)
            name = threading.current_thread().name
            self.events.append({"ph": "M", "name": "thread_name", "pid": self.pid, "tid": tid,
                                "args": {"name": name}})
        return tid

    def complete(self, name: str, cat: str, start_ns: int, end_ns: int, args: Optional[dict] = None) -> None:
        """Record one complete event on the calling thread's track."""
        ev = {"name": name, "cat": cat, "ph": "X", "ns": (int(start_ns), int(end_ns)),
              "pid": self.pid, "tid": self._tid()}
        if args:
            ev["args"] = args
        self.events.append(ev)  # list.append is atomic: threads may record concurrently

    @contextlib.contextmanager
    def span(self, name: str, cat: str = "compile", **args) -> Iterator[dict]:
        """Record the time the block takes; the yielded dict becomes (more of) its args."""
        extra: dict = dict(args)
        t0 = now_ns()
        try:
            yield extra
        finally:
            self.complete(name, cat, t0, now_ns(), {k: _jsonable(v) for k, v in extra.items() if v is not None})

    def execute(self, executable, args) -> list:
        """Run `executable` (a CPU executable without native profiling) and record the call."""
        t0 = now_ns()
        out = executable.execute(args, _traced=True)
        t1 = now_ns()
        self.complete(f"execute @{executable.entry}", "execute", t0, t1, call_args(args))
        return out

    # -- queries
    def complete_events(self, cat: Optional[str] = None) -> list[dict]:
        return [e for e in self.events if e["ph"] == "X" and (cat is None or e["cat"] == cat)]

    # -- output
    def chrome_trace(self) -> dict:
        """The trace as Chrome's trace event format (a dict ready for json.dump)."""
        out = [{"ph": "M", "name": "process_name", "pid": self.pid, "tid": 0, "args": {"name": "axle"}}]
        for e in self.events:
            if e["ph"] != "X":
                out.append(e)
                continue
            t0, t1 = e["ns"]
            ev = {k: v for k, v in e.items() if k != "ns"}
            ev["ts"] = round((t0 - self.start_ns) / 1e3, 3)
            ev["dur"] = round(max(t1 - t0, 0) / 1e3, 3)
            out.append(ev)
        return {"traceEvents": out, "displayTimeUnit": "ns",
                "otherData": {"tool": "axle.profiler", "clock": "CLOCK_MONOTONIC"}}

    def write(self, path: str) -> None:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.chrome_trace(), fh)


def call_args(args) -> dict:
    """Event args describing the arguments of a call (dtype and shape of each)."""
    out = []
    for a in args:
        shape = getattr(a, "shape", None)
        dtype = getattr(a, "dtype", None)
        out.append(f"{dtype}{list(shape)}" if shape is not None else type(a).__name__)
    return {"arguments": out}


def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    try:  # numpy scalars
        return v.item()
    except AttributeError:
        return str(v)


class _Untraced:
    """What `phase` returns when no trace is active: does nothing, yields a throwaway dict."""

    def __enter__(self) -> dict:
        return {}

    def __exit__(self, *exc) -> bool:
        return False


_NULL = _Untraced()


def phase(name: str, cat: str = "compile", **args):
    """A context manager recording the block as an event when a trace is active (else nothing).
    It yields a dict: keys put in it become args of the event."""
    p = ACTIVE
    if p is None:
        return _NULL
    return p.span(name, cat, **args)


def current() -> Optional[Profiler]:
    """The profiler being recorded into, or None."""
    return ACTIVE


@contextlib.contextmanager
def trace(path: Optional[str] = None) -> Iterator[Profiler]:
    """Record compile phases and executions while the block runs; write them to `path` (a
    Chrome trace JSON file) at the end, when given. Yields the Profiler. Traces nest: the
    inner one records alone until it ends."""
    global ACTIVE
    prof = Profiler()
    prev = ACTIVE
    ACTIVE = prof
    try:
        yield prof
    finally:
        ACTIVE = prev
        if path:
            prof.write(path)


def _parse_phase(filename, chars):
    """The hook axle.ir.text.reader calls around each parse: a trace records it."""
    return None if ACTIVE is None else phase("parse", file=filename, chars=chars)


from axle.ir.text import reader as _reader  # noqa: E402  (the IR does not import the profiler)

_reader.set_parse_hook(_parse_phase)

__all__ = ["ACTIVE", "Profiler", "current", "now_ns", "phase", "trace"]
