"""Entry functions with tokens in their signature, compiled for the CPU (tokens.py says
how tokens are handled): `executable_for(module, entry)`."""
from __future__ import annotations

from axle.backends.cpu.executable import CpuExecutable
from axle.backends.cpu.tokens import is_token
from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.types import FunctionType, TokenType


class _TokenStripped:
    """A CpuExecutable of the token-free entry, called with the original signature."""

    def __init__(self, executable, token_args: list, n_results: int, token_results: list):
        self.executable = executable
        self.token_args = set(token_args)
        self.n_results = n_results
        self.token_results = set(token_results)

    def execute(self, args) -> list:
        from axle.interpreter.registry import TOKEN
        outs = iter(self.executable.execute([a for i, a in enumerate(args) if i not in self.token_args]))
        return [TOKEN if k in self.token_results else next(outs) for k in range(self.n_results)]


def executable_for(module: Module, entry: str):
    """A CpuExecutable for `entry`, or a wrapper of one when its signature has tokens."""
    fn = module.function(entry)
    ft = fn.function_type
    if not any(is_token(t) for t in list(ft.inputs) + list(ft.results)):
        return CpuExecutable(module, entry)
    module = module.clone()
    fn = module.function(entry)
    block = fn.body
    token_args = [i for i, a in enumerate(block.arguments) if is_token(a.type)]
    if token_args:
        maker = Operation("stablehlo.after_all", [], [TokenType()], {}, location=fn.location)
        block.insert(0, maker)
        tok = maker.results[0]
        for op in fn.walk():
            for k, v in enumerate(op.operands):
                if any(v is block.arguments[i] for i in token_args):
                    op.operands[k] = tok
        keep = [a for i, a in enumerate(block.arguments) if i not in token_args]
        block.arguments[:] = keep
        for i, a in enumerate(keep):
            a.index = i
    ret = block.operations[-1]
    token_results = [k for k, v in enumerate(ret.operands) if is_token(v.type)]
    n_results = len(ret.operands)
    ret.operands[:] = [v for k, v in enumerate(ret.operands) if k not in token_results]
    fn.attributes["function_type"] = A.TypeAttr(FunctionType(
        tuple(t for i, t in enumerate(ft.inputs) if i not in token_args),
        tuple(t for k, t in enumerate(ft.results) if k not in token_results)))
    return _TokenStripped(CpuExecutable(module, entry), token_args, n_results, token_results)
