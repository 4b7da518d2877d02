"""The errors axle raises, in one place, so that every layer may raise them and a user may
catch them without importing a backend.

This module is the bottom layer: it imports nothing of axle. Each error keeps a second base
from the standard library (TypeError, ValueError, RuntimeError) where code written against
Python's own conventions expects one.

    AxleError                       every error below
    ├── Unsupported                 an op, type or attribute a layer cannot handle (yet);
    │                               the message names the op and where it is
    ├── ArgumentError (TypeError)   a program was given the wrong count, shape or dtype
    ├── RuntimeCheckError (ValueError)  a check compiled into a program failed (names the op)
    ├── ResourceLimitError          a program needs more than a limit allows (names the flag)
    └── InternalCompilerError (RuntimeError)  a bug in axle; carries a reproducer folder
"""
from __future__ import annotations

from typing import Optional


class AxleError(Exception):
    """Base of the errors axle raises on purpose."""


class Unsupported(AxleError):
    """An op, type or attribute that this part of axle cannot compile or lower (yet)."""


class ArgumentError(AxleError, TypeError):
    """An argument given to a program has the wrong count, shape or dtype."""


class RuntimeCheckError(AxleError, ValueError):
    """A run-time check of compiled code failed (the message names the op)."""


class ResourceLimitError(AxleError):
    """A program needs more than a resource limit allows. The message names the limit and
    the flag that sets it; to go on, raise it, e.g.
    `AXLE_FLAGS="--max_buffer_bytes=20000000000"`, or make the program smaller."""


class InternalCompilerError(AxleError, RuntimeError):
    """axle failed while compiling a valid module (a bug in axle). `directory` holds the
    module (`module.mlir`), a reproducer (`repro.py`) and the traceback (`error.txt`)."""

    def __init__(self, message: str, directory: Optional[str] = None, stage: str = "codegen",
                 pass_name: Optional[str] = None):
        super().__init__(message)
        self.directory = directory
        self.stage = stage
        self.pass_name = pass_name


__all__ = ["AxleError", "Unsupported", "ArgumentError", "RuntimeCheckError", "ResourceLimitError",
           "InternalCompilerError"]
