"""The interpreter's op registry and the record each op implementation receives.

Every op is one short function registered under its full name:

    @register("stablehlo.add")
    def add(call: OpCall):
        return call.operands[0] + call.operands[1]

An implementation returns one value (for single-result ops) or a list/tuple of values.
Runtime values are numpy arrays for tensors (quantized tensors hold their storage
integers; the QuantizedType in `call.operand_types` / `call.result_types` gives scale and
zero point), `Token` for tokens, and Python tuples for tuples.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from axle.ir.types import Type


class Token:
    """The runtime value of `!stablehlo.token`."""

    _instance: Optional["Token"] = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Token()"


TOKEN = Token()


class InterpreterError(Exception):
    """An op could not be evaluated (bad operands, unsupported case, failed check)."""


@dataclass
class OpCall:
    """What an op implementation sees.

    operands:      runtime values of the operands, in order.
    operand_types: their IR types.
    result_types:  the IR types of the results (dimensions may be None = dynamic:
                   compute the real shape from the operands then).
    attrs:         the op's attributes as plain Python values:
                   integers -> int, floats -> float, bools -> bool, strings -> str,
                   unit -> True, `array<i64: ...>` -> list[int], dense elements -> np.ndarray,
                   enums (comparison direction, precision, fft type, ...) -> str ("EQ"),
                   struct attributes (gather/scatter/dot/conv dimension numbers,
                   channel handle, ...) -> dict of their fields by the spec's names
                   (absent list fields -> [], absent ints -> their default).
    regions:       one callable per region: region(*values) -> list of values.
    ctx:           the execution context (process ids and collectives for
                   interpreter.run_parallel; see collectives.py).
    name:          the op name, for error messages; `location` its source location.
    """

    name: str
    operands: list
    operand_types: list
    result_types: list
    attrs: dict
    regions: list = field(default_factory=list)
    ctx: Any = None
    location: str = ""

    @property
    def result_type(self) -> Type:
        return self.result_types[0]

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def error(self, message: str) -> InterpreterError:
        where = f" at {self.location}" if self.location else ""
        return InterpreterError(f"{self.name}{where}: {message}")


OpImpl = Callable[[OpCall], Any]
_REGISTRY: dict[str, OpImpl] = {}


def register(*names: str) -> Callable[[OpImpl], OpImpl]:
    """Register an implementation under one or more op names."""

    def deco(fn: OpImpl) -> OpImpl:
        for n in names:
            _REGISTRY[n] = fn
        return fn

    return deco


def lookup(name: str) -> Optional[OpImpl]:
    return _REGISTRY.get(name)


def registered_ops() -> Sequence[str]:
    return sorted(_REGISTRY)
