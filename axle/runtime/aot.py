"""Ahead-of-time artifacts: `axle.save(executable, path)`, `axle.load(path)`, and
`axle compile model.mlir -o model.axle`.

File format (not pickle; the layout of the disk cache's entries, another magic):

    b"AXLEAOT1" | u32 header length | header: UTF-8 JSON | payload | sha256 of all before

The header holds the format version, the axle version, the backend's name, the entry,
the donated argument positions, the payload's size and sha256, and the backend's own
header (cpu: target triple, CPU name and features, argument and result types, arena size,
aliases, object sizes). The payload is the backend's (cpu: the program's object code and
the thread pool runtime's). Loading checks magic, sizes, both digests and the version
before anything is linked; a foreign, truncated or modified file raises ArtifactError
naming the file and what is wrong. The backend then checks the host (cpu: features).
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import time

from axle import counters as _metrics

MAGIC = b"AXLEAOT1"
FORMAT_VERSION = 1


class ArtifactError(ValueError):
    """A file that is not a valid axle artifact (foreign, truncated, modified, another
    format version) or one built for another host. Fix: recompile with `axle compile
    model.mlir -o model.axle` (or axle.save) with this version of axle, on this host."""


def pack(header: dict, payload: bytes) -> bytes:
    """The bytes of an artifact (header gets the payload's size and digest)."""
    header = dict(header, payload_size=len(payload), payload_sha256=hashlib.sha256(payload).hexdigest())
    hbytes = json.dumps(header, sort_keys=True).encode("utf-8")
    body = MAGIC + struct.pack("<I", len(hbytes)) + hbytes + payload
    return body + hashlib.sha256(body).digest()


def unpack(data: bytes, path: str = "<bytes>") -> tuple[dict, bytes]:
    """(header, payload), or ArtifactError saying what is wrong with the file."""
    if not data.startswith(MAGIC):
        if MAGIC.startswith(data[:len(MAGIC)]) and len(data) < len(MAGIC):
            raise ArtifactError(f"{path}: truncated: {len(data)} bytes, not even the header")
        raise ArtifactError(f"{path}: not an axle artifact (it starts with {data[:8]!r}, expected {MAGIC!r})")
    start = len(MAGIC) + 4
    if len(data) < start + 32:
        raise ArtifactError(f"{path}: truncated: {len(data)} bytes")
    (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
    if start + hlen + 32 > len(data):
        raise ArtifactError(f"{path}: truncated: {len(data)} bytes, its header alone needs {start + hlen + 32}")
    try:
        header = json.loads(data[start:start + hlen].decode("utf-8"))
        size = int(header["payload_size"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        header, size = None, -1
    if header is not None and start + hlen + size + 32 != len(data):
        what = "truncated" if start + hlen + size + 32 > len(data) else "has extra bytes"
        raise ArtifactError(f"{path}: {what}: {len(data)} bytes, expected {start + hlen + size + 32}")
    body, digest = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != digest:
        raise ArtifactError(f"{path}: corrupted: its sha256 does not match (the file was modified or damaged)")
    if not isinstance(header, dict):
        raise ArtifactError(f"{path}: malformed header")
    if header.get("format") != FORMAT_VERSION:
        raise ArtifactError(f"{path}: artifact format version {header.get('format')}; this axle reads "
                            f"version {FORMAT_VERSION}: recompile it")
    payload = body[start + hlen:]
    if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
        raise ArtifactError(f"{path}: corrupted: the payload's sha256 does not match its header")
    return header, payload


def save(executable, path: str) -> None:
    """Write a compiled executable (from axle.compile or client.compile) to `path`."""
    from axle.version import __version__
    from axle.runtime.registry import get_backend
    exe = getattr(executable, "backend_executable", executable)
    backend_name = "cpu" if type(exe).__name__ in ("CpuExecutable", "LoadedCpuExecutable") else \
        getattr(exe, "backend_name", None)
    backend = get_backend(backend_name or "cpu")
    if not callable(getattr(backend, "serialize", None)):
        raise ArtifactError(f"backend '{backend_name}' cannot save executables")
    try:
        bheader, payload = backend.serialize(exe)
    except ValueError as e:  # the backend's own ArtifactError
        raise ArtifactError(f"cannot save to {path}: {e}") from e
    donated = sorted(getattr(executable, "donated", None) or set(getattr(exe, "aliases", {}).values()))
    header = {"format": FORMAT_VERSION, "axle": __version__, "backend": backend.name,
              "entry": bheader.get("entry", "main"), "donated": donated, "backend_header": bheader}
    data = pack(header, payload)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
    _metrics.add("aot_saves")


def load_backend_executable(path: str, backend_name=None):
    """(backend executable, info) from an artifact file."""
    from axle.runtime.registry import get_backend
    with open(path, "rb") as fh:
        data = fh.read()
    header, payload = unpack(data, path)
    name = header.get("backend")
    if backend_name is not None and backend_name != name:
        raise ArtifactError(f"{path}: built for backend '{name}', not '{backend_name}'")
    backend = get_backend(name)
    if not callable(getattr(backend, "deserialize", None)):
        raise ArtifactError(f"{path}: backend '{name}' cannot load executables")
    try:
        exe = backend.deserialize(header["backend_header"], payload)
    except ValueError as e:  # the backend's own ArtifactError: name the file
        raise ArtifactError(f"{path}: {e}") from e
    bh = header["backend_header"]
    specs = [(tuple(s), _dtype(e)) for e, s in bh.get("result_types", [])] or None
    _metrics.add("aot_loads")
    return exe, {"entry": header.get("entry", "main"), "donated": header.get("donated", []), "result_specs": specs}


def _dtype(name: str):
    import numpy as np

    from axle.ir.types import element_type
    return np.dtype(element_type(name).dtype)


def load(path: str):
    """An executable saved with axle.save: call it with numpy arrays (as axle.compile's)."""
    t0 = time.perf_counter()
    exe, _ = load_backend_executable(path)
    exe.load_seconds = time.perf_counter() - t0
    return exe
