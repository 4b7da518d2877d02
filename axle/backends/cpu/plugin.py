"""The CPU backend as a plugin (entry point `cpu` in the group axle.backends)."""
from __future__ import annotations


class CpuBackend:
    name = "cpu"
    platform = "cpu"

    def device_count(self) -> int:
        from axle.flags import parse_flags
        return parse_flags()["cpu_device_count"]

    def compile(self, module, entry: str = "main", options: dict = None):
        from axle.backends.cpu import compile as cpu_compile
        return cpu_compile(module, entry, **dict(options or {}))

    def serialize(self, executable) -> tuple:
        from axle.backends.cpu.artifact import serialize
        return serialize(executable)

    def deserialize(self, header: dict, payload: bytes):
        from axle.backends.cpu.artifact import deserialize
        return deserialize(header, payload)
