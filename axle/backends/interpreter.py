"""The interpreter as a backend plugin (entry point `interpreter` in the group axle.backends):
the reference semantics in numpy, no compilation."""
from __future__ import annotations


class InterpretedExecutable:
    """Runs `entry` of the module with the reference interpreter on every call."""

    aliases: dict = {}  # donations are accepted (the caller gives the input up) but never aliased

    def __init__(self, module, entry: str = "main"):
        self.module = module
        self.entry = entry

    def execute(self, args, donate=()) -> list:
        from axle import counters as metrics
        from axle.interpreter.evaluator import run_function
        metrics.add("executions")
        return run_function(self.module, list(args), self.entry)

    def __call__(self, *args):
        out = self.execute(args)
        return out[0] if len(out) == 1 else tuple(out)


class InterpreterBackend:
    name = "interpreter"
    platform = "interpreter"

    def compile(self, module, entry: str = "main", options: dict = None) -> InterpretedExecutable:
        from axle.ir.verifier import verify_signatures
        verify_signatures(module)
        return InterpretedExecutable(module, entry)
