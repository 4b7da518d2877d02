"""Tokens on the CPU backend.

Tokens carry no data; they only order effects, and the generated code runs its ops in
program order anyway. So:

* the pass cpu-lower-effects (lower_effects.py) turns each token-threaded effect (`infeed`,
  `outfeed`, `send`, `recv`) into a `cpu.host_effect` op without its token operands and
  results (a fresh `after_all` stands for a token result, and goes once nothing reads it);
  kernels_extra.py compiles it to a host callback that runs the interpreter's
  implementation of the original op with the device's context (as collectives do), tokens
  put back where the op has them.
* `executable_for(module, entry)` (token_executable.py) compiles an entry function whose arguments or results
  include tokens (the programs of `interpreter.run_parallel`): the tokens are taken out of
  the signature (uses of a token argument read a fresh `after_all`), and the returned
  object's `execute` drops token arguments and puts TOKEN back among the results.
"""
from __future__ import annotations

from axle.ir.ops import HOST_IO, names_with
from axle.ir.types import TokenType

# the token-threaded effects (infeed, outfeed, send, recv): the op table's HOST_IO trait
EFFECTS = tuple(sorted(names_with(HOST_IO)))


def is_token(t) -> bool:
    return isinstance(t, TokenType)
