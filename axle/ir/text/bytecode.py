"""MLIR bytecode in: StableHLO portable artifacts (VHLO, what `jax.export` serializes and
`stablehlo.serialize_portable_artifact` writes) and plain MLIR bytecode.

axle has no bytecode reader of its own: the bytes go through jaxlib's deserializer (the
StableHLO project's, which upgrades VHLO of any version from the minimum it supports up to
its own), which prints StableHLO text that axle's parser reads. jaxlib is optional
(`pip install axle[jax]`); without it, `parse_bytecode` says so.

Version skew: an artifact may be read when its version lies between jaxlib's
`get_minimum_version()` and `get_current_version()`. One written by a newer StableHLO than
the installed jaxlib's is refused with BytecodeError naming both versions (upgrade jaxlib, or
have the producer target an older version: `serialize_portable_artifact(text, "1.x.y")`);
one older than the minimum likewise. Nothing is guessed.
"""
from __future__ import annotations

import re
from typing import Optional

from axle.ir.text.cursor import ParseError
from axle.ir.text.reader import parse_module

_VERSION = re.compile(rb"StableHLO_v(\d+)\.(\d+)\.(\d+)")
MLIR_BYTECODE_MAGIC = b"ML\xefR"


class BytecodeError(ParseError):
    """Bytes that are not MLIR bytecode, or a StableHLO artifact this jaxlib cannot read
    (see the module docstring on version skew)."""

    def __init__(self, message: str):
        Exception.__init__(self, message)
        self.message, self.filename, self.line, self.col, self.source_line = message, None, 0, 0, ""

    def __str__(self) -> str:
        return self.message


def artifact_version(data: bytes) -> Optional[tuple]:
    """The StableHLO version a portable artifact was written for ((1, 15, 0)), or None."""
    m = _VERSION.search(bytes(data[:4096]))
    return tuple(int(g) for g in m.groups()) if m else None


def _jaxlib():
    try:
        from jax._src.interpreters import mlir as jax_mlir
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo
    except ImportError as e:
        raise ImportError("axle.ir.parse_bytecode: reading MLIR bytecode needs jaxlib "
                          "(pip install 'axle[jax]'); MLIR text needs nothing") from e
    return jax_mlir, ir, stablehlo


def bytecode_to_text(data: bytes, name: str = "<bytecode>") -> str:
    """StableHLO text (no locations) of a portable artifact or of plain MLIR bytecode."""
    data = bytes(data)
    if not data.startswith(MLIR_BYTECODE_MAGIC):
        raise BytecodeError(f"{name}: not MLIR bytecode (expected the magic bytes 'ML\\xefR', "
                            f"found {data[:4]!r}); for MLIR text use axle.ir.parse_module")
    jax_mlir, ir, stablehlo = _jaxlib()
    version = artifact_version(data)
    ctx = jax_mlir.make_ir_context()
    if version is not None:
        current = tuple(int(x) for x in stablehlo.get_current_version().split("."))
        minimum = tuple(int(x) for x in stablehlo.get_minimum_version().split("."))
        if version > current or version < minimum:
            v = ".".join(map(str, version))
            raise BytecodeError(
                f"{name}: StableHLO artifact of version {v}, but the installed jaxlib reads versions "
                f"{stablehlo.get_minimum_version()} to {stablehlo.get_current_version()}; "
                + ("upgrade jaxlib, or serialize for an older target version"
                   if version > current else "re-export it with a newer StableHLO"))
        try:
            module = stablehlo.deserialize_portable_artifact(ctx, data)
        except Exception as e:
            raise BytecodeError(f"{name}: jaxlib could not read this StableHLO {'.'.join(map(str, version))} "
                                f"artifact: {e}") from e
    else:
        try:
            with ctx:
                module = ir.Module.parse(data)
        except Exception as e:
            raise BytecodeError(f"{name}: jaxlib could not read this MLIR bytecode: {e}") from e
    return module.operation.get_asm(enable_debug_info=False)


def parse_bytecode(data: bytes, name: str = "<bytecode>"):
    """An axle.ir.Module from MLIR bytecode or a StableHLO portable artifact (bytes)."""
    return parse_module(bytecode_to_text(data, name), name)
