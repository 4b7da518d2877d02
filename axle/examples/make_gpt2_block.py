"""Regenerate gpt2_block.mlir: the GPT-2 style block of axle/tools/workloads.py, lowered by
JAX to StableHLO text, with the weights as named arguments of @main (no constants).

    python axle/examples/make_gpt2_block.py        (needs jax; `pip install -e '.[test]'`)
"""
from __future__ import annotations

import os
import re
import sys

CONFIG = dict(batch=1, seq=64, d_model=128, heads=4)
HERE = os.path.dirname(os.path.abspath(__file__))

HEADER = """\
// A GPT-2 style transformer block (pre-norm: layernorm, causal multi-head attention with
// a residual, layernorm, MLP with GELU and a residual), batch {batch}, sequence {seq},
// d_model {d_model}, {heads} heads, float32. Lowered by jax.jit(block).lower(params, x).as_text()
// from axle/tools/workloads.py:transformer_block; the weights are the arguments of @main, in
// JAX's order (the parameter dict's keys sorted, then x), renamed after the parameters.
// Regenerate with `python axle/examples/make_gpt2_block.py`; `axle demo` runs it.
"""


def export() -> str:
    import jax
    from axle.tools.workloads import transformer_block
    fn, args = transformer_block(**CONFIG)
    text = jax.jit(fn).lower(*args).as_text()
    paths, _ = jax.tree_util.tree_flatten_with_path(args)
    names = []
    for path, _ in paths:
        key = jax.tree_util.keystr(path)
        m = re.search(r"\['([A-Za-z0-9_]+)'\]", key)
        names.append(m.group(1) if m else "x")
    # rename %argN only inside @main (the private functions have their own %arg0, ...)
    start = text.index("func.func public @main(")
    end = text.index("\n  }\n", start)
    body = re.sub(r"%arg(\d+)(?![0-9A-Za-z_])", lambda m: "%" + names[int(m.group(1))], text[start:end])
    return HEADER.format(**CONFIG) + text[:start] + body + text[end:]


def main() -> int:
    path = os.path.join(HERE, "gpt2_block.mlir")
    text = export()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {path} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
    sys.exit(main())
