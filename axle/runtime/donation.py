"""Which results may reuse which arguments' memory: input_output_alias as JAX writes it.

- `tf.aliasing_output = k : i32` on argument j: result k aliases argument j (jax.jit with
  donate_argnums lowers to this when it can pair them);
- `jax.buffer_donor = true` on argument j: the argument may be given to any result of the
  same type (XLA pairs them at compile time; so does this);
- `donate_argnums` (CompileOptions): as buffer_donor, for the listed positions.

The backend decides which pairs it can honour (cpu: aliasing.py); the others get fresh
memory (and donated inputs are still consumed).
"""
from __future__ import annotations

from axle.ir.types import TensorType


class DonationError(ValueError):
    """A donation request that cannot mean anything: a position out of range, or
    `tf.aliasing_output` pairing values of different types. Fix the position or the type."""


def requested_aliases(fn, donate_argnums=()) -> dict:
    """{result k: argument j} for function op `fn`."""
    ins = list(fn.function_type.inputs)
    outs = list(fn.function_type.results)
    name = fn.sym_name
    aliases: dict = {}
    donors: list = []
    for j, attrs in enumerate(_arg_attrs(fn, len(ins))):
        if "tf.aliasing_output" in attrs:
            k = int(attrs["tf.aliasing_output"])
            if not 0 <= k < len(outs):
                raise DonationError(f"@{name}: argument {j} has tf.aliasing_output = {k}, but the function "
                                    f"has {len(outs)} result(s)")
            if ins[j] != outs[k]:
                raise DonationError(f"@{name}: argument {j} ({ins[j]}) is aliased to result {k} of another "
                                    f"type ({outs[k]})")
            aliases[k] = j
        elif attrs.get("jax.buffer_donor") is True:
            donors.append(j)
    for j in donate_argnums:
        if not isinstance(j, int) or not 0 <= j < len(ins):
            raise DonationError(f"@{name}: donate_argnums names argument {j!r}; the function takes "
                                f"{len(ins)} argument(s)")
        if j not in aliases.values() and j not in donors:
            donors.append(j)
    for j in donors:  # first free result of the same type (as XLA pairs buffer donors)
        for k, t in enumerate(outs):
            if k not in aliases and isinstance(t, TensorType) and t == ins[j] and t.is_static:
                aliases[k] = j
                break
    return aliases


def donated_arguments(fn, donate_argnums=()) -> set:
    """Every argument position given up by the caller (aliased or not)."""
    out = set(requested_aliases(fn, donate_argnums).values()) | set(donate_argnums)
    for j, attrs in enumerate(_arg_attrs(fn, len(fn.function_type.inputs))):
        if attrs.get("jax.buffer_donor") is True:
            out.add(j)
    return out


def _arg_attrs(fn, n: int) -> list:
    arr = fn.attributes.get("arg_attrs")
    if arr is None:
        return [{} for _ in range(n)]
    out = []
    for d in arr.elements:
        entries = getattr(d, "entries", ())
        out.append({k: a.to_python() for k, a in entries})
    return out + [{} for _ in range(n - len(out))]
