"""Locks that survive os.fork().

A fork copies only the calling thread. A lock another thread held at that moment stays held
forever in the child, and state it protected may be half-updated: a child forked while
another thread was inside LLVM deadlocked on its first compile. Every lock of axle is made
here and registered with one set of fork handlers (os.register_at_fork):

- before the fork, the locks made with `guard_fork=True` (the LLVM lock, the thread
  pool's) are acquired, in the order they were made: the fork waits until no thread is
  inside LLVM or reconfiguring the pool, so the child never inherits their state half-way;
- after it, the parent releases them; the child resets every registered lock to unlocked
  (`_at_fork_reinit`, what CPython's threading does for its own locks) and runs the
  `after_in_child` callbacks (the pool: no workers in the child).

    _LOCK = forks.lock()                    # a threading.Lock reset in a forked child
    _LOCK = forks.lock(rlock=True, guard_fork=True)   # held across fork() by the parent
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Callable

__all__ = ["lock", "guard", "after_in_child"]

_ALL: "weakref.WeakSet" = weakref.WeakSet()  # every lock made here
_GUARDED: list = []  # locks the parent holds across fork(), in order of creation
_CHILD_CALLBACKS: list[Callable[[], None]] = []
_installed = False
_REGISTRY_LOCK = threading.Lock()


def lock(rlock: bool = False, guard_fork: bool = False):
    """A new threading.Lock (or RLock) that is unlocked again in a forked child.
    `guard_fork`: also hold it across fork() in the parent (for locks that protect state
    outside Python, such as LLVM's)."""
    lk = threading.RLock() if rlock else threading.Lock()
    with _REGISTRY_LOCK:
        _install()
        _ALL.add(lk)
        if guard_fork:
            _GUARDED.append(lk)
    return lk


def guard(existing) -> None:
    """Hold a lock made elsewhere across fork() and reset it in the child, like
    `lock(guard_fork=True)`: llvmlite's own lock, which every llvmlite call takes (also
    outside axle's LLVM lock: a JIT's destructor run by the garbage collector in any thread)."""
    with _REGISTRY_LOCK:
        _install()
        _ALL.add(existing)
        _GUARDED.append(existing)


def after_in_child(fn: Callable[[], None]) -> None:
    """Run fn() in a forked child, after its locks were reset (once per registration)."""
    with _REGISTRY_LOCK:
        _install()
        _CHILD_CALLBACKS.append(fn)


def _install() -> None:
    global _installed
    if not _installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child)
        _installed = True


def _before() -> None:
    _REGISTRY_LOCK.acquire()
    for lk in _GUARDED:
        lk.acquire()


def _after_in_parent() -> None:
    for lk in reversed(_GUARDED):
        lk.release()
    _REGISTRY_LOCK.release()


def _after_in_child() -> None:
    global _REGISTRY_LOCK
    for lk in list(_ALL):
        lk._at_fork_reinit()
    _REGISTRY_LOCK = threading.Lock()
    for fn in list(_CHILD_CALLBACKS):
        try:
            fn()
        except Exception:  # a handler must not break the child's fork()
            pass
