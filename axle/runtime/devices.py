"""Devices. The CPU backend exposes N devices on one host (for sharding tests and SPMD on
several cores): the count comes from `set_cpu_device_count(n)`, else from
AXLE_FLAGS=--cpu_device_count=N, else 1. `axle.devices(backend)` lists a backend's devices."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

_cpu_count: Optional[int] = None


@dataclass(frozen=True)
class Device:
    """One device of a backend's platform: `cpu:0`, ..."""
    platform: str
    id: int

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"


def set_cpu_device_count(n: int) -> None:
    """How many CPU devices the cpu backend exposes in this process."""
    if n < 1:
        raise ValueError(f"cpu device count must be at least 1, got {n}")
    global _cpu_count
    _cpu_count = n


def cpu_device_count_override() -> Optional[int]:
    return _cpu_count
