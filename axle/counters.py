"""Process-wide counters of the runtime: compiles, cache hits and misses, executions.

    axle.metrics()           # {'compiles': 3, 'memory_cache_hits': 5, ..., 'compile_seconds': 1.9}
    axle.reset_metrics()     # back to zero (tests)

Every layer that compiles or runs counts here (this module imports nothing of axle, so
the backends can use it). Counters are updated under one lock: exact under threads.
"""
from __future__ import annotations

import threading

_LOCK = threading.Lock()

# name -> help (the keys of axle.metrics(), in this order)
COUNTERS = {
    "compiles": "compile requests through axle.compile / client.compile (each is logged once)",
    "memory_cache_hits": "native programs found in this process's memory cache",
    "memory_cache_misses": "native programs not in memory (then looked up on disk)",
    "disk_cache_hits": "native programs loaded from the persistent disk cache (no LLVM)",
    "disk_cache_misses": "native programs not on disk (then generated and compiled by LLVM)",
    "native_compiles": "programs generated and compiled to object code by LLVM",
    "compile_seconds": "seconds spent in compile requests (cache hits included)",
    "llvm_seconds": "seconds spent generating and compiling native programs (misses only)",
    "executions": "calls of compiled executables (execute, execute_async, __call__)",
    "donated_buffers": "input buffers whose memory became an output's (no copy)",
    "aot_saves": "executables written with axle.save",
    "aot_loads": "executables read with axle.load",
}

_values: dict = {}


def reset() -> None:
    """Set every counter to zero."""
    with _LOCK:
        for k in COUNTERS:
            _values[k] = 0.0 if k.endswith("seconds") else 0


reset()


def add(name: str, amount=1) -> None:
    with _LOCK:
        _values[name] += amount


def snapshot() -> dict:
    """A copy of the counters (see COUNTERS for what each one counts)."""
    with _LOCK:
        return dict(_values)


# --explain_cache_misses: the key components of recent compiles, per entry function
_HISTORY: dict = {}
_HISTORY_LEN = 16


def explain_miss(entry: str, components: dict) -> str:
    """Record a cache miss of `entry` with its key `components` ({name: value}); return a
    sentence naming the components that differ from the closest earlier key of the same
    entry (the one differing in the fewest), or saying there was none."""
    with _LOCK:
        earlier = list(_HISTORY.get(entry, ()))
        _HISTORY.setdefault(entry, []).append(dict(components))
        del _HISTORY[entry][:-_HISTORY_LEN]
    if not earlier:
        return f"cache miss for @{entry}: first compile of this entry in this process"
    best = min(earlier, key=lambda c: sum(c.get(k) != v for k, v in components.items()))
    changed = [k for k, v in components.items() if best.get(k) != v]
    if not changed:
        return f"cache miss for @{entry}: same key as an earlier compile (evicted or compiled concurrently)"
    parts = [f"{k} ({_short(best.get(k))} -> {_short(components[k])})" for k in changed]
    return f"cache miss for @{entry}: differs from the closest earlier compile in " + "; ".join(parts)


def _short(v, n: int = 80) -> str:
    s = str(v)
    return s if len(s) <= n else s[:n - 3] + "..."
