"""Devices. The CPU backend exposes N devices on one host (for sharding tests and SPMD on
several cores): the count comes from `set_cpu_device_count(n)`, else from
AXLE_FLAGS=--cpu_device_count=N, else 1."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

_cpu_count: Optional[int] = None


@dataclass(frozen=True)
class Device:
    platform: str
    id: int

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"


def set_cpu_device_count(n: int) -> None:
    if n < 1:
        raise ValueError(f"cpu device count must be at least 1, got {n}")
    global _cpu_count
    _cpu_count = n


def devices(platform: str = "cpu") -> list[Device]:
    """The devices of a platform. Only 'cpu' exists so far; 'gpu' says so."""
    if platform == "cpu":
        n = _cpu_count
        if n is None:
            from axle.flags import parse_flags
            n = parse_flags()["cpu_device_count"]
        return [Device("cpu", i) for i in range(n)]
    if platform in ("gpu", "cuda"):
        raise RuntimeError("no GPU backend is available in this build of axle; use platform='cpu'")
    raise ValueError(f"unknown platform '{platform}'; known: cpu")
