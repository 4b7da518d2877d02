"""Alias scopes for kernels' result accesses (LLVM scoped-noalias metadata).

Buffers reach a kernel as pointers loaded from a table, so LLVM must assume that a store
into a result may change anything the kernel reads through another pointer: it reloads
loop-invariant values (an index kept in a scalar buffer) after every store and often
gives up vectorizing. When no buffer a kernel reads (directly or through the producers
fused into it) is one of its results' buffers (Context.same_buffer: in-place updates and
donated arguments share one), the results' accesses get an alias scope of their own and
the reads its noalias.
"""
from __future__ import annotations

from axle.ir.core import Operation


def reads_buffer_of(ctx, values: list, r) -> bool:
    """Whether a value with a buffer among `values` or read through fused values from them
    shares r's buffer."""
    return bool(buffers_shared(ctx, values, [r]))


def buffers_shared(ctx, values: list, results: list) -> set:
    """The values with a buffer among `values`, or read through fused values from them, that
    share a buffer with one of `results`."""
    seen, stack, shared = set(), list(values), set()
    while stack:
        v = stack.pop()
        if v in seen or not hasattr(v, "type"):
            continue
        seen.add(v)
        if ctx.has_buffer(v):
            if any(ctx.same_buffer(v, r) for r in results):
                shared.add(v)
            continue
        o = getattr(v, "owner", None)
        if isinstance(o, Operation):
            stack.extend(o.operands)
    return shared


def scoped_accesses(ctx, reads: list, results: list):
    """(metadata for the stores of `results`, metadata for the reads of `reads`) that tell
    LLVM the two never overlap: a new alias scope on the results' accesses and its noalias
    on the reads, when no buffer among `reads` (or read through their fused producers)
    shares a result's buffer; else (None, None). Without it LLVM must assume that every
    store into a result may change any value the loop reads through a pointer: a loop
    index kept in a buffer (a scan's counter) is reloaded after every element, and the
    loop does not vectorize."""
    if any(reads_buffer_of(ctx, list(reads), r) for r in results):
        return None, None
    scopes = _result_scopes(ctx)
    return {"alias.scope": scopes}, {"noalias": scopes}


def scoped_accesses_but_shared(ctx, reads: list, results: list):
    """(metadata for the stores of `results`, metadata for the reads, the values whose reads
    must not carry it): like scoped_accesses, but where some read buffers are the results'
    own (a loop's carried state updated in place) only those reads go without the noalias,
    so the others (the loop counter, the sequence a scan slices) still stay out of the
    element loop."""
    shared = buffers_shared(ctx, list(reads), results)
    scopes = _result_scopes(ctx)
    return {"alias.scope": scopes}, {"noalias": scopes}, shared


def _result_scopes(ctx):
    """A list of one new LLVM alias scope (in a domain of its own) for one kernel's results."""
    from llvmlite import ir as _ir
    mod = ctx.mod
    n = getattr(mod, "_axle_scopes", 0)
    mod._axle_scopes = n + 1
    domain = mod.add_metadata([_ir.MetaDataString(mod, f"axle.results.domain.{n}")])
    scope = mod.add_metadata([_ir.MetaDataString(mod, f"axle.results.{n}"), domain])
    return mod.add_metadata([scope])
