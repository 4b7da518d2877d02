"""Floats as MLIR text (attributes.py and the dense payloads of text/dense.py both print them)."""
from __future__ import annotations

import math


def format_float(x: float) -> str:
    """Shortest text that reads back to the same double; inf/nan as MLIR spells them."""
    if math.isnan(x):
        return "0x7FF8000000000000"
    if math.isinf(x):
        return "0x7FF0000000000000" if x > 0 else "0xFFF0000000000000"
    r = repr(float(x))
    if "e" not in r and "." not in r:
        r += ".0"
    return r
