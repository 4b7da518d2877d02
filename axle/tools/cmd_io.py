"""What the `axle compile` commands share (compile_cmd.py for the CPU, gpu_cmd.py for the
gpu backend): reading MODULE, writing the output, reporting errors a user can act on."""
from __future__ import annotations

import sys
from typing import Optional


def read_module(spec: str):
    """(name, text, example arguments or None) for MODULE: a file, '-', or jax:NAME."""
    if spec.startswith("jax:"):
        from axle.tools.workloads import WORKLOADS, lower
        name = spec[4:]
        if name not in WORKLOADS:
            raise ValueError(f"unknown workload '{name}'; known: {', '.join(sorted(WORKLOADS))}")
        text, args, _, _ = lower(name)
        return name, text, args
    if spec == "-":
        return "<stdin>", sys.stdin.read(), None
    with open(spec, encoding="utf-8") as fh:
        return spec, fh.read(), None


def write_output(path, text: str, summary: str) -> int:
    """Write what `axle compile` emitted to `path` (saying so, with `summary`), or to stdout."""
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {path} ({summary})")
    else:
        sys.stdout.write(text)
    return 0


def user_error(e: Exception) -> Optional[str]:
    """The message to print for an error the user can act on, or an internal compiler error
    (whose traceback is in its reproducer's folder); None for anything else (re-raise)."""
    from axle.reproducer import InternalCompilerError, is_user_error
    if isinstance(e, InternalCompilerError):
        return str(e)
    if is_user_error(e) or isinstance(e, (OSError, ValueError, KeyError)):
        return f"error: {e}"
    from axle.interpreter.registry import InterpreterError
    if isinstance(e, InterpreterError):
        return f"error: {e}"
    return None


def report(e: Exception, prog: str) -> Optional[int]:
    """Print an error as `prog: message` and return the exit status (3 for an internal
    compiler error, 1 otherwise), or None when `e` should propagate."""
    from axle.reproducer import InternalCompilerError
    msg = user_error(e)
    if msg is None:
        return None
    print(f"{prog}: {msg}", file=sys.stderr)
    return 3 if isinstance(e, InternalCompilerError) else 1
