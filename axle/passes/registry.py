"""The pass registry: pass name -> pass class (each pass module registers itself with
`@register_pass`; axle/passes/__init__.py imports them all)."""
from __future__ import annotations

from axle.passes.pass_manager import Pass

PASSES: dict[str, type] = {}


def register_pass(cls):
    """Class decorator: make a pass available by its `name` (e.g. to `axle opt --passes`)."""
    PASSES[cls.name] = cls
    return cls


def make_pass(name: str) -> Pass:
    try:
        return PASSES[name]()
    except KeyError:
        raise KeyError(f"unknown pass '{name}'; known passes: {', '.join(sorted(PASSES))}") from None
