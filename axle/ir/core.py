"""The IR: values, operations, blocks, regions, modules.

An SSA graph of StableHLO operations. A module holds top-level operations (usually
`func.func`); a function is an operation with one region. Ops carry their name,
operands, result types, attributes (ordered dict name -> Attribute), regions and an
optional source location. Everything about what an op *is* lives in the op table
(axle/ir/ops.py); these classes only hold structure.

Use lists (as MLIR's): every value knows the (operation, operand index) pairs that read
it (`Value.uses`, `users`, `has_one_use`, `replace_all_uses_with`). `op.operands` and
`block.operations` are lists that keep them exact (axle/ir/uses.py): an op is a user from
its creation until it is removed from its block (or erased), and again once inserted into a
block; every op nested in its regions follows it. `uses.check_use_lists(module)` compares
the lists with a recomputation.
"""
from __future__ import annotations

from typing import Iterator, Optional, Sequence

from axle.ir.attributes import (ArrayAttr, Attribute, DictAttr, Location, StringAttr,
                                TypeAttr)
from axle.ir.types import FunctionType, Type
from axle.ir.uses import Use, new_operand_list, new_operation_list, unlink_ops


# What str(), clone() and == of ops and modules call: the text printer (text/printer.py), the
# deep copy (clone.py) and structural equality (equality.py). Those modules import this one,
# so this one does not import them: axle/ir/__init__.py (run before any axle.ir module is
# used) installs them with `install_services`.
_SERVICES: dict = {}


def install_services(print_op, print_module, clone_op, clone_module, modules_equal) -> None:
    _SERVICES.update(print_op=print_op, print_module=print_module, clone_op=clone_op,
                     clone_module=clone_module, modules_equal=modules_equal)


class SourceText:
    """The text a module was parsed from, to turn offsets into file:line:col lazily."""

    def __init__(self, filename: Optional[str], text: str):
        self.filename = filename or "<string>"
        self.text = text
        self._starts: Optional[list[int]] = None

    def position(self, offset: int) -> str:
        import bisect
        if self._starts is None:
            self._starts = [0] + [i + 1 for i, c in enumerate(self.text) if c == "\n"]
        line = bisect.bisect_right(self._starts, offset)
        return f"{self.filename}:{line}:{offset - self._starts[line - 1] + 1}"


class Value:
    """An SSA value: an op result or a block argument. Hashes by identity."""

    __slots__ = ("type", "name_hint", "_uses")

    def __init__(self, type: Type, name_hint: Optional[str] = None):
        self.type = type
        self.name_hint = name_hint
        self._uses: dict = {}  # (user op, operand index) -> None, in the order they were made

    @property
    def uses(self) -> list[Use]:
        """Every (owner op, operand index) that reads this value."""
        return [Use(op, i) for op, i in self._uses]

    @property
    def users(self) -> list["Operation"]:
        """The ops that read this value, each once, in the order their uses were made."""
        return list(dict.fromkeys(op for op, _ in self._uses))

    @property
    def num_uses(self) -> int:
        return len(self._uses)

    def has_one_use(self) -> bool:
        return len(self._uses) == 1

    def use_empty(self) -> bool:
        return not self._uses

    def replace_all_uses_with(self, new: "Value") -> None:
        """Make every operand that reads this value read `new` instead."""
        if new is self:
            return
        for op, i in list(self._uses):
            op.operands[i] = new

    def replace_uses_with_if(self, new: "Value", keep) -> None:
        """Like replace_all_uses_with, for the uses `u` where `keep(u)` is false."""
        for op, i in list(self._uses):
            if not keep(Use(op, i)):
                op.operands[i] = new


class OpResult(Value):
    __slots__ = ("owner", "index")

    def __init__(self, type: Type, owner: "Operation", index: int, name_hint=None):
        super().__init__(type, name_hint)
        self.owner = owner
        self.index = index

    def __repr__(self) -> str:
        return f"<result {self.index} of {self.owner.name}: {self.type}>"


class BlockArgument(Value):
    __slots__ = ("owner", "index", "location")

    def __init__(self, type: Type, owner: "Block", index: int, name_hint=None, location=None):
        super().__init__(type, name_hint)
        self.owner = owner
        self.index = index
        self.location = location

    def __repr__(self) -> str:
        return f"<block arg {self.index}: {self.type}>"


class _SetOperands:
    """`op.operands = [...]` assigns the contents of op's OperandList (which keeps the use
    lists); reading `op.operands` is a plain attribute read (a data descriptor without
    __get__ leaves reads to the instance dict)."""

    def __set__(self, op, values):
        d = op.__dict__
        old = d.get("operands")
        if old is None:
            d["operands"] = new_operand_list(op, values)
        else:
            old[:] = values


class _SetOperations:
    """`block.operations = [...]` goes through OperationList (parents and use lists)."""

    def __set__(self, block, ops):
        d = block.__dict__
        old = d.get("operations")
        if old is None:
            d["operations"] = new_operation_list(block, ops)
        else:
            old[:] = ops


class Operation:
    """One operation. `attributes` is an insertion-ordered dict of Attribute. Hashes by
    identity."""

    operands = _SetOperands()

    def __init__(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
                 attributes: Optional[dict] = None, regions: Sequence["Region"] = (),
                 location: Optional[Location] = None, successors: Sequence["Block"] = ()):
        self.name = name
        self._linked = True  # registered in its operands' use lists
        self.__dict__["operands"] = new_operand_list(self, operands)
        self.results: list[OpResult] = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.attributes: dict[str, Attribute] = dict(attributes or {})
        self.regions: list[Region] = []
        for r in regions:
            self.add_region(r)
        self.location = location
        self.successors: list[Block] = list(successors)
        self.parent: Optional[Block] = None
        self.source = None  # (SourceText, offset) where the parser read it; not part of equality

    # -- structure
    def add_region(self, region: "Region") -> "Region":
        region.parent = self
        self.regions.append(region)
        return region

    @property
    def result(self) -> OpResult:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    @property
    def result_types(self) -> list[Type]:
        return [r.type for r in self.results]

    @property
    def operand_types(self) -> list[Type]:
        return [v.type for v in self.operands]

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def opname(self) -> str:
        return self.name.split(".", 1)[-1]

    def attr(self, name: str, default=None):
        """The Python value of an attribute (see Attribute.to_python), or `default`."""
        a = self.attributes.get(name)
        return default if a is None else a.to_python()

    def walk(self) -> Iterator["Operation"]:
        """This op and every op nested in its regions, in pre-order. An explicit stack of
        iterators: recursive `yield from` cost O(depth) per op of deeply nested regions."""
        yield self
        stack = [iter([op for r in self.regions for b in r.blocks for op in b.operations])]
        while stack:
            op = next(stack[-1], None)
            if op is None:
                stack.pop()
                continue
            yield op
            if op.regions:
                stack.append(iter([o for r in op.regions for b in r.blocks for o in b.operations]))

    def where(self) -> str:
        """`'stablehlo.add' at file:3:5` — for error messages: the op's loc(...) if it has
        one, else where the parser read it."""
        if self.location is not None:
            return f"'{self.name}' at {self.location.short()}"
        if self.source is not None:
            return f"'{self.name}' at {self.source[0].position(self.source[1])}"
        return f"'{self.name}'"

    def __repr__(self) -> str:
        return f"<Operation {self.name}>"

    # -- mutation (use lists stay exact)
    def erase(self) -> None:
        """Remove this op (and everything nested in it) from its block and from the use
        lists of its operands. Its results must have no uses left outside it."""
        inside = set(self.walk())
        for r in self.results:
            for op, _ in r._uses:
                if op not in inside:
                    raise ValueError(f"cannot erase {self.where()}: result {r.index} is still used "
                                     f"by {op.where()}")
        if self.parent is not None:
            self.parent.operations.remove(self)
        self.drop_all_references()

    def drop_all_references(self) -> None:
        """Take this op and the ops nested in it out of their operands' use lists (they stop
        being users until inserted into a block again)."""
        unlink_ops(self)

    def move_before(self, other: "Operation") -> None:
        """Move this op to just before `other` (in other's block)."""
        if self.parent is not None:
            self.parent.operations.remove(self)
        block = other.parent
        block.operations.insert(block.operations.index(other), self)

    def clone(self, mapping: Optional[dict] = None) -> "Operation":
        """A deep copy (nested regions included) keeping attributes, locations and source
        positions. `mapping` (Value -> Value) renames operands and is extended with this op's
        (and nested ops') results and block arguments."""
        return _SERVICES["clone_op"](self, {} if mapping is None else mapping)

    def __str__(self) -> str:
        return _SERVICES["print_op"](self)

    # -- function view (func.func)
    @property
    def sym_name(self) -> Optional[str]:
        a = self.attributes.get("sym_name")
        return a.value if isinstance(a, StringAttr) else None

    @property
    def function_type(self) -> FunctionType:
        return self.attributes["function_type"].type

    @property
    def body(self) -> "Block":
        return self.regions[0].blocks[0]

    @property
    def is_declaration(self) -> bool:
        return not self.regions or not self.regions[0].blocks

    @property
    def visibility(self) -> str:
        a = self.attributes.get("sym_visibility")
        return a.value if isinstance(a, StringAttr) else "public"


class Block:
    operations = _SetOperations()

    def __init__(self, arg_types: Sequence[Type] = (), arg_names: Sequence[Optional[str]] = ()):
        self.arguments: list[BlockArgument] = []
        names = list(arg_names) + [None] * (len(arg_types) - len(arg_names))
        for t, n in zip(arg_types, names):
            self.add_argument(t, n)
        self.__dict__["operations"] = new_operation_list(self)
        self.parent: Optional[Region] = None
        self.label: Optional[str] = None

    def add_argument(self, type: Type, name: Optional[str] = None, location=None) -> BlockArgument:
        a = BlockArgument(type, self, len(self.arguments), name, location)
        self.arguments.append(a)
        return a

    def append(self, op: Operation) -> Operation:
        self.operations.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        self.operations.insert(index, op)
        return op

    @property
    def parent_op(self) -> Optional[Operation]:
        r = self.parent
        return None if r is None else r.parent

    @property
    def terminator(self) -> Optional[Operation]:
        return self.operations[-1] if self.operations else None


class Region:
    def __init__(self, blocks: Sequence[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Optional[Operation] = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def entry(self) -> Block:
        return self.blocks[0]


class Module:
    """A module: a named list of top-level ops (functions) and its attributes."""

    def __init__(self, name: Optional[str] = None, attributes: Optional[dict] = None,
                 location: Optional[Location] = None):
        self.name = name
        self.attributes: dict[str, Attribute] = dict(attributes or {})
        self.body = Block()
        self.location = location
        self.filename: Optional[str] = None

    @property
    def operations(self) -> list[Operation]:
        return self.body.operations

    def append(self, op: Operation) -> Operation:
        return self.body.append(op)

    @property
    def functions(self) -> dict[str, Operation]:
        return {op.sym_name: op for op in self.body.operations if op.name == "func.func"}

    def function(self, name: str) -> Operation:
        try:
            return self.functions[name]
        except KeyError:
            raise KeyError(f"module has no function @{name}; it has "
                           + ", ".join("@" + n for n in self.functions)) from None

    @property
    def main(self) -> Operation:
        fns = self.functions
        if "main" in fns:
            return fns["main"]
        public = [f for f in fns.values() if f.visibility == "public"]
        if len(public) == 1:
            return public[0]
        raise KeyError("module has no @main function")

    def walk(self) -> Iterator[Operation]:
        for op in self.body.operations:
            yield from op.walk()

    def __str__(self) -> str:
        return _SERVICES["print_module"](self)

    def clone(self) -> "Module":
        """A deep copy sharing no Operation, Block or Value with this module; attributes
        (immutable) are shared, locations and source positions kept."""
        return _SERVICES["clone_module"](self)

    def __eq__(self, other) -> bool:
        return isinstance(other, Module) and _SERVICES["modules_equal"](self, other)

    __hash__ = None  # mutable


def make_function(name: str, arg_types: Sequence[Type], result_types: Sequence[Type],
                  visibility: Optional[str] = None, arg_attrs=None, res_attrs=None) -> Operation:
    """A `func.func` with an entry block holding one argument per input."""
    attrs: dict[str, Attribute] = {"sym_name": StringAttr(name),
                                   "function_type": TypeAttr(FunctionType(tuple(arg_types),
                                                                          tuple(result_types)))}
    if visibility is not None:
        attrs["sym_visibility"] = StringAttr(visibility)
    if arg_attrs is not None:
        attrs["arg_attrs"] = ArrayAttr(tuple(DictAttr(tuple(d.items())) for d in arg_attrs))
    if res_attrs is not None:
        attrs["res_attrs"] = ArrayAttr(tuple(DictAttr(tuple(d.items())) for d in res_attrs))
    fn = Operation("func.func", attributes=attrs)
    fn.add_region(Region([Block(arg_types)]))
    return fn
