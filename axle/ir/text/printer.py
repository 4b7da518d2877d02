"""axle.ir.Module -> MLIR text that `parse_module` reads back to an equal module.

Common ops print in their short StableHLO form; everything else in the generic form.
Value names: a name from the source is kept when it is unique in its function; other
values are numbered (`%0`, `%1`, ...) in order, so printing is deterministic and
printing a re-parsed module gives the same text.
"""
from __future__ import annotations

import re
from typing import Optional

from axle.ir import attributes as A
from axle.ir import ops as O
from axle.ir import types as T
from axle.ir.core import Block, Module, Operation, Region, Value

_NAME_OK = re.compile(r"[A-Za-z_][A-Za-z0-9_$.\-]*$")


class Namer:
    def __init__(self, hints: bool = True):
        self.hints = hints  # False: every value gets a fresh number (canonical text)
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0
        self.args = 0

    def _unique(self, base: str) -> str:
        name = base
        k = 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name

    def _fresh(self) -> str:
        while str(self.counter) in self.used:
            self.counter += 1
        name = str(self.counter)
        self.used.add(name)
        self.counter += 1
        return name

    def name_results(self, op: Operation) -> str:
        res = op.results
        if not res:
            return ""
        hints = [r.name_hint if self.hints else None for r in res]
        if len(res) == 1:
            h = hints[0]
            if isinstance(h, tuple):
                h = h[0]
            base = self._unique(h) if isinstance(h, str) and _NAME_OK.match(h) else self._fresh()
            self.names[res[0]] = "%" + base
            return f"%{base} = "
        if all(isinstance(h, str) and _NAME_OK.match(h) for h in hints) and len(set(hints)) == len(hints):
            parts = []
            for r, h in zip(res, hints):
                n = self._unique(h)
                self.names[r] = "%" + n
                parts.append("%" + n)
            return ", ".join(parts) + " = "
        h = hints[0]
        group = h[0] if isinstance(h, tuple) else None
        base = self._unique(group) if group and _NAME_OK.match(group) else self._fresh()
        for i, r in enumerate(res):
            self.names[r] = f"%{base}#{i}"
        return f"%{base}:{len(res)} = "

    def name_arg(self, v: Value) -> str:
        h = v.name_hint if self.hints else None
        if isinstance(h, str) and _NAME_OK.match(h):
            n = self._unique(h)
        else:
            while f"arg{self.args}" in self.used:
                self.args += 1
            n = self._unique(f"arg{self.args}")
        self.names[v] = "%" + n
        return "%" + n

    def __call__(self, v: Value) -> str:
        try:
            return self.names[v]
        except KeyError:
            return "%<<unknown value>>"


class Printer:
    def __init__(self, locations: bool = True, canonical: bool = False):
        self.lines: list[str] = []
        self.locations = locations and not canonical
        self.canonical = canonical  # no locations, value names or module name: equal programs print equal
        self.namer = Namer(not canonical)

    def loc(self, location) -> str:
        return f" {location}" if (self.locations and location is not None) else ""

    # -- module
    def module(self, m: Module) -> str:
        head = "module"
        if m.name and not self.canonical:
            head += " " + A.format_symbol(m.name)
        if m.attributes:
            head += " attributes " + _dict(m.attributes)
        self.lines.append(head + " {")
        for op in m.operations:
            self.namer = Namer(not self.canonical)
            self.op(op, 1)
        self.lines.append("}" + self.loc(m.location))
        return "\n".join(self.lines) + "\n"

    # -- ops
    def op(self, op: Operation, indent: int) -> None:
        pad = "  " * indent
        if op.name == "func.func":
            self.func(op, indent)
            return
        prefix = self.namer.name_results(op)
        if op.name.startswith("sdy."):  # the Shardy dialect's forms (text/sdy.py)
            from axle.ir.text import sdy
            if sdy.printable(op):
                sdy.print_op(self, op, indent, prefix)
                return
        short = _short_form(op, self)
        if short is None:
            self.generic(op, indent, prefix)
            return
        text, regions = short
        self.lines.append(pad + prefix + text + (self.loc(op.location) if not regions else ""))
        for i, (keyword, region, args) in enumerate(regions):
            self.region_with_args(region, indent, keyword, args)
        if regions:
            self.lines[-1] += self.loc(op.location)

    def generic(self, op: Operation, indent: int, prefix: str) -> None:
        pad = "  " * indent
        operands = ", ".join(self.namer(v) for v in op.operands)
        head = f'{pad}{prefix}"{op.name}"({operands})'
        tail = ""
        if op.attributes:
            tail += " " + _dict(op.attributes)
        ftype = T.FunctionType(tuple(op.operand_types), tuple(op.result_types))
        tail += f" : {ftype}" + self.loc(op.location)
        if not op.regions:
            self.lines.append(head + tail)
            return
        self.lines.append(head + " (")
        for i, r in enumerate(op.regions):
            self.region(r, indent, opener="{" if i == 0 else "", closer="}" + (", {" if i + 1 < len(op.regions) else ""))
        self.lines[-1] = self.lines[-1] + ")" + tail

    def region(self, r: Region, indent: int, opener: str, closer: str) -> None:
        """A region of the generic form: `({` on the op's line, blocks, then `closer`."""
        pad = "  " * indent
        self.lines[-1] += opener
        for b in r.blocks:
            args = ", ".join(f"{self.namer.name_arg(a)}: {a.type}" + self.loc(a.location) for a in b.arguments)
            if b.arguments or len(r.blocks) > 1:
                self.lines.append(f"{pad}^{b.label or 'bb0'}({args}):")
            for o in b.operations:
                self.op(o, indent + 1)
        self.lines.append(pad + closer)

    def region_with_args(self, r: Region, indent: int, keyword: str, named_args: bool) -> None:
        """Regions of short forms: `cond {`, `do {`, `reducer(...) (...) {`."""
        pad = "  " * indent
        b = r.blocks[0]
        if keyword == "reducer":
            n = len(b.arguments) // 2
            names = [self.namer.name_arg(a) for a in b.arguments]
            groups = " ".join(f"({names[i]}: {b.arguments[i].type}, {names[i + n]}: {b.arguments[i + n].type})"
                              for i in range(n))
            self.lines.append(f"{pad}  reducer{groups} {{")
        else:
            self.lines.append(f"{pad}  {keyword} {{")
        for o in b.operations:
            self.op(o, indent + 2)
        self.lines.append(pad + "  }")

    def func(self, fn: Operation, indent: int) -> None:
        pad = "  " * indent
        attrs = dict(fn.attributes)
        name = attrs.pop("sym_name").value
        ftype = attrs.pop("function_type").type
        vis = attrs.pop("sym_visibility", None)
        arg_attrs = attrs.pop("arg_attrs", None)
        res_attrs = attrs.pop("res_attrs", None)
        head = "func.func " + (f"{vis.value} " if vis is not None else "") + A.format_symbol(name)
        args = []
        block = None if fn.is_declaration else fn.body
        for i, t in enumerate(ftype.inputs):
            s = ""
            if block is not None:
                s = self.namer.name_arg(block.arguments[i]) + ": "
            s += str(t)
            if arg_attrs is not None and arg_attrs.elements[i].entries:
                s += " " + str(arg_attrs.elements[i])
            if block is not None:
                s += self.loc(block.arguments[i].location)
            args.append(s)
        head += "(" + ", ".join(args) + ")"
        if ftype.results:
            rs = []
            for i, t in enumerate(ftype.results):
                s = str(t)
                if res_attrs is not None and res_attrs.elements[i].entries:
                    s += " " + str(res_attrs.elements[i])
                rs.append(s)
            head += " -> (" + ", ".join(rs) + ")"
        if attrs:
            head += " attributes " + _dict(attrs)
        if block is None:
            self.lines.append(pad + head + self.loc(fn.location))
            return
        self.lines.append(pad + head + " {")
        for o in block.operations:
            self.op(o, indent + 1)
        self.lines.append(pad + "}" + self.loc(fn.location))


def _dict(attrs: dict) -> str:
    return "{" + ", ".join(A.format_named(k, v) for k, v in attrs.items()) + "}"


# ---------------------------------------------------------------- short forms


def _types_sig(op: Operation) -> str:
    ins = op.operand_types
    outs = op.result_types
    if len(outs) == 1 and all(t == outs[0] for t in ins) and ins:
        return str(outs[0])
    return str(T.FunctionType(tuple(ins), tuple(outs)))


def _is_i64_array(a) -> bool:
    return isinstance(a, A.DenseArrayAttr) and a.element_type == T.i64


def _short_form(op: Operation, pr: Printer):
    """(text, regions) of the op's short form, or None to print it generically."""
    opdef = O.lookup(op.name)
    if opdef is None:
        return None
    fmt = opdef.format
    names = ", ".join(pr.namer(v) for v in op.operands)
    attrs = op.attributes
    if fmt == "return":
        if attrs:
            return None
        kw = "return" if op.name == "func.return" else op.name
        if not op.operands:
            return kw, []
        return f"{kw} {names} : " + ", ".join(str(t) for t in op.operand_types), []
    if fmt == "call":
        if set(attrs) != {"callee"} or len(attrs["callee"].path) != 1:
            return None
        sig = T.FunctionType(tuple(op.operand_types), tuple(op.result_types))
        return f"call {attrs['callee']}({names}) : {sig}", []
    if fmt == "constant":
        v = attrs.get("value")
        if set(attrs) != {"value"} or not isinstance(v, A.DenseElementsAttr) or v.type != op.result_types[0]:
            return None
        return f"{op.name} {v}", []
    if len(op.results) != 1 or op.regions:
        return None
    if op.name == "stablehlo.dot_general":
        return _dot_general_short(op, names)
    if fmt in ("same_or_functional", "functional") and opdef.results == 1 and opdef.format != "check":
        kws = []
        for key, value in attrs.items():
            kw = next(((k, kind) for k, a, kind in opdef.keywords if a == key), None)
            if kw is None or kw[1] not in ("i64_array", "i64") or (kw[1] == "i64_array" and not _is_i64_array(value)) \
                    or (kw[1] == "i64" and not (isinstance(value, A.IntegerAttr) and value.type == T.i64)):
                return None
            kws.append(f"{kw[0]} = {list(value.values) if kw[1] == 'i64_array' else value.value}".replace("'", ""))
        if opdef.operands >= 0 and len(op.operands) != opdef.operands:
            return None
        sig = _types_sig(op) if fmt == "same_or_functional" else \
            str(T.FunctionType(tuple(op.operand_types), tuple(op.result_types)))
        items = ", ".join(([names] if names else []) + kws)
        return f"{op.name} {items} : {sig}", []
    if fmt == "compare":
        cd = attrs.get("comparison_direction")
        ct = attrs.get("compare_type")
        if not isinstance(cd, A.EnumAttr) or set(attrs) - {"comparison_direction", "compare_type"} \
                or (ct is not None and not isinstance(ct, A.EnumAttr)) or cd.enum != "comparison_direction" \
                or (ct is not None and ct.enum != "comparison_type") or list(attrs)[0] != "comparison_direction":
            return None
        tail = f", {ct.value}" if ct is not None else ""
        sig = T.FunctionType(tuple(op.operand_types), tuple(op.result_types))
        return f"{op.name} {cd.value}, {names}{tail} : {sig}", []
    if fmt == "result_only" and op.name == "stablehlo.iota":
        d = attrs.get("iota_dimension")
        if set(attrs) != {"iota_dimension"} or not isinstance(d, A.IntegerAttr) or d.type != T.i64:
            return None
        return f"{op.name} dim = {d.value} : {op.result_types[0]}", []
    return None


_DOT_FIELDS = ("lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
               "rhs_contracting_dimensions")


def _dot_general_short(op: Operation, names: str):
    """`stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1],
    precision = [DEFAULT, DEFAULT] : (...) -> ...` when the attributes are exactly that."""
    attrs = op.attributes
    dn = attrs.get("dot_dimension_numbers")
    pc = attrs.get("precision_config")
    if set(attrs) - {"dot_dimension_numbers", "precision_config"} or not isinstance(dn, A.StructAttr) \
            or dn.name != "stablehlo.dot":
        return None
    keys = [k for k, _ in dn.fields]
    if keys != [k for k in _DOT_FIELDS if k in keys]:
        return None
    lists = {}
    for k, v in dn.fields:
        if not isinstance(v, A.ArrayAttr) or not v.elements or \
                not all(isinstance(e, A.IntegerAttr) and e.type is None for e in v.elements):
            return None
        lists[k] = [e.value for e in v.elements]
    if ("lhs_batching_dimensions" in lists) != ("rhs_batching_dimensions" in lists) or \
            ("lhs_contracting_dimensions" in lists) != ("rhs_contracting_dimensions" in lists):
        return None
    parts = [names]
    if "lhs_batching_dimensions" in lists:
        parts.append(f"batching_dims = {lists['lhs_batching_dimensions']} x {lists['rhs_batching_dimensions']}")
    parts.append(f"contracting_dims = {lists.get('lhs_contracting_dimensions', [])} x "
                 f"{lists.get('rhs_contracting_dimensions', [])}")
    if pc is not None:
        if not isinstance(pc, A.ArrayAttr) or not all(isinstance(e, A.EnumAttr) and e.dialect == "stablehlo"
                                                      and e.enum == "precision" for e in pc.elements):
            return None
        parts.append("precision = [" + ", ".join(e.value for e in pc.elements) + "]")
    sig = T.FunctionType(tuple(op.operand_types), tuple(op.result_types))
    return f"{op.name} {', '.join(parts)} : {sig}", []


def print_module(m: Module, locations: bool = True, canonical: bool = False) -> str:
    """The module's text. `canonical`: without locations, value names and the module's name,
    so that programs that differ only in those print the same (cache keys)."""
    return Printer(locations, canonical).module(m)


def print_op(op: Operation) -> str:
    p = Printer()
    p.op(op, 0)
    return "\n".join(p.lines)
