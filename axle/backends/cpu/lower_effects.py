"""Pass "cpu-lower-effects": token-threaded effects become `cpu.host_effect` ops, and token
makers whose tokens nothing reads go.

Tokens carry no data; they only order effects, and the CPU backend's generated code runs
its ops in program order anyway. So each `infeed`, `outfeed`, `send` and `recv` becomes a
`cpu.host_effect` with the op's non-token operands and results, which kernels_extra.py
compiles to a host callback running the interpreter's implementation of the original op
(with TOKEN where it takes or gives tokens). Everything that callback needs is in the op's
attributes, so the lowered module prints, parses and compiles again the same:

    "cpu.host_effect"(%x) {effect = "stablehlo.send", token_operands = array<i64: 1>,
        token_results = array<i64: 0>, attributes = {channel_handle = ..., ...}}

A token result of the original op is read from a fresh `after_all`; afterwards every
`after_all` / `create_token` whose token reaches nothing (or only other such makers) is
erased, so that tokens need no buffers. Tokens that still reach something (a call, a
function result) are left for the backend, which refuses them.
"""
from __future__ import annotations

from axle.backends.cpu.tokens import EFFECTS, is_token
from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.ops import OPS, SIDE_EFFECT, OpDef
from axle.ir.types import TokenType, i64
from axle.passes import register_pass
from axle.passes.forward_tuples import drop_unused
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Patterns, apply_patterns

HOST_EFFECT = "cpu.host_effect"
TOKEN_MAKERS = ("stablehlo.after_all", "stablehlo.create_token")
# the CPU backend's own op (the parser reads it in dumps of the lowered module)
OPS.setdefault(HOST_EFFECT, OpDef(HOST_EFFECT, -1, -1, 0, frozenset((SIDE_EFFECT,)), "generic",
                                  (), "an infeed/outfeed/send/recv without its tokens (CPU backend)"))

PATTERNS = Patterns("cpu-lower-effects", erase_replaced=EFFECTS)


def _positions(attr) -> list:
    return [int(k) for k in attr.values] if attr is not None else []


def original_call(op: Operation) -> tuple:
    """(name, operand types, result types, attributes) of the effect a `cpu.host_effect`
    stands for, tokens put back at their positions."""
    tok_in = set(_positions(op.attributes.get("token_operands")))
    tok_out = set(_positions(op.attributes.get("token_results")))
    operands = iter(v.type for v in op.operands)
    results = iter(r.type for r in op.results)
    n_in = len(op.operands) + len(tok_in)
    n_out = len(op.results) + len(tok_out)
    in_types = [TokenType() if k in tok_in else next(operands) for k in range(n_in)]
    out_types = [TokenType() if k in tok_out else next(results) for k in range(n_out)]
    attrs = op.attributes.get("attributes")
    return (op.attributes["effect"].value, in_types, out_types,
            {k: v for k, v in attrs.entries} if attrs is not None else {})


def strip_effect(op: Operation, b) -> list:
    """The cpu.host_effect standing for token-threaded effect `op` (built with Builder b);
    returns the replacement values of op's results."""
    operands = [v for v in op.operands if not is_token(v.type)]
    types = [r.type for r in op.results if not is_token(r.type)]
    attrs = {"effect": A.StringAttr(op.name),
             "token_operands": A.DenseArrayAttr(i64, tuple(k for k, v in enumerate(op.operands) if is_token(v.type))),
             "token_results": A.DenseArrayAttr(i64, tuple(k for k, r in enumerate(op.results) if is_token(r.type))),
             "attributes": A.DictAttr(tuple(op.attributes.items()))}
    new = b.create(HOST_EFFECT, operands, types, attrs)
    out, it = [], iter(new.results)
    for r in op.results:
        if is_token(r.type):
            out.append(b.create("stablehlo.after_all", [], [TokenType()], {}).results[0])
        else:
            out.append(next(it))
    return out


PATTERNS.on(*EFFECTS)(strip_effect)


@register_pass
class CpuLowerEffects(Pass):
    """Pass 'cpu-lower-effects' (see the module docstring)."""

    name = "cpu-lower-effects"

    def run(self, module: Module) -> bool:
        if not any(op.name in EFFECTS + TOKEN_MAKERS for op in module.walk()):
            return False
        changed = apply_patterns(module, PATTERNS)
        return drop_unused(module, TOKEN_MAKERS) or changed
