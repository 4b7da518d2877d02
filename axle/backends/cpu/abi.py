"""The CPU program's calling convention: one native entry `void axle_entry(i8** table)`.

table[0..n) are the arguments, then the results, then the arena. A buffer is named by a
BufRef (table slot + byte offset), valid in every function of the program; `axle_call`
(the trampoline) fills the table from numpy arrays so that a call from Python is one
foreign call.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from axle.codegen.scalar import I8, I64

P8P = I8.as_pointer().as_pointer()
PYARRAY_DATA_OFFSET = 16  # offsetof(PyArrayObject, data): after the object header (refcount, type)


@dataclass(frozen=True)
class BufRef:
    """Where a buffer lives, valid in every function of the program: the pointer in table
    slot `slot`, plus `offset` bytes (temporaries: the arena's slot and their offset)."""
    slot: int
    offset: int = 0


class Buffers(dict):
    """value -> buffer pointer. BufRef entries resolve to a pointer in the function being
    emitted (each kernel is its own function, `resolve(ref)`), raw pointers are used as
    they are. `raw(v)` gives the entry as stored (a BufRef or a pointer)."""

    def __init__(self, resolve):
        super().__init__()
        self._resolve = resolve

    def __getitem__(self, k):
        v = dict.__getitem__(self, k)
        return self._resolve(v) if isinstance(v, BufRef) else v

    def get(self, k, default=None):
        return self[k] if k in self else default

    def raw(self, k):
        return dict.__getitem__(self, k)


def emit_trampoline(mod: ir.Module, entry: ir.Function, n: int) -> None:
    """`void axle_call(PyArrayObject* a0, ..., PyArrayObject* a{n-1}, i8* arena)`: reads each
    array's data pointer (numpy's stable object layout), fills the table and calls the entry.
    The executable calls it only with exact np.ndarray objects it has checked (C-contiguous,
    right dtype and shape), so a call from Python costs one foreign call and no pointer
    extraction in Python."""
    p8 = I8.as_pointer()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [p8] * (n + 1)), "axle_call")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    table = b.alloca(ir.ArrayType(p8, n + 1))
    for i in range(n):
        field_ptr = b.bitcast(b.gep(fn.args[i], [ir.Constant(I64, PYARRAY_DATA_OFFSET)], inbounds=True),
                              p8.as_pointer())
        b.store(b.load(field_ptr), b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, i)], inbounds=True))
    b.store(fn.args[n], b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, n)], inbounds=True))
    b.call(entry, [b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, 0)], inbounds=True)])
    b.ret_void()
