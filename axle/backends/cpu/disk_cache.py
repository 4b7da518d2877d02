"""The persistent compilation cache: native object code on disk, keyed by what made it.

Where: `AXLE_CACHE_DIR` (default `$XDG_CACHE_HOME/axle` or `~/.cache/axle`); set it to
`off` (or `0`, or empty) to turn the cache off. Size cap: `AXLE_CACHE_MAX_BYTES` (default
1 GiB), enforced after every store by evicting the least recently used entries (a hit
touches its file's modification time).

Key: sha256 over the canonical module text (printed without locations, so value names
and source locations do not change it), the entry function, the concrete argument shapes,
the compile options, the backend, the entry format version, the axle, llvmlite and LLVM
versions, a hash of axle's own source files (so an edited compiler never loads code an
older one made), whether kernels are split across threads, and the host CPU name and
features (object code is tuned for them).

Entry format (not pickle; nothing in it is executed except the object code it vouches
for): b"AXLEOBJ1", u32 header length, a UTF-8 JSON header (key, versions, the program's
result shapes, arena size and kernel summary, object size and sha256), the object file,
and a trailing sha256 of everything before it. Loading opens only regular files (never
a symlink, FIFO or device: O_NOFOLLOW, O_NONBLOCK) of a bounded size, then checks magic,
lengths, both digests, the key and the versions; any mismatch (a truncated write, a
flipped bit, an entry from another version, a FIFO or a link to /dev/zero in its place)
deletes the entry and reports a miss, so it is recompiled.
Stores write a temporary file and rename it into place, so readers never see half an
entry.

Programs that call back into this process by address (collectives, probes) are never
stored: their code is only valid in the process that made it.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import tempfile
import threading
from contextlib import contextmanager
from functools import lru_cache
from typing import Optional

MAGIC = b"AXLEOBJ1"
FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 1 << 30
MAX_ENTRY_BYTES = 1 << 30  # no object file of one program is larger

_override = threading.local()


def cache_dir() -> Optional[str]:
    """The cache directory in use, or None when the cache is off."""
    forced = getattr(_override, "dir", "unset")
    if forced != "unset":
        return forced
    from axle.flags import env
    d = env("AXLE_CACHE_DIR")
    if d is None:
        base = env("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "axle")
    if d.strip().lower() in ("", "0", "off", "none", "false"):
        return None
    return d


@contextmanager
def using(directory: Optional[str]):
    """Use `directory` as the cache (None: no cache) in this thread, for the block."""
    old = getattr(_override, "dir", "unset")
    _override.dir = directory
    try:
        yield
    finally:
        _override.dir = old


def disabled():
    return using(None)


def max_bytes() -> int:
    try:
        from axle.flags import env
        return int(env("AXLE_CACHE_MAX_BYTES") or DEFAULT_MAX_BYTES)
    except ValueError:
        return DEFAULT_MAX_BYTES


def environment() -> dict:
    """What besides the program decides the object code: versions and the host CPU."""
    import llvmlite
    import llvmlite.binding as llvm

    from axle.version import __version__
    from axle.backends.cpu.llvm_env import host_cpu
    from axle.backends.cpu import parallel
    name, features = host_cpu()
    # max_threads: split kernels size per-thread scratch by it (parallel.split_ranges)
    from axle.flags import flags_text  # (every flag: several choose the code generated)
    return {"parallel": parallel.enabled(), "flags": flags_text(), "max_threads": parallel.max_threads(), "source": compiler_source_hash(), "format": FORMAT_VERSION, "axle": __version__, "llvmlite": llvmlite.__version__,
            "llvm": ".".join(map(str, llvm.llvm_version_info)), "cpu": name, "features": features}


@lru_cache(maxsize=None)
def compiler_source_hash() -> str:
    """sha256 of axle's own source: a changed compiler (a development checkout, an edited
    install) never loads code an older one made, even at the same version number."""
    from axle import version
    root = os.path.dirname(os.path.abspath(version.__file__))
    h = hashlib.sha256()
    for dirpath, dirnames, files in sorted(os.walk(root)):
        dirnames.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                p = os.path.join(dirpath, f)
                h.update(os.path.relpath(p, root).encode())
                with open(p, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


def make_key(fingerprint: str, entry: str, signature, options: dict) -> str:
    doc = {"module": fingerprint, "entry": entry, "signature": [list(s) for s in signature],
           "options": options, "backend": "cpu", "env": environment()}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _path(directory: str, key: str) -> str:
    return os.path.join(directory, key[:2], key + ".axc")


def load(key: str) -> Optional[tuple[dict, bytes]]:
    """(header, object bytes) of a valid entry, or None (a bad entry is deleted)."""
    d = cache_dir()
    if d is None:
        return None
    path = _path(d, key)
    data = _read_entry(path)
    entry = _parse(data, key) if data is not None else None
    if entry is None:
        try:
            os.remove(path)
        except OSError:
            pass
        return None
    try:
        os.utime(path)  # least recently used = oldest modification time
    except OSError:
        pass
    return entry


def _read_entry(path: str) -> Optional[bytes]:
    """The bytes of a cache entry, or None when there is none or it is not a regular file
    of a sane size. O_NOFOLLOW and O_NONBLOCK: a FIFO (which would block the open or read
    forever) or a symlink (to /dev/zero, which never ends) is never read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:  # missing, or a symlink (ELOOP), or unreadable
        return None if not os.path.islink(path) else b""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max(max_bytes(), MAX_ENTRY_BYTES):
            return b""  # not an entry axle wrote: deleted by the caller as a bad one
        chunks, left = [], st.st_size + 1  # one byte more: a file growing under us is bad
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _parse(data: bytes, key: str) -> Optional[tuple[dict, bytes]]:
    if len(data) < len(MAGIC) + 4 + 32 or not data.startswith(MAGIC):
        return None
    body, digest = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != digest:
        return None
    (hlen,) = struct.unpack_from("<I", body, len(MAGIC))
    start = len(MAGIC) + 4
    if start + hlen > len(body):
        return None
    try:
        header = json.loads(body[start:start + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    obj = body[start + hlen:]
    if not isinstance(header, dict) or header.get("key") != key or header.get("env") != environment():
        return None
    if header.get("object_size") != len(obj) or header.get("object_sha256") != hashlib.sha256(obj).hexdigest():
        return None
    return header, obj


def store(key: str, header: dict, obj: bytes) -> None:
    d = cache_dir()
    if d is None:
        return
    header = dict(header, key=key, env=environment(), object_size=len(obj),
                  object_sha256=hashlib.sha256(obj).hexdigest())
    hbytes = json.dumps(header, sort_keys=True).encode("utf-8")
    body = MAGIC + struct.pack("<I", len(hbytes)) + hbytes + obj
    data = body + hashlib.sha256(body).digest()
    path = _path(d, key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        return  # a read-only or full cache directory must not fail a compile
    evict(d, max_bytes())


def evict(directory: str, limit: int) -> None:
    """Delete least recently used entries until the cache holds at most `limit` bytes."""
    entries = []
    for root, _, files in os.walk(directory):
        for f in files:
            if f.endswith(".axc"):
                p = os.path.join(root, f)
                try:
                    st = os.lstat(p)  # a symlink counts as itself, never its target
                except OSError:
                    continue
                entries.append((st.st_mtime, st.st_size, p))
    total = sum(s for _, s, _ in entries)
    for _, size, p in sorted(entries):
        if total <= limit:
            break
        try:
            os.remove(p)
            total -= size
        except OSError:
            pass
