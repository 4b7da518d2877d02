"""What the verifier's rule modules share (verifier.py, verify_sdy.py): the error, the
helpers that raise it, and the per-op CHECKS table with its registering decorator."""
from __future__ import annotations

from typing import Callable, Optional

from axle.ir.core import Operation


class VerificationError(Exception):
    """A broken rule. `op` is the offending Operation (None for module-level problems),
    `constraint` the spec's id ("C3", "I1") or None, `detail` the message without the
    op's name and location."""

    def __init__(self, op: Optional[Operation], detail: str, constraint: Optional[str] = None):
        self.op = op
        self.constraint = constraint
        self.detail = detail
        where = op.where() if op is not None else "module"
        c = f"({constraint}) " if constraint else ""
        super().__init__(f"{where}: {c}{detail}")


def _fail(op: Operation, detail: str, constraint: Optional[str] = None):
    raise VerificationError(op, detail, constraint)


def _need(cond: bool, op: Operation, constraint: Optional[str], detail: str) -> None:
    if not cond:
        raise VerificationError(op, detail, constraint)


CHECKS: dict[str, Callable] = {}  # op name -> check(verifier, op) (verifier.py, verify_sdy.py)


def _check(*names):
    def deco(fn):
        for n in names:
            CHECKS[n if "." in n else "stablehlo." + n] = fn
        return fn
    return deco
