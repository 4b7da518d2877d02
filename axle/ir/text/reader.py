"""Operations, regions, functions and modules: the structural half of the parser."""
from __future__ import annotations

from typing import Optional

from axle.ir import attributes as A
from axle.ir import ops as O
from axle.ir import types as T
from axle.ir.core import Block, Module, Operation, Region, SourceText, Value
from axle.ir.text.cursor import ParseError
from axle.ir.text.parser import Parser, _DenseResourcePending


class ModuleParser(Parser):
    def __init__(self, text: str, filename: Optional[str] = None):
        super().__init__(text, filename)
        self.source_text = SourceText(filename, text)

    # ------------------------------------------------------------------ values
    def define(self, name: str, values: list[Value], pos: int) -> None:
        scope = self.scopes[-1]
        if name in scope:
            raise self.error(f"redefinition of SSA value '%{name}'", pos)
        scope[name] = values
        for i, v in enumerate(values):
            v.name_hint = name if len(values) == 1 else (name, i)

    def lookup_value(self, name: str, index: Optional[int], pos: int) -> Value:
        for scope in reversed(self.scopes):
            if name in scope:
                group = scope[name]
                i = 0 if index is None else index
                if i >= len(group):
                    raise self.error(f"'%{name}' has only {len(group)} results, no #{i}", pos)
                return group[i]
            if scope.get("__isolated__"):
                break
        raise self.error(f"use of undefined value '%{name}'", pos)

    def parse_operand(self) -> Value:
        self.ws()
        pos = self.pos
        name = self.suffix_id("%", "SSA value (like %0)")
        index = None
        if self.text.startswith("#", self.pos):
            self.pos += 1
            index = self.integer("result number after '#'")
        return self.lookup_value(name, index, pos)

    def parse_operands(self) -> list[Value]:
        """Zero or more comma-separated `%x` uses."""
        vals = []
        if self.peek("%"):
            vals.append(self.parse_operand())
            while self.peek(",") and self._next_is_value_after_comma():
                self.expect(",")
                vals.append(self.parse_operand())
        return vals

    def _next_is_value_after_comma(self) -> bool:
        save = self.pos
        self.expect(",")
        ok = self.peek("%")
        self.pos = save
        return ok

    def check_types(self, values: list[Value], types: list[T.Type], pos: int, what="operand") -> None:
        if len(values) != len(types):
            raise self.error(f"{len(values)} {what}s but {len(types)} types", pos)
        for i, (v, t) in enumerate(zip(values, types)):
            if v.type != t:
                raise self.error(f"{what} #{i} has type {v.type} but is used as {t}", pos)

    # ------------------------------------------------------------------ module
    def parse_top(self) -> Module:
        module: Optional[Module] = None
        implicit = Module()
        self.scopes = [{}]
        while not self.at_end():
            if self.peek("#"):
                self._alias_def("#")
            elif self.peek("!"):
                self._alias_def("!")
            elif self.peek("{-#"):
                self._resources()
            elif self.peek_keyword("module"):
                if module is not None or implicit.operations:
                    raise self.error("expected a single module (or only top-level functions)")
                module = self.parse_module_op()
            else:
                if module is not None:
                    raise self.error("operations after the module")
                implicit.append(self._module_level_op())
        m = module if module is not None else implicit
        self._resolve_resources(m)
        return m

    def _alias_def(self, sigil: str) -> None:
        start = self.pos
        self.expect(sigil)
        name = self.bare_id("alias name")
        self.expect("=")
        if sigil == "!":
            self.type_aliases[name] = self.parse_type()
        elif self.peek_keyword("loc"):
            self.accept_keyword("loc")
            self.loc_aliases[name] = self._resolve_loc(self.balanced("(", ")")[1:-1].strip())
        else:
            if name in self.attr_aliases:
                raise self.error(f"redefinition of alias '#{name}'", start)
            self.attr_aliases[name] = self.parse_attribute()

    def _resources(self) -> None:
        start = self.pos
        self.expect("{-#")
        end = self.text.find("#-}", self.pos)
        if end < 0:
            raise self.error("unterminated '{-#' resource section", start)
        body = self.text[self.pos:end]
        import re
        for m in re.finditer(r'([A-Za-z_][\w.$\-]*)\s*:\s*"0x([0-9A-Fa-f]*)"', body):
            self.resources[m.group(1)] = m.group(2)
        self.pos = end + 3

    def _resolve_resources(self, m: Module) -> None:
        from axle.ir.text import dense as D
        import numpy as np
        for op in m.walk():
            for k, a in list(op.attributes.items()):
                if isinstance(a, _DenseResourcePending):
                    hexdata = self.resources.get(a.key)
                    if hexdata is None:
                        raise self.error(f"dense_resource '{a.key}' has no blob in the resource section", a.pos)
                    data = bytes.fromhex(hexdata)[4:]  # first 4 bytes: alignment
                    try:
                        arr = D.array_from_hex(data, a.type)
                    except ValueError as e:
                        raise self.error(str(e), a.pos) from None
                    op.attributes[k] = A.DenseElementsAttr(a.type, arr)

    def parse_module_op(self) -> Module:
        self.accept_keyword("module")
        name = None
        if self.peek("@"):
            name = self.suffix_id("@", "module name")
        attrs = {}
        if self.accept_keyword("attributes"):
            attrs = dict(self.parse_attr_dict().entries)
        m = Module(name, attrs)
        self.expect("{", "to open the module body")
        while not self.accept("}"):
            if self.at_end():
                raise self.error("unterminated module: expected '}'")
            m.append(self._module_level_op())
        m.location = self.parse_location_trailer()
        return m

    def _module_level_op(self) -> Operation:
        """An op of a module's body. One that defines values (`%0 = stablehlo.constant ...`)
        is refused: functions are isolated from above, so nothing could use them, and the
        printer cannot name them again."""
        self.ws()
        pos = self.pos
        op = self.parse_operation()
        if op.results:
            raise self.error(f"'{op.name}' defines values at module level; a module's body holds "
                             f"functions (func.func), so put it inside one", pos)
        return op

    # ------------------------------------------------------------------ operations
    def parse_operation(self) -> Operation:
        self.ws()
        start = self.pos
        names: list[tuple[str, int]] = []  # (name, count)
        if self.peek("%"):
            while True:
                npos = self.pos
                n = self.suffix_id("%", "result name")
                count = 1
                if self.text.startswith(":", self.pos) and not self.text.startswith("::", self.pos):
                    self.pos += 1
                    count = self.integer("result count")
                    if count < 1:
                        raise self.error("result count must be positive", npos)
                names.append((n, count, npos))
                if not self.accept(","):
                    break
                self.ws()
            self.expect("=", "after result names")
        self.ws()
        op_pos = self.pos
        if self.peek('"'):
            op = self.parse_generic_op()
        else:
            word = self.bare_id("operation name")
            name = O.ALIASES.get(word, word)
            if name.startswith("mhlo."):
                name = "stablehlo." + name[5:]
            opdef = O.lookup(name)
            if opdef is None:
                raise self.error(f"unknown operation '{word}'", op_pos)
            from axle.ir.text.formats import parse_pretty
            op = parse_pretty(self, opdef, op_pos)
        loc = self.parse_location_trailer()
        if loc is not None:
            op.location = loc
        op.source = (self.source_text, op_pos)
        total = sum(c for _, c, _ in names)
        if total != len(op.results):
            raise self.error(f"'{op.name}' has {len(op.results)} results but {total} "
                             f"result name{'s' if total != 1 else ''} given", start)
        i = 0
        for n, c, npos in names:
            self.define(n, op.results[i:i + c], npos)
            i += c
        return op

    def parse_generic_op(self) -> Operation:
        start = self.pos
        name = self.string()
        if name.startswith("mhlo."):
            name = "stablehlo." + name[5:]
        if O.lookup(name) is None:
            raise self.error(f"unknown operation '{name}'", start)
        return self.parse_generic_tail(O.ALIASES.get(name, name))

    def parse_generic_tail(self, name: str) -> Operation:
        """`(operands) <{properties}> (regions) {attributes} : (types) -> (types)`, the generic
        form after the op name (also accepted after an unquoted name)."""
        self.expect("(", f"after '{name}'")
        operands = []
        if not self.accept(")"):
            operands = self.parse_operands()
            self.expect(")", "to close the operand list")
        if self.peek("["):
            raise self.error("block successors are not supported (StableHLO has no branches)")
        attrs: dict[str, A.Attribute] = {}
        if self.accept("<{"):
            self.pos -= 1  # reuse the dictionary reader from '{'
            attrs.update(self.parse_attr_dict().entries)
            self.expect(">", "to close properties '<{...}>'")
        regions = []
        if self.peek("("):
            self.expect("(")
            regions.append(self.parse_region())
            while self.accept(","):
                regions.append(self.parse_region())
            self.expect(")", "to close the region list")
        if self.peek("{"):
            for k, v in self.parse_attr_dict().entries:
                if k in attrs:
                    raise self.error(f"attribute '{k}' given twice")
                attrs[k] = v
        self.expect(":", "before the op's function type")
        tpos = self.pos
        ft = self.parse_type()
        if not isinstance(ft, T.FunctionType):
            raise self.error(f"expected function type '(...) -> ...' for '{name}'", tpos)
        self.check_types(operands, list(ft.inputs), tpos)
        return Operation(name, operands, ft.results, attrs, regions)

    # ------------------------------------------------------------------ regions
    def parse_region(self, entry_args: Optional[list[tuple[str, T.Type, int]]] = None,
                     isolated: bool = False) -> Region:
        self.expect("{", "to open a region")
        region = Region()
        self.scopes.append({"__isolated__": True} if isolated else {})
        try:
            if entry_args is not None:
                block = region.add_block(Block())
                for n, t, p in entry_args:
                    self.define(n, [block.add_argument(t)], p)
            if self.accept("}"):
                return region
            if entry_args is None and not self.peek("^"):
                block = region.add_block(Block())
            elif entry_args is not None:
                block = region.blocks[0]
            while True:
                if self.peek("^"):
                    if entry_args is not None and len(region.blocks) == 1 and not block.operations:
                        raise self.error("block label in a region whose arguments are already given")
                    block = region.add_block(self._block_header())
                    if len(region.blocks) > 1:
                        raise self.error("multiple blocks are not supported (StableHLO regions have one block)")
                if self.accept("}"):
                    break
                if self.at_end():
                    raise self.error("unterminated region: expected '}'")
                block.append(self.parse_operation())
            return region
        finally:
            self.scopes.pop()

    def _block_header(self) -> Block:
        label = self.suffix_id("^", "block label")
        block = Block()
        block.label = label
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    p = self.pos
                    n = self.suffix_id("%", "block argument")
                    self.expect(":")
                    t = self.parse_type()
                    loc = self.parse_location_trailer()
                    arg = block.add_argument(t, location=loc)
                    self.define(n, [arg], p)
                    if self.accept(")"):
                        break
                    self.expect(",")
        self.expect(":", "after the block header")
        return block

    # ------------------------------------------------------------------ functions
    def parse_func(self, pos: int) -> Operation:
        vis = None
        for v in ("public", "private", "nested"):
            if self.accept_keyword(v):
                vis = v
        name = self.suffix_id("@", "function name")
        self.expect("(")
        args: list[tuple[str, T.Type, int]] = []
        arg_types, arg_attrs, arg_locs = [], [], []
        named = None
        if not self.accept(")"):
            while True:
                p = self.pos
                if self.peek("%"):
                    if named is False:
                        raise self.error("mixing named and unnamed function arguments")
                    named = True
                    n = self.suffix_id("%", "argument name")
                    self.expect(":")
                    t = self.parse_type()
                    args.append((n, t, p))
                else:
                    if named:
                        raise self.error("mixing named and unnamed function arguments")
                    named = False
                    t = self.parse_type()
                arg_types.append(t)
                arg_attrs.append(self.parse_attr_dict() if self.peek("{") else A.DictAttr(()))
                arg_locs.append(self.parse_location_trailer())
                if self.accept(")"):
                    break
                self.expect(",", "between function arguments")
        res_types, res_attrs = [], []
        if self.accept("->"):
            if self.peek("(") and not self._paren_is_function_type():
                self.expect("(")
                if not self.accept(")"):
                    while True:
                        res_types.append(self.parse_type())
                        res_attrs.append(self.parse_attr_dict() if self.peek("{") else A.DictAttr(()))
                        if self.accept(")"):
                            break
                        self.expect(",", "between function results")
            else:  # a single unparenthesized result carries no attributes
                res_types.append(self.parse_type())
                res_attrs.append(A.DictAttr(()))
        attrs: dict[str, A.Attribute] = {"sym_name": A.StringAttr(name),
                                         "function_type": A.TypeAttr(T.FunctionType(tuple(arg_types), tuple(res_types)))}
        if vis is not None:
            attrs["sym_visibility"] = A.StringAttr(vis)
        if any(d.entries for d in arg_attrs):
            attrs["arg_attrs"] = A.ArrayAttr(tuple(arg_attrs))
        if any(d.entries for d in res_attrs):
            attrs["res_attrs"] = A.ArrayAttr(tuple(res_attrs))
        if self.accept_keyword("attributes"):
            for k, v in self.parse_attr_dict().entries:
                if k in attrs:
                    raise self.error(f"function attribute '{k}' given twice")
                attrs[k] = v
        fn = Operation("func.func", attributes=attrs)
        if self.peek("{"):
            if named is False:
                raise self.error("a function with a body must name its arguments")
            region = self.parse_region(entry_args=args, isolated=True)
            if not region.blocks:
                region.add_block(Block(arg_types))
            for a, loc in zip(region.blocks[0].arguments, arg_locs):
                a.location = loc
            fn.add_region(region)
        elif named:
            raise self.error(f"function @{name} names its arguments but has no body")
        return fn

    def _paren_is_function_type(self) -> bool:
        """After `->`, does `(` start a function type `(T) -> U` rather than a result list?"""
        save = self.pos
        try:
            self.parse_type_list_parens()
            return self.peek("->")
        except ParseError:
            return False
        finally:
            self.pos = save


# An observer of parses, installed by a higher layer (axle.profiler records each parse in a
# trace): (filename, chars) -> a context manager around the parse, or None. The IR imports
# nothing above it; the profiler hooks in here instead.
_PARSE_HOOK = None


def set_parse_hook(hook) -> None:
    """Install `hook(filename, chars)` (returning a context manager or None) around every
    parse_module; None removes it."""
    global _PARSE_HOOK
    _PARSE_HOOK = hook


def parse_module(text: str, filename: Optional[str] = None) -> Module:
    """Parse MLIR text into a Module. Raises ParseError (and only ParseError) on bad input."""
    hook = _PARSE_HOOK
    if hook is not None:
        cm = hook(filename, len(text) if isinstance(text, str) else None)
        if cm is not None:
            with cm:
                return _parse_module(text, filename)
    return _parse_module(text, filename)


def _parse_module(text, filename: Optional[str]) -> Module:
    if not isinstance(text, str):
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError as e:
                raise ParseError(f"input is not valid UTF-8: {e}", filename, 1, 1) from None
        else:
            raise TypeError(f"parse_module expects str, got {type(text).__name__}")
    p = ModuleParser(text, filename)
    try:
        m = p.parse_top()
    except ParseError:
        raise
    except RecursionError:
        raise p.error("input nested too deeply") from None
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError) as e:
        raise p.error(f"malformed input ({type(e).__name__}: {e})") from e
    m.filename = filename
    return m


def split_cases(text: str) -> list[tuple[int, str]]:
    """Split a file on `// -----` lines: (first line number, text) per case, each text
    padded with blank lines so that error line numbers are those of the whole file."""
    import re
    parts = []
    line = 1
    for chunk in re.split(r"^// -----[^\n]*$", text, flags=re.M):
        parts.append((line, "\n" * (line - 1) + chunk))  # padded: error lines match the file
        line += chunk.count("\n")
    return parts
