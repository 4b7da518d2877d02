"""Use lists: the lists that keep them exact, and a checker.

Every Value has `_uses`, a dict whose keys are the (operation, operand index) pairs that
read it (a dict: O(1) to add and drop, ordered by when the use was made). Two list types
keep the dicts exact under every mutation the IR allows:

* `OperandList` is `op.operands`: setting, inserting, deleting or replacing operands
  moves the op's uses from the old values to the new ones.
* `OperationList` is `block.operations`: inserting an op sets its parent and makes it
  (and everything nested in it) a user again; removing it from its block (del, remove,
  pop, a slice assignment that leaves it out) takes it out of its operands' use lists.
  An op removed from one block and inserted into another (in either order) stays a user.

An op is "linked" (`op._linked`) while it is in its operands' use lists: from its creation,
until it is removed from its block or erased (`Operation.erase`, `drop_all_references`),
and again once inserted into a block whose op is linked. An op built but never inserted
is still a user (as in MLIR): erase it, or drop its references, if it is thrown away.

This module imports nothing of axle: core.py builds on it.
"""
from __future__ import annotations

from typing import NamedTuple


class Use(NamedTuple):
    """One use of a value: operand `index` of op `owner` (MLIR's OpOperand)."""
    owner: object
    index: int


_get = list.__getitem__


class OperandList(list):
    """An op's operands; every change updates the values' use lists."""

    __slots__ = ("_op",)  # set by new_operand_list (no Python __init__: one per op built)

    def _register(self, start: int) -> None:
        op = self._op
        if start == 0:
            for i, v in enumerate(self):
                v._uses[(op, i)] = None
            return
        for i in range(start, len(self)):
            _get(self, i)._uses[(op, i)] = None

    def _unregister(self, start: int) -> None:
        op = self._op
        for i in range(start, len(self)):
            _get(self, i)._uses.pop((op, i), None)

    def __setitem__(self, i, v):
        if not self._op._linked:
            return list.__setitem__(self, i, v)
        if isinstance(i, slice):
            v = list(v)
            self._unregister(0)
            try:
                list.__setitem__(self, i, v)
            finally:
                self._register(0)
            return
        if i < 0:
            i += len(self)
        old = _get(self, i)
        uses = v._uses  # a non-Value raises before anything changed
        list.__setitem__(self, i, v)
        old._uses.pop((self._op, i), None)
        uses[(self._op, i)] = None

    def append(self, v) -> None:
        list.append(self, v)
        if self._op._linked:
            v._uses[(self._op, len(self) - 1)] = None

    def extend(self, vs) -> None:
        n = len(self)
        list.extend(self, vs)
        if self._op._linked:
            self._register(n)

    def __iadd__(self, vs):
        self.extend(vs)
        return self

    def _whole(name):
        method = getattr(list, name)

        def f(self, *args, **kw):
            if not self._op._linked:
                return method(self, *args, **kw)
            self._unregister(0)
            try:
                return method(self, *args, **kw)
            finally:
                self._register(0)
        f.__name__ = name
        return f

    __delitem__ = _whole("__delitem__")
    insert = _whole("insert")
    pop = _whole("pop")
    remove = _whole("remove")
    clear = _whole("clear")
    sort = _whole("sort")
    reverse = _whole("reverse")
    __imul__ = _whole("__imul__")
    del _whole

    def __reduce__(self):  # copies and pickles are plain lists
        return (list, (list(self),))


def new_operand_list(op, values) -> OperandList:
    """`op`'s operand list holding `values`, registered in their use lists when op is linked."""
    ol = OperandList(values)
    ol._op = op
    if op._linked:
        for i, v in enumerate(ol):
            v._uses[(op, i)] = None
    return ol


def _owner_linked(block) -> bool:
    region = block.parent
    op = None if region is None else region.parent
    return op is None or op._linked


def link_ops(op) -> None:
    """Put `op` and every op nested in it (back) into their operands' use lists."""
    for o in op.walk():
        if not o._linked:
            o._linked = True
            o.operands._register(0)


def unlink_ops(op) -> None:
    """Take `op` and every op nested in it out of their operands' use lists."""
    for o in op.walk():
        if o._linked:
            o.operands._unregister(0)
            o._linked = False


class OperationList(list):
    """A block's ops; inserting sets the op's parent and links it, removing unlinks it."""

    __slots__ = ("_block",)  # set by new_operation_list

    def _added(self, op) -> None:
        block = self._block
        if op.parent is block and op._linked:
            return  # already here (a slice assignment that reorders)
        op.parent = block
        if _owner_linked(block):
            if not op._linked:
                link_ops(op)
        elif op._linked:
            unlink_ops(op)

    def _removed(self, op) -> None:
        if op.parent is self._block:  # not already inserted elsewhere (a move)
            op.parent = None
            unlink_ops(op)

    def append(self, op) -> None:
        list.append(self, op)
        block = self._block
        if op.parent is None and op._linked and block.parent is None:
            op.parent = block  # the parser's case: a new op into a block not yet in a region
        else:
            self._added(op)

    def insert(self, index, op) -> None:
        list.insert(self, index, op)
        self._added(op)

    def extend(self, ops) -> None:
        ops = list(ops)
        list.extend(self, ops)
        for op in ops:
            self._added(op)

    def __iadd__(self, ops):
        self.extend(ops)
        return self

    def __setitem__(self, i, v):
        if isinstance(i, slice):
            old = _get(self, i)
            v = list(v)
            list.__setitem__(self, i, v)
            if old:
                now = set(self)
                for op in old:
                    if op not in now:
                        self._removed(op)
            for op in v:
                self._added(op)
            return
        old = _get(self, i)
        list.__setitem__(self, i, v)
        if old is not v:
            self._removed(old)
        self._added(v)

    def __delitem__(self, i):
        old = _get(self, i)
        list.__delitem__(self, i)
        if isinstance(i, slice):
            now = set(self)
            for op in old:
                if op not in now:
                    self._removed(op)
        else:
            self._removed(old)

    def pop(self, i=-1):
        op = list.pop(self, i)
        self._removed(op)
        return op

    def remove(self, op) -> None:
        list.remove(self, op)
        self._removed(op)

    def clear(self) -> None:
        old = list(self)
        list.clear(self)
        for op in old:
            self._removed(op)

    def __reduce__(self):
        return (list, (list(self),))


def new_operation_list(block, ops=()) -> OperationList:
    ol = OperationList()
    ol._block = block
    if ops:
        ol.extend(ops)
    return ol


def check_use_lists(module) -> list[str]:
    """Compare every use list in `module` with a recomputation from the operands; the
    differences as messages (empty when the lists are exact). A use recorded by an op that
    is not in the module (a removed op still linked, an op built and thrown away) counts."""
    errors: list[str] = []
    ops = list(module.walk())
    in_module = set(ops)
    values = []
    for op in ops:
        if not op._linked:
            errors.append(f"{op.where()} is in the module but not in its operands' use lists")
        values.extend(op.results)
        for r in op.regions:
            for b in r.blocks:
                values.extend(b.arguments)
        for i, v in enumerate(op.operands):
            if (op, i) not in getattr(v, "_uses", {}):
                errors.append(f"operand {i} of {op.where()} is missing from its value's use list")
    for v in values:
        for op, i in v._uses:
            if op not in in_module:
                errors.append(f"a use list of {v!r} names {op.where()}, which is not in the module")
            elif i >= len(op.operands) or _get(op.operands, i) is not v:
                errors.append(f"a use list of {v!r} names operand {i} of {op.where()}, which reads "
                              f"another value")
    return errors
