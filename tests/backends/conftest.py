"""Fixtures for the CPU backend's tests."""
import importlib

import pytest


@pytest.fixture
def calls_of(monkeypatch):
    """calls_of("axle.backends.cpu.module", "function") -> a list that gets one entry (the
    function's return value) per call while the test runs; compiles skip the disk cache and
    find the in-memory cache empty, so that the code is emitted here. For tests that must
    exercise one kernel path."""
    from axle.backends.cpu import executable
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    executable.clear_memory_cache()

    def watch(module: str, name: str) -> list:
        mod = importlib.import_module(module)
        real = getattr(mod, name)
        seen: list = []

        def counted(*a, **k):
            r = real(*a, **k)
            seen.append(r)
            return r
        monkeypatch.setattr(mod, name, counted)
        return seen
    return watch
